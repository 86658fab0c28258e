"""The ``--json`` document of real runs against the published JSON Schema (draft 2020-12)."""

from __future__ import annotations

import copy
import datetime
import errno
import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hdrh.histogram import HdrHistogram
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from aiobench.errors import BenchIOError
from aiobench.results.model import SCHEMA_VERSION
from aiobench.results.schema import load_schema
from aiobench.stats.recorders import PERCENTILES
from tests.helpers import DATA, RunCli, delete_at, errors_of, set_at

EXAMPLE = DATA / "example-result.json"
FIO_POINTS = [
    "1", "5", "10", "20", "30", "40", "50", "60", "70", "80",
    "90", "95", "99", "99.5", "99.9", "99.95", "99.99",
]  # fmt: skip
TOTALS_KEYS = {
    "elapsed_ns", "ops", "bytes", "entries", "iops", "bytes_per_s", "entries_per_s", "cpu_percent",
}  # fmt: skip
MIB = 1 << 20
Doc = dict[str, Any]


def run_json(run_cli: RunCli, tmp_path: Path, *args: str) -> Doc:
    """Run the CLI with ``--json FILE`` in ``tmp_path``; return the parsed document."""
    out = tmp_path / "result.json"
    proc = run_cli(*args, "--json", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "OPERATION" in proc.stdout  # with --json FILE the table stays on stdout
    doc: Doc = json.loads(out.read_text(encoding="utf-8"))
    return doc


def assert_numbers_are_numbers(doc: Doc) -> None:
    """Counters are JSON integers (not strings, floats or booleans); means are numbers."""
    for phase in doc["phases"]:
        for which in ("first_done", "last_done"):
            totals = phase[which]
            assert set(totals) == TOTALS_KEYS
            for key, value in totals.items():
                assert type(value) is int, (which, key, value)
        for lat in phase["latency"].values():
            for key in ("count", "min_ns", "max_ns"):
                assert type(lat[key]) is int, (key, lat[key])
            for key in ("mean_ns", "stddev_ns"):
                assert type(lat[key]) in (int, float), (key, lat[key])
            assert list(lat["percentiles_ns"]) == FIO_POINTS
            assert all(type(v) is int for v in lat["percentiles_ns"].values())
        for thread in phase["threads"]:
            assert all(type(v) is int for v in thread.values()), thread


def assert_consistent(doc: Doc) -> None:
    """Totals, per-thread counters, latency counts and the HDR encoding agree."""
    for phase in doc["phases"]:
        last, first = phase["last_done"], phase["first_done"]
        assert sum(t["ops"] for t in phase["threads"]) == last["ops"]
        assert sum(t["bytes"] for t in phase["threads"]) == last["bytes"]
        assert max(t["elapsed_ns"] for t in phase["threads"]) == last["elapsed_ns"]
        assert first["ops"] <= last["ops"] and first["elapsed_ns"] <= last["elapsed_ns"]
        assert last["iops"] == int(last["ops"] * 1e6 / (last["elapsed_ns"] // 1000))
        io = phase["latency"]["io"]
        assert io["count"] == last["ops"]
        assert io["min_ns"] <= io["percentiles_ns"]["50"] <= io["percentiles_ns"]["99.99"]
        assert io["min_ns"] <= io["mean_ns"] <= io["max_ns"]
        hist = HdrHistogram.decode(io["hdr_histogram"])
        assert hist.get_total_count() == io["count"]


def test_schema_is_draft_2020_12_and_strict() -> None:
    schema = load_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    defs = schema["$defs"]
    strict = ["document", "phase", "totals", "latency", "percentiles", "thread", "io_error"]
    strict += ["interval", "target", "per_target", "phase_record", "interval_record"]
    strict += ["check_document", "check_meta", "check_test", "check_finding"]
    for name in strict:
        assert defs[name]["additionalProperties"] is False, name
    assert defs["percentiles"]["required"] == [f"{p:g}" for p in PERCENTILES] == FIO_POINTS
    assert defs["document"]["properties"]["schema_version"]["enum"] == [2, SCHEMA_VERSION]
    assert [branch["$ref"] for branch in schema["oneOf"]] == [
        "#/$defs/document",
        "#/$defs/phase_record",
        "#/$defs/interval_record",
        "#/$defs/check_document",
    ]


def test_write_read_document_validates(
    run_cli: RunCli, tmp_path: Path, validator: Draft202012Validator
) -> None:
    doc = run_json(run_cli, tmp_path, "-w", "-r", "-b", "64k", "-t", "2", "-s", "1m", "f1", "f2")
    assert errors_of(validator, doc) == []
    assert next(iter(doc)) == "schema_version"
    assert doc["schema_version"] == 3
    assert doc["interrupted"] is False and doc["error"] is None
    assert [p["phase"] for p in doc["phases"]] == ["WRITE", "READ"]
    for phase in doc["phases"]:
        assert phase["last_done"]["bytes"] == 2 * MIB
        assert phase["last_done"]["ops"] == 32
        assert [t["rank"] for t in phase["threads"]] == [0, 1]
        assert [t["bytes"] for t in phase["threads"]] == [MIB, MIB]
        # Two threads, one operation in flight each at most; the event loop did some work.
        assert 0 < phase["mean_inflight_ops"] <= 2
        assert phase["loop_cpu_ns"] > 0
        assert 0 <= phase["client_cpu_pct"] <= 100
    meta = doc["meta"]
    assert meta["paths"] == ["f1", "f2"] and meta["sizes_bytes"] == [MIB, MIB]
    assert meta["block_size_bytes"] == 64 * 1024 and meta["path_type"] == "file"
    datetime.datetime.fromisoformat(meta["start_time"])
    assert_numbers_are_numbers(doc)
    assert_consistent(doc)


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("-w", "-r", "--rand", "--iodepth", "4", "-b", "4k", "-s", "256k"), id="rand"),
        pytest.param(("-w", "-r", "--direct", "-b", "64k", "-t", "2", "-s", "1m"), id="direct"),
        pytest.param(("-w", "-b", "3000", "-s", "10000", "--label", "odd"), id="short-last"),
    ],
)
def test_other_runs_validate(
    run_cli: RunCli, tmp_path: Path, validator: Draft202012Validator, args: tuple[str, ...]
) -> None:
    doc = run_json(run_cli, tmp_path, *args, "f")
    assert errors_of(validator, doc) == []
    assert doc["phases"], doc
    assert_numbers_are_numbers(doc)
    assert_consistent(doc)


