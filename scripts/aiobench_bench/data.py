"""The data section: page-cache I/O against fio at 1 and 2 threads / jobs."""

from __future__ import annotations

import argparse
import functools
import os
import shlex
import statistics
from dataclasses import dataclass, field

from aiobench.units import parse_size
from aiobench_bench.common import (
    MIB,
    NAN,
    RANDAMOUNT,
    Figures,
    Row,
    Workload,
    log,
    median_of,
    ratio_of,
    size_arg,
)
from aiobench_bench.host import cached_run, lay_out
from aiobench_bench.procs import keep_cleanest, run_metered, warm_up
from aiobench_bench.report import (
    fmt_figure,
    fmt_met,
    fmt_ns,
    fmt_ratio,
    fmt_target,
    print_environment,
    spread,
    target_row,
)
from aiobench_bench.results import aiobench_figures, fio_figures

FILE_NAMES = ("file0", "file1")
# A page-cache run whose tool used less than this share of its threads' CPUs was stalled.
# One thread doing cached I/O keeps its CPU busy (91-107 % here, start-up included); a
# stalled fio -t 1 was seen at 48-50 %. Two threads may share an interpreter lock (the
# Python engine), so their bar is lower (a stalled fio numjobs=2 was seen at 40 %).
MIN_TOOL_CPU = {1: 0.7}
MIN_TOOL_CPU_MANY = 0.5

# Issue #13's targets for the data section (ratios aiobench / fio of the medians).
P99_TARGET = 1.5  # p99 latency at most this multiple of fio's
CPU_TARGET = 1.05  # CPU time per operation at most this multiple of fio's
SCALING_TARGET = 1.7  # 4 KiB random reads: aiobench -t 2 at least this multiple of its -t 1


WORKLOADS = (
    Workload("randread-4k-t1", "4 KiB random read", "4k", True, False, 1, target=0.95),
    Workload("randread-4k-t2", "4 KiB random read", "4k", True, False, 2, target=0.90),
    Workload("randwrite-4k-t1", "4 KiB random write", "4k", True, True, 1, target=0.95),
    Workload("randwrite-4k-t2", "4 KiB random write", "4k", True, True, 2, target=0.90),
    # One full pass over both files, one thread / job per file (see fio_argv).
    Workload("seqread-1m", "1 MiB sequential read", "1m", False, False, 2, target=0.95),
    Workload("seqwrite-1m", "1 MiB sequential write", "1m", False, True, 2, target=0.95),
)
WORKLOAD = {w.key: w for w in WORKLOADS}
# aiobench's own scaling from -t 1 to -t 2 (the target is on reads; writes and fio's
# own scaling are shown for comparison).
SCALING_PAIRS = (
    ("randread-4k-t1", "randread-4k-t2", SCALING_TARGET),
    ("randwrite-4k-t1", "randwrite-4k-t2", None),
)


@dataclass
class Samples:
    aiobench: list[dict[str, float]] = field(default_factory=list)
    fio: list[dict[str, float]] = field(default_factory=list)


def aiobench_argv(
    exe: list[str],
    w: Workload,
    files: list[str],
    size: int,
    runtime: int,
    out: str,
    threads: int | None = None,
) -> list[str]:
    threads = w.threads if threads is None else threads
    argv = [*exe, "-w" if w.write else "-r", "-b", w.block, "-t", str(threads)]
    if w.rand:
        # Time-based like fio --time_based: without --randamount each thread would stop
        # after one pass over its slice (well under a second when cached).
        argv += ["--rand", "--randamount", RANDAMOUNT, "--timelimit", str(runtime)]
    else:
        # Time-based too: each thread starts its slice (its file) over when done, as fio's
        # --time_based loops a sequential job over its file.
        argv += ["--infloop", "--timelimit", str(runtime)]
    if w.write:
        argv += ["-s", size_arg(size)]
    return [*argv, *files, "--json", out]


