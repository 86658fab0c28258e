"""The native engine: the Python engine's runs, each made by one C call without the GIL.

:class:`NativeEngine` has :class:`~aiobench.engines.python.PosixEngine`'s semantics: the
same bytes on disk, the same counts, the same errors, and the slot's buffer state (stamps,
pool window, SFC64 generator) advanced alike, so the two engines can take turns on one
slot. Its hot loops are in the C extension ``aiobench.engines._native`` (``_native.c``
beside this module): a whole file-mode run per call, and in dir mode the entries of one
parent dir per call, the walk to that dir (:class:`~aiobench.engines.nofollow.ParentDirs`)
and the wording of errors staying in Python (:func:`~aiobench.engines.python.run_entries`).
Every call takes the slot's state (``SlotBuffer.state``, a ``_native.Slot`` the C loops
advance in place) and one ``_native.Spec`` of what to run, made once per phase and slot in
file mode; :func:`_failure` words what every kind of call can end with. The extension is
optional: this module imports without it, :func:`available` says whether it is there,
:data:`build_error` why not.

The arrays the calls take and fill are the standard library's (``array("q")``, int64):
a plain run does not load numpy, whose import is a third of a small run's start.
"""

from __future__ import annotations

import errno
import os
from array import array
from importlib import import_module
from time import perf_counter_ns
from typing import TYPE_CHECKING, cast, overload

from aiobench.engines.base import (
    IoOptions,
    Job,
    RawBatch,
    mismatch_error,
    op_error,
    short_detail,
)
from aiobench.engines.buffers import SlotBuffer
from aiobench.engines.dirwalk import BlockError, entry_parents, file_flags, run_entries
from aiobench.engines.gate import StopEvent
from aiobench.engines.nofollow import ParentDirs, reuse_dir, symlink_error
from aiobench.engines.posix import DIR_MODE, FILE_MODE, PosixTargets, fd_targets, fds_of
from aiobench.engines.python import PosixEngine, python_entries
from aiobench.engines.verify import Mismatch
from aiobench.errors import BenchIOError
from aiobench.kinds import MKDIRS, READ, RMDIRS, RMFILES, STAT, WRITE, PhaseKind
from aiobench.plan.dirmode import EntryRun
from aiobench.plan.randalgo import FAST
from aiobench.plan.targets import Targets
from aiobench.plan.workload import OpRun

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

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

_NONE = array("q")
_ZERO = array("q", [0])
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
        self._python = PosixEngine()  # --blockvaralgo's runs (see _other_refill)

    def begin_phase(
        self, targets: Targets, kind: PhaseKind, options: IoOptions
    ) -> BenchIOError | None:
        """Also, where the phase's file-mode runs are the Python engine's (see :meth:`run`),
        load numpy now, before the clock: that engine computes with it."""
        if _other_refill(options) or options.accessed:
            import_module("numpy")
        return super().begin_phase(targets, kind, options)

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
        if isinstance(ops, OpRun) and (_other_refill(job.options) or job.options.accessed):
            # (C refills from SFC64 only; mappings and locks: aiobench.engines.access)
            return PosixEngine.run(self._python, job)
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
        opts = job.options
        if job.kind in (READ, WRITE) and (
            (not blocks and opts.stat_inline)
            or opts.fadvise
            or opts.flock is not None
            or opts.mmap
            or opts.size_files
            or opts.prealloc_files
        ):
            # (-s 0 --statinline: open, fstat, close; --fadv, --flock, --mmap,
            # --trunctosize, --preallocfile: in the Python loop)
            return python_entries(job, ops)
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
    import numpy as np  # (runs on several targets: their per-target counts loaded it)

    per_op = ops.path_array if ops.path_array is not None else np.asarray(index)
    return -1, np.asarray(fds, dtype=np.int32)[per_op]


def _offsets(ops: OpRun) -> array[int] | npt.NDArray[np.int64]:
    """The run's offsets as an int64 buffer."""
    if ops.offsets_array is not None:  # (the stream's, or a slice of it: C-contiguous)
        return ops.offsets_array
    offsets = ops.offsets
    if isinstance(offsets, range):  # (a sequential run's)
        out = _int64s(len(offsets))
        _native.fill_steps(out, offsets.start, offsets.step)
        return out
    return array("q", offsets)


