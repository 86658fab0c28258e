"""--sync and --dropcache: their own SYNC/DROPCACHE blocks around every phase (#5)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from aiobench import config
from aiobench.errors import ConfigError
from aiobench.results.schema import load_schema
from tests.helpers import RunCli, make_cfg

MIB = 1 << 20


def resident_bytes(path: Path) -> int:
    """Bytes of ``path`` in the page cache, from util-linux fincore."""
    proc = subprocess.run(
        ["fincore", "--bytes", "--noheadings", "--output", "RES", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(proc.stdout.strip())


needs_root_fincore = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("fincore") is None,
    reason="dropping the page cache needs root; checking it needs util-linux fincore",
)


@pytest.mark.root
@needs_root_fincore
def test_blocks_come_before_the_first_phase_and_after_each(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    files = [str(tmp_path / "a"), str(tmp_path / "b")]
    proc = run_cli(
        "-w", "-r", "-b", "1m", "-s", "8m", "--sync", "--dropcache", *files, "--json", str(out)
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    Draft202012Validator(load_schema()).validate(doc)
    names = [p["phase"] for p in doc["phases"]]
    assert names == ["SYNC", "DROPCACHE", "WRITE", "SYNC", "DROPCACHE", "READ", "SYNC", "DROPCACHE"]
    for block in doc["phases"]:
        if block["phase"] in ("SYNC", "DROPCACHE"):
            assert block["last_done"]["ops"] == 0 and block["last_done"]["elapsed_ns"] > 0
            assert block["per_target"]["min"] is None
    # The table has the same blocks in the same order; SYNC/DROPCACHE show elapsed time only.
    body = proc.stdout.split("=========\n", 1)[1]
    blocks = [b for b in body.split("---\n") if b and "per target" not in b]
    assert [b.split()[0] for b in blocks] == names
    for block in blocks:
        if block.startswith(("SYNC", "DROPCACHE")):
            assert block.count("\n") == 1 and "Elapsed time" in block


@pytest.mark.root
@needs_root_fincore
def test_dropcache_leaves_the_written_files_out_of_the_page_cache(
    run_cli: RunCli, tmp_path: Path
) -> None:
    cached, dropped = tmp_path / "cached", tmp_path / "dropped"
    proc = run_cli("-w", "-b", "1m", "-s", "32m", str(cached))
    assert proc.returncode == 0, proc.stderr
    assert resident_bytes(cached) >= 16 * MIB  # a plain write leaves its pages cached
    proc = run_cli("-w", "-b", "1m", "-s", "32m", "--sync", "--dropcache", str(dropped))
    assert proc.returncode == 0, proc.stderr
    assert resident_bytes(dropped) < MIB  # SYNC then DROPCACHE after the write


def test_dropcache_without_the_right_to_drop_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # As root every real path is writable: a path that cannot be written stands in for a
    # user without root.
    monkeypatch.setattr(config, "DROP_CACHES", str(tmp_path / "missing" / "drop_caches"))
    with pytest.raises(ConfigError, match=r"^--dropcache: needs root"):
        make_cfg([str(tmp_path / "f")], dropcache=True)
    assert list(tmp_path.iterdir()) == []
