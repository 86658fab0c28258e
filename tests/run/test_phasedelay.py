"""--phasedelay TIME (elbencho's): a wait before each phase but the first, untimed; a signal
during it ends the run at once with what was measured."""

from __future__ import annotations

import datetime
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from tests.helpers import RunCli, errors_of

pytestmark = pytest.mark.slow  # real CLI runs (see tests/conftest.py)

DELAY_S = 2
# Start times are in whole milliseconds: each of the two may be 1 ms early.
ROUNDING_S = 0.002
# Guards only (a busy machine is slow); what is checked is how the run ended.
MAX_WAIT_S = 60.0


def start_s(phase: dict[str, Any]) -> float:
    return datetime.datetime.fromisoformat(phase["start_time"]).timestamp()


def gaps_s(phases: list[dict[str, Any]]) -> list[float]:
    """From each phase's end to the next one's start, in seconds."""
    return [
        start_s(after) - start_s(before) - before["last_done"]["elapsed_ns"] / 1e9
        for before, after in itertools.pairwise(phases)
    ]


def test_each_phase_but_the_first_waits(
    run_cli: RunCli, tmp_path: Path, validator: Draft202012Validator
) -> None:
    out = tmp_path / "run.json"
    proc = run_cli(
        *("-w", "-r", "-i", "2", "-t", "2", "-b", "4k", "-s", "64k", "--nolive"),
        *("--phasedelay", str(DELAY_S), "--json", str(out), str(tmp_path / "f")),
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert errors_of(validator, doc) == []
    assert doc["meta"]["config"]["phasedelay_s"] == DELAY_S
    phases = [p for p in doc["phases"] if p["phase"] in ("WRITE", "READ")]
    assert [p["phase"] for p in phases] == ["WRITE", "READ", "WRITE", "READ"]
    for gap in gaps_s(phases):  # also into the second iteration
        assert gap >= DELAY_S - ROUNDING_S, gaps_s(phases)
    # The wait is not measured: each phase's own time is far below it.
    assert all(p["last_done"]["elapsed_ns"] < DELAY_S * 1e9 for p in phases)


def test_a_signal_during_the_wait_ends_the_run_with_what_was_measured(tmp_path: Path) -> None:
    out, lines = tmp_path / "run.json", tmp_path / "phases.jsonl"
    cmd = [sys.executable, "-m", "aiobench", "-w", "-r", "-b", "4k", "-s", "64k", "--nolive"]
    cmd += ["--phasedelay", "600", "--jsonfile", str(lines), "--json", str(out)]
    cmd.append(str(tmp_path / "f"))
    env = dict(os.environ, PYTHONWARNINGS="error")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + MAX_WAIT_S
        while not (lines.exists() and lines.read_text(encoding="utf-8").strip()):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        # WRITE is reported: the run now waits the 600 s before READ.
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=MAX_WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 128 + signal.SIGINT, stderr
    assert "Traceback" not in stderr
    assert "Interrupted by SIGINT: results so far." in stderr
    assert "WRITE" in stdout and "READ" not in stdout
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert [p["phase"] for p in doc["phases"]] == ["WRITE"]
    assert doc["phases"][0]["status"] == "ok"
    assert doc["meta"]["signal"] == "SIGINT"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("-1", "Error: --phasedelay: must not be negative (got -1)"),
        ("soon", "Error: --phasedelay: invalid duration 'soon' (want seconds, or a number "),
    ],
)
def test_bad_delay_is_a_usage_error(
    run_cli: RunCli, tmp_path: Path, value: str, message: str
) -> None:
    proc = run_cli("-w", "-s", "4k", "--phasedelay", value, str(tmp_path / "f"))
    assert proc.returncode == 2
    assert proc.stderr.startswith(message) and proc.stderr.count("\n") == 1, proc.stderr
    assert list(tmp_path.iterdir()) == []
