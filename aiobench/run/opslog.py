"""The operations log (``--opslog FILE``, ``--opsloglock``): one JSON line per operation.

elbencho's record, one line per operation once it ended: ``date`` (local time of its end,
``%FT%T.mmm%z``), ``worker_rank`` (the global thread rank), ``op_name``, ``entry_name``,
``offset``, ``length``, ``is_finished`` (always true: only ended operations are logged),
``is_error``; then aiobench's own: ``phase``, ``start_unix_ns`` (its start, ns since the
epoch), ``latency_ns`` and ``result`` (bytes moved, 0 for metadata calls, ``-errno`` for
the failed one; that line's ``latency_ns`` and ``start_unix_ns`` are null, engines record
no end of it).

Lines are made from a run's timings once the engine handed the run back
(:class:`~aiobench.engines.base.RawBatch`), in the slot's thread, outside the engine's
timed loop: no operation's latency includes the logging, and memory is bounded by one
chunk of :data:`CHUNK_LINES` lines. Each chunk goes out in one ``O_APPEND`` write (more if
the kernel takes it in pieces) under the process's lock, and with ``--opsloglock`` under an
exclusive ``flock`` of the file too, so that processes sharing the file (MPI ranks, hosts
on a shared filesystem) never interleave their lines.

Granularity. File mode: one line per block read or written (``pread``/``pwrite``; with
Linux AIO, ``aioread``/``aiowrite``; with --mmap, ``mmap_read``/``mmap_write``, copies
through the mapping), the targets being opened once before the phases.
Dir mode: one line per entry (``mkdirat``, ``fstatat``, ``unlinkat`` for files and dirs,
``write_file``/``read_file`` for a whole file: its open, its blocks and its close), and in
WRITE and READ one more line per block of each file (``pwrite``/``pread``; with --mmap,
``mmap_write``/``mmap_read``). Object storage:
one line per object or bucket request (``PutObject``, ``GetObject``, ...; a multipart
upload is one line).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import islice, repeat
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from aiobench.engines.base import RawBatch
from aiobench.errors import BenchIOError, ConfigError
from aiobench.kinds import MKDIRS, READ, RMDIRS, RMFILES, STAT, WRITE, PhaseKind
from aiobench.plan.dirmode import EntryRun
from aiobench.plan.workload import OpRun
from aiobench.render import outfiles
from aiobench.stats.recorders import as_numpy
from aiobench.text import printable

if TYPE_CHECKING:
    from aiobench.stats.recorders import Int64Array

OPTION = "--opslog"
T = TypeVar("T")
# Lines handed to the kernel in one write: ~1 MiB at ~250 bytes a line, so a run of
# 65,536 operations (the most one run holds) never has more than this in memory at once,
# and the lock is taken ~16 times for it, not once per line.
CHUNK_LINES = 4096
# elbencho's mode for the log (rw-rw-r--, before the umask).
LOG_MODE = 0o664

# Dir mode's entry operations by phase; the syscall where the entry is one.
_ENTRY_OPS = {
    MKDIRS: "mkdirat",
    STAT: "fstatat",
    RMFILES: "unlinkat",
    RMDIRS: "unlinkat",
    WRITE: "write_file",
    READ: "read_file",
}
# Object storage names its requests as the S3 API does.
_OBJECT_OPS = {
    MKDIRS: "CreateBucket",
    WRITE: "PutObject",
    READ: "GetObject",
    STAT: "HeadObject",
    RMFILES: "DeleteObject",
    RMDIRS: "DeleteBucket",
}
# --s3mix's kinds (aiobench.engines.s3.mixed.OP_NAMES)
_MIXED_OPS = {
    "GET": "GetObject",
    "PUT": "PutObject",
    "DELETE": "DeleteObject",
    "STAT": "HeadObject",
}


def checked_path(path: str) -> str:
    """Where ``--opslog``'s ``path`` leads (symlinks followed, as for the result files),
    if a log can be appended there: an existing regular file or a new one in an existing
    dir; otherwise a usage error naming the option and the file. Reads only."""
    shown = printable(path)
    place = outfiles.located(OPTION, path)
    if place.kind not in (outfiles.REGULAR, outfiles.NEW):
        # A device node, FIFO, socket or descriptor is never appended to (nor replaced).
        raise ConfigError(f"{OPTION}: {shown} is not a regular file")
    directory = os.path.dirname(place.real)
    if place.kind == outfiles.NEW and not os.path.isdir(directory):
        raise ConfigError(f"{OPTION}: directory of {shown} does not exist")
    target = directory if place.kind == outfiles.NEW else place.real
    if not os.access(target, os.W_OK):
        raise ConfigError(f"{OPTION}: cannot write to {printable(target)}")
    return place.real


@dataclass(slots=True)
class OpsLog:
    """The open log of this process; shared by every slot thread of every phase."""

    fd: int
    path: str  # as the user gave it (for messages)
    real: str  # where it leads (symlinks followed)
    lock_file: bool  # --opsloglock
    created: bool = False  # this run made the file (removed again if setup fails)
    # perf_counter_ns (CLOCK_MONOTONIC, the engines' clock) -> ns since the epoch.
    to_unix_ns: int = field(default_factory=lambda: time.time_ns() - time.perf_counter_ns())
    failure: str | None = None  # the first write that failed: later lines are dropped
    lines: int = 0  # lines written
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def open(cls, path: str, *, lock_file: bool) -> OpsLog:
        """Open (create) the log to append to; a usage error naming it if it cannot be."""
        real = checked_path(path)
        created = not os.path.lexists(real)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC
        try:
            # (O_NONBLOCK: a FIFO put in its place since the check fails instead of waiting)
            fd = os.open(real, flags | os.O_NONBLOCK, LOG_MODE)
        except OSError as exc:
            raise ConfigError(f"{OPTION}: {printable(path)}: {outfiles.reason(exc)}") from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ConfigError(f"{OPTION}: {printable(path)} is not a regular file")
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return cls(fd=fd, path=path, real=real, lock_file=lock_file, created=created)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def undo(self) -> None:
        """Setup failed elsewhere: close, and remove the file if this run made it and it is
        still empty."""
        fd = self.fd
        with contextlib.suppress(OSError):
            if self.created and fd >= 0:
                mine, there = os.fstat(fd), os.lstat(self.real)
                same = (mine.st_dev, mine.st_ino) == (there.st_dev, there.st_ino)
                if same and mine.st_size == 0:
                    os.unlink(self.real)  # (never the symlink the user named)
        self.close()

    def phase(
        self,
        kind: PhaseKind,
        name: str,
        paths: Sequence[str],
        *,
        objects: bool = False,
        mmap: bool = False,
    ) -> PhaseLog:
        """The writer of one phase's lines (``objects``: its entries are S3 objects;
        ``mmap``: the blocks are copies through a mapping, --mmap)."""
        return PhaseLog(self, kind, name, tuple(paths), objects, mmap)

    def append(self, lines: list[str]) -> None:
        """Write ``lines`` (each ending in a newline) at the end of the file, whole."""
        if not lines or self.failure is not None:
            return
        data = "".join(lines).encode("utf-8", "surrogateescape")
        with self._lock:
            if self.failure is not None or self.fd < 0:
                return
            try:
                if self.lock_file:
                    with outfiles.locked(self.fd):
                        self._write(data)
                else:
                    self._write(data)
            except OSError as exc:
                self.failure = f"{OPTION}: {printable(self.path)}: {outfiles.reason(exc)}"
                return
            self.lines += len(lines)

    def _write(self, data: bytes) -> None:
        """Append ``data``; if only part of it fits (a full filesystem), cut the file back
        to the last whole line of it and raise the error the rest got."""
        view = memoryview(data)
        written = 0
        while written < len(data):
            try:
                written += os.write(self.fd, view[written:])
            except OSError:
                if written:
                    self._cut_back(data, written)
                raise

    def _cut_back(self, data: bytes, written: int) -> None:
        # O_APPEND left the file offset at the end of our bytes; cut only if nothing was
        # appended after them (another process's lines are never cut).
        with contextlib.suppress(OSError):
            end = os.lseek(self.fd, 0, os.SEEK_CUR)
            if os.fstat(self.fd).st_size == end:
                whole = data.rfind(b"\n", 0, written) + 1
                os.ftruncate(self.fd, end - written + whole)


@dataclass(slots=True)
class _Columns:
    """A run's lines as columns: a list each, or one value for every line. A line's
    ``result`` is its ``length`` (bytes moved; 0 for a metadata call)."""

    ops: list[str] | str
    names: list[str] | str  # as JSON strings
    offsets: Sequence[int]
    lengths: list[int] | int
    starts: Int64Array
    ends: Int64Array


def _each(column: list[T] | T, count: int) -> Iterable[T]:
    return column if isinstance(column, list) else repeat(column, count)


def _dates(ends_unix_ns: Int64Array) -> list[str]:
    """elbencho's ``date`` of each instant: local time with milliseconds and the UTC
    offset, formatted once per distinct millisecond (a run lasts ~50 ms)."""
    ms, inverse = np.unique(ends_unix_ns // 1_000_000, return_inverse=True)
    texts = []
    for value in ms.tolist():
        second, milli = divmod(value, 1000)
        local = time.localtime(second)
        clock, zone = time.strftime("%Y-%m-%dT%H:%M:%S", local), time.strftime("%z", local)
        texts.append(f"{clock}.{milli:03d}{zone}")
    return [texts[i] for i in inverse.tolist()]


@dataclass(slots=True)
class PhaseLog:
    """One phase's lines: made from each run's batch (:meth:`record`)."""

    log: OpsLog
    kind: PhaseKind
    name: str
    paths: tuple[str, ...]
    objects: bool
    mmap: bool = False
    json_paths: list[str] = field(init=False)  # each PATH as a JSON string

    def __post_init__(self) -> None:
        self.json_paths = [json.dumps(path) for path in self.paths]

    def record(self, run: OpRun | EntryRun, raw: RawBatch, rank: int) -> None:
        """Log what ``raw`` says ``run``'s operations did (called in the slot's thread)."""
        if self.log.failure is not None:
            return
        columns = self._file_columns(run, raw) if isinstance(run, OpRun) else None
        if columns is None and isinstance(run, EntryRun):
            columns = self._entry_columns(run, raw)
        if columns is not None and columns.starts.size:
            self._emit(rank, columns)
        if raw.error is not None:
            self.log.append([self._error_line(run, raw, rank, raw.error)])

    def _emit(self, rank: int, columns: _Columns) -> None:
        """The lines of ``columns``, handed to the log a chunk at a time."""
        count = int(columns.starts.size)
        shift = self.log.to_unix_ns
        starts = (columns.starts + shift).tolist()
        latencies = (columns.ends - columns.starts).tolist()
        dates = _dates(columns.ends + shift)
        rank_op = f'", "worker_rank": {rank}, "op_name": "'
        phase = f', "is_finished": true, "is_error": false, "phase": "{self.name}"'
        rows = zip(
            dates,
            _each(columns.ops, count),
            _each(columns.names, count),
            columns.offsets,
            _each(columns.lengths, count),
            starts,
            latencies,
            strict=False,  # (a repeat() column is endless; the lists are ``count`` long)
        )
        while True:
            lines = [
                f'{{"date": "{date}{rank_op}{op}", "entry_name": {name}, "offset": {offset}, '
                f'"length": {length}{phase}, "start_unix_ns": {start}, '
                f'"latency_ns": {latency}, "result": {length}}}\n'
                for date, op, name, offset, length, start, latency in islice(rows, CHUNK_LINES)
            ]
            if not lines:
                return
            self.log.append(lines)

    def _error_line(
        self, run: OpRun | EntryRun, raw: RawBatch, rank: int, error: BenchIOError
    ) -> str:
        done = len(raw.ends)
        if isinstance(run, OpRun):
            op = self._file_op(run, done if done < len(run) else 0, raw.aio)
            length = run.length
        elif error.offset is not None and not self.objects and self.kind in (READ, WRITE):
            # (a block of the file failed)
            op = _file_ops(self.mmap, False)[0 if self.kind == READ else 1]
            length = min(run.block, max(run.size - (error.offset - run.start), 0))
        else:
            op = self._entry_op(run, done) if done < len(run) else self._entry_op(run, 0)
            length = 0
        record = {
            "date": _dates(np.array([time.time_ns()], dtype=np.int64))[0],
            "worker_rank": rank,
            "op_name": op,
            "entry_name": error.path,
            "offset": error.offset or 0,
            "length": length,
            "is_finished": True,
            "is_error": True,
            "phase": self.name,
            "start_unix_ns": None,
            "latency_ns": None,
            "result": -error.errno if error.errno else -errno.EIO,
            "error": str(error),
        }
        return json.dumps(record) + "\n"

    def _file_op(self, run: OpRun, k: int, aio: bool) -> str:
        reads = self.kind == READ
        if run.mix is not None:
            reads = bool(run.mix.is_read(run.first_seq + k, 1)[0])
        return _file_ops(self.mmap, aio)[0 if reads else 1]

    def _file_columns(self, run: OpRun, raw: RawBatch) -> _Columns:
        """File mode: a line per block read or written."""
        done = len(raw.ends)
        ops: list[str] | str = self._file_op(run, 0, raw.aio)
        if run.mix is not None:
            reads = run.mix.is_read(run.first_seq, done)
            ops = np.where(reads, *_file_ops(self.mmap, raw.aio)).tolist()
        index = run.path_index
        names: list[str] | str
        if isinstance(index, int):
            names = self.json_paths[index]
        else:
            names = [self.json_paths[i] for i in index[:done]]
        starts, ends = as_numpy(raw.starts), as_numpy(raw.ends)
        return _Columns(ops, names, run.offsets[:done], run.length, starts, ends)

    def _entry_op(self, run: EntryRun, k: int) -> str:
        if self.objects:
            if run.ops is not None:
                return _MIXED_OPS.get(run.ops[k], run.ops[k])
            return _OBJECT_OPS.get(self.kind, self.kind.value)
        return _ENTRY_OPS.get(self.kind, self.kind.value)

    def _entry_name(self, run: EntryRun, k: int) -> str:
        index, parent = run.parent_of(k)
        parts = [part for part in (parent, run.leaves[k]) if part]  # (a bucket: neither)
        return json.dumps(os.path.join(self.paths[index], *parts))

    def _entry_columns(self, run: EntryRun, raw: RawBatch) -> _Columns:
        """Dir mode: a line per entry and (files, not objects) one per block of it, each
        file's blocks before the file's own line."""
        starts, ends = raw.starts.tolist(), raw.ends.tolist()
        io_starts, io_ends = raw.io_starts.tolist(), raw.io_ends.tolist()
        per = run.blocks_per_entry if not self.objects and self.kind in (READ, WRITE) else 0
        block_op = _file_ops(self.mmap, False)[0 if self.kind == READ else 1]  # (depth 1)
        moved = run.size if self.kind in (READ, WRITE) else 0
        if moved and run.offsets is not None:  # (object storage's --rand: a block each)
            moved = min(run.block, run.size)
        ops: list[str] = []
        names: list[str] = []
        offsets: list[int] = []
        lengths: list[int] = []
        begun: list[int] = []
        ended: list[int] = []
        entries = len(ends)
        # (the blocks done of the entry a run stopped in count too: io_ends has them)
        cut = 1 if per and len(io_ends) > entries * per else 0
        for k in range(min(len(run), entries + cut)):
            name = self._entry_name(run, k)
            if per:
                first = k * per
                for j in range(first, min(first + per, len(io_ends))):
                    at = (j - first) * run.block
                    size = min(run.block, run.size - at)
                    ops.append(block_op)
                    names.append(name)
                    offsets.append(run.start + at)
                    lengths.append(size)
                    begun.append(io_starts[j])
                    ended.append(io_ends[j])
            if k < entries:
                ops.append(self._entry_op(run, k))
                names.append(name)
                offsets.append(run.offsets[k] if run.offsets is not None else run.start)
                lengths.append(moved)
                begun.append(starts[k])
                ended.append(ends[k])
        return _Columns(
            ops, names, offsets, lengths, np.array(begun, np.int64), np.array(ended, np.int64)
        )


def open_opslog(path: str | None, *, lock_file: bool) -> OpsLog | None:
    """The run's log if ``--opslog`` is given; a usage error naming it if it cannot be."""
    return None if path is None else OpsLog.open(path, lock_file=lock_file)


def undo_opslog(log: OpsLog | None) -> None:
    if log is not None:
        log.undo()


def _file_ops(mmap: bool, aio: bool) -> tuple[str, str]:
    """File mode's (read, write) names: the syscalls (Linux AIO's where the run went
    through it), or a copy through the mapping."""
    if mmap:
        return "mmap_read", "mmap_write"
    return ("aioread", "aiowrite") if aio else ("pread", "pwrite")
