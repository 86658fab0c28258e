"""Formatting of figures and the targets table of the Markdown report."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable

from aiobench_bench.common import MIB, Row, Workload, ratio_of


def fmt_figure(w: Workload, value: float) -> str:
    if value != value:
        return "n/a"
    if w.metric == "iops":
        return f"{value / 1e3:,.1f} k IOPS"
    return f"{value / MIB:,.0f} MiB/s"


def fmt_ns(value: float) -> str:
    """A time in ns, in a readable unit."""
    if value != value:
        return "n/a"
    if value < 10:  # (the event loop's CPU per op on the page cache: under 1 ns)
        return f"{value:.2f} ns"
    if value < 1e3:
        return f"{value:.0f} ns"
    if value < 1e6:
        return f"{value / 1e3:.{1 if value < 1e5 else 0}f} µs"
    if value < 1e9:
        return f"{value / 1e6:.{2 if value < 1e7 else 1}f} ms"
    return f"{value / 1e9:.2f} s"


def fmt_pct(value: float) -> str:
    if value != value:
        return "n/a"
    return f"{value:.1%}" if abs(value) < 0.1 else f"{value:.0%}"


def target_row(
    section: str,
    what: str,
    value: float,
    reference: float,
    ref_label: str,
    fmt: Callable[[float], str],
    op: str,
    target: float | None,
    ratio: float | None = None,
) -> Row:
    """One of issue #13's targets: aiobench's figure, the reference's (fio's, a plain loop's,
    aiobench's own at -t 1), their ratio and whether it meets ``op`` ``target`` (``>=`` or
    ``<=``; None: shown without a target). ``ratio`` given: the figures are not a ratio
    (a share), the ratio is that share."""
    ratio = ratio_of(value, reference) if ratio is None else ratio
    met = None
    if target is not None and ratio == ratio:
        met = ratio >= target if op == ">=" else ratio <= target
    return {
        "section": section,
        "what": what,
        "aiobench": value,
        "aiobench_text": fmt(value),
        "reference": reference,
        "reference_label": ref_label,
        "reference_text": fmt(reference),
        "ratio": ratio,
        "op": op,
        "target": target,
        "met": met,
    }


def fmt_met(met: bool | None) -> str:
    return "-" if met is None else ("yes" if met else "**no**")


def fmt_target(op: str, target: float | None, pct: bool = False) -> str:
    if target is None:
        return "-"
    return f"{'≥' if op == '>=' else '≤'} {target:.0%}" if pct else f"{op} {target:.2f}x"


def spread(values: list[float]) -> str:
    values = [v for v in values if v == v]
    if not values:
        return "-"
    med = statistics.median(values)
    lo, hi = min(values), max(values)
    return f"{(hi - lo) / med * 100:.0f}%" if med else "-"


def print_environment(meta: Row) -> None:
    print(f"- Date: {meta['date']}")
    print(f"- Host: {meta['host']}, {meta['kernel']}, {meta['cpus']} CPUs, {meta['memory']}")
    print(
        f"- Tools: aiobench {meta['aiobench_version']} (engine: {meta['aiobench_ioengine']}), "
        f"{meta['fio_version']}, Python {meta['python']}"
    )


def fmt_rate(value: float) -> str:
    return "n/a" if value != value else f"{value / 1e3:,.1f} k/s"


def fmt_ratio(value: float) -> str:
    return "-" if value != value else f"{value:.2f}x"


def fmt_span(w: Workload, median: float, lo: float, hi: float) -> str:
    """A median with its min - max, in the median's unit."""
    scale = 1e3 if w.metric == "iops" else MIB
    digits = 1 if w.metric == "iops" else 0
    return f"{fmt_figure(w, median)} ({lo / scale:,.{digits}f} - {hi / scale:,.{digits}f})"


def fmt_ops(value: float) -> str:
    return "n/a" if value != value else f"{value:,.0f} ops"


def json_safe(value: object) -> object:
    """``value`` with NaN and infinities as None (JSON has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    return value


# The issues whose targets each section measures: the targets' heading names them, so that
# --docs replaces the docs section of the same issues and leaves the others' as they are.
SECTION_ISSUES = {
    "data": (13, 16),
    "metadata": (13, 16),
    "mpi": (13, 16),
    "seed2": (13, 16),
    "ramp": (13, 16),
    "depth": (28,),
    "startup": (28,),
    "s3": (26,),
    "netbench": (24,),
}


def targets_heading(sections: list[str]) -> str:
    """``Targets (issue #28)``, ``Targets (issues #13 and #16)``: the sections' issues."""
    issues = sorted({n for s in sections for n in SECTION_ISSUES.get(s, ())})
    if not issues:
        return "Targets"
    names = [f"#{n}" for n in issues]
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    return f"Targets ({'issue' if len(names) == 1 else 'issues'} {listed})"


def print_targets(targets: list[Row], meta: Row) -> None:
    print(f"## {targets_heading(list(meta['sections']))}")
    print()
    print(
        f"- {meta['date']}, {meta['host']}, {meta['cpus']} CPUs; aiobench "
        f"{meta['aiobench_version']} (engine: {meta['aiobench_ioengine']}); work dir on "
        f"{meta['fs']}; sections: {', '.join(meta['sections']) or 'none'}"
        + ("; **--quick: smoke-test settings, the figures mean little**" if meta["quick"] else "")
    )
    for section, reason in meta["skipped"].items():
        print(f"- {section}: skipped, {reason}")
    print()
    if not targets:
        print("(no target measured)")
        return
    print("| section | target | aiobench | reference | reference figure | ratio | target | met? |")
    print("|---|---|---:|---|---:|---:|---:|:---:|")
    for t in targets:
        pct = t.get("pct", False)
        ratio = fmt_pct(t["ratio"]) if pct else fmt_ratio(t["ratio"])
        print(
            f"| {t['section']} | {t['what']} | {t['aiobench_text']} | {t['reference_label']} "
            f"| {t['reference_text']} | {ratio} | {fmt_target(t['op'], t['target'], pct)} "
            f"| {fmt_met(t['met'])} |"
        )
    met = [t["met"] for t in targets if t["met"] is not None]
    print()
    print(f"{sum(met)} of {len(met)} targets met.")
