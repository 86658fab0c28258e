"""A phase's cumulative counters over time, fine enough to read them at any instant; pure.

Under MPI the job's FIRST DONE instant (the first thread of any rank to finish) is known only
after the phase, once every rank has told when its own first thread finished. Each rank then
reads from its timeline what it had completed by that instant. Units count in the bucket
their end falls in, ends inclusive: bucket k holds ends in ``(k*res, (k+1)*res]`` after the
phase start. The resolution starts at 1 ms and doubles whenever the phase outgrows
``max_buckets`` (2^19: 1 ms up to 8.7 minutes, 8 ms up to 70 minutes; 20 MiB of counters).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from aiobench.plan.dirmode import EntryRun
from aiobench.plan.workload import OpRun

if TYPE_CHECKING:
    from aiobench.stats.recorders import Int64Array, Int64s


class Counts(NamedTuple):
    """What a slot or a rank has completed; the reads are the --rwmixpct reads among the
    ops and bytes."""

    ops: int
    bytes: int
    entries: int
    read_ops: int
    read_bytes: int


FIELDS = len(Counts._fields)

RESOLUTION_NS = 1_000_000
MAX_BUCKETS = 1 << 19


def run_counts(run: OpRun | EntryRun, units: int, io_ops: int) -> Counts:
    """The counts of a run once its first ``units`` units and ``io_ops`` block I/Os are done."""
    ops, nbytes, entries = run.totals(units, io_ops)
    read_ops, read_bytes = run.reads(units) if isinstance(run, OpRun) else (0, 0)
    return Counts(ops, nbytes, entries, read_ops, read_bytes)


def _cumulative(run: OpRun | EntryRun, units: Int64Array, io_ops: Int64Array) -> Int64Array:
    """:func:`run_counts` for arrays of done units and block I/Os: one row per pair.

    The vector form of ``EntryRun.totals``, ``OpRun.totals`` and ``RwMix.reads``, which
    work on one count at a time; the tests hold the two forms to each other.
    """
    import numpy as np  # (a timeline is made under MPI, whose coordinator loads numpy)

    out = np.zeros((units.size, FIELDS), dtype=np.int64)
    if isinstance(run, EntryRun):
        per = run.blocks_per_entry
        out[:, 0] = io_ops
        if per:
            out[:, 1] = (io_ops // per) * run.size + (io_ops % per) * run.block
        out[:, 2] = units
        return out
    out[:, 0] = units
    out[:, 1] = units * run.length
    if run.mix is not None:
        start = run.mix.rank + run.first_seq
        pct = run.mix.pct

        seqs = start + units
        out[:, 3] = (seqs // 100) * pct + np.minimum(seqs % 100, pct)
        out[:, 3] -= (start // 100) * pct + min(start % 100, pct)
        out[:, 4] = out[:, 3] * run.length
    return out


class CounterTimeline:
    """Per-bucket counts of one phase on this process, all slots together."""

    def __init__(
        self,
        start_ns: int,
        *,
        resolution_ns: int = RESOLUTION_NS,
        max_buckets: int = MAX_BUCKETS,
    ) -> None:
        self.start_ns = start_ns
        self.resolution_ns = resolution_ns
        self.max_buckets = max_buckets
        import numpy as np

        self._buckets = np.zeros((1024, FIELDS), dtype=np.int64)

    def _index(self, instant_ns: int) -> int:
        return max(0, (instant_ns - self.start_ns - 1) // self.resolution_ns)

    def _make_room(self, index: int) -> int:
        """Grow (and if need be coarsen) so bucket ``index`` of the current resolution
        exists; returns ``index`` in the resolution it ends up in."""
        import numpy as np

        while index >= self.max_buckets:
            pairs = self._buckets[: self._buckets.shape[0] // 2 * 2]
            coarse = pairs.reshape(-1, 2, FIELDS).sum(axis=1)
            self._buckets = np.zeros_like(self._buckets)
            self._buckets[: coarse.shape[0]] = coarse
            self.resolution_ns *= 2
            index //= 2
        if index >= self._buckets.shape[0]:
            size = min(self.max_buckets, max(index + 1, 2 * self._buckets.shape[0]))
            grown = np.zeros((size, FIELDS), dtype=np.int64)
            grown[: self._buckets.shape[0]] = self._buckets
            self._buckets = grown
        return index

    def add(self, run: OpRun | EntryRun, ends: Int64s, io_ends: Int64s) -> None:
        """Count the completed part of a run, given its unit and block I/O end instants."""
        import numpy as np

        if not len(ends) and not len(io_ends):
            return
        first = min(int(a[0]) for a in (ends, io_ends) if len(a))
        last = max(int(a[-1]) for a in (ends, io_ends) if len(a))
        self._make_room(self._index(last))  # may coarsen: indices are taken after it
        first_k, last_k = self._index(first), self._index(last)
        edges = self.start_ns + np.arange(first_k + 1, last_k + 2, dtype=np.int64) * (
            self.resolution_ns
        )
        units = np.searchsorted(ends, edges, side="right").astype(np.int64)
        io_ops = np.searchsorted(io_ends, edges, side="right").astype(np.int64)
        cumulative = _cumulative(run, units, io_ops)
        self._buckets[first_k : last_k + 1] += np.diff(cumulative, axis=0, prepend=0)

    def counts_at(self, elapsed_ns: int) -> Counts:
        """What was done by ``elapsed_ns`` after the start, to the end of its bucket."""
        k = max(0, (elapsed_ns - 1) // self.resolution_ns)
        total = self._buckets[: k + 1].sum(axis=0)
        return Counts(*(int(v) for v in total))
