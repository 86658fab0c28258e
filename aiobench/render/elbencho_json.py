"""``--jsonfile``: elbencho's own per-phase JSON line, key for key as elbencho writes it
(every value a string, as its property-tree writer makes them); pure.

aiobench's richer records (numbers as numbers, ns, percentiles, intervals) are the
``--json`` document and the ``--livejson`` lines; this file is for pipelines that parse
elbencho's. Which keys appear follows elbencho: rates and totals only of what the phase
did (entries, operations, bytes), ``rwmix_read`` subtrees in a mixed phase, ``latency``
only with ``--lat`` (and its ``histogram`` with ``--lathisto``).
"""

from __future__ import annotations

import datetime
import json
import uuid
from typing import Any

from aiobench import __version__
from aiobench.render.csv import elbencho_date, host_count
from aiobench.render.table import HISTO_PER_OCTAVE, _histo_label
from aiobench.results.model import MixPart, PhaseResult, Totals
from aiobench.stats.recorders import LatencySummary
from aiobench.units import NS_PER_MS, NS_PER_US


def _flag(on: object) -> str:
    return "true" if on else "false"


def _config(meta: dict[str, Any]) -> dict[str, str]:
    """elbencho's ``config`` subtree of a run's metadata."""
    cfg: dict[str, Any] = meta["config"]
    path_type = str(meta["path_type"])
    sizes = meta.get("sizes_bytes") or [0]
    out = {
        "path_type": path_type,
        "paths": str(len(meta["paths"])),
        "hosts": str(host_count(meta)),
        "threads": str(cfg["threads"]),
    }
    if path_type == "dir":
        out["dirs"] = str(1 if cfg.get("dirs") is None else cfg["dirs"])
        out["files"] = str(1 if cfg.get("files") is None else cfg["files"])
    out |= {
        "file_size": str(sizes[0]),
        "block_size": str(meta["block_size_bytes"]),
        "direct_io": _flag(cfg.get("direct")),
        "random_offsets": _flag(cfg.get("rand")),
    }
    if cfg.get("rand"):
        out["random_aligned"] = _flag(not cfg.get("norandalign"))
    out["io_depth"] = str(cfg["iodepth"])
    if isinstance(meta.get("mpi"), dict):  # elbencho: with --hosts
        out["shared_service_paths"] = _flag(not cfg.get("nosvcshare"))
    if path_type not in ("blockdev", "s3"):
        out["truncate_files"] = _flag(cfg.get("trunc"))
    out["version"] = str(meta.get("aiobench_version", __version__))
    # elbencho's form: each word in double quotes and a blank after it, commas as blanks.
    words = "".join(f'"{word}" ' for word in meta.get("command", []))
    out["command"] = words.replace(",", " ")
    return out


def _rates(totals: Totals | MixPart, of: Totals | MixPart) -> dict[str, str]:
    """Per-second figures of ``totals``, each where the phase (``of``, its LAST DONE) did
    that kind of work."""
    out = {}
    if of.entries:
        out["entries/s"] = str(totals.entries_per_s)
    if of.ops:
        out["iops"] = str(totals.iops)
    if of.bytes:
        out["bytes/s"] = str(totals.bytes_per_s)
    return out


def _counts(totals: Totals | MixPart, of: Totals | MixPart) -> dict[str, str]:
    out = {}
    if of.entries:
        out["entries"] = str(totals.entries)
    if of.bytes:
        out["bytes"] = str(totals.bytes)
    return out


def _done(totals: Totals | MixPart, of: Totals | MixPart) -> dict[str, Any]:
    return {
        "elapsed_time_ms": str(totals.elapsed_ns // NS_PER_MS),
        **_rates(totals, of),
        **_counts(totals, of),
    }


def _min_avg_max(lat: LatencySummary | None) -> dict[str, Any]:
    if lat is None or not lat.count:
        return {}
    return {
        "min_us": str(int(lat.min_ns) // NS_PER_US),
        "avg_us": str(int(lat.mean_ns) // NS_PER_US),
        "max_us": str(int(lat.max_ns) // NS_PER_US),
    }


def _histogram(lat: LatencySummary | None) -> dict[str, Any] | None:
    """elbencho's ``{"buckets": [{"range": "45-54us", "count": "135"}, ...]}``."""
    if lat is None or not lat.count:
        return None
    buckets = [
        {"range": f"{_histo_label(k - 1)}-{_histo_label(k)}us", "count": str(n)}
        for k, n in sorted(lat.log_buckets(HISTO_PER_OCTAVE).items())
    ]
    return {"buckets": buckets}


def _latency(phase: PhaseResult, cfg: dict[str, Any]) -> dict[str, Any]:
    """elbencho's ``last_done.latency``: ``entries`` and ``IO`` min/avg/max (``--lat``),
    each with its ``rwmix_read`` part, and their ``histogram`` (``--lathisto``)."""
    mixed = phase.rwmix_pct is not None
    io = (phase.write_latency or phase.io_latency) if mixed else phase.io_latency
    parts = {
        "entries": (phase.entry_latency, None),
        "IO": (io, phase.read_latency if mixed else None),
    }
    out: dict[str, Any] = {}
    for key, (main, read) in parts.items():
        tree: dict[str, Any] = _min_avg_max(main) if cfg.get("lat") else {}
        reads = _min_avg_max(read) if cfg.get("lat") else {}
        if reads:
            tree["rwmix_read"] = reads
        if cfg.get("lathisto"):
            histogram = _histogram(main)
            if histogram is not None:
                read_histogram = _histogram(read)
                if read_histogram is not None:
                    histogram["rwmix_read"] = read_histogram
                tree["histogram"] = histogram
        if tree:
            out[key] = tree
    return out


def elbencho_record(meta: dict[str, Any], phase: PhaseResult) -> str:
    """One ``--jsonfile`` line: ``phase`` as elbencho writes a phase's result."""
    cfg: dict[str, Any] = meta["config"]
    first: Totals | MixPart = phase.first_done
    last: Totals | MixPart = phase.last_done
    if phase.rwmix_pct is not None:  # the main figures are the writes, as in elbencho
        first, last = phase.first_done.writes(), phase.last_done.writes()
    first_done = _done(first, last)
    last_done = _done(last, last)
    if phase.rwmix_pct is not None:
        reads_first, reads_last = phase.first_done.reads(), phase.last_done.reads()
        if reads_last.ops:
            first_done["rwmix_read"] = _done(reads_first, reads_last)
            last_done["rwmix_read"] = _done(reads_last, reads_last)
            for tree in (first_done, last_done):
                tree["rwmix_read"].pop("elapsed_time_ms")
    first_done["cpu%"] = str(phase.first_done.cpu_percent)
    last_done["cpu%"] = str(phase.last_done.cpu_percent)
    latency = _latency(phase, cfg)
    if latency:
        last_done["latency"] = latency
    moment = datetime.datetime.fromisoformat(phase.start_time or str(meta["start_time"]))
    record: dict[str, Any] = {"phase_type": phase.name, "phase_id": str(uuid.uuid4())}
    if meta.get("label"):
        record["label"] = str(meta["label"])
    record |= {
        "iso_start_date": elbencho_date(moment),
        "config": _config(meta),
        "first_done": first_done,
        "last_done": last_done,
    }
    return json.dumps(record, separators=(",", ":")) + "\n"
