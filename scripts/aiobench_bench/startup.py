"""The startup section: how long ``aiobench --help`` and ``--version`` take.

From start to exit, against ``python -c pass`` of the interpreter this script runs on
(issue #16: under 0.2 s; the ratio to a bare interpreter is the figure that travels between
machines). Wall time of each process, after a wait for a quiet machine, the three commands
in an order that rotates every round, --startup-runs rounds after one discarded round;
medians with min - max.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import subprocess
import sys
import time

from aiobench_bench.common import Row, ToolError, log, ratio_of
from aiobench_bench.procs import wait_quiet
from aiobench_bench.report import fmt_ratio, print_environment, target_row

# Issue #16: --help and --version answer in under this many seconds.
STARTUP_TARGET_S = 0.2
BARE = "python -c pass"


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


def measure_startup(args: argparse.Namespace, aiobench_exe: list[str]) -> tuple[Row, Row]:
    # --ioengine is not an option of --help or --version: the bare command.
    base = aiobench_exe[: len(aiobench_exe) - 2] if args.ioengine else aiobench_exe
    commands = startup_commands(base)
    labels = list(commands)
    times: dict[str, list[float]] = {label: [] for label in labels}
    for i in range(args.startup_runs + 1):  # round 0 is discarded (cold caches)
        wait_quiet(args.quiet_wait, args.max_load)
        shift = i % len(labels)
        for label in labels[shift:] + labels[:shift]:
            took = startup_once(commands[label], label)
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
    meta: Row = {
        "runs": args.startup_runs,
        "commands": {k: shlex.join(v) for k, v in commands.items()},
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
    return out


def print_startup_markdown(rows: Row, meta: Row) -> None:
    print(f"## Start-up: aiobench --help and --version against {BARE}")
    print()
    print_environment(meta)
    su = meta["startup"]
    print(
        f"- Runs: one discarded round, then {su['runs']} rounds of the three commands in a "
        "rotating order, each after a wait for a quiet machine; wall time from start to exit"
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
