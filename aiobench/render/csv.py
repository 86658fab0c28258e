"""CSV rows: ``--csvfile`` (elbencho's 55 columns, percentiles, status) and ``--livecsv``; pure.

Columns keep elbencho's names and order, so existing spreadsheets and scripts read them;
aiobench's own columns come after: the percentiles, then how the phase ended (``status``:
ok, error, interrupted or time_limited; ``error``: the error's message, else empty).
Values are written with Python's csv module (RFC 4180 quoting), and the command is one
shell-quoted string.
"""

from __future__ import annotations

import csv
import datetime
import io
import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from aiobench import __version__
from aiobench.stats.recorders import PERCENTILES, LatencySummary
from aiobench.units import MIB, NS_PER_MS, NS_PER_US

if TYPE_CHECKING:
    from aiobench.results.model import MixPart, PhaseResult, Totals
    from aiobench.results.running import IntervalStats

_FIRST_LAST = ("[first]", "[last]")
_MIN_AVG_MAX = ("[min]", "[avg]", "[max]")


def _pairs(*names: str) -> list[str]:
    return [f"{name} {which}" for name in names for which in _FIRST_LAST]


def _lat(prefix: str) -> list[str]:
    return [f"{prefix} lat us {which}" for which in _MIN_AVG_MAX]


_RESULT_COLUMNS = [
    "ISO date", "label", "path type", "paths", "hosts", "threads", "dirs", "files",
    "file size", "block size", "direct IO", "random", "random aligned", "IO depth",
    "shared paths", "truncate", "operation",
    *_pairs("time ms", "entries/s", "IOPS", "MiB/s", "CPU%", "entries", "MiB"),
    *_lat("Ent"), *_lat("IO"),
    *_pairs(*(f"rwmix read {n}" for n in ("entries/s", "IOPS", "MiB/s", "entries", "MiB"))),
    *_lat("rwmix read Ent"), *_lat("rwmix read IO"),
    "version", "command",
]  # fmt: skip
# elbencho's 55 columns (the tests hold them against elbencho's own CSV), then the
# percentiles of each latency: the header of aiobench before the status columns.
PREVIOUS_RESULT_HEADER = [
    *_RESULT_COLUMNS,
    *(f"IO lat us [p{p:g}]" for p in PERCENTILES),
    *(f"Ent lat us [p{p:g}]" for p in PERCENTILES),
]
RESULT_HEADER = [*PREVIOUS_RESULT_HEADER, "status", "error"]

_LIVE_ELBENCHO = [
    "ISO Date", "Label", "Phase", "RuntimeMS", "Rank", "MixType", "Done%", "DoneBytes",
    "MiB/s", "IOPS", "Entries", "Entries/s", "Lat Ent us", "Lat IO us", "Active", "CPU",
    "Service",
]  # fmt: skip
# Latency over time: each interval's own distribution (elbencho has only the average).
_LIVE_POINTS = ("min", "p50", "p99", "p99.9", "max")
LIVE_HEADER = [
    *_LIVE_ELBENCHO,
    *(f"IO lat us [{p}]" for p in _LIVE_POINTS),
    *(f"Ent lat us [{p}]" for p in _LIVE_POINTS),
]


def elbencho_date(moment: datetime.datetime) -> str:
    """Local time as elbencho prints it: ``2026-11-30T13:31:33.840+0000``."""
    local = moment.astimezone()
    return (
        local.strftime("%Y-%m-%dT%H:%M:%S.")
        + f"{local.microsecond // 1000:03d}"
        + (local.strftime("%z"))
    )


