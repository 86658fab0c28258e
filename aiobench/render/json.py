"""The ``--json`` document: the result model as plain data (numbers as numbers); pure."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from aiobench.iterations import SUMMARY_METRICS, IterationSummary, Spread, summarize
from aiobench.results import (
    SCHEMA_VERSION,
    HostTotals,
    IntervalStats,
    MemberT,
    PhaseResult,
    RankTotals,
    RunResult,
    TargetTotals,
    Totals,
    target_report,
)
from aiobench.stats import LatencySummary


def _totals(t: Totals, mixed: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "elapsed_ns": t.elapsed_ns,
        "ops": t.ops,
        "bytes": t.bytes,
        "entries": t.entries,
        "iops": t.iops,
        "bytes_per_s": t.bytes_per_s,
        "entries_per_s": t.entries_per_s,
        "cpu_percent": t.cpu_percent,
    }
    if mixed:
        for name, part in (("read", t.reads()), ("write", t.writes())):
            out[name] = {
                "ops": part.ops,
                "bytes": part.bytes,
                "iops": part.iops,
                "bytes_per_s": part.bytes_per_s,
            }
    return out


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


def _latencies(io: LatencySummary, **more: LatencySummary | None) -> dict[str, Any]:
    out = {"io": latency_dict(io)}
    out.update((name, latency_dict(lat)) for name, lat in more.items() if lat is not None)
    return out


def interval_dict(iv: IntervalStats) -> dict[str, Any]:
    return {
        "index": iv.index,
        "start_ns": iv.start_ns,
        "end_ns": iv.end_ns,
        "ops": iv.ops,
        "bytes": iv.bytes,
        "entries": iv.entries,
        "iops": iv.iops,
        "bytes_per_s": iv.bytes_per_s,
        "entries_per_s": iv.entries_per_s,
        "done_ops": iv.done_ops,
        "done_bytes": iv.done_bytes,
        "done_entries": iv.done_entries,
        "done_percent": iv.done_percent,
        "active_threads": iv.active_threads,
        "cpu_percent": iv.cpu_percent,
        "latency": _latencies(iv.io_latency, entries=iv.entry_latency),
    }


@dataclass(frozen=True, slots=True)
class _Keys:
    """What a report's JSON calls its list and each member's index and path."""

    members: str
    index: str
    path: str


_TARGET_KEYS = _Keys("targets", "index", "path")
_RANK_KEYS = _Keys("ranks", "rank", "host")
_HOST_KEYS = _Keys("hosts", "index", "host")
_Member = TargetTotals | RankTotals | HostTotals


def _member(t: _Member, keys: _Keys) -> dict[str, Any]:
    return {
        keys.index: t.number,
        keys.path: t.path,
        "ops": t.ops,
        "bytes": t.bytes,
        "entries": t.entries,
        "elapsed_ns": t.elapsed_ns,
        **t.rates(),
    }


def _report_dict(members: tuple[MemberT, ...], keys: _Keys) -> dict[str, Any]:
    """Members with min, max, average and aggregate; the summary is null when none worked."""
    report = target_report(members)
    out: dict[str, Any] = {keys.members: [_member(t, keys) for t in members]}
    if report is None:
        return out | dict.fromkeys(("metric", "min", "max", "average", "aggregate"))

    def named(t: MemberT) -> dict[str, Any]:
        return {keys.index: t.number, keys.path: t.path} | t.rates()

    return out | {
        "metric": report.metric,
        "min": named(report.slowest),
        "max": named(report.fastest),
        "average": report.average,
        "aggregate": report.aggregate,
    }


def per_target_dict(phase: PhaseResult) -> dict[str, Any]:
    return _report_dict(phase.targets, _TARGET_KEYS)


def per_rank_dict(phase: PhaseResult) -> dict[str, Any]:
    """Under MPI: each rank (and its host) over its slowest thread."""
    return _report_dict(phase.ranks, _RANK_KEYS)


def per_host_dict(phase: PhaseResult) -> dict[str, Any]:
    """Under MPI: each host (number and name) over its slowest thread."""
    return _report_dict(phase.hosts, _HOST_KEYS)


def phase_dict(phase: PhaseResult) -> dict[str, Any]:
    latency = _latencies(
        phase.io_latency,
        entries=phase.entry_latency,
        sched=phase.sched_latency,
        read=phase.read_latency,
        write=phase.write_latency,
    )
    mixed = phase.rwmix_pct is not None
    out: dict[str, Any] = {
        "phase": phase.name,
        "rwmix_read_pct": phase.rwmix_pct,
        "iteration": phase.iteration,
        "start_time": phase.start_time,
        "first_done": _totals(phase.first_done, mixed),
        "last_done": _totals(phase.last_done, mixed),
        "latency": latency,
        "peak_inflight_ops": phase.peak_inflight_ops,
        "startup_ns": phase.startup_ns,
        "time_limited": phase.time_limited,
        "interrupted": phase.interrupted,
        "status": phase.status,
        "error": phase.error,
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
        "per_target": per_target_dict(phase),
        "intervals": [interval_dict(iv) for iv in phase.intervals],
    }
    if phase.ranks:
        out["per_rank"] = per_rank_dict(phase)
        out["per_host"] = per_host_dict(phase)
    return out


def _spread(s: Spread) -> dict[str, Any]:
    return {"min": s.min, "max": s.max, "mean": round(s.mean, 1), "stddev": round(s.stddev, 1)}


def summary_dict(summary: IterationSummary) -> dict[str, Any]:
    out: dict[str, Any] = {"phase": summary.phase, "iterations": summary.iterations}
    return out | {metric: _spread(summary.spread(metric)) for metric in SUMMARY_METRICS}


def result_dict(result: RunResult) -> dict[str, Any]:
    out: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "meta": result.meta}
    out["phases"] = [phase_dict(p) for p in result.phases]
    out["iterations_summary"] = [summary_dict(s) for s in summarize(result.phases)]
    out["interrupted"] = result.interrupted
    out["error"] = result.error
    return out


def dumps(result: RunResult) -> str:
    return json.dumps(result_dict(result), indent=2) + "\n"


def phase_record(meta: dict[str, Any], phase: PhaseResult, iso_date: str) -> str:
    """One ``--jsonfile`` line: a phase with the run's metadata (NDJSON)."""
    record = {
        "schema_version": SCHEMA_VERSION,
        "record": "phase",
        "iso_date": iso_date,
        "label": meta.get("label", ""),
        "meta": meta,
        "phase": phase_dict(phase),
    }
    return json.dumps(record, separators=(",", ":")) + "\n"


def interval_record(label: str, phase: str, iv: IntervalStats, iso_date: str) -> str:
    """One ``--livejson`` line: an interval of a phase (NDJSON)."""
    record = {
        "schema_version": SCHEMA_VERSION,
        "record": "interval",
        "iso_date": iso_date,
        "label": label,
        "phase": phase,
        **interval_dict(iv),
    }
    return json.dumps(record, separators=(",", ":")) + "\n"
