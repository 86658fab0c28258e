"""One benchmark thread: a coroutine with ``--iodepth`` slots — the only hot loop.

Each slot repeatedly takes a run of operations from its thread's stream and carries it to
the executor in one round-trip; the executor thread ends the run after ``TARGET_BATCH_NS``
(or at the time limit) and the slot keeps what is left for its next run. Operations are
timed one by one in the executor thread. An engine that runs on the event loop (S3) runs
its runs there instead, with budgets of ``LOOP_BATCH_NS``.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from time import perf_counter_ns
from typing import cast

import anyio
import numpy as np

from aiobench.engines.base import AsyncEngine, Engine, IoOptions, Job, RawBatch, runs_on_loop
from aiobench.engines.buffers import SlotBuffer
from aiobench.engines.gate import StartGate
from aiobench.errors import BenchIOError
from aiobench.kinds import PhaseKind
from aiobench.plan.dirmode import EntryRun
from aiobench.plan.layout import Run, Stream
from aiobench.plan.targets import Targets
from aiobench.plan.workload import OpRun
from aiobench.stats.intervals import IntervalSeries
from aiobench.stats.recorders import Int64Array, LatencyRecorder
from aiobench.stats.timeline import CounterTimeline, Counts, run_counts

# A round-trip to the executor costs tens of microseconds, and up to a scheduler time slice
# (~1 ms) when the I/O threads keep every core busy and the event loop waits for one. Runs
# of ~50 ms keep that at a few percent. The engine itself ends a run once an operation
# ends past its budget (or the time limit), so a run never overstays whatever the pace.
TARGET_BATCH_NS = 50_000_000
# A run on the event loop (an AsyncEngine's) has no round-trip to pay for, but folding and
# accounting a run still costs ~0.1 ms; an S3 request takes milliseconds, so runs of 50 ms
# would carry only a few of them and that cost would show in its CPU per request. Such
# runs get longer budgets: the live line and intervals are then up to this late (each
# operation keeps its own end instant, so intervals stay exact).
LOOP_BATCH_NS = 250_000_000
MAX_BATCH_OPS = 65_536
# Operations handed over for the first run, before the pace is known; what the budget
# leaves undone stays with the slot for its next run. First runs are made before the
# clock starts (:func:`first_run`), so they are as long as memory allows: all the
# phase's first runs together hold up to _FIRST_RUNS_OPS operations (~40 MB of lists),
# at least _FIRST_RUN per slot. A phase of up to 65,536 operations per slot then has
# none of its runs made while it is timed (dir mode's names cost ~0.2 us each).
_FIRST_RUN = 256
_FIRST_RUNS_OPS = 1 << 20


@dataclass(frozen=True, slots=True)
class PhaseSpec:
    """What is fixed for a phase: the work every slot of it hands to the engine, and how."""

    kind: PhaseKind
    engine: Engine
    executor: Executor
    targets: Targets
    options: IoOptions = field(default_factory=IoOptions)
    depth: int = 1  # operations one slot keeps in flight (Engine.slot_depth)
    batch_ns: int = field(init=False)  # a run's time budget: set from the engine

    def __post_init__(self) -> None:
        budget = LOOP_BATCH_NS if runs_on_loop(self.engine) else TARGET_BATCH_NS
        object.__setattr__(self, "batch_ns", budget)


@dataclass(frozen=True, slots=True)
class Clock:
    """A phase's clock, set once at its common start (zeros before it): the start, the
    time limit's end (0: none), and the records its runs are added to."""

    start_ns: int = 0
    deadline_ns: int = 0
    series: IntervalSeries | None = None
    timeline: CounterTimeline | None = None  # under MPI: counts to read at the job's first done


