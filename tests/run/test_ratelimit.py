"""--limitread/--limitwrite: per-thread pacing, and latency from each scheduled start (#5)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from aiobench.plan.workload import OpRun
from aiobench.results.schema import load_schema
from tests.helpers import Ext4Loop, RunCli

pytestmark = pytest.mark.timing  # rates within a few % of their limit

MIB = 1 << 20


def test_a_run_cut_short_keeps_its_place_in_the_schedule() -> None:
    run = OpRun(0, [0, 4096, 8192, 12288], 4096, None, first_seq=100)
    rest = run.after(3)
    assert rest.offsets == [12288] and rest.first_seq == 103


def per_thread_rates(doc: dict[str, Any]) -> list[float]:
    phase = doc["phases"][0]
    return [t["bytes"] / (t["elapsed_ns"] / 1e9) for t in phase["threads"]]


@pytest.mark.parametrize("mode", ["-r", "-w"])
def test_each_thread_moves_its_limit_within_3_percent(
    run_cli: RunCli, tmp_path: Path, mode: str
) -> None:
    target = tmp_path / "f"
    if mode == "-r":
        assert run_cli("-w", "-b", "1m", "-s", "64m", str(target)).returncode == 0
    out = tmp_path / "r.json"
    option = "--limitread" if mode == "-r" else "--limitwrite"
    proc = run_cli(
        mode, "-b", "64k", "-s", "64m", "-t", "2", option, "20m", "--timelimit", "2", "--lat",
        "--latpercent",
        str(target), "--json", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    Draft202012Validator(load_schema()).validate(doc)
    for rate in per_thread_rates(doc):
        assert abs(rate / (20 * MIB) - 1) <= 0.03, rate
    phase = doc["phases"][0]
    assert phase["latency"]["sched"]["count"] == phase["last_done"]["ops"]
    assert "Sched latency" in proc.stdout and "Sched lat % us" in proc.stdout


def test_without_a_limit_there_is_no_sched_latency(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = run_cli("-w", "-b", "64k", "-s", "1m", str(tmp_path / "f"), "--json", str(out))
    assert proc.returncode == 0
    assert "sched" not in json.loads(out.read_text())["phases"][0]["latency"]
    assert "Sched" not in proc.stdout


@pytest.mark.root
def test_a_stalled_target_shows_in_sched_latency_not_in_service_latency(
    ext4_loop: Ext4Loop, tmp_path: Path
) -> None:
    mnt = ext4_loop.setup(256 * MIB)
    out = tmp_path / "r.json"
    cmd = [sys.executable, "-m", "aiobench", "-w", "-b", "4k", "-s", "64m"]
    cmd += ["--limitwrite", "4m", "--timelimit", "3", "--lat", "--nolive", str(mnt / "f")]
    proc = subprocess.Popen([*cmd, "--json", str(out)], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(1.5)
        ext4_loop.freeze()
        time.sleep(0.5)
    finally:
        ext4_loop.thaw()
    stdout, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    phase = json.loads(out.read_text())["phases"][0]
    io, sched = phase["latency"]["io"], phase["latency"]["sched"]
    # One write sat in the frozen filesystem for the whole stall; the ~500 writes due
    # meanwhile started late, and only the time from their scheduled start shows it.
    assert io["max_ns"] >= 400_000_000
    assert sched["max_ns"] >= io["max_ns"]
    assert sched["percentiles_ns"]["90"] > 10 * io["percentiles_ns"]["90"]
    assert sched["mean_ns"] > 10 * io["mean_ns"]
    assert "Sched latency" in stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-w", "--limitwrite", "0"], "--limitwrite: must be greater than 0"),
        (["-w", "--limitwrite", "1.5m"], "--limitwrite: invalid size '1.5m'"),
    ],
)
def test_bad_limits_are_usage_errors(
    run_cli: RunCli, tmp_path: Path, args: list[str], message: str
) -> None:
    proc = run_cli("-s", "1m", *args, str(tmp_path / "f"))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"Error: {message}") and proc.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("data", [["--verify", "7"], ["--blockvarpct", "40"]])
def test_a_limit_composes_with_the_verify_pattern_and_block_variance(
    run_cli: RunCli, tmp_path: Path, data: list[str]
) -> None:
    # 512 KiB at 2 MiB/s: the phase takes ~250 ms, each of its 8 writes on schedule.
    target = tmp_path / "f"
    out = tmp_path / "w.json"
    proc = run_cli(
        "-w", "-b", "64k", "-s", "512k", "--limitwrite", "2m", *data, str(target),
        "--json", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    phase = json.loads(out.read_text())["phases"][0]
    assert phase["latency"]["sched"]["count"] == phase["last_done"]["ops"] == 8
    assert phase["last_done"]["elapsed_ns"] >= 7 * 64 * 1024 * 1_000_000_000 // (2 * MIB)
    if data[0] == "--verify":  # the pattern went to disk: a paced verified read finds it
        check = run_cli("-r", "-b", "64k", "--limitread", "4m", *data, str(target))
        assert check.returncode == 0, check.stderr
        assert target.read_bytes()[8:16] == (8 + 7).to_bytes(8, "little")
    else:  # 40 % of each block is new random data: no two blocks are equal
        blocks = target.read_bytes()
        assert len({blocks[i : i + 64 * 1024] for i in range(0, len(blocks), 64 * 1024)}) == 8


def test_limits_are_refused_in_dir_mode(run_cli: RunCli, tmp_path: Path) -> None:
    proc = run_cli("-d", "-w", "--limitwrite", "1m", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr == "Error: --limitwrite: not supported in dir mode yet\n"
