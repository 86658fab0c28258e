"""--randalgo: elbencho's generators of random offsets (#24), on real files."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiobench.engines.verify import pattern
from aiobench.kinds import READ, WRITE
from aiobench.plan.split import StreamOrder, ThreadSplit
from aiobench.plan.workload import Layout, OpStream
from tests.helpers import RunCli

ALGOS = ("fast", "balanced_single", "balanced", "strong")
SALT = 0x0BAD_CAFE_0000_0002
BLOCK = 4096
BLOCKS = 512


def _offsets(
    algo: str | None, *, seed: int = 7, kind: str = "read", aligned: bool = True
) -> list[tuple[int, int]]:
    layout = Layout((BLOCKS * BLOCK, 3 * BLOCKS * BLOCK), BLOCK)
    order = StreamOrder(seed=seed, rand=True, aligned=aligned, randalgo=algo)
    phase = READ if kind == "read" else WRITE
    out: list[tuple[int, int]] = []
    for stream in layout.streams(phase, 0, order, ThreadSplit.alone(2)):
        assert isinstance(stream, OpStream)
        while (run := stream.take(100)) is not None:
            paths = (
                [run.path_index] * len(run) if isinstance(run.path_index, int) else run.path_index
            )
            out.extend(zip(paths, run.offsets, strict=True))
    return out


@pytest.mark.parametrize("algo", ALGOS)
@pytest.mark.parametrize("aligned", [True, False])
def test_every_algo_gives_offsets_in_range(algo: str, aligned: bool) -> None:
    ops = _offsets(algo, aligned=aligned)
    assert len(ops) == 4 * BLOCKS
    sizes = (BLOCKS * BLOCK, 3 * BLOCKS * BLOCK)
    for path, offset in ops:
        assert 0 <= offset <= sizes[path] - BLOCK
        if aligned:
            assert offset % BLOCK == 0
    # Uniform enough: a thread's draws reach most of its share, not one corner of it.
    assert len(set(ops)) > 0.5 * len(ops)


def test_algos_differ_and_each_repeats_for_a_seed() -> None:
    runs = {algo: _offsets(algo) for algo in ALGOS}
    assert len({tuple(ops) for ops in runs.values()}) == len(ALGOS)
    for algo in ALGOS:
        assert _offsets(algo) == runs[algo]
        assert _offsets(algo, seed=8) != runs[algo]
    # elbencho's default for reads is balanced_single: the same stream as no --randalgo.
    assert _offsets(None) == runs["balanced_single"]


def test_given_an_algo_random_writes_draw_offsets_instead_of_covering() -> None:
    covering = _offsets(None, kind="write")
    assert len(set(covering)) == len(covering)  # the default: every block once
    for algo in ALGOS:
        drawn = _offsets(algo, kind="write")
        assert len(drawn) == len(covering)
        assert len(set(drawn)) < len(drawn)  # draws repeat blocks, as elbencho's do


def _rewritten(path: Path) -> frozenset[int]:
    data = path.read_bytes()
    return frozenset(
        b
        for b in range(BLOCKS)
        if data[b * BLOCK : (b + 1) * BLOCK] != pattern(b * BLOCK, BLOCK, SALT)
    )


def test_on_a_file_each_algo_rewrites_its_own_blocks(tmp_path: Path, run_cli: RunCli) -> None:
    """Over a --verify pattern, the blocks a random write phase rewrote are the blocks its
    generator drew: all of them by default, a seeded draw of each algo's own otherwise."""
    target = tmp_path / "f"
    common = ("-b", "4k", "-s", str(BLOCKS * BLOCK), "-t", "2", "--nolive", str(target))

    def rewritten(*extra: str) -> frozenset[int]:
        made = run_cli("-w", "--verify", str(SALT), *common)
        assert made.returncode == 0, made.stderr
        proc = run_cli("-w", "--rand", "--seed", "5", *extra, *common)
        assert proc.returncode == 0, proc.stderr
        return _rewritten(target)

    assert rewritten() == frozenset(range(BLOCKS))
    seen: dict[str, frozenset[int]] = {}
    for algo in ALGOS:
        blocks = seen[algo] = rewritten("--randalgo", algo)
        assert 0.4 * BLOCKS < len(blocks) < BLOCKS  # ~63 % for uniform draws
        assert rewritten("--randalgo", algo) == blocks
    assert len(set(seen.values())) == len(ALGOS)


def test_a_bad_name_is_one_error_line(tmp_path: Path, run_cli: RunCli) -> None:
    for option in ("--randalgo", "--blockvaralgo"):
        proc = run_cli("-w", "-s", "1m", option, "quick", str(tmp_path / "f"))
        assert proc.returncode == 2
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"Error: {option}: must be one of")
        assert not (tmp_path / "f").exists()
