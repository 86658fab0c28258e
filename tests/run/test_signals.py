"""SIGINT/SIGTERM (SPEC §10): during a long phase stop, report, JSON marked interrupted;
during setup stop cleanly with nothing measured and nothing created left behind; after the
last phase change nothing. (Random moments: test_signal_fuzz.py.)"""

from __future__ import annotations

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

from aiobench.engines.buffers import SlotBuffer
from aiobench.render.outputs import Outputs
from aiobench.results.runresult import RunResult
from aiobench.run import slots
from tests.helpers import call_main, errors_of

pytestmark = pytest.mark.slow  # real CLI runs (see tests/conftest.py)

HEADER = (
    "OPERATION   RESULT TYPE         FIRST DONE   LAST DONE\n"
    "=========== ================    ==========   =========\n"
)
MIB = 1 << 20
# SPEC: stop within a second. A guard only: a busy 2-core machine took over 2 s (a stop
# that never comes still fails); what is checked is how the run ended.
MAX_STOP_S = 10.0
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


def wait_until_busy(proc: subprocess.Popen[str], writing: bool, live_csv: Path | None) -> None:
    """Wait MIN_RUNNING_S, then until the process moves >= 4 MiB of I/O in 100 ms; or,
    with ``live_csv``, until the run's --livecsv holds a record of the phase (Linux AIO
    reads, as the native engine's with --direct --iodepth, do not count in rchar)."""
    time.sleep(MIN_RUNNING_S)
    key = "wchar" if writing else "rchar"
    deadline = time.monotonic() + MAX_STARTUP_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"aiobench exited early: {proc.communicate()}"
        before = io_chars(proc.pid, key)
        time.sleep(0.1)
        if live_csv is not None:
            if live_csv.exists() and len(live_csv.read_text().splitlines()) >= 2:
                return
        elif io_chars(proc.pid, key) - before >= 4 * MIB:
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
        opts = "-r -b 4k -t 2 --rand --randamount 4t -s 256m --timelimit 60"
        args = [*opts.split(), target]
    elif workload == "write":
        # -w then -r: the write phase (4k random writes, for minutes) is interrupted and the
        # read phase must not run. The file is small so that little is dirty when the run
        # removes it: unlinking 2 GiB of pages under writeback took seconds on a busy disk.
        opts = "-w -r -b 4k -t 2 --rand --randamount 4t -s 64m --timelimit 60"
        args = [*opts.split(), str(tmp_path / "f1")]
    else:
        # The read seed command: 256 slots of O_DIRECT reads in flight when the signal lands.
        files = [sparse_file(tmp_path / f"file{i}", 64 * MIB) for i in range(1, 5)]
        opts = "-r -b 4k -t 16 --iodepth 16 --direct --rand --randamount 4t --timelimit 60"
        live = ["--livecsv", str(tmp_path / "live.csv"), "--liveint", "100"]
        args = [*opts.split(), *live, *files]
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
        live_csv = tmp_path / "live.csv" if workload == "seed-read" else None
        wait_until_busy(proc, writing=phase == "WRITE", live_csv=live_csv)
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
    # The write run created f1 and did not fill it: removed. The other files are the test's.
    left = sorted(p.name for p in tmp_path.iterdir() if p.name != out.name)
    seed_files = [f"file{i}" for i in range(1, 5)] + ["live.csv"]
    expected = {"write": [], "read": ["f1"]}.get(workload, seed_files)
    assert left == expected


SIGNALS = [pytest.param(signal.SIGINT, id="SIGINT"), pytest.param(signal.SIGTERM, id="SIGTERM")]


def signal_at_buffer(
    monkeypatch: pytest.MonkeyPatch, signum: signal.Signals, *, for_write: bool, nth: int
) -> None:
    """A real ``signum`` to this process just after the ``nth`` slot buffer of a write
    (or read) phase was allocated and filled, in the middle of the phase's setup."""
    seen = [0]

    def buffer(*args: Any, **kwargs: Any) -> SlotBuffer:
        made = SlotBuffer(*args, **kwargs)
        if kwargs["for_write"] == for_write:
            seen[0] += 1
            if seen[0] == nth:
                signal.raise_signal(signum)
        return made

    monkeypatch.setattr(slots, "SlotBuffer", buffer)


def file_args(target: Path, out: Path) -> list[str]:
    """-w then -r over a file the run creates: 4 write and then 4 read buffers of 1 MiB."""
    opts = "-w -r -b 1m -s 8m -t 2 --iodepth 2 --nolive --nopertarget"
    return [*opts.split(), str(target), "--json", str(out)]


