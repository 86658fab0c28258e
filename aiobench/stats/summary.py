"""A phase's figures once it is over: pure sums over the slots' counters and recorders
(FIRST DONE, LAST DONE, latency, per thread and per target). Its live looks are
:mod:`aiobench.stats.progress`."""

from __future__ import annotations

from collections.abc import Sequence

from aiobench.results.model import (
    PhaseResult,
    TargetTotals,
    ThreadTotals,
    Totals,
    endpoint_totals,
)
from aiobench.stats.intervals import cpu_percent
from aiobench.stats.recorders import LatencyRecorder
from aiobench.stats.tally import PhaseTally, ThreadTally


def target_totals(
    paths: tuple[str, ...],
    threads: Sequence[ThreadTally],
    elapsed: list[int],
    totals: Totals,
) -> tuple[TargetTotals, ...]:
    """Per target: what all threads did there, over the slowest of those threads."""
    if len(paths) == 1:
        return (
            TargetTotals(
                index=0,
                path=paths[0],
                ops=totals.ops,
                bytes=totals.bytes,
                entries=totals.entries,
                elapsed_ns=totals.elapsed_ns,
            ),
        )
    import numpy as np  # (several targets: the slots count per target in numpy arrays)

    per_thread = [
        sum((s.per_path for s in thread.slots if s.per_path is not None), np.zeros(1, np.int64))
        for thread in threads
    ]
    out = []
    for index, path in enumerate(paths):
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


def summarise(tally: PhaseTally) -> PhaseResult:
    """The phase's figures, from what its slots counted."""
    about = tally.about
    start = tally.start_ns
    first = tally.first_done_ns or start
    cpus = about.cpus
    latency, entry_latency, sched = LatencyRecorder(), LatencyRecorder(), LatencyRecorder()
    reads, ttfb = LatencyRecorder(), LatencyRecorder()
    first_totals = [0, 0, 0, 0, 0]
    threads = []
    for thread in tally.threads:
        for slot in thread.slots:
            latency.merge(slot.recorder)
            entry_latency.merge(slot.entry_recorder)
            sched.merge(slot.sched_recorder)
            reads.merge(slot.read_recorder)
            ttfb.merge(slot.ttfb_recorder)
            for i, value in enumerate(slot.at_first_done):
                first_totals[i] += value
        threads.append(
            ThreadTotals(
                rank=thread.rank,
                ops=sum(s.totals.ops for s in thread.slots),
                bytes=sum(s.totals.bytes for s in thread.slots),
                entries=sum(s.totals.entries for s in thread.slots),
                elapsed_ns=thread.finished_ns - start,
            )
        )
    last = max(thread.finished_ns for thread in tally.threads)
    incomplete = any(thread.incomplete for thread in tally.threads)
    all_slots = [slot for thread in tally.threads for slot in thread.slots]
    last_done = Totals(
        elapsed_ns=last - start,
        ops=sum(t.ops for t in threads),
        bytes=sum(t.bytes for t in threads),
        entries=sum(t.entries for t in threads),
        cpu_percent=cpu_percent(tally.cpu_start, tally.cpu_last, cpus),
        read_ops=sum(s.totals.read_ops for s in all_slots),
        read_bytes=sum(s.totals.read_bytes for s in all_slots),
    )
    pct = about.rwmix_pct
    mixed = pct is not None
    # Little's law: the exact sum of every operation's latency (writes and reads apart under
    # --rwmixpct) over the phase's time is the mean number in flight.
    busy_ns = latency.sum_ns + reads.sum_ns
    io_latency = latency.summary()
    read_latency = write_latency = None
    if mixed:  # the slots' recorders held the writes; the I/O latency is of both kinds
        write_latency, read_latency = io_latency, reads.summary()
        latency.merge(reads)
        io_latency = latency.summary()
    worked = [
        t.elapsed_ns if thread.planned else 0
        for t, thread in zip(threads, tally.threads, strict=True)
    ]
    stopped = tally.stopped
    return PhaseResult(
        name=about.name,
        start_time=tally.wall_start.isoformat(timespec="milliseconds"),
        first_done=Totals(
            elapsed_ns=first - start,
            ops=first_totals[0],
            bytes=first_totals[1],
            entries=first_totals[2],
            cpu_percent=cpu_percent(tally.cpu_start, tally.cpu_first, cpus),
            read_ops=first_totals[3],
            read_bytes=first_totals[4],
        ),
        last_done=last_done,
        io_latency=io_latency,
        rwmix_pct=pct,
        read_latency=read_latency,
        write_latency=write_latency,
        ttfb_latency=ttfb.summary() if ttfb.count else None,
        entry_latency=entry_latency.summary() if about.dir_mode else None,
        sched_latency=sched.summary() if about.rate_limited else None,
        peak_inflight_ops=tally.peak_inflight,
        mean_inflight_ops=busy_ns / last_done.elapsed_ns if last_done.elapsed_ns > 0 else 0.0,
        loop_cpu_ns=tally.loop_cpu_ns,
        client_cpu_pct=tally.client_cpu_pct,
        threads=tuple(threads),
        targets=target_totals(about.paths, tally.threads, worked, last_done),
        endpoints=endpoint_totals(threads, about.servers),
        intervals=tally.intervals,
        time_limited=incomplete and bool(tally.deadline_ns) and not stopped,
        interrupted=stopped and tally.error is None,
    )
