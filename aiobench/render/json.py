"""The ``--json`` document: the result model as plain data (numbers as numbers); pure."""

from __future__ import annotations

import json
import os
import secrets
from typing import Any

from aiobench.results import SCHEMA_VERSION, PhaseResult, RunResult, Totals
from aiobench.stats import LatencySummary


def _totals(t: Totals) -> dict[str, int]:
    return {
        "elapsed_ns": t.elapsed_ns,
        "ops": t.ops,
        "bytes": t.bytes,
        "entries": t.entries,
        "iops": t.iops,
        "bytes_per_s": t.bytes_per_s,
        "entries_per_s": t.entries_per_s,
    }


def percent_key(point: float) -> str:
    return f"{point:g}"


def latency_dict(lat: LatencySummary) -> dict[str, Any]:
    return {
        "count": lat.count,
        "min_ns": lat.min_ns,
        "max_ns": lat.max_ns,
        "mean_ns": round(lat.mean_ns, 1),
        "stddev_ns": round(lat.stddev_ns, 1),
        "percentiles_ns": {percent_key(p): v for p, v in lat.percentiles_ns.items()},
        "hdr_histogram": lat.hdr,
    }


def phase_dict(phase: PhaseResult) -> dict[str, Any]:
    latency = {"io": latency_dict(phase.io_latency)}
    if phase.entry_latency is not None:
        latency["entries"] = latency_dict(phase.entry_latency)
    return {
        "phase": phase.name,
        "first_done": _totals(phase.first_done),
        "last_done": _totals(phase.last_done),
        "latency": latency,
        "peak_inflight_ops": phase.peak_inflight_ops,
        "time_limited": phase.time_limited,
        "interrupted": phase.interrupted,
        "threads": [
            {
                "rank": t.rank,
                "ops": t.ops,
                "bytes": t.bytes,
                "entries": t.entries,
                "elapsed_ns": t.elapsed_ns,
            }
            for t in phase.threads
        ],
    }


def result_dict(result: RunResult) -> dict[str, Any]:
    out: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "meta": result.meta}
    out["phases"] = [phase_dict(p) for p in result.phases]
    out["interrupted"] = result.interrupted
    out["error"] = result.error
    return out


def dumps(result: RunResult) -> str:
    return json.dumps(result_dict(result), indent=2) + "\n"


def write_atomically(path: str, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file and rename (never a half file).

    The temporary file is created with mode 0666 less the umask, like any new file.
    """
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".aiobench-{os.getpid()}-{secrets.token_hex(4)}.json")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
