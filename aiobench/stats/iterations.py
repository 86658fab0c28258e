"""The summary of ``-i N``: each phase's last-done rates over the iterations, as IOR gives it; pure.

Per phase name, the min, max, mean and population standard deviation (the iterations are
the whole population measured, not a sample of it) of IOPS, bytes/s, entries/s and the
elapsed time, over the blocks of that phase the run reported. A run cut short by its time
limit, an error or a signal is summarised over the iterations it got to. SYNC and DROPCACHE
blocks are not summarised: they are housekeeping, and run several times per iteration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aiobench.kinds import DROPCACHE, PHASE_NAMES, SYNC
from aiobench.results.model import PhaseResult

# The last-done figures summarised, in the order of the JSON summary.
SUMMARY_METRICS = ("iops", "bytes_per_s", "entries_per_s", "elapsed_ns")
HOUSEKEEPING_NAMES = frozenset({PHASE_NAMES[SYNC], PHASE_NAMES[DROPCACHE]})


@dataclass(frozen=True, slots=True)
class Spread:
    """min, max, mean and population stddev of one figure over the iterations."""

    values: tuple[int, ...]

    @property
    def min(self) -> int:
        return min(self.values)

    @property
    def max(self) -> int:
        return max(self.values)

    # (statistics, with fractions and decimal, is loaded only for a summary: ~3 ms of start)
    @property
    def mean(self) -> float:
        import statistics

        return statistics.fmean(self.values)

    @property
    def stddev(self) -> float:
        import statistics

        return statistics.pstdev(self.values)

    def floored(self, unit: int = 1) -> tuple[int, int, int, int]:
        """min, max, mean, stddev in ``unit``s, each truncated as the table truncates rates.

        Exact integer arithmetic: the float mean and stddev could land a hair below a whole
        number and print one less than the figures they come from.
        """
        n, total = len(self.values), sum(self.values)
        squares = n * sum(v * v for v in self.values) - total * total  # n^2 * variance
        return (
            self.min // unit,
            self.max // unit,
            total // (n * unit),
            math.isqrt(squares) // (n * unit),
        )


@dataclass(frozen=True, slots=True)
class IterationSummary:
    """One phase over the iterations: its blocks in order, and the spread of each figure."""

    phase: str
    blocks: tuple[PhaseResult, ...]

    @property
    def iterations(self) -> int:
        return len(self.blocks)

    def spread(self, metric: str) -> Spread:
        return Spread(tuple(int(getattr(b.last_done, metric)) for b in self.blocks))

    def has(self, count: str) -> bool:
        """Whether any iteration counted ``ops``, ``bytes`` or ``entries``."""
        return any(getattr(b.last_done, count) for b in self.blocks)


def summarize(phases: list[PhaseResult]) -> list[IterationSummary]:
    """Per phase name, in the order phases first ran; [] unless the run asked for ``-i`` > 1."""
    if not any(p.iterations > 1 for p in phases):
        return []
    blocks: dict[str, list[PhaseResult]] = {}
    for phase in phases:
        if phase.name not in HOUSEKEEPING_NAMES:
            blocks.setdefault(phase.name, []).append(phase)
    return [IterationSummary(name, tuple(found)) for name, found in blocks.items()]
