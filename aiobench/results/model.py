"""The result model handed to renderers: per-phase first/last-done totals and latency; pure.

SCHEMA_VERSION history (bump on any change a consumer could notice):
    1 — first published format: meta, phases[first_done, last_done, latency.io,
        latency.entries (dir mode), peak_inflight_ops, threads], interrupted, error.
    2 — phases[].intervals (latency over time), phases[].per_target (storagebench report),
        cpu_percent in first_done/last_done, meta.live_interval_ms; the NDJSON records of
        --jsonfile and --livejson (record.schema.json).
    2, extended without a bump (optional keys, always written now; a version-2 reader
        that does not know them loses nothing it had) — phases[].iteration (``-i``,
        0-based) and the top-level iterations_summary (per phase: min/max/mean/stddev of
        the last-done rates and elapsed_ns over the iterations; [] for one iteration).
        A document without them is one iteration.
    2, extended likewise — phases[].rwmix_read_pct (null unless --rwmixpct), and in RWMIX
        phases first_done/last_done.read/.write and latency.read/.write.
    3 — error.offset is null where no offset means anything (creating, opening or
        removing an entry; before, such errors claimed offset 0); phases[].status (ok,
        error, interrupted, time_limited) and phases[].error (the error that ended the
        phase, else null), in the --json document and the --jsonfile records alike.
    3, extended without a bump — the document of ``aiobench check --json`` ("kind":
        "check": meta, tests, findings, and runs that are version-3 documents), a branch
        of its own in the schema; meta.config.timelimit_ns (optional: the sub-second
        phase limit the check gives its tests, 0 in an ordinary run).
    3, extended without a bump — meta.config.lat, .latpercent, .latpercent9s, .lathisto,
        .cpu (the table rows the run showed) and .dryrun; a config without them comes from an
        aiobench that always showed the latency and percentile rows.
    3, extended without a bump — phases[].mean_inflight_ops (the sum of the phase's I/O
        latencies over last_done.elapsed_ns) and phases[].loop_cpu_ns (the event-loop
        thread's CPU time over the phase); a phase without them reads as 0.
    3, extended without a bump — meta.config.timelimit_ns is also set by a fractional
        --timelimit (timelimit_s then holds it rounded up); meta.notes may end with notes
        on how phases ended (a --rand phase that did its --randamount before --timelimit).
    3, extended without a bump — meta.config.s3timeout_s (--s3timeout; optional), and the
        fields an S3 request's error always carried (error.endpoint, .bucket, .key,
        .status, .code), now described.
    3, extended without a bump — phases[].op_kinds (a MIXED phase's operations by kind,
        --s3mix); a phase without it has none.
    3, extended without a bump — phases[].client_cpu_pct (aiobench's own CPU over the phase
        as a share of what it may use); a phase without it reads as 0.
    3, unchanged — --jsonfile no longer writes "record": "phase" lines but elbencho's own
        per-phase records (elbencho-record.schema.json); the phase_record definition stays
        so that lines saved by 0.1.0 still validate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

# The model's classes a phase needs while it runs (see aiobench.results.running).
from aiobench.results.running import IntervalStats as IntervalStats
from aiobench.results.running import Progress as Progress
from aiobench.results.running import Rates
from aiobench.results.running import ThreadProgress as ThreadProgress
from aiobench.stats.recorders import LatencySummary
from aiobench.units import NS_PER_US

SCHEMA_VERSION = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class Totals(Rates):
    """Counters of all threads at one instant, and the time from the common start to it."""

    elapsed_ns: int
    ops: int
    bytes: int
    entries: int = 0
    cpu_percent: int = 0  # this process's CPU time over all cores' time, 0..100
    # --rwmixpct: the reads among ops and bytes (the rest are writes).
    read_ops: int = 0
    read_bytes: int = 0

    @property
    def span_ns(self) -> int:
        return self.elapsed_ns

    def reads(self) -> MixPart:
        return MixPart(ops=self.read_ops, bytes=self.read_bytes, elapsed_ns=self.elapsed_ns)

    def writes(self) -> MixPart:
        return MixPart(
            ops=self.ops - self.read_ops,
            bytes=self.bytes - self.read_bytes,
            elapsed_ns=self.elapsed_ns,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class MixPart(Rates):
    """The reads or the writes of an --rwmixpct phase, up to one instant."""

    ops: int
    bytes: int
    elapsed_ns: int
    entries: int = 0

    @property
    def span_ns(self) -> int:
        return self.elapsed_ns


@dataclass(frozen=True, slots=True, kw_only=True)
class _Member(Rates):
    """A member of a report (a target, an MPI rank, a host, an endpoint): its counts over
    the elapsed time of its slowest thread."""

    ops: int
    bytes: int
    entries: int
    elapsed_ns: int

    @property
    def span_ns(self) -> int:
        return self.elapsed_ns

    @property
    def number(self) -> int:
        """The member's number in its report (ties in min and max go to the lowest)."""
        raise NotImplementedError

    @property
    def worked(self) -> bool:
        return bool(self.ops or self.entries)

    def rates(self) -> dict[str, int]:
        return {m: getattr(self, m) for m in RATE_METRICS}

    def fine_rates(self) -> dict[str, float]:
        """The rates before truncation: a rate below 1 a second is 0 in :meth:`rates`."""
        seconds = self.span_ns // NS_PER_US / 1e6  # the microseconds rate() divides by
        counts = {"bytes_per_s": self.bytes, "iops": self.ops, "entries_per_s": self.entries}
        return {m: counts[m] / seconds if seconds > 0 else 0.0 for m in RATE_METRICS}


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetTotals(_Member):
    """What one target (PATH) got, over the elapsed time of its slowest thread."""

    index: int  # the target's place among the PATHs
    path: str

    @property
    def number(self) -> int:
        return self.index


