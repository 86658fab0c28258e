"""Runs one phase: untimed setup, common start, first-done instant, time limit, interrupts."""

from __future__ import annotations

import datetime
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from time import perf_counter_ns, process_time_ns

import anyio
import numpy as np

from aiobench import interrupts
from aiobench.config import BenchConfig
from aiobench.dirmode import DirLayout, EntryStream
from aiobench.engine import Engine, IoOptions, SlotBuffer, StartGate
from aiobench.intervals import CpuSample, IntervalSeries, cpu_percent
from aiobench.kinds import MKDIRS, READ, RMDIRS, WRITE, phase_name
from aiobench.memory import slots_with_work
from aiobench.mpi import World
from aiobench.results import (
    IntervalStats,
    PhaseResult,
    Progress,
    RunResult,
    TargetTotals,
    ThreadTotals,
    Totals,
)
from aiobench.stats import LatencyRecorder
from aiobench.targets import Layout, Slice
from aiobench.timeline import CounterTimeline
from aiobench.units import rate
from aiobench.worker import PhaseShared, Slot, Stream, first_run, run_thread
from aiobench.workload import OpStream, RwMix, ops_per_thread

# While an interval has ended but a run handed over before its end is still out, the
# watcher looks again this often (runs last up to ~50 ms).
_CLOSE_POLL_NS = 5_000_000
DEFAULT_LIVE_INTERVAL_NS = 2_000_000_000  # elbencho's --liveint default
# Under MPI: how often a rank looks for a peer's stop message while it measures.
_PEER_POLL_NS = 50_000_000


class Observer:
    """What the CLI watches while a phase runs; called on the event loop, must not block."""

    def phase_started(self, name: str, start: datetime.datetime) -> None:
        """A phase starts now (its untimed setup is done); ``start`` is the wall clock."""

    def progress(self, progress: Progress) -> None:
        """Every live interval: where the phase stands."""

    def interval(self, phase: str, interval: IntervalStats) -> None:
        """An interval of the phase is complete."""

    def phase_ended(self, name: str) -> None:
        """The phase's I/O is over (its result follows)."""

    def run_done(self, result: RunResult) -> None:
        """Every block is reported and nothing more will be measured (the ``-i`` summary
        follows the last block); called on success, error and signal alike."""


@dataclass(slots=True)
class RunContext:
    """What all phases of a run share: config, layout, open targets, engine, executor."""

    cfg: BenchConfig
    layout: Layout | DirLayout
    paths: Sequence[str]
    fds: Sequence[int]
    engine: Engine
    executor: ThreadPoolExecutor
    stop: threading.Event
    observer: Observer = field(default_factory=Observer)
    live_interval_ns: int = DEFAULT_LIVE_INTERVAL_NS
    # Under MPI: the job, the global thread ranks this process runs, and which slices of
    # the dataset they take (the first one's index, and how many there are in all).
    world: World | None = None
    thread_ids: range | None = None
    split_base: int = 0
    split_threads: int | None = None

    @property
    def ids(self) -> range:
        """The (global) thread ranks of this process."""
        return range(self.cfg.threads) if self.thread_ids is None else self.thread_ids

    @property
    def cpus(self) -> int:
        """The cores CPU percentages are shares of: those this process may run on; under
        MPI all of the host's, so the ranks of a host add up to its load (mpirun may bind
        each rank to one core)."""
        if self.world is not None:
            return os.cpu_count() or 1
        return len(os.sched_getaffinity(0))

    @property
    def slices(self) -> int:
        """How many thread slices the dataset is split into."""
        return self.cfg.threads if self.split_threads is None else self.split_threads

    def check_signal(self) -> None:
        """A safe point of setup: stop here (:class:`~aiobench.interrupts.Interrupted`) if a
        signal came. Not under MPI, where ranks that stopped in setup would leave the others
        waiting at the phase's common start: there the phase starts and its stop event
        ends it at once on every rank."""
        if self.world is None:
            interrupts.check()


