"""The depth section: queue depth and thread count on fast block devices and the page cache.

Issue #28's rows: 4 KiB random reads on a loop device with direct I/O at -t 1 x qd 1,
-t 1 x qd 32 and -t 16 x qd 16, on a zram device (where the kernel has an unused one) at
-t 1 x qd 32 and -t 16 x qd 16, and from a page-cached file (no O_DIRECT) at -t 2 and -t 256;
aiobench against fio (libaio and io_uring on the devices, psync on the cached file) and
elbencho when it is on PATH. On the devices a plain C loop (depthref.c, compiled here at
bench time) makes the syscalls aiobench's native engine makes and nothing else: what
aiobench reaches against it is what its client costs, apart from the device. Each tool's
mean number of I/Os in flight comes from its own counters: aiobench's
phases[].mean_inflight_ops, fio's iodepth_level distribution, the plain loop's latencies
over its time and for elbencho Little's law over its latency mean and IOPS.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import functools
import io
import os
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

from aiobench_bench.common import (
    NAN,
    RANDAMOUNT,
    Doc,
    Figures,
    Row,
    ToolError,
    Unavailable,
    Workload,
    first_line,
    log,
    median_of,
    size_arg,
)
from aiobench_bench.host import lay_out
from aiobench_bench.procs import (
    keep_cleanest,
    load_json,
    no_faults,
    run_metered,
    signals_held,
)
from aiobench_bench.report import (
    fmt_figure,
    fmt_ns,
    fmt_ratio,
    print_environment,
    target_row,
)
from aiobench_bench.results import aiobench_figures, fio_figures, fio_percentile
from aiobench_bench.seed2 import loop_device, seed2_fill

DEVICE_IOPS_TARGET = 1.0  # aiobench IOPS at least fio libaio's at every device row
CACHE_IOPS_TARGET = 0.98  # and at least 0.98x fio psync's on the page-cache rows
INFLIGHT_TARGET = 0.99  # aiobench's mean I/Os in flight at least this share of t x qd
LOOP_CPU_TARGET = 1.1  # loop-thread CPU per op at -t 256 at most this multiple of -t 2's
ZRAM = "zram0"
PLAIN = "plain-loop"  # the plain C loop's tool name (depthref.c)
# aiobench --poll against fio's polling libaio (io_getevents with min 0, the ring read in
# user space): on the one-thread device rows, where a polling thread leaves a CPU free.
AIOBENCH_POLL, FIO_POLL = "aiobench-poll", "fio-poll"
FIO_POLL_OPTIONS = ("--userspace_reap=1", "--iodepth_batch_complete_min=0")
FIO_POLL_COMMAND = f"{FIO_POLL} (at -t 1)"  # (its key in the commands; older reports lack it)
# fio's iodepth_level buckets: each covers depths from its value up to the next one's.
FIO_DEPTH_FLOOR = {"1": 1, "2": 2, "4": 4, "8": 8, "16": 16, "32": 32, ">=64": 64}
IOPS = Workload("depth", "4 KiB random read", "4k", True, False, 1, None)  # (for fmt_figure)


@dataclass(frozen=True)
class DepthRow:
    """One row: where (loop, zram or page cache), threads and queue depth per thread."""

    target: str  # "loop", "zram" or "cache"
    threads: int
    iodepth: int

    @property
    def key(self) -> str:
        return f"{self.target}-t{self.threads}-qd{self.iodepth}"

    @property
    def direct(self) -> bool:
        return self.target != "cache"

    @property
    def slots(self) -> int:
        """The I/Os that can be in flight together: t x qd."""
        return self.threads * self.iodepth

    @property
    def label(self) -> str:
        where = {"loop": "loop device", "zram": "zram", "cache": "page cache"}[self.target]
        return f"{where}, -t {self.threads} x qd {self.iodepth}"

    @property
    def polls(self) -> bool:
        """Whether the row has the polling pair: a device row of one thread."""
        return self.direct and self.threads == 1

    def tools(self, elbencho: bool, plain: bool = False) -> tuple[str, ...]:
        # libaio on a cached (buffered) file completes every read inside io_submit, so the
        # page-cache rows use psync, as the data section does.
        fio = ("fio-libaio", "fio-io_uring") if self.direct else ("fio-psync",)
        more = (*((PLAIN,) if plain and self.direct else ()), *(("elbencho",) if elbencho else ()))
        polling = (AIOBENCH_POLL, FIO_POLL) if self.polls else ()
        return ("aiobench", *fio, *more, *polling)

    @property
    def reference(self) -> str:
        return "fio-libaio" if self.direct else "fio-psync"

    @property
    def iops_target(self) -> float:
        return DEVICE_IOPS_TARGET if self.direct else CACHE_IOPS_TARGET


LOOP_ROWS = (DepthRow("loop", 1, 1), DepthRow("loop", 1, 32), DepthRow("loop", 16, 16))
ZRAM_ROWS = (DepthRow("zram", 1, 32), DepthRow("zram", 16, 16))
CACHE_ROWS = (DepthRow("cache", 2, 1), DepthRow("cache", 256, 1))


def fio_mean_depth(levels: dict[str, float]) -> float:
    """The mean of fio's ``iodepth_level`` distribution (one job's depth).

    fio counts, each time it submits, how many of the job's I/Os are then in flight (the
    submitted one included), and reports the shares (in %) falling into power-of-two
    buckets, each bucket from its value up to the next one's (16 = 16 to 31). The mean is
    taken over the buckets' lower bounds: exact at a fixed depth of 1, 2, 4 ... 64, a lower
    bound otherwise. NAN when fio reported no shares."""
    total = sum(levels.get(key, 0.0) for key in FIO_DEPTH_FLOOR)
    if total <= 0:
        return NAN
    return sum(levels.get(key, 0.0) * floor for key, floor in FIO_DEPTH_FLOOR.items()) / total


def little_inflight(iops: float, mean_latency_ns: float) -> float:
    """Little's law: operations completed per second times their mean latency is the mean
    number in flight."""
    return iops * mean_latency_ns / 1e9


def elbencho_figures(text: str) -> Figures:
    """IOPS and mean I/O latency from elbencho's --csvfile: the LAST DONE IOPS column and the
    average I/O latency column (in µs) of the file's last row, found by their names."""
    rows = list(csv.reader(io.StringIO(text)))
    if len(rows) < 2:
        raise ToolError("elbencho: no result row in its CSV file")
    head = [name.lower() for name in rows[0]]
    last = rows[-1]

    def column(*words: str) -> float:
        for name, cell in zip(head, last, strict=False):
            if all(w in name for w in words) and "entr" not in name and cell.strip():
                return float(cell)
        raise ToolError(f"elbencho: no {' '.join(words)} column in its CSV file")

    iops = column("iops", "last")
    lat_us = column("lat", "avg")
    return {"iops": iops, "mean_lat_ns": lat_us * 1e3, "p50_ns": NAN, "p99_ns": NAN}


