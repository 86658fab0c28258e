"""Runs one phase: untimed setup, common start, first-done instant, time limit, interrupts.

The plan it runs (streams and slots) is :mod:`aiobench.plan.slots`'s, its figures are
:mod:`aiobench.stats.summary`'s, and every syscall on a target is the engine's.
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from time import perf_counter_ns, process_time_ns

import anyio

from aiobench.config import BenchConfig
from aiobench.engines.base import Engine, IoOptions
from aiobench.engines.gate import StartGate
from aiobench.kinds import MKDIRS, RMDIRS, WRITE, PhaseKind, phase_name
from aiobench.plan.dirmode import DirLayout
from aiobench.plan.slots import close_buffers, rate_limit, rwmix_pct, slots_for, streams_for
from aiobench.plan.targets import Layout, Targets
from aiobench.results.events import Observer
from aiobench.results.model import PhaseResult
from aiobench.run.coordinator import Coordinator, ThreadSplit
from aiobench.run.worker import PhaseShared, Slot, Stream, first_done_floor, first_run, run_thread
from aiobench.stats.intervals import CpuSample, IntervalSeries
from aiobench.stats.summary import active_at, progress, summarise

# While an interval has ended but a run handed over before its end is still out, the
# watcher looks again this often (runs last up to ~50 ms, 250 ms on the event loop).
_CLOSE_POLL_NS = 5_000_000
DEFAULT_LIVE_INTERVAL_NS = 2_000_000_000  # elbencho's --liveint default


@dataclass(slots=True)
class RunContext:
    """What all phases of a run share: config, layout, open targets, engine, executor."""

    cfg: BenchConfig
    layout: Layout | DirLayout
    targets: Targets  # what the engine opened
    engine: Engine
    executor: ThreadPoolExecutor
    stop: threading.Event
    observer: Observer = field(default_factory=Observer)
    live_interval_ns: int = DEFAULT_LIVE_INTERVAL_NS
    # How the processes of the job work together, and which thread ranks and slices of
    # the dataset this one has (None: all of them, as a process alone).
    coordinator: Coordinator = field(default_factory=Coordinator)
    split: ThreadSplit | None = None

    @property
    def paths(self) -> tuple[str, ...]:
        return self.targets.paths

    @property
    def _split(self) -> ThreadSplit:
        return self.split or ThreadSplit(range(self.cfg.threads), 0, self.cfg.threads)

    @property
    def ids(self) -> range:
        """The (global) thread ranks of this process."""
        return self._split.ids

    @property
    def split_base(self) -> int:
        """The index of this process's first slice of the dataset."""
        return self._split.base

    @property
    def slices(self) -> int:
        """How many thread slices the dataset is split into."""
        return self._split.slices

    @property
    def cpus(self) -> int:
        """The cores CPU percentages are shares of (:meth:`Coordinator.cpus`)."""
        return self.coordinator.cpus()

    def check_signal(self) -> None:
        """A safe point of setup (:meth:`Coordinator.check_signal`)."""
        self.coordinator.check_signal()


def make_executor(slots: int) -> ThreadPoolExecutor:
    """A pool with one thread per slot, all started now (thread start-up is not measured)."""
    pool = ThreadPoolExecutor(max_workers=slots, thread_name_prefix="aiobench-io")
    barrier = threading.Barrier(slots)
    for future in [pool.submit(barrier.wait) for _ in range(slots)]:
        future.result()
    return pool


def _rank_dirs(ctx: RunContext, kind: PhaseKind, shared: PhaseShared) -> None:
    """Untimed: create the ``r<r>`` dirs before MKDIRS, remove them after RMDIRS."""
    layout = ctx.layout
    if not isinstance(layout, DirLayout) or kind not in (MKDIRS, RMDIRS):
        return
    if kind == RMDIRS and (shared.stop.is_set() or shared.error is not None):
        return  # the dirs inside may still be there
    error = ctx.engine.rank_dirs(
        ctx.targets,
        layout.rank_dirs(ctx.ids),
        remove=kind == RMDIRS,
        missing_ok=kind == RMDIRS and ctx.cfg.nodelerr,
    )
    if error is not None:
        shared.fail(error)


def _prepare_files(ctx: RunContext, kind: PhaseKind, shared: PhaseShared) -> None:
    """Untimed, before a write phase: --trunc, --trunctosize, --preallocfile, in that order."""
    cfg, layout = ctx.cfg, ctx.layout
    if kind != WRITE or not isinstance(layout, Layout) or not cfg.file_size_options():
        return
    error = ctx.engine.prepare_files(
        ctx.targets,
        layout.sizes,
        trunc=cfg.trunc,
        trunctosize=cfg.trunctosize,
        prealloc=cfg.preallocfile,
    )
    if error is not None:
        shared.fail(error)


