"""elbencho's commands give elbencho's table: the same rows in the same order, values aside.

Each case is a command of ``tests/data/elbencho-*.txt`` (real elbencho output, from
shared/reference/elbencho-output) with its paths moved into ``tmp_path`` and its sizes
scaled down, run through the real CLI on ext4/tmpfs files.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from tests.helpers import DATA, RunCli, without_chance_rows


def row_names(table: str) -> list[tuple[str, str]]:
    """(operation, row name) of every line of a table, '---' as ('---', '')."""
    lines = table.splitlines()
    start = lines.index("=========== ================    ==========   =========") + 1
    names = []
    for line in lines[start:]:
        if line == "---":
            names.append(("---", ""))
            continue
        assert line[29:31] == ": ", line
        names.append((line[:11].strip(), line[12:29].strip()))
    return names


def reference_rows(name: str) -> list[tuple[str, str]]:
    return row_names((DATA / name).read_text(encoding="utf-8"))


def aiobench_rows(stdout: str) -> list[tuple[str, str]]:
    return row_names(without_chance_rows(stdout))


def files(tmp_path: Path, count: int) -> list[str]:
    return [str(tmp_path / f"file{i}") for i in range(1, count + 1)]


def test_reference_rows_are_read_whole() -> None:
    # The parser sees every row of the reference (guards the comparisons below).
    rows = reference_rows("elbencho-latency-rows.txt")
    assert rows[:8] == [
        ("WRITE", "Elapsed time"),
        ("", "IOPS"),
        ("", "Throughput MiB/s"),
        ("", "Total MiB"),
        ("", "CPU util %"),
        ("", "IO latency"),
        ("", "IO lat % us"),
        ("", "IO lat hist"),
    ]
    assert len(rows) == 18


def test_seed_write_command_rows(run_cli: RunCli, tmp_path: Path) -> None:
    # elbencho -w -b 1m -t 2 -s 256m /data/file1 ... /data/file4 --resfile ... --csvfile
    # ... --jsonfile ...
    res = tmp_path / "r.txt"
    proc = run_cli(
        *("-w", "-b", "1m", "-t", "2", "-s", "8m"),
        *files(tmp_path, 4),
        *("--resfile", str(res), "--csvfile", str(tmp_path / "r.csv")),
        *("--jsonfile", str(tmp_path / "r.json")),
    )
    assert proc.returncode == 0, proc.stderr
    assert aiobench_rows(proc.stdout) == row_names((DATA / "elbencho-seq-write.txt").read_text())
    assert "share one Python interpreter" not in proc.stderr  # 1 MiB blocks: no such note
    assert aiobench_rows(res.read_text()) == aiobench_rows(proc.stdout)


def test_seed_read_command_rows(run_cli: RunCli, tmp_path: Path) -> None:
    paths = files(tmp_path, 4)
    assert run_cli("-w", "-b", "1m", "-t", "2", "-s", "8m", "--nolive", *paths).returncode == 0
    # elbencho -r -b 4k -t 2 --rand --timelimit 5 -s 256m /data/file1 ... /data/file4
    proc = run_cli("-r", "-b", "4k", "-t", "2", "--rand", "--timelimit", "5", "-s", "8m", *paths)
    assert proc.returncode == 0, proc.stderr
    assert aiobench_rows(proc.stdout) == reference_rows("elbencho-rand-read.txt")


def test_latency_rows_command(run_cli: RunCli, tmp_path: Path) -> None:
    # elbencho -w -r -b 64k -t 2 -s 32m --lat --latpercent --latpercent9s 2 --lathisto
    # --cpu --nolive /data/f1 /data/f2 --jsonfile ... --csvfile ...
    jsonl, csv_out = tmp_path / "lat.json", tmp_path / "lat.csv"
    proc = run_cli(
        *("-w", "-r", "-b", "64k", "-t", "2", "-s", "4m", "--lat", "--latpercent"),
        *("--latpercent9s", "2", "--lathisto", "--cpu", "--nolive"),
        *(str(tmp_path / "f1"), str(tmp_path / "f2")),
        *("--jsonfile", str(jsonl), "--csvfile", str(csv_out)),
    )
    assert proc.returncode == 0, proc.stderr
    assert aiobench_rows(proc.stdout) == reference_rows("elbencho-latency-rows.txt")
    # elbencho's points, the histogram's total, and the JSON still has everything.
    records = [json.loads(line) for line in jsonl.read_text().splitlines()]
    for record, block in zip(records, proc.stdout.split("---\n"), strict=False):
        assert re.search(
            r"IO lat % us      : \[ 1%<=\S+ 50%<=\S+ 75%<=\S+ 99%<=\S+ 99\.9%<=\S+ "
            r"99\.99%<=\S+ \]",
            block,
        ), block
        hist = re.search(r"IO lat hist      : \[ (.*) \]", block)
        assert hist is not None
        counts = [int(cell.split(": ")[1]) for cell in hist.group(1).split(", ")]
        io_lat = record["last_done"]["latency"]["IO"]  # elbencho's --jsonfile record
        json_counts = [int(b["count"]) for b in io_lat["histogram"]["buckets"]]
        assert sum(counts) == sum(json_counts) == 2 * 64  # 2 files of 64 blocks
        assert int(io_lat["min_us"]) <= int(io_lat["avg_us"]) <= int(io_lat["max_us"])
        assert 0 <= int(record["last_done"]["cpu%"]) <= 100
    rows = list(csv.reader(io.StringIO(csv_out.read_text())))
    assert [r[16] for r in rows[1:]] == ["WRITE", "READ"]


@pytest.mark.parametrize(
    ("reference", "options"),
    [
        ("elbencho-dirmode-latency.txt", "-d -w -r --stat -F -D -t 2 -n 2 -N 50 -s 8k -b 4k --lat"),
        ("elbencho-dirmode-large.txt", "-d -w -r --stat -F -D -t 2 -n 10 -N 20 -s 0"),
    ],
)
def test_dir_mode_command_rows(
    run_cli: RunCli, tmp_path: Path, reference: str, options: str
) -> None:
    md = tmp_path / "md"
    md.mkdir()
    extra = ["--latpercent"] if "--lat" in options else []
    proc = run_cli(*options.split(), *extra, "--nolive", str(md))
    assert proc.returncode == 0, proc.stderr
    assert aiobench_rows(proc.stdout) == reference_rows(reference)


def test_no_flags_no_latency_or_cpu_rows(run_cli: RunCli, tmp_path: Path) -> None:
    proc = run_cli("-w", "-r", "-b", "64k", "-s", "1m", "--nolive", str(tmp_path / "f"))
    assert proc.returncode == 0, proc.stderr
    for name in ("latency", "lat % us", "lat hist", "CPU util %", "targets"):
        assert name not in proc.stdout
