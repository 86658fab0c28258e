"""The result model's JSON form, written and read in one place: a table of keys per type; pure.

Each table lists a type's JSON keys in the order the document has them, and each key says
both how it is written from the model and how it is read back into the model's fields (or
that it is only written: the rates derived from counts, a phase's status). A key that an
older document lacks says what its absence means (``missing``), so version 1 and 2
documents load as version 3 ones. Adding a field is one row here, beside the field in
:mod:`aiobench.results.model`, plus the published schema
(aiobench/results/schema/result.schema.json):
``tests/results/test_results_json.py`` holds every table to the schema and every field to a round
trip. SCHEMA_VERSION and its history live with the model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Generic, TypeVar

from aiobench.results.model import (
    RATE_METRICS,
    SCHEMA_VERSION,
    EndpointTotals,
    HostTotals,
    IntervalStats,
    MemberT,
    OpKindResult,
    PhaseResult,
    RankTotals,
    TargetTotals,
    ThreadTotals,
    Totals,
    target_report,
)
from aiobench.results.runresult import RunResult
from aiobench.stats.iterations import SUMMARY_METRICS, IterationSummary, Spread, summarize
from aiobench.stats.recorders import LatencySummary

T = TypeVar("T")


class _Required:
    """The ``missing`` of a key every readable version has: its absence is an error."""

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()


@dataclass(frozen=True, slots=True)
class Key(Generic[T]):
    """One key of a type's JSON object."""

    name: str
    write: Callable[[T], Any]  # the key's value, from the model object
    # The model fields the value is read back into; None for a key that is only written.
    read: Callable[[Any], dict[str, Any]] | None
    missing: Any = REQUIRED  # the value an older document without the key stands for
    when: Callable[[T], bool] | None = None  # written only where this holds


Table = tuple[Key[T], ...]


def value(
    name: str,
    field: str | None = None,
    *,
    write: Callable[[T], Any] | None = None,
    read: Callable[[Any], Any] | None = None,
    missing: Any = REQUIRED,
    when: Callable[[T], bool] | None = None,
) -> Key[T]:
    """A key holding one field (``field``, else the field named like the key); written as
    the field's value unless ``write`` says otherwise, read back as is unless ``read``
    converts it."""
    attr = field or name
    convert = read

    def into(v: Any) -> dict[str, Any]:
        return {attr: v if convert is None else convert(v)}

    getter: Callable[[T], Any] = attrgetter(attr) if write is None else write
    return Key(name, getter, into, missing, when)


def derived(name: str, write: Callable[[T], Any] | None = None) -> Key[T]:
    """A key only written: a property of the model (a rate, a status), not read back."""
    getter: Callable[[T], Any] = attrgetter(name) if write is None else write
    return Key(name, getter, None)


def to_json(table: Table[T], obj: T) -> dict[str, Any]:
    return {k.name: k.write(obj) for k in table if k.when is None or k.when(obj)}


def fields(table: Table[Any], d: Mapping[str, Any]) -> dict[str, Any]:
    """The model fields that ``table``'s keys read from ``d``; KeyError for a required key
    ``d`` lacks."""
    out: dict[str, Any] = {}
    for k in table:
        if k.read is None:
            continue
        if k.name in d:
            out.update(k.read(d[k.name]))
        elif k.missing is REQUIRED:
            raise KeyError(k.name)
        else:
            out.update(k.read(k.missing))
    return out


def from_json(make: Callable[..., T], table: Table[Any], d: Mapping[str, Any], **more: Any) -> T:
    """The model object ``make`` builds of the fields read from ``d`` (and ``more``)."""
    return make(**fields(table, d), **more)


# -- latency ---------------------------------------------------------------------------


def percent_key(point: float) -> str:
    """A percentile's key in ``percentiles_ns``: 50, 99.9 (read back as a float)."""
    return f"{point:g}"


