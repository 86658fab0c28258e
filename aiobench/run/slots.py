"""A phase's slots, made before its clock starts: ``--iodepth`` per thread, each with its
buffer allocated and filled (:class:`~aiobench.engines.buffers.SlotBuffer`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from aiobench.config import BenchConfig
from aiobench.engines.buffers import PoolSource, SlotBuffer
from aiobench.kinds import MIXED, WRITE, PhaseKind
from aiobench.plan.layout import PhaseLayout, Stream
from aiobench.plan.memory import slots_with_work
from aiobench.plan.targets import Targets
from aiobench.run.worker import Slot

if TYPE_CHECKING:
    from aiobench.stats.recorders import Int64Array


def slots_for(
    cfg: BenchConfig,
    layout: PhaseLayout,
    kind: PhaseKind,
    phase_index: int,
    streams: Sequence[Stream],
    depth: int,
    *,
    ranks: range,
    paths: int,
    check_signal: Callable[[], None],
    targets: Targets | None = None,
) -> list[list[Slot]]:
    """Each thread's slots (of thread ranks ``ranks``, over ``paths`` targets):
    ``--iodepth`` of them, or one keeping ``depth`` operations in flight where the engine
    queues them itself. ``check_signal`` is a safe point of setup. ``targets``: the run's,
    whose :meth:`~aiobench.plan.targets.Targets.of_thread` gives each thread's handles."""
    # Each MPI rank fills its pools from its own stream (one process: ids start at 0).
    source = PoolSource([cfg.seed, phase_index, (1 << 32) + ranks.start])
    salt = source.seeding.next() >> 2  # (below 2^62: each slot's stamp base fits 64 bits)
    moves_data = layout.moves_data(kind)

    def buffer(rank: int, i: int, stream: Stream) -> SlotBuffer | None:
        if not moves_data:
            return None
        # A slot writes no more than its thread's operations (file mode, not endless).
        bounded = not layout.dir_mode and not cfg.infloop
        return SlotBuffer(
            layout.block_size,
            for_write=kind in (WRITE, MIXED),
            source=source,
            stamp_base=salt + ((rank * cfg.iodepth + i) << 40),
            depth=depth,
            writes=stream.total_ops if bounded else None,
        )

    def slot(rank: int, i: int, stream: Stream) -> Slot:
        own = targets.of_thread(rank) if targets is not None else None
        return Slot(
            buffer(rank, i, stream),
            per_path=_per_path(paths) if paths > 1 else None,
            rank=rank,
            targets=own if own is not targets else None,
        )

    # A slot that can never get an operation gets no memory (the budget counts the same).
    per_thread = 1 if depth > 1 else cfg.iodepth
    counts = [slots_with_work(per_thread, s.total_ops, cfg.infloop) for s in streams]
    slots: list[list[Slot]] = []
    try:
        for rank, count, stream in zip(ranks, counts, streams, strict=True):
            slots.append([])
            for i in range(count):
                check_signal()  # filling a buffer of a large block takes a while
                slots[-1].append(slot(rank, i, stream))
        check_signal()  # before the phase's setup changes anything
    except BaseException:
        close_buffers(slots)
        raise
    return slots


def _per_path(paths: int) -> Int64Array:
    """A slot's (ops, bytes, entries) per target, when there are several."""
    import numpy as np  # (a run of one target never loads it)

    return np.zeros((paths, 3), dtype=np.int64)


def close_buffers(slots: list[list[Slot]]) -> None:
    for rank_slots in slots:
        for slot in rank_slots:
            if slot.buffer is not None:
                slot.buffer.close()
