"""``--sync`` and ``--dropcache``: flush the targets' filesystems and drop the page cache.

Each runs as a block of its own (SYNC, DROPCACHE) before the first phase and after each
phase, timed but outside every benchmark phase, so cached data from one phase does not
flatter the next. Both run in an executor thread: a sync can take seconds. The sync itself
is the engine's (:meth:`~aiobench.engines.python.Engine.sync`).
"""

from __future__ import annotations

import datetime
from time import perf_counter_ns

import anyio

from aiobench.config import DROP_CACHES
from aiobench.engines.base import Engine
from aiobench.errors import BenchIOError
from aiobench.kinds import DROPCACHE, PHASE_NAMES, SYNC, PhaseKind
from aiobench.plan.targets import Targets
from aiobench.results.model import PhaseResult, Totals
from aiobench.stats.recorders import LatencyRecorder

# 3 = page cache plus dentries and inodes, as elbencho drops them.
DROP_ALL = b"3"


def drop_caches() -> None:
    try:
        with open(DROP_CACHES, "wb", buffering=0) as handle:
            handle.write(DROP_ALL)
    except OSError as exc:
        raise BenchIOError(
            path=DROP_CACHES, offset=0, errno=exc.errno or 0, detail=exc.strerror or ""
        ) from None


async def run_housekeeping(
    kind: PhaseKind, engine: Engine, targets: Targets
) -> tuple[PhaseResult, BenchIOError | None]:
    """Run SYNC or DROPCACHE once and report it as a block with only its elapsed time."""
    wall_start = datetime.datetime.now(datetime.UTC)
    error: BenchIOError | None = None
    start = perf_counter_ns()
    try:
        if kind == SYNC:
            await anyio.to_thread.run_sync(engine.sync, targets)
        elif kind == DROPCACHE:
            await anyio.to_thread.run_sync(drop_caches)
        else:  # pragma: no cover - a programming error
            raise ValueError(kind)
    except BenchIOError as exc:
        error = exc
    elapsed = perf_counter_ns() - start
    totals = Totals(elapsed_ns=elapsed, ops=0, bytes=0)
    result = PhaseResult(
        name=PHASE_NAMES[kind],
        start_time=wall_start.isoformat(timespec="milliseconds"),
        first_done=totals,
        last_done=totals,
        io_latency=LatencyRecorder().summary(),
        peak_inflight_ops=0,
        threads=(),
    )
    return result, error
