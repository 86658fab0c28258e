"""The counter timeline MPI ranks read FIRST DONE from (#6); pure, no disk."""

from __future__ import annotations

import numpy as np
import pytest

from aiobench.plan.dirmode import EntryRun
from aiobench.plan.workload import OpRun, RwMix
from aiobench.stats.timeline import CounterTimeline, run_counts

MS = 1_000_000
START = 10_000 * MS


def _ends(*offsets_ms: float) -> np.ndarray:
    return np.array([START + int(o * MS) for o in offsets_ms], dtype=np.int64)


def test_counts_at_an_instant_are_the_runs_counts_to_the_end_of_its_bucket() -> None:
    run = OpRun(0, [i * 4096 for i in range(8)], 4096, first_seq=95, mix=RwMix(30, 3))
    ends = _ends(0.5, 0.9, 1.0, 1.2, 2.7, 2.8, 5.0, 9.3)
    timeline = CounterTimeline(START)
    timeline.add(run, ends, np.empty(0, dtype=np.int64))
    # Bucket k holds the ends in (k ms, k+1 ms]: the end at 1.0 ms is in the first one,
    # and an instant counts everything up to the end of its bucket.
    for elapsed_ms, done in ((0.2, 3), (1.0, 3), (1.5, 4), (3.0, 6), (4.2, 7), (9.9, 8)):
        assert timeline.counts_at(int(elapsed_ms * MS)) == run_counts(run, done, done)


def test_dir_mode_runs_count_blocks_bytes_and_entries_apart() -> None:
    run = EntryRun(0, ["a", "b"], size=10_000, block=4096)  # 3 blocks each, last short
    ends = _ends(2.5, 6.5)
    io_ends = _ends(0.5, 1.5, 2.5, 4.5, 5.5, 6.5)
    timeline = CounterTimeline(START)
    timeline.add(run, ends, io_ends)
    assert timeline.counts_at(2 * MS) == run_counts(run, 0, 2) == (2, 8192, 0, 0, 0)
    assert timeline.counts_at(5 * MS) == run_counts(run, 1, 4) == (4, 14_096, 1, 0, 0)
    assert timeline.counts_at(7 * MS) == run_counts(run, 2, 6) == (6, 20_000, 2, 0, 0)


@pytest.mark.parametrize("max_buckets", [8, 64])
def test_a_long_phase_coarsens_the_buckets_and_keeps_every_count(max_buckets: int) -> None:
    timeline = CounterTimeline(START, max_buckets=max_buckets)
    runs = [OpRun(0, [0] * 50, 4096, first_seq=50 * k, mix=RwMix(40, 1)) for k in range(10)]
    for k, run in enumerate(runs):
        timeline.add(run, _ends(*(k * 50 + i for i in range(50))), np.empty(0, np.int64))
    assert timeline.resolution_ns > MS  # 500 ms of ends do not fit 1 ms buckets
    total = timeline.counts_at(10_000 * MS)
    reads = RwMix(40, 1).reads(0, 500)
    assert total == (500, 500 * 4096, 0, reads, reads * 4096)
    # Halfway, to the end of the (coarser) bucket holding the instant.
    edge = -(-250 * MS // timeline.resolution_ns) * timeline.resolution_ns
    done = int(np.count_nonzero(np.arange(500) * MS + 0 <= edge))
    assert timeline.counts_at(250 * MS)[0] == done
