"""A phase's plan, made before its clock starts: each thread's stream of operations and its
slots (buffers filled, one executor thread each), and the per-phase limits read from the
config; no I/O."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from aiobench.config import BenchConfig
from aiobench.engines.buffers import SlotBuffer
from aiobench.engines.s3.layout import RandomBlocks
from aiobench.kinds import READ, WRITE, PhaseKind
from aiobench.plan.dirmode import DirLayout, EntryStream
from aiobench.plan.memory import slots_with_work
from aiobench.plan.targets import Layout, Slice
from aiobench.plan.workload import OpStream, RwMix, ops_per_thread
from aiobench.run.worker import Slot, Stream

if TYPE_CHECKING:
    from aiobench.run.phases import RunContext


def streams_for(ctx: RunContext, kind: PhaseKind, phase_index: int) -> list[Stream]:
    cfg, layout = ctx.cfg, ctx.layout
    if isinstance(layout, DirLayout) and cfg.rand and kind == READ:  # object storage
        count = random_reads(cfg, layout, ctx.slices)
        return [RandomBlocks(layout, rank, count, _rng(cfg, phase_index, rank)) for rank in ctx.ids]
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
    counts = ops_per_thread(layout, parts, ctx.slices, cfg.rand, cfg.randamount_bytes)
    pct = rwmix_pct(cfg, kind)
    return [
        OpStream(
            layout=layout,
            part=part,
            total_ops=count,
            rand=cfg.rand,
            aligned=not cfg.norandalign,
            permute=kind == WRITE,
            rng=_rng(cfg, phase_index, rank),
            backward=cfg.backward,
            stride=stride,
            loop=cfg.infloop,
            mix=None if pct is None else RwMix(pct, rank),
        )
        for rank, part, count in zip(ctx.ids, parts, counts, strict=True)
    ]


def _rng(cfg: BenchConfig, phase_index: int, rank: int) -> np.random.Generator:
    """Thread rank ``rank``'s random stream of offsets in this phase."""
    return np.random.default_rng(np.random.SeedSequence([cfg.seed, phase_index, rank]))


def random_reads(cfg: BenchConfig, layout: DirLayout, slices: int) -> int:
    """Object storage's --rand: each thread's ranged GETs of one block, --randamount over
    all ``slices`` thread ranks, else as many as its objects have blocks."""
    if cfg.randamount_bytes is None:
        return layout.files_per_rank() * max(layout.file_size // layout.block_size, 1)
    return cfg.randamount_bytes // slices // layout.block_size


def rwmix_pct(cfg: BenchConfig, kind: PhaseKind) -> int | None:
    """--rwmixpct of this phase: only the write phase mixes in reads."""
    return cfg.rwmixpct if kind == WRITE else None


def slots_for(
    ctx: RunContext, kind: PhaseKind, phase_index: int, streams: Sequence[Stream], depth: int
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

    def buffer(rank: int, i: int, stream: Stream) -> SlotBuffer | None:
        if not moves_data:
            return None
        # A slot writes no more than its thread's operations (file mode, not endless).
        bounded = isinstance(layout, Layout) and not cfg.infloop
        return SlotBuffer(
            layout.block_size,
            for_write=kind == WRITE,
            rng=rng,
            stamp_base=salt + ((rank * cfg.iodepth + i) << 40),
            depth=depth,
            writes=stream.total_ops if bounded else None,
        )

    def slot(rank: int, i: int, stream: Stream) -> Slot:
        per_path = np.zeros((len(ctx.paths), 3), dtype=np.int64) if len(ctx.paths) > 1 else None
        return Slot(buffer(rank, i, stream), per_path=per_path)

    # A slot that can never get an operation gets no memory (the budget counts the same).
    per_thread = 1 if depth > 1 else cfg.iodepth
    counts = [slots_with_work(per_thread, s.total_ops, cfg.infloop) for s in streams]
    slots: list[list[Slot]] = []
    try:
        for rank, count, stream in zip(ctx.ids, counts, streams, strict=True):
            slots.append([])
            for i in range(count):
                ctx.check_signal()  # filling a buffer of a large block takes a while
                slots[-1].append(slot(rank, i, stream))
        ctx.check_signal()  # before the phase's setup changes anything
    except BaseException:
        close_buffers(slots)
        raise
    return slots


def close_buffers(slots: list[list[Slot]]) -> None:
    for rank_slots in slots:
        for slot in rank_slots:
            if slot.buffer is not None:
                slot.buffer.close()


def rate_limit(cfg: BenchConfig, layout: Layout | DirLayout, kind: PhaseKind) -> int:
    """Bytes per second per thread this phase may move (0 = no limit)."""
    if isinstance(layout, DirLayout) and not cfg.object_storage:
        return 0
    return {READ: cfg.limitread_bps, WRITE: cfg.limitwrite_bps}.get(kind, 0)
