"""The seed2 section: elbencho's seed command 2 on a loop device against fio libaio.

elbencho's seed command 2 (4 KiB random reads, 16 threads x iodepth 16, O_DIRECT) on a real
block device: a loop device with direct I/O over a file in a tmpfs, against fio's libaio
with 16 jobs x iodepth 16.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass

from aiobench_bench.common import (
    MIB,
    RANDAMOUNT,
    Figures,
    Row,
    ToolError,
    Unavailable,
    Workload,
    first_line,
    log,
    median_of,
    ratio_of,
    size_arg,
)
from aiobench_bench.host import fs_type, lay_out
from aiobench_bench.procs import (
    keep_cleanest,
    load_json,
    no_faults,
    run_metered,
    run_tool,
    signals_held,
    warm_up,
)
from aiobench_bench.report import (
    fmt_figure,
    fmt_met,
    fmt_ns,
    fmt_ratio,
    fmt_target,
    print_environment,
    target_row,
)
from aiobench_bench.results import aiobench_figures, fio_figures

SEED2_THREADS = 16
SEED2_IODEPTH = 16
SEED2_IOPS_TARGET = 0.90  # aiobench IOPS at least this multiple of fio's
SEED2_P99_TARGET = 1.2  # aiobench p99 at most this multiple of fio's
SEED2_TOOLS = ("aiobench", "fio")
SEED2_WORKLOAD = Workload("seed2", "4 KiB random read, O_DIRECT", "4k", True, False, 16, None)


@functools.cache
def fio_engine_list(fio: str) -> frozenset[str]:
    """The engine names this fio lists (``fio --enghelp``)."""
    return frozenset(run_tool([fio, "--enghelp"], "fio --enghelp").split())


def seed2_unavailable(fio: str | None) -> str | None:
    """Why the seed2 section cannot run here (None: it can)."""
    if os.geteuid() != 0:
        return "needs root (it sets up a loop device)"
    for tool in ("losetup", "mount", "umount"):
        if shutil.which(tool) is None:
            return f"{tool} not found"
    if fio is None:
        return "fio not found"
    if "libaio" not in fio_engine_list(fio):
        return "this fio has no libaio engine"
    return None


def unmount(path: str) -> None:
    for _ in range(10):
        proc = subprocess.run(["umount", path], capture_output=True, text=True, check=False)
        if proc.returncode == 0:
            break
        time.sleep(0.3)
    else:
        log(f"seed2: umount {path} failed ({proc.stderr.strip()}); detaching it lazily")
        subprocess.run(["umount", "-l", path], check=False)
    with contextlib.suppress(OSError):
        os.rmdir(path)


@dataclass(frozen=True)
class LoopDevice:
    device: str
    backing: str
    backing_fs: str  # "tmpfs (the work dir)" or "tmpfs (own mount)"
    dio: str  # /sys/block/loopN/loop/dio: 1 = the loop device does direct I/O


@contextlib.contextmanager
def loop_device(workdir: str, size: int) -> Iterator[LoopDevice]:
    """A loop device with direct I/O over a zero-filled file of ``size`` bytes in a tmpfs: the
    work dir if it is a tmpfs with room, else a tmpfs of our own mounted inside it. Detached,
    removed and unmounted at the end, also after an error, Ctrl+C or SIGTERM."""
    vfs = os.statvfs(workdir)
    mount = None
    base, where = workdir, "tmpfs (the work dir)"
    if fs_type(workdir) != "tmpfs" or vfs.f_bavail * vfs.f_frsize < size + 64 * MIB:
        mount, where = os.path.join(workdir, "seed2-tmpfs"), "tmpfs (own mount)"
        os.mkdir(mount)
        try:
            options = f"size={size_arg(size + 16 * MIB)},mode=0700"
            run_tool(["mount", "-t", "tmpfs", "-o", options, "tmpfs", mount], "mount tmpfs")
        except ToolError as exc:
            os.rmdir(mount)
            raise Unavailable(f"no tmpfs for the loop device's file ({first_line(exc)})") from None
        except BaseException:
            os.rmdir(mount)
            raise
        base = mount
    backing = os.path.join(base, "seed2.img")
    device = None
    try:
        with open(backing, "wb") as handle:
            handle.truncate(size)
        try:
            out = run_tool(["losetup", "--direct-io=on", "-f", "--show", backing], "losetup")
        except ToolError as exc:
            raise Unavailable(f"no loop device ({first_line(exc)})") from None
        device = out.strip()
        try:
            with open(f"/sys/block/{os.path.basename(device)}/loop/dio", encoding="utf-8") as h:
                dio = h.read().strip()
        except OSError:
            dio = "?"
        log(f"seed2: {device} over {backing} ({size_arg(size)}, {where}), direct I/O {dio}")
        yield LoopDevice(device, backing, where, dio)
    finally:
        with signals_held():
            if device:
                proc = subprocess.run(
                    ["losetup", "-d", device], capture_output=True, text=True, check=False
                )
                if proc.returncode:
                    log(f"seed2: losetup -d {device} failed: {proc.stderr.strip()}")
                else:
                    log(f"seed2: {device} detached")
            with contextlib.suppress(OSError):
                os.unlink(backing)
            if mount:
                unmount(mount)


def seed2_aiobench_argv(exe: list[str], device: str, runtime: int, out: str) -> list[str]:
    # --randamount: time-based like fio's --time_based (as in the data section); without it
    # each thread stops after one pass over its slice of the device.
    return [
        *exe,
        *("-r", "-b", "4k", "-t", str(SEED2_THREADS), "--iodepth", str(SEED2_IODEPTH)),
        *("--direct", "--rand", "--randamount", RANDAMOUNT, "--timelimit", str(runtime)),
        *(device, "--json", out),
    ]


def seed2_fio_argv(fio: str, device: str, runtime: int, out: str) -> list[str]:
    return [
        fio,
        "--name=seed2",
        f"--filename={device}",
        "--rw=randread",
        "--bs=4k",
        "--ioengine=libaio",
        f"--iodepth={SEED2_IODEPTH}",
        f"--numjobs={SEED2_THREADS}",
        "--direct=1",
        "--thread",
        "--group_reporting",
        "--time_based",
        f"--runtime={runtime}",
        "--invalidate=0",
        "--iomem_align=4096",
        # Percentiles of lat_ns (submission to completion, what aiobench's IO latency spans)
        # besides clat_ns (from the io_submit return); fio measures both anyway.
        "--lat_percentiles=1",
        "--output-format=json",
        f"--output={out}",
    ]


def seed2_fill(exe: list[str], device: str, size: int, out: str) -> str:
    """Write the whole device once (a sparse file's holes would read faster than data);
    returns how it was written."""
    argv = [*exe, "-w", "-b", "1m", "-t", "2", "--direct", device, "--json", out]
    try:
        run_tool(argv, "aiobench (filling the device)")
        return shlex.join(argv)
    except ToolError as exc:
        log(f"seed2: {first_line(exc)}; writing the device from Python instead")
        lay_out(device, size)
        return "random data written from Python (aiobench could not write the device)"


def seed2_once(exe: list[str], fio: str, device: str, tool: str, runtime: int, out: str) -> Figures:
    if tool == "aiobench":
        argv = seed2_aiobench_argv(exe, device, runtime, out)
    else:
        argv = seed2_fio_argv(fio, device, runtime, out)
    if os.path.exists(out):
        os.unlink(out)
    run = run_metered(argv, f"{tool} (seed2)", kthreads=True)
    doc = load_json(out, f"{tool} (seed2)")
    if tool == "aiobench":
        fig = aiobench_figures(doc)
    else:
        fig = fio_figures(doc, write=False)
        fig["clat_p99_ns"] = fig["p99_ns"]
        fig["p99_ns"] = fig["lat_p99_ns"]
    fig["foreign_load"] = run.foreign_load
    fig["kthread_cpu_s"] = run.kthread_cpu_s
    fig["process_cpu_s"] = run.tool_cpu_s
    fig["wall_s"] = run.wall_s
    return fig


def seed2_log(tool: str, label: str, fig: Figures) -> None:
    log(
        f"seed2 {label:20} {tool:8} {fmt_figure(SEED2_WORKLOAD, fig['iops']):>16}"
        f"  p99 {fmt_ns(fig['p99_ns']):>8}  other load {fig['foreign_load']:4.0%}"
        f"  kernel threads {fig['kthread_cpu_s']:.1f} s  wall {fig['wall_s']:.1f} s"
        + (f"  ({fig['attempts']:.0f} attempts)" if fig.get("attempts", 1) > 1 else "")
    )


def measure_seed2(
    args: argparse.Namespace, workdir: str, aiobench_exe: list[str], fio_exe: str
) -> tuple[dict[str, list[Figures]], Row]:
    out = os.path.join(workdir, "seed2.json")
    samples: dict[str, list[Figures]] = {tool: [] for tool in SEED2_TOOLS}
    with loop_device(workdir, args.seed2_size) as loop:
        filled = seed2_fill(aiobench_exe, loop.device, args.seed2_size, out)
        os.sync()
        once = functools.partial(seed2_once, aiobench_exe, fio_exe, loop.device)
        warm_t = min(args.runtime, 3)
        for tool in SEED2_TOOLS:
            warm_up(
                functools.partial(once, tool, warm_t, out),
                lambda fig: False,
                functools.partial(seed2_log, tool, "warm-up (discarded)"),
                0,
            )
        for i in range(args.repeats):
            for tool in SEED2_TOOLS if i % 2 == 0 else SEED2_TOOLS[::-1]:
                fig = keep_cleanest(
                    args, functools.partial(once, tool, args.runtime, out), no_faults
                )
                samples[tool].append(fig)
                seed2_log(tool, f"round {i + 1}/{args.repeats}", fig)
        commands = {
            "aiobench": shlex.join(seed2_aiobench_argv(aiobench_exe, "DEV", args.runtime, "OUT")),
            "fio": shlex.join(seed2_fio_argv(fio_exe, "DEV", args.runtime, "OUT")),
            "fill": filled.replace(loop.device, "DEV").replace(out, "OUT"),
            "losetup": "losetup --direct-io=on -f --show FILE",
        }
        meta = {
            "size": args.seed2_size,
            "runtime": args.runtime,
            "repeats": args.repeats,
            "device": loop.device,
            "backing_fs": loop.backing_fs,
            "dio": loop.dio,
            "retried": sum(int(f["attempts"]) - 1 for runs in samples.values() for f in runs),
            "commands": commands,
        }
    return samples, meta


def seed2_summarise(samples: dict[str, list[Figures]]) -> Row:
    a, f = samples["aiobench"], samples["fio"]
    med = {
        key: {tool: median_of([x[key] for x in samples[tool]]) for tool in SEED2_TOOLS}
        for key in ("iops", "p99_ns", "process_cpu_s", "ops", "kthread_cpu_s", "foreign_load")
    }
    iops_ratio = ratio_of(med["iops"]["aiobench"], med["iops"]["fio"])
    p99_ratio = ratio_of(med["p99_ns"]["aiobench"], med["p99_ns"]["fio"])
    return {
        "median": med,
        "iops_ratio": iops_ratio,
        "iops_target": SEED2_IOPS_TARGET,
        "iops_met": None if iops_ratio != iops_ratio else iops_ratio >= SEED2_IOPS_TARGET,
        "p99_ratio": p99_ratio,
        "p99_target": SEED2_P99_TARGET,
        "p99_met": None if p99_ratio != p99_ratio else p99_ratio <= SEED2_P99_TARGET,
        "fio_clat_p99_ns": median_of([x["clat_p99_ns"] for x in f]),
        "aiobench_first_done_iops": median_of([x["first_done_iops"] for x in a]),
        "runs": samples,
    }


def seed2_targets(row: Row) -> list[Row]:
    med = row["median"]
    w = SEED2_WORKLOAD
    return [
        target_row(
            "seed2",
            f"seed 2: {w.title}, 16 x iodepth 16",
            med["iops"]["aiobench"],
            med["iops"]["fio"],
            "fio libaio",
            functools.partial(fmt_figure, w),
            ">=",
            SEED2_IOPS_TARGET,
        ),
        target_row(
            "seed2",
            "seed 2: p99 latency",
            med["p99_ns"]["aiobench"],
            med["p99_ns"]["fio"],
            "fio libaio (lat_ns)",
            fmt_ns,
            "<=",
            SEED2_P99_TARGET,
        ),
    ]


def print_seed2_markdown(row: Row, meta: Row) -> None:
    s2 = meta["seed2"]
    w = SEED2_WORKLOAD
    med = row["median"]
    print("## Seed command 2 on a block device: 4 KiB random reads, O_DIRECT, 16 x iodepth 16")
    print()
    print_environment(meta)
    print(
        f"- Device: a loop device (losetup --direct-io=on; its dio flag: {s2['dio']}) over a "
        f"{size_arg(s2['size'])} file in {s2['backing_fs']}, written once in full before the "
        "runs"
    )
    print(
        f"- Runs: time-based, {s2['runtime']} s each (aiobench with --randamount {RANDAMOUNT}, "
        "as fio's --time_based); one discarded warm-up run per tool, then "
        f"{s2['repeats']} round(s), the tool that goes first alternating (ABBA); figures are "
        "medians"
    )
    print(
        '- aiobench: LAST DONE iops, p99 = phases[0].latency.io.percentiles_ns["99"]; fio: '
        "group iops, p99 = lat_ns percentile 99.000000 (--lat_percentiles=1: submission to "
        "completion, as aiobench's; fio's clat_ns p99, from the io_submit return, was "
        f"{fmt_ns(row['fio_clat_p99_ns'])})"
    )
    print(
        "- Other load excludes the kernel's own threads (the loop device's kworkers do its I/O "
        "on the tools' behalf); their CPU time is shown apart"
    )
    print()
    print("| figure | aiobench | fio | ratio | target | met? |")
    print("|---|---:|---:|---:|---:|:---:|")
    print(
        f"| IOPS | {fmt_figure(w, med['iops']['aiobench'])} | {fmt_figure(w, med['iops']['fio'])} "
        f"| {fmt_ratio(row['iops_ratio'])} | {fmt_target('>=', SEED2_IOPS_TARGET)} "
        f"| {fmt_met(row['iops_met'])} |"
    )
    print(
        f"| p99 latency | {fmt_ns(med['p99_ns']['aiobench'])} | {fmt_ns(med['p99_ns']['fio'])} "
        f"| {fmt_ratio(row['p99_ratio'])} | {fmt_target('<=', SEED2_P99_TARGET)} "
        f"| {fmt_met(row['p99_met'])} |"
    )
    print()
    print(
        "Every kept run: IOPS (aiobench: LAST DONE, FIRST DONE), p99, the tool's CPU time "
        "(whole process, wait4, start-up included), the kernel threads' CPU time, other "
        f"load (runs above {meta['max_load']:.0%} were retried up to {meta['retries']} times, "
        f"{s2['retried']} retries in all):"
    )
    print()
    print(
        "| tool | round | IOPS | FIRST DONE | p99 | tool CPU | kernel threads CPU "
        "| other load | wall |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for tool in SEED2_TOOLS:
        for i, f in enumerate(row["runs"][tool]):
            first = fmt_figure(w, f["first_done_iops"]) if "first_done_iops" in f else "-"
            print(
                f"| {tool} | {i + 1} | {fmt_figure(w, f['iops'])} | {first} "
                f"| {fmt_ns(f['p99_ns'])} | {f['process_cpu_s']:.2f} s "
                f"| {f['kthread_cpu_s']:.2f} s | {f['foreign_load']:.0%} | {f['wall_s']:.1f} s |"
            )
    print()
    print("Commands (DEV = the loop device, OUT = the result file):")
    print()
    print("```")
    for key in ("losetup", "fill", "aiobench", "fio"):
        print(f"# {key}")
        print(s2["commands"][key])
    print("```")