LATENCY: Table[LatencySummary] = (
    value("count"),
    value("min_ns"),
    value("max_ns"),
    value("mean_ns", write=lambda s: round(s.mean_ns, 1)),
    value("stddev_ns", write=lambda s: round(s.stddev_ns, 1)),
    value(
        "percentiles_ns",
        write=lambda s: {percent_key(p): v for p, v in s.percentiles_ns.items()},
        read=lambda d: {float(k): v for k, v in d.items()},
    ),
    value("hdr_histogram", "hdr"),
)


def latency_to_json(lat: LatencySummary) -> dict[str, Any]:
    return to_json(LATENCY, lat)


def latency_from_json(d: Mapping[str, Any]) -> LatencySummary:
    return from_json(LatencySummary, LATENCY, d)


def latencies(places: Sequence[tuple[str, str]]) -> Key[Any]:
    """The ``latency`` key: one latency summary per place (JSON key, model field). The
    first place (``io``) is always there; the others only where the field is not None."""
    (first, _), *_ = places

    def write(obj: Any) -> dict[str, Any]:
        summaries = ((key, getattr(obj, attr)) for key, attr in places)
        return {key: latency_to_json(lat) for key, lat in summaries if lat is not None}

    def read(d: Mapping[str, Any]) -> dict[str, Any]:
        return {
            attr: latency_from_json(d[key]) if key in d or key == first else None
            for key, attr in places
        }

    return Key("latency", write, read)


# -- totals ----------------------------------------------------------------------------

# The reads or the writes of an --rwmixpct phase (written only: Totals keeps the reads).
MIX_PART: Table[Any] = (value("ops"), value("bytes"), derived("iops"), derived("bytes_per_s"))

TOTALS: Table[Totals] = (
    value("elapsed_ns"),
    value("ops"),
    value("bytes"),
    value("entries", missing=0),
    derived("iops"),
    derived("bytes_per_s"),
    derived("entries_per_s"),
    value("cpu_percent", missing=0),  # version 2
)
# In an --rwmixpct phase: the reads and the writes apart.
MIXED_TOTALS: Table[Totals] = (
    *TOTALS,
    Key(
        "read",
        lambda t: to_json(MIX_PART, t.reads()),
        lambda d: {"read_ops": d.get("ops", 0), "read_bytes": d.get("bytes", 0)},
        missing={},
    ),
    derived("write", lambda t: to_json(MIX_PART, t.writes())),
)


def totals_to_json(t: Totals, *, mixed: bool) -> dict[str, Any]:
    return to_json(MIXED_TOTALS if mixed else TOTALS, t)


def totals_from_json(d: Mapping[str, Any]) -> Totals:
    return from_json(Totals, MIXED_TOTALS, d)


# -- intervals -------------------------------------------------------------------------

INTERVAL: Table[IntervalStats] = (
    value("index"),
    value("start_ns"),
    value("end_ns"),
    value("ops"),
    value("bytes"),
    value("entries"),
    derived("iops"),
    derived("bytes_per_s"),
    derived("entries_per_s"),
    value("done_ops"),
    value("done_bytes"),
    value("done_entries"),
    value("done_percent"),
    value("active_threads"),
    value("cpu_percent"),
    latencies((("io", "io_latency"), ("entries", "entry_latency"))),
)


def interval_to_json(iv: IntervalStats) -> dict[str, Any]:
    return to_json(INTERVAL, iv)


def interval_from_json(d: Mapping[str, Any]) -> IntervalStats:
    return from_json(IntervalStats, INTERVAL, d)


# -- threads and reports ---------------------------------------------------------------

THREAD: Table[ThreadTotals] = (
    value("rank"),
    value("ops"),
    value("bytes"),
    value("entries", missing=0),
    value("elapsed_ns"),
)

