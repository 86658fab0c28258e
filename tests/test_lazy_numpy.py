"""numpy loads only where a run computes with it: its import is a third of a small run's
start. A whole plain run is held to that in tests/test_startup.py; here the streams' runs
(cut, pieced and joined as the slots do) on several files of one thread."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import REPO

_SEQUENTIAL = """
import sys
from aiobench.engines import gate, verify
from aiobench.kinds import READ, WRITE
from aiobench.plan import dirmode
from aiobench.plan.split import StreamOrder, ThreadSplit
from aiobench.plan.workload import Layout

layout = Layout((1 << 20, 12345, 4096 * 3), 4096)
for kind in (WRITE, READ):
    for stream in layout.streams(kind, 0, StreamOrder(seed=1), ThreadSplit.alone(3)):
        last = None
        while (run := stream.take(100)) is not None:
            run.after(1).pieces(7)
            # (runs on several targets join with numpy: their per-target counts loaded it)
            same = last is not None and last.path_index == run.path_index
            last = last.joined(run) if same else run
print("numpy" in sys.modules)
"""


def test_sequential_streams_load_no_numpy() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _SEQUENTIAL],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=True,
    )
    assert proc.stdout.split() == ["False"]
