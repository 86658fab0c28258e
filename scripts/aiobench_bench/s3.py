"""The s3 section: aiobench's S3 engine against the floor, a bare loop with no HTTP library
(issue #26: aiobench_bench.s3proto, ``asyncio.Protocol`` + SigV4 on uvloop, for 4 KiB
objects; aiobench_bench.s3sock, blocking sockets with ``recv_into`` one buffer, for 64 MiB
ones, PUT and GET whole), and a bare aiohttp + SigV4 loop as a second reference (#15).

All on the same SeaweedFS (``weed mini`` on loopback, started here with its data in the
work dir, stopped at the end), the same work at the same concurrency: T = 2 threads x
iodepth 8, PUTs of T x K objects of 4 KiB (distinct keys, aiobench's names), then GETs of
them; and T x K2 objects of 64 MiB, PUT in 8 MiB parts, read in 8 MiB ranges, up to
iodepth parts / ranges in flight per thread (the floor: whole objects). Each tool runs in
a process of its own, so that its client CPU time is its own process's (wait4), less the
median CPU time of its start-up runs (the same command with one object per thread, run
after each measured pair), over the requests (or MiB) more than those. The server is
another process: its CPU time is measured too and not counted as other load.

Rounds: one discarded 4 KiB put + get per tool, then --repeats rounds per object size with
the tools' put + get pairs interleaved, the tool that goes first rotating; the objects are
deleted after each pair (untimed). A run during which other processes used more than
--max-load of all CPUs is repeated (--retries). Figures are medians. When an aiobench
command fails, the section says so in one line and reports the bare loops' figures alone.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
from dataclasses import dataclass, field

from aiobench_bench.common import (
    KIB,
    MIB,
    NAN,
    THREADS,
    Doc,
    Figures,
    Row,
    ToolError,
    log,
    median_of,
    ratio_of,
    size_arg,
)
from aiobench_bench.procs import keep_cleanest, load_json, no_faults, run_metered
from aiobench_bench.report import fmt_ns, fmt_ratio, print_environment, spread, target_row
from aiobench_bench.results import note_engine
from aiobench_bench.s3server import MAX_VOLUMES, Server, running_server, vacuum

S3_IODEPTH = 8
# Issue #26's targets against the floor: aiobench's 4 KiB ops/s at least this share of the
# floor's, its client CPU per 4 KiB request at most this multiple of the floor's, and its
# client CPU per MiB of 64 MiB objects at most this (ns).
S3_RATE_TARGET = 0.9
S3_CPU_TARGET = 1.3
S3_MIB_CPU_TARGET_NS = 300_000.0
PHASES = {"put": "WRITE", "get": "READ"}
FLAGS = {"put": "-w", "get": "-r"}
REF_BUCKET = "bench-ref"
FLOOR_BUCKET = "bench-floor"
FLOOR_STARTUP_BUCKET = "bench-floor-startup"
AIO_BUCKET = "bench-aiobench"
REF_STARTUP_BUCKET = "bench-ref-startup"
AIO_STARTUP_BUCKET = "bench-aiobench-startup"
# The event loops aiobench's runs said they ran on (meta.event_loop), and the Python versions
# each tool said it ran on (aiobench: meta.python; the bare loop: its "python").
LOOPS_SEEN: set[str] = set()
PYTHONS_SEEN: dict[str, set[str]] = {tool: set() for tool in ("floor", "ref", "aiobench")}
SCRIPTS_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


@dataclass(frozen=True)
class S3Work:
    key: str
    title: str
    size: int  # object size
    block: int  # part / range size

    @property
    def small(self) -> bool:
        return self.size <= self.block


SMALL = S3Work("4k", "4 KiB objects", 4 * KIB, 4 * KIB)
LARGE = S3Work("64m", "64 MiB objects, 8 MiB parts", 64 * MIB, 8 * MIB)
WORKS = (SMALL, LARGE)
TOOLS = ("floor", "ref", "aiobench")
TOOL_TITLES = {
    "floor": "bare floor loop",
    "ref": "bare aiohttp + SigV4 loop",
    "aiobench": "aiobench",
}
# The floor's module by work: asyncio.Protocol for small objects, sockets for large ones.
FLOOR_MODULES = {SMALL.key: "aiobench_bench.s3proto", LARGE.key: "aiobench_bench.s3sock"}
# The tools other than aiobench: their buckets (measured, start-up).
BUCKETS = {
    "floor": (FLOOR_BUCKET, FLOOR_STARTUP_BUCKET),
    "ref": (REF_BUCKET, REF_STARTUP_BUCKET),
}


@dataclass
class S3Setup:
    aiobench: list[str]
    python: str
    server: Server
    workdir: str
    threads: int = THREADS
    iodepth: int = S3_IODEPTH
    aiobench_error: str | None = None  # why aiobench could not be measured
    # "work tool op" -> the start-up runs (the same command, one object per thread)
    startup: dict[str, list[Figures]] = field(default_factory=dict)


def aiobench_s3_argv(
    exe: list[str],
    flag: str,
    work: S3Work,
    files: int,
    server: Server,
    bucket: str,
    out: str,
    threads: int = THREADS,
    iodepth: int = S3_IODEPTH,
) -> list[str]:
    """One aiobench S3 command: ``flag`` is -d, -w, -r, -F or -D (elbencho's phases)."""
    return [
        *exe,
        flag,
        *("-t", str(threads), "--iodepth", str(iodepth), "-n", "1", "-N", str(files)),
        *("-s", size_arg(work.size), "-b", size_arg(work.block)),
        *("--s3endpoints", server.endpoint, "--s3key", server.access_key),
        *("--s3secret", server.secret_key, "--nolive", "--json", out),
        f"s3://{bucket}",
    ]


def ref_argv(
    python: str,
    mode: str,
    work: S3Work,
    files: int,
    endpoint: str,
    bucket: str,
    threads: int = THREADS,
    iodepth: int = S3_IODEPTH,
) -> list[str]:
    return [
        *(python, "-m", "aiobench_bench.s3ref", mode, "--endpoint", endpoint),
        *("--bucket", bucket, "--threads", str(threads), "--iodepth", str(iodepth)),
        *("--files", str(files), "--size", str(work.size), "--block", str(work.block)),
    ]


def floor_argv(
    python: str,
    mode: str,
    work: S3Work,
    files: int,
    endpoint: str,
    bucket: str,
    threads: int = THREADS,
    iodepth: int = S3_IODEPTH,
) -> list[str]:
    """The floor's command: whole objects (no parts or ranges: a request each)."""
    return [
        *(python, "-m", FLOOR_MODULES[work.key], mode, "--endpoint", endpoint),
        *("--bucket", bucket, "--threads", str(threads), "--iodepth", str(iodepth)),
        *("--files", str(files), "--size", str(work.size)),
    ]


def ref_env(server: Server) -> dict[str, str]:
    """The reference's environment: its credentials, and this package importable."""
    path = os.pathsep.join(filter(None, (SCRIPTS_DIR, os.environ.get("PYTHONPATH"))))
    return {
        **os.environ,
        "PYTHONPATH": path,
        "S3REF_ACCESS_KEY": server.access_key,
        "S3REF_SECRET_KEY": server.secret_key,
    }


def shown(argv: list[str], server: Server, workdir: str) -> str:
    """A command as the report shows it: the key as KEY, the secret as SECRET, the work dir
    as DIR."""
    text = shlex.join(argv).replace(server.secret_key, "SECRET")
    return text.replace(server.access_key, "KEY").replace(workdir, "DIR")


def failure_text(message: str, secrets: tuple[str, ...]) -> str:
    """One line saying why a tool run failed, from a ToolError's message (procs.spawn's:
    a first line with the command, then ``stdout: ...`` and ``stderr: ...``): the exit
    status and the tool's own message, i.e. its ``Error:`` line if it printed one, else
    the last line of its error output (an exception's, after a traceback); never the
    command line or a credential."""
    lines = message.splitlines()
    status = re.search(r"failed \(exit (-?\d+)\)", lines[0] if lines else "")
    start = next((i for i, line in enumerate(lines) if line.startswith("stderr: ")), None)
    said = ""
    if start is not None:
        stderr = [lines[start][len("stderr: ") :], *lines[start + 1 :]]
        stderr = [line.strip() for line in stderr if line.strip()]
        errors = [line for line in stderr if line.startswith("Error:")]
        said = errors[0] if errors else (stderr[-1] if stderr else "")
    if not said and not status:
        said = lines[0] if lines else "failed"
    code = f"exit {status.group(1)}" if status else ""
    text = ": ".join(filter(None, (code, said))) or "failed"
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:300] + "..."


