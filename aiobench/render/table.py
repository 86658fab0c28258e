"""The elbencho result table (FIRST DONE / LAST DONE), byte-compatible in layout; pure."""

from __future__ import annotations

from aiobench.results import PhaseResult
from aiobench.stats import TABLE_PERCENTILES, LatencySummary
from aiobench.units import MIB, format_elapsed, format_latency, format_us

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
    return "Dirs" if phase.name in ("MKDIRS", "RMDIRS") else "Files"


def phase_block(phase: PhaseResult) -> str:
    """One phase; rows without a count behind them are left out, as elbencho does."""
    first, last = phase.first_done, phase.last_done
    entries = entry_label(phase)
    out = _row(
        phase.name,
        "Elapsed time",
        format_elapsed(first.elapsed_ns),
        format_elapsed(last.elapsed_ns),
    )
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
    return out + latency_rows("IO", phase.io_latency) + SEPARATOR


def render_table(phases: list[PhaseResult]) -> str:
    return HEADER + "".join(phase_block(p) for p in phases)
