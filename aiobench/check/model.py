"""What a check found: a row per test, the runs behind them, the judgement; pure."""

from __future__ import annotations

from dataclasses import dataclass, field

from aiobench.check.plan import META, TABLE_ORDER, CheckTest
from aiobench.results.model import PhaseResult
from aiobench.results.runresult import RunResult


@dataclass(frozen=True, slots=True, kw_only=True)
class Row:
    """One test's figures, taken from phase ``phase`` of run ``run``."""

    test: CheckTest
    run: int
    phase: int
    value: int  # test.metric of LAST DONE
    p50_ns: int
    p99_ns: int
    count: int  # operations (file tests) or entries (metadata) measured
    status: str  # the phase's: ok, error, interrupted, time_limited


def row_of(test: CheckTest, run: int, index: int, phase: PhaseResult) -> Row:
    latency = phase.entry_latency if test.name == META else phase.io_latency
    count = latency.count if latency is not None else 0
    points = latency.percentiles_ns if latency is not None and count else {}
    return Row(
        test=test,
        run=run,
        phase=index,
        value=int(getattr(phase.last_done, test.metric)),
        p50_ns=int(points.get(50.0, 0)),
        p99_ns=int(points.get(99.0, 0)),
        count=count,
        status=phase.status,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Loop:
    """A loop device under DIR's filesystem, as sysfs shows it."""

    device: str  # /dev/loop0
    backing_file: str
    direct_io: bool  # loop/dio: its reads and writes of the backing file bypass the page cache
    backing_fstype: str  # the backing file's filesystem ('' when unknown)


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """A result that looks wrong, and why: ``rule`` names the check that flagged it."""

    test: str | None  # the row's label; None for the check as a whole
    rule: str
    message: str


@dataclass(slots=True, kw_only=True)
class CheckResult:
    meta: dict[str, object]
    rows: list[Row] = field(default_factory=list)
    runs: list[RunResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    interrupted: bool = False
    error: dict[str, object] | None = None

    @property
    def complete(self) -> bool:
        """Whether every test of the battery has its row."""
        return len(self.rows) == len(TABLE_ORDER)
