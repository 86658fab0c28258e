"""Pure unit tests of aiobench.units: sizes, bracket ranges, rates and formatting."""

from __future__ import annotations

import pytest

from aiobench.errors import ConfigError
from aiobench.units import (
    MIB,
    expand_brackets,
    format_elapsed,
    format_latency,
    format_us,
    parse_size,
    rate,
)

KIB = 1 << 10
GIB = 1 << 30
S = 1_000_000_000
MS = 1_000_000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0),
        ("4096", 4096),
        ("1", 1),
        ("4k", 4 * KIB),
        ("4K", 4 * KIB),
        ("1m", MIB),
        ("64M", 64 * MIB),
        ("20g", 20 * GIB),
        ("20G", 20 * GIB),
        ("2t", 2 << 40),
        ("3T", 3 << 40),
        ("1p", 1 << 50),
        ("5P", 5 << 50),
        ("1e", 1 << 60),
        ("2E", 2 << 60),
        (" 8k ", 8 * KIB),
        ("007k", 7 * KIB),
    ],
)
def test_parse_size(text: str, expected: int) -> None:
    assert parse_size(text, "-s/--size") == expected


@pytest.mark.parametrize(
    "text",
    ["4KB", "1.5M", "-1", "abc", "", "k", "4 k", "4kk", "4KiB", "1e3", "0x10", "+4k", "4b", "1z"],
)
@pytest.mark.parametrize("option", ["-s/--size", "-b/--block", "--randamount"])
def test_parse_size_rejects_and_names_the_option(text: str, option: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_size(text, option)
    message = str(info.value)
    assert message.startswith(f"{option}: ")
    assert f"'{text}'" in message
    assert info.value.exit_code == 2


def test_expand_brackets_simple_range() -> None:
    assert expand_brackets("file[1-4]") == ["file1", "file2", "file3", "file4"]


def test_expand_brackets_keeps_zero_padding() -> None:
    out = expand_brackets("/data/f[01-10]")
    assert out == [f"/data/f{i:02d}" for i in range(1, 11)]
    assert out[0] == "/data/f01" and out[-1] == "/data/f10"


def test_expand_brackets_two_ranges_in_order() -> None:
    assert expand_brackets("d[1-2]/f[8-10]") == [
        "d1/f8", "d1/f9", "d1/f10", "d2/f8", "d2/f9", "d2/f10",
    ]  # fmt: skip


def test_expand_brackets_single_element_and_suffix() -> None:
    assert expand_brackets("f[3-3].dat") == ["f3.dat"]
    assert expand_brackets("f[9-11]x") == ["f9x", "f10x", "f11x"]


@pytest.mark.parametrize("path", ["file", "/dev/loop0", "f[a-b]", "f[1]", "f[-2]", "f[1-]"])
def test_expand_brackets_without_range(path: str) -> None:
    assert expand_brackets(path) == [path]


def test_expand_brackets_backwards_range() -> None:
    with pytest.raises(ConfigError, match=r"f\[3-1\].*backwards"):
        expand_brackets("f[3-1]")


def test_rate_spec_example() -> None:
    """10 GiB in 4 MiB blocks over 11.559 s: 885 MiB/s and 221 IOPS (SPEC §5)."""
    elapsed_ns = 11_559 * MS
    total_bytes = 10 * GIB
    ops = total_bytes // (4 * MIB)
    assert ops == 2560
    assert rate(total_bytes, elapsed_ns) // MIB == 885
    assert rate(ops, elapsed_ns) == 221
    assert rate(total_bytes, elapsed_ns) == int(total_bytes * 1e6 / 11_559_000)


def test_rate_truncates_to_whole_microseconds() -> None:
    assert rate(1_000, S) == 1_000
    assert rate(3, 2 * S) == 1  # 1.5 truncated
    assert rate(1, 1_999) == 1_000_000  # 1.999 us counts as 1 us, like elbencho


@pytest.mark.parametrize("elapsed_ns", [0, 1, 999])
def test_rate_without_elapsed_time_is_zero(elapsed_ns: int) -> None:
    assert rate(12345, elapsed_ns) == 0


@pytest.mark.parametrize(
    ("elapsed_ns", "text"),
    [
        (0, "0ms"),
        (999_999, "0ms"),
        (123 * MS, "123ms"),
        (999 * MS + 999_999, "999ms"),
        (S, "1.000s"),
        (11_559 * MS, "11.559s"),
        (59_999 * MS, "59.999s"),
        (60 * S, "1m0.000s"),
        (123_241 * MS, "2m3.241s"),
        (366_809 * MS, "6m6.809s"),
        (385_007 * MS, "6m25.007s"),
        (3_599_999 * MS, "59m59.999s"),
        (3_600 * S, "1h0m0s"),
        (3_600 * S + 999 * MS, "1h0m0s"),
        (2 * 3_600 * S + 3 * 60 * S + 4 * S, "2h3m4s"),
    ],
)
def test_format_elapsed(elapsed_ns: int, text: str) -> None:
    assert format_elapsed(elapsed_ns) == text


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (0, "0ns"),
        (742, "742ns"),
        (999, "999ns"),
        (1_000, "1.0us"),
        (6_700, "6.7us"),
        (9_940, "9.9us"),
        (10_000, "10us"),
        (109_000, "109us"),
        (999_000, "999us"),
        (1_000_000, "1.00ms"),
        (4_080_000, "4.08ms"),
        (24_000_000, "24.0ms"),
        (123_000_000, "123ms"),
        (1_230_000_000, "1.23s"),
        (12_300_000_000, "12.3s"),
        (225_000_000_000, "225s"),
    ],
)
def test_format_latency(ns: int, text: str) -> None:
    assert format_latency(ns) == text


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (0, "0.0"),
        (700, "0.7"),
        (6_700, "6.7"),
        (6_240, "6.2"),
        (10_000, "10"),
        (11_000, "11"),
        (244_000, "244"),
        (2_048_000, "2048"),
        (2_056_191, "2056"),
    ],
)
def test_format_us(ns: int, text: str) -> None:
    assert format_us(ns) == text


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (999.6, "1.0us"),
        (9_999, "10us"),
        (999_600, "1.00ms"),
        (99_960_000, "100ms"),
        (999_600_000, "1.00s"),
    ],
)
def test_format_latency_picks_the_unit_after_rounding(ns: float, text: str) -> None:
    assert format_latency(ns) == text
