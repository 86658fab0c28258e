"""What ``--status`` knows of the run (from the state, the progress and the result
document) and how it is said: storagebench's lines, ``--verbose``'s report, ``--json``.

The report is storagebench's: one row per (host, target) -- that target's threads on that
host, their bytes over the slowest of them -- then Min and Max naming host and target, the
average and the aggregate, in KiB/s; aiobench's extras (latency percentiles, first and last
done) follow. Pure but for reading the state directory.
"""

from __future__ import annotations

import json
import os
import socket
from typing import Any

from aiobench.storagebench import layout, state
from aiobench.text import printable
from aiobench.units import format_elapsed, format_latency

KIB = 1024
NS_PER_S = 1_000_000_000
# The progress file is read from its end; its last record is smaller than this.
LIVE_TAIL_BYTES = 256 * 1024
EXTRA_PERCENTILES = ("50", "90", "99", "99.9")


def collect(statedir: str) -> dict[str, Any] | None:
    """Everything ``--status`` says, as one document; None when no run was started."""
    from aiobench.storagebench.detached import read_result

    current = state.read_state(statedir)
    if current is None:
        return None
    status, why = current.get("status"), current.get("why")
    if status == state.RUNNING and not _going_on(statedir, current):
        status = state.STALE
        why = (
            "its background process is gone (it was killed, or the host rebooted); "
            "the results so far are below if it wrote any"
        )
    result = read_result(statedir) if status != state.RUNNING else None
    report = per_target_report(current, result) if result is not None else None
    return {
        "statedir": statedir,
        "operation": current.get("operation"),
        "status": status,
        "why": why,
        "started": current.get("started"),
        "ended": current.get("ended"),
        "targets": current.get("targets"),
        "threads_per_target": current.get("threads"),
        "size_bytes": current.get("size_bytes"),
        "block_bytes": current.get("block_bytes"),
        "iodepth": current.get("iodepth"),
        "direct": current.get("direct"),
        "direct_why": current.get("direct_why"),
        "hosts": host_status(current, status, result),
        "progress": progress(statedir) if status == state.RUNNING else None,
        "report": report,
        "result": result,
    }


def _going_on(statedir: str, current: dict[str, Any]) -> bool:
    supervisor = current.get("supervisor")
    if supervisor is None:  # (the start has not recorded it yet: the lock says)
        return state.held(statedir)
    return state.alive(supervisor)


def host_names(current: dict[str, Any], result: dict[str, Any] | None) -> list[str]:
    """One name per host of the run: as given to --hosts, with its rank (and the name it
    calls itself, once the result says and when that differs)."""
    hosts = current.get("hosts")
    if not hosts:
        return [socket.gethostname()]
    mpi = (result or {}).get("meta", {}).get("mpi") or {}
    real = mpi.get("hosts") if isinstance(mpi.get("hosts"), list) else None
    names = []
    for rank, name in enumerate(hosts):
        own = real[rank] if real and len(real) == len(hosts) else name
        names.append(f"{name} [rank {rank}]" if own == name else f"{name} ({own}) [rank {rank}]")
    return names


