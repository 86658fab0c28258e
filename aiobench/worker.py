"""One benchmark thread: a coroutine with ``--iodepth`` slots — the only hot loop.

Each slot repeatedly takes a run of operations from its thread's stream and carries it to
the executor in one round-trip; the executor thread ends the run after ``TARGET_BATCH_NS``
(or at the time limit) and the slot keeps what is left for its next run. Operations are
timed one by one in the executor thread.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from time import perf_counter_ns

import anyio
import numpy as np

from aiobench.engine import Engine, Job, SlotBuffer
from aiobench.errors import BenchIOError
from aiobench.stats import Int64Array, LatencyRecorder
from aiobench.workload import OpRun, OpStream

# A round-trip to the executor costs tens of microseconds, and up to a scheduler time slice
# (~1 ms) when the I/O threads keep every core busy and the event loop waits for one. Runs
# of ~50 ms keep that at a few percent. The engine itself ends a run once an operation
# ends past its budget (or the time limit), so a run never overstays whatever the pace.
TARGET_BATCH_NS = 50_000_000
MAX_BATCH_OPS = 65_536
# Operations handed over for the first run, before the pace is known; what the budget
# leaves undone stays with the slot for its next run.
_FIRST_RUN = 256
# Runs a slot keeps until the first-done instant is known: the instant is published a few
# event-loop turns after it happened, and a slot completes at most one run per turn.
_RING = 8


@dataclass(slots=True)
class PhaseShared:
    """State every slot of a phase sees; the lock guards only the in-flight counter."""

    kind: str
    engine: Engine
    executor: Executor
    fds: Sequence[int]
    paths: Sequence[str]
    deadline_ns: int = 0
    start_ns: int = 0
    first_done_ns: int | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    error: BenchIOError | None = None
    inflight: int = 0
    peak_inflight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fail(self, error: BenchIOError) -> None:
        if self.error is None:
            self.error = error
        self.stop.set()


@dataclass(slots=True)
class Slot:
    """One in-flight position of a thread: its buffer, counters and latency store."""

    buffer: SlotBuffer
    recorder: LatencyRecorder = field(default_factory=LatencyRecorder)
    ops: int = 0
    bytes: int = 0
    last_end_ns: int = 0
    batch_ops: int = _FIRST_RUN
    pending: OpRun | None = None  # what the last run's time budget left undone
    ring: deque[tuple[Int64Array, int, int, int]] = field(
        default_factory=lambda: deque(maxlen=_RING)
    )
    snapshot: tuple[int, int] | None = None

    def snapshot_at(self, instant_ns: int) -> tuple[int, int]:
        """(ops, bytes) this slot had completed at ``instant_ns``, from its recent batches."""
        if self.snapshot is not None:
            return self.snapshot
        for ends, length, ops_before, bytes_before in self.ring:
            done = int(np.searchsorted(ends, instant_ns, side="right"))
            if done < ends.size:
                return ops_before + done, bytes_before + done * length
        return self.ops, self.bytes


def _execute(shared: PhaseShared, slot: Slot, run: OpRun) -> tuple[Int64Array, BenchIOError | None]:
    """Runs in an executor thread: the I/O, then latency folding (outside the timed part)."""
    with shared.lock:
        shared.inflight += 1
        shared.peak_inflight = max(shared.peak_inflight, shared.inflight)
    until = perf_counter_ns() + TARGET_BATCH_NS
    if shared.deadline_ns:
        until = min(until, shared.deadline_ns)
    try:
        raw = shared.engine.run(Job(shared.kind, shared.fds, shared.paths, run, slot.buffer, until))
    finally:
        with shared.lock:
            shared.inflight -= 1
    ends = np.array(raw.ends, dtype=np.int64)
    slot.recorder.add(ends - np.array(raw.starts, dtype=np.int64))
    return ends, raw.error


def _account(shared: PhaseShared, slot: Slot, ends: Int64Array, length: int) -> None:
    before = (slot.ops, slot.bytes)
    done = int(ends.size)
    slot.ops += done
    slot.bytes += done * length
    if done:
        slot.last_end_ns = int(ends[-1])
    if slot.snapshot is not None:
        return
    slot.ring.append((ends, length, *before))
    if shared.first_done_ns is not None:
        slot.snapshot = slot.snapshot_at(shared.first_done_ns)
        slot.ring.clear()


async def _run_slot(shared: PhaseShared, stream: OpStream, slot: Slot, siblings: int) -> None:
    loop = asyncio.get_running_loop()
    while not shared.stop.is_set():
        if shared.deadline_ns and perf_counter_ns() >= shared.deadline_ns:
            return
        # At most a fair share of what is left, so the thread's slots stay busy together
        # to the end instead of one slot finishing a long run alone.
        run = slot.pending or stream.take(min(slot.batch_ops, -(-stream.remaining // siblings)))
        slot.pending = None
        if run is None:
            return
        ends, error = await loop.run_in_executor(shared.executor, _execute, shared, slot, run)
        _account(shared, slot, ends, run.length)
        if error is not None:
            shared.fail(error)
            return
        if ends.size < len(run):
            slot.pending = run.after(int(ends.size))
        if ends.size > 1:
            # Hand over a little more than the budget holds at this pace; the rest waits.
            op_ns = max(int(ends[-1]) - int(ends[0]), 1) / (int(ends.size) - 1)
            slot.batch_ops = max(1, min(MAX_BATCH_OPS, int(1.25 * TARGET_BATCH_NS / op_ns)))


async def run_thread(shared: PhaseShared, stream: OpStream, slots: list[Slot]) -> int:
    """Run one thread rank's slots to completion; return the instant its last op ended."""
    async with anyio.create_task_group() as group:
        for slot in slots:
            group.start_soon(_run_slot, shared, stream, slot, len(slots))
    finished = max(slot.last_end_ns for slot in slots)
    return finished if finished else shared.start_ns