async def run_phase(
    ctx: RunContext, kind: PhaseKind, phase_index: int
) -> tuple[PhaseResult, PhaseShared]:
    """Run one phase of ``kind`` over all threads and summarise it."""
    cfg = ctx.cfg
    setup_ns = perf_counter_ns()
    name = phase_name(kind, rwmix_pct(cfg, kind), objects=cfg.object_storage)
    streams = streams_for(ctx, kind, phase_index)
    options = IoOptions(
        direct=cfg.direct,
        ignore_missing=cfg.nodelerr,
        verify=cfg.verify,
        verify_direct=cfg.verifydirect,
        block_var_pct=cfg.blockvarpct,
        rate_bytes_per_s=rate_limit(cfg, ctx.layout, kind),
    )
    mixed = rwmix_pct(cfg, kind) is not None
    depth = 1 if mixed else ctx.engine.slot_depth(ctx.targets, kind, options, cfg.iodepth)
    slots = slots_for(ctx, kind, phase_index, streams, depth)
    shared = PhaseShared(
        kind=kind,
        engine=ctx.engine,
        executor=ctx.executor,
        targets=ctx.targets,
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
            cpu["first"] = _cpu_now()
        if shared.first_done_ns is None or end < shared.first_done_ns:
            shared.first_done_ns = end  # (an earlier finish may be seen later)

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
    job = ctx.coordinator
    job.listen()
    try:
        ctx.check_signal()  # (the buffers are closed below)
        async with anyio.create_task_group() as watcher:
            async with anyio.create_task_group() as group:
                try:
                    for local in range(len(streams)):
                        group.start_soon(thread, local)
                    await gate.all_arrived()
                    job.barrier()  # the common start of all processes (all are ready)
                    wall_start, series = _start(ctx, name, shared, streams, cpu, gate)
                finally:
                    if not gate.opened:  # not started (an error or cancellation)
                        gate.open(0, 0, stopped=True)  # the waiting runs do nothing
                watcher.start_soon(_watch, ctx, name, shared, series, streams, slots, finished)
            watcher.cancel_scope.cancel()
        job.poll(ctx.stop)  # a stop here after the watcher's last look
    finally:
        close_buffers(slots)
    cpu["last"] = _cpu_now()
    last = max(finished)
    time_up = 0 < shared.deadline_ns <= cpu["last"].wall_ns and not shared.stop.is_set()
    for record in series.finish(last, active_at(streams, finished), cpu["last"], time_up=time_up):
        ctx.observer.interval(name, record)
    ctx.observer.phase_ended(name)
    result = summarise(kind, ctx, shared, streams, slots, finished, cpu, wall_start)
    result = replace(result, startup_ns=shared.start_ns - setup_ns)
    if kind == RMDIRS:
        job.barrier()  # shared dirs inside r0 may still be in other processes' hands
        _rank_dirs(ctx, kind, shared)
    return result, shared


def _start(
    ctx: RunContext,
    name: str,
    shared: PhaseShared,
    streams: Sequence[Stream],
    cpu: dict[str, CpuSample],
    gate: StartGate,
) -> tuple[datetime.datetime, IntervalSeries]:
    """The phase's common start: the clock and the time limit, the runs released at once
    (the interval series is made while they start)."""
    cfg = ctx.cfg
    wall_start = datetime.datetime.now(datetime.UTC)
    ctx.observer.phase_started(name, wall_start)
    cpu_start = process_time_ns()
    shared.start_ns = perf_counter_ns()
    limit_ns = cfg.timelimit_ns or cfg.timelimit_s * 1_000_000_000
    if limit_ns:
        shared.deadline_ns = shared.start_ns + limit_ns
    gate.open(shared.start_ns, shared.deadline_ns, stopped=shared.stop.is_set())
    cpu["start"] = CpuSample(shared.start_ns, cpu_start)
    series = shared.series = IntervalSeries(
        start_ns=shared.start_ns,
        interval_ns=ctx.live_interval_ns,
        planned_units=sum(stream.total_ops for stream in streams),
        dir_mode=isinstance(ctx.layout, DirLayout),
        cpus=ctx.cpus,
    )
    series.sample_cpu(0, cpu["start"])
    shared.timeline = ctx.coordinator.timeline(shared.start_ns)
    if cfg.infloop:
        series.endless_until_ns = shared.deadline_ns
    return wall_start, series


def _cpu_now() -> CpuSample:
    return CpuSample(perf_counter_ns(), process_time_ns())


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
    active = active_at(streams, finished)
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
                progress(name, shared, series, counts, seen, now - seen_ns, now, dir_mode)
            )
            seen, seen_ns = counts, now
            next_tick = series.boundary(k + 1)
        # Units ending inside an interval may still be in a run handed over before its end.
        # With no run out, nothing ends after the last end seen until a slot starts again:
        # the interval holding that end stays open for finish() to cut there.
        if not shared.first_done_final:  # (also keeps the slots' rings short)
            first_done_floor(shared, streams, slots, finished)
        busy = [s.busy_since_ns for s in all_slots if s.busy_since_ns]
        horizon = min(busy) if busy else max(s.last_end_ns for s in all_slots)
        for record in series.close_until(horizon, active):
            ctx.observer.interval(name, record)
        ctx.coordinator.poll(ctx.stop)
        wait = next_tick - now
        if series.pending(now):
            wait = min(wait, _CLOSE_POLL_NS)
        if ctx.coordinator.peer_poll_ns is not None:
            wait = min(wait, ctx.coordinator.peer_poll_ns)
        await anyio.sleep(max(wait, 0) / 1e9)
