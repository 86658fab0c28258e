"""Per-target report (SPEC §9): per-PATH accounting, min/max/average/aggregate, table, JSON.

Pure checks of the summary and its text block; exact per-target counts from real runs
(file mode, random reads, dir mode with and without shared dirs); a deterministic slow
target on the null engine; and the issue's must-show on real loop devices, one of them
throttled with cgroup v1 blkio, where the report must name that device as min.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from aiobench.engines.base import Job, RawBatch
from aiobench.engines.null import NullEngine
from aiobench.kinds import READ
from aiobench.plan.workload import Layout, OpRun
from aiobench.render.table import TableOptions, phase_text, render_table, target_block
from aiobench.results.model import PhaseResult, TargetTotals, Totals, target_report
from aiobench.run import worker
from aiobench.run.phases import run_phase
from aiobench.stats.recorders import LatencyRecorder
from tests.helpers import CHANCE_ROW, RunCli, context, make_cfg

MIB = 1 << 20
KIB = 1024
Doc = dict[str, Any]
RATE_KEYS = ("bytes_per_s", "iops", "entries_per_s")
BLOCK_ROW_TITLE = "per target"


# --- helpers -------------------------------------------------------------------------------


def elbencho_rate(total: int, elapsed_ns: int) -> int:
    """``int(total * 1e6 / elapsed_us)``, written out here independently of aiobench.units."""
    elapsed_us = elapsed_ns // 1000
    return int(total * 1e6 / elapsed_us) if elapsed_us > 0 else 0


def target(
    index: int, *, ops: int = 0, nbytes: int = 0, entries: int = 0, elapsed_ns: int = 0
) -> TargetTotals:
    return TargetTotals(
        index=index,
        path=f"p{index}",
        ops=ops,
        bytes=nbytes,
        entries=entries,
        elapsed_ns=elapsed_ns,
    )


def phase_of(name: str, targets: tuple[TargetTotals, ...]) -> PhaseResult:
    """A phase whose last-done totals are the sums over ``targets``."""
    last = Totals(
        elapsed_ns=max((t.elapsed_ns for t in targets), default=0),
        ops=sum(t.ops for t in targets),
        bytes=sum(t.bytes for t in targets),
        entries=sum(t.entries for t in targets),
    )
    return PhaseResult(
        name=name,
        first_done=last,
        last_done=last,
        io_latency=LatencyRecorder().summary(),
        peak_inflight_ops=1,
        threads=(),
        targets=targets,
    )


def assert_valid(validator: Draft202012Validator, doc: Doc) -> None:
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(doc)]
    assert errors == []


def run_json(
    run_cli: RunCli, validator: Draft202012Validator, cwd: Path, *args: str, block: bool = True
) -> tuple[Doc, str]:
    """Run the CLI with ``--json FILE`` (and ``--pertarget`` unless not ``block``); the
    schema-checked document and the table text."""
    out = cwd / "result.json"
    out.unlink(missing_ok=True)
    shown = ["--pertarget"] if block else []
    proc = run_cli(*args, *shown, "--nolive", "--json", str(out), cwd=str(cwd))
    assert proc.returncode == 0, proc.stderr
    doc: Doc = json.loads(out.read_text(encoding="utf-8"))
    assert_valid(validator, doc)
    return doc, proc.stdout


def phases_by_name(doc: Doc) -> dict[str, Doc]:
    return {p["phase"]: p for p in doc["phases"]}


def check_summary(phase: Doc) -> None:
    """The JSON per_target block agrees with its own target list and the phase totals."""
    per = phase["per_target"]
    targets = per["targets"]
    assert [t["index"] for t in targets] == list(range(len(targets)))
    last = phase["last_done"]
    for key in ("ops", "bytes", "entries"):
        assert sum(t[key] for t in targets) == last[key], key
    for t in targets:
        assert t["iops"] == elbencho_rate(t["ops"], t["elapsed_ns"])
        assert t["bytes_per_s"] == elbencho_rate(t["bytes"], t["elapsed_ns"])
        assert t["entries_per_s"] == elbencho_rate(t["entries"], t["elapsed_ns"])
        # the slowest thread that worked on a target is at most the slowest of all
        assert t["elapsed_ns"] <= last["elapsed_ns"]
    worked = [t for t in targets if t["ops"] or t["entries"]]
    if not worked:
        for key in ("metric", "min", "max", "average", "aggregate"):
            assert per[key] is None, key
        return
    if any(t["bytes"] for t in worked):
        metric = "bytes_per_s"
    elif any(t["entries"] for t in worked):
        metric = "entries_per_s"
    else:
        metric = "iops"
    assert per["metric"] == metric
    low = min(worked, key=lambda t: (t[metric], t["index"]))
    high = max(worked, key=lambda t: (t[metric], -t["index"]))
    for key, want in (("min", low), ("max", high)):
        assert per[key]["index"] == want["index"], key
        assert per[key]["path"] == want["path"], key
        for rate_key in RATE_KEYS:
            assert per[key][rate_key] == want[rate_key], (key, rate_key)
    for rate_key in RATE_KEYS:
        values = [t[rate_key] for t in worked]
        assert per["average"][rate_key] == sum(values) // len(values), rate_key
        assert per["aggregate"][rate_key] == sum(values), rate_key


def block_lines(table: str, phase: str) -> list[str]:
    """The lines of ``phase``'s per-target block in a table ('' lines if there is none)."""
    lines = table.splitlines()
    title = f" {phase:<10} {BLOCK_ROW_TITLE:<17}:"
    starts = [i for i, line in enumerate(lines) if line.startswith(title)]
    assert len(starts) <= 1, table
    if not starts:
        return []
    end = lines.index("---", starts[0])
    return lines[starts[0] : end]


