"""Result files through the real CLI: ``--csvfile``, ``--jsonfile``, ``--resfile``, appended.

Every benchmark here is a real ``python -m aiobench`` process on small files; its own
``--json`` document is the measure every file is checked against, so no test knows a
measured figure in advance. The CSV header is compared with the header of a real elbencho
CSV (``tests/data/elbencho-rand-read.csv``, elbencho 3.1-10). Usage errors, which are
raised before anything runs, go through :func:`aiobench.cli.main` in this process.
"""

from __future__ import annotations

import csv
import datetime
import json
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from aiobench import __version__
from tests.helpers import DATA
from tests.helpers import call_main as call
from tests.helpers import run_aiobench as aiobench

ELBENCHO_CSV = DATA / "elbencho-rand-read.csv"
ELBENCHO_COLUMNS = 55
FIO_POINTS = [
    "1", "5", "10", "20", "30", "40", "50", "60", "70", "80",
    "90", "95", "99", "99.5", "99.9", "99.95", "99.99",
]  # fmt: skip
PERCENTILE_COLUMNS = [f"IO lat us [p{p}]" for p in FIO_POINTS] + [
    f"Ent lat us [p{p}]" for p in FIO_POINTS
]
STATUS_COLUMNS = ["status", "error"]  # how the phase ended, after the percentiles
RWMIX_COLUMNS = [
    f"rwmix read {name} [{which}]"
    for name in ("entries/s", "IOPS", "MiB/s", "entries", "MiB")
    for which in ("first", "last")
] + [f"rwmix read {kind} lat us [{p}]" for kind in ("Ent", "IO") for p in ("min", "avg", "max")]
# The config columns elbencho writes before the operation, in its order.
CONFIG_COLUMNS = [
    "path type", "paths", "hosts", "threads", "dirs", "files", "file size", "block size",
    "direct IO", "random", "random aligned", "IO depth", "shared paths", "truncate",
]  # fmt: skip
# elbencho's "ISO date": local time to the millisecond and a numeric UTC offset.
ELBENCHO_DATE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d{4}")
DIR_PHASES = ["MKDIRS", "WRITE", "READ", "RMFILES", "RMDIRS"]
MIB = 1 << 20
NS_PER_MS = 1_000_000
NS_PER_US = 1_000
LABEL = "it's run one"
KEPT = "notes from an earlier run, kept\n"
Doc = dict[str, Any]
Row = dict[str, str]


# ---------------------------------------------------------------------------------------
# helpers


def assert_one_error_line(code: int, out: str, err: str, needles: list[str]) -> str:
    """Exit 2, nothing on stdout, exactly one ``Error:`` line that names every needle."""
    assert code == 2, (code, out, err)
    assert out == ""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and err.endswith("\n"), err
    assert lines[0].startswith("Error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def listing(root: Path) -> dict[str, tuple[bool, int, int]]:
    """Every entry below ``root``: (is a dir, size, mtime in ns)."""
    out = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        out[str(path.relative_to(root))] = (path.is_dir(), st.st_size, st.st_mtime_ns)
    return out


def elbencho_header() -> list[str]:
    """The header line of elbencho's own CSV (plain names, no quoting)."""
    with ELBENCHO_CSV.open(encoding="utf-8", newline="") as handle:
        first = handle.readline()
    assert first.endswith("\n")
    return first.rstrip("\n").split(",")


def elbencho_config_row() -> Row:
    """The reference row's cells up to ``operation``: no commas or quotes in those."""
    with ELBENCHO_CSV.open(encoding="utf-8", newline="") as handle:
        handle.readline()
        row = handle.readline()
    header = elbencho_header()
    count = header.index("operation") + 1
    return dict(zip(header[:count], row.split(",")[:count], strict=True))


def read_csv(path: Path) -> tuple[list[str], list[Row]]:
    """(header, rows) of a result CSV; every row has exactly the header's cells."""
    with path.open(encoding="utf-8", newline="") as handle:
        header = next(csv.reader(handle))
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        assert None not in row, f"more cells than columns: {row}"
        assert None not in row.values(), f"fewer cells than columns: {row}"
    return header, rows


def assert_valid(validator: Draft202012Validator, record: object) -> None:
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(record)]
    assert errors == []


