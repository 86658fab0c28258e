"""The text table against real elbencho output, byte for byte, and the latency rows."""

from __future__ import annotations

from pathlib import Path

from aiobench.render.table import HEADER, latency_rows, render_table
from aiobench.results import PhaseResult, Totals
from aiobench.stats import PERCENTILES, LatencySummary

DATA = Path(__file__).parent / "data"
MIB = 1 << 20


def no_latency() -> LatencySummary:
    return LatencySummary(
        count=0,
        min_ns=0,
        max_ns=0,
        mean_ns=0.0,
        stddev_ns=0.0,
        percentiles_ns=dict.fromkeys(PERCENTILES, 0),
        hdr="",
    )


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


def test_latency_rows_layout() -> None:
    lat = LatencySummary(
        count=10,
        min_ns=46_000,
        max_ns=23_991_000,
        mean_ns=109_400.0,
        stddev_ns=1.0,
        percentiles_ns={
            **dict.fromkeys(PERCENTILES, 0),
            50: 64_000,
            90: 91_000,
            99: 152_000,
            99.9: 11_585_000,
        },
        hdr="x",
    )
    assert latency_rows("IO", lat) == (
        "            IO latency       : [ min=46us avg=109us max=24.0ms ]\n"
        "            IO lat % us      : [ 50%<=64 90%<=91 99%<=152 99.9%<=11585 ]\n"
    )
