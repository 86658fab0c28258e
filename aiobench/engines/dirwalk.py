"""Dir mode's walk shared by the Python and the native engine: each entry's parent dir
reached without following a symlink, entries run per parent, errors worded once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import TypeVar

from aiobench.engines.base import EntryRecord, Job, RawBatch
from aiobench.engines.nofollow import ParentDirs, WalkError, explain
from aiobench.engines.posix import fds_of
from aiobench.errors import BenchIOError
from aiobench.kinds import RMDIRS, RMFILES, STAT, WRITE
from aiobench.plan.dirmode import EntryRun

R = TypeVar("R", bound=EntryRecord)


# One kind of dir-mode loop (files, stat, the other metadata calls) of one engine.
EntryLoop = Callable[[R, Job, EntryRun, ParentDirs], None]


def run_entries(job: Job, run: EntryRun, record: R, loop: EntryLoop[R]) -> RawBatch:
    """Dir mode: one metadata call, or open + whole-file I/O + close, per entry.

    Every call is relative to the entry's parent dir, reached without following a symlink
    (:class:`~aiobench.engines.nofollow.ParentDirs`), on the entry's last name component only.
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
    # (--readinline reads each block back through the same fd, --mmap maps it shared and
    # writable: read-write then, as elbencho always opens them.)
    writes = os.O_RDWR if job.options.read_inline or job.options.mmap else os.O_WRONLY
    flags = (os.O_CREAT | writes) if job.kind == WRITE else os.O_RDONLY
    # O_NOFOLLOW: a symlink at the file's name fails with ELOOP instead of being opened.
    return flags | os.O_CLOEXEC | os.O_NOFOLLOW | (os.O_DIRECT if job.options.direct else 0)
