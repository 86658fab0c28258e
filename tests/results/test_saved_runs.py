"""Saved runs through the real CLI: ``aiobench show``, ``compare`` and ``plot`` on ``--json`` files.

The runs are real ``python -m aiobench`` processes on small files, saved once per module;
``show`` must give back their stdout byte for byte, and every ratio ``compare`` prints is
recomputed here from the two documents. Usage errors go through :func:`aiobench.cli.main`
in this process.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import statistics
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import DATA
from tests.helpers import call_main as call
from tests.helpers import run_aiobench as aiobench

pytestmark = pytest.mark.slow  # real CLI runs (see tests/conftest.py)

EXAMPLE_V1 = DATA / "example-result-v1.json"
HEADER = (
    "OPERATION   RESULT TYPE         FIRST DONE   LAST DONE\n"
    "=========== ================    ==========   =========\n"
)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
TIMES = "\u00d7"
MIB = 1 << 20
Doc = dict[str, Any]


# ---------------------------------------------------------------------------------------
# helpers


def ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    return proc.stdout


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from the IHDR chunk, the first chunk after the signature."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    length, kind, width, height = struct.unpack(">I4sII", data[8:24])
    assert (length, kind) == (13, b"IHDR")
    return int(width), int(height)


def without_target_blocks(table: str) -> str:
    """The table with every ``<PHASE> per target`` block (up to its ``---``) taken out."""
    out, skipping = [], False
    for line in table.splitlines(keepends=True):
        if re.match(r" \S+ +per target +:", line):
            skipping = True
        if not skipping:
            out.append(line)
        elif line == "---\n":
            skipping = False
    return "".join(out)


def target_block_phases(table: str) -> list[str]:
    return re.findall(r"^ (\S+) +per target +:", table, flags=re.MULTILINE)


@dataclass(frozen=True)
class CompareRow:
    phase: str
    metric: str
    a: str
    b: str
    ratio: str
    verdict: str
    note: str


METRICS = (
    "Elapsed (last done)", "Files/s", "Dirs/s", "IOPS", "Throughput MiB/s",
    "IO latency p50", "IO latency p99",
)  # fmt: skip
_ROW = re.compile(
    rf"(?P<phase>\S+) +(?P<metric>{'|'.join(map(re.escape, METRICS))}) +(?P<a>\S+) +"
    r"(?P<b>\S+) +(?P<ratio>\S+)  (?P<verdict>better|worse|same) *(?:  (?P<note>.+))?"
)


def compare_rows(text: str) -> list[CompareRow]:
    """The metric rows of ``compare`` output: the lines below the ``====`` rule, up to the
    blank line before the noise note (if any)."""
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if line and set(line) == {"="})
    assert lines[rule - 1].split() == ["PHASE", "METRIC", "A", "B", "B/A", "B", "IS", "NOTE"]
    end = lines.index("", rule) if "" in lines[rule:] else len(lines)
    rows = []
    for line in lines[rule + 1 : end]:
        match = _ROW.fullmatch(line)
        assert match is not None, line
        rows.append(CompareRow(**{k: v or "" for k, v in match.groupdict().items()}))
    return rows


def metric_value(phase: Doc, metric: str) -> float:
    """What a compare metric is, read from a ``--json`` phase."""
    last = phase["last_done"]
    values: dict[str, float] = {
        "Elapsed (last done)": last["elapsed_ns"],
        "Files/s": last["entries_per_s"],
        "Dirs/s": last["entries_per_s"],
        "IOPS": last["iops"],
        "Throughput MiB/s": last["bytes_per_s"] / MIB,
        "IO latency p50": phase["latency"]["io"]["percentiles_ns"]["50"],
        "IO latency p99": phase["latency"]["io"]["percentiles_ns"]["99"],
    }
    return values[metric]


def ratio(a: float, b: float) -> str:
    return f"{b / a:.2f}{TIMES}"


# ---------------------------------------------------------------------------------------
# saved runs, made once for this module


@dataclass(frozen=True)
class Saved:
    path: Path
    stdout: str
    doc: Doc


RUNS = {
    "single": ("-w", "-r", "-b", "64k", "-s", "1m", "one"),
    "three": ("-w", "-r", "-b", "64k", "-s", "1m", "--pertarget", "t1", "t2", "t3"),
    "lat": ("-w", "-r", "-s", "1m", "--lat", "--latpercent9s", "1", "--lathisto", "--cpu", "l"),
    "nopertarget": ("-w", "-r", "-b", "64k", "-s", "1m", "--nopertarget", "t1", "t2", "t3"),
    "dir": (
        "-d", "-w", "-r", "-F", "-D", "-n", "2", "-N", "3", "-s", "4k", "--pertarget", "d1", "d2",
    ),
}  # fmt: skip


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Saved]:
    work = tmp_path_factory.mktemp("saved")
    (work / "d1").mkdir()
    (work / "d2").mkdir()
    out = {}
    for name, args in RUNS.items():
        path = work / f"{name}.json"
        stdout = ok(aiobench(*args, "--json", path.name, cwd=work))
        out[name] = Saved(path, stdout, json.loads(path.read_text(encoding="utf-8")))
    return out


# ---------------------------------------------------------------------------------------
# show


@pytest.mark.parametrize(
    ("name", "per_target"),
    [("single", False), ("three", True), ("nopertarget", False), ("dir", True), ("lat", False)],
)
def test_show_reproduces_the_table_byte_for_byte(
    saved: dict[str, Saved], name: str, per_target: bool
) -> None:
    run = saved[name]
    proc = aiobench("show", str(run.path), cwd=run.path.parent)
    assert ok(proc) == run.stdout
    assert proc.stderr == ""
    assert run.stdout.startswith(HEADER)
    phases = [p["phase"] for p in run.doc["phases"]]
    assert target_block_phases(run.stdout) == (phases if per_target else [])


def test_show_per_target_options_override_the_run(saved: dict[str, Saved]) -> None:
    three, plain = saved["three"], saved["nopertarget"]
    off = ok(aiobench("show", "--nopertarget", str(three.path), cwd=three.path.parent))
    assert off == without_target_blocks(three.stdout) != three.stdout
    on = ok(aiobench("show", str(plain.path), "--pertarget", cwd=plain.path.parent))
    assert without_target_blocks(on) == plain.stdout
    assert target_block_phases(on) == ["WRITE", "READ"]
    for path in ("t1", "t2", "t3"):
        assert on.count(f"  {path}\n") == 2  # each target listed in both phases
    # The JSON always has the per-target counts, whatever the table showed.
    for phase in plain.doc["phases"]:
        assert [t["path"] for t in phase["per_target"]["targets"]] == ["t1", "t2", "t3"]


def test_show_reads_a_schema_version_1_file(tmp_path: Path) -> None:
    doc = json.loads(EXAMPLE_V1.read_text(encoding="utf-8"))
    assert doc["schema_version"] == 1
    proc = aiobench("show", str(EXAMPLE_V1), cwd=tmp_path)
    out = ok(proc)
    assert proc.stderr == ""
    assert out.startswith(HEADER)
    assert target_block_phases(out) == []  # version 1 has no per-target counts
    blocks = out[len(HEADER) :].split("---\n")
    assert blocks[-1] == ""
    assert len(blocks) - 1 == len(doc["phases"])
    for block, phase in zip(blocks, doc["phases"], strict=False):
        rows = {line[12:29].strip(): line[31:].split() for line in block.splitlines()}
        assert block.startswith(f"{phase['phase']:<11} Elapsed time")
        first, last = phase["first_done"], phase["last_done"]
        assert rows["IOPS"] == [str(first["iops"]), str(last["iops"])]
        assert rows["Throughput MiB/s"] == [
            str(first["bytes_per_s"] // MIB),
            str(last["bytes_per_s"] // MIB),
        ]
        assert rows["Total MiB"] == [str(first["bytes"] // MIB), str(last["bytes"] // MIB)]


# ---------------------------------------------------------------------------------------
# compare


def test_compare_a_run_with_itself_is_one(saved: dict[str, Saved]) -> None:
    run = saved["three"]
    out = ok(aiobench("compare", str(run.path), str(run.path), cwd=run.path.parent))
    assert out.startswith(f"A: {run.path}  ") and f"\nB: {run.path}  " in out
    rows = compare_rows(out)
    metrics = [
        "Elapsed (last done)",
        "IOPS",
        "Throughput MiB/s",
        "IO latency p50",
        "IO latency p99",
    ]
    assert [(r.phase, r.metric) for r in rows] == [
        (phase, metric) for phase in ("WRITE", "READ") for metric in metrics
    ]
    assert {r.ratio for r in rows} == {f"1.00{TIMES}"}
    assert all(r.a == r.b for r in rows)
    assert {r.verdict for r in rows} == {"same"}
    # A 1 MiB run has one (partial) interval: too few to know its noise; each line says
    # how many each run has, and a note under the table why and what to do.
    for r in rows:
        expected = "" if r.metric.startswith("Elapsed") else "noise unknown: A has 1 full "
        assert r.note.startswith(expected) and (expected or r.note == ""), r
    assert out.endswith(
        "\n\nNoise unknown: a run's noise is the spread of a metric over its full --liveint "
        "intervals, and 3 are needed to measure it.\n"
        "Run again with a shorter --liveint (A used 2000 ms, B 2000 ms) or for longer.\n"
    )


def test_compare_two_runs_gives_the_ratios_of_their_documents(saved: dict[str, Saved]) -> None:
    a, b = saved["single"], saved["three"]
    out = ok(aiobench("compare", str(a.path), str(b.path), cwd=a.path.parent))
    assert out.startswith(f"A: {a.path}  ") and f"\nB: {b.path}  " in out
    rows = compare_rows(out)
    phases_a = {p["phase"]: p for p in a.doc["phases"]}
    phases_b = {p["phase"]: p for p in b.doc["phases"]}
    assert [r.phase for r in rows] == ["WRITE"] * 5 + ["READ"] * 5
    for r in rows:
        va, vb = (
            metric_value(phases_a[r.phase], r.metric),
            metric_value(phases_b[r.phase], r.metric),
        )
        assert r.ratio == ratio(va, vb), r
        # Higher rates are better; lower elapsed time and latency.
        lower_is_better = r.metric.startswith(("Elapsed", "IO latency"))
        if r.ratio != ratio(1, 1):
            assert r.verdict == ("better" if (vb > va) != lower_is_better else "worse"), r
        if r.metric == "IOPS":
            assert (r.a, r.b) == (str(int(va)), str(int(vb)))


def test_compare_across_modes_uses_the_common_phases(
    saved: dict[str, Saved], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = saved["single"], saved["dir"]
    code, out, err = call(capsys, "compare", str(a.path), str(b.path))
    assert (code, err) == (0, "")
    rows = compare_rows(out)
    assert {r.phase for r in rows} == {"WRITE", "READ"}  # no MKDIRS, RMFILES, RMDIRS
    by_phase = {p["phase"]: p for p in b.doc["phases"]}
    for r in rows:
        phase_a = next(p for p in a.doc["phases"] if p["phase"] == r.phase)
        assert r.ratio == ratio(
            metric_value(phase_a, r.metric), metric_value(by_phase[r.phase], r.metric)
        )


def test_compare_of_a_steady_run_with_itself_is_within_noise(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(os.urandom(8 * MIB))
    args = ("-r", "--rand", "--randamount", "1t", "-b", "64k", "--timelimit", "1")
    table = ok(aiobench(*args, "--liveint", "50", "f", "--json", "run.json", cwd=tmp_path))
    doc = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    (phase,) = doc["phases"]
    intervals = phase["intervals"]
    length = intervals[0]["end_ns"] - intervals[0]["start_ns"]
    full = [iv for iv in intervals if iv["end_ns"] - iv["start_ns"] == length]
    assert len(full) >= 3
    out = ok(aiobench("compare", "run.json", "run.json", cwd=tmp_path))
    rows = compare_rows(out)
    assert [r.metric for r in rows] == [
        "Elapsed (last done)", "IOPS", "Throughput MiB/s", "IO latency p50", "IO latency p99",
    ]  # fmt: skip
    assert {r.ratio for r in rows} == {f"1.00{TIMES}"}
    assert rows[0].note == ""  # one number per run: no spread to judge it by
    for r in rows[1:]:
        assert r.note.startswith("warning: within noise (runs vary by "), r
    # The spread named is the coefficient of variation of the interval IOPS.
    iops = [iv["iops"] for iv in full]
    spread = statistics.pstdev(iops) / statistics.fmean(iops)
    assert rows[1].note == f"warning: within noise (runs vary by {100 * spread:.1f}%)"
    # A time-limited run with many intervals shows again as it was printed, too.
    assert ok(aiobench("show", "run.json", cwd=tmp_path)) == table


def test_compare_of_schema_version_1_files(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = call(capsys, "compare", str(EXAMPLE_V1), str(EXAMPLE_V1))
    assert (code, err) == (0, "")
    rows = compare_rows(out)
    assert {r.phase for r in rows} == {"WRITE", "READ"}
    assert {r.ratio for r in rows} == {f"1.00{TIMES}"}


# ---------------------------------------------------------------------------------------
# errors


def _write_docs(saved: dict[str, Saved], where: Path) -> None:
    """Broken and unrelated files next to a good one, for the error cases."""
    doc = saved["single"].doc
    (where / "good.json").write_text(json.dumps(doc), encoding="utf-8")
    (where / "text.json").write_text("OPERATION   RESULT TYPE\n", encoding="utf-8")
    (where / "v99.json").write_text(json.dumps(doc | {"schema_version": 99}), encoding="utf-8")
    (where / "nover.json").write_text(
        json.dumps({k: v for k, v in doc.items() if k != "schema_version"}), encoding="utf-8"
    )
    (where / "list.json").write_text("[1, 2]\n", encoding="utf-8")
    (where / "sub").mkdir()
    for name, keep in (("write.json", "WRITE"), ("read.json", "READ")):
        only = doc | {"phases": [p for p in doc["phases"] if p["phase"] == keep]}
        (where / name).write_text(json.dumps(only), encoding="utf-8")
    lines = [
        json.dumps({"schema_version": 2, "record": "phase", "phase": p}) for p in doc["phases"]
    ]
    (where / "lines.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        pytest.param(("show", "missing.json"), ["missing.json"], id="show-missing"),
        pytest.param(("show", "text.json"), ["text.json", "JSON"], id="show-not-json"),
        pytest.param(("show", "v99.json"), ["v99.json", "schema_version"], id="show-version-99"),
        pytest.param(("show", "nover.json"), ["nover.json", "schema_version"], id="show-no-ver"),
        pytest.param(("show", "list.json"), ["list.json"], id="show-not-a-document"),
        pytest.param(("show", "lines.jsonl"), ["lines.jsonl"], id="show-jsonfile-lines"),
        pytest.param(("compare", "good.json", "missing.json"), ["missing.json"], id="cmp-missing"),
        pytest.param(
            ("compare", "missing.json", "good.json"), ["missing.json"], id="cmp-missing-a"
        ),
        pytest.param(("compare", "good.json", "text.json"), ["text.json"], id="cmp-not-json"),
        pytest.param(
            ("compare", "v99.json", "good.json"), ["v99.json", "schema_version"], id="cmp-v99"
        ),
        pytest.param(
            ("compare", "write.json", "read.json"),
            ["write.json", "read.json", "no phase in common"],
            id="cmp-no-common-phase",
        ),
        pytest.param(("plot", "missing.json", "-o", "p.png"), ["missing.json"], id="plot-missing"),
        pytest.param(("plot", "v99.json", "-o", "p.png"), ["v99.json"], id="plot-v99"),
        pytest.param(
            ("plot", "good.json", "-o", "nodir/p.png"), ["-o/--output", "nodir"], id="plot-no-dir"
        ),
        pytest.param(
            ("plot", "good.json", "-o", "p.png", "--width", "50"), ["--width"], id="plot-narrow"
        ),
        pytest.param(("plot", "good.json", "-o", "sub"), ["-o/--output", "sub"], id="plot-to-dir"),
    ],
)
def test_saved_run_errors_are_one_line_and_exit_2(
    saved: dict[str, Saved],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: tuple[str, ...],
    needles: list[str],
) -> None:
    _write_docs(saved, tmp_path)
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    code, out, err = call(capsys, *args)
    assert code == 2, (code, out, err)
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no PNG, nothing else


# ---------------------------------------------------------------------------------------
# plot


@pytest.mark.parametrize(
    ("name", "size"),
    [pytest.param("three", None, id="default-size"), pytest.param("dir", (640, 480), id="dir")],
)
def test_plot_writes_a_png_of_the_asked_size(
    saved: dict[str, Saved], tmp_path: Path, name: str, size: tuple[int, int] | None
) -> None:
    png = tmp_path / "plot.png"
    options = () if size is None else ("--width", str(size[0]), "--height", str(size[1]))
    proc = aiobench("plot", str(saved[name].path), "-o", str(png), *options, cwd=tmp_path)
    assert ok(proc) == ""
    assert png.stat().st_size > 0
    assert png_size(png) == (size or (1200, 800))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plot.png"]  # no temporary left


# ---------------------------------------------------------------------------------------
# a PATH named like a subcommand


def test_path_named_like_a_subcommand_goes_after_double_dash(tmp_path: Path) -> None:
    run = aiobench(
        "-w", "-s", "1m", "-b", "64k", "--json", "run.json", "--", "show", "plot", cwd=tmp_path
    )
    table = ok(run)
    assert table.startswith(HEADER) and "WRITE" in table
    assert (tmp_path / "show").stat().st_size == MIB
    assert (tmp_path / "plot").stat().st_size == MIB
    doc = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert doc["meta"]["paths"] == ["show", "plot"]
    # `show` in first place is still the subcommand, even beside a file called show.
    assert ok(aiobench("show", "run.json", cwd=tmp_path)) == table


def test_compare_prints_mib_as_the_table_does_and_quotes_the_command() -> None:
    from aiobench.render.compare import render_compare
    from aiobench.results.saved import load_run

    run = load_run(str(DATA / "example-result.json"))
    run.meta["command"] = ["aiobench", "-w", "--label", "my run", "f1"]
    # 1000.9 MiB/s: the table shows 1000, rounding would show 1001.
    nearly = dataclasses.replace(
        run.phases[0].last_done, bytes=1000 * (1 << 20) + 9 * (1 << 20) // 10, elapsed_ns=10**9
    )
    run.phases[0] = dataclasses.replace(run.phases[0], last_done=nearly)
    text = render_compare(run, run, "a.json", "b.json")
    assert "A: a.json" in text and "aiobench -w --label 'my run' f1" in text
    for phase in run.phases:
        row = next(
            line
            for line in text.splitlines()
            if line.startswith(f"{phase.name:<11} Throughput MiB/s")
        )
        # Truncated like the table's "Throughput MiB/s" row, never rounded up.
        assert row.split()[3] == str(phase.last_done.bytes_per_s // (1 << 20)), row
    assert "1000" in text and "1001" not in text
