"""The figures of one run, read from aiobench's and fio's JSON results."""

from __future__ import annotations

from aiobench_bench.common import NAN, Doc, ToolError

# The aiobench engines seen in the runs' JSON (meta.ioengine; absent before #13).
ENGINES_SEEN: set[str] = set()


def note_engine(doc: Doc) -> None:
    ENGINES_SEEN.add(str(doc.get("meta", {}).get("ioengine") or "python (no meta.ioengine)"))


def aiobench_p99(phase: Doc) -> float:
    """p99 of the phase's per-operation IO latency (phases[].latency.io.percentiles_ns)."""
    value = ((phase.get("latency") or {}).get("io") or {}).get("percentiles_ns", {}).get("99")
    return NAN if value is None else float(value)


def aiobench_figures(doc: Doc) -> dict[str, float]:
    if doc.get("error"):
        raise ToolError(f"aiobench reported an error: {doc['error']}")
    note_engine(doc)
    phase = doc["phases"][0]
    last = phase["last_done"]
    first = phase["first_done"]
    return {
        "iops": float(last["iops"]),
        "bytes_per_s": float(last["bytes_per_s"]),
        "ops": float(last["ops"]),
        "first_done_iops": float(first["iops"]),
        "first_done_bytes_per_s": float(first["bytes_per_s"]),
        "elapsed_s": last["elapsed_ns"] / 1e9,
        "p99_ns": aiobench_p99(phase),
    }


def fio_percentile(side: Doc, kind: str, point: str = "99.000000") -> float:
    """A latency percentile of fio's ``kind`` (clat_ns or lat_ns; lat_ns has percentiles
    only with --lat_percentiles=1)."""
    value = (side.get(kind) or {}).get("percentile", {}).get(point)
    return NAN if value is None else float(value)


def fio_cpu_s(job: Doc) -> float:
    """fio's own CPU time of the group: usr_cpu and sys_cpu are percentages of job_runtime,
    the sum of the jobs' run times in ms (stat.c: usr_time * 100 / total_run_time, times
    summed over the group's jobs). With --thread each job's times come from its own thread's
    getrusage (RUSAGE_THREAD), so fio's start-up and main thread are not in it."""
    runtime_ms: float | None = job.get("job_runtime")
    if runtime_ms is None or "usr_cpu" not in job:
        return NAN
    return (float(job["usr_cpu"]) + float(job["sys_cpu"])) / 100 * runtime_ms / 1e3


def fio_figures(doc: Doc, write: bool) -> dict[str, float]:
    jobs = doc.get("jobs") or []
    if len(jobs) != 1:
        raise ToolError(f"fio: expected one group-reported job, got {len(jobs)}")
    job = jobs[0]
    if job.get("error"):
        raise ToolError(f"fio reported error {job['error']}")
    side = job["write" if write else "read"]
    if not side.get("io_bytes"):
        raise ToolError("fio moved no data")
    ops = float(side["total_ios"])
    cpu = fio_cpu_s(job)
    return {
        "iops": float(side["iops"]),
        "bytes_per_s": float(side["bw_bytes"]),
        "ops": ops,
        "elapsed_s": side["runtime"] / 1e3,
        # Sync engines (psync) have no submission phase (slat N = 0): clat is the whole call.
        "p99_ns": fio_percentile(side, "clat_ns"),
        "lat_p99_ns": fio_percentile(side, "lat_ns"),
        "cpu_s": cpu,
        "cpu_per_op_ns": cpu / ops * 1e9 if ops else NAN,
    }
