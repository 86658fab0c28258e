"""The metadata section: create / stat / delete rates against a plain loop and fio.

Create / stat / delete rates of many empty files, in fresh subdirectories of the same work
directory: aiobench's dir mode at -t 1 and -t 2, against the interpreter's own ceiling (a
plain loop making the same syscalls on one thread) and, for reference, fio's file-operation
engines with 2 jobs.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
from dataclasses import dataclass, replace

from aiobench_bench.common import NAN, THREADS, Doc, Row, ToolError, log, median_or_nan, ratio_of
from aiobench_bench.procs import Metered, load_json, run_metered, run_tool, wait_quiet
from aiobench_bench.report import (
    fmt_met,
    fmt_rate,
    fmt_ratio,
    fmt_target,
    print_environment,
    spread,
    target_row,
)
from aiobench_bench.results import note_engine

MD_OPS = ("create", "stat", "delete")
# The aiobench phase measuring each operation: one dir-mode run (-d -w --stat -F -D -s 0) has
# them all; WRITE with -s 0 is open(O_CREAT) + close per file.
MD_PHASES = {"create": "WRITE", "stat": "STAT", "delete": "RMFILES"}
# fio's engines for the same calls (engines/fileoperations.c; filecreate: open(O_CREAT) +
# close, filestat: stat, filedelete: unlink, each timed on its own).
MD_FIO_ENGINES = {"create": "filecreate", "stat": "filestat", "delete": "filedelete"}


@dataclass(frozen=True)
class MdTool:
    key: str
    title: str
    threads: int
    # Issue #13's targets: operation -> minimum ratio to the plain one-thread loop.
    targets: tuple[tuple[str, float], ...] = ()

    def target(self, op: str) -> float | None:
        return dict(self.targets).get(op)


MD_LOOP = MdTool("loop", "plain loop", 1)
MD_LOOP_THREADS = MdTool("loop-t2", f"plain loop {THREADS} threads", THREADS)
MD_LOOPS = (MD_LOOP, MD_LOOP_THREADS)
MD_FIO = MdTool("fio", "fio 2 jobs", THREADS)
MD_T1 = MdTool("aiobench-t1", "aiobench -t1", 1, targets=(("stat", 1.3), ("delete", 1.3)))
MD_T2 = MdTool("aiobench-t2", f"aiobench -t{THREADS}", THREADS)
MD_TOOLS = (MD_LOOP, MD_LOOP_THREADS, MD_T1, MD_T2, MD_FIO)
MD_AIOBENCH = (MD_T1, MD_T2)
# aiobench's own scaling: -t 2 at least this multiple of -t 1 (operation -> target).
MD_SCALING_TARGETS = {"stat": 1.6}

# The interpreter's own ceiling: aiobench's dir-mode syscalls (same flags, mode, dir_fd and
# relative names) in plain loops, names built before the clock starts; run as
# `python -c CODE RUNDIR FILES THREADS` so it gets a fresh interpreter, like aiobench. The
# targets are against one thread; the same loop on 2 threads shows what a second thread in
# one interpreter can add at all.
MD_LOOP_CODE = """\
import json, os, sys, threading, time


def main(root, count, threads):
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    per = count // threads
    names = []
    for r in range(threads):
        os.makedirs(os.path.join(root, f"r{r}", "d0"))
        names.append([f"r{r}/d0/r{r}-f{j}" for j in range(per)])
    flags = os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC
    open_, close, stat, unlink = os.open, os.close, os.stat, os.unlink

    def create(part):
        for name in part:
            close(open_(name, flags, 0o666, dir_fd=fd))

    def stat_all(part):
        for name in part:
            stat(name, dir_fd=fd)

    def delete(part):
        for name in part:
            unlink(name, dir_fd=fd)

    rates = {}
    for op, loop in (("create", create), ("stat", stat_all), ("delete", delete)):
        workers = [threading.Thread(target=loop, args=(part,)) for part in names[1:]]
        t0 = time.perf_counter()
        for worker in workers:
            worker.start()
        loop(names[0])  # one thread: the main thread alone, no thread started
        for worker in workers:
            worker.join()
        rates[op] = count / (time.perf_counter() - t0)
    os.close(fd)
    print(json.dumps({"rates": rates, "python": sys.version.split()[0]}))