@dataclass(frozen=True, slots=True, kw_only=True)
class RankTotals(_Member):
    """Under MPI: what one rank did, over the elapsed time of its slowest thread."""

    rank: int
    host: str  # the host the rank ran on

    @property
    def number(self) -> int:
        return self.rank

    # The names ranks had in the per-target shape (index = rank, path = host), before they
    # had a type of their own; only tests still read them.
    @property
    def index(self) -> int:
        return self.rank

    @property
    def path(self) -> str:
        return self.host


@dataclass(frozen=True, slots=True, kw_only=True)
class HostTotals(_Member):
    """Under MPI: what the ranks on one host did, over the slowest of their threads."""

    index: int  # hosts are numbered in the order of their lowest rank
    host: str

    @property
    def number(self) -> int:
        return self.index

    @property
    def path(self) -> str:  # as for RankTotals.path: the name of the per-target shape
        return self.host


@dataclass(frozen=True, slots=True, kw_only=True)
class EndpointTotals(_Member):
    """Object storage with several endpoints: what the threads using one did (thread rank
    r uses endpoint r % endpoints), over the slowest of them."""

    index: int  # the endpoint's place in --s3endpoints
    endpoint: str

    @property
    def number(self) -> int:
        return self.index


def endpoint_totals(
    threads: Sequence[ThreadTotals], endpoints: Sequence[str]
) -> tuple[EndpointTotals, ...]:
    """Per endpoint, the threads that used it (round-robin by thread rank); () with one."""
    if len(endpoints) < 2:
        return ()
    out = []
    for index, endpoint in enumerate(endpoints):
        mine = [t for t in threads if t.rank % len(endpoints) == index]
        out.append(
            EndpointTotals(
                index=index,
                endpoint=endpoint,
                ops=sum(t.ops for t in mine),
                bytes=sum(t.bytes for t in mine),
                entries=sum(t.entries for t in mine),
                elapsed_ns=max((t.elapsed_ns for t in mine if t.ops or t.entries), default=0),
            )
        )
    return tuple(out)


RATE_METRICS = ("bytes_per_s", "iops", "entries_per_s")
MemberT = TypeVar("MemberT", TargetTotals, RankTotals, HostTotals, EndpointTotals)


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetReport(Generic[MemberT]):
    """beegfs-ctl --storagebench's summary: min and max member, average and aggregate.

    ``metric`` decides min and max: throughput when the phase moved bytes, else entries/s
    (dir mode without data), else IOPS. Only members that had work take part; the
    aggregate is the sum of the per-member rates, as storagebench adds them up.
    """

    metric: str
    slowest: MemberT
    fastest: MemberT
    average: dict[str, int]
    aggregate: dict[str, int]
    # The same before truncation (from each member's fine_rates), for rates below 1.
    fine_average: dict[str, float]
    fine_aggregate: dict[str, float]


