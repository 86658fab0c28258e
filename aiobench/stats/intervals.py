"""Latency over time: per-interval counters and HDR histograms of one phase; no disk, no loop.

Every completed unit (an operation, or an entry in dir mode) counts in the interval its end
instant falls in, ``(start + k*interval, start + (k+1)*interval]``, so the series does not
depend on how operations were batched. Intervals include their end, so the last one ends
with the phase's last operation. An interval is closed once nothing that ended inside it
can still arrive: every run still in the executor was handed over after its end.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple, Protocol

from aiobench.results.running import IntervalStats
from aiobench.stats.recorders import LatencyRecorder, LatencySummary

if TYPE_CHECKING:
    from aiobench.stats.recorders import Int64s


class RunTotals(Protocol):
    """What :class:`IntervalSeries` needs of a run: (ops, bytes, entries) of a done prefix."""

    def totals(self, units: int, io_ops: int) -> tuple[int, int, int]: ...


@dataclass(slots=True, eq=False)  # (state: compared by identity)
class _Open:
    """Accumulators of an interval that may still receive units."""

    ops: int = 0
    bytes: int = 0
    entries: int = 0
    io: LatencyRecorder = field(default_factory=LatencyRecorder)
    entry: LatencyRecorder = field(default_factory=LatencyRecorder)


class CpuSample(NamedTuple):
    """Wall clock and this process's CPU time, both from monotonic counters, in ns."""

    wall_ns: int
    cpu_ns: int


def cpu_percent(a: CpuSample, b: CpuSample, cpus: int) -> int:
    """CPU time between two samples as a share of all cores' time, 0..100."""
    wall = b.wall_ns - a.wall_ns
    if wall <= 0 or cpus <= 0:
        return 0
    return min(100, round(100 * (b.cpu_ns - a.cpu_ns) / (wall * cpus)))


