"""The netbench section: aiobench --netbench (a server rank and a client rank under
mpirun, on loopback, one client thread) against a plain C request/response loop
(netref.c, compiled here at bench time: a forked server and a client, the same pattern
as elbencho's netbench), and iperf3 where installed (a one-way stream, -b 1m only).

Rounds interleave the tools (the one that goes first alternates); figures are medians.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import time
from dataclasses import dataclass

from aiobench_bench.common import MIB, NAN, Doc, Figures, Row, ToolError, Unavailable, log
from aiobench_bench.report import fmt_ratio, print_environment, target_row
from aiobench_bench.results import note_engine

NET_TARGET = 0.9  # aiobench / the plain loop, both rows (issue #24)
REF = "plain C loop"
IPERF = "iperf3"
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


@dataclass(frozen=True)
class NetWork:
    key: str
    title: str
    block: int
    resp: int
    metric: str  # bytes_per_s or blocks_per_s
    share: int  # -s is the section's --size divided by this


NET_WORKS = (
    NetWork("1m", "-b 1m --respsize 1, MiB/s", MIB, 1, "bytes_per_s", 1),
    NetWork("4k4k", "-b 4k --respsize 4k, round trips/s", 4096, 4096, "blocks_per_s", 16),
)


def amount(w: NetWork, size: int) -> int:
    return max(size // w.share, w.block)


def aiobench_net_argv(exe: list[str], w: NetWork, size: int, out: str) -> list[str]:
    return [
        *exe,
        "--netbench",
        "--servers",
        "127.0.0.1",
        "--clients",
        "127.0.0.1",
        "-w",
        "-t",
        "1",
        "-b",
        str(w.block),
        "--respsize",
        str(w.resp),
        "-s",
        str(amount(w, size)),
        "--nolive",
        "--json",
        out,
    ]


def aiobench_net_figures(doc: Doc, w: NetWork, size: int) -> Figures:
    """aiobench's figures, once sure that it moved what was asked."""
    note_engine(doc)
    phase = doc["phases"][0]
    last = phase["last_done"]
    want = amount(w, size)
    if phase["phase"] != "NETBENCH" or last["bytes"] != want:
        raise ToolError(f"aiobench netbench moved {last['bytes']} bytes, not {want}")
    elapsed = last["elapsed_ns"] / 1e9
    return {
        "bytes_per_s": last["bytes"] / elapsed,
        "blocks_per_s": last["ops"] / elapsed,
        "elapsed_s": elapsed,
    }


def netref_figures(stdout: str, w: NetWork, size: int) -> Figures:
    """The plain loop's line: elapsed ns, blocks, bytes sent, bytes received."""
    fields = stdout.split()
    if len(fields) != 4:
        raise ToolError(f"{REF}: unexpected output {stdout.strip()!r}")
    ns, blocks, sent, received = (int(f) for f in fields)
    want = amount(w, size)
    if sent != want or received != blocks * w.resp:
        raise ToolError(f"{REF}: moved {sent} bytes and got {received} back")
    return {"bytes_per_s": sent / (ns / 1e9), "blocks_per_s": blocks / (ns / 1e9)}


def iperf_figures(doc: Doc) -> Figures:
    rate = doc["end"]["sum_received"]["bits_per_second"] / 8
    return {"bytes_per_s": rate, "blocks_per_s": NAN}


def compile_ref(workdir: str) -> str:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise Unavailable("no C compiler for the plain reference loop")
    source = os.path.join(os.path.dirname(__file__), "netref.c")
    exe = os.path.join(workdir, "netref")
    subprocess.run([cc, "-O2", "-o", exe, source], check=True)
    return exe