def aiobench_argv(
    exe: list[str], row: DepthRow, path: str, runtime: int, out: str, *, poll: bool = False
) -> list[str]:
    return [
        *exe,
        *("-r", "-b", "4k", "-t", str(row.threads), "--iodepth", str(row.iodepth)),
        *(("--direct",) if row.direct else ()),
        *(("--poll",) if poll else ()),
        *("--rand", "--randamount", RANDAMOUNT, "--timelimit", str(runtime)),
        *(path, "--json", out),
    ]


def fio_argv(
    fio: str, engine: str, row: DepthRow, path: str, runtime: int, out: str, *, poll: bool = False
) -> list[str]:
    return [
        fio,
        "--name=depth",
        f"--filename={path}",
        "--rw=randread",
        "--bs=4k",
        f"--ioengine={engine}",
        f"--iodepth={row.iodepth}",
        f"--numjobs={row.threads}",
        *(("--direct=1",) if row.direct else ()),
        "--thread",
        "--group_reporting",
        "--time_based",
        f"--runtime={runtime}",
        "--invalidate=0",
        "--iomem_align=4096",
        "--lat_percentiles=1",  # lat_ns: submission to completion, as aiobench's latency
        "--output-format=json",
        f"--output={out}",
        *(FIO_POLL_OPTIONS if poll else ()),
    ]


def plain_argv(exe: str, row: DepthRow, path: str, runtime: float) -> list[str]:
    return [exe, path, str(row.threads), str(row.iodepth), str(runtime)]