def test_read_of_existing_file_validates(
    run_cli: RunCli, tmp_path: Path, validator: Draft202012Validator
) -> None:
    (tmp_path / "f").write_bytes(os.urandom(MIB))
    doc = run_json(run_cli, tmp_path, "-r", "-b", "128k", "f")
    assert errors_of(validator, doc) == []
    assert [p["phase"] for p in doc["phases"]] == ["READ"]
    assert doc["meta"]["sizes_bytes"] == [MIB]
    assert doc["phases"][0]["last_done"]["ops"] == 8
    assert_consistent(doc)


def test_time_limited_document_validates(
    run_cli: RunCli, tmp_path: Path, validator: Draft202012Validator
) -> None:
    (tmp_path / "f").write_bytes(os.urandom(MIB))
    doc = run_json(
        run_cli, tmp_path, "-r", "--rand", "--randamount", "1t", "-b", "4k", "--timelimit", "1", "f"
    )
    assert errors_of(validator, doc) == []
    (phase,) = doc["phases"]
    assert phase["time_limited"] is True
    # The last run is sized to end at the limit; its last operation may end a little before.
    assert 0.95e9 <= phase["last_done"]["elapsed_ns"] < 3e9
    assert_consistent(doc)


def test_json_dash_puts_only_json_on_stdout(
    run_cli: RunCli, tmp_path: Path, validator: Draft202012Validator
) -> None:
    proc = run_cli("-w", "-r", "-b", "64k", "-t", "2", "-s", "1m", "f1", "f2", "--json", "-",
                   cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)  # exactly one document, nothing before or after it
    assert proc.stdout.startswith("{") and proc.stdout.endswith("}\n")
    assert "OPERATION" not in proc.stdout
    assert "OPERATION" in proc.stderr and "WRITE" in proc.stderr and "READ" in proc.stderr
    assert errors_of(validator, doc) == []
    assert doc["meta"]["config"]["json_path"] == "-"
    assert_numbers_are_numbers(doc)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f1", "f2"]  # no stray files