class IntervalSeries:
    """The interval records of one phase, filled from completed runs on the event loop."""

    def __init__(
        self,
        *,
        start_ns: int,
        interval_ns: int,
        planned_units: int,
        dir_mode: bool,
        cpus: int,
        endless_until_ns: int | None = None,
    ) -> None:
        """``endless_until_ns``: the work never ends (--infloop); % done is then the time
        passed of the time limit ending there (0 = no limit: 0 %)."""
        self.start_ns = start_ns
        self.interval_ns = interval_ns
        self.planned_units = planned_units
        self.endless_until_ns = endless_until_ns
        self.dir_mode = dir_mode
        self.cpus = cpus
        self.closed: list[IntervalStats] = []
        self._open: dict[int, _Open] = {}
        self._done = [0, 0, 0]
        self._cpu: dict[int, CpuSample] = {}

    def boundary(self, index: int) -> int:
        """Absolute instant where interval ``index`` starts."""
        return self.start_ns + index * self.interval_ns

    def index_at(self, instant_ns: int) -> int:
        """The interval a unit ending at ``instant_ns`` counts in (an end is inclusive)."""
        return max(0, (instant_ns - self.start_ns - 1) // self.interval_ns)

    def sample_cpu(self, index: int, sample: CpuSample) -> None:
        """CPU counters at (or just after) the start of interval ``index``; first one wins."""
        self._cpu.setdefault(index, sample)

    def add(
        self,
        run: RunTotals,
        ends: Int64s,
        io_ends: Int64s,
        latency: Int64s,
        io_latency: Int64s | None = None,
    ) -> None:
        """Count a completed run: unit end instants and latencies (file mode: units = I/O).

        In dir mode ``latency`` is per entry and ``io_latency`` per block, with the block
        end instants in ``io_ends``.
        """
        firsts = [int(a[0]) for a in (ends, io_ends) if len(a)]
        if not firsts:
            return
        first_k = self.index_at(min(firsts))
        last_k = self.index_at(max(int(a[-1]) for a in (ends, io_ends) if len(a)))
        if first_k == last_k:  # the usual case: the whole run ended inside one interval
            self._count(first_k, run.totals(len(ends), len(io_ends)), latency, io_latency)
            return
        units_lo = io_lo = 0
        before = (0, 0, 0)
        for k in range(first_k, last_k + 1):
            edge = self.boundary(k + 1)
            units_hi = bisect_right(ends, edge)
            io_hi = bisect_right(io_ends, edge)
            if units_hi == units_lo and io_hi == io_lo:
                continue
            now = run.totals(units_hi, io_hi)
            part = (now[0] - before[0], now[1] - before[1], now[2] - before[2])
            io_part = None if io_latency is None else io_latency[io_lo:io_hi]
            self._count(k, part, latency[units_lo:units_hi], io_part)
            units_lo, io_lo, before = units_hi, io_hi, now

    def _count(
        self,
        k: int,
        totals: tuple[int, int, int],
        latency: Int64s,
        io_latency: Int64s | None,
    ) -> None:
        acc = self._open.get(k)
        if acc is None:
            acc = self._open[k] = _Open()
        acc.ops += totals[0]
        acc.bytes += totals[1]
        acc.entries += totals[2]
        if io_latency is None:
            acc.io.add(latency)
        else:
            acc.entry.add(latency)
            acc.io.add(io_latency)

    def close_until(self, horizon_ns: int, active: Callable[[int], int]) -> list[IntervalStats]:
        """Close, in order, every interval that ends before ``horizon_ns``.

        Units still to come end at ``horizon_ns`` or later. ``active(instant)`` tells how
        many threads were still working at an instant.
        """
        out: list[IntervalStats] = []
        while self.boundary(len(self.closed) + 1) < horizon_ns:
            k = len(self.closed)
            self.closed.append(self._close(k, self.boundary(k + 1), active))
            out.append(self.closed[-1])
        return out

    def finish(
        self, end_ns: int, active: Callable[[int], int], cpu: CpuSample, *, time_up: bool = False
    ) -> list[IntervalStats]:
        """The phase is over at ``end_ns``: close what is left, the last one cut there.

        ``time_up``: the phase ran out its time limit. Endless work is then 100 % done,
        even where its last operation ended a little before the limit."""
        out: list[IntervalStats] = []
        while self.boundary(len(self.closed)) < end_ns:
            k = len(self.closed)
            stop = min(self.boundary(k + 1), end_ns)
            percent_at = stop
            if stop == end_ns:
                self._cpu[k + 1] = cpu
                if time_up and self.endless_until_ns:
                    percent_at = max(stop, self.endless_until_ns)
            self.closed.append(self._close(k, stop, active, percent_at))
            out.append(self.closed[-1])
        return out

    def pending(self, now_ns: int) -> bool:
        """Whether an interval has ended but is not closed yet."""
        return self.boundary(len(self.closed) + 1) <= now_ns

    def percent_done(self, units_done: int, instant_ns: int) -> int:
        """% of the planned units done, or of the time limit passed when the work is endless."""
        until = self.endless_until_ns
        if until is not None:
            span = until - self.start_ns
            return min(100, (instant_ns - self.start_ns) * 100 // span) if until else 0
        if not self.planned_units:
            return 100
        return min(100, units_done * 100 // self.planned_units)

    def _close(
        self, k: int, stop_ns: int, active: Callable[[int], int], percent_at: int | None = None
    ) -> IntervalStats:
        acc = self._open.pop(k, None) or _Open()
        done = self._done
        done[0] += acc.ops
        done[1] += acc.bytes
        done[2] += acc.entries
        unit_done = done[2] if self.dir_mode else done[0]
        percent = self.percent_done(unit_done, stop_ns if percent_at is None else percent_at)
        cpu = 0
        first, last = self._cpu.get(k), self._cpu.get(k + 1)
        if first is not None and last is not None:
            cpu = cpu_percent(first, last, self.cpus)
        self._cpu.pop(k, None)
        entry: LatencySummary | None = acc.entry.summary() if self.dir_mode else None
        return IntervalStats(
            index=k,
            start_ns=self.boundary(k) - self.start_ns,
            end_ns=stop_ns - self.start_ns,
            ops=acc.ops,
            bytes=acc.bytes,
            entries=acc.entries,
            done_ops=done[0],
            done_bytes=done[1],
            done_entries=done[2],
            done_percent=percent,
            active_threads=active(stop_ns),
            cpu_percent=cpu,
            io_latency=acc.io.summary(),
            entry_latency=entry,
        )