def make_executor(slots: int) -> ThreadPoolExecutor:
    """A pool with one thread per slot, all started now (thread start-up is not measured)."""
    pool = ThreadPoolExecutor(max_workers=slots, thread_name_prefix="aiobench-io")
    barrier = threading.Barrier(slots)
    for future in [pool.submit(barrier.wait) for _ in range(slots)]:
        future.result()
    return pool


def _streams(ctx: RunContext, kind: str, phase_index: int) -> list[Stream]:
    cfg, layout = ctx.cfg, ctx.layout
    if isinstance(layout, DirLayout):
        return [EntryStream(layout, kind, rank) for rank in ctx.ids]
    stride = ctx.slices if cfg.strided else 1
    mine = range(ctx.split_base, ctx.split_base + len(ctx.ids))
    if cfg.strided:
        # Thread r takes blocks r, r + threads, ... of the concatenated range.
        total = layout.total_blocks
        parts = [Slice(r, len(range(r, total, stride))) for r in mine]
    else:
        parts = layout.slices(ctx.slices)[mine.start : mine.stop]
    counts = ops_per_thread(layout, parts, ctx.slices, cfg.rand, cfg.randamount)
    pct = _rwmix_pct(cfg, kind)
    return [
        OpStream(
            layout=layout,
            part=part,
            total_ops=count,
            rand=cfg.rand,
            aligned=not cfg.norandalign,
            permute=kind == WRITE,
            rng=np.random.default_rng(np.random.SeedSequence([cfg.seed, phase_index, rank])),
            backward=cfg.backward,
            stride=stride,
            loop=cfg.infloop,
            mix=None if pct is None else RwMix(pct, rank),
        )
        for rank, part, count in zip(ctx.ids, parts, counts, strict=True)
    ]


def _rwmix_pct(cfg: BenchConfig, kind: str) -> int | None:
    """--rwmixpct of this phase: only the write phase mixes in reads."""
    return cfg.rwmixpct if kind == WRITE else None


def _slots(
    ctx: RunContext, kind: str, phase_index: int, streams: Sequence[Stream], depth: int
) -> list[list[Slot]]:
    """Each thread's slots: ``--iodepth`` of them, or one keeping ``depth`` operations in
    flight where the engine queues them itself."""
    cfg, layout = ctx.cfg, ctx.layout
    # Each MPI rank fills its pools from its own stream (one process: ids start at 0).
    seeds = [cfg.seed, phase_index, (1 << 32) + ctx.ids.start]
    rng = np.random.default_rng(np.random.SeedSequence(seeds))
    salt = int(rng.integers(0, 1 << 62))
    moves_data = kind in (READ, WRITE) and (
        not isinstance(layout, DirLayout) or layout.file_size > 0
    )

    def buffer(rank: int, i: int) -> SlotBuffer | None:
        if not moves_data:
            return None
        return SlotBuffer(
            layout.block_size,
            for_write=kind == WRITE,
            rng=rng,
            stamp_base=salt + ((rank * cfg.iodepth + i) << 40),
            depth=depth,
        )

    def slot(rank: int, i: int) -> Slot:
        per_path = np.zeros((len(ctx.paths), 3), dtype=np.int64) if len(ctx.paths) > 1 else None
        return Slot(buffer(rank, i), per_path=per_path)

    # A slot that can never get an operation gets no memory (the budget counts the same).
    per_thread = 1 if depth > 1 else cfg.iodepth
    counts = [slots_with_work(per_thread, s.total_ops, cfg.infloop) for s in streams]
    slots: list[list[Slot]] = []
    try:
        for rank, count in zip(ctx.ids, counts, strict=True):
            slots.append([])
            for i in range(count):
                ctx.check_signal()  # filling a buffer of a large block takes a while
                slots[-1].append(slot(rank, i))
        ctx.check_signal()  # before the phase's setup changes anything
    except BaseException:
        _close_buffers(slots)
        raise
    return slots


