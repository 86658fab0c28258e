"""The native engine's arrays are the standard library's (a plain run loads no numpy): the
int64 buffers it hands to C and the instants it hands back."""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from time import perf_counter_ns

import numpy as np
import pytest

from aiobench.engines import _native, native
from aiobench.engines.base import IoOptions, Job, RawBatch
from aiobench.engines.buffers import PoolSource, SlotBuffer
from aiobench.engines.gate import StartGate
from aiobench.engines.verify import pattern
from aiobench.kinds import WRITE
from aiobench.plan.dirmode import EntryRun
from aiobench.plan.split import StreamOrder, ThreadSplit
from aiobench.plan.workload import Layout, OpRun
from tests.helpers import fd_targets

pytestmark = pytest.mark.skipif(not native.available(), reason=f"{native.build_error}")

BLOCK = 4096
SALT = 0x5EED_0000_0000_0001


@pytest.fixture
def target(tmp_path: Path) -> Iterator[int]:
    fd = os.open(tmp_path / "t", os.O_RDWR | os.O_CREAT, 0o644)
    yield fd
    os.close(fd)


@pytest.fixture
def buf() -> Iterator[SlotBuffer]:
    slot = SlotBuffer(BLOCK, for_write=True, source=PoolSource([2]), stamp_base=3)
    yield slot
    slot.close()


def int64s(values: object) -> bool:
    return isinstance(values, array) and values.typecode == "q" and values.itemsize == 8


def sequential(blocks: int, take: int) -> OpRun:
    """The first ``take`` operations of a one-thread sequential stream over ``blocks``."""
    layout = Layout((blocks * BLOCK,), BLOCK)
    (stream,) = layout.streams(WRITE, 0, StreamOrder(seed=1), ThreadSplit.alone(1))
    run = stream.take(take)
    assert run is not None and isinstance(run.offsets, range)
    return run


def run_native(job: Job) -> tuple[RawBatch, int, int]:
    """The batch, and instants just before and after the call."""
    before = perf_counter_ns()
    batch = native.NativeEngine().run(job)
    return batch, before, perf_counter_ns()


def check_instants(batch: RawBatch, count: int, before: int, after: int) -> None:
    """``count`` operations, one after the other, inside the call."""
    assert int64s(batch.starts) and int64s(batch.ends)
    assert len(batch.starts) == len(batch.ends) == count
    pairs = list(zip(batch.starts, batch.ends, strict=True))
    assert all(before <= start <= end <= after for start, end in pairs)
    assert all(end <= start for (_, end), (start, _) in pairwise(pairs))


@pytest.mark.parametrize("depth", [1, 4])
def test_a_sequential_run_writes_its_range_of_offsets(
    tmp_path: Path, target: int, depth: int
) -> None:
    """The range's offsets reach C as written (here as --verify's pattern: each block's
    bytes name its offset), and the instants come back as int64 arrays."""
    slot = SlotBuffer(BLOCK, for_write=True, source=PoolSource([2]), stamp_base=3, depth=depth)
    ops = sequential(64, 40)
    options = IoOptions(verify=SALT) if depth == 1 else IoOptions()  # (AIO: no --verify)
    job = Job(WRITE, fd_targets(["t"], [target]), ops, slot, 1 << 62, options=options, depth=depth)
    try:
        batch, before, after = run_native(job)
    finally:
        slot.close()
    assert batch.error is None
    if depth == 1:
        check_instants(batch, 40, before, after)
        assert (tmp_path / "t").read_bytes() == pattern(0, 40 * BLOCK, SALT)
    else:  # (Linux AIO: in flight together, ends in completion order)
        assert int64s(batch.starts) and int64s(batch.ends) and len(batch.ends) == 40
        assert (tmp_path / "t").stat().st_size == 40 * BLOCK


