"""--fadv, --mmap with --madv, and --flock: how file-mode operations reach their files.

elbencho's meanings: ``--fadv`` gives posix_fadvise() hints on each file at the start of
each phase; ``--mmap`` maps each file (MAP_SHARED, writable in a write phase) and makes each
read a copy out of the mapping and each write a copy into it, ``--madv`` giving madvise()
hints on the mapping; ``--flock`` takes a POSIX lock (fcntl F_SETLKW: shared to read,
exclusive to write) on the operation's range or on the whole file before it, and lets go
after it, both inside the operation's time. With ``--readinline`` a write and its read
back are one transfer here, under one lock, through the descriptor even with ``--mmap``
(elbencho's ``pwriteAndReadWrapper`` replaces the write the mapping chose, leaving the
mapping unused in that phase). Such runs go through the
Python engine's composed loop (:func:`aiobench.engines.python._composed`), which takes its
way to the files from :class:`Access`; the hints and mappings of a phase are made at its
start, untimed (:meth:`aiobench.engines.posix.PosixTargets.begin_phase`). Dir mode's files:
:mod:`aiobench.engines.dirfiles`.

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
    """One run's way to its files (``transfer``), and the views it holds meanwhile.

    ``read_back``: with --readinline, the buffers each write's block is read back into,
    inside the write's transfer (its result is the read's, as elbencho's)."""

    def __init__(
        self, targets: Targets, options: IoOptions, read_back: Sequence[memoryview] = ()
    ) -> None:
        opened = fd_targets(targets)
        self.views = [memoryview(m) if m is not None else memoryview(b"") for m in opened.maps]
        mapped = options.mmap and not options.read_inline  # (elbencho: pwrite and pread)
        io = _mapped(self.views) if mapped else _positional(opened.fds)
        if options.read_inline:
            io = _inline(io, read_back)
        self.transfer = io if options.flock is None else _locked(io, opened.fds, options.flock)

    def close(self) -> None:
        for view in self.views:
            view.release()


def _positional(fds: Sequence[int]) -> Transfer:
    preadv, pwritev = os.preadv, os.pwritev

    def positional(i: int, data: Sequence[memoryview], off: int, read: bool) -> int:
        return preadv(fds[i], data, off) if read else pwritev(fds[i], data, off)

    return positional


def copy_mapped(view: memoryview, data: Sequence[memoryview], off: int, read: bool) -> int:
    """One operation through a mapping (``view``, bytes): ``data`` copied from it at ``off``
    (``read``) or into it; what would reach past its end is not copied (a short transfer:
    never a load or store past the file's end, which is a SIGBUS)."""
    done = 0
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


def _mapped(views: Sequence[memoryview]) -> Transfer:
    def mapped(i: int, data: Sequence[memoryview], off: int, read: bool) -> int:
        return copy_mapped(views[i], data, off, read)

    return mapped


def _inline(io: Transfer, read_back: Sequence[memoryview]) -> Transfer:
    """--readinline: each write followed by the read of its block, the same way; a short
    write is not read back."""
    length = sum(part.nbytes for part in read_back)

    def inline(i: int, data: Sequence[memoryview], off: int, read: bool) -> int:
        got = io(i, data, off, read)
        if read or got != length:
            return got
        return io(i, read_back, off, True)

    return inline


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
