"""--rwmixpct P: reads mixed into the write phase by elbencho's rule (#5)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from aiobench.engines.verify import pattern
from aiobench.plan.workload import OpRun, RwMix
from aiobench.render.csv import RESULT_HEADER
from aiobench.results.schema import load_schema
from tests.helpers import RunCli, without_chance_rows

SALT = 0x0BAD_CAFE_0000_0001
BLOCK = 4096


@pytest.mark.parametrize("pct", [0, 1, 30, 50, 99, 100])
@pytest.mark.parametrize("rank", [0, 1, 7, 123])
def test_read_counts_follow_the_rule_for_every_window(pct: int, rank: int) -> None:
    mix = RwMix(pct, rank)
    rule = [(rank + seq) % 100 < pct for seq in range(450)]
    for first in (0, 1, 29, 99, 100, 250):
        for count in (0, 1, 31, 100, 199):
            assert mix.reads(first, count) == sum(rule[first : first + count])
            assert mix.is_read(first, count).tolist() == rule[first : first + count]


def test_a_run_counts_its_reads_and_keeps_its_place_when_split() -> None:
    run = OpRun(0, [i * BLOCK for i in range(200)], BLOCK, first_seq=70, mix=RwMix(30, 0))
    # Operations 70..99 write, 100..129 read, 130..199 write, 200..229 read.
    assert run.reads(30) == (0, 0)
    assert run.reads(60) == (30, 30 * BLOCK)
    rest = run.after(45)
    assert rest.first_seq == 115 and rest.mix == run.mix
    assert rest.reads(15) == (15, 15 * BLOCK)
    assert OpRun(0, [0, BLOCK], BLOCK).reads(2) == (0, 0)  # no mix: no reads


def _pattern_blocks(path: Path, blocks: int) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """Per block: whether it still holds the --verify pattern (was not rewritten)."""
    data = path.read_bytes()
    return np.array(
        [
            data[b * BLOCK : (b + 1) * BLOCK] == pattern(b * BLOCK, BLOCK, SALT)
            for b in range(blocks)
        ]
    )


def _run_json(run_cli: RunCli, *args: str) -> dict[str, Any]:
    proc = run_cli(*args, "--nolive", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    Draft202012Validator(load_schema()).validate(doc)
    return doc


def test_mixed_phase_reads_exactly_the_blocks_the_rule_names(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """Reads leave a block as it was: after writing the --verify pattern, the blocks still
    holding it after RWMIX30 are exactly those the rule made reads, 30 % of them."""
    target = tmp_path / "f"
    threads, blocks = 2, 10_000
    size = blocks * BLOCK
    common = ("-b", "4k", "-s", str(size), "-t", str(threads), str(target))
    _run_json(run_cli, "-w", "--verify", str(SALT), *common)
    doc = _run_json(run_cli, "-w", "--rwmixpct", "30", "--iodepth", "2", *common)

    kept = _pattern_blocks(target, blocks)
    per_thread = blocks // threads
    expected = np.concatenate(
        [RwMix(30, rank).is_read(0, per_thread) for rank in range(threads)]
    )  # thread r writes blocks r*5000.. in order, its operation n on block r*5000 + n
    assert (kept == expected).all()
    share = kept.mean()
    assert 0.29 <= share <= 0.31, share

    phase = doc["phases"][0]
    assert phase["phase"] == "RWMIX30" and phase["rwmix_read_pct"] == 30
    last = phase["last_done"]
    assert last["read"]["ops"] == int(kept.sum())
    assert last["write"]["ops"] == blocks - int(kept.sum())
    assert last["read"]["bytes"] + last["write"]["bytes"] == last["bytes"] == size
    first = phase["first_done"]
    assert 0 < first["read"]["ops"] <= last["read"]["ops"]
    assert first["read"]["ops"] + first["write"]["ops"] == first["ops"]
    latency = phase["latency"]
    assert latency["read"]["count"] == last["read"]["ops"]
    assert latency["write"]["count"] == last["write"]["ops"]
    assert latency["io"]["count"] == blocks
    assert latency["io"]["max_ns"] == max(latency["read"]["max_ns"], latency["write"]["max_ns"])


def test_block_variance_composes_with_the_mix(tmp_path: Path, run_cli: RunCli) -> None:
    """--blockvarpct in a mixed phase: the reads leave their blocks alone, and each write
    carries fresh random data in its first half (no two written blocks are equal)."""
    target = tmp_path / "f"
    blocks = 1000
    common = ("-b", "4k", "-s", str(blocks * BLOCK), str(target))
    _run_json(run_cli, "-w", "--verify", str(SALT), *common)
    doc = _run_json(run_cli, "-w", "--rwmixpct", "30", "--blockvarpct", "50", *common)
    kept = _pattern_blocks(target, blocks)
    assert (kept == RwMix(30, 0).is_read(0, blocks)).all()
    data = target.read_bytes()
    written = {data[i * BLOCK : (i + 1) * BLOCK] for i in np.flatnonzero(~kept)}
    assert len(written) == blocks - int(kept.sum())
    assert doc["phases"][0]["last_done"]["read"]["ops"] == int(kept.sum())


def test_reads_at_first_done_follow_the_rule_over_each_threads_done_operations(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """At FIRST DONE one thread has done all its operations and the other its first n
    (one slot each, so in order): the reads counted then are exactly the rule's."""
    target = tmp_path / "f"
    target.write_bytes(b"\0" * 6400 * BLOCK)
    doc = _run_json(run_cli, "-w", "--rwmixpct", "50", "-b", "4k", "-t", "2", str(target))
    phase = doc["phases"][0]
    assert phase["phase"] == "RWMIX50"
    first, last = phase["first_done"], phase["last_done"]
    per_thread = 3200
    assert last["ops"] == 2 * per_thread
    done_first = min(phase["threads"], key=lambda t: t["elapsed_ns"])["rank"]
    other = 1 - done_first
    partial = first["ops"] - per_thread
    assert 0 <= partial <= per_thread
    expected = RwMix(50, done_first).reads(0, per_thread) + RwMix(50, other).reads(0, partial)
    assert first["read"]["ops"] == expected
    assert first["read"]["bytes"] == expected * BLOCK
    assert last["read"]["ops"] == RwMix(50, 0).reads(0, 3200) + RwMix(50, 1).reads(0, 3200)


