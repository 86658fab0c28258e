"""One benchmark thread's slots (``--iodepth`` per thread) — the only hot loop.

Each slot runs its whole phase in one executor thread (:func:`_slot_loop`): it takes a
run of operations from its thread's stream, hands it to the engine, which ends it after
``TARGET_BATCH_NS`` (``DRAINING_BATCH_NS`` at depth 1), or at the time limit (the slot
keeps what is left for its next run), and hands the results to the phase's books: with a
core to spare (fewer slots than cores) a thread of their own (:class:`_Books`), which
folds and accounts them while the slot's next run does its I/O; else the slot itself,
before its next run (:class:`_InlineBooks`), while the other slots' I/O keeps the cores
busy. The event loop only starts the phase, watches its intervals and learns when the
last slot has ended. Operations are timed one by one by the engine. An engine that runs
on the event loop (S3) runs its runs there instead, in one task per slot, with budgets
of ``LOOP_BATCH_NS``.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from bisect import bisect_right
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from functools import partial
from time import perf_counter_ns
from typing import TYPE_CHECKING, NamedTuple, cast

import anyio

from aiobench.engines.base import AsyncEngine, Engine, IoOptions, Job, RawBatch, runs_on_loop
from aiobench.engines.buffers import SlotBuffer
from aiobench.engines.gate import StartGate
from aiobench.errors import BenchIOError
from aiobench.kinds import PhaseKind
from aiobench.plan.dirmode import EntryRun
from aiobench.plan.layout import Run, Stream
from aiobench.plan.targets import Targets
from aiobench.plan.workload import OpRun
from aiobench.run.affinity import BOOKS_THREAD, Binding, name_thread
from aiobench.stats.client import cores_allowed
from aiobench.stats.intervals import IntervalSeries
from aiobench.stats.recorders import LatencyRecorder, as_numpy, latencies
from aiobench.stats.timeline import CounterTimeline, Counts, run_counts

if TYPE_CHECKING:  # (--opslog's module is loaded only when it is given)
    from aiobench.run.opslog import PhaseLog
    from aiobench.stats.recorders import Int64Array, Int64s

# A run ends every ~50 ms so that its operations reach the interval series, the live line
# and FIRST DONE's bookkeeping that late at most, and each run's folding and accounting
# (~0.1 ms) stays a few thousandths of it. The engine itself ends a run once an operation
# ends past its budget (or the time limit), so a run never overstays whatever the pace.
TARGET_BATCH_NS = 50_000_000
# A slot that keeps one operation in flight (synchronous I/O: --iodepth 1, dir mode, the
# Python engine's slots) leaves the device idle between two runs, while the next one is
# prepared in Python, cold after the C loop: ~0.34 ms per boundary at -t 1 --iodepth 1 on
# a loop device (0.7 % of a 50 ms run; mean in flight 0.988-0.990). Its runs get this
# budget, which keeps that under 0.2 % (0.994-0.995 in flight); the live line and the
# intervals' closing are then up to this late (each operation keeps its own end instant).
DRAINING_BATCH_NS = 200_000_000
# A run on the event loop (an AsyncEngine's) costs the same ~0.1 ms to fold and account;
# an S3 request takes milliseconds, so runs of 50 ms would carry only a few of them and
# that cost would show in its CPU per request (at 250 ms: ~10 % of a 4 KiB PUT's, #26).
# Such runs get longer budgets: the live line and intervals are then up to this late (each
# operation keeps its own end instant, so intervals stay exact).
LOOP_BATCH_NS = 1_000_000_000
MAX_BATCH_OPS = 65_536
# Operations handed over for the first run, before the pace is known; what the budget
# leaves undone stays with the slot for its next run. First runs are made before the
# clock starts (:func:`first_run`), so they are as long as memory allows: all the
# phase's first runs together hold up to _FIRST_RUNS_OPS operations (~40 MB of lists),
# at least _FIRST_RUN per slot. A phase of up to 65,536 operations per slot then has
# none of its runs made while it is timed (dir mode's names cost ~0.2 us each).
_FIRST_RUN = 256
_FIRST_RUNS_OPS = 1 << 20
# A long first run is kept as pieces of this many operations, handed over a piece or two
# at a time: a run ends at its budget, and what it leaves is cut from the run (a copy of
# its offsets), so a run of 65,536 operations paced for 2,000 would copy ~60,000 offsets
# at each boundary, the queue empty meanwhile (~0.4 ms of every 50 ms at -t 1 --iodepth 1).
_PIECE_OPS = 4096


class PhaseSpec(NamedTuple):
    """What is fixed for a phase: the work every slot of it hands to the engine, and how."""

    kind: PhaseKind
    engine: Engine
    executor: Executor
    targets: Targets
    options: IoOptions = IoOptions()
    depth: int = 1  # operations one slot keeps in flight (Engine.slot_depth)
    opslog: PhaseLog | None = None  # --opslog: each run's operations logged once back
    binding: Binding = Binding()  # --cores/--zones
    spare: bool = False  # fewer slots than cores (set by run_slots; Job.spare)

    @property
    def batch_ns(self) -> int:
        """A run's time budget, from the engine and the depth."""
        if runs_on_loop(self.engine):
            return LOOP_BATCH_NS
        return TARGET_BATCH_NS if self.depth > 1 else DRAINING_BATCH_NS


