"""The elbencho result table (FIRST DONE / LAST DONE), byte-compatible in layout; pure.

Names from the run (phases, target paths, hosts) may come from a saved file: each is shown
through :func:`~aiobench.text.printable`, so no control character reaches the terminal.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic

from aiobench.config import BenchConfig
from aiobench.kinds import BUCKET_MD_KINDS, PHASE_NAMES
from aiobench.options import table_options
from aiobench.results.model import (
    EndpointTotals,
    HostTotals,
    MemberT,
    PhaseResult,
    RankTotals,
    TargetTotals,
    target_report,
)
from aiobench.stats.client import CLIENT_BOUND_MIN_NS, CLIENT_BOUND_PCT
from aiobench.stats.iterations import IterationSummary, summarize
from aiobench.stats.recorders import LatencySummary
from aiobench.text import printable
from aiobench.units import MIB, NS_PER_MS, NS_PER_US, format_elapsed, format_latency, format_us

HEADER = (
    "OPERATION   RESULT TYPE         FIRST DONE   LAST DONE\n"
    "=========== ================    ==========   =========\n"
)
SEPARATOR = "---\n"


def _row(op: str, name: str, first: object, last: object) -> str:
    return f"{op:<11} {name:<17}: {first!s:>11} {last!s:>11}\n"


def _wide_row(name: str, text: str) -> str:
    return f"{'':<11} {name:<17}: {text}\n"


# elbencho's percentile points in the "lat % us" row; --latpercent9s N adds 99.9, 99.99, ...
BASE_PERCENTILES = (1.0, 50.0, 75.0, 99.0)
# elbencho's histogram buckets: four per power of two of microseconds.
HISTO_PER_OCTAVE = 4
# Below this many slow per cent, a target is within what runs of one machine scatter by.
SLOW_TARGET_PCT = 10


@dataclass(frozen=True, slots=True, kw_only=True)
class TableOptions:
    """Which rows the table shows beyond elbencho's default ones (its flags, same names):
    one field per table option of :class:`~aiobench.config.BenchConfig` (declared with a
    ``show_help``), named and defaulted as there.

    ``pertarget``: True shows the per-target block, None (not given) only the one-line
    hint under a phase whose slowest target is over 10 % below the average, False neither.
    """

    lat: bool = False
    latpercent: bool = False
    latpercent9s: int = 0
    lathisto: bool = False
    cpu: bool = False
    pertarget: bool | None = None
    allelapsed: bool = False  # elbencho's "Time ms each" row
    no0usecerr: bool = False  # no warning for a fastest thread under 1 us
    log: int = 0  # elbencho's log level: 1 and up add the IOs total row
    dirstats: bool = False  # the Dirs/s and Dirs total rows of dir mode's WRITE and READ
    # Not an option: -N of the run (--dirstats divides by it); 0 where it does not apply.
    files_per_dir: int = 0
    svcelapsed: bool = False  # (--svcelapsed: the ranks' completion times, under MPI)

    @classmethod
    def from_config(cls, config: Mapping[str, object]) -> TableOptions:
        """The options a run's config (``meta.config`` of a saved run) asked for.

        Each table option takes the config's value where its declaration admits it (a
        config no schema checked may hold anything), else its default. A config without ``lat``
        comes from an aiobench that always showed the latency and percentile rows and the
        per-target block with two or more paths: shown likewise.
        """
        if "lat" not in config:
            paths = config.get("paths")
            pertarget = config.get("pertarget")
            if not isinstance(pertarget, bool):
                pertarget = isinstance(paths, list) and len(paths) > 1
            return cls(lat=True, latpercent=True, pertarget=pertarget)
        admitted: dict[str, Any] = {  # (each checked against its declaration)
            field: value
            for field, opt in table_options(BenchConfig)
            if opt.admits(value := config.get(opt.json_key or field))
        }
        return dataclasses.replace(cls(), **admitted, files_per_dir=_files_per_dir(config))

    @property
    def percentiles(self) -> tuple[tuple[str, float], ...]:
        """(label, point) of the percentile row: 1, 50, 75, 99, then a 9 more per nine."""
        points = [(f"{p:g}", p) for p in BASE_PERCENTILES]
        for n in range(1, self.latpercent9s + 1):
            label = "99." + "9" * n
            points.append((label, float(label)))
        return tuple(points)

    @property
    def shows_percentiles(self) -> bool:
        return self.latpercent or self.latpercent9s > 0


DEFAULT_TABLE = TableOptions()
ALL_LATENCY = TableOptions(lat=True, latpercent=True, lathisto=True, cpu=True)


def _histo_label(k: int) -> str:
    """A histogram bucket's top in us as elbencho prints it (6.7, 8.0, 11, 27554); below
    1 us two digits, so that neighbouring buckets keep apart (0.71, 0.59)."""
    top_us = 2 ** (k / HISTO_PER_OCTAVE)
    return format_us(top_us * NS_PER_US) if top_us >= 1 else f"{top_us:.2g}"


def latency_rows(prefix: str, lat: LatencySummary, options: TableOptions = ALL_LATENCY) -> str:
    """``IO latency : [ min=… avg=… max=… ]`` (``--lat``), ``IO lat % us : [ 1%<=… ]``
    (``--latpercent``) and ``IO lat hist : [ 54: 135, … ]`` (``--lathisto``)."""
    if lat.count == 0:
        return ""
    out = ""
    if options.lat:
        minmax = (
            f"[ min={format_latency(lat.min_ns)} avg={format_latency(lat.mean_ns)} "
            f"max={format_latency(lat.max_ns)} ]"
        )
        out += _wide_row(f"{prefix} latency", minmax)
    if options.shows_percentiles:
        labels = options.percentiles
        values = lat.at([p for _, p in labels])
        points = " ".join(f"{label}%<={format_us(values[p])}" for label, p in labels)
        out += _wide_row(f"{prefix} lat % us", f"[ {points} ]")
    if options.lathisto:
        buckets = lat.log_buckets(HISTO_PER_OCTAVE)
        cells = ", ".join(f"{_histo_label(k)}: {n}" for k, n in buckets.items())
        out += _wide_row(f"{prefix} lat hist", f"[ {cells} ]")
    return out


def entry_label(phase: PhaseResult) -> str:
    """``Dirs`` for MKDIRS/RMDIRS (and S3's MKBUCKETS/RMBUCKETS), ``Files`` for the file
    phases of dir mode (and S3's objects)."""
    return _entry_label(phase.name)


# The phases whose entries are dirs (buckets): their rows say Dirs.
DIR_PHASE_NAMES = frozenset(
    ("MKDIRS", "RMDIRS", "MKBUCKETS", "RMBUCKETS", *(PHASE_NAMES[k] for k in BUCKET_MD_KINDS))
)


def _entry_label(name: str) -> str:
    return "Dirs" if name in DIR_PHASE_NAMES else "Files"


def _cpu_row(phase: PhaseResult) -> str:
    return _row("", "CPU util %", phase.first_done.cpu_percent, phase.last_done.cpu_percent)


def _files_per_dir(config: Mapping[str, object]) -> int:
    """-N of a dir-mode run with its numbered tree (--dirstats); 0 with a custom tree."""
    if config.get("treefile") is not None or config.get("treescan") is not None:
        return 0
    if "files" not in config:
        return 0  # (not a run's config)
    files = config["files"]
    if files is None:
        return 1  # (-N not given)
    return files if isinstance(files, int) and not isinstance(files, bool) else 0


def _dir_rows(phase: PhaseResult, options: TableOptions, total: bool) -> str:
    """--dirstats: the dirs done (``total``) or done per second in a WRITE or READ phase of
    dir mode, as elbencho counts them: files done over the files per dir."""
    per = options.files_per_dir
    last = phase.last_done
    base = phase.name.split("+")[0]  # (dir mode's WRITE+s+r: --statinline, --readinline)
    if not (options.dirstats and per and last.entries and base in ("WRITE", "READ")):
        return ""
    first = phase.first_done
    if total:
        return _row("", "Dirs total", first.entries // per, last.entries // per)
    return _row("", "Dirs/s", first.entries_per_s // per, last.entries_per_s // per)


def elapsed_each_row(phase: PhaseResult) -> str:
    """--allelapsed: each thread's time to completion in whole ms, by rank (elbencho's
    ``Time ms each`` row)."""
    threads = sorted(phase.threads, key=lambda t: t.rank)
    return _wide_row(
        "Time ms each", "[ " + "".join(f"{t.elapsed_ns // NS_PER_MS} " for t in threads) + "]"
    )


def _rwmix_rows(phase: PhaseResult, options: TableOptions) -> str:
    """elbencho's rows of an --rwmixpct phase: write, read and total apart."""
    first, last = phase.first_done, phase.last_done
    parts = (
        ("write", first.writes(), last.writes()),
        ("read", first.reads(), last.reads()),
        ("total", first, last),
    )
    out = "".join(_row("", f"IOPS {name}", a.iops, b.iops) for name, a, b in parts)
    out += "".join(
        _row("", f"MiB/s {name}", a.bytes_per_s // MIB, b.bytes_per_s // MIB)
        for name, a, b in parts
    )
    out += "".join(
        _row("", f"MiB {name}", a.bytes // MIB, b.bytes // MIB) for name, a, b in parts[:2]
    )
    if options.log > 0:  # elbencho's verbose rows: the blocks written and read
        out += "".join(_row("", f"IOs {name}", a.ops, b.ops) for name, a, b in parts[:2] if b.ops)
    if options.cpu:
        out += _cpu_row(phase)
    if options.allelapsed:
        out += elapsed_each_row(phase)
    for prefix, lat in (("IO wr", phase.write_latency), ("IO rd", phase.read_latency)):
        if lat is not None:
            out += latency_rows(prefix, lat, options)
    return out


def svc_elapsed_row(phase: PhaseResult) -> str:
    """elbencho's ``Svc compl. time : [ host1=1.2s host2=1.5s ]`` (``--svcelapsed``): each
    rank's completion time (its slowest thread), fastest first; '' without MPI ranks. A
    host with several ranks names them ``host#rank``."""
    if not phase.ranks:
        return ""
    hosts = [r.host for r in phase.ranks]
    ordered = sorted(phase.ranks, key=lambda r: (r.elapsed_ns, r.rank))
    cells = " ".join(
        f"{printable(r.host) if hosts.count(r.host) == 1 else f'{printable(r.host)}#{r.rank}'}"
        f"={format_elapsed(r.elapsed_ns)}"
        for r in ordered
    )
    return _wide_row("Svc compl. time", f"[ {cells} ]")


def phase_block(phase: PhaseResult, options: TableOptions = DEFAULT_TABLE) -> str:
    """One phase; rows without a count behind them are left out, as elbencho does, and
    the CPU and latency rows only where ``options`` ask for them."""
    first, last = phase.first_done, phase.last_done
    entries = entry_label(phase)
    out = _row(
        printable(phase.name),
        "Elapsed time",
        format_elapsed(first.elapsed_ns),
        format_elapsed(last.elapsed_ns),
    )
    if phase.rwmix_pct is not None:
        out += _rwmix_rows(phase, options)
        out += svc_elapsed_row(phase) if options.svcelapsed else ""
        out += slow_target_row(phase) if options.pertarget is None else ""
        return out + client_bound_row(phase) + SEPARATOR
    if last.entries:
        out += _row("", f"{entries}/s", first.entries_per_s, last.entries_per_s)
        out += _dir_rows(phase, options, total=False)
    # In dir mode a file of one block makes IOPS equal to Files/s: shown once.
    if last.ops and last.ops != last.entries:
        out += _row("", "IOPS", first.iops, last.iops)
    if last.bytes:
        out += _row("", "Throughput MiB/s", first.bytes_per_s // MIB, last.bytes_per_s // MIB)
        out += _row("", "Total MiB", first.bytes // MIB, last.bytes // MIB)
    if last.entries:
        out += _row("", f"{entries} total", first.entries, last.entries)
        out += _dir_rows(phase, options, total=True)
    if options.log > 0 and last.ops:
        out += _row("", "IOs total", first.ops, last.ops)
    if options.cpu:
        out += _cpu_row(phase)
    if options.allelapsed:
        out += elapsed_each_row(phase)
    if options.svcelapsed:
        out += svc_elapsed_row(phase)
    if phase.entry_latency is not None:
        out += latency_rows(entries, phase.entry_latency, options)
    out += latency_rows("IO", phase.io_latency, options)
    if phase.ttfb_latency is not None:  # object storage's GETs: to the first body byte
        out += latency_rows("TTFB", phase.ttfb_latency, options)
    if phase.sched_latency is not None:
        # Under a rate limit: from each operation's scheduled start (coordinated omission).
        out += latency_rows("Sched", phase.sched_latency, options)
    out += op_kind_rows(phase)
    if options.pertarget is None:
        out += slow_target_row(phase)
    out += "" if options.no0usecerr else sub_microsecond_row(phase)
    return out + client_bound_row(phase) + SEPARATOR


def sub_microsecond_row(phase: PhaseResult) -> str:
    """elbencho's warning when the fastest thread completed in under a microsecond: the
    rates of that instant are then shown as 0 (``--no0usecerr`` leaves it out)."""
    first, last = phase.first_done, phase.last_done
    # (A phase that failed or was stopped says so itself; its first figures may be none.)
    if phase.status in ("error", "interrupted") or first.elapsed_ns >= NS_PER_US:
        return ""
    if not (last.ops or last.entries):
        return ""
    return (
        "Warning: the fastest thread completed in less than 1 microsecond, so its rates "
        "show as 0; try a larger data set (--no0usecerr leaves this out)\n"
    )


def _target_columns(phase: PhaseResult) -> list[tuple[str, str]]:
    """(title, rate key) of the per-target columns this phase has counts for."""
    last = phase.last_done
    columns = []
    if last.bytes:
        columns.append(("MiB/s", "bytes_per_s"))
    if last.entries:
        columns.append((f"{entry_label(phase)}/s", "entries_per_s"))
    if last.ops:
        columns.append(("IOPS", "iops"))
    return columns


def _rate_text(key: str, whole: int, fine: float) -> str:
    """A report's rate as its rows print it: truncated to a whole number (MiB/s: whole MiB)
    as elbencho's table truncates, but a rate below 1 with two significant digits, also
    truncated (``0.42``): a slow target or a long phase over few entries is no ``0``."""
    scale = MIB if key == "bytes_per_s" else 1
    value = fine / scale
    if whole // scale or value <= 0:
        return str(whole // scale)
    places = 1 - math.floor(math.log10(value))
    return f"{math.floor(value * 10**places) / 10**places:.{places}f}"


def _target_row(
    name: str,
    rates: tuple[dict[str, int], dict[str, float]],
    columns: list[tuple[str, str]],
    tail: str,
) -> str:
    whole, fine = rates
    cells = "".join(f" {_rate_text(key, whole[key], fine[key]):>10}" for _, key in columns)
    return f"{'':<11} {name:<17}:{cells}{tail}\n".rstrip() + "\n"


def _member_rates(t: MemberT) -> tuple[dict[str, int], dict[str, float]]:
    return t.rates(), t.fine_rates()


@dataclass(frozen=True, slots=True)
class _Breakdown(Generic[MemberT]):
    """How a report block is titled and how it names its members."""

    title: str  # after the phase name: ``per target``
    column: str  # the last column's heading
    name: Callable[[MemberT], str]  # how Min and Max name the member
    where: Callable[[MemberT], str]  # what a member's own row names in the last column


_PER_TARGET: _Breakdown[TargetTotals] = _Breakdown(
    "per target", "Target", lambda t: f"#{t.index} {printable(t.path)}", lambda t: t.path
)
_PER_RANK: _Breakdown[RankTotals] = _Breakdown(
    "per rank", "Rank", lambda t: f"rank {t.rank} {printable(t.host)}", lambda t: t.host
)
_PER_HOST: _Breakdown[HostTotals] = _Breakdown(
    "per host", "Host", lambda t: printable(t.host), lambda t: t.host
)
_PER_ENDPOINT: _Breakdown[EndpointTotals] = _Breakdown(
    "per endpoint",
    "Endpoint",
    lambda t: f"#{t.index} {printable(t.endpoint)}",
    lambda t: t.endpoint,
)


def _report_block(
    phase: PhaseResult, kind: _Breakdown[MemberT], members: tuple[MemberT, ...]
) -> str:
    """Min, max, average, aggregate and one row per member; '' when no member had work."""
    report = target_report(members)
    if report is None:
        return ""
    columns = _target_columns(phase)

    def elapsed(t: MemberT) -> str:
        return f"  {format_elapsed(t.elapsed_ns):>9}  "

    titles = "".join(f" {title:>10}" for title, _ in columns)
    # One space in, so that a phase name starts a line only where its block starts (scripts
    # grep ^WRITE); the columns stay where they are.
    out = f" {printable(phase.name):<10} {kind.title:<17}:{titles}  {'Elapsed':>9}  {kind.column}\n"
    for label, t in (("Min", report.slowest), ("Max", report.fastest)):
        out += _target_row(label, _member_rates(t), columns, elapsed(t) + kind.name(t))
    out += _target_row("Average", (report.average, report.fine_average), columns, "")
    out += _target_row("Aggregate", (report.aggregate, report.fine_aggregate), columns, "")
    for t in members:
        out += _target_row(
            f"#{t.number}", _member_rates(t), columns, elapsed(t) + printable(kind.where(t))
        )
    return out + SEPARATOR


_RATE_UNITS = {"bytes_per_s": "MiB/s", "iops": "IOPS"}


def slow_target_row(phase: PhaseResult) -> str:
    """``Slowest target : #2 /data/f3 812 MiB/s, 23 % below the average ...`` when the
    slowest target is more than :data:`SLOW_TARGET_PCT` % below the average; else ''."""
    report = target_report(phase.targets)
    if report is None or sum(t.worked for t in phase.targets) < 2:
        return ""
    t, metric = report.slowest, report.metric
    # Compared before truncation: targets all below 1 a second are all 0 truncated.
    slow, average = t.fine_rates()[metric], report.fine_average[metric]
    if slow * 100 >= average * (100 - SLOW_TARGET_PCT):
        return ""
    below = f"{100 * (average - slow) / average:.1f}"
    unit = _RATE_UNITS.get(metric, f"{entry_label(phase)}/s")
    shown_slow = _rate_text(metric, getattr(t, metric), slow)
    shown_average = _rate_text(metric, report.average[metric], average)
    text = (
        f"#{t.index} {printable(t.path)} {shown_slow} {unit}, {below} % below the "
        f"average of {shown_average} {unit} (--pertarget lists every target)"
    )
    return _wide_row("Slowest target", text)


def op_kind_rows(phase: PhaseResult) -> str:
    """A MIXED phase's kinds, a row each: ``GET : 700 ops (70.0 %), 812 ops/s, 3 MiB/s,
    lat avg=… p99=…, TTFB avg=…``; '' for other phases."""
    total = sum(k.ops for k in phase.op_kinds)
    elapsed = phase.last_done.elapsed_ns
    out = ""
    for kind in phase.op_kinds:
        share = 100 * kind.ops / total if total else 0.0
        rate = int(kind.ops * 1e9 / elapsed) if elapsed else 0
        text = f"{kind.ops} ops ({share:.1f} %), {rate} ops/s"
        if kind.bytes:
            text += f", {int(kind.bytes * 1e9 / elapsed) // MIB if elapsed else 0} MiB/s"
        lat = kind.latency
        if lat.count:
            p99 = lat.at([99.0])[99.0]
            text += f", lat avg={format_latency(lat.mean_ns)} p99={format_latency(p99)}"
        if kind.ttfb is not None and kind.ttfb.count:
            text += f", TTFB avg={format_latency(kind.ttfb.mean_ns)}"
        out += _wide_row(kind.op, text)
    return out


def client_bound_row(phase: PhaseResult) -> str:
    """``Client bound : aiobench used 97 % of the CPU it may use ...`` when the phase's
    ``client_cpu_pct`` reached :data:`~aiobench.stats.client.CLIENT_BOUND_PCT` over at least
    :data:`~aiobench.stats.client.CLIENT_BOUND_MIN_NS`; else ''."""
    pct = phase.client_cpu_pct
    if pct < CLIENT_BOUND_PCT or phase.last_done.elapsed_ns < CLIENT_BOUND_MIN_NS:
        return ""
    text = (
        f"aiobench's CPU at {pct} % of what it may use: a client limit, maybe; "
        "add threads (-t), MPI ranks or hosts (--hosts)"
    )
    return _wide_row("Client bound", text)


def target_block(phase: PhaseResult) -> str:
    """beegfs-ctl --storagebench's report for one phase: min, max, average, aggregate, list.

    Each target's rates are over its slowest thread; min and max are picked by throughput
    (else entries/s, else IOPS) and name the target. Empty when no target had work.
    """
    return _report_block(phase, _PER_TARGET, phase.targets)


def rank_block(phase: PhaseResult) -> str:
    """The same report over MPI ranks: min and max name the rank and its host."""
    return _report_block(phase, _PER_RANK, phase.ranks)


def host_block(phase: PhaseResult) -> str:
    """The same report over the hosts of an MPI run: min and max name the host."""
    return _report_block(phase, _PER_HOST, phase.hosts)


def endpoint_block(phase: PhaseResult) -> str:
    """The same report over the endpoints of object storage: min and max name it."""
    return _report_block(phase, _PER_ENDPOINT, phase.endpoints)


def phase_text(phase: PhaseResult, options: TableOptions = DEFAULT_TABLE) -> str:
    """A phase's block, then its reports: per target if asked, per rank and host under MPI,
    per endpoint with several.

    The per-host report is left out when every rank ran on one host.
    """
    out = phase_block(phase, options) + (target_block(phase) if options.pertarget else "")
    if phase.ranks:
        out += rank_block(phase)
    if len(phase.hosts) >= 2:
        out += host_block(phase)
    if phase.endpoints:
        out += endpoint_block(phase)
    return out


def _summary_row(op: str, name: str, cells: tuple[object, ...]) -> str:
    return f"{op:<11} {name:<17}:" + "".join(f" {c!s:>11}" for c in cells) + "\n"


def summary_block(summary: IterationSummary) -> str:
    """One phase over the iterations: min, max, mean and population stddev of each rate.

    Rows follow the phase block: the elapsed time, then only the rates with counts behind
    them; every figure is truncated to a whole number as the block's rates are (MiB/s is
    bytes/s // 2^20, so min and max are exactly the smallest and largest block's figure).
    """
    entries = _entry_label(summary.phase)
    title = f"{printable(summary.phase)} over {summary.iterations}"
    out = _summary_row("SUMMARY", title, ("min", "max", "mean", "stddev"))
    out += _summary_row("", "Elapsed ms", summary.spread("elapsed_ns").floored(NS_PER_MS))
    if summary.has("entries"):
        out += _summary_row("", f"{entries}/s", summary.spread("entries_per_s").floored())
    # As in the blocks: IOPS equal to Files/s in every iteration is shown once.
    if any(b.last_done.ops and b.last_done.ops != b.last_done.entries for b in summary.blocks):
        out += _summary_row("", "IOPS", summary.spread("iops").floored())
    if summary.has("bytes"):
        out += _summary_row("", "Throughput MiB/s", summary.spread("bytes_per_s").floored(MIB))
    return out + SEPARATOR


def summary_text(phases: list[PhaseResult]) -> str:
    """The ``-i N`` summary blocks that follow the last block; '' for a single iteration."""
    return "".join(summary_block(s) for s in summarize(phases))


def render_table(phases: list[PhaseResult], options: TableOptions = DEFAULT_TABLE) -> str:
    return HEADER + "".join(phase_text(p, options) for p in phases) + summary_text(phases)