@dataclass(slots=True)
class PhaseState:
    """What changes while a phase runs, seen by all its slots; the lock guards only the
    in-flight counters."""

    stop: threading.Event = field(default_factory=threading.Event)
    clock: Clock = field(default_factory=Clock)
    # FIRST DONE: the earliest finish of a thread with work, so far. Threads are seen to
    # finish in the order their last runs are accounted, not the order they ended in, so
    # it may still move earlier until ``first_done_final`` (see first_done_floor).
    first_done_ns: int | None = None
    first_done_final: bool = False
    floor_ns: int = 0  # no thread's finish can come before this now (first_done_floor)
    error: BenchIOError | None = None
    inflight: int = 0
    peak_inflight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fail(self, error: BenchIOError) -> None:
        if self.error is None:
            self.error = error
        self.stop.set()


@dataclass(frozen=True, slots=True)
class Done:
    """What one run completed: end instants and latencies of its units and block I/Os.

    ``io_latency`` is None in file mode, where the units are the block I/Os.
    """

    run: Run
    ends: Int64Array
    io_ends: Int64Array
    latency: Int64Array
    io_latency: Int64Array | None

    @property
    def last_end_ns(self) -> int:
        return max((int(a[-1]) for a in (self.ends, self.io_ends) if a.size), default=0)

    def totals_at(self, instant_ns: int) -> Counts | None:
        """The counts of this run done by ``instant_ns``; None if all were."""
        units = int(np.searchsorted(self.ends, instant_ns, side="right"))
        io_ops = int(np.searchsorted(self.io_ends, instant_ns, side="right"))
        if units == self.ends.size and io_ops == self.io_ends.size:
            return None
        return run_counts(self.run, units, io_ops)


@dataclass(slots=True)
class Slot:
    """One in-flight position of a thread: its buffer, counters and latency stores.

    ``recorder`` holds I/O latency (every operation in file mode, every block in dir
    mode); ``entry_recorder`` holds dir mode's per-entry latency. Under --rwmixpct,
    ``recorder`` holds the writes and ``read_recorder`` the reads. ``per_path`` counts
    (ops, bytes, entries) per target when there are several.
    """

    buffer: SlotBuffer | None
    recorder: LatencyRecorder = field(default_factory=LatencyRecorder)
    entry_recorder: LatencyRecorder = field(default_factory=LatencyRecorder)
    # Under a rate limit: from each operation's scheduled start to its end.
    sched_recorder: LatencyRecorder = field(default_factory=LatencyRecorder)
    ttfb_recorder: LatencyRecorder = field(default_factory=LatencyRecorder)
    read_recorder: LatencyRecorder = field(default_factory=LatencyRecorder)
    ops: int = 0
    bytes: int = 0
    entries: int = 0
    read_ops: int = 0
    read_bytes: int = 0
    last_end_ns: int = 0
    batch_ops: int = _FIRST_RUN
    pending: Run | None = None  # what the last run's time budget left undone
    # The runs that may end after FIRST DONE (PhaseState.floor_ns), with the slot's counts
    # before each, kept until FIRST DONE is final and the counts at it are in ``snapshot``.
    ring: deque[tuple[Done, Counts]] = field(default_factory=deque)
    snapshot: Counts | None = None
    per_path: Int64Array | None = None
    busy_since_ns: int = 0  # when the run now in the executor was handed over; 0 = idle

    @property
    def totals(self) -> Counts:
        return Counts(self.ops, self.bytes, self.entries, self.read_ops, self.read_bytes)

    def snapshot_at(self, instant_ns: int) -> Counts:
        """The counts this slot had completed at ``instant_ns`` (FIRST DONE)."""
        if self.snapshot is not None:
            return self.snapshot
        for done, before in self.ring:
            part = done.totals_at(instant_ns)
            if part is not None:
                return Counts(*(b + p for b, p in zip(before, part, strict=True)))
        return self.totals