# A report member's counts; its first two keys (number and name) come before them.
_MEMBER_COUNTS: Table[Any] = (
    value("ops"),
    value("bytes"),
    value("entries"),
    value("elapsed_ns"),
    *(derived(metric) for metric in RATE_METRICS),
)
TARGET: Table[TargetTotals] = (value("index"), value("path"), *_MEMBER_COUNTS)
RANK: Table[RankTotals] = (value("rank"), value("host"), *_MEMBER_COUNTS)
HOST: Table[HostTotals] = (value("index"), value("host"), *_MEMBER_COUNTS)
ENDPOINT: Table[EndpointTotals] = (value("index"), value("endpoint"), *_MEMBER_COUNTS)


@dataclass(frozen=True, slots=True)
class Report(Generic[MemberT]):
    """A per_target/per_rank/per_host block: its members under ``members``, then min,
    max (each named by the member's first two keys), average and aggregate; the summary
    is null when no member had work. Only the members are read back (the rest follows
    from them)."""

    members: str
    table: Table[MemberT]
    make: Callable[..., MemberT]

    def to_json(self, members: tuple[MemberT, ...]) -> dict[str, Any]:
        out: dict[str, Any] = {self.members: [to_json(self.table, t) for t in members]}
        report = target_report(members)
        if report is None:
            return out | dict.fromkeys(("metric", "min", "max", "average", "aggregate"))
        return out | {
            "metric": report.metric,
            "min": self._named(report.slowest),
            "max": self._named(report.fastest),
            "average": report.average,
            "aggregate": report.aggregate,
        }

    def _named(self, t: MemberT) -> dict[str, Any]:
        return to_json(self.table[:2], t) | t.rates()

    def from_json(self, d: Mapping[str, Any] | None) -> tuple[MemberT, ...]:
        """The members; () for a report the document lacks."""
        return tuple(from_json(self.make, self.table, t) for t in (d or {}).get(self.members, []))


PER_TARGET = Report("targets", TARGET, TargetTotals)
PER_RANK = Report("ranks", RANK, RankTotals)
PER_HOST = Report("hosts", HOST, HostTotals)
PER_ENDPOINT = Report("endpoints", ENDPOINT, EndpointTotals)


# -- phases ----------------------------------------------------------------------------


def _report(
    name: str,
    attr: str,
    report: Report[Any],
    when: Callable[[PhaseResult], bool] | None = None,
) -> Key[PhaseResult]:
    """A phase's report block over the members in ``attr``; a document without it has
    none."""
    return value(
        name,
        attr,
        write=lambda p: report.to_json(getattr(p, attr)),
        read=report.from_json,
        missing=None,
        when=when,
    )


def _under_mpi(phase: PhaseResult) -> bool:
    return bool(phase.ranks)


def _totals(attr: str) -> Key[PhaseResult]:
    return value(
        attr,
        write=lambda p: totals_to_json(getattr(p, attr), mixed=p.rwmix_pct is not None),
        read=totals_from_json,
    )


PHASE: Table[PhaseResult] = (
    value("phase", "name"),
    value("rwmix_read_pct", "rwmix_pct", missing=None),
    value("iteration", missing=0),
    value("start_time", missing=""),  # version 2
    _totals("first_done"),
    _totals("last_done"),
    latencies(
        (
            ("io", "io_latency"),
            ("entries", "entry_latency"),
            ("sched", "sched_latency"),
            ("read", "read_latency"),
            ("write", "write_latency"),
            ("ttfb", "ttfb_latency"),
        )
    ),
    value("peak_inflight_ops"),
    value("mean_inflight_ops", missing=0.0),
    value("loop_cpu_ns", missing=0),
    value("client_cpu_pct", missing=0),
    value("startup_ns", missing=0),
    value("time_limited"),
    value("interrupted"),
    derived("status"),
    # Version 3: the error that ended the phase (its status follows from it and the flags
    # above); a version-2 phase has none of its own.
    value("error", missing=None),
    value(
        "threads",
        write=lambda p: [to_json(THREAD, t) for t in p.threads],
        read=lambda ts: tuple(from_json(ThreadTotals, THREAD, t) for t in ts),
    ),
    _report("per_target", "targets", PER_TARGET),  # version 2
    value(
        "intervals",
        write=lambda p: [interval_to_json(iv) for iv in p.intervals],
        read=lambda ivs: tuple(interval_from_json(iv) for iv in ivs),
        missing=[],  # version 2
    ),
    _report("per_rank", "ranks", PER_RANK, when=_under_mpi),
    _report("per_host", "hosts", PER_HOST, when=_under_mpi),
    _report("per_endpoint", "endpoints", PER_ENDPOINT, when=lambda p: bool(p.endpoints)),
    value(
        "op_kinds",
        write=lambda p: [_op_kind_to_json(k, p) for k in p.op_kinds],
        read=lambda ks: tuple(_op_kind_from_json(k) for k in ks),
        missing=[],
        when=lambda p: bool(p.op_kinds),
    ),
)


