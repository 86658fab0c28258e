"""Pure logic of the benchmark report's s3 section (scripts/aiobench_bench/s3.py, s3ref.py,
s3server.py): the command lines, reading both tools' results, the CPU accounting, the
targets and the report when aiobench fails. Nothing here starts a server or a tool."""

from __future__ import annotations

import json
import math
import shlex
from typing import Any

import pytest

from aiobench_bench.cli import parse_args, section_list
from aiobench_bench.common import KIB, MIB, ToolError
from aiobench_bench.s3 import (
    LARGE,
    SMALL,
    aiobench_s3_argv,
    aiobench_s3_figures,
    cpu_per,
    failure_text,
    print_s3_markdown,
    ref_argv,
    ref_env,
    ref_figures,
    s3_summarise,
    s3_targets,
    shown,
    startup_medians,
)
from aiobench_bench.s3ref import deal, object_keys, ranges
from aiobench_bench.s3server import PORTS, Server, ports, weed_argv
from tests import s3server as test_server

SERVER = Server(
    endpoint="http://127.0.0.1:22736",
    access_key="AKEXAMPLE",
    secret_key="s3cr3t-value-xyz",
    region="us-east-1",
    pid=1,
    version="version 4.48",
)


def test_aiobench_command_is_the_s3_contract() -> None:
    argv = aiobench_s3_argv(
        ["python3", "-m", "aiobench"], "-w", SMALL, 3000, SERVER, "bench-aiobench", "OUT.json"
    )
    assert shlex.join(argv) == (
        "python3 -m aiobench -w -t 2 --iodepth 8 -n 1 -N 3000 -s 4K -b 4K "
        "--s3endpoints http://127.0.0.1:22736 --s3key AKEXAMPLE --s3secret s3cr3t-value-xyz "
        "--nolive --json OUT.json s3://bench-aiobench"
    )
    big = aiobench_s3_argv(["aiobench"], "-r", LARGE, 4, SERVER, "b", "O")
    assert big[big.index("-s") + 1 : big.index("-s") + 4] == ["64M", "-b", "8M"]
    assert big[1] == "-r"


def test_reference_command_and_environment_keep_credentials_off_the_command_line() -> None:
    argv = ref_argv("py", "get", LARGE, 4, SERVER.endpoint, "bench-ref")
    assert argv[:4] == ["py", "-m", "aiobench_bench.s3ref", "get"]
    assert argv[argv.index("--size") + 1] == str(64 * MIB)
    assert argv[argv.index("--block") + 1] == str(8 * MIB)
    assert argv[argv.index("--threads") + 1] == "2"
    assert argv[argv.index("--iodepth") + 1] == "8"
    assert SERVER.secret_key not in argv
    env = ref_env(SERVER)
    assert env["S3REF_SECRET_KEY"] == SERVER.secret_key
    assert env["PYTHONPATH"].split(":")[0].endswith("scripts")


def test_shown_commands_hide_the_secret_and_the_work_dir() -> None:
    argv = aiobench_s3_argv(["aiobench"], "-F", SMALL, 5, SERVER, "b", "/tmp/wd-x/r.json")
    text = shown(argv, SERVER, "/tmp/wd-x")
    assert SERVER.secret_key not in text and SERVER.access_key not in text
    assert "--s3key KEY --s3secret SECRET" in text
    assert "DIR/r.json" in text


def spawn_message(argv: list[str], code: int, stdout: str, stderr: str) -> str:
    """A ToolError message as aiobench_bench.procs.spawn writes it."""
    return (
        f"aiobench put 4k failed (exit {code}): {shlex.join(argv)}\n"
        f"stdout: {stdout}\nstderr: {stderr}"
    )


