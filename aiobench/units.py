"""Parsing and formatting of sizes, durations, rates and bracketed paths; pure."""

from __future__ import annotations

import itertools
import math
import re

from aiobench.errors import ConfigError

_SUFFIX_SHIFT = {"": 0, "k": 10, "m": 20, "g": 30, "t": 40, "p": 50, "e": 60}
_SIZE_RE = re.compile(r"([0-9]+)([kmgtpe]?)", re.IGNORECASE)
_BRACKET_RE = re.compile(r"\[(\d+)-(\d+)\]")

NS_PER_US = 1_000
NS_PER_MS = 1_000_000
NS_PER_S = 1_000_000_000
MIB = 1 << 20
# Sizes, offsets and their sums are off_t to the kernel: a signed 64-bit count of bytes.
MAX_BYTES = 2**63 - 1
# Digits a number may have before it is certainly too large for anything here (2^63 has
# 19); longer ones are refused before int() sees them (it refuses over 4300 digits).
_MAX_DIGITS = 19
_BYTE_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def parse_size(text: str, option: str) -> int:
    """Parse ``4k``/``20G``/``4096`` into bytes (binary suffixes, any case), at most
    :data:`MAX_BYTES`."""
    match = _SIZE_RE.fullmatch(text.strip())
    if match is None:
        raise ConfigError(
            f"{option}: invalid size '{text}' (want an integer with an optional "
            "K/M/G/T/P/E suffix, e.g. 4k or 20g)"
        )
    digits = match.group(1).lstrip("0")
    shift = _SUFFIX_SHIFT[match.group(2).lower()]
    if len(digits) > _MAX_DIGITS or int(digits or "0") << shift > MAX_BYTES:
        raise ConfigError(
            f"{option}: '{text.strip()}' is more than the OS can address "
            "(2^63-1 bytes, just under 8E)"
        )
    return int(digits or "0") << shift


def format_bytes(count: int) -> str:
    """A byte count for messages: ``512 B``, ``4.0 KiB``, ``80.1 GiB``, ``7.0 EiB``."""
    if count < 1024:
        return f"{count} B"
    exponent = min((count.bit_length() - 1) // 10, len(_BYTE_UNITS))
    return f"{count / (1 << (10 * exponent)):.1f} {_BYTE_UNITS[exponent - 1]}"


def _bracket_ranges(path: str) -> list[tuple[str, str, int, int]]:
    """(first, last, lo, hi) of every ``[a-b]`` range in ``path``, checked."""
    out = []
    for first, last in _BRACKET_RE.findall(path):
        if max(len(first.lstrip("0")), len(last.lstrip("0"))) > _MAX_DIGITS:
            raise ConfigError(f"PATH: {path}: bracket range [{first}-{last}] is too large")
        lo, hi = int(first), int(last)
        if lo > hi:
            raise ConfigError(f"path '{path}': bracket range [{first}-{last}] runs backwards")
        out.append((first, last, lo, hi))
    return out


def bracket_count(path: str) -> int:
    """How many paths :func:`expand_brackets` makes of ``path``, without making them."""
    return math.prod(hi - lo + 1 for _, _, lo, hi in _bracket_ranges(path))


def expand_brackets(path: str) -> list[str]:
    """Expand every ``[a-b]`` range in ``path``; ``[01-10]`` keeps zero padding.

    The ranges are those of ``path`` as given (the numbers put in are never read as
    brackets again); the first range varies slowest.
    """
    ranges = _bracket_ranges(path)
    if not ranges:
        return [path]
    literals = _BRACKET_RE.split(path)[::3]  # split() also returns the two groups
    choices = []
    for first, _, lo, hi in ranges:
        width = len(first) if first.startswith("0") and len(first) > 1 else 0
        choices.append([f"{i:0{width}d}" for i in range(lo, hi + 1)])
    out = []
    for numbers in itertools.product(*choices):
        parts = [literals[0]]
        for number, literal in zip(numbers, literals[1:], strict=True):
            parts += (number, literal)
        out.append("".join(parts))
    return out


def rate(total: int, elapsed_ns: int) -> int:
    """elbencho's truncating rate: ``int(total * 1e6 / elapsed_us)``; 0 when no time passed."""
    elapsed_us = elapsed_ns // NS_PER_US
    if elapsed_us <= 0:
        return 0
    return int(total * 1e6 / elapsed_us)


def format_elapsed(elapsed_ns: int) -> str:
    """Elapsed time as elbencho prints it: ``123ms``, ``11.559s``, ``2m3.241s``, ``1h0m0s``."""
    ms_total = elapsed_ns // NS_PER_MS
    if ms_total < 1_000:
        return f"{ms_total}ms"
    secs, ms = divmod(ms_total, 1_000)
    if secs < 60:
        return f"{secs}.{ms:03d}s"
    mins, secs = divmod(secs, 60)
    if mins < 60:
        return f"{mins}m{secs}.{ms:03d}s"
    hours, mins = divmod(mins, 60)
    return f"{hours}h{mins}m{secs}s"


def _three_digits(value: float) -> str:
    """Three significant digits without exponent: 4.08, 24.0, 123."""
    if value >= 99.95:
        return f"{value:.0f}"
    if value >= 9.995:
        return f"{value:.1f}"
    return f"{value:.2f}"


def format_latency(ns: float) -> str:
    """A latency for the min/avg/max row: ``742ns``, ``6.7us``, ``109us``, ``4.08ms``, ``1.23s``.

    Like elbencho above 10 us (integer microseconds, then 3 significant digits in ms and s);
    finer below, because aiobench measures in nanoseconds. The unit is picked after
    rounding, so 999.6 ns prints as ``1.0us``, never ``1000ns``.
    """
    if ns < 999.5:
        return f"{ns:.0f}ns"
    us = ns / NS_PER_US
    if us < 9.95:
        return f"{us:.1f}us"
    if us < 999.5:
        return f"{us:.0f}us"
    ms = ns / NS_PER_MS
    if ms < 999.5:
        return f"{_three_digits(ms)}ms"
    return f"{_three_digits(ns / NS_PER_S)}s"


def format_us(ns: float) -> str:
    """A percentile value in microseconds, as in elbencho's ``lat % us`` row (6.7, 11, 2048)."""
    us = ns / NS_PER_US
    return f"{us:.1f}" if us < 9.95 else f"{us:.0f}"
