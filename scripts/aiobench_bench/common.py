"""Constants, errors and small helpers every section uses."""

from __future__ import annotations

import math
import statistics
import sys
from dataclasses import dataclass
from typing import Any

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB
THREADS = 2
# --randamount for the time-based random runs: far more than T seconds can move, so the
# time limit (not the end of the slice) ends the phase, exactly like fio's time_based.
RANDAMOUNT = "1T"
NAN = float("nan")


class ToolError(Exception):
    """A tool exited non-zero or produced no usable result."""


class Unavailable(Exception):
    """A section cannot be set up here (it is skipped, saying why)."""


@dataclass(frozen=True)
class Workload:
    key: str
    title: str
    block: str  # block size in aiobench/fio notation
    rand: bool
    write: bool
    threads: int  # aiobench -t / fio numjobs
    target: float | None  # minimum aiobench/fio ratio, None = no target

    @property
    def metric(self) -> str:
        """The figure compared: IOPS for small blocks, bytes/s for large ones."""
        return "iops" if self.rand else "bytes_per_s"

    @property
    def label(self) -> str:
        return f"{self.title}, -t {self.threads}"


# One run's figures: the tool's own, then how clean the run was.
Figures = dict[str, float]
# A tool's JSON document or a part of one (aiobench's --json, fio's --output-format=json).
Doc = dict[str, Any]
# A row of a report table, a section's meta or the report itself: figures and labels, as
# --json writes them.
Row = dict[str, Any]


def size_arg(value: int) -> str:
    """A byte count in the K/M/G notation both tools read as powers of 1024."""
    for suffix, unit in (("G", GIB), ("M", MIB), ("K", KIB)):
        if value % unit == 0:
            return f"{value // unit}{suffix}"
    return str(value)


def first_line(exc: BaseException) -> str:
    """The gist of an error: its first line, and a tool's own error message if it gave one."""
    lines = str(exc).splitlines() or [""]
    said = [line[len("stderr: ") :] for line in lines if line.startswith("stderr: ")]
    return f"{lines[0]}: {said[0]}" if said and said[0].strip() else lines[0]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def ratio_of(a: float, b: float) -> float:
    return a / b if b and math.isfinite(a) and math.isfinite(b) else NAN


def median_of(values: list[float]) -> float:
    """Median of the finite values (NAN if there are none)."""
    finite = [v for v in values if v == v]
    return statistics.median(finite) if finite else NAN


def median_or_nan(values: list[float]) -> float:
    return NAN if not values or any(v != v for v in values) else statistics.median(values)
