"""--fadv, --mmap with --madv, and --flock: how file-mode operations reach their files.

elbencho's meanings: ``--fadv`` gives posix_fadvise() hints on each file at the start of
each phase; ``--mmap`` maps each file (MAP_SHARED, writable in a write phase) and makes each
read a copy out of the mapping and each write a copy into it, ``--madv`` giving madvise()
hints on the mapping; ``--flock`` takes a POSIX lock (fcntl F_SETLKW: shared to read,
exclusive to write) on the operation's range or on the whole file before it, and lets go
after it, both inside the operation's time. Such runs go through the Python engine's
composed loop (:func:`aiobench.engines.python._composed`), which takes its way to the files
from :class:`Access`; the hints and mappings of a phase are made at its start, untimed
(:meth:`aiobench.engines.posix.PosixTargets.begin_phase`).

POSIX locks belong to the process: aiobench's threads never wait for each other's locks,
as elbencho's do not; another process (another MPI rank, another program) does wait.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Sequence

from aiobench.engines.base import IoOptions
from aiobench.engines.posix import fd_targets
from aiobench.plan.targets import Targets

# A positional transfer: (target index, the buffers, offset, read?) -> bytes moved.
Transfer = Callable[[int, Sequence[memoryview], int, bool], int]


class Access:
    """One run's way to its files (``transfer``), and the views it holds meanwhile."""

    def __init__(self, targets: Targets, options: IoOptions) -> None:
        opened = fd_targets(targets)
        self.views = [memoryview(m) if m is not None else memoryview(b"") for m in opened.maps]
        io = _mapped(self.views) if options.mmap else _positional(opened.fds)
        self.transfer = io if options.flock is None else _locked(io, opened.fds, options.flock)

    def close(self) -> None:
        for view in self.views:
            view.release()


def _positional(fds: Sequence[int]) -> Transfer:
    preadv, pwritev = os.preadv, os.pwritev

    def positional(i: int, data: Sequence[memoryview], off: int, read: bool) -> int:
        return preadv(fds[i], data, off) if read else pwritev(fds[i], data, off)

    return positional


def _mapped(views: Sequence[memoryview]) -> Transfer:
    def mapped(i: int, data: Sequence[memoryview], off: int, read: bool) -> int:
        view, done = views[i], 0
        for part in data:
            part = part if part.format == "B" else part.cast("B")
            at = off + done
            n = min(part.nbytes, max(len(view) - at, 0))
            if read:
                part[:n] = view[at : at + n]
            else:
                view[at : at + n] = part[:n]
            done += n
            if n < part.nbytes:
                break  # past the mapping's end: a short transfer
        return done

    return mapped


def _locked(io: Transfer, fds: Sequence[int], mode: str) -> Transfer:
    lockf, shared, exclusive, unlock = fcntl.lockf, fcntl.LOCK_SH, fcntl.LOCK_EX, fcntl.LOCK_UN
    full = mode == "full"

    def locked(i: int, data: Sequence[memoryview], off: int, read: bool) -> int:
        fd = fds[i]
        # (start 0, length 0: the whole file, however large it grows)
        length, start = (0, 0) if full else (sum(part.nbytes for part in data), off)
        lockf(fd, shared if read else exclusive, length, start)
        try:
            return io(i, data, off, read)
        finally:
            lockf(fd, unlock, length, start)

    return locked
