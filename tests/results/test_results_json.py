"""The result model's JSON tables: each agrees with the published schema, and every field of
every model type goes out and comes back (pure: no disk, no run)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from aiobench.results.model import (
    EndpointTotals,
    HostTotals,
    IntervalStats,
    OpKindResult,
    PhaseResult,
    RankTotals,
    TargetTotals,
    ThreadTotals,
    Totals,
)
from aiobench.results.runresult import RunResult
from aiobench.results.schema import load_schema
from aiobench.results.tables import (
    ENDPOINT,
    HOST,
    INTERVAL,
    LATENCY,
    MIX_PART,
    MIXED_TOTALS,
    PER_ENDPOINT,
    PER_HOST,
    PER_RANK,
    PER_TARGET,
    PHASE,
    RANK,
    RUN,
    TARGET,
    THREAD,
    Table,
    fields,
    latency_from_json,
    latency_to_json,
    phase_from_json,
    phase_to_json,
    run_from_json,
    run_to_json,
    to_json,
)
from aiobench.stats.recorders import LatencySummary


def lat(base: int) -> LatencySummary:
    """A summary whose figures all differ from another's (means already at 0.1 ns)."""
    return LatencySummary(
        count=base,
        min_ns=base + 1,
        max_ns=base + 900,
        mean_ns=base + 100.5,
        stddev_ns=base + 0.5,
        percentiles_ns={50.0: base + 90, 99.9: base + 800},
        hdr=f"HISTFAKE{base}",
    )


def totals(ops: int) -> Totals:
    return Totals(
        elapsed_ns=ops * 1000,
        ops=ops,
        bytes=ops * 4096,
        entries=ops // 2,
        cpu_percent=37,
        read_ops=ops // 3,
        read_bytes=ops // 3 * 4096,
    )


def interval(index: int) -> IntervalStats:
    return IntervalStats(
        index=index,
        start_ns=index * 10,
        end_ns=index * 10 + 10,
        ops=3,
        bytes=3 * 4096,
        entries=1,
        done_ops=3 * index + 3,
        done_bytes=(3 * index + 3) * 4096,
        done_entries=index + 1,
        done_percent=50,
        active_threads=2,
        cpu_percent=12,
        io_latency=lat(3),
        entry_latency=lat(4),
    )


def target(index: int) -> TargetTotals:
    return TargetTotals(
        index=index, path=f"/t{index}", ops=10 + index, bytes=4096, entries=2, elapsed_ns=99
    )


def rank(number: int) -> RankTotals:
    return RankTotals(
        rank=number, host=f"h{number % 2}", ops=5 + number, bytes=8192, entries=1, elapsed_ns=77
    )


def host(index: int) -> HostTotals:
    return HostTotals(index=index, host=f"h{index}", ops=20, bytes=3, entries=0, elapsed_ns=55)


def endpoint(index: int) -> EndpointTotals:
    return EndpointTotals(
        index=index, endpoint=f"http://s{index}:9000", ops=9, bytes=4, entries=9, elapsed_ns=66
    )


def phase() -> PhaseResult:
    """A phase whose every field differs from its default."""
    return PhaseResult(
        name="RWMIX30",
        start_time="2026-12-01T10:00:00.000Z",
        first_done=totals(30),
        last_done=totals(60),
        io_latency=lat(60),
        entry_latency=lat(61),
        sched_latency=lat(62),
        rwmix_pct=30,
        read_latency=lat(20),
        write_latency=lat(40),
        ttfb_latency=lat(63),
        peak_inflight_ops=4,
        mean_inflight_ops=3.25,
        loop_cpu_ns=5678,
        client_cpu_pct=93,
        startup_ns=1234,
        threads=(
            ThreadTotals(rank=0, ops=30, bytes=1, entries=2, elapsed_ns=3),
            ThreadTotals(rank=1, ops=30, bytes=4, entries=5, elapsed_ns=6),
        ),
        targets=(target(0), target(1)),
        intervals=(interval(0), interval(1)),
        time_limited=True,
        interrupted=True,
        iteration=1,
        iterations=2,
        ranks=(rank(0), rank(1), rank(2)),
        hosts=(host(0), host(1)),
        endpoints=(endpoint(0), endpoint(1)),
        op_kinds=(
            OpKindResult(op="GET", ops=40, bytes=4096, latency=lat(40), ttfb=lat(40)),
            OpKindResult(op="DELETE", ops=20, bytes=0, latency=lat(20)),
        ),
        error={"path": "/t0", "offset": None, "errno": 5},
    )


def run() -> RunResult:
    return RunResult(
        meta={"label": "x", "config": {"iterations": 2}},
        phases=[phase()],
        interrupted=True,
        error={"path": "/t1", "offset": 4096, "errno": 28},
    )


def differs_from_defaults(obj: Any) -> list[str]:
    """The fields of ``obj`` left at their default: a new field the samples do not set yet."""
    return [
        f.name
        for f in dataclasses.fields(obj)
        if (f.default is not dataclasses.MISSING and getattr(obj, f.name) == f.default)
        or (
            f.default_factory is not dataclasses.MISSING
            and getattr(obj, f.name) == f.default_factory()
        )
    ]


@pytest.mark.parametrize(
    "sample", [phase(), run(), totals(6), interval(2)], ids=lambda s: type(s).__name__
)
def test_the_samples_set_every_field(sample: object) -> None:
    assert differs_from_defaults(sample) == []