class Clock(NamedTuple):
    """A phase's clock, set once at its common start (zeros before it): the start, the
    time limit's end (0: none), and the records its runs are added to."""

    start_ns: int = 0
    deadline_ns: int = 0
    series: IntervalSeries | None = None
    timeline: CounterTimeline | None = None  # under MPI: counts to read at the job's first done


@dataclass(slots=True, eq=False)  # (state: compared by identity)
class PhaseState:
    """What changes while a phase runs, seen by all its slots. ``lock`` guards what the
    books and the watcher share (the slots' counts, the interval series, FIRST DONE);
    ``inflight_lock`` only the in-flight counters, so that a slot starting its next run
    never waits for the books to account its last one."""

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
    inflight_lock: threading.Lock = field(default_factory=threading.Lock)

    def fail(self, error: BenchIOError) -> None:
        if self.error is None:
            self.error = error
        self.stop.set()


class Done(NamedTuple):
    """What one run completed: end instants and latencies of its units and block I/Os.

    ``io_latency`` is None in file mode, where the units are the block I/Os.
    """

    run: Run
    ends: Int64s
    io_ends: Int64s
    latency: Int64s
    io_latency: Int64s | None

    @property
    def last_end_ns(self) -> int:
        return max((int(a[-1]) for a in (self.ends, self.io_ends) if len(a)), default=0)

    def totals_at(self, instant_ns: int) -> Counts | None:
        """The counts of this run done by ``instant_ns``; None if all were."""
        units = bisect_right(self.ends, instant_ns)
        io_ops = bisect_right(self.io_ends, instant_ns)
        if units == len(self.ends) and io_ops == len(self.io_ends):
            return None
        return run_counts(self.run, units, io_ops)


@dataclass(slots=True, eq=False)  # (state: compared by identity)
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
    later: Run | None = None  # taken to follow ``pending`` but not joinable with it
    ahead: deque[Run] = field(default_factory=deque)  # the first run's further pieces
    # The runs that may end after FIRST DONE (PhaseState.floor_ns), with the slot's counts
    # before each, kept until FIRST DONE is final and the counts at it are in ``snapshot``.
    ring: deque[tuple[Done, Counts]] = field(default_factory=deque)
    snapshot: Counts | None = None
    per_path: Int64Array | None = None
    # The handles of the slot's thread when it has its own (--nofdsharing); None: the
    # phase's shared ones.
    targets: Targets | None = None
    busy_since_ns: int = 0  # nothing it has yet to account ends before this; 0 = ended
    # Held from a run's hand-over to the books until it is accounted (_Books.hand).
    unsettled: threading.Lock = field(default_factory=threading.Lock)
    rank: int = 0  # the (global) thread rank it belongs to (--opslog's worker_rank)

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
    spec: PhaseSpec,
    state: PhaseState,
    slot: Slot,
    run: Run,
    gate: StartGate | None,
    follows: bool = False,
) -> tuple[Job, int]:
    """The engine's job for ``run``, counted in flight; (the job, operations it queues).

    A slot's first run waits at the phase's ``gate``, inside the engine (which starts its
    time budget there); one that finds the phase stopped by then does nothing.
    ``follows``: the slot has operations after ``run`` (see :attr:`Job.follows`)."""
    if gate is not None:
        gate.register()
    queued = min(spec.depth, len(run))  # operations this run keeps in flight at once
    with state.inflight_lock:
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
        spec.targets if slot.targets is None else slot.targets,
        run,
        slot.buffer,
        until,
        deadline_ns=clock.deadline_ns,
        stop=state.stop,
        options=spec.options,
        schedule_start_ns=clock.start_ns,
        depth=spec.depth,
        gate=gate,
        follows=follows,
        spare=spec.spare,
    )
    return job, queued


