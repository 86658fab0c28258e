"""What a phase's slots counted, frozen once it is over: the one input of its summary
(:func:`aiobench.stats.summary.summarise`); pure values."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, NamedTuple

from aiobench.errors import BenchIOError
from aiobench.results.running import IntervalStats
from aiobench.stats.intervals import CpuSample
from aiobench.stats.recorders import LatencyRecorder
from aiobench.stats.timeline import CounterTimeline, Counts

if TYPE_CHECKING:
    from aiobench.stats.recorders import Int64Array


class PhaseAbout(NamedTuple):
    """What a phase is, fixed before it starts: what its figures are named and shares of."""

    name: str
    rwmix_pct: int | None
    paths: tuple[str, ...]
    servers: tuple[str, ...]  # the targets' endpoints, if several (Targets.servers)
    cpus: int  # the cores CPU percentages are shares of
    dir_mode: bool  # the units are entries, each of blocks (entry latency)
    rate_limited: bool  # latency from the scheduled starts too


class SlotTally(NamedTuple):
    """One slot's counts (all of them, and those done at FIRST DONE) and recorders.

    ``recorder`` holds I/O latency (the writes under --rwmixpct, ``read_recorder`` the
    reads); ``per_path`` the (ops, bytes, entries) per target when there are several."""

    totals: Counts
    at_first_done: Counts
    recorder: LatencyRecorder
    entry_recorder: LatencyRecorder
    sched_recorder: LatencyRecorder
    ttfb_recorder: LatencyRecorder
    read_recorder: LatencyRecorder
    per_path: Int64Array | None


class ThreadTally(NamedTuple):
    """One thread rank: its slots, when it finished, and whether work was left."""

    rank: int
    planned: int  # the operations (entries) it was to do; 0: a thread without work
    finished_ns: int
    incomplete: bool  # its stream or a slot still held operations
    slots: tuple[SlotTally, ...]


class PhaseTally(NamedTuple):
    """A phase once it is over: its threads' tallies, clock, CPU samples and outcome."""

    about: PhaseAbout
    wall_start: datetime.datetime
    start_ns: int
    deadline_ns: int  # 0: no time limit
    first_done_ns: int | None  # None: no thread had work
    cpu_start: CpuSample
    cpu_first: CpuSample  # at FIRST DONE's thread's finish (else the end)
    cpu_last: CpuSample
    threads: tuple[ThreadTally, ...]
    peak_inflight: int
    intervals: tuple[IntervalStats, ...]
    timeline: CounterTimeline | None  # under MPI: counts to read at the job's FIRST DONE
    stopped: bool  # by a signal or an error (here or at a peer)
    error: BenchIOError | None
    # CPU time of the event loop's (main) thread from the common start to the phase's end
    # (thread_time_ns): the harness's own cost, apart from the I/O threads'.
    loop_cpu_ns: int = 0
    # This process's CPU over the phase as a share of what it may use (stats.client).
    client_cpu_pct: int = 0
