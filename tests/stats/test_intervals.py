"""Latency over time: interval series (pure), intervals of a running phase, --livejson/--livecsv.

A unit (an operation; an entry in dir mode) counts in the interval its end instant falls in;
intervals include their end instant.
The must-show "a stall stands out in one interval while the phase average hides it" is
checked twice: with a sleep-injected null engine, and for real, on an ext4 filesystem that
is frozen (``fsfreeze``) for a moment while a run writes to it.
"""

from __future__ import annotations

import csv
import datetime
import itertools
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any

import anyio
import numpy as np
import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from aiobench.engines.base import Engine
from aiobench.engines.gate import StartGate
from aiobench.engines.null import NullEngine
from aiobench.kinds import READ, WRITE
from aiobench.plan.dirmode import DirLayout, EntryRun
from aiobench.plan.layout import Stream
from aiobench.plan.workload import Layout, OpRun
from aiobench.results.events import Observer
from aiobench.results.model import IntervalStats, PhaseResult, Progress
from aiobench.run import phases
from aiobench.run.worker import PhaseSpec, PhaseState, Slot, run_slots
from aiobench.stats.intervals import CpuSample, IntervalSeries, cpu_percent
from aiobench.stats.tally import PhaseTally
from aiobench.units import rate
from tests.helpers import Ext4Loop, RunCli, context, make_cfg

if TYPE_CHECKING:
    from aiobench.stats.recorders import Int64Array

MIB = 1 << 20
MS = 1_000_000
Doc = dict[str, Any]
# elbencho's live CSV columns, in elbencho's order.
ELBENCHO_LIVE_COLUMNS = [
    "ISO Date", "Label", "Phase", "RuntimeMS", "Rank", "MixType", "Done%", "DoneBytes",
    "MiB/s", "IOPS", "Entries", "Entries/s", "Lat Ent us", "Lat IO us", "Active", "CPU",
    "Service",
]  # fmt: skip
# Keys an interval record of --livejson has on top of an interval of the final JSON.
RECORD_ONLY_KEYS = ("schema_version", "record", "iso_date", "label", "phase")


def arr(*values: int) -> Int64Array:
    return np.array(values, dtype=np.int64)


EMPTY = arr()


def one_thread(_instant: int) -> int:
    return 1


def file_series(*, planned: int = 10, cpus: int = 1, start_ns: int = 0) -> IntervalSeries:
    return IntervalSeries(
        start_ns=start_ns, interval_ns=100, planned_units=planned, dir_mode=False, cpus=cpus
    )


def add_ops(series: IntervalSeries, ends: list[int], latencies: list[int], length: int) -> None:
    """One completed file-mode run of ``len(ends)`` operations of ``length`` bytes."""
    run = OpRun(0, [i * length for i in range(len(ends))], length)
    series.add(run, arr(*ends), EMPTY, arr(*latencies))


def spans(intervals: list[IntervalStats]) -> list[tuple[int, int, int]]:
    return [(iv.index, iv.start_ns, iv.end_ns) for iv in intervals]


# ---------------------------------------------------------------------------------------
# 1. IntervalSeries: pure, no disk, no loop


def test_each_op_counts_in_the_interval_its_end_falls_in() -> None:
    series = file_series(planned=12)
    # Intervals include their end: (0, 100], (100, 200], (200, 300]. One slot's run across
    # three intervals: the op ending at 100 ends on a boundary (interval 0); the op ending
    # at 150 started at 30, in interval 0, but ended in interval 1.
    add_ops(series, [10, 99, 100, 150, 250, 299], [5, 50, 60, 120, 200, 30], 4096)
    # Another slot: a run wholly inside interval 0.
    add_ops(series, [20, 90], [15, 80], 4096)
    # A third: a run with ops in intervals 0 and 2 and none in 1, of another length.
    add_ops(series, [95, 205], [90, 100], 512)
    # A fourth: one op, ending exactly on the boundary of intervals 1 and 2 (interval 1).
    add_ops(series, [200], [70], 4096)
    assert [iv.index for iv in series.close_until(300, one_thread)] == [0, 1]
    assert [iv.index for iv in series.close_until(301, one_thread)] == [2]
    closed = series.closed

    assert spans(closed) == [(0, 0, 100), (1, 100, 200), (2, 200, 300)]
    assert [iv.ops for iv in closed] == [6, 2, 3]
    assert [iv.bytes for iv in closed] == [5 * 4096 + 512, 2 * 4096, 2 * 4096 + 512]
    assert [iv.entries for iv in closed] == [0, 0, 0]
    assert [iv.done_ops for iv in closed] == [6, 8, 11]
    assert [iv.done_bytes for iv in closed] == [5 * 4096 + 512, 7 * 4096 + 512, 9 * 4096 + 1024]
    assert [iv.done_percent for iv in closed] == [50, 66, 91]
    lat = [iv.io_latency for iv in closed]
    assert [(s.count, s.min_ns, s.max_ns) for s in lat] == [(6, 5, 90), (2, 70, 120), (3, 30, 200)]
    assert [s.mean_ns for s in lat] == [50.0, 95.0, 110.0]
    # Values below 2048 ns are exact in the HDR histogram: the median is a recorded value.
    assert [s.percentiles_ns[50] for s in lat] == [50, 70, 100]
    assert all(s.hdr for s in lat)
    assert all(iv.entry_latency is None for iv in closed)  # file mode: no entry latency