def plain_figures(stdout: str, cpu_s: float) -> Figures:
    """The plain loop's line: reads, elapsed ns and the sum of their latencies (ns); its
    process's CPU time ``cpu_s`` over the reads."""
    fields = stdout.split()
    if len(fields) != 3:
        raise ToolError(f"{PLAIN}: unexpected output {stdout.strip()!r}")
    reads, elapsed_ns, latency_ns = (int(f) for f in fields)
    if reads <= 0 or elapsed_ns <= 0:
        raise ToolError(f"{PLAIN}: {reads} reads in {elapsed_ns} ns")
    return {
        "iops": reads / (elapsed_ns / 1e9),
        "p50_ns": NAN,
        "p99_ns": NAN,
        "mean_inflight": latency_ns / elapsed_ns,
        "cpu_per_op_ns": cpu_s / reads * 1e9,
        "loop_cpu_per_op_ns": NAN,
    }


def compile_plain(workdir: str) -> str | None:
    """depthref.c compiled into ``workdir``; None (logged) without a C compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        log(f"depth: no C compiler: no {PLAIN} column")
        return None
    exe = os.path.join(workdir, "depthref")
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "depthref.c")
    proc = subprocess.run(
        [cc, "-O2", "-pthread", "-o", exe, source], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or ["no message"])[0]
        log(f"depth: compiling depthref.c failed ({why}): no {PLAIN} column")
        return None
    return exe


def elbencho_argv(
    exe: str, row: DepthRow, path: str, size: int, runtime: int, out: str
) -> list[str]:
    return [
        exe,
        *("-r", "-b", "4k", "-t", str(row.threads), "--iodepth", str(row.iodepth)),
        *(("--direct",) if row.direct else ()),
        *("-s", size_arg(size), "--rand", "--randamount", RANDAMOUNT),
        *("--timelimit", str(runtime), "--lat", "--csvfile", out, path),
    ]


def aiobench_depth_figures(doc: Doc, cpus: int) -> Figures:
    """aiobench's figures and its own counters: mean I/Os in flight, CPU per op (its
    process's CPU time over LAST DONE, from cpu_percent of all cores) and the event-loop
    thread's CPU per op."""
    fig = aiobench_figures(doc)
    phase = doc["phases"][0]
    ops = fig["ops"]
    value = ((phase.get("latency") or {}).get("io") or {}).get("percentiles_ns", {}).get("50")
    fig["p50_ns"] = NAN if value is None else float(value)
    fig["mean_inflight"] = float(phase.get("mean_inflight_ops", NAN))
    cpu_s = phase["last_done"].get("cpu_percent", NAN) / 100 * cpus * fig["elapsed_s"]
    fig["cpu_per_op_ns"] = cpu_s / ops * 1e9 if ops else NAN
    loop_ns = phase.get("loop_cpu_ns")
    fig["loop_cpu_per_op_ns"] = loop_ns / ops if loop_ns is not None and ops else NAN
    return fig


def fio_depth_figures(doc: Doc, row: DepthRow) -> Figures:
    """fio's figures: latency from lat_ns (submission to completion), mean I/Os in flight
    from its iodepth_level distribution times the jobs."""
    fig = fio_figures(doc, write=False)
    side = doc["jobs"][0]["read"]
    fig["p50_ns"] = fio_percentile(side, "lat_ns", "50.000000")
    fig["p99_ns"] = fig["lat_p99_ns"]
    levels = {key: float(v) for key, v in (doc["jobs"][0].get("iodepth_level") or {}).items()}
    fig["mean_inflight"] = fio_mean_depth(levels) * row.threads
    fig["loop_cpu_per_op_ns"] = NAN
    return fig


@dataclass(frozen=True)
class Tools:
    aiobench: list[str]
    fio: str
    elbencho: str | None
    cpus: int
    plain: str | None = None  # the compiled depthref.c


