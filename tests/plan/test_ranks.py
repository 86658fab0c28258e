"""--rankoffset and --rotatehosts: the thread ranks and dataset shares of a process; pure."""

from __future__ import annotations

from aiobench.plan.ranks import offset, rotated
from aiobench.plan.split import ThreadSplit


def shared(rank: int, threads: int, size: int) -> ThreadSplit:
    """Rank ``rank``'s split of a dataset shared by ``size`` ranks (as World.split)."""
    first = rank * threads
    return ThreadSplit(range(first, first + threads), first, threads * size)


def test_rankoffset_numbers_the_threads_from_n() -> None:
    assert offset(ThreadSplit.alone(2), 5) == ThreadSplit(range(5, 7), 0, 2)
    assert offset(shared(1, 2, 3), 10) == ThreadSplit(range(12, 14), 2, 6)
    assert offset(shared(1, 2, 3), 0) == shared(1, 2, 3)


def test_rotatehosts_hands_each_rank_another_ranks_share() -> None:
    threads, size = 2, 3
    for turn in range(4):
        turned = [rotated(shared(r, threads, size), threads, 1, turn, 0) for r in range(size)]
        assert turned == [shared((r + turn) % size, threads, size) for r in range(size)]
        # Every share is worked on once in every phase.
        assert sorted(s.base for s in turned) == [0, 2, 4]
    assert rotated(shared(0, threads, size), threads, 2, 1, 0) == shared(2, threads, size)
    # With an offset, the offset numbers stay.
    mine = offset(shared(0, threads, size), 7)
    assert rotated(mine, threads, 1, 1, 7) == offset(shared(1, threads, size), 7)


def test_rotatehosts_leaves_a_process_alone_and_whole_datasets_as_they_are() -> None:
    assert rotated(ThreadSplit.alone(4), 4, 1, 3, 0) == ThreadSplit.alone(4)
    # --nosvcshare in file mode: each rank splits the whole dataset over its own threads.
    own = ThreadSplit(range(2, 4), 0, 2)
    assert rotated(own, 2, 1, 1, 0) == own
    assert rotated(shared(1, 2, 3), 2, 0, 5, 0) == shared(1, 2, 3)
