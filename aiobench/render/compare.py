"""``aiobench compare A.json B.json``: per phase and metric the ratio B/A, with a noise check; pure.

A run's own noise is how much its interval rates (or interval latencies) spread: the
coefficient of variation over its full-length intervals. When the change from A to B is
no larger than the noisier run's spread, the table says it is within noise, since a rerun
of either could differ that much. With fewer than three full intervals the noise is
unknown: the line says how many each run has, and a note under the table how to get more
(a shorter ``--liveint``; for a check, which picks its own, a longer ``--budget``). Two
check documents are compared without the elapsed time: a check's tests run for their
share of the budget, so their time says nothing of the storage. ``--fail-below`` gates on
the error of the runs' mean rates instead (:func:`change_margin`): a whole run's mean is
known far better than one interval's value. The ``B IS`` column says whether B is better
or worse than A: higher is better for rates, lower for elapsed time and latency. File
names, labels, commands and phase names are shown through :func:`~aiobench.text.printable`.
"""

from __future__ import annotations

import math
import shlex
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from aiobench.render.table import entry_label
from aiobench.results.model import Compared, IntervalStats, PhaseResult
from aiobench.results.runresult import RunResult, labelled_phases
from aiobench.text import printable
from aiobench.units import MIB, format_elapsed, format_latency

MIN_INTERVALS = 3
CHECK = "check"  # Compared.kind of a check document
# --fail-below: a fall counts when it is beyond this many standard errors of the
# difference of the runs' mean interval rates (about 95 % for a normal spread).
NOISE_SIGMAS = 2.0
TIMES = "\u00d7"  # the multiplication sign of "1.00x"


@dataclass(frozen=True, slots=True)
class _Metric:
    name: str
    value: Callable[[PhaseResult], float]
    per_interval: Callable[[IntervalStats], float] | None
    show: Callable[[float], str]
    rate: bool = False  # a rate: higher is better, and --fail-below gates it


