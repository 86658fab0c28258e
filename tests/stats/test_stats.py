"""HDR folding: bucketing identical to hdrhistogram, percentiles within HDR precision."""

from __future__ import annotations

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram

from aiobench.stats.recorders import (
    HDR_HIGHEST_NS,
    PERCENTILES,
    LatencyRecorder,
    bucket_indices,
    new_histogram,
)


def test_vectorised_buckets_match_the_library() -> None:
    hist = new_histogram()
    rng = np.random.default_rng(1)
    values = np.concatenate(
        [
            np.arange(1, 5000),
            rng.integers(1, 10**6, 5000),
            rng.integers(1, HDR_HIGHEST_NS, 5000),
            np.array([2**k for k in range(1, 41)] + [HDR_HIGHEST_NS]),
        ]
    ).astype(np.int64)
    expected = [hist._counts_index_for(int(v)) for v in values]
    assert bucket_indices(values).tolist() == expected


def test_folded_counts_equal_record_value_counts() -> None:
    rng = np.random.default_rng(2)
    values = rng.lognormal(mean=8, sigma=2, size=200_000).astype(np.int64) + 1
    recorder = LatencyRecorder()
    for chunk in np.array_split(values, 37):  # several folds, uneven chunks
        recorder.add(chunk)
    ours = recorder.histogram()
    reference: HdrHistogram = new_histogram()
    for v in values[:20_000].tolist():
        reference.record_value(v)
    partial = LatencyRecorder()
    partial.add(values[:20_000])
    assert list(partial.histogram().counts) == list(reference.counts)
    assert ours.get_total_count() == values.size


@pytest.mark.parametrize("seed", [3, 4])
def test_percentiles_agree_with_exact_within_hdr_precision(seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = (rng.pareto(1.5, 100_000) * 2_000 + 500).astype(np.int64)
    recorder = LatencyRecorder()
    recorder.add(values)
    summary = recorder.summary()
    ordered = np.sort(values)
    for p in PERCENTILES:
        # The exact nearest-rank percentile of the raw samples (rank rounded as HDR does).
        rank = max(int(p * values.size / 100 + 0.5), 1)
        exact = int(ordered[rank - 1])
        got = summary.percentiles_ns[p]
        assert abs(got - exact) <= exact * 1e-3 + 1, (p, got, exact)
    assert summary.min_ns == values.min()
    assert summary.max_ns == values.max()
    assert summary.mean_ns == pytest.approx(values.mean(), abs=0.05)  # rounded to 0.1 ns
    assert summary.stddev_ns == pytest.approx(values.std(), abs=0.05)
    decoded = HdrHistogram.decode(summary.hdr)
    assert decoded.get_total_count() == values.size


def test_merge_adds_counts_and_extremes() -> None:
    a, b = LatencyRecorder(), LatencyRecorder()
    a.add(np.array([10, 20, 30], dtype=np.int64))
    b.add(np.array([5, 4000], dtype=np.int64))
    a.merge(b)
    s = a.summary()
    assert (s.count, s.min_ns, s.max_ns) == (5, 5, 4000)
    assert s.mean_ns == pytest.approx(813)


def test_empty_recorder_summarises_to_zeros() -> None:
    s = LatencyRecorder().summary()
    assert (s.count, s.min_ns, s.max_ns, s.hdr) == (0, 0, 0, "")


def test_summary_percentiles_equal_the_librarys_walk() -> None:
    rng = np.random.default_rng(5)
    recorder = LatencyRecorder()
    recorder.add(rng.lognormal(mean=9, sigma=1.5, size=50_000).astype(np.int64) + 1)
    recorder.add(np.array([1, 2, HDR_HIGHEST_NS], dtype=np.int64))  # both ends of the range
    hist = recorder.histogram()
    summary = recorder.summary()
    assert summary.percentiles_ns == {p: hist.get_value_at_percentile(p) for p in PERCENTILES}


def test_percentiles_never_exceed_the_recorded_max_or_undercut_the_min() -> None:
    # 575344 ns sits in a bucket whose top is 575487 ns: the library reports the top.
    recorder = LatencyRecorder()
    recorder.add(np.array([575_344] * 3, dtype=np.int64))
    hist = recorder.histogram()
    assert hist.get_value_at_percentile(99.9) > 575_344
    summary = recorder.summary()
    assert set(summary.percentiles_ns.values()) == {575_344}
    assert summary.min_ns == summary.max_ns == 575_344
