"""The native engine: the Python engine's runs, each made by one C call without the GIL.

:class:`NativeEngine` has :class:`~aiobench.engines.python.PosixEngine`'s semantics: the
same bytes on disk, the same counts, the same errors, and the slot's buffer state (stamps,
pool window, SFC64 generator) advanced alike, so the two engines can take turns on one
slot. Its hot loops are in the C extension ``aiobench.engines._native`` (``_native.c``
beside this module): a whole file-mode run per call, and in dir mode the entries of one
parent dir per call, the walk to that dir (:class:`~aiobench.engines.nofollow.ParentDirs`)
and the wording of errors staying in Python (:func:`~aiobench.engines.python.run_entries`).
The extension is optional: this module imports without it, :func:`available` says whether
it is there, :data:`build_error` why not.
"""

from __future__ import annotations

import errno
import os
from time import perf_counter_ns

import numpy as np
import numpy.typing as npt

from aiobench.engines.base import (
    Int64Array,
    IoOptions,
    Job,
    RawBatch,
    mismatch_error,
    op_error,
    short_detail,
)
from aiobench.engines.dirwalk import BlockError, entry_parents, file_flags, run_entries
from aiobench.engines.gate import StopEvent
from aiobench.engines.nofollow import ParentDirs, reuse_dir, symlink_error
from aiobench.engines.posix import DIR_MODE, FILE_MODE, PosixTargets, fd_targets, fds_of
from aiobench.engines.python import python_entries
from aiobench.engines.verify import Mismatch
from aiobench.errors import BenchIOError
from aiobench.kinds import MKDIRS, READ, RMDIRS, RMFILES, STAT, WRITE, PhaseKind
from aiobench.plan.dirmode import EntryRun
from aiobench.plan.targets import Targets
from aiobench.plan.workload import OpRun

try:
    import aiobench.engines._native as _native
except ModuleNotFoundError as exc:
    if exc.name != "aiobench.engines._native":  # not ours: numpy or the like is missing
        raise
    build_error = (
        "the C extension aiobench.engines._native is not built (install aiobench with a C compiler "
        "and Python's headers)"
    )
except ImportError as exc:  # built, but does not load here (another Python, a bad build)
    build_error = f"the C extension aiobench.engines._native does not load: {exc}"
else:
    build_error = ""

_NONE: Int64Array = np.empty(0, dtype=np.int64)
# Block instants a dir-mode run has room for at first (1 MiB for both arrays); a run of
# bigger files grows them, between files.
_IO_ROOM = 1 << 16


def available() -> bool:
    """Whether the C extension loads here (else :data:`build_error` says why not)."""
    return not build_error


class NativeEngine(PosixTargets):
    """Real I/O from C: the Python engine's operations, timed with the same clock."""

    name = "native"

    def __init__(self) -> None:
        if build_error:
            raise RuntimeError(f"the native engine is not available: {build_error}")

    def slot_depth(
        self, targets: Targets, kind: PhaseKind, options: IoOptions, iodepth: int
    ) -> int:
        """With ``--direct``, file-mode reads and writes keep ``--iodepth`` operations in
        flight from one thread through Linux AIO, as fio's and elbencho's libaio engines
        do. (On cached files io_submit does the I/O itself before it returns, so there
        ``--iodepth`` stays a count of slots, each with its executor thread.)"""
        dirs = fd_targets(targets).dirs
        if iodepth > 1 and options.direct and not dirs and _queues(kind, options):
            return iodepth
        return 1

    def run(self, job: Job) -> RawBatch:
        ops = job.ops
        if not isinstance(ops, OpRun) or job.options.rate_bytes_per_s:
            # Dir mode, and paced runs (their schedule needs the start instant), wait at
            # the gate here; the other file-mode runs wait inside their C call.
            released = job.released()
            if released is None:
                return RawBatch(_NONE, _NONE)
            job = released
        if isinstance(ops, OpRun):
            return _file_run(job, ops)
        blocks = ops.blocks_per_entry
        if job.kind not in (READ, WRITE) or not blocks:
            return run_entries(job, ops, _EntryArrays(len(ops), 0), _metadata)
        if blocks > 1 and job.stop is not None and not isinstance(job.stop, StopEvent):
            # C sees a stop request between a file's blocks only through StopEvent's flag;
            # the Python loop asks any other event itself.
            return python_entries(job, ops)
        return run_entries(job, ops, _EntryArrays(len(ops), blocks), _files)


def _targets(job: Job, ops: OpRun) -> tuple[int, npt.NDArray[np.int32] | None]:
    """(the fd of every operation, None) or (-1, an fd per operation)."""
    index, fds = ops.path_index, fds_of(job.targets)
    if isinstance(index, int):
        return fds[index], None
    per_op = ops.path_array if ops.path_array is not None else np.asarray(index)
    return -1, np.asarray(fds, dtype=np.int32)[per_op]


def _offsets(ops: OpRun) -> Int64Array:
    return np.fromiter(ops.offsets, dtype=np.int64, count=len(ops))  # (~2x np.array's speed)