def _int64s(n: int) -> array[int]:
    """``n`` int64 items for a call to fill (zeros: ~20x as fast as from bytes)."""
    return _ZERO * n


def _trimmed(values: array[int], n: int) -> array[int]:
    """``values`` cut to its first ``n`` items, in place (no copy)."""
    del values[n:]
    return values


def _other_refill(opts: IoOptions) -> bool:
    """--blockvaralgo other than fast with --blockvarpct: the Python engine's runs."""
    return bool(opts.block_var_pct) and opts.block_var_algo != FAST and opts.verify is None


def _queues(kind: PhaseKind, opts: IoOptions) -> bool:
    """Whether file-mode operations of ``kind`` can go through Linux AIO: plain reads and
    stamped writes (no pacing, pattern, check, block variance, mapping or lock to do
    between them, nor a read back)."""
    plain = not opts.rate_bytes_per_s and opts.verify is None and not opts.accessed
    plain = plain and not opts.read_inline
    return plain and (kind == READ or (kind == WRITE and opts.block_var_pct is None))


def _file_run(job: Job, ops: OpRun) -> RawBatch:
    """A file-mode run in one call: the Python engine's ``_composed`` loop, in C
    (``file_run``); with a depth above 1 or --poll, plain reads and stamped writes go
    through Linux AIO (``file_aio``: up to ``job.depth`` operations in flight, each timed
    from its submission to the reaping of its completion, the instants in completion order).
    After an operation ends past the budget, the operations submitted by then complete and
    are the run's done ones, so they are still the first of the run (the failing one
    excepted after an error). Past a run's budget (not the time limit, nor once a stop is
    asked) the queue stays full meanwhile: the run's next operations are submitted and stay
    in flight in the slot, carried to its next run, which starts with them
    (``run.after(done)``); a next call that does not (or the slot's close at the phase's
    end) waits for them and does not count them. A run done within its budget that more
    operations follow (``job.follows``) carries its last ones alike, a queue's worth."""
    buf = job.buf
    assert buf is not None
    spec = _file_spec(job, ops, buf)
    # Arrays of the run's own: the batch keeps them, the slot's next run fills others.
    n = len(ops)
    starts, ends = _int64s(n), _int64s(n)
    intended = _int64s(n) if spec.ns_per_op else None
    spec.starts, spec.ends, spec.intended = starts, ends, intended
    slot = cast("_native.Slot", buf.state)  # (made by the extension: it is built)
    queued = spec.depth > 1 or spec.poll or (_sleeps_at_one(job, ops) and not slot.synchronous)
    status = (_native.file_aio if queued else _native.file_run)(slot, spec)
    done = spec.done
    batch = RawBatch(_trimmed(starts, done), _trimmed(ends, done), aio=queued)
    if intended is not None:
        batch.intended = _trimmed(intended, done)
    if status > _native.BUDGET:  # (in file mode every other status is a failure)
        batch.error = _failure(status, spec, job, ops)
    return batch


def _sleeps_at_one(job: Job, ops: OpRun) -> bool:
    """Whether a run at depth 1 goes through Linux AIO too: plain direct reads and stamped
    writes of a slot with a core to spare, as fio's libaio at --iodepth 1. The slot sleeps in
    io_getevents instead of pread, and the device's worker may then run on its CPU: 4 KiB
    direct reads of a loop device, -t 1, 2-CPU VM: 25.9 k IOPS with pread, 30.8 k with AIO
    (medians of 8 interleaved rounds; the phase starting on quiet CPUs, see run.phases).
    A device that completes within io_submit, the thread staying on its CPU (zram, tmpfs),
    makes the slot go back to pread (``Slot.synchronous``): there AIO costs a second call
    per operation (zram, -t 1: 0.71x)."""
    opts = job.options
    return job.spare and opts.direct and ops.mix is None and _queues(job.kind, opts)