def _run(argv: list[str], label: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    if proc.returncode != 0:
        raise ToolError(f"{label} failed ({proc.returncode}): {proc.stderr.strip()[-300:]}")
    return proc.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def iperf_once(iperf: str, w: NetWork, size: int) -> Figures:
    port = str(_free_port())
    server = subprocess.Popen(
        [iperf, "-s", "-1", "-p", port], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        time.sleep(0.3)  # (its listener)
        out = _run(
            [
                iperf,
                "-c",
                "127.0.0.1",
                "-p",
                port,
                "-n",
                str(amount(w, size)),
                "-l",
                str(w.block),
                "-J",
            ],
            IPERF,
        )
    finally:
        server.wait(timeout=30)
    return iperf_figures(json.loads(out))


def measure_netbench(
    args: argparse.Namespace, workdir: str, aiobench_exe: list[str]
) -> tuple[dict[str, dict[str, list[Figures]]], Row]:
    ref = compile_ref(workdir)
    iperf = shutil.which("iperf3")
    out = os.path.join(workdir, "aiobench-net.json")
    env = os.environ | ROOT_ENV
    load_before = os.getloadavg()
    samples: dict[str, dict[str, list[Figures]]] = {}
    commands: dict[str, dict[str, str]] = {}
    for w in NET_WORKS:
        tools = ["aiobench", "ref", *(["iperf3"] if iperf and w.metric == "bytes_per_s" else [])]
        samples[w.key] = {t: [] for t in tools}
        argv = aiobench_net_argv(aiobench_exe, w, args.size, out)
        commands[w.key] = {
            "aiobench": " ".join(argv),
            "ref": f"netref {amount(w, args.size)} {w.block} {w.resp}",
        }
        if "iperf3" in tools:
            commands[w.key]["iperf3"] = (
                f"iperf3 -s -1 -p PORT; iperf3 -c 127.0.0.1 -p PORT -n {amount(w, args.size)} "
                f"-l {w.block} -J"
            )
        for i in range(args.repeats + 1):  # the first round: a discarded warm-up
            for tool in tools if i % 2 == 0 else tools[::-1]:
                if tool == "aiobench":
                    _run(argv, "aiobench --netbench", env)
                    with open(out, encoding="utf-8") as handle:
                        fig = aiobench_net_figures(json.load(handle), w, args.size)
                elif tool == "ref":
                    fig = netref_figures(
                        _run([ref, *commands[w.key]["ref"].split()[1:]], REF), w, args.size
                    )
                else:
                    assert iperf is not None
                    fig = iperf_once(iperf, w, args.size)
                if i > 0:
                    samples[w.key][tool].append(fig)
                    figure = fig[w.metric]
                    log(f"netbench {w.key:5} round {i}/{args.repeats} {tool:9} {figure:14.0f}")
    meta = {
        "size": args.size,
        "repeats": args.repeats,
        "iperf3": iperf,
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "commands": commands,
    }
    return samples, meta


def net_summarise(samples: dict[str, dict[str, list[Figures]]]) -> list[Row]:
    rows = []
    for w in NET_WORKS:
        if w.key not in samples:
            continue
        values = {t: [f[w.metric] for f in runs] for t, runs in samples[w.key].items()}
        med = {t: statistics.median(x) if x else NAN for t, x in values.items()}
        ref = med.get("ref", NAN)
        rows.append(
            {
                "work": w.key,
                "title": w.title,
                "metric": w.metric,
                "median": med,
                "samples": values,
                "ratio": med["aiobench"] / ref if ref else NAN,
                "iperf_ratio": med["aiobench"] / med["iperf3"] if med.get("iperf3") else NAN,
            }
        )
    return rows


def _fmt(metric: str, value: float) -> str:
    if value != value:
        return "n/a"
    return f"{value / MIB:,.0f} MiB/s" if metric == "bytes_per_s" else f"{value:,.0f}/s"


def net_targets(rows: list[Row]) -> list[Row]:
    out = []
    for row in rows:
        metric = row["metric"]

        def fmt(value: float, metric: str = metric) -> str:
            return _fmt(metric, value)

        med = row["median"]
        out.append(
            target_row(
                "netbench", row["title"], med["aiobench"], med["ref"], REF, fmt, ">=", NET_TARGET
            )
        )
        if "iperf3" in med:
            out.append(
                target_row(
                    "netbench", row["title"], med["aiobench"], med["iperf3"], IPERF, fmt, ">=", None
                )
            )
    return out


def print_net_markdown(rows: list[Row], meta: Row) -> None:
    net = meta["netbench"]
    print("## Netbench: aiobench --netbench vs a plain C loop and iperf3, loopback")
    print()
    print_environment(meta)
    print(
        f"- Load average before/after: {net['loadavg_before'][0]:.2f} / "
        f"{net['loadavg_after'][0]:.2f}; {net['repeats']} round(s) after a discarded warm-up, "
        "tools interleaved (the first alternating); figures are medians"
    )
    print(
        f"- {REF}: scripts/aiobench_bench/netref.c compiled with cc -O2 at bench time (a "
        "forked server, one client, TCP_NODELAY, connect untimed); iperf3: a one-way stream "
        "(no answers), shown for scale only"
    )
    print()
    print(f"| workload | aiobench | {REF} | iperf3 | aiobench / {REF} | aiobench / iperf3 |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in rows:
        m, med = row["metric"], row["median"]
        print(
            f"| {row['title']} | {_fmt(m, med['aiobench'])} | {_fmt(m, med['ref'])} "
            f"| {_fmt(m, med.get('iperf3', NAN))} | {fmt_ratio(row['ratio'])} "
            f"| {fmt_ratio(row['iperf_ratio'])} |"
        )
    print()
    print("Commands:")
    print()
    print("```")
    for key, cmds in net["commands"].items():
        for tool, cmd in cmds.items():
            print(f"# {key} {tool}")
            print(cmd)
    print("```")