def test_close_until_closes_only_finished_intervals_in_order() -> None:
    series = file_series(planned=3)
    add_ops(series, [10, 150, 250], [1, 2, 3], 4096)
    assert not series.pending(99)
    assert series.close_until(99, one_thread) == []
    assert series.pending(100)
    # Interval 0 includes 100: an op ending at 100 may still come while a run handed over
    # at 100 is out, so a horizon of 100 closes nothing yet.
    assert series.close_until(100, one_thread) == []
    first = series.close_until(101, one_thread)
    assert spans(first) == [(0, 0, 100)]
    assert not series.pending(199)
    assert series.close_until(199, one_thread) == []
    assert series.close_until(101, one_thread) == []  # never twice
    rest = series.close_until(305, one_thread)
    assert spans(rest) == [(1, 100, 200), (2, 200, 300)]
    assert series.closed == first + rest
    assert [iv.io_latency.max_ns for iv in series.closed] == [1, 2, 3]


def test_an_interval_without_units_is_still_recorded() -> None:
    series = file_series(planned=2)
    add_ops(series, [10, 350], [7, 9], 4096)
    closed = series.close_until(401, one_thread)
    assert spans(closed) == [(0, 0, 100), (1, 100, 200), (2, 200, 300), (3, 300, 400)]
    assert [iv.ops for iv in closed] == [1, 0, 0, 1]
    assert [iv.done_ops for iv in closed] == [1, 1, 1, 2]
    assert [iv.io_latency.count for iv in closed] == [1, 0, 0, 1]


def test_finish_cuts_the_last_interval_at_the_end() -> None:
    series = file_series(planned=3)
    add_ops(series, [10, 150, 250], [1, 2, 3], 4096)
    early = series.close_until(201, one_thread)
    assert spans(early) == [(0, 0, 100), (1, 100, 200)]
    last = series.finish(250, one_thread, CpuSample(250, 0))
    # The op ending at 250 (the end instant itself) is in the cut interval.
    assert spans(last) == [(2, 200, 250)]
    assert last[0].ops == 1 and last[0].done_ops == 3 and last[0].done_percent == 100
    assert series.finish(250, one_thread, CpuSample(250, 0)) == []


def test_finish_on_a_boundary_adds_no_empty_interval() -> None:
    series = file_series(planned=3)
    add_ops(series, [10, 150, 299], [1, 2, 3], 4096)
    out = series.finish(300, one_thread, CpuSample(300, 0))
    assert spans(out) == [(0, 0, 100), (1, 100, 200), (2, 200, 300)]
    assert series.finish(300, one_thread, CpuSample(300, 0)) == []
    assert len(series.closed) == 3


def test_finish_on_a_boundary_keeps_the_op_that_ended_there() -> None:
    # The phase's last-done instant is the end of its last op. When that instant is exactly
    # on an interval boundary, the last op must still be counted somewhere: intervals add up
    # to the phase totals, and the last one (cut at the end) is not an empty [300, 300].
    series = file_series(planned=3)
    add_ops(series, [10, 150, 300], [1, 2, 3], 4096)
    closed = series.finish(300, one_thread, CpuSample(300, 0))
    assert closed == series.closed
    assert sum(iv.ops for iv in closed) == 3
    assert closed[-1].done_ops == 3 and closed[-1].done_percent == 100
    assert closed[-1].end_ns == 300
    assert all(iv.end_ns > iv.start_ns for iv in closed)
    assert sum(iv.io_latency.count for iv in closed) == 3