main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
"""


@dataclass(frozen=True)
class MdSetup:
    aiobench: list[str]
    fio: str | None
    python: str
    files: int  # per run, over all threads / jobs
    workdir: str
    engines: dict[str, bool]  # fio engine name -> available in this fio


@dataclass(frozen=True)
class MdRun:
    rates: dict[str, float]  # operation -> files/s; NAN = not measured
    foreign_load: float
    kernel_share: float  # system / all CPU time of the tool: near 1 = the kernel's pace
    python: str = ""  # interpreter version the tool ran on, where it says
    attempts: int = 1


def fio_engines(fio: str | None) -> dict[str, bool]:
    """Which of fio's file-operation engines this fio has (``fio --enghelp`` lists them)."""
    listed = set(run_tool([fio, "--enghelp"], "fio --enghelp").split()) if fio else set()
    return {name: name in listed for name in MD_FIO_ENGINES.values()}


def md_aiobench_argv(setup: MdSetup, threads: int, rundir: str, out: str) -> list[str]:
    per_thread = str(setup.files // threads)
    return [
        *setup.aiobench,
        *("-d", "-w", "--stat", "-F", "-D", "-t", str(threads), "-n", "1", "-N", per_thread),
        *("-s", "0", rundir, "--json", out),
    ]


def md_fio_argv(setup: MdSetup, op: str, rundir: str, out: str) -> list[str]:
    # One job per aiobench thread with aiobench's names: job N uses rN/d0/rN-f<j>.
    # filesize = bs = 4k only makes fio count one (fake, never issued) I/O per file: no data
    # is written, the files stay empty. create_on_open keeps fio from laying the files out
    # (writing them) before filestat/filedelete. file_service_type=sequential: fio's default
    # round-robin file selection costs O(nrfiles) per file (2-5 k files/s on any filesystem).
    assert setup.fio is not None
    return [
        setup.fio,
        f"--name=md-{op}",
        f"--ioengine={MD_FIO_ENGINES[op]}",
        f"--numjobs={THREADS}",
        f"--nrfiles={setup.files // THREADS}",
        "--filename_format=r$jobnum/d0/r$jobnum-f$filenum",
        "--filesize=4k",
        "--bs=4k",
        "--openfiles=1",
        "--create_on_open=1",
        "--fallocate=none",
        "--file_service_type=sequential",
        "--group_reporting",
        f"--directory={rundir}",
        "--output-format=json",
        f"--output={out}",
    ]


def md_loop_argv(setup: MdSetup, rundir: str, threads: int) -> list[str]:
    return [setup.python, "-c", MD_LOOP_CODE, rundir, str(setup.files), str(threads)]


def md_aiobench_rates(doc: Doc, files: int) -> dict[str, float]:
    """LAST DONE entries_per_s (all threads finished) of each operation's phase."""
    if doc.get("error"):
        raise ToolError(f"aiobench reported an error: {doc['error']}")
    note_engine(doc)
    done = {phase["phase"]: phase["last_done"] for phase in doc["phases"]}
    rates = {}
    for op, phase in MD_PHASES.items():
        last = done.get(phase)
        if last is None or last["entries"] != files:
            raise ToolError(f"aiobench: {phase} phase missing or short of {files} files")
        rates[op] = float(last["entries_per_s"])
    return rates


def md_fio_rate(doc: Doc, files: int) -> float:
    """Files/s of a file-operation engine run.

    These engines make their syscall in the file-open hook (timed as clat, one sample per
    file), then fio counts one fake read of filesize = bs per file: so total_ios = files,
    and the group's iops = files / runtime of the slowest job, i.e. files/s over all jobs,
    as aiobench's LAST DONE. That runtime is in whole milliseconds: a stat run of 20000 files
    lasts ~50-100 ms, so the figure is good to a few percent only.
    """
    jobs = doc.get("jobs") or []
    if len(jobs) != 1:
        raise ToolError(f"fio: expected one group-reported job, got {len(jobs)}")
    job = jobs[0]
    if job.get("error"):
        raise ToolError(f"fio reported error {job['error']}")
    side = job["read"]
    if side.get("total_ios") != files:
        raise ToolError(f"fio: {side.get('total_ios')} files done instead of {files}")
    return float(side["iops"])


def md_run_loop(setup: MdSetup, rundir: str, tool: MdTool) -> MdRun:
    run = run_metered(md_loop_argv(setup, rundir, tool.threads), tool.title)
    try:
        doc = json.loads(run.stdout)
    except json.JSONDecodeError as exc:
        raise ToolError(f"{tool.title}: unreadable output ({exc})") from None
    rates = {op: float(doc["rates"][op]) for op in MD_OPS}
    return MdRun(rates, run.foreign_load, kernel_share([run]), doc["python"])


def md_run_aiobench(setup: MdSetup, threads: int, rundir: str, out: str) -> MdRun:
    label = f"aiobench -t{threads}"
    run = run_metered(md_aiobench_argv(setup, threads, rundir, out), label)
    doc = load_json(out, label)
    python = str(doc.get("meta", {}).get("python", ""))
    rates = md_aiobench_rates(doc, setup.files)
    return MdRun(rates, run.foreign_load, kernel_share([run]), python)


def md_run_fio(setup: MdSetup, rundir: str, out: str) -> MdRun:
    """filecreate, filestat, filedelete back to back on the same files (no sync between,
    as inside one aiobench run); an engine this fio lacks is reported as NAN."""
    # filecreate is a diskless engine: fio creates no directories for it.
    for rank in range(THREADS):
        os.makedirs(os.path.join(rundir, f"r{rank}", "d0"))
    if not setup.engines[MD_FIO_ENGINES["create"]]:
        make_fio_files(setup, rundir)  # untimed: filestat/filedelete need the files
    rates, runs = {}, []
    for op in MD_OPS:
        engine = MD_FIO_ENGINES[op]
        if not setup.engines[engine]:
            rates[op] = NAN
            continue
        if os.path.exists(out):
            os.unlink(out)
        run = run_metered(md_fio_argv(setup, op, rundir, out), f"fio {engine}")
        rates[op] = md_fio_rate(load_json(out, f"fio {engine}"), setup.files)
        runs.append(run)
    return MdRun(rates, max((r.foreign_load for r in runs), default=0.0), kernel_share(runs))


def kernel_share(runs: list[Metered]) -> float:
    total = sum(r.tool_cpu_s for r in runs)
    return sum(r.tool_sys_s for r in runs) / total if total else NAN


def make_fio_files(setup: MdSetup, rundir: str) -> None:
    for rank in range(THREADS):
        for j in range(setup.files // THREADS):
            name = os.path.join(rundir, f"r{rank}", "d0", f"r{rank}-f{j}")
            os.close(os.open(name, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o666))


def md_once(args: argparse.Namespace, setup: MdSetup, tool: MdTool, label: str) -> MdRun:
    """One run of one tool in a fresh run directory, removed afterwards."""
    rundir = os.path.join(setup.workdir, f"md-{label}-{tool.key}")
    out = os.path.join(setup.workdir, "md-result.json")
    if os.path.exists(out):
        os.unlink(out)
    os.mkdir(rundir)
    try:
        wait_quiet(args.quiet_wait, args.max_load)
        os.sync()  # no writeback of earlier runs' metadata while this one is measured
        if tool in MD_LOOPS:
            return md_run_loop(setup, rundir, tool)
        if tool is MD_FIO:
            return md_run_fio(setup, rundir, out)
        return md_run_aiobench(setup, tool.threads, rundir, out)
    finally:
        shutil.rmtree(rundir, ignore_errors=True)


def md_checked(args: argparse.Namespace, setup: MdSetup, tool: MdTool, label: str) -> MdRun:
    """Repeat a run during which other processes used more than --max-load of all CPUs, at
    most --retries times (as the data section); keep the cleanest attempt."""
    attempts = []
    for n in range(1 + args.retries):
        attempts.append(md_once(args, setup, tool, f"{label}-{n}"))
        if attempts[-1].foreign_load < args.max_load:
            break
    return replace(min(attempts, key=lambda run: run.foreign_load), attempts=len(attempts))


def md_commands(setup: MdSetup) -> dict[str, list[str]]:
    """The commands of one run of each tool (RUN = its run directory)."""
    out = "RESULT.json"
    fio = [
        shlex.join(md_fio_argv(setup, op, "RUN", out))
        for op in MD_OPS
        if setup.engines[MD_FIO_ENGINES[op]]
    ]
    return {
        **{
            t.key: [f'{shlex.quote(setup.python)} -c "$LOOP" RUN {setup.files} {t.threads}']
            for t in MD_LOOPS
        },
        **{
            t.key: [shlex.join(md_aiobench_argv(setup, t.threads, "RUN", out))] for t in MD_AIOBENCH
        },
        MD_FIO.key: fio or ["(no file-operation engine in this fio)"],
    }


def md_log(tool: MdTool, label: str, run: MdRun) -> None:
    rates = "  ".join(f"{op} {fmt_rate(run.rates[op]):>11}" for op in MD_OPS)
    log(
        f"metadata {label:12} {tool.title:13} {rates}  other load {run.foreign_load:4.0%}"
        f"  kernel CPU {run.kernel_share:4.0%}"
        + (f"  ({run.attempts} attempts)" if run.attempts > 1 else "")
    )


def measure_metadata(
    args: argparse.Namespace, workdir: str, aiobench_exe: list[str], fio_exe: str | None
) -> tuple[dict[str, list[MdRun]], Row]:
    setup = MdSetup(
        aiobench=aiobench_exe,
        fio=fio_exe,
        python=args.python,
        files=args.md_files,
        workdir=workdir,
        engines=fio_engines(fio_exe),
    )
    for engine, ok in setup.engines.items():
        if not ok:
            log(f"metadata: fio engine {engine} unavailable, reported as n/a")
    # One discarded run per tool first (cold interpreter files, first use of the work dir).
    for tool in MD_TOOLS:
        md_log(tool, "warm-up", md_once(args, setup, tool, "warmup"))
    samples: dict[str, list[MdRun]] = {t.key: [] for t in MD_TOOLS}
    for i in range(args.md_rounds):
        # Interleaved, and the order reverses every other round (ABBA): no tool always
        # follows the same one (on a no-journal ext4, creates after many recent deletes
        # are slower).
        for tool in MD_TOOLS if i % 2 == 0 else MD_TOOLS[::-1]:
            run = md_checked(args, setup, tool, f"round{i + 1}")
            samples[tool.key].append(run)
            md_log(tool, f"round {i + 1}/{args.md_rounds}", run)
    os.sync()
    meta = {
        "files": setup.files,
        "rounds": args.md_rounds,
        "fio_engines": setup.engines,
        "loop_python": samples[MD_LOOP.key][0].python,
        "aiobench_python": samples[MD_AIOBENCH[0].key][0].python,
        "retried": sum(run.attempts - 1 for runs in samples.values() for run in runs),
        "kernel_share": {
            t.key: median_or_nan([run.kernel_share for run in samples[t.key]]) for t in MD_TOOLS
        },
        "commands": md_commands(setup),
        "loop_code": MD_LOOP_CODE,
    }
    return samples, meta


def md_summarise(samples: dict[str, list[MdRun]]) -> list[Row]:
    rows = []
    for op in MD_OPS:
        values = {t.key: [run.rates[op] for run in samples[t.key]] for t in MD_TOOLS}
        med = {key: median_or_nan(v) for key, v in values.items()}
        loop, fio = med[MD_LOOP.key], med[MD_FIO.key]
        to_loop = {t.key: ratio_of(med[t.key], loop) for t in MD_AIOBENCH}
        scaling = ratio_of(med[MD_T2.key], med[MD_T1.key])
        scaling_target = MD_SCALING_TARGETS.get(op)
        met = {}
        for t in MD_AIOBENCH:
            target = t.target(op)
            ok = to_loop[t.key] == to_loop[t.key]
            met[t.key] = None if target is None or not ok else to_loop[t.key] >= target
        rows.append(
            {
                "operation": op,
                "median": med,
                "min": {key: min(v) for key, v in values.items()},
                "max": {key: max(v) for key, v in values.items()},
                "ratio_to_loop": to_loop,
                "ratio_to_fio": {t.key: ratio_of(med[t.key], fio) for t in MD_AIOBENCH},
                "target": {t.key: t.target(op) for t in MD_AIOBENCH},
                "met": met,
                "scaling": scaling,  # aiobench -t 2 / aiobench -t 1
                "scaling_target": scaling_target,
                "scaling_met": (
                    None
                    if scaling_target is None or scaling != scaling
                    else scaling >= scaling_target
                ),
                "samples": values,
                "foreign_load": {
                    t.key: [run.foreign_load for run in samples[t.key]] for t in MD_TOOLS
                },
            }
        )
    return rows


def md_targets(rows: list[Row]) -> list[Row]:
    targets = []
    for row in rows:
        op, med = row["operation"], row["median"]
        loop = med[MD_LOOP.key]
        targets += [
            target_row(
                "metadata",
                f"{op}, {t.title}",
                med[t.key],
                loop,
                "plain loop",
                fmt_rate,
                ">=",
                row["target"][t.key],
            )
            for t in MD_AIOBENCH
            if row["target"][t.key] is not None
        ]
        if row["scaling_target"] is not None:
            targets.append(
                target_row(
                    "metadata",
                    f"{op}, {MD_T2.title} / {MD_T1.title}",
                    med[MD_T2.key],
                    med[MD_T1.key],
                    MD_T1.title,
                    fmt_rate,
                    ">=",
                    row["scaling_target"],
                )
            )
    return targets


def print_md_markdown(rows: list[Row], meta: Row) -> None:
    md = meta["metadata"]
    t1, t2 = MD_AIOBENCH
    print(f"## Metadata: aiobench dir mode vs a plain Python loop (and fio), {md['files']} files")
    print()
    print_environment(meta)
    if md["loop_python"] != md["aiobench_python"]:
        print(
            f"- **Interpreters differ**: plain loop on Python {md['loop_python']}, "
            f"aiobench on {md['aiobench_python']}"
        )
    print(
        f"- Work dir on {meta['fs']}; every run in a fresh subdirectory (removed afterwards), "
        f"`sync` right before it; {md['files']} empty files per run: 1 thread = r0/d0/r0-f<j>, "
        f"{THREADS} threads / jobs = {md['files'] // THREADS} each in r<r>/d0"
    )
    print(
        f"- Runs: one discarded warm-up run per tool, then {md['rounds']} rounds with the tools "
        "interleaved, order reversed every other round; figures are medians, in k/s = "
        "thousand files per second"
    )
    print(
        "- plain loop: files / time.perf_counter time of each loop (same syscalls; 1 thread, "
        f"and {THREADS} threads for comparison); "
        "aiobench: LAST DONE entries_per_s of WRITE (-s 0 = create), STAT, RMFILES; "
        f"fio: group iops (= files/s) of {', '.join(MD_FIO_ENGINES.values())} with "
        f"numjobs={THREADS}"
    )
    goals = [
        f"{op} {t.title} >= {target:.2f}x plain loop"
        for t in MD_AIOBENCH
        for op, target in t.targets
    ] + [
        f"{op} {MD_T2.title} >= {target:.2f}x {MD_T1.title}"
        for op, target in MD_SCALING_TARGETS.items()
    ]
    print(f"- Targets (issue #13, on tmpfs): {'; '.join(goals)}")
    if meta["fs"] != "tmpfs":
        print(f"- **Not on tmpfs** ({meta['fs']}): the targets are defined on tmpfs")
    print()
    print(
        f"| operation | plain loop | {t1.title} | ratio | {t2.title} | ratio "
        f"| {t2.title} / {t1.title} | {MD_LOOP_THREADS.title} | fio 2 jobs | {t2.title} / fio "
        "| targets met? |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|")
    for row in rows:
        med, ratio = row["median"], row["ratio_to_loop"]
        met = [
            f"{t.title} {fmt_target('>=', row['target'][t.key])}: {fmt_met(row['met'][t.key])}"
            for t in MD_AIOBENCH
            if row["target"][t.key] is not None
        ]
        if row["scaling_target"] is not None:
            met.append(
                f"-t2/-t1 {fmt_target('>=', row['scaling_target'])}: {fmt_met(row['scaling_met'])}"
            )
        print(
            f"| {row['operation']} | {fmt_rate(med[MD_LOOP.key])} "
            f"| {fmt_rate(med[t1.key])} | {fmt_ratio(ratio[t1.key])} "
            f"| {fmt_rate(med[t2.key])} | {fmt_ratio(ratio[t2.key])} "
            f"| {fmt_ratio(row['scaling'])} "
            f"| {fmt_rate(med[MD_LOOP_THREADS.key])} "
            f"| {fmt_rate(med[MD_FIO.key])} | {fmt_ratio(row['ratio_to_fio'][t2.key])} "
            f"| {'; '.join(met) or '-'} |"
        )
    print()
    print(
        "Spread: min - max and (max - min) / median of the runs, the runs in run order "
        "(k files/s), and the largest share of CPU time used by other processes (or stolen) "
        f"during a kept run (runs above {meta['max_load']:.0%} were retried up to "
        f"{meta['retries']} times, {md['retried']} retries in all):"
    )
    print()
    print("| operation | tool | median | min - max | spread | runs | other load (max) |")
    print("|---|---|---:|---:|---:|---|---:|")
    for row in rows:
        for t in MD_TOOLS:
            values = row["samples"][t.key]
            if median_or_nan(values) != median_or_nan(values):
                print(f"| {row['operation']} | {t.title} | n/a | - | - | - | - |")
                continue
            span = f"{fmt_rate(row['min'][t.key])} - {fmt_rate(row['max'][t.key])}"
            listed = ", ".join(f"{v / 1e3:,.1f}" for v in values)
            load = max(row["foreign_load"][t.key])
            print(
                f"| {row['operation']} | {t.title} | {fmt_rate(row['median'][t.key])} | {span} "
                f"| {spread(values)} | {listed} | {load:.0%} |"
            )
    print()
    shares = ", ".join(
        f"{t.title} {md['kernel_share'][t.key]:.0%}"
        for t in MD_TOOLS
        if md["kernel_share"][t.key] == md["kernel_share"][t.key]
    )
    print(
        "Share of each tool's CPU time (whole processes, start-up included) spent in the "
        "kernel, median of its runs (near 100%: the filesystem, not the tool, sets the pace): "
        f"{shares}."
    )
    print()
    print("Commands of one run (RUN = its fresh run directory; LOOP = the code below):")
    print()
    print("```")
    for t in MD_TOOLS:
        print(f"# {t.title}")
        for command in md["commands"][t.key]:
            print(command)
    print("```")
    print()
    print("```python")
    print(md["loop_code"].rstrip())
    print("```")
