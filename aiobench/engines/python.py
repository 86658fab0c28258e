"""The Python engine, the reference: positional I/O and metadata calls, timed per operation.

Everything here runs in an executor thread, never on the event loop. :class:`PosixEngine`
issues ``os.preadv``/``os.pwritev`` (file mode) and, in dir mode, ``mkdir``/``open``/
``stat``/``unlink``/``rmdir`` relative to each entry's parent dir, reached from the open PATH
without following a symlink (:mod:`aiobench.engines.nofollow`). It is the reference of the
native engine (:mod:`aiobench.engines.native`), which shares its dir-mode walk and error
wording (:mod:`aiobench.engines.dirwalk`) and the error helpers of :mod:`~aiobench.engines.base`.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import time
from collections.abc import Callable, Iterable
from importlib import import_module
from itertools import repeat
from time import perf_counter_ns
from typing import TYPE_CHECKING, cast

from aiobench.engines.access import Access, copy_mapped
from aiobench.engines.base import (
    IoOptions,
    Job,
    ListRecord,
    RawBatch,
    mismatch_error,
    op_error,
    short_detail,
)
from aiobench.engines.buffers import SlotBuffer
from aiobench.engines.dirfiles import FilePrep
from aiobench.engines.dirwalk import BlockError, EntryLoop, entry_parents, file_flags, run_entries
from aiobench.engines.nofollow import ParentDirs, is_symlink, reuse_dir, symlink_error
from aiobench.engines.posix import FILE_MODE, PosixTargets, fds_of
from aiobench.engines.verify import Mismatch, check, pattern
from aiobench.kinds import MKDIRS, READ, RMDIRS, RMFILES, STAT, WRITE, PhaseKind
from aiobench.plan.dirmode import EntryRun
from aiobench.plan.pool import STAMP_SPACING
from aiobench.plan.randalgo import FAST
from aiobench.plan.workload import OpRun

if TYPE_CHECKING:
    import numpy as np

    from aiobench.errors import BenchIOError
    from aiobench.plan.targets import Targets


class PosixEngine(PosixTargets):
    """Real I/O from Python: one syscall per operation, timed around the syscall only."""

    name = "python"

    def begin_phase(
        self, targets: Targets, kind: PhaseKind, options: IoOptions
    ) -> BenchIOError | None:
        """Also load numpy now, before the clock: the loops compute with it (the stamps of
        big blocks, --verify's pattern, --rwmixpct, --blockvarpct's refill)."""
        import_module("numpy")
        return super().begin_phase(targets, kind, options)

    def run(self, job: Job) -> RawBatch:
        released = job.released()
        if released is None:
            return ListRecord().batch()  # the phase was stopped before it started
        job = released
        if job.buf is not None:
            job.buf.state.settle()  # (what a native run carried uses the slot's memory)
        if isinstance(job.ops, EntryRun):
            return run_entries(job, job.ops, ListRecord(), _python_loop(job.kind))
        ops = job.ops
        batch = ListRecord()
        opts = job.options
        plain = ops.mix is None and not opts.rate_bytes_per_s and opts.verify is None
        plain = plain and not opts.accessed and not opts.read_inline
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
    def _read(batch: ListRecord, job: Job, ops: OpRun) -> None:
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
    def _write(batch: ListRecord, job: Job, ops: OpRun) -> None:
        import numpy as np

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
        words_np, stamp_offsets = buf.words_np, np.arange(per_block, dtype=np.uint64)
        state = buf.state
        window, stamp = state.next_window, state.next_stamp
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
            state.next_window, state.next_stamp = window, stamp


class _Mismatch(Exception):
    def __init__(self, mismatch: Mismatch) -> None:
        self.mismatch = mismatch


def _composed(batch: ListRecord, job: Job, ops: OpRun) -> None:
    """Any file-mode run, its features composed per operation, as elbencho's LocalWorker
    combines the function pointers it picks once per phase.

    Per operation: (a) under a rate limit, wait for its scheduled start; (b) read or write
    (the phase's kind, or --rwmixpct's choice); (c) a write's data: the next stamped pool
    window, the --verify pattern or the --blockvarpct block; (d) after the op,
    --verifydirect's read back and the --verify check of what was read. Only the syscall
    is timed (with --readinline, the write and its read back together, as elbencho times
    its inline read); an operation that fails a check is not counted.

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
    inline = opts.read_inline
    ns_per_op = buf.block_size * 1_000_000_000 / rate if rate else 0.0
    start_ns, first_seq = job.schedule_start_ns, ops.first_seq
    reads: Iterable[bool] = repeat(job.kind == READ)
    if ops.mix is not None:
        reads = ops.mix.is_read(first_seq, len(ops)).tolist()
    # --blockvarpct: the slot's generator, its state handed back however the run ends.
    varies = salt is None and opts.block_var_pct and buf.windows
    fast = opts.block_var_algo == FAST
    refill: np.random.BitGenerator | None = None
    if varies:
        refill = buf.refill_generator() if fast else buf.algo_refill(opts.block_var_algo)
    next_data = _write_source(buf, opts, length, refill)
    all_fds = fds_of(job.targets)
    indexes = repeat(index) if isinstance(index, int) else index
    # --mmap, --flock: each transfer through aiobench.engines.access (else the syscall);
    # --readinline's read back is then part of the transfer (one lock, the same mapping).
    access = Access(job.targets, opts, read_view) if opts.accessed else None
    transfer = access.transfer if access is not None else None
    # The read back after the transfer: --verifydirect's (untimed), --readinline's (timed)
    # unless the transfer did it.
    apart = (read_back or inline) and not (inline and transfer is not None)
    try:
        for n, (i, off, read) in enumerate(zip(indexes, ops.offsets, reads, strict=False)):
            fd = all_fds[i]
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
            if transfer is None:
                got = preadv(fd, data, off) if read else pwritev(fd, data, off)
            else:
                got = transfer(i, data, off, read)
            end = clock()
            if got != length:
                raise _short_transfer(got, length)
            if apart and not read:
                got = preadv(fd, read_view, off)
                if inline:
                    end = clock()
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
    finally:
        if refill is not None and fast:  # (SlotBuffer.refill_generator's SFC64)
            buf.keep_refill(cast("np.random.SFC64", refill))
        if access is not None:
            access.close()


