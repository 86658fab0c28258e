"""``--jsonfile`` writes elbencho's per-phase records: every key of elbencho 3.1-10's own
records (tests/data/elbencho-*.jsonl, real output) in its place, with elbencho's types
(strings, objects, lists), from real runs of the same commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from aiobench.results.schema import load_elbencho_schema
from tests.helpers import DATA, RunCli, errors_of

VALIDATOR = Draft202012Validator(load_elbencho_schema())


def shape(value: Any) -> Any:
    """The keys and types of a JSON value (a list: the shape of its first item)."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__


def reference(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / name).read_text().splitlines()]


def records_of(path: Path) -> list[dict[str, Any]]:
    """The file's records, each valid by the published schema of --jsonfile lines."""
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for record in records:
        assert errors_of(VALIDATOR, record) == []
    return records


@pytest.mark.parametrize(
    "name",
    ["elbencho-rand-read.jsonl", "elbencho-latency-rows.jsonl", "elbencho-dirmode-latency.jsonl"],
)
def test_the_schema_takes_elbenchos_records_and_no_numbers(name: str) -> None:
    for record in reference(name):
        assert errors_of(VALIDATOR, record) == []
        assert errors_of(VALIDATOR, {**record, "first_done": {"elapsed_time_ms": 5}}) != []
        assert errors_of(VALIDATOR, {**record, "extra": "x"}) != []


def test_the_references_are_elbenchos_strings() -> None:
    (record,) = reference("elbencho-rand-read.jsonl")
    assert record["config"]["version"] == "3.1-10"
    assert shape(record)["last_done"] == dict.fromkeys(
        ["elapsed_time_ms", "iops", "bytes/s", "bytes", "cpu%"], "str"
    )


def test_rand_read_records_have_every_key_of_elbenchos(run_cli: RunCli, tmp_path: Path) -> None:
    paths = [str(tmp_path / f"file{i}") for i in range(1, 5)]
    assert run_cli("-w", "-b", "64k", "-t", "2", "-s", "256k", "--nolive", *paths).returncode == 0
    out = tmp_path / "r.json"
    # elbencho -r -b 4k -t 2 --rand --timelimit 5 -s 256m FILE1..4 --jsonfile ...
    proc = run_cli(
        *("-r", "-b", "4k", "-t", "2", "--rand", "--timelimit", "5", "-s", "256k", "--nolive"),
        *(*paths, "--jsonfile", str(out)),
    )
    assert proc.returncode == 0, proc.stderr
    (mine,) = records_of(out)
    (theirs,) = reference("elbencho-rand-read.jsonl")
    assert shape(mine) == shape(theirs)
    assert list(mine) == list(theirs) and list(mine["config"]) == list(theirs["config"])
    config = mine["config"]
    assert (config["paths"], config["threads"], config["block_size"]) == ("4", "2", "4096")
    assert (config["random_offsets"], config["random_aligned"]) == ("true", "true")
    assert config["file_size"] == str(256 * 1024)
    assert mine["last_done"]["bytes"] == str(4 * 256 * 1024)  # --randamount: the files' size
    assert config["command"].startswith('"') and '"--rand" ' in config["command"]
    assert mine["phase_id"] != theirs["phase_id"] and len(mine["phase_id"]) == 36


def test_latency_records_have_every_key_of_elbenchos(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "lat.json"
    # elbencho -w -r -b 64k -t 2 -s 32m --lat --latpercent --latpercent9s 2 --lathisto --cpu
    proc = run_cli(
        *("-w", "-r", "-b", "64k", "-t", "2", "-s", "4m", "--lat", "--latpercent"),
        *("--latpercent9s", "2", "--lathisto", "--cpu", "--nolive"),
        *(str(tmp_path / "f1"), str(tmp_path / "f2"), "--jsonfile", str(out)),
    )
    assert proc.returncode == 0, proc.stderr
    mine, theirs = records_of(out), reference("elbencho-latency-rows.jsonl")
    assert [shape(r) for r in mine] == [shape(r) for r in theirs]
    for record in mine:
        buckets = record["last_done"]["latency"]["IO"]["histogram"]["buckets"]
        assert sum(int(b["count"]) for b in buckets) == 2 * 64  # every block, once
        assert all(b["range"].endswith("us") and "-" in b["range"] for b in buckets)


@pytest.mark.parametrize("label", [None, "dir run"])
def test_dir_mode_records_have_every_key_of_elbenchos(
    run_cli: RunCli, tmp_path: Path, label: str | None
) -> None:
    out = tmp_path / "dir.json"
    (tmp_path / "d").mkdir()
    # elbencho -d -w -r --stat -F -D -t 2 -n 2 -N 50 -s 8k -b 4k --lat DIR
    proc = run_cli(
        *("-d", "-w", "-r", "--stat", "-F", "-D", "-t", "2", "-n", "2", "-N", "50"),
        *("-s", "8k", "-b", "4k", "--lat", "--nolive", str(tmp_path / "d")),
        *("--jsonfile", str(out), *(("--label", label) if label else ())),
    )
    assert proc.returncode == 0, proc.stderr
    mine, theirs = records_of(out), reference("elbencho-dirmode-latency.jsonl")
    if label is not None:  # elbencho adds "label" after "phase_id"
        assert all(list(r)[:3] == ["phase_type", "phase_id", "label"] for r in mine)
        assert {r.pop("label") for r in mine} == {label}
    assert [shape(r) for r in mine] == [shape(r) for r in theirs]
    assert [r["phase_type"] for r in mine] == [r["phase_type"] for r in theirs]
    write = mine[1]["last_done"]
    assert (write["entries"], write["bytes"]) == ("200", str(200 * 8192))


def test_rwmix_records_put_the_reads_in_rwmix_read(run_cli: RunCli, tmp_path: Path) -> None:
    target, out = str(tmp_path / "f"), tmp_path / "mix.json"
    assert run_cli("-w", "-b", "4k", "-s", "256k", "--nolive", target).returncode == 0
    proc = run_cli(
        *("-w", "-b", "4k", "-s", "256k", "--rwmixpct", "30", "--lat", "--nolive", target),
        *("--jsonfile", str(out)),
    )
    assert proc.returncode == 0, proc.stderr
    (record,) = records_of(out)
    assert record["phase_type"] == "RWMIX30"
    last = record["last_done"]
    reads, writes = int(last["rwmix_read"]["bytes"]), int(last["bytes"])
    assert reads + writes == 256 * 1024 and reads > 0 and writes > 0
    assert "elapsed_time_ms" not in last["rwmix_read"]  # (elbencho has one time per phase)
    assert set(last["latency"]["IO"]["rwmix_read"]) == {"min_us", "avg_us", "max_us"}