def _metrics(phase: PhaseResult, budgeted: bool) -> list[_Metric]:
    """What is compared of a phase; no elapsed time where a time budget set it (a check's
    tests run for their share of ``--budget``, or a count sized to it)."""
    last = phase.last_done
    out = []
    if not budgeted:
        elapsed = _Metric(
            "Elapsed (last done)",
            lambda p: p.last_done.elapsed_ns,
            None,
            lambda v: format_elapsed(int(v)),
        )
        out.append(elapsed)
    if last.entries:
        out.append(
            _Metric(
                f"{entry_label(phase)}/s",
                lambda p: p.last_done.entries_per_s,
                lambda iv: iv.entries_per_s,
                lambda v: f"{v:.0f}",
                rate=True,
            )
        )
    if last.ops:
        out.append(
            _Metric(
                "IOPS", lambda p: p.last_done.iops, lambda iv: iv.iops, "{:.0f}".format, rate=True
            )
        )
    if last.bytes:
        out.append(
            _Metric(
                "Throughput MiB/s",
                lambda p: p.last_done.bytes_per_s / MIB,
                lambda iv: iv.bytes_per_s / MIB,
                lambda v: str(int(v)),  # truncated, as the table prints it
                rate=True,
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

    return _Metric(f"IO latency p{point}", whole, interval, format_latency)


def _full_values(phase: PhaseResult, per_interval: Callable[[IntervalStats], float]) -> list[float]:
    """A metric in each of the phase's full-length intervals that has a sample."""
    if not phase.intervals:
        return []
    length = phase.intervals[0].end_ns - phase.intervals[0].start_ns
    values = [per_interval(iv) for iv in phase.intervals if iv.end_ns - iv.start_ns == length]
    return [v for v in values if not math.isnan(v)]  # intervals without a sample


def interval_values(
    phase: PhaseResult, per_interval: Callable[[IntervalStats], float]
) -> list[float] | None:
    """A metric over the phase's full-length intervals; None with fewer than three."""
    values = _full_values(phase, per_interval)
    return values if len(values) >= MIN_INTERVALS else None


def interval_noise(
    phase: PhaseResult, per_interval: Callable[[IntervalStats], float]
) -> float | None:
    """Coefficient of variation of a metric over the phase's full-length intervals."""
    values = interval_values(phase, per_interval)
    if values is None:
        return None
    mean = statistics.fmean(values)
    if mean <= 0:
        return None
    return statistics.pstdev(values) / mean


def change_margin(
    a: PhaseResult, b: PhaseResult, per_interval: Callable[[IntervalStats], float]
) -> float | None:
    """How far B's rate may lie from A's by the runs' noise alone, as a share of A's:
    :data:`NOISE_SIGMAS` standard errors of the difference of the two runs' mean interval
    rates (Welch's, as pyperf's significance test). The spread of single intervals would
    call a run whose intervals are bursty (a throttled device: ±100 %) noisy however far
    its mean fell; the error of the mean shrinks with the number of intervals. None when
    either run has fewer than three full intervals."""
    va, vb = interval_values(a, per_interval), interval_values(b, per_interval)
    if va is None or vb is None:
        return None
    mean = statistics.fmean(va)
    if mean <= 0:
        return None
    error = math.sqrt(statistics.variance(va) / len(va) + statistics.variance(vb) / len(vb))
    return NOISE_SIGMAS * error / mean


def _labelled(run: RunResult | Compared) -> list[tuple[str, PhaseResult]]:
    return run.phases if isinstance(run, Compared) else labelled_phases(run)


def _pairs(
    a: RunResult | Compared, b: RunResult | Compared
) -> list[tuple[str, PhaseResult, PhaseResult]]:
    """Phases (or check tests) of the same label, in A's order."""
    in_b = dict(_labelled(b))
    return [(label, pa, in_b[label]) for label, pa in _labelled(a) if label in in_b]


def _describe(run: RunResult | Compared) -> str:
    meta = run.meta
    label = meta.get("label") or ""
    command = shlex.join(str(c) for c in meta.get("command", []))  # type: ignore[attr-defined]
    parts = [str(meta.get("start_time", "")), f"label '{label}'" if label else "", command]
    return printable("  ".join(p for p in parts if p))


@dataclass(frozen=True, slots=True, kw_only=True)
class Line:
    """One compared metric of one phase (or check test)."""

    phase: str
    metric: str
    a: str
    b: str
    ratio: str
    verdict: str  # B is "better", "worse" or the "same"
    note: str
    failed: bool = False
    noise_unknown: bool = False


def verdict(metric: _Metric, va: float, vb: float) -> str:
    """``better``, ``worse`` or ``same`` (equal at the ratio's two decimals) for B."""
    if not va or f"{vb / va:.2f}" == "1.00":
        return "same" if va or not vb else ("better" if metric.rate else "worse")
    return "better" if (vb > va) == metric.rate else "worse"


def _interval_count(count: int) -> str:
    return f"{count} full interval{'' if count == 1 else 's'}"


def _is_check(run: RunResult | Compared) -> bool:
    return isinstance(run, Compared) and run.kind == CHECK


def _used(run: RunResult | Compared, key: str, unit: str) -> str:
    value = run.meta.get(key)
    return f"{value} {unit}" if isinstance(value, int) else "unknown"


def _noise_advice(a: RunResult | Compared, b: RunResult | Compared) -> list[str]:
    """Why the noise is unknown and how to get the full intervals it needs: a run takes a
    shorter --liveint; a check has none (it gives each test about ten intervals of at
    least 50 ms), so it needs a longer --budget."""
    if _is_check(a):
        return [
            "Noise unknown: a test's noise is the spread of a metric over its full live "
            f"intervals, and {MIN_INTERVALS} are needed to measure it.",
            f"Check again with a longer --budget (A used {_used(a, 'budget_s', 's')}, B "
            f"{_used(b, 'budget_s', 's')}): each test gets about ten intervals of at least "
            "50 ms.",
        ]
    return [
        "Noise unknown: a run's noise is the spread of a metric over its full --liveint "
        f"intervals, and {MIN_INTERVALS} are needed to measure it.",
        f"Run again with a shorter --liveint (A used {_used(a, 'live_interval_ms', 'ms')}, "
        f"B {_used(b, 'live_interval_ms', 'ms')}) or for longer.",
    ]


def _gate(drop: float, fail_below: float, margin: float | None) -> tuple[bool, str]:
    """Whether a rate that fell by ``drop`` (0.5 = by half) fails ``--fail-below``, and
    the note that says so; ``margin`` (see :func:`change_margin`) None: unknown, the
    limit alone decides."""
    fell = f"fell {100 * drop:.1f}%"
    if 100 * drop <= fail_below:
        return False, ""
    if margin is None:
        unknown = f"noise unknown: fewer than {MIN_INTERVALS} full intervals"
        return True, f"FAIL: {fell} (limit {fail_below:g}%; {unknown})"
    if drop <= margin:
        return False, (
            f"{fell}, more than {fail_below:g}% but within the runs' noise (±{100 * margin:.1f}%)"
        )
    return True, f"FAIL: {fell} (limit {fail_below:g}%, runs' noise ±{100 * margin:.1f}%)"


def compare_lines(
    a: RunResult | Compared, b: RunResult | Compared, fail_below: float | None = None
) -> list[Line]:
    """Every compared metric; with ``fail_below`` (a percentage) the rates (entries/s,
    IOPS, MiB/s) that fell by more than it and by more than the runs' noise
    (:func:`change_margin`) are marked failed. Elapsed time and latency are shown, never
    gated."""
    lines = []
    for label, pa, pb in _pairs(a, b):
        for metric in _metrics(pa, budgeted=_is_check(a)):
            va, vb = metric.value(pa), metric.value(pb)
            ratio = f"{vb / va:.2f}{TIMES}" if va else "-"
            note, failed, unknown = "", False, False
            if metric.per_interval is not None and va:
                spreads = [interval_noise(p, metric.per_interval) for p in (pa, pb)]
                if None in spreads:
                    counts = [len(_full_values(p, metric.per_interval)) for p in (pa, pb)]
                    note = (
                        f"noise unknown: A has {_interval_count(counts[0])}, B "
                        f"{counts[1]}; {MIN_INTERVALS} needed"
                    )
                    unknown = True
                else:
                    noise = max(n for n in spreads if n is not None)
                    if abs(vb / va - 1) <= noise:
                        note = f"warning: within noise (runs vary by {100 * noise:.1f}%)"
            if fail_below is not None and metric.rate and metric.per_interval and va and vb < va:
                margin = change_margin(pa, pb, metric.per_interval)
                failed, gate_note = _gate(1 - vb / va, fail_below, margin)
                note = gate_note or note
            lines.append(
                Line(
                    phase=printable(label),
                    metric=metric.name,
                    a=metric.show(va),
                    b=metric.show(vb),
                    ratio=ratio,
                    verdict=verdict(metric, va, vb),
                    note=note,
                    failed=failed,
                    noise_unknown=unknown,
                )
            )
    return lines


def _verdict(lines: list[Line], fail_below: float) -> str:
    failed = [line for line in lines if line.failed]
    if not failed:
        return f"OK: no rate fell by more than {fail_below:g}% beyond the runs' noise"
    named = ", ".join(f"{line.phase} {line.metric}" for line in failed)
    return f"FAIL: {len(failed)} of the rates fell by more than {fail_below:g}%: {named}"


def render_compare(
    a: RunResult | Compared,
    b: RunResult | Compared,
    name_a: str,
    name_b: str,
    fail_below: float | None = None,
) -> str:
    lines = [
        f"A: {printable(name_a)}  {_describe(a)}",
        f"B: {printable(name_b)}  {_describe(b)}",
        "",
    ]
    compared = compare_lines(a, b, fail_below)
    width = max([11, *(len(line.phase) for line in compared)])
    header = f"{'PHASE':<{width}} {'METRIC':<20} {'A':>12} {'B':>12} {'B/A':>8}  {'B IS':<6}  NOTE"
    lines += [header, "=" * len(header)]
    for line in compared:
        lines.append(
            f"{line.phase:<{width}} {line.metric:<20} {line.a:>12} {line.b:>12} "
            f"{line.ratio:>8}  {line.verdict:<6}  {line.note}".rstrip()
        )
    if any(line.noise_unknown for line in compared):
        lines += ["", *_noise_advice(a, b)]
    if fail_below is not None:
        lines += ["", _verdict(compared, fail_below)]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return printable(text).replace("|", "\\|")


def render_compare_markdown(
    a: RunResult | Compared,
    b: RunResult | Compared,
    name_a: str,
    name_b: str,
    fail_below: float | None = None,
) -> str:
    """The comparison as a GitHub-flavoured markdown table (an issue, a CI job summary)."""
    compared = compare_lines(a, b, fail_below)
    lines = [
        f"### aiobench compare: {_cell(name_b)} against {_cell(name_a)}",
        "",
        "| phase | metric | A | B | B/A | B is | note |",
        "|---|---|---:|---:|---:|---|---|",
    ]
    for line in compared:
        note = f"**{line.note}**" if line.failed else line.note
        cells = [line.phase, line.metric, line.a, line.b, line.ratio, line.verdict]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + f" | {_cell(note)} |")
    if fail_below is not None:
        lines += ["", _cell(_verdict(compared, fail_below))]
    return "\n".join(lines) + "\n"


def common_phases(a: RunResult | Compared, b: RunResult | Compared) -> int:
    return len(_pairs(a, b))


EXIT_REGRESSION = 3  # compare --fail-below: a rate fell (1 and 2 mean errors, as elsewhere)
MAX_FAIL_BELOW = 100.0


def compare_command(
    name_a: str,
    name_b: str,
    fail_below: float | None,
    markdown: str | None,
    print_out: Callable[[str], None],
) -> int:
    """``aiobench compare``: load, check, print (and write the markdown); the exit code."""
    from aiobench.errors import ConfigError  # (renderers import nothing of the run)
    from aiobench.render.export import checked_export, write_export
    from aiobench.results.saved import load_compared

    if fail_below is not None and not 0 <= fail_below < MAX_FAIL_BELOW:
        raise ConfigError(f"--fail-below: a percentage from 0 to below 100 (got {fail_below:g})")
    export = None if markdown is None else checked_export("--markdown", markdown)
    a, b = load_compared(name_a), load_compared(name_b)
    if a.kind != b.kind:
        raise ConfigError(
            f"{name_a} is a {a.kind} document and {name_b} a {b.kind} document; compare "
            "two runs or two checks"
        )
    if not common_phases(a, b):
        what = "test" if a.kind == "check" else "phase"
        raise ConfigError(f"{name_a} and {name_b} have no {what} in common")
    print_out(render_compare(a, b, name_a, name_b, fail_below))
    if export is not None:
        failed = write_export(export, render_compare_markdown(a, b, name_a, name_b, fail_below))
        if failed is not None:
            from aiobench.errors import AiobenchError

            raise AiobenchError(failed)
    if fail_below is not None and any(line.failed for line in compare_lines(a, b, fail_below)):
        return EXIT_REGRESSION
    return 0
