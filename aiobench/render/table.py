"""The elbencho result table (FIRST DONE / LAST DONE), byte-compatible in layout; pure.

Names from the run (phases, target paths, hosts) may come from a saved file: each is shown
through :func:`~aiobench.text.printable`, so no control character reaches the terminal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aiobench.iterations import IterationSummary, summarize
from aiobench.results import PhaseResult, TargetTotals, target_report
from aiobench.stats import TABLE_PERCENTILES, LatencySummary
from aiobench.text import printable
from aiobench.units import MIB, NS_PER_MS, format_elapsed, format_latency, format_us

HEADER = (
    "OPERATION   RESULT TYPE         FIRST DONE   LAST DONE\n"
    "=========== ================    ==========   =========\n"
)
SEPARATOR = "---\n"


def _row(op: str, name: str, first: object, last: object) -> str:
    return f"{op:<11} {name:<17}: {first!s:>11} {last!s:>11}\n"


def _wide_row(name: str, text: str) -> str:
    return f"{'':<11} {name:<17}: {text}\n"


def latency_rows(prefix: str, lat: LatencySummary) -> str:
    """``IO latency : [ min=… avg=… max=… ]`` and ``IO lat % us : [ 50%<=… … ]``."""
    if lat.count == 0:
        return ""
    minmax = (
        f"[ min={format_latency(lat.min_ns)} avg={format_latency(lat.mean_ns)} "
        f"max={format_latency(lat.max_ns)} ]"
    )
    points = " ".join(f"{p:g}%<={format_us(lat.percentiles_ns[p])}" for p in TABLE_PERCENTILES)
    return _wide_row(f"{prefix} latency", minmax) + _wide_row(f"{prefix} lat % us", f"[ {points} ]")


def entry_label(phase: PhaseResult) -> str:
    """``Dirs`` for MKDIRS/RMDIRS, ``Files`` for the file phases of dir mode."""
    return _entry_label(phase.name)


def _entry_label(name: str) -> str:
    return "Dirs" if name in ("MKDIRS", "RMDIRS") else "Files"


def _rwmix_rows(phase: PhaseResult) -> str:
    """elbencho's rows of an --rwmixpct phase: write, read and total apart."""
    first, last = phase.first_done, phase.last_done
    parts = (
        ("write", first.writes(), last.writes()),
        ("read", first.reads(), last.reads()),
        ("total", first, last),
    )
    out = "".join(_row("", f"IOPS {name}", a.iops, b.iops) for name, a, b in parts)
    out += "".join(
        _row("", f"MiB/s {name}", a.bytes_per_s // MIB, b.bytes_per_s // MIB)
        for name, a, b in parts
    )
    out += "".join(
        _row("", f"MiB {name}", a.bytes // MIB, b.bytes // MIB) for name, a, b in parts[:2]
    )
    for prefix, lat in (("IO wr", phase.write_latency), ("IO rd", phase.read_latency)):
        if lat is not None:
            out += latency_rows(prefix, lat)
    return out


def phase_block(phase: PhaseResult) -> str:
    """One phase; rows without a count behind them are left out, as elbencho does."""
    first, last = phase.first_done, phase.last_done
    entries = entry_label(phase)
    out = _row(
        printable(phase.name),
        "Elapsed time",
        format_elapsed(first.elapsed_ns),
        format_elapsed(last.elapsed_ns),
    )
    if phase.rwmix_pct is not None:
        return out + _rwmix_rows(phase) + SEPARATOR
    if last.entries:
        out += _row("", f"{entries}/s", first.entries_per_s, last.entries_per_s)
    # In dir mode a file of one block makes IOPS equal to Files/s: shown once.
    if last.ops and last.ops != last.entries:
        out += _row("", "IOPS", first.iops, last.iops)
    if last.bytes:
        out += _row("", "Throughput MiB/s", first.bytes_per_s // MIB, last.bytes_per_s // MIB)
        out += _row("", "Total MiB", first.bytes // MIB, last.bytes // MIB)
    if last.entries:
        out += _row("", f"{entries} total", first.entries, last.entries)
    if phase.entry_latency is not None:
        out += latency_rows(entries, phase.entry_latency)
    out += latency_rows("IO", phase.io_latency)
    if phase.sched_latency is not None:
        # Under a rate limit: from each operation's scheduled start (coordinated omission).
        out += latency_rows("Sched", phase.sched_latency)
    return out + SEPARATOR


def _target_columns(phase: PhaseResult) -> list[tuple[str, str]]:
    """(title, rate key) of the per-target columns this phase has counts for."""
    last = phase.last_done
    columns = []
    if last.bytes:
        columns.append(("MiB/s", "bytes_per_s"))
    if last.entries:
        columns.append((f"{entry_label(phase)}/s", "entries_per_s"))
    if last.ops:
        columns.append(("IOPS", "iops"))
    return columns


def _target_row(name: str, rates: dict[str, int], columns: list[tuple[str, str]], tail: str) -> str:
    cells = "".join(
        f" {rates[key] // MIB if key == 'bytes_per_s' else rates[key]:>10}" for _, key in columns
    )
    return f"{'':<11} {name:<17}:{cells}{tail}\n".rstrip() + "\n"


@dataclass(frozen=True, slots=True)
class _Breakdown:
    """How a report block is titled and how it names its members."""

    title: str  # after the phase name: ``per target``
    column: str  # the last column's heading
    name: Callable[[TargetTotals], str]  # how Min and Max name the member


_PER_TARGET = _Breakdown("per target", "Target", lambda t: f"#{t.index} {printable(t.path)}")
_PER_RANK = _Breakdown("per rank", "Rank", lambda t: f"rank {t.index} {printable(t.path)}")
_PER_HOST = _Breakdown("per host", "Host", lambda t: printable(t.path))


def _report_block(phase: PhaseResult, kind: _Breakdown, members: tuple[TargetTotals, ...]) -> str:
    """Min, max, average, aggregate and one row per member; '' when no member had work."""
    report = target_report(members)
    if report is None:
        return ""
    columns = _target_columns(phase)

    def elapsed(t: TargetTotals) -> str:
        return f"  {format_elapsed(t.elapsed_ns):>9}  "

    titles = "".join(f" {title:>10}" for title, _ in columns)
    out = f"{printable(phase.name):<11} {kind.title:<17}:{titles}  {'Elapsed':>9}  {kind.column}\n"
    for label, t in (("Min", report.slowest), ("Max", report.fastest)):
        out += _target_row(label, t.rates(), columns, elapsed(t) + kind.name(t))
    out += _target_row("Average", report.average, columns, "")
    out += _target_row("Aggregate", report.aggregate, columns, "")
    for t in members:
        out += _target_row(f"#{t.index}", t.rates(), columns, elapsed(t) + printable(t.path))
    return out + SEPARATOR


def target_block(phase: PhaseResult) -> str:
    """beegfs-ctl --storagebench's report for one phase: min, max, average, aggregate, list.

    Each target's rates are over its slowest thread; min and max are picked by throughput
    (else entries/s, else IOPS) and name the target. Empty when no target had work.
    """
    return _report_block(phase, _PER_TARGET, phase.targets)


def rank_block(phase: PhaseResult) -> str:
    """The same report over MPI ranks: min and max name the rank and its host."""
    return _report_block(phase, _PER_RANK, phase.ranks)


def host_block(phase: PhaseResult) -> str:
    """The same report over the hosts of an MPI run: min and max name the host."""
    return _report_block(phase, _PER_HOST, phase.hosts)


def phase_text(phase: PhaseResult, pertarget: bool) -> str:
    """A phase's block, then its reports: per target if asked, per rank and host under MPI.

    The per-host report is left out when every rank ran on one host.
    """
    out = phase_block(phase) + (target_block(phase) if pertarget else "")
    if phase.ranks:
        out += rank_block(phase)
    if len(phase.hosts) >= 2:
        out += host_block(phase)
    return out


def _summary_row(op: str, name: str, cells: tuple[object, ...]) -> str:
    return f"{op:<11} {name:<17}:" + "".join(f" {c!s:>11}" for c in cells) + "\n"


def summary_block(summary: IterationSummary) -> str:
    """One phase over the iterations: min, max, mean and population stddev of each rate.

    Rows follow the phase block: the elapsed time, then only the rates with counts behind
    them; every figure is truncated to a whole number as the block's rates are (MiB/s is
    bytes/s // 2^20, so min and max are exactly the smallest and largest block's figure).
    """
    entries = _entry_label(summary.phase)
    title = f"{printable(summary.phase)} over {summary.iterations}"
    out = _summary_row("SUMMARY", title, ("min", "max", "mean", "stddev"))
    out += _summary_row("", "Elapsed ms", summary.spread("elapsed_ns").floored(NS_PER_MS))
    if summary.has("entries"):
        out += _summary_row("", f"{entries}/s", summary.spread("entries_per_s").floored())
    # As in the blocks: IOPS equal to Files/s in every iteration is shown once.
    if any(b.last_done.ops and b.last_done.ops != b.last_done.entries for b in summary.blocks):
        out += _summary_row("", "IOPS", summary.spread("iops").floored())
    if summary.has("bytes"):
        out += _summary_row("", "Throughput MiB/s", summary.spread("bytes_per_s").floored(MIB))
    return out + SEPARATOR


def summary_text(phases: list[PhaseResult]) -> str:
    """The ``-i N`` summary blocks that follow the last block; '' for a single iteration."""
    return "".join(summary_block(s) for s in summarize(phases))


def render_table(phases: list[PhaseResult], pertarget: bool = False) -> str:
    return HEADER + "".join(phase_text(p, pertarget) for p in phases) + summary_text(phases)
