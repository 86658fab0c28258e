"""Runs one phase: untimed setup, common start, first-done instant, time limit, interrupts.

The plan it runs (streams) is :mod:`aiobench.plan.slots`', its slots
:mod:`aiobench.run.slots`', its figures :mod:`aiobench.stats.summary`'s (from the tally
it hands over), and every syscall on a target is the engine's.
"""

from __future__ import annotations

import datetime
import gc
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from time import perf_counter_ns, process_time_ns, thread_time_ns
from typing import TYPE_CHECKING

import anyio

from aiobench.config import BenchConfig, hint_list
from aiobench.engines.base import Engine, IoOptions
from aiobench.engines.gate import StartGate
from aiobench.kinds import MKDIRS, READ, RMDIRS, WRITE, PhaseKind
from aiobench.plan.dirmode import DirLayout
from aiobench.plan.ranks import rotated
from aiobench.plan.slots import phase_title, rate_limit, rwmix_pct, streams_for
from aiobench.plan.split import ThreadSplit
from aiobench.plan.targets import Targets
from aiobench.plan.workload import Layout, OpStream
from aiobench.results.events import Observer
from aiobench.results.running import ThreadProgress
from aiobench.run.affinity import Binding
from aiobench.run.coordinator import Coordinator
from aiobench.run.slots import close_buffers, slots_for
from aiobench.run.worker import (
    Clock,
    PhaseSpec,
    PhaseState,
    Slot,
    first_done_floor,
    first_run,
    run_slots,
)
from aiobench.stats import client
from aiobench.stats.intervals import CpuSample, IntervalSeries
from aiobench.stats.progress import active_at, progress, thread_progress
from aiobench.stats.tally import PhaseAbout, PhaseTally, SlotTally, ThreadTally

if TYPE_CHECKING:  # (--opslog's module is loaded only when it is given)
    from aiobench.results.model import PhaseResult
    from aiobench.run.opslog import OpsLog

# While an interval has ended but a run started before its end is still out, the watcher
# looks again after 5 ms, then twice as late each time up to 160 ms (runs last up to ~50
# ms, 250 ms on the event loop; with hundreds of threads on a few cores one of them may be
# late for longer): a look costs a pass over the slots, so their number must not set how
# often the loop works.
_CLOSE_POLL_NS = 5_000_000
_CLOSE_POLL_MAX_NS = 160_000_000
DEFAULT_LIVE_INTERVAL_NS = 2_000_000_000  # elbencho's --liveint default
# A phase of direct reads or writes at depth 1 with a core to spare starts this long after
# its slots are ready, on quiet CPUs. aiobench's own work just before (the plan, the first
# runs; at the first phase, its start-up) still weighs on the kernel's view of the CPUs
# when the first operations go out, and on this 2-CPU VM the loop device's worker then
# stays on the other CPU for the whole phase, which halts between reads. A bare C loop of
# AIO reads at depth 1, 4 KiB, loop device, started in a Python process right after it
# touched 200 MiB of new memory: 24.9 k reads/s; after a pause of 20, 50 and 100 ms: 46.7 k,
# 57.0 k and 59.3 k (medians of 10 interleaved rounds). aiobench at -t 1 --iodepth 1
# through AIO: 20.5 k without the pause, 29.6 k with it (medians of 8).
SETTLE_S = 0.05


def settles(
    about: PhaseAbout, kind: PhaseKind, options: IoOptions, depth: int, spare: bool
) -> bool:
    """Whether a phase waits ``SETTLE_S`` before its start: file-mode direct reads or
    writes at depth 1 without --rwmixpct (each slot sleeps on one operation at a time),
    with a core to spare (fewer slots than cores: the device's worker may run beside
    them), not --poll (a polling slot never sleeps)."""
    plain = kind in (READ, WRITE) and not about.dir_mode and about.rwmix_pct is None
    return plain and options.direct and depth == 1 and spare and not options.poll


