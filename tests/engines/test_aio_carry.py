"""Linux AIO carry-over (issue #28): what a run's budget leaves in flight stays in the slot
for its next run, which counts each operation once; anything else drains it."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from time import perf_counter_ns
from typing import Any

import numpy as np
import pytest

from aiobench.engines import _native, native
from aiobench.engines.base import Job, RawBatch
from aiobench.engines.buffers import PoolSource, SlotBuffer
from aiobench.engines.python import PosixEngine
from aiobench.kinds import READ, WRITE, PhaseKind
from aiobench.plan.workload import OpRun
from tests.helpers import fd_targets, mounted_tmpfs, require_root_tools, run_tool

pytestmark = pytest.mark.skipif(not native.available(), reason=f"{native.build_error}")

BLOCK = 4096


def job(kind: PhaseKind, fd: int, buf: SlotBuffer, ops: OpRun, **over: Any) -> Job:
    until = over.pop("until_ns", 0)  # (0: every run ends past its budget at once)
    return Job(kind, fd_targets(["t"], [fd]), ops, buf, until, depth=buf.depth, **over)


def c_slot(buf: SlotBuffer) -> _native.Slot:
    assert isinstance(buf.state, _native.Slot)
    return buf.state


def buffer(depth: int, *, for_write: bool = True) -> SlotBuffer:
    source = PoolSource([1])
    return SlotBuffer(BLOCK, for_write=for_write, source=source, stamp_base=7, depth=depth)


def runs_to_the_end(
    kind: PhaseKind, fd: int, buf: SlotBuffer, ops: OpRun, budget_ns: int = 0
) -> tuple[list[RawBatch], list[int]]:
    """Run ``ops`` as the worker does: each next run is the last one's ``after(done)``;
    the batches, and the slot's carried count after each."""
    batches, carried = [], []
    engine = native.NativeEngine()
    while len(ops):
        until = perf_counter_ns() + budget_ns if budget_ns else 0
        batch = engine.run(job(kind, fd, buf, ops, until_ns=until))
        assert batch.error is None
        batches.append(batch)
        carried.append(c_slot(buf).carried)
        ops = ops.after(len(batch.ends))
    return batches, carried


def in_flight_at_most(batches: list[RawBatch]) -> int:
    edges = sorted(
        [(int(s), 1) for b in batches for s in b.starts]
        + [(int(e), -1) for b in batches for e in b.ends]
    )
    now = peak = 0
    for _, step in edges:  # (an end before a start at the same instant)
        now += step
        peak = max(peak, now)
    return peak


def write_one_at_a_time(path: Path, ops: OpRun, depth: int) -> None:
    """The Python engine's writes of ``ops`` at depth 1, from a slot made for ``depth``
    (the same pool bytes and windows as the carried runs')."""
    fd, buf = os.open(path, os.O_RDWR), buffer(depth)
    try:
        PosixEngine().run(Job(WRITE, fd_targets(["t"], [fd]), ops, buf, 1 << 62))
    finally:
        os.close(fd)
        buf.close()