def test_a_paced_run_hands_back_its_due_instants_as_int64s(target: int, buf: SlotBuffer) -> None:
    start = perf_counter_ns()
    job = Job(
        WRITE,
        fd_targets(["t"], [target]),
        sequential(8, 8),
        buf,
        1 << 62,
        options=IoOptions(rate_bytes_per_s=BLOCK * 10_000),
        schedule_start_ns=start,
    )
    batch, before, after = run_native(job)
    check_instants(batch, 8, before, after)
    assert int64s(batch.intended)
    assert batch.intended.tolist() == [start + i * 100_000 for i in range(8)]


def test_a_batch_keeps_its_instants_past_the_slots_next_run(target: int, buf: SlotBuffer) -> None:
    """Each run fills arrays of its own: the slot's next run does not write over them."""
    ops = sequential(64, 30)
    targets = fd_targets(["t"], [target])
    first, _, _ = run_native(Job(WRITE, targets, ops.pieces(20)[0], buf, 1 << 62))
    kept = (first.starts.tolist(), first.ends.tolist())
    second, _, _ = run_native(Job(WRITE, targets, ops.pieces(20)[1], buf, 1 << 62))
    assert (first.starts.tolist(), first.ends.tolist()) == kept
    assert len(first.ends) == 20 and len(second.ends) == 10
    assert second.starts[0] >= first.ends[-1]


def test_a_run_cut_by_its_budget_hands_back_only_what_was_done(
    target: int, buf: SlotBuffer
) -> None:
    job = Job(WRITE, fd_targets(["t"], [target]), sequential(64, 64), buf, 0)  # (ended)
    batch, before, after = run_native(job)
    check_instants(batch, 1, before, after)


@pytest.mark.parametrize(
    "ops",
    [
        OpRun(0, range(8192, 8192 + 5 * BLOCK, BLOCK), BLOCK),
        OpRun(0, range(12288, -1, -BLOCK), BLOCK),
        OpRun(0, [40960, 0, 4096], BLOCK),
        OpRun(0, [7, 8], BLOCK, offsets_array=np.array([7, 8], dtype=np.int64)),
    ],
    ids=["range", "backward range", "list", "numpy"],
)
def test_every_kind_of_offsets_reaches_c_as_int64s(ops: OpRun) -> None:
    offsets = native._offsets(ops)
    assert np.asarray(offsets).dtype == np.int64 and list(offsets) == list(ops.offsets)
    assert isinstance(offsets, array) == (ops.offsets_array is None)  # (numpy's: as it is)


def test_fill_steps_fills_a_buffer_with_a_range() -> None:
    out = array("q", [0]) * 4
    _native.fill_steps(out, -5, 3)
    assert out.tolist() == [-5, -2, 1, 4]
    _native.fill_steps(memoryview(out)[1:3], 100, -100)
    assert out.tolist() == [-5, 100, 0, 4]
    with pytest.raises(ValueError, match="8-byte items"):
        _native.fill_steps(array("i", [0, 0]), 0, 1)


def test_dir_mode_instants_are_int64s_and_grow_in_place(tmp_path: Path, buf: SlotBuffer) -> None:
    dfd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        run = EntryRun(0, ["a", "b"], size=3 * BLOCK, block=BLOCK)
        job = Job(WRITE, fd_targets([str(tmp_path)], [dfd]), run, buf, 1 << 62)
        batch, before, after = run_native(job)
    finally:
        os.close(dfd)
    assert batch.error is None
    check_instants(batch, 2, before, after)
    assert int64s(batch.io_starts) and int64s(batch.io_ends) and len(batch.io_ends) == 6
    assert all(before <= t <= after for t in [*batch.io_starts, *batch.io_ends])
    record = native._EntryArrays(2, 3)
    record.io_starts[:6] = array("q", range(6))
    record.grow()
    assert record.io_starts.tolist() == [*range(6), *[0] * 6] and len(record.io_ends) == 12


async def test_the_start_gate_is_an_int64_word_c_opens() -> None:
    gate = StartGate(0)
    assert int64s(gate.word)
    gate.open(123, 456, stopped=False)  # (through _native.gate_open)
    assert gate.word.tolist()[1:] == [456, 123]
    assert gate.until(1 << 62) == 456  # (open, and the time limit comes first)