def aiobench_s3_figures(doc: Doc, op: str, work: S3Work, objects: int) -> Figures:
    """LAST DONE figures of the phase of ``op`` (WRITE / READ) of an aiobench S3 run."""
    if doc.get("error"):
        raise ToolError(f"aiobench reported an error: {doc['error']}")
    note_engine(doc)
    LOOPS_SEEN.add(str(doc.get("meta", {}).get("event_loop") or "?"))
    PYTHONS_SEEN["aiobench"].add(str(doc.get("meta", {}).get("python") or "?"))
    name = PHASES[op]
    phase = next((p for p in doc.get("phases") or [] if p.get("phase") == name), None)
    if phase is None:
        raise ToolError(f"aiobench: no {name} phase in its JSON")
    last = phase["last_done"]
    if last.get("entries") != objects:
        raise ToolError(f"aiobench: {name} did {last.get('entries')} objects, not {objects}")
    latency = phase.get("latency") or {}

    def pct(kind: str, point: str) -> float:
        value = ((latency.get(kind) or {}).get("percentiles_ns") or {}).get(point)
        return NAN if value is None else float(value)

    return {
        "objects_per_s": float(last["entries_per_s"]),
        "requests_per_s": float(last["iops"]),
        "bytes_per_s": float(last["bytes_per_s"]),
        "objects": float(last["entries"]),
        "requests": float(last["ops"]),
        "bytes": float(last["bytes"]),
        "elapsed_s": last["elapsed_ns"] / 1e9,
        "io_p50_ns": pct("io", "50"),
        "io_p99_ns": pct("io", "99"),
        "entry_p99_ns": pct("entry", "99"),
        "size_ok": float(last["bytes"] == objects * work.size),
        # In-phase: the CPU of the threads that make the S3 engine's requests, from the
        # phase's start to its last request (loop_cpu_ns: the event loop's, and on the
        # native route the threads that run its C loop), as the floor's process_time
        # around its requests.
        "phase_cpu_s": float(phase.get("loop_cpu_ns") or NAN) / 1e9,
    }