def test_interrupted_document_validates(tmp_path: Path, validator: Draft202012Validator) -> None:
    target = tmp_path / "f"
    target.write_bytes(os.urandom(MIB))
    args = ["-r", "--rand", "--randamount", "1t", "-b", "4k", "--timelimit", "30", str(target)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "aiobench", *args, "--json", "-"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_until(lambda: has_open(proc.pid, str(target)), timeout=20)
        time.sleep(0.3)  # targets are open; give the event loop time to install its handler
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 128 + signal.SIGINT, err
    doc = json.loads(out)
    assert errors_of(validator, doc) == []
    assert doc["interrupted"] is True
    assert doc["meta"]["signal"] == "SIGINT"
    assert doc["phases"][-1]["interrupted"] is True
    assert doc["phases"][-1]["last_done"]["elapsed_ns"] < 20e9


def has_open(pid: int, path: str) -> bool:
    fd_dir = f"/proc/{pid}/fd"
    try:
        fds = os.listdir(fd_dir)
    except OSError:
        return False
    return any(_readlink(f"{fd_dir}/{fd}") == path for fd in fds)


def _readlink(link: str) -> str:
    try:
        return os.readlink(link)
    except OSError:  # the descriptor was closed meanwhile
        return ""


def wait_until(condition: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.01)


def test_example_document_still_validates(validator: Draft202012Validator) -> None:
    doc = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    assert errors_of(validator, doc) == []
    assert [p["phase"] for p in doc["phases"]] == ["WRITE", "READ"]
    assert doc["meta"]["seed"] == 42
    assert_numbers_are_numbers(doc)
    assert_consistent(doc)


def test_error_document_validates(validator: Draft202012Validator) -> None:
    doc = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    doc["error"] = BenchIOError(path="f1", offset=65536, errno=errno.EIO).to_dict()
    assert errors_of(validator, doc) == []
    del doc["error"]["errno_name"]
    assert errors_of(validator, doc) != []


IO: list[str | int] = ["phases", 0, "latency", "io"]
MUTATIONS: dict[str, Callable[[Doc], None]] = {
    "ops-as-string": set_at(["phases", 0, "last_done", "ops"], "32"),
    "elapsed-as-float": set_at(["phases", 0, "first_done", "elapsed_ns"], 1.5),
    "bytes-as-bool": set_at(["phases", 0, "last_done", "bytes"], True),
    "negative-iops": set_at(["phases", 0, "last_done", "iops"], -1),
    "extra-totals-key": set_at(["phases", 0, "last_done", "mib_per_s"], 1),
    "missing-totals-key": delete_at(["phases", 0, "first_done", "entries_per_s"]),
    "extra-phase-key": set_at(["phases", 0, "comment"], "x"),
    "unknown-phase": set_at(["phases", 0, "phase"], "APPEND"),
    "time-limited-as-int": set_at(["phases", 0, "time_limited"], 0),
    "negative-mean-inflight": set_at(["phases", 0, "mean_inflight_ops"], -0.5),
    "mean-inflight-as-string": set_at(["phases", 0, "mean_inflight_ops"], "3.5"),
    "loop-cpu-as-float": set_at(["phases", 0, "loop_cpu_ns"], 1.5),
    "client-cpu-over-100": set_at(["phases", 0, "client_cpu_pct"], 101),
    "min-as-float": set_at([*IO, "min_ns"], 18174.5),
    "mean-as-string": set_at([*IO, "mean_ns"], "275974.4"),
    "extra-latency-key": set_at([*IO, "p50_ns"], 1),
    "missing-hdr": delete_at([*IO, "hdr_histogram"]),
    "missing-99.99": delete_at([*IO, "percentiles_ns", "99.99"]),
    "extra-percentile": set_at([*IO, "percentiles_ns", "75"], 1),
    "percentile-as-string": set_at([*IO, "percentiles_ns", "50"], "132607"),
    "extra-thread-key": set_at(["phases", 0, "threads", 0, "cpu"], 1),
    "schema-version-1": set_at(["schema_version"], 1),
    "schema-version-string": set_at(["schema_version"], "2"),
    "record-key-on-document": set_at(["record"], "phase"),
    "missing-intervals": delete_at(["phases", 0, "intervals"]),
    "interval-ops-as-float": set_at(["phases", 0, "intervals", 0, "ops"], 1.5),
    "interval-percent-above-100": set_at(["phases", 0, "intervals", 0, "done_percent"], 101),
    "interval-without-latency": delete_at(["phases", 0, "intervals", 0, "latency"]),
    "missing-per-target": delete_at(["phases", 0, "per_target"]),
    "target-without-path": delete_at(["phases", 0, "per_target", "targets", 0, "path"]),
    "unknown-target-metric": set_at(["phases", 0, "per_target", "metric"], "mib_per_s"),
    "min-target-without-path": delete_at(["phases", 0, "per_target", "min", "path"]),
    "cpu-percent-above-100": set_at(["phases", 0, "last_done", "cpu_percent"], 101),
    "missing-phase-start": delete_at(["phases", 0, "start_time"]),
    "interrupted-as-string": set_at(["interrupted"], "false"),
    "missing-interrupted": delete_at(["interrupted"]),
    "error-as-string": set_at(["error"], "EIO"),
    "error-without-offset": set_at(
        ["error"], {"path": "f", "errno": 5, "errno_name": "EIO", "message": "f: EIO"}
    ),
    "seed-as-string": set_at(["meta", "seed"], "42"),
    "bad-start-time": set_at(["meta", "start_time"], "yesterday"),
    "missing-meta": delete_at(["meta"]),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_wrong_document_fails(validator: Draft202012Validator, name: str) -> None:
    doc = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    assert errors_of(validator, doc) == []
    broken = copy.deepcopy(doc)
    MUTATIONS[name](broken)
    assert json.dumps(broken) != json.dumps(doc)  # (False == 0 in Python)
    assert errors_of(validator, broken) != [], name


def test_json_file_gets_the_usual_mode(tmp_path: Path, run_cli: RunCli) -> None:
    out = tmp_path / "r.json"
    old = os.umask(0o022)
    try:
        proc = run_cli("-w", "-b", "64k", "-s", "256k", str(tmp_path / "f"), "--json", str(out))
    finally:
        os.umask(old)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f", "r.json"]
