"""The startup section: how long ``aiobench --help`` and ``--version`` take.

From start to exit, against ``python -c pass`` of the interpreter this script runs on
(issue #16: under 0.2 s; the ratio to a bare interpreter is the figure that travels between
machines); and how long a small write run takes from its start to its first phase (the
phase's ``start_time`` in its JSON against the wall clock when it was started; millisecond
resolution). Wall time of each process, after a wait for a quiet machine, the commands in
an order that rotates every round, --startup-runs rounds after one discarded round; medians
with min - max.
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

# Issue #16: --help and --version answer in under this many seconds.
STARTUP_TARGET_S = 0.2
BARE = "python -c pass"
FIRST_PHASE = "aiobench -w: start to first phase"


def startup_commands(aiobench_exe: list[str]) -> dict[str, list[str]]:
    return {
        BARE: [sys.executable, "-c", "pass"],
        "aiobench --help": [*aiobench_exe, "--help"],
        "aiobench --version": [*aiobench_exe, "--version"],
    }


def startup_once(argv: list[str], label: str) -> float:
    """Wall seconds from starting ``argv`` to its exit (its output discarded)."""
    started = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    took = time.perf_counter() - started
    if proc.returncode != 0:
        raise ToolError(f"{label} failed ({proc.returncode}): {proc.stderr.decode()[-300:]}")
    return took


def first_phase_argv(aiobench_exe: list[str], workdir: str) -> list[str]:
    target, out = os.path.join(workdir, "startup-file"), os.path.join(workdir, "startup.json")
    return [*aiobench_exe, "-w", "-b", "4k", "-s", "64k", target, "--json", out]


def first_phase_once(argv: list[str], label: str) -> float:
    """Seconds from starting the write run ``argv`` to its first phase's start (its JSON's
    ``start_time``); the file and the JSON are removed."""
    target, out = argv[-3], argv[-1]
    started = datetime.datetime.now(datetime.UTC)
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    try:
        if proc.returncode != 0:
            raise ToolError(f"{label} failed ({proc.returncode}): {proc.stderr.decode()[-300:]}")
        first = datetime.datetime.fromisoformat(load_json(out, label)["phases"][0]["start_time"])
    finally:
        for path in (target, out):
            if os.path.exists(path):
                os.unlink(path)
    return (first - started).total_seconds()


def measure_startup(
    args: argparse.Namespace, workdir: str, aiobench_exe: list[str]
) -> tuple[Row, Row]:
    # --ioengine is not an option of --help or --version: the bare command.
    base = aiobench_exe[: len(aiobench_exe) - 2] if args.ioengine else aiobench_exe
    commands = startup_commands(base)
    commands[FIRST_PHASE] = first_phase_argv(aiobench_exe, workdir)
    labels = list(commands)
    times: dict[str, list[float]] = {label: [] for label in labels}
    for i in range(args.startup_runs + 1):  # round 0 is discarded (cold caches)
        wait_quiet(args.quiet_wait, args.max_load)
        shift = i % len(labels)
        for label in labels[shift:] + labels[:shift]:
            once = first_phase_once if label == FIRST_PHASE else startup_once
            took = once(commands[label], label)
            if i:
                times[label].append(took)
        if i:
            log(
                f"startup round {i}/{args.startup_runs}: "
                + ", ".join(f"{label} {times[label][-1] * 1e3:.0f} ms" for label in labels)
            )
    rows: Row = {
        label: {"median": statistics.median(v), "min": min(v), "max": max(v)}
        for label, v in times.items()
    }
    shown = dict(commands, **{FIRST_PHASE: first_phase_argv(aiobench_exe, "DIR")})
    meta: Row = {
        "runs": args.startup_runs,
        "commands": {k: shlex.join(v) for k, v in shown.items()},
    }
    return rows, meta


def fmt_seconds(value: float) -> str:
    return f"{value * 1e3:.0f} ms"


def startup_targets(rows: Row) -> list[Row]:
    bare = rows[BARE]["median"]
    out = []
    for label in ("aiobench --help", "aiobench --version"):
        value = rows[label]["median"]
        out.append(
            target_row(
                "startup", f"{label}: start to exit", value, bare, BARE, fmt_seconds, "<=", None
            )
        )
        out.append(
            target_row(
                "startup", f"{label}: under {STARTUP_TARGET_S} s", value, STARTUP_TARGET_S,
                "#16 target", fmt_seconds, "<=", 1.0,
            )
        )  # fmt: skip
    first = rows[FIRST_PHASE]["median"]
    out.append(target_row("startup", FIRST_PHASE, first, bare, BARE, fmt_seconds, "<=", None))
    return out


def print_startup_markdown(rows: Row, meta: Row) -> None:
    print(f"## Start-up: aiobench --help and --version against {BARE}")
    print()
    print_environment(meta)
    su = meta["startup"]
    print(
        f"- Runs: one discarded round, then {su['runs']} rounds of the commands in a "
        "rotating order, each after a wait for a quiet machine; wall time from start to exit "
        f"(for `{FIRST_PHASE}`: to the phase's start_time in its JSON)"
    )
    print()
    bare = rows[BARE]["median"]
    print(f"| command | median | min - max | ratio to {BARE} |")
    print("|---|---:|---:|---:|")
    for label, row in rows.items():
        print(
            f"| `{su['commands'][label]}` | {fmt_seconds(row['median'])} | "
            f"{fmt_seconds(row['min'])} - {fmt_seconds(row['max'])} | "
            f"{fmt_ratio(ratio_of(row['median'], bare))} |"
        )
