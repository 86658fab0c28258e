"""--cores and --zones (elbencho's): the CPUs each thread of a running aiobench may use and
runs on, read from /proc/PID/task/*/status and stat while it runs."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aiobench.config import build_config, cpu_sets
from aiobench.run.affinity import BOOKS_THREAD
from tests.helpers import assert_usage_error, run_aiobench

ENGINES = ("native", "python")
ALLOWED = sorted(os.sched_getaffinity(0))
NODE0 = Path("/sys/devices/system/node/node0/cpulist")


def cpu_list(text: str) -> frozenset[int]:
    cpus: set[int] = set()
    for part in text.strip().split(","):
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return frozenset(cpus)


def tasks(pid: int) -> dict[int, tuple[frozenset[int], int, int]]:
    """Each thread's (allowed CPUs, CPU it last ran on, CPU ticks so far), but a phase's
    bookkeeping thread's, which is neither an I/O thread nor the process's main one."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            status = (task / "status").read_text()
            stat = (task / "stat").read_text()
        except OSError:
            continue  # (ended meanwhile)
        if stat.partition("(")[2].startswith(BOOKS_THREAD.decode() + ")"):
            continue
        allowed = next(line for line in status.splitlines() if line.startswith("Cpus_allowed_list"))
        fields = stat[stat.rindex(")") + 2 :].split()  # (after the name, which may hold spaces)
        # stat's fields from the 3rd: utime and stime are the 14th and 15th, processor the 39th.
        ticks, cpu = int(fields[11]) + int(fields[12]), int(fields[36])
        out[int(task.name)] = (cpu_list(allowed.split(":")[1]), cpu, ticks)
    return out


def policy(pid: int, tid: int) -> str:
    """Thread ``tid``'s memory policy, as numa_maps shows it on a mapping of no policy of
    its own ("default", "prefer:0"): the first such line's (the program's text)."""
    with open(f"/proc/{pid}/task/{tid}/numa_maps", encoding="ascii") as handle:
        return handle.readline().split()[1]