def test_times_are_relative_and_active_threads_asked_at_each_interval_end() -> None:
    series = file_series(planned=3, start_ns=1_000)
    asked: list[int] = []

    def active(instant: int) -> int:
        asked.append(instant)
        return 2 if instant < 1_250 else 1

    add_ops(series, [1_010, 1_150, 1_299], [1, 2, 3], 4096)
    closed = series.close_until(1_200, active) + series.finish(1_299, active, CpuSample(0, 0))
    assert spans(closed) == [(0, 0, 100), (1, 100, 200), (2, 200, 299)]
    assert asked == [1_100, 1_200, 1_299]  # absolute instants: the end of each interval
    assert [iv.active_threads for iv in closed] == [2, 2, 1]


def test_cut_interval_rates_use_its_own_length() -> None:
    series = IntervalSeries(
        start_ns=0, interval_ns=100 * MS, planned_units=0, dir_mode=False, cpus=1
    )
    run = OpRun(0, [0] * 15, 4096)
    ends = arr(*[10 * MS * (i + 1) for i in range(10)], *[200 * MS + 10 * MS * i for i in range(5)])
    series.add(run, ends, EMPTY, arr(*[MS] * 15))
    closed = series.close_until(250 * MS, one_thread) + series.finish(
        240 * MS, one_thread, CpuSample(0, 0)
    )
    assert spans(closed) == [(0, 0, 100 * MS), (1, 100 * MS, 200 * MS), (2, 200 * MS, 240 * MS)]
    # Ends are inclusive: 100 ms counts in interval 0, 200 ms in interval 1.
    assert [iv.ops for iv in closed] == [10, 1, 4]
    assert [iv.iops for iv in closed] == [100, 10, 100]  # the last over 40 ms, not 100 ms
    assert closed[2].bytes_per_s == rate(4 * 4096, 40 * MS)
    assert [iv.done_percent for iv in closed] == [100, 100, 100]  # nothing planned: 100 %


def test_dir_mode_keeps_entries_and_blocks_apart() -> None:
    series = IntervalSeries(start_ns=0, interval_ns=100, planned_units=3, dir_mode=True, cpus=1)
    # Three files of two 4 KiB blocks each; entry ends (and latency) differ from block ends.
    run = EntryRun(0, ["f0", "f1", "f2"], 8192, 4096)
    series.add(
        run,
        arr(50, 120, 260),
        arr(20, 45, 80, 115, 230, 255),
        arr(50, 70, 140),
        arr(20, 25, 35, 35, 30, 25),
    )
    closed = series.close_until(200, one_thread) + series.finish(260, one_thread, CpuSample(0, 0))
    assert spans(closed) == [(0, 0, 100), (1, 100, 200), (2, 200, 260)]
    assert [iv.entries for iv in closed] == [1, 1, 1]
    assert [iv.ops for iv in closed] == [3, 1, 2]  # block operations
    # Blocks done: f0 whole and half of f1, then the rest of f1, then f2.
    assert [iv.bytes for iv in closed] == [12288, 4096, 8192]
    assert [iv.done_entries for iv in closed] == [1, 2, 3]
    assert [iv.done_ops for iv in closed] == [3, 4, 6]
    assert [iv.done_percent for iv in closed] == [33, 66, 100]  # of entries, not blocks
    entry = [iv.entry_latency for iv in closed]
    assert all(e is not None for e in entry)
    assert [(e.count, e.min_ns, e.max_ns) for e in entry if e is not None] == [
        (1, 50, 50),
        (1, 70, 70),
        (1, 140, 140),
    ]
    io = [iv.io_latency for iv in closed]
    assert [(s.count, s.min_ns, s.max_ns) for s in io] == [(3, 20, 35), (1, 35, 35), (2, 25, 30)]


