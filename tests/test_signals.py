"""SIGINT/SIGTERM during a long phase (SPEC §10): stop fast, report, JSON marked interrupted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

HEADER = (
    "OPERATION   RESULT TYPE         FIRST DONE   LAST DONE\n"
    "=========== ================    ==========   =========\n"
)
MIB = 1 << 20
# SPEC: stop within a second; this 2-core box is noisy, so allow 2 s.
MAX_STOP_S = 2.0
# The phase must be well under way (not still importing or setting up) when the signal lands.
MIN_RUNNING_S = 1.5
MAX_STARTUP_S = 15.0


def io_chars(pid: int, key: str) -> int:
    """``rchar``/``wchar`` of /proc/PID/io: bytes passed to read/write syscalls so far."""
    with open(f"/proc/{pid}/io", encoding="ascii") as handle:
        for line in handle:
            if line.startswith(f"{key}:"):
                return int(line.split()[1])
    raise AssertionError(f"no {key} in /proc/{pid}/io")


def wait_until_busy(proc: subprocess.Popen[str], writing: bool) -> None:
    """Wait MIN_RUNNING_S, then until the process moves >= 4 MiB of I/O in 100 ms."""
    time.sleep(MIN_RUNNING_S)
    key = "wchar" if writing else "rchar"
    deadline = time.monotonic() + MAX_STARTUP_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"aiobench exited early: {proc.communicate()}"
        before = io_chars(proc.pid, key)
        time.sleep(0.1)
        if io_chars(proc.pid, key) - before >= 4 * MIB:
            return
    pytest.fail("the benchmark phase did not start doing I/O")


CASES = [
    pytest.param(signal.SIGINT, "read", id="SIGINT-read"),
    pytest.param(signal.SIGTERM, "read", id="SIGTERM-read"),
    pytest.param(signal.SIGTERM, "write", id="SIGTERM-write-then-read"),
    pytest.param(signal.SIGINT, "seed-read", id="SIGINT-256-slots-direct"),
]


def sparse_file(path: Path, size: int) -> str:
    with open(path, "wb") as handle:
        handle.truncate(size)
    return str(path)


def command(workload: str, tmp_path: Path, out: Path) -> list[str]:
    """A run whose (first) phase lasts far longer than the test waits."""
    if workload == "read":
        # Sparse file: 4k reads of holes; --randamount makes the phase last minutes,
        # --timelimit 60 would end it anyway.
        target = sparse_file(tmp_path / "f1", 256 * MIB)
        opts = "-r -b 4k -t 2 --rand --randamount 64g -s 256m --timelimit 60"
        args = [*opts.split(), target]
    elif workload == "write":
        # -w then -r: the write phase (2 GiB of 4k random writes) is interrupted and the
        # read phase must not run.
        opts = "-w -r -b 4k -t 2 --rand -s 2g --timelimit 60"
        args = [*opts.split(), str(tmp_path / "f1")]
    else:
        # The read seed command: 256 slots of O_DIRECT reads in flight when the signal lands.
        files = [sparse_file(tmp_path / f"file{i}", 64 * MIB) for i in range(1, 5)]
        opts = "-r -b 4k -t 16 --iodepth 16 --direct --rand --randamount 64g --timelimit 60"
        args = [*opts.split(), *files]
    return [
        sys.executable,
        "-m",
        "aiobench",
        *args,
        "--nolive",
        "--nopertarget",
        "--json",
        str(out),
    ]


@pytest.mark.parametrize(("signum", "workload"), CASES)
def test_signal_stops_run_and_reports(
    tmp_path: Path, signum: signal.Signals, workload: str
) -> None:
    out = tmp_path / "out.json"
    phase = "WRITE" if workload == "write" else "READ"
    cmd = command(workload, tmp_path, out)
    env = dict(os.environ, PYTHONWARNINGS="error")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        wait_until_busy(proc, writing=phase == "WRITE")
        sent = time.monotonic()
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=30)
        stop_s = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    print(f"{signum.name} during {phase}: exited {proc.returncode} after {stop_s:.3f} s")
    assert proc.returncode == 128 + signum, stderr
    assert stop_s < MAX_STOP_S
    assert stdout.startswith(HEADER), stdout
    blocks = stdout[len(HEADER) :]
    assert blocks.startswith(f"{phase:<11} Elapsed time     : "), stdout
    assert blocks.endswith("---\n"), stdout
    assert blocks.count("---\n") == 1, stdout  # no further phase ran
    assert f"Interrupted by {signum.name}" in stderr

    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["interrupted"] is True
    assert doc["error"] is None
    assert doc["meta"]["signal"] == signum.name
    assert [p["phase"] for p in doc["phases"]] == [phase]
    result = doc["phases"][0]
    assert result["interrupted"] is True
    assert result["time_limited"] is False
    last = result["last_done"]
    assert last["ops"] > 0
    assert last["bytes"] == last["ops"] * 4096
    assert 0 < result["first_done"]["elapsed_ns"] <= last["elapsed_ns"]
    # Stopped long before the time limit or the end of the work.
    assert last["elapsed_ns"] < 30 * 1_000_000_000
    assert not list(tmp_path.glob(".aiobench-*")), "temporary JSON file left behind"
