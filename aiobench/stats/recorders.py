"""Latency recording and summaries: latencies folded into HDR histogram counts per run.

``HdrHistogram.record_value()`` is pure Python and costs as much as a cached 4 KiB read, so
each run's latencies are folded at once into an int64 array of counts with the bucketing of
the hdrhistogram package (checked against it in the tests), by the C extension
:mod:`aiobench.stats._hdrfold`; without it (an install without a compiler), by numpy
(:mod:`aiobench.stats.hdrnumpy`, the same functions). So a run on the native engine never
loads numpy, whose import is a third of a small run's start. Pure: no disk, no event loop.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from hdrh.histogram import HdrHistogram

if TYPE_CHECKING:  # (the int64 array types: see hdrnumpy)
    from aiobench.stats.hdrnumpy import Int64Array as Int64Array
    from aiobench.stats.hdrnumpy import Int64s as Int64s

try:
    from aiobench.stats import _hdrfold as _fold
except ImportError:  # (built where a compiler was at install, like the native engine)
    from aiobench.stats import hdrnumpy as _fold  # type: ignore[no-redef]

# 1 ns .. 1 h at 3 significant digits: no overflow for any latency a run can see.
HDR_LOWEST_NS = 1
HDR_HIGHEST_NS = 3_600 * 1_000_000_000
HDR_DIGITS = 3
# fio's default percentile points.
PERCENTILES = (1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99)


def new_histogram() -> HdrHistogram:
    return HdrHistogram(HDR_LOWEST_NS, HDR_HIGHEST_NS, HDR_DIGITS)


class _Geometry(NamedTuple):
    unit_magnitude: int
    sub_half_mag: int
    sub_half_count: int
    sub_mask: int
    counts_len: int

    @property
    def folding(self) -> tuple[int, int, int, int, int]:
        """The arguments of the fold functions' ``geometry``."""
        return (
            self.unit_magnitude,
            self.sub_half_mag,
            self.sub_half_count,
            self.sub_mask,
            HDR_HIGHEST_NS,
        )


def _geometry() -> _Geometry:
    h = new_histogram()
    return _Geometry(
        h.unit_magnitude,
        h.sub_bucket_half_count_magnitude,
        h.sub_bucket_half_count,
        h.sub_bucket_mask,
        h.counts_len,
    )


GEOMETRY = _geometry()
_FOLDING = GEOMETRY.folding
_ZERO = array("q", [0])
_ZEROS = _ZERO * GEOMETRY.counts_len
RECORDER_BYTES = GEOMETRY.counts_len * 8  # the most memory one recorder takes: its counts


def latencies(ends: Int64s, starts: Int64s) -> array[int]:
    """``ends[i] - starts[i]`` for each i, as an int64 array."""
    out = _ZERO * len(ends)  # (~50x as fast as from bytes)
    _fold.diff(out, ends, starts)
    return out


def as_numpy(values: Int64s) -> Int64Array:
    """``values`` as a numpy array (no copy), for the parts of a run that compute with
    numpy (and so have loaded it before the clock)."""
    import numpy as np

    return np.asarray(values, dtype=np.int64)