def _close_buffers(slots: list[list[Slot]]) -> None:
    for rank_slots in slots:
        for slot in rank_slots:
            if slot.buffer is not None:
                slot.buffer.close()


def _rank_dirs(ctx: RunContext, kind: str, shared: PhaseShared) -> None:
    """Untimed: create the ``r<r>`` dirs before MKDIRS, remove them after RMDIRS."""
    layout = ctx.layout
    if not isinstance(layout, DirLayout) or kind not in (MKDIRS, RMDIRS):
        return
    if kind == RMDIRS and (shared.stop.is_set() or shared.error is not None):
        return  # the dirs inside may still be there
    error = ctx.engine.rank_dirs(
        ctx.fds,
        ctx.paths,
        layout.rank_dirs(ctx.ids),
        remove=kind == RMDIRS,
        missing_ok=kind == RMDIRS and ctx.cfg.nodelerr,
    )
    if error is not None:
        shared.fail(error)


def _rate_limit(cfg: BenchConfig, layout: Layout | DirLayout, kind: str) -> int:
    """Bytes per second per thread this phase may move (0 = no limit)."""
    if isinstance(layout, DirLayout):
        return 0
    return {READ: cfg.limitread, WRITE: cfg.limitwrite}.get(kind, 0)


def _prepare_files(ctx: RunContext, kind: str, shared: PhaseShared) -> None:
    """Untimed, before a write phase: --trunc, --trunctosize, --preallocfile, in that order."""
    cfg, layout = ctx.cfg, ctx.layout
    if kind != WRITE or not isinstance(layout, Layout) or not cfg.file_size_options():
        return
    error = ctx.engine.prepare_files(
        ctx.fds,
        ctx.paths,
        layout.sizes,
        trunc=cfg.trunc,
        trunctosize=cfg.trunctosize,
        prealloc=cfg.preallocfile,
    )
    if error is not None:
        shared.fail(error)