def line(cells: Sequence[object]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(cells)
    return out.getvalue()


def _us(ns: float) -> str:
    """Whole microseconds, truncated, as elbencho's lat columns."""
    return str(int(ns) // NS_PER_US)


def _us_fine(ns: float) -> str:
    return f"{ns / NS_PER_US:.3f}"


def _if(count: int, value: object) -> str:
    return str(value) if count else ""


def host_count(meta: dict[str, Any]) -> int:
    """The distinct hosts of an MPI run (``meta["mpi"]["hosts"]``); 1 without MPI."""
    mpi = meta.get("mpi")
    hosts = mpi.get("hosts") if isinstance(mpi, dict) else None
    return len(set(hosts)) if hosts else 1


def _config_cells(meta: dict[str, Any]) -> list[str]:
    cfg: dict[str, Any] = meta["config"]
    path_type = meta["path_type"]
    dir_mode = path_type == "dir"
    sizes = meta.get("sizes_bytes") or [0]
    return [
        str(meta.get("label", "")).replace(",", " "),
        path_type,
        str(len(meta["paths"])),
        str(host_count(meta)),
        str(cfg["threads"]),
        str(1 if cfg.get("dirs") is None else cfg["dirs"]) if dir_mode else "",
        str(1 if cfg.get("files") is None else cfg["files"]) if dir_mode else "",
        str(sizes[0]),
        str(meta["block_size_bytes"]),
        str(int(cfg.get("direct", False))),
        str(int(cfg.get("rand", False))),
        str(int(not cfg.get("norandalign", False))) if cfg.get("rand") else "",
        str(cfg["iodepth"]),
        "",
        "" if path_type == "blockdev" else "0",
    ]


def _latency_cells(lat: LatencySummary | None) -> list[str]:
    if lat is None or not lat.count:
        return ["", "", ""]
    return [_us(lat.min_ns), _us(lat.mean_ns), _us(lat.max_ns)]


def _percentile_cells(lat: LatencySummary | None) -> list[str]:
    if lat is None or not lat.count:
        return [""] * len(PERCENTILES)
    return [_us_fine(lat.percentiles_ns[p]) for p in PERCENTILES]


def _rwmix_read_cells(phase: PhaseResult) -> list[str]:
    """elbencho's 16 ``rwmix read`` columns; empty unless the phase mixed in reads."""
    first, last = phase.first_done.reads(), phase.last_done.reads()
    return [
        "",  # entries/s: no rwmix in dir mode
        "",
        _if(last.ops, first.iops),
        _if(last.ops, last.iops),
        _if(last.bytes, first.bytes_per_s // MIB),
        _if(last.bytes, last.bytes_per_s // MIB),
        "",  # entries
        "",
        _if(last.bytes, first.bytes // MIB),
        _if(last.bytes, last.bytes // MIB),
        *_latency_cells(None),  # entry latency
        *_latency_cells(phase.read_latency),
    ]


def result_row(meta: dict[str, Any], phase: PhaseResult) -> list[str]:
    """One ``--csvfile`` row for a phase, in :data:`RESULT_HEADER` order.

    In an --rwmixpct phase the main columns hold the writes and the ``rwmix read`` columns
    the reads, as in elbencho.
    """
    first: Totals | MixPart = phase.first_done
    last: Totals | MixPart = phase.last_done
    io_latency = phase.io_latency
    if phase.rwmix_pct is not None:
        first, last = phase.first_done.writes(), phase.last_done.writes()
        io_latency = phase.write_latency or io_latency
    moment = datetime.datetime.fromisoformat(phase.start_time or str(meta["start_time"]))
    row = [
        elbencho_date(moment),
        *_config_cells(meta),
        phase.name,
        str(first.elapsed_ns // NS_PER_MS),
        str(last.elapsed_ns // NS_PER_MS),
        _if(last.entries, first.entries_per_s),
        _if(last.entries, last.entries_per_s),
        _if(last.ops, first.iops),
        _if(last.ops, last.iops),
        _if(last.bytes, first.bytes_per_s // MIB),
        _if(last.bytes, last.bytes_per_s // MIB),
        str(phase.first_done.cpu_percent),
        str(phase.last_done.cpu_percent),
        _if(last.entries, first.entries),
        _if(last.entries, last.entries),
        _if(last.bytes, first.bytes // MIB),
        _if(last.bytes, last.bytes // MIB),
        *_latency_cells(phase.entry_latency),
        *_latency_cells(io_latency),
        *_rwmix_read_cells(phase),
        str(meta.get("aiobench_version", __version__)),
        shlex.join(str(a) for a in meta.get("command", [])),
        *_percentile_cells(io_latency),
        *_percentile_cells(phase.entry_latency),
        phase.status,
        str(phase.error.get("message", "")) if phase.error is not None else "",
    ]
    return row


def _live_latency_cells(lat: LatencySummary | None) -> list[str]:
    if lat is None or not lat.count:
        return [""] * len(_LIVE_POINTS)
    p = lat.percentiles_ns
    return [_us_fine(v) for v in (lat.min_ns, p[50], p[99], p[99.9], lat.max_ns)]


def live_row(label: str, phase: str, iv: IntervalStats, moment: datetime.datetime) -> list[str]:
    """One ``--livecsv`` row: an interval of a phase, in :data:`LIVE_HEADER` order."""
    entries = iv.entry_latency is not None
    ent_avg = _us(iv.entry_latency.mean_ns) if iv.entry_latency is not None else "0"
    return [
        elbencho_date(moment),
        label.replace(",", " "),
        phase,
        str(iv.end_ns // NS_PER_MS),
        "Total",
        "",
        str(iv.done_percent),
        str(iv.done_bytes),
        str(iv.bytes_per_s // MIB),
        str(iv.iops),
        str(iv.done_entries if entries else 0),
        str(iv.entries_per_s if entries else 0),
        ent_avg,
        _us(iv.io_latency.mean_ns),
        str(iv.active_threads),
        str(iv.cpu_percent),
        "",
        *_live_latency_cells(iv.io_latency),
        *_live_latency_cells(iv.entry_latency),
    ]