def host_status(
    current: dict[str, Any], status: Any, result: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """Each host's status: the run's, but for an error on one rank of several."""
    error = (result or {}).get("error")
    failed_rank = error.get("rank") if isinstance(error, dict) else None
    rows = []
    for rank, name in enumerate(host_names(current, result)):
        mine = status
        if status == state.ERROR and isinstance(failed_rank, int) and failed_rank != rank:
            mine = state.STOPPED  # (it stopped because another rank failed)
        rows.append({"host": name, "status": mine})
    return rows


def progress(statedir: str) -> dict[str, Any] | None:
    """The run's last progress record (aiobench's --livejson): done %, bytes, rate."""
    try:
        with open(os.path.join(statedir, state.LIVE), "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - LIVE_TAIL_BYTES))
            lines = handle.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            record = json.loads(line)
        except ValueError:
            continue  # (the line being written)
        if isinstance(record, dict) and record.get("record") == "interval":
            keys = ("phase", "done_percent", "done_bytes", "bytes_per_s", "end_ns")
            return {key: record.get(key) for key in keys}
    return None


def per_target_report(current: dict[str, Any], result: dict[str, Any]) -> dict[str, Any] | None:
    """storagebench's per (host, target) rows, with min, max, average and aggregate."""
    phases = [p for p in result.get("phases", []) if isinstance(p, dict)]
    if not phases:
        return None
    phase = phases[-1]
    targets: list[str] = current.get("targets") or []
    threads = int(current.get("threads") or 1)
    names = host_names(current, result)
    cells: dict[tuple[int, int], list[int]] = {}  # (host, target) -> [bytes, slowest ns]
    for thread in phase.get("threads", []):
        host, target = layout.place(int(thread["rank"]), threads, len(targets))
        cell = cells.setdefault((host, target), [0, 0])
        cell[0] += int(thread["bytes"])
        cell[1] = max(cell[1], int(thread["elapsed_ns"]))
    rows: list[dict[str, Any]] = []
    for (host, target), (nbytes, elapsed_ns) in sorted(cells.items()):
        kib_per_s = nbytes / KIB * NS_PER_S / elapsed_ns if elapsed_ns else 0.0
        rows.append(
            {
                "host": names[host] if host < len(names) else f"rank {host}",
                "target_index": target,
                "target": targets[target],
                "bytes": nbytes,
                "elapsed_ns": elapsed_ns,
                "kib_per_s": kib_per_s,
            }
        )
    if not rows:
        return None
    low = min(rows, key=lambda row: row["kib_per_s"])
    high = max(rows, key=lambda row: row["kib_per_s"])
    total = sum(row["kib_per_s"] for row in rows)
    return {
        "phase": phase.get("phase"),
        "min": low,
        "max": high,
        "average_kib_per_s": total / len(rows),
        "aggregate_kib_per_s": total,
        "rows": rows,
        "latency": (phase.get("latency") or {}).get("io"),
        "first_done": phase.get("first_done"),
        "last_done": phase.get("last_done"),
    }


def kib_text(value: float) -> str:
    """KiB/s as storagebench prints them (whole), but a rate below 1 with two digits."""
    if value >= 1 or value <= 0:
        return str(int(value))
    return f"{value:.2g}" if value >= 0.01 else f"{value:.1e}"


def _where(row: dict[str, Any]) -> str:
    return (
        f"host: {printable(row['host'])}, target: #{row['target_index']} {printable(row['target'])}"
    )


def render(doc: dict[str, Any], *, verbose: bool) -> str:
    """``--status`` as text."""
    op = str(doc["operation"]).capitalize()
    lines = [
        f"{op} storage benchmark, started {doc['started']}: {len(doc['targets'])} targets x "
        f"{doc['threads_per_target']} threads, {doc['size_bytes']} bytes per thread, blocks "
        f"of {doc['block_bytes']} bytes, O_DIRECT {'on' if doc['direct'] else 'off'}",
    ]
    counts: dict[str, int] = {}
    for host in doc["hosts"]:
        counts[host["status"]] = counts.get(host["status"], 0) + 1
    lines.append("Server benchmark status: " + ", ".join(f"{k}: {n}" for k, n in counts.items()))
    lines += [f"  {printable(h['host'])}: {h['status']}" for h in doc["hosts"]]
    if doc["why"]:
        lines.append(f"{doc['status']}: {printable(str(doc['why']))}")
    done = doc["progress"]
    if done is not None:
        lines.append(
            f"Progress: {done['done_percent']} % done, {int(done['done_bytes'] or 0) // KIB} "
            f"KiB, {int(done['bytes_per_s'] or 0) // KIB} KiB/s now, "
            f"{format_elapsed(int(done['end_ns'] or 0))} elapsed"
        )
    elif doc["status"] == state.RUNNING:
        lines.append("Progress: starting")
    report = doc["report"]
    if verbose and report is not None:
        lines += _report_lines(op, report, doc["status"])
    elif verbose and doc["status"] != state.RUNNING:
        lines.append("No results: the run wrote none.")
    return "\n".join(lines) + "\n"


def _report_lines(op: str, report: dict[str, Any], status: Any) -> list[str]:
    partial = " (so far: the run was stopped)" if status in (state.STOPPED, state.STALE) else ""
    low, high = report["min"], report["max"]
    lines = [
        f"{op} benchmark results{partial}:",
        f"Min throughput:       {kib_text(low['kib_per_s']):>12} KiB/s  {_where(low)}",
        f"Max throughput:       {kib_text(high['kib_per_s']):>12} KiB/s  {_where(high)}",
        f"Avg throughput:       {kib_text(report['average_kib_per_s']):>12} KiB/s",
        f"Aggregate throughput: {kib_text(report['aggregate_kib_per_s']):>12} KiB/s",
        "List of all targets:",
    ]
    for n, row in enumerate(report["rows"], 1):
        lines.append(f"  {n:>3} {kib_text(row['kib_per_s']):>12} KiB/s  {_where(row)}")
    lines.append("aiobench's extras:")
    latency = report["latency"]
    if isinstance(latency, dict) and latency.get("count"):
        points = latency.get("percentiles_ns") or {}
        parts = [f"min {format_latency(latency['min_ns'])}"]
        parts += [f"p{p} {format_latency(points[p])}" for p in EXTRA_PERCENTILES if p in points]
        parts.append(f"max {format_latency(latency['max_ns'])}")
        lines.append(f"  Latency per block:  {', '.join(parts)}")
    for label, key in (("First done", "first_done"), ("Last done", "last_done")):
        mark = report.get(key)
        if isinstance(mark, dict):
            lines.append(
                f"  {label + ':':<19} {format_elapsed(int(mark['elapsed_ns']))}, "
                f"{int(mark['bytes']) // KIB} KiB, {int(mark['bytes_per_s']) // KIB} KiB/s"
            )
    return lines
