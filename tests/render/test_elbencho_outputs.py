"""elbencho's output and path options (#24), through the real CLI."""

from __future__ import annotations

import csv
import dataclasses
import json
import re
from pathlib import Path

from aiobench.render.table import TableOptions, phase_text
from aiobench.results.model import PhaseResult, Totals
from tests.helpers import assert_usage_error, make_cfg, no_latency
from tests.helpers import run_aiobench as aiobench

KIB = 1024


def test_nopathexp_takes_brackets_literally(tmp_path: Path) -> None:
    expanded = make_cfg([str(tmp_path / "f[1-3]")])
    literal = make_cfg([str(tmp_path / "f[1-3]")], nopathexp=True)
    assert [Path(p).name for p in expanded.paths] == ["f1", "f2", "f3"]
    assert [Path(p).name for p in literal.paths] == ["f[1-3]"]


def test_nopathexp_writes_the_file_named_with_brackets(tmp_path: Path) -> None:
    doc = tmp_path / "r.json"
    proc = aiobench(
        "-w", "-b", "4k", "-s", "8k", "--nolive", "--nopathexp", "--json", str(doc),
        "f[1-2]", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("f")) == ["f[1-2]"]
    assert (tmp_path / "f[1-2]").stat().st_size == 8 * KIB
    assert json.loads(doc.read_text())["meta"]["config"]["paths"] == ["f[1-2]"]


