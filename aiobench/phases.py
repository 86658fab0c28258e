"""Runs one phase: untimed setup, common start, first-done instant, time limit, interrupts."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from time import perf_counter_ns

import anyio
import numpy as np

from aiobench.config import BenchConfig
from aiobench.engine import READ, WRITE, Engine, SlotBuffer
from aiobench.results import PhaseResult, ThreadTotals, Totals
from aiobench.stats import LatencyRecorder
from aiobench.targets import Layout
from aiobench.worker import PhaseShared, Slot, run_thread
from aiobench.workload import OpStream, ops_per_thread

PHASE_NAMES = {WRITE: "WRITE", READ: "READ"}


@dataclass(slots=True)
class RunContext:
    """What all phases of a run share: config, layout, open targets, engine, executor."""

    cfg: BenchConfig
    layout: Layout
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


def _streams(ctx: RunContext, kind: str, phase_index: int) -> list[OpStream]:
    cfg = ctx.cfg
    parts = ctx.layout.slices(cfg.threads)
    counts = ops_per_thread(ctx.layout, parts, cfg.rand, cfg.randamount)
    return [
        OpStream(
            layout=ctx.layout,
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
    cfg = ctx.cfg
    rng = np.random.default_rng(np.random.SeedSequence([cfg.seed, phase_index, 1 << 32]))
    salt = int(rng.integers(0, 1 << 62))
    return [
        [
            Slot(
                SlotBuffer(
                    ctx.layout.block_size,
                    for_write=kind == WRITE,
                    rng=rng,
                    stamp_base=salt + ((rank * cfg.iodepth + i) << 40),
                )
            )
            for i in range(cfg.iodepth)
        ]
        for rank in range(cfg.threads)
    ]


async def run_phase(
    ctx: RunContext, kind: str, phase_index: int
) -> tuple[PhaseResult, PhaseShared]:
    """Run one READ or WRITE phase over all threads and summarise it."""
    cfg = ctx.cfg
    streams = _streams(ctx, kind, phase_index)
    slots = _slots(ctx, kind, phase_index)
    shared = PhaseShared(
        kind=kind,
        engine=ctx.engine,
        executor=ctx.executor,
        fds=ctx.fds,
        paths=ctx.paths,
        stop=ctx.stop,
    )
    finished: list[int] = [0] * cfg.threads

    async def thread(rank: int) -> None:
        end = await run_thread(shared, streams[rank], slots[rank])
        finished[rank] = end
        if shared.first_done_ns is None:
            # Published once; slots still running cut their counters at this instant.
            shared.first_done_ns = end

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
                slot.buffer.close()
    return _summarise(kind, shared, streams, slots, finished), shared


def _summarise(
    kind: str,
    shared: PhaseShared,
    streams: list[OpStream],
    slots: list[list[Slot]],
    finished: list[int],
) -> PhaseResult:
    start = shared.start_ns
    first = shared.first_done_ns or start
    latency = LatencyRecorder()
    first_ops = first_bytes = 0
    threads = []
    for rank, rank_slots in enumerate(slots):
        for slot in rank_slots:
            latency.merge(slot.recorder)
            ops, nbytes = slot.snapshot_at(first)
            first_ops += ops
            first_bytes += nbytes
        threads.append(
            ThreadTotals(
                rank=rank,
                ops=sum(s.ops for s in rank_slots),
                bytes=sum(s.bytes for s in rank_slots),
                elapsed_ns=finished[rank] - start,
            )
        )
    last = max(finished)
    incomplete = any(stream.remaining for stream in streams) or any(
        slot.pending for rank_slots in slots for slot in rank_slots
    )
    return PhaseResult(
        name=PHASE_NAMES[kind],
        first_done=Totals(elapsed_ns=first - start, ops=first_ops, bytes=first_bytes),
        last_done=Totals(
            elapsed_ns=last - start,
            ops=sum(t.ops for t in threads),
            bytes=sum(t.bytes for t in threads),
        ),
        io_latency=latency.summary(),
        peak_inflight_ops=shared.peak_inflight,
        threads=tuple(threads),
        time_limited=incomplete and bool(shared.deadline_ns) and not shared.stop.is_set(),
        interrupted=shared.stop.is_set() and shared.error is None,
    )