def row(lines: list[str], name: str) -> str:
    prefix = f"{'':<11} {name:<17}:"
    found = [line for line in lines if line.startswith(prefix)]
    assert len(found) == 1, (name, lines)
    return found[0]


def check_text_block(table: str, phase: Doc) -> None:
    """The table's block for ``phase`` names the JSON's min and max and lists every target."""
    lines = block_lines(table, phase["phase"])
    per = phase["per_target"]
    assert lines, table
    assert row(lines, "Min").endswith(f"#{per['min']['index']} {per['min']['path']}")
    assert row(lines, "Max").endswith(f"#{per['max']['index']} {per['max']['path']}")
    for t in per["targets"]:
        line = row(lines, f"#{t['index']}")
        assert line.endswith(f"  {t['path']}"), line
        if t["bytes"]:
            assert line.split(":", 1)[1].split()[0] == str(t["bytes_per_s"] // MIB), line


def ranks_per_file(sizes: list[int], block: int, threads: int) -> list[set[int]]:
    """Which thread ranks touch each file: ``total // threads`` blocks each, last takes rest."""
    bounds = [0]
    for size in sizes:
        bounds.append(bounds[-1] + -(-size // block))
    each = bounds[-1] // threads
    spans = [(r * each, (r + 1) * each if r < threads - 1 else bounds[-1]) for r in range(threads)]
    return [
        {r for r, (lo, hi) in enumerate(spans) if lo < bounds[i + 1] and hi > bounds[i]}
        for i in range(len(sizes))
    ]


def slowest(phase: Doc, ranks: set[int]) -> int:
    return max((phase["threads"][r]["elapsed_ns"] for r in ranks), default=0)


# --- 1. pure: target_report ----------------------------------------------------------------


def test_target_rates_use_the_truncating_formula() -> None:
    t = target(0, ops=3, nbytes=3 * 4096, entries=7, elapsed_ns=1_234_567)
    assert t.iops == int(3 * 1e6 / 1234)
    assert t.bytes_per_s == int(3 * 4096 * 1e6 / 1234)
    assert t.entries_per_s == int(7 * 1e6 / 1234)
    assert t.rates() == {
        "bytes_per_s": t.bytes_per_s,
        "iops": t.iops,
        "entries_per_s": t.entries_per_s,
    }
    # under a microsecond: no rate rather than a division by zero
    assert target(1, ops=1, nbytes=4096, elapsed_ns=999).rates() == dict.fromkeys(RATE_KEYS, 0)


def test_throughput_decides_min_and_max_when_bytes_moved() -> None:
    # By IOPS the order would be the other way round: small blocks fast, big blocks slow.
    many_small = target(0, ops=1000, nbytes=1000 * 4096, elapsed_ns=1_000_000_000)
    few_big = target(1, ops=10, nbytes=10 * MIB, elapsed_ns=1_000_000_000)
    report = target_report((many_small, few_big))
    assert report is not None
    assert report.metric == "bytes_per_s"
    assert report.slowest.index == 0
    assert report.fastest.index == 1
    assert report.average == {
        "bytes_per_s": (4_096_000 + 10_485_760) // 2,
        "iops": (1000 + 10) // 2,
        "entries_per_s": 0,
    }
    assert report.aggregate == {
        "bytes_per_s": 4_096_000 + 10_485_760,
        "iops": 1010,
        "entries_per_s": 0,
    }


def test_entries_per_s_decides_without_bytes() -> None:
    # STAT-like target (entries, no block I/O) against one with many ops but fewer entries.
    stat_only = target(0, entries=100, elapsed_ns=1_000_000_000)
    op_heavy = target(1, ops=500, entries=50, elapsed_ns=1_000_000_000)
    report = target_report((stat_only, op_heavy))
    assert report is not None
    assert report.metric == "entries_per_s"
    assert (report.slowest.index, report.fastest.index) == (1, 0)
    assert report.average == {"bytes_per_s": 0, "iops": 250, "entries_per_s": 75}
    assert report.aggregate == {"bytes_per_s": 0, "iops": 500, "entries_per_s": 150}


def test_iops_decides_without_bytes_or_entries() -> None:
    second = 1_000_000_000
    targets = (
        target(0, ops=30, elapsed_ns=second),
        target(1, ops=20, elapsed_ns=second),
        target(2, ops=26, elapsed_ns=second),
    )
    report = target_report(targets)
    assert report is not None
    assert report.metric == "iops"
    assert (report.slowest.index, report.fastest.index) == (1, 0)
    assert report.average["iops"] == 76 // 3  # integer mean: 25, not 25.33
    assert report.aggregate["iops"] == 76


@pytest.mark.parametrize(
    ("ops", "slowest", "fastest"),
    [
        ((10, 10, 10), 0, 0),  # all equal: both name the first
        ((5, 10, 10), 0, 1),  # two fastest: the lower index
        ((10, 5, 5), 1, 0),  # two slowest: the lower index
    ],
)
def test_ties_go_to_the_lower_index(ops: tuple[int, ...], slowest: int, fastest: int) -> None:
    targets = tuple(
        target(i, ops=n, nbytes=n * 4096, elapsed_ns=10_000_000) for i, n in enumerate(ops)
    )
    report = target_report(targets)
    assert report is not None
    assert (report.slowest.index, report.fastest.index) == (slowest, fastest)


def test_targets_without_work_take_no_part() -> None:
    idle = target(0)
    slow = target(1, ops=10, nbytes=10 * 4096, elapsed_ns=100_000_000)
    fast = target(2, ops=30, nbytes=30 * 4096, elapsed_ns=100_000_000)
    report = target_report((idle, slow, fast))
    assert report is not None
    assert report.slowest.index == 1  # not the idle target with its rate of 0
    assert report.fastest.index == 2
    assert report.average["iops"] == (100 + 300) // 2  # over the two that worked, not three
    assert report.aggregate["iops"] == 400
    assert report.average["bytes_per_s"] == (slow.bytes_per_s + fast.bytes_per_s) // 2
    # a target with entries but no block I/O (stat, mkdir) did work
    stat_only = target(1, entries=5, elapsed_ns=1_000_000)
    report = target_report((idle, stat_only))
    assert report is not None
    assert report.slowest.index == report.fastest.index == 1
    assert target_report((idle, target(1))) is None
    assert target_report(()) is None


# --- 1. pure: the text block ---------------------------------------------------------------


def test_target_block_golden_text() -> None:
    a = target(0, ops=1000, nbytes=1000 * 65536, elapsed_ns=500_000_000)  # 125 MiB/s, 2000
    b = target(1, ops=1000, nbytes=1000 * 65536, elapsed_ns=1_000_000_000)  # 62.5 MiB/s, 1000
    c = target(2)  # no work
    phase = phase_of("WRITE", (a, b, c))
    expected = (
        " WRITE      per target       :      MiB/s       IOPS    Elapsed  Target\n"
        "            Min              :         62       1000     1.000s  #1 p1\n"
        "            Max              :        125       2000      500ms  #0 p0\n"
        "            Average          :         93       1500\n"
        "            Aggregate        :        187       3000\n"
        "            #0               :        125       2000      500ms  p0\n"
        "            #1               :         62       1000     1.000s  p1\n"
        "            #2               :          0          0        0ms  p2\n"
        "---\n"
    )
    assert target_block(phase) == expected
    assert phase_text(phase, TableOptions(pertarget=True)).endswith(expected)
    assert BLOCK_ROW_TITLE not in phase_text(phase)
    assert render_table([phase], TableOptions(pertarget=True)).count(expected) == 1
    assert BLOCK_ROW_TITLE not in render_table([phase])


def test_rates_below_one_a_second_are_not_printed_as_zero() -> None:
    """A slow STAT over two targets: 2 files in 5 s and 3 in 7 s are 0.4 and 0.43 Files/s,
    which the truncated rates make 0; the rows keep two significant digits (truncated)."""
    a = target(0, entries=2, elapsed_ns=5_000_000_000)
    b = target(1, entries=3, elapsed_ns=7_000_000_000)
    c = target(0, ops=1, nbytes=300 * 1024, entries=1, elapsed_ns=1_000_000_000)
    stat = phase_of("STAT", (a, b))
    assert [t.entries_per_s for t in (a, b)] == [0, 0]
    assert target_block(stat) == (
        " STAT       per target       :    Files/s    Elapsed  Target\n"
        "            Min              :       0.40     5.000s  #0 p0\n"
        "            Max              :       0.42     7.000s  #1 p1\n"
        "            Average          :       0.41\n"
        "            Aggregate        :       0.82\n"
        "            #0               :       0.40     5.000s  p0\n"
        "            #1               :       0.42     7.000s  p1\n"
        "---\n"
    )
    # MiB/s too: 300 KiB in a second is 0.29 MiB/s; whole figures stay whole.
    rows = target_block(phase_of("WRITE", (c,))).splitlines()
    (row,) = [line for line in rows if line.lstrip().startswith("#0")]
    assert row.split() == ["#0", ":", "0.29", "1", "1", "1.000s", "p0"]
    # Below 1 a second, the slowest target is still told apart from the average.
    slow = phase_of("STAT", (a, target(1, entries=5, elapsed_ns=5_000_000_000)))
    assert (
        "Slowest target   : #0 p0 0.40 Files/s, 42.9 % below the average of 0.70 Files/s"
        in phase_text(slow)
    )


@pytest.mark.parametrize(
    ("name", "ops", "nbytes", "entries", "titles"),
    [
        ("WRITE", 20, 20 * 4096, 10, ["MiB/s", "Files/s", "IOPS"]),  # dir mode, 2 blocks/file
        ("STAT", 0, 0, 10, ["Files/s"]),
        ("MKDIRS", 0, 0, 10, ["Dirs/s"]),
        ("RMDIRS", 0, 0, 10, ["Dirs/s"]),
        ("READ", 20, 20 * 4096, 0, ["MiB/s", "IOPS"]),  # file mode
    ],
)
def test_target_block_columns_follow_the_counts(
    name: str, ops: int, nbytes: int, entries: int, titles: list[str]
) -> None:
    t0 = target(0, ops=ops, nbytes=nbytes, entries=entries, elapsed_ns=2_000_000)
    t1 = target(1, ops=2 * ops, nbytes=2 * nbytes, entries=2 * entries, elapsed_ns=2_000_000)
    text = target_block(phase_of(name, (t0, t1)))
    header, *rows = text.splitlines()
    assert header == (
        f" {name:<10} {BLOCK_ROW_TITLE:<17}:"
        + "".join(f" {title:>10}" for title in titles)
        + f"  {'Elapsed':>9}  Target"
    )
    # one cell per column in every row: Min/Max and the #lines add elapsed and the target
    cells = {line.split(":", 1)[0].strip(): line.split(":", 1)[1].split() for line in rows[:-1]}
    assert list(cells) == ["Min", "Max", "Average", "Aggregate", "#0", "#1"]
    for key in ("Average", "Aggregate"):
        assert len(cells[key]) == len(titles), key
    assert cells["Min"][len(titles) :] == ["2ms", "#0", "p0"]
    assert cells["Max"][len(titles) :] == ["2ms", "#1", "p1"]
    assert cells["#1"][len(titles) :] == ["2ms", "p1"]
    # the first column holds the metric; MiB/s is shown in whole MiB
    first = titles[0]
    want = {"MiB/s": t1.bytes_per_s // MIB, "IOPS": t1.iops}.get(first, t1.entries_per_s)
    assert cells["#1"][0] == str(want)
    assert rows[-1] == "---"


def mib_targets(*mib: int) -> tuple[TargetTotals, ...]:
    """Targets that moved ``mib[i]`` MiB in one second each."""
    return tuple(
        target(i, ops=m, nbytes=m * MIB, elapsed_ns=1_000_000_000) for i, m in enumerate(mib)
    )


def test_slow_target_hint_only_past_ten_percent_below_the_average() -> None:
    # 100, 100, 85: average 95, 85 is 10.5 % below it.
    phase = phase_of("WRITE", mib_targets(100, 100, 85))
    hint = (
        "            Slowest target   : #2 p2 85 MiB/s, 10.5 % below the average of 95 MiB/s "
        "(--pertarget lists every target)\n"
    )
    text = phase_text(phase)
    assert text.endswith(hint + "---\n")
    assert CHANCE_ROW.fullmatch(hint[:-1])  # the tables of real runs are compared without it
    assert BLOCK_ROW_TITLE not in text
    # 100, 100, 90: average 96, 90 is 6.9 % below it.
    assert "Slowest target" not in phase_text(phase_of("WRITE", mib_targets(100, 100, 90)))
    # --pertarget: the block instead; --nopertarget: neither.
    shown = phase_text(phase, TableOptions(pertarget=True))
    assert "Slowest target" not in shown and BLOCK_ROW_TITLE in shown
    assert phase_text(phase, TableOptions(pertarget=False)) == text.replace(hint, "")
    # One target (or one that worked) is compared with nothing.
    assert "Slowest target" not in phase_text(phase_of("WRITE", mib_targets(100)))
    lonely = (*mib_targets(100), target(1))
    assert "Slowest target" not in phase_text(phase_of("WRITE", lonely))


def test_slow_target_hint_in_dir_mode_names_entries() -> None:
    targets = (
        target(0, entries=100, elapsed_ns=1_000_000_000),
        target(1, entries=50, elapsed_ns=1_000_000_000),
    )
    text = phase_text(phase_of("STAT", targets))
    assert "Slowest target   : #1 p1 50 Files/s, 33.3 % below the average of 75 Files/s" in text


def test_target_block_is_empty_when_no_target_had_work() -> None:
    phase = phase_of("READ", (target(0), target(1)))
    assert target_block(phase) == ""
    assert phase_text(phase, TableOptions(pertarget=True)) == phase_text(phase)


# --- 2. exact accounting through the real CLI ----------------------------------------------


def test_threads_spanning_two_files_are_split_per_file(
    run_cli: RunCli, validator: Draft202012Validator, tmp_path: Path
) -> None:
    # 20 blocks over 3 threads: 6, 6, 8 -> thread 1 writes the end of f1 and the start of f2.
    args = ("-w", "-r", "-t", "3", "--iodepth", "2", "-b", "4k", "-s", "40k", "f1", "f2")
    doc, table = run_json(run_cli, validator, tmp_path, *args)
    sizes = [os.path.getsize(tmp_path / name) for name in ("f1", "f2")]
    assert sizes == [40 * KIB, 40 * KIB]
    touching = ranks_per_file(sizes, 4 * KIB, 3)
    assert touching == [{0, 1}, {1, 2}]
    assert [p["phase"] for p in doc["phases"]] == ["WRITE", "READ"]
    for phase in doc["phases"]:
        targets = phase["per_target"]["targets"]
        assert [t["path"] for t in targets] == ["f1", "f2"]
        assert [t["bytes"] for t in targets] == sizes
        assert [t["ops"] for t in targets] == [10, 10]
        assert sum(t["bytes"] for t in targets) == phase["last_done"]["bytes"]
        for t, ranks in zip(targets, touching, strict=True):
            assert t["elapsed_ns"] == slowest(phase, ranks), t
        check_summary(phase)
        check_text_block(table, phase)


def test_random_reads_over_three_files(
    run_cli: RunCli, validator: Draft202012Validator, tmp_path: Path
) -> None:
    # 3 x 16 blocks over 2 threads: thread 0 has f0 and half of f1, thread 1 the rest.
    names = ("f0", "f1", "f2")
    args = ("-w", "-r", "--rand", "--seed", "7", "-t", "2", "-b", "4k", "-s", "64k", *names)
    doc, table = run_json(run_cli, validator, tmp_path, *args)
    write, read = phases_by_name(doc)["WRITE"], phases_by_name(doc)["READ"]
    # Random writes are a full-coverage permutation: every file exactly once.
    assert [t["bytes"] for t in write["per_target"]["targets"]] == [64 * KIB] * 3
    assert [os.path.getsize(tmp_path / n) for n in names] == [64 * KIB] * 3
    targets = read["per_target"]["targets"]
    threads = read["threads"]
    assert [t["ops"] for t in threads] == [24, 24]
    assert sum(t["ops"] for t in targets) == read["last_done"]["ops"] == 48
    for t in targets:
        assert t["bytes"] == t["ops"] * 4 * KIB
        assert t["entries"] == 0
    # f0 is read by thread 0 only, f2 by thread 1 only, f1 (almost surely) by both.
    assert 0 < targets[0]["ops"] <= threads[0]["ops"]
    assert 0 < targets[2]["ops"] <= threads[1]["ops"]
    assert targets[0]["ops"] + targets[2]["ops"] < 48
    assert targets[0]["elapsed_ns"] == threads[0]["elapsed_ns"]
    assert targets[2]["elapsed_ns"] == threads[1]["elapsed_ns"]
    assert targets[1]["elapsed_ns"] in {threads[0]["elapsed_ns"], threads[1]["elapsed_ns"]}
    for phase in (write, read):
        check_summary(phase)
        check_text_block(table, phase)


def dir_counts(
    threads: int, dirs: int, files: int, paths: int, sharing: bool
) -> tuple[list[int], list[int], list[set[int]], list[set[int]]]:
    """Dirs and files per PATH, and the ranks that make dirs / handle files there.

    The layout rule: dir i of rank r lives in PATH (r + i) % paths; with shared dirs dir i
    lives in PATH i % paths, made by rank i % threads, and every rank has files in each.
    """
    dir_count, file_count = [0] * paths, [0] * paths
    dir_ranks: list[set[int]] = [set() for _ in range(paths)]
    file_ranks: list[set[int]] = [set() for _ in range(paths)]
    for r in range(threads):
        for i in range(dirs):
            where = i % paths if sharing else (r + i) % paths
            if not sharing or i % threads == r:
                dir_count[where] += 1
                dir_ranks[where].add(r)
            file_count[where] += files
            file_ranks[where].add(r)
    return dir_count, file_count, dir_ranks, file_ranks


@pytest.mark.parametrize(
    ("dirs", "sharing"),
    [(3, False), (2, False), (3, True), (2, True)],
    ids=["n3", "n2-uneven", "n3-sharing", "n2-sharing-idle-path"],
)
def test_dir_mode_entries_follow_the_layout_rule(
    run_cli: RunCli,
    validator: Draft202012Validator,
    tmp_path: Path,
    dirs: int,
    sharing: bool,
) -> None:
    roots = ["d0", "d1", "d2"]
    for name in roots:
        (tmp_path / name).mkdir()
    files, size, block = 4, 8 * KIB, 4 * KIB
    args = ["-d", "-w", "-r", "--stat", "-F", "-D", "-t", "2", "-n", str(dirs), "-N", str(files)]
    args += ["-s", "8k", "-b", "4k", *(["--dirsharing"] if sharing else []), *roots]
    doc, table = run_json(run_cli, validator, tmp_path, *args)
    dir_count, file_count, dir_ranks, file_ranks = dir_counts(2, dirs, files, 3, sharing)
    by_name = phases_by_name(doc)
    assert list(by_name) == ["MKDIRS", "WRITE", "STAT", "READ", "RMFILES", "RMDIRS"]
    for name, phase in by_name.items():
        targets = phase["per_target"]["targets"]
        assert [t["path"] for t in targets] == roots
        on_dirs = name in ("MKDIRS", "RMDIRS")
        counts, ranks = (dir_count, dir_ranks) if on_dirs else (file_count, file_ranks)
        assert [t["entries"] for t in targets] == counts, name
        moves_data = name in ("WRITE", "READ")
        assert [t["bytes"] for t in targets] == [n * size * moves_data for n in counts], name
        assert [t["ops"] for t in targets] == [n * (size // block) * moves_data for n in counts]
        for t, who in zip(targets, ranks, strict=True):
            assert t["elapsed_ns"] == slowest(phase, who), (name, t)
        check_summary(phase)
        want_metric = "bytes_per_s" if moves_data else "entries_per_s"
        assert phase["per_target"]["metric"] == want_metric
        check_text_block(table, phase)
    if sharing and dirs == 2:
        # d2 gets nothing: listed with zeros, never min or max
        for phase in by_name.values():
            per = phase["per_target"]
            assert per["targets"][2]["entries"] == 0 == per["targets"][2]["elapsed_ns"]
            assert 2 not in (per["min"]["index"], per["max"]["index"])
    assert all(not any((tmp_path / name).iterdir()) for name in roots)


@pytest.mark.parametrize("mode", ["file", "dir"])
def test_single_path_has_one_target_equal_to_the_phase(
    run_cli: RunCli, validator: Draft202012Validator, tmp_path: Path, mode: str
) -> None:
    if mode == "file":
        args = ["-w", "-r", "-t", "2", "-b", "4k", "-s", "40k", "only"]
    else:
        (tmp_path / "only").mkdir()
        args = ["-d", "-w", "-F", "-D", "-t", "2", "-n", "2", "-N", "3", "-s", "4k", "only"]
    doc, table = run_json(run_cli, validator, tmp_path, *args, block=False)
    assert BLOCK_ROW_TITLE not in table  # off by default
    for phase in doc["phases"]:
        per, last = phase["per_target"], phase["last_done"]
        (only,) = per["targets"]
        assert only["path"] == "only"
        for key in ("ops", "bytes", "entries", "elapsed_ns", *RATE_KEYS):
            assert only[key] == last[key], (phase["phase"], key)
        assert per["min"]["index"] == per["max"]["index"] == 0
        rates = {k: last[k] for k in RATE_KEYS}
        assert per["average"] == per["aggregate"] == rates
        check_summary(phase)
    doc2, table2 = run_json(run_cli, validator, tmp_path, *args)
    for phase in doc2["phases"]:
        check_text_block(table2, phase)


@pytest.mark.parametrize(
    ("paths", "option", "shown"),
    [
        (2, None, False),
        (2, "--pertarget", True),
        (2, "--nopertarget", False),
        (1, None, False),
        (1, "--pertarget", True),
    ],
)
def test_table_block_toggle_and_show_roundtrip(
    run_cli: RunCli,
    validator: Draft202012Validator,
    tmp_path: Path,
    paths: int,
    option: str | None,
    shown: bool,
) -> None:
    names = ["a", "b"][:paths]
    extra = [option] if option else []
    doc, table = run_json(
        run_cli, validator, tmp_path, "-w", "-b", "4k", "-s", "8k", *extra, *names, block=False
    )
    (phase,) = doc["phases"]
    assert len(phase["per_target"]["targets"]) == paths  # JSON has it either way
    assert phase["per_target"]["min"] is not None
    lines = block_lines(table, "WRITE")
    assert bool(lines) is shown, table
    if shown:
        check_text_block(table, phase)
        # the block comes right after the phase block and ends with its own separator
        assert f"---\n{lines[0]}\n" in table
        assert table.endswith("---\n")
        # Only the phase's own block starts a line with its name (scripts grep ^WRITE).
        assert [line for line in table.splitlines() if line.startswith("WRITE")] == [
            table.splitlines()[2]
        ]
        assert table.splitlines()[2].startswith("WRITE       Elapsed time")
    shown_again = run_cli("show", str(tmp_path / "result.json"))
    assert shown_again.returncode == 0, shown_again.stderr
    assert shown_again.stdout == table


# --- 3. in-process: the null engine with a slow path ---------------------------------------


class CountingEngine(NullEngine):
    """The null engine, keeping (path index, offset) of every completed operation."""

    def __init__(self, delays_ns: dict[int, int]) -> None:
        super().__init__(lambda index: delays_ns[index])
        self.lock = threading.Lock()
        self.done: list[tuple[int, int]] = []
        self.cut_runs = 0  # runs the time budget ended before all their operations

    def run(self, job: Job) -> RawBatch:
        batch = super().run(job)
        ops = job.ops
        assert isinstance(ops, OpRun)
        done = len(batch.ends)
        index = ops.path_index
        indices = [index] * done if isinstance(index, int) else index[:done]
        with self.lock:
            self.done.extend(zip(indices, ops.offsets[:done], strict=True))
            self.cut_runs += done < len(ops)
        return batch


async def test_ten_times_slower_path_is_named_min(tmp_path: Path) -> None:
    paths = [str(tmp_path / name) for name in ("a", "b", "c")]
    cfg = make_cfg(paths, threads=3, block="4k", size="80k", write=False, read=True)
    layout = Layout((20 * 4096,) * 3, 4096)
    engine = CountingEngine({0: 1_000_000, 1: 1_000_000, 2: 10_000_000})
    ctx = context(cfg, layout, engine)
    try:
        phase, _ = await run_phase(ctx, READ, 0)
    finally:
        ctx.executor.shutdown()
    targets = phase.targets
    assert [t.ops for t in targets] == [20, 20, 20]
    assert [t.bytes for t in targets] == [20 * 4096] * 3
    assert [t.path for t in targets] == paths
    report = phase.target_report
    assert report is not None
    assert report.slowest.index == 2
    assert report.slowest.path == paths[2]
    assert report.fastest.index in (0, 1)
    assert targets[2].elapsed_ns == phase.last_done.elapsed_ns
    # one thread per file here, so each target's time is its thread's
    assert [t.elapsed_ns for t in targets] == [t.elapsed_ns for t in phase.threads]
    assert targets[2].bytes_per_s * 3 < min(targets[0].bytes_per_s, targets[1].bytes_per_s)
    text = target_block(phase)
    assert row(text.splitlines(), "Min").endswith(f"#2 {paths[2]}")


async def test_a_target_shared_with_a_slow_thread_gets_its_time(tmp_path: Path) -> None:
    # 3 x 20 blocks over 2 threads: thread 0 = a + half of b, thread 1 = half of b + c, c slow.
    # b's time is thread 1's, the same as c's; equal ops then make a tie, which b wins.
    paths = [str(tmp_path / name) for name in ("a", "b", "c")]
    cfg = make_cfg(paths, threads=2, block="4k", size="80k", write=False, read=True)
    layout = Layout((20 * 4096,) * 3, 4096)
    engine = CountingEngine({0: 1_000_000, 1: 1_000_000, 2: 8_000_000})
    ctx = context(cfg, layout, engine)
    try:
        phase, _ = await run_phase(ctx, READ, 0)
    finally:
        ctx.executor.shutdown()
    a, b, c = phase.targets
    t0, t1 = phase.threads
    assert (a.ops, b.ops, c.ops) == (20, 20, 20)
    assert t0.elapsed_ns < t1.elapsed_ns
    assert a.elapsed_ns == t0.elapsed_ns
    assert b.elapsed_ns == c.elapsed_ns == t1.elapsed_ns == phase.last_done.elapsed_ns
    report = phase.target_report
    assert report is not None
    assert (report.slowest.index, report.fastest.index) == (1, 0)


async def test_random_runs_cut_by_the_time_budget_count_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 3 x 64 blocks over 2 threads with 2 slots each; 2 ms per op makes the executor cut runs
    # (a budget of 50 ms here), so partial runs of mixed paths must be counted op by op.
    monkeypatch.setattr(worker, "DRAINING_BATCH_NS", 50_000_000)
    paths = [str(tmp_path / name) for name in ("a", "b", "c")]
    cfg = make_cfg(
        paths, threads=2, iodepth=2, block="4k", size="256k", write=False, read=True, rand=True
    )
    layout = Layout((64 * 4096,) * 3, 4096)
    engine = CountingEngine({0: 2_000_000, 1: 2_000_000, 2: 2_000_000})
    ctx = context(cfg, layout, engine)
    try:
        phase, _ = await run_phase(ctx, READ, 0)
    finally:
        ctx.executor.shutdown()
    counted = [0, 0, 0]
    touched: list[set[int]] = [set(), set(), set()]
    assert engine.cut_runs > 0  # the case this test is about did happen
    for index, offset in engine.done:
        counted[index] += 1
        # thread 0 owns global blocks 0..95: all of a and the first half of b
        global_block = index * 64 + offset // 4096
        touched[index].add(0 if global_block < 96 else 1)
    assert sum(counted) == 192
    assert [t.ops for t in phase.targets] == counted
    assert [t.bytes for t in phase.targets] == [n * 4096 for n in counted]
    assert touched[0] == {0} and touched[2] == {1}
    for t, ranks in zip(phase.targets, touched, strict=True):
        assert t.elapsed_ns == max(phase.threads[r].elapsed_ns for r in ranks)


# --- 4. must-show: a throttled loop device among three is named min ------------------------

BLKIO = Path("/sys/fs/cgroup/blkio")
THROTTLE_BPS = 8 * MIB
DEVICE_BYTES = 64 * MIB
PER_DEVICE = 8 * MIB  # -s: one second's worth at the throttled rate


@dataclass
class ThrottledLoops:
    devices: list[str]
    slow: int  # index of the throttled device
    cgroup: Path

    def in_cgroup(self, *cmd: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run ``cmd`` as a process that first joins the throttled cgroup."""
        script = 'echo $$ > "$0" && exec "$@"'
        return subprocess.run(
            ["sh", "-c", script, str(self.cgroup / "cgroup.procs"), *cmd],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=dict(os.environ, PYTHONWARNINGS="error"),
            check=False,
        )

    def service_bytes(self, direction: str) -> int:
        major, minor = dev_numbers(self.devices[self.slow])
        text = (self.cgroup / "blkio.throttle.io_service_bytes").read_text()
        for line in text.splitlines():
            parts = line.split()
            if parts[:2] == [f"{major}:{minor}", direction]:
                return int(parts[2])
        return 0


def dev_numbers(device: str) -> tuple[int, int]:
    rdev = os.stat(device).st_rdev
    return os.major(rdev), os.minor(rdev)


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), capture_output=True, text=True, check=False)


@pytest.fixture
def throttled_loops(tmp_path: Path) -> Iterator[ThrottledLoops]:
    if os.geteuid() != 0:
        pytest.skip("loop devices and blkio cgroups need root")
    if shutil.which("losetup") is None:
        pytest.skip("losetup is not installed")
    knobs = ("blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device", "cgroup.procs")
    if not all((BLKIO / knob).exists() for knob in knobs):
        pytest.skip(f"no cgroup v1 blkio throttling at {BLKIO}")
    devices: list[str] = []
    cgroup = BLKIO / f"aiobench-test-{os.getpid()}"
    try:
        for i in range(3):
            backing = tmp_path / f"backing{i}.img"
            with open(backing, "wb") as handle:
                handle.truncate(DEVICE_BYTES)
            proc = _run("losetup", "--find", "--show", str(backing))
            if proc.returncode != 0:
                pytest.skip(f"losetup failed: {proc.stderr.strip()}")
            devices.append(proc.stdout.strip())
        slow = 1  # the middle one: a tie could never make it min or max by index
        cgroup.mkdir()
        major, minor = dev_numbers(devices[slow])
        for knob in knobs[:2]:
            (cgroup / knob).write_text(f"{major}:{minor} {THROTTLE_BPS}\n")
        yield ThrottledLoops(devices, slow, cgroup)
    finally:
        if cgroup.exists():
            # Only processes this test started can be in it; hand any stragglers back.
            procs = (cgroup / "cgroup.procs").read_text().split()
            for pid in procs:
                with contextlib.suppress(OSError):
                    (BLKIO / "cgroup.procs").write_text(pid)
            cgroup.rmdir()
        for device in devices:
            _run("losetup", "--detach", device)


@pytest.mark.root
def test_throttled_loop_device_is_named_min(
    throttled_loops: ThrottledLoops, validator: Draft202012Validator, tmp_path: Path
) -> None:
    loops = throttled_loops
    slow_dev = loops.devices[loops.slow]
    # First, the throttle itself: 4 MiB of direct reads must take about half a second.
    started = perf_counter()
    dd = loops.in_cgroup(
        "dd", f"if={slow_dev}", "of=/dev/null", "bs=1M", "count=4", "iflag=direct", "status=none"
    )
    took = perf_counter() - started
    assert dd.returncode == 0, dd.stderr
    assert took >= 0.25, f"blkio throttle has no effect: 4 MiB read in {took:.3f}s"

    out = tmp_path / "throttled.json"
    size = f"{PER_DEVICE // MIB}m"
    bench = loops.in_cgroup(
        sys.executable,
        "-m",
        "aiobench",
        "-w",
        "-r",
        "-b",
        "1m",
        "-s",
        size,
        "-t",
        "3",
        "--direct",
        *loops.devices,
        "--nolive",
        "--json",
        str(out),
    )
    assert bench.returncode == 0, bench.stderr
    doc: Doc = json.loads(out.read_text(encoding="utf-8"))
    assert_valid(validator, doc)
    assert doc["meta"]["path_type"] == "blockdev"
    # aiobench's I/O went through the throttled cgroup
    assert loops.service_bytes("Write") >= PER_DEVICE
    assert loops.service_bytes("Read") >= PER_DEVICE
    # Without --pertarget the table names the slow device in one line under each phase;
    # `show --pertarget` gives the whole block.
    hints = [line for line in bench.stdout.splitlines() if "Slowest target" in line]
    assert len(hints) == 2, bench.stdout
    for hint in hints:
        assert hint.startswith(f"{'':<11} {'Slowest target':<17}: #{loops.slow} {slow_dev} ")
        assert "--pertarget" in hint
    assert BLOCK_ROW_TITLE not in bench.stdout
    shown = subprocess.run(
        [sys.executable, "-m", "aiobench", "show", "--pertarget", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    table = shown.stdout
    assert [p["phase"] for p in doc["phases"]] == ["WRITE", "READ"]
    for phase in doc["phases"]:
        per = phase["per_target"]
        targets = per["targets"]
        assert [t["path"] for t in targets] == loops.devices
        assert [t["bytes"] for t in targets] == [PER_DEVICE] * 3
        assert per["metric"] == "bytes_per_s"
        assert per["min"]["path"] == slow_dev, per
        assert per["min"]["index"] == loops.slow
        assert per["max"]["index"] != loops.slow
        slow_rate = targets[loops.slow]["bytes_per_s"]
        assert slow_rate <= 2 * THROTTLE_BPS, slow_rate
        for i, t in enumerate(targets):
            if i != loops.slow:
                assert t["bytes_per_s"] >= 4 * slow_rate, (slow_rate, t)
        # the slow device holds up its phase
        assert targets[loops.slow]["elapsed_ns"] == phase["last_done"]["elapsed_ns"]
        check_summary(phase)
        check_text_block(table, phase)
        lines = block_lines(table, phase["phase"])
        assert row(lines, "Min").endswith(f"#{loops.slow} {slow_dev}")