def _queues(kind: PhaseKind, opts: IoOptions) -> bool:
    """Whether file-mode operations of ``kind`` can go through Linux AIO: plain reads and
    stamped writes (no pacing, pattern, check or block variance to do between them)."""
    plain = not opts.rate_bytes_per_s and opts.verify is None
    return plain and (kind == READ or (kind == WRITE and opts.block_var_pct is None))


def _file_run(job: Job, ops: OpRun) -> RawBatch:
    """A file-mode run in one call: the Python engine's ``_composed`` loop, in C; with a
    depth above 1, plain reads and stamped writes go through Linux AIO (:func:`_aio_run`)."""
    buf = job.buf
    assert buf is not None
    opts, n = job.options, len(ops)
    if job.depth > 1 and ops.mix is None and _queues(job.kind, opts):
        return _aio_run(job, ops)
    fd, fds = _targets(job, ops)
    starts, ends = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    rate = opts.rate_bytes_per_s
    intended = np.empty(n, dtype=np.int64) if rate else None
    # The same float as the Python loop's: the schedule comes out to the nanosecond.
    ns_per_op = buf.block_size * 1_000_000_000 / rate if rate else 0.0
    mix, salt, pct = ops.mix, opts.verify, opts.block_var_pct
    reading = job.kind == READ
    var_words, sfc, sfc_state = -1, None, None
    if (not reading or mix is not None) and salt is None and pct is not None and buf.windows:
        var_words = -(-ops.length * pct // 100) // 8 if pct else 0
        if var_words:
            sfc_state = buf.refill.state
            sfc = np.array(sfc_state["state"]["state"], dtype=np.uint64)
    pool_state = _pool_state(buf.next_window, buf.next_stamp) if buf.pool is not None else None
    status, done, err, a, b, c = _native.file_run(
        fd,
        fds,
        _offsets(ops),
        ops.length,
        reading,
        -1 if mix is None else mix.pct,
        0 if mix is None else mix.rank + ops.first_seq,
        ns_per_op,
        job.schedule_start_ns,
        ops.first_seq,
        salt is not None,
        salt or 0,
        opts.verify_direct,
        var_words,
        sfc,
        buf.read_mem,
        buf.pool,
        buf.window_words,
        len(buf.windows),
        buf.stamps_per_block,
        pool_state,
        job.until_ns,
        starts,
        ends,
        intended,
        None if job.gate is None else job.gate.word,
    )
    if pool_state is not None:
        buf.next_window, buf.next_stamp = int(pool_state[0]), int(pool_state[1])
    if sfc is not None and sfc_state is not None:
        sfc_state["state"]["state"] = sfc
        buf.refill.state = sfc_state
    batch = RawBatch(starts[:done], ends[:done])
    if intended is not None:
        batch.intended = intended[:done]
    if status == _native.ERRNO:
        batch.error = op_error(job, ops, done, err, os.strerror(err))
    elif status == _native.SHORT:
        batch.error = op_error(job, ops, done, errno.EIO, short_detail(a, b))
    elif status == _native.MISMATCH:
        batch.error = mismatch_error(job, ops, done, Mismatch(a, b, c))
    return batch


def _aio_run(job: Job, ops: OpRun) -> RawBatch:
    """Up to ``job.depth`` operations in flight (io_submit/io_getevents), each timed from
    its submission to the reaping of its completion; the instants in completion order.

    After an operation ends past the budget nothing more is submitted, and what is in
    flight completes, so the operations done are still the first of the run (the failing
    one excepted, after an error).
    """
    buf = job.buf
    assert buf is not None
    if job.depth > buf.depth:
        raise ValueError(f"a depth of {job.depth} needs a SlotBuffer made for it")
    n, fd, fds = len(ops), *_targets(job, ops)
    reading = job.kind == READ
    starts, ends = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    pool_state = None if reading else _pool_state(buf.next_window, buf.next_stamp)
    status, done, index, err, a, b = _native.file_aio(
        fd,
        fds,
        _offsets(ops),
        ops.length,
        reading,
        job.depth,
        buf.read_mem,
        buf.read_area,
        buf.pool,
        buf.window_words,
        len(buf.windows),
        buf.stamps_per_block,
        pool_state,
        job.until_ns,
        starts,
        ends,
        None if job.gate is None else job.gate.word,
    )
    if pool_state is not None:
        buf.next_window, buf.next_stamp = int(pool_state[0]), int(pool_state[1])
    batch = RawBatch(starts[:done], ends[:done])
    if status == _native.ERRNO:
        batch.error = op_error(job, ops, index, err, os.strerror(err))
    elif status == _native.SHORT:
        batch.error = op_error(job, ops, index, errno.EIO, short_detail(a, b))
    elif status == _native.SETUP:
        path = job.paths[ops.path_index if isinstance(ops.path_index, int) else ops.path_index[0]]
        detail = f"io_setup: {os.strerror(err)}"
        batch.error = BenchIOError(path=path, offset=None, errno=err, detail=detail)
    return batch


def _pool_state(window: int, stamp: int) -> npt.NDArray[np.uint64]:
    """The slot's next window and stamp, for C to continue from and write back."""
    return np.array([window, stamp], dtype=np.uint64)


class _EntryArrays:
    """The native engine's record of a dir-mode run: arrays the C loops fill in place,
    the first ``n`` entries and ``n_io`` blocks done."""

    __slots__ = ("ends", "error", "io_ends", "io_starts", "n", "n_io", "starts")

    def __init__(self, entries: int, blocks_per_entry: int) -> None:
        self.starts = np.empty(entries, dtype=np.int64)
        self.ends = np.empty(entries, dtype=np.int64)
        room = min(entries * blocks_per_entry, max(blocks_per_entry, _IO_ROOM))
        self.io_starts = np.empty(room, dtype=np.int64)
        self.io_ends = np.empty(room, dtype=np.int64)
        self.n = self.n_io = 0
        self.error: BenchIOError | None = None

    def done(self) -> int:
        return self.n

    def count_as_done(self, count: int, until_ns: int) -> bool:
        for _ in range(count):
            now = perf_counter_ns()
            self.starts[self.n] = self.ends[self.n] = now
            self.n += 1
            if now > until_ns:
                return True
        return False

    def grow(self) -> None:
        """Twice the room for block instants (kept: the first ``n_io``)."""
        room = 2 * self.io_starts.size
        for name in ("io_starts", "io_ends"):
            old, new = getattr(self, name), np.empty(room, dtype=np.int64)
            new[: self.n_io] = old[: self.n_io]
            setattr(self, name, new)

    def batch(self) -> RawBatch:
        n, n_io = self.n, self.n_io
        return RawBatch(
            self.starts[:n], self.ends[:n], self.io_starts[:n_io], self.io_ends[:n_io], self.error
        )


def _metadata(record: _EntryArrays, job: Job, run: EntryRun, parents: ParentDirs) -> None:
    """mkdir, unlink, rmdir or lstat per entry, or ``-s 0``'s open + close: the entries of
    one parent dir per call (see the Python engine's ``_metadata``, ``_stat``, ``_files``)."""
    kind, until_ns = job.kind, job.until_ns
    calls = {
        MKDIRS: _native.OP_MKDIR,
        RMFILES: _native.OP_UNLINK,
        RMDIRS: _native.OP_RMDIR,
        STAT: _native.OP_LSTAT,
    }
    op, flags, mode = calls.get(kind, _native.OP_OPEN_CLOSE), 0, DIR_MODE
    if kind in (READ, WRITE):
        flags, mode = file_flags(job), FILE_MODE
    # --nodelerr: removing or looking at an entry that is gone already counts as done.
    tolerate = job.options.ignore_missing and kind in (STAT, RMFILES, RMDIRS)
    for dfd, leaves in entry_parents(record, run, parents, until_ns):
        first = 0
        while True:
            status, record.n, first, err = _native.entries_meta(
                op, dfd, leaves, first, until_ns, record.starts, record.ends, record.n,
                tolerate, flags, mode,
            )  # fmt: skip
            if status == _native.DONE:
                break
            if status == _native.BUDGET:
                return
            if status == _native.EXISTS:  # as elbencho: a real dir left there is reused
                reuse_dir(leaves[first], dfd)
                record.ends[record.n] = end = perf_counter_ns()
                record.n += 1
                if end > until_ns:
                    return
                first += 1
            elif status == _native.SYMLINK:
                raise symlink_error()
            else:
                raise OSError(err, os.strerror(err))


def _files(record: _EntryArrays, job: Job, run: EntryRun, parents: ParentDirs) -> None:
    """Open + whole-file blocks + close per entry, the files of one parent dir per call."""
    buf = job.buf
    assert buf is not None
    until_ns, writing = job.until_ns, job.kind == WRITE
    deadline = job.deadline_ns or 1 << 62
    stop = job.stop.flag if isinstance(job.stop, StopEvent) else None
    pool_state = _pool_state(buf.next_window, buf.next_stamp) if writing else None
    flags = file_flags(job)
    try:
        for dfd, leaves in entry_parents(record, run, parents, until_ns):
            first = 0
            while True:
                status, record.n, record.n_io, first, err, a, b, c = _native.entries_files(
                    dfd, leaves, first, until_ns, record.starts, record.ends, record.n, flags,
                    FILE_MODE, writing, run.size, run.block, record.io_starts, record.io_ends,
                    record.n_io, buf.read_mem, buf.pool, buf.window_words, len(buf.windows),
                    buf.stamps_per_block, pool_state, deadline, stop,
                )  # fmt: skip
                if status == _native.DONE:
                    break
                if status in (_native.BUDGET, _native.CUT):
                    return
                if status == _native.FULL:
                    record.grow()
                elif status == _native.ERRNO:  # open or close: the entry's own call
                    raise OSError(err, os.strerror(err))
                elif status == _native.BLOCK:
                    raise BlockError(err, os.strerror(err), c)
                else:
                    raise BlockError(errno.EIO, short_detail(a, b), c)
    finally:
        if pool_state is not None:
            buf.next_window, buf.next_stamp = int(pool_state[0]), int(pool_state[1])
