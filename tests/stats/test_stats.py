"""HDR folding: bucketing identical to hdrhistogram, percentiles within HDR precision; the
C folding and numpy's (an install without a compiler) give the same results."""

from __future__ import annotations

from array import array
from types import ModuleType

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram

from aiobench.stats import hdrnumpy, recorders
from aiobench.stats.recorders import (
    GEOMETRY,
    HDR_HIGHEST_NS,
    PERCENTILES,
    LatencyRecorder,
    new_histogram,
)

try:
    from aiobench.stats import _hdrfold
except ImportError:  # (built with the package's other extensions)
    _hdrfold = None  # type: ignore[assignment]

IMPLEMENTATIONS = [
    pytest.param(_hdrfold, id="c", marks=pytest.mark.skipif(_hdrfold is None, reason="not built")),
    pytest.param(hdrnumpy, id="numpy"),
]


@pytest.fixture(params=IMPLEMENTATIONS)
def folding(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """Each implementation of the folding in turn, as the recorders' own."""
    module: ModuleType = request.param
    monkeypatch.setattr(recorders, "_fold", module)
    return module


def _values() -> np.ndarray:
    rng = np.random.default_rng(1)
    return np.concatenate(
        [
            np.arange(0, 5000),
            rng.integers(1, 10**6, 5000),
            rng.integers(1, HDR_HIGHEST_NS, 5000),
            np.array([2**k for k in range(1, 41)] + [HDR_HIGHEST_NS, HDR_HIGHEST_NS + 1]),
        ]
    ).astype(np.int64)


def test_vectorised_buckets_match_the_library() -> None:
    hist = new_histogram()
    values = _values()
    expected = [hist._counts_index_for(min(int(v), HDR_HIGHEST_NS)) for v in values]
    assert hdrnumpy.bucket_indices(values, GEOMETRY.folding).tolist() == expected


def test_a_fold_counts_as_the_library_records(folding: ModuleType) -> None:
    values = _values()
    counts = array("q", bytes(8 * GEOMETRY.counts_len))
    n, lo, hi, total, squares = folding.fold(values, counts, GEOMETRY.folding)
    reference = new_histogram()
    for v in values.tolist():
        reference.record_value(min(v, HDR_HIGHEST_NS) or 1 if v else 0)
    assert list(counts) == list(reference.counts)
    assert (n, lo, hi, total) == (values.size, 0, HDR_HIGHEST_NS + 1, int(values.sum()))
    assert squares == pytest.approx(float((values.astype(np.float64) ** 2).sum()), rel=1e-12)


def test_the_two_foldings_agree(folding: ModuleType) -> None:
    """Both implementations, on the same inputs: diff, fold, add, reach and nonzero;
    array('q') and numpy inputs alike."""
    rng = np.random.default_rng(7)
    starts = rng.integers(0, 1 << 40, 10_000).astype(np.int64)
    ends = starts + rng.lognormal(mean=10, sigma=2, size=10_000).astype(np.int64)
    counts = array("q", bytes(8 * GEOMETRY.counts_len))
    lat = ends - starts
    out = array("q", bytes(8 * lat.size))
    folding.diff(out, ends, array("q", starts.tolist()))
    assert out.tolist() == lat.tolist()
    got = folding.fold(out, counts, GEOMETRY.folding)
    assert got[:4] == (lat.size, int(lat.min()), int(lat.max()), int(lat.sum()))
    expected = np.bincount(hdrnumpy.bucket_indices(lat, GEOMETRY.folding), minlength=len(counts))
    assert list(counts) == expected.tolist()
    doubled = array("q", counts)
    folding.add(doubled, counts)
    assert list(doubled) == [2 * c for c in counts]
    cumulative = np.cumsum(expected)
    targets = [0, 1, 2, 5000, 9999, 10_000, 10_001]
    assert folding.reach(counts, targets) == np.searchsorted(cumulative, targets).tolist()
    assert folding.nonzero(counts) == np.flatnonzero(expected).tolist()
    assert folding.fold(array("q"), counts, GEOMETRY.folding) == (0, 0, 0, 0, 0.0)


@pytest.mark.skipif(_hdrfold is None, reason="the C folding is not built")
def test_the_c_folding_refuses_bad_buffers() -> None:
    assert _hdrfold is not None
    counts = array("q", bytes(8 * GEOMETRY.counts_len))
    with pytest.raises(ValueError, match="8-byte"):
        _hdrfold.fold(array("i", [1, 2]), counts, GEOMETRY.folding)
    with pytest.raises(ValueError, match="too short"):
        _hdrfold.fold(array("q", [1]), array("q", [0] * 10), GEOMETRY.folding)
    with pytest.raises(ValueError, match="length"):
        _hdrfold.diff(array("q", [0, 0]), array("q", [1, 2]), array("q", [1]))
    with pytest.raises(ValueError, match="8-byte"):
        _hdrfold.fold(b"\0" * 8, counts, GEOMETRY.folding)  # type: ignore[arg-type]
    with pytest.raises(BufferError):  # counts are written
        _hdrfold.fold(array("q", [1]), bytes(len(counts) * 8), GEOMETRY.folding)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ascend"):
        _hdrfold.reach(counts, [5, 1])
    with pytest.raises(ValueError, match="length"):
        _hdrfold.add(counts, array("q", [1]))
    with pytest.raises(TypeError):
        _hdrfold.fold(array("q", [1]), counts, (1, 2))  # type: ignore[arg-type]


def test_folded_counts_equal_record_value_counts(folding: ModuleType) -> None:
    rng = np.random.default_rng(2)
    values = rng.lognormal(mean=8, sigma=2, size=200_000).astype(np.int64) + 1
    recorder = LatencyRecorder()
    for chunk in np.array_split(values, 37):  # several runs, uneven
        recorder.add(chunk)
    ours = recorder.histogram()
    reference: HdrHistogram = new_histogram()
    for v in values[:20_000].tolist():
        reference.record_value(v)
    partial = LatencyRecorder()
    partial.add(array("q", values[:20_000].tolist()))
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