def parse_elbencho_date(text: str) -> datetime.datetime:
    assert ELBENCHO_DATE.fullmatch(text), text
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f%z")


def when(count: int, value: int) -> str:
    """elbencho leaves a rate or amount empty when the phase has no count behind it."""
    return str(value) if count else ""


def assert_row_matches_phase(row: Row, doc: Doc, phase: Doc) -> None:
    """The measured cells of a CSV row say what the run's ``--json`` says."""
    first, last = phase["first_done"], phase["last_done"]
    assert row["operation"] == phase["phase"]
    moment = datetime.datetime.fromisoformat(phase["start_time"])
    assert parse_elbencho_date(row["ISO date"]) == moment
    expected = {
        "time ms [first]": str(first["elapsed_ns"] // NS_PER_MS),
        "time ms [last]": str(last["elapsed_ns"] // NS_PER_MS),
        "entries/s [first]": when(last["entries"], first["entries_per_s"]),
        "entries/s [last]": when(last["entries"], last["entries_per_s"]),
        "IOPS [first]": when(last["ops"], first["iops"]),
        "IOPS [last]": when(last["ops"], last["iops"]),
        "MiB/s [first]": when(last["bytes"], first["bytes_per_s"] // MIB),
        "MiB/s [last]": when(last["bytes"], last["bytes_per_s"] // MIB),
        "CPU% [first]": str(first["cpu_percent"]),
        "CPU% [last]": str(last["cpu_percent"]),
        "entries [first]": when(last["entries"], first["entries"]),
        "entries [last]": when(last["entries"], last["entries"]),
        "MiB [first]": when(last["bytes"], first["bytes"] // MIB),
        "MiB [last]": when(last["bytes"], last["bytes"] // MIB),
        "version": doc["meta"]["aiobench_version"],
        **dict.fromkeys(RWMIX_COLUMNS, ""),
        "status": phase["status"],
        "error": phase["error"]["message"] if phase["error"] else "",
    }
    assert {key: row[key] for key in expected} == expected
    assert row["version"] == __version__
    assert shlex.split(row["command"]) == doc["meta"]["command"]
    for kind, key in (("IO", "io"), ("Ent", "entries")):
        lat = phase["latency"].get(key)
        cells = [row[f"{kind} lat us [{p}]"] for p in ("min", "avg", "max")]
        points = [row[f"{kind} lat us [p{p}]"] for p in FIO_POINTS]
        if lat is None or lat["count"] == 0:
            assert cells == ["", "", ""] and points == [""] * len(FIO_POINTS), (kind, row)
            continue
        # Whole microseconds, cut off as elbencho does (the JSON mean is rounded to 0.1 ns).
        assert cells[0] == str(lat["min_ns"] // NS_PER_US)
        assert cells[2] == str(lat["max_ns"] // NS_PER_US)
        assert abs(int(cells[1]) - lat["mean_ns"] / NS_PER_US) < 1
        assert [round(float(cell) * NS_PER_US) for cell in points] == [
            lat["percentiles_ns"][p] for p in FIO_POINTS
        ]


# ---------------------------------------------------------------------------------------
# two runs appending to the same files


@dataclass(frozen=True)
class Run:
    args: tuple[str, ...]
    stdout: str
    doc: Doc


@dataclass(frozen=True)
class Appended:
    work: Path
    runs: tuple[Run, Run]


RESULT_FILES = (
    "--csvfile", "res.csv", "--jsonfile", "res.jsonl", "--resfile", "res.txt",
    "--livecsv", "live.csv", "--livejson", "live.jsonl",
)  # fmt: skip


@pytest.fixture(scope="module")
def appended(tmp_path_factory: pytest.TempPathFactory) -> Appended:
    """Two different runs writing all result files into one directory, one after the other.

    The resfile already has a line, the CSV file already exists but is empty.
    """
    work = tmp_path_factory.mktemp("appended")
    (work / "res.txt").write_text(KEPT, encoding="utf-8")
    (work / "res.csv").touch()
    first = ("-w", "-r", "-t", "2", "-b", "64k", "-s", "1m", "f1", "f2", "--label", LABEL)
    second = ("-w", "-r", "--rand", "-b", "64k", "-s", "2m", "--pertarget", "--lat", "f1", "f2")
    runs = []
    for n, args in enumerate((first, second), start=1):
        full = (*args, *RESULT_FILES, "--json", f"run{n}.json")
        proc = aiobench(*full, cwd=work)
        assert proc.returncode == 0, proc.stderr
        doc = json.loads((work / f"run{n}.json").read_text(encoding="utf-8"))
        runs.append(Run(args=full, stdout=proc.stdout, doc=doc))
    return Appended(work=work, runs=(runs[0], runs[1]))


def test_two_runs_give_one_header_and_two_rows_per_phase(appended: Appended) -> None:
    text = (appended.work / "res.csv").read_text(encoding="utf-8")
    lines = text.splitlines()
    header, rows = read_csv(appended.work / "res.csv")
    assert text.endswith("\n")
    assert lines.count(lines[0]) == 1  # the header once, although the second run appended
    assert len(lines) == 1 + len(rows)
    # elbencho's 55 columns, in elbencho's order, then the percentile and status columns.
    elbencho = elbencho_header()
    assert len(elbencho) == ELBENCHO_COLUMNS
    assert header[:ELBENCHO_COLUMNS] == elbencho
    assert header[ELBENCHO_COLUMNS:] == PERCENTILE_COLUMNS + STATUS_COLUMNS
    phases = [p["phase"] for run in appended.runs for p in run.doc["phases"]]
    assert phases == ["WRITE", "READ", "WRITE", "READ"]
    assert [row["operation"] for row in rows] == phases
    assert [row["label"] for row in rows] == [LABEL, LABEL, "", ""]


def test_csv_values_agree_with_the_json(appended: Appended) -> None:
    _, rows = read_csv(appended.work / "res.csv")
    pairs = [(run, phase) for run in appended.runs for phase in run.doc["phases"]]
    assert len(rows) == len(pairs)
    for row, (run, phase) in zip(rows, pairs, strict=True):
        assert_row_matches_phase(row, run.doc, phase)
        # The command cell is one shell-quoted string that splits back into the argv.
        assert shlex.split(row["command"]) == ["aiobench", *run.args]
        meta, config = run.doc["meta"], run.doc["meta"]["config"]
        rand = config["rand"]
        assert {key: row[key] for key in CONFIG_COLUMNS} == {
            "path type": "file",
            "paths": "2",
            "hosts": "1",
            "threads": str(config["threads"]),
            "dirs": "",
            "files": "",
            "file size": str(meta["sizes_bytes"][0]),
            "block size": str(64 * 1024),
            "direct IO": "0",
            "random": "1" if rand else "0",
            "random aligned": "1" if rand else "",
            "IO depth": "1",
            "shared paths": "",
            "truncate": "0",
        }
    assert [row["threads"] for row in rows] == ["2", "2", "1", "1"]
    assert [row["file size"] for row in rows] == [str(MIB)] * 2 + [str(2 * MIB)] * 2


def test_csv_config_columns_are_elbenchos(tmp_path: Path) -> None:
    """The run of the reference CSV, scaled down: same config cells but the file size."""
    names = [f"file{i}" for i in range(1, 5)]
    for name in names:
        (tmp_path / name).write_bytes(os.urandom(256 * 1024))
    args = ("-r", "-b", "4k", "-t", "2", "--rand", "-s", "256k", *names)
    proc = aiobench(*args, "--csvfile", "res.csv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    reference = elbencho_config_row()
    reference_size = reference_command()[reference_command().index("-s") + 1]
    assert (reference_size, reference["file size"]) == ("256m", str(256 * MIB))  # in bytes
    _, rows = read_csv(tmp_path / "res.csv")
    (row,) = rows
    same = [c for c in CONFIG_COLUMNS if c != "file size"] + ["operation"]
    assert {c: row[c] for c in same} == {c: reference[c] for c in same}
    assert row["file size"] == str(256 * 1024)
    assert row["label"] == reference["label"] == ""


def reference_command() -> list[str]:
    """The argv elbencho recorded in the reference CSV (its own quoting: every word quoted)."""
    with ELBENCHO_CSV.open(encoding="utf-8", newline="") as handle:
        handle.readline()
        row = handle.readline()
    command = row.split(",", ELBENCHO_COLUMNS - 1)[-1]
    words = shlex.split(command)
    assert words[:2] == ["elbencho", "-r"]
    return words


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(
            ("-w", "-r", "--direct", "--iodepth", "4", "-t", "2", "-b", "64k", "-s", "1m"),
            {"direct IO": "1", "random": "0", "random aligned": "", "IO depth": "4",
             "threads": "2", "file size": str(MIB), "block size": str(64 * 1024)},
            id="direct-iodepth",
        ),
        pytest.param(
            ("-w", "-r", "--rand", "--norandalign", "-b", "64k", "-s", "1m"),
            {"direct IO": "0", "random": "1", "random aligned": "0", "IO depth": "1",
             "threads": "1", "file size": str(MIB), "block size": str(64 * 1024)},
            id="norandalign",
        ),
    ],
)  # fmt: skip
def test_csv_config_columns_follow_the_options(
    tmp_path: Path, args: tuple[str, ...], expected: dict[str, str]
) -> None:
    proc = aiobench(*args, "f", "--csvfile", "new.csv", "--json", "run.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    header, rows = read_csv(tmp_path / "new.csv")  # a new file gets the header
    assert header[:ELBENCHO_COLUMNS] == elbencho_header()
    doc = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert [row["operation"] for row in rows] == ["WRITE", "READ"]
    for row, phase in zip(rows, doc["phases"], strict=True):
        assert {key: row[key] for key in expected} == expected
        assert (row["path type"], row["paths"], row["dirs"], row["files"]) == ("file", "1", "", "")
        assert_row_matches_phase(row, doc, phase)


def test_csv_of_a_dir_mode_run_counts_dirs_files_and_entries(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    args = ("-d", "-w", "-r", "-F", "-D", "-n", "2", "-N", "3", "-s", "4k", "d")
    proc = aiobench(*args, "--csvfile", "res.csv", "--json", "run.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    _, rows = read_csv(tmp_path / "res.csv")
    assert [row["operation"] for row in rows] == DIR_PHASES
    assert [p["phase"] for p in doc["phases"]] == DIR_PHASES
    for row, phase in zip(rows, doc["phases"], strict=True):
        assert_row_matches_phase(row, doc, phase)
        assert (row["path type"], row["paths"], row["threads"]) == ("dir", "1", "1")
        assert (row["dirs"], row["files"]) == ("2", "3")
        assert row["file size"] == str(4096)
        assert row["block size"] == str(doc["meta"]["block_size_bytes"])
        # 2 dirs for the dir phases, 2 x 3 files for the others; every phase has entries.
        entries = "2" if row["operation"] in ("MKDIRS", "RMDIRS") else "6"
        assert (row["entries [first]"], row["entries [last]"]) == (entries, entries)
        assert row["entries/s [last]"] == str(phase["last_done"]["entries_per_s"]) != ""
        assert row["Ent lat us [max]"] != ""
    by_op = {row["operation"]: row for row in rows}
    for op in ("MKDIRS", "RMDIRS"):
        assert [by_op[op][k] for k in ("IOPS [last]", "MiB/s [last]", "MiB [last]")] == [""] * 3
        assert by_op[op]["IO lat us [min]"] == ""
    for op in ("WRITE", "READ"):
        assert by_op[op]["IOPS [last]"] != "" and by_op[op]["IO lat us [max]"] != ""


@pytest.mark.parametrize("prepared", ["empty", "header-only"])
def test_csv_that_is_empty_or_has_our_header_is_appended_to(tmp_path: Path, prepared: str) -> None:
    ours = ",".join(elbencho_header() + PERCENTILE_COLUMNS + STATUS_COLUMNS) + "\n"
    (tmp_path / "res.csv").write_text("" if prepared == "empty" else ours, encoding="utf-8")
    proc = aiobench("-w", "-b", "64k", "-s", "1m", "f", "--csvfile", "res.csv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "res.csv").read_text(encoding="utf-8")
    assert text.startswith(ours)
    assert text.count("ISO date,") == 1
    _, rows = read_csv(tmp_path / "res.csv")
    assert [row["operation"] for row in rows] == ["WRITE"]


def _swapped_header() -> str:
    names = elbencho_header() + PERCENTILE_COLUMNS + STATUS_COLUMNS
    names[1], names[2] = names[2], names[1]
    return ",".join(names) + "\n"


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(ELBENCHO_CSV.read_text(encoding="utf-8"), id="elbencho-csv"),
        pytest.param(_swapped_header(), id="columns-swapped"),
        pytest.param("time,iops\n1,2\n", id="other-tool"),
    ],
)
def test_csv_with_another_header_is_refused(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    content: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "old.csv"
    target.write_text(content, encoding="utf-8")
    before_bytes = target.read_bytes()
    before = listing(tmp_path)
    code, out, err = call(capsys, "-w", "-b", "64k", "-s", "1m", "f", "--csvfile", "old.csv")
    assert_one_error_line(code, out, err, ["--csvfile:", "old.csv"])
    assert err.startswith("Error: --csvfile: ")
    assert target.read_bytes() == before_bytes
    assert listing(tmp_path) == before
    assert not (tmp_path / "f").exists()  # refused before anything ran


def test_resfile_has_date_label_command_and_the_table(appended: Appended) -> None:
    text = (appended.work / "res.txt").read_text(encoding="utf-8")
    assert text.startswith(KEPT)  # appended, never truncated
    dates = re.findall(r"^ISO DATE: (.*)$", text, flags=re.MULTILINE)
    assert len(dates) == 2
    expected = KEPT
    for run, date in zip(appended.runs, dates, strict=True):
        # The run's start time, written the way elbencho writes dates.
        start = datetime.datetime.fromisoformat(run.doc["meta"]["start_time"])
        assert parse_elbencho_date(date) == start
        expected += f"ISO DATE: {date}\n"
        if run.doc["meta"]["label"]:
            expected += f"LABEL: {run.doc['meta']['label']}\n"
        expected += f"COMMAND LINE: {shlex.join(['aiobench', *run.args])}\n\n"
        expected += run.stdout
    assert text == expected
    assert text.count("LABEL: ") == 1 and f"LABEL: {LABEL}\n" in text
    # The table as stdout had it, per-target blocks and latency rows included where asked.
    assert [" per target " in run.stdout for run in appended.runs] == [False, True]
    assert ["IO latency" in run.stdout for run in appended.runs] == [False, True]
    assert all(run.stdout.startswith("OPERATION   RESULT TYPE") for run in appended.runs)


def test_jsonfile_gets_one_valid_record_per_phase(
    appended: Appended, validator: Draft202012Validator
) -> None:
    lines = (appended.work / "res.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    pairs = [(run, phase) for run in appended.runs for phase in run.doc["phases"]]
    assert len(records) == len(pairs) == 4  # the second run appended its two phases
    for record, (run, phase) in zip(records, pairs, strict=True):
        # elbencho's record of the very phase the --json document has (its strings).
        assert next(iter(record)) == "phase_type" and record["phase_type"] == phase["phase"]
        assert record.get("label", "") == run.doc["meta"]["label"]
        for done in ("first_done", "last_done"):
            figures = record[done]
            assert figures["iops"] == str(phase[done]["iops"])
            assert figures["bytes"] == str(phase[done]["bytes"])
            assert figures["elapsed_time_ms"] == str(phase[done]["elapsed_ns"] // 10**6)
        assert record["config"]["threads"] == str(run.doc["meta"]["config"]["threads"])
    for run in appended.runs:
        assert_valid(validator, run.doc)


def test_live_files_are_written_beside_the_others(
    appended: Appended, validator: Draft202012Validator
) -> None:
    records = [
        json.loads(line)
        for line in (appended.work / "live.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert records
    for record in records:
        assert_valid(validator, record)
        assert record["record"] == "interval"
    labels = [record["label"] for record in records]
    assert labels == sorted(labels, key=lambda label: label != LABEL)  # run 1, then run 2
    for label in (LABEL, ""):
        assert {r["phase"] for r in records if r["label"] == label} == {"WRITE", "READ"}
    lines = (appended.work / "live.csv").read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("ISO Date,Label,Phase,")
    assert lines.count(lines[0]) == 1
    _, rows = read_csv(appended.work / "live.csv")
    assert {row["Phase"] for row in rows} == {"WRITE", "READ"}


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        pytest.param(("--csvfile", "nodir/r.csv"), ["--csvfile", "nodir/r.csv"], id="csv-no-dir"),
        pytest.param(("--jsonfile", "nodir/r.jsonl"), ["--jsonfile", "nodir"], id="json-no-dir"),
        pytest.param(("--resfile", "nodir/r.txt"), ["--resfile", "nodir"], id="res-no-dir"),
        pytest.param(("--csvfile", "sub"), ["--csvfile", "sub", "directory"], id="csv-is-dir"),
        pytest.param(("--jsonfile", "sub"), ["--jsonfile", "sub", "directory"], id="json-is-dir"),
        pytest.param(("--resfile", "sub"), ["--resfile", "sub", "directory"], id="res-is-dir"),
        pytest.param(
            ("--jsonfile", "same", "--csvfile", "same"),
            ["--jsonfile", "--csvfile", "same"],
            id="same-file-twice",
        ),
        pytest.param(
            ("--resfile", "r.txt", "--livejson", "./r.txt"),
            ["--resfile", "--livejson", "r.txt"],
            id="same-file-spelled-twice",
        ),
        pytest.param(("--resfile", "f"), ["--resfile", "f", "PATH"], id="res-is-path"),
        pytest.param(("--csvfile", "./f"), ["--csvfile", "f", "PATH"], id="csv-is-path"),
        pytest.param(("--jsonfile", "f"), ["--jsonfile", "PATH"], id="json-is-path"),
        pytest.param(("--csvfile", ""), ["--csvfile"], id="csv-empty-name"),
        pytest.param(("--jsonfile", ""), ["--jsonfile"], id="json-empty-name"),
        pytest.param(("--resfile", ""), ["--resfile"], id="res-empty-name"),
        pytest.param(("--livecsv", "nodir/l.csv"), ["--livecsv", "nodir"], id="livecsv-no-dir"),
        pytest.param(("--livejson", "sub"), ["--livejson", "sub"], id="livejson-is-dir"),
        pytest.param(("--liveint", "9"), ["--liveint", "10"], id="liveint-9"),
        pytest.param(("--liveint", "0"), ["--liveint"], id="liveint-0"),
    ],
)
def test_bad_result_file_is_a_usage_error(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: tuple[str, ...],
    needles: list[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "inside").write_text("x", encoding="utf-8")
    before = listing(tmp_path)
    code, out, err = call(capsys, "-w", "-b", "64k", "-s", "1m", "f", *args)
    line = assert_one_error_line(code, out, err, needles)
    assert line.startswith(f"Error: {args[0]}") or line.startswith(f"Error: {args[-2]}"), line
    assert listing(tmp_path) == before  # no result file, no benchmark file


def test_result_file_that_is_an_existing_path_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    data = os.urandom(256 * 1024)
    (tmp_path / "data").write_bytes(data)
    before = listing(tmp_path)
    code, out, err = call(capsys, "-r", "-b", "64k", "data", "--resfile", "data")
    assert_one_error_line(code, out, err, ["--resfile", "data", "PATH"])
    assert (tmp_path / "data").read_bytes() == data
    assert listing(tmp_path) == before


def test_appending_after_a_last_line_without_newline_starts_a_new_line(tmp_path: Path) -> None:
    header = aiobench("-w", "-b", "64k", "-s", "256k", "f", "--csvfile", "a.csv", cwd=tmp_path)
    assert header.returncode == 0, header.stderr
    csv_path, notes = tmp_path / "a.csv", tmp_path / "notes.txt"
    csv_path.write_bytes(csv_path.read_bytes().rstrip(b"\n"))  # as an editor may save it
    notes.write_text("my notes, no newline")
    proc = aiobench(
        "-r", "-b", "64k", "f", "--csvfile", "a.csv", "--resfile", "notes.txt", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    columns, rows = read_csv(csv_path)
    assert [row["operation"] for row in rows] == ["WRITE", "READ"]
    assert all(len(row) == len(columns) for row in rows)
    assert notes.read_text().startswith("my notes, no newline\nISO DATE: ")
