"""--cores and --zones in netbench (elbencho binds its netbench workers as its I/O
workers): each rank's threads, read from /proc/PID/task/*/status and numa_maps while real
ranks run under mpirun."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import MPIRUN, mpi_env, needs_mpi

ALLOWED = sorted(os.sched_getaffinity(0))


def _cpus(text: str) -> frozenset[int]:
    cpus: set[int] = set()
    for part in text.strip().split(","):
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return frozenset(cpus)


def _allowed(pid: int) -> dict[int, tuple[frozenset[int], str]]:
    """Each thread of ``pid``: the CPUs it may run on, and its memory policy as numa_maps
    shows it on a mapping of no policy of its own ({} once it has ended)."""
    out: dict[int, tuple[frozenset[int], str]] = {}
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return out
    for task in tasks:
        try:
            status = (task / "status").read_text()
            with (task / "numa_maps").open(encoding="ascii") as handle:
                policy = handle.readline().split()[1]
        except (OSError, IndexError):
            continue  # (ended meanwhile)
        line = next(ln for ln in status.splitlines() if ln.startswith("Cpus_allowed_list"))
        out[int(task.name)] = (_cpus(line.split(":")[1]), policy)
    return out


def _between_bindings(cpus: frozenset[int], policy: str) -> bool:
    """A thread seen after its CPU was set and before its memory policy was (the binding
    sets them in that order)."""
    return len(cpus) == 1 and policy == "default"


def _settle(seen: dict[int, dict[int, tuple[frozenset[int], str]]]) -> None:
    """Sample again the threads last seen between their two bindings, until each is seen
    bound (or has ended: its sample is dropped), for up to 10 s."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        moving = False
        for pid, threads in seen.items():
            live = _allowed(pid)
            for tid, sample in list(threads.items()):
                if _between_bindings(*sample):
                    if tid in live:
                        threads[tid] = live[tid]
                        moving = moving or _between_bindings(*live[tid])
                    else:
                        del threads[tid]
        if not moving:
            return
        time.sleep(0.02)


def _ranks(marker: str, launcher: int) -> list[int]:
    """The aiobench ranks whose command line holds ``marker`` (not the launcher's)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdecimal() or int(entry.name) == launcher:
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[0] == sys.executable.encode() and marker.encode() in argv:
            pids.append(int(entry.name))
    return pids


@needs_mpi
def test_each_ranks_threads_take_the_cores_round_robin(tmp_path: Path) -> None:
    if len(ALLOWED) < 2:
        pytest.skip("needs two CPUs this process may use")
    if not Path("/sys/devices/system/node/node0").exists():
        pytest.skip("this kernel shows no NUMA zones")
    first, second = ALLOWED[:2]
    out = str(tmp_path / "nb.json")  # (also what tells this run's ranks from others')
    assert MPIRUN is not None
    cmd = [MPIRUN, "-n", "2", "--oversubscribe", sys.executable, "-m", "aiobench"]
    cmd += ["--netbench", "--servers", "127.0.0.1", "--clients", "127.0.0.1", "-w", "-t", "2"]
    cmd += ["-b", "64k", "-s", "2g", "--cores", f"{first},{second}", "--zones", "0"]
    cmd += ["--json", out]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=mpi_env()
    )
    seen: dict[int, dict[int, tuple[frozenset[int], str]]] = {}  # rank -> thread -> (CPUs, policy)
    try:
        while proc.poll() is None:
            for pid in _ranks(out, proc.pid):
                seen.setdefault(pid, {}).update(_allowed(pid))
            singles = [  # (bound to a CPU, then to a zone's memory: wait for both)
                {cpus for cpus, mem in ts.values() if len(cpus) == 1 and mem != "default"}
                for ts in seen.values()
            ]
            if len(seen) == 2 and all(len(s) >= 2 for s in singles):
                break  # both ranks' threads seen on both cores
            time.sleep(0.02)
        _settle(seen)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert len(seen) == 2, seen  # the server rank and the client rank
    for pid, threads in seen.items():
        assert threads[pid] == (frozenset({first, second}), "default")  # the process: the list
        workers = {(min(cpus), mem) for cpus, mem in threads.values() if len(cpus) == 1}
        # the client's threads 0 and 1, the server's connections 0 and 1 (and its phase's
        # threads 0 and 1, which have no work): entry i of the list, their memory
        # preferring zone 0 (--zones with --cores, as elbencho)
        assert workers == {(first, "prefer:0"), (second, "prefer:0")}, (pid, threads)
        assert all(cpus <= {first, second} for cpus, _ in threads.values()), threads
