"""A netbench run as a phase result (``NETBENCH``): the clients' blocks are its operations
and bytes, the servers' answers its read bytes (as elbencho counts them). Pure."""

from __future__ import annotations

import datetime
import platform
import socket

import numpy as np

from aiobench import __version__
from aiobench.config import BenchConfig
from aiobench.engines.net.engine import ThreadRun
from aiobench.results.model import PhaseResult, ThreadTotals, Totals
from aiobench.stats.recorders import LatencyRecorder

PHASE = "NETBENCH"


def _totals(runs: list[tuple[int, ThreadRun]], until: int | None, block: int) -> Totals:
    """Counts of the blocks answered by ``until`` ns after each thread's start (all when
    None); elapsed: that instant, or the slowest thread's."""
    ops = nbytes = reads = read_bytes = 0
    for _, run in runs:
        if run.times is None or run.blocks == 0:
            continue
        ends = run.times[1 : 2 * run.blocks : 2] - run.start_ns
        done = run.blocks if until is None else int(np.searchsorted(ends, until, "right"))
        if done == run.blocks:
            ops += run.blocks
            nbytes += run.sent
            reads += run.blocks
            read_bytes += run.received
        else:
            ops += done
            nbytes += done * block
            reads += done
            read_bytes += done * (run.received // run.blocks)
    elapsed = max((r.elapsed_ns for _, r in runs), default=0) if until is None else until
    return Totals(elapsed_ns=elapsed, ops=ops, bytes=nbytes, read_ops=reads, read_bytes=read_bytes)


def phase_result(
    runs: list[tuple[int, ThreadRun]],
    block: int,
    started: datetime.datetime,
    error: str | None,
) -> PhaseResult:
    recorder = LatencyRecorder()
    for _, run in runs:
        if run.times is not None and run.blocks:
            recorder.add(np.ascontiguousarray(run.times[0 : 2 * run.blocks : 2]))
    first = min((r.elapsed_ns for _, r in runs), default=0)
    return PhaseResult(
        name=PHASE,
        start_time=started.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        first_done=_totals(runs, first, block),
        last_done=_totals(runs, None, block),
        io_latency=recorder.summary(),
        peak_inflight_ops=len(runs),
        threads=tuple(
            ThreadTotals(rank=rank, ops=r.blocks, bytes=r.sent, entries=0, elapsed_ns=r.elapsed_ns)
            for rank, r in runs
        ),
        error=None if error is None else {"message": error},
    )


def run_meta(cfg: BenchConfig, started: datetime.datetime) -> dict[str, object]:
    """The run's meta block as a storage run's has it, for a run without PATH."""
    return {
        "aiobench_version": __version__,
        "command": list(cfg.argv),
        "label": cfg.label,
        "config": cfg.to_dict(),
        "seed": cfg.seed,
        "path_type": "net",
        "paths": ["(netbench)"],
        "sizes_bytes": [cfg.size_bytes],
        "block_size_bytes": cfg.block_size,
        "filesystems": {},
        "host": socket.gethostname(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "event_loop": "asyncio",
        "live_interval_ms": cfg.live_interval_ms,
        "start_time": started.isoformat(timespec="milliseconds"),
        "notes": [],
    }
