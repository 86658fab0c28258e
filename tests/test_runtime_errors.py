"""Run-time I/O errors through the real CLI: a full tmpfs gives ENOSPC mid-phase."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import RunCli, mounted_tmpfs


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    with mounted_tmpfs(tmp_path / "mnt", "size=1m") as mnt:
        yield mnt


@pytest.mark.root
def test_enospc_names_path_offset_errno_and_keeps_results(
    small_tmpfs: Path, tmp_path: Path, run_cli: RunCli
) -> None:
    target = small_tmpfs / "f"
    out = tmp_path / "out.json"
    proc = run_cli("-w", "-b", "64k", "-s", "4m", str(target), "--json", str(out))
    assert proc.returncode == 1
    last_line = proc.stderr.strip().splitlines()[-1]
    assert last_line.startswith(f"Error: {target}: offset ")
    assert "ENOSPC" in last_line
    assert "Traceback" not in proc.stderr
    assert proc.stdout.startswith("OPERATION   RESULT TYPE")
    assert "WRITE" in proc.stdout
    doc = json.loads(out.read_text())
    assert doc["error"]["errno_name"] == "ENOSPC"
    assert doc["error"]["path"] == str(target)
    written = doc["phases"][0]["last_done"]["bytes"]
    # The tmpfs holds 1 MiB: what was written before the error is counted, and the failing
    # offset is where the data stopped.
    assert 0 < written <= 1 << 20
    assert doc["error"]["offset"] == written