def _op_kind_to_json(kind: OpKindResult, phase: PhaseResult) -> dict[str, Any]:
    """One kind of a MIXED phase: its counts, share of the operations, rates over LAST
    DONE's time, and latencies."""
    total = sum(k.ops for k in phase.op_kinds)
    elapsed = phase.last_done.elapsed_ns
    out: dict[str, Any] = {
        "op": kind.op,
        "ops": kind.ops,
        "bytes": kind.bytes,
        "share_pct": round(100 * kind.ops / total, 2) if total else 0.0,
        "ops_per_s": int(kind.ops * 1e9 / elapsed) if elapsed else 0,
        "bytes_per_s": int(kind.bytes * 1e9 / elapsed) if elapsed else 0,
        "latency": latency_to_json(kind.latency),
    }
    if kind.ttfb is not None:
        out["ttfb"] = latency_to_json(kind.ttfb)
    return out


def _op_kind_from_json(d: Mapping[str, Any]) -> OpKindResult:
    ttfb = d.get("ttfb")
    return OpKindResult(
        op=d["op"],
        ops=d["ops"],
        bytes=d["bytes"],
        latency=latency_from_json(d["latency"]),
        ttfb=None if ttfb is None else latency_from_json(ttfb),
    )


def phase_to_json(phase: PhaseResult) -> dict[str, Any]:
    return to_json(PHASE, phase)


def phase_from_json(d: Mapping[str, Any], iterations: int) -> PhaseResult:
    """A phase block; ``iterations`` (how many the run was asked for) is the run's."""
    return from_json(PhaseResult, PHASE, d, iterations=iterations)


# -- the document ----------------------------------------------------------------------


def _spread(s: Spread) -> dict[str, Any]:
    return {"min": s.min, "max": s.max, "mean": round(s.mean, 1), "stddev": round(s.stddev, 1)}


def summary_to_json(summary: IterationSummary) -> dict[str, Any]:
    """One entry of ``iterations_summary`` (written only: ``show`` recomputes it)."""
    out: dict[str, Any] = {"phase": summary.phase, "iterations": summary.iterations}
    return out | {metric: _spread(summary.spread(metric)) for metric in SUMMARY_METRICS}


RUN: Table[RunResult] = (
    derived("schema_version", lambda _: SCHEMA_VERSION),
    value("meta"),
    # Read by run_from_json: each phase needs the run's iteration count from the meta.
    derived("phases", lambda r: [phase_to_json(p) for p in r.phases]),
    derived("iterations_summary", lambda r: [summary_to_json(s) for s in summarize(r.phases)]),
    value("interrupted", read=bool, missing=False),
    value("error", missing=None),
)


def run_to_json(result: RunResult) -> dict[str, Any]:
    """The ``--json`` document of a run (``schema_version`` first)."""
    return to_json(RUN, result)


def run_from_json(doc: Mapping[str, Any]) -> RunResult:
    """A run from its checked document (:func:`aiobench.results.saved.load_run` checks it); the
    errors of a document that lacks a required key are KeyError, TypeError, ValueError."""
    config = doc["meta"].get("config") or {}
    iterations = int(config.get("iterations", 1))
    phases = [phase_from_json(p, iterations) for p in doc["phases"]]
    return from_json(RunResult, RUN, doc, phases=phases)