def depth_argv(
    tools: Tools, row: DepthRow, tool: str, path: str, size: int, runtime: int, out: str
) -> list[str]:
    """The command line of ``tool`` (a name from DepthRow.tools) on ``row``."""
    if tool in ("aiobench", AIOBENCH_POLL):
        return aiobench_argv(tools.aiobench, row, path, runtime, out, poll=tool == AIOBENCH_POLL)
    if tool == FIO_POLL:  # (before the generic fio names: its engine is libaio, not "poll")
        return fio_argv(tools.fio, "libaio", row, path, runtime, out, poll=True)
    if tool == "elbencho":
        assert tools.elbencho is not None
        return elbencho_argv(tools.elbencho, row, path, size, runtime, out)
    if tool == PLAIN:
        assert tools.plain is not None
        return plain_argv(tools.plain, row, path, runtime)
    return fio_argv(tools.fio, tool.split("-", 1)[1], row, path, runtime, out)


def depth_once(
    tools: Tools, row: DepthRow, tool: str, path: str, size: int, runtime: int, out: str
) -> Figures:
    """One run of ``tool`` on ``row`` against ``path``: its figures and how clean it was."""
    argv = depth_argv(tools, row, tool, path, size, runtime, out)
    if os.path.exists(out):
        os.unlink(out)
    run = run_metered(argv, f"{tool} ({row.key})", kthreads=row.direct)
    if tool in ("aiobench", AIOBENCH_POLL):
        fig = aiobench_depth_figures(load_json(out, tool), tools.cpus)
    elif tool == "elbencho":
        with open(out, encoding="utf-8") as handle:
            fig = elbencho_figures(handle.read())
        fig["mean_inflight"] = little_inflight(fig["iops"], fig.pop("mean_lat_ns"))
        fig["cpu_per_op_ns"] = NAN  # (its process's CPU time includes its start-up)
        fig["loop_cpu_per_op_ns"] = NAN
    elif tool == PLAIN:
        fig = plain_figures(run.stdout, run.tool_cpu_s)
    else:
        fig = fio_depth_figures(load_json(out, tool), row)
    fig["foreign_load"] = run.foreign_load
    fig["process_cpu_s"] = run.tool_cpu_s
    fig["wall_s"] = run.wall_s
    return fig


def depth_log(row: DepthRow, tool: str, label: str, fig: Figures) -> None:
    log(
        f"depth {row.key:16} {label:10} {tool:12} {fmt_figure(IOPS, fig['iops']):>16}"
        f"  p99 {fmt_ns(fig['p99_ns']):>8}  in flight {fig['mean_inflight']:6.1f}"
        f"  other load {fig['foreign_load']:4.0%}"
    )


def zram_unavailable() -> str | None:
    """Why /dev/zram0 cannot be used (None: it exists and nobody uses it)."""
    sys_dir = f"/sys/block/{ZRAM}"
    if not os.path.exists(f"/dev/{ZRAM}") or not os.path.isdir(sys_dir):
        return "the kernel has no /dev/zram0"
    try:
        with open(f"{sys_dir}/disksize", encoding="utf-8") as handle:
            disksize = int(handle.read().strip() or 0)
        with open(f"{sys_dir}/initstate", encoding="utf-8") as handle:
            initstate = handle.read().strip()
        holders = os.listdir(f"{sys_dir}/holders")
    except (OSError, ValueError) as exc:
        return f"cannot read its state ({exc})"
    if disksize or initstate != "0" or holders:
        return "/dev/zram0 is in use (it has a disk size)"
    return None


@contextlib.contextmanager
def zram_device(size: int) -> Iterator[str]:
    """/dev/zram0 with a disk size of ``size`` bytes; reset at the end, also after an error,
    Ctrl+C or SIGTERM."""
    reason = zram_unavailable()
    if reason:
        raise Unavailable(reason)
    sys_dir = f"/sys/block/{ZRAM}"
    try:
        with open(f"{sys_dir}/disksize", "w", encoding="utf-8") as handle:
            handle.write(str(size))
    except OSError as exc:
        raise Unavailable(f"cannot set /dev/zram0's disk size ({exc})") from None
    try:
        log(f"depth: /dev/{ZRAM} with a disk size of {size_arg(size)}")
        yield f"/dev/{ZRAM}"
    finally:
        with signals_held():
            try:
                with open(f"{sys_dir}/reset", "w", encoding="utf-8") as handle:
                    handle.write("1")
                log(f"depth: /dev/{ZRAM} reset")
            except OSError as exc:
                log(f"depth: resetting /dev/{ZRAM} failed: {exc}")