def ref_figures(stdout: str, work: S3Work, objects: int, tool: str = "ref") -> Figures:
    """A bare loop's figures (``tool``: ref or floor) from its JSON line."""
    try:
        doc = json.loads(stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError) as exc:
        raise ToolError(f"bare loop: unreadable output ({exc})") from None
    if doc.get("objects") != objects:
        raise ToolError(f"bare loop: {doc.get('objects')} objects, not {objects}")
    PYTHONS_SEEN[tool].add(str(doc.get("python") or "?"))
    elapsed = float(doc["elapsed_s"])
    return {
        "objects_per_s": objects / elapsed,
        "requests_per_s": doc["requests"] / elapsed,
        "bytes_per_s": doc["bytes"] / elapsed,
        "objects": float(objects),
        "requests": float(doc["requests"]),
        "bytes": float(doc["bytes"]),
        "elapsed_s": elapsed,
        "phase_cpu_s": float(doc["phase_cpu_s"]),
        "size_ok": float(doc["bytes"] == objects * work.size),
    }


def tool_argv(
    setup: S3Setup, tool: str, op: str, work: S3Work, files: int, out: str, startup: bool
) -> list[str]:
    """The measured command of ``tool`` doing ``op`` (put / get) on ``work`` (a start-up
    run: in a bucket of its own)."""
    if tool in BUCKETS:
        bucket = BUCKETS[tool][1 if startup else 0]
        make = floor_argv if tool == "floor" else ref_argv
        return make(setup.python, op, work, files, setup.server.endpoint, bucket)
    bucket = AIO_STARTUP_BUCKET if startup else AIO_BUCKET
    return aiobench_s3_argv(setup.aiobench, FLAGS[op], work, files, setup.server, bucket, out)


def s3_once(
    setup: S3Setup, tool: str, op: str, work: S3Work, files: int, startup: bool = False
) -> Figures:
    """One measured run: the figures, the client's process CPU time, the server's CPU time
    and the other processes' load."""
    out = os.path.join(setup.workdir, "s3-result.json")
    if os.path.exists(out):
        os.unlink(out)
    argv = tool_argv(setup, tool, op, work, files, out, startup)
    objects = setup.threads * files
    label = f"{TOOL_TITLES[tool]} {op} {work.key}"
    if tool in BUCKETS:
        run = run_metered(argv, label, ref_env(setup.server), server_pid=setup.server.pid)
        fig = ref_figures(run.stdout, work, objects, tool)
    else:
        run = run_metered(argv, label, server_pid=setup.server.pid)
        fig = aiobench_s3_figures(load_json(out, label), op, work, objects)
    fig.update(
        process_cpu_s=run.tool_cpu_s,
        server_cpu_s=run.server_cpu_s,
        foreign_load=run.foreign_load,
        wall_s=run.wall_s,
    )
    return fig