def _job(
    spec: PhaseSpec, state: PhaseState, slot: Slot, run: Run, gate: StartGate | None
) -> tuple[Job, int]:
    """The engine's job for ``run``, counted in flight; (the job, operations it queues).

    A slot's first run waits at the phase's ``gate``, inside the engine (which starts its
    time budget there); one that finds the phase stopped by then does nothing."""
    if gate is not None:
        gate.register()
    queued = min(spec.depth, len(run))  # operations this run keeps in flight at once
    with state.lock:
        state.inflight += queued
        state.peak_inflight = max(state.peak_inflight, state.inflight)
    clock = state.clock  # (before the start, a gated run's clock comes with the gate)
    until = spec.batch_ns  # gated: the budget from the start (Job.gate)
    if gate is None:
        until += perf_counter_ns()
        if clock.deadline_ns:
            until = min(until, clock.deadline_ns)
    job = Job(
        spec.kind,
        spec.targets,
        run,
        slot.buffer,
        until,
        deadline_ns=clock.deadline_ns,
        stop=state.stop,
        options=spec.options,
        schedule_start_ns=clock.start_ns,
        depth=spec.depth,
        gate=gate,
    )
    return job, queued


def _done(state: PhaseState, queued: int) -> None:
    with state.lock:
        state.inflight -= queued


def _execute(
    spec: PhaseSpec, state: PhaseState, slot: Slot, run: Run, gate: StartGate | None
) -> tuple[Done, BenchIOError | None]:
    """Runs in an executor thread: the I/O, then latency folding (outside the timed part)."""
    job, queued = _job(spec, state, slot, run, gate)
    try:
        raw = spec.engine.run(job)
    finally:
        _done(state, queued)
    return _fold(slot, run, raw)


async def _execute_async(
    spec: PhaseSpec, state: PhaseState, slot: Slot, run: Run, gate: StartGate | None
) -> tuple[Done, BenchIOError | None]:
    """:func:`_execute` for an engine that runs on the event loop (:class:`AsyncEngine`)."""
    job, queued = _job(spec, state, slot, run, gate)
    engine = cast(AsyncEngine, spec.engine)
    try:
        raw = await engine.run_async(job)
    finally:
        _done(state, queued)
    return _fold(slot, run, raw)


def _fold(slot: Slot, run: Run, raw: RawBatch) -> tuple[Done, BenchIOError | None]:
    """A run's latencies into the slot's recorders."""
    ends, io_ends = raw.ends, raw.io_ends
    unit_latency = ends - raw.starts
    io_latency = None
    if isinstance(run, EntryRun):
        io_latency = io_ends - raw.io_starts
        slot.entry_recorder.add(unit_latency)
        slot.recorder.add(io_latency)
        if raw.first_bytes.size:
            slot.ttfb_recorder.add(raw.first_bytes)
        if raw.intended.size:  # under a rate limit: from each entry's scheduled start
            slot.sched_recorder.add(ends - raw.intended)
    elif isinstance(run, OpRun) and run.mix is not None:
        reads = run.mix.is_read(run.first_seq, int(unit_latency.size))
        slot.read_recorder.add(unit_latency[reads])
        slot.recorder.add(unit_latency[~reads])
    else:
        slot.recorder.add(unit_latency)
        if raw.intended.size:
            slot.sched_recorder.add(ends - raw.intended)
    return Done(run, ends, io_ends, unit_latency, io_latency), raw.error


def _account(state: PhaseState, slot: Slot, done: Done) -> None:
    before = slot.totals
    units, io_ops = int(done.ends.size), int(done.io_ends.size)
    ops, nbytes, entries, read_ops, read_bytes = run_counts(done.run, units, io_ops)
    if slot.per_path is not None:
        done.run.add_per_path(units, io_ops, slot.per_path)
    clock = state.clock
    if clock.series is not None:
        clock.series.add(done.run, done.ends, done.io_ends, done.latency, done.io_latency)
    if clock.timeline is not None:
        clock.timeline.add(done.run, done.ends, done.io_ends)
    slot.ops += ops
    slot.bytes += nbytes
    slot.entries += entries
    slot.read_ops += read_ops
    slot.read_bytes += read_bytes
    if done.ends.size or done.io_ends.size:
        last = [int(a[-1]) for a in (done.ends, done.io_ends) if a.size]
        slot.last_end_ns = max(last)
    if slot.snapshot is not None:
        return
    ring = slot.ring
    ring.append((done, before))
    if state.first_done_final and state.first_done_ns is not None:
        slot.snapshot = slot.snapshot_at(state.first_done_ns)
        ring.clear()
        return
    while ring and ring[0][0].last_end_ns < state.floor_ns:
        ring.popleft()  # all of it ended before FIRST DONE: in the next one's counts


