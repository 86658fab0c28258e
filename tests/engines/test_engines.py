"""The native engine against the Python reference: the same bytes, state, counts and errors."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path
from time import perf_counter_ns
from typing import Any

import numpy as np
import pytest

from aiobench.engines import _native, native
from aiobench.engines.base import Engine, IoOptions, Job, RawBatch
from aiobench.engines.buffers import PoolSource, SlotBuffer
from aiobench.engines.gate import StopEvent
from aiobench.engines.python import PosixEngine
from aiobench.engines.verify import pattern
from aiobench.kinds import READ, WRITE, PhaseKind
from aiobench.plan.workload import OpRun, RwMix
from aiobench.results.runresult import RunResult
from aiobench.run.runner import run_benchmark
from tests.helpers import (
    REPO,
    fd_targets,
    make_cfg,
    mounted_tmpfs,
    require_root_tools,
    resolved_for,
    run,
    run_aiobench,
    run_tool,
    site_dirs,
)

pytestmark = pytest.mark.skipif(not native.available(), reason=f"{native.build_error}")

SALT = 0x0123_4567_89AB_CDEF
ENGINES = ("python", "native")


def engine(name: str) -> Engine:
    return PosixEngine() if name == "python" else native.NativeEngine()


def bench(name: str, paths: list[Path], **over: Any) -> RunResult:
    cfg = make_cfg([str(p) for p in paths], **over)
    return run(cfg, engine(name))


def tree(root: Path) -> dict[str, bytes | None]:
    """Every entry below ``root``: a file's bytes, None for a dir."""
    out: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        out[str(path.relative_to(root))] = None if path.is_dir() else path.read_bytes()
    return out


def totals(result: RunResult) -> list[tuple[str, int, int, int]]:
    return [
        (p.name, p.last_done.ops, p.last_done.bytes, p.last_done.entries) for p in result.phases
    ]


# -- whole runs through the runner: the same bytes on disk for the same seed ---------------

