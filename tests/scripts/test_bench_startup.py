"""The startup section's floor program (scripts/aiobench_bench/startfloor.py): it loads
aiobench's packages, starts their event loop and writes one block, and says when."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from aiobench_bench.common import ToolError
from aiobench_bench.startup import FLOOR_SCRIPT, floor_argv, floor_once


def test_the_floor_program_writes_one_block_and_prints_when_it_started(tmp_path: Path) -> None:
    target = tmp_path / "floor-file"
    before = time.time()
    proc = subprocess.run(
        [sys.executable, FLOOR_SCRIPT, str(target)], capture_output=True, text=True, timeout=60
    )
    after = time.time()
    assert proc.returncode == 0, proc.stderr
    assert before < float(proc.stdout) < after
    assert target.read_bytes() == bytes(4096)


def test_the_floor_is_timed_from_start_to_its_write_and_leaves_no_file(tmp_path: Path) -> None:
    argv = floor_argv(str(tmp_path))
    began = time.perf_counter()
    took = floor_once(argv)
    assert 0 < took < time.perf_counter() - began
    assert not Path(argv[-1]).exists()


def test_a_floor_program_that_fails_is_a_tool_error(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="floor program failed"):
        floor_once([sys.executable, FLOOR_SCRIPT, str(tmp_path / "no-such-dir" / "f")])
