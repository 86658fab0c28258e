"""The startup section: how long aiobench takes to start, answer and end.

``aiobench --help`` and ``--version`` from start to exit, against ``python -c pass`` of the
interpreter this script runs on (the ratio to a bare interpreter is the figure that travels
between machines); and a tiny run (``-w -r -b 4k -s 4k FILE``, one block written and read):
from start to exit, and from start to its first timed operation (the first phase's
``start_time`` in its JSON, the wall clock at the phase's common start, against the wall
clock just before the process was started; millisecond resolution). Targets: issue #16
(--version under 0.2 s) and #28 (--help under 0.1 s, the tiny run under 0.2 s, its first
timed operation under 0.15 s). Beside them, the floor under the first timed operation: a
program that loads the packages of aiobench's design (typer, numpy, hdrhistogram, anyio on
uvloop), starts its event loop and writes one block from an executor thread, and nothing
else (:mod:`aiobench_bench.startfloor`); from start to that write; and the same without
numpy, which a plain run on the native engine does not load (the floor its first
operation is held against).
Wall time of each process, after a wait for a quiet machine, the commands in an order that
rotates every round, --startup-runs rounds after one discarded round; medians with
min - max. The commands run without PYTHONDONTWRITEBYTECODE (kept by some sandboxes and CI
images): an installed package has its bytecode cached (pip compiles it on install; an
editable install's first run writes it), so the discarded round writes what a user's
installation has, and no round compiles aiobench's sources again.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shlex
import statistics
import subprocess
import sys
import time

from aiobench_bench.common import Row, ToolError, log, ratio_of
from aiobench_bench.procs import load_json, wait_quiet
from aiobench_bench.report import fmt_ratio, print_environment, target_row

# Issue #16: --version answers in under this many seconds.
STARTUP_TARGET_S = 0.2
# Issue #28: --help, a whole tiny run, and the tiny run's first timed operation.
HELP_TARGET_S = 0.1
TINY_RUN_TARGET_S = 0.2
FIRST_OP_TARGET_S = 0.15
BARE = "python -c pass"
HELP = "aiobench --help"
VERSION = "aiobench --version"
TINY = "aiobench -w -r -b 4k -s 4k"
TINY_RUN = f"{TINY}: start to exit"
FIRST_OP = f"{TINY}: start to first timed op"
FLOOR = "the packages, an event loop, one write: start to first op"
FLOOR_BARE = "the same without numpy: start to first op"
FLOOR_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "startfloor.py")


def startup_commands(aiobench_exe: list[str]) -> dict[str, list[str]]:
    return {
        BARE: [sys.executable, "-c", "pass"],
        HELP: [*aiobench_exe, "--help"],
        VERSION: [*aiobench_exe, "--version"],
    }


def user_env() -> dict[str, str]:
    """This environment as a user's shell has it: bytecode caches written and read."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _run(argv: list[str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False, env=user_env()
    )


def startup_once(argv: list[str], label: str) -> float:
    """Wall seconds from starting ``argv`` to its exit (its output discarded)."""
    started = time.perf_counter()
    proc = _run(argv)
    took = time.perf_counter() - started
    if proc.returncode != 0:
        raise ToolError(f"{label} failed ({proc.returncode}): {proc.stderr.decode()[-300:]}")
    return took


def tiny_run_argv(aiobench_exe: list[str], workdir: str) -> list[str]:
    target, out = os.path.join(workdir, "startup-file"), os.path.join(workdir, "startup.json")
    return [*aiobench_exe, "-w", "-r", "-b", "4k", "-s", "4k", target, "--json", out]


def tiny_run_once(argv: list[str], label: str) -> tuple[float, float]:
    """Seconds from starting the tiny run ``argv`` to its exit, and to its first phase's
    start (its JSON's ``start_time``); the file and the JSON are removed."""
    target, out = argv[-3], argv[-1]
    started = datetime.datetime.now(datetime.UTC)
    began = time.perf_counter()
    proc = _run(argv)
    took = time.perf_counter() - began
    try:
        if proc.returncode != 0:
            raise ToolError(f"{label} failed ({proc.returncode}): {proc.stderr.decode()[-300:]}")
        first = datetime.datetime.fromisoformat(load_json(out, label)["phases"][0]["start_time"])
    finally:
        for path in (target, out):
            if os.path.exists(path):
                os.unlink(path)
    return took, (first - started).total_seconds()


def floor_argv(workdir: str, numpy: bool = True) -> list[str]:
    leave_out = () if numpy else ("--without-numpy",)
    return [sys.executable, FLOOR_SCRIPT, *leave_out, os.path.join(workdir, "floor-file")]


def floor_once(argv: list[str]) -> float:
    """Seconds from starting the floor program ``argv`` to its write's start (the wall
    clock it prints); its file is removed."""
    started = time.time()
    proc = subprocess.run(argv, capture_output=True, check=False, env=user_env())
    try:
        if proc.returncode != 0:
            raise ToolError(f"the floor program failed ({proc.returncode}): {proc.stderr[-300:]!r}")
        try:
            first = float(proc.stdout)
        except ValueError:
            raise ToolError(f"the floor program printed {proc.stdout[-100:]!r}") from None
    finally:
        if os.path.exists(argv[-1]):
            os.unlink(argv[-1])
    return first - started


