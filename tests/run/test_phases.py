"""Phase runner on the null engine: first/last-done math, exactness, in-flight peak and mean."""

from __future__ import annotations

import itertools
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from time import perf_counter_ns

import anyio
import numpy as np
import pytest

from aiobench.engines.base import Engine, IoOptions, Job, RawBatch
from aiobench.engines.buffers import PoolSource, SlotBuffer
from aiobench.engines.gate import StartGate
from aiobench.engines.null import NullEngine
from aiobench.kinds import READ, WRITE, PhaseKind
from aiobench.plan.layout import Stream
from aiobench.plan.targets import Targets
from aiobench.plan.workload import Layout, OpRun, Slice
from aiobench.results.model import PhaseResult
from aiobench.run import worker
from aiobench.run.affinity import BOOKS_THREAD
from aiobench.run.phases import PhaseRun, RunContext, run_phase
from aiobench.run.worker import Done, PhaseState, Slot, first_done_floor
from aiobench.run.worker import _account as account
from tests.helpers import RecordingEngine, context, fd_targets, make_cfg, stream


async def test_first_done_counts_all_threads_at_the_first_finish(tmp_path: Path) -> None:
    # Thread 0 works on path 0 (1 ms per op), thread 1 on path 1 (3 ms per op): thread 0
    # finishes first, when thread 1 has done about a third of its work.
    cfg = make_cfg(
        [str(tmp_path / "a"), str(tmp_path / "b")],
        threads=2,
        block="4k",
        size="400k",
        write=False,
        read=True,
    )
    layout = Layout((100 * 4096, 100 * 4096), 4096)
    engine = RecordingEngine({0: 1_000_000, 1: 3_000_000})
    ctx = context(cfg, layout, engine)
    try:
        phase, _ = await run_phase(ctx, READ, 0)
    finally:
        ctx.executor.shutdown()
    first, last = phase.first_done, phase.last_done
    assert last.ops == 200 and last.bytes == 200 * 4096
    assert first.elapsed_ns < last.elapsed_ns
    # Exact: the snapshot equals the number of operations that ended by the first finish.
    first_finish = max(end for index, end in engine.ends if index == 0)
    ended_by_then = sum(1 for _, end in engine.ends if end <= first_finish)
    assert first.ops == ended_by_then
    assert first.bytes == ended_by_then * 4096
    # Thread 1 had done some of its work, not all (sleeps overrun on a busy machine, so
    # no tighter window: the exact count is checked above).
    assert 100 < first.ops < 200
    assert phase.threads[0].ops == 100 and phase.threads[1].ops == 100
    assert phase.threads[0].elapsed_ns == first.elapsed_ns
    assert phase.threads[1].elapsed_ns == last.elapsed_ns
    # Rates follow the truncating elbencho formula.
    assert first.iops == int(first.ops * 1e6 / (first.elapsed_ns // 1000))
    assert phase.io_latency.count == 200
    assert 1_000_000 <= phase.io_latency.min_ns < 3_000_000 <= phase.io_latency.max_ns


class LateReport(RecordingEngine):
    """Path 0's last run ends its operations early but returns late, as a thread that waits
    for the interpreter's lock after its last operation: it is seen to finish last. Only
    the run holding path 0's last operation waits, so its operations end early however the
    phase is cut into runs."""

    def __init__(self, delays_ns: dict[int, int], path0_ops: int) -> None:
        super().__init__(delays_ns)
        self.path0_left = path0_ops

    def run(self, job: Job) -> RawBatch:
        batch = super().run(job)
        if job.ops.path_index == 0:
            with self.lock:
                self.path0_left -= len(batch.ends)
                last = self.path0_left == 0
            if last:
                time.sleep(0.4)
        return batch


async def test_first_done_is_the_earliest_finish_not_the_first_one_seen(tmp_path: Path) -> None:
    cfg = make_cfg(
        [str(tmp_path / "a"), str(tmp_path / "b")],
        threads=2,
        block="4k",
        size="80k",
        write=False,
        read=True,
    )
    layout = Layout((20 * 4096, 20 * 4096), 4096)
    engine = LateReport({0: 1_000_000, 1: 10_000_000}, 20)  # thread 0: ~20 ms, 1: ~200 ms
    ctx = context(cfg, layout, engine)
    try:
        phase, tally = await run_phase(ctx, READ, 0)
    finally:
        ctx.executor.shutdown()
    first, last = phase.first_done, phase.last_done
    finish_0 = max(end for index, end in engine.ends if index == 0)
    finish_1 = max(end for index, end in engine.ends if index == 1)
    assert finish_0 < finish_1  # thread 0 ended first, though it was seen to end last
    assert first.elapsed_ns == phase.threads[0].elapsed_ns == finish_0 - tally.start_ns
    assert first.ops == sum(1 for _, end in engine.ends if end <= finish_0)
    assert 20 <= first.ops < 40 and last.ops == 40
    assert phase.threads[1].elapsed_ns == last.elapsed_ns


@pytest.mark.parametrize(("threads", "iodepth"), [(2, 16), (2, 1)])
async def test_peak_inflight_is_threads_times_iodepth(
    tmp_path: Path, threads: int, iodepth: int
) -> None:
    cfg = make_cfg(
        [str(tmp_path / "a")],
        threads=threads,
        iodepth=iodepth,
        block="4k",
        size="256k",
        write=False,
        read=True,
    )
    layout = Layout((64 * 4096,), 4096)
    # 50 ms per operation: far longer than the loop needs to dispatch all slots, even on a
    # loaded machine.
    ctx = context(cfg, layout, NullEngine(lambda _: 50_000_000))
    try:
        phase, _ = await run_phase(ctx, READ, 0)
    finally:
        ctx.executor.shutdown()
    assert phase.peak_inflight_ops == threads * iodepth
    assert phase.last_done.ops == 64


@pytest.mark.parametrize(
    ("threads", "iodepth", "rwmixpct"), [(2, 16, None), (2, 1, None), (2, 1, 50)]
)
async def test_mean_inflight_is_the_latency_sum_over_the_elapsed_time(
    tmp_path: Path, threads: int, iodepth: int, rwmixpct: int | None
) -> None:
    cfg = make_cfg(
        [str(tmp_path / "a")],
        threads=threads,
        iodepth=iodepth,
        block="4k",
        size="256k",
        write=rwmixpct is not None,
        read=rwmixpct is None,
        **({} if rwmixpct is None else {"rwmixpct": rwmixpct}),
    )
    layout = Layout((64 * 4096,), 4096)
    # Every operation sleeps 20 ms (at least), on threads x iodepth slots (one per thread
    # under --rwmixpct): 64 operations in flight for at least 64 x 20 ms in all.
    ctx = context(cfg, layout, NullEngine(lambda _: 20_000_000))
    try:
        phase, tally = await run_phase(ctx, READ if rwmixpct is None else WRITE, 0)
    finally:
        ctx.executor.shutdown()
    slots = threads * (iodepth if rwmixpct is None else 1)
    elapsed = phase.last_done.elapsed_ns
    lat = phase.io_latency  # reads and writes together under --rwmixpct
    assert lat.count == phase.last_done.ops == 64
    if rwmixpct is not None:
        assert phase.read_latency is not None and phase.write_latency is not None
        # (the null engine's operations count as reads: the slots' read recorders)
        assert phase.read_latency.count + phase.write_latency.count == 64
        assert phase.read_latency.count > 0
    busy = sum(s.recorder.sum_ns + s.read_recorder.sum_ns for t in tally.threads for s in t.slots)
    assert busy >= 64 * 20_000_000
    assert phase.mean_inflight_ops == busy / elapsed
    assert phase.mean_inflight_ops == pytest.approx(lat.mean_ns * lat.count / elapsed, rel=1e-3)
    # No more than the slots can be in flight, and all of them were for most of the phase.
    assert 64 * 20_000_000 / elapsed <= phase.mean_inflight_ops <= slots
    # The event loop's thread did some work, and no more than the phase lasted.
    assert 0 < phase.loop_cpu_ns == tally.loop_cpu_ns
    assert phase.loop_cpu_ns <= perf_counter_ns() - tally.start_ns


async def test_time_limit_stops_the_phase(tmp_path: Path) -> None:
    cfg = make_cfg(
        [str(tmp_path / "a")], threads=2, block="4k", size="4m", write=False, read=True, timelimit=1
    )
    layout = Layout((1024 * 4096,), 4096)
    ctx = context(cfg, layout, NullEngine(lambda _: 5_000_000))
    started = perf_counter_ns()
    try:
        phase, _ = await run_phase(ctx, READ, 0)
    finally:
        ctx.executor.shutdown()
    took = perf_counter_ns() - started
    assert 1_000_000_000 <= took < 1_500_000_000
    assert phase.time_limited
    assert 0 < phase.last_done.ops < 1024
    assert 950_000_000 <= phase.last_done.elapsed_ns < 1_200_000_000


async def test_stop_request_ends_the_phase_quickly(tmp_path: Path) -> None:
    cfg = make_cfg([str(tmp_path / "a")], threads=2, block="4k", size="4m", write=False, read=True)
    layout = Layout((1024 * 4096,), 4096)
    ctx = context(cfg, layout, NullEngine(lambda _: 5_000_000))
    timer = threading.Timer(0.3, ctx.stop.set)
    timer.start()
    try:
        phase, _ = await run_phase(ctx, READ, 0)
    finally:
        ctx.executor.shutdown()
        timer.cancel()
    assert phase.interrupted
    assert 0 < phase.last_done.ops < 1024
    assert phase.last_done.elapsed_ns < 600_000_000


class FirstCalls(NullEngine):
    """The null engine, keeping when each executor thread's first operation started."""

    def __init__(self) -> None:
        super().__init__(lambda _: 1_000_000)
        self.first: dict[int, int] = {}
        self.lock = threading.Lock()

    def run(self, job: Job) -> RawBatch:
        batch = super().run(job)
        with self.lock:
            self.first.setdefault(threading.get_ident(), int(batch.starts[0]))
        return batch


async def test_every_slot_is_ready_before_the_clock_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """64 threads x 2 slots: all 128 first runs wait at the gate when the clock starts,
    and no operation runs before it (the ramp-up is untimed, reported as startup_ns)."""
    opened: list[tuple[int, int]] = []  # (arrived, expected) when the gate opened

    class Gate(StartGate):
        def open(self, start_ns: int, deadline_ns: int, *, stopped: bool) -> None:
            opened.append((self._arrived, self.expected))
            super().open(start_ns, deadline_ns, stopped=stopped)

    monkeypatch.setattr("aiobench.run.phases.StartGate", Gate)
    cfg = make_cfg(
        [str(tmp_path / "a")], threads=64, iodepth=2, block="4k", size="2m", read=True,
        write=False,
    )  # fmt: skip
    engine = FirstCalls()
    ctx = context(cfg, Layout((512 * 4096,), 4096), engine)
    try:
        phase, tally = await run_phase(ctx, READ, 0)
    finally:
        ctx.executor.shutdown()
    assert opened == [(128, 128)]
    assert len(engine.first) == 128  # one executor thread per slot, each ran a job
    assert min(engine.first.values()) >= tally.start_ns
    assert phase.last_done.ops == 512
    assert phase.startup_ns > 0


async def test_direct_io_at_depth_runs_one_queued_slot_per_thread(
    tmp_path: Path, io_engine: Engine
) -> None:
    """--direct --iodepth 8: the native engine keeps the 8 operations of each thread in
    flight from one slot (Linux AIO); the Python engine runs 8 slots. Both do all the
    work, and 2 x 8 operations are in flight at the peak either way."""
    target = tmp_path / "f"
    target.write_bytes(bytes(range(256)) * 4096)  # 1 MiB
    cfg = make_cfg(
        [str(target)], threads=2, iodepth=8, block="4k", size="1m", direct=True, read=True,
        write=False, rand=True, randamount="64m",
    )  # fmt: skip
    fd = os.open(target, os.O_RDONLY | os.O_DIRECT)
    ctx = context(cfg, Layout((1 << 20,), 4096), io_engine, [fd])
    try:
        run = PhaseRun(ctx, READ, 0)
        phase, tally = await run.run()
    finally:
        ctx.executor.shutdown()
        os.close(fd)
    assert tally.error is None
    assert run.spec.depth == (8 if io_engine.name == "native" else 1)
    assert phase.last_done.ops == 64 * 256 and phase.io_latency.count == 64 * 256
    assert phase.peak_inflight_ops == 16


@pytest.mark.parametrize("stopped", [False, True])
async def test_first_runs_wait_at_the_gate_inside_the_engine(
    tmp_path: Path, io_engine: Engine, stopped: bool
) -> None:
    """Sixteen gated runs wait in the engine (the native one inside its C call) until the
    gate opens; none starts an operation before, and with ``stopped`` none runs at all.
    (The native release fans out, each released run waking two more: all 16 start.)"""
    target = tmp_path / "f"
    target.write_bytes(bytes(64 * 4096))
    fd = os.open(target, os.O_RDONLY)
    gate = StartGate(16)
    buffers = [
        SlotBuffer(4096, for_write=False, source=PoolSource([i]), stamp_base=0) for i in range(16)
    ]
    targets = fd_targets([str(target)], [fd])
    ops = OpRun(0, list(range(0, 64 * 4096, 4096)), 4096)
    jobs = [Job(READ, targets, ops, b, 50_000_000, gate=gate) for b in buffers]
    try:
        with ThreadPoolExecutor(16) as pool:
            futures = [pool.submit(io_engine.run, job) for job in jobs]
            for job in jobs:
                assert job.gate is not None
                job.gate.register()
            await gate.all_arrived()
            await anyio.sleep(0.05)  # long enough for a run that did not wait to finish
            assert not any(f.done() for f in futures)
            start = perf_counter_ns()
            gate.open(start, 0, stopped=stopped)
            batches = [f.result(timeout=60) for f in futures]
    finally:
        os.close(fd)
        for b in buffers:
            b.close()
    for batch in batches:
        assert batch.error is None
        assert len(batch.ends) == (0 if stopped else 64)
        assert all(int(s) >= start for s in batch.starts)


def test_slots_keep_only_the_runs_first_done_may_still_fall_in() -> None:
    """FIRST DONE's floor is the earliest finish so far or an unfinished thread's last
    end; runs ended before it are dropped, and once it is final each slot keeps only its
    counts at FIRST DONE."""
    layout = Layout((64 * 4096,), 4096)
    streams: list[Stream] = [stream(layout, Slice(0, 32)), stream(layout, Slice(32, 32))]
    slots = [[Slot(None)], [Slot(None)]]
    state = PhaseState()

    def done(first: int, ends: list[int]) -> Done:
        run = OpRun(0, [first * 4096] * len(ends), 4096)
        at = np.array(ends, dtype=np.int64)
        return Done(run, at, np.zeros(0, dtype=np.int64), np.ones_like(at), None)

    for end in (10, 20, 30):
        account(state, slots[0][0], done(0, [end - 5, end]))
        account(state, slots[1][0], done(32, [end + 1]))
    first_done_floor(state, streams, slots, [0, 0])
    assert state.floor_ns == 30 and not state.first_done_final  # thread 0's last end
    account(state, slots[1][0], done(32, [40]))
    assert len(slots[1][0].ring) == 2  # (31, 40): 11 and 21 ended before anything can
    # Thread 0 is seen to finish at 30; thread 1 has got past it: FIRST DONE is final.
    state.first_done_ns = 30
    first_done_floor(state, streams, slots, [30, 0])
    assert state.first_done_final
    account(state, slots[1][0], done(32, [50]))
    assert slots[1][0].snapshot == (2, 2 * 4096, 0, 0, 0) and not slots[1][0].ring  # 11, 21
    assert slots[0][0].snapshot_at(30) == (6, 6 * 4096, 0, 0, 0)


class ThreadsPerSlot(NullEngine):
    """The null engine, keeping which executor threads ran each slot's runs (a slot is
    its buffer) and the thread of every accounting."""

    def __init__(self) -> None:
        super().__init__(lambda _: 2_000_000)
        self.runs: dict[int, list[int]] = {}
        self.lock = threading.Lock()

    def run(self, job: Job) -> RawBatch:
        with self.lock:
            self.runs.setdefault(id(job.buf), []).append(threading.get_ident())
        return super().run(job)


def reading_240(tmp_path: Path, engine: Engine, iodepth: int = 2) -> RunContext:
    """A run of 2 threads x ``iodepth`` slots reading 240 blocks of 4 KiB on ``engine``."""
    cfg = make_cfg(
        [str(tmp_path / "a")], threads=2, iodepth=iodepth, block="4k", size=str(240 * 4096),
        read=True, write=False,
    )  # fmt: skip
    return context(cfg, Layout((240 * 4096,), 4096), engine)


async def read_phase(ctx: RunContext) -> PhaseResult:
    """The READ phase of ``ctx``; its executor shut down after."""
    try:
        phase, _ = await run_phase(ctx, READ, 0)
    finally:
        ctx.executor.shutdown()
    return phase


async def test_a_slot_with_one_operation_in_flight_gets_runs_of_200_ms(tmp_path: Path) -> None:
    # 2 threads x 1 slot, 120 operations of 2 ms each per slot (~240 ms): its device would
    # idle at each boundary, so its runs last up to 200 ms (DRAINING_BATCH_NS): 2 runs
    # each (up to 4 on a slow machine), where runs of 50 ms would make 5 or more. A slot that
    # keeps a queue (depth above 1) keeps runs of 50 ms.
    engine = ThreadsPerSlot()
    ctx = reading_240(tmp_path, engine, iodepth=1)
    phase = await read_phase(ctx)
    queued = worker.PhaseSpec(READ, engine, ctx.executor, ctx.targets, depth=4)
    single = worker.PhaseSpec(READ, engine, ctx.executor, ctx.targets, depth=1)
    assert phase.last_done.ops == 240
    assert len(engine.runs) == 2
    assert all(2 <= len(threads) <= 4 for threads in engine.runs.values()), engine.runs
    assert (single.batch_ns, queued.batch_ns) == (200_000_000, 50_000_000)


class FollowsPerSlot(NullEngine):
    """The null engine, keeping each slot's runs: their sizes and whether the worker said
    that more of the slot's operations follow them."""

    def __init__(self) -> None:
        super().__init__()
        self.runs: dict[int, list[tuple[int, bool]]] = {}
        self.lock = threading.Lock()

    def run(self, job: Job) -> RawBatch:
        with self.lock:
            self.runs.setdefault(id(job.buf), []).append((len(job.ops), job.follows))
        return super().run(job)


async def test_every_run_but_a_slots_last_has_more_operations_following_it(
    tmp_path: Path,
) -> None:
    # 2 threads x 1 slot, 10,000 operations each: handed over in pieces of 4,096 (the
    # first run's), a piece or two at a time, each run done within its budget. An engine
    # that keeps a queue may leave a run's last operations in flight for the next one
    # (Job.follows), except after the slot's last: nothing would take them.
    engine = FollowsPerSlot()
    cfg = make_cfg(
        [str(tmp_path / "a")], threads=2, iodepth=1, block="4k", size=str(20_000 * 4096),
        read=True, write=False,
    )  # fmt: skip
    phase = await read_phase(context(cfg, Layout((20_000 * 4096,), 4096), engine))
    assert phase.last_done.ops == 20_000
    assert len(engine.runs) == 2
    for runs in engine.runs.values():
        assert [follows for _, follows in runs] == [True] * (len(runs) - 1) + [False], runs
        assert len(runs) >= 2 and sum(size for size, _ in runs) == 10_000, runs


async def test_a_slot_runs_its_whole_phase_on_one_executor_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 2 threads x 2 slots, 60 operations of 2 ms each per slot: runs of ~50 ms (the
    # budget here), so every slot makes several. Each keeps its executor thread (an
    # engine's per-slot state, such as a queue carried from run to run, stays with it),
    # and every run is accounted in the phase's one bookkeeping thread, beside the slots'
    # I/O: neither in an I/O thread nor on the event loop (whose work is then per phase,
    # not per run).
    accounted: list[int] = []
    real_account = worker._account

    def spy(state: PhaseState, slot: Slot, done: Done) -> None:
        accounted.append(threading.get_ident())
        real_account(state, slot, done)

    monkeypatch.setattr(worker, "_account", spy)
    monkeypatch.setattr(worker, "cores_allowed", lambda: 8.0)  # (a core to spare)
    monkeypatch.setattr(worker, "DRAINING_BATCH_NS", 50_000_000)
    engine = ThreadsPerSlot()
    phase = await read_phase(reading_240(tmp_path, engine))
    assert phase.last_done.ops == 240
    assert len(engine.runs) == 4
    assert all(len(threads) >= 2 for threads in engine.runs.values()), engine.runs
    assert all(len(set(threads)) == 1 for threads in engine.runs.values()), engine.runs
    assert len({threads[0] for threads in engine.runs.values()}) == 4
    assert len(accounted) == sum(len(threads) for threads in engine.runs.values())
    assert len(set(accounted)) == 1
    io_threads = {threads[0] for threads in engine.runs.values()}
    assert not set(accounted) & (io_threads | {threading.get_ident()})


async def test_without_a_core_to_spare_each_slot_accounts_its_own_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 4 slots on 2 cores: no bookkeeping thread (it would take its time from the slots'
    # I/O, and their runs would queue up behind it); each run is accounted in the thread
    # that ran it.
    accounted: list[tuple[int, int]] = []
    real_account = worker._account

    def spy(state: PhaseState, slot: Slot, done: Done) -> None:
        accounted.append((id(slot.buffer), threading.get_ident()))
        real_account(state, slot, done)

    monkeypatch.setattr(worker, "_account", spy)
    monkeypatch.setattr(worker, "cores_allowed", lambda: 2.0)
    engine = ThreadsPerSlot()
    phase = await read_phase(reading_240(tmp_path, engine))
    assert phase.last_done.ops == 240
    assert len(accounted) == sum(len(threads) for threads in engine.runs.values())
    assert all(tid == engine.runs[slot][0] for slot, tid in accounted), (accounted, engine.runs)
    assert not any(t.name == BOOKS_THREAD.decode() for t in threading.enumerate())


async def test_a_fault_in_the_books_ends_the_phase_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The bookkeeping thread's failure stops every slot and is raised where the phase was
    # run, instead of leaving a slot waiting for a run that is never accounted.
    calls: list[int] = []
    real_account = worker._account

    def faulty(state: PhaseState, slot: Slot, done: Done) -> None:
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("books broke")
        real_account(state, slot, done)

    monkeypatch.setattr(worker, "_account", faulty)
    monkeypatch.setattr(worker, "cores_allowed", lambda: 8.0)  # (a core to spare)
    ctx = reading_240(tmp_path, ThreadsPerSlot(), iodepth=1)
    try:
        with anyio.fail_after(60), pytest.raises(BaseExceptionGroup) as raised:
            await run_phase(ctx, READ, 0)
    finally:
        ctx.executor.shutdown()
    assert raised.group_contains(RuntimeError, match="books broke", depth=None)
    assert ctx.stop.is_set()
    assert len(calls) >= 3


class Broken(NullEngine):
    """The null engine, until its third run raises (a bug, not an I/O error)."""

    def __init__(self) -> None:
        super().__init__(lambda _: 1_000_000)
        self.calls = 0
        self.lock = threading.Lock()

    def run(self, job: Job) -> RawBatch:
        with self.lock:
            self.calls += 1
            if self.calls == 3:
                raise RuntimeError("the engine broke")
        return super().run(job)


async def test_an_engine_failing_in_its_thread_ends_the_phase_with_its_exception(
    tmp_path: Path,
) -> None:
    # The slot loops run in executor threads: an exception there reaches the phase's
    # caller, and the other slots stop (no hang waiting for them to finish their work).
    cfg = make_cfg([str(tmp_path / "a")], threads=2, block="4k", size="4m", write=False, read=True)
    ctx = context(cfg, Layout((1024 * 4096,), 4096), Broken())
    started = perf_counter_ns()
    try:
        with pytest.raises(BaseExceptionGroup) as raised:  # (the phase's task groups')
            await run_phase(ctx, READ, 0)
    finally:
        ctx.executor.shutdown()
    assert raised.group_contains(RuntimeError, match="the engine broke", depth=None)
    assert ctx.stop.is_set()
    assert perf_counter_ns() - started < 3_000_000_000  # (1024 ops x 1 ms would be 1.5 s+)


class HalfQueue(NullEngine):
    """An engine that queues: one slot per thread keeps ``iodepth`` in flight, and each
    run completes only the first half of its operations (as a budget that ends it while
    the rest are still queued). It keeps each run's (first_seq, length, done)."""

    def __init__(self) -> None:
        super().__init__()
        self.runs: list[tuple[int, int, int]] = []

    def slot_depth(
        self, targets: Targets, kind: PhaseKind, options: IoOptions, iodepth: int
    ) -> int:
        return iodepth

    def run(self, job: Job) -> RawBatch:
        released = job.released()
        if released is None:
            return RawBatch(np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))
        ops = released.ops
        assert isinstance(ops, OpRun)
        done = max(1, len(ops) // 2)
        now = perf_counter_ns()
        self.runs.append((ops.first_seq, len(ops), done))
        instants = np.arange(now, now + done, dtype=np.int64)
        return RawBatch(instants, instants + 1)


async def test_a_queued_slots_next_run_is_what_was_left_and_the_next_operations(
    tmp_path: Path,
) -> None:
    # What a queued slot's run leaves (operations that may still be in flight in the
    # engine) comes first in its next run, followed by the thread's next operations up to
    # the run size: the engine can keep its queue full over the boundary. (The first run
    # is as long as a run gets, 65,536 operations: the stream holds a few of them.)
    total = 200_000
    cfg = make_cfg([str(tmp_path / "a")], iodepth=4, block="4k", size="4m", write=False, read=True)
    engine = HalfQueue()
    ctx = context(cfg, Layout((total * 4096,), 4096), engine)
    try:
        phase, _ = await run_phase(ctx, READ, 0)
    finally:
        ctx.executor.shutdown()
    assert phase.last_done.ops == total
    runs = engine.runs
    assert runs[0][0] == 0
    topped = 0
    for (seq, length, done), (next_seq, next_length, _) in itertools.pairwise(runs):
        assert next_seq == seq + done  # (each operation once, in order)
        left = length - done
        if next_seq + left < total:  # the stream had more: the run was topped up
            assert next_length > left, runs
            topped += 1
    assert topped >= 2, runs
    assert sum(done for _, _, done in runs) == total


async def test_the_last_interval_ends_with_the_phase_when_a_slot_is_slow_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each slot's only run ends within a millisecond; its thread then takes 60 ms to
    # account it and 60 ms more to end (descheduled, say), while interval boundaries (every
    # 20 ms) pass. The watcher must not close those intervals whole meanwhile: the phase
    # ended at its last operation, and its last interval ends there too.
    real_settle = worker._settle

    def slow(spec: worker.PhaseSpec, state: PhaseState, item: worker._Handed) -> None:
        time.sleep(0.06)
        real_settle(spec, state, item)
        time.sleep(0.06)

    monkeypatch.setattr(worker, "_settle", slow)
    monkeypatch.setattr(worker, "cores_allowed", lambda: 2.0)  # (the slots' own books)
    ctx = replace(reading_240(tmp_path, NullEngine(), iodepth=1), live_interval_ns=20_000_000)
    phase = await read_phase(ctx)
    assert phase.last_done.ops == 240
    assert phase.last_done.elapsed_ns < 20_000_000  # (the runs' ends, not the slow books)
    assert phase.intervals[-1].end_ns == phase.last_done.elapsed_ns, phase.intervals
