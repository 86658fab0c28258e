"""Merging MPI ranks' results: latency summaries merge exactly, phase results add up."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram

from aiobench.results.model import IntervalStats, PhaseResult, TargetTotals, ThreadTotals, Totals
from aiobench.stats.merge import RankPart, merge_phase
from aiobench.stats.recorders import PERCENTILES, LatencyRecorder, LatencySummary, merge_latency

S = 1_000_000_000  # one second in ns
BLOCK = 4096


def _summary(values: Sequence[int] | np.ndarray) -> LatencySummary:
    recorder = LatencyRecorder()
    recorder.add(np.asarray(values, dtype=np.int64))
    return recorder.summary()


# -- latency summaries ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seed", "sizes"),
    [(11, (10_000, 0, 90_000)), (12, (60_000, 40_000)), (13, (0, 30_000, 25_000))],
)
def test_merged_summaries_equal_one_recorder_over_all_values(
    seed: int, sizes: tuple[int, ...]
) -> None:
    rng = np.random.default_rng(seed)
    # Each part from its own distribution, so no part's percentiles are the whole's.
    chunks = [
        (rng.lognormal(mean=7 + i, sigma=1 + i / 2, size=n) + 1).astype(np.int64)
        for i, n in enumerate(sizes)
    ]
    values = np.concatenate(chunks)
    whole = _summary(values)
    merged = merge_latency([None, *(_summary(c) for c in chunks)])
    assert merged is not None
    assert merged.count == values.size
    assert merged.min_ns == int(values.min())
    assert merged.max_ns == int(values.max())
    assert merged.percentiles_ns == whole.percentiles_ns
    assert set(merged.percentiles_ns) == set(PERCENTILES)
    assert abs(merged.mean_ns - float(values.mean())) <= 0.1
    assert abs(merged.mean_ns - whole.mean_ns) <= 0.1
    assert merged.stddev_ns == pytest.approx(float(values.std()), rel=1e-3)
    assert HdrHistogram.decode(merged.hdr).get_total_count() == values.size


def test_merging_nothing_gives_none() -> None:
    assert merge_latency([None, None]) is None
    assert merge_latency([]) is None


def test_recorder_from_an_empty_summary_is_empty() -> None:
    empty = LatencyRecorder().summary()
    recorder = LatencyRecorder.from_summary(empty)
    assert recorder.count == 0
    assert recorder.min_ns == recorder.max_ns == recorder.sum_ns == 0
    assert recorder.sum_sq == 0.0
    assert not any(recorder.counts)
    assert recorder.summary() == empty
    assert empty.hdr == ""


def test_recorder_from_a_summary_reproduces_it() -> None:
    rng = np.random.default_rng(21)
    values = (rng.lognormal(mean=9, sigma=1.2, size=40_000) + 1).astype(np.int64)
    original = LatencyRecorder()
    original.add(values)
    summary = original.summary()
    rebuilt = LatencyRecorder.from_summary(summary)
    assert rebuilt.counts.typecode == "q"
    assert rebuilt.counts == original.counts
    assert rebuilt.count == values.size
    assert (rebuilt.min_ns, rebuilt.max_ns) == (int(values.min()), int(values.max()))
    assert abs(rebuilt.sum_ns - int(values.sum())) <= 0.05 * values.size + 1
    assert rebuilt.summary() == summary


# -- phase results ---------------------------------------------------------------------------


def _totals(elapsed_ns: int, ops: int, read_ops: int, cpu: int) -> Totals:
    return Totals(
        elapsed_ns=elapsed_ns,
        ops=ops,
        bytes=ops * BLOCK,
        cpu_percent=cpu,
        read_ops=read_ops,
        read_bytes=read_ops * BLOCK,
    )


def _intervals(
    rank: int, ends: Sequence[int], ops: Sequence[int], threads: Sequence[int], cpus: Sequence[int]
) -> tuple[IntervalStats, ...]:
    """A rank's series: interval k from k s to ``ends[k]``, percent done of its total ops."""
    total = sum(ops)
    out = []
    done = 0
    for k, (end, n, active, cpu) in enumerate(zip(ends, ops, threads, cpus, strict=True)):
        done += n
        out.append(
            IntervalStats(
                index=k,
                start_ns=k * S,
                end_ns=end,
                ops=n,
                bytes=n * BLOCK,
                entries=0,
                done_ops=done,
                done_bytes=done * BLOCK,
                done_entries=0,
                done_percent=done * 100 // total,
                active_threads=active,
                cpu_percent=cpu,
                # Latencies rank*1000 + k*100 + 1 .. + n/10: distinct per rank and interval.
                io_latency=_summary(
                    range(rank * 1000 + k * 100 + 1, rank * 1000 + k * 100 + 1 + n // 10)
                ),
            )
        )
    return tuple(out)


def _target(index: int, path: str, ops: int, elapsed_ns: int) -> TargetTotals:
    return TargetTotals(
        index=index, path=path, ops=ops, bytes=ops * BLOCK, entries=0, elapsed_ns=elapsed_ns
    )


def _thread(rank: int, ops: int, elapsed_ns: int) -> ThreadTotals:
    return ThreadTotals(rank=rank, ops=ops, bytes=ops * BLOCK, entries=0, elapsed_ns=elapsed_ns)


def _three_ranks() -> list[RankPart]:
    """Ranks 0 and 2 on host alpha, rank 1 on beta; rank 2 ends first (1.5 s), rank 1 last."""
    lat = {r: _summary(np.arange(1, 1001) * (r + 1) + r) for r in range(3)}
    rank0 = PhaseResult(
        name="WRITE",
        start_time="2026-01-01T00:00:00.000Z",
        first_done=_totals(4 * S, 4000, 1000, 30),  # unused: the part's first_done counts
        last_done=_totals(4 * S, 4000, 1000, 30),
        io_latency=lat[0],
        rwmix_pct=25,
        read_latency=_summary([100, 200, 300]),
        write_latency=_summary([400, 500]),
        peak_inflight_ops=8,
        mean_inflight_ops=7.5,
        loop_cpu_ns=300,
        client_cpu_pct=40,
        threads=(_thread(0, 2000, 4 * S), _thread(3, 2000, 3 * S)),
        targets=(_target(0, "/mnt/a0", 2500, 4 * S), _target(1, "/mnt/a1", 1500, 7 * S // 2)),
        intervals=_intervals(
            0, [S, 2 * S, 3 * S, 4 * S], [1000, 1100, 1000, 900], [2, 2, 2, 1], [30, 35, 40, 20]
        ),
        iteration=1,
        iterations=3,
    )
    rank1 = PhaseResult(
        name="WRITE",
        start_time="2026-01-01T00:00:00.004Z",
        first_done=_totals(5 * S, 3000, 750, 45),
        last_done=_totals(5 * S, 3000, 750, 45),
        io_latency=lat[1],
        sched_latency=_summary([7, 8, 9, 10]),
        rwmix_pct=25,
        read_latency=_summary([150, 250]),
        write_latency=_summary([50, 450, 550, 650]),
        peak_inflight_ops=16,
        mean_inflight_ops=15.25,
        loop_cpu_ns=200,
        client_cpu_pct=91,
        threads=(_thread(1, 1000, 5 * S), _thread(4, 2000, 4 * S)),
        targets=(_target(0, "/other/0", 1000, 3 * S), _target(1, "/other/1", 2000, 5 * S)),
        intervals=_intervals(
            1,
            [S, 2 * S, 3 * S, 4 * S, 5 * S],
            [600, 700, 600, 600, 500],
            [2, 2, 2, 2, 1],
            [45, 50, 55, 60, 10],
        ),
        interrupted=True,
        iteration=1,
        iterations=3,
    )
    rank2 = PhaseResult(
        name="WRITE",
        start_time="2026-01-01T00:00:00.009Z",
        first_done=_totals(3 * S // 2, 1000, 250, 80),
        last_done=_totals(3 * S // 2, 1000, 250, 80),
        io_latency=lat[2],
        rwmix_pct=25,
        read_latency=_summary([125]),
        write_latency=_summary([20, 30]),
        peak_inflight_ops=4,
        mean_inflight_ops=3.0,
        loop_cpu_ns=100,
        client_cpu_pct=7,
        threads=(_thread(2, 600, 3 * S // 2), _thread(5, 400, S)),
        targets=(_target(0, "/third/0", 600, S), _target(1, "/third/1", 400, 3 * S // 2)),
        intervals=_intervals(2, [S, 3 * S // 2], [500, 500], [2, 2], [80, 70]),
        time_limited=True,
        iteration=1,
        iterations=3,
    )
    first = 3 * S // 2  # the job's first-done instant: rank 2 finishing
    # Given out of rank order on purpose.
    return [
        RankPart(2, "alpha", rank2, _totals(first, 1000, 250, 10)),
        RankPart(0, "alpha", rank0, _totals(first, 1500, 375, 20)),
        RankPart(1, "beta", rank1, _totals(first, 900, 225, 41)),
    ]


def test_phase_identity_comes_from_the_lowest_rank() -> None:
    merged = merge_phase(_three_ranks())
    assert merged.name == "WRITE"
    assert merged.start_time == "2026-01-01T00:00:00.000Z"
    assert (merged.iteration, merged.iterations, merged.rwmix_pct) == (1, 3, 25)


def test_first_and_last_done_add_up_over_ranks() -> None:
    merged = merge_phase(_three_ranks())
    first, last = merged.first_done, merged.last_done
    assert first.elapsed_ns == 3 * S // 2
    assert (first.ops, first.bytes) == (3400, 3400 * BLOCK)
    assert (first.read_ops, first.read_bytes) == (850, 850 * BLOCK)
    assert last.elapsed_ns == 5 * S
    assert (last.ops, last.bytes, last.entries) == (8000, 8000 * BLOCK, 0)
    assert (last.read_ops, last.read_bytes) == (2000, 2000 * BLOCK)
    assert last.writes().ops == 6000


def test_cpu_is_summed_per_host_capped_then_averaged_over_hosts() -> None:
    merged = merge_phase(_three_ranks())
    # first done: alpha 20 + 10 = 30, beta 41 -> 71 // 2
    assert merged.first_done.cpu_percent == 35
    # last done: alpha 30 + 80 capped at 100, beta 45 -> 145 // 2
    assert merged.last_done.cpu_percent == 72


def test_latencies_merge_and_other_counters_combine() -> None:
    parts = _three_ranks()
    merged = merge_phase(parts)
    assert merged.io_latency.count == 3000
    assert merged.io_latency.min_ns == 1  # rank 0: 1 * 1 + 0
    assert merged.io_latency.max_ns == 3002  # rank 2: 1000 * 3 + 2
    assert merged.entry_latency is None
    assert merged.sched_latency is not None
    assert (merged.sched_latency.count, merged.sched_latency.max_ns) == (4, 10)
    assert merged.read_latency is not None
    assert (merged.read_latency.count, merged.read_latency.min_ns) == (6, 100)
    assert merged.write_latency is not None
    assert merged.write_latency.count == 8
    assert (merged.write_latency.min_ns, merged.write_latency.max_ns) == (20, 650)
    assert merged.peak_inflight_ops == 28
    # Every rank's operations are in flight at once; each rank has its own event loop.
    assert merged.mean_inflight_ops == 7.5 + 15.25 + 3.0
    assert merged.loop_cpu_ns == 600
    assert merged.client_cpu_pct == 91  # the rank nearest its limit
    assert merged.time_limited  # rank 2 only
    assert merged.interrupted  # rank 1 only


def test_threads_come_in_global_rank_order() -> None:
    merged = merge_phase(_three_ranks())
    assert [t.rank for t in merged.threads] == [0, 1, 2, 3, 4, 5]
    assert [t.ops for t in merged.threads] == [2000, 1000, 600, 2000, 2000, 400]


def test_targets_add_up_over_ranks_with_the_slowest_elapsed() -> None:
    merged = merge_phase(_three_ranks())
    rows = [(t.index, t.path, t.ops, t.bytes, t.elapsed_ns) for t in merged.targets]
    assert rows == [
        (0, "/mnt/a0", 4100, 4100 * BLOCK, 4 * S),
        (1, "/mnt/a1", 3900, 3900 * BLOCK, 5 * S),
    ]


def test_rank_and_host_reports() -> None:
    merged = merge_phase(_three_ranks())
    ranks = [(t.index, t.path, t.ops, t.bytes, t.elapsed_ns) for t in merged.ranks]
    assert ranks == [
        (0, "alpha", 4000, 4000 * BLOCK, 4 * S),
        (1, "beta", 3000, 3000 * BLOCK, 5 * S),
        (2, "alpha", 1000, 1000 * BLOCK, 3 * S // 2),
    ]
    hosts = [(t.index, t.path, t.ops, t.bytes, t.elapsed_ns) for t in merged.hosts]
    assert hosts == [
        (0, "alpha", 5000, 5000 * BLOCK, 4 * S),
        (1, "beta", 3000, 3000 * BLOCK, 5 * S),
    ]

    # bytes/s per rank: 16384000 / 4 s, 12288000 / 5 s, 4096000 / 1.5 s (truncated).
    rank_report = merged.rank_report
    assert rank_report is not None
    assert rank_report.metric == "bytes_per_s"
    assert (rank_report.slowest.index, rank_report.fastest.index) == (1, 0)
    assert rank_report.aggregate["bytes_per_s"] == 4_096_000 + 2_457_600 + 2_730_666
    # bytes/s per host: alpha 20480000 / 4 s, beta 12288000 / 5 s.
    host_report = merged.host_report
    assert host_report is not None
    assert (host_report.slowest.path, host_report.fastest.path) == ("beta", "alpha")
    assert host_report.fastest.bytes_per_s == 5_120_000
    assert host_report.slowest.bytes_per_s == 2_457_600


def test_intervals_merge_by_index_and_carry_finished_ranks() -> None:
    merged = merge_phase(_three_ranks())
    rows = [
        (i.index, i.start_ns, i.end_ns, i.ops, i.done_ops, i.done_percent, i.active_threads)
        for i in merged.intervals
    ]
    assert rows == [
        # percent: (25 + 20 + 50) // 3, (52 + 43 + 100) // 3, then rank 2 stays at 100
        (0, 0, S, 2100, 2100, 31, 6),
        (1, S, 2 * S, 2300, 4400, 65, 6),  # rank 2's last one ends at 1.5 s
        (2, 2 * S, 3 * S, 1600, 6000, 80, 4),  # (77 + 63 + 100) // 3
        (3, 3 * S, 4 * S, 1500, 7500, 94, 3),  # (100 + 83 + 100) // 3
        (4, 4 * S, 5 * S, 500, 8000, 100, 1),
    ]
    assert [i.bytes for i in merged.intervals] == [n * BLOCK for n in (2100, 2300, 1600, 1500, 500)]
    assert [i.done_bytes for i in merged.intervals] == [
        n * BLOCK for n in (2100, 4400, 6000, 7500, 8000)
    ]
    # alpha (ranks 0, 2) capped at 100 while rank 2 runs; interval 4 has beta alone.
    assert [i.cpu_percent for i in merged.intervals] == [72, 75, 47, 40, 10]
    # Latency of the ranks having the interval: n // 10 values each.
    assert [i.io_latency.count for i in merged.intervals] == [210, 230, 160, 150, 50]
    assert merged.intervals[2].io_latency.min_ns == 201  # rank 0, interval 2
    assert merged.intervals[2].io_latency.max_ns == 1000 + 200 + 60  # rank 1, interval 2
    assert all(i.entry_latency is None for i in merged.intervals)


def test_idle_rank_has_no_elapsed_time_in_the_reports() -> None:
    busy = PhaseResult(
        name="READ",
        first_done=_totals(S, 100, 0, 5),
        last_done=_totals(S, 100, 0, 5),
        io_latency=_summary([10, 20]),
        peak_inflight_ops=1,
        threads=(_thread(0, 100, S),),
    )
    idle = PhaseResult(
        name="READ",
        first_done=_totals(2 * S, 0, 0, 1),
        last_done=_totals(2 * S, 0, 0, 1),
        io_latency=LatencyRecorder().summary(),
        peak_inflight_ops=0,
        threads=(_thread(1, 0, 0),),
    )
    merged = merge_phase(
        [
            RankPart(1, "gamma", idle, _totals(S, 0, 0, 1)),
            RankPart(0, "gamma", busy, busy.last_done),
        ]
    )
    assert [(t.index, t.elapsed_ns) for t in merged.ranks] == [(0, S), (1, 0)]
    assert [(t.index, t.path, t.ops, t.elapsed_ns) for t in merged.hosts] == [(0, "gamma", 100, S)]
    report = merged.rank_report
    assert report is not None
    assert report.slowest.index == report.fastest.index == 0
    assert merged.last_done.elapsed_ns == 2 * S
    assert merged.last_done.cpu_percent == 6  # one host: 5 + 1
    assert merged.io_latency.count == 2
    assert not merged.time_limited
    assert not merged.interrupted
    assert merged.intervals == ()
    assert merged.targets == ()