async def run_phase(
    ctx: RunContext, kind: str, phase_index: int
) -> tuple[PhaseResult, PhaseShared]:
    """Run one phase of ``kind`` over all threads and summarise it."""
    cfg = ctx.cfg
    setup_ns = perf_counter_ns()
    name = phase_name(kind, _rwmix_pct(cfg, kind))
    streams = _streams(ctx, kind, phase_index)
    options = IoOptions(
        direct=cfg.direct,
        ignore_missing=cfg.nodelerr,
        verify=cfg.verify,
        verify_direct=cfg.verifydirect,
        block_var_pct=cfg.blockvarpct,
        rate_bytes_per_s=_rate_limit(cfg, ctx.layout, kind),
    )
    mixed = _rwmix_pct(cfg, kind) is not None
    depth = (
        1
        if mixed
        else ctx.engine.slot_depth(
            kind, options, cfg.iodepth, dir_mode=isinstance(ctx.layout, DirLayout)
        )
    )
    slots = _slots(ctx, kind, phase_index, streams, depth)
    shared = PhaseShared(
        kind=kind,
        engine=ctx.engine,
        executor=ctx.executor,
        fds=ctx.fds,
        paths=ctx.paths,
        options=options,
        depth=depth,
        stop=ctx.stop,
    )
    finished: list[int] = [0] * len(streams)
    cpu: dict[str, CpuSample] = {}

    async def thread(local: int) -> None:
        end = await run_thread(shared, streams[local], slots[local], gate)
        finished[local] = end
        if streams[local].total_ops == 0:
            return  # a thread without work (shared dirs) neither finishes first nor last
        if shared.first_done_ns is None:
            # Published once; slots still running cut their counters at this instant.
            shared.first_done_ns = end
            cpu["first"] = _cpu_now()

    if kind == MKDIRS:
        _rank_dirs(ctx, kind, shared)
    _prepare_files(ctx, kind, shared)
    # Every slot's first run is taken now and handed to its thread, which waits at the
    # gate: the clock starts once all of them are ready.
    count = sum(len(rank_slots) for rank_slots in slots)
    ready = sum(
        first_run(stream, slot, len(rank_slots), count)
        for stream, rank_slots in zip(streams, slots, strict=True)
        for slot in rank_slots
    )
    gate = StartGate(ready)
    if ctx.world is not None:
        ctx.world.listen()
    try:
        ctx.check_signal()  # (the buffers are closed below)
        async with anyio.create_task_group() as watcher:
            async with anyio.create_task_group() as group:
                try:
                    for local in range(len(streams)):
                        group.start_soon(thread, local)
                    await gate.all_arrived()
                    if ctx.world is not None:
                        ctx.world.barrier()  # the common start of all ranks (all are ready)
                    wall_start, series = _start(ctx, name, shared, streams, cpu)
                finally:
                    # Not started (an error or cancellation): the waiting runs do nothing.
                    stopped = shared.start_ns == 0 or shared.stop.is_set()
                    gate.open(shared.start_ns, shared.deadline_ns, stopped=stopped)
                watcher.start_soon(_watch, ctx, name, shared, series, streams, slots, finished)
            watcher.cancel_scope.cancel()
        if ctx.world is not None:
            ctx.world.poll(ctx.stop)  # a stop here after the watcher's last look
    finally:
        _close_buffers(slots)
    cpu["last"] = _cpu_now()
    last = max(finished)
    time_up = 0 < shared.deadline_ns <= cpu["last"].wall_ns and not shared.stop.is_set()
    for record in series.finish(last, _active_at(streams, finished), cpu["last"], time_up=time_up):
        ctx.observer.interval(name, record)
    ctx.observer.phase_ended(name)
    result = _summarise(kind, ctx, shared, streams, slots, finished, cpu, wall_start)
    result = replace(result, startup_ns=shared.start_ns - setup_ns)
    if kind == RMDIRS:
        if ctx.world is not None:
            ctx.world.barrier()  # shared dirs inside r0 may still be in other ranks' hands
        _rank_dirs(ctx, kind, shared)
    return result, shared


def _start(
    ctx: RunContext,
    name: str,
    shared: PhaseShared,
    streams: Sequence[Stream],
    cpu: dict[str, CpuSample],
) -> tuple[datetime.datetime, IntervalSeries]:
    """The phase's common start: the clock, the interval series, the time limit."""
    cfg = ctx.cfg
    wall_start = datetime.datetime.now(datetime.timezone.utc)
    ctx.observer.phase_started(name, wall_start)
    shared.start_ns = perf_counter_ns()
    cpu["start"] = CpuSample(shared.start_ns, process_time_ns())
    series = shared.series = IntervalSeries(
        start_ns=shared.start_ns,
        interval_ns=ctx.live_interval_ns,
        planned_units=sum(stream.total_ops for stream in streams),
        dir_mode=isinstance(ctx.layout, DirLayout),
        cpus=ctx.cpus,
    )
    series.sample_cpu(0, cpu["start"])
    if ctx.world is not None:
        shared.timeline = CounterTimeline(shared.start_ns)
    if cfg.timelimit_s:
        shared.deadline_ns = shared.start_ns + cfg.timelimit_s * 1_000_000_000
    if cfg.infloop:
        series.endless_until_ns = shared.deadline_ns
    return wall_start, series


def _cpu_now() -> CpuSample:
    return CpuSample(perf_counter_ns(), process_time_ns())


def _active_at(streams: Sequence[Stream], finished: list[int]) -> Callable[[int], int]:
    """Threads with work that had not finished by an instant."""

    def active(instant_ns: int) -> int:
        return sum(
            1
            for stream, end in zip(streams, finished, strict=True)
            if stream.total_ops and (end == 0 or end > instant_ns)
        )

    return active


