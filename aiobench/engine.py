"""The executor boundary: positional I/O and metadata calls, timed per operation.

Everything here runs in an executor thread, never on the event loop. :class:`PosixEngine`
issues ``os.preadv``/``os.pwritev`` (file mode) and, in dir mode, ``mkdir``/``open``/
``stat``/``unlink``/``rmdir`` relative to each entry's parent dir, reached from the open PATH
without following a symlink (:mod:`aiobench.nofollow`);
:class:`NullEngine` issues nothing and sleeps a configurable time per operation, so the
harness can be tested deterministically. The Python engine is the reference of the native
one (:mod:`aiobench.native`), which shares its dir-mode walk and error wording
(:func:`run_entries`) and the error helpers of file mode.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import mmap
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from time import perf_counter_ns
from typing import TYPE_CHECKING, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from aiobench.dirmode import EntryRun
from aiobench.errors import BenchIOError, VerifyError
from aiobench.kinds import MKDIRS, READ, RMDIRS, RMFILES, STAT, WRITE, PhaseKind
from aiobench.nofollow import ParentDirs, WalkError, explain, reuse_dir, symlink_error
from aiobench.posix import FILE_MODE, PosixTargets, fds_of
from aiobench.targets import Probe, Targets
from aiobench.verify import Mismatch, check, pattern
from aiobench.workload import OpRun

if TYPE_CHECKING:
    from aiobench.config import BenchConfig

try:  # the native engine's half of the start gate (the extension is optional)
    from aiobench import _native
except ImportError:
    _native = None  # type: ignore[assignment]

PAGE = mmap.PAGESIZE
# Each 4 KiB of every written block starts with a unique 64-bit stamp, so no two written
# 4 KiB blocks are equal (dedup sees nothing to share).
STAMP_SPACING = 4096
# Written blocks are windows into a per-slot pool of random bytes; consecutive writes use
# windows that do not overlap (a block apart, rounded up to 4 KiB). Windows 4 KiB apart made
# an 8-64 KiB block repeat most of the previous one a few KiB back, which gzip, lz4 and a
# filesystem compressing 128 KiB extents all found. With 256 KiB of slack, content comes
# back no sooner than 256 KiB later in a file, beyond gzip's 32 KiB and lz4's 64 KiB reach
# and never inside one 128 KiB extent: incompressible without per-write random generation.
POOL_SLACK = 256 * 1024
# The pool scales with the block: blocks of 4 KiB and more get the windows that slack
# holds (fewer as blocks grow: a 1 MiB block gets one window and no slack). A smaller
# block holds a single stamp, so its windows are packed (8 bytes apart at least, one stamp
# word each); it gets as many windows as a 4 KiB block, so its content comes back after as
# many writes as before, from a pool of 65 blocks instead of 260 KiB.
POOL_WINDOWS = 1 + POOL_SLACK // STAMP_SPACING


Int64Array = npt.NDArray[np.int64]


def _none() -> Int64Array:
    return np.empty(0, dtype=np.int64)


@dataclass(slots=True)
class RawBatch:
    """What one executor round-trip did: start/end instants of each completed unit.

    A unit is one I/O operation in file mode and one entry (dir or whole file) in dir
    mode, where ``io_starts``/``io_ends`` also time each block read or written. The
    instants are int64 arrays (``perf_counter_ns``/``CLOCK_MONOTONIC``).
    """

    starts: Int64Array
    ends: Int64Array
    io_starts: Int64Array = field(default_factory=_none)
    io_ends: Int64Array = field(default_factory=_none)
    error: BenchIOError | None = None
    # Under a rate limit: when each completed operation was scheduled to start.
    intended: Int64Array = field(default_factory=_none)
    # Object storage: each GET's time to first byte (from sending it to its first body
    # byte), in ns.
    first_bytes: Int64Array = field(default_factory=_none)


class _Lists:
    """The Python engine's record of a run, appended to per unit; :meth:`batch` turns it
    into the arrays of a :class:`RawBatch`."""

    __slots__ = ("ends", "error", "intended", "io_ends", "io_starts", "starts")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.io_starts: list[int] = []
        self.io_ends: list[int] = []
        self.intended: list[int] = []
        self.error: BenchIOError | None = None

    def done(self) -> int:
        return len(self.ends)

    def count_as_done(self, count: int, until_ns: int) -> bool:
        for _ in range(count):
            now = perf_counter_ns()
            self.starts.append(now)
            self.ends.append(now)
            if now > until_ns:
                return True
        return False

    def batch(self) -> RawBatch:
        # A unit (or block) that failed or was cut recorded its start only: dropped here.
        done, io_done = len(self.ends), len(self.io_ends)
        return RawBatch(
            _int64(self.starts[:done]),
            _int64(self.ends),
            _int64(self.io_starts[:io_done]),
            _int64(self.io_ends),
            self.error,
            _int64(self.intended[:done]),
        )


class EntryRecord(Protocol):
    """What a dir-mode run has done so far, as one engine records it (lists or arrays)."""

    error: BenchIOError | None

    def done(self) -> int:
        """Entries completed."""
        ...

    def count_as_done(self, count: int, until_ns: int) -> bool:
        """Record ``count`` entries as done at once (their parent is gone, --nodelerr);
        whether the run's budget is used up."""
        ...

    def batch(self) -> RawBatch: ...


