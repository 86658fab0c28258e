"""Parsing and formatting of sizes, durations, rates and bracketed paths; pure."""

from __future__ import annotations

import itertools
import math
import re

from aiobench.errors import ConfigError

_SUFFIXES = "kmgtpe"
_SUFFIX_SHIFT = {"": 0} | {suffix: 10 * (i + 1) for i, suffix in enumerate(_SUFFIXES)}
# elbencho's spelling (4k, 20G: binary, any case), or the IEC one of the same (4KiB, 20GiB).
_SIZE_RE = re.compile(r"([0-9]+)(?:([kmgtpe])(ib)?)?", re.IGNORECASE)
# What people bring from other tools: a decimal-looking unit (4KB) or a fraction (1.5g).
_SIZE_HABIT_RE = re.compile(r"([0-9]*)(?:\.([0-9]*))?([kmgtpe]?)(b?)", re.IGNORECASE)
_SIZE_WANTED = "a whole number with an optional binary suffix, e.g. 4k or 4KiB, 20g or 20GiB"
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
# A duration: seconds (10, 2.5), or a number with s, m or h (10s, 1.5m, 1h).
_DURATION_RE = re.compile(r"([0-9]+)(?:\.([0-9]+))?([smh]?)", re.IGNORECASE)
_DURATION_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600}
DURATION_FORMS = "seconds, or a number with s, m or h, e.g. 10, 2.5, 90s, 1m, 1h"
_BYTE_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def parse_size(text: str, option: str) -> int:
    """Parse ``4k``/``20G``/``4096``/``4KiB`` into bytes (binary suffixes K/M/G/T/P/E, any
    case, or KiB/MiB/...), at most :data:`MAX_BYTES`."""
    match = _SIZE_RE.fullmatch(text.strip())
    if match is None:
        raise ConfigError(f"{option}: invalid size '{text}' ({_size_hint(text.strip())})")
    digits = match.group(1).lstrip("0")
    shift = _SUFFIX_SHIFT[(match.group(2) or "").lower()]
    if len(digits) > _MAX_DIGITS or int(digits or "0") << shift > MAX_BYTES:
        raise ConfigError(
            f"{option}: '{text.strip()}' is more than the OS can address "
            "(2^63-1 bytes, just under 8E)"
        )
    return int(digits or "0") << shift


def parse_duration(text: str, option: str, *, max_s: int, whole: bool = False) -> int:
    """Parse ``10``/``2.5``/``10s``/``1.5m``/``1h`` into nanoseconds (digits past the
    nanosecond are dropped), at most ``max_s`` seconds; ``whole``: whole seconds only."""
    given = text.strip()
    match = _DURATION_RE.fullmatch(given)
    if match is None:
        if given.startswith("-") and _DURATION_RE.fullmatch(given[1:]):
            raise ConfigError(f"{option}: must not be negative (got {given})")
        raise ConfigError(f"{option}: invalid duration '{text}' (want {DURATION_FORMS})")
    digits, fraction, unit = match.group(1).lstrip("0"), match.group(2) or "", match.group(3)
    if len(digits) > _MAX_DIGITS:
        raise ConfigError(f"{option}: at most {max_s} s (got {given})")
    ns_per_unit = _DURATION_SECONDS[unit.lower()] * NS_PER_S
    # Exact: the fraction as an integer count of nanoseconds of the unit.
    fraction_ns = int(fraction[:18].ljust(18, "0")) * ns_per_unit // 10**18
    ns = int(digits or "0") * ns_per_unit + fraction_ns
    if ns == 0 and (digits or fraction.strip("0")):
        raise ConfigError(f"{option}: shorter than a nanosecond (got {given})")
    if ns > max_s * NS_PER_S:
        raise ConfigError(f"{option}: at most {max_s} s (got {given})")
    if whole and ns % NS_PER_S:
        raise ConfigError(f"{option}: whole seconds only (got {given})")
    return ns


def format_seconds(ns: int) -> str:
    """A duration in seconds as a user would give it: ``10``, ``2.5``, ``0.001``."""
    whole, rest = divmod(ns, NS_PER_S)
    return str(whole) if not rest else f"{whole}.{rest:09d}".rstrip("0")


def _size_hint(text: str) -> str:
    """What to write instead of a size :func:`parse_size` refused: for ``4KB`` and ``1.5g``
    (sizes are binary, and whole) the spelling meant, else what a size looks like."""
    habit = _SIZE_HABIT_RE.fullmatch(text)
    if habit is None or not habit.group(1) + (habit.group(2) or ""):
        return f"want {_SIZE_WANTED}"
    whole, fraction, suffix, decimal = habit.groups()
    suffix = suffix.lower()
    if fraction is None and decimal and suffix and len(whole) <= _MAX_DIGITS:
        number = int(whole)
        return (
            f"sizes are binary: {number}{suffix} or {number}{suffix.upper()}iB "
            f"= {number << _SUFFIX_SHIFT[suffix]} bytes"
        )
    if fraction and suffix and len(whole) + len(fraction) <= _MAX_DIGITS:
        # 1.5g is 1536m: the same size one unit down, when that is a whole number there.
        number, rest = divmod(int(whole + fraction) << 10, 10 ** len(fraction))
        if not rest:
            down = _SUFFIXES[_SUFFIXES.index(suffix) - 1] if suffix != "k" else ""
            if not down:
                return f"want a whole number of bytes: {number}"
            return f"want a whole number: {number}{down} or {number}{down.upper()}iB"
    return f"want {_SIZE_WANTED}"


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
