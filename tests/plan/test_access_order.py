"""--backward and --strided: the order in which each thread visits its blocks (#5)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from aiobench.engines.base import Job, RawBatch
from aiobench.engines.null import NullEngine
from aiobench.kinds import READ
from aiobench.plan.workload import Layout, OpRun, OpStream, Slice
from aiobench.run.phases import run_phase
from tests.helpers import RunCli, context, make_cfg, stream


def ops_of(stream: OpStream, step: int = 3) -> list[tuple[int, int, int]]:
    """(path index, offset, length) of every operation, taking runs of ``step``."""
    out: list[tuple[int, int, int]] = []
    while (run := stream.take(step)) is not None:
        index = run.path_index
        indices = [index] * len(run) if isinstance(index, int) else index
        assert len(set(indices)) > 1 or isinstance(index, int)  # one int when one path
        out.extend((i, off, run.length) for i, off in zip(indices, run.offsets, strict=True))
    return out


def test_backward_visits_the_slice_from_its_end_with_short_blocks_on_their_own() -> None:
    layout = Layout((2500, 2000), 1000)  # blocks: 1000,1000,500 | 1000,1000
    ops = ops_of(stream(layout, Slice(1, 4), backward=True))
    assert ops == [(1, 1000, 1000), (1, 0, 1000), (0, 2000, 500), (0, 1000, 1000)]


def test_strided_thread_takes_every_nth_block_across_paths() -> None:
    layout = Layout((3 * 4096, 4 * 4096), 4096)  # 7 blocks over two files
    threads = 3
    seen: list[tuple[int, int]] = []
    for rank in range(threads):
        part = Slice(rank, len(range(rank, layout.total_blocks, threads)))
        ops = ops_of(stream(layout, part, stride=threads), step=5)
        blocks = [layout.cum_blocks[i] + off // 4096 for i, off, _ in ops]
        assert blocks == list(range(rank, layout.total_blocks, threads))
        seen += [(i, off) for i, off, _ in ops]
    # Together the threads cover every block once.
    assert sorted(seen) == [(0, o) for o in range(0, 3 * 4096, 4096)] + [
        (1, o) for o in range(0, 4 * 4096, 4096)
    ]


def test_backward_strided_runs_never_mix_block_lengths() -> None:
    layout = Layout((10_000, 10_000), 4096)  # short last block (1808) in each file
    part = Slice(0, layout.total_blocks)
    ops = ops_of(stream(layout, part, backward=True), step=10)
    assert [op[2] for op in ops].count(10_000 - 2 * 4096) == 2
    assert len(ops) == layout.total_blocks


class OrderEngine(NullEngine):
    """Keeps (path index, offset) of every operation in the order the slots ran them."""

    def __init__(self) -> None:
        super().__init__()
        self.done: list[tuple[int, int]] = []
        self.lock = threading.Lock()

    def run(self, job: Job) -> RawBatch:
        batch = super().run(job)
        index = job.ops.path_index
        assert isinstance(job.ops, OpRun)
        offsets = job.ops.offsets
        with self.lock:
            for n in range(len(batch.ends)):
                self.done.append((index if isinstance(index, int) else index[n], offsets[n]))
        return batch


async def test_a_backward_phase_issues_offsets_in_descending_order(tmp_path: Path) -> None:
    cfg = make_cfg(
        [str(tmp_path / "f")], block="4k", size="400k", read=True, write=False, backward=True
    )
    engine = OrderEngine()
    await run_phase(context(cfg, Layout((400 * 4096,), 4096), engine), READ, 0)
    assert [off for _, off in engine.done] == [4096 * b for b in range(399, -1, -1)]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--backward", "--rand"], "--backward"),
        (["--strided", "--rand"], "--strided"),
        (["--backward", "--strided"], "--backward"),
    ],
)
def test_order_options_that_cannot_combine(
    run_cli: RunCli, tmp_path: Path, args: list[str], needle: str
) -> None:
    proc = run_cli("-w", "-s", "1m", *args, str(tmp_path / "f"))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"Error: {needle}") and proc.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("option", ["--backward", "--strided"])
def test_order_options_are_refused_in_dir_mode(
    run_cli: RunCli, tmp_path: Path, option: str
) -> None:
    proc = run_cli("-d", "-w", option, str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr == f"Error: {option}: not supported in dir mode (files are read whole)\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("option", ["--backward", "--strided"])
def test_order_options_write_and_read_every_byte(
    run_cli: RunCli, tmp_path: Path, option: str
) -> None:
    files = [str(tmp_path / "a"), str(tmp_path / "b")]
    out = tmp_path / "r.json"
    proc = run_cli(
        "-w", "-r", "-b", "4k", "-s", "38k", "-t", "3", option, *files, "--json", str(out)
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["meta"]["config"][option.lstrip("-")] is True
    for phase in doc["phases"]:
        assert phase["last_done"]["bytes"] == 2 * 38 * 1024
        assert phase["last_done"]["ops"] == 2 * 10  # 9 blocks of 4 KiB and one of 2 KiB each
        assert sum(t["bytes"] for t in phase["per_target"]["targets"]) == 2 * 38 * 1024
    assert [Path(f).stat().st_size for f in files] == [38 * 1024, 38 * 1024]
