"""``aiobench check``'s pure parts: the plan, the judgement rules, the markdown, and
``compare --fail-below``'s gate, without disk or event loop."""

from __future__ import annotations

import math

from aiobench.check import plan
from aiobench.check.judge import judge
from aiobench.check.model import CheckResult, Finding, Loop, Row
from aiobench.check.plan import Calibration, CheckTest
from aiobench.check.render import render_check, render_markdown
from aiobench.render.compare import compare_lines, render_compare, render_compare_markdown
from aiobench.results.model import Compared, IntervalStats, PhaseResult, Totals
from aiobench.stats.recorders import LatencySummary
from tests.helpers import md_table

MIB = 1 << 20
S = 1_000_000_000
EMPTY = LatencySummary(
    count=0, min_ns=0, max_ns=0, mean_ns=0.0, stddev_ns=0.0, percentiles_ns={}, hdr=""
)


# ---------------------------------------------------------------------------------------
# plan


def test_battery_is_crystaldiskmarks_in_its_order() -> None:
    assert plan.TABLE_ORDER == (
        "SEQ1M Q8T1 read", "SEQ1M Q8T1 write", "SEQ1M Q1T1 read", "SEQ1M Q1T1 write",
        "RND4K Q32T1 read", "RND4K Q32T1 write", "RND4K Q1T1 read", "RND4K Q1T1 write",
        "META create", "META stat", "META delete",
    )  # fmt: skip
    assert sorted(t.label for t in plan.FILE_TESTS) == sorted(plan.TABLE_ORDER[:8])
    assert plan.FILL.label == "SEQ1M Q8T1 write"
    assert {t.metric for t in plan.FILE_TESTS if t.rand} == {"iops"}
    assert {t.metric for t in plan.FILE_TESTS if not t.rand} == {"bytes_per_s"}
    assert plan.table_order(["META stat", "x", "SEQ1M Q1T1 read"]) == [
        "SEQ1M Q1T1 read",
        "META stat",
        "x",
    ]