def test_failure_text_is_one_line_with_the_tools_error_and_no_credentials() -> None:
    argv = aiobench_s3_argv(["aiobench"], "-d", SMALL, 1, SERVER, "b", "O")
    option = spawn_message(argv, 2, "", "Error: No such option: --s3endpoints")
    secrets = (SERVER.secret_key, SERVER.access_key)
    assert failure_text(option, secrets) == "exit 2: Error: No such option: --s3endpoints"
    trace = spawn_message(
        argv,
        1,
        "",
        'Traceback (most recent call last):\n  File "x.py", line 5, in <module>\n'
        "ModuleNotFoundError: No module named 'aiobench'",
    )
    assert failure_text(trace, secrets) == (
        "exit 1: ModuleNotFoundError: No module named 'aiobench'"
    )
    leaky = spawn_message(argv, 1, "", f"Error: SignatureDoesNotMatch for {SERVER.access_key}")
    text = failure_text(leaky, secrets)
    assert SERVER.access_key not in text and SERVER.secret_key not in text
    assert text == "exit 1: Error: SignatureDoesNotMatch for ***"
    assert failure_text("aiobench: WRITE did 3 objects, not 4", secrets) == (
        "aiobench: WRITE did 3 objects, not 4"
    )


def aiobench_doc(phase: str, entries: int, size: int, block: int) -> dict[str, object]:
    """An aiobench result document in the shape of its --json (dir-mode style phases)."""
    ops = entries * (size // block)
    elapsed_ns = 2_000_000_000
    return {
        "schema_version": 3,
        "meta": {"ioengine": "s3", "python": "3.11.7", "event_loop": "uvloop"},
        "error": None,
        "phases": [
            {
                "phase": phase,
                "first_done": {},
                "last_done": {
                    "elapsed_ns": elapsed_ns,
                    "ops": ops,
                    "bytes": entries * size,
                    "entries": entries,
                    "iops": ops // 2,
                    "bytes_per_s": entries * size // 2,
                    "entries_per_s": entries // 2,
                    "cpu_percent": 40,
                },
                "latency": {
                    "io": {"percentiles_ns": {"50": 900_000, "99": 4_000_000}},
                    "entry": {"percentiles_ns": {"99": 5_000_000}},
                },
                "loop_cpu_ns": 700_000_000,
            }
        ],
    }


def test_aiobench_figures_from_its_json() -> None:
    fig = aiobench_s3_figures(aiobench_doc("READ", 6000, 4 * KIB, 4 * KIB), "get", SMALL, 6000)
    assert fig["objects_per_s"] == 3000
    assert fig["requests"] == 6000
    assert fig["io_p99_ns"] == 4_000_000
    assert fig["entry_p99_ns"] == 5_000_000
    assert fig["size_ok"] == 1.0
    assert fig["phase_cpu_s"] == 0.7  # the loop thread's, in the phase (loop_cpu_ns)
    big = aiobench_s3_figures(aiobench_doc("WRITE", 8, 64 * MIB, 8 * MIB), "put", LARGE, 8)
    assert big["requests"] == 64
    assert big["bytes_per_s"] == 4 * 64 * MIB


def test_aiobench_results_that_are_not_the_work_are_refused() -> None:
    with pytest.raises(ToolError, match="did 5999 objects, not 6000"):
        aiobench_s3_figures(aiobench_doc("READ", 5999, 4 * KIB, 4 * KIB), "get", SMALL, 6000)
    with pytest.raises(ToolError, match="no WRITE phase"):
        aiobench_s3_figures(aiobench_doc("READ", 10, 4 * KIB, 4 * KIB), "put", SMALL, 10)
    failed = aiobench_doc("WRITE", 10, 4 * KIB, 4 * KIB)
    failed["error"] = "Error: s3://b: NoSuchBucket"
    with pytest.raises(ToolError, match="NoSuchBucket"):
        aiobench_s3_figures(failed, "put", SMALL, 10)


def test_reference_figures_from_its_json_line() -> None:
    line = json.dumps(
        {
            "mode": "get",
            "requests": 6000,
            "objects": 6000,
            "bytes": 6000 * 4096,
            "elapsed_s": 4.0,
            "phase_cpu_s": 1.2,
        }
    )
    fig = ref_figures("noise\n" + line + "\n", SMALL, 6000)
    assert fig["objects_per_s"] == 1500
    assert fig["bytes_per_s"] == 6000 * 4096 / 4
    assert fig["phase_cpu_s"] == 1.2
    with pytest.raises(ToolError, match="6000 objects, not 6002"):
        ref_figures(line, SMALL, 6002)
    with pytest.raises(ToolError, match="unreadable output"):
        ref_figures("", SMALL, 1)


def test_cpu_per_request_and_mib_leave_the_start_up_run_out() -> None:
    run = {"process_cpu_s": 1.5, "requests": 6002.0, "bytes": 6002.0 * 4096}
    base = {"process_cpu_s": 0.3, "requests": 2.0, "bytes": 2.0 * 4096}
    assert cpu_per(run, base, "requests") == pytest.approx(200_000)  # 1.2 s / 6000
    big = {"process_cpu_s": 2.0, "requests": 80.0, "bytes": 8.0 * 64 * MIB}
    big_base = {"process_cpu_s": 0.8, "requests": 20.0, "bytes": 2.0 * 64 * MIB}
    assert cpu_per(big, big_base, "bytes") == pytest.approx(1.2 / 384 * 1e9)
    # no more CPU than the start-up run, or no start-up run: not a figure
    assert math.isnan(cpu_per({**run, "process_cpu_s": 0.2}, base, "requests"))
    assert math.isnan(cpu_per(run, {}, "requests"))


def figures(
    rate: float, cpu_s: float, requests: float, size: int, **extra: float
) -> dict[str, float]:
    return {
        "objects_per_s": rate,
        "bytes_per_s": rate * size,
        "requests": requests,
        "bytes": requests * size,
        "process_cpu_s": cpu_s,
        "server_cpu_s": 0.5,
        "foreign_load": 0.05,
        "io_p99_ns": 1e6,
        "entry_p99_ns": 1e6,
        **extra,
    }


def samples_of(aiobench: bool) -> dict[str, dict[str, dict[str, list[dict[str, float]]]]]:
    """Three rounds: the floor at 1000 / 1100 / 900 ops/s and 1.6 s of CPU, the aiohttp
    loop at 700 and 2.2 s, aiobench at 900 (0.9x) for PUT with 1.5 s and 800 (0.8x) for
    GET with 300 µs per request (the start-up runs take 0.3 s)."""
    out: dict[str, dict[str, dict[str, list[dict[str, float]]]]] = {}
    for work in (SMALL, LARGE):
        n = 6002.0 if work is SMALL else 64.0 * 8
        size = work.size if work is SMALL else work.block
        floor = [figures(r, 1.6, n, size, phase_cpu_s=1.0) for r in (1000, 1100, 900)]
        ref = [figures(700, 2.2, n, size, phase_cpu_s=1.5)] * 3
        aio = {
            # 64 MiB PUT: 1.27 s over 4080 MiB, 311 us per MiB: above 0.3 ms, below the floor's
            "put": [figures(900, 1.5 if work is SMALL else 1.57, n, size, phase_cpu_s=1.2)] * 3,
            "get": [figures(800, 0.3 + 6000 * 300e-6, n, size, phase_cpu_s=1.8)] * 3,
        }
        out[work.key] = {
            "floor": {"put": floor, "get": floor},
            "ref": {"put": ref, "get": ref},
            "aiobench": aio if aiobench else {"put": [], "get": []},
        }
    return out


STARTUP = {
    f"{w} {t} {op}": [{"process_cpu_s": 0.3, "requests": 2.0, "bytes": 2.0 * 4096}]
    for w in ("4k", "64m")
    for t in ("floor", "ref", "aiobench")
    for op in ("put", "get")
}


def test_targets_rows_ratios_and_the_cpu_target() -> None:
    rows = s3_summarise(samples_of(aiobench=True), startup_medians(STARTUP))
    put, get = rows[0], rows[1]
    assert (put["op"], get["op"]) == ("put", "get")
    assert put["median"]["floor"] == 1000 and put["median"]["ref"] == 700
    assert put["ratio"] == pytest.approx(0.9)
    assert put["ratio_ref"] == pytest.approx(900 / 700)
    assert get["cpu_ns"]["aiobench"] == pytest.approx(300_000)
    targets = {
        t["what"]: t for t in s3_targets(rows) if t["reference_label"] != "bare aiohttp loop"
    }
    assert targets["4 KiB PUT: ops/s"]["met"] is True
    assert targets["4 KiB GET: ops/s"]["met"] is False
    put_cpu = targets["4 KiB PUT: client CPU per request"]
    assert put_cpu["reference"] == pytest.approx(1.3 / 6000 * 1e9)  # the floor's
    assert put_cpu["ratio"] == pytest.approx(1.2 / 1.3) and put_cpu["met"] is True
    get_cpu = targets["4 KiB GET: client CPU per request"]
    assert get_cpu["ratio"] == pytest.approx(1.8 / 1.3) and get_cpu["met"] is False
    assert targets["64 MiB PUT: MiB/s"]["target"] is None
    assert targets["64 MiB GET: client CPU per MiB"]["target"] is None
    absolute = targets["64 MiB PUT: client CPU per MiB under 0.3 ms"]
    assert absolute["reference"] == 300_000 and absolute["target"] is None
    # (1.57 - 0.3 s of process CPU over the MiB more than the start-up run's)
    assert absolute["aiobench"] == pytest.approx(1.27 / 4080 * 1e9, rel=1e-2)
    assert absolute["ratio"] > 1.0  # above 0.3 ms ...
    bound = targets["64 MiB PUT: client CPU per MiB under 0.3 ms or the floor's"]
    floor_mib = (1.6 - 0.3) / 4080 * 1e9  # ... and below the floor's, which is larger
    assert bound["reference"] == pytest.approx(floor_mib, rel=1e-2)
    assert bound["ratio"] < 1.0 and bound["met"] is True
    in_phase_mib = targets["64 MiB GET: client CPU per MiB under 0.3 ms (in-phase)"]
    assert in_phase_mib["aiobench"] == pytest.approx(1.8 / 4096 * 1e9)  # 1.8 s over 4 GiB
    assert in_phase_mib["target"] is None
    in_phase = targets["4 KiB GET: in-phase client CPU per request"]
    assert in_phase["ratio"] == pytest.approx(1.8) and in_phase["target"] is None
    assert [(w, t["met"]) for w, t in targets.items() if t["target"] is not None] == [
        ("4 KiB PUT: ops/s", True),
        ("4 KiB PUT: client CPU per request", True),
        ("4 KiB GET: ops/s", False),
        ("4 KiB GET: client CPU per request", False),
        ("64 MiB PUT: client CPU per MiB under 0.3 ms or the floor's", True),
        ("64 MiB GET: client CPU per MiB under 0.3 ms or the floor's", False),  # 441 us
    ]
    aiohttp = [t for t in s3_targets(rows) if t["reference_label"] == "bare aiohttp loop"]
    assert len(aiohttp) == 8 and all(t["target"] is None for t in aiohttp)


def test_report_when_aiobench_failed_keeps_the_reference_figures(
    capsys: pytest.CaptureFixture[str],
) -> None:
    startup = startup_medians(STARTUP)
    rows = s3_summarise(samples_of(aiobench=False), startup)
    targets = s3_targets(rows)
    assert all(t["met"] is None for t in targets)  # nothing to decide without aiobench
    assert targets[0]["reference"] == 1000  # the floor's
    meta: dict[str, Any] = {
        "date": "D",
        "host": "h",
        "kernel": "k",
        "cpus": 2,
        "memory": "m",
        "aiobench_version": "0.1.0",
        "aiobench_ioengine": "?",
        "fio_version": "fio",
        "python": "3.11",
        "max_load": 0.15,
        "retries": 2,
        "s3": {
            "server": "version 4.48",
            "endpoint": SERVER.endpoint,
            "threads": 2,
            "iodepth": 8,
            "objects_per_thread": {"4k": 3000, "64m": 4},
            "repeats": 3,
            "aiobench_error": "exit 2: Error: No such option: --s3endpoints",
            "aiobench_event_loop": "?",
            "pythons": {"floor": "3.11.7", "ref": "3.11.7", "aiobench": ""},
            "startup": startup,
            "retried": 0,
            "commands": {"floor": ["FLOOR"], "ref": ["REF"], "aiobench": ["AIO"]},
        },
    }
    print_s3_markdown(rows, meta)
    out = capsys.readouterr().out
    failed = [line for line in out.splitlines() if "aiobench: failed" in line]
    assert failed == [
        "- **aiobench: failed (exit 2: Error: No such option: --s3endpoints)**; "
        "the bare loops' figures alone"
    ]
    assert "| 4 KiB objects | PUT | 1,000 ops/s | 700 ops/s | n/a | - |" in out
    assert "n/a / " not in out  # an unmeasured figure is n/a alone, without a unit
    assert "Interpreters differ" not in out  # aiobench did not run: nothing to compare
    meta["s3"]["pythons"] = {"floor": "3.11.7", "ref": "3.11.7", "aiobench": "3.12.1"}
    print_s3_markdown(rows, meta)
    assert (
        "- **Interpreters differ**: bare floor loop 3.11.7, bare aiohttp + SigV4 loop 3.11.7, "
        "aiobench 3.12.1" in capsys.readouterr().out
    )
    assert "Traceback" not in out


def test_reference_loop_keys_are_aiobench_names_dealt_to_its_coroutines() -> None:
    keys = object_keys(2, 3)
    assert keys == [
        ["r0/d0/r0-f0", "r0/d0/r0-f1", "r0/d0/r0-f2"],
        ["r1/d0/r1-f0", "r1/d0/r1-f1", "r1/d0/r1-f2"],
    ]
    parts = deal(keys, 2)
    assert parts == [
        ["r0/d0/r0-f0", "r0/d0/r0-f2"],
        ["r0/d0/r0-f1"],
        ["r1/d0/r1-f0", "r1/d0/r1-f2"],
        ["r1/d0/r1-f1"],
    ]
    assert sorted(k for p in deal(object_keys(2, 100), 8) for k in p) == sorted(
        k for rank in object_keys(2, 100) for k in rank
    )
    assert ranges(64 * MIB, 8 * MIB)[-1] == (56 * MIB, 8 * MIB)
    assert ranges(10, 4) == [(0, 4), (4, 4), (8, 2)]


def test_bench_server_ports_are_not_the_tests_ports() -> None:
    ours = {p + o for p in PORTS.values() for o in (0, 10000)}
    bases = test_server.port_bases()
    assert bases.step > len(ports(0))  # a block holds a server's ports and its HTTPS one
    theirs = {p + o for b in bases for p in ports(b).values() for o in (0, 10000)}
    theirs |= {b + len(ports(0)) + o for b in bases for o in (0, 10000)}  # HTTPS
    assert not ours & theirs
    assert max(ours | theirs) < 32768  # below Linux's ephemeral ports
    argv = weed_argv("weed", "/root", "/root/s3.json")
    assert "-s3.autoCreateBucket=false" in argv
    assert "-master.telemetry=false" in argv
    assert f"-s3.port={PORTS['s3.port']}" in argv


def test_s3_section_options() -> None:
    assert section_list("s3,data") == ["data", "s3"]
    quick = parse_args(["--quick"])
    assert (quick.s3_objects, quick.s3_big_objects) == (300, 2)
    full = parse_args([])
    assert (full.s3_objects, full.s3_big_objects) == (10000, 12)
    with pytest.raises(SystemExit) as exc:
        parse_args(["--s3-big-objects", "1"])
    assert exc.value.code == 2


def test_without_start_up_runs_or_aiobench_runs_the_figures_are_nan() -> None:
    rows = s3_summarise(samples_of(aiobench=False), {})
    assert math.isnan(rows[0]["cpu_ns"]["floor"])  # no start-up runs: no CPU figure
    assert math.isnan(rows[0]["median"]["aiobench"])
    assert math.isnan(rows[0]["ratio"])