async def _watch(
    ctx: RunContext,
    name: str,
    shared: PhaseShared,
    series: IntervalSeries,
    streams: list[Stream],
    slots: list[list[Slot]],
    finished: list[int],
) -> None:
    """Live progress every interval, and each interval's record as soon as it is complete."""
    all_slots = [slot for rank_slots in slots for slot in rank_slots]
    dir_mode = isinstance(ctx.layout, DirLayout)
    active = _active_at(streams, finished)
    next_tick = series.boundary(1)
    seen, seen_ns = (0, 0, 0), shared.start_ns
    while True:
        now = perf_counter_ns()
        if now >= next_tick:
            k = (now - shared.start_ns) // series.interval_ns  # the interval starting now
            series.sample_cpu(k, CpuSample(now, process_time_ns()))
            counts = (
                sum(s.ops for s in all_slots),
                sum(s.bytes for s in all_slots),
                sum(s.entries for s in all_slots),
            )
            ctx.observer.progress(
                _progress(name, shared, series, counts, seen, now - seen_ns, now, dir_mode)
            )
            seen, seen_ns = counts, now
            next_tick = series.boundary(k + 1)
        # Units ending inside an interval may still be in a run handed over before its end.
        # With no run out, nothing ends after the last end seen until a slot starts again:
        # the interval holding that end stays open for finish() to cut there.
        busy = [s.busy_since_ns for s in all_slots if s.busy_since_ns]
        horizon = min(busy) if busy else max(s.last_end_ns for s in all_slots)
        for record in series.close_until(horizon, active):
            ctx.observer.interval(name, record)
        if ctx.world is not None:
            ctx.world.poll(ctx.stop)
        wait = next_tick - now
        if series.pending(now):
            wait = min(wait, _CLOSE_POLL_NS)
        if ctx.world is not None:
            wait = min(wait, _PEER_POLL_NS)
        await anyio.sleep(max(wait, 0) / 1e9)


def _progress(
    name: str,
    shared: PhaseShared,
    series: IntervalSeries,
    counts: tuple[int, int, int],
    seen: tuple[int, int, int],
    span_ns: int,
    now: int,
    dir_mode: bool,
) -> Progress:
    elapsed = now - shared.start_ns
    done = counts[2] if dir_mode else counts[0]
    planned = series.planned_units
    eta: int | None = None
    if done and series.endless_until_ns is None:
        eta = elapsed * max(planned - done, 0) // done
    if shared.deadline_ns:
        left = max(shared.deadline_ns - now, 0)
        eta = left if eta is None else min(eta, left)
    return Progress(
        phase=name,
        elapsed_ns=elapsed,
        done_percent=series.percent_done(done, now),
        done_bytes=counts[1],
        bytes_per_s=rate(counts[1] - seen[1], span_ns),
        iops=rate(counts[0] - seen[0], span_ns),
        entries_per_s=rate(counts[2] - seen[2], span_ns),
        eta_ns=eta,
        dir_mode=dir_mode,
    )


def _targets(
    ctx: RunContext, slots: list[list[Slot]], elapsed: list[int], totals: Totals
) -> tuple[TargetTotals, ...]:
    """Per target: what all threads did there, over the slowest of those threads."""
    if len(ctx.paths) == 1:
        return (
            TargetTotals(
                index=0,
                path=ctx.paths[0],
                ops=totals.ops,
                bytes=totals.bytes,
                entries=totals.entries,
                elapsed_ns=totals.elapsed_ns,
            ),
        )
    per_thread = [
        sum((s.per_path for s in rank_slots if s.per_path is not None), np.zeros(1, np.int64))
        for rank_slots in slots
    ]
    out = []
    for index, path in enumerate(ctx.paths):
        rows = [counts[index] for counts in per_thread]
        worked = [e for row, e in zip(rows, elapsed, strict=True) if row.any()]
        out.append(
            TargetTotals(
                index=index,
                path=path,
                ops=int(sum(int(row[0]) for row in rows)),
                bytes=int(sum(int(row[1]) for row in rows)),
                entries=int(sum(int(row[2]) for row in rows)),
                elapsed_ns=max(worked, default=0),
            )
        )
    return tuple(out)


