"""What each line of the ``plot`` PNG holds, without matplotlib: phases grouped into lines,
their points joined, and the partial last interval of each phase told apart; pure.

Up to :data:`MAX_PHASE_LINES` phases each get a line of their own (``WRITE``, ``WRITE #2``).
More get one line per phase name, every phase of that name joined into it with a gap
between them (one artist, one legend entry: ``WRITE (2500 phases)``): a legend of 5,000
entries took matplotlib minutes to lay out and could not be read.

A phase's last interval ends with the phase, so it is mostly shorter than ``--liveint``.
Its rate is over its own length, but the tail of a phase (threads finishing one by one)
weighs far more in it than in a full interval, so it tends to draw a drop that is no
slowdown: the throughput panel draws it apart, as a hollow marker on a dotted line.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from aiobench.results.model import IntervalStats, PhaseResult
from aiobench.results.runresult import RunResult
from aiobench.units import NS_PER_MS

# Past this many phases, one line per phase name (see above): ten colours and a legend
# that still fits beside a panel.
MAX_PHASE_LINES = 20


@dataclass(frozen=True, slots=True)
class PlotLine:
    """One line of every panel: its legend name, its colour and the phases it draws."""

    name: str
    color: str
    phases: tuple[PhaseResult, ...]

    @property
    def first(self) -> PhaseResult:
        """The phase whose kind (dir or file, latency per entry or IO) the line takes: all
        of a line's phases share their name, and so their kind."""
        return self.phases[0]


def plot_lines(phases: Sequence[PhaseResult]) -> list[PlotLine]:
    """A line per phase (``#2``, ``#3`` on repeated names), or per phase name when there
    are more than :data:`MAX_PHASE_LINES` phases."""
    if len(phases) <= MAX_PHASE_LINES:
        seen: dict[str, int] = {}
        lines = []
        for i, phase in enumerate(phases):
            seen[phase.name] = seen.get(phase.name, 0) + 1
            nth = seen[phase.name]
            name = phase.name if nth == 1 else f"{phase.name} #{nth}"
            lines.append(PlotLine(name, _color(i), (phase,)))
        return lines
    by_name: dict[str, list[PhaseResult]] = {}
    for phase in phases:
        by_name.setdefault(phase.name, []).append(phase)
    return [
        PlotLine(f"{name} ({len(group)} phases)", _color(i), tuple(group))
        for i, (name, group) in enumerate(by_name.items())
    ]


def _color(i: int) -> str:
    return f"C{i % 10}"


def full_interval_ns(run: RunResult) -> int | None:
    """The length of a full interval: the run's ``--liveint``; else the first interval of
    a phase that has more than one; None when nothing tells."""
    ms = run.meta.get("live_interval_ms")
    if isinstance(ms, int) and ms > 0:
        return ms * NS_PER_MS
    return next((p.intervals[0].span_ns for p in run.phases if len(p.intervals) > 1), None)


def split_partial(
    intervals: Sequence[IntervalStats], full_ns: int | None
) -> tuple[Sequence[IntervalStats], IntervalStats | None]:
    """The full intervals, and the last one apart when it is shorter than ``full_ns``."""
    if not intervals or full_ns is None or intervals[-1].span_ns >= full_ns:
        return intervals, None
    return intervals[:-1], intervals[-1]


Points = tuple[list[float], list[float]]


def joined(parts: Iterable[Points]) -> Points:
    """The points of several phases as one line, a NaN between them so that no segment
    joins the end of one phase to the start of the next."""
    x: list[float] = []
    y: list[float] = []
    for px, py in parts:
        if x and px:
            x.append(math.nan)
            y.append(math.nan)
        x += px
        y += py
    return x, y


def interval_points(
    intervals: Iterable[IntervalStats], value: Callable[[IntervalStats], float]
) -> Points:
    """Each interval at its end (seconds since the phase start) and its value."""
    ivs = list(intervals)
    return [iv.end_ns / 1e9 for iv in ivs], [value(iv) for iv in ivs]


def partial_points(
    phases: Iterable[PhaseResult], full_ns: int | None, value: Callable[[IntervalStats], float]
) -> Points:
    """For each phase with a partial last interval, the segment from its last full
    interval to it (the point alone when it has no full one), joined."""
    parts = []
    for phase in phases:
        full, partial = split_partial(phase.intervals, full_ns)
        if partial is not None:
            parts.append(interval_points([*full[-1:], partial], value))
    return joined(parts)


def shorter_than_interval_note(run: RunResult, full_ns: int | None) -> str | None:
    """The hint when every phase with intervals ended within its first one: each is one
    point, so the lines over time show nothing of how a phase went."""
    timed = [p for p in run.phases if p.intervals]
    if not timed or full_ns is None:
        return None
    if not all(len(p.intervals) == 1 and p.intervals[0].span_ns < full_ns for p in timed):
        return None
    ms = full_ns / NS_PER_MS
    return (
        f"every phase was shorter than the live interval ({ms:g} ms), so each is one point "
        "over time; run with a smaller --liveint (or for longer) to see how a phase went"
    )