def _int64(values: list[int]) -> Int64Array:
    # fromiter with a known count: ~40 % cheaper per element than np.array on a list.
    return np.fromiter(values, dtype=np.int64, count=len(values))


@dataclass(frozen=True, slots=True)
class IoOptions:
    """How a phase issues its operations; made once per phase, shared by all its jobs."""

    direct: bool = False
    ignore_missing: bool = False  # dir mode, --nodelerr: a missing entry counts as done
    verify: int | None = None  # --verify SALT: write the pattern / check what is read
    verify_direct: bool = False  # --verifydirect: read each written block back
    block_var_pct: int | None = None  # --blockvarpct: % of the block refilled per write
    rate_bytes_per_s: int = 0  # --limitread/--limitwrite for each thread (0 = none)


@dataclass(frozen=True, slots=True)
class Job:
    """One executor round-trip: run ``ops`` until done or a unit ends past ``until_ns``.

    ``targets`` are what the engine opened: the targets (file mode) or the PATH dirs (dir
    mode). Inside a dir-mode file, the blocks stop early at ``deadline_ns`` (0 = none) or
    on ``stop``.
    """

    kind: PhaseKind
    targets: Targets
    ops: OpRun | EntryRun
    buf: SlotBuffer | None
    until_ns: int
    deadline_ns: int = 0
    stop: threading.Event | None = None
    options: IoOptions = IoOptions()
    schedule_start_ns: int = 0  # the phase start: operation n is due n blocks' time later
    # Operations the engine may keep in flight at once (the native engine's Linux AIO loop;
    # the buffer must have been made for this depth). 1: one after the other.
    depth: int = 1
    # A slot's first run: wait at the phase's start gate first; ``until_ns`` is then the
    # run's budget from the start instant (see :meth:`released`).
    gate: StartGate | None = None

    @property
    def paths(self) -> tuple[str, ...]:
        return self.targets.paths

    def released(self) -> Job | None:
        """This job once its gate opened (its ``until_ns`` absolute, the schedule from the
        start), or None when the phase was stopped before it started; ungated: itself."""
        if self.gate is None:
            return self
        until = self.gate.until(self.until_ns)
        if until is None:
            return None
        start = int(self.gate.word[2])
        return dataclasses.replace(self, until_ns=until, gate=None, schedule_start_ns=start)

    async def released_async(self) -> Job | None:
        """:meth:`released` for an engine that runs on the event loop (:class:`AsyncEngine`):
        the wait does not block the loop."""
        if self.gate is None:
            return self
        await self.gate.opened_async()
        return self.released()  # (open already: no wait)


class StartGate:
    """The common start of a phase: every slot's first run waits here, in its executor
    thread, until all of them are waiting and the clock has started.

    So thread start-up, first-run hand-over and the event loop's ramp-up over many slots
    happen before the clock, not inside the timed phase. The native engine waits inside
    its C call, on :attr:`word` (``[state, time limit]``, see ``gate_pass`` in _native.c),
    so that no run needs the interpreter's lock between the release and its first
    operation, and each released run wakes the next ones (one waker waking 1024 runs took
    150 ms here: every run it woke preempted it); the others wait on an event.
    """

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.word = np.zeros(3, dtype=np.int64)  # state, time limit, start instant
        self._arrived = 0
        self._lock = threading.Lock()
        self._loop = asyncio.get_running_loop()
        self._all_arrived = asyncio.Event()
        self._open = threading.Event()
        self._open_async = asyncio.Event()  # (open() is called on the loop)
        if expected == 0:
            self._all_arrived.set()

    def register(self) -> None:
        """In an executor thread: this slot's first run is about to wait here."""
        with self._lock:
            self._arrived += 1
            if self._arrived == self.expected:
                self._loop.call_soon_threadsafe(self._all_arrived.set)

    async def all_arrived(self) -> None:
        await self._all_arrived.wait()

    @property
    def opened(self) -> bool:
        return self._open.is_set()

    def open(self, start_ns: int, deadline_ns: int, *, stopped: bool) -> None:
        """Release every run (with ``stopped``, to do nothing: the phase was stopped before
        it started); ``deadline_ns`` is the phase's time limit (0 = none)."""
        self.word[1], self.word[2] = deadline_ns, start_ns
        state = _GATE_STOPPED if stopped else _GATE_OPEN
        if _native is not None:
            _native.gate_open(self.word, state)
        else:
            self.word[0] = state
        self._open.set()
        self._open_async.set()

    async def opened_async(self) -> None:
        await self._open_async.wait()

    def until(self, budget_ns: int) -> int | None:
        """Wait for the start; then the end of a run's ``budget_ns`` (or the time limit if
        that comes first), or None when the phase was stopped before it started."""
        self._open.wait()
        if self.word[0] == _GATE_STOPPED:
            return None
        until = perf_counter_ns() + budget_ns
        limit = int(self.word[1])
        return min(until, limit) if limit else until