def measure_startup(
    args: argparse.Namespace, workdir: str, aiobench_exe: list[str]
) -> tuple[Row, Row]:
    # --ioengine is not an option of --help or --version: the bare command.
    base = aiobench_exe[: len(aiobench_exe) - 2] if args.ioengine else aiobench_exe
    commands = startup_commands(base)
    commands[TINY] = tiny_run_argv(aiobench_exe, workdir)
    commands[FLOOR] = floor_argv(workdir)
    commands[FLOOR_BARE] = floor_argv(workdir, numpy=False)
    labels = list(commands)
    times: dict[str, list[float]] = {label: [] for label in [BARE, HELP, VERSION]}
    times |= {TINY_RUN: [], FIRST_OP: [], FLOOR: [], FLOOR_BARE: []}
    for i in range(args.startup_runs + 1):  # round 0 is discarded (cold caches)
        wait_quiet(args.quiet_wait, args.max_load)
        shift = i % len(labels)
        for label in labels[shift:] + labels[:shift]:
            if label == TINY:
                took, first = tiny_run_once(commands[label], label)
                if i:
                    times[TINY_RUN].append(took)
                    times[FIRST_OP].append(first)
            elif label in (FLOOR, FLOOR_BARE):
                first = floor_once(commands[label])
                if i:
                    times[label].append(first)
            else:
                took = startup_once(commands[label], label)
                if i:
                    times[label].append(took)
        if i:
            log(
                f"startup round {i}/{args.startup_runs}: "
                + ", ".join(f"{label} {v[-1] * 1e3:.0f} ms" for label, v in times.items())
            )
    rows: Row = {
        label: {"median": statistics.median(v), "min": min(v), "max": max(v)}
        for label, v in times.items()
    }
    tiny = shlex.join(tiny_run_argv(aiobench_exe, "DIR"))
    shown = {label: shlex.join(argv) for label, argv in commands.items() if label != TINY}
    meta: Row = {
        "runs": args.startup_runs,
        "commands": shown
        | {TINY_RUN: tiny, FIRST_OP: tiny, FLOOR: shlex.join(floor_argv("DIR"))}
        | {FLOOR_BARE: shlex.join(floor_argv("DIR", numpy=False))},
    }
    return rows, meta


def fmt_seconds(value: float) -> str:
    return f"{value * 1e3:.0f} ms"


def startup_targets(rows: Row) -> list[Row]:
    bare = rows[BARE]["median"]
    out = []
    for label, target_s, issue in (
        (HELP, HELP_TARGET_S, "#28"),
        (VERSION, STARTUP_TARGET_S, "#16"),
    ):
        value = rows[label]["median"]
        out.append(
            target_row(
                "startup", f"{label}: start to exit", value, bare, BARE, fmt_seconds, "<=", None
            )
        )
        out.append(
            target_row(
                "startup", f"{label}: under {target_s} s", value, target_s,
                f"{issue} target", fmt_seconds, "<=", 1.0,
            )
        )  # fmt: skip
    # A plain run loads no numpy (it loads it only where it computes with it): its floor is
    # the one without numpy, where the report has it.
    floor, floor_name = rows[FLOOR]["median"], "packages + loop + 1 write"
    if FLOOR_BARE in rows:
        floor, floor_name = rows[FLOOR_BARE]["median"], "the same without numpy"
    out.append(
        target_row(
            "startup", f"{FIRST_OP}: over the floor", rows[FIRST_OP]["median"], floor,
            floor_name, fmt_seconds, "<=", None,
        )
    )  # fmt: skip
    if FLOOR_BARE in rows:  # (a bench report of before the row has none)
        out.append(
            target_row(
                "startup", "the floor without numpy: of the first op's target",
                rows[FLOOR_BARE]["median"], FIRST_OP_TARGET_S, "#28 target", fmt_seconds,
                "<=", None,
            )
        )  # fmt: skip
    for label, target_s in ((TINY_RUN, TINY_RUN_TARGET_S), (FIRST_OP, FIRST_OP_TARGET_S)):
        value = rows[label]["median"]
        out.append(target_row("startup", label, value, bare, BARE, fmt_seconds, "<=", None))
        out.append(
            target_row(
                "startup", f"{label}: under {target_s} s", value, target_s, "#28 target",
                fmt_seconds, "<=", 1.0,
            )
        )  # fmt: skip
    return out


def print_startup_markdown(rows: Row, meta: Row) -> None:
    print(f"## Start-up: aiobench --help, --version and a tiny run against {BARE}")
    print()
    print_environment(meta)
    su = meta["startup"]
    print(
        f"- Runs: one discarded round, then {su['runs']} rounds of the commands in a "
        "rotating order, each after a wait for a quiet machine; wall time from start to exit "
        f"(for `{FIRST_OP}`: to the first phase's start_time in its JSON; for the floor, "
        "a program that only loads aiobench's packages and starts its event loop: to its "
        "one write)"
    )
    print()
    bare = rows[BARE]["median"]
    print(f"| command | to | median | min - max | ratio to {BARE} |")
    print("|---|---|---:|---:|---:|")
    for label, row in rows.items():
        to = {FIRST_OP: "first timed op", FLOOR: "first op", FLOOR_BARE: "first op"}.get(
            label, "exit"
        )
        print(
            f"| `{su['commands'][label]}` | {to} | {fmt_seconds(row['median'])} | "
            f"{fmt_seconds(row['min'])} - {fmt_seconds(row['max'])} | "
            f"{fmt_ratio(ratio_of(row['median'], bare))} |"
        )