def target_report(members: tuple[MemberT, ...]) -> TargetReport[MemberT] | None:
    """The report over targets, ranks or hosts; None when none had work."""
    worked = [t for t in members if t.worked]
    if not worked:
        return None
    metric = (
        "bytes_per_s"
        if any(t.bytes for t in worked)
        else "entries_per_s"
        if any(t.entries for t in worked)
        else "iops"
    )
    fine = [t.fine_rates() for t in worked]
    # Equal truncated rates are told apart by the rates before truncation (all members
    # below 1 a second are 0); ties still go to the member numbered first.
    slowest = min(worked, key=lambda t: (getattr(t, metric), t.fine_rates()[metric], t.number))
    fastest = max(worked, key=lambda t: (getattr(t, metric), t.fine_rates()[metric], -t.number))
    return TargetReport(
        metric=metric,
        slowest=slowest,
        fastest=fastest,
        average={m: sum(getattr(t, m) for t in worked) // len(worked) for m in RATE_METRICS},
        aggregate={m: sum(getattr(t, m) for t in worked) for m in RATE_METRICS},
        fine_average={m: sum(f[m] for f in fine) / len(worked) for m in RATE_METRICS},
        fine_aggregate={m: sum(f[m] for f in fine) for m in RATE_METRICS},
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class OpKindResult:
    """One kind of operation of a phase that mixes kinds (object storage's MIXED)."""

    op: str  # GET, PUT, DELETE, STAT
    ops: int
    bytes: int
    latency: LatencySummary
    ttfb: LatencySummary | None = None  # GETs: to the first body byte


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreadTotals:
    rank: int
    ops: int
    bytes: int
    entries: int
    elapsed_ns: int


@dataclass(frozen=True, slots=True, kw_only=True)
class PhaseResult:
    name: str
    start_time: str = ""  # ISO 8601, UTC, milliseconds: the wall clock at the common start
    first_done: Totals
    last_done: Totals
    io_latency: LatencySummary
    entry_latency: LatencySummary | None = None  # dir mode only: per dir or whole file
    # Under --limitread/--limitwrite: from each operation's scheduled start to its end.
    sched_latency: LatencySummary | None = None
    # --rwmixpct: the share of reads asked for, and the latency of each kind apart
    # (``io_latency`` holds both).
    rwmix_pct: int | None = None
    read_latency: LatencySummary | None = None
    write_latency: LatencySummary | None = None
    # Object storage: each GET's time to first byte, from sending it to its first body byte.
    ttfb_latency: LatencySummary | None = None
    peak_inflight_ops: int
    # Over LAST DONE's time: the mean operations in flight (the sum of their latencies over
    # elapsed_ns, Little's law) and the event loop's (main) thread's CPU time.
    mean_inflight_ops: float = 0.0
    loop_cpu_ns: int = 0
    # aiobench's own CPU over the phase, in % of what it may use: the larger of the process's
    # share of its cores and its busiest thread's of one core (aiobench.stats.client).
    client_cpu_pct: int = 0
    # The untimed setup before the common start (buffers, first runs handed over).
    startup_ns: int = 0
    threads: tuple[ThreadTotals, ...]
    targets: tuple[TargetTotals, ...] = ()
    intervals: tuple[IntervalStats, ...] = ()
    time_limited: bool = False
    interrupted: bool = False
    iteration: int = 0  # -i: which repetition of the phase sequence (0-based) this block is
    iterations: int = 1  # -i: how many the run was asked for (decides the summary block)
    # Under MPI: per rank and per host, each over its slowest thread. Empty without MPI.
    ranks: tuple[RankTotals, ...] = ()
    hosts: tuple[HostTotals, ...] = ()
    # Object storage with several endpoints: the per-target report over them.
    endpoints: tuple[EndpointTotals, ...] = ()
    # A phase that mixes kinds (--s3mix): each kind's operations, bytes and latency.
    op_kinds: tuple[OpKindResult, ...] = ()
    # The I/O error that ended this phase (BenchIOError.to_dict()), or None.
    error: dict[str, object] | None = None

    @property
    def status(self) -> str:
        """How the phase ended: ok, error, interrupted (a signal) or time_limited."""
        if self.error is not None:
            return "error"
        if self.interrupted:
            return "interrupted"
        return "time_limited" if self.time_limited else "ok"

    @property
    def target_report(self) -> TargetReport[TargetTotals] | None:
        return target_report(self.targets)

    @property
    def rank_report(self) -> TargetReport[RankTotals] | None:
        return target_report(self.ranks)

    @property
    def host_report(self) -> TargetReport[HostTotals] | None:
        return target_report(self.hosts)

    @property
    def endpoint_report(self) -> TargetReport[EndpointTotals] | None:
        return target_report(self.endpoints)


@dataclass(frozen=True, slots=True, kw_only=True)
class Compared:
    """What ``compare`` reads from a run or a check document: its meta and its phases,
    each under the label it is matched by (a run's phase name, ``WRITE#2`` for its second
    block of that name; a check's test label, ``SEQ1M Q8T1 read``)."""

    kind: str  # "run" or "check"
    meta: dict[str, object]
    phases: list[tuple[str, PhaseResult]]
