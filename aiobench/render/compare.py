"""``aiobench compare A.json B.json``: per phase and metric the ratio B/A, with a noise check; pure.

A run's own noise is how much its interval rates (or interval latencies) spread: the
coefficient of variation over its full-length intervals. When the change from A to B is
no larger than the noisier run's spread, the table says it is within noise, since a rerun
of either could differ that much. With fewer than three full intervals the noise is
unknown: the line says how many each run has, and a note under the table how to get more
(a shorter ``--liveint``). The ``B IS`` column says whether B is better or worse than A:
higher is better for rates, lower for elapsed time and latency. File names, labels,
commands and phase names are shown through :func:`~aiobench.text.printable`.
"""

from __future__ import annotations

import math
import shlex
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from aiobench.render.table import entry_label
from aiobench.results import IntervalStats, PhaseResult, RunResult
from aiobench.text import printable
from aiobench.units import MIB, format_elapsed, format_latency

MIN_INTERVALS = 3
TIMES = "\u00d7"  # the multiplication sign of "1.00x"


@dataclass(frozen=True, slots=True)
class _Metric:
    name: str
    value: Callable[[PhaseResult], float]
    per_interval: Callable[[IntervalStats], float] | None
    show: Callable[[float], str]
    higher_is_better: bool = True


def _metrics(phase: PhaseResult) -> list[_Metric]:
    last = phase.last_done
    out = [
        _Metric(
            "Elapsed (last done)",
            lambda p: p.last_done.elapsed_ns,
            None,
            lambda v: format_elapsed(int(v)),
            higher_is_better=False,
        )
    ]
    if last.entries:
        out.append(
            _Metric(
                f"{entry_label(phase)}/s",
                lambda p: p.last_done.entries_per_s,
                lambda iv: iv.entries_per_s,
                lambda v: f"{v:.0f}",
            )
        )
    if last.ops:
        out.append(_Metric("IOPS", lambda p: p.last_done.iops, lambda iv: iv.iops, "{:.0f}".format))
    if last.bytes:
        out.append(
            _Metric(
                "Throughput MiB/s",
                lambda p: p.last_done.bytes_per_s / MIB,
                lambda iv: iv.bytes_per_s / MIB,
                lambda v: str(int(v)),  # truncated, as the table prints it
            )
        )
    if phase.io_latency.count:
        out += [_latency_metric(point) for point in (50, 99)]
    return out


def _latency_metric(point: int) -> _Metric:
    def whole(p: PhaseResult) -> float:
        return p.io_latency.percentiles_ns[point]

    def interval(iv: IntervalStats) -> float:
        return iv.io_latency.percentiles_ns[point] if iv.io_latency.count else math.nan

    return _Metric(f"IO latency p{point}", whole, interval, format_latency, False)


def _full_values(phase: PhaseResult, per_interval: Callable[[IntervalStats], float]) -> list[float]:
    """A metric in each of the phase's full-length intervals that has a sample."""
    if not phase.intervals:
        return []
    length = phase.intervals[0].end_ns - phase.intervals[0].start_ns
    values = [per_interval(iv) for iv in phase.intervals if iv.end_ns - iv.start_ns == length]
    return [v for v in values if not math.isnan(v)]  # intervals without a sample


def interval_noise(
    phase: PhaseResult, per_interval: Callable[[IntervalStats], float]
) -> float | None:
    """Coefficient of variation of a metric over the phase's full-length intervals."""
    values = _full_values(phase, per_interval)
    if len(values) < MIN_INTERVALS:
        return None
    mean = statistics.fmean(values)
    if mean <= 0:
        return None
    return statistics.pstdev(values) / mean


def _pairs(a: RunResult, b: RunResult) -> list[tuple[str, PhaseResult, PhaseResult]]:
    """Phases of the same name, matched in order of appearance."""
    seen: dict[str, int] = {}
    out = []
    for phase in a.phases:
        nth = seen.get(phase.name, 0)
        seen[phase.name] = nth + 1
        same = [p for p in b.phases if p.name == phase.name]
        if nth < len(same):
            label = phase.name if nth == 0 else f"{phase.name}#{nth + 1}"
            out.append((label, phase, same[nth]))
    return out


def _describe(run: RunResult) -> str:
    meta = run.meta
    label = meta.get("label") or ""
    command = shlex.join(str(c) for c in meta.get("command", []))  # type: ignore[attr-defined]
    parts = [str(meta.get("start_time", "")), f"label '{label}'" if label else "", command]
    return printable("  ".join(p for p in parts if p))


def verdict(metric: _Metric, va: float, vb: float) -> str:
    """``better``, ``worse`` or ``same`` (equal at the ratio's two decimals) for B."""
    if not va or f"{vb / va:.2f}" == "1.00":
        return "same" if va or not vb else ("better" if metric.higher_is_better else "worse")
    return "better" if (vb > va) == metric.higher_is_better else "worse"


def _interval_count(count: int) -> str:
    return f"{count} full interval{'' if count == 1 else 's'}"


def _live_interval(run: RunResult) -> str:
    value = run.meta.get("live_interval_ms")
    return f"{value} ms" if isinstance(value, int) else "unknown"


def render_compare(a: RunResult, b: RunResult, name_a: str, name_b: str) -> str:
    pairs = _pairs(a, b)
    lines = [
        f"A: {printable(name_a)}  {_describe(a)}",
        f"B: {printable(name_b)}  {_describe(b)}",
        "B IS: better or worse than A; higher is better for rates, lower for elapsed time "
        "and latency.",
        "",
    ]
    header = f"{'PHASE':<11} {'METRIC':<20} {'A':>12} {'B':>12} {'B/A':>8}  {'B IS':<6}  NOTE"
    lines += [header, "=" * len(header)]
    unknown = False
    for label, pa, pb in pairs:
        shown = printable(label)
        for metric in _metrics(pa):
            va, vb = metric.value(pa), metric.value(pb)
            ratio = f"{vb / va:.2f}{TIMES}" if va else "-"
            note = ""
            if metric.per_interval is not None and va:
                noise = [interval_noise(p, metric.per_interval) for p in (pa, pb)]
                if None in noise:
                    counts = [len(_full_values(p, metric.per_interval)) for p in (pa, pb)]
                    note = (
                        f"noise unknown: A has {_interval_count(counts[0])}, B "
                        f"{counts[1]}; {MIN_INTERVALS} needed"
                    )
                    unknown = True
                else:
                    spread = max(n for n in noise if n is not None)
                    if abs(vb / va - 1) <= spread:
                        note = f"warning: within noise (runs vary by {100 * spread:.1f}%)"
            lines.append(
                f"{shown:<11} {metric.name:<20} {metric.show(va):>12} {metric.show(vb):>12} "
                f"{ratio:>8}  {verdict(metric, va, vb):<6}  {note}".rstrip()
            )
    if unknown:
        lines += [
            "",
            "Noise unknown: a run's noise is the spread of a metric over its full --liveint "
            f"intervals, and {MIN_INTERVALS} are needed to measure it.",
            f"Run again with a shorter --liveint (A used {_live_interval(a)}, B "
            f"{_live_interval(b)}) or for longer.",
        ]
    return "\n".join(lines) + "\n"


def common_phases(a: RunResult, b: RunResult) -> int:
    return len(_pairs(a, b))
