"""What a phase reports while it runs: a live look at it (:class:`Progress`) and its
interval records (:class:`IntervalStats`).

Part of the result model (:mod:`aiobench.results.model` holds the rest and exports these
too). They are apart because the run needs them from its start and while its phases are
timed, whereas the classes of a phase's result are needed only once it has ended: a run
loads those after its first phase, off the way to its first operation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiobench.units import rate

if TYPE_CHECKING:
    from aiobench.stats.recorders import LatencySummary


class Rates:
    """elbencho's rates of a result's counts over its time span (``span_ns``)."""

    __slots__ = ()
    ops: int
    bytes: int
    entries: int

    @property
    def span_ns(self) -> int:
        raise NotImplementedError

    @property
    def iops(self) -> int:
        return rate(self.ops, self.span_ns)

    @property
    def bytes_per_s(self) -> int:
        return rate(self.bytes, self.span_ns)

    @property
    def entries_per_s(self) -> int:
        return rate(self.entries, self.span_ns)


@dataclass(frozen=True, slots=True)
class ThreadProgress:
    """One thread's part of a live look (--livecsvex): done so far, cumulative."""

    rank: int
    done_percent: int
    done_bytes: int
    done_entries: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Progress:
    """A live look at a running phase: done so far and rates since the last look."""

    phase: str
    elapsed_ns: int
    done_percent: int
    done_bytes: int
    bytes_per_s: int
    iops: int
    entries_per_s: int
    eta_ns: int | None  # None until there is a pace to extrapolate from
    dir_mode: bool
    threads: tuple[ThreadProgress, ...] = ()  # each thread's, when asked for (--livecsvex)


@dataclass(frozen=True, slots=True, kw_only=True)
class IntervalStats(Rates):
    """One ``--liveint`` interval of a phase; each unit counts in the interval it ended in.

    ``start_ns``/``end_ns`` are relative to the phase start; ``done_*`` are cumulative.
    """

    index: int
    start_ns: int
    end_ns: int
    ops: int
    bytes: int
    entries: int
    done_ops: int
    done_bytes: int
    done_entries: int
    done_percent: int
    active_threads: int
    cpu_percent: int
    io_latency: LatencySummary
    entry_latency: LatencySummary | None = None  # dir mode only

    @property
    def span_ns(self) -> int:
        return self.end_ns - self.start_ns