def test_random_mixed_phase_on_several_files(tmp_path: Path, run_cli: RunCli) -> None:
    paths = [tmp_path / f"f{i}" for i in range(3)]
    for p in paths:
        p.write_bytes(b"\1" * 256 * BLOCK)
    doc = _run_json(
        run_cli, "-w", "--rand", "--rwmixpct", "70", "-b", "4k", "-t", "3", *map(str, paths)
    )
    last = doc["phases"][0]["last_done"]
    assert last["ops"] == 3 * 256
    assert last["read"]["ops"] == sum(RwMix(70, r).reads(0, 256) for r in range(3))
    assert all(p.stat().st_size == 256 * BLOCK for p in paths)


def test_table_csv_and_show_carry_write_read_and_total(tmp_path: Path, run_cli: RunCli) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"\2" * 2048 * BLOCK)
    saved, table = tmp_path / "run.json", tmp_path / "run.csv"
    proc = run_cli(
        "-w", "-r", "--rwmixpct", "30", "-b", "4k", "-t", "2", "--lat", "--latpercent", "--nolive",
        str(target),
        "--json", str(saved), "--csvfile", str(table),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    shown = without_chance_rows(proc.stdout).splitlines()
    rows = [line.split(":")[0].strip() for line in shown if ":" in line]
    block = rows[rows.index("RWMIX30     Elapsed time") :]
    assert block[1:14] == [
        "IOPS write", "IOPS read", "IOPS total",
        "MiB/s write", "MiB/s read", "MiB/s total",
        "MiB write", "MiB read",
        "IO wr latency", "IO wr lat % us", "IO rd latency", "IO rd lat % us",
        "READ        Elapsed time",
    ]  # fmt: skip
    show = run_cli("show", str(saved))
    assert show.returncode == 0, show.stderr
    assert show.stdout == proc.stdout

    header, mixed, read = list(csv.reader(table.read_text().splitlines()))
    assert header == RESULT_HEADER
    mixed_row = dict(zip(header, mixed, strict=True))
    read_row = dict(zip(header, read, strict=True))
    doc = json.loads(saved.read_text())
    phase = doc["phases"][0]
    assert mixed_row["operation"] == "RWMIX30"
    # As elbencho: the main columns are the writes, the rwmix read columns the reads.
    assert int(mixed_row["IOPS [last]"]) == phase["last_done"]["write"]["iops"]
    assert int(mixed_row["rwmix read IOPS [last]"]) == phase["last_done"]["read"]["iops"]
    assert int(mixed_row["rwmix read MiB [last]"]) == phase["last_done"]["read"]["bytes"] >> 20
    read_us = phase["latency"]["read"]["max_ns"] // 1000
    assert int(mixed_row["rwmix read IO lat us [max]"]) == read_us
    assert int(mixed_row["IO lat us [max]"]) == phase["latency"]["write"]["max_ns"] // 1000
    assert read_row["operation"] == "READ" and read_row["rwmix read IOPS [last]"] == ""
    assert doc["phases"][1]["rwmix_read_pct"] is None
    assert "read" not in doc["phases"][1]["last_done"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-w", "--rwmixpct", "101"], "--rwmixpct: must be between 0 and 100"),
        (["-w", "--rwmixpct", "-1"], "--rwmixpct: must be between 0 and 100"),
        (["-r", "--rwmixpct", "30"], "--rwmixpct: only applies with -w"),
        (["-w", "--rwmixpct", "30", "--verify", "5"], "cannot be combined with --verify"),
        (["-w", "--rwmixpct", "30", "--trunc"], "cannot be combined with --trunc"),
        (["-w", "--rwmixpct", "30", "--limitwrite", "1m"], "combined with --limitwrite"),
        (["-w", "--rwmixpct", "30", "-s", "2m"], "fewer than -s/--size 2097152"),
    ],
)
def test_bad_values_and_combinations_are_usage_errors(
    tmp_path: Path, run_cli: RunCli, args: list[str], message: str
) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"\3" * 64 * BLOCK)
    before = target.read_bytes()
    proc = run_cli(*args, "--nolive", str(target))
    assert proc.returncode == 2, proc.stdout
    assert proc.stderr.startswith("Error: ") and message in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert target.read_bytes() == before


def test_missing_file_is_named_and_not_created(tmp_path: Path, run_cli: RunCli) -> None:
    target = tmp_path / "nothing-here"
    proc = run_cli("-w", "--rwmixpct", "30", "-s", "1m", "--nolive", str(target))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"Error: {target}: does not exist; --rwmixpct reads")
    assert not target.exists()


def test_dir_mode_refuses_it(tmp_path: Path, run_cli: RunCli) -> None:
    proc = run_cli("-w", "--rwmixpct", "30", "-s", "4k", "--nolive", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.strip() == "Error: --rwmixpct: not supported in dir mode yet"
    assert list(tmp_path.iterdir()) == []
