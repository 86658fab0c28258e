"""The null engine: issues nothing and sleeps a set time per operation, so the harness
can be tested deterministically.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from time import perf_counter_ns

from aiobench.engines.base import Job, ListRecord, RawBatch
from aiobench.engines.posix import PosixTargets
from aiobench.plan.dirmode import EntryRun


class NullEngine(PosixTargets):
    """No timed I/O (the chores are real): each unit sleeps ``delay_ns(path_index)``
    (0 = returns at once).

    In dir mode a file's blocks are recorded as instant operations at the file's end.
    """

    name = "null"

    def __init__(self, delay_ns: Callable[[int], int] | None = None) -> None:
        self.delay_ns = delay_ns or (lambda _index: 0)

    def run(self, job: Job) -> RawBatch:
        released = job.released()
        if released is None:
            return ListRecord().batch()
        job = released
        ops, until_ns = job.ops, job.until_ns
        batch = ListRecord()
        index = ops.path_index
        blocks = ops.blocks_per_entry if isinstance(ops, EntryRun) else 0
        for n in range(len(ops)):
            delay = self.delay_ns(index if isinstance(index, int) else index[n])
            start = perf_counter_ns()
            if delay:
                time.sleep(delay / 1e9)
            end = perf_counter_ns()
            batch.io_starts.extend([end] * blocks)
            batch.io_ends.extend([end] * blocks)
            batch.starts.append(start)
            batch.ends.append(end)
            if end > until_ns:
                break
        return batch.batch()