def first_done_floor(
    state: PhaseState, streams: Sequence[Stream], slots: list[list[Slot]], finished: list[int]
) -> None:
    """Update FIRST DONE's floor: the earliest finish so far, or an unfinished thread's
    last end accounted (its finish comes no sooner), whichever is earlier. FIRST DONE is
    final once no unfinished thread can finish before it."""
    first = state.first_done_ns
    floor = first if first is not None else 1 << 62
    for stream, rank_slots, end in zip(streams, slots, finished, strict=True):
        if not end and stream.total_ops:
            floor = min(floor, max((s.last_end_ns for s in rank_slots), default=0))
    state.floor_ns = floor
    state.first_done_final = first is not None and floor >= first


def _take(stream: Stream, slot: Slot, siblings: int) -> Run | None:
    # At most a fair share of what is left, so the thread's slots stay busy together to
    # the end instead of one slot finishing a long run alone.
    return stream.take(min(slot.batch_ops, -(-stream.remaining // siblings)))


def first_run(stream: Stream, slot: Slot, siblings: int, slots: int) -> bool:
    """Before the clock: hand the slot (one of the phase's ``slots``) its first run;
    whether there was one."""
    slot.batch_ops = max(_FIRST_RUN, min(MAX_BATCH_OPS, _FIRST_RUNS_OPS // max(slots, 1)))
    slot.pending = _take(stream, slot, siblings)
    return slot.pending is not None


async def _run_slot(
    spec: PhaseSpec,
    state: PhaseState,
    stream: Stream,
    slot: Slot,
    siblings: int,
    gate: StartGate,
) -> None:
    loop = asyncio.get_running_loop()
    on_loop = runs_on_loop(spec.engine)
    first: StartGate | None = gate if slot.pending is not None else None
    while first is not None or not state.stop.is_set():
        deadline_ns = state.clock.deadline_ns
        if deadline_ns and perf_counter_ns() >= deadline_ns:
            return
        run = slot.pending or _take(stream, slot, siblings)
        slot.pending = None
        if run is None:
            return
        slot.busy_since_ns = perf_counter_ns()
        if on_loop:
            done, error = await _execute_async(spec, state, slot, run, first)
        else:
            done, error = await loop.run_in_executor(
                spec.executor, _execute, spec, state, slot, run, first
            )
        first = None
        _account(state, slot, done)
        slot.busy_since_ns = 0
        if error is not None:
            state.fail(error)
            return
        ends = done.ends
        if ends.size < len(run):
            slot.pending = run.after(int(ends.size))
        if ends.size > 1:
            # Hand over a little more than the budget holds at this pace; the rest waits.
            op_ns = max(int(ends[-1]) - int(ends[0]), 1) / (int(ends.size) - 1)
            slot.batch_ops = max(1, min(MAX_BATCH_OPS, int(1.25 * spec.batch_ns / op_ns)))


async def run_thread(
    spec: PhaseSpec, state: PhaseState, stream: Stream, slots: list[Slot], gate: StartGate
) -> int:
    """Run one thread rank's slots to completion; return the instant its last op ended.

    Each slot holding its first run (:func:`first_run`) hands it over at once; it starts
    when ``gate`` opens."""
    async with anyio.create_task_group() as group:
        for slot in slots:
            group.start_soon(_run_slot, spec, state, stream, slot, len(slots), gate)
    finished = max(slot.last_end_ns for slot in slots)
    return finished if finished else state.clock.start_ns
