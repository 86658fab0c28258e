"""Per-rank and per-host reports of an MPI run: table blocks, JSON, schema, saved runs, CSV.

The phases are built by hand (three ranks on two hosts, rank 1 much slower than the
others), as rank 0 would have merged them; every expected figure is worked out here from
the counts, not taken from aiobench.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from aiobench.render.csv import RESULT_HEADER, result_row
from aiobench.render.json import dumps
from aiobench.render.table import (
    TableOptions,
    host_block,
    phase_block,
    phase_text,
    rank_block,
    render_table,
    target_block,
)
from aiobench.results.model import (
    HostTotals,
    PhaseResult,
    RankTotals,
    TargetTotals,
    ThreadTotals,
    Totals,
)
from aiobench.results.runresult import RunResult
from aiobench.results.saved import load_run
from aiobench.results.schema import load_schema
from aiobench.results.tables import phase_to_json as phase_dict
from aiobench.results.tables import run_to_json as result_dict
from aiobench.stats.recorders import LatencyRecorder, LatencySummary
from tests.helpers import DATA, errors_of
from tests.helpers import call_main as call

EXAMPLE = DATA / "example-result.json"
MIB = 1 << 20
BLOCK = 64 * 1024
MS = 1_000_000
START = "2026-11-30T17:53:42.802+00:00"
Doc = dict[str, Any]

# (rank, host, ops, elapsed_ns): rank 1 takes four times as long as rank 0 for the same work.
RANKS = [(0, "nodeA", 1000, 500 * MS), (1, "nodeA", 1000, 2000 * MS), (2, "nodeB", 1000, 400 * MS)]

RANK_BLOCK = (
    " WRITE      per rank         :      MiB/s       IOPS    Elapsed  Rank\n"
    "            Min              :         31        500     2.000s  rank 1 nodeA\n"
    "            Max              :        156       2500      400ms  rank 2 nodeB\n"
    "            Average          :        104       1666\n"
    "            Aggregate        :        312       5000\n"
    "            #0               :        125       2000      500ms  nodeA\n"
    "            #1               :         31        500     2.000s  nodeA\n"
    "            #2               :        156       2500      400ms  nodeB\n"
    "---\n"
)
HOST_BLOCK = (
    " WRITE      per host         :      MiB/s       IOPS    Elapsed  Host\n"
    "            Min              :         62       1000     2.000s  nodeA\n"
    "            Max              :        156       2500      400ms  nodeB\n"
    "            Average          :        109       1750\n"
    "            Aggregate        :        218       3500\n"
    "            #0               :         62       1000     2.000s  nodeA\n"
    "            #1               :        156       2500      400ms  nodeB\n"
    "---\n"
)


# ---------------------------------------------------------------------------------------
# helpers


def per_second(total: int, elapsed_ns: int) -> int:
    """elbencho's rate, worked out here: ``total * 1e6 / elapsed_us``, truncated."""
    return int(total * 1e6 / (elapsed_ns // 1000))


def rates(ops: int, elapsed_ns: int) -> dict[str, int]:
    return {
        "bytes_per_s": per_second(ops * BLOCK, elapsed_ns),
        "iops": per_second(ops, elapsed_ns),
        "entries_per_s": 0,
    }


def totals(index: int, path: str, ops: int, elapsed_ns: int) -> TargetTotals:
    return TargetTotals(
        index=index, path=path, ops=ops, bytes=ops * BLOCK, entries=0, elapsed_ns=elapsed_ns
    )


def rank_totals(rank: int, host: str, ops: int, elapsed_ns: int) -> RankTotals:
    return RankTotals(
        rank=rank, host=host, ops=ops, bytes=ops * BLOCK, entries=0, elapsed_ns=elapsed_ns
    )


def host_totals(index: int, host: str, ops: int, elapsed_ns: int) -> HostTotals:
    return HostTotals(
        index=index, host=host, ops=ops, bytes=ops * BLOCK, entries=0, elapsed_ns=elapsed_ns
    )


def host_rows(ranks: list[tuple[int, str, int, int]]) -> list[tuple[int, str, int, int]]:
    """(index, host, ops, elapsed_ns) per host, numbered in order of each host's first rank."""
    names = list(dict.fromkeys(host for _, host, _, _ in ranks))
    return [
        (
            i,
            name,
            sum(ops for _, host, ops, _ in ranks if host == name),
            max(ns for _, host, _, ns in ranks if host == name),
        )
        for i, name in enumerate(names)
    ]


def latency(count: int) -> LatencySummary:
    recorder = LatencyRecorder()
    recorder.add(np.arange(1, count + 1, dtype=np.int64) * 1000)
    return recorder.summary()


def mpi_phase(ranks: list[tuple[int, str, int, int]] | None = RANKS) -> PhaseResult:
    """A WRITE phase on two targets; with ``ranks``, as an MPI run's rank 0 reports it."""
    rows = ranks if ranks is not None else RANKS
    ops = sum(r[2] for r in rows)
    elapsed = max(r[3] for r in rows)
    last = Totals(elapsed_ns=elapsed, ops=ops, bytes=ops * BLOCK)
    first = Totals(elapsed_ns=min(r[3] for r in rows), ops=ops // 2, bytes=ops // 2 * BLOCK)
    return PhaseResult(
        name="WRITE",
        start_time=START,
        first_done=first,
        last_done=last,
        io_latency=latency(ops),
        peak_inflight_ops=len(rows),
        threads=tuple(
            ThreadTotals(rank=r, ops=n, bytes=n * BLOCK, entries=0, elapsed_ns=ns)
            for r, _, n, ns in rows
        ),
        targets=(totals(0, "f1", ops // 2, elapsed), totals(1, "f2", ops - ops // 2, elapsed)),
        ranks=tuple(rank_totals(*r) for r in ranks) if ranks is not None else (),
        hosts=tuple(host_totals(*h) for h in host_rows(ranks)) if ranks is not None else (),
    )


def example_meta(hosts: list[str] | None) -> dict[str, object]:
    """The example document's meta, with ``mpi`` for ranks on ``hosts`` (None: no MPI)."""
    meta: dict[str, object] = json.loads(EXAMPLE.read_text(encoding="utf-8"))["meta"]
    if hosts is not None:
        meta["mpi"] = {"size": len(hosts), "shared": True, "hosts": hosts}
    return meta


def mpi_run() -> RunResult:
    return RunResult(meta=example_meta([host for _, host, _, _ in RANKS]), phases=[mpi_phase()])


def rows_of(block: str) -> dict[str, list[str]]:
    """A block's rows by name (``Min``, ``#0``, ...): the cells after the colon."""
    lines = block.splitlines()
    assert lines[-1] == "---"
    return {line[:29].strip(): line[30:].split() for line in lines[1:-1]}


# ---------------------------------------------------------------------------------------
# table


def test_rank_and_host_blocks_golden_text() -> None:
    phase = mpi_phase()
    assert rank_block(phase) == RANK_BLOCK
    assert host_block(phase) == HOST_BLOCK
    # After the phase block (and the per-target block when asked for): ranks, then hosts.
    off = TableOptions(pertarget=False)
    assert phase_text(phase, off) == phase_block(phase, off) + RANK_BLOCK + HOST_BLOCK
    with_targets = phase_block(phase, off) + target_block(phase) + RANK_BLOCK + HOST_BLOCK
    assert phase_text(phase, TableOptions(pertarget=True)) == with_targets
    assert "per target" in target_block(phase)


def test_min_and_max_name_the_slow_and_the_fast_rank() -> None:
    rows = rows_of(rank_block(mpi_phase()))
    assert list(rows) == ["Min", "Max", "Average", "Aggregate", "#0", "#1", "#2"]
    # By throughput rank 1 is the slowest and rank 2 the fastest; each row names its host.
    assert rows["Min"][2:] == ["2.000s", "rank", "1", "nodeA"]
    assert rows["Max"][2:] == ["400ms", "rank", "2", "nodeB"]
    each = [rates(ops, ns) for _, _, ops, ns in RANKS]
    aggregate = {key: sum(r[key] for r in each) for key in ("bytes_per_s", "iops")}
    assert rows["Aggregate"] == [str(aggregate["bytes_per_s"] // MIB), str(aggregate["iops"])]
    assert rows["Average"] == [
        str(aggregate["bytes_per_s"] // 3 // MIB),
        str(aggregate["iops"] // 3),
    ]
    for (rank, host, ops, ns), r in zip(RANKS, each, strict=True):
        assert rows[f"#{rank}"][0] == str(r["bytes_per_s"] // MIB)
        assert rows[f"#{rank}"][1] == str(ops * 1_000_000_000 // ns)
        assert rows[f"#{rank}"][-1] == host


def test_host_block_sums_the_ranks_of_a_host() -> None:
    rows = rows_of(host_block(mpi_phase()))
    assert list(rows) == ["Min", "Max", "Average", "Aggregate", "#0", "#1"]
    # nodeA: ranks 0 and 1, 2000 blocks of 64 KiB over rank 1's 2 s; nodeB: rank 2 alone.
    assert rows["#0"] == [str(2000 * BLOCK // 2 // MIB), "1000", "2.000s", "nodeA"]
    assert rows["#1"] == [str(1000 * BLOCK * 10 // 4 // MIB), "2500", "400ms", "nodeB"]
    assert rows["Min"][-1] == "nodeA"
    assert rows["Max"][-1] == "nodeB"
    assert rows["Aggregate"] == [str((65_536_000 + 163_840_000) // MIB), "3500"]


def test_one_host_leaves_out_the_host_block() -> None:
    one_host = [(rank, "nodeA", ops, ns) for rank, _, ops, ns in RANKS]
    phase = mpi_phase(one_host)
    assert len(phase.hosts) == 1
    assert host_block(phase) != ""  # it could be shown; phase_text leaves it out
    text = phase_text(phase)
    assert text == phase_block(phase) + rank_block(phase)
    assert "per rank" in text and "per host" not in text
    assert rows_of(rank_block(phase))["Min"][-3:] == ["rank", "1", "nodeA"]


@pytest.mark.parametrize("pertarget", [False, True])
def test_without_mpi_there_is_no_rank_or_host_block(pertarget: bool) -> None:
    phase = mpi_phase(None)
    assert phase.ranks == () and phase.hosts == ()
    options = TableOptions(pertarget=pertarget)
    text = phase_text(phase, options)
    assert text == phase_block(phase, options) + (target_block(phase) if pertarget else "")
    assert rank_block(phase) == host_block(phase) == ""
    table = render_table([phase], options)
    assert "per rank" not in table and "per host" not in table


# ---------------------------------------------------------------------------------------
# JSON


def test_phase_dict_per_rank_and_per_host() -> None:
    doc = phase_dict(mpi_phase())
    assert list(doc)[-3:] == ["intervals", "per_rank", "per_host"]
    slow, fast = rates(1000, 2000 * MS), rates(1000, 400 * MS)
    ranks = [
        {"rank": r, "host": h, "ops": n, "bytes": n * BLOCK, "entries": 0, "elapsed_ns": ns}
        | rates(n, ns)
        for r, h, n, ns in RANKS
    ]
    all_rates = [rates(n, ns) for _, _, n, ns in RANKS]
    rank_sum = {k: sum(r[k] for r in all_rates) for k in ("bytes_per_s", "iops", "entries_per_s")}
    assert doc["per_rank"] == {
        "ranks": ranks,
        "metric": "bytes_per_s",
        "min": {"rank": 1, "host": "nodeA"} | slow,
        "max": {"rank": 2, "host": "nodeB"} | fast,
        "average": {k: v // 3 for k, v in rank_sum.items()},
        "aggregate": rank_sum,
    }
    node_a = rates(2000, 2000 * MS)
    hosts = [
        {"index": 0, "host": "nodeA", "ops": 2000, "bytes": 2000 * BLOCK, "entries": 0}
        | {"elapsed_ns": 2000 * MS}
        | node_a,
        {"index": 1, "host": "nodeB", "ops": 1000, "bytes": 1000 * BLOCK, "entries": 0}
        | {"elapsed_ns": 400 * MS}
        | fast,
    ]
    host_sum = {k: node_a[k] + fast[k] for k in node_a}
    assert doc["per_host"] == {
        "hosts": hosts,
        "metric": "bytes_per_s",
        "min": {"index": 0, "host": "nodeA"} | node_a,
        "max": {"index": 1, "host": "nodeB"} | fast,
        "average": {k: v // 2 for k, v in host_sum.items()},
        "aggregate": host_sum,
    }


def test_phase_dict_without_mpi_has_no_rank_keys() -> None:
    doc = phase_dict(mpi_phase(None))
    assert "per_rank" not in doc and "per_host" not in doc
    assert [t["path"] for t in doc["per_target"]["targets"]] == ["f1", "f2"]


# ---------------------------------------------------------------------------------------
# schema


def test_new_definitions_are_strict() -> None:
    schema = load_schema()
    defs = schema["$defs"]
    names = ["per_rank", "per_host", "rank", "host", "named_rank_rates", "named_host_rates"]
    for name in names:
        assert defs[name]["additionalProperties"] is False, name
        assert defs[name]["description"], name
    assert defs["meta"]["properties"]["mpi"]["additionalProperties"] is False
    phase = defs["phase"]
    assert {"per_rank", "per_host"} <= set(phase["properties"])
    assert "per_rank" not in phase["required"] and "per_host" not in phase["required"]
    assert "mpi" not in defs["meta"]["required"]


def test_mpi_document_validates(validator: Draft202012Validator) -> None:
    doc = result_dict(mpi_run())
    assert doc["meta"]["mpi"] == {"size": 3, "shared": True, "hosts": ["nodeA", "nodeA", "nodeB"]}
    assert "per_rank" in doc["phases"][0] and "per_host" in doc["phases"][0]
    assert errors_of(validator, doc) == []
    # The same document written as text and read back, as a consumer sees it.
    assert errors_of(validator, json.loads(dumps(mpi_run()))) == []
    without = result_dict(RunResult(meta=example_meta(None), phases=[mpi_phase(None)]))
    assert errors_of(validator, without) == []


def _at(doc: Doc, path: list[str | int]) -> Any:
    node: Any = doc
    for key in path:
        node = node[key]
    return node


def _set(path: list[str | int], value: object) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        _at(doc, path[:-1])[path[-1]] = value

    return mutate


def _delete(path: list[str | int]) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        del _at(doc, path[:-1])[path[-1]]

    return mutate


RANK0: list[str | int] = ["phases", 0, "per_rank", "ranks", 0]
HOSTS: list[str | int] = ["phases", 0, "per_host"]
BROKEN: dict[str, Callable[[Doc], None]] = {
    "rank-without-host": _delete([*RANK0, "host"]),
    "rank-negative": _set([*RANK0, "rank"], -1),
    "rank-extra-key": _set([*RANK0, "path"], "nodeA"),
    "no-ranks": _set(["phases", 0, "per_rank", "ranks"], []),
    "min-rank-without-rank": _delete(["phases", 0, "per_rank", "min", "rank"]),
    "per-rank-extra-key": _set(["phases", 0, "per_rank", "size"], 3),
    "host-index-as-string": _set([*HOSTS, "hosts", 0, "index"], "0"),
    "max-host-without-host": _delete([*HOSTS, "max", "host"]),
    "per-host-without-aggregate": _delete([*HOSTS, "aggregate"]),
    "mpi-size-0": _set(["meta", "mpi", "size"], 0),
    "mpi-shared-as-string": _set(["meta", "mpi", "shared"], "true"),
    "mpi-host-as-number": _set(["meta", "mpi", "hosts", 2], 7),
    "mpi-without-hosts": _delete(["meta", "mpi", "hosts"]),
    "mpi-extra-key": _set(["meta", "mpi", "ranks"], 3),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_mpi_document_fails(validator: Draft202012Validator, name: str) -> None:
    doc = json.loads(dumps(mpi_run()))
    broken = copy.deepcopy(doc)
    BROKEN[name](broken)
    assert broken != doc
    assert errors_of(validator, broken) != [], name


# ---------------------------------------------------------------------------------------
# saved runs


def test_saved_run_gives_back_the_same_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = mpi_run()
    path = tmp_path / "run.json"
    path.write_text(dumps(run), encoding="utf-8")
    loaded = load_run(str(path))
    (phase,) = loaded.phases
    assert phase.ranks == run.phases[0].ranks
    assert phase.hosts == run.phases[0].hosts
    for pertarget in (False, True):
        table = render_table(run.phases, TableOptions(pertarget=pertarget))
        assert render_table(loaded.phases, TableOptions(pertarget=pertarget)) == table
    # The example document comes from an aiobench before --lat, which always showed the
    # latency rows, and the per-target block with two paths: `show` shows them likewise.
    expected = render_table(run.phases, TableOptions(lat=True, latpercent=True, pertarget=True))
    assert expected.count(RANK_BLOCK) == expected.count(HOST_BLOCK) == 1
    code, out, err = call(capsys, "show", str(path))
    assert (code, err) == (0, "")
    assert out == expected


def test_saved_run_without_rank_keys_has_no_ranks(tmp_path: Path) -> None:
    doc = json.loads(dumps(mpi_run()))
    for phase in doc["phases"]:
        del phase["per_rank"], phase["per_host"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    (phase,) = load_run(str(path)).phases
    assert phase.ranks == () and phase.hosts == ()
    assert [t.path for t in phase.targets] == ["f1", "f2"]


# ---------------------------------------------------------------------------------------
# CSV


@pytest.mark.parametrize(
    ("hosts", "cell"),
    [
        (["nodeA", "nodeA", "nodeB"], "2"),
        (["nodeA", "nodeA", "nodeA"], "1"),
        (["n0", "n1", "n2", "n3"], "4"),
        (None, "1"),
    ],
)
def test_csv_hosts_cell_counts_distinct_hosts(hosts: list[str] | None, cell: str) -> None:
    row = result_row(example_meta(hosts), mpi_phase())
    assert len(row) == len(RESULT_HEADER)
    assert row[RESULT_HEADER.index("hosts")] == cell
