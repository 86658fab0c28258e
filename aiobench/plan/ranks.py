"""elbencho's ``--rankoffset`` and ``--rotatehosts``: which thread ranks a process's threads
are, and which ranks' share of the dataset it works on in each phase; pure.

``--rankoffset N`` numbers the threads from N (their dirs ``r<N>``, ..., in dir mode, their
seeds and the --rwmixpct rule follow the number), as elbencho's worker ranks; the dataset
is split as before. ``--rotatehosts N`` hands, in phase p, each MPI rank r the share of
rank (r + p*N) mod size, so that a rank reads what another host wrote (no client cache
helps): it applies where the ranks share the dataset (not with ``--nosvcshare`` in file
mode, where each rank has all of it).
"""

from __future__ import annotations

from aiobench.plan.split import ThreadSplit


def offset(split: ThreadSplit, by: int) -> ThreadSplit:
    """``split`` with its thread ranks numbered from ``by`` further on."""
    if by == 0:
        return split
    return ThreadSplit(range(split.ids.start + by, split.ids.stop + by), split.base, split.slices)


def rotated(split: ThreadSplit, threads: int, by: int, turn: int, rank_offset: int) -> ThreadSplit:
    """This process's split in phase number ``turn``: that of the process ``by * turn``
    further on (modulo the processes sharing the dataset); ``split`` is its own, its thread
    ranks offset by ``rank_offset``."""
    size = split.slices // threads
    if by == 0 or size <= 1 or split.slices != size * threads:
        return split
    rank = (split.ids.start - rank_offset) // threads
    other = (rank + by * turn) % size
    first = other * threads
    shared = split.base == rank * threads  # (not: each process has the whole dataset)
    return ThreadSplit(
        range(first + rank_offset, first + rank_offset + threads),
        first if shared else split.base,
        split.slices,
    )