def _done(state: PhaseState, queued: int) -> None:
    with state.inflight_lock:
        state.inflight -= queued


def _execute(
    spec: PhaseSpec,
    state: PhaseState,
    slot: Slot,
    run: Run,
    gate: StartGate | None,
    follows: bool = False,
) -> RawBatch:
    """Runs in the slot's executor thread: the I/O of one run (its folding and accounting
    are the books' work, :class:`_Books`)."""
    job, queued = _job(spec, state, slot, run, gate, follows)
    try:
        return spec.engine.run(job)
    finally:
        _done(state, queued)


async def _execute_async(
    spec: PhaseSpec, state: PhaseState, slot: Slot, run: Run, gate: StartGate | None
) -> RawBatch:
    """:func:`_execute` for an engine that runs on the event loop (:class:`AsyncEngine`)."""
    job, queued = _job(spec, state, slot, run, gate)
    engine = cast(AsyncEngine, spec.engine)
    try:
        return await engine.run_async(job)
    finally:
        _done(state, queued)


def _fold(slot: Slot, run: Run, raw: RawBatch) -> Done:
    """A run's latencies into the slot's recorders."""
    ends, io_ends = raw.ends, raw.io_ends
    unit_latency = latencies(ends, raw.starts)
    io_latency = None
    if isinstance(run, EntryRun):
        io_latency = latencies(io_ends, raw.io_starts)
        slot.entry_recorder.add(unit_latency)
        slot.recorder.add(io_latency)
        if len(raw.first_bytes):
            slot.ttfb_recorder.add(raw.first_bytes)
        if len(raw.intended):  # under a rate limit: from each entry's scheduled start
            slot.sched_recorder.add(latencies(ends, raw.intended))
    elif isinstance(run, OpRun) and run.mix is not None:
        reads = run.mix.is_read(run.first_seq, len(unit_latency))
        mixed = as_numpy(unit_latency)  # (--rwmixpct computes with numpy: see RwMix)
        slot.read_recorder.add(mixed[reads])
        slot.recorder.add(mixed[~reads])
    else:
        slot.recorder.add(unit_latency)
        if len(raw.intended):
            slot.sched_recorder.add(latencies(ends, raw.intended))
    return Done(run, ends, io_ends, unit_latency, io_latency)


def _account(state: PhaseState, slot: Slot, done: Done) -> None:
    before = slot.totals
    units, io_ops = len(done.ends), len(done.io_ends)
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
    if len(done.ends) or len(done.io_ends):
        last = [int(a[-1]) for a in (done.ends, done.io_ends) if len(a)]
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


