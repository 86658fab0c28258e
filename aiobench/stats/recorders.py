"""Latency recording and summaries: raw ns arrays folded in bulk into HDR histogram counts.

``HdrHistogram.record_value()`` is pure Python and costs as much as a cached 4 KiB read, so
workers append raw latencies to a preallocated array and fold them into counts with numpy,
using the same bucketing as the hdrhistogram package (checked against it in the tests).
Pure: no disk, no event loop.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from hdrh.histogram import HdrHistogram

# 1 ns .. 1 h at 3 significant digits: no overflow for any latency a run can see.
HDR_LOWEST_NS = 1
HDR_HIGHEST_NS = 3_600 * 1_000_000_000
HDR_DIGITS = 3
# fio's default percentile points.
PERCENTILES = (1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99)
# Raw latencies kept before folding: 512 KiB per slot, folded about every 64k operations.
_FOLD_EVERY = 65_536


def new_histogram() -> HdrHistogram:
    return HdrHistogram(HDR_LOWEST_NS, HDR_HIGHEST_NS, HDR_DIGITS)


@dataclass(frozen=True, slots=True)
class _Geometry:
    unit_magnitude: int
    sub_half_mag: int
    sub_half_count: int
    sub_mask: int
    counts_len: int


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
Int64Array = npt.NDArray[np.int64]


def bucket_indices(values: Int64Array) -> Int64Array:
    """HDR counts-array index of each value (vectorised ``_counts_index_for``)."""
    g = GEOMETRY
    v = np.clip(values, 0, HDR_HIGHEST_NS).astype(np.int64)
    # floor(log2(v | mask)) is exact through frexp for values below 2^53.
    _, exp = np.frexp((v | g.sub_mask).astype(np.float64))
    bucket = exp.astype(np.int64) - 1 - g.unit_magnitude - g.sub_half_mag
    sub = v >> (bucket + g.unit_magnitude)
    return ((bucket + 1) << g.sub_half_mag) + (sub - g.sub_half_count)


class LatencyRecorder:
    """Per-slot latency store: exact min/max/sum/sum of squares plus HDR counts.

    Values are kept raw and folded in bulk (every ~64k values, and before any read of the
    totals: ``merge``, ``histogram``, ``summary``), so adding a run costs one array copy.
    """

    def __init__(self) -> None:
        # The counts (264 KiB) are made on first use: a slot has four recorders and most
        # phases fill one of them.
        self._counts: Int64Array | None = None
        # Raw values waiting to be folded; allocated on first use, since interval
        # recorders are many and short-lived.
        self._raw: Int64Array | None = None
        self._fill = 0
        self.count = 0
        self.min_ns = 0
        self.max_ns = 0
        self.sum_ns = 0
        self.sum_sq = 0.0

    @property
    def counts(self) -> Int64Array:
        if self._counts is None:
            self._counts = np.zeros(GEOMETRY.counts_len, dtype=np.int64)
        return self._counts

    @counts.setter
    def counts(self, value: Int64Array) -> None:
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

    def add(self, lat_ns: Int64Array) -> None:
        """Keep ``lat_ns`` for the next fold: one copy, no reductions (called per run)."""
        n = int(lat_ns.size)
        if n == 0:
            return
        if self._fill + n > _FOLD_EVERY:
            self.fold()
        if n > _FOLD_EVERY:
            self._fold_values(lat_ns)
            return
        if self._raw is None:
            self._raw = np.empty(_FOLD_EVERY, dtype=np.int64)
        self._raw[self._fill : self._fill + n] = lat_ns
        self._fill += n

    def fold(self) -> None:
        """Fold the kept values into the counts and the exact min/max/sums."""
        if self._fill and self._raw is not None:
            self._fold_values(self._raw[: self._fill])
            self._fill = 0

    def _fold_values(self, values: Int64Array) -> None:
        lo, hi = int(values.min()), int(values.max())
        self.min_ns = lo if self.count == 0 else min(self.min_ns, lo)
        self.max_ns = max(self.max_ns, hi)
        self.count += int(values.size)
        self.sum_ns += int(values.sum())
        as_float = values.astype(np.float64)
        # Not np.dot: it hands the product to OpenBLAS, whose worker thread then busy-waits
        # between calls and takes a whole core away from the benchmark (measured: 22 % of
        # a stat run's CPU samples). einsum computes it in the calling thread.
        self.sum_sq += float(np.einsum("i,i->", as_float, as_float))
        self.counts += np.bincount(bucket_indices(values), minlength=GEOMETRY.counts_len)

    def merge(self, other: LatencyRecorder) -> None:
        other.fold()
        self.fold()
        if other.count == 0:
            return
        self.min_ns = other.min_ns if self.count == 0 else min(self.min_ns, other.min_ns)
        self.max_ns = max(self.max_ns, other.max_ns)
        self.count += other.count
        self.sum_ns += other.sum_ns
        self.sum_sq += other.sum_sq
        self.counts += other.counts

    def histogram(self) -> HdrHistogram:
        """The folded counts as an hdrhistogram object (for percentiles and encoding)."""
        self.fold()
        h = new_histogram()
        if self.count:
            np.ctypeslib.as_array(h.counts)[:] = self.counts
            nonzero = np.flatnonzero(self.counts)
            h.set_internal_tacking_values(int(nonzero[0]), int(nonzero[-1]), self.count)
        return h

    def percentiles(
        self, points: Sequence[float], h: HdrHistogram | None = None
    ) -> dict[float, int]:
        """The value at each percentile point, in ns (0 for every point when empty)."""
        h = self.histogram() if h is None else h
        values = dict.fromkeys(points, 0)
        if self.count:
            # hdrhistogram's get_value_at_percentile walks the counts in Python for every
            # point (~10 ms each); a cumulative sum and a search give the same values.
            cumulative = np.cumsum(self.counts)
            for p in points:
                index = int(np.searchsorted(cumulative, h.get_target_count_at_percentile(p)))
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
        for index in np.flatnonzero(self.counts):
            low = min(max(int(h.get_value_from_index(int(index))), self.min_ns, 1), self.max_ns)
            k = math.ceil(per_octave * math.log2(low / 1000) - 1e-9)
            out[k] = out.get(k, 0) + int(self.counts[index])
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


def recorder_bytes(values: int) -> int:
    """The most memory a recorder given ``values`` latencies takes: its counts, and the
    raw values it keeps until the next fold."""
    return (GEOMETRY.counts_len + min(values, _FOLD_EVERY)) * 8


def _decoded_counts(hdr: str, count: int) -> Int64Array:
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
    counts = np.ctypeslib.as_array(decoded.counts).astype(np.int64)
    if int(counts.sum()) != count:
        raise ValueError(f"latency histogram holds {int(counts.sum())} values, not {count}")
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