# One thread and --iodepth 1 wherever blocks may overlap or a thread's slots share a
# stream, so the order of the writes (and so the bytes) cannot depend on timing.
SCENARIOS: dict[str, dict[str, Any]] = {
    "sequential": dict(threads=2, block="4k", size="256k"),
    "random": dict(threads=2, block="4k", size="256k", rand=True),
    "unaligned-random": dict(block="4k", size="256k", rand=True, norandalign=True),
    "short-last-block": dict(threads=2, block="16k", size="100k", read=True),
    "1m-blocks": dict(block="1m", size="4m", read=True),
    "small-blocks": dict(block="1000", size="100k"),
    "blockvar-30": dict(block="64k", size="1m", blockvarpct=30),
    "blockvar-0": dict(block="64k", size="1m", blockvarpct=0),
    "blockvar-100-short": dict(block="24k", size="1000k", blockvarpct=100),
    "verify": dict(block="8k", size="512k", verify=SALT, verifydirect=True, read=True),
    "rwmix": dict(block="4k", size="256k", rwmixpct=30),
    "limit+verify": dict(
        block="64k", size="1m", verify=SALT, read=True, limitwrite="64m", limitread="64m"
    ),
    "limit+blockvar": dict(block="64k", size="1m", limitwrite="64m", blockvarpct=30),
    "rwmix+blockvar": dict(block="4k", size="256k", rwmixpct=30, blockvarpct=30),
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_both_engines_write_the_same_bytes(tmp_path: Path, scenario: str) -> None:
    over = SCENARIOS[scenario]
    seen = []
    for name in ENGINES:
        where = tmp_path / name
        where.mkdir()
        files = [where / "a", where / "b"]
        if "rwmixpct" in over:  # the mixed reads need data to read
            for f in files:
                f.write_bytes(np.random.default_rng(3).bytes(256 * 1024))
        result = bench(name, files, **over)
        assert result.error is None, (name, result.error)
        seen.append((totals(result), [f.read_bytes() for f in files]))
    assert seen[0][0] == seen[1][0]
    assert seen[0][1] == seen[1][1]
    if "verify" in over:
        assert seen[1][1][0] == pattern(0, len(seen[1][1][0]), SALT)


@pytest.mark.parametrize("size", ["20k", "0"])
def test_both_engines_make_the_same_dir_tree(tmp_path: Path, size: str) -> None:
    dirmode = dict(threads=2, dirs=2, files=5, size=size, block="8k")
    seen = []
    for name in ENGINES:
        root = tmp_path / name
        root.mkdir()
        made = bench(name, [root], mkdirs=True, **dirmode)
        looked = bench(name, [root], write=False, read=True, stat=True, **dirmode)
        contents = tree(root)
        removed = bench(name, [root], write=False, delfiles=True, deldirs=True, **dirmode)
        for result in (made, looked, removed):
            assert result.error is None, (name, result.error)
        seen.append((totals(made), totals(looked), totals(removed), contents, tree(root)))
    assert seen[0] == seen[1]
    python_contents = seen[0][3]
    assert len(python_contents) == 2 + 2 * 2 + 2 * 2 * 5  # r0 r1, r*/d*, their files
    assert seen[0][4] == {}  # -D removed the rank dirs, too


# -- the same errors -----------------------------------------------------------------------


def test_the_same_verify_mismatch(tmp_path: Path) -> None:
    target = tmp_path / "f"
    data = bytearray(pattern(0, 1 << 20, SALT))
    data[777_777] ^= 0x10
    target.write_bytes(bytes(data))
    errors = []
    for name in ENGINES:
        result = bench(name, [target], write=False, read=True, block="64k", verify=SALT)
        errors.append((result.error, totals(result)))
    assert errors[0] == errors[1]
    assert errors[0][0] is not None and errors[0][0]["offset"] == 777_777


def write_tree(root: Path) -> dict[str, Any]:
    dirmode = dict(threads=1, dirs=1, files=4, size="24k", block="8k")
    assert bench("python", [root], mkdirs=True, **dirmode).error is None
    return dirmode


@pytest.mark.parametrize("damage", ["missing", "short", "symlink"])
def test_the_same_dir_mode_errors(tmp_path: Path, damage: str) -> None:
    root = tmp_path / "p"
    root.mkdir()
    dirmode = write_tree(root)
    victim = root / "r0" / "d0" / "r0-f2"
    if damage == "missing":
        victim.unlink()
    elif damage == "short":
        os.truncate(victim, 10 * 1024)
    else:
        victim.unlink()
        victim.symlink_to(root / "r0" / "d0" / "r0-f0")
    outcomes = []
    for name in ENGINES:
        result = bench(name, [root], write=False, read=True, **dirmode)
        outcomes.append((result.error, totals(result)))
    assert outcomes[0] == outcomes[1]
    error = outcomes[0][0]
    assert error is not None and error["path"] == str(victim)
    expected = {"missing": "ENOENT", "short": "EIO", "symlink": "ELOOP"}[damage]
    assert error["errno_name"] == expected
    assert error["offset"] == (8192 if damage == "short" else None)


@pytest.mark.parametrize("name", ENGINES)
def test_a_short_read_in_file_mode_is_worded_alike(tmp_path: Path, name: str) -> None:
    target = tmp_path / "f"
    target.write_bytes(bytes(64 * 1024))
    cfg = make_cfg([str(target)], write=False, read=True, block="4k", size=None)
    resolved = resolved_for(cfg)
    os.truncate(target, 30 * 1024)  # the 8th block comes back 2 KiB short
    result = run_benchmark(cfg, resolved, engine(name))
    assert result.error is not None
    assert result.error["message"] == (
        f"{target}: offset 28672: EIO (short transfer: 2048 of 4096 bytes)"
    )
    assert result.phases[0].last_done.ops == 7


# -- one engine run at a time: buffer state, composed features, mixed engines ---------------


def slot_buffer(block: int, *, for_write: bool = True) -> SlotBuffer:
    return SlotBuffer(block, for_write=for_write, source=PoolSource([5]), stamp_base=9)


def state_of(buf: SlotBuffer) -> tuple[int, int, tuple[int, ...]]:
    return buf.state.next_window, buf.state.next_stamp, buf.state.sfc


def run_twice(
    engines: tuple[Engine, Engine], tmp_path: Path, block: int, length: int, **opts: Any
) -> tuple[bytes, tuple[int, int, tuple[int, ...]], list[RawBatch]]:
    """Two runs on one slot (the second continues the first's state), one per engine."""
    target = tmp_path / "f"
    target.write_bytes(np.random.default_rng(1).bytes(64 * block))
    mix = opts.pop("mix", None)
    buf = slot_buffer(block)
    fd = os.open(target, os.O_RDWR)
    try:
        batches = []
        for k, eng in enumerate(engines):
            offsets = [(k * 30 + i) * block for i in range(30)]
            ops = OpRun(0, offsets, length, first_seq=30 * k, mix=mix)
            options = IoOptions(**opts)
            job = Job(WRITE, fd_targets([str(target)], [fd]), ops, buf, 1 << 62, options=options)
            batches.append(eng.run(job))
        return target.read_bytes(), state_of(buf), batches
    finally:
        os.close(fd)
        buf.close()


COMPOSED: dict[str, dict[str, Any]] = {
    "stamped": {},
    "blockvar": dict(block_var_pct=45),
    "paced": dict(rate_bytes_per_s=1 << 30),
    "paced+blockvar": dict(rate_bytes_per_s=1 << 30, block_var_pct=10),
    "mixed": dict(mix=RwMix(25, 3)),
    "mixed+blockvar": dict(mix=RwMix(60, 1), block_var_pct=100),
    "verify": dict(verify=SALT, verify_direct=True),
}


@pytest.mark.parametrize("features", list(COMPOSED))
@pytest.mark.parametrize(("block", "length"), [(4096, 4096), (16384, 10000), (1000, 1000)])
def test_engines_take_turns_on_one_slot(
    tmp_path: Path, features: str, block: int, length: int
) -> None:
    """Every mix of two engines over two runs leaves the same file and the same slot state
    (pool window, stamp, SFC64 generator) as the Python engine alone."""
    python, cext = PosixEngine(), native.NativeEngine()
    outcomes = []
    for pair in ((python, python), (cext, cext), (python, cext), (cext, python)):
        where = tmp_path / f"{pair[0].name}-{pair[1].name}"
        where.mkdir()
        data, state, batches = run_twice(pair, where, block, length, **COMPOSED[features])
        counts = [(len(b.starts), len(b.ends), len(b.intended), b.error) for b in batches]
        outcomes.append((data, state, counts))
    assert all(outcome == outcomes[0] for outcome in outcomes[1:])
    assert outcomes[0][2][0][:2] == (30, 30)


@pytest.mark.parametrize("name", ENGINES)
def test_a_paced_run_records_when_each_operation_was_due(tmp_path: Path, name: str) -> None:
    target = tmp_path / "f"
    buf = slot_buffer(4096)
    fd = os.open(target, os.O_RDWR | os.O_CREAT, 0o644)
    start = perf_counter_ns()
    try:
        ops = OpRun(0, [i * 4096 for i in range(10)], 4096, first_seq=5)
        options = IoOptions(rate_bytes_per_s=4096 * 1000)  # one every millisecond
        job = Job(
            WRITE,
            fd_targets(["f"], [fd]),
            ops,
            buf,
            1 << 62,
            options=options,
            schedule_start_ns=start,
        )
        batch = engine(name).run(job)
    finally:
        os.close(fd)
        buf.close()
    due = [start + (5 + i) * 1_000_000 for i in range(10)]
    assert batch.intended.tolist() == due
    # None started before it was due.
    assert all(s >= due for s, due in zip(batch.starts, batch.intended, strict=True))


@pytest.mark.parametrize("name", ENGINES)
def test_pacing_ends_a_run_instead_of_sleeping_past_its_budget(tmp_path: Path, name: str) -> None:
    target = tmp_path / "f"
    buf = slot_buffer(4096)
    fd = os.open(target, os.O_RDWR | os.O_CREAT, 0o644)
    start = perf_counter_ns()
    try:
        ops = OpRun(0, [i * 4096 for i in range(10)], 4096)
        options = IoOptions(rate_bytes_per_s=4096 * 10)  # one every 100 ms
        until = start + 150_000_000  # ops 0 and 1 are due in time, op 2 is not
        job = Job(
            WRITE,
            fd_targets(["f"], [fd]),
            ops,
            buf,
            until,
            options=options,
            schedule_start_ns=start,
        )
        batch = engine(name).run(job)
        returned = perf_counter_ns()
    finally:
        os.close(fd)
        buf.close()
    assert len(batch.ends) == len(batch.intended) == 2
    assert returned >= until  # it slept up to its budget, not to op 2's start
    assert buf.state.next_stamp == 9 + 2  # only the started operations took a stamp


def test_native_runs_release_the_gil(tmp_path: Path) -> None:
    """A paced native run sleeps in C: Python code in another thread runs meanwhile."""
    target = tmp_path / "f"
    buf = slot_buffer(4096)
    fd = os.open(target, os.O_RDWR | os.O_CREAT, 0o644)
    start = perf_counter_ns()
    options = IoOptions(rate_bytes_per_s=4096 * 3)  # op 0 due at once, op 1 ~333 ms later
    ops = OpRun(0, [0, 4096], 4096)
    job = Job(
        WRITE, fd_targets(["f"], [fd]), ops, buf, 1 << 62, options=options, schedule_start_ns=start
    )
    out: list[RawBatch] = []
    worker = threading.Thread(target=lambda: out.append(native.NativeEngine().run(job)))
    ticks = []
    try:
        worker.start()
        while worker.is_alive():
            ticks.append(perf_counter_ns())
            time.sleep(0.001)
        worker.join()
    finally:
        os.close(fd)
        buf.close()
    [batch] = out
    assert batch.error is None and len(batch.ends) == 2
    # This thread ran while the other one waited in C for op 1's scheduled start.
    waiting = [t for t in ticks if batch.ends[0] < t < batch.starts[1]]
    assert len(waiting) > 10


# -- the C functions refuse calls that do not fit ------------------------------------------


def c_slot(buf: SlotBuffer) -> _native.Slot:
    """The C state of ``buf`` (the extension is built: this module is skipped otherwise)."""
    assert isinstance(buf.state, _native.Slot)
    return buf.state


def file_spec(**over: Any) -> _native.Spec:
    n = over.pop("n", 4)
    fields: dict[str, Any] = dict(
        fd=-1,
        offsets=np.arange(n, dtype=np.int64) * 4096,
        length=4096,
        reading=False,
        starts=np.empty(n, dtype=np.int64),
        ends=np.empty(n, dtype=np.int64),
    )
    fields.update(over)
    return _native.Spec(**fields)


def pool_slot(buf: SlotBuffer, **over: Any) -> _native.Slot:
    """A slot over ``buf``'s memory, with its geometry as ``over`` changes it."""
    fields: dict[str, Any] = dict(
        read_mem=buf.read_mem,
        read_area=buf.read_area,
        depth=buf.depth,
        pool=buf.pool,
        window_words=buf.window_words,
        windows=len(buf.windows),
        stamps=buf.stamps_per_block,
    )
    fields.update(over)
    return _native.Slot(**fields)


@pytest.mark.parametrize(
    "wrong",
    [
        dict(starts=np.empty(3, dtype=np.int64)),
        dict(ends=np.empty(4, dtype=np.int32)),
        dict(offsets=np.zeros(4, dtype=np.float32)),
        dict(fds=np.zeros(3, dtype=np.int32)),
        dict(length=8192),  # more than the read memory and a window
        dict(length=-1),
        dict(var_words=1 << 20),
        dict(ns_per_op=1.0),  # paced without room for the due instants
        dict(gate=np.zeros(1, dtype=np.int64)),
    ],
    ids=lambda wrong: ",".join(wrong),
)
def test_file_run_refuses_what_does_not_fit(wrong: dict[str, Any]) -> None:
    buf = slot_buffer(4096)
    try:
        with pytest.raises(ValueError):
            _native.file_run(c_slot(buf), file_spec(**wrong))
        assert c_slot(buf).next_window == 0  # (and the slot is free for the next call)
        assert _native.file_run(c_slot(buf), file_spec(n=0)) == _native.DONE
    finally:
        buf.close()


@pytest.mark.parametrize(
    "wrong",
    [
        dict(windows=1000),
        dict(window_words=1 << 40),
        dict(stamps=3),
        dict(windows=0),
        dict(depth=2),  # read memory for one area
        dict(read_area=8192),
        dict(sfc=(1, 2, 3)),
    ],
    ids=lambda wrong: ",".join(wrong),
)
def test_a_slot_refuses_memory_that_does_not_fit(wrong: dict[str, Any]) -> None:
    buf = slot_buffer(4096)
    try:
        with pytest.raises(ValueError):
            pool_slot(buf, **wrong)
    finally:
        buf.close()


def test_a_slot_refuses_runs_it_cannot_make() -> None:
    buf, reader = slot_buffer(4096), slot_buffer(4096, for_write=False)
    slot = c_slot(buf)
    try:
        slot.next_window = 65  # (settable, as the Python engine sets it) there is no window 65
        with pytest.raises(ValueError, match="write pool"):
            _native.file_run(slot, file_spec())
        slot.next_window = 0
        with pytest.raises(ValueError, match="the slot has none"):  # a write without a pool
            _native.file_run(c_slot(reader), file_spec())
        with pytest.raises(TypeError):
            _native.file_run(file_spec(), slot)  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            slot.sfc = (1, 2, 3, 4, 5)
        slot.sfc = tuple(np.array([1, 2, 3, 1 << 63], dtype=np.uint64))  # (numpy's words too)
        assert slot.sfc == (1, 2, 3, 1 << 63)
        slot.close()
        assert slot.closed and not c_slot(reader).closed
        with pytest.raises(ValueError, match="closed"):
            _native.file_run(slot, file_spec(n=0))
    finally:
        buf.close()
        reader.close()
    assert buf.read_mem.closed and buf.mem.closed and reader.read_mem.closed


def test_a_spec_takes_fields_by_name_and_keeps_results_read_only() -> None:
    spec = _native.Spec(length=4096, reading=True)
    assert (spec.length, spec.reading, spec.mix_pct, spec.var_words, spec.fds) == (
        4096, True, -1, -1, None
    )  # fmt: skip
    with pytest.raises(TypeError):
        _native.Spec(4096)  # type: ignore[call-arg]
    with pytest.raises(AttributeError):
        _native.Spec(lenght=4096)
    with pytest.raises(AttributeError):
        spec.done = 3  # type: ignore[misc]


def test_a_slot_keeps_its_spec_from_run_to_run(tmp_path: Path) -> None:
    """File mode: the spec is made on a slot's first run and reused while the phase's
    options, kind and length stay; the state it advances is the slot's, in place."""
    target = tmp_path / "f"
    buf = slot_buffer(4096)
    fd = os.open(target, os.O_RDWR | os.O_CREAT, 0o644)
    slot = c_slot(buf)
    try:
        options = IoOptions()
        for k in range(2):
            ops = OpRun(0, [(k * 5 + i) * 4096 for i in range(5)], 4096, first_seq=5 * k)
            job = Job(WRITE, fd_targets(["f"], [fd]), ops, buf, 1 << 62, options=options)
            batch = native.NativeEngine().run(job)
            assert batch.error is None and len(batch.ends) == 5
            assert buf.state is slot and (slot.next_window, slot.next_stamp) == (
                5 * k + 5,
                9 + 5 * k + 5,
            )
            if k == 0:
                first = buf.run_spec
        assert buf.run_spec is first
        ops = OpRun(0, [0], 4096)
        job = Job(
            WRITE, fd_targets(["f"], [fd]), ops, buf, 1 << 62, options=IoOptions(block_var_pct=5)
        )
        assert native.NativeEngine().run(job).error is None
        assert buf.run_spec is not first and slot.next_window == 10  # (no stamped write)
    finally:
        os.close(fd)
        buf.close()


def test_the_python_engine_without_the_extension_writes_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build without the C extension keeps the slot state in Python: the same bytes and
    state, the refill drawn from the same SFC64 stream."""
    from aiobench.engines import buffers

    outcomes = []
    for where, state_type in (("c", _native.Slot), ("py", None)):
        if state_type is None:
            monkeypatch.setattr(buffers, "_Slot", None)
        (tmp_path / where).mkdir()
        data, state, _ = run_twice(
            (PosixEngine(), PosixEngine()), tmp_path / where, 4096, 4096, block_var_pct=45
        )
        outcomes.append((data, state))
    assert outcomes[0] == outcomes[1]
    buf = slot_buffer(4096)
    assert isinstance(buf.state, buffers.PySlotState)  # (the second run was on it)
    buf.close()


def test_entries_calls_refuse_what_does_not_fit(tmp_path: Path) -> None:
    dfd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    buf = slot_buffer(4096)
    two, one = np.empty(2, dtype=np.int64), np.empty(1, dtype=np.int64)

    def mkdirs(leaves: list[Any], first: int = 0, room: Any = two, op: int = 0) -> object:
        spec = _native.Spec(op=op, dfd=dfd, leaves=leaves, first=first, starts=room, ends=room)
        return _native.entries_meta(spec)

    def write(size: int, block: int, io: Any) -> object:
        flags = os.O_CREAT | os.O_WRONLY
        spec = _native.Spec(
            dfd=dfd, leaves=["f"], starts=two, ends=two, flags=flags, mode=0o666, size=size,
            block=block, io_starts=io, io_ends=io,
        )  # fmt: skip
        return _native.entries_files(c_slot(buf), spec)

    try:
        with pytest.raises(ValueError):
            mkdirs(["a", "b"], room=one)  # room for one entry, two leaves
        with pytest.raises(ValueError):
            mkdirs(["a"], first=2)
        with pytest.raises(ValueError):
            mkdirs(["a"], op=9)
        with pytest.raises(ValueError):
            mkdirs(["a\0b"])
        with pytest.raises(TypeError):
            mkdirs([b"a"])
        for size, block, io in [(8192, 4096, one), (8192, 0, two), (0, 4096, two)]:
            with pytest.raises(ValueError):  # the blocks of one file must fit
                write(size, block, io)
        assert os.listdir(tmp_path) == []  # nothing was made by a refused call
    finally:
        os.close(dfd)
        buf.close()


def test_stop_event_flag_follows_set_and_clear() -> None:
    stop = StopEvent()
    assert stop.flag.tolist() == [0] and not stop.is_set()
    stop.set()
    assert stop.flag.tolist() == [1] and stop.is_set()
    stop.clear()
    assert stop.flag.tolist() == [0] and not stop.is_set()


def native_run_stopped_after(job: Job, stop: StopEvent, seconds: float) -> RawBatch:
    """``job`` on the native engine, ``stop`` set from another thread ``seconds`` in."""
    timer = threading.Timer(seconds, stop.set)
    timer.start()
    try:
        return native.NativeEngine().run(job)
    finally:
        timer.cancel()


def test_a_stop_between_blocks_is_seen_by_the_native_loop(tmp_path: Path) -> None:
    """Set while a big file is being written: the native loop stops inside the file."""
    from aiobench.plan.dirmode import EntryRun

    stop = StopEvent()
    dfd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    buf = slot_buffer(4096)
    run = EntryRun(0, ["big"], size=1 << 30, block=4096)  # far more than gets written
    job = Job(WRITE, fd_targets([str(tmp_path)], [dfd]), run, buf, 1 << 62, stop=stop)
    try:
        batch = native_run_stopped_after(job, stop, 0.05)
    finally:
        os.close(dfd)
        buf.close()
    assert batch.error is None and len(batch.ends) == 0
    assert 0 < len(batch.io_ends) < (1 << 30) // 4096
    assert (tmp_path / "big").stat().st_size == len(batch.io_ends) * 4096


def test_a_stop_ends_a_native_file_run_after_the_operation_in_progress(tmp_path: Path) -> None:
    """Set while a long run of reads goes on (no budget): the C loop ends the run after the
    operation in progress, with no error and the operations done by then."""
    path = tmp_path / "f"
    path.write_bytes(b"x" * 4096)
    stop = StopEvent()
    buf = slot_buffer(4096, for_write=False)
    fd = os.open(path, os.O_RDONLY)
    n = 2_000_000  # (seconds of reads even on tmpfs)
    run = OpRun(0, [0] * n, 4096, offsets_array=np.zeros(n, dtype=np.int64))
    job = Job(READ, fd_targets([str(path)], [fd]), run, buf, 1 << 62, stop=stop)
    try:
        batch = native_run_stopped_after(job, stop, 0.05)
    finally:
        os.close(fd)
        buf.close()
    assert batch.error is None
    assert 0 < len(batch.ends) < n
    assert bool(np.all(np.asarray(batch.ends) >= np.asarray(batch.starts)))


def test_a_failing_call_comes_back_as_its_errno(tmp_path: Path) -> None:
    """A failing call (here EBADF: a closed fd) comes back as that errno, worded alike."""
    buf = slot_buffer(4096, for_write=False)
    fd = os.open(tmp_path / "f", os.O_RDWR | os.O_CREAT, 0o644)
    os.close(fd)
    try:
        errors = []
        for name in ENGINES:
            job = Job(READ, fd_targets(["f"], [fd]), OpRun(0, [0, 4096], 4096), buf, 1 << 62)
            errors.append(engine(name).run(job).error)
    finally:
        buf.close()
    assert errors[0] is not None and errors[1] is not None
    assert errors[0].to_dict() == errors[1].to_dict()
    assert errors[0].errno == errno.EBADF and errors[0].offset == 0


# -- a build without a C compiler ------------------------------------------------------------


@pytest.mark.timeout(900)
def test_a_build_without_a_compiler_has_no_extension_and_says_so(tmp_path: Path) -> None:
    """``CC=false``: the wheel still builds (the extension is optional), holds no .so, and
    aiobench.engines.native imports from it and reports the engine as not available."""
    source = tmp_path / "src"
    root = REPO
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(root / name, source / name)
    skip = shutil.ignore_patterns("*.so", "__pycache__")
    shutil.copytree(root / "aiobench", source / "aiobench", ignore=skip)
    wheels = tmp_path / "wheels"
    env = dict(os.environ, CC="false", PIP_NO_INDEX="1", PYTHONWARNINGS="ignore")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(wheels), str(source)],
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout + built.stderr
    [wheel] = wheels.glob("aiobench-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert "aiobench/engines/native.py" in names
    assert not [n for n in names if n.endswith(".so")], names
    unpacked = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(unpacked)
    # -S: no .pth files, so not the editable install of this tree (its finder would find
    # the extension built here); this run's site-packages (a venv's: -S does not find them)
    # only for numpy and typer.
    probe = (
        f"import sys; sys.path[:0] = [{str(unpacked)!r}]; sys.path += {site_dirs()!r}; "
        "import aiobench, aiobench.engines.native as n; "
        "import aiobench.engines.s3.native as s3n; "
        "print(aiobench.__file__); print(n.available()); print(n.build_error); "
        "print(s3n.available())"
    )
    ran = subprocess.run(
        [sys.executable, "-I", "-S", "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    where, available, why, s3_native = ran.stdout.splitlines()
    assert where.startswith(str(unpacked))
    assert available == "False"
    assert s3_native == "False"  # (the S3 engine's requests then all on the event loop)
    assert why.startswith("the C extension aiobench.engines._native is not built")
    # A run from that install uses the Python engine, says so once, and records it; its
    # pools, numpy's SFC64 words, are what the extension fills them with.
    entry = probe.split("import aiobench,")[0] + "from aiobench.entry import main; main()"
    out = tmp_path / "r.json"
    for engine_args, code in (([], 0), (["--ioengine", "native"], 2)):
        args = ["-w", "-b", "4k", "-s", "64k", "--seed", "3", *engine_args, str(tmp_path / "f")]
        run = subprocess.run(
            [sys.executable, "-I", "-S", "-c", entry, *args, "--nolive", "--json", str(out)],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert run.returncode == code, run.stderr
        if code == 2:
            assert run.stderr.startswith("Error: --ioengine native: the C extension")
            continue
        assert run.stderr.count("Note: the native engine is not built here") == 1, run.stderr
        assert json.loads(out.read_text())["meta"]["ioengine"] == "python"
        with_c = run_aiobench(*args[:-1], "--nolive", str(tmp_path / "c"))
        assert with_c.returncode == 0, with_c.stderr
        assert (tmp_path / "f").read_bytes() == (tmp_path / "c").read_bytes()


# -- depth N: Linux native AIO (one run, up to depth operations in flight) -------------------


def aio_job(kind: PhaseKind, fd: int, buf: SlotBuffer, offsets: list[int], **over: Any) -> Job:
    length = over.pop("length", buf.block_size)
    until = over.pop("until_ns", 1 << 62)
    return Job(kind, fd_targets(["t"], [fd]), OpRun(0, offsets, length), buf, until, **over)


def in_flight_at_most(batch: RawBatch) -> int:
    """The most operations the run's instants show in flight at one time."""
    edges = sorted([(int(s), 1) for s in batch.starts] + [(int(e), -1) for e in batch.ends])
    now = peak = 0
    for _, step in edges:  # (an end before a start at the same instant)
        now += step
        peak = max(peak, now)
    return peak


def test_a_buffer_for_depth_has_its_read_areas_and_windows() -> None:
    buf = SlotBuffer(1 << 20, for_write=True, source=PoolSource([1]), stamp_base=0, depth=4)
    try:
        assert buf.read_area == 1 << 20 and len(buf.read_mem) == 4 << 20
        assert len(buf.windows) == 8  # a 1 MiB block has one window at depth 1
    finally:
        buf.close()
    small = SlotBuffer(4096, for_write=True, source=PoolSource([1]), stamp_base=0, depth=4)
    try:
        assert len(small.windows) == 65  # enough already
    finally:
        small.close()


@pytest.mark.parametrize("block", [4096, 1 << 20])
def test_depth_writes_leave_the_bytes_of_one_at_a_time(tmp_path: Path, block: int) -> None:
    """Operation k takes the same window and stamps as at depth 1, whatever completes
    first: the same file, the same slot state. Reads of it at depth complete, in
    completion order, never more in flight than the depth."""
    offsets = [int(o) * block for o in np.random.default_rng(4).permutation(48)]
    seen = []
    for name, depth in (("python", 1), ("native", 1), ("native", 8)):
        target = tmp_path / f"{name}-{depth}"
        buf = SlotBuffer(block, for_write=True, source=PoolSource([1]), stamp_base=3, depth=8)
        fd = os.open(target, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            runs = [engine(name).run(aio_job(WRITE, fd, buf, part, depth=depth))
                    for part in (offsets[:30], offsets[30:])]  # fmt: skip
            reads = engine(name).run(aio_job(READ, fd, buf, offsets, depth=depth))
        finally:
            os.close(fd)
            buf.close()
        for batch in [*runs, reads]:
            assert batch.error is None
            starts, ends = np.asarray(batch.starts), np.asarray(batch.ends)
            assert bool(np.all(np.diff(ends) >= 0)) and bool(np.all(starts <= ends))
            assert in_flight_at_most(batch) <= depth
        assert [len(b.ends) for b in [*runs, reads]] == [30, 18, 48]
        seen.append((target.read_bytes(), buf.state.next_window, buf.state.next_stamp))
    assert seen[0] == seen[1] == seen[2]


def test_a_depth_run_stops_submitting_past_the_time_limit(tmp_path: Path) -> None:
    target = tmp_path / "f"
    buf = SlotBuffer(4096, for_write=True, source=PoolSource([1]), stamp_base=0, depth=4)
    fd = os.open(target, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        ops = [i * 4096 for i in range(100)]
        batch = native.NativeEngine().run(
            aio_job(WRITE, fd, buf, ops, depth=4, until_ns=1, deadline_ns=1)
        )
    finally:
        os.close(fd)
        buf.close()
    # The first completion ended past the time limit: what was in flight then completed
    # too, and those are the run's first operations; nothing more was submitted (a run's
    # own budget carries instead: tests/engines/test_aio_carry.py).
    assert batch.error is None and 1 <= len(batch.ends) <= 4
    assert buf.state.next_stamp == len(batch.ends) == buf.state.next_window
    assert target.stat().st_size == len(batch.ends) * 4096


def test_a_depth_run_names_the_operation_that_failed(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(bytes(10 * 4096 - 100))  # block 9 reads 100 bytes short
    buf = SlotBuffer(4096, for_write=False, source=PoolSource([1]), stamp_base=0, depth=4)
    fd = os.open(target, os.O_RDONLY)
    try:
        offsets = [i * 4096 for i in range(10)]
        errors = [
            engine(name).run(aio_job(READ, fd, buf, offsets, depth=depth))
            for name, depth in (("python", 1), ("native", 4))
        ]
        os.close(fd)
        closed = native.NativeEngine().run(aio_job(READ, fd, buf, offsets, depth=4))
    finally:
        buf.close()
    first, second = (batch.error for batch in errors)
    assert first is not None and second is not None
    assert first.to_dict() == second.to_dict()
    assert str(second) == "t: offset 36864: EIO (short transfer: 3996 of 4096 bytes)"
    assert [len(batch.ends) for batch in errors] == [9, 9]
    assert closed.error is not None and closed.error.errno == errno.EBADF
    assert closed.error.offset == 0 and len(closed.ends) == 0


def test_file_aio_refuses_what_does_not_fit() -> None:
    buf = SlotBuffer(4096, for_write=False, source=PoolSource([1]), stamp_base=0, depth=2)
    offsets = np.zeros(4, dtype=np.int64)
    room = np.empty(4, dtype=np.int64)

    def spec(depth: int, length: int, starts: Any, reading: bool = True) -> _native.Spec:
        return _native.Spec(
            fd=-1, offsets=offsets, length=length, reading=reading, depth=depth, starts=starts,
            ends=room,
        )  # fmt: skip

    try:
        for depth, length, starts in [
            (3, 4096, room),  # read memory for two areas only
            (0, 4096, room),
            (2, 8192, room),  # longer than an area
            (2, 4096, room[:3]),
        ]:
            with pytest.raises(ValueError):
                _native.file_aio(c_slot(buf), spec(depth, length, starts))
        with pytest.raises(ValueError):  # a write without a pool
            _native.file_aio(c_slot(buf), spec(2, 4096, room, reading=False))
    finally:
        buf.close()


@pytest.mark.root
def test_depth_on_a_loop_device_with_direct_io(tmp_path: Path) -> None:
    """O_DIRECT on a real block device (a loop device over a file in a tmpfs): random
    reads and writes at depth 16 complete, and leave the bytes of depth 1."""
    require_root_tools("loop devices", "losetup")
    with mounted_tmpfs(tmp_path / "mnt", "size=40m") as mnt:
        image = mnt / "img"
        image.write_bytes(b"")
        os.truncate(image, 16 << 20)
        made = run_tool("losetup", "--find", "--show", str(image))
        if made.returncode:
            pytest.skip(f"no loop device: {made.stderr.strip()}")
        device = made.stdout.strip()
        try:
            fd = os.open(device, os.O_RDWR | os.O_DIRECT)
            try:
                offsets = [int(o) * 4096 for o in np.random.default_rng(5).permutation(2048)]
                written = []
                for depth in (1, 16):
                    buf = SlotBuffer(4096, for_write=True, source=PoolSource([2]),
                                     stamp_base=1, depth=16)  # fmt: skip
                    try:
                        wrote = native.NativeEngine().run(
                            aio_job(WRITE, fd, buf, offsets, depth=depth)
                        )
                        read = native.NativeEngine().run(
                            aio_job(READ, fd, buf, offsets, depth=depth)
                        )
                    finally:
                        buf.close()
                    for batch in (wrote, read):
                        assert batch.error is None and len(batch.ends) == len(offsets)
                        assert in_flight_at_most(batch) <= depth
                    written.append(image.read_bytes()[: 8 << 20])
                assert written[0] == written[1]
            finally:
                os.close(fd)
        finally:
            run_tool("losetup", "--detach", device)
