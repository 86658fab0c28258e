"""Run-time I/O errors through the real CLI: ENOSPC mid-phase, a reader closing the pipe."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import RunCli


@pytest.mark.root
def test_enospc_names_path_offset_errno_and_keeps_results(
    small_tmpfs: Path, tmp_path: Path, run_cli: RunCli
) -> None:
    target = small_tmpfs / "f"
    out = tmp_path / "out.json"
    # --force: the write is larger than the free space, which is refused without it
    proc = run_cli("-w", "-b", "64k", "-s", "4m", "--force", str(target), "--json", str(out))
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


def test_reader_closing_the_pipe_ends_quietly_and_the_run_completes(tmp_path: Path) -> None:
    """`aiobench ... | head -3`: no traceback; the remaining phases still run and clean up."""
    dirs = [tmp_path / f"d{i}" for i in range(2)]
    for d in dirs:
        d.mkdir()
    csv_out = tmp_path / "res.csv"
    cmd = [sys.executable, "-m", "aiobench", "-d", "-w", "-r", "-F", "-D", "-t", "2"]
    cmd += ["-n", "3", "-N", "40", "-s", "8k", *map(str, dirs), "--nolive"]
    cmd += ["--csvfile", str(csv_out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # as `head -1` does, long before the last phase is printed
    stderr = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=60) == 0, stderr
    assert first.startswith(b"OPERATION")
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr
    # Every phase ran to its end: all were recorded and the layout is gone again.
    with csv_out.open(newline="") as handle:
        phases = [row["operation"] for row in csv.DictReader(handle)]
    assert phases == ["MKDIRS", "WRITE", "READ", "RMFILES", "RMDIRS"]
    assert [list(d.iterdir()) for d in dirs] == [[], []]


def test_error_without_offset_names_the_path_alone() -> None:
    from aiobench.errors import BenchIOError

    err = BenchIOError(path="/x/r0/d0", offset=None, errno=30)
    assert str(err) == "/x/r0/d0: EROFS (Read-only file system)"
    assert err.to_dict()["offset"] is None
