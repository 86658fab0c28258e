"""Saved runs: a ``--json`` document read back into the result model (``show``, ``compare``).

Reads schema versions 1 and 2; what version 1 lacks (intervals, per-target counts, CPU)
comes back empty, as do the per-rank and per-host counts of a run without MPI, and a
document without ``iteration`` keys is one iteration. The
``iterations_summary`` is not read back: it is recomputed from the phases as the run
computed it, so ``show`` prints the very summary the run printed. A file that is not such
a document is a usage error naming the file.
"""

from __future__ import annotations

import json
from typing import Any

from aiobench.errors import ConfigError
from aiobench.results import (
    SCHEMA_VERSION,
    IntervalStats,
    PhaseResult,
    RunResult,
    TargetTotals,
    ThreadTotals,
    Totals,
)
from aiobench.stats import LatencySummary

READABLE_VERSIONS = (1, 2, SCHEMA_VERSION)


def load_document(path: str) -> dict[str, Any]:
    """The parsed JSON of a saved run, or :class:`ConfigError` naming ``path``."""
    try:
        with open(path, encoding="utf-8") as handle:
            doc = json.load(handle)
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not a JSON document ({exc})") from None
    if not isinstance(doc, dict) or "phases" not in doc:
        raise ConfigError(f"{path}: not an aiobench result document (written by --json)")
    version = doc.get("schema_version")
    if version not in READABLE_VERSIONS:
        raise ConfigError(
            f"{path}: schema_version {version!r} is not one this aiobench reads "
            f"({', '.join(map(str, READABLE_VERSIONS))})"
        )
    return doc


def load_run(path: str) -> RunResult:
    doc = load_document(path)
    try:
        config = doc["meta"].get("config") or {}
        iterations = int(config.get("iterations", 1))
        return RunResult(
            meta=doc["meta"],
            phases=[_phase(p, iterations) for p in doc["phases"]],
            interrupted=bool(doc.get("interrupted", False)),
            error=doc.get("error"),
        )
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{path}: not a complete aiobench result ({exc!r})") from None


def latency_summary(d: dict[str, Any]) -> LatencySummary:
    return LatencySummary(
        count=d["count"],
        min_ns=d["min_ns"],
        max_ns=d["max_ns"],
        mean_ns=d["mean_ns"],
        stddev_ns=d["stddev_ns"],
        percentiles_ns={float(k): v for k, v in d["percentiles_ns"].items()},
        hdr=d["hdr_histogram"],
    )


def _totals(d: dict[str, Any]) -> Totals:
    reads = d.get("read", {})
    return Totals(
        elapsed_ns=d["elapsed_ns"],
        ops=d["ops"],
        bytes=d["bytes"],
        entries=d.get("entries", 0),
        cpu_percent=d.get("cpu_percent", 0),
        read_ops=reads.get("ops", 0),
        read_bytes=reads.get("bytes", 0),
    )


def _optional_latency(latency: dict[str, Any], key: str) -> LatencySummary | None:
    return latency_summary(latency[key]) if key in latency else None


def _interval(d: dict[str, Any]) -> IntervalStats:
    latency = d["latency"]
    return IntervalStats(
        index=d["index"],
        start_ns=d["start_ns"],
        end_ns=d["end_ns"],
        ops=d["ops"],
        bytes=d["bytes"],
        entries=d["entries"],
        done_ops=d["done_ops"],
        done_bytes=d["done_bytes"],
        done_entries=d["done_entries"],
        done_percent=d["done_percent"],
        active_threads=d["active_threads"],
        cpu_percent=d["cpu_percent"],
        io_latency=latency_summary(latency["io"]),
        entry_latency=_optional_latency(latency, "entries"),
    )


def _members(
    report: dict[str, Any] | None, members: str, index: str, path: str
) -> tuple[TargetTotals, ...]:
    """The list of a per_target/per_rank/per_host report; () when the report is absent."""
    return tuple(
        TargetTotals(
            index=t[index],
            path=t[path],
            ops=t["ops"],
            bytes=t["bytes"],
            entries=t["entries"],
            elapsed_ns=t["elapsed_ns"],
        )
        for t in (report or {}).get(members, [])
    )


def _phase(d: dict[str, Any], iterations: int) -> PhaseResult:
    latency = d["latency"]
    return PhaseResult(
        name=d["phase"],
        start_time=d.get("start_time", ""),
        first_done=_totals(d["first_done"]),
        last_done=_totals(d["last_done"]),
        io_latency=latency_summary(latency["io"]),
        entry_latency=_optional_latency(latency, "entries"),
        sched_latency=_optional_latency(latency, "sched"),
        rwmix_pct=d.get("rwmix_read_pct"),
        read_latency=_optional_latency(latency, "read"),
        write_latency=_optional_latency(latency, "write"),
        peak_inflight_ops=d["peak_inflight_ops"],
        threads=tuple(
            ThreadTotals(
                rank=t["rank"],
                ops=t["ops"],
                bytes=t["bytes"],
                entries=t.get("entries", 0),
                elapsed_ns=t["elapsed_ns"],
            )
            for t in d["threads"]
        ),
        targets=_members(d.get("per_target"), "targets", "index", "path"),
        intervals=tuple(_interval(iv) for iv in d.get("intervals", [])),
        time_limited=d["time_limited"],
        interrupted=d["interrupted"],
        iteration=d.get("iteration", 0),
        iterations=iterations,
        ranks=_members(d.get("per_rank"), "ranks", "rank", "host"),
        hosts=_members(d.get("per_host"), "hosts", "index", "host"),
        # Version 3: the error that ended the phase (its status follows from it and the
        # flags above); a version-2 phase has none of its own.
        error=d.get("error"),
    )
