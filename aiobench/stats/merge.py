"""Merging the phase results of the ranks of an MPI run into one result for the job; pure.

Under MPI every rank runs the same phases on its own share of the threads and measures them
on its own. Rank 0 gathers the parts and folds them here into the one :class:`PhaseResult`
the renderers show: counters add up, elapsed times take the slowest rank, latency
histograms merge exactly, and CPU load is averaged per host (a rank's figure is a share of
its whole host). No MPI, no disk, no event loop.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from aiobench.results.model import (
    HostTotals,
    IntervalStats,
    OpKindResult,
    PhaseResult,
    RankTotals,
    TargetTotals,
    ThreadTotals,
    Totals,
    endpoint_totals,
)
from aiobench.stats.recorders import LatencySummary, merge_latency


@dataclass(frozen=True, slots=True)
class RankPart:
    """One MPI rank's share of a phase."""

    rank: int  # MPI rank (0-based)
    host: str  # host name of that rank
    phase: PhaseResult  # what this rank measured on its own; its threads carry global ranks
    # This rank's counters at the job's first-done instant; elapsed_ns is that instant
    # (equal in every part).
    first_done: Totals


def merge_phase(parts: Sequence[RankPart]) -> PhaseResult:
    """The whole job's result of one phase from every rank's part (in any order)."""
    if not parts:
        raise ValueError("no rank parts to merge")
    ordered = sorted(parts, key=lambda p: p.rank)
    lead = ordered[0].phase
    for part in ordered[1:]:
        assert part.phase.name == lead.name, (part.rank, part.phase.name, lead.name)
        assert part.phase.iteration == lead.iteration, (part.rank, part.phase.iteration)
    hosts = [p.host for p in ordered]
    phases = [p.phase for p in ordered]
    ranks = _rank_totals(ordered)
    threads = _merge_threads(phases)
    return PhaseResult(
        name=lead.name,
        start_time=lead.start_time,
        first_done=_merge_totals(hosts, [p.first_done for p in ordered]),
        last_done=_merge_totals(hosts, [p.last_done for p in phases]),
        io_latency=_merge_required([p.io_latency for p in phases]),
        entry_latency=merge_latency([p.entry_latency for p in phases]),
        sched_latency=merge_latency([p.sched_latency for p in phases]),
        rwmix_pct=lead.rwmix_pct,
        read_latency=merge_latency([p.read_latency for p in phases]),
        write_latency=merge_latency([p.write_latency for p in phases]),
        ttfb_latency=merge_latency([p.ttfb_latency for p in phases]),
        peak_inflight_ops=sum(p.peak_inflight_ops for p in phases),
        # Every rank's operations are in flight at once: the job's mean is their sum.
        mean_inflight_ops=sum(p.mean_inflight_ops for p in phases),
        loop_cpu_ns=sum(p.loop_cpu_ns for p in phases),  # one event loop per rank
        client_cpu_pct=max(p.client_cpu_pct for p in phases),  # the rank nearest its limit
        startup_ns=max(p.startup_ns for p in phases),  # the job starts once all are ready
        threads=threads,
        targets=_merge_targets(phases),
        intervals=_merge_intervals(ordered),
        time_limited=any(p.time_limited for p in phases),
        interrupted=any(p.interrupted for p in phases),
        iteration=lead.iteration,
        iterations=lead.iterations,
        ranks=ranks,
        hosts=_host_totals(ranks),
        endpoints=endpoint_totals(threads, [e.endpoint for e in lead.endpoints]),
        op_kinds=_merge_op_kinds(phases),
    )


def _merge_op_kinds(phases: Sequence[PhaseResult]) -> tuple[OpKindResult, ...]:
    """A MIXED phase's kinds over every rank: counts added, latencies merged."""
    names = list(dict.fromkeys(k.op for p in phases for k in p.op_kinds))
    out = []
    for name in names:
        kinds = [k for p in phases for k in p.op_kinds if k.op == name]
        out.append(
            OpKindResult(
                op=name,
                ops=sum(k.ops for k in kinds),
                bytes=sum(k.bytes for k in kinds),
                latency=_merge_required([k.latency for k in kinds]),
                ttfb=merge_latency([k.ttfb for k in kinds]),
            )
        )
    return tuple(out)


def _job_cpu_percent(samples: Iterable[tuple[str, int]]) -> int:
    """The job's CPU load from (host, rank's CPU %) pairs: per host summed, then averaged.

    A rank's figure is its process's CPU time over all cores of its host, so the ranks of a
    host add up to that host's load (at most 100); the job's load is the floored mean of
    the hosts' loads.
    """
    per_host: dict[str, int] = {}
    for host, cpu in samples:
        per_host[host] = per_host.get(host, 0) + cpu
    if not per_host:
        return 0
    return sum(min(100, cpu) for cpu in per_host.values()) // len(per_host)


