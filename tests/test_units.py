"""Pure unit tests of aiobench.units: sizes, bracket ranges, rates and formatting."""

from __future__ import annotations

import pytest

from aiobench.errors import ConfigError
from aiobench.units import (
    MIB,
    expand_brackets,
    format_elapsed,
    format_latency,
    format_seconds,
    format_us,
    parse_duration,
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
        # the IEC spellings of the same binary units (#27)
        ("4KiB", 4 * KIB),
        ("4kib", 4 * KIB),
        ("64MiB", 64 * MIB),
        ("20GiB", 20 * GIB),
        ("2TiB", 2 << 40),
        ("1PiB", 1 << 50),
        ("7EiB", 7 << 60),
    ],
)
def test_parse_size(text: str, expected: int) -> None:
    assert parse_size(text, "-s/--size") == expected


@pytest.mark.parametrize(
    "text",
    ["4KB", "1.5M", "-1", "abc", "", "k", "4 k", "4kk", "4KiBB", "1e3", "0x10", "+4k", "4b", "1z"],
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


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("4KB", "sizes are binary: 4k or 4KiB = 4096 bytes"),
        ("4kb", "sizes are binary: 4k or 4KiB = 4096 bytes"),
        ("20GB", "sizes are binary: 20g or 20GiB = 21474836480 bytes"),
        ("1.5g", "want a whole number: 1536m or 1536MiB"),
        ("1.5M", "want a whole number: 1536k or 1536KiB"),
        ("0.5k", "want a whole number of bytes: 512"),
        ("1.3k", "want a whole number with an optional binary suffix, e.g. 4k or 4KiB"),
        ("1.5", "want a whole number with an optional binary suffix, e.g. 4k or 4KiB"),
    ],
)
def test_a_size_as_other_tools_spell_it_gets_the_spelling_meant(text: str, hint: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_size(text, "-s/--size")
    assert str(info.value).startswith(f"-s/--size: invalid size '{text}' ({hint}")


LIMIT_S = 2**60 // S


@pytest.mark.parametrize(
    ("text", "expected_ns"),
    [
        ("0", 0),
        ("10", 10 * S),
        ("10s", 10 * S),
        ("10S", 10 * S),
        ("2.5", 2500 * MS),
        ("0.001", MS),
        ("1m", 60 * S),
        ("1.5m", 90 * S),
        ("1h", 3600 * S),
        (" 7 ", 7 * S),
        ("0.000000001", 1),
        ("1.0000000009", S),  # (past the nanosecond: dropped)
        (str(LIMIT_S), LIMIT_S * S),
    ],
)
def test_parse_duration(text: str, expected_ns: int) -> None:
    assert parse_duration(text, "--timelimit", max_s=LIMIT_S) == expected_ns


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("-1", "must not be negative (got -1)"),
        ("-2.5s", "must not be negative (got -2.5s)"),
        ("10x", "invalid duration '10x' (want seconds, or a number with s, m or h"),
        ("1d", "invalid duration '1d'"),
        ("1ms", "invalid duration '1ms'"),
        ("1e3", "invalid duration '1e3'"),
        ("1 m", "invalid duration '1 m'"),
        (".5", "invalid duration '.5'"),
        ("", "invalid duration ''"),
        ("0.0000000001", "shorter than a nanosecond"),
        (str(LIMIT_S + 1), f"at most {LIMIT_S} s"),
        ("9" * 40, f"at most {LIMIT_S} s"),
        ("1" * 5000 + "h", f"at most {LIMIT_S} s"),
    ],
)
def test_parse_duration_refuses_and_names_the_option(text: str, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_duration(text, "--timelimit", max_s=LIMIT_S)
    assert str(info.value).startswith(f"--timelimit: {problem}")


def test_whole_seconds_only_where_asked() -> None:
    assert parse_duration("1.5m", "--phasedelay", max_s=LIMIT_S, whole=True) == 90 * S
    with pytest.raises(ConfigError, match=r"^--phasedelay: whole seconds only \(got 2.5\)$"):
        parse_duration("2.5", "--phasedelay", max_s=LIMIT_S, whole=True)


@pytest.mark.parametrize(
    ("ns", "text"),
    [(0, "0"), (10 * S, "10"), (2500 * MS, "2.5"), (MS, "0.001"), (1, "0.000000001")],
)
def test_format_seconds(ns: int, text: str) -> None:
    assert format_seconds(ns) == text