def test_slots_share_what_is_left_and_never_vanish() -> None:
    assert plan.slot_ns(9 * S, 9, 0) == S
    assert plan.slot_ns(9 * S, 9, S // 10) == S - S // 10
    assert plan.slot_ns(0, 3, S) == plan.MIN_TEST_NS  # late: still a measurable test
    assert plan.slot_ns(5 * S, 0, 0) == plan.MIN_TEST_NS


def test_metadata_files_follow_the_slower_rate_within_bounds() -> None:
    def cal(create: int, delete: int) -> Calibration:
        return Calibration(
            write_bytes_per_s=MIB,
            create_entries_per_s=create,
            delete_entries_per_s=delete,
            run_overhead_ns=0,
        )

    # 30 s: 1.5 s per phase at a quarter of 16,000/s (the slower rate) -> 6000 files
    assert plan.metadata_files(cal(40_000, 16_000), 30 * S) == 6000
    assert plan.metadata_files(cal(100, 100), 30 * S) == plan.METADATA_FILES_MIN
    assert plan.metadata_files(cal(10**7, 10**7), 30 * S) == plan.METADATA_FILES_MAX


def test_intervals_give_compare_its_noise() -> None:
    assert plan.live_interval_ms(2 * S) == 200
    assert plan.live_interval_ms(S // 10) == plan.MIN_LIVE_INTERVAL_MS
    assert plan.live_interval_ms(3600 * S) == plan.MAX_LIVE_INTERVAL_MS


def test_free_space_refusal_names_both_figures() -> None:
    assert plan.free_space_error(plan.REQUIRED_FREE_BYTES) is None
    message = plan.free_space_error(MIB // 2)
    assert message == "needs 48 MiB free for its test files, has 0.5 MiB available"


def _size(**over: object) -> plan.FileSize:
    args: dict[str, object] = dict(
        write_bytes_per_s=1000 * MIB,
        fill_ns=S,
        budget_ns=30 * S,
        free_bytes=100 * 1024 * MIB,
        direct=True,
        fstype="ext4",
        memory_bytes=8 * 1024 * MIB,
    )
    args.update(over)
    return plan.file_size(**args)  # type: ignore[arg-type]


def test_file_size_from_rate_and_free_space() -> None:
    sized = _size()
    assert sized.bytes == 800 * MIB and sized.notes == () and not sized.past_cache
    assert _size(free_bytes=200 * MIB).bytes == 100 * MIB  # at most half the free space
    assert _size(write_bytes_per_s=MIB).bytes == plan.MIN_FILE_BYTES


def test_file_size_without_direct_io_goes_past_memory_where_it_can() -> None:
    sized = _size(direct=False, memory_bytes=4 * 1024 * MIB)  # 5 GiB file in 5.1 s
    assert sized.past_cache and sized.bytes == 5 * 1024 * MIB
    assert "sized past memory" in sized.notes[0]
    slow = _size(direct=False, write_bytes_per_s=100 * MIB)  # 10 GiB at 100 MiB/s
    assert not slow.past_cache and slow.bytes == 80 * MIB
    assert "reads may come from the page cache" in slow.notes[0]
    assert "more than 40% of the budget" in slow.notes[0]
    small = _size(direct=False, free_bytes=1024 * MIB)
    assert not small.past_cache and "would not fit in half the free space" in small.notes[0]
    memory = _size(direct=True, fstype="tmpfs")
    assert "tmpfs keeps files in memory" in memory.notes[0]


def test_a_cut_fill_keeps_only_what_is_surely_written() -> None:
    assert plan.usable_after_cut(100 * MIB, 8, MIB) == 92 * MIB
    assert plan.usable_after_cut(5 * MIB, 8, MIB) == 0


# ---------------------------------------------------------------------------------------
# judgement


def _row(label: str, value: int, p50: int = 100_000, p99: int = 200_000, **over: object) -> Row:
    test = next(t for t in (*plan.FILE_TESTS, *plan.METADATA_TESTS) if t.label == label)
    args: dict[str, object] = dict(
        test=test, run=0, phase=0, value=value, p50_ns=p50, p99_ns=p99, count=10_000
    )
    args["status"] = "time_limited"
    args.update(over)
    return Row(**args)  # type: ignore[arg-type]


def _rules(rows: list[Row], **over: object) -> list[tuple[str | None, str]]:
    args: dict[str, object] = dict(fstype="ext4", rotational=False, direct=True)
    args.update(over)
    return [(f.test, f.rule) for f in judge(rows, **args)]  # type: ignore[arg-type]


def test_a_healthy_set_of_rows_has_no_finding() -> None:
    rows = [
        _row("SEQ1M Q8T1 read", 2000 * MIB, p50=3_000_000, p99=6_000_000),
        _row("SEQ1M Q1T1 read", 1000 * MIB, p50=900_000, p99=2_000_000),
        _row("RND4K Q1T1 read", 10_000, p50=90_000, p99=300_000),
        _row("META create", 30_000, status="ok"),
        _row("META stat", 900_000, status="ok"),
        _row("META delete", 40_000, status="ok"),
    ]
    assert _rules(rows) == []


def test_reads_faster_than_a_device_are_the_page_cache() -> None:
    seq = _row("SEQ1M Q1T1 read", 30_000 * MIB, p50=30_000, p99=60_000)
    rnd = _row("RND4K Q1T1 read", 500_000, p50=1_500, p99=3_000)
    assert _rules([seq, rnd], direct=False) == [
        ("SEQ1M Q1T1 read", "page_cache"),
        ("RND4K Q1T1 read", "page_cache"),
    ]
    found = judge([seq], fstype="ext4", rotational=False, direct=False)[0]
    assert "the page cache (memory) answered" in found.message
    assert (
        "despite direct I/O" in judge([seq], fstype="ext4", rotational=None, direct=True)[0].message
    )
    # On tmpfs the memory is the device: no finding (a note says so).
    assert _rules([seq, rnd], fstype="tmpfs") == []
    # A spinning disk's limits, without direct I/O only.
    disk = _row("SEQ1M Q8T1 read", 900 * MIB, p50=8_000_000)
    assert _rules([disk], rotational=True, direct=False) == [("SEQ1M Q8T1 read", "page_cache")]
    assert _rules([disk], rotational=True, direct=True) == []
    # Writes are not judged by it.
    assert _rules([_row("SEQ1M Q1T1 write", 30_000 * MIB, p50=30_000)], direct=False) == []


def test_p99_far_above_p50_is_stalls() -> None:
    row = _row("RND4K Q1T1 write", 10_000, p50=50_000, p99=51 * 50_000)
    found = judge([row], fstype="ext4", rotational=None, direct=True)
    assert [(f.rule, f.test) for f in found] == [("stalls", "RND4K Q1T1 write")]
    assert "is 51x p50" in found[0].message
    assert _rules([_row("RND4K Q1T1 write", 10_000, p50=50_000, p99=50 * 50_000)]) == []


def test_a_deep_queue_far_below_its_shallow_twin() -> None:
    deep = _row("RND4K Q32T1 read", 4_000)
    shallow = _row("RND4K Q1T1 read", 10_000)
    assert _rules([deep, shallow]) == [("RND4K Q32T1 read", "queue")]
    assert _rules([_row("RND4K Q32T1 read", 5_000), shallow]) == []


def test_metadata_create_or_delete_far_below_the_other() -> None:
    rows = [
        _row("META create", 100_000, status="ok"),
        _row("META stat", 5_000_000, status="ok"),  # stat is fast by nature: no finding
        _row("META delete", 9_000, status="ok"),
    ]
    assert _rules(rows) == [("META delete", "metadata")]


def test_few_operations_and_odd_endings_are_named() -> None:
    assert _rules([_row("SEQ1M Q1T1 read", 100 * MIB, count=20)]) == [
        ("SEQ1M Q1T1 read", "few_ops")
    ]
    assert _rules([_row("META create", 1000, status="time_limited")]) == [("META create", "status")]
    assert _rules([_row("SEQ1M Q1T1 read", 100 * MIB, status="interrupted", count=3)]) == [
        ("SEQ1M Q1T1 read", "status")
    ]


def test_a_loop_device_under_dir_that_caches_its_backing_file_is_named_first() -> None:
    def loop(direct_io: bool, fstype: str = "ext4") -> Loop:
        return Loop(
            device="/dev/loop3",
            backing_file="/srv/disk.img",
            direct_io=direct_io,
            backing_fstype=fstype,
        )

    healthy = [_row("SEQ1M Q1T1 read", 1000 * MIB, p50=900_000, p99=2_000_000)]
    stalled = [_row("SEQ1M Q1T1 read", 1000 * MIB, p50=900_000, p99=90_000_000)]
    (cached,) = judge(healthy, fstype="ext4", rotational=True, direct=True, loops=[loop(False)])
    assert (cached.test, cached.rule) == (None, "page_cache")
    for needle in ("/dev/loop3", "/srv/disk.img", "direct I/O is off", "--direct-io=on"):
        assert needle in cached.message
    # Named before the rows' findings, whatever the figures say.
    assert _rules(stalled, loops=[loop(False)]) == [
        (None, "page_cache"),
        ("SEQ1M Q1T1 read", "stalls"),
    ]
    assert _rules(healthy, loops=[loop(True)]) == []
    (memory,) = judge(
        healthy, fstype="ext4", rotational=None, direct=True, loops=[loop(True, "tmpfs")]
    )
    assert "/srv/disk.img on tmpfs: every figure is one of memory" in memory.message


# ---------------------------------------------------------------------------------------
# rendering


def _result(rows: list[Row], findings: list[Finding]) -> CheckResult:
    meta: dict[str, object] = {
        "dir": "/scratch/a|b",
        "filesystem": "ext4",
        "direct_io": True,
        "ioengine": "native",
        "budget_s": 30,
        "elapsed_ns": 29 * S,
        "notes": ["a note"],
        "left_behind": [],
    }
    return CheckResult(meta=meta, rows=rows, findings=findings)


def test_markdown_is_a_table_a_parser_reads() -> None:
    rows = [
        _row("RND4K Q1T1 read", 12_345, p50=80_000, p99=400_000),
        _row("SEQ1M Q8T1 write", 1500 * MIB, p50=5_000_000, p99=9_000_000),
        _row("META create", 30_000, p50=20_000, p99=50_000, status="ok"),
    ]
    finding = Finding(test=None, rule="status", message="x | y")
    text = render_markdown(_result(rows, [finding]))
    header, body = md_table(text)
    assert header == ["test", "op", "result", "unit", "p50", "p99"]
    assert body == [
        ["SEQ1M Q8T1", "write", "1500", "MiB/s", "5.00ms", "9.00ms"],
        ["RND4K Q1T1", "read", "12345", "IOPS", "80us", "400us"],
        ["META", "create", "30000", "files/s", "20us", "50us"],
    ]
    assert "- x \\| y" in text  # a pipe in text never breaks the table
    assert text.startswith("### aiobench check /scratch/a\\|b: ext4, direct I/O")


def test_table_has_a_row_per_test_then_notes_and_warnings() -> None:
    rows = [_row("SEQ1M Q1T1 read", 700 * MIB, p50=1_400_000, p99=2_000_000)]
    text = render_check(_result(rows, [Finding(test=None, rule="stalls", message="slow")]))
    lines = text.splitlines()
    assert lines[0] == (
        "aiobench check /scratch/a|b: ext4, direct I/O, native engine, budget 30 s, took 29.0 s"
    )
    assert lines[2].split() == ["TEST", "OP", "RESULT", "p50", "p99"]
    assert lines[4].split() == ["SEQ1M", "Q1T1", "read", "700", "MiB/s", "1.40ms", "2.00ms"]
    assert lines[-2:] == ["Note: a note.", "Warning: slow."]


# ---------------------------------------------------------------------------------------
# compare --fail-below


def _lat(p50: int) -> LatencySummary:
    return LatencySummary(
        count=1000,
        min_ns=p50,
        max_ns=p50 * 2,
        mean_ns=float(p50),
        stddev_ns=0.0,
        percentiles_ns={50.0: p50, 99.0: p50 * 2},
        hdr="x",
    )


def _phase(iops_per_interval: list[int], slower: float = 1.0) -> PhaseResult:
    """A read phase of 4 KiB operations at these interval rates (100 ms intervals), its
    total time ``slower`` times theirs."""
    step = S // 10
    elapsed_ns = int(len(iops_per_interval) * step * slower)
    intervals = tuple(
        IntervalStats(
            index=i,
            start_ns=i * step,
            end_ns=(i + 1) * step,
            ops=n // 10,
            bytes=n // 10 * 4096,
            entries=0,
            done_ops=0,
            done_bytes=0,
            done_entries=0,
            done_percent=0,
            active_threads=1,
            cpu_percent=0,
            io_latency=EMPTY,
        )
        for i, n in enumerate(iops_per_interval)
    )
    ops = sum(n // 10 for n in iops_per_interval)
    totals = Totals(elapsed_ns=elapsed_ns, ops=ops, bytes=ops * 4096)
    return PhaseResult(
        name="READ",
        first_done=totals,
        last_done=totals,
        io_latency=_lat(50_000),
        peak_inflight_ops=1,
        threads=(),
        intervals=intervals,
    )


def _doc(phase: PhaseResult, label: str = "RND4K Q1T1 read") -> Compared:
    return Compared(kind="check", meta={}, phases=[(label, phase)])


STEADY = [10_000, 10_200, 9_800, 10_000, 10_100, 9_900]


def test_a_rate_that_fell_by_half_fails_and_says_by_how_much() -> None:
    a, b = _doc(_phase(STEADY)), _doc(_phase(STEADY, slower=2))
    lines = compare_lines(a, b, fail_below=10)
    failed = {line.metric: line.note for line in lines if line.failed}
    assert set(failed) == {"IOPS", "Throughput MiB/s"}
    assert failed["IOPS"] == "FAIL: fell 50.0% (limit 10%, runs' noise \u00b11.6%)"
    text = render_compare(a, b, "base.json", "new.json", fail_below=10)
    assert text.endswith(
        "FAIL: 2 of the rates fell by more than 10%: RND4K Q1T1 read IOPS, "
        "RND4K Q1T1 read Throughput MiB/s\n"
    )
    # Elapsed time and latency are shown, never gated.
    assert not any(
        line.failed for line in lines if line.metric.startswith(("Elapsed", "IO latency"))
    )


def test_a_fall_within_the_noise_or_the_limit_passes() -> None:
    """The noise of a gate is the error of the runs' mean rates, not one interval's."""
    noisy = [10_000, 16_000, 4_000, 12_000, 8_000, 10_000]  # varies by 40 %
    a, b = _doc(_phase(noisy)), _doc(_phase(noisy, slower=1 / 0.7))  # fell 30 %
    lines = compare_lines(a, b, fail_below=10)
    assert not any(line.failed for line in lines)
    iops = next(line for line in lines if line.metric == "IOPS")
    # Two standard errors of the difference of the means: 2 * sqrt(2 * 4000^2 / 6) = 46 %
    assert iops.note == "fell 30.0%, more than 10% but within the runs' noise (\u00b146.2%)"
    assert render_compare(a, b, "a", "b", fail_below=10).endswith(
        "OK: no rate fell by more than 10% beyond the runs' noise\n"
    )
    assert not any(line.failed for line in compare_lines(a, b, fail_below=35))
    # A rise never fails.
    up = _doc(_phase(STEADY, slower=0.5))
    assert not any(line.failed for line in compare_lines(_doc(_phase(STEADY)), up, 10))


def test_a_bursty_run_far_below_fails_though_its_intervals_vary_by_100_percent() -> None:
    """A throttled device delivers in bursts: its single intervals vary by 100 %, yet its
    mean is known well enough to see it fell by 90 %."""
    a = _doc(_phase(STEADY))
    b = _doc(_phase([0, 2000, 0, 2000, 0, 2000], slower=1.0))
    iops = next(line for line in compare_lines(a, b, 10) if line.metric == "IOPS")
    assert iops.failed and iops.note.startswith("FAIL: fell 90.0% (limit 10%, runs' noise")


def test_with_unknown_noise_the_limit_alone_decides_and_the_note_says_why() -> None:
    a, b = _doc(_phase([10_000, 10_000])), _doc(_phase([10_000, 10_000], slower=2))
    iops = next(line for line in compare_lines(a, b, 10) if line.metric == "IOPS")
    assert iops.failed
    assert iops.note == "FAIL: fell 50.0% (limit 10%; noise unknown: fewer than 3 full intervals)"


def test_compare_markdown_is_a_table_with_the_failures_marked() -> None:
    a, b = _doc(_phase(STEADY)), _doc(_phase(STEADY, slower=2))
    text = render_compare_markdown(a, b, "base.json", "new.json", fail_below=10)
    header, body = md_table(text)
    assert header == ["phase", "metric", "A", "B", "B/A", "B is", "note"]
    assert len(body) == 4 and all(len(row) == 7 for row in body)  # no elapsed time
    iops = next(row for row in body if row[1] == "IOPS")
    assert iops[:6] == ["RND4K Q1T1 read", "IOPS", "10000", "5000", "0.50\u00d7", "worse"]
    assert iops[6] == "**FAIL: fell 50.0% (limit 10%, runs' noise \u00b11.6%)**"
    assert text.rstrip().endswith("RND4K Q1T1 read Throughput MiB/s")
    assert math.isclose(float(iops[3]) / float(iops[2]), 0.5)


def test_test_dataclass_labels() -> None:
    assert CheckTest(name="RND4K Q32T1", op="read", rand=True, iodepth=32).label == (
        "RND4K Q32T1 read"
    )


def test_checks_are_compared_without_their_budgeted_time_and_advised_on_budget() -> None:
    """A check's tests run for their share of --budget: their elapsed time is no measure to
    call better or worse, and a check has no --liveint to shorten."""
    short = [10_000, 10_200]  # two full intervals: the noise is unknown
    a = Compared(kind="check", meta={"budget_s": 3}, phases=[("RND4K Q1T1 read", _phase(short))])
    b = Compared(kind="check", meta={"budget_s": 5}, phases=[("RND4K Q1T1 read", _phase(short, 2))])
    lines = compare_lines(a, b)
    assert [line.metric for line in lines][:2] == ["IOPS", "Throughput MiB/s"]
    assert not any(line.metric.startswith("Elapsed") for line in lines)
    text = render_compare(a, b, "a.json", "b.json")
    assert "--liveint" not in text
    assert text.endswith(
        "Noise unknown: a test's noise is the spread of a metric over its full live "
        "intervals, and 3 are needed to measure it.\n"
        "Check again with a longer --budget (A used 3 s, B 5 s): each test gets about ten "
        "intervals of at least 50 ms.\n"
    )
    assert not any("Elapsed" in row for row in render_compare_markdown(a, b, "a", "b").split("\n"))