def measure_rows(
    args: argparse.Namespace,
    tools: Tools,
    rows: tuple[DepthRow, ...],
    path: str,
    size: int,
    out: str,
) -> dict[str, dict[str, list[Figures]]]:
    """Every row's runs against ``path``: one discarded warm-up run per tool, then
    --repeats rounds with the tools' order reversed every other round (ABBA)."""
    samples: dict[str, dict[str, list[Figures]]] = {}
    elbencho = tools.elbencho is not None
    for row in rows:
        names = row.tools(elbencho, tools.plain is not None)
        runs: dict[str, list[Figures]] = {tool: [] for tool in names}
        once = functools.partial(depth_once, tools, row)
        for tool in names:
            try:
                fig = once(tool, path, size, min(args.runtime, 2), out)
                depth_log(row, tool, "warm-up", fig)
            except ToolError as exc:
                if tool != "elbencho":
                    raise
                log(f"depth: elbencho failed ({first_line(exc)}); its column is n/a")
                runs.pop(tool)
        for i in range(args.repeats):
            for tool in [t for t in (names if i % 2 == 0 else names[::-1]) if t in runs]:
                fig = keep_cleanest(
                    args, functools.partial(once, tool, path, size, args.runtime, out), no_faults
                )
                runs[tool].append(fig)
                depth_log(row, tool, f"{i + 1}/{args.repeats}", fig)
        samples[row.key] = runs
    return samples


def measure_depth(
    args: argparse.Namespace, workdir: str, aiobench_exe: list[str], fio_exe: str
) -> tuple[dict[str, dict[str, list[Figures]]], Row]:
    size = args.depth_size
    out = os.path.join(workdir, "depth.out")
    plain = compile_plain(workdir)
    tools = Tools(aiobench_exe, fio_exe, shutil.which("elbencho"), os.cpu_count() or 1, plain)
    samples: dict[str, dict[str, list[Figures]]] = {}
    meta: Row = {
        "size": size,
        "runtime": args.runtime,
        "repeats": args.repeats,
        "elbencho": tools.elbencho,
        "zram": None,
    }
    with loop_device(workdir, size) as loop:
        meta["loop"] = {"device": loop.device, "backing_fs": loop.backing_fs, "dio": loop.dio}
        filled = seed2_fill(aiobench_exe, loop.device, size, out)
        meta["fill"] = filled.replace(loop.device, "DEV").replace(out, "OUT")
        os.sync()
        samples |= measure_rows(args, tools, LOOP_ROWS, loop.device, size, out)
    try:
        with zram_device(size) as zram:
            seed2_fill(aiobench_exe, zram, size, out)
            samples |= measure_rows(args, tools, ZRAM_ROWS, zram, size, out)
    except Unavailable as exc:
        log(f"depth: no zram rows: {exc}")
        meta["zram"] = str(exc)
    cached = os.path.join(workdir, "depth-cached.dat")
    log(f"depth: laying out {cached} ({size_arg(size)} random data)")
    lay_out(cached, size)
    try:
        samples |= measure_rows(args, tools, CACHE_ROWS, cached, size, out)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(cached)
    dev, cache, t = LOOP_ROWS[2], CACHE_ROWS[0], args.runtime
    meta["commands"] = {
        "aiobench": shlex.join(aiobench_argv(aiobench_exe, dev, "DEV", t, "OUT")),
        "fio": shlex.join(fio_argv(fio_exe, "ENGINE", dev, "DEV", t, "OUT")),
        FIO_POLL_COMMAND: shlex.join(
            fio_argv(fio_exe, "libaio", LOOP_ROWS[0], "DEV", t, "OUT", poll=True)
        ),
        "aiobench (page cache)": shlex.join(aiobench_argv(aiobench_exe, cache, "FILE", t, "OUT")),
        "fio (page cache)": shlex.join(fio_argv(fio_exe, "psync", cache, "FILE", t, "OUT")),
    }
    if plain:
        meta["commands"][PLAIN] = shlex.join(["depthref", *plain_argv(plain, dev, "DEV", t)[1:]])
    if tools.elbencho:
        meta["commands"]["elbencho"] = shlex.join(
            elbencho_argv(tools.elbencho, dev, "DEV", size, t, "OUT")
        )
    return samples, meta


FIGURES = ("iops", "p50_ns", "p99_ns", "cpu_per_op_ns", "mean_inflight", "loop_cpu_per_op_ns")
ALL_ROWS = (*LOOP_ROWS, *ZRAM_ROWS, *CACHE_ROWS)