def _summarise(
    kind: str,
    ctx: RunContext,
    shared: PhaseShared,
    streams: list[Stream],
    slots: list[list[Slot]],
    finished: list[int],
    cpu: dict[str, CpuSample],
    wall_start: datetime.datetime,
) -> PhaseResult:
    start = shared.start_ns
    first = shared.first_done_ns or start
    cpus = ctx.cpus
    latency, entry_latency, sched = LatencyRecorder(), LatencyRecorder(), LatencyRecorder()
    reads = LatencyRecorder()
    first_totals = [0, 0, 0, 0, 0]
    threads = []
    for local, rank_slots in enumerate(slots):
        for slot in rank_slots:
            latency.merge(slot.recorder)
            entry_latency.merge(slot.entry_recorder)
            sched.merge(slot.sched_recorder)
            reads.merge(slot.read_recorder)
            for i, value in enumerate(slot.snapshot_at(first)):
                first_totals[i] += value
        threads.append(
            ThreadTotals(
                rank=ctx.ids[local],
                ops=sum(s.ops for s in rank_slots),
                bytes=sum(s.bytes for s in rank_slots),
                entries=sum(s.entries for s in rank_slots),
                elapsed_ns=finished[local] - start,
            )
        )
    last = max(finished)
    incomplete = any(stream.remaining for stream in streams) or any(
        slot.pending for rank_slots in slots for slot in rank_slots
    )
    all_slots = [slot for rank_slots in slots for slot in rank_slots]
    last_done = Totals(
        elapsed_ns=last - start,
        ops=sum(t.ops for t in threads),
        bytes=sum(t.bytes for t in threads),
        entries=sum(t.entries for t in threads),
        cpu_percent=cpu_percent(cpu["start"], cpu["last"], cpus),
        read_ops=sum(s.read_ops for s in all_slots),
        read_bytes=sum(s.read_bytes for s in all_slots),
    )
    pct = _rwmix_pct(ctx.cfg, kind)
    mixed = pct is not None
    io_latency = latency.summary()
    read_latency = write_latency = None
    if mixed:  # the slots' recorders held the writes; the I/O latency is of both kinds
        write_latency, read_latency = io_latency, reads.summary()
        latency.merge(reads)
        io_latency = latency.summary()
    worked = [t.elapsed_ns if s.total_ops else 0 for t, s in zip(threads, streams, strict=True)]
    return PhaseResult(
        name=phase_name(kind, pct),
        start_time=wall_start.isoformat(timespec="milliseconds"),
        first_done=Totals(
            elapsed_ns=first - start,
            ops=first_totals[0],
            bytes=first_totals[1],
            entries=first_totals[2],
            cpu_percent=cpu_percent(cpu["start"], cpu.get("first", cpu["last"]), cpus),
            read_ops=first_totals[3],
            read_bytes=first_totals[4],
        ),
        last_done=last_done,
        io_latency=io_latency,
        rwmix_pct=pct,
        read_latency=read_latency,
        write_latency=write_latency,
        entry_latency=entry_latency.summary() if isinstance(ctx.layout, DirLayout) else None,
        sched_latency=sched.summary() if shared.options.rate_bytes_per_s else None,
        peak_inflight_ops=shared.peak_inflight,
        threads=tuple(threads),
        targets=_targets(ctx, slots, worked, last_done),
        intervals=tuple(shared.series.closed) if shared.series is not None else (),
        time_limited=incomplete and bool(shared.deadline_ns) and not shared.stop.is_set(),
        interrupted=shared.stop.is_set() and shared.error is None,
    )
