"""A run starts an I/O thread for each slot that needs one, not one for each of
``-t`` x ``--iodepth``: where one slot keeps ``--iodepth`` in flight (the native engine's
Linux AIO, with ``--direct``), a benchmark thread has one I/O thread; a later phase reuses
them."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiobench.engines import native
from tests.helpers import run_probed

pytestmark = pytest.mark.skipif(not native.available(), reason=f"{native.build_error}")

# A real run whose every phase end writes how many of the executor's threads exist.
_PROBE = """
import os, sys, threading
from aiobench.run import phases

finish = phases.PhaseRun.finish

def finished(self):
    io = [t for t in threading.enumerate() if t.name.startswith("aiobench-io")]
    with open(os.environ["AIOBENCH_THREADS"], "a") as out:
        out.write(f"{len(io)}\\n")
    return finish(self)

phases.PhaseRun.finish = finished
sys.argv[0] = "aiobench"
from aiobench.entry import main
main()
"""


def io_threads(tmp_path: Path, *args: str) -> list[int]:
    """The I/O threads at each phase's end of a real ``aiobench ARGS`` on a file."""
    counts = tmp_path / "threads.txt"
    counts.unlink(missing_ok=True)
    run_probed(
        _PROBE, *args, "--nolive", str(tmp_path / "f"), env={"AIOBENCH_THREADS": str(counts)}
    )
    return [int(n) for n in counts.read_text().split()]


def test_one_io_thread_per_benchmark_thread_where_a_slot_queues(tmp_path: Path) -> None:
    args = ["-w", "-r", "-t", "2", "--iodepth", "8", "-b", "4k", "-s", "1m"]
    try:
        queued = io_threads(tmp_path, *args, "--direct")
    except AssertionError as exc:  # (a file system without O_DIRECT)
        if "Invalid argument" in str(exc):
            pytest.skip(f"no O_DIRECT here: {exc}")
        raise
    assert queued == [2, 2]
    assert io_threads(tmp_path, *args) == [16, 16]  # (cached: a slot per --iodepth)