def depth_summarise(samples: dict[str, dict[str, list[Figures]]]) -> Row:
    """Per row and tool the medians of every figure (rows not measured are left out)."""
    rows = []
    for row in ALL_ROWS:
        runs = samples.get(row.key)
        if not runs:
            continue
        med = {
            tool: {key: median_of([f.get(key, NAN) for f in figs]) for key in FIGURES}
            for tool, figs in runs.items()
        }
        rows.append(
            {
                "key": row.key,
                "label": row.label,
                "slots": row.slots,
                "reference": row.reference,
                "median": med,
                "runs": runs,
            }
        )
    return {"rows": rows}


def fmt_inflight(value: float) -> str:
    return "n/a" if value != value else f"{value:,.1f}"


def depth_targets(summary: Row) -> list[Row]:
    """Issue #28's targets: IOPS against fio's (libaio on the devices, psync on the page
    cache) and the mean in flight against t x qd on the device rows; the loop thread's CPU
    per op at -t 256 against -t 2. On the page cache an operation is one syscall that does
    the copy itself: there is no queue, only threads, and with -t 256 on a few cores most
    of them wait for a core between their syscalls, so the mean in flight there (shown in
    the section's table) measures the cores, not a queue that could drain."""
    by_key = {r["key"]: r for r in summary["rows"]}
    targets = []
    for row in ALL_ROWS:
        r = by_key.get(row.key)
        if r is None:
            continue
        med = r["median"]
        ref = row.reference
        targets.append(
            target_row(
                "depth",
                f"{row.label}: IOPS",
                med["aiobench"]["iops"],
                med[ref]["iops"] if ref in med else NAN,
                ref.replace("-", " "),
                functools.partial(fmt_figure, IOPS),
                ">=",
                row.iops_target,
            )
        )
        if PLAIN in med:  # (shown without a target: what aiobench's client costs)
            targets.append(
                target_row(
                    "depth",
                    f"{row.label}: IOPS against the plain C loop",
                    med["aiobench"]["iops"],
                    med[PLAIN]["iops"],
                    "plain C loop",
                    functools.partial(fmt_figure, IOPS),
                    ">=",
                    None,
                )
            )
        if AIOBENCH_POLL in med and FIO_POLL in med and ref in med:
            # fio's faster libaio: its polling keeps one read in flight whatever --iodepth
            # says (measured at qd 32), so there its sleeping configuration is its best.
            best = max((ref, FIO_POLL), key=lambda tool: med[tool]["iops"])
            targets.append(
                target_row(
                    "depth",
                    f"{row.label}: aiobench --poll IOPS",
                    med[AIOBENCH_POLL]["iops"],
                    med[best]["iops"],
                    "fio libaio polling"
                    if best == FIO_POLL
                    else "fio libaio sleeping (its faster)",
                    functools.partial(fmt_figure, IOPS),
                    ">=",
                    DEVICE_IOPS_TARGET,
                )
            )
        if row.target == "cache":
            continue  # (see depth_targets)
        inflight = target_row(
            "depth",
            f"{row.label}: mean I/Os in flight",
            med["aiobench"]["mean_inflight"],
            row.slots,
            "t x qd",
            fmt_inflight,
            ">=",
            INFLIGHT_TARGET,
        )
        inflight["pct"] = True
        targets.append(inflight)
    low, high = by_key.get(CACHE_ROWS[0].key), by_key.get(CACHE_ROWS[1].key)
    if low is not None and high is not None:
        targets.append(
            target_row(
                "depth",
                "page cache: loop-thread CPU per op, -t 256",
                high["median"]["aiobench"]["loop_cpu_per_op_ns"],
                low["median"]["aiobench"]["loop_cpu_per_op_ns"],
                "aiobench -t 2",
                fmt_ns,
                "<=",
                LOOP_CPU_TARGET,
            )
        )
    return targets