def test_a_phase_comes_back_field_for_field() -> None:
    original = phase()
    # Through the text, as a saved document goes.
    back = phase_from_json(json.loads(json.dumps(phase_to_json(original))), iterations=2)
    for f in dataclasses.fields(PhaseResult):
        assert getattr(back, f.name) == getattr(original, f.name), f.name
    assert back == original


def test_a_run_comes_back_field_for_field() -> None:
    original = run()
    back = run_from_json(json.loads(json.dumps(run_to_json(original))))
    assert back == original


def test_a_latency_summary_comes_back() -> None:
    assert latency_from_json(latency_to_json(lat(7))) == lat(7)


# Every table against its definition in the published schema ($defs).
TABLES: list[tuple[str, Table[Any]]] = [
    ("document", RUN),
    ("phase", PHASE),
    ("totals", MIXED_TOTALS),
    ("mix_part", MIX_PART),
    ("latency", LATENCY),
    ("thread", THREAD),
    ("interval", INTERVAL),
    ("target", TARGET),
    ("rank", RANK),
    ("host", HOST),
    ("endpoint", ENDPOINT),
    ("named_rates", TARGET[:2]),
    ("named_rank_rates", RANK[:2]),
    ("named_host_rates", HOST[:2]),
    ("named_endpoint_rates", ENDPOINT[:2]),
]


@pytest.mark.parametrize(("definition", "table"), TABLES, ids=[d for d, _ in TABLES])
def test_each_table_has_the_keys_of_its_schema_definition(
    definition: str, table: Table[Any]
) -> None:
    properties = load_schema()["$defs"][definition]["properties"]
    names = [k.name for k in table]
    if definition.startswith("named_"):
        names += ["iops", "bytes_per_s", "entries_per_s"]
    assert sorted(names) == sorted(properties)


@pytest.mark.parametrize(
    "report", [PER_TARGET, PER_RANK, PER_HOST, PER_ENDPOINT], ids=lambda r: r.members
)
def test_each_report_has_the_keys_of_its_schema_definition(report: Any) -> None:
    definition = {
        "targets": "per_target",
        "ranks": "per_rank",
        "hosts": "per_host",
        "endpoints": "per_endpoint",
    }
    properties = load_schema()["$defs"][definition[report.members]]["properties"]
    members = {
        "targets": phase().targets,
        "ranks": phase().ranks,
        "hosts": phase().hosts,
        "endpoints": phase().endpoints,
    }
    assert sorted(report.to_json(members[report.members])) == sorted(properties)


@pytest.mark.parametrize(
    ("table", "sample", "extra"),
    [
        (PHASE, phase(), {"iterations"}),
        (MIXED_TOTALS, totals(9), set()),
        (INTERVAL, interval(1), set()),
        (THREAD, phase().threads[0], set()),
        (TARGET, target(1), set()),
        (RANK, rank(1), set()),
        (HOST, host(1), set()),
        (ENDPOINT, endpoint(1), set()),
        (LATENCY, lat(1), set()),
        # phases: read by run_from_json with the run's iteration count
        (RUN, run(), {"phases"}),
    ],
    ids=[
        "phase",
        "totals",
        "interval",
        "thread",
        "target",
        "rank",
        "host",
        "endpoint",
        "latency",
        "run",
    ],
)
def test_each_table_reads_every_field_of_its_type(
    table: Table[Any], sample: Any, extra: set[str]
) -> None:
    read = set(fields(table, json.loads(json.dumps(to_json(table, sample)))))
    assert read | extra == {f.name for f in dataclasses.fields(sample)}
    assert not read & extra


def test_an_absent_required_key_is_a_key_error() -> None:
    doc = phase_to_json(phase())
    del doc["peak_inflight_ops"]
    with pytest.raises(KeyError, match="peak_inflight_ops"):
        phase_from_json(doc, iterations=1)


def test_keys_older_documents_lack_take_their_meaning() -> None:
    doc = phase_to_json(phase())
    for key in ("rwmix_read_pct", "iteration", "start_time", "startup_ns", "error"):
        del doc[key]
    for key in ("mean_inflight_ops", "loop_cpu_ns", "client_cpu_pct"):
        del doc[key]
    for key in ("per_target", "intervals", "per_rank", "per_host"):
        del doc[key]
    for block in ("first_done", "last_done"):
        for key in ("entries", "cpu_percent", "read", "write"):
            del doc[block][key]
    for key in ("entries", "sched", "read", "write"):
        del doc["latency"][key]
    back = phase_from_json(doc, iterations=1)
    assert (back.rwmix_pct, back.iteration, back.start_time, back.startup_ns) == (None, 0, "", 0)
    assert back.error is None
    assert (back.mean_inflight_ops, back.loop_cpu_ns, back.client_cpu_pct) == (0.0, 0, 0)
    assert (back.targets, back.intervals, back.ranks, back.hosts) == ((), (), (), ())
    assert back.last_done == Totals(elapsed_ns=60_000, ops=60, bytes=60 * 4096)
    assert (back.entry_latency, back.sched_latency, back.read_latency) == (None, None, None)
    assert back.io_latency == lat(60)


def test_rank_and_host_keys_stay_as_the_document_has_them() -> None:
    doc = phase_to_json(phase())
    assert list(doc["per_rank"]["ranks"][0])[:2] == ["rank", "host"]
    assert list(doc["per_host"]["hosts"][0])[:2] == ["index", "host"]
    assert list(doc["per_target"]["targets"][0])[:2] == ["index", "path"]
    assert list(doc["per_rank"]["min"])[:2] == ["rank", "host"]
    without_mpi = phase_to_json(dataclasses.replace(phase(), ranks=(), hosts=()))
    assert "per_rank" not in without_mpi and "per_host" not in without_mpi