def _file_spec(job: Job, ops: OpRun, buf: SlotBuffer) -> _native.Spec:
    """The slot's spec for this run: what stays the same from run to run (made once per
    phase: kind, options, depth, length and --rwmixpct are its key), given this run's
    operations and budget."""
    key = (job.kind, job.options, job.depth, ops.length, ops.mix)
    spec = buf.run_spec
    if spec is None or spec.key != key:
        spec = buf.run_spec = _phase_spec(job, ops, buf, key)
    spec.fd, spec.fds = _targets(job, ops)
    spec.offsets = _offsets(ops)
    if ops.mix is not None:
        spec.mix_base = ops.mix.rank + ops.first_seq
    spec.first_seq = ops.first_seq
    spec.schedule_ns = job.schedule_start_ns
    spec.until_ns = job.until_ns
    spec.gate = None if job.gate is None else job.gate.word
    spec.stop = job.stop.flag if isinstance(job.stop, StopEvent) else None
    # (A gated run's deadline is not known yet: file_aio checks the gate's time limit.)
    before_limit = not job.deadline_ns or job.until_ns < job.deadline_ns
    spec.carry = before_limit and (job.stop is None or not job.stop.is_set())
    spec.follows = job.follows
    spec.pairs = job.spare
    return spec


def _phase_spec(job: Job, ops: OpRun, buf: SlotBuffer, key: object) -> _native.Spec:
    """The part of a file-mode spec that ``key`` fixes: kind, pacing, pattern, refill, depth."""
    opts, mix, length = job.options, ops.mix, ops.length
    reading = job.kind == READ
    rate, salt, pct = opts.rate_bytes_per_s, opts.verify, opts.block_var_pct
    var_words = -1
    if (not reading or mix is not None) and salt is None and pct is not None and buf.windows:
        var_words = -(-length * pct // 100) // 8 if pct else 0
    # Linux AIO: with ``depth`` slots' worth of read memory and windows (SlotBuffer's);
    # with --poll at a depth of 1 too (pread has no completion to poll for).
    queued = mix is None and _queues(job.kind, opts)
    depth = job.depth if queued else 1
    return _native.Spec(
        key=key,
        length=length,
        reading=reading,
        mix_pct=-1 if mix is None else mix.pct,
        # The same float as the Python loop's: the schedule comes out to the nanosecond.
        ns_per_op=buf.block_size * 1_000_000_000 / rate if rate else 0.0,
        verify=salt is not None,
        salt=salt or 0,
        verify_direct=opts.verify_direct,
        read_inline=opts.read_inline,
        var_words=var_words,
        depth=depth,
        poll=queued and opts.poll,
    )


@overload
def _failure(status: int, spec: _native.Spec, job: Job, ops: OpRun) -> BenchIOError: ...
@overload
def _failure(status: int, spec: _native.Spec, job: Job, ops: EntryRun) -> Exception: ...
def _failure(status: int, spec: _native.Spec, job: Job, ops: OpRun | EntryRun) -> Exception:
    """The error a C call's failure ``status`` stands for, worded as the Python engine
    words it: a file-mode run's error, or in dir mode what ``run_entries`` words (an
    OSError of the entry's own call, a :class:`BlockError` of one of its blocks)."""
    err = spec.err
    detail = os.strerror(err)
    if status == _native.SHORT:
        err, detail = errno.EIO, short_detail(spec.a, spec.b)
    if isinstance(ops, OpRun):
        if status == _native.MISMATCH:
            return mismatch_error(job, ops, spec.index, Mismatch(spec.a, spec.b, spec.c))
        if status == _native.SETUP:
            index = ops.path_index if isinstance(ops.path_index, int) else ops.path_index[0]
            detail = f"io_setup: {detail}"
            return BenchIOError(path=job.paths[index], offset=None, errno=err, detail=detail)
        return op_error(job, ops, spec.index, err, detail)  # ERRNO, SHORT
    if status == _native.SYMLINK:
        return symlink_error()
    if status == _native.ERRNO:  # open or close: the entry's own call
        return OSError(err, detail)
    if status == _native.FSTAT:  # --statinline's fstat: the entry's own call too
        return OSError(err, f"fstat: {detail}")
    return BlockError(err, detail, spec.c)  # BLOCK, SHORT


class _EntryArrays:
    """The native engine's record of a dir-mode run: arrays the C loops fill in place,
    the first ``n`` entries and ``n_io`` blocks done."""

    __slots__ = ("ends", "error", "io_ends", "io_starts", "n", "n_io", "starts")

    def __init__(self, entries: int, blocks_per_entry: int) -> None:
        self.starts = _int64s(entries)
        self.ends = _int64s(entries)
        room = min(entries * blocks_per_entry, max(blocks_per_entry, _IO_ROOM))
        self.io_starts = _int64s(room)
        self.io_ends = _int64s(room)
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
        """Twice the room for block instants, in place (what they hold is kept)."""
        for values in (self.io_starts, self.io_ends):
            values.extend(_int64s(len(values)))

    def batch(self) -> RawBatch:
        """The run's instants, in the record's own arrays (a record serves one run)."""
        n, n_io = self.n, self.n_io
        return RawBatch(
            _trimmed(self.starts, n),
            _trimmed(self.ends, n),
            _trimmed(self.io_starts, n_io),
            _trimmed(self.io_ends, n_io),
            self.error,
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
    flags, mode = (file_flags(job), FILE_MODE) if kind in (READ, WRITE) else (0, DIR_MODE)
    spec = _native.Spec(
        op=calls.get(kind, _native.OP_OPEN_CLOSE),
        flags=flags,
        mode=mode,
        # --nodelerr: removing or looking at an entry that is gone already counts as done.
        tolerate=job.options.ignore_missing and kind in (STAT, RMFILES, RMDIRS),
        until_ns=until_ns,
        starts=record.starts,
        ends=record.ends,
    )
    for dfd, leaves in entry_parents(record, run, parents, until_ns):
        spec.dfd, spec.leaves, spec.first = dfd, leaves, 0
        while True:
            spec.n = record.n
            status = _native.entries_meta(spec)
            record.n = spec.n
            if status == _native.DONE:
                break
            if status == _native.BUDGET:
                return
            if status != _native.EXISTS:
                raise _failure(status, spec, job, run)
            # As elbencho: a real dir left there is reused.
            reuse_dir(leaves[spec.first], dfd)
            record.ends[record.n] = end = perf_counter_ns()
            record.n += 1
            if end > until_ns:
                return
            spec.first += 1


def _files(record: _EntryArrays, job: Job, run: EntryRun, parents: ParentDirs) -> None:
    """Open + whole-file blocks + close per entry, the files of one parent dir per call."""
    buf = job.buf
    assert buf is not None
    slot = cast("_native.Slot", buf.state)
    until_ns = job.until_ns
    spec = _native.Spec(
        flags=file_flags(job),
        mode=FILE_MODE,
        reading=job.kind == READ,
        read_inline=job.options.read_inline,
        stat_inline=job.options.stat_inline,
        size=run.size,
        block=run.block,
        start=run.start,
        until_ns=until_ns,
        deadline_ns=job.deadline_ns or 1 << 62,
        stop=job.stop.flag if isinstance(job.stop, StopEvent) else None,
        starts=record.starts,
        ends=record.ends,
        io_starts=record.io_starts,
        io_ends=record.io_ends,
    )
    for dfd, leaves in entry_parents(record, run, parents, until_ns):
        spec.dfd, spec.leaves, spec.first = dfd, leaves, 0
        while True:
            spec.n, spec.n_io = record.n, record.n_io
            status = _native.entries_files(slot, spec)
            record.n, record.n_io = spec.n, spec.n_io
            if status == _native.DONE:
                break
            if status in (_native.BUDGET, _native.CUT):
                return
            if status != _native.FULL:
                raise _failure(status, spec, job, run)
            record.grow()
            spec.io_starts, spec.io_ends = record.io_starts, record.io_ends