_GATE_OPEN, _GATE_STOPPED = 1, 2


class StopEvent(threading.Event):
    """A phase's stop request that native code can see without the GIL: :meth:`set` also
    sets the one-byte :attr:`flag`, which the C loops read between a file's blocks."""

    def __init__(self) -> None:
        super().__init__()
        self.flag = np.zeros(1, dtype=np.uint8)

    def set(self) -> None:
        self.flag[0] = 1
        super().set()

    def clear(self) -> None:
        super().clear()
        self.flag[0] = 0


class SlotBuffer:
    """Page-aligned memory of one slot, allocated and filled once, before the phase starts.

    With ``depth`` > 1 (operations in flight at once, each needing memory of its own) it
    holds ``depth`` read areas and at least twice as many write windows.
    """

    def __init__(
        self,
        block_size: int,
        *,
        for_write: bool,
        rng: np.random.Generator,
        stamp_base: int,
        depth: int = 1,
        writes: int | None = None,
    ) -> None:
        """``writes``: the most writes the slot can make (None: no bound); a pool needs no
        more windows than that."""
        self.block_size = block_size
        self.depth = depth
        # Reads land in memory of their own, so an --rwmixpct read never changes what the
        # slot writes next. (Untouched pages of it cost no memory.) Area i of ``depth``
        # starts at ``i * read_area``; the Python engine uses the first.
        self.read_area = _round_up(block_size, PAGE)
        self.read_mem = mmap.mmap(-1, depth * self.read_area)
        self.read_view = [memoryview(self.read_mem)[:block_size]]
        self.windows: list[list[memoryview]] = []
        self.window_words = 0  # 64-bit words from one window's start to the next
        self.stamps_per_block = max(1, block_size // STAMP_SPACING)
        self.next_window = 0
        self.next_stamp = stamp_base
        self.pool: mmap.mmap | None = None  # the write pool (``mem``), None when only reading
        if not for_write:
            return
        step, count = pool_windows(block_size, depth, writes)
        size = pool_bytes(block_size, depth, writes)
        self.pool = self.mem = mmap.mmap(-1, size)
        # The generator's raw words: ~11x Generator.bytes()'s speed here (a pool per slot
        # at -t 1024 is 260 MiB to fill before the clock).
        self.mem[:] = rng.bit_generator.random_raw(size // 8).tobytes()
        view = memoryview(self.mem)
        self.windows = [[view[o : o + block_size]] for o in range(0, count * step, step)]
        self.window_words = step // 8
        self.words = view.cast("Q")
        self.words_np = np.frombuffer(self.mem, dtype=np.uint64)
        self.stamp_offsets = np.arange(self.stamps_per_block, dtype=np.uint64)
        # --blockvarpct refills from SFC64's raw output: ~3.6 GB/s on one core here,
        # against ~0.3 GB/s for Generator.bytes().
        self.refill = np.random.SFC64(int(rng.integers(0, 1 << 63)))

    def next_block(self, length: int) -> list[memoryview]:
        """The next write window, its 4 KiB stamps made unique, cut to ``length``.

        Used per block in dir mode; the file-mode write loop inlines the same steps.
        """
        window, stamp = self.next_window, self.next_stamp
        word = window * self.window_words
        if self.stamps_per_block == 1:
            self.words[word] = stamp
        else:
            end = word + self.stamps_per_block * (STAMP_SPACING // 8)
            self.words_np[word : end : STAMP_SPACING // 8] = self.stamp_offsets + np.uint64(stamp)
        self.next_stamp = (stamp + self.stamps_per_block) & 0xFFFF_FFFF_FFFF_FFFF
        self.next_window = window + 1 if window + 1 < len(self.windows) else 0
        views = self.windows[window]
        return views if length == self.block_size else [views[0][:length]]

    def close(self) -> None:
        """Drop the slot's views and unmap its memory; never raises.

        The engine keeps no view past a run, also when a run fails. Should one still be
        alive somewhere (say, in a frame an exception holds until a GC pass), ``close``
        would raise BufferError; the memory is then unmapped when that view goes instead.
        """
        self.read_view.clear()
        self.windows.clear()
        if hasattr(self, "words"):
            self.words.release()
            del self.words_np
        _unmap(self.read_mem)
        if self.pool is not None:
            _unmap(self.pool)


def _unmap(mem: mmap.mmap) -> None:
    # (A view still exported: the mapping goes with the last view, see SlotBuffer.close.)
    with contextlib.suppress(BufferError):
        mem.close()


def pool_windows(block_size: int, depth: int = 1, writes: int | None = None) -> tuple[int, int]:
    """(bytes from one write window's start to the next, number of windows) of a pool.

    With ``depth`` operations in flight a window is reused only once the write that used
    it last has completed; twice ``depth`` windows keep one slow write from holding up
    the next ones (only a write ``2 * depth`` submissions old must be done). A slot that
    makes at most ``writes`` writes never reuses a window of that many.
    """
    if block_size >= STAMP_SPACING:
        step = _round_up(block_size, STAMP_SPACING)
        count = 1 + POOL_SLACK // step
    else:
        step, count = _round_up(block_size, 8), POOL_WINDOWS
    count = count if depth == 1 else max(count, 2 * depth)
    return step, count if writes is None else max(1, min(count, writes))


def pool_bytes(block_size: int, depth: int = 1, writes: int | None = None) -> int:
    """The write pool of one slot: its windows, in whole pages."""
    step, count = pool_windows(block_size, depth, writes)
    return _round_up((count - 1) * step + block_size, PAGE)


def slot_buffer_bytes(
    block_size: int, *, for_write: bool, depth: int = 1, writes: int | None = None
) -> int:
    """The memory one :class:`SlotBuffer` maps: read memory, and the pool when writing."""
    read = depth * _round_up(block_size, PAGE)
    return read + (pool_bytes(block_size, depth, writes) if for_write else 0)


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


class Engine(Protocol):
    """The backend seam, as fio's ``ioengine_ops``: an engine makes every syscall on its
    targets. The harness hands it whole runs of operations (:class:`Job`) and untimed
    chores (preparing files, rank dirs, sync); it never prints."""

    name: str

    def run(self, job: Job) -> RawBatch:
        """Run the job's operations in order until all are done or one ends after
        ``until_ns``; called in an executor thread. A gated job (a slot's first run)
        waits for the phase's start first (:meth:`Job.released`)."""
        ...

    def probe(self, path: str, opening: bool = True) -> Probe:
        """Before the run: what is at ``path`` (its type and size); read-only, and without
        ``opening`` (--dryrun) opening nothing. Raises
        :class:`~aiobench.errors.ConfigError` for what the engine cannot run on."""
        ...

    def open(
        self, cfg: BenchConfig, path_type: str, check: Callable[[], None] | None = None
    ) -> Targets:
        """Open (creating files to write) the run's targets; raises
        :class:`~aiobench.errors.ConfigError`, having removed what it created, when one
        cannot be. ``check`` is called before each target and may raise to stop."""
        ...

    def prepare_files(
        self,
        targets: Targets,
        sizes: Sequence[int],
        *,
        trunc: bool,
        trunctosize: bool,
        prealloc: bool,
    ) -> BenchIOError | None: ...

    def rank_dirs(
        self,
        targets: Targets,
        dirs: Sequence[tuple[int, str]],
        *,
        remove: bool,
        missing_ok: bool,
    ) -> BenchIOError | None: ...

    def sync(self, targets: Targets) -> None: ...

    def slot_depth(
        self, kind: PhaseKind, options: IoOptions, iodepth: int, *, dir_mode: bool
    ) -> int: ...


class AsyncEngine(Engine, Protocol):
    """An engine whose runs are coroutines on the event loop (object storage: each slot
    keeps its requests in flight without an executor thread); :meth:`Engine.run` is not
    called for it."""

    async def run_async(self, job: Job) -> RawBatch:
        """:meth:`Engine.run` on the event loop; a gated job waits with
        :meth:`Job.released_async`."""
        ...


def runs_on_loop(engine: Engine) -> bool:
    """Whether ``engine`` is an :class:`AsyncEngine`."""
    return callable(getattr(engine, "run_async", None))


class PosixEngine(PosixTargets):
    """Real I/O from Python: one syscall per operation, timed around the syscall only."""

    name = "python"

    def run(self, job: Job) -> RawBatch:
        released = job.released()
        if released is None:
            return _Lists().batch()  # the phase was stopped before it started
        job = released
        if isinstance(job.ops, EntryRun):
            return run_entries(job, job.ops, _Lists(), _python_loop(job.kind))
        ops = job.ops
        batch = _Lists()
        opts = job.options
        plain = ops.mix is None and not opts.rate_bytes_per_s and opts.verify is None
        try:
            if plain and job.kind == READ:
                self._read(batch, job, ops)
            elif plain and opts.block_var_pct is None:
                self._write(batch, job, ops)
            else:
                _composed(batch, job, ops)
        except _Mismatch as exc:
            batch.error = mismatch_error(job, ops, len(batch.ends), exc.mismatch)
        except OSError as exc:
            batch.error = op_error(job, ops, len(batch.ends), exc.errno or 0, exc.strerror or "")
        return batch.batch()

    @staticmethod
    def _read(batch: _Lists, job: Job, ops: OpRun) -> None:
        # The hot loop: locals only, two clock reads, one syscall and two compares per
        # operation.
        preadv, clock = os.preadv, perf_counter_ns
        add_start, add_end = batch.starts.append, batch.ends.append
        fds, index, until_ns = fds_of(job.targets), ops.path_index, job.until_ns
        length, bufs = ops.length, _read_view(job.buf, ops.length)
        # Two copies of the loop on purpose: the common one-path case saves a per-operation
        # index lookup (measurable at page-cache speed).
        if isinstance(index, int):
            fd = fds[index]
            for off in ops.offsets:
                add_start(clock())
                got = preadv(fd, bufs, off)
                add_end(end := clock())
                if got != length:
                    raise _short(batch.ends, got, length)
                if end > until_ns:
                    return
        else:
            for i, off in zip(index, ops.offsets, strict=False):
                add_start(clock())
                got = preadv(fds[i], bufs, off)
                add_end(end := clock())
                if got != length:
                    raise _short(batch.ends, got, length)
                if end > until_ns:
                    return

    @staticmethod
    def _write(batch: _Lists, job: Job, ops: OpRun) -> None:
        pwritev, clock = os.pwritev, perf_counter_ns
        add_start, add_end = batch.starts.append, batch.ends.append
        until_ns, length, index = job.until_ns, ops.length, ops.path_index
        buf = job.buf
        assert buf is not None
        # SlotBuffer.next_block inlined: a method call per operation costs ~10 % of cached
        # 4 KiB write IOPS.
        windows = buf.windows
        if length != buf.block_size:
            windows = [[w[0][:length]] for w in windows]
        n_windows, spacing, window_words = len(windows), STAMP_SPACING // 8, buf.window_words
        words, per_block = buf.words, buf.stamps_per_block
        words_np, stamp_offsets = buf.words_np, buf.stamp_offsets
        window, stamp = buf.next_window, buf.next_stamp
        fds = fds_of(job.targets)
        op_fds = repeat(fds[index]) if isinstance(index, int) else [fds[i] for i in index]
        try:
            for fd, off in zip(op_fds, ops.offsets, strict=False):
                # Untimed: stamp this window so the block is unique. (As next_block: an
                # operation that starts uses up its window and stamps, whatever its end.)
                word = window * window_words
                if per_block == 1:
                    words[word] = stamp
                else:
                    words_np[word : word + per_block * spacing : spacing] = stamp_offsets + (
                        np.uint64(stamp)
                    )
                stamp = (stamp + per_block) & 0xFFFF_FFFF_FFFF_FFFF
                views = windows[window]
                window = window + 1 if window + 1 < n_windows else 0
                add_start(clock())
                got = pwritev(fd, views, off)
                add_end(end := clock())
                if got != length:
                    raise _short(batch.ends, got, length)
                if end > until_ns:
                    return
        finally:
            buf.next_window, buf.next_stamp = window, stamp


class _Mismatch(Exception):
    def __init__(self, mismatch: Mismatch) -> None:
        self.mismatch = mismatch


def _composed(batch: _Lists, job: Job, ops: OpRun) -> None:
    """Any file-mode run, its features composed per operation, as elbencho's LocalWorker
    combines the function pointers it picks once per phase.

    Per operation: (a) under a rate limit, wait for its scheduled start; (b) read or write
    (the phase's kind, or --rwmixpct's choice); (c) a write's data: the next stamped pool
    window, the --verify pattern or the --blockvarpct block; (d) after the op,
    --verifydirect's read back and the --verify check of what was read. Only the syscall
    is timed; an operation that fails a check is not counted.

    Under a rate limit operation n of a thread is due ``n * block / rate`` after the phase
    start; one that is late (the target stalled) starts at once, so the time from its due
    start to its end includes the backlog (coordinated omission). The wait is untimed; a
    run ends instead of sleeping past its budget, so stop requests and the time limit are
    still honoured.
    """
    buf = job.buf
    assert buf is not None
    opts, until_ns, length, index = job.options, job.until_ns, ops.length, ops.path_index
    clock, preadv, pwritev = perf_counter_ns, os.preadv, os.pwritev
    add_start, add_end, add_due = batch.starts.append, batch.ends.append, batch.intended.append
    read_view = _read_view(buf, length)
    salt, rate = opts.verify, opts.rate_bytes_per_s
    read_back = salt is not None and opts.verify_direct
    ns_per_op = buf.block_size * 1_000_000_000 / rate if rate else 0.0
    start_ns, first_seq = job.schedule_start_ns, ops.first_seq
    reads: Iterable[bool] = repeat(job.kind == READ)
    if ops.mix is not None:
        reads = ops.mix.is_read(first_seq, len(ops)).tolist()
    next_data = _write_source(buf, opts, length)
    all_fds = fds_of(job.targets)
    fds = repeat(all_fds[index]) if isinstance(index, int) else [all_fds[i] for i in index]
    for n, (fd, off, read) in enumerate(zip(fds, ops.offsets, reads, strict=False)):
        due = 0
        if rate:
            due = start_ns + int((first_seq + n) * ns_per_op)
            wait = due - clock()
            if wait > 0:
                if due > until_ns:
                    time.sleep(max(until_ns - clock(), 0) / 1e9)
                    return  # the rest of the run waits for the slot's next round-trip
                time.sleep(wait / 1e9)
        data = read_view if read else next_data(off)
        add_start(clock())
        got = preadv(fd, data, off) if read else pwritev(fd, data, off)
        end = clock()
        if got != length:
            raise _short_transfer(got, length)
        if read_back and not read:
            got = preadv(fd, read_view, off)
            if got != length:
                raise _short_transfer(got, length)
        if salt is not None and (read or read_back):
            bad = check(read_view[0], off, salt)
            if bad is not None:
                raise _Mismatch(bad)
        add_end(end)
        if rate:
            add_due(due)
        if end > until_ns:
            return


def _write_source(
    buf: SlotBuffer, opts: IoOptions, length: int
) -> Callable[[int], list[memoryview]]:
    """Where each write's data comes from (called with the write's offset, untimed)."""
    salt, pct = opts.verify, opts.block_var_pct
    if salt is not None:
        # --verify: the pattern, built in the aligned read memory (O_DIRECT needs it so).
        views = _read_view(buf, length)
        view = views[0]

        def patterned(off: int) -> list[memoryview]:
            view[:] = pattern(off, length, salt)
            return views

        return patterned
    if pct is not None and buf.windows:
        # --blockvarpct: one block, its first pct % refilled from SFC64 before each write;
        # 0 writes the same block every time.
        block = [buf.windows[0][0][:length]]
        words = -(-length * pct // 100) // 8 if pct else 0
        target, refill = buf.words_np[:words], buf.refill.random_raw

        def varied(_off: int) -> list[memoryview]:
            if words:
                target[:] = refill(words)
            return block

        return varied
    next_block = buf.next_block
    return lambda _off: next_block(length)


def _read_view(buf: SlotBuffer | None, length: int) -> list[memoryview]:
    assert buf is not None
    return buf.read_view if length == buf.block_size else [buf.read_view[0][:length]]


def _short(ends: list[int], got: int, length: int) -> OSError:
    # A short transfer counts as a failed operation: drop its timing, report it as EIO.
    ends.pop()
    return _short_transfer(got, length)


def _short_transfer(got: int, length: int) -> OSError:
    return OSError(errno.EIO, short_detail(got, length))


def short_detail(got: int, length: int) -> str:
    """The text of a short transfer's EIO."""
    return f"short transfer: {got} of {length} bytes"


def op_error(job: Job, ops: OpRun, done: int, errno_: int, detail: str) -> BenchIOError:
    """File mode: operation ``done`` of the run failed with ``errno_``."""
    index = ops.path_index
    path = job.paths[index if isinstance(index, int) else index[done]]
    return BenchIOError(path=path, offset=ops.offsets[done], errno=errno_, detail=detail)


def mismatch_error(job: Job, ops: OpRun, done: int, bad: Mismatch) -> VerifyError:
    """File mode, --verify: operation ``done`` did not hold the pattern."""
    index = ops.path_index
    path = job.paths[index if isinstance(index, int) else index[done]]
    return VerifyError(path=path, offset=bad.offset, expected=bad.expected, found=bad.found)


R = TypeVar("R", bound=EntryRecord)
# One kind of dir-mode loop (files, stat, the other metadata calls) of one engine.
EntryLoop = Callable[[R, Job, EntryRun, ParentDirs], None]


def run_entries(job: Job, run: EntryRun, record: R, loop: EntryLoop[R]) -> RawBatch:
    """Dir mode: one metadata call, or open + whole-file I/O + close, per entry.

    Every call is relative to the entry's parent dir, reached without following a symlink
    (:class:`~aiobench.nofollow.ParentDirs`), on the entry's last name component only.
    ``loop`` is the engine's loop for the job's kind; what it raises is worded here, the
    same for every engine.
    """
    # With --nodelerr a parent dir that is gone takes its entries with it: done already.
    missing_ok = job.options.ignore_missing and job.kind in (STAT, RMFILES, RMDIRS)
    parents = ParentDirs(fds_of(job.targets), missing_ok=missing_ok)
    # The error is made inside each handler: an exception kept past it would hold the
    # frames of the loop below, and their views of the slot's buffer, until a GC pass.
    try:
        loop(record, job, run, parents)
    except WalkError as exc:  # on the way to the entry: names the dir that failed
        record.error = _entry_error(record, job, run, exc.errno, exc.detail, name=exc.name)
    except BlockError as exc:  # inside a file: the offset there means something
        record.error = _entry_error(record, job, run, exc.errno, exc.detail, offset=exc.offset)
    except OSError as exc:  # the entry's own call (mkdir, open, stat, close, unlink, rmdir)
        # A symlink at the entry's name shows up as ELOOP, ENOTDIR or EEXIST: say so.
        k = record.done()
        dir_fd = parents.current(*run.parent_of(k)) if k < len(run) else None
        cause = exc if dir_fd is None else explain(exc, run.leaves[k], dir_fd)
        record.error = _entry_error(record, job, run, cause.errno or 0, cause.strerror or "")
    finally:
        parents.close()
    return record.batch()


def _python_loop(kind: PhaseKind) -> EntryLoop[_Lists]:
    if kind in (WRITE, READ):
        return _files
    return _stat if kind == STAT else _metadata


def python_entries(job: Job, run: EntryRun) -> RawBatch:
    """The Python engine's dir-mode run (the native engine's fallback, see its ``run``)."""
    return run_entries(job, run, _Lists(), _python_loop(job.kind))


def _entry_error(
    record: EntryRecord,
    job: Job,
    run: EntryRun,
    errno_: int,
    detail: str,
    *,
    name: str | None = None,
    offset: int | None = None,
) -> BenchIOError:
    """The error of the entry in progress (or of its parent dir ``name``)."""
    k = record.done()
    index = run.path_index
    path = job.paths[index if isinstance(index, int) else index[k]]
    return BenchIOError(
        path=os.path.join(path, run.name(k) if name is None else name),
        offset=offset,
        errno=errno_,
        detail=detail,
    )


class BlockError(Exception):
    """A block read or write of a dir-mode file failed at ``offset`` in the file.

    Carries the errno and text only, no frame (see the note in :func:`run_entries`)."""

    def __init__(self, errno_: int, detail: str, offset: int) -> None:
        super().__init__(errno_, detail, offset)
        self.errno = errno_
        self.detail = detail
        self.offset = offset


def _metadata(batch: _Lists, job: Job, run: EntryRun, parents: ParentDirs) -> None:
    # Not aiofiles: aiofiles.os.stat awaits one executor round-trip per call. Measured on
    # the 2-core reference VM (ext4, 20,000 cached files): 11 k stats/s against 280 k/s
    # for a plain os.stat loop (0.04x). A run of calls per round-trip, as here, keeps up.
    clock, until_ns = perf_counter_ns, job.until_ns
    add_start, add_end = batch.starts.append, batch.ends.append
    # os.mkdir's default mode is 0o777 (DIR_MODE), so every call takes the same arguments.
    # Neither call follows a symlink in the last component: mkdir finds it there (EEXIST),
    # rmdir refuses it (ENOTDIR), and unlink removes the link itself, never its target.
    calls: dict[str, Callable[..., object]] = {
        MKDIRS: os.mkdir,
        RMFILES: os.unlink,
        RMDIRS: os.rmdir,
    }
    call = calls[job.kind]
    # As elbencho: a dir left by an earlier run is reused (if it is a real dir); with
    # --nodelerr, deleting an entry that is gone already counts as done.
    making = job.kind == MKDIRS
    tolerated: type[OSError] | tuple[()] = ()  # (an empty tuple catches nothing)
    if making:
        tolerated = FileExistsError
    elif job.options.ignore_missing:
        tolerated = FileNotFoundError
    for dfd, leaves in entry_parents(batch, run, parents, until_ns):
        for name in leaves:
            add_start(clock())
            # try/except costs nothing unless raised; contextlib.suppress would, per call.
            try:
                call(name, dir_fd=dfd)
            except tolerated:
                if making:
                    reuse_dir(name, dfd)
            add_end(end := clock())
            if end > until_ns:
                return


# The file-type bits of st_mode: a mask and a compare cost less per entry than S_ISLNK().
_FILE_TYPE = 0o170000


def _stat(batch: _Lists, job: Job, run: EntryRun, parents: ParentDirs) -> None:
    clock, until_ns = perf_counter_ns, job.until_ns
    add_start, add_end = batch.starts.append, batch.ends.append
    lstat, file_type, link = os.stat, _FILE_TYPE, stat.S_IFLNK
    tolerated: type[OSError] | tuple[()] = ()
    if job.options.ignore_missing:
        tolerated = FileNotFoundError
    for dfd, leaves in entry_parents(batch, run, parents, until_ns):
        for name in leaves:
            add_start(clock())
            try:
                mode = lstat(name, dir_fd=dfd, follow_symlinks=False).st_mode
            except tolerated:
                mode = 0
            add_end(end := clock())
            if (mode & file_type) == link:  # lstat did not follow it; not ours to stat
                batch.ends.pop()
                raise symlink_error()
            if end > until_ns:
                return


def entry_parents(
    record: EntryRecord, run: EntryRun, parents: ParentDirs, until_ns: int
) -> Iterator[tuple[int, list[str]]]:
    """(parent dir fd, names in it) of each stretch of the run; a parent that is gone
    (``missing_ok``, --nodelerr) has its entries counted as done, until the budget ends."""
    for index, parent, leaves in run.stretches():
        dfd = parents.open(index, parent)
        if dfd >= 0:
            yield dfd, leaves
        elif record.count_as_done(len(leaves), until_ns):
            return


def file_flags(job: Job) -> int:
    """open(2) flags of a dir-mode file: created or read, never through a symlink."""
    flags = (os.O_CREAT | os.O_WRONLY) if job.kind == WRITE else os.O_RDONLY
    # O_NOFOLLOW: a symlink at the file's name fails with ELOOP instead of being opened.
    return flags | os.O_CLOEXEC | os.O_NOFOLLOW | (os.O_DIRECT if job.options.direct else 0)


def _files(batch: _Lists, job: Job, run: EntryRun, parents: ParentDirs) -> None:
    clock, until_ns = perf_counter_ns, job.until_ns
    deadline = job.deadline_ns or 1 << 62
    stopped = job.stop.is_set if job.stop is not None else (lambda: False)
    add_start, add_end = batch.starts.append, batch.ends.append
    io_start, io_end = batch.io_starts.append, batch.io_ends.append
    writing = job.kind == WRITE
    flags = file_flags(job)
    size, block = run.size, run.block
    # (offset, length) of every block of a file; only the last one can be short.
    blocks = [(off, min(block, size - off)) for off in range(0, size, block)]
    transfer = os.pwritev if writing else os.preadv
    if writing and blocks:
        assert job.buf is not None
        next_block = job.buf.next_block
    elif blocks:
        views = {length: _read_view(job.buf, length) for _, length in (blocks[0], blocks[-1])}
    open_, close = os.open, os.close
    if not blocks:  # -s 0: create (or open) and close, the classic metadata rate
        for dfd, leaves in entry_parents(batch, run, parents, until_ns):
            for name in leaves:
                add_start(clock())
                close(open_(name, flags, FILE_MODE, dir_fd=dfd))
                add_end(end := clock())
                if end > until_ns:
                    return
        return
    for dfd, leaves in entry_parents(batch, run, parents, until_ns):
        for name in leaves:
            add_start(clock())
            fd = open_(name, flags, FILE_MODE, dir_fd=dfd)
            cut = False
            off = 0
            try:
                for off, length in blocks:
                    data = next_block(length) if writing else views[length]
                    io_start(clock())
                    got = transfer(fd, data, off)
                    io_end(now := clock())
                    if got != length:
                        raise _short(batch.io_ends, got, length)
                    if off + length < size and (now > deadline or stopped()):
                        cut = True  # time limit or signal inside a file: it stays unfinished
                        break
            except OSError as exc:
                os.close(fd)
                raise BlockError(exc.errno or 0, exc.strerror or "", off) from None
            close(fd)
            if cut:
                return  # (the file's start is dropped with the unfinished entry)
            add_end(end := clock())
            if end > until_ns:
                return


class NullEngine(PosixTargets):
    """No timed I/O (the chores are real): each unit sleeps ``delay_ns(path_index)``
    (0 = returns at once).

    In dir mode a file's blocks are recorded as instant operations at the file's end.
    """

    name = "null"

    def __init__(self, delay_ns: Callable[[int], int] | None = None) -> None:
        self.delay_ns = delay_ns or (lambda _index: 0)

    def run(self, job: Job) -> RawBatch:
        released = job.released()
        if released is None:
            return _Lists().batch()
        job = released
        ops, until_ns = job.ops, job.until_ns
        batch = _Lists()
        index = ops.path_index
        blocks = ops.blocks_per_entry if isinstance(ops, EntryRun) else 0
        for n in range(len(ops)):
            delay = self.delay_ns(index if isinstance(index, int) else index[n])
            start = perf_counter_ns()
            if delay:
                time.sleep(delay / 1e9)
            end = perf_counter_ns()
            batch.io_starts.extend([end] * blocks)
            batch.io_ends.extend([end] * blocks)
            batch.starts.append(start)
            batch.ends.append(end)
            if end > until_ns:
                break
        return batch.batch()
