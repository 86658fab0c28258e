"""The ``plot`` PNG: throughput, interval latency and latency percentiles of a saved run.

Draws a run as :func:`aiobench.results.saved.load_run` reads it back from its ``--json`` document
(the result model), so any saved result can be plotted later. matplotlib is an optional
dependency: it is imported only when a plot is drawn, always with the Agg canvas and never
through pyplot's global state. Text from the document (label, command, host) is drawn as
text: control characters escaped, no ``$...$`` math. What each line holds (one per phase,
or per phase name for many phases; the partial last interval apart) is
:mod:`aiobench.render.plotlines`.
"""

from __future__ import annotations

import datetime
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

import numpy as np

from aiobench.errors import BenchIOError, ConfigError
from aiobench.kinds import MKDIRS, PHASE_NAMES, RMDIRS
from aiobench.render.plotlines import (
    PlotLine,
    full_interval_ns,
    interval_points,
    joined,
    partial_points,
    plot_lines,
    shorter_than_interval_note,
    split_partial,
)
from aiobench.results.model import IntervalStats, PhaseResult
from aiobench.results.runresult import RunResult
from aiobench.results.tables import run_from_json
from aiobench.stats.recorders import LatencySummary, merge_latency
from aiobench.text import printable
from aiobench.units import MIB

if TYPE_CHECKING:
    from matplotlib.axes import Axes

# figsize is given in inches; at 100 dpi the PNG is exactly width_px x height_px.
DPI = 100
# The percentile axis reaches at least 99.999 % (x = 10^5), the usual HDR spectrum chart.
MIN_NINES = 5
# Phases whose entries are directories; the other dir-mode phases count files.
DIR_PHASES = (PHASE_NAMES[MKDIRS], PHASE_NAMES[RMDIRS])
# Long command lines would push the title past the figure edge.
TITLE_MAX_CHARS = 110
# aiobench is not on a package index: the extra is installed from the source checkout.
MISSING_MATPLOTLIB = (
    "plot needs matplotlib: python3 -m pip install matplotlib "
    "(or, in the aiobench source directory, python3 -m pip install '.[plot]')"
)


def per_entry(phase: PhaseResult) -> bool:
    """Whether the phase's latency to plot is the one per entry, not the IO latency (dir
    mode: a create, stat or unlink without data has only the latency per entry)."""
    entries = phase.entry_latency
    return not phase.io_latency.count and entries is not None and entries.count > 0


def _latency(phase: PhaseResult, of: PhaseResult | IntervalStats) -> LatencySummary | None:
    """The latency of the phase or of one of its intervals that the plot shows."""
    return of.entry_latency if per_entry(phase) else of.io_latency


def _latency_label(phase: PhaseResult, name: str) -> str:
    if not per_entry(phase):
        return name
    return f"{name} ({'dirs' if phase.name in DIR_PHASES else 'files'})"


class _Series(NamedTuple):
    label: str
    unit: str
    value: Callable[[IntervalStats], float]