def aiobench_plain(setup: S3Setup, flag: str, work: S3Work, files: int, bucket: str) -> None:
    """An untimed aiobench command (-d, -F, -D)."""
    out = os.path.join(setup.workdir, "s3-plain.json")
    argv = aiobench_s3_argv(setup.aiobench, flag, work, files, setup.server, bucket, out)
    run_metered(argv, f"aiobench {flag}")


def ref_plain(setup: S3Setup, mode: str, work: S3Work, files: int, bucket: str) -> None:
    argv = ref_argv(setup.python, mode, work, files, setup.server.endpoint, bucket)
    run_metered(argv, f"bare loop {mode}", ref_env(setup.server))


def aiobench_failed(setup: S3Setup, exc: ToolError) -> None:
    server = setup.server
    setup.aiobench_error = failure_text(str(exc), (server.secret_key, server.access_key))
    log(f"s3: aiobench: failed ({setup.aiobench_error}); the bare loop is measured alone")


def cpu_per(fig: Figures, base: Figures, unit: str) -> float:
    """Client CPU ns per request (``unit`` = requests) or per MiB (bytes): the process's CPU
    time less its start-up run's (``base``: the same command, one object per thread), over
    the requests or MiB more than the start-up run's; so what every run costs besides its
    requests (interpreter, imports, buffers, set-up, output) is left out."""
    key = "requests" if unit == "requests" else "bytes"
    amount = fig[key] - base.get(key, NAN)
    if unit != "requests":
        amount /= MIB
    cpu = fig["process_cpu_s"] - base.get("process_cpu_s", NAN)
    # not more CPU than the start-up run: the difference is lost in the noise (n/a)
    return cpu / amount * 1e9 if amount > 0 and cpu > 0 else NAN


def s3_log(tool: str, op: str, label: str, work: S3Work, fig: Figures) -> None:
    rate = (
        f"{fig['objects_per_s']:9,.0f} obj/s"
        if work.small
        else f"{fig['bytes_per_s'] / MIB:7,.1f} MiB/s"
    )
    log(
        f"s3 {label:22} {work.key:7} {TOOL_TITLES[tool]:25} {op:3} {rate}"
        f"  CPU {fig['process_cpu_s']:5.2f} s  server CPU {fig['server_cpu_s']:5.2f} s"
        f"  other load {fig['foreign_load']:4.0%}"
        + (f"  ({fig['attempts']:.0f} attempts)" if fig.get("attempts", 1) > 1 else "")
    )


def pair(
    args: argparse.Namespace,
    setup: S3Setup,
    tool: str,
    work: S3Work,
    files: int,
    label: str,
    retry: bool = True,
) -> dict[str, Figures]:
    """A tool's put and get runs of ``work`` (each repeated while disturbed), then its
    objects deleted (untimed)."""
    runs = {}
    for op in PHASES:

        def attempt(op: str = op) -> Figures:
            if op == "put" and not work.small:
                # an earlier attempt's objects, overwritten, hold their space until then
                vacuum()
            return s3_once(setup, tool, op, work, files)

        fig = keep_cleanest(args, attempt, no_faults) if retry else attempt()
        s3_log(tool, op, label, work, fig)
        runs[op] = fig
    if tool in BUCKETS:
        ref_plain(setup, "delete", work, files, BUCKETS[tool][0])
    else:
        aiobench_plain(setup, "-F", work, files, AIO_BUCKET)
    return runs


def per_unit(cpu_s: float, fig: Figures, unit: str) -> float:
    """``cpu_s`` in ns per request of ``fig`` (``unit`` = requests) or per MiB (bytes)."""
    amount = fig["requests"] if unit == "requests" else fig["bytes"] / MIB
    return cpu_s / amount * 1e9 if amount else NAN