def _merge_totals(hosts: Sequence[str], totals: Sequence[Totals]) -> Totals:
    """Counters of all ranks at one instant (per rank, in ``hosts`` order), slowest time."""
    return Totals(
        elapsed_ns=max(t.elapsed_ns for t in totals),
        ops=sum(t.ops for t in totals),
        bytes=sum(t.bytes for t in totals),
        entries=sum(t.entries for t in totals),
        cpu_percent=_job_cpu_percent(zip(hosts, (t.cpu_percent for t in totals), strict=True)),
        read_ops=sum(t.read_ops for t in totals),
        read_bytes=sum(t.read_bytes for t in totals),
    )


def _merge_required(summaries: Sequence[LatencySummary]) -> LatencySummary:
    """:func:`merge_latency` of summaries that are never None (so neither is the result)."""
    merged = merge_latency(summaries)
    if merged is None:
        raise ValueError("no latency summaries to merge")
    return merged


def _merge_threads(phases: Sequence[PhaseResult]) -> tuple[ThreadTotals, ...]:
    """Every rank's threads (they carry global thread ranks), in thread rank order."""
    return tuple(sorted((t for p in phases for t in p.threads), key=lambda t: t.rank))


def _sums(group: Sequence[TargetTotals] | Sequence[RankTotals]) -> dict[str, int]:
    """``group``'s counters added up, over the slowest of them."""
    return {
        "ops": sum(t.ops for t in group),
        "bytes": sum(t.bytes for t in group),
        "entries": sum(t.entries for t in group),
        "elapsed_ns": max(t.elapsed_ns for t in group),
    }


def _merge_targets(phases: Sequence[PhaseResult]) -> tuple[TargetTotals, ...]:
    """Per target index, what all ranks did there; paths as the lowest rank names them."""
    by_index: dict[int, list[TargetTotals]] = {}
    for phase in phases:  # in rank order, so a group's first row is the lowest rank's
        for target in phase.targets:
            by_index.setdefault(target.index, []).append(target)
    return tuple(
        TargetTotals(index=index, path=group[0].path, **_sums(group))
        for index, group in sorted(by_index.items())
    )


def _rank_totals(ordered: Sequence[RankPart]) -> tuple[RankTotals, ...]:
    """One row per rank; no elapsed time without work."""
    rows = []
    for part in ordered:
        done = part.phase.last_done
        worked = bool(done.ops or done.entries)
        rows.append(
            RankTotals(
                rank=part.rank,
                host=part.host,
                ops=done.ops,
                bytes=done.bytes,
                entries=done.entries,
                elapsed_ns=done.elapsed_ns if worked else 0,
            )
        )
    return tuple(rows)


def _host_totals(ranks: Sequence[RankTotals]) -> tuple[HostTotals, ...]:
    """One row per host, numbered in order of the host's lowest rank, over its slowest rank."""
    by_host: dict[str, list[RankTotals]] = {}
    for row in sorted(ranks, key=lambda r: r.rank):
        by_host.setdefault(row.host, []).append(row)
    return tuple(
        HostTotals(index=number, host=host, **_sums(group))
        for number, (host, group) in enumerate(by_host.items())
    )


def _merge_intervals(ordered: Sequence[RankPart]) -> tuple[IntervalStats, ...]:
    """The job's interval series, index by index over the ranks' series.

    A rank missing an index (its phase ended earlier) adds nothing to that interval's own
    counters and threads but still its latest cumulative counters. Ranks without any
    interval record (nothing ran there) take no part.
    """
    series = [(p.host, {i.index: i for i in p.phase.intervals}) for p in ordered]
    series = [(host, records) for host, records in series if records]
    if not series:
        return ()
    latest: list[IntervalStats | None] = [None] * len(series)
    out = []
    for index in sorted({k for _, records in series for k in records}):
        present: list[tuple[str, IntervalStats]] = []
        for n, (host, records) in enumerate(series):
            record = records.get(index)
            if record is not None:
                latest[n] = record
                present.append((host, record))
        out.append(_merge_interval(index, present, latest))
    return tuple(out)


def _merge_interval(
    index: int,
    present: Sequence[tuple[str, IntervalStats]],
    latest: Sequence[IntervalStats | None],
) -> IntervalStats:
    """Interval ``index`` of the job from the ranks having it (``present``, with hosts) and
    every rank's latest record up to it (``latest``; None: none yet) for the cumulative
    counters."""
    records = [r for _, r in present]
    carried = [r for r in latest if r is not None]
    return IntervalStats(
        index=index,
        start_ns=min(r.start_ns for r in records),
        end_ns=max(r.end_ns for r in records),
        ops=sum(r.ops for r in records),
        bytes=sum(r.bytes for r in records),
        entries=sum(r.entries for r in records),
        done_ops=sum(r.done_ops for r in carried),
        done_bytes=sum(r.done_bytes for r in carried),
        done_entries=sum(r.done_entries for r in carried),
        done_percent=sum(r.done_percent for r in carried) // len(latest),
        active_threads=sum(r.active_threads for r in records),
        cpu_percent=_job_cpu_percent((host, r.cpu_percent) for host, r in present),
        io_latency=_merge_required([r.io_latency for r in records]),
        entry_latency=merge_latency([r.entry_latency for r in records]),
    )
