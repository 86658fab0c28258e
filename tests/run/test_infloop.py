"""--infloop: each thread starts its work over until the time limit (#5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aiobench.plan.workload import Layout, OpStream, Slice
from tests.helpers import RunCli
from tests.helpers import stream as op_stream

pytestmark = pytest.mark.timing  # a phase as long as its time limit

MIB = 1 << 20


def blocks_taken(stream: OpStream, layout: Layout, count: int) -> list[int]:
    out: list[int] = []
    while len(out) < count:
        run = stream.take(3)
        assert run is not None  # a looping stream never runs dry
        index = run.path_index
        assert isinstance(index, int)
        out += [layout.cum_blocks[index] + off // layout.block_size for off in run.offsets]
    return out[:count]


def test_sequential_stream_starts_over_after_its_last_block() -> None:
    layout = Layout((8 * 4096,), 4096)
    stream = op_stream(layout, Slice(2, 4), loop=True)
    assert blocks_taken(stream, layout, 10) == [2, 3, 4, 5, 2, 3, 4, 5, 2, 3]
    assert stream.passes == 2 and stream.remaining > 0


def test_random_writes_cover_every_block_in_every_pass() -> None:
    layout = Layout((16 * 4096,), 4096)
    stream = op_stream(layout, Slice(0, 16), rand=True, permute=True, loop=True, seed=7)
    taken = blocks_taken(stream, layout, 48)
    for n in range(3):
        assert sorted(taken[16 * n : 16 * (n + 1)]) == list(range(16))
    assert stream.passes == 3


def test_infloop_runs_for_the_time_limit_and_more_than_one_pass(
    run_cli: RunCli, tmp_path: Path
) -> None:
    target = tmp_path / "f"
    out = tmp_path / "r.json"
    proc = run_cli("-w", "-b", "64k", "-s", "1m", str(target))
    assert proc.returncode == 0, proc.stderr
    proc = run_cli(
        "-r", "-b", "4k", "-t", "2", "--infloop", "--timelimit", "3", "--liveint", "500",
        str(target), "--json", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    phase = json.loads(out.read_text())["phases"][0]
    last = phase["last_done"]
    assert abs(last["elapsed_ns"] / 1e9 - 3) <= 0.3
    assert last["ops"] > 2 * 256  # 256 blocks of 4 KiB: more than two passes
    assert last["bytes"] == last["ops"] * 4096
    assert phase["time_limited"] is True
    percents = [iv["done_percent"] for iv in phase["intervals"]]
    assert percents == sorted(percents) and percents[-1] == 100  # by time, not by passes
    assert 0 < percents[0] < 50


def test_time_limited_infloop_write_keeps_the_files_whole(run_cli: RunCli, tmp_path: Path) -> None:
    target = tmp_path / "f"
    out = tmp_path / "r.json"
    proc = run_cli(
        "-w", "-r", "-b", "4k", "--rand", "-s", "1m", "--infloop", "--timelimit", "1",
        str(target), "--json", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert [p["phase"] for p in doc["phases"]] == ["WRITE"]  # the time limit ends the run
    assert doc["phases"][0]["last_done"]["ops"] > 256
    assert target.stat().st_size == MIB


def test_infloop_is_refused_in_dir_mode(run_cli: RunCli, tmp_path: Path) -> None:
    proc = run_cli("-d", "-w", "--infloop", "--timelimit", "1", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr == "Error: --infloop: not supported in dir mode yet\n"
    assert list(tmp_path.iterdir()) == []