def startup_runs(setup: S3Setup, tool: str, work: S3Work) -> None:
    """The tool's start-up run of ``work``: a put and a get of one object per thread, in a
    bucket of their own, deleted afterwards (untimed)."""
    for op in PHASES:
        fig = s3_once(setup, tool, op, work, 1, startup=True)
        setup.startup.setdefault(f"{work.key} {tool} {op}", []).append(fig)
    if tool in BUCKETS:
        ref_plain(setup, "delete", work, 1, BUCKETS[tool][1])
    else:
        aiobench_plain(setup, "-F", work, 1, AIO_STARTUP_BUCKET)


def startup_medians(startup: dict[str, list[Figures]]) -> dict[str, Figures]:
    """Per "work tool op": the median CPU time, requests and bytes of its start-up runs."""
    keys = ("process_cpu_s", "requests", "bytes")
    return {
        name: {key: median_of([f[key] for f in runs]) for key in keys}
        for name, runs in startup.items()
    }


def files_of(args: argparse.Namespace, work: S3Work) -> int:
    return int(args.s3_objects if work.small else args.s3_big_objects)


def guarded_pair(
    args: argparse.Namespace,
    setup: S3Setup,
    tool: str,
    work: S3Work,
    files: int,
    label: str,
    retry: bool = True,
) -> dict[str, Figures] | None:
    """:func:`pair` (and, but for the warm-up, the start-up runs after it); a failed
    aiobench command is noted (aiobench is not run again) and gives None; a failed bare
    loop ends the section."""
    try:
        runs = pair(args, setup, tool, work, files, label, retry)
        if retry:
            startup_runs(setup, tool, work)
        if not work.small:
            vacuum()
    except ToolError as exc:
        if tool in BUCKETS:
            raise
        aiobench_failed(setup, exc)
        return None
    return runs


def run_rounds(
    args: argparse.Namespace, setup: S3Setup
) -> dict[str, dict[str, dict[str, list[Figures]]]]:
    """work -> tool -> op -> the kept runs, in round order."""
    samples: dict[str, dict[str, dict[str, list[Figures]]]] = {
        w.key: {t: {op: [] for op in PHASES} for t in TOOLS} for w in WORKS
    }
    warm_files = max(1, min(args.s3_objects, 200))
    for tool in TOOLS:
        if tool in BUCKETS or setup.aiobench_error is None:
            guarded_pair(args, setup, tool, SMALL, warm_files, "warm-up (discarded)", False)
    for work in WORKS:
        files = files_of(args, work)
        for i in range(args.repeats):
            for tool in TOOLS[i % len(TOOLS) :] + TOOLS[: i % len(TOOLS)]:  # (rotated)
                if tool == "aiobench" and setup.aiobench_error is not None:
                    continue
                label = f"round {i + 1}/{args.repeats}"
                runs = guarded_pair(args, setup, tool, work, files, label)
                for op, fig in (runs or {}).items():
                    samples[work.key][tool][op].append(fig)
    return samples


def s3_commands(args: argparse.Namespace, setup: S3Setup) -> dict[str, list[str]]:
    """The measured commands, as the report shows them."""
    server, out = setup.server, "RESULT.json"
    aiobench = [
        aiobench_s3_argv(setup.aiobench, flag, w, files_of(args, w), server, AIO_BUCKET, out)
        for w in WORKS
        for flag in ("-w", "-r", "-F")
    ]
    ref = [
        ref_argv(setup.python, op, w, files_of(args, w), server.endpoint, REF_BUCKET)
        for w in WORKS
        for op in PHASES
    ]
    floor = [
        floor_argv(setup.python, op, w, files_of(args, w), server.endpoint, FLOOR_BUCKET)
        for w in WORKS
        for op in PHASES
    ]
    return {
        "aiobench": [shown(argv, server, setup.workdir) for argv in aiobench],
        "ref": [shown(argv, server, setup.workdir) for argv in ref],
        "floor": [shown(argv, server, setup.workdir) for argv in floor],
    }