def _csv_run(tmp_path: Path, *extra: str) -> list[list[str]]:
    out = tmp_path / "r.csv"
    for _ in range(2):  # a new file, then appended to
        proc = aiobench(
            "-w", "-b", "4k", "-s", "8k", "--nolive", "--csvfile", str(out), *extra, "f",
            cwd=tmp_path,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
    with out.open(newline="") as handle:
        return list(csv.reader(handle))


def test_nocsvlabels_leaves_out_the_header_row(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    labelled = _csv_run(tmp_path / "a")
    bare = _csv_run(tmp_path / "b", "--nocsvlabels")
    assert labelled[0][0] == "ISO date" and len(labelled) == 3
    assert len(bare) == 2, bare
    assert all(row[0] != "ISO date" for row in bare)
    assert [len(row) for row in bare] == [len(labelled[0])] * 2
    assert [row[labelled[0].index("operation")] for row in bare] == ["WRITE", "WRITE"]


LIVE_LINE = re.compile(r"^WRITE +\d+%  .*IOPS  elapsed .*  ETA ", re.M)


def test_live1n_writes_a_progress_line_per_interval_to_stderr(tmp_path: Path) -> None:
    args = ("-w", "-b", "4k", "-s", "1m", "--infloop", "--timelimit", "1", "--liveint", "50")
    plain = aiobench(*args, "f", cwd=tmp_path)
    lines = aiobench(*args, "--live1n", "f", cwd=tmp_path)
    assert plain.returncode == 0 and lines.returncode == 0, (plain.stderr, lines.stderr)
    assert LIVE_LINE.findall(plain.stderr) == []  # not a terminal: no live view
    assert len(LIVE_LINE.findall(lines.stderr)) >= 3, lines.stderr
    assert LIVE_LINE.findall(lines.stdout) == []


def test_live1n_with_nolive_is_a_usage_error(tmp_path: Path) -> None:
    proc = aiobench("-w", "-s", "4k", "--nolive", "--live1n", "f", cwd=tmp_path)
    assert_usage_error(proc, ["--live1n", "--nolive"])
    assert not (tmp_path / "f").exists()


EACH_ROW = re.compile(r"^ +Time ms each +: \[ ((?:\d+ )*)\]$", re.M)


def _each(text: str) -> list[list[int]]:
    return [[int(ms) for ms in row.split()] for row in EACH_ROW.findall(text)]


def _thread_ms(doc: Path) -> list[list[int]]:
    phases = json.loads(doc.read_text())["phases"]
    return [
        [t["elapsed_ns"] // 1_000_000 for t in sorted(p["threads"], key=lambda t: t["rank"])]
        for p in phases
    ]


def test_allelapsed_shows_each_threads_time_as_in_the_json(tmp_path: Path) -> None:
    args = ("-w", "-r", "-t", "3", "-b", "64k", "-s", "12m", "--nolive", "--json")
    plain = aiobench(*args, "p.json", "f", cwd=tmp_path)
    each = aiobench(*args, "a.json", "--allelapsed", "f", cwd=tmp_path)
    assert plain.returncode == 0 and each.returncode == 0, (plain.stderr, each.stderr)
    assert _each(plain.stdout) == []
    assert _each(each.stdout) == _thread_ms(tmp_path / "a.json")
    assert [len(row) for row in _each(each.stdout)] == [3, 3]
    # A saved run shows the row when asked to.
    shown = aiobench("show", "p.json", cwd=tmp_path)
    added = aiobench("show", "p.json", "--allelapsed", cwd=tmp_path)
    assert _each(shown.stdout) == []
    assert _each(added.stdout) == _thread_ms(tmp_path / "p.json")


def _quick_phase(first_ns: int, ops: int = 4) -> PhaseResult:
    return PhaseResult(
        name="READ",
        first_done=Totals(elapsed_ns=first_ns, ops=1, bytes=4096),
        last_done=Totals(elapsed_ns=5000, ops=ops, bytes=ops * 4096),
        io_latency=no_latency(),
        peak_inflight_ops=1,
        threads=(),
    )


def test_a_fastest_thread_under_a_microsecond_is_warned_of_unless_no0usecerr() -> None:
    warning = "Warning: the fastest thread completed in less than 1 microsecond"
    assert warning in phase_text(_quick_phase(999))
    assert warning not in phase_text(_quick_phase(999), TableOptions(no0usecerr=True))
    assert warning not in phase_text(_quick_phase(1000))
    assert warning not in phase_text(_quick_phase(0, ops=0))  # nothing done: no rates
    failed = dataclasses.replace(_quick_phase(999), error={"errno": 39})
    assert warning not in phase_text(failed)  # (the error says what happened)
    block = phase_text(_quick_phase(999))
    assert block.index(warning) < block.index("---")  # inside the phase's block


def test_no0usecerr_is_recorded_and_read_back_as_a_table_option(tmp_path: Path) -> None:
    cfg = make_cfg([str(tmp_path / "f")], no0usecerr=True)
    assert cfg.to_dict()["no0usecerr"] is True
    assert TableOptions.from_config(cfg.to_dict()).no0usecerr
    assert not TableOptions.from_config(make_cfg([str(tmp_path / "f")]).to_dict()).no0usecerr


def test_livecsvex_adds_a_row_per_thread(tmp_path: Path) -> None:
    args = ["-w", "-t", "3", "-b", "4k", "-s", "3m", "--infloop", "--timelimit", "1"]
    args += ["--liveint", "100", "--nolive"]
    rows: dict[str, list[dict[str, str]]] = {}
    for name, extra in (("plain", ()), ("ex", ("--livecsvex", "--json", "r.json"))):
        proc = aiobench(*args, "--livecsv", f"{name}.csv", *extra, "f", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        with (tmp_path / f"{name}.csv").open(newline="") as handle:
            rows[name] = list(csv.DictReader(handle))
    assert {row["Rank"] for row in rows["plain"]} == {"Total"}
    per_thread = [row for row in rows["ex"] if row["Rank"] != "Total"]
    assert {row["Rank"] for row in per_thread} == {"0", "1", "2"}
    assert len(per_thread) >= 6  # (a second with a row per thread every 100 ms)
    final = {
        str(t["rank"]): t["bytes"]
        for t in json.loads((tmp_path / "r.json").read_text())["phases"][0]["threads"]
    }
    for rank in ("0", "1", "2"):
        done = [int(row["DoneBytes"]) for row in per_thread if row["Rank"] == rank]
        assert done == sorted(done) and 0 < done[-1] <= final[rank], (rank, done, final)
    assert all(row["MiB/s"] == "" and row["Phase"] == "WRITE" for row in per_thread)


def test_livecsvex_without_livecsv_is_a_usage_error(tmp_path: Path) -> None:
    proc = aiobench("-w", "-s", "4k", "--nolive", "--livecsvex", "f", cwd=tmp_path)
    assert_usage_error(proc, ["--livecsvex", "--livecsv"])


IOS_ROW = re.compile(r"^ +IOs total +: +(\d+) +(\d+)$", re.M)


def test_log_level_1_adds_the_ios_total_row(tmp_path: Path) -> None:
    args = ("-w", "-t", "2", "-b", "64k", "-s", "4m", "--nolive", "--json")
    plain = aiobench(*args, "p.json", "f", cwd=tmp_path)
    verbose = aiobench(*args, "v.json", "--log", "1", "f", cwd=tmp_path)
    assert plain.returncode == 0 and verbose.returncode == 0, (plain.stderr, verbose.stderr)
    assert IOS_ROW.findall(plain.stdout) == []
    phase = json.loads((tmp_path / "v.json").read_text())["phases"][0]
    expected = [(str(phase["first_done"]["ops"]), str(phase["last_done"]["ops"]))]
    assert IOS_ROW.findall(verbose.stdout) == expected
    assert phase["last_done"]["ops"] == 64  # 4 MiB in blocks of 64 KiB
    shown = aiobench("show", "p.json", "--log", "2", cwd=tmp_path)
    assert len(IOS_ROW.findall(shown.stdout)) == 1
    bad = aiobench("-w", "-s", "4k", "--log", "3", "f", cwd=tmp_path)
    assert_usage_error(bad, ["--log", "between 0 and 2"])


DIRS_TOTAL = re.compile(r"^ +Dirs total +: +(\d+) +(\d+)$", re.M)
DIRS_RATE = re.compile(r"^ +Dirs/s +: +(\d+) +(\d+)$", re.M)


def test_dirstats_adds_dirs_rows_to_dir_modes_write_and_read(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    args = ("-d", "-w", "-r", "-t", "2", "-n", "3", "-N", "4", "-s", "8k", "--nolive")
    plain = aiobench(*args, "--json", "p.json", "d", cwd=tmp_path)
    stats = aiobench(*args, "--json", "s.json", "--dirstats", "d", cwd=tmp_path)
    assert plain.returncode == 0 and stats.returncode == 0, (plain.stderr, stats.stderr)
    phases = json.loads((tmp_path / "s.json").read_text())["phases"]
    done = {p["phase"]: p for p in phases}
    expected = [
        (str(done[n]["first_done"]["entries"] // 4), str(done[n]["last_done"]["entries"] // 4))
        for n in ("WRITE", "READ")
    ]
    # MKDIRS has its own Dirs rows (one each); --dirstats adds them to WRITE and READ.
    assert len(DIRS_TOTAL.findall(plain.stdout)) == len(DIRS_RATE.findall(plain.stdout)) == 1
    assert DIRS_TOTAL.findall(stats.stdout)[1:] == expected
    assert expected[1][1] == "6"  # 2 threads x 3 dirs, all done
    assert len(DIRS_RATE.findall(stats.stdout)) == 3
    shown = aiobench("show", "p.json", "--dirstats", cwd=tmp_path)
    assert len(DIRS_TOTAL.findall(shown.stdout)) == 3


def test_dirstats_has_nothing_to_add_in_file_mode(tmp_path: Path) -> None:
    proc = aiobench("-w", "-s", "64k", "--nolive", "--dirstats", "f", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert DIRS_TOTAL.findall(proc.stdout) == [] and "Total MiB" in proc.stdout


def test_dirstats_divides_by_the_runs_files_per_dir_but_not_in_a_custom_tree() -> None:
    base = {"dirstats": True, "lat": False}
    assert TableOptions.from_config({**base, "files": 7}).files_per_dir == 7
    assert TableOptions.from_config({**base, "files": None}).files_per_dir == 1  # -N not given
    tree = {**base, "files": None, "treefile": "tree.txt"}
    assert TableOptions.from_config(tree).files_per_dir == 0