def test_cpu_percent_comes_from_the_samples_at_interval_starts() -> None:
    series = file_series(planned=3, cpus=2)
    add_ops(series, [10, 150, 250], [1, 1, 1], 4096)
    series.sample_cpu(0, CpuSample(0, 0))
    series.sample_cpu(1, CpuSample(100, 100))  # 100 ns of CPU in 100 ns on 2 cores: 50 %
    series.sample_cpu(1, CpuSample(110, 999))  # a later sample for the same start: ignored
    series.sample_cpu(2, CpuSample(200, 140))  # 40 ns in 100 ns on 2 cores: 20 %
    closed = series.close_until(200, one_thread)
    # The last interval ends with the sample given to finish: 99 ns in 99 ns on 2 cores.
    closed += series.finish(299, one_thread, CpuSample(299, 239))
    assert [iv.cpu_percent for iv in closed] == [50, 20, 50]


def test_cpu_percent_is_a_share_of_all_cores_capped_at_100() -> None:
    assert cpu_percent(CpuSample(0, 0), CpuSample(1_000, 1_000), 4) == 25
    assert cpu_percent(CpuSample(0, 0), CpuSample(1_000, 5_000), 2) == 100
    assert cpu_percent(CpuSample(10, 0), CpuSample(10, 5), 1) == 0  # no wall time passed


# ---------------------------------------------------------------------------------------
# 2. Intervals of a running phase (null engine, in-process)


