"""-i/--iterations: the sequence N times, a block per phase per iteration, and the summary (#5).

The summary is checked against figures computed here, exactly (with fractions), from the
blocks the run printed and from its ``--json`` phases; no test knows a measured figure in
advance. The real CLI runs are small and made once per module.
"""

from __future__ import annotations

import copy
import csv
import datetime
import errno
import json
import math
import os
import random
import re
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from aiobench.engines.base import Job, RawBatch
from aiobench.engines.null import NullEngine
from aiobench.engines.python import PosixEngine
from aiobench.errors import BenchIOError
from aiobench.plan.workload import OpRun
from aiobench.render.table import HEADER, render_table, summary_text
from aiobench.results.events import Observer
from aiobench.results.model import PhaseResult, Totals
from aiobench.results.runresult import RunResult
from aiobench.results.schema import load_schema
from aiobench.stats.iterations import Spread, summarize
from tests.helpers import delete_at, errors_of, make_cfg, no_latency, run, set_at
from tests.helpers import run_aiobench as aiobench

MIB = 1 << 20
NS_PER_MS = 1_000_000
HOUSEKEEPING = ("SYNC", "DROPCACHE")
Doc = dict[str, Any]
Block = dict[str, list[str]]


# ---------------------------------------------------------------------------------------
# helpers


def ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    return proc.stdout