def measure_s3(
    args: argparse.Namespace, workdir: str, aiobench_exe: list[str], weed: str
) -> tuple[dict[str, dict[str, dict[str, list[Figures]]]], Row]:
    root = os.path.join(workdir, "seaweedfs")
    with running_server(weed, root, max_volumes=MAX_VOLUMES) as server:
        setup = S3Setup(aiobench=aiobench_exe, python=args.python, server=server, workdir=workdir)
        for bucket in (*BUCKETS["ref"], *BUCKETS["floor"]):
            ref_plain(setup, "mkbucket", SMALL, 1, bucket)
        try:
            for bucket in (AIO_BUCKET, AIO_STARTUP_BUCKET):
                aiobench_plain(setup, "-d", SMALL, 1, bucket)
        except ToolError as exc:
            aiobench_failed(setup, exc)
        samples = run_rounds(args, setup)
        # Clean up as a user would: the (empty) buckets removed.
        for bucket in (*BUCKETS["ref"], *BUCKETS["floor"]):
            ref_plain(setup, "rmbucket", SMALL, 1, bucket)
        if setup.aiobench_error is None:
            try:
                for bucket in (AIO_BUCKET, AIO_STARTUP_BUCKET):
                    aiobench_plain(setup, "-D", SMALL, 1, bucket)
            except ToolError as exc:
                aiobench_failed(setup, exc)
        commands = s3_commands(args, setup)
    meta = {
        "server": server.version,
        "endpoint": server.endpoint,
        "threads": setup.threads,
        "iodepth": setup.iodepth,
        "objects_per_thread": {w.key: files_of(args, w) for w in WORKS},
        "repeats": args.repeats,
        "python": args.python,
        "aiobench_error": setup.aiobench_error,
        "aiobench_event_loop": ", ".join(sorted(LOOPS_SEEN)) or "?",
        "pythons": {tool: ", ".join(sorted(seen)) for tool, seen in PYTHONS_SEEN.items()},
        "startup": startup_medians(setup.startup),
        "retried": sum(
            int(f.get("attempts", 1)) - 1
            for tools in samples.values()
            for ops in tools.values()
            for runs in ops.values()
            for f in runs
        ),
        "commands": commands,
    }
    return samples, meta


def s3_summarise(
    samples: dict[str, dict[str, dict[str, list[Figures]]]], startup: dict[str, Figures]
) -> list[Row]:
    """One row per object size and operation: medians of both tools and their ratio."""
    rows = []
    for work in WORKS:
        metric = "objects_per_s" if work.small else "bytes_per_s"
        unit = "requests" if work.small else "bytes"
        for op in PHASES:
            med: dict[str, float] = {}
            cpu: dict[str, float] = {}
            server: dict[str, float] = {}
            phase_cpu: dict[str, float] = {}
            values: dict[str, list[float]] = {}
            for tool in TOOLS:
                runs = samples[work.key][tool][op]
                base = startup.get(f"{work.key} {tool} {op}", {})
                values[tool] = [f[metric] for f in runs]
                med[tool] = median_of(values[tool])
                cpu[tool] = median_of([cpu_per(f, base, unit) for f in runs])
                server[tool] = median_of([per_unit(f["server_cpu_s"], f, unit) for f in runs])
                # the bare loop's own figure: process_time around its requests
                phase_cpu[tool] = median_of(
                    [per_unit(f.get("phase_cpu_s", NAN), f, unit) for f in runs]
                )
            aio = samples[work.key]["aiobench"][op]
            rows.append(
                {
                    "work": work.key,
                    "title": work.title,
                    "op": op,
                    "metric": metric,
                    "cpu_unit": unit,
                    "median": med,
                    "samples": values,
                    "ratio": ratio_of(med["aiobench"], med["floor"]),
                    "ratio_ref": ratio_of(med["aiobench"], med["ref"]),
                    "cpu_ns": cpu,
                    "server_cpu_ns": server,
                    "phase_cpu_ns": phase_cpu,
                    "io_p99_ns": median_of([f["io_p99_ns"] for f in aio]),
                    "entry_p99_ns": median_of([f["entry_p99_ns"] for f in aio]),
                    "foreign_load": {
                        t: max((f["foreign_load"] for f in samples[work.key][t][op]), default=NAN)
                        for t in TOOLS
                    },
                }
            )
    return rows


def fmt_s3_rate(row: Row, value: float) -> str:
    if value != value:
        return "n/a"
    if row["metric"] == "objects_per_s":
        return f"{value:,.0f} ops/s"
    return f"{value / MIB:,.1f} MiB/s"


def fmt_cpu(value: float, per: str = "") -> str:
    """A CPU time in ns, ``per`` request or MiB (n/a alone when not measured)."""
    return "n/a" if value != value else fmt_ns(value) + per