@dataclass(slots=True, eq=False)  # (state: compared by identity)
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
    opslog: OpsLog | None = None  # --opslog: every phase's operations are logged to it
    binding: Binding = field(default_factory=Binding)  # --cores/--zones, read once

    @property
    def paths(self) -> tuple[str, ...]:
        return self.targets.paths

    @property
    def threads(self) -> ThreadSplit:
        """This process's thread ranks and slices of the dataset."""
        return self.split or ThreadSplit.alone(self.cfg.threads)

    @property
    def ids(self) -> range:
        """The (global) thread ranks of this process."""
        return self.threads.ids

    @property
    def cpus(self) -> int:
        """The cores CPU percentages are shares of (:meth:`Coordinator.cpus`)."""
        return self.coordinator.cpus()

    def check_signal(self) -> None:
        """A safe point of setup (:meth:`Coordinator.check_signal`)."""
        self.coordinator.check_signal()


def make_executor(slots: int) -> ThreadPoolExecutor:
    """A pool of up to one thread per slot (``slots``: the most a phase can have). Each
    thread starts when a slot first needs one, as the slots are handed their threads
    before the phase's clock; a later phase reuses them. Where one slot keeps
    ``--iodepth`` in flight (the native engine's Linux AIO), a thread has one slot:
    ``-t 16 --iodepth 16`` starts 16 threads, not 256."""
    return ThreadPoolExecutor(max_workers=slots, thread_name_prefix="aiobench-io")


async def run_phase(
    ctx: RunContext, kind: PhaseKind, phase_index: int
) -> tuple[PhaseResult, PhaseTally]:
    """Run one phase of ``kind`` over all threads and summarise it (``--rotatehosts``: on
    another process's share)."""
    cfg = ctx.cfg
    if cfg.rotatehosts and ctx.split is not None:
        turned = rotated(ctx.split, cfg.threads, cfg.rotatehosts, phase_index, cfg.rankoffset)
        ctx = replace(ctx, split=turned)
    return await PhaseRun(ctx, kind, phase_index).run()


def _cpu_now() -> CpuSample:
    return CpuSample(perf_counter_ns(), process_time_ns())


