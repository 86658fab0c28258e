"""``--sync`` and ``--dropcache``: flush the targets' filesystems and drop the page cache.

Each runs as a block of its own (SYNC, DROPCACHE) before the first phase and after each
phase, timed but outside every benchmark phase, so cached data from one phase does not
flatter the next. Both run in an executor thread: a sync can take seconds.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import datetime
import os
from collections.abc import Sequence
from time import perf_counter_ns

import anyio

from aiobench.config import DROP_CACHES
from aiobench.errors import BenchIOError
from aiobench.kinds import DROPCACHE, PHASE_NAMES, SYNC
from aiobench.results import PhaseResult, Totals
from aiobench.stats import LatencyRecorder

# 3 = page cache plus dentries and inodes, as elbencho drops them.
DROP_ALL = b"3"


def _syncfs(fd: int) -> None:
    """syncfs(2): write back the filesystem holding ``fd`` (os has no binding)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if libc.syncfs(fd) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def sync_targets(fds: Sequence[int], paths: Sequence[str]) -> None:
    """Each filesystem (or block device) of the targets once."""
    seen: set[int] = set()
    for fd, path in zip(fds, paths, strict=True):
        st = os.fstat(fd)
        key = st.st_rdev if st.st_rdev else st.st_dev
        if key in seen:
            continue
        seen.add(key)
        try:
            if st.st_rdev:
                os.fsync(fd)  # a block device: its own buffers
            else:
                _syncfs(fd)
        except OSError as exc:
            raise BenchIOError(
                path=path, offset=0, errno=exc.errno or 0, detail=f"sync: {exc.strerror}"
            ) from None


def drop_caches() -> None:
    try:
        with open(DROP_CACHES, "wb", buffering=0) as handle:
            handle.write(DROP_ALL)
    except OSError as exc:
        raise BenchIOError(
            path=DROP_CACHES, offset=0, errno=exc.errno or 0, detail=exc.strerror or ""
        ) from None


async def run_housekeeping(
    kind: str, fds: Sequence[int], paths: Sequence[str]
) -> tuple[PhaseResult, BenchIOError | None]:
    """Run SYNC or DROPCACHE once and report it as a block with only its elapsed time."""
    wall_start = datetime.datetime.now(datetime.timezone.utc)
    error: BenchIOError | None = None
    start = perf_counter_ns()
    try:
        if kind == SYNC:
            await anyio.to_thread.run_sync(sync_targets, fds, paths)
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