def s3_targets(rows: list[Row]) -> list[Row]:
    """Issue #26's targets against the floor: 4 KiB PUT and GET ops/s >= 0.9x and client
    CPU per request <= 1.3x; 64 MiB client CPU per MiB <= 0.3 ms or the floor's, the
    larger; the aiohttp loop's figures beside them, without a target."""
    targets = []
    for row in rows:
        small = row["work"] == SMALL.key
        label = f"{'4 KiB' if small else '64 MiB'} {row['op'].upper()}"
        med, cpu = row["median"], row["cpu_ns"]
        floor = "bare asyncio.Protocol loop" if small else "bare socket loop"

        def rate(value: float, row: Row = row) -> str:
            return fmt_s3_rate(row, value)

        per = "request" if small else "MiB"
        unit = "ops/s" if small else "MiB/s"
        targets.append(
            target_row(
                "s3", f"{label}: {unit}", med["aiobench"], med["floor"], floor, rate, ">=",
                S3_RATE_TARGET if small else None,
            )
        )  # fmt: skip
        targets.append(
            target_row(
                "s3", f"{label}: client CPU per {per}", cpu["aiobench"], cpu["floor"], floor,
                fmt_cpu, "<=", S3_CPU_TARGET if small else None,
            )
        )  # fmt: skip
        phase = row["phase_cpu_ns"]
        targets.append(
            target_row(
                "s3", f"{label}: in-phase client CPU per {per}", phase["aiobench"],
                phase["floor"], floor, fmt_cpu, "<=", None,
            )
        )  # fmt: skip
        if not small:
            # The target's figure is the CPU per MiB more than the start-up run's (what one
            # more MiB costs); the in-phase one beside it also carries the phase's fixed
            # costs (its read buffers' first touch, ...). 0.3 ms, or the bare socket loop's
            # figure where that is larger: on loopback the client's CPU per MiB carries the
            # kernel's TCP work at the server's pace (the receiver wakes per segment train,
            # the sender pushes the server's side of the stack), which no client avoids.
            bound = max(S3_MIB_CPU_TARGET_NS, cpu["floor"])
            targets.append(
                target_row(
                    "s3", f"{label}: client CPU per MiB under 0.3 ms or the floor's",
                    cpu["aiobench"], bound, "#26 target (the larger)", fmt_cpu, "<=", 1.0,
                )
            )  # fmt: skip
            for what, value in (("", cpu["aiobench"]), (" (in-phase)", phase["aiobench"])):
                targets.append(
                    target_row(
                        "s3", f"{label}: client CPU per MiB under 0.3 ms{what}", value,
                        S3_MIB_CPU_TARGET_NS, "#26 target", fmt_cpu, "<=", None,
                    )
                )  # fmt: skip
        for what, key in ((unit, "median"), (f"client CPU per {per}", "cpu_ns")):
            targets.append(
                target_row(
                    "s3", f"{label}: {what}", row[key]["aiobench"], row[key]["ref"],
                    "bare aiohttp loop", rate if key == "median" else fmt_cpu, "<=", None,
                )
            )  # fmt: skip
    return targets


