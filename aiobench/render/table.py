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


def phase_block(phase: PhaseResult) -> str:
    first, last = phase.first_done, phase.last_done
    return (
        _row(
            phase.name,
            "Elapsed time",
            format_elapsed(first.elapsed_ns),
            format_elapsed(last.elapsed_ns),
        )
        + _row("", "IOPS", first.iops, last.iops)
        + _row("", "Throughput MiB/s", first.bytes_per_s // MIB, last.bytes_per_s // MIB)
        + _row("", "Total MiB", first.bytes // MIB, last.bytes // MIB)
        + latency_rows("IO", phase.io_latency)
        + SEPARATOR
    )


def render_table(phases: list[PhaseResult]) -> str:
    return HEADER + "".join(phase_block(p) for p in phases)
