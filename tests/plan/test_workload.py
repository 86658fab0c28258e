"""Operation streams: sequential order, uniform random reads, full-coverage random writes."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest

from aiobench.kinds import READ, WRITE, PhaseKind
from aiobench.plan.split import StreamOrder, ThreadSplit
from aiobench.plan.workload import (
    Layout,
    OpRun,
    OpStream,
    Permutation,
    RwMix,
    Slice,
    ops_per_thread,
)
from tests.helpers import stream


def drain(stream: OpStream, step: int = 7) -> list[tuple[int, int, int]]:
    """All (path index, offset, length) the stream hands out, in order."""
    out: list[tuple[int, int, int]] = []
    while (run := stream.take(step)) is not None:
        out.extend(_expand(run))
    return out


def _expand(run: OpRun) -> list[tuple[int, int, int]]:
    index = run.path_index
    indices = [index] * len(run) if isinstance(index, int) else index
    return [(i, off, run.length) for i, off in zip(indices, run.offsets, strict=False)]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 1000, 4097, 65_537])
def test_permutation_visits_every_value_once_per_period(n: int) -> None:
    perm = Permutation(n, np.random.default_rng(n))
    values: list[int] = []
    while len(values) < 2 * n:
        values.extend(perm.chunk().tolist())
    first, second = values[:n], values[n : 2 * n]
    assert sorted(first) == list(range(n))
    assert sorted(second) == list(range(n))
    if n >= 1000:
        assert first != sorted(first)  # actually shuffled


def test_sequential_slice_spanning_two_files_with_short_blocks() -> None:
    layout = Layout((2500, 2000), 1000)  # blocks: 1000,1000,500 | 1000,1000
    ops = drain(stream(layout, Slice(1, 4)), step=10)
    assert ops == [(0, 1000, 1000), (0, 2000, 500), (1, 0, 1000), (1, 1000, 1000)]


def test_random_writes_cover_the_slice_exactly_once() -> None:
    layout = Layout((10 * 4096, 10 * 4096), 4096)
    for part in layout.slices(3):
        ops = drain(stream(layout, part, rand=True, permute=True))
        blocks = [layout.cum_blocks[i] + off // 4096 for i, off, _ in ops]
        assert sorted(blocks) == list(range(part.first_block, part.first_block + part.blocks))


def test_random_reads_stay_in_slice_and_repeat() -> None:
    layout = Layout((64 * 4096,), 4096)
    part = Slice(16, 16)
    ops = drain(stream(layout, part, rand=True, total=2000))
    assert len(ops) == 2000
    blocks = Counter(off // 4096 for _, off, _ in ops)
    assert set(blocks) == set(range(16, 32))  # uniform over the slice, with replacement
    assert max(blocks.values()) > 1


def test_unaligned_random_offsets_stay_inside_the_file() -> None:
    layout = Layout((10 * 4096,), 4096)
    ops = drain(stream(layout, Slice(0, 10), rand=True, total=500, aligned=False))
    offsets = [off for _, off, _ in ops]
    assert max(offsets) <= 9 * 4096
    assert any(off % 4096 for off in offsets)


def test_unaligned_random_writes_visit_every_block_once_and_reach_each_file_end() -> None:
    layout = Layout((10 * 4096, 6 * 4096), 4096)
    for part in layout.slices(3):
        ops = drain(stream(layout, part, rand=True, permute=True, aligned=False))
        # Each write stays inside the block it stands for (shifted forward, or clamped to
        # the file end), and every block of the slice is written once.
        blocks = [layout.cum_blocks[i] + off // 4096 for i, off, _ in ops]
        assert sorted(blocks) == list(range(part.first_block, part.first_block + part.blocks))
    ends = {i: 0 for i in range(2)}
    for part in layout.slices(3):
        for i, off, length in drain(stream(layout, part, rand=True, permute=True, aligned=False)):
            ends[i] = max(ends[i], off + length)
    assert ends == {0: 10 * 4096, 1: 6 * 4096}  # a read phase after it finds no early EOF


def test_seeded_streams_repeat_exactly() -> None:
    layout = Layout((1 << 20,), 4096)
    a = drain(stream(layout, Slice(0, 256), rand=True, total=300, seed=9))
    b = drain(stream(layout, Slice(0, 256), rand=True, total=300, seed=9))
    assert a == b


def test_randamount_is_split_evenly_in_whole_blocks() -> None:
    layout = Layout((1 << 20,) * 2, 4096)
    parts = layout.slices(3)
    assert ops_per_thread(layout, parts, 3, True, None) == [170, 170, 172]
    assert ops_per_thread(layout, parts, 3, True, 1 << 20) == [85, 85, 85]
    assert ops_per_thread(layout, parts, 3, False, 1 << 20) == [170, 170, 172]


def test_run_after_keeps_the_rest_in_order() -> None:
    run = OpRun([0, 1, 1, 0], [0, 4096, 8192, 12288], 4096)
    rest = run.after(1)
    assert (rest.path_index, rest.offsets, rest.length) == ([1, 1, 0], [4096, 8192, 12288], 4096)
    single = OpRun(2, [0, 4096, 8192], 4096).after(2)
    assert (single.path_index, single.offsets) == (2, [8192])


def test_runs_of_one_thread_join_into_one_run() -> None:
    one = OpRun(2, [0, 4096], 4096, first_seq=10)
    same_path = one.joined(OpRun(2, [8192], 4096, first_seq=12))
    assert same_path is not None
    assert (same_path.path_index, same_path.offsets, same_path.first_seq) == (
        2,
        [0, 4096, 8192],
        10,
    )
    assert same_path.path_array is None
    two_paths = one.joined(OpRun([0, 1], [0, 0], 4096, np.array([0, 1]), first_seq=12))
    assert two_paths is not None
    assert two_paths.path_index == [2, 2, 0, 1] and two_paths.offsets == [0, 4096, 0, 0]
    assert two_paths.path_array is not None and two_paths.path_array.tolist() == [2, 2, 0, 1]
    assert len(two_paths) == 4 and two_paths.totals(4, 0) == (4, 4 * 4096, 0)


def test_runs_that_are_not_one_stream_do_not_join() -> None:
    one = OpRun(0, [0, 4096], 4096, first_seq=10)
    assert one.joined(OpRun(0, [8192], 512, first_seq=12)) is None  # another length
    assert one.joined(OpRun(0, [8192], 4096, first_seq=13)) is None  # a gap between them
    mixed = OpRun(0, [8192], 4096, first_seq=12, mix=RwMix(50, 0))
    assert one.joined(mixed) is None  # another --rwmixpct


# -- sequential streams: ranges of offsets, the same as the block arithmetic ---------------

Op = tuple[int, int, int]


def _expected_blocks(sizes: tuple[int, ...], bs: int, first: int, blocks: int) -> list[Op]:
    """(path, offset, length) of global blocks ``first ..`` by hand: each path's blocks
    in turn, its last one short when its size is not a multiple of ``bs``."""
    out: list[Op] = []
    for path, size in enumerate(sizes):
        out += [(path, off, min(bs, size - off)) for off in range(0, size, bs)]
    return out[first : first + blocks]


@pytest.mark.parametrize("sizes", [(64 * 4096,), (10 * 4096 + 100, 3 * 4096, 4096 - 1, 7 * 4096)])
@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("step", [1, 5, 1000])
def test_sequential_offsets_are_each_threads_blocks_in_order(
    sizes: tuple[int, ...], threads: int, step: int
) -> None:
    layout = Layout(sizes, 4096)
    streams = layout.streams(WRITE, 0, StreamOrder(seed=1), ThreadSplit.alone(threads))
    for part, one in zip(layout.slices(threads), streams, strict=True):
        ops: list[Op] = []
        while (run := one.take(step)) is not None:
            assert isinstance(run.offsets, range) and run.offsets_array is None
            assert isinstance(run.path_index, int) and run.first_seq == len(ops)
            ops += _expand(run)
        assert ops == _expected_blocks(sizes, 4096, part.first_block, part.blocks)


def test_a_long_sequential_run_is_one_range() -> None:
    (one,) = Layout((1 << 30,), 4096).streams(WRITE, 0, StreamOrder(seed=1), ThreadSplit.alone(1))
    run, more = one.take(65_536), one.take(3)
    assert run is not None and more is not None
    assert run.offsets == range(0, 65_536 * 4096, 4096) and run.length == 4096
    assert (more.offsets, more.first_seq) == (range(65_536 * 4096, 65_539 * 4096, 4096), 65_536)


def test_a_range_run_cuts_and_joins_as_ranges() -> None:
    (one,) = Layout((64 * 4096,), 4096).streams(WRITE, 0, StreamOrder(seed=1), ThreadSplit.alone(1))
    first, then = one.take(10), one.take(6)
    assert first is not None and then is not None
    rest = first.after(3)
    assert (rest.offsets, rest.first_seq, rest.path_index) == (range(3 * 4096, 40960, 4096), 3, 0)
    pieces = first.pieces(4)
    assert [(p.offsets, p.first_seq) for p in pieces] == [
        (range(0, 4 * 4096, 4096), 0),
        (range(4 * 4096, 8 * 4096, 4096), 4),
        (range(8 * 4096, 10 * 4096, 4096), 8),
    ]
    joined = rest.joined(then)
    assert joined is not None
    assert (joined.offsets, joined.first_seq, joined.path_index) == (
        range(3 * 4096, 16 * 4096, 4096),
        3,
        0,
    )
    assert joined.offsets_array is None and joined.path_array is None


def test_runs_of_ranges_that_do_not_go_on_join_as_lists() -> None:
    two = OpRun(0, range(0, 2 * 4096, 4096), 4096)
    gap = two.joined(OpRun(0, range(10 * 4096, 12 * 4096, 4096), 4096, first_seq=2))
    assert gap is not None and gap.offsets == [0, 4096, 40960, 45056]
    back = OpRun(0, range(4096, -1, -4096), 4096).joined(
        OpRun(0, range(8192, 12288, 4096), 4096, first_seq=2)
    )
    assert back is not None and back.offsets == [4096, 0, 8192]
    listed = two.joined(OpRun(0, [8192, 12288], 4096, first_seq=2))
    assert listed is not None and listed.offsets == [0, 4096, 8192, 12288]
    paths = two.joined(OpRun(1, range(0, 4096, 4096), 4096, first_seq=2))
    assert paths is not None and (paths.path_index, paths.offsets) == ([0, 0, 1], [0, 4096, 0])


def test_a_sequential_stream_across_paths_joins_at_the_path_end() -> None:
    layout = Layout((3 * 4096, 2 * 4096), 4096)
    (one,) = layout.streams(WRITE, 0, StreamOrder(seed=1), ThreadSplit.alone(1))
    first, then = one.take(10), one.take(10)  # (a run stays in its path)
    assert first is not None and then is not None
    assert (first.path_index, first.offsets) == (0, range(0, 3 * 4096, 4096))
    joined = first.joined(then)
    assert joined is not None and _expand(joined) == _expected_blocks(layout.sizes, 4096, 0, 5)


def _never() -> np.random.Generator:
    raise AssertionError("a stream that draws nothing made its generator")


@pytest.mark.parametrize(
    "order", [{}, {"backward": True}, {"stride": 3}, {"backward": True, "stride": 2}]
)
def test_only_a_random_stream_makes_its_generator(order: dict[str, Any]) -> None:
    layout = Layout((30 * 4096,), 4096)
    stride = order.get("stride", 1)
    part = Slice(1, 29 // stride)
    one = OpStream(
        layout=layout,
        part=part,
        total_ops=part.blocks,
        rand=False,
        aligned=True,
        permute=False,
        rng=_never,
        backward=order.get("backward", False),
        stride=stride,
    )
    assert len(drain(one)) == part.blocks


def test_random_streams_keep_their_sequences() -> None:
    """The offsets a seed gives (made lazily, the generator is the one made before)."""
    layout = Layout((64 * 4096, 32 * 4096), 4096)
    got = {}
    cases: list[tuple[str, PhaseKind, dict[str, Any]]] = [
        ("read", READ, {}),
        ("write", WRITE, {}),
        ("unaligned", READ, {"aligned": False}),
        ("fast", READ, {"randalgo": "fast"}),
    ]
    for name, kind, over in cases:
        order = StreamOrder(seed=5, rand=True, **over)
        run = layout.streams(kind, 1, order, ThreadSplit.alone(2))[1].take(4)
        assert run is not None
        got[name] = _expand(run)
    assert got == SEQUENCES


# (the first operations of thread 1 in phase 1, as main made them before the streams'
# generators became lazy)
SEQUENCES: dict[str, list[Op]] = {
    "read": [(1, 106496, 4096), (1, 106496, 4096), (0, 249856, 4096), (1, 40960, 4096)],
    "write": [(1, 24576, 4096), (0, 208896, 4096), (1, 0, 4096), (0, 233472, 4096)],
    "unaligned": [(1, 108240, 4096), (1, 106828, 4096), (0, 253308, 4096), (1, 44635, 4096)],
    "fast": [(0, 221184, 4096), (1, 81920, 4096), (0, 200704, 4096), (0, 217088, 4096)],
}