def print_s3_markdown(rows: list[Row], meta: Row) -> None:
    s3 = meta["s3"]
    t, d = s3["threads"], s3["iodepth"]
    print(
        f"## S3: aiobench vs the bare floor loops and an aiohttp loop, SeaweedFS on loopback, "
        f"{t} x iodepth {d}"
    )
    print()
    print_environment(meta)
    server = f"SeaweedFS `weed mini` ({s3['server']}) at {s3['endpoint']}"
    print(f"- Server: {server}, its data in the work dir")
    pythons = s3["pythons"]
    if pythons["aiobench"] and len({pythons[tool] for tool in TOOLS}) > 1:
        said = ", ".join(f"{TOOL_TITLES[tool]} {pythons[tool]}" for tool in TOOLS)
        print(f"- **Interpreters differ**: {said}")
    if s3["aiobench_error"]:
        print(f"- **aiobench: failed ({s3['aiobench_error']})**; the bare loops' figures alone")
    objects = s3["objects_per_thread"]
    print(
        f"- Work: {t} x {objects[SMALL.key]} objects of 4 KiB (PUT, then GET of each, a range "
        f"of 4 KiB), {t} x {objects[LARGE.key]} of 64 MiB (multipart PUT in 8 MiB parts, "
        f"GET in 8 MiB ranges); floor: {t * d} asyncio.Protocol connections for 4 KiB, {t} "
        "blocking sockets for 64 MiB (whole objects, a request each, bodies recv_into one "
        f"buffer); aiohttp loop: {t * d} coroutines for 4 KiB, {t} for 64 MiB with up to {d} "
        f"parts / ranges in flight each; aiobench: -t {t} --iodepth {d}; event loop: bare "
        f"loops uvloop, aiobench {s3['aiobench_event_loop']} (its meta.event_loop)"
    )
    print(
        f"- Runs: one discarded 4 KiB put + get per tool, then {s3['repeats']} round(s) per "
        "object size, the tools' put + get interleaved, the first rotating; "
        "medians. Rates: objects/s (aiobench: LAST DONE entries_per_s), MiB/s (bytes_per_s); "
        "client CPU: the process's user + system time (wait4) less the median of its "
        "start-up runs (the same command with one object per thread, after each pair), over "
        "the requests or MiB more than those; in-phase: the floor's own process_time "
        "around its requests, aiobench's event-loop thread from the phase's start to its "
        "last request (phases[].loop_cpu_ns; every S3 request runs on it); server CPU: "
        "weed's, per request or MiB"
    )
    startup = "; ".join(f"{k} {v['process_cpu_s']:.2f} s" for k, v in s3["startup"].items())
    print(f"- Start-up runs' CPU (medians): {startup or 'none measured'}")
    print()
    print(
        "| work | op | floor | aiohttp loop | aiobench | ratio to the floor | target "
        "| client CPU: floor | aiohttp loop | aiobench | ratio | target "
        "| in-phase CPU: floor | aiobench | ratio "
        "| server CPU: floor | aiobench | aiobench p99 request |"
    )
    print(
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    for row in rows:
        med, cpu, srv = row["median"], row["cpu_ns"], row["server_cpu_ns"]
        phase = row["phase_cpu_ns"]
        small = row["cpu_unit"] == "requests"
        per = " / request" if small else " / MiB"
        target = f">= {S3_RATE_TARGET:.1f}x" if small else "-"
        cpu_target = (
            f"<= {S3_CPU_TARGET:.1f}x" if small else f"<= {fmt_ns(S3_MIB_CPU_TARGET_NS)} or 1.0x"
        )
        print(
            f"| {row['title']} | {row['op'].upper()} | {fmt_s3_rate(row, med['floor'])} "
            f"| {fmt_s3_rate(row, med['ref'])} | {fmt_s3_rate(row, med['aiobench'])} "
            f"| {fmt_ratio(row['ratio'])} | {target} "
            f"| {fmt_cpu(cpu['floor'], per)} | {fmt_cpu(cpu['ref'], per)} "
            f"| {fmt_cpu(cpu['aiobench'], per)} "
            f"| {fmt_ratio(ratio_of(cpu['aiobench'], cpu['floor']))} | {cpu_target} "
            f"| {fmt_cpu(phase['floor'], per)} | {fmt_cpu(phase['aiobench'], per)} "
            f"| {fmt_ratio(ratio_of(phase['aiobench'], phase['floor']))} "
            f"| {fmt_cpu(srv['floor'], per)} | {fmt_cpu(srv['aiobench'], per)} "
            f"| {fmt_ns(row['io_p99_ns'])} |"
        )
    print()
    print(
        "Spread: the runs in run order and (max - min) / median; the largest share of CPU time "
        f"used by other processes during a kept run (runs above {meta['max_load']:.0%} were "
        f"retried up to {meta['retries']} times, {s3['retried']} retries in all):"
    )
    print()
    print("| work | op | tool | runs | spread | other load (max) |")
    print("|---|---|---|---|---:|---:|")
    for row in rows:
        for tool in TOOLS:
            values = row["samples"][tool]
            listed = ", ".join(fmt_s3_rate(row, v) for v in values) or "-"
            load = row["foreign_load"][tool]
            print(
                f"| {row['title']} | {row['op'].upper()} | {TOOL_TITLES[tool]} | {listed} "
                f"| {spread(values)} | {'-' if load != load else f'{load:.0%}'} |"
            )
    print()
    print(
        "Commands (KEY, SECRET = the server's generated credentials; RESULT.json = a file "
        "in the work dir; the bare loop gets the credentials in S3REF_ACCESS_KEY and "
        "S3REF_SECRET_KEY):"
    )
    print()
    print("```")
    for tool in TOOLS:
        print(f"# {TOOL_TITLES[tool]}")
        for command in s3["commands"][tool]:
            print(command)
    print("```")