class IntervalLog(Observer):
    """Records what a phase tells its observer, in order, and when intervals arrive."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.intervals: list[tuple[str, IntervalStats]] = []
        self.arrived_ns: list[int] = []
        self.progress_seen: list[Progress] = []

    def phase_started(self, name: str, start: datetime.datetime) -> None:
        self.events.append("started")

    def progress(self, progress: Progress) -> None:
        self.events.append("progress")
        self.progress_seen.append(progress)

    def interval(self, phase: str, interval: IntervalStats) -> None:
        self.events.append("interval")
        self.intervals.append((phase, interval))
        self.arrived_ns.append(perf_counter_ns())

    def phase_ended(self, name: str) -> None:
        self.events.append("ended")


async def observed_phase(
    tmp_path: Path,
    engine: Engine,
    *,
    interval_ns: int,
    ops: int,
    threads: int = 1,
    iodepth: int = 1,
    timelimit: int = 0,
) -> tuple[PhaseResult, PhaseTally, IntervalLog]:
    """A READ phase of ``ops`` 4 KiB operations on the given engine, watched by a log."""
    cfg = make_cfg(
        [str(tmp_path / "f")],
        threads=threads,
        iodepth=iodepth,
        block="4k",
        size=str(ops * 4096),
        write=False,
        read=True,
        timelimit=timelimit,
    )
    ctx = context(cfg, Layout((ops * 4096,), 4096), engine)
    log = IntervalLog()
    ctx.observer = log
    ctx.live_interval_ns = interval_ns
    try:
        phase, tally = await phases.run_phase(ctx, READ, 0)
    finally:
        ctx.executor.shutdown()
    return phase, tally, log


def assert_series_matches_phase(phase: PhaseResult, interval_ns: int) -> None:
    """Contiguous intervals from 0 to the last-done instant that add up to the phase."""
    ivs = phase.intervals
    last = phase.last_done
    assert ivs, "a phase always has at least one interval"
    assert [iv.index for iv in ivs] == list(range(len(ivs)))
    assert ivs[0].start_ns == 0
    for before, after in itertools.pairwise(ivs):
        assert after.start_ns == before.end_ns
    assert all(iv.end_ns - iv.start_ns == interval_ns for iv in ivs[:-1])
    assert 0 < ivs[-1].end_ns - ivs[-1].start_ns <= interval_ns
    assert ivs[-1].end_ns == last.elapsed_ns  # the last one is cut at the last-done instant
    assert sum(iv.ops for iv in ivs) == last.ops
    assert sum(iv.bytes for iv in ivs) == last.bytes
    assert sum(iv.entries for iv in ivs) == last.entries
    assert list(itertools.accumulate(iv.ops for iv in ivs)) == [iv.done_ops for iv in ivs]
    assert list(itertools.accumulate(iv.bytes for iv in ivs)) == [iv.done_bytes for iv in ivs]
    assert (ivs[-1].done_ops, ivs[-1].done_bytes) == (last.ops, last.bytes)
    # The same latencies as the phase's, spread over the intervals.
    assert sum(iv.io_latency.count for iv in ivs) == phase.io_latency.count
    counted = [iv.io_latency for iv in ivs if iv.io_latency.count]
    assert max(s.max_ns for s in counted) == phase.io_latency.max_ns
    assert min(s.min_ns for s in counted) == phase.io_latency.min_ns
    assert all(0 <= iv.cpu_percent <= 100 for iv in ivs)


async def test_phase_intervals_add_up_and_reach_the_observer_live(tmp_path: Path) -> None:
    interval_ns = 30 * MS
    # 4 slots, 1 ms per op, 1200 ops: ~300 ms, about ten intervals.
    phase, tally, log = await observed_phase(
        tmp_path, NullEngine(lambda _: MS), interval_ns=interval_ns, ops=1200, threads=2, iodepth=2
    )
    assert phase.last_done.ops == 1200
    assert len(phase.intervals) >= 5
    assert_series_matches_phase(phase, interval_ns)
    assert phase.intervals[-1].done_percent == 100
    # The observer got exactly the phase's records, in order, before the phase ended.
    assert [iv for _, iv in log.intervals] == list(phase.intervals)
    assert {name for name, _ in log.intervals} == {"READ"}
    assert log.events[0] == "started" and log.events[-1] == "ended"
    assert log.events.count("ended") == 1
    # Each arrived once it was over, the first while the phase was still running.
    for iv, arrived in zip(phase.intervals, log.arrived_ns, strict=True):
        assert arrived - tally.start_ns >= iv.end_ns
    assert log.arrived_ns[0] - tally.start_ns < phase.last_done.elapsed_ns
    # While both threads were working, the intervals say so.
    busy_until = min(t.elapsed_ns for t in phase.threads)
    assert {iv.active_threads for iv in phase.intervals if iv.end_ns < busy_until} == {2}
    # The live progress came every interval, moving forward.
    seen = log.progress_seen
    assert len(seen) >= 3 and {p.phase for p in seen} == {"READ"}
    assert all(a.elapsed_ns < b.elapsed_ns for a, b in itertools.pairwise(seen))
    assert all(a.done_percent <= b.done_percent for a, b in itertools.pairwise(seen))


async def test_dir_mode_phase_intervals_count_entries_and_blocks(tmp_path: Path) -> None:
    interval_ns = 20 * MS
    cfg = make_cfg([str(tmp_path)], threads=2, block="4k", size="8k", write=True, dirs=2, files=50)
    layout = DirLayout(
        num_paths=1, threads=2, dirs=2, files=50, file_size=8192, block_size=4096, sharing=False
    )
    ctx = context(cfg, layout, NullEngine(lambda _: MS // 2))
    log = IntervalLog()
    ctx.observer, ctx.live_interval_ns = log, interval_ns
    try:
        phase, _ = await phases.run_phase(ctx, WRITE, 0)
    finally:
        ctx.executor.shutdown()
    assert (phase.last_done.entries, phase.last_done.ops) == (200, 400)
    assert_series_matches_phase(phase, interval_ns)
    ivs = phase.intervals
    assert len(ivs) >= 2
    assert [iv.done_entries for iv in ivs] == list(itertools.accumulate(iv.entries for iv in ivs))
    assert ivs[-1].done_percent == 100
    entry = [iv.entry_latency for iv in ivs]
    assert [e.count if e is not None else -1 for e in entry] == [iv.entries for iv in ivs]
    assert [iv.io_latency.count for iv in ivs] == [iv.ops for iv in ivs]
    assert phase.entry_latency is not None
    assert sum(e.count for e in entry if e is not None) == phase.entry_latency.count
    assert [iv for _, iv in log.intervals] == list(ivs)


async def test_time_limited_phase_intervals_add_up(tmp_path: Path) -> None:
    interval_ns = 100 * MS
    phase, _, log = await observed_phase(
        tmp_path,
        NullEngine(lambda _: 2 * MS),
        interval_ns=interval_ns,
        ops=100_000,
        threads=2,
        timelimit=1,
    )
    assert phase.time_limited
    assert 0 < phase.last_done.ops < 100_000
    assert_series_matches_phase(phase, interval_ns)
    assert len(phase.intervals) in (10, 11)  # 1 s, the last op ending just past it
    assert phase.intervals[-1].done_percent < 100
    assert [iv for _, iv in log.intervals] == list(phase.intervals)


async def test_last_interval_is_cut_at_last_done_even_when_the_loop_is_late(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The event loop notices that the threads are done a little late (a busy machine, slow
    # output): meanwhile the live-interval ticks go on. Intervals after the last-done
    # instant must not be recorded, and the last one is still cut at that instant.
    real = run_slots

    async def late(
        spec: PhaseSpec,
        state: PhaseState,
        streams: Sequence[Stream],
        slots: list[list[Slot]],
        gate: StartGate,
        finished: Callable[[int, int], None],
    ) -> None:
        await real(spec, state, streams, slots, gate, finished)
        await anyio.sleep(0.1)

    monkeypatch.setattr("aiobench.run.phases.run_slots", late)
    interval_ns = 20 * MS
    phase, _, log = await observed_phase(
        tmp_path, NullEngine(lambda _: MS), interval_ns=interval_ns, ops=50
    )
    assert phase.last_done.ops == 50
    assert [iv for _, iv in log.intervals] == list(phase.intervals)
    after_end = [iv for iv in phase.intervals if iv.start_ns >= phase.last_done.elapsed_ns]
    assert after_end == [], (phase.last_done.elapsed_ns, spans(list(phase.intervals)))
    assert_series_matches_phase(phase, interval_ns)


# ---------------------------------------------------------------------------------------
# 3. A stall stands out in one interval; the phase average hides it


@pytest.mark.timing
async def test_injected_stall_stands_out_in_one_interval(tmp_path: Path) -> None:
    # 700 ops of 1 ms, the 101st stalled 300 ms: the phase goes on ~600 ms after the stall,
    # longer than a run's budget at depth 1 (DRAINING_BATCH_NS: the stall's interval is
    # known once the run it is in ends).
    stall_ns, op_ns = 300 * MS, MS
    calls = itertools.count()
    lock = threading.Lock()

    def delay(_index: int) -> int:
        with lock:
            n = next(calls)
        return stall_ns if n == 100 else op_ns  # one op of 300 ms among 1 ms ones

    interval_ns = 50 * MS
    phase, tally, log = await observed_phase(
        tmp_path, NullEngine(delay), interval_ns=interval_ns, ops=700
    )
    assert_series_matches_phase(phase, interval_ns)
    ivs = phase.intervals
    stalled = [i for i, iv in enumerate(ivs) if iv.io_latency.max_ns >= stall_ns]
    assert len(stalled) == 1, [iv.io_latency.max_ns for iv in ivs]
    stall = ivs[stalled[0]]
    assert stall.io_latency.max_ns == phase.io_latency.max_ns
    # The phase average hides it ...
    assert phase.io_latency.mean_ns * 10 < stall.io_latency.max_ns
    # ... while every other interval's max stays small, and the intervals the stall spans
    # have nothing done at all (one thread, one slot).
    others = [iv.io_latency.max_ns for i, iv in enumerate(ivs) if i != stalled[0]]
    assert max(others) < stall_ns // 3
    assert sum(1 for iv in ivs if iv.ops == 0) >= 4
    # It was reported as soon as its interval was over, while the phase still ran.
    arrived = log.arrived_ns[stalled[0]] - tally.start_ns
    assert stall.end_ns <= arrived < phase.last_done.elapsed_ns


def schema_errors(validator: Draft202012Validator, doc: object) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(doc)]


def read_ndjson(path: Path) -> list[Doc]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def wait_for(check: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return check()


@pytest.mark.root
def test_frozen_filesystem_shows_as_one_slow_interval_in_livejson(
    ext4_loop: Ext4Loop, tmp_path: Path, validator: Draft202012Validator
) -> None:
    mnt = ext4_loop.setup(640 * MIB)
    live, result = tmp_path / "live.ndjson", tmp_path / "result.json"
    args = ["-w", "-b", "4k", "-s", "512m", "--timelimit", "4", "--liveint", "100", "--nolive"]
    args += ["--livejson", str(live), "--json", str(result), str(mnt / "f")]
    proc = subprocess.Popen(
        [sys.executable, "-m", "aiobench", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONWARNINGS="error"),
    )
    try:
        # Two intervals written: the phase is under way. Then freeze the filesystem: the
        # write in progress waits until it is thawed.
        started = wait_for(lambda: len(read_ndjson(live)) >= 2 or proc.poll() is not None, 20)
        assert started and proc.poll() is None, "the run ended before the freeze"
        try:
            ext4_loop.freeze()
            time.sleep(0.6)
        finally:
            ext4_loop.thaw()
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, stderr
    assert "OPERATION" in stdout

    records = read_ndjson(live)
    assert records
    for record in records:
        assert schema_errors(validator, record) == []
    doc: Doc = json.loads(result.read_text(encoding="utf-8"))
    assert schema_errors(validator, doc) == []
    (phase,) = doc["phases"]
    assert [strip_record(r) for r in records] == phase["intervals"]

    maxima = [r["latency"]["io"]["max_ns"] for r in records]
    slowest = max(maxima)
    assert slowest >= 500 * MS, maxima  # the write that waited for the thaw
    # The whole-phase average hides it; most intervals never saw anything like it.
    assert phase["latency"]["io"]["mean_ns"] * 100 < slowest
    worked = sorted(r["latency"]["io"]["max_ns"] for r in records if r["ops"])
    assert worked[len(worked) // 2] * 10 < slowest, worked
    # While frozen, intervals went by with nothing done.
    assert sum(1 for r in records if r["ops"] == 0) >= 3


def strip_record(record: Doc) -> Doc:
    """A --livejson record without its record-only keys: an interval of the final JSON."""
    return {k: v for k, v in record.items() if k not in RECORD_ONLY_KEYS}


# ---------------------------------------------------------------------------------------
# 4. --livejson and --livecsv from the CLI


def test_livejson_and_livecsv_append_across_runs(
    run_cli: RunCli, tmp_path: Path, validator: Draft202012Validator
) -> None:
    live_json, live_csv = tmp_path / "live.ndjson", tmp_path / "live.csv"
    docs: list[Doc] = []
    for n in (1, 2):
        out = tmp_path / f"run{n}.json"
        proc = run_cli(
            "-w", "-r", "-b", "4k", "-s", "8m", "--liveint", "10", "--label", f"run{n}",
            "--livejson", str(live_json), "--livecsv", str(live_csv), "--json", str(out), "f",
            cwd=str(tmp_path),
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        docs.append(json.loads(out.read_text(encoding="utf-8")))

    expected = [
        (doc["meta"]["label"], phase["phase"], phase["start_time"], iv)
        for doc in docs
        for phase in doc["phases"]
        for iv in phase["intervals"]
    ]
    assert {(label, name) for label, name, _, _ in expected} == {
        (run, name) for run in ("run1", "run2") for name in ("WRITE", "READ")
    }
    for doc in docs:
        assert doc["meta"]["live_interval_ms"] == 10
        assert doc["meta"]["config"]["livejson_path"] == str(live_json)

    # --livejson: one valid record per interval, in order, both runs, same as the final JSON.
    records = read_ndjson(live_json)
    for record in records:
        assert schema_errors(validator, record) == []
        assert record["schema_version"] == 3 and record["record"] == "interval"
    assert [(r["label"], r["phase"], strip_record(r)) for r in records] == [
        (label, name, iv) for label, name, _, iv in expected
    ]
    for record, (_, _, start_time, iv) in zip(records, expected, strict=True):
        moment = datetime.datetime.fromisoformat(record["iso_date"])
        at_end = datetime.datetime.fromisoformat(start_time) + datetime.timedelta(
            microseconds=iv["end_ns"] // 1000
        )
        assert abs(moment - at_end) <= datetime.timedelta(milliseconds=1)

    # --livecsv: the header once, then one row per interval of both runs.
    with open(live_csv, encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    header = rows[0]
    assert header[: len(ELBENCHO_LIVE_COLUMNS)] == ELBENCHO_LIVE_COLUMNS
    assert sum(1 for row in rows if row == header) == 1
    body = rows[1:]
    assert len(body) == len(expected)
    col = {name: header.index(name) for name in header}
    for row, (label, name, _, iv) in zip(body, expected, strict=True):
        assert len(row) == len(header)
        assert row[col["Label"]] == label and row[col["Phase"]] == name
        assert int(row[col["RuntimeMS"]]) == iv["end_ns"] // MS
        assert int(row[col["Done%"]]) == iv["done_percent"]
        assert int(row[col["DoneBytes"]]) == iv["done_bytes"]
        assert int(row[col["IOPS"]]) == iv["iops"]
        assert int(row[col["MiB/s"]]) == iv["bytes_per_s"] // MIB
        assert int(row[col["Active"]]) == iv["active_threads"]
        assert int(row[col["CPU"]]) == iv["cpu_percent"]
        io = iv["latency"]["io"]
        assert int(row[col["Lat IO us"]]) == int(io["mean_ns"]) // 1000
        if io["count"]:
            assert row[col["IO lat us [max]"]] == f"{io['max_ns'] / 1000:.3f}"


def test_dir_mode_intervals_carry_entry_latency(
    run_cli: RunCli, tmp_path: Path, validator: Draft202012Validator
) -> None:
    root = tmp_path / "D"
    root.mkdir()
    live, out = tmp_path / "live.ndjson", tmp_path / "result.json"
    proc = run_cli(
        "-d", "-w", "-r", "-F", "-D", "-t", "2", "-n", "2", "-N", "100", "-s", "8k", "-b", "4k",
        "--liveint", "10", "--livejson", str(live), "--json", str(out), str(root),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc: Doc = json.loads(out.read_text(encoding="utf-8"))
    assert schema_errors(validator, doc) == []
    records = read_ndjson(live)
    for record in records:
        assert schema_errors(validator, record) == []
    assert [(r["phase"], strip_record(r)) for r in records] == [
        (phase["phase"], iv) for phase in doc["phases"] for iv in phase["intervals"]
    ]
    assert [p["phase"] for p in doc["phases"]] == ["MKDIRS", "WRITE", "READ", "RMFILES", "RMDIRS"]
    for record in records:
        latency = record["latency"]
        assert latency["entries"]["count"] == record["entries"]
        assert latency["io"]["count"] == record["ops"]
    for phase in doc["phases"]:
        ivs = phase["intervals"]
        assert sum(iv["entries"] for iv in ivs) == phase["last_done"]["entries"]
        assert sum(iv["ops"] for iv in ivs) == phase["last_done"]["ops"]
        assert ivs[-1]["end_ns"] == phase["last_done"]["elapsed_ns"]
    write = next(p for p in doc["phases"] if p["phase"] == "WRITE")
    assert sum(iv["entries"] for iv in write["intervals"]) == 400
    assert sum(iv["ops"] for iv in write["intervals"]) == 800  # two blocks per file


def test_default_interval_is_two_seconds(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    proc = run_cli("-w", "-r", "-b", "64k", "-s", "1m", "--json", str(out), "f", cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    doc: Doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["meta"]["live_interval_ms"] == 2000
    for phase in doc["phases"]:
        (iv,) = phase["intervals"]  # well under 2 s: one interval, cut at the end
        assert (iv["start_ns"], iv["end_ns"]) == (0, phase["last_done"]["elapsed_ns"])
        assert iv["ops"] == iv["done_ops"] == phase["last_done"]["ops"] == 16
        assert iv["latency"]["io"]["count"] == 16


def test_live_interval_below_10_ms_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    proc = run_cli("-w", "-s", "1m", "--liveint", "9", "f", cwd=str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.startswith("Error: --liveint")
    assert proc.stdout == ""
    assert not (tmp_path / "f").exists()


def test_endless_work_is_done_when_its_time_is_up_not_when_its_last_op_ended() -> None:
    def series() -> IntervalSeries:
        s = IntervalSeries(start_ns=0, interval_ns=100, planned_units=0, dir_mode=False, cpus=1)
        s.endless_until_ns = 300  # --infloop with a time limit
        s.add(OpRun(0, [0, 0], 4096), arr(150, 297), EMPTY, arr(5, 5))
        return s

    # The last operation ended at 297, just before the limit, which passed meanwhile.
    up = series().finish(297, one_thread, CpuSample(297, 0), time_up=True)
    assert [iv.done_percent for iv in up] == [33, 66, 100]
    assert up[-1].end_ns == 297  # the interval still ends where the work did
    # Stopped before the limit (a signal or an error): the share of the time passed.
    stopped = series().finish(297, one_thread, CpuSample(297, 0))
    assert [iv.done_percent for iv in stopped] == [33, 66, 99]