@pytest.fixture
def target(tmp_path: Path) -> Iterator[int]:
    fd = os.open(tmp_path / "f", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        yield fd
    finally:
        os.close(fd)


def test_a_budget_leaves_the_next_operations_in_flight_in_the_slot(target: int) -> None:
    buf = buffer(4)
    try:
        ops = OpRun(0, [i * BLOCK for i in range(100)], BLOCK)
        batch = native.NativeEngine().run(job(WRITE, target, buf, ops))
        slot = c_slot(buf)
        done = len(batch.ends)
        assert batch.error is None and 1 <= done <= 4
        # The run's next ones were submitted while its done ones completed: they took
        # their windows and stamps, and stay with the slot.
        assert 1 <= slot.carried <= 2 * 4 and slot.in_flight <= slot.carried
        assert slot.next_stamp == 7 + done + slot.carried
    finally:
        buf.close()
    assert c_slot(buf).in_flight == 0 and c_slot(buf).carried == 0


@pytest.mark.parametrize("kind", [WRITE, READ])
def test_carried_runs_count_each_operation_once(tmp_path: Path, kind: PhaseKind) -> None:
    """Runs of tiny budgets, each the last one's rest: every operation is done once, and
    the file holds the bytes of one write at a time (each block's stamps in op order)."""
    offsets = [int(o) * BLOCK for o in np.random.default_rng(3).permutation(200)]
    ops = OpRun(0, offsets, BLOCK)
    reference, target = tmp_path / "one-at-a-time", tmp_path / "carried"
    for path in (reference, target):
        path.write_bytes(bytes(200 * BLOCK))
    write_one_at_a_time(reference, ops, 8)
    fd, buf = os.open(target, os.O_RDWR), buffer(8)
    try:
        if kind == READ:
            target.write_bytes(reference.read_bytes())
        batches, carried = runs_to_the_end(kind, fd, buf, ops)
    finally:
        os.close(fd)
        buf.close()
    assert sum(len(b.ends) for b in batches) == len(offsets)
    assert len(batches) > 1 and max(carried) > 0 and carried[-1] == 0
    assert in_flight_at_most(batches) <= 8
    assert target.read_bytes() == reference.read_bytes()


def test_a_next_call_on_other_operations_drains_and_forgets(target: int) -> None:
    buf = buffer(4)
    slot = c_slot(buf)
    engine = native.NativeEngine()
    try:
        first = engine.run(job(WRITE, target, buf, OpRun(0, [i * BLOCK for i in range(50)], BLOCK)))
        carried = slot.carried
        assert carried > 0
        # Another run (not the first one's rest): the carried writes complete (their
        # stamps are used) but count nowhere; this run counts only its own.
        other = OpRun(0, [(100 + i) * BLOCK for i in range(10)], BLOCK)
        batch = engine.run(job(WRITE, target, buf, other, until_ns=1 << 62))
        assert batch.error is None and len(batch.ends) == 10
        assert slot.carried == slot.in_flight == 0
        assert slot.next_stamp == 7 + len(first.ends) + carried + 10
        # A depth-1 call (file_run) on the slot drains as well.
        engine.run(job(WRITE, target, buf, OpRun(0, [i * BLOCK for i in range(50)], BLOCK)))
        assert slot.carried > 0
        one = Job(WRITE, fd_targets(["t"], [target]), other, buf, 1 << 62, depth=1)
        assert len(engine.run(one).ends) == 10 and slot.carried == slot.in_flight == 0
        # And so does a Python-engine run (the two engines can take turns on a slot).
        engine.run(job(WRITE, target, buf, OpRun(0, [i * BLOCK for i in range(50)], BLOCK)))
        assert slot.carried > 0
        assert len(PosixEngine().run(one).ends) == 10 and slot.carried == slot.in_flight == 0
    finally:
        buf.close()


@pytest.mark.parametrize("kind", [WRITE, READ])
def test_a_run_that_more_operations_follow_leaves_its_last_ones_in_flight(
    target: int, kind: PhaseKind
) -> None:
    """A run that ends within its budget, with more of the slot's operations after it,
    keeps its queue full over the boundary: a queue's worth of its last operations (no
    more than twice its depth) stays in flight for the next run, which counts them; the
    slot's last run (nothing follows) does all of its own."""
    os.ftruncate(target, 100 * BLOCK)
    buf = buffer(4, for_write=kind == WRITE)
    slot, engine = c_slot(buf), native.NativeEngine()
    ops = OpRun(0, [i * BLOCK for i in range(100)], BLOCK)
    try:
        first = engine.run(job(kind, target, buf, ops, until_ns=1 << 62, follows=True))
        done = len(first.ends)
        assert first.error is None
        assert 4 <= slot.carried <= 2 * 4 and done + slot.carried <= 100 <= done + 2 * 4
        rest = engine.run(job(kind, target, buf, ops.after(done), until_ns=1 << 62))
        assert rest.error is None and done + len(rest.ends) == 100
        assert slot.carried == slot.in_flight == 0
        assert in_flight_at_most([first, rest]) <= 4
    finally:
        buf.close()


@pytest.mark.parametrize("kind", [WRITE, READ])
def test_runs_that_carry_their_last_operations_count_each_once(
    tmp_path: Path, kind: PhaseKind
) -> None:
    """As the worker hands them: runs of 30 operations, each joined behind what the last
    one left, the next ones following (but the last run); every operation is done once,
    and the file holds the bytes of one write at a time (each block's stamps in op order)."""
    offsets = [int(o) * BLOCK for o in np.random.default_rng(5).permutation(200)]
    reference, target = tmp_path / "one-at-a-time", tmp_path / "carried"
    for path in (reference, target):
        path.write_bytes(bytes(200 * BLOCK))
    write_one_at_a_time(reference, OpRun(0, offsets, BLOCK), 8)
    if kind == READ:
        target.write_bytes(reference.read_bytes())
    fd, buf = os.open(target, os.O_RDWR), buffer(8)
    engine, batches, carried = native.NativeEngine(), [], []
    pieces = [OpRun(0, offsets[i : i + 30], BLOCK, first_seq=i) for i in range(0, 200, 30)]
    run: OpRun | None = None
    try:
        while pieces or run is not None:
            if pieces:
                run = pieces.pop(0) if run is None else run.joined(pieces.pop(0))
            assert run is not None
            follows = bool(pieces)
            batch = engine.run(job(kind, fd, buf, run, until_ns=1 << 62, follows=follows))
            assert batch.error is None
            batches.append(batch)
            carried.append(c_slot(buf).carried)
            left = run.after(len(batch.ends))
            run = left if len(left) else None
    finally:
        os.close(fd)
        buf.close()
    assert sum(len(b.ends) for b in batches) == len(offsets)
    assert min(carried[:6]) >= 8 and carried[-1] == 0
    assert in_flight_at_most(batches) <= 8
    assert target.read_bytes() == reference.read_bytes()


def test_no_carry_at_the_time_limit_or_once_stopped(target: int) -> None:
    """At the phase's time limit (or with a stop asked) nothing stays in flight: the run
    waits for what it submitted and counts it all."""
    stopped = threading.Event()
    stopped.set()
    for over in (dict(deadline_ns=1), dict(stop=stopped)):
        buf = buffer(4)
        try:
            ops = OpRun(0, [i * BLOCK for i in range(100)], BLOCK)
            batch = native.NativeEngine().run(job(WRITE, target, buf, ops, until_ns=1, **over))
            assert batch.error is None and 1 <= len(batch.ends) <= 4
            assert c_slot(buf).carried == 0 and c_slot(buf).in_flight == 0
            assert buf.state.next_stamp == 7 + len(batch.ends)
        finally:
            buf.close()


def test_close_with_operations_carried_leaves_nothing_in_flight(target: int) -> None:
    buf = buffer(8, for_write=False)
    os.ftruncate(target, 64 * BLOCK)
    native.NativeEngine().run(job(READ, target, buf, OpRun(0, [0] * 64, BLOCK)))
    slot = c_slot(buf)
    assert slot.carried > 0
    buf.close()
    assert slot.closed and slot.in_flight == 0 and slot.carried == 0
    with pytest.raises(ValueError, match="closed"):
        native.NativeEngine().run(job(READ, target, buf, OpRun(0, [0] * 4, BLOCK)))


def test_an_error_in_a_carried_operation_names_its_offset(target: int) -> None:
    """A carried read that comes back short fails the run that reaps it, at its offset."""
    os.ftruncate(target, 6 * BLOCK - 100)  # block 5 reads 100 bytes short
    buf = buffer(4, for_write=False)
    try:
        ops = OpRun(0, [i * BLOCK for i in range(12)], BLOCK)
        first = native.NativeEngine().run(job(READ, target, buf, ops))
        done = len(first.ends)
        assert first.error is None and done <= 4 and c_slot(buf).carried >= 6 - done
        rest = native.NativeEngine().run(job(READ, target, buf, ops.after(done)))
        assert rest.error is not None
        assert str(rest.error) == "t: offset 20480: EIO (short transfer: 3996 of 4096 bytes)"
        assert c_slot(buf).in_flight == 0 and c_slot(buf).carried == 0
    finally:
        buf.close()


@pytest.mark.root
def test_carry_on_a_loop_device_with_direct_io(tmp_path: Path) -> None:
    """Real queueing (O_DIRECT on a loop device over a tmpfs file): runs of 200 us carry
    operations, some of them completing before the next run; each is counted once, never
    more than the depth in flight, and the writes leave the bytes of one at a time."""
    require_root_tools("loop devices", "losetup")
    with mounted_tmpfs(tmp_path / "mnt", "size=40m") as mnt:
        image = mnt / "img"
        image.write_bytes(bytes(16 << 20))
        made = run_tool("losetup", "--direct-io=on", "--find", "--show", str(image))
        if made.returncode:
            pytest.skip(f"no loop device: {made.stderr.strip()}")
        device = made.stdout.strip()
        try:
            offsets = [int(o) * BLOCK for o in np.random.default_rng(5).permutation(2048)]
            ops = OpRun(0, offsets, BLOCK)
            fd = os.open(device, os.O_RDWR | os.O_DIRECT)
            buf = buffer(16)
            try:
                wrote, carried = runs_to_the_end(WRITE, fd, buf, ops, budget_ns=200_000)
                read, _ = runs_to_the_end(READ, fd, buf, ops, budget_ns=200_000)
            finally:
                buf.close()
                os.close(fd)
            for batches in (wrote, read):
                assert sum(len(b.ends) for b in batches) == len(offsets)
                assert in_flight_at_most(batches) <= 16
            assert max(carried) > 0
            reference = mnt / "one-at-a-time"
            reference.write_bytes(bytes(16 << 20))
            write_one_at_a_time(reference, ops, 16)
            assert image.read_bytes() == reference.read_bytes()
        finally:
            run_tool("losetup", "--detach", device)
