"""The PNG plot: exact pixel size, what each panel draws, the "no data" page, no matplotlib."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from aiobench.errors import ConfigError
from aiobench.render.plot import _nines_label, _spectrum, render_plot
from aiobench.results.tables import latency_to_json as latency_dict
from aiobench.stats.recorders import LatencyRecorder
from tests.helpers import RunCli, example_with_phases, run_aiobench

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
INTERVAL_NS = 1_000_000_000
MIB = 1 << 20


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from the IHDR chunk, which must come first after the signature."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    length, kind = struct.unpack(">I4s", data[8:16])
    assert (length, kind) == (13, b"IHDR")
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


def latencies(rng: np.random.Generator, n: int, median_ns: float) -> np.ndarray[Any, Any]:
    return rng.lognormal(np.log(median_ns), 0.5, n).astype(np.int64)


def phase_doc(
    name: str,
    rng: np.random.Generator,
    *,
    n_intervals: int,
    block_bytes: int,
    entries_per_op: int = 0,
    median_ns: float = 50_000,
) -> dict[str, Any]:
    """A phase as ``--json`` writes it, its latency fields from real recorders."""
    whole = LatencyRecorder()
    intervals = []
    done_ops = done_bytes = done_entries = 0
    for i in range(n_intervals):
        recorder = LatencyRecorder()
        values = latencies(rng, 400 + 100 * i, median_ns)
        recorder.add(values)
        whole.merge(recorder)
        ops = int(values.size)
        done_ops += ops
        done_bytes += ops * block_bytes
        done_entries += ops * entries_per_op
        intervals.append(
            {
                "index": i,
                "start_ns": i * INTERVAL_NS,
                "end_ns": (i + 1) * INTERVAL_NS,
                "ops": ops,
                "bytes": ops * block_bytes,
                "entries": ops * entries_per_op,
                "iops": ops,
                "bytes_per_s": ops * block_bytes,
                "entries_per_s": ops * entries_per_op,
                "done_ops": done_ops,
                "done_bytes": done_bytes,
                "done_entries": done_entries,
                "done_percent": (i + 1) * 100 // n_intervals,
                "active_threads": 2,
                "cpu_percent": 40,
                "latency": {"io": latency_dict(recorder.summary())},
            }
        )
    totals = {
        "elapsed_ns": n_intervals * INTERVAL_NS,
        "ops": done_ops,
        "bytes": done_bytes,
        "entries": done_entries,
        "iops": done_ops // max(n_intervals, 1),
        "bytes_per_s": done_bytes // max(n_intervals, 1),
        "entries_per_s": done_entries // max(n_intervals, 1),
        "cpu_percent": 40,
    }
    return {
        "phase": name,
        "first_done": totals,
        "last_done": totals,
        "latency": {"io": latency_dict(whole.summary())},
        "peak_inflight_ops": 2,
        "time_limited": False,
        "interrupted": False,
        "threads": [],
        "intervals": intervals,
    }


def run_doc(*phases: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema_version": 2,
        "meta": {
            "label": "",
            "command": ["aiobench", "-w", "-r", "-b", "64k", "-t", "2", "-s", "4m", "f1"],
            "host": "test-host",
            "start_time": "2026-11-30T14:47:55.269+00:00",
        },
        "phases": list(phases),
        "interrupted": False,
        "error": None,
    }


@pytest.fixture
def figures(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Figure]]:
    """Every figure render_plot saves, so the tests can look at what was drawn.

    matplotlib is an optional extra: the tests that draw are skipped without it.
    """
    figure_module = pytest.importorskip("matplotlib.figure")
    saved: list[Figure] = []
    original = figure_module.Figure.savefig

    def spy(self: Figure, *args: Any, **kwargs: Any) -> None:
        saved.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(figure_module.Figure, "savefig", spy)
    yield saved


def xs(line: Line2D) -> list[float]:
    return [float(v) for v in np.asarray(line.get_xdata(), dtype=np.float64)]


def ys(line: Line2D) -> list[float]:
    return [float(v) for v in np.asarray(line.get_ydata(), dtype=np.float64)]


@pytest.mark.parametrize(("size", "expected"), [(None, (1200, 800)), ((640, 480), (640, 480))])
def test_png_has_exactly_the_requested_size(
    tmp_path: Path,
    figures: list[Figure],
    size: tuple[int, int] | None,
    expected: tuple[int, int],
) -> None:
    rng = np.random.default_rng(1)
    doc = run_doc(phase_doc("WRITE", rng, n_intervals=3, block_bytes=64 << 10))
    out = tmp_path / "run.png"
    if size is None:
        render_plot(doc, str(out))
    else:
        render_plot(doc, str(out), width_px=size[0], height_px=size[1])
    assert out.stat().st_size > 0
    assert png_size(out) == expected


def test_file_and_dir_phases_each_get_a_meaningful_line(
    tmp_path: Path, figures: list[Figure]
) -> None:
    rng = np.random.default_rng(3)
    doc = run_doc(
        phase_doc("MKDIRS", rng, n_intervals=2, block_bytes=0, entries_per_op=1),
        phase_doc("WRITE", rng, n_intervals=4, block_bytes=MIB, entries_per_op=1),
        phase_doc("STAT", rng, n_intervals=3, block_bytes=0, entries_per_op=1, median_ns=5_000),
        phase_doc("READ", rng, n_intervals=4, block_bytes=MIB, median_ns=20_000),
    )
    out = tmp_path / "dirs.png"
    render_plot(doc, str(out), width_px=900, height_px=700)
    assert png_size(out) == (900, 700)

    (fig,) = figures
    title = fig.get_suptitle()
    assert title.startswith("aiobench: aiobench -w -r -b 64k")
    assert "test-host 2026-11-30 14:47:55 UTC" in title
    # Three panels plus the second y-axis that the counted rates need beside MiB/s.
    assert len(fig.axes) == 4
    throughput, by_interval, spectrum = [ax for ax in fig.axes if ax.get_title()]
    (rates,) = [ax for ax in fig.axes if not ax.get_title()]
    assert throughput.get_ylabel() == "MiB/s"
    assert [str(line.get_label()) for line in throughput.get_lines()] == ["WRITE", "READ"]
    assert [str(line.get_label()) for line in rates.get_lines()] == [
        "MKDIRS dirs/s",
        "STAT files/s",
    ]
    assert rates.get_ylabel() == "dirs/s, files/s"
    legend = throughput.get_legend()
    assert legend is not None
    assert [t.get_text() for t in legend.get_texts()] == [
        "WRITE",
        "READ",
        "MKDIRS dirs/s",
        "STAT files/s",
    ]
    # MiB/s against seconds, from each phase's own start.
    write = throughput.get_lines()[0]
    assert xs(write) == [1.0, 2.0, 3.0, 4.0]
    assert ys(write) == [400.0, 500.0, 600.0, 700.0]
    for line in fig.axes[0].get_lines() + rates.get_lines():
        assert any(v > 0 for v in ys(line))

    assert by_interval.get_yscale() == "log"
    assert len(by_interval.get_lines()) == 8
    stat_p50 = next(ln for ln in by_interval.get_lines() if ln.get_label() == "STAT p50")
    # Medians near the 5 µs the STAT latencies were drawn around.
    assert all(3 < v < 8 for v in ys(stat_p50))

    assert spectrum.get_xscale() == "log"
    assert spectrum.get_yscale() == "log"
    assert [str(line.get_label()) for line in spectrum.get_lines()] == [
        "MKDIRS",
        "WRITE",
        "STAT",
        "READ",
    ]
    ticks = [t.get_text() for t in spectrum.get_xticklabels()]
    assert ticks == ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%"]


def test_iops_stand_in_skipped_gaps_and_no_all_zero_line(
    tmp_path: Path, figures: list[Figure]
) -> None:
    rng = np.random.default_rng(4)
    stat = phase_doc("STAT", rng, n_intervals=3, block_bytes=0)
    # An interval that completed nothing, and a phase whose histogram is empty.
    stat["intervals"][1]["latency"] = {"io": latency_dict(LatencyRecorder().summary())}
    stat["latency"]["io"]["hdr_histogram"] = ""
    idle = phase_doc("RMFILES", rng, n_intervals=2, block_bytes=0)
    for interval in idle["intervals"]:  # no ops, so no IOPS (plot reads the model)
        interval["ops"] = 0
    render_plot(run_doc(stat, idle), str(tmp_path / "sparse.png"), width_px=800, height_px=600)

    (fig,) = figures
    # No byte phase: the rate takes the main axis (no twin), and the idle phase,
    # with neither bytes, entries nor ops, draws nothing rather than a zero line.
    assert len(fig.axes) == 3
    throughput, by_interval, spectrum = fig.axes
    assert [str(line.get_label()) for line in throughput.get_lines()] == ["STAT IOPS"]
    assert throughput.get_ylabel() == "IOPS"
    p50 = next(ln for ln in by_interval.get_lines() if ln.get_label() == "STAT p50")
    assert xs(p50) == [1.0, 3.0]
    # RMFILES still has its own histogram; STAT's empty one is skipped.
    assert [str(line.get_label()) for line in spectrum.get_lines()] == ["RMFILES"]


def test_dir_mode_without_data_plots_entry_latency(
    run_cli: RunCli, tmp_path: Path, figures: list[Figure]
) -> None:
    # A real dir-mode run with -s 0: no IO latency, only latency per entry.
    (tmp_path / "md").mkdir()
    saved = tmp_path / "md.json"
    args = ("-d", "-w", "--stat", "-F", "-D", "-n", "2", "-N", "100", "-s", "0", "--nolive")
    proc = run_cli(*args, str(tmp_path / "md"), "--json", str(saved))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(saved.read_text())
    assert all(p["latency"]["io"]["count"] == 0 for p in doc["phases"])
    render_plot(doc, str(tmp_path / "md.png"))
    (fig,) = figures
    _, by_interval, spectrum = [ax for ax in fig.axes if ax.get_title()]
    labels = [str(line.get_label()) for line in by_interval.get_lines()]
    assert "WRITE (files) p50" in labels and "STAT (files) p99" in labels
    assert "MKDIRS (dirs) p50" in labels
    assert [str(line.get_label()) for line in spectrum.get_lines()] == [
        "MKDIRS (dirs)", "WRITE (files)", "STAT (files)", "RMFILES (files)", "RMDIRS (dirs)",
    ]  # fmt: skip
    for line in spectrum.get_lines():
        assert all(v > 0 for v in ys(line))


@pytest.mark.parametrize("phases", [[], "no intervals"])
def test_no_data_still_writes_a_png(
    tmp_path: Path, figures: list[Figure], phases: list[dict[str, Any]] | str
) -> None:
    if phases == "no intervals":
        rng = np.random.default_rng(7)
        phase = phase_doc("WRITE", rng, n_intervals=0, block_bytes=4096)
        doc = run_doc(phase)
    else:
        doc = run_doc()
    out = tmp_path / "empty.png"
    render_plot(doc, str(out), width_px=400, height_px=300)
    assert out.stat().st_size > 0
    assert png_size(out) == (400, 300)
    (fig,) = figures
    assert fig.axes == []
    assert "no data" in [t.get_text() for t in fig.texts]


def test_spectrum_points_follow_the_recorded_values() -> None:
    recorder = LatencyRecorder()
    # 90 values of 10 µs, 9 of 100 µs, one of 1 ms.
    recorder.add(np.array([10_000] * 90 + [100_000] * 9 + [1_000_000], dtype=np.int64))
    x, y = _spectrum(recorder.summary().hdr, "READ")
    # Steps start at 0 %, 90 % and 99 % of values below: x = 1, 10, 100; never 100 %.
    assert x == pytest.approx([1.0, 10.0, 100.0])
    assert y == pytest.approx([10.0, 100.0, 1000.0], rel=1e-3)


def test_bad_histogram_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="phase WRITE: hdr_histogram"):
        _spectrum("not-an-hdr-histogram", "WRITE")


def test_nines_labels() -> None:
    assert [_nines_label(k) for k in range(7)] == [
        "0%",
        "90%",
        "99%",
        "99.9%",
        "99.99%",
        "99.999%",
        "99.9999%",
    ]


def test_missing_matplotlib_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # None in sys.modules makes an import fail; submodules are cached too, so hide them all.
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = tmp_path / "never.png"
    # aiobench is not on a package index: the hint names what pip can install.
    with pytest.raises(ConfigError, match=r"python3 -m pip install matplotlib "):
        render_plot(run_doc(), str(out))
    assert not out.exists()


def test_a_partial_last_interval_is_drawn_apart_and_hollow(
    tmp_path: Path, figures: list[Figure]
) -> None:
    """A phase ending 0.3 s into its fourth 1 s interval: that interval's rate is over its
    own 0.3 s, yet its tail draws a drop the full intervals do not show."""
    rng = np.random.default_rng(5)
    phase = phase_doc("WRITE", rng, n_intervals=4, block_bytes=MIB)
    last = phase["intervals"][-1]
    last["end_ns"] = last["start_ns"] + 3 * INTERVAL_NS // 10
    doc = run_doc(phase)
    doc["meta"]["live_interval_ms"] = INTERVAL_NS // 1_000_000
    notes = render_plot(doc, str(tmp_path / "partial.png"))
    (fig,) = figures
    throughput = fig.axes[0]
    assert "hollow: a phase's last interval, shorter than the others" in throughput.get_title()
    full, partial = throughput.get_lines()
    assert full.get_label() == "WRITE" and xs(full) == [1.0, 2.0, 3.0]
    # From the last full interval to the partial one, dotted, its marker hollow.
    assert xs(partial) == [3.0, 3.3]
    assert partial.get_linestyle() == ":" and partial.get_markerfacecolor() == "none"
    legend = throughput.get_legend()
    assert legend is not None and [t.get_text() for t in legend.get_texts()] == ["WRITE"]
    assert notes == []  # a phase of full intervals: no hint


def test_phases_shorter_than_the_interval_get_a_hint(tmp_path: Path) -> None:
    """The frozen example's two phases (4 ms and 2 ms) ran within their first 10 ms
    interval: each is one point, and plot says what would show more."""
    saved = tmp_path / "short.json"
    saved.write_text(json.dumps(example_with_phases(2)), encoding="utf-8")
    proc = run_aiobench("plot", str(saved), "-o", str(tmp_path / "short.png"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == (
        "Note: every phase was shorter than the live interval (10 ms), so each is one point "
        "over time; run with a smaller --liveint (or for longer) to see how a phase went.\n"
    )
    assert png_size(tmp_path / "short.png") == (1200, 800)


def test_five_thousand_phases_are_plotted_as_one_line_per_phase_name(tmp_path: Path) -> None:
    """A valid document of 5,000 phases (22 MB): a legend entry per phase took matplotlib
    minutes to lay out (164 s for a 12 MB one); one line per phase name takes seconds."""
    saved = tmp_path / "many.json"
    saved.write_text(json.dumps(example_with_phases(5000), indent=2), encoding="utf-8")
    try:
        proc = run_aiobench("plot", str(saved), "-o", str(tmp_path / "many.png"), timeout=90)
    except subprocess.TimeoutExpired:
        pytest.fail("plot of 5,000 phases took more than 90 s")
    assert proc.returncode == 0, proc.stderr
    assert png_size(tmp_path / "many.png") == (1200, 800)


def test_many_phases_share_a_line_and_a_legend_entry_per_name(
    tmp_path: Path, figures: list[Figure]
) -> None:
    rng = np.random.default_rng(8)
    write = phase_doc("WRITE", rng, n_intervals=2, block_bytes=MIB)
    read = phase_doc("READ", rng, n_intervals=3, block_bytes=MIB)
    render_plot(run_doc(*[write, read] * 15), str(tmp_path / "many.png"))
    (fig,) = figures
    throughput, by_interval, spectrum = fig.axes
    names = ["WRITE (15 phases)", "READ (15 phases)"]
    assert [str(line.get_label()) for line in throughput.get_lines()] == names
    # Each phase from its own start, a gap (NaN) between one phase and the next.
    write_x = xs(throughput.get_lines()[0])
    assert write_x[:5] == [1.0, 2.0, write_x[2], 1.0, 2.0] and np.isnan(write_x[2])
    assert len(write_x) == 15 * 3 - 1
    assert len(by_interval.get_lines()) == 4  # p50 and p99 of each name
    # The spectrum of all 15 phases of a name: their histograms merged.
    assert [str(line.get_label()) for line in spectrum.get_lines()] == names