def print_depth_markdown(summary: Row, meta: Row) -> None:
    d = meta["depth"]
    loop = d["loop"]
    print("## Queue depth: 4 KiB random reads on a loop device, zram and the page cache")
    print()
    print_environment(meta)
    print(
        f"- Devices: a loop device (losetup --direct-io=on; its dio flag: {loop['dio']}) over "
        f"a {size_arg(d['size'])} file in {loop['backing_fs']}; "
        + (f"no zram ({d['zram']})" if d["zram"] else f"/dev/zram0 of {size_arg(d['size'])}")
        + "; each written once in full; the page-cache rows read a file of the same size in "
        "the work dir (no O_DIRECT)"
    )
    print(
        f"- Runs: time-based, {d['runtime']} s each; per row one discarded warm-up run per "
        f"tool, then {d['repeats']} round(s) with the tools' order reversed every other round "
        "(ABBA); figures are medians"
    )
    print(
        "- fio: --thread --group_reporting --invalidate=0 --iomem_align=4096 "
        "--lat_percentiles=1, --direct=1 on the devices; libaio and io_uring on the devices, "
        "psync on the page cache (libaio completes buffered reads inside io_submit)"
        + ("; elbencho: " + d["elbencho"] if d["elbencho"] else "; elbencho: not on PATH")
    )
    if FIO_POLL_COMMAND in d["commands"]:
        print(
            f"- {AIOBENCH_POLL}, {FIO_POLL} (device rows of one thread): aiobench --poll (each "
            "thread waits for its completions on its CPU, watching the AIO ring) against fio "
            f"libaio's polling ({' '.join(FIO_POLL_OPTIONS)}), held against the faster of fio "
            "libaio's polling and sleeping (its polling keeps one read in flight at any "
            "--iodepth); the other columns sleep until their completions"
        )
    if PLAIN in d["commands"]:
        print(
            f"- {PLAIN}: scripts/aiobench_bench/depthref.c compiled with cc -O2 at bench time, "
            "the syscalls of aiobench's native engine and nothing else (a Linux AIO "
            "context per thread, the free positions submitted in one io_submit, or two per "
            "call with fewer threads than CPUs unless the device completed the last batch "
            "inside io_submit, io_getevents for at least one; at depth 1 one pread after "
            "the other without a CPU to spare, or after 64 reads in a row completed inside "
            "io_submit, the thread staying on its CPU), each read timed from submission to "
            "completion"
        )
    print(
        "- Latency: aiobench's latency.io percentiles, fio's lat_ns (submission to "
        "completion). CPU per op: aiobench's cpu_percent of all CPUs over LAST DONE, fio's "
        "usr_cpu + sys_cpu x job_runtime, over the ops (the loop device's kernel threads "
        "are in neither); loop CPU per op: aiobench's loop_cpu_ns (its event-loop thread) "
        "over the ops"
    )
    print(
        "- Mean I/Os in flight: aiobench's mean_inflight_ops (its latencies' sum over "
        "LAST DONE's time, Little's law); fio's iodepth_level distribution (the depth at "
        "each submission, by power-of-two bucket, the buckets' lower bounds averaged) times "
        f"numjobs; {PLAIN}'s latencies' sum over its time; elbencho's IOPS times its mean "
        "latency"
    )
    print()
    print(
        "| row | tool | IOPS | vs fio | p50 | p99 | CPU / op | loop CPU / op "
        "| in flight | of t x qd |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in summary["rows"]:
        med = r["median"]
        ref = med.get(r["reference"], {}).get("iops", NAN)
        for tool, m in med.items():
            ratio = m["iops"] / ref if ref == ref and ref else NAN
            share = m["mean_inflight"] / r["slots"]
            print(
                f"| {r['label']} | {tool} | {fmt_figure(IOPS, m['iops'])} | {fmt_ratio(ratio)} "
                f"| {fmt_ns(m['p50_ns'])} | {fmt_ns(m['p99_ns'])} | {fmt_ns(m['cpu_per_op_ns'])} "
                f"| {fmt_ns(m['loop_cpu_per_op_ns'])} | {fmt_inflight(m['mean_inflight'])} "
                f"| {'n/a' if share != share else f'{share:.0%}'} |"
            )
    print()
    print(
        "Commands (DEV = the device, at -t 16 x qd 16; FILE = the cached file, at -t 2; "
        "ENGINE = libaio or io_uring; OUT = the result file):"
    )
    print()
    print("```")
    print("# fill")
    print(d["fill"])
    for key, command in d["commands"].items():
        print(f"# {key}")
        print(command)
    print("```")
