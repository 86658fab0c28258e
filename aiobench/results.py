"""The result model handed to renderers: per-phase first/last-done totals and latency; pure.

SCHEMA_VERSION history (bump on any change a consumer could notice):
    1 — first published format: meta, phases[first_done, last_done, latency.io,
        latency.entries (dir mode), peak_inflight_ops, threads], interrupted, error.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aiobench.stats import LatencySummary
from aiobench.units import rate

SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class Totals:
    """Counters of all threads at one instant, and the time from the common start to it."""

    elapsed_ns: int
    ops: int
    bytes: int
    entries: int = 0

    @property
    def iops(self) -> int:
        return rate(self.ops, self.elapsed_ns)

    @property
    def bytes_per_s(self) -> int:
        return rate(self.bytes, self.elapsed_ns)

    @property
    def entries_per_s(self) -> int:
        return rate(self.entries, self.elapsed_ns)


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreadTotals:
    rank: int
    ops: int
    bytes: int
    entries: int
    elapsed_ns: int


@dataclass(frozen=True, slots=True, kw_only=True)
class PhaseResult:
    name: str
    first_done: Totals
    last_done: Totals
    io_latency: LatencySummary
    entry_latency: LatencySummary | None = None  # dir mode only: per dir or whole file
    peak_inflight_ops: int
    threads: tuple[ThreadTotals, ...]
    time_limited: bool = False
    interrupted: bool = False


@dataclass(slots=True, kw_only=True)
class RunResult:
    meta: dict[str, object]
    phases: list[PhaseResult] = field(default_factory=list)
    interrupted: bool = False
    error: dict[str, object] | None = None
