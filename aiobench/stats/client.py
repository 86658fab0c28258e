"""How close aiobench itself came to its CPU limit during a phase: the client-bound check.

A figure measured while the benchmark's own process used (nearly) all the CPU it may use is
the client's limit, not the storage's. Two ceilings count: all the cores this process may run
on (its affinity, capped by a cgroup CPU quota), and one core for any single thread (a
thread that ran all the time is the limit of what that thread can issue). The larger of the
two shares is the phase's ``client_cpu_pct``; :data:`CLIENT_BOUND_PCT` and above is said
in the table (:func:`aiobench.render.table.client_bound_row`). Pure but for the samples.
"""

from __future__ import annotations

import math
import os
import threading
import time
from pathlib import Path
from typing import NamedTuple

CLIENT_BOUND_PCT = 90  # at or above: the figure may be the client's limit
# Shorter phases are left out: their CPU share is mostly start and stop.
CLIENT_BOUND_MIN_NS = 200_000_000

_CGROUP_V2 = Path("/sys/fs/cgroup/cpu.max")
_CGROUP_V1 = (
    Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"),
    Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us"),
)


def quota_cores(v2: Path = _CGROUP_V2, v1: tuple[Path, Path] = _CGROUP_V1) -> float | None:
    """The cgroup's CPU quota in cores (``cpu.max``, else cgroup v1's cfs files); None
    without one (no file, ``max`` or ``-1``, or a file that does not parse)."""
    try:
        quota, period = v2.read_text().split()[:2]
    except (OSError, ValueError):
        try:
            quota, period = (p.read_text().strip() for p in v1)
        except (OSError, ValueError):
            return None
    try:
        q, p = int(quota), int(period)
    except ValueError:  # "max"
        return None
    return q / p if q > 0 and p > 0 else None


def cores_allowed() -> float:
    """The cores this process may use: those it may run on, at most its cgroup's quota."""
    cores = float(len(os.sched_getaffinity(0)))
    quota = quota_cores()
    return min(cores, quota) if quota is not None else cores


# The threads that make an engine's requests in place of the event loop (the S3 engine's
# native route, aiobench.engines.s3.native): their names start so, and their CPU counts
# with the loop thread's (phases[].loop_cpu_ns).
LOOP_HELPER_PREFIX = "aiobench-s3"


class ClientSample(NamedTuple):
    """The process's and each live thread's CPU time (ns) at one wall-clock instant, and
    which threads are the loop's helpers (:data:`LOOP_HELPER_PREFIX`)."""

    wall_ns: int
    process_ns: int
    threads: dict[int, int]  # thread ident -> its CPU time
    helpers: frozenset[int] = frozenset()


def sample() -> ClientSample:
    """The CPU clocks now: the process's and every Python thread's (the I/O threads run
    the native loops in their own threads, so they are among them)."""
    threads = {}
    helpers = []
    for thread in threading.enumerate():
        ident = thread.ident
        if ident is None:
            continue
        try:
            threads[ident] = time.clock_gettime_ns(time.pthread_getcpuclockid(ident))
        except OSError:  # it ended meanwhile
            continue
        if thread.name.startswith(LOOP_HELPER_PREFIX):
            helpers.append(ident)
    return ClientSample(time.perf_counter_ns(), time.process_time_ns(), threads, frozenset(helpers))


def helpers_cpu_ns(start: ClientSample, end: ClientSample) -> int:
    """CPU time of the loop's helper threads between the samples (one started since
    counts from 0)."""
    return sum(end.threads[i] - start.threads.get(i, 0) for i in end.helpers)


def client_cpu_pct(start: ClientSample, end: ClientSample, cores: float) -> int:
    """The larger of the process's CPU time over ``cores`` and the busiest thread's over one
    core, in % of the time between the samples (0..100)."""
    wall = end.wall_ns - start.wall_ns
    if wall <= 0 or cores <= 0:
        return 0
    share = (end.process_ns - start.process_ns) / (wall * cores)
    for ident, cpu_ns in end.threads.items():
        share = max(share, (cpu_ns - start.threads.get(ident, 0)) / wall)
    return min(100, math.floor(100 * share))