def floor_stats(values: list[int], unit: int = 1) -> list[int]:
    """min, max, mean, population stddev of ``values`` in ``unit``s, each floored, exactly."""
    n = len(values)
    mean = Fraction(sum(values), n)
    variance = sum((Fraction(v) - mean) ** 2 for v in values) / n
    # floor(sqrt(x)) == isqrt(floor(x)) for any real x >= 0.
    stddev = math.isqrt(math.floor(variance / unit**2))
    return [min(values) // unit, max(values) // unit, math.floor(mean / unit), stddev]


def exact_mean_stddev(values: list[int]) -> tuple[float, float]:
    n = len(values)
    mean = Fraction(sum(values), n)
    variance = sum((Fraction(v) - mean) ** 2 for v in values) / n
    return float(mean), math.sqrt(variance)


def parse_table(table: str) -> list[tuple[str, str, Block]]:
    """(op, first row's name, rows) per block; a row's cells are the words after the colon."""
    assert table.startswith(HEADER)
    parts = table[len(HEADER) :].split("---\n")
    assert parts[-1] == ""
    out = []
    for part in parts[:-1]:
        lines = part.splitlines()
        rows = {line[12:29].strip(): line[31:].split() for line in lines}
        out.append((lines[0][:11].strip(), lines[0][12:29].strip(), rows))
    return out


def phase_blocks(table: str) -> list[tuple[str, Block]]:
    return [(op, rows) for op, name, rows in parse_table(table) if name == "Elapsed time"]


def summary_blocks(table: str) -> dict[str, tuple[int, Block]]:
    """Phase name -> (iterations covered, rows of int cells), from the SUMMARY blocks."""
    out = {}
    for op, name, rows in parse_table(table):
        if op != "SUMMARY":
            continue
        match = re.fullmatch(r"(\S+) over (\d+)", name)
        assert match is not None, name
        assert rows[name] == ["min", "max", "mean", "stddev"]
        del rows[name]
        assert all(len(cells) == 4 for cells in rows.values()), rows
        out[match[1]] = (int(match[2]), rows)
    return out


def shown_ms(text: str) -> int:
    """A block's elapsed time (``123ms`` or ``1.234s``) in whole ms."""
    if text.endswith("ms"):
        return int(text[:-2])
    secs, ms = text[:-1].split(".")
    return int(secs) * 1000 + int(ms)


def check_summary_against_blocks(stdout: str, doc: Doc) -> None:
    """Every SUMMARY figure, from the blocks printed above it and from the JSON phases."""
    by_name: dict[str, list[tuple[Block, Doc]]] = {}
    blocks = phase_blocks(stdout)
    assert [op for op, _ in blocks] == [p["phase"] for p in doc["phases"]]
    for (op, rows), phase in zip(blocks, doc["phases"], strict=True):
        if op not in HOUSEKEEPING:  # SYNC and DROPCACHE blocks are not summarised
            by_name.setdefault(op, []).append((rows, phase))
    summaries = summary_blocks(stdout)
    assert list(summaries) == list(by_name)  # in the order the phases first ran
    for name, pairs in by_name.items():
        count, rows = summaries[name]
        assert count == len(pairs)
        lasts = [phase["last_done"] for _, phase in pairs]
        cells = {key: [int(c) for c in value] for key, value in rows.items()}
        # Elapsed: from the blocks' last-done column and, exactly, from the JSON.
        shown = [shown_ms(block["Elapsed time"][1]) for block, _ in pairs]
        assert cells["Elapsed ms"][:2] == [min(shown), max(shown)]
        assert cells["Elapsed ms"] == floor_stats([d["elapsed_ns"] for d in lasts], NS_PER_MS)
        expected_rows = ["Elapsed ms"]
        for label in ("Files/s", "Dirs/s", "IOPS"):
            if label in pairs[0][0]:
                expected_rows.append(label)
                values = [int(block[label][1]) for block, _ in pairs]
                assert cells[label] == floor_stats(values), (name, label, values)
                key = "iops" if label == "IOPS" else "entries_per_s"
                assert cells[label] == floor_stats([d[key] for d in lasts])
        if "Throughput MiB/s" in pairs[0][0]:
            expected_rows.append("Throughput MiB/s")
            got = cells["Throughput MiB/s"]
            shown = [int(block["Throughput MiB/s"][1]) for block, _ in pairs]
            from_blocks = floor_stats(shown)
            # min and max are the blocks' own figures; mean and stddev are of bytes/s, so
            # they may be 1 above (or the stddev 1 off) those of the truncated MiB/s.
            assert got[:2] == from_blocks[:2]
            assert 0 <= got[2] - from_blocks[2] <= 1 and abs(got[3] - from_blocks[3]) <= 1
            assert got == floor_stats([d["bytes_per_s"] for d in lasts], MIB)
        assert list(cells) == expected_rows


def check_json_summary(doc: Doc) -> None:
    """``iterations_summary`` is the spread of the JSON phases' last-done figures."""
    names: list[str] = []
    for phase in doc["phases"]:
        if phase["phase"] not in names and phase["phase"] not in HOUSEKEEPING:
            names.append(phase["phase"])
    summary = doc["iterations_summary"]
    assert [s["phase"] for s in summary] == names
    for entry in summary:
        lasts = [p["last_done"] for p in doc["phases"] if p["phase"] == entry["phase"]]
        assert entry["iterations"] == len(lasts)
        assert list(entry) == [
            "phase", "iterations", "iops", "bytes_per_s", "entries_per_s", "elapsed_ns",
        ]  # fmt: skip
        for key in ("iops", "bytes_per_s", "entries_per_s", "elapsed_ns"):
            values = [last[key] for last in lasts]
            mean, stddev = exact_mean_stddev(values)
            spread = entry[key]
            assert (spread["min"], spread["max"]) == (min(values), max(values))
            assert spread["mean"] == pytest.approx(mean, abs=0.051), (key, values)
            assert spread["stddev"] == pytest.approx(stddev, abs=0.051), (key, values)


# ---------------------------------------------------------------------------------------
# pure: the statistics and the block


def phase(
    name: str,
    iteration: int,
    elapsed_s: float,
    ops: int,
    nbytes: int,
    *,
    entries: int = 0,
    iterations: int = 3,
) -> PhaseResult:
    """A block with equal first and last done (the summary only reads last done)."""
    totals = Totals(elapsed_ns=int(elapsed_s * 1e9), ops=ops, bytes=nbytes, entries=entries)
    return PhaseResult(
        name=name,
        first_done=totals,
        last_done=totals,
        io_latency=no_latency(),
        peak_inflight_ops=1,
        threads=(),
        iteration=iteration,
        iterations=iterations,
    )


def test_spread_floors_exactly() -> None:
    rng = random.Random(5)
    cases = [[7], [1, 3], [0, 0, 1], [2**40, 2**40 + 1, 2**40 + 3], [MIB - 1, MIB, 3 * MIB]]
    cases += [[rng.randrange(10**12) for _ in range(rng.randrange(1, 9))] for _ in range(200)]
    for values in cases:
        spread = Spread(tuple(values))
        for unit in (1, 1000, MIB):
            assert list(spread.floored(unit)) == floor_stats(values, unit), (values, unit)
        mean, stddev = exact_mean_stddev(values)
        assert spread.mean == pytest.approx(mean) and spread.stddev == pytest.approx(stddev)


def test_summary_block_golden() -> None:
    # 1024 ops of 1 MiB in 1 s, 2 s, 4 s: 1024, 512, 256 IOPS and MiB/s; the mean 597.3,
    # the population stddev sqrt(((1024-m)^2 + (512-m)^2 + (256-m)^2) / 3) = 319.3.
    phases = [phase("WRITE", i, s, 1024, 1024 * MIB) for i, s in enumerate((1, 2, 4))]
    assert summary_text(phases) == (
        "SUMMARY     WRITE over 3     :         min         max        mean      stddev\n"
        "            Elapsed ms       :        1000        4000        2333        1247\n"
        "            IOPS             :         256        1024         597         319\n"
        "            Throughput MiB/s :         256        1024         597         319\n"
        "---\n"
    )
    table = render_table(phases)
    assert table.endswith(summary_text(phases)) and table.count("---\n") == 4


def test_summary_rows_follow_the_counts_of_dir_mode() -> None:
    # MKDIRS counts dirs only; a one-block file makes IOPS equal Files/s: shown once.
    phases = []
    for i in range(2):
        phases.append(phase("MKDIRS", i, 0.5, 0, 0, entries=8 + i, iterations=2))
        phases.append(phase("WRITE", i, 0.25, 6, 6 * 4096, entries=6, iterations=2))
    rows = {name: rows for _, name, rows in parse_table(render_table(phases))}
    assert list(rows["MKDIRS over 2"]) == ["MKDIRS over 2", "Elapsed ms", "Dirs/s"]
    assert rows["MKDIRS over 2"]["Dirs/s"] == ["16", "18", "17", "1"]
    assert list(rows["WRITE over 2"]) == [
        "WRITE over 2", "Elapsed ms", "Files/s", "Throughput MiB/s",
    ]  # fmt: skip
    assert rows["WRITE over 2"]["Files/s"] == ["24", "24", "24", "0"]


def test_one_iteration_has_no_summary_and_housekeeping_is_not_summarised() -> None:
    single = [phase("WRITE", 0, 1, 1, MIB, iterations=1), phase("READ", 0, 1, 1, MIB, iterations=1)]
    assert summarize(single) == [] and summary_text(single) == ""
    assert render_table(single).count("SUMMARY") == 0
    mixed = [
        phase("SYNC", 0, 0.1, 0, 0),
        phase("WRITE", 0, 1, 4, 4 * MIB),
        phase("SYNC", 0, 0.1, 0, 0),
        phase("READ", 0, 1, 4, 4 * MIB),
        phase("SYNC", 0, 0.1, 0, 0),
        phase("SYNC", 1, 0.1, 0, 0),
        phase("WRITE", 1, 2, 4, 4 * MIB),
    ]
    summary = summarize(mixed)
    assert [(s.phase, s.iterations) for s in summary] == [("WRITE", 2), ("READ", 1)]
    assert summary[0].spread("iops").values == (4, 2)


# ---------------------------------------------------------------------------------------
# the runner: seeds, ends, the summary hook


class Marks(Observer):
    """Each phase's start, and what engines note down while it runs; the end of the run."""

    def __init__(self) -> None:
        self.phases: list[tuple[str, list[int]]] = []
        self.done: list[list[tuple[str, int]]] = []
        self.lock = threading.Lock()

    def phase_started(self, name: str, start: datetime.datetime) -> None:
        with self.lock:
            self.phases.append((name, []))

    def note(self, offsets: Sequence[int]) -> int:
        """Add offsets to the running phase; its index."""
        with self.lock:
            self.phases[-1][1].extend(offsets)
            return len(self.phases) - 1

    def run_done(self, result: RunResult) -> None:
        self.done.append([(p.name, p.iteration) for p in result.phases])


class OffsetRecorder(PosixEngine):
    """Real I/O, noting each phase's offsets in the order they were issued."""

    def __init__(self, marks: Marks) -> None:
        self.marks = marks

    def run(self, job: Job) -> RawBatch:
        released = job.released()  # a slot's first run: once the phase has started
        assert released is not None and isinstance(released.ops, OpRun)
        self.marks.note(released.ops.offsets)
        return super().run(released)


def offsets(tmp_path: Path, iterations: int) -> list[tuple[str, list[int]]]:
    cfg = make_cfg(
        [str(tmp_path / "f")], write=True, read=True, rand=True, block="4k", size="128k",
        iterations=iterations, seed=11,
    )  # fmt: skip
    marks = Marks()
    result = run(cfg, OffsetRecorder(marks), observer=marks)
    assert result.error is None
    assert [(p.name, p.iteration) for p in result.phases] == [
        (name, i) for i in range(iterations) for name in ("WRITE", "READ")
    ]
    return marks.phases


def test_each_iteration_has_its_own_offsets_reproducible_from_the_seed(tmp_path: Path) -> None:
    three = offsets(tmp_path, 3)
    assert [name for name, _ in three] == ["WRITE", "READ"] * 3
    blocks = list(range(0, 128 * 1024, 4096))
    for kind in ("WRITE", "READ"):
        orders = [tuple(o) for name, o in three if name == kind]
        assert len(set(orders)) == 3, kind  # each iteration draws its own
        assert all(len(order) == len(blocks) for order in orders)
    for name, order in three:
        if name == "WRITE":
            assert sorted(order) == blocks  # still every block once
    assert offsets(tmp_path, 3) == three  # the same seed: the same I/O
    assert offsets(tmp_path, 1) == three[:2]  # -i 1 is the first iteration


def test_each_iteration_writes_its_own_data_reproducibly(tmp_path: Path) -> None:
    target = tmp_path / "f"

    def written(iterations: int) -> bytes:
        cfg = make_cfg([str(target)], block="4k", size="64k", iterations=iterations, seed=3)
        result = run(cfg)
        assert [p.iteration for p in result.phases] == list(range(iterations))
        return target.read_bytes()

    first = written(1)
    second = written(2)
    assert len(first) == len(second) == 64 * 1024
    assert second != first  # the second iteration overwrote with other data
    assert written(2) == second and written(1) == first


class FailingEngine(NullEngine):
    """No I/O; the phase with index ``fail_at`` (0-based, in run order) fails with EIO."""

    def __init__(self, marks: Marks, fail_at: int) -> None:
        super().__init__()
        self.marks = marks
        self.fail_at = fail_at

    def run(self, job: Job) -> RawBatch:
        released = job.released()  # a slot's first run: once the phase has started
        assert released is not None and isinstance(released.ops, OpRun)
        if self.marks.note([]) == self.fail_at:
            offset = released.ops.offsets[0]
            error = BenchIOError(path=job.paths[0], offset=offset, errno=errno.EIO)
            return RawBatch(np.empty(0, np.int64), np.empty(0, np.int64), error=error)
        return super().run(released)


def test_an_error_ends_the_run_and_the_summary_covers_what_ran(tmp_path: Path) -> None:
    cfg = make_cfg([str(tmp_path / "f")], read=True, block="4k", size="16k", iterations=3)
    marks = Marks()
    engine = FailingEngine(marks, fail_at=3)
    result = run(cfg, engine, observer=marks)
    assert result.error is not None and result.error["errno_name"] == "EIO"
    reported = [("WRITE", 0), ("READ", 0), ("WRITE", 1), ("READ", 1)]
    assert [(p.name, p.iteration) for p in result.phases] == reported
    assert marks.done == [reported]  # heard once, after the last block
    assert [(s.phase, s.iterations) for s in summarize(result.phases)] == [
        ("WRITE", 2),
        ("READ", 2),
    ]


def test_run_done_is_heard_once_without_iterations(tmp_path: Path) -> None:
    cfg = make_cfg([str(tmp_path / "f")], block="4k", size="16k")
    marks = Marks()
    run(cfg, NullEngine(), observer=marks)
    assert marks.done == [[("WRITE", 0)]]


# ---------------------------------------------------------------------------------------
# the real CLI


@dataclass(frozen=True)
class Run:
    work: Path
    args: tuple[str, ...]
    stdout: str
    doc: Doc


FILE_ARGS = ("-w", "-r", "-i", "3", "-b", "64k", "-s", "2m", "f1", "f2")
DIR_ARGS = ("-d", "-w", "-r", "-F", "-D", "-i", "2", "-n", "2", "-N", "3", "-s", "4k", "d")


@pytest.fixture(scope="module")
def file_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    work = tmp_path_factory.mktemp("iter-file")
    files = ("--csvfile", "r.csv", "--jsonfile", "r.jsonl", "--resfile", "res.txt")
    stdout = ok(aiobench(*FILE_ARGS, *files, "--json", "r.json", cwd=work))
    return Run(work, FILE_ARGS, stdout, json.loads((work / "r.json").read_text()))


@pytest.fixture(scope="module")
def dir_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    work = tmp_path_factory.mktemp("iter-dir")
    (work / "d").mkdir()
    stdout = ok(aiobench(*DIR_ARGS, "--json", "r.json", cwd=work))
    return Run(work, DIR_ARGS, stdout, json.loads((work / "r.json").read_text()))


def test_three_iterations_print_three_blocks_and_a_matching_summary(file_run: Run) -> None:
    stdout, doc = file_run.stdout, file_run.doc
    assert [op for op, _ in phase_blocks(stdout)] == ["WRITE", "READ"] * 3
    assert [(p["phase"], p["iteration"]) for p in doc["phases"]] == [
        (name, i) for i in range(3) for name in ("WRITE", "READ")
    ]
    for (_, rows), p in zip(phase_blocks(stdout), doc["phases"], strict=True):
        assert rows["IOPS"][1] == str(p["last_done"]["iops"])
        assert rows["Throughput MiB/s"][1] == str(p["last_done"]["bytes_per_s"] // MIB)
        assert p["last_done"]["bytes"] == 4 * MIB  # every iteration did the whole work
    # The summary follows the last block (and its per-target report: two PATHs).
    assert re.search(r"---\nSUMMARY     WRITE over 3 .*\n(.*\n){3}---\nSUMMARY     READ over 3 ",
                     stdout)  # fmt: skip
    assert stdout.endswith("---\n") and stdout.count("SUMMARY") == 2
    check_summary_against_blocks(stdout, doc)
    check_json_summary(doc)


def test_dir_mode_iterations_and_their_summary(dir_run: Run) -> None:
    stdout, doc = dir_run.stdout, dir_run.doc
    names = ["MKDIRS", "WRITE", "READ", "RMFILES", "RMDIRS"]
    assert [(p["phase"], p["iteration"]) for p in doc["phases"]] == [
        (name, i) for i in range(2) for name in names
    ]
    assert [op for op, _ in phase_blocks(stdout)] == names * 2
    summaries = summary_blocks(stdout)
    assert list(summaries) == names
    assert "Dirs/s" in summaries["MKDIRS"][1] and "Files/s" in summaries["WRITE"][1]
    check_summary_against_blocks(stdout, doc)
    check_json_summary(doc)
    assert os.listdir(dir_run.work / "d") == []  # the second iteration cleaned up too


@pytest.mark.parametrize("name", ["file", "dir"])
def test_show_prints_what_the_run_printed(
    file_run: Run, dir_run: Run, name: str, validator: Draft202012Validator
) -> None:
    run = file_run if name == "file" else dir_run
    proc = aiobench("show", "r.json", cwd=run.work)
    assert ok(proc) == run.stdout and proc.stderr == ""
    assert errors_of(validator, run.doc) == []


def test_result_files_get_a_record_per_phase_per_iteration(
    file_run: Run, validator: Draft202012Validator
) -> None:
    work, doc = file_run.work, file_run.doc
    with (work / "r.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["operation"] for r in rows] == [p["phase"] for p in doc["phases"]]
    assert [r["IOPS [last]"] for r in rows] == [str(p["last_done"]["iops"]) for p in doc["phases"]]
    records = [json.loads(line) for line in (work / "r.jsonl").read_text().splitlines()]
    # elbencho's records, one per phase of each iteration
    assert [r["phase_type"] for r in records] == [p["phase"] for p in doc["phases"]]
    assert [r["last_done"]["iops"] for r in records] == [
        str(p["last_done"]["iops"]) for p in doc["phases"]
    ]
    # The resfile has the table as stdout had it, summary included.
    res = (work / "res.txt").read_text(encoding="utf-8")
    assert res.startswith("ISO DATE: ") and res.endswith("\n\n" + file_run.stdout)


def test_one_iteration_has_an_empty_summary(
    tmp_path: Path, validator: Draft202012Validator
) -> None:
    stdout = ok(aiobench("-w", "-b", "64k", "-s", "256k", "f", "--json", "r.json", cwd=tmp_path))
    doc = json.loads((tmp_path / "r.json").read_text())
    assert errors_of(validator, doc) == []
    assert doc["iterations_summary"] == []
    assert [p["iteration"] for p in doc["phases"]] == [0]
    assert "SUMMARY" not in stdout


def test_housekeeping_blocks_repeat_with_the_sequence(
    tmp_path: Path, validator: Draft202012Validator
) -> None:
    stdout = ok(aiobench("-w", "--sync", "-i", "2", "-b", "64k", "-s", "256k", "f",
                         "--json", "r.json", cwd=tmp_path))  # fmt: skip
    doc = json.loads((tmp_path / "r.json").read_text())
    assert errors_of(validator, doc) == []
    assert [(p["phase"], p["iteration"]) for p in doc["phases"]] == [
        ("SYNC", 0), ("WRITE", 0), ("SYNC", 0), ("SYNC", 1), ("WRITE", 1), ("SYNC", 1),
    ]  # fmt: skip
    assert list(summary_blocks(stdout)) == ["WRITE"]
    check_summary_against_blocks(stdout, doc)
    check_json_summary(doc)


def test_time_limit_in_the_first_iteration_ends_the_run(
    tmp_path: Path, validator: Draft202012Validator
) -> None:
    (tmp_path / "f").write_bytes(os.urandom(MIB))
    args = ("-r", "--rand", "--randamount", "1t", "-b", "4k", "--timelimit", "1", "-i", "3", "f")
    stdout = ok(aiobench(*args, "--json", "r.json", cwd=tmp_path))
    doc = json.loads((tmp_path / "r.json").read_text())
    assert errors_of(validator, doc) == []
    assert [(p["phase"], p["iteration"], p["time_limited"]) for p in doc["phases"]] == [
        ("READ", 0, True)
    ]
    (entry,) = doc["iterations_summary"]
    assert entry["phase"] == "READ" and entry["iterations"] == 1
    iops = doc["phases"][0]["last_done"]["iops"]
    assert entry["iops"] == {"min": iops, "max": iops, "mean": iops, "stddev": 0}
    assert list(summary_blocks(stdout)) == ["READ"] and "READ over 1 " in stdout
    check_summary_against_blocks(stdout, doc)
    assert ok(aiobench("show", "r.json", cwd=tmp_path)) == stdout


def test_zero_iterations_is_a_usage_error(tmp_path: Path) -> None:
    proc = aiobench("-w", "-i", "0", "-s", "1m", "f", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr == "Error: -i/--iterations: must be at least 1 (got 0)\n"
    assert not (tmp_path / "f").exists()


# ---------------------------------------------------------------------------------------
# the schema


def test_schema_parts_are_strict() -> None:
    defs = load_schema()["$defs"]
    for name in ("iteration_summary", "spread"):
        assert defs[name]["additionalProperties"] is False, name
    assert set(defs["iteration_summary"]["required"]) == {
        "phase", "iterations", "iops", "bytes_per_s", "entries_per_s", "elapsed_ns",
    }  # fmt: skip
    # Optional, so version-2 documents written before -i stay valid.
    assert "iterations_summary" not in defs["document"]["required"]
    assert "iteration" not in defs["phase"]["required"]


S: list[str | int] = ["iterations_summary", 0]
MUTATIONS: dict[str, Callable[[Doc], None]] = {
    "iteration-negative": set_at(["phases", 0, "iteration"], -1),
    "iteration-as-string": set_at(["phases", 0, "iteration"], "0"),
    "summary-as-object": set_at(["iterations_summary"], {}),
    "summary-extra-key": set_at([*S, "median"], 1),
    "summary-unknown-phase": set_at([*S, "phase"], "APPEND"),
    "summary-zero-iterations": set_at([*S, "iterations"], 0),
    "summary-without-iops": delete_at([*S, "iops"]),
    "spread-min-as-float": set_at([*S, "iops", "min"], 1.5),
    "spread-mean-as-string": set_at([*S, "iops", "mean"], "1"),
    "spread-negative-stddev": set_at([*S, "elapsed_ns", "stddev"], -1.0),
    "spread-extra-key": set_at([*S, "bytes_per_s", "p50"], 1),
    "spread-without-stddev": delete_at([*S, "entries_per_s", "stddev"]),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_wrong_iteration_parts_fail(
    file_run: Run, validator: Draft202012Validator, name: str
) -> None:
    assert errors_of(validator, file_run.doc) == []
    broken = copy.deepcopy(file_run.doc)
    MUTATIONS[name](broken)
    assert json.dumps(broken) != json.dumps(file_run.doc)
    assert errors_of(validator, broken) != [], name
