"""Pure logic of the bench's depth section: fio's iodepth distribution, the figures read from
each tool's result, the command lines and the targets. Nothing here runs a tool."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from aiobench_bench.common import NAN, ToolError
from aiobench_bench.depth import (
    AIOBENCH_POLL,
    ALL_ROWS,
    CACHE_ROWS,
    FIO_POLL,
    FIO_POLL_COMMAND,
    FIO_POLL_OPTIONS,
    LOOP_ROWS,
    PLAIN,
    ZRAM_ROWS,
    DepthRow,
    Tools,
    aiobench_argv,
    aiobench_depth_figures,
    compile_plain,
    depth_argv,
    depth_summarise,
    depth_targets,
    elbencho_figures,
    fio_argv,
    fio_depth_figures,
    fio_mean_depth,
    little_inflight,
    plain_argv,
    plain_figures,
    print_depth_markdown,
)

# fio's iodepth_level keys, all at 0 %.
LEVELS = {"1": 0.0, "2": 0.0, "4": 0.0, "8": 0.0, "16": 0.0, "32": 0.0, ">=64": 0.0}


@pytest.mark.parametrize(
    ("shares", "mean"),
    [
        ({"1": 100.0}, 1.0),
        ({"16": 100.0}, 16.0),
        ({"32": 99.9, "16": 0.1}, (32 * 99.9 + 16 * 0.1) / 100),  # ramping up to qd 32
        ({">=64": 100.0}, 64.0),
        ({"1": 50.0, "2": 50.0}, 1.5),
        ({"8": 33.0, "16": 33.0}, 12.0),  # rounded shares not adding up to 100 %
    ],
)
def test_fio_mean_depth_averages_the_buckets_lower_bounds(
    shares: dict[str, float], mean: float
) -> None:
    assert fio_mean_depth(LEVELS | shares) == pytest.approx(mean)


def test_fio_mean_depth_without_shares_is_nan() -> None:
    assert math.isnan(fio_mean_depth(LEVELS))
    assert math.isnan(fio_mean_depth({}))


def test_littles_law() -> None:
    # 100 k IOPS at 160 µs each: 16 in flight.
    assert little_inflight(100_000, 160_000) == pytest.approx(16.0)


def fio_doc(levels: dict[str, float]) -> dict[str, Any]:
    read = {
        "io_bytes": 4096 * 50_000,
        "total_ios": 50_000,
        "iops": 25_000.0,
        "bw_bytes": 25_000 * 4096,
        "runtime": 2000,
        "clat_ns": {"percentile": {"50.000000": 900, "99.000000": 1900}},
        "lat_ns": {"percentile": {"50.000000": 1000, "99.000000": 2000}},
    }
    job = {
        "error": 0,
        "read": read,
        "usr_cpu": 10.0,
        "sys_cpu": 40.0,
        "job_runtime": 32_000,  # 16 jobs x 2 s
        "iodepth_level": levels,
    }
    return {"jobs": [job]}


def test_fio_figures_take_lat_ns_and_the_depth_times_the_jobs() -> None:
    row = DepthRow("loop", 16, 16)
    fig = fio_depth_figures(fio_doc(LEVELS | {"16": 100.0}), row)
    assert (fig["p50_ns"], fig["p99_ns"]) == (1000.0, 2000.0)  # lat_ns, not clat_ns
    assert fig["mean_inflight"] == 256.0
    assert fig["cpu_per_op_ns"] == pytest.approx(0.5 * 32 / 50_000 * 1e9)
    assert math.isnan(fig["loop_cpu_per_op_ns"])


def aiobench_doc(**phase: Any) -> dict[str, Any]:
    return {
        "meta": {"ioengine": "native"},
        "error": None,
        "phases": [
            {
                "first_done": {"iops": 9, "bytes_per_s": 9},
                "last_done": {
                    "elapsed_ns": 2_000_000_000,
                    "ops": 100_000,
                    "iops": 50_000,
                    "bytes_per_s": 50_000 * 4096,
                    "cpu_percent": 25,
                },
                "latency": {"io": {"percentiles_ns": {"50": 700, "99": 1500}}},
                **phase,
            }
        ],
    }


def test_aiobench_figures_read_its_own_counters() -> None:
    doc = aiobench_doc(mean_inflight_ops=31.5, loop_cpu_ns=40_000_000)
    fig = aiobench_depth_figures(doc, cpus=2)
    assert (fig["iops"], fig["p50_ns"], fig["p99_ns"]) == (50_000.0, 700.0, 1500.0)
    assert fig["mean_inflight"] == 31.5
    assert fig["loop_cpu_per_op_ns"] == 400.0  # 40 ms over 100 k ops
    # 25 % of 2 CPUs over 2 s = 1 s of CPU over 100 k ops
    assert fig["cpu_per_op_ns"] == pytest.approx(10_000.0)


def test_aiobench_figures_of_an_older_aiobench_are_nan() -> None:
    fig = aiobench_depth_figures(aiobench_doc(), cpus=2)
    assert math.isnan(fig["mean_inflight"]) and math.isnan(fig["loop_cpu_per_op_ns"])


def test_elbencho_csv_gives_last_done_iops_and_mean_latency() -> None:
    text = (
        "operation,IOPS [first],IOPS [last],IO lat us [min],IO lat us [avg],entries lat avg\n"
        "READ,1000,1200,5,250,7\n"
    )
    fig = elbencho_figures(text)
    assert fig["iops"] == 1200.0
    assert fig["mean_lat_ns"] == 250_000.0
    with pytest.raises(ToolError, match="no result row"):
        elbencho_figures("operation,IOPS [last]\n")
    with pytest.raises(ToolError, match="lat avg column"):
        elbencho_figures("IOPS [last]\n5\n")


def test_rows_tools_and_references() -> None:
    assert [r.key for r in LOOP_ROWS] == ["loop-t1-qd1", "loop-t1-qd32", "loop-t16-qd16"]
    assert [r.slots for r in (*ZRAM_ROWS, *CACHE_ROWS)] == [32, 256, 2, 256]
    polling = (AIOBENCH_POLL, FIO_POLL)
    assert LOOP_ROWS[0].tools(False) == ("aiobench", "fio-libaio", "fio-io_uring", *polling)
    assert LOOP_ROWS[0].tools(True, True)[3:] == (PLAIN, "elbencho", *polling)
    # The polling pair only where one thread leaves a CPU to the device: -t 1 on a device.
    assert [r.key for r in ALL_ROWS if r.polls] == ["loop-t1-qd1", "loop-t1-qd32", "zram-t1-qd32"]
    for row in (LOOP_ROWS[2], ZRAM_ROWS[1], *CACHE_ROWS):
        assert not set(polling) & set(row.tools(True, True))
    assert PLAIN not in CACHE_ROWS[0].tools(False, True)  # (a device's syscalls only)
    assert CACHE_ROWS[0].tools(True) == ("aiobench", "fio-psync", "elbencho")
    assert (LOOP_ROWS[1].reference, LOOP_ROWS[1].iops_target) == ("fio-libaio", 1.0)
    assert (CACHE_ROWS[1].reference, CACHE_ROWS[1].iops_target) == ("fio-psync", 0.98)


def test_commands_use_direct_io_only_on_the_devices() -> None:
    dev = aiobench_argv(["aiobench"], LOOP_ROWS[2], "/dev/loop9", 5, "o.json")
    assert dev[:9] == ["aiobench", "-r", "-b", "4k", "-t", "16", "--iodepth", "16", "--direct"]
    assert dev[-3:] == ["/dev/loop9", "--json", "o.json"]
    cached = aiobench_argv(["aiobench"], CACHE_ROWS[1], "/f", 5, "o.json")
    assert "--direct" not in cached and cached[5] == "256"
    fio = fio_argv("fio", "libaio", LOOP_ROWS[1], "/dev/loop9", 5, "o.json")
    assert {"--ioengine=libaio", "--iodepth=32", "--numjobs=1", "--direct=1"} <= set(fio)
    assert {"--thread", "--invalidate=0", "--iomem_align=4096", "--time_based"} <= set(fio)
    assert "--direct=1" not in fio_argv("fio", "psync", CACHE_ROWS[0], "/f", 5, "o.json")


def test_the_polling_pair_polls_and_the_others_do_not() -> None:
    row = LOOP_ROWS[0]
    assert "--poll" in aiobench_argv(["aiobench"], row, "/dev/loop9", 5, "o.json", poll=True)
    assert "--poll" not in aiobench_argv(["aiobench"], row, "/dev/loop9", 5, "o.json")
    polled = fio_argv("fio", "libaio", row, "/dev/loop9", 5, "o.json", poll=True)
    plain = fio_argv("fio", "libaio", row, "/dev/loop9", 5, "o.json")
    assert set(polled) - set(plain) == {"--userspace_reap=1", "--iodepth_batch_complete_min=0"}
    assert not any("userspace_reap" in a or "complete_min" in a for a in plain)


def test_each_tool_of_a_polling_row_runs_its_own_command() -> None:
    """The names measure_rows runs map to their command lines: only the pair polls, and
    fio's polling is libaio (its name's tail is no fio engine)."""
    tools = Tools(["aiobench"], "fio", "elbencho", 2, "depthref")
    row = ZRAM_ROWS[0]
    argv = {
        tool: depth_argv(tools, row, tool, "/dev/zram0", 1 << 20, 5, "o.json")
        for tool in row.tools(True, True)
    }
    sleeping = ("aiobench", "fio-libaio", "fio-io_uring", PLAIN, "elbencho")
    assert set(argv) == {*sleeping, AIOBENCH_POLL, FIO_POLL}
    assert argv[AIOBENCH_POLL] == [*argv["aiobench"][:9], "--poll", *argv["aiobench"][9:]]
    assert argv[FIO_POLL] == [*argv["fio-libaio"], *FIO_POLL_OPTIONS]
    assert FIO_POLL_OPTIONS == ("--userspace_reap=1", "--iodepth_batch_complete_min=0")
    assert "--ioengine=io_uring" in argv["fio-io_uring"]
    for tool in sleeping:
        assert not {"--poll", *FIO_POLL_OPTIONS} & set(argv[tool])


def figures(iops: float, inflight: float, loop_cpu: float = NAN) -> dict[str, float]:
    return {
        "iops": iops,
        "p50_ns": 1.0,
        "p99_ns": 2.0,
        "cpu_per_op_ns": 3.0,
        "mean_inflight": inflight,
        "loop_cpu_per_op_ns": loop_cpu,
    }


def test_targets_per_row_and_the_loop_cpu_row() -> None:
    samples = {
        "loop-t16-qd16": {
            "aiobench": [figures(100.0, 254.0), figures(110.0, 255.0), figures(90.0, 250.0)],
            "fio-libaio": [figures(100.0, 256.0)] * 3,
            "fio-io_uring": [figures(200.0, 256.0)] * 3,
        },
        "cache-t2-qd1": {
            "aiobench": [figures(98.0, 1.99, loop_cpu=100.0)],
            "fio-psync": [figures(100.0, 2.0)],
        },
        "cache-t256-qd1": {
            "aiobench": [figures(97.0, 200.0, loop_cpu=111.0)],
            "fio-psync": [figures(100.0, 256.0)],
        },
    }
    summary = depth_summarise(samples)
    assert [r["key"] for r in summary["rows"]] == list(samples)  # in ALL_ROWS' order
    assert len(ALL_ROWS) == 7
    t = {row["what"]: row for row in depth_targets(summary)}
    assert len(t) == 2 + 2 + 1  # (the page-cache rows have no in-flight target)
    iops = t["loop device, -t 16 x qd 16: IOPS"]
    assert (iops["ratio"], iops["reference_label"], iops["met"]) == (1.0, "fio libaio", True)
    flight = t["loop device, -t 16 x qd 16: mean I/Os in flight"]
    assert flight["ratio"] == 254.0 / 256 and flight["met"] is True and flight["pct"]
    assert t["page cache, -t 2 x qd 1: IOPS"]["met"] is True  # 0.98x fio psync
    assert t["page cache, -t 256 x qd 1: IOPS"]["met"] is False  # 0.97x
    assert "page cache, -t 2 x qd 1: mean I/Os in flight" not in t
    cpu = t["page cache: loop-thread CPU per op, -t 256"]
    assert cpu["ratio"] == pytest.approx(1.11) and cpu["met"] is False


def test_a_missing_reference_leaves_the_target_undecided() -> None:
    summary = depth_summarise({"zram-t1-qd32": {"aiobench": [figures(5.0, 32.0)]}})
    t = {row["what"]: row for row in depth_targets(summary)}
    assert t["zram, -t 1 x qd 32: IOPS"]["met"] is None
    assert t["zram, -t 1 x qd 32: mean I/Os in flight"]["met"] is True


def test_the_plain_loops_line_gives_iops_in_flight_and_cpu_per_read() -> None:
    fig = plain_figures("50000 2000000000 64000000000\n", cpu_s=1.5)
    assert fig["iops"] == 25_000.0
    assert fig["mean_inflight"] == 32.0  # 64 s of latency over 2 s
    assert fig["cpu_per_op_ns"] == 30_000.0
    assert math.isnan(fig["p99_ns"])
    for bad in ("", "1 2", "0 1000 5", "a b c"):
        with pytest.raises((ToolError, ValueError)):
            plain_figures(bad, cpu_s=1.0)


def test_the_plain_loop_is_shown_beside_aiobench_without_a_target() -> None:
    samples = {
        "loop-t1-qd1": {
            "aiobench": [figures(90.0, 1.0)],
            "fio-libaio": [figures(100.0, 1.0)],
            PLAIN: [figures(95.0, 1.0)],
        }
    }
    t = {row["what"]: row for row in depth_targets(depth_summarise(samples))}
    plain = t["loop device, -t 1 x qd 1: IOPS against the plain C loop"]
    assert plain["ratio"] == pytest.approx(90 / 95) and plain["met"] is None
    assert t["loop device, -t 1 x qd 1: IOPS"]["met"] is False  # (still against fio)


def test_aiobench_polling_is_held_against_fio_polling() -> None:
    samples = {
        "loop-t1-qd1": {
            "aiobench": [figures(50.0, 1.0)],
            "fio-libaio": [figures(100.0, 1.0)],
            AIOBENCH_POLL: [figures(210.0, 1.0), figures(190.0, 1.0), figures(200.0, 1.0)],
            FIO_POLL: [figures(160.0, 1.0)],
        },
        "loop-t1-qd32": {  # (fio's polling with one read in flight: its sleeping wins)
            "aiobench": [figures(90.0, 32.0)],
            "fio-libaio": [figures(100.0, 32.0)],
            AIOBENCH_POLL: [figures(120.0, 32.0)],
            FIO_POLL: [figures(30.0, 1.0)],
        },
        "zram-t1-qd32": {  # (a report from before the pair: no row, no error)
            "aiobench": [figures(90.0, 32.0)],
            "fio-libaio": [figures(100.0, 32.0)],
        },
    }
    t = {row["what"]: row for row in depth_targets(depth_summarise(samples))}
    poll = t["loop device, -t 1 x qd 1: aiobench --poll IOPS"]
    assert poll["ratio"] == pytest.approx(200 / 160) and poll["met"] is True
    assert poll["reference_label"] == "fio libaio polling"
    assert t["loop device, -t 1 x qd 1: IOPS"]["ratio"] == pytest.approx(0.5)  # (unchanged)
    deep = t["loop device, -t 1 x qd 32: aiobench --poll IOPS"]
    assert deep["ratio"] == pytest.approx(1.2) and deep["met"] is True
    assert deep["reference_label"] == "fio libaio sleeping (its faster)"
    assert not any("zram, -t 1 x qd 32: aiobench --poll" in what for what in t)
    assert "zram, -t 1 x qd 32: IOPS" in t


def depth_meta(commands: dict[str, str]) -> dict[str, Any]:
    host = {"date": "today", "host": "h", "kernel": "k", "cpus": 2, "memory": "4 GiB"}
    tools = {"aiobench_version": "1", "aiobench_ioengine": "native", "fio_version": "fio-3"}
    depth = {
        "size": 1 << 30,
        "runtime": 5,
        "repeats": 3,
        "elbencho": None,
        "zram": None,
        "loop": {"device": "/dev/loop9", "backing_fs": "ext4", "dio": True},
        "fill": "aiobench -w DEV",
        "commands": commands,
    }
    return host | tools | {"python": "3.12", "depth": depth}


def test_the_table_lists_the_polling_pair_and_older_reports_render(
    capsys: pytest.CaptureFixture[str],
) -> None:
    polled = fio_argv("fio", "libaio", LOOP_ROWS[0], "DEV", 5, "OUT", poll=True)
    samples = {
        "loop-t1-qd1": {
            "aiobench": [figures(45.0, 1.0)],
            "fio-libaio": [figures(45.0, 1.0)],
            AIOBENCH_POLL: [figures(55.0, 1.0)],
            FIO_POLL: [figures(54.0, 1.0)],
        }
    }
    print_depth_markdown(depth_summarise(samples), depth_meta({FIO_POLL_COMMAND: " ".join(polled)}))
    text = capsys.readouterr().out
    assert f"| loop device, -t 1 x qd 1 | {AIOBENCH_POLL} |" in text
    assert f"| loop device, -t 1 x qd 1 | {FIO_POLL} |" in text
    assert "--userspace_reap=1 --iodepth_batch_complete_min=0" in text
    # A report from before the pair: its columns and its command are simply not there.
    older = {"loop-t1-qd1": {"aiobench": [figures(45.0, 1.0)], "fio-libaio": [figures(45.0, 1.0)]}}
    print_depth_markdown(depth_summarise(older), depth_meta({"fio": "fio --name=depth"}))
    text = capsys.readouterr().out
    assert "| loop device, -t 1 x qd 1 | aiobench |" in text
    assert FIO_POLL not in text and AIOBENCH_POLL not in text


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_the_plain_loop_reads_with_its_depth_in_flight(tmp_path: Path) -> None:
    """depthref.c built as the bench builds it, run on a file: every read counted, and at
    a depth of 4 on 2 threads up to 8 in flight (its own latency sum over its time)."""
    exe = compile_plain(str(tmp_path))
    assert exe is not None and os.access(exe, os.X_OK)
    data = tmp_path / "data"
    data.write_bytes(os.urandom(1 << 20))
    for row, most in ((DepthRow("loop", 1, 1), 1.0), (DepthRow("loop", 2, 4), 8.0)):
        proc = subprocess.run(
            plain_argv(exe, row, str(data), 0.3),
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        if proc.returncode != 0 and "Invalid argument" in proc.stderr:
            pytest.skip(f"no O_DIRECT on {tmp_path}'s filesystem")
        assert proc.returncode == 0, proc.stderr
        fig = plain_figures(proc.stdout, cpu_s=0.1)
        assert fig["iops"] > 0
        assert 0 < fig["mean_inflight"] <= most * 1.001


def test_the_plain_loop_refuses_what_it_cannot_read(tmp_path: Path) -> None:
    exe = compile_plain(str(tmp_path)) if shutil.which("cc") else None
    if exe is None:
        pytest.skip("no C compiler")
    for argv in (
        [exe],
        [exe, str(tmp_path / "missing"), "1", "1", "1"],
        [exe, str(tmp_path), "1", "1", "1"],
    ):
        proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)
        assert proc.returncode != 0 and proc.stdout == "" and proc.stderr