def sampled(
    tmp_path: Path, threads: int, *args: str, memory: dict[int, str] | None = None
) -> tuple[int, dict[int, tuple[frozenset[int], int, int]]]:
    """(pid, its threads) of a ``threads``-thread 4 KiB random-read run, looked at once its
    I/O threads have all been on a CPU (a busy machine starts Python slowly); the run must
    end well. ``memory``, if given, gets each thread's memory policy then."""
    target = tmp_path / "data"
    target.write_bytes(os.urandom(1 << 22))
    run = ["-r", "--rand", "-b", "4k", "--infloop", "--timelimit", "2", "--nolive", *args]
    proc = subprocess.Popen(
        [sys.executable, "-m", "aiobench", "-t", str(threads), *run, str(target)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen: dict[int, tuple[frozenset[int], int, int]] = {}
    try:
        while proc.poll() is None:
            seen = tasks(proc.pid)
            working = [tid for tid, (_, _, ticks) in seen.items() if tid != proc.pid and ticks]
            if len(working) >= threads:
                if memory is not None:
                    memory.update((tid, policy(proc.pid, tid)) for tid in seen)
                break
            time.sleep(0.05)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    return proc.pid, seen


@pytest.mark.parametrize("engine", ENGINES)
def test_cores_0_puts_every_thread_on_cpu_0(tmp_path: Path, engine: str) -> None:
    pid, seen = sampled(tmp_path, 3, "--cores", "0", "--ioengine", engine)
    busy = [tid for tid, (_, _, ticks) in seen.items() if tid != pid and ticks]
    assert len(busy) >= 3, seen  # the three I/O threads worked ...
    assert {allowed for allowed, _, _ in seen.values()} == {frozenset({0})}
    assert {cpu for _, cpu, _ in seen.values()} == {0}  # ... on CPU 0, as every other


@pytest.mark.parametrize("engine", ENGINES)
def test_threads_take_the_cores_round_robin(tmp_path: Path, engine: str) -> None:
    if len(ALLOWED) < 2:
        pytest.skip("needs two CPUs this process may use")
    first, second = ALLOWED[:2]
    pid, seen = sampled(tmp_path, 3, "--cores", f"{first},{second}", "--ioengine", engine)
    assert seen[pid][0] == {first, second}  # the process: all of the list
    io = sorted(
        (
            sorted(allowed)
            for tid, (allowed, _, _) in seen.items()
            if tid != pid and len(allowed) == 1
        )
    )
    assert io == [[first], [first], [second]]  # threads 0, 1, 2 on cores 0, 1, 0 of the list
    for tid, (allowed, cpu, _) in seen.items():
        assert allowed <= {first, second} and cpu in allowed, (tid, allowed, cpu)


def test_a_phase_with_a_core_to_spare_has_one_bookkeeping_thread(tmp_path: Path) -> None:
    # tasks() leaves it out by name: exactly one thread may carry that name, and it folds
    # and accounts runs while the I/O thread goes on (one slot, a second core for it).
    if len(ALLOWED) < 2:
        pytest.skip("needs two CPUs this process may use")
    target = tmp_path / "data"
    target.write_bytes(os.urandom(1 << 22))
    run = ["-r", "--rand", "-b", "4k", "-t", "1", "--infloop", "--timelimit", "2", "--nolive"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "aiobench", *run, str(target)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    books: list[int] = []
    try:
        while proc.poll() is None and not books:
            names = {}
            for task in Path(f"/proc/{proc.pid}/task").iterdir():
                with contextlib.suppress(OSError):
                    names[int(task.name)] = (task / "comm").read_text().strip()
            books = [tid for tid, name in names.items() if name == BOOKS_THREAD.decode()]
            time.sleep(0.05)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert len(books) == 1, names
    assert len(names) >= 3, names  # (the main thread, the I/O thread and the books)


def test_without_cores_nothing_is_bound(tmp_path: Path) -> None:
    _, seen = sampled(tmp_path, 2)
    assert {allowed for allowed, _, _ in seen.values()} == {frozenset(ALLOWED)}


@pytest.mark.parametrize("spec", ["all", "0"])
def test_zones_bind_to_their_cpus(tmp_path: Path, spec: str) -> None:
    if not NODE0.exists():
        pytest.skip("this kernel shows no NUMA zones")
    zone = cpu_list(NODE0.read_text()) & set(ALLOWED)
    _, seen = sampled(tmp_path, 2, "--zones", spec)
    # (one zone on this machine: the process and both threads on its CPUs)
    assert {allowed for allowed, _, _ in seen.values()} <= {frozenset(zone)}


def test_cores_all_is_every_allowed_core(tmp_path: Path) -> None:
    pid, seen = sampled(tmp_path, len(ALLOWED), "--cores", "all")
    assert seen[pid][0] == frozenset(ALLOWED)
    singles = {allowed for tid, (allowed, _, _) in seen.items() if tid != pid}
    assert singles == {frozenset({core}) for core in ALLOWED}


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--cores", "4096"], ["--cores", "core 4096"]),
        (["--cores", "0-x"], ["--cores", "'0-x'"]),
        (["--cores", "1-0"], ["--cores", "1-0"]),
        (["--zones", "999"], ["--zones", "zone 999"]),
        (["--cores", "0", "--zones", "999"], ["--zones", "zone 999"]),
        (["--cores", ", ,"], ["--cores", "names no number"]),
        (["--cores", "[]"], ["--cores", "'[]'"]),
        (["--cores", "1[0-1]"], ["--cores", "'1[0-1]'"]),
        (["--cores", "0-999999999"], ["--cores", "999999999"]),
        (["--zones", "0,x"], ["--zones", "'x'"]),
    ],
)
def test_bad_lists_are_refused(tmp_path: Path, args: list[str], needles: list[str]) -> None:
    target = tmp_path / "data"
    assert_usage_error(run_aiobench("-w", "-s", "1m", *args, str(target)), needles)
    assert not target.exists()


def test_a_list_keeps_its_order_and_repeats(tmp_path: Path) -> None:
    # elbencho's list is taken as given: "0,0,1" puts threads 0 and 1 both on the first core
    # (a list made unique, 0,1, would put thread 1 on the second).
    if len(ALLOWED) < 2:
        pytest.skip("needs two CPUs this process may use")
    first, second = ALLOWED[:2]
    pid, seen = sampled(tmp_path, 2, "--cores", f"{first},{first},{second}")
    assert seen[pid][0] == {first, second}
    io = [allowed for tid, (allowed, _, _) in seen.items() if tid != pid and len(allowed) == 1]
    assert sorted(map(sorted, io)) == [[first], [first]], seen


@pytest.mark.parametrize("spelling", ["{1} {0}", "[{1},{0}]", " ,{1},,{0}, "])
def test_elbenchos_list_spellings(tmp_path: Path, spelling: str) -> None:
    # spaces as commas, a bracketed list expanded, empty entries left out (elbencho's parser)
    if len(ALLOWED) < 2:
        pytest.skip("needs two CPUs this process may use")
    first, second = ALLOWED[:2]
    cfg = build_config(
        paths=[str(tmp_path / "data")], read=True, cores=spelling.format(first, second)
    )
    assert cpu_sets(cfg) == (frozenset({second}), frozenset({first}))


def test_a_bracketed_list_binds_as_listed(tmp_path: Path) -> None:
    if len(ALLOWED) < 2:
        pytest.skip("needs two CPUs this process may use")
    first, second = ALLOWED[:2]
    pid, seen = sampled(tmp_path, 3, "--cores", f"[{second},{first}]")
    assert seen[pid][0] == {first, second}
    io = [allowed for tid, (allowed, _, _) in seen.items() if tid != pid and len(allowed) == 1]
    assert sorted(map(sorted, io)) == [[first], [second], [second]], seen


def test_cores_with_zones_bind_to_the_cores(tmp_path: Path) -> None:
    # elbencho takes both: its core binding comes after its zone binding and replaces it
    if not NODE0.exists():
        pytest.skip("this kernel shows no NUMA zones")
    core = max(cpu_list(NODE0.read_text()) & set(ALLOWED))
    _, seen = sampled(tmp_path, 2, "--zones", "0", "--cores", str(core))
    assert {allowed for allowed, _, _ in seen.values()} == {frozenset({core})}


@pytest.mark.parametrize(("engine", "cores"), [("native", ()), ("python", ("--cores", "all"))])
def test_zones_make_each_threads_memory_prefer_its_zone(
    tmp_path: Path, engine: str, cores: tuple[str, ...]
) -> None:
    # elbencho's numa_set_preferred for each worker (also with --cores); the process's
    # other threads keep the default policy
    if not NODE0.exists():
        pytest.skip("this kernel shows no NUMA zones")
    memory: dict[int, str] = {}
    pid, seen = sampled(tmp_path, 2, "--zones", "0", *cores, "--ioengine", engine, memory=memory)
    busy = [tid for tid, (_, _, ticks) in seen.items() if tid != pid and ticks]
    assert len(busy) >= 2, seen
    assert memory[pid] == "default"
    assert sorted(memory.values()).count("prefer:0") == 2, memory


def test_without_zones_memory_is_not_steered(tmp_path: Path) -> None:
    memory: dict[int, str] = {}
    sampled(tmp_path, 2, "--cores", "all", memory=memory)
    assert set(memory.values()) == {"default"}, memory