def _take(stream: Stream, slot: Slot, siblings: int, have: int = 0) -> Run | None:
    # At most a fair share of what is left, so the thread's slots stay busy together to
    # the end instead of one slot finishing a long run alone.
    if slot.later is not None:
        run, slot.later = slot.later, None
        return run
    if slot.ahead:
        return slot.ahead.popleft()
    return stream.take(min(slot.batch_ops - have, -(-stream.remaining // siblings)))


def _topped_up(stream: Stream, slot: Slot, siblings: int, run: Run | None) -> Run | None:
    """The slot's next run: what its last one left (``run``) with the next operations of
    its thread after it, up to its run size. An engine that keeps a queue carries the
    operations in flight at a run's end into the next one; with the next operations
    behind them, it can keep its queue full over the boundary instead of draining it at
    the end of what was left."""
    more = _take(stream, slot, siblings, 0 if run is None else len(run))
    if run is None or more is None:
        return run or more
    joined = run.joined(more) if isinstance(run, OpRun) and isinstance(more, OpRun) else None
    if joined is None:
        slot.later = more  # (not one run: the next one)
    return joined or run


def first_run(stream: Stream, slot: Slot, siblings: int, slots: int) -> bool:
    """Before the clock: hand the slot (one of the phase's ``slots``) its first run;
    whether there was one."""
    slot.batch_ops = max(_FIRST_RUN, min(MAX_BATCH_OPS, _FIRST_RUNS_OPS // max(slots, 1)))
    run = _take(stream, slot, siblings)
    if isinstance(run, OpRun):
        first, *rest = run.pieces(_PIECE_OPS)
        run = first
        slot.ahead.extend(rest)
    slot.pending = run
    return run is not None


def _next_run(
    spec: PhaseSpec,
    state: PhaseState,
    stream: Stream,
    slot: Slot,
    siblings: int,
    take_lock: threading.Lock | None,
) -> Run | None:
    """The slot's next run, or None once the time limit is up or its thread has no more
    work. ``take_lock`` guards the stream where the thread's slots run in threads."""
    deadline_ns = state.clock.deadline_ns
    if deadline_ns and perf_counter_ns() >= deadline_ns:
        return None
    run, slot.pending = slot.pending, None
    short = isinstance(run, OpRun) and len(run) < slot.batch_ops
    if run is not None and not (short and (spec.depth > 1 or slot.ahead)):
        return run
    with take_lock or contextlib.nullcontext():
        return _topped_up(stream, slot, siblings, run)


def _follows(stream: Stream, slot: Slot) -> bool:
    """Whether the slot's thread has operations after the run it was just handed (read
    without the stream's lock: a sibling slot that takes them first only costs the slot
    one more, short run)."""
    return bool(slot.ahead) or slot.later is not None or stream.remaining > 0


def _slot_loop(
    spec: PhaseSpec,
    state: PhaseState,
    stream: Stream,
    slot: Slot,
    siblings: int,
    first: StartGate | None,
    take_lock: threading.Lock,
    books: _InlineBooks,
) -> None:
    """A slot's whole phase, in one executor thread: run after run, each handed to the
    phase's books to fold and account while the slot goes on with its next run. The event
    loop's work is then per phase and per interval, not per run or per slot (issue #28
    measured the per-run round-trips to the loop at ~12 % of two cores at ``-t 256``);
    the slot keeps its thread (and with it the engine's per-slot state, such as a queue
    carried from run to run); and between two runs it does only what the next one needs
    (at ``-t 1 --iodepth 1`` folding and accounting in line took ~0.2 of the ~0.4 ms a
    boundary cost, the device idle meanwhile)."""
    while first is not None or not state.stop.is_set():
        run = _next_run(spec, state, stream, slot, siblings, take_lock)
        if run is None:
            return
        raw = _execute(spec, state, slot, run, first, _follows(stream, slot))
        first = None
        books.hand(slot, run, raw)
        if raw.error is not None:
            state.fail(raw.error)
            return
        _carry(spec, slot, run, raw.ends)


async def _loop_slot(
    spec: PhaseSpec, state: PhaseState, stream: Stream, slot: Slot, siblings: int, gate: StartGate
) -> None:
    """:func:`_slot_loop` for an engine that runs on the event loop (:class:`AsyncEngine`),
    its runs awaited here, one after another."""
    first: StartGate | None = gate if slot.pending is not None else None
    while first is not None or not state.stop.is_set():
        run = _next_run(spec, state, stream, slot, siblings, None)
        if run is None:
            return
        raw = await _execute_async(spec, state, slot, run, first)
        first = None
        _settle(spec, state, _Handed(slot, run, raw, 0))
        if raw.error is not None:
            state.fail(raw.error)
            return
        _carry(spec, slot, run, raw.ends)


def _carry(spec: PhaseSpec, slot: Slot, run: Run, ends: Int64s) -> None:
    """What a run that completed ``ends`` left for the slot's next run, and that run's
    size at the pace it went."""
    done = len(ends)
    if done < len(run):
        slot.pending = run.after(done)
    if done > 1:
        # Hand over a little more than the budget holds at this pace; the rest waits.
        op_ns = max(int(ends[-1]) - int(ends[0]), 1) / (done - 1)
        slot.batch_ops = max(1, min(MAX_BATCH_OPS, int(1.25 * spec.batch_ns / op_ns)))


class _InlineBooks:
    """The books kept by the slots themselves: each run folded and accounted in the slot's
    thread before its next run (where every core already has a slot's I/O to do: a
    bookkeeping thread would take its time from them, and the phase's ~20 runs per slot
    per second would queue up behind it, the intervals closing later)."""

    def __init__(self, spec: PhaseSpec, state: PhaseState, ends: _Ends) -> None:
        self.spec, self.state, self.ends = spec, state, ends

    def hand(self, slot: Slot, run: Run, raw: RawBatch) -> None:
        _settle(self.spec, self.state, _Handed(slot, run, raw, 0))

    def ended(self, local: int, slot: Slot, failure: BaseException | None) -> None:
        self.ends.ended(local, slot, failure)

    def close(self) -> None:
        pass


class _Books(_InlineBooks):
    """A phase's bookkeeping thread: each run a slot hands over is folded into the slot's
    recorders and accounted (counts, intervals, FIRST DONE's ring, --opslog) here, in the
    order handed, while the slot's next run does its I/O. A slot has at most one run
    waiting (:meth:`hand` waits for the one before), so the books keep up with the slots,
    and its end is counted (:class:`_Ends`) only after its last run is accounted.

    A slot counts as busy from the moment it hands a run over to the end of its next one
    (that run's operations cannot end before the moment; once accounted, from the run's
    last end), so the watcher never closes an interval over a run not yet accounted."""

    def __init__(self, spec: PhaseSpec, state: PhaseState, ends: _Ends) -> None:
        super().__init__(spec, state, ends)
        self.items: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._keep, name=BOOKS_THREAD.decode(), daemon=True)
        self.thread.start()

    def hand(self, slot: Slot, run: Run, raw: RawBatch) -> None:
        slot.unsettled.acquire()  # (released once the slot's last run is accounted)
        self.items.put(_Handed(slot, run, raw, perf_counter_ns()))

    def ended(self, local: int, slot: Slot, failure: BaseException | None) -> None:
        self.items.put(_Ended(local, slot, failure))

    def close(self) -> None:
        self.items.put(None)
        self.thread.join()

    def _keep(self) -> None:
        name_thread(BOOKS_THREAD)
        while (item := self.items.get()) is not None:
            try:
                if isinstance(item, _Ended):
                    self.ends.ended(item.local, item.slot, item.failure)
                else:
                    _settle(self.spec, self.state, item)
            except BaseException as exc:  # (a fault here ends the phase, never hangs it)
                self.ends.fail(exc)
            finally:
                if isinstance(item, _Handed):
                    item.slot.unsettled.release()


def _settle(spec: PhaseSpec, state: PhaseState, item: _Handed) -> None:
    """A handed run folded and accounted; its slot busy from the run's last end (before a
    first end, its hand-over or now): nothing it has yet to account can end before. Not
    from the hand-over: a slot whose last run this was ends without another, and an
    interval boundary between that run's last end and its hand-over would be closed
    whole meanwhile, past the phase's end, which finish() cuts the last interval at."""
    slot = item.slot
    if spec.opslog is not None:  # (after the engine's timed loop)
        spec.opslog.record(item.run, item.raw, slot.rank)
    done = _fold(slot, item.run, item.raw)
    with state.lock:  # (the interval series and timeline are the watcher's too)
        _account(state, slot, done)
        slot.busy_since_ns = slot.last_end_ns or item.handed_ns or perf_counter_ns()


class _Handed(NamedTuple):
    slot: Slot
    run: Run
    raw: RawBatch
    handed_ns: int


class _Ended(NamedTuple):
    local: int
    slot: Slot
    failure: BaseException | None


_Item = _Handed | _Ended


class _Ends:
    """Which slots have ended, counted where they end (an executor thread or the loop):
    ``finished(local, end)`` runs under the phase's lock once all of thread ``local``'s
    slots have, and the loop is woken once, when the last slot of the phase has."""

    def __init__(
        self, state: PhaseState, slots: list[list[Slot]], finished: Callable[[int, int], None]
    ) -> None:
        self.state, self.slots, self.finished = state, slots, finished
        self.left = [len(rank_slots) for rank_slots in slots]
        self.remaining = sum(self.left)
        self.failure: BaseException | None = None
        self.loop = asyncio.get_running_loop()
        self.all_ended = asyncio.Event()
        if not self.remaining:
            self.all_ended.set()

    def fail(self, failure: BaseException) -> None:
        with self.state.lock:
            if self.failure is None:
                self.failure = failure
        self.state.stop.set()

    def ended(self, local: int, slot: Slot, failure: BaseException | None = None) -> None:
        with self.state.lock:
            slot.busy_since_ns = 0
            if failure is not None and self.failure is None:
                self.failure = failure
            self.left[local] -= 1
            if not self.left[local]:
                self.finished(local, max(s.last_end_ns for s in self.slots[local]))
            self.remaining -= 1
            last = not self.remaining
        if last:
            self.loop.call_soon_threadsafe(self.all_ended.set)


def _slot_thread(
    books: _InlineBooks, local: int, slot: Slot, loop: Callable[[], None], binding: Binding
) -> None:
    """A slot's :func:`_slot_loop` in its executor thread (bound as thread ``local``,
    --cores/--zones), its end (or failure) counted after its last run's."""
    failure: BaseException | None = None
    try:
        binding.bind_thread(local)
        loop()
    except BaseException as exc:  # (handed to the loop, which raises it)
        failure = exc
        books.state.stop.set()
    finally:
        books.ended(local, slot, failure)


async def _slot_task(
    ends: _Ends, local: int, slot: Slot, loop: Callable[[], Awaitable[None]]
) -> None:
    try:
        await loop()
    finally:
        ends.ended(local, slot)


async def run_slots(
    spec: PhaseSpec,
    state: PhaseState,
    streams: Sequence[Stream],
    slots: list[list[Slot]],
    gate: StartGate,
    finished: Callable[[int, int], None],
) -> None:
    """Run every thread rank's slots to completion; ``finished(local, end)`` is called
    (under ``state.lock``) as thread ``local``'s last slot ends, with the instant its last
    operation ended (0 if none did).

    Each slot holding its first run (:func:`first_run`) hands it over at once; it starts
    when ``gate`` opens. An executor engine's slot runs its whole phase in one executor
    thread (:func:`_slot_loop`); an event-loop engine's in a task of its own."""
    ends = _Ends(state, slots, finished)
    for rank_slots in slots:
        for slot in rank_slots:
            slot.busy_since_ns = perf_counter_ns()
    if runs_on_loop(spec.engine):
        async with anyio.create_task_group() as group:
            for local, (stream, rank_slots) in enumerate(zip(streams, slots, strict=True)):
                for slot in rank_slots:
                    task = partial(_loop_slot, spec, state, stream, slot, len(rank_slots), gate)
                    group.start_soon(_slot_task, ends, local, slot, task)
        return
    spare = sum(len(rank_slots) for rank_slots in slots) < cores_allowed()
    spec = spec._replace(spare=spare)
    books = (_Books if spare else _InlineBooks)(spec, state, ends)
    try:
        await _threads_run(spec, state, streams, slots, gate, books)
    finally:
        books.close()


async def _threads_run(
    spec: PhaseSpec,
    state: PhaseState,
    streams: Sequence[Stream],
    slots: list[list[Slot]],
    gate: StartGate,
    books: _InlineBooks,
) -> None:
    """:func:`run_slots` for an executor engine: each slot in an executor thread."""
    ends = books.ends
    futures: list[tuple[Future[None], int, Slot]] = []
    for local, (stream, rank_slots) in enumerate(zip(streams, slots, strict=True)):
        take_lock = threading.Lock()
        for slot in rank_slots:
            first = gate if slot.pending is not None else None
            body = partial(
                _slot_loop, spec, state, stream, slot, len(rank_slots), first, take_lock, books
            )
            binding = spec.binding
            future = spec.executor.submit(_slot_thread, books, local, slot, body, binding)
            futures.append((future, local, slot))
    try:
        await ends.all_ended.wait()
    except BaseException:
        # Cancelled (the phase is torn down): each loop ends after its current run, and
        # the slots' memory must outlive those runs. A slot whose loop never started
        # counts as ended here.
        state.stop.set()
        for future, local, slot in futures:
            if future.cancel():
                ends.ended(local, slot)
        with anyio.CancelScope(shield=True):
            await ends.all_ended.wait()
        raise
    if ends.failure is not None:
        raise ends.failure
