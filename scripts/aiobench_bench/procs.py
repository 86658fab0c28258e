"""Running the tools: CPU accounting, waiting for a quiet machine, retrying disturbed runs."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from aiobench_bench.common import NAN, Doc, Figures, ToolError


def cpu_jiffies() -> tuple[int, int]:
    """(busy incl. steal, total) jiffies of all CPUs since boot, from /proc/stat."""
    with open("/proc/stat", encoding="utf-8") as handle:
        fields = [int(x) for x in handle.readline().split()[1:9]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def wait_quiet(limit_s: float, threshold: float) -> float:
    """Wait (at most ``limit_s``) until other processes use < ``threshold`` of all CPUs.

    The machine is shared: other sessions' jobs take whole cores for tens of seconds.
    Returns the busy fraction of the last 0.5 s sample.
    """
    deadline = time.monotonic() + limit_s
    while True:
        busy0, total0 = cpu_jiffies()
        time.sleep(0.5)
        busy1, total1 = cpu_jiffies()
        busy = (busy1 - busy0) / max(1, total1 - total0)
        if busy < threshold or time.monotonic() >= deadline:
            return busy


def kthread_cpu_s() -> float:
    """User + system CPU seconds used so far by the kernel's own threads (kthreadd and its
    children: kworkers, among them the loop devices' workers, which serve a loop device's
    I/O outside the tool's process)."""
    hz = os.sysconf("SC_CLK_TCK")
    ticks = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        except OSError:
            continue  # gone meanwhile
        rest = text[text.rfind(")") + 2 :].split()
        if name == "2" or rest[1] == "2":  # kthreadd, or a child of it
            ticks += int(rest[11]) + int(rest[12])
    return ticks / hz


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds used so far by process ``pid`` (all its threads; NAN if it
    is gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return NAN
    rest = text[text.rfind(")") + 2 :].split()
    return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Finished:
    """A tool's output and its process's own resource use (wait4: the process and the
    children it waited for, all threads)."""

    stdout: str
    user_s: float
    sys_s: float


def spawn(argv: list[str], label: str, env: dict[str, str] | None = None) -> Finished:
    """Run a tool to completion (in ``env``, default: ours; stdin empty).

    No stdin: mpirun forwards it to rank 0, and would stop the script if it were run in the
    background of a terminal. Reaped with wait4 for the child's own rusage. Interrupted (Ctrl+C,
    SIGTERM), the tool is killed and reaped before the exception goes on, so that nothing
    still holds a loop device or a mount when they are cleaned up.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env)
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
    if proc.returncode != 0:
        raise ToolError(
            f"{label} failed (exit {proc.returncode}): {shlex.join(argv)}\n"
            f"stdout: {stdout.strip()[-2000:]}\nstderr: {stderr.strip()[-2000:]}"
        )
    return Finished(stdout, usage.ru_utime, usage.ru_stime)


def run_tool(argv: list[str], label: str, env: dict[str, str] | None = None) -> str:
    """Run a tool to completion; its stdout (see spawn)."""
    return spawn(argv, label, env).stdout


@dataclass(frozen=True)
class Metered:
    """One tool run with the CPU accounting around it."""

    stdout: str
    wall_s: float
    tool_cpu_s: float  # user + system CPU time of the tool (all its threads, wait4)
    tool_sys_s: float  # the system (kernel) part of it
    foreign_load: float  # share of all CPU time used by anything but the tool
    kthread_cpu_s: float = NAN  # CPU time of the kernel's threads (measured if asked)
    server_cpu_s: float = NAN  # CPU time of the server process the tool talks to (if asked)


def run_metered(
    argv: list[str],
    label: str,
    env: dict[str, str] | None = None,
    kthreads: bool = False,
    server_pid: int | None = None,
) -> Metered:
    """Run a tool and measure its CPU time and everyone else's. With ``kthreads``, the CPU
    time of kernel threads is measured and not counted as foreign (a loop device's I/O is
    done by kworkers on the tool's behalf); likewise the process ``server_pid`` (a server
    on this machine that serves the tool's requests)."""
    k0 = kthread_cpu_s() if kthreads else 0.0
    s0 = process_cpu_s(server_pid) if server_pid is not None else 0.0
    busy0, total0 = cpu_jiffies()
    wall0 = time.monotonic()
    done = spawn(argv, label, env)
    wall = time.monotonic() - wall0
    busy1, total1 = cpu_jiffies()
    k1 = kthread_cpu_s() if kthreads else 0.0
    s1 = process_cpu_s(server_pid) if server_pid is not None else 0.0
    server = s1 - s0 if s1 == s1 else 0.0
    tool_cpu = done.user_s + done.sys_s
    hz = os.sysconf("SC_CLK_TCK")
    # CPU time spent by anything but the tool (other sessions, hypervisor steal, writeback)
    # as a share of all CPU time during the run.
    other = (busy1 - busy0) / hz - tool_cpu - (k1 - k0) - server
    foreign = other / max(1e-9, (total1 - total0) / hz)
    kcpu = k1 - k0 if kthreads else NAN
    scpu = server if server_pid is not None else NAN
    return Metered(done.stdout, wall, tool_cpu, done.sys_s, max(0.0, foreign), kcpu, scpu)


def load_json(path: str, label: str) -> Doc:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise ToolError(f"{label}: no JSON output ({exc})") from None
    # fio may put notes in front of the document.
    start = text.find("{")
    try:
        doc: Doc = json.loads(text[start:] if start >= 0 else text)
    except json.JSONDecodeError as exc:
        raise ToolError(f"{label}: unreadable JSON output ({exc})") from None
    return doc


def version_of(argv: list[str]) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    except OSError:
        return "?"
    return (proc.stdout or proc.stderr).strip().splitlines()[0] if proc.returncode == 0 else "?"


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM held back (delivered afterwards): cleanup is not cut short."""
    held = {signal.SIGINT, signal.SIGTERM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def no_faults(fig: Figures) -> tuple[()]:
    return ()


def keep_cleanest(
    args: argparse.Namespace,
    attempt: Callable[[], Figures],
    faults: Callable[[Figures], tuple[bool, ...]],
) -> Figures:
    """Wait for a quiet machine and run ``attempt`` until a run was clean (little foreign CPU
    load, none of its ``faults``), at most 1 + --retries times; keep the cleanest attempt
    (fewest faults, in their order of importance, then least foreign load)."""
    attempts = []
    for _ in range(1 + args.retries):
        wait_quiet(args.quiet_wait, args.max_load)
        fig = attempt()
        attempts.append(fig)
        if fig["foreign_load"] < args.max_load and not any(faults(fig)):
            break
    best = min(attempts, key=lambda f: (*faults(f), f["foreign_load"]))
    best["attempts"] = len(attempts)
    return best


def warm_up(
    attempt: Callable[[], Figures],
    stalled: Callable[[Figures], bool],
    note: Callable[[Figures], None],
    max_s: float,
) -> None:
    """Discarded run(s), repeated (up to ``max_s``, --warmup-max) until the tool is CPU-bound,
    as page-cache I/O should be: on this VM the stall after laying out the files has lasted
    over 30 s for fio."""
    deadline = time.monotonic() + max_s
    while True:
        fig = attempt()
        note(fig)
        if not stalled(fig) or time.monotonic() > deadline:
            return
