"""A phase's figures once it is over, and its live progress: pure sums over the slots'
counters and recorders (FIRST DONE, LAST DONE, latency, per thread and per target)."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from aiobench.kinds import PhaseKind, phase_name
from aiobench.plan.dirmode import DirLayout
from aiobench.plan.slots import rwmix_pct
from aiobench.results.model import (
    PhaseResult,
    Progress,
    TargetTotals,
    ThreadTotals,
    Totals,
    endpoint_totals,
)
from aiobench.run.worker import PhaseShared, Slot, Stream
from aiobench.stats.intervals import CpuSample, IntervalSeries, cpu_percent
from aiobench.stats.recorders import LatencyRecorder
from aiobench.units import rate

if TYPE_CHECKING:
    from aiobench.run.phases import RunContext


def active_at(streams: Sequence[Stream], finished: list[int]) -> Callable[[int], int]:
    """Threads with work that had not finished by an instant."""

    def active(instant_ns: int) -> int:
        return sum(
            1
            for stream, end in zip(streams, finished, strict=True)
            if stream.total_ops and (end == 0 or end > instant_ns)
        )

    return active


def progress(
    name: str,
    shared: PhaseShared,
    series: IntervalSeries,
    counts: tuple[int, int, int],
    seen: tuple[int, int, int],
    span_ns: int,
    now: int,
    dir_mode: bool,
) -> Progress:
    elapsed = now - shared.start_ns
    done = counts[2] if dir_mode else counts[0]
    planned = series.planned_units
    eta: int | None = None
    if done and series.endless_until_ns is None:
        eta = elapsed * max(planned - done, 0) // done
    if shared.deadline_ns:
        left = max(shared.deadline_ns - now, 0)
        eta = left if eta is None else min(eta, left)
    return Progress(
        phase=name,
        elapsed_ns=elapsed,
        done_percent=series.percent_done(done, now),
        done_bytes=counts[1],
        bytes_per_s=rate(counts[1] - seen[1], span_ns),
        iops=rate(counts[0] - seen[0], span_ns),
        entries_per_s=rate(counts[2] - seen[2], span_ns),
        eta_ns=eta,
        dir_mode=dir_mode,
    )


def target_totals(
    ctx: RunContext, slots: list[list[Slot]], elapsed: list[int], totals: Totals
) -> tuple[TargetTotals, ...]:
    """Per target: what all threads did there, over the slowest of those threads."""
    if len(ctx.paths) == 1:
        return (
            TargetTotals(
                index=0,
                path=ctx.paths[0],
                ops=totals.ops,
                bytes=totals.bytes,
                entries=totals.entries,
                elapsed_ns=totals.elapsed_ns,
            ),
        )
    per_thread = [
        sum((s.per_path for s in rank_slots if s.per_path is not None), np.zeros(1, np.int64))
        for rank_slots in slots
    ]
    out = []
    for index, path in enumerate(ctx.paths):
        rows = [counts[index] for counts in per_thread]
        worked = [e for row, e in zip(rows, elapsed, strict=True) if row.any()]
        out.append(
            TargetTotals(
                index=index,
                path=path,
                ops=int(sum(int(row[0]) for row in rows)),
                bytes=int(sum(int(row[1]) for row in rows)),
                entries=int(sum(int(row[2]) for row in rows)),
                elapsed_ns=max(worked, default=0),
            )
        )
    return tuple(out)


def summarise(
    kind: PhaseKind,
    ctx: RunContext,
    shared: PhaseShared,
    streams: list[Stream],
    slots: list[list[Slot]],
    finished: list[int],
    cpu: dict[str, CpuSample],
    wall_start: datetime.datetime,
) -> PhaseResult:
    start = shared.start_ns
    first = shared.first_done_ns or start
    cpus = ctx.cpus
    latency, entry_latency, sched = LatencyRecorder(), LatencyRecorder(), LatencyRecorder()
    reads, ttfb = LatencyRecorder(), LatencyRecorder()
    first_totals = [0, 0, 0, 0, 0]
    threads = []
    for local, rank_slots in enumerate(slots):
        for slot in rank_slots:
            latency.merge(slot.recorder)
            entry_latency.merge(slot.entry_recorder)
            sched.merge(slot.sched_recorder)
            reads.merge(slot.read_recorder)
            ttfb.merge(slot.ttfb_recorder)
            for i, value in enumerate(slot.snapshot_at(first)):
                first_totals[i] += value
        threads.append(
            ThreadTotals(
                rank=ctx.ids[local],
                ops=sum(s.ops for s in rank_slots),
                bytes=sum(s.bytes for s in rank_slots),
                entries=sum(s.entries for s in rank_slots),
                elapsed_ns=finished[local] - start,
            )
        )
    last = max(finished)
    incomplete = any(stream.remaining for stream in streams) or any(
        slot.pending for rank_slots in slots for slot in rank_slots
    )
    all_slots = [slot for rank_slots in slots for slot in rank_slots]
    last_done = Totals(
        elapsed_ns=last - start,
        ops=sum(t.ops for t in threads),
        bytes=sum(t.bytes for t in threads),
        entries=sum(t.entries for t in threads),
        cpu_percent=cpu_percent(cpu["start"], cpu["last"], cpus),
        read_ops=sum(s.read_ops for s in all_slots),
        read_bytes=sum(s.read_bytes for s in all_slots),
    )
    pct = rwmix_pct(ctx.cfg, kind)
    mixed = pct is not None
    io_latency = latency.summary()
    read_latency = write_latency = None
    if mixed:  # the slots' recorders held the writes; the I/O latency is of both kinds
        write_latency, read_latency = io_latency, reads.summary()
        latency.merge(reads)
        io_latency = latency.summary()
    worked = [t.elapsed_ns if s.total_ops else 0 for t, s in zip(threads, streams, strict=True)]
    return PhaseResult(
        name=phase_name(kind, pct, objects=ctx.cfg.object_storage),
        start_time=wall_start.isoformat(timespec="milliseconds"),
        first_done=Totals(
            elapsed_ns=first - start,
            ops=first_totals[0],
            bytes=first_totals[1],
            entries=first_totals[2],
            cpu_percent=cpu_percent(cpu["start"], cpu.get("first", cpu["last"]), cpus),
            read_ops=first_totals[3],
            read_bytes=first_totals[4],
        ),
        last_done=last_done,
        io_latency=io_latency,
        rwmix_pct=pct,
        read_latency=read_latency,
        write_latency=write_latency,
        ttfb_latency=ttfb.summary() if ttfb.count else None,
        entry_latency=entry_latency.summary() if isinstance(ctx.layout, DirLayout) else None,
        sched_latency=sched.summary() if shared.options.rate_bytes_per_s else None,
        peak_inflight_ops=shared.peak_inflight,
        threads=tuple(threads),
        targets=target_totals(ctx, slots, worked, last_done),
        endpoints=endpoint_totals(threads, ctx.targets.servers),
        intervals=tuple(shared.series.closed) if shared.series is not None else (),
        time_limited=incomplete and bool(shared.deadline_ns) and not shared.stop.is_set(),
        interrupted=shared.stop.is_set() and shared.error is None,
    )