def _write_source(
    buf: SlotBuffer, opts: IoOptions, length: int, refill: np.random.BitGenerator | None
) -> Callable[[int], list[memoryview]]:
    """Where each write's data comes from (called with the write's offset, untimed);
    ``refill``: the --blockvarpct generator (None with a pct of 0)."""
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
        # --blockvarpct: one block, its first pct % refilled from SFC64 (or --blockvaralgo's
        # generator) before each write;
        # 0 writes the same block every time.
        block = [buf.windows[0][0][:length]]
        words = -(-length * pct // 100) // 8 if pct else 0
        target = buf.words_np[:words]
        draw = refill.random_raw if refill is not None else None

        def varied(_off: int) -> list[memoryview]:
            if words and draw is not None:
                target[:] = draw(words)
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


def _python_loop(kind: PhaseKind) -> EntryLoop[ListRecord]:
    if kind in (WRITE, READ):
        return _files
    return _stat if kind == STAT else _metadata


def python_entries(job: Job, run: EntryRun) -> RawBatch:
    """The Python engine's dir-mode run (the native engine's fallback, see its ``run``)."""
    return run_entries(job, run, ListRecord(), _python_loop(job.kind))


def _metadata(batch: ListRecord, job: Job, run: EntryRun, parents: ParentDirs) -> None:
    # Not aiofiles: aiofiles.os.stat awaits one executor round-trip per call. Measured on
    # the 2-core reference VM (ext4, 20,000 cached files): 11 k stats/s against 280 k/s
    # for a plain os.stat loop (0.04x). A run of calls per round-trip, as here, keeps up.
    clock, until_ns = perf_counter_ns, job.until_ns
    add_start, add_end = batch.starts.append, batch.ends.append
    # os.mkdir's default mode is 0o777 (DIR_MODE), so every call takes the same arguments.
    # No call follows a symlink in the last component: mkdir finds it there (EEXIST),
    # rmdir refuses it (ENOTDIR); unlink would remove the link itself, which is not a file
    # of the layout, so each name is looked at first (untimed) and a link is an error.
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
    unlinking = job.kind == RMFILES
    for dfd, leaves in entry_parents(batch, run, parents, until_ns):
        for name in leaves:
            if unlinking and is_symlink(name, dfd):
                raise symlink_error()
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


def _stat(batch: ListRecord, job: Job, run: EntryRun, parents: ParentDirs) -> None:
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


def _files(batch: ListRecord, job: Job, run: EntryRun, parents: ParentDirs) -> None:
    clock, until_ns = perf_counter_ns, job.until_ns
    deadline = job.deadline_ns or 1 << 62
    stopped = job.stop.is_set if job.stop is not None else (lambda: False)
    add_start, add_end = batch.starts.append, batch.ends.append
    io_start, io_end = batch.io_starts.append, batch.io_ends.append
    writing = job.kind == WRITE
    flags = file_flags(job)
    inline_stat, inline_read = job.options.stat_inline, writing and job.options.read_inline
    # --trunctosize, --preallocfile, --fadv, --mmap after each open (aiobench.engines.
    # dirfiles); --flock's lock around each block, --readinline's read back inside it (all
    # timed, as in elbencho's dir mode)
    prep = FilePrep(job.options, job.kind, run.file_bytes)
    prepare = prep.open if prep.wanted else None
    lock = job.options.flock
    lock_as, full = fcntl.LOCK_EX if writing else fcntl.LOCK_SH, lock == "full"
    size, block, at = run.size, run.block, run.start
    # (offset, length) of every block of a file (of its range from ``at``, a file shared
    # between threads: --sharesize); only the last one can be short.
    blocks = [(at + off, min(block, size - off)) for off in range(0, size, block)]
    transfer = os.pwritev if writing else os.preadv
    if writing and blocks:
        assert job.buf is not None
        next_block = job.buf.next_block
    if blocks and (inline_read or not writing):
        views = {length: _read_view(job.buf, length) for _, length in (blocks[0], blocks[-1])}
    open_, close, preadv = os.open, os.close, os.preadv
    if not blocks:  # -s 0: create (or open) and close, the classic metadata rate
        for dfd, leaves in entry_parents(batch, run, parents, until_ns):
            for name in leaves:
                add_start(clock())
                fd = open_(name, flags, FILE_MODE, dir_fd=dfd)
                if prepare is not None:
                    prepare(fd)
                if inline_stat:
                    _fstat_or_close(fd)
                close(fd)
                add_end(end := clock())
                if end > until_ns:
                    return
        return
    for dfd, leaves in entry_parents(batch, run, parents, until_ns):
        for name in leaves:
            add_start(clock())
            fd = open_(name, flags, FILE_MODE, dir_fd=dfd)
            if prepare is not None:
                prepare(fd)
            if inline_stat:
                _fstat_or_close(fd, prep)
            # --mmap: each block a copy to or from the file's mapping (with --readinline
            # pwrite and pread, as elbencho's pwriteAndReadWrapper: the mapping unused)
            mapped = None if inline_read else prep.view
            cut = False
            off = 0
            try:
                for off, length in blocks:
                    data = next_block(length) if writing else views[length]
                    io_start(clock())
                    if lock is not None:
                        span = (0, 0) if full else (length, off)  # (length, start)
                        fcntl.lockf(fd, lock_as, *span)
                    if mapped is None:
                        got = transfer(fd, data, off)
                        if inline_read and got == length:  # the block back, in its timing
                            got = preadv(fd, views[length], off)
                    else:
                        got = copy_mapped(mapped, data, off, not writing)
                    if lock is not None:
                        fcntl.lockf(fd, fcntl.LOCK_UN, *span)
                    io_end(now := clock())
                    if got != length:
                        raise _short(batch.io_ends, got, length)
                    if off + length < at + size and (now > deadline or stopped()):
                        cut = True  # time limit or signal inside a file: it stays unfinished
                        break
            except OSError as exc:
                prep.close()
                os.close(fd)
                raise BlockError(exc.errno or 0, exc.strerror or "", off) from None
            if mapped is not None:
                prep.close()  # (unmapped before the close, as elbencho)
            close(fd)
            if cut:
                return  # (the file's start is dropped with the unfinished entry)
            add_end(end := clock())
            if end > until_ns:
                return


def _fstat_or_close(fd: int, prep: FilePrep | None = None) -> None:
    """--statinline: fstat the file just opened (the entry's own call if it fails: the
    file is unmapped and closed and the error names fstat)."""
    try:
        os.fstat(fd)
    except OSError as exc:
        if prep is not None:
            prep.close()
        os.close(fd)
        raise OSError(exc.errno, f"fstat: {exc.strerror}") from None