class PhaseRun:
    """One phase of a run: made with its plan (streams, what every slot does), then
    :meth:`run` allocates the slots, :meth:`start` starts the clock, :meth:`watch`
    reports while the slots work and :meth:`finish` freezes what they counted."""

    def __init__(self, ctx: RunContext, kind: PhaseKind, phase_index: int) -> None:
        cfg, layout = ctx.cfg, ctx.layout
        self.ctx, self.kind, self.phase_index = ctx, kind, phase_index
        self.setup_ns = perf_counter_ns()
        pct = rwmix_pct(cfg, kind)
        self.streams = streams_for(cfg, layout, kind, phase_index, ctx.threads)
        options = IoOptions(
            direct=cfg.direct,
            poll=cfg.poll,
            ignore_missing=cfg.nodelerr,
            verify=cfg.verify,
            verify_direct=cfg.verifydirect,
            block_var_pct=cfg.blockvarpct,
            block_var_algo=cfg.blockvaralgo,
            rate_bytes_per_s=rate_limit(cfg, kind),
            fadvise=hint_list(cfg.fadv),
            mmap=cfg.mmap,
            madvise=hint_list(cfg.madv),
            flock=cfg.flock,
            read_inline=cfg.readinline and kind == WRITE,
            stat_inline=cfg.statinline and layout.dir_mode and kind in (READ, WRITE),
            size_files=cfg.trunctosize and layout.dir_mode and kind == WRITE,
            prealloc_files=cfg.preallocfile and layout.dir_mode and kind == WRITE,
        )
        mixed = pct is not None
        depth = 1 if mixed else ctx.engine.slot_depth(ctx.targets, kind, options, cfg.iodepth)
        title = phase_title(cfg, layout, kind)
        opslog = None
        if ctx.opslog is not None:
            opslog = ctx.opslog.phase(
                kind, title, ctx.paths, objects=cfg.object_storage, mmap=options.mmap
            )
        self.spec = PhaseSpec(
            kind=kind,
            engine=ctx.engine,
            executor=ctx.executor,
            targets=ctx.targets,
            options=options,
            depth=depth,
            opslog=opslog,
            binding=ctx.binding,
        )
        self.about = PhaseAbout(
            name=title,
            rwmix_pct=pct,
            paths=ctx.paths,
            servers=ctx.targets.servers,
            cpus=ctx.cpus,
            dir_mode=layout.dir_mode,
            rate_limited=bool(options.rate_bytes_per_s),
        )
        self.state = PhaseState(stop=ctx.stop)
        for stream in self.streams:  # --rwmixthrpct's waits end with the phase
            if isinstance(stream, OpStream) and stream.balance is not None:
                stream.balance.watch(self.state)
        self.slots: list[list[Slot]] = []
        self.finished: list[int] = [0] * len(self.streams)  # each thread's finish (0: not yet)
        self.idle: list[int] = []  # threads that ended before the clock started
        self.planned = [stream.total_ops for stream in self.streams]
        # Set by start(), and when the first thread with work finishes:
        self.wall_start: datetime.datetime | None = None
        self.series: IntervalSeries | None = None
        self.cpu_start = CpuSample(0, 0)
        self.cpu_first: CpuSample | None = None
        self.loop_cpu_start_ns = 0  # the loop thread's own CPU time at the start
        self.cores = client.cores_allowed()  # what the client-bound check measures against
        self.client_start = client.ClientSample(0, 0, {})

    async def run(self) -> tuple[PhaseResult, PhaseTally]:
        """The whole phase: slots, untimed setup, the common start, the slots' work
        watched to its end; its figures and tally."""
        ctx, kind, streams = self.ctx, self.kind, self.streams
        cfg = ctx.cfg
        self.slots = slots = slots_for(
            cfg,
            ctx.layout,
            kind,
            self.phase_index,
            streams,
            self.spec.depth,
            ranks=ctx.ids,
            paths=len(ctx.paths),
            check_signal=ctx.check_signal,
            targets=ctx.targets,
        )
        if kind == MKDIRS:
            self._rank_dirs()
        self._prepare_files()
        error = ctx.engine.begin_phase(ctx.targets, kind, self.spec.options)
        if error is not None:
            self.state.fail(error)
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
                        group.start_soon(
                            run_slots, self.spec, self.state, streams, slots, gate, self._finished
                        )
                        await gate.all_arrived()
                        spec, spare = self.spec, count < self.cores
                        if settles(self.about, spec.kind, spec.options, spec.depth, spare):
                            await anyio.sleep(SETTLE_S)
                        job.barrier()  # the common start of all processes (all are ready)
                        self.start(gate)
                    finally:
                        if not gate.opened:  # not started (an error or cancellation)
                            gate.open(0, 0, stopped=True)  # the waiting runs do nothing
                    watcher.start_soon(self.watch)
                watcher.cancel_scope.cancel()
            job.poll(ctx.stop)  # a stop here after the watcher's last look
            tally = self.finish()
        finally:
            close_buffers(slots)  # (after the phase's figures: not part of its time)
        # The result's classes load here, once the first phase is over: off the way to its
        # first operation (see design.md, "Start-up").
        from aiobench.stats.summary import summarise

        result = replace(summarise(tally), startup_ns=tally.start_ns - self.setup_ns)
        kinds = ctx.targets.take_op_kinds()
        if kinds:  # (a MIXED phase: each kind of operation apart)
            from aiobench.stats.opkinds import summarise_kinds

            result = replace(result, op_kinds=summarise_kinds(kinds))
        if kind == RMDIRS:
            job.barrier()  # shared dirs inside r0 may still be in other processes' hands
            self._rank_dirs()
            # Failing to remove the rank dirs is the phase's error, after its figures.
            state = self.state
            tally = tally._replace(error=state.error, stopped=state.stop.is_set())
        return result, tally

    def _rank_dirs(self) -> None:
        """Untimed: create the ``r<r>`` dirs before MKDIRS, remove them after RMDIRS."""
        ctx, kind, state = self.ctx, self.kind, self.state
        layout = ctx.layout
        if not isinstance(layout, DirLayout) or kind not in (MKDIRS, RMDIRS):
            return
        if kind == RMDIRS and (state.stop.is_set() or state.error is not None):
            return  # the dirs inside may still be there
        error = ctx.engine.rank_dirs(
            ctx.targets,
            layout.rank_dirs(ctx.ids),
            remove=kind == RMDIRS,
            missing_ok=kind == RMDIRS and ctx.cfg.nodelerr,
        )
        if error is not None:
            state.fail(error)

    def _prepare_files(self) -> None:
        """Untimed, before a write phase: --trunc, --trunctosize, --preallocfile, in that
        order."""
        ctx = self.ctx
        cfg, layout = ctx.cfg, ctx.layout
        if self.kind != WRITE or not isinstance(layout, Layout) or not cfg.file_size_options():
            return
        error = ctx.engine.prepare_files(
            ctx.targets,
            layout.sizes,
            trunc=cfg.trunc,
            trunctosize=cfg.trunctosize,
            prealloc=cfg.preallocfile,
        )
        if error is not None:
            self.state.fail(error)

    def _finished(self, local: int, end: int) -> None:
        """Thread ``local``'s last slot ended (its last operation at ``end``): called
        under the phase's lock, where that slot ended."""
        state = self.state
        if not end:  # none of its operations ended: it ended at the start
            end = state.clock.start_ns
            if not end:  # (before the clock started: start() sets it)
                self.idle.append(local)
                return
        self.finished[local] = end
        if self.streams[local].total_ops == 0:
            return  # a thread without work (shared dirs) neither finishes first nor last
        if state.first_done_ns is None:
            self.cpu_first = _cpu_now()
        if state.first_done_ns is None or end < state.first_done_ns:
            state.first_done_ns = end  # (an earlier finish may be seen later)

    def start(self, gate: StartGate) -> None:
        """The phase's common start: the clock and the time limit, the runs released at
        once (the interval series is made while they start)."""
        ctx, state = self.ctx, self.state
        cfg = ctx.cfg
        # What exists now (the plan, its names, the buffers) lives through the phase: kept
        # out of the collector's full passes while it runs (finish() hands it back), so a
        # large plan costs no CPU per operation.
        gc.freeze()
        wall_start = self.wall_start = datetime.datetime.now(datetime.UTC)
        ctx.observer.phase_started(self.about.name, wall_start)
        self.client_start = client.sample()
        cpu_start = process_time_ns()
        self.loop_cpu_start_ns = thread_time_ns()
        start_ns = perf_counter_ns()
        limit_ns = cfg.phase_limit_ns
        deadline_ns = start_ns + limit_ns if limit_ns else 0
        self.cpu_start = CpuSample(start_ns, cpu_start)
        series = self.series = IntervalSeries(
            start_ns=start_ns,
            interval_ns=ctx.live_interval_ns,
            planned_units=sum(self.planned),
            dir_mode=self.about.dir_mode,
            cpus=self.about.cpus,
        )
        series.sample_cpu(0, self.cpu_start)
        if cfg.infloop:
            series.endless_until_ns = deadline_ns
        # The slots account their runs in their own threads: the clock they add to is in
        # place before the released runs can end.
        clock = Clock(start_ns, deadline_ns, series, ctx.coordinator.timeline(start_ns))
        with state.lock:  # (threads that ended before the start are seen to end at it)
            state.clock = clock
            for local in self.idle:
                self._finished(local, start_ns)
        gate.open(start_ns, deadline_ns, stopped=state.stop.is_set())

    async def watch(self) -> None:
        """Live progress every interval, and each interval's record as soon as it is
        complete."""
        ctx, state, series = self.ctx, self.state, self.series
        assert series is not None  # (started)
        name, start_ns = self.about.name, state.clock.start_ns
        all_slots = [slot for rank_slots in self.slots for slot in rank_slots]
        active = active_at(self.planned, self.finished)
        next_tick = series.boundary(1)
        seen, seen_ns = (0, 0, 0), start_ns
        close_poll = _CLOSE_POLL_NS
        while True:
            now = perf_counter_ns()
            if now >= next_tick:
                k = (now - start_ns) // series.interval_ns  # the interval starting now
                series.sample_cpu(k, CpuSample(now, process_time_ns()))
                counts = (
                    sum(s.ops for s in all_slots),
                    sum(s.bytes for s in all_slots),
                    sum(s.entries for s in all_slots),
                )
                line = progress(
                    self.about, series, state.clock.deadline_ns, counts, seen, now - seen_ns, now
                )
                if ctx.cfg.livecsvex:
                    line = replace(line, threads=self._thread_progress())
                ctx.observer.progress(line)
                seen, seen_ns = counts, now
                next_tick = series.boundary(k + 1)
            # Units ending inside an interval may still be in a run handed over before its
            # end. With no run out, nothing ends after the last end seen until a slot starts
            # again: the interval holding that end stays open for finish() to cut there.
            with state.lock:  # (the slots account their runs in their own threads)
                if not state.first_done_final:  # (also keeps the slots' rings short)
                    first_done_floor(state, self.streams, self.slots, self.finished)
                busy = [s.busy_since_ns for s in all_slots if s.busy_since_ns]
                horizon = min(busy) if busy else max(s.last_end_ns for s in all_slots)
                records = series.close_until(horizon, active)
            for record in records:
                ctx.observer.interval(name, record)
            ctx.coordinator.poll(ctx.stop)
            wait = next_tick - now
            if series.pending(now):
                wait = min(wait, close_poll)
                close_poll = min(2 * close_poll, _CLOSE_POLL_MAX_NS)
            else:
                close_poll = _CLOSE_POLL_NS
            if ctx.coordinator.peer_poll_ns is not None:
                wait = min(wait, ctx.coordinator.peer_poll_ns)
            await anyio.sleep(max(wait, 0) / 1e9)

    def _thread_progress(self) -> tuple[ThreadProgress, ...]:
        """--livecsvex: what each thread rank of this process has done so far."""
        return tuple(
            thread_progress(
                rank,
                planned,
                (
                    sum(s.ops for s in rank_slots),
                    sum(s.bytes for s in rank_slots),
                    sum(s.entries for s in rank_slots),
                ),
                self.about.dir_mode,
            )
            for rank, planned, rank_slots in zip(
                self.ctx.ids, self.planned, self.slots, strict=True
            )
        )

    def finish(self) -> PhaseTally:
        """The phase is over: its last intervals out, and what its slots counted frozen."""
        ctx, state, series, wall_start = self.ctx, self.state, self.series, self.wall_start
        assert series is not None and wall_start is not None  # (started)
        name, clock = self.about.name, state.clock
        cpu_last = _cpu_now()
        loop_cpu_ns = thread_time_ns() - self.loop_cpu_start_ns  # (the phase's, as cpu_last)
        gc.unfreeze()
        client_end = client.sample()
        # (with the threads that make requests in its place: the S3 native route's)
        loop_cpu_ns += client.helpers_cpu_ns(self.client_start, client_end)
        client_pct = client.client_cpu_pct(self.client_start, client_end, self.cores)
        time_up = 0 < clock.deadline_ns <= cpu_last.wall_ns and not state.stop.is_set()
        active = active_at(self.planned, self.finished)
        for record in series.finish(max(self.finished), active, cpu_last, time_up=time_up):
            ctx.observer.interval(name, record)
        ctx.observer.phase_ended(name)
        first = state.first_done_ns or clock.start_ns
        threads = tuple(
            ThreadTally(
                rank=rank,
                planned=stream.total_ops,
                finished_ns=end,
                incomplete=bool(stream.remaining)
                or any(s.pending or s.later or s.ahead for s in rank_slots),
                slots=tuple(_slot_tally(slot, first) for slot in rank_slots),
            )
            for rank, stream, rank_slots, end in zip(
                ctx.ids, self.streams, self.slots, self.finished, strict=True
            )
        )
        return PhaseTally(
            about=self.about,
            wall_start=wall_start,
            start_ns=clock.start_ns,
            deadline_ns=clock.deadline_ns,
            first_done_ns=state.first_done_ns,
            cpu_start=self.cpu_start,
            cpu_first=self.cpu_first if self.cpu_first is not None else cpu_last,
            cpu_last=cpu_last,
            threads=threads,
            peak_inflight=state.peak_inflight,
            loop_cpu_ns=loop_cpu_ns,
            client_cpu_pct=client_pct,
            intervals=tuple(series.closed),
            timeline=clock.timeline,
            stopped=state.stop.is_set(),
            error=state.error,
        )


def _slot_tally(slot: Slot, first_done_ns: int) -> SlotTally:
    return SlotTally(
        totals=slot.totals,
        at_first_done=slot.snapshot_at(first_done_ns),
        recorder=slot.recorder,
        entry_recorder=slot.entry_recorder,
        sched_recorder=slot.sched_recorder,
        ttfb_recorder=slot.ttfb_recorder,
        read_recorder=slot.read_recorder,
        per_path=slot.per_path,
    )
