"""``--livecsv stdout`` / ``--livejson -`` (elbencho's idiom): records on stdout, the table
on stderr, no file named ``stdout`` or ``-``; through the real CLI on real files."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from aiobench.render.csv import LIVE_HEADER
from aiobench.render.table import HEADER
from tests.helpers import RunCli

# A paced write (1 MiB at 4 MiB/s: about 250 ms) in 20 ms intervals: many interval records.
PACED = ("-w", "-b", "64k", "-s", "1m", "--limitwrite", "4m", "--liveint", "20")


@pytest.mark.parametrize("name", ["stdout", "-"])
def test_livecsv_stdout_parses_as_csv_and_the_table_goes_to_stderr(
    run_cli: RunCli, tmp_path: Path, name: str
) -> None:
    proc = run_cli(*PACED, "--livecsv", name, "f", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.reader(io.StringIO(proc.stdout, newline="")))
    assert rows[0] == LIVE_HEADER  # the header once, then only rows of its width
    assert len(rows) >= 5, proc.stdout
    assert all(len(row) == len(LIVE_HEADER) for row in rows)
    phase = LIVE_HEADER.index("Phase")
    assert {row[phase] for row in rows[1:]} == {"WRITE"}
    done = [int(row[LIVE_HEADER.index("DoneBytes")]) for row in rows[1:]]
    assert done == sorted(done) and done[-1] == 1 << 20
    assert proc.stderr.startswith(HEADER)
    assert "WRITE       Elapsed time" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]  # no file named stdout or -


@pytest.mark.parametrize("name", ["stdout", "-"])
def test_livejson_stdout_is_one_valid_record_per_line(
    run_cli: RunCli, tmp_path: Path, validator: Draft202012Validator, name: str
) -> None:
    proc = run_cli(*PACED, "--livejson", name, "f", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(records) >= 5
    for record in records:
        validator.validate(record)
        assert record["record"] == "interval"
    assert proc.stderr.startswith(HEADER)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


def test_a_file_named_stdout_is_spelled_with_a_directory(run_cli: RunCli, tmp_path: Path) -> None:
    proc = run_cli(*PACED, "--livecsv", "./stdout", "f", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(HEADER)  # the table stays on stdout
    lines = (tmp_path / "stdout").read_text().splitlines()
    assert lines[0] == ",".join(LIVE_HEADER) and len(lines) >= 5


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--json", "-", "--livecsv", "stdout"),
            "Error: --livecsv: --json and --livecsv cannot both write to stdout; "
            "give one of them a file name\n",
        ),
        (
            ("--livecsv", "-", "--livejson", "stdout"),
            "Error: --livejson: --livecsv and --livejson cannot both write to stdout; "
            "give one of them a file name\n",
        ),
    ],
)
def test_two_streams_on_stdout_are_a_usage_error(
    run_cli: RunCli, tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    proc = run_cli("-w", "-s", "1m", *args, "f", cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", message)
    assert list(tmp_path.iterdir()) == []  # nothing created
