"""Runs one phase: untimed setup, common start, first-done instant, time limit, interrupts."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from time import perf_counter_ns

import anyio
import numpy as np

from aiobench.config import BenchConfig
from aiobench.dirmode import DirLayout, EntryStream
from aiobench.engine import DIR_MODE, Engine, SlotBuffer
from aiobench.errors import BenchIOError
from aiobench.kinds import MKDIRS, PHASE_NAMES, READ, RMDIRS, WRITE
from aiobench.results import PhaseResult, ThreadTotals, Totals
from aiobench.stats import LatencyRecorder
from aiobench.targets import Layout
from aiobench.worker import PhaseShared, Slot, Stream, run_thread
from aiobench.workload import OpStream, ops_per_thread


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
        return [EntryStream(layout, kind, rank) for rank in range(cfg.threads)]
    parts = layout.slices(cfg.threads)
    counts = ops_per_thread(layout, parts, cfg.rand, cfg.randamount)
    return [
        OpStream(
            layout=layout,
            part=part,
            total_ops=count,
            rand=cfg.rand,
            aligned=not cfg.norandalign,
            permute=kind == WRITE,
            rng=np.random.default_rng(np.random.SeedSequence([cfg.seed, phase_index, rank])),
        )
        for rank, (part, count) in enumerate(zip(parts, counts, strict=False))
    ]


def _slots(ctx: RunContext, kind: str, phase_index: int) -> list[list[Slot]]:
    cfg, layout = ctx.cfg, ctx.layout
    rng = np.random.default_rng(np.random.SeedSequence([cfg.seed, phase_index, 1 << 32]))
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
        )

    return [[Slot(buffer(rank, i)) for i in range(cfg.iodepth)] for rank in range(cfg.threads)]


def _rank_dirs(ctx: RunContext, kind: str, shared: PhaseShared) -> None:
    """Untimed: create the ``r<r>`` dirs before MKDIRS, remove them after RMDIRS."""
    layout = ctx.layout
    if not isinstance(layout, DirLayout) or kind not in (MKDIRS, RMDIRS):
        return
    if kind == RMDIRS and (shared.stop.is_set() or shared.error is not None):
        return  # the dirs inside may still be there
    # As in the phases: an existing dir is reused; with --nodelerr a missing one is fine.
    tolerated: tuple[type[OSError], ...] = (FileExistsError,)
    if kind == RMDIRS:
        tolerated = (FileNotFoundError,) if ctx.cfg.nodelerr else ()
    index, name = 0, ""
    try:
        for index, name in layout.rank_dirs():
            with contextlib.suppress(*tolerated):
                if kind == MKDIRS:
                    os.mkdir(name, DIR_MODE, dir_fd=ctx.fds[index])
                else:
                    os.rmdir(name, dir_fd=ctx.fds[index])
    except OSError as exc:
        shared.fail(BenchIOError.from_os(os.path.join(ctx.paths[index], name), 0, exc))


async def run_phase(
    ctx: RunContext, kind: str, phase_index: int
) -> tuple[PhaseResult, PhaseShared]:
    """Run one phase of ``kind`` over all threads and summarise it."""
    cfg = ctx.cfg
    streams = _streams(ctx, kind, phase_index)
    slots = _slots(ctx, kind, phase_index)
    shared = PhaseShared(
        kind=kind,
        engine=ctx.engine,
        executor=ctx.executor,
        fds=ctx.fds,
        paths=ctx.paths,
        direct=cfg.direct,
        ignore_missing=cfg.nodelerr,
        stop=ctx.stop,
    )
    finished: list[int] = [0] * cfg.threads

    async def thread(rank: int) -> None:
        end = await run_thread(shared, streams[rank], slots[rank])
        finished[rank] = end
        if streams[rank].total_ops == 0:
            return  # a thread without work (shared dirs) neither finishes first nor last
        if shared.first_done_ns is None:
            # Published once; slots still running cut their counters at this instant.
            shared.first_done_ns = end

    if kind == MKDIRS:
        _rank_dirs(ctx, kind, shared)
    try:
        shared.start_ns = perf_counter_ns()
        if cfg.timelimit_s:
            shared.deadline_ns = shared.start_ns + cfg.timelimit_s * 1_000_000_000
        async with anyio.create_task_group() as group:
            for rank in range(cfg.threads):
                group.start_soon(thread, rank)
    finally:
        for rank_slots in slots:
            for slot in rank_slots:
                if slot.buffer is not None:
                    slot.buffer.close()
    result = _summarise(kind, shared, streams, slots, finished)
    if kind == RMDIRS:
        _rank_dirs(ctx, kind, shared)
    return result, shared


def _summarise(
    kind: str,
    shared: PhaseShared,
    streams: list[Stream],
    slots: list[list[Slot]],
    finished: list[int],
) -> PhaseResult:
    start = shared.start_ns
    first = shared.first_done_ns or start
    latency, entry_latency = LatencyRecorder(), LatencyRecorder()
    first_totals = [0, 0, 0]
    threads = []
    for rank, rank_slots in enumerate(slots):
        for slot in rank_slots:
            latency.merge(slot.recorder)
            entry_latency.merge(slot.entry_recorder)
            for i, value in enumerate(slot.snapshot_at(first)):
                first_totals[i] += value
        threads.append(
            ThreadTotals(
                rank=rank,
                ops=sum(s.ops for s in rank_slots),
                bytes=sum(s.bytes for s in rank_slots),
                entries=sum(s.entries for s in rank_slots),
                elapsed_ns=finished[rank] - start,
            )
        )
    last = max(finished)
    incomplete = any(stream.remaining for stream in streams) or any(
        slot.pending for rank_slots in slots for slot in rank_slots
    )
    dir_mode = isinstance(streams[0], EntryStream)
    return PhaseResult(
        name=PHASE_NAMES[kind],
        first_done=Totals(
            elapsed_ns=first - start,
            ops=first_totals[0],
            bytes=first_totals[1],
            entries=first_totals[2],
        ),
        last_done=Totals(
            elapsed_ns=last - start,
            ops=sum(t.ops for t in threads),
            bytes=sum(t.bytes for t in threads),
            entries=sum(t.entries for t in threads),
        ),
        io_latency=latency.summary(),
        entry_latency=entry_latency.summary() if dir_mode else None,
        peak_inflight_ops=shared.peak_inflight,
        threads=tuple(threads),
        time_limited=incomplete and bool(shared.deadline_ns) and not shared.stop.is_set(),
        interrupted=shared.stop.is_set() and shared.error is None,
    )
