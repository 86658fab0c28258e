"""The startup section's floor program (scripts/aiobench_bench/startfloor.py): it loads
aiobench's packages, starts their event loop and writes one block, and says when."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from aiobench_bench.common import ToolError
from aiobench_bench.startup import (
    BARE,
    FIRST_OP,
    FLOOR,
    FLOOR_BARE,
    FLOOR_SCRIPT,
    HELP,
    TINY_RUN,
    VERSION,
    floor_argv,
    floor_once,
    startup_targets,
)


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


def test_the_floor_without_numpy_loads_everything_else_but_numpy(tmp_path: Path) -> None:
    """Both floors as the bench runs them: the modules each has loaded when it writes."""
    probe = (
        "import runpy, sys; sys.argv = sys.argv[1:]; "
        "import atexit; atexit.register(lambda: print(' '.join(sorted(sys.modules)), "
        "file=sys.stderr)); runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    loaded = {}
    for numpy in (True, False):
        argv = floor_argv(str(tmp_path), numpy=numpy)
        proc = subprocess.run(
            [argv[0], "-c", probe, *argv[1:]], capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0, proc.stderr
        assert float(proc.stdout) > 0
        loaded[numpy] = set(proc.stderr.split())
    for package in ("typer", "hdrh.histogram", "anyio", "uvloop"):
        assert package in loaded[True] and package in loaded[False]
    assert "numpy.random" in loaded[True]
    assert "numpy" not in loaded[False]


def test_the_floor_without_numpy_is_shown_against_the_first_ops_target() -> None:
    times = {BARE: 0.04, HELP: 0.09, VERSION: 0.04, TINY_RUN: 0.25, FIRST_OP: 0.23}
    rows = {label: {"median": t, "min": t, "max": t} for label, t in times.items()}
    rows |= {FLOOR: {"median": 0.17, "min": 0.16, "max": 0.2}}
    before = {row["what"] for row in startup_targets(rows)}  # (a report of before the row)
    rows |= {FLOOR_BARE: {"median": 0.12, "min": 0.1, "max": 0.13}}
    t = {row["what"]: row for row in startup_targets(rows)}
    bare = t["the floor without numpy: of the first op's target"]
    assert set(t) - before == {bare["what"]}
    # (a plain run loads no numpy: its first op is held against the floor without it)
    over = t[f"{FIRST_OP}: over the floor"]
    assert over["reference_label"] == "the same without numpy"
    assert over["ratio"] == pytest.approx(0.23 / 0.12)
    assert bare["ratio"] == pytest.approx(0.8) and bare["met"] is None
    assert t[f"{FIRST_OP}: under 0.15 s"]["met"] is False