class LatencyRecorder:
    """Per-slot latency store: exact min/max/sum/sum of squares plus HDR counts."""

    __slots__ = ("_counts", "count", "max_ns", "min_ns", "sum_ns", "sum_sq")

    def __init__(self) -> None:
        # The counts (264 KiB) are made on first use: a slot has four recorders and most
        # phases fill one of them.
        self._counts: array[int] | None = None
        self.count = 0
        self.min_ns = 0
        self.max_ns = 0
        self.sum_ns = 0
        self.sum_sq = 0.0

    @property
    def counts(self) -> array[int]:
        if self._counts is None:
            self._counts = array("q", _ZEROS)
        return self._counts

    @counts.setter
    def counts(self, value: array[int]) -> None:
        self._counts = value

    @classmethod
    def from_summary(cls, summary: LatencySummary) -> LatencyRecorder:
        """A recorder holding what ``summary`` describes, so summaries can be merged.

        The HDR counts come back exactly; the sums are rebuilt from the rounded mean and
        standard deviation (the raw sums are not kept in a summary), so a merged mean and
        standard deviation are as precise as those roundings allow.
        """
        recorder = cls()
        if summary.count == 0:
            return recorder
        recorder.counts = _decoded_counts(summary.hdr, summary.count)
        recorder.count = summary.count
        recorder.min_ns = summary.min_ns
        recorder.max_ns = summary.max_ns
        recorder.sum_ns = round(summary.mean_ns * summary.count)
        # From the mean the rebuilt sum gives, so the variance comes back as the summary's.
        mean = recorder.sum_ns / summary.count
        recorder.sum_sq = summary.count * (summary.stddev_ns**2 + mean * mean)
        return recorder

    def add(self, lat_ns: Int64s) -> None:
        """Fold the latencies ``lat_ns`` in (called per run)."""
        if not len(lat_ns):
            return
        n, lo, hi, total, squares = _fold.fold(lat_ns, self.counts, _FOLDING)
        self.min_ns = lo if self.count == 0 else min(self.min_ns, lo)
        self.max_ns = max(self.max_ns, hi)
        self.count += n
        self.sum_ns += total
        self.sum_sq += squares

    def merge(self, other: LatencyRecorder) -> None:
        if other.count == 0:
            return
        self.min_ns = other.min_ns if self.count == 0 else min(self.min_ns, other.min_ns)
        self.max_ns = max(self.max_ns, other.max_ns)
        self.count += other.count
        self.sum_ns += other.sum_ns
        self.sum_sq += other.sum_sq
        _fold.add(self.counts, other.counts)

    def histogram(self) -> HdrHistogram:
        """The counts as an hdrhistogram object (for percentiles and encoding)."""
        h = new_histogram()
        if self.count:
            memoryview(h.counts).cast("B")[:] = memoryview(self.counts).cast("B")
            nonzero = _fold.nonzero(self.counts)
            h.set_internal_tacking_values(nonzero[0], nonzero[-1], self.count)
        return h

    def percentiles(
        self, points: Sequence[float], h: HdrHistogram | None = None
    ) -> dict[float, int]:
        """The value at each percentile point, in ns (0 for every point when empty)."""
        h = self.histogram() if h is None else h
        values = dict.fromkeys(points, 0)
        if self.count:
            # hdrhistogram's get_value_at_percentile walks the counts in Python for every
            # point (~10 ms each); one walk for all points gives the same values.
            targets = sorted((h.get_target_count_at_percentile(p), p) for p in points)
            at = _fold.reach(self.counts, [target for target, _ in targets])
            for (_, p), index in zip(targets, at, strict=True):
                value = int(h.get_highest_equivalent_value(h.get_value_from_index(index)))
                # A bucket's top can lie past the largest value recorded in it: no
                # percentile is reported above the exact max (or below the exact min).
                values[p] = min(max(value, self.min_ns), self.max_ns)
        return values

    def log_buckets(self, per_octave: int) -> dict[int, int]:
        """elbencho's histogram: {k: count} of the values in (2^((k-1)/n), 2^(k/n)] us
        for n = ``per_octave``; only buckets that hold values.

        Each HDR bucket (under 0.1 % wide) goes whole to the bucket its lowest value falls
        in (clamped to the exact min and max).
        """
        h = self.histogram()
        out: dict[int, int] = {}
        counts = self.counts
        for index in _fold.nonzero(counts):
            low = min(max(int(h.get_value_from_index(index)), self.min_ns, 1), self.max_ns)
            k = math.ceil(per_octave * math.log2(low / 1000) - 1e-9)
            out[k] = out.get(k, 0) + counts[index]
        return dict(sorted(out.items()))

    def summary(self) -> LatencySummary:
        h = self.histogram()
        mean = self.sum_ns / self.count if self.count else 0.0
        var = self.sum_sq / self.count - mean * mean if self.count else 0.0
        points = self.percentiles(PERCENTILES, h)
        # Rounded once here, so the table and the JSON (and a table re-rendered from the
        # JSON by `aiobench show`) use the same value.
        return LatencySummary(
            count=self.count,
            min_ns=self.min_ns,
            max_ns=self.max_ns,
            mean_ns=round(mean, 1),
            stddev_ns=round(math.sqrt(max(var, 0.0)), 1),
            percentiles_ns=points,
            hdr=h.encode().decode("ascii") if self.count else "",
        )


def _decoded_counts(hdr: str, count: int) -> array[int]:
    """The counts array of an encoded histogram of our geometry holding ``count`` values."""
    if not hdr:
        raise ValueError(f"latency summary of {count} values has no histogram")
    decoded = HdrHistogram.decode(hdr)
    shape = (
        decoded.lowest_trackable_value,
        decoded.highest_trackable_value,
        decoded.significant_figures,
    )
    if shape != (HDR_LOWEST_NS, HDR_HIGHEST_NS, HDR_DIGITS):
        raise ValueError(f"latency histogram of another geometry: {shape}")
    counts = _ZERO * GEOMETRY.counts_len  # (the geometry checked above: its length)
    memoryview(counts).cast("B")[:] = memoryview(decoded.counts).cast("B")  # (~100x a loop)
    held = [counts[i] for i in _fold.nonzero(counts)]  # (a few hundred of 33,792)
    if held and min(held) < 0:
        raise ValueError("latency histogram with a count past 2^63")
    if sum(held) != count:
        raise ValueError(f"latency histogram holds {sum(held)} values, not {count}")
    return counts


def merge_latency(summaries: Sequence[LatencySummary | None]) -> LatencySummary | None:
    """One summary of all values behind ``summaries`` (None entries skipped; None if all are).

    Counts and percentiles come out as if one recorder had seen every value: the HDR
    buckets add up exactly and the exact min and max are kept.
    """
    present = [s for s in summaries if s is not None]
    if not present:
        return None
    total = LatencyRecorder()
    for summary in present:
        total.merge(LatencyRecorder.from_summary(summary))
    return total.summary()


@dataclass(frozen=True, slots=True)
class LatencySummary:
    count: int
    min_ns: int
    max_ns: int
    mean_ns: float
    stddev_ns: float
    percentiles_ns: dict[float, int]
    hdr: str

    def at(self, points: Sequence[float]) -> dict[float, int]:
        """The value at each point: the recorded one where the summary has it, else from
        its histogram (the same method, so both agree)."""
        if all(p in self.percentiles_ns for p in points) or self.count == 0:
            return {p: self.percentiles_ns.get(p, 0) for p in points}
        return LatencyRecorder.from_summary(self).percentiles(points)

    def log_buckets(self, per_octave: int) -> dict[int, int]:
        """See :meth:`LatencyRecorder.log_buckets`; {} when empty."""
        if self.count == 0:
            return {}
        return LatencyRecorder.from_summary(self).log_buckets(per_octave)
