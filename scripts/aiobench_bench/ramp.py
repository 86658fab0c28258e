"""The ramp section: FIRST DONE against LAST DONE with 1024 threads.

How evenly 1024 threads start: aiobench -t 1024 over one 64 MiB file (16 blocks of 4 KiB
per thread) on tmpfs. FIRST DONE is the instant the first thread finished: the share of all
operations done by then shows how much of the run all threads were working. The threads'
finish instants (phases[].threads[].elapsed_ns) show how the kernel ran them.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import shlex

from aiobench_bench.common import NAN, Figures, Row, ToolError, log, median_of
from aiobench_bench.procs import keep_cleanest, load_json, no_faults, run_metered
from aiobench_bench.report import (
    fmt_met,
    fmt_ns,
    fmt_ops,
    fmt_pct,
    fmt_target,
    print_environment,
    target_row,
)
from aiobench_bench.results import aiobench_p99, note_engine

RAMP_THREADS = 1024
RAMP_SIZE = "64m"
RAMP_TARGET = 0.50  # FIRST DONE ops at least this share of LAST DONE ops
RAMP_MODES = (("write", True), ("read", False))  # the write makes the file the read reads


def ramp_argv(exe: list[str], write: bool, path: str, out: str) -> list[str]:
    return [
        *exe,
        *("-w" if write else "-r", "-b", "4k", "-t", str(RAMP_THREADS), "-s", RAMP_SIZE),
        *(path, "--json", out),
    ]


def ramp_once(argv: list[str], label: str, out: str) -> Figures:
    if os.path.exists(out):
        os.unlink(out)
    os.sync()
    run = run_metered(argv, label)
    doc = load_json(out, label)
    if doc.get("error"):
        raise ToolError(f"aiobench reported an error: {doc['error']}")
    note_engine(doc)
    phase = doc["phases"][0]
    first, last = phase["first_done"], phase["last_done"]
    finishes = sorted(t["elapsed_ns"] for t in phase["threads"]) or [NAN]
    return {
        "finish_p10_ns": float(finishes[len(finishes) // 10]),
        "finish_p50_ns": float(finishes[len(finishes) // 2]),
        "first_done_ops": float(first["ops"]),
        "last_done_ops": float(last["ops"]),
        "share": first["ops"] / last["ops"] if last["ops"] else NAN,
        "first_done_iops": float(first["iops"]),
        "last_done_iops": float(last["iops"]),
        "first_done_elapsed_s": first["elapsed_ns"] / 1e9,
        "last_done_elapsed_s": last["elapsed_ns"] / 1e9,
        "startup_ns": float(phase["startup_ns"]) if "startup_ns" in phase else NAN,
        "p99_ns": aiobench_p99(phase),
        "foreign_load": run.foreign_load,
        "wall_s": run.wall_s,
        "process_cpu_s": run.tool_cpu_s,
    }


def ramp_log(mode: str, label: str, fig: Figures) -> None:
    startup = fmt_ns(fig["startup_ns"]) if fig["startup_ns"] == fig["startup_ns"] else "n/a"
    log(
        f"ramp {label:20} {mode:5} FIRST DONE {fig['first_done_ops']:6.0f} ops "
        f"({fig['share']:4.0%}) {fig['first_done_iops'] / 1e3:8.1f} k IOPS  LAST DONE "
        f"{fig['last_done_ops']:6.0f} ops {fig['last_done_iops'] / 1e3:8.1f} k IOPS  "
        f"startup {startup}  other load {fig['foreign_load']:4.0%}"
        + (f"  ({fig['attempts']:.0f} attempts)" if fig.get("attempts", 1) > 1 else "")
    )


def measure_ramp(
    args: argparse.Namespace, workdir: str, aiobench_exe: list[str]
) -> tuple[dict[str, list[Figures]], Row]:
    path = os.path.join(workdir, "ramp-file")
    out = os.path.join(workdir, "ramp.json")
    samples: dict[str, list[Figures]] = {mode: [] for mode, _ in RAMP_MODES}
    try:
        # One discarded write + read first (the first write allocates the file's pages).
        for mode, write in RAMP_MODES:
            fig = ramp_once(ramp_argv(aiobench_exe, write, path, out), f"aiobench ramp {mode}", out)
            ramp_log(mode, "warm-up (discarded)", fig)
        for i in range(args.ramp_repeats):
            for mode, write in RAMP_MODES:
                argv = ramp_argv(aiobench_exe, write, path, out)
                attempt = functools.partial(ramp_once, argv, f"aiobench ramp {mode}", out)
                fig = keep_cleanest(args, attempt, no_faults)
                samples[mode].append(fig)
                ramp_log(mode, f"round {i + 1}/{args.ramp_repeats}", fig)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
    meta = {
        "repeats": args.ramp_repeats,
        "threads": RAMP_THREADS,
        "size": RAMP_SIZE,
        "retried": sum(int(f["attempts"]) - 1 for runs in samples.values() for f in runs),
        "commands": {
            mode: shlex.join(ramp_argv(aiobench_exe, write, "FILE", "OUT"))
            for mode, write in RAMP_MODES
        },
    }
    return samples, meta


RAMP_FIGURES = (
    "finish_p10_ns",
    "finish_p50_ns",
    "share",
    "first_done_ops",
    "last_done_ops",
    "first_done_iops",
    "last_done_iops",
    "first_done_elapsed_s",
    "last_done_elapsed_s",
    "startup_ns",
    "p99_ns",
    "wall_s",
)


def ramp_summarise(samples: dict[str, list[Figures]]) -> list[Row]:
    rows = []
    for mode, _ in RAMP_MODES:
        runs = samples[mode]
        med = {key: median_of([f[key] for f in runs]) for key in RAMP_FIGURES}
        rows.append(
            {
                "mode": mode,
                "median": med,
                "target": RAMP_TARGET,
                "met": None if med["share"] != med["share"] else med["share"] >= RAMP_TARGET,
                "runs": runs,
            }
        )
    return rows


def ramp_targets(rows: list[Row]) -> list[Row]:
    return [
        target_row(
            "ramp",
            f"-t {RAMP_THREADS} 4 KiB {row['mode']}: FIRST DONE ops / LAST DONE ops",
            row["median"]["first_done_ops"],
            row["median"]["last_done_ops"],
            "LAST DONE",
            fmt_ops,
            ">=",
            RAMP_TARGET,
            ratio=row["median"]["share"],
        )
        | {"pct": True}
        for row in rows
    ]


def print_ramp_markdown(rows: list[Row], meta: Row) -> None:
    rp = meta["ramp"]
    print(
        f"## Ramp: {RAMP_THREADS} threads, 4 KiB blocks, one {RAMP_SIZE.upper()} file on "
        f"{meta['fs']}"
    )
    print()
    print_environment(meta)
    if meta["fs"] != "tmpfs":
        print(f"- **Not on tmpfs** ({meta['fs']}): the target is defined on tmpfs")
    print(
        f"- Runs: one discarded write + read, then {rp['repeats']} round(s) of a write run and "
        "a read run of the same file; figures are medians of each figure over the runs"
    )
    print(
        "- share = FIRST DONE ops / LAST DONE ops (how much of the work was done when the first "
        "thread finished); startup = phases[0].startup_ns (the phase's untimed set-up, n/a when "
        f"the JSON has none); target: share >= {RAMP_TARGET:.0%}; thread finishes: when the "
        "10th percentile and the median of the threads had finished (their elapsed_ns; the "
        "slowest is LAST DONE)"
    )
    print()
    print(
        "| phase | FIRST DONE ops | LAST DONE ops | share | target | met? | FIRST DONE IOPS "
        "| LAST DONE IOPS | FIRST DONE time | thread finishes p10 / p50 | LAST DONE time "
        "| startup | p99 |"
    )
    print("|---|---:|---:|---:|---:|:---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        m = row["median"]
        print(
            f"| {row['mode']} | {m['first_done_ops']:,.0f} | {m['last_done_ops']:,.0f} "
            f"| {fmt_pct(m['share'])} | {fmt_target('>=', RAMP_TARGET, pct=True)} "
            f"| {fmt_met(row['met'])} | {m['first_done_iops'] / 1e3:,.1f} k "
            f"| {m['last_done_iops'] / 1e3:,.1f} k | {fmt_ns(m['first_done_elapsed_s'] * 1e9)} "
            f"| {fmt_ns(m['finish_p10_ns'])} / {fmt_ns(m['finish_p50_ns'])} "
            f"| {fmt_ns(m['last_done_elapsed_s'] * 1e9)} | {fmt_ns(m['startup_ns'])} "
            f"| {fmt_ns(m['p99_ns'])} |"
        )
    print()
    print(
        f"Every kept run (runs above {meta['max_load']:.0%} other load were retried up to "
        f"{meta['retries']} times, {rp['retried']} retries in all):"
    )
    print()
    print(
        "| phase | round | FIRST DONE ops | share | FIRST DONE IOPS | LAST DONE IOPS "
        "| startup | other load | wall |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        for i, f in enumerate(row["runs"]):
            print(
                f"| {row['mode']} | {i + 1} | {f['first_done_ops']:,.0f} | {fmt_pct(f['share'])} "
                f"| {f['first_done_iops'] / 1e3:,.1f} k | {f['last_done_iops'] / 1e3:,.1f} k "
                f"| {fmt_ns(f['startup_ns'])} | {f['foreign_load']:.0%} | {f['wall_s']:.1f} s |"
            )
    print()
    print("Commands (FILE = a file in the work directory, OUT = the result file):")
    print()
    print("```")
    for mode, _ in RAMP_MODES:
        print(f"# {mode}")
        print(rp["commands"][mode])
    print("```")
