"""Dir mode's work on each file right after its open: --trunctosize, --preallocfile, --fadv,
and --mmap with --madv, in elbencho's order (its ``dirModeOpenAndPrepFile``).

All of it is inside the file's time, as in elbencho. The sizes are the file's whole length
(:attr:`~aiobench.plan.dirmode.EntryRun.file_bytes`: of a file shared between threads, the
whole file, which every thread sizes and maps). A mapping is never longer than the file:
elbencho maps ``-s`` bytes whatever the file holds, and a copy past the file's end dies of
SIGBUS; here such a copy is short (:func:`aiobench.engines.access.copy_mapped`), an I/O
error naming the file and the offset. Writes cannot reach past a mapping: the config
refuses ``-w --mmap`` in dir mode without --trunctosize or --preallocfile.
"""

from __future__ import annotations

import contextlib
import mmap
import os

from aiobench.engines.base import IoOptions
from aiobench.engines.posix import FADVICE, MADVICE
from aiobench.kinds import READ, PhaseKind

_EMPTY = memoryview(b"")  # the view of a file with nothing to map: every copy is short


class FilePrep:
    """One run's preparation of each file it opens (``open``), and its undoing before the
    file's close (``close``); ``view`` is the open file's mapping under --mmap."""

    def __init__(self, options: IoOptions, kind: PhaseKind, file_bytes: int) -> None:
        self.truncate = options.size_files
        self.prealloc = options.prealloc_files and file_bytes > 0  # (EINVAL for 0 bytes)
        self.advice = [FADVICE[hint] for hint in options.fadvise]
        self.map = options.mmap and file_bytes > 0
        self.madvice = [MADVICE[hint] for hint in options.madvise]
        self.prot = mmap.PROT_READ if kind == READ else mmap.PROT_READ | mmap.PROT_WRITE
        self.file_bytes = file_bytes
        self.wanted = bool(self.truncate or self.prealloc or self.advice or self.map)
        self.view: memoryview | None = None
        self._mapping: mmap.mmap | None = None

    def open(self, fd: int) -> None:
        """Size, hint and map the file just opened at ``fd``; on failure the file is closed
        and the OSError names the call that failed."""
        step = "ftruncate"
        try:
            if self.truncate:
                os.ftruncate(fd, self.file_bytes)
            if self.prealloc:
                step = "posix_fallocate"
                os.posix_fallocate(fd, 0, self.file_bytes)
            step = "posix_fadvise"
            for hint in self.advice:
                os.posix_fadvise(fd, 0, 0, hint)
            if self.map:
                step = "mmap"
                mapping = self._map(fd)
                step = "madvise"
                for hint in self.madvice:
                    if mapping is not None:
                        mapping.madvise(hint)
        except OSError as exc:
            self.close()
            os.close(fd)
            detail = f"{step}: {exc.strerror or os.strerror(exc.errno or 0)}"
            raise OSError(exc.errno, detail) from None

    def _map(self, fd: int) -> mmap.mmap | None:
        # (A file shorter than its length, read: mapped as far as it goes; sized files are
        # their length already.)
        length = min(self.file_bytes, os.fstat(fd).st_size)
        if not length:
            self.view = _EMPTY
            return None
        self._mapping = mmap.mmap(fd, length, flags=mmap.MAP_SHARED, prot=self.prot)
        self.view = memoryview(self._mapping)
        return self._mapping

    def close(self) -> None:
        """Unmap the file's mapping (before its close, as elbencho)."""
        if self.view is not None and self.view is not _EMPTY:
            self.view.release()
        self.view = None
        if self._mapping is not None:
            with contextlib.suppress(BufferError):
                self._mapping.close()
            self._mapping = None