def startup_argv(exe: list[str], w: Workload, files: list[str], size: int, out: str) -> list[str]:
    """The start-up cost run of a workload: the same command doing one block per thread (a
    random run: --randamount of one block per thread; a sequential one: -s of one block,
    so each thread's slice of the files is one block). Its CPU time is what a run costs
    besides its operations: interpreter, imports, set-up, result output."""
    block = parse_size(w.block, "-b")
    argv = [*exe, "-w" if w.write else "-r", "-b", w.block, "-t", str(w.threads)]
    if w.rand:
        argv += ["--rand", "--randamount", size_arg(block * w.threads)]
        if w.write:
            argv += ["-s", size_arg(size)]
    else:
        argv += ["-s", size_arg(block * len(files) // w.threads)]
    return [*argv, *files, "--json", out]


def fio_argv(exe: str, w: Workload, workdir: str, size: int, runtime: int, out: str) -> list[str]:
    rw = {
        (True, False): "randread",
        (True, True): "randwrite",
        (False, False): "read",
        (False, True): "write",
    }[(w.rand, w.write)]
    argv = [
        exe,
        f"--name={w.key}",
        f"--rw={rw}",
        f"--bs={w.block}",
        "--ioengine=psync",
        f"--numjobs={w.threads}",
    ]
    argv += ["--time_based", f"--runtime={runtime}"]
    if w.rand:
        # The jobs roam over both files (size = both files; fio splits it per file), for T
        # seconds; aiobench: each thread roams over its share of file0||file1.
        # Absolute names: fio 3.33 puts ':'-separated --filename entries in its current
        # dir, not in --directory (it laid out its own file0/file1 there otherwise).
        names = ":".join(os.path.join(workdir, name) for name in FILE_NAMES)
        argv += [f"--filename={names}", f"--size={size_arg(2 * size)}"]
    else:
        # Same split as aiobench: aiobench gives each thread one contiguous slice of
        # file0||file1, i.e. thread 0 = file0 and thread 1 = file1; here job N opens
        # fileN. Both loop over their file until the time is up (aiobench --infloop).
        argv += ["--filename_format=file$jobnum", f"--size={size_arg(size)}"]
    argv += [
        "--group_reporting",
        "--iomem_align=4096",
        "--invalidate=0",
        # One process, as aiobench is: without --thread each job is a process of its own
        # and gets more CPU on a busy machine.
        "--thread",
        # No untimed preallocation of new files (it doubled fio's tmpfs write figure).
        "--fallocate=none",
        f"--directory={workdir}",
        "--output-format=json",
        f"--output={out}",
    ]
    return argv


def aiobench_cpu_per_op(runs: list[Figures]) -> tuple[float, float, list[float]]:
    """(median CPU ns per operation, the start-up CPU s subtracted, each run's figure):
    each run's process CPU time (wait4) less the median CPU time of the workload's one-block
    runs (start-up, set-up, output), over its LAST DONE operations."""
    startup = median_of([f["startup_cpu_s"] for f in runs if "startup_cpu_s" in f])
    per_run = [(f["process_cpu_s"] - startup) / f["ops"] * 1e9 if f["ops"] else NAN for f in runs]
    return median_of(per_run), startup, per_run


def summarise(results: dict[str, Samples]) -> list[Row]:
    rows = []
    for w in WORKLOADS:
        s = results[w.key]
        a = [x[w.metric] for x in s.aiobench]
        f = [x[w.metric] for x in s.fio]
        a_med, f_med = statistics.median(a), statistics.median(f)
        ratio = ratio_of(a_med, f_med)
        a_cpu, startup, a_cpu_runs = aiobench_cpu_per_op(s.aiobench)
        f_cpu = median_of([x["cpu_per_op_ns"] for x in s.fio])
        a_p99 = median_of([x["p99_ns"] for x in s.aiobench])
        f_p99 = median_of([x["p99_ns"] for x in s.fio])
        cpu_ratio, p99_ratio = ratio_of(a_cpu, f_cpu), ratio_of(a_p99, f_p99)
        rows.append(
            {
                "workload": w.key,
                "title": w.title,
                "threads": w.threads,
                "metric": w.metric,
                "aiobench": a_med,
                "fio": f_med,
                "ratio": ratio,
                "target": w.target,
                "met": None if w.target is None or ratio != ratio else ratio >= w.target,
                "cpu_per_op_ns": {"aiobench": a_cpu, "fio": f_cpu},
                "cpu_ratio": cpu_ratio,
                "cpu_target": CPU_TARGET,
                "cpu_met": None if cpu_ratio != cpu_ratio else cpu_ratio <= CPU_TARGET,
                "p99_ns": {"aiobench": a_p99, "fio": f_p99},
                "p99_ratio": p99_ratio,
                "p99_target": P99_TARGET,
                "p99_met": None if p99_ratio != p99_ratio else p99_ratio <= P99_TARGET,
                "aiobench_startup_cpu_s": startup,
                "aiobench_startup_cpu_s_samples": [x.get("startup_cpu_s", NAN) for x in s.aiobench],
                "aiobench_process_cpu_s": [x["process_cpu_s"] for x in s.aiobench],
                "aiobench_cpu_per_op_ns_samples": a_cpu_runs,
                "fio_cpu_per_op_ns_samples": [x["cpu_per_op_ns"] for x in s.fio],
                # fio's whole process (wait4: start-up and its main thread included), for
                # comparison with fio's own per-thread figure.
                "fio_process_cpu_per_op_ns": median_of(
                    [x["process_cpu_s"] / x["ops"] * 1e9 for x in s.fio if x["ops"]]
                ),
                "aiobench_p99_ns_samples": [x["p99_ns"] for x in s.aiobench],
                "fio_p99_ns_samples": [x["p99_ns"] for x in s.fio],
                "fio_lat_p99_ns_samples": [x["lat_p99_ns"] for x in s.fio],
                "aiobench_samples": a,
                "fio_samples": f,
                "aiobench_ops": [x["ops"] for x in s.aiobench],
                "fio_ops": [x["ops"] for x in s.fio],
                "aiobench_first_done_samples": [x["first_done_" + w.metric] for x in s.aiobench],
                "aiobench_elapsed_s": [x["elapsed_s"] for x in s.aiobench],
                "fio_elapsed_s": [x["elapsed_s"] for x in s.fio],
                "aiobench_foreign_load": [x["foreign_load"] for x in s.aiobench],
                "fio_foreign_load": [x["foreign_load"] for x in s.fio],
                "aiobench_attempts": [x["attempts"] for x in s.aiobench],
                "fio_attempts": [x["attempts"] for x in s.fio],
            }
        )
    return rows


def scaling_rows(rows: list[Row]) -> list[Row]:
    """aiobench's (and fio's) 4 KiB -t 2 / -t 1 figures."""
    by_key = {row["workload"]: row for row in rows}
    out = []
    for one, two, target in SCALING_PAIRS:
        if one not in by_key or two not in by_key:
            continue
        r1, r2 = by_key[one], by_key[two]
        ratio = ratio_of(r2["aiobench"], r1["aiobench"])
        out.append(
            {
                "title": WORKLOAD[one].title,
                "one": one,
                "two": two,
                "aiobench": {"t1": r1["aiobench"], "t2": r2["aiobench"]},
                "fio": {"t1": r1["fio"], "t2": r2["fio"]},
                "ratio": ratio,
                "fio_ratio": ratio_of(r2["fio"], r1["fio"]),
                "target": target,
                "met": None if target is None or ratio != ratio else ratio >= target,
            }
        )
    return out


def data_targets(rows: list[Row]) -> list[Row]:
    targets = []
    for row in rows:
        w = WORKLOAD[row["workload"]]
        fmt = functools.partial(fmt_figure, w)
        targets.append(
            target_row("data", w.label, row["aiobench"], row["fio"], "fio", fmt, ">=", w.target)
        )
        cpu = row["cpu_per_op_ns"]
        targets.append(
            target_row(
                "data",
                f"{w.label}: CPU/op",
                cpu["aiobench"],
                cpu["fio"],
                "fio",
                fmt_ns,
                "<=",
                CPU_TARGET,
            )
        )
        p99 = row["p99_ns"]
        targets.append(
            target_row(
                "data",
                f"{w.label}: p99 latency",
                p99["aiobench"],
                p99["fio"],
                "fio",
                fmt_ns,
                "<=",
                P99_TARGET,
            )
        )
    for sc in scaling_rows(rows):
        if sc["target"] is None:
            continue
        w = WORKLOAD[sc["two"]]
        targets.append(
            target_row(
                "data",
                f"{sc['title']}: -t 2 / -t 1",
                sc["aiobench"]["t2"],
                sc["aiobench"]["t1"],
                "aiobench -t 1",
                functools.partial(fmt_figure, w),
                ">=",
                sc["target"],
            )
        )
    return targets


def print_markdown(rows: list[Row], meta: Row) -> None:
    print("## aiobench vs fio, page cache, 1 and 2 threads / jobs")
    print()
    print_environment(meta)
    print(
        f"- Files: 2 x {size_arg(meta['size'])} of random data on {meta['fs']}, "
        "page-cached (sync + re-read right before every run)"
    )
    print(
        f"- Runs: time-based, {meta['runtime']} s each (aiobench --timelimit: 4 KiB with "
        f"--randamount {RANDAMOUNT}, 1 MiB with --infloop; fio --time_based), {meta['repeats']} "
        "runs per tool and workload; 1 MiB: one thread / job per file; tools interleaved "
        "(ABBA) after one discarded warm-up run each; figures are medians"
    )
    print(
        '- aiobench: LAST DONE totals; p99 = phases[0].latency.io.percentiles_ns["99"]; '
        "CPU/op = (user + system CPU time of the process, from wait4, less the median CPU time "
        "of a one-block run of the same command, i.e. its start-up) / LAST DONE ops"
    )
    print(
        "- fio (psync, --thread, --iomem_align=4096 --invalidate=0, writes --fallocate=none): "
        "group_reporting iops / bw_bytes; p99 = clat_ns percentile 99.000000 (a sync engine "
        "has no submission phase, slat is empty: clat is the whole pread/pwrite); CPU/op = "
        "(usr_cpu + sys_cpu) % x job_runtime / total_ios, fio's own per-thread getrusage "
        "summed over its jobs (its start-up and main thread not included)"
    )
    print("- ratio = aiobench / fio")
    print()
    print(
        "| workload | -t | aiobench | fio | ratio | target | met? "
        f"| CPU/op aiobench | CPU/op fio | ratio | met? (<= {CPU_TARGET:.2f}x) "
        f"| p99 aiobench | p99 fio | ratio | met? (<= {P99_TARGET:.2f}x) |"
    )
    print("|---|---:|---:|---:|---:|---:|:---:|---:|---:|---:|:---:|---:|---:|---:|:---:|")
    for row in rows:
        w = WORKLOAD[row["workload"]]
        cpu, p99 = row["cpu_per_op_ns"], row["p99_ns"]
        print(
            f"| {w.title} | {w.threads} | {fmt_figure(w, row['aiobench'])} "
            f"| {fmt_figure(w, row['fio'])} | {fmt_ratio(row['ratio'])} "
            f"| {fmt_target('>=', w.target)} | {fmt_met(row['met'])} "
            f"| {fmt_ns(cpu['aiobench'])} | {fmt_ns(cpu['fio'])} | {fmt_ratio(row['cpu_ratio'])} "
            f"| {fmt_met(row['cpu_met'])} "
            f"| {fmt_ns(p99['aiobench'])} | {fmt_ns(p99['fio'])} | {fmt_ratio(row['p99_ratio'])} "
            f"| {fmt_met(row['p99_met'])} |"
        )
    scaling = scaling_rows(rows)
    if scaling:
        print()
        print("Scaling from 1 to 2 threads / jobs (-t 2 figure / -t 1 figure):")
        print()
        print(
            "| workload | aiobench -t 1 | aiobench -t 2 | ratio | target | met? "
            "| fio numjobs=1 | fio numjobs=2 | fio ratio |"
        )
        print("|---|---:|---:|---:|---:|:---:|---:|---:|---:|")
        for sc in scaling:
            w = WORKLOAD[sc["two"]]
            a, f = sc["aiobench"], sc["fio"]
            print(
                f"| {sc['title']} | {fmt_figure(w, a['t1'])} | {fmt_figure(w, a['t2'])} "
                f"| {fmt_ratio(sc['ratio'])} | {fmt_target('>=', sc['target'])} "
                f"| {fmt_met(sc['met'])} | {fmt_figure(w, f['t1'])} | {fmt_figure(w, f['t2'])} "
                f"| {fmt_ratio(sc['fio_ratio'])} |"
            )
    print()
    print(
        "Spread between runs ((max - min) / median), all kept runs in run order, and the "
        "largest share of CPU time used by other processes (or stolen) during a kept run "
        f"(runs above {meta['max_load']:.0%}, with a read's files dropped from the cache or "
        f"with the tool stalled, below {MIN_TOOL_CPU[1]:.0%} of its CPU at -t 1 or "
        f"{MIN_TOOL_CPU_MANY:.0%} at -t 2, were retried up to {meta['retries']} times, "
        f"{meta['retried']} retries in all):"
    )
    print()
    print(
        "| workload | -t | tool | spread | runs | p99 of each run | CPU/op of each run "
        "| other load (max) |"
    )
    print("|---|---:|---|---:|---|---|---|---:|")
    for row in rows:
        w = WORKLOAD[row["workload"]]
        for tool in ("aiobench", "fio"):
            values = row[f"{tool}_samples"]
            scale = 1e3 if w.metric == "iops" else MIB
            unit = "k IOPS" if w.metric == "iops" else "MiB/s"
            listed = ", ".join(f"{v / scale:,.0f}" for v in values)
            p99s = ", ".join(fmt_ns(v) for v in row[f"{tool}_p99_ns_samples"])
            cpus = ", ".join(fmt_ns(v) for v in row[f"{tool}_cpu_per_op_ns_samples"])
            load = max(row[f"{tool}_foreign_load"])
            print(
                f"| {w.title} | {w.threads} | {tool} | {spread(values)} | {listed} {unit} "
                f"| {p99s} | {cpus} | {load:.0%} |"
            )
    print()
    startups = ", ".join(
        f"{WORKLOAD[row['workload']].label} {row['aiobench_startup_cpu_s']:.2f} s" for row in rows
    )
    print(
        "aiobench start-up CPU time subtracted (median of the one-block runs, one after each "
        f"measured run): {startups}. fio's whole process for comparison (wait4, start-up "
        "and main thread included), CPU/op: "
        + ", ".join(
            f"{WORKLOAD[row['workload']].label} {fmt_ns(row['fio_process_cpu_per_op_ns'])}"
            for row in rows
        )
        + "."
    )
    print()
    print("Commands (DIR = the temporary work directory):")
    print()
    print("```")
    for w in WORKLOADS:
        print(f"# {w.label}")
        print(meta["commands"][w.key]["aiobench"])
        print(f"# {w.label}: aiobench start-up run (CPU time only)")
        print(meta["commands"][w.key]["aiobench_startup"])
        print(meta["commands"][w.key]["fio"])
    print("```")


def data_files(workdir: str, size: int) -> list[str]:
    """The two files of ``size`` random bytes in ``workdir``, laid out unless already there."""
    files = [os.path.join(workdir, name) for name in FILE_NAMES]
    for path in files:
        if not os.path.exists(path) or os.path.getsize(path) != size:
            log(f"laying out {path} ({size_arg(size)} random data)")
            lay_out(path, size)
    return files


def data_stalled(w: Workload, fig: Figures) -> bool:
    """The tool used too little CPU for page-cache I/O (every run is time-based: long
    enough for the tool's start-up not to count)."""
    return fig["tool_cpu"] < MIN_TOOL_CPU.get(w.threads, MIN_TOOL_CPU_MANY)


def data_faults(w: Workload, fig: Figures) -> tuple[bool, bool]:
    """(files dropped from the cache during a read, tool stalled) of a data-section run."""
    dropped = not w.write and fig["resident"] < 0.99  # nan (no mincore): not dropped
    return dropped, data_stalled(w, fig)


def run_once(
    w: Workload, tool: str, files: list[str], argv: list[str], startup: list[str] | None = None
) -> Figures:
    """One run of one tool: warm the cache, run, read its figures and how clean it was; then,
    given a ``startup`` command (aiobench's one-block run), run that too for its CPU time."""
    out = argv[argv.index("--json") + 1] if tool == "aiobench" else argv[-1].split("=", 1)[1]
    if tool == "aiobench":
        figures = aiobench_figures
    else:
        figures = functools.partial(fio_figures, write=w.write)
    fig, run = cached_run(argv, tool, files, out, figures)
    # Page-cache I/O keeps every thread/job on a CPU; a run that used much less was
    # stalled by something outside the tool (seen on this VM: fio at 25-60 k IOPS with idle
    # CPUs for a while after the files were laid out).
    fig["tool_cpu"] = run.tool_cpu_s / max(run.wall_s, 1e-9) / w.threads
    fig["process_cpu_s"] = run.tool_cpu_s  # the whole process (wait4), start-up included
    if startup is not None:
        fig["startup_cpu_s"] = run_metered(startup, f"{tool} start-up run").tool_cpu_s
    return fig


def run_checked(
    args: argparse.Namespace,
    w: Workload,
    tool: str,
    files: list[str],
    argv: list[str],
    startup: list[str] | None = None,
) -> Figures:
    """Run until the run was clean (little foreign CPU load, files still cached after a
    read, tool not stalled), at most 1 + --retries times; keep the cleanest attempt."""
    return keep_cleanest(
        args,
        functools.partial(run_once, w, tool, files, argv, startup),
        functools.partial(data_faults, w),
    )


def log_warm_up(w: Workload, tool: str, fig: Figures) -> None:
    log(
        f"{w.label:28} warm-up  {tool:8} {fmt_figure(w, fig[w.metric]):>16}"
        f"  tool CPU {fig['tool_cpu']:4.0%} (discarded)"
    )


def log_data_run(w: Workload, tool: str, label: str, fig: Figures) -> None:
    cpu = ""
    if "startup_cpu_s" in fig:
        cpu = f"  CPU {fig['process_cpu_s']:.2f} s - start-up {fig['startup_cpu_s']:.2f} s"
    elif fig.get("cpu_s") == fig.get("cpu_s"):
        cpu = f"  CPU {fig['cpu_s']:.2f} s (fio's own)"
    log(
        f"{w.label:28} {label} {tool:8} {fmt_figure(w, fig[w.metric]):>16}"
        f"  p99 {fmt_ns(fig['p99_ns']):>8}{cpu}"
        f"  other load {fig['foreign_load']:4.0%}  tool CPU {fig['tool_cpu']:4.0%}"
        f"  cached after {fig['resident']:.0%}"
        + (f"  ({fig['attempts']} attempts)" if fig["attempts"] > 1 else "")
    )


def measure(
    args: argparse.Namespace, workdir: str, aiobench_exe: list[str], fio_exe: str
) -> tuple[dict[str, Samples], Row]:
    files = data_files(workdir, args.size)
    a_out = os.path.join(workdir, "aiobench.json")
    f_out = os.path.join(workdir, "fio.json")
    results = {w.key: Samples() for w in WORKLOADS}
    commands: dict[str, dict[str, str]] = {}
    for w in WORKLOADS:
        a_argv = aiobench_argv(aiobench_exe, w, files, args.size, args.runtime, a_out)
        s_argv = startup_argv(aiobench_exe, w, files, args.size, a_out)
        f_argv = fio_argv(fio_exe, w, workdir, args.size, args.runtime, f_out)
        commands[w.key] = {
            "aiobench": shlex.join(a_argv).replace(workdir, "DIR"),
            "aiobench_startup": shlex.join(s_argv).replace(workdir, "DIR"),
            "fio": shlex.join(f_argv).replace(workdir, "DIR"),
        }
        # One discarded warm-up run per tool first: right after the files are laid out
        # (and after switching between reading and writing) the first runs on this VM are
        # several times slower for either tool (blocked, not CPU-bound) and recover over
        # a few seconds of I/O.
        warm_t = min(args.runtime, 3)
        for tool, argv in (
            ("aiobench", aiobench_argv(aiobench_exe, w, files, args.size, warm_t, a_out)),
            ("fio", fio_argv(fio_exe, w, workdir, args.size, warm_t, f_out)),
        ):
            # Time-based runs repeat the warm-up until the tool is CPU-bound.
            warm_up(
                functools.partial(run_once, w, tool, files, argv),
                functools.partial(data_stalled, w),
                functools.partial(log_warm_up, w, tool),
                args.warmup_max,
            )
        runs = args.repeats
        for i in range(runs):
            order = ("aiobench", "fio") if i % 2 == 0 else ("fio", "aiobench")
            for tool in order:
                if tool == "aiobench":
                    fig = run_checked(args, w, tool, files, a_argv, s_argv)
                else:
                    fig = run_checked(args, w, tool, files, f_argv)
                getattr(results[w.key], tool).append(fig)
                log_data_run(w, tool, f"run {i + 1}/{runs}", fig)
    os.sync()
    return results, commands


def data_meta(
    args: argparse.Namespace, results: dict[str, Samples], commands: dict[str, dict[str, str]]
) -> Row:
    return {
        "size": args.size,
        "repeats": args.repeats,
        "runtime": args.runtime,
        "randamount": RANDAMOUNT,
        "retried": sum(
            int(run["attempts"]) - 1
            for samples in results.values()
            for run in (*samples.aiobench, *samples.fio)
        ),
        "commands": commands,
    }