@pytest.mark.parametrize("signum", SIGNALS)
def test_signal_while_the_first_buffers_fill_ends_before_the_benchmark(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    signum: signal.Signals,
) -> None:
    """Nothing measured: the one line, no table, no JSON, and the file it created is gone
    (before #12: a KeyboardInterrupt from inside the buffer code, the file left)."""
    handlers = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)]
    signal_at_buffer(monkeypatch, signum, for_write=True, nth=3)
    target, out = tmp_path / "f", tmp_path / "out.json"
    code, stdout, stderr = call_main(capsys, *file_args(target, out))
    assert (code, stdout) == (128 + signum, "")
    assert stderr == f"Interrupted by {signum.name} before the benchmark started\n"
    assert list(tmp_path.iterdir()) == []
    # The test's own handlers are back.
    assert [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)] == handlers


def test_signal_while_the_second_phase_is_set_up_reports_the_first(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    validator: Draft202012Validator,
) -> None:
    """The read phase never starts; the write phase completed: its results, and the file
    it filled stays."""
    signal_at_buffer(monkeypatch, signal.SIGINT, for_write=False, nth=2)
    target, out = tmp_path / "f", tmp_path / "out.json"
    code, stdout, stderr = call_main(capsys, *file_args(target, out))
    assert code == 130, stderr
    assert stderr == "Interrupted by SIGINT: results so far.\n"
    assert stdout.startswith(HEADER + "WRITE ") and stdout.count("---\n") == 1, stdout
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert errors_of(validator, doc) == []
    assert (doc["interrupted"], doc["meta"]["signal"]) == (True, "SIGINT")
    assert [(p["phase"], p["interrupted"]) for p in doc["phases"]] == [("WRITE", False)]
    assert target.stat().st_size == 8 * MIB


def test_signal_after_the_last_phase_changes_nothing(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    validator: Draft202012Validator,
) -> None:
    """Every phase ran to its end: a signal while the outputs are written is ignored, and
    they are written whole (before #12: a KeyboardInterrupt there, no JSON, exit 130)."""
    done = Outputs.run_done

    def run_done(self: Outputs, result: RunResult) -> None:
        signal.raise_signal(signal.SIGINT)
        done(self, result)

    monkeypatch.setattr(Outputs, "run_done", run_done)
    target, out = tmp_path / "f", tmp_path / "out.json"
    code, stdout, stderr = call_main(capsys, *file_args(target, out))
    assert (code, stderr) == (0, "")
    assert stdout.count("---\n") == 2
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert errors_of(validator, doc) == []
    assert doc["interrupted"] is False
    assert [p["phase"] for p in doc["phases"]] == ["WRITE", "READ"]


# Python's own start-up (site, the .pth files: 40 ms on the reference VM) runs before any
# of aiobench's code, and no program can handle a signal there. So the launcher starts with
# SIGINT and SIGTERM blocked and unblocks them at the first import made by aiobench.entry's
# own code: a signal sent before that moment is delivered at it, the earliest one at which
# aiobench can act; one sent later lands wherever the process is then.
_LAUNCHER = """
import runpy, signal, sys

unblocked = []

def unblock_in_aiobench(event, args):
    if event != "import" or unblocked:
        return
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__name__", "").startswith("aiobench."):
            unblocked.append(True)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
            return
        frame = frame.f_back

sys.addaudithook(unblock_in_aiobench)
runpy.run_module("aiobench", run_name="__main__", alter_sys=True)
"""
EARLY_DELAYS_S = [i * 0.004 for i in range(16)]  # 0-60 ms after the start


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_signal_while_aiobench_starts_ends_it_without_a_traceback(
    tmp_path: Path, signum: signal.Signals
) -> None:
    """Before, a signal there (the entry module importing what it needs to install its
    handlers) gave a KeyboardInterrupt traceback or a silent death by SIGTERM."""
    target = tmp_path / "f"
    env = dict(os.environ, PYTHONWARNINGS="error")
    cmd = [sys.executable, "-c", _LAUNCHER, "-w", "-s", "1m", str(target), "--nolive"]
    failures = []
    for delay_s in EARLY_DELAYS_S:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
        time.sleep(delay_s)
        proc.send_signal(signum)
        _out, err = proc.communicate(timeout=60)
        said = err.decode(errors="replace")
        if proc.returncode != 128 + signum or "Traceback" in said or said.count("\n") != 1:
            failures.append(f"{delay_s * 1000:.0f} ms: exit {proc.returncode}, {said!r}")
        elif not said.startswith(f"Interrupted by {signum.name}"):
            failures.append(f"{delay_s * 1000:.0f} ms: {said!r}")
        target.unlink(missing_ok=True)  # (a run the signal reached late may have made it)
    assert failures == []