def render_plot(
    run: RunResult | Mapping[str, Any],
    out: str | BinaryIO,
    *,
    width_px: int = 1200,
    height_px: int = 800,
) -> list[str]:
    """Write a PNG of exactly ``width_px`` x ``height_px`` pixels plotting ``run`` to ``out``
    (a file name, or a binary stream: the CLI renders into memory and writes the PNG where
    ``-o`` leads by the rules of every output, :mod:`aiobench.render.export`); the notes
    for the user (a hint when every phase was shorter than ``--liveint``).

    ``run`` is a run read back, or its checked ``--json`` document (read into the model
    here). Three stacked panels: throughput per interval, p50/p99 latency per interval, and
    each phase's whole latency percentile spectrum. A run without phases or intervals gives
    a PNG that says "no data".
    """
    if not isinstance(run, RunResult):
        run = run_from_json(run)
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ConfigError(MISSING_MATPLOTLIB) from exc

    fig = Figure(figsize=(width_px / DPI, height_px / DPI), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    fig.suptitle(_title(run.meta), fontsize="medium", wrap=True)
    full_ns = full_interval_ns(run)
    if not any(p.intervals for p in run.phases):
        fig.text(0.5, 0.5, "no data", ha="center", va="center", fontsize="xx-large")
    else:
        lines = plot_lines(run.phases)
        _throughput_panel(fig.add_subplot(3, 1, 1), lines, full_ns)
        _interval_latency_panel(fig.add_subplot(3, 1, 2), lines)
        _spectrum_panel(fig.add_subplot(3, 1, 3), lines)
    # No bbox_inches="tight": it would crop the canvas and change the pixel size.
    try:
        with warnings.catch_warnings():
            # A label in a script the font lacks is drawn as boxes; the warning matplotlib
            # gives for each such character is no use to the user of a CLI.
            warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from font")
            fig.savefig(out, format="png", dpi=DPI)
    except OSError as exc:  # a full disk, a directory that went away, no permission
        raise BenchIOError.from_os(out if isinstance(out, str) else "", None, exc) from None
    note = shorter_than_interval_note(run, full_ns)
    return [] if note is None else [note]


def _title(meta: Mapping[str, Any]) -> str:
    what = str(meta.get("label") or " ".join(str(a) for a in meta.get("command") or []))
    if len(what) > TITLE_MAX_CHARS:
        what = what[: TITLE_MAX_CHARS - 1] + "…"
    where = " ".join(s for s in (str(meta.get("host") or ""), _when(meta)) if s)
    title = f"aiobench: {what or 'run'}" + (f" — {where}" if where else "")
    # printable(): matplotlib has no glyph for a control character and says so in a
    # warning that would carry the character itself to the terminal. Each $ escaped: a
    # label such as "$\\frac{$" is text, not math that fails to parse (parse_math=False
    # would not do: the wrapping of a long title parses it all the same).
    return printable(title).replace("$", r"\$")


def _when(meta: Mapping[str, Any]) -> str:
    raw = str(meta.get("start_time") or "")
    try:
        stamp = datetime.datetime.fromisoformat(raw)
    except ValueError:
        return raw
    # Seconds are enough in a title; the offset is kept so the time is unambiguous.
    return stamp.strftime("%Y-%m-%d %H:%M:%S %Z").strip()


def _mib_per_s(iv: IntervalStats) -> float:
    return float(iv.bytes_per_s) / MIB


def _series(line: PlotLine) -> _Series | None:
    """What the line's throughput is: MiB/s when its phases moved bytes, else the rate that
    means something for them (entries/s, else IOPS); None when they did nothing."""
    intervals = [iv for phase in line.phases for iv in phase.intervals]
    if any(iv.bytes for iv in intervals):
        return _Series(line.name, "MiB/s", _mib_per_s)
    if any(iv.entries_per_s for iv in intervals):
        unit = "dirs/s" if line.first.name in DIR_PHASES else "files/s"
        return _Series(f"{line.name} {unit}", unit, lambda iv: float(iv.entries_per_s))
    if any(iv.iops for iv in intervals):
        return _Series(f"{line.name} IOPS", "IOPS", lambda iv: float(iv.iops))
    return None


def _throughput_panel(ax: Axes, lines: Sequence[PlotLine], full_ns: int | None) -> None:
    ax.set_title("Throughput per interval", fontsize="medium")
    ax.set_xlabel("time since phase start (s)")
    drawn = [(line, series) for line in lines if (series := _series(line)) is not None]
    if not drawn:
        _empty(ax, "no throughput data")
        return
    # MiB/s owns the left axis when any phase moved bytes; counted rates then go on a
    # second axis, since files/s and MiB/s share no scale.
    has_bytes = any(series.unit == "MiB/s" for _, series in drawn)
    rate_ax = ax.twinx() if has_bytes and not all(s.unit == "MiB/s" for _, s in drawn) else ax
    partial = False
    for line, series in drawn:
        on, style, marker = (ax, "-", "o") if series.unit == "MiB/s" else (rate_ax, "--", "s")
        x, y = joined(
            interval_points(split_partial(p.intervals, full_ns)[0], series.value)
            for p in line.phases
        )
        look: dict[str, Any] = {"color": line.color, "marker": marker, "markersize": 3}
        on.plot(x, y, linestyle=style, label=series.label, **look)
        px, py = partial_points(line.phases, full_ns, series.value)
        if px:
            on.plot(px, py, linestyle=":", markerfacecolor="none", **look)
            partial = True
    if partial:
        ax.set_title(
            "Throughput per interval (hollow: a phase's last interval, shorter than the others)",
            fontsize="medium",
        )
    if has_bytes:
        ax.set_ylabel("MiB/s")
    rate_units = sorted({s.unit for _, s in drawn if s.unit != "MiB/s"})
    if rate_units:
        rate_ax.set_ylabel(", ".join(rate_units))
    ax.set_ylim(bottom=0)
    rate_ax.set_ylim(bottom=0)
    ax.set_xlim(left=0)
    ax.grid(True, alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if rate_ax is not ax:
        more_handles, more_labels = rate_ax.get_legend_handles_labels()
        handles += more_handles
        labels += more_labels
    ax.legend(handles, labels, fontsize="small", loc="best")


def _latency_points(phase: PhaseResult, point: float) -> tuple[list[float], list[float]]:
    """The phase's ``point`` percentile (µs) at the end of each interval that has one."""
    x: list[float] = []
    y: list[float] = []
    for iv in phase.intervals:
        lat = _latency(phase, iv)
        value = lat.percentiles_ns.get(point, 0) if lat is not None else 0
        if lat is not None and lat.count and value > 0:
            x.append(iv.end_ns / 1e9)
            y.append(value / 1e3)
    return x, y


def _interval_latency_panel(ax: Axes, lines: Sequence[PlotLine]) -> None:
    ax.set_title(
        "Latency per interval: IO, else per entry (p50 solid, p99 dashed)", fontsize="medium"
    )
    ax.set_xlabel("time since phase start (s)")
    # One legend entry per line (its p50 line); the title tells the two styles apart.
    legend: dict[str, Any] = {}
    for line in lines:
        name = _latency_label(line.first, line.name)
        for point, style in ((50.0, "-"), (99.0, "--")):
            x, y = joined(_latency_points(phase, point) for phase in line.phases)
            if x:
                (drawn,) = ax.plot(
                    x,
                    y,
                    color=line.color,
                    linestyle=style,
                    marker="o",
                    markersize=3,
                    label=f"{name} p{point:g}",
                )
                legend.setdefault(name, drawn)
    if not legend:
        _empty(ax, "no interval latency data")
        return
    ax.set_ylabel("latency (µs)")
    _log_us_axis(ax)
    ax.set_xlim(left=0)
    ax.grid(True, which="major", axis="x", alpha=0.3)
    # Outside the axes: p50 and p99 lines span the whole width, so no inside spot is free.
    ax.legend(
        list(legend.values()),
        list(legend),
        fontsize="small",
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
    )


def _whole_latency(line: PlotLine) -> LatencySummary | None:
    """The latency of the line's phase, or of all its phases together (merged histograms:
    the spectrum of every operation of that name)."""
    if len(line.phases) == 1:
        return _latency(line.first, line.first)
    return merge_latency([_latency(p, p) for p in line.phases if _has_histogram(p)])


def _has_histogram(phase: PhaseResult) -> bool:
    lat = _latency(phase, phase)
    return lat is not None and bool(lat.hdr) and lat.count > 0


def _spectrum_panel(ax: Axes, lines: Sequence[PlotLine]) -> None:
    from matplotlib.ticker import NullLocator

    ax.set_title("Latency by percentile (whole phase): IO, else per entry", fontsize="medium")
    ax.set_xlabel("percentile")
    widest = 1.0
    for line in lines:
        lat = _whole_latency(line)
        encoded = lat.hdr if lat is not None else ""
        if not encoded:
            continue
        name = _latency_label(line.first, line.name)
        x, y = _spectrum(encoded, name)
        if not x:
            continue
        ax.plot(x, y, color=line.color, drawstyle="steps-post", label=name)
        widest = max(widest, x[-1])
    if not ax.lines:
        _empty(ax, "no latency histogram")
        return
    nines = max(MIN_NINES, math.ceil(math.log10(widest)))
    ax.set_xscale("log")
    ax.set_xlim(1, 10.0**nines)
    ax.set_xticks([10.0**k for k in range(nines + 1)], [_nines_label(k) for k in range(nines + 1)])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_ylabel("latency (µs)")
    _log_us_axis(ax)
    # High percentiles have the high latencies: the lower right stays empty.
    ax.legend(fontsize="small", loc="lower right")


def _spectrum(encoded: str, name: str) -> tuple[list[float], list[float]]:
    """Each recorded bucket as (1 / (1 - p), µs), p being the share of values below it.

    Computed from the decoded counts with numpy rather than hdrh's percentile iterator,
    which walks every bucket in Python. The point at p = 100 % (x = ∞) never occurs: the
    last bucket starts below 100 %, and the steps-post line ends on its value.
    """
    from hdrh.histogram import HdrHistogram

    try:
        hist = HdrHistogram.decode(encoded)
    except Exception as exc:  # hdrh raises base64, zlib and its own header errors alike
        raise ConfigError(f"phase {name}: hdr_histogram is not a valid HDR encoding") from exc
    counts = np.ctypeslib.as_array(hist.counts).astype(np.int64)
    nonzero = np.flatnonzero(counts)
    total = int(counts.sum())
    if total == 0:
        return [], []
    below = np.cumsum(counts[nonzero]) - counts[nonzero]
    share_below = below / total
    x = (1.0 / (1.0 - share_below)).tolist()
    y = [
        hist.get_highest_equivalent_value(hist.get_value_from_index(int(i))) / 1e3 for i in nonzero
    ]
    # A 0 ns bucket has no place on a log axis.
    points = [(px, py) for px, py in zip(x, y, strict=True) if py > 0]
    return [px for px, _ in points], [py for _, py in points]


def _nines_label(k: int) -> str:
    """The percentile at x = 10^k: 0%, 90%, 99%, 99.9%, …"""
    return f"{100 - 100 / 10**k:.{max(k - 2, 0)}f}%"


def _log_us_axis(ax: Axes) -> None:
    from matplotlib.ticker import FuncFormatter

    ax.set_yscale("log")
    # Plain numbers (50, 200, 1000) read faster than 10^2 on a latency axis.
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.grid(True, which="major", alpha=0.3)
    ax.grid(True, which="minor", alpha=0.1)


def _empty(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="0.4")
    ax.set_xticks([])
    ax.set_yticks([])
