"""Pure logic of the benchmark report (scripts/aiobench_bench): option parsing, the command
lines it builds and the formatting of its Markdown report. Nothing here runs a tool."""

from __future__ import annotations

import argparse
import math

import pytest

from aiobench_bench.cli import parse_args, section_list
from aiobench_bench.common import GIB, MIB, NAN, size_arg
from aiobench_bench.data import WORKLOAD, startup_argv
from aiobench_bench.report import (
    fmt_ns,
    fmt_pct,
    fmt_target,
    json_safe,
    print_targets,
    spread,
    target_row,
    targets_heading,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("64M", 64 * MIB), ("1g", GIB), ("1536m", 1536 * MIB), (" 2G ", 2 * GIB), ("1T", 1 << 40)],
)
def test_size_options_read_aiobench_sizes(text: str, expected: int) -> None:
    args = parse_args(["--size", text, "--seed2-size", text, "--depth-size", text])
    assert args.size == expected
    assert args.seed2_size == expected
    assert args.depth_size == expected


@pytest.mark.parametrize(
    ("option", "text", "message"),
    [
        ("--size", "1000k", "--size: size must be a positive multiple of 1 MiB"),
        ("--size", "0", "--size: size must be a positive multiple of 1 MiB"),
        ("--seed2-size", "abc", "--seed2-size: invalid size 'abc'"),
        # aiobench's -s grammar: binary units (k or KiB, not KB), no space before them
        ("--size", "512MB", "--size: invalid size '512MB'"),
        ("--size", "1 G", "--size: invalid size '1 G'"),
    ],
)
def test_bad_size_is_a_usage_error_naming_the_option(
    option: str, text: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args([option, text])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"error: {message}" in err
    assert "Traceback" not in err


def test_quick_and_full_defaults_and_explicit_values_win() -> None:
    quick = parse_args(["--quick"])
    assert (quick.size, quick.seed2_size, quick.runtime) == (64 * MIB, 256 * MIB, 1)
    full = parse_args([])
    assert (full.size, full.seed2_size, full.runtime) == (GIB, 2 * GIB, 5)
    assert (quick.depth_size, full.depth_size) == (256 * MIB, GIB)
    assert parse_args(["--quick", "--size", "128M"]).size == 128 * MIB


def test_sections_come_in_report_order() -> None:
    assert section_list("ramp, data") == ["data", "ramp"]
    assert section_list("ramp,depth,seed2") == ["seed2", "depth", "ramp"]
    assert section_list("ramp,all") == ["all"]
    with pytest.raises(argparse.ArgumentTypeError, match="unknown section 'nope'"):
        section_list("data,nope")


@pytest.mark.parametrize(("value", "text"), [(GIB, "1G"), (1536 * MIB, "1536M"), (8192, "8K")])
def test_size_arg_is_k_m_g_notation(value: int, text: str) -> None:
    assert size_arg(value) == text


def test_startup_runs_do_one_block_per_thread() -> None:
    files = ["DIR/file0", "DIR/file1"]
    rand = startup_argv(["aiobench"], WORKLOAD["randread-4k-t2"], files, GIB, "OUT")
    assert rand[rand.index("--randamount") + 1] == "8K"  # 4 KiB x 2 threads
    assert "-s" not in rand
    seq = startup_argv(["aiobench"], WORKLOAD["seqwrite-1m"], files, GIB, "OUT")
    assert seq[seq.index("-s") + 1] == "1M"  # one 1 MiB block of each thread's file


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (0.41, "0.41 ns"),
        (12.4, "12 ns"),
        (950.0, "950 ns"),
        (2_500.0, "2.5 µs"),
        (250_000.0, "250 µs"),
        (5_000_000.0, "5.00 ms"),
        (25_000_000.0, "25.0 ms"),
        (3e9, "3.00 s"),
        (NAN, "n/a"),
    ],
)
def test_fmt_ns(ns: float, text: str) -> None:
    assert fmt_ns(ns) == text


def test_percentages_targets_and_spread() -> None:
    assert fmt_pct(0.05) == "5.0%"
    assert fmt_pct(0.5) == "50%"
    assert fmt_pct(NAN) == "n/a"
    assert fmt_target(">=", 0.95) == ">= 0.95x"
    assert fmt_target("<=", 0.5, pct=True) == "≤ 50%"
    assert fmt_target(">=", None) == "-"
    assert spread([90.0, 100.0, 110.0]) == "20%"
    assert spread([NAN]) == "-"


def test_target_rows_meet_or_miss_and_nan_is_undecided() -> None:
    fmt = str
    above = target_row("data", "x", 2.0, 1.0, "fio", fmt, ">=", 1.5)
    assert (above["ratio"], above["met"]) == (2.0, True)
    assert target_row("data", "x", 2.0, 1.0, "fio", fmt, "<=", 1.5)["met"] is False
    assert target_row("data", "x", NAN, 1.0, "fio", fmt, ">=", 1.5)["met"] is None
    assert target_row("data", "x", 2.0, 0.0, "fio", fmt, ">=", 1.5)["met"] is None
    assert target_row("data", "x", 2.0, 1.0, "fio", fmt, ">=", None)["met"] is None


def test_json_safe_turns_nan_and_infinities_into_null() -> None:
    doc = {"a": NAN, "b": [1.0, math.inf, (2, -math.inf)], "c": {"d": 0.5, "e": "s"}}
    assert json_safe(doc) == {"a": None, "b": [1.0, None, [2, None]], "c": {"d": 0.5, "e": "s"}}


def test_targets_table(capsys: pytest.CaptureFixture[str]) -> None:
    meta = {
        "date": "2026-12-01 16:00 UTC",
        "host": "vm",
        "cpus": 2,
        "aiobench_version": "0.1.0",
        "aiobench_ioengine": "native",
        "fs": "tmpfs",
        "sections": ["data", "ramp"],
        "skipped": {"seed2": "needs root (it sets up a loop device)"},
        "quick": True,
    }
    targets = [
        target_row("data", "w", 2.0, 1.0, "fio", "{:.1f}".format, ">=", 0.95),
        target_row("ramp", "r", 10.0, 100.0, "LAST DONE", "{:.0f}".format, ">=", 0.5, 0.1)
        | {"pct": True},
    ]
    print_targets(targets, meta)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "## Targets (issues #13 and #16)"
    assert lines[2].startswith("- 2026-12-01 16:00 UTC, vm, 2 CPUs; aiobench 0.1.0 (engine:")
    assert lines[2].endswith("**--quick: smoke-test settings, the figures mean little**")
    assert lines[3] == "- seed2: skipped, needs root (it sets up a loop device)"
    assert lines[5] == (
        "| section | target | aiobench | reference | reference figure | ratio | target | met? |"
    )
    assert lines[7] == "| data | w | 2.0 | fio | 1.0 | 2.00x | >= 0.95x | yes |"
    assert lines[8] == "| ramp | r | 10 | LAST DONE | 100 | 10% | ≥ 50% | **no** |"
    assert lines[-1] == "1 of 2 targets met."


def test_targets_heading_names_the_sections_issues() -> None:
    # --docs replaces the docs section of the same heading: a netbench run must not
    # overwrite the data sections' targets
    assert targets_heading(["netbench"]) == "Targets (issue #24)"
    assert targets_heading(["depth", "startup"]) == "Targets (issue #28)"
    assert targets_heading(["data", "depth"]) == "Targets (issues #13, #16 and #28)"
    assert targets_heading(["s3", "netbench"]) == "Targets (issues #24 and #26)"
    assert targets_heading([]) == "Targets"
