"""The text table against real elbencho output, byte for byte, and the latency rows."""

from __future__ import annotations

import numpy as np

from aiobench.render.table import ALL_LATENCY, HEADER, TableOptions, latency_rows, render_table
from aiobench.results.model import PhaseResult, Totals
from aiobench.stats.recorders import LatencyRecorder, LatencySummary
from tests.helpers import DATA, no_latency

MIB = 1 << 20


def test_write_block_matches_elbencho_byte_for_byte() -> None:
    # Inputs chosen so elbencho's own formula yields the figures of its seq-write output:
    # 959 and 1024 ops of 1 MiB in 579.5 ms and 639.5 ms.
    phase = PhaseResult(
        name="WRITE",
        first_done=Totals(elapsed_ns=579_500_000, ops=959, bytes=959 * MIB),
        last_done=Totals(elapsed_ns=639_500_000, ops=1024, bytes=1024 * MIB),
        io_latency=no_latency(),
        peak_inflight_ops=2,
        threads=(),
    )
    assert render_table([phase]) == (DATA / "elbencho-seq-write.txt").read_text()


def test_header_is_elbenchos() -> None:
    assert HEADER == (
        "OPERATION   RESULT TYPE         FIRST DONE   LAST DONE\n"
        "=========== ================    ==========   =========\n"
    )


def recorded(*values_ns: int) -> LatencySummary:
    recorder = LatencyRecorder()
    recorder.add(np.array(values_ns, dtype=np.int64))
    return recorder.summary()


# 100 values: 1..97 us in 1 us steps, then 152 us, 11.585 ms and 24 ms (the percentiles
# are the top of the HDR bucket a value falls in: 11.585 ms shows as 11592 us).
LAT = recorded(*(us * 1000 for us in range(1, 98)), 152_000, 11_585_000, 23_991_000)


def test_latency_rows_layout() -> None:
    options = TableOptions(lat=True, latpercent=True, latpercent9s=2)
    assert latency_rows("IO", LAT, options) == (
        "            IO latency       : [ min=1.0us avg=405us max=24.0ms ]\n"
        "            IO lat % us      : [ 1%<=1.0 50%<=50 75%<=75 99%<=11592 99.9%<=23991 "
        "99.99%<=23991 ]\n"
    )


def test_each_flag_adds_its_row() -> None:
    names = {
        TableOptions(): [],
        TableOptions(lat=True): ["IO latency"],
        TableOptions(latpercent=True): ["IO lat % us"],
        TableOptions(latpercent9s=1): ["IO lat % us"],  # the nines ask for the row
        TableOptions(lathisto=True): ["IO lat hist"],
        ALL_LATENCY: ["IO latency", "IO lat % us", "IO lat hist"],
    }
    for options, rows in names.items():
        text = latency_rows("IO", LAT, options)
        assert [line[12:29].strip() for line in text.splitlines()] == rows, options


def test_percentile_points_are_elbenchos() -> None:
    assert [label for label, _ in TableOptions().percentiles] == ["1", "50", "75", "99"]
    nines = TableOptions(latpercent9s=3).percentiles
    assert [label for label, _ in nines][4:] == ["99.9", "99.99", "99.999"]
    assert nines[-1][1] == 99.999
    # Points the JSON does not hold (75, 99.999) come from the histogram, the rest as
    # recorded: the same method, so they agree.
    assert LAT.at([75, 99.999]) == {75: 75_007, 99.999: 23_991_000}
    assert LAT.at([50, 99]) == {50: LAT.percentiles_ns[50], 99: LAT.percentiles_ns[99]}


def test_histogram_row_uses_elbenchos_buckets() -> None:
    # Four buckets per power of two of microseconds, each named by its top.
    # (45.25, 53.82] us is "54", (53.82, 64] "64"; below 1 us two digits (0.71, not 0.7).
    lat = recorded(700, 46_000, 50_000, 54_000, 64_000, 76_000, 23_991_000)
    text = latency_rows("IO", lat, TableOptions(lathisto=True))
    assert text == "            IO lat hist      : [ 0.71: 1, 54: 2, 64: 2, 76: 1, 27554: 1 ]\n"
    assert sum(lat.log_buckets(4).values()) == lat.count


def test_cpu_row_and_order_of_rows() -> None:
    phase = PhaseResult(
        name="WRITE",
        first_done=Totals(elapsed_ns=10**9, ops=10, bytes=10 * MIB, cpu_percent=37),
        last_done=Totals(elapsed_ns=10**9, ops=10, bytes=10 * MIB, cpu_percent=41),
        io_latency=LAT,
        peak_inflight_ops=1,
        threads=(),
    )
    table = render_table([phase], ALL_LATENCY)
    names = [line[12:29].strip() for line in table.splitlines()[2:-1]]
    assert names == [
        "Elapsed time", "IOPS", "Throughput MiB/s", "Total MiB", "CPU util %",
        "IO latency", "IO lat % us", "IO lat hist",
    ]  # fmt: skip
    assert "            CPU util %       :          37          41\n" in table
    assert "CPU" not in render_table([phase])


def test_options_of_a_saved_config() -> None:
    config = {"paths": ["a", "b"], "lat": True, "latpercent9s": 2, "pertarget": None}
    assert TableOptions.from_config(config) == TableOptions(lat=True, latpercent9s=2)
    # An aiobench before --lat always showed latency and percentiles, and the per-target
    # block with two or more paths.
    old = TableOptions.from_config({"paths": ["a", "b"], "pertarget": None})
    assert old == TableOptions(lat=True, latpercent=True, pertarget=True)
    assert TableOptions.from_config({"paths": ["a"]}).pertarget is False


def test_saved_values_the_declarations_do_not_admit_take_the_default() -> None:
    config = {"lat": "yes", "latpercent": 1, "latpercent9s": 10, "cpu": True, "pertarget": 0}
    assert TableOptions.from_config(config) == TableOptions(cpu=True)
    assert TableOptions.from_config({"lat": False, "latpercent9s": True}) == TableOptions()
