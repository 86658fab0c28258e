"""The POSIX side every file engine shares: preparing, syncing and rank dirs of open targets.

An engine (:class:`~aiobench.engine.Engine`) owns the syscalls made on its targets; the
phase runner and the housekeeping blocks only say what should happen. The Python and the
native engine issue their timed I/O differently but prepare, sync and lay out rank dirs
the same way, through this class.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from aiobench.errors import BenchIOError
from aiobench.nofollow import explain, reuse_dir

if TYPE_CHECKING:
    from aiobench.engine import IoOptions

# Mode of the dirs and files dir mode creates (less the umask), as mkdir(1) and touch(1).
DIR_MODE = 0o777
FILE_MODE = 0o666


def _syncfs(fd: int) -> None:
    """syncfs(2): write back the filesystem holding ``fd`` (os has no binding)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if libc.syncfs(fd) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


class PosixTargets:
    """Untimed work on open targets (file or dir fds, with the paths they were opened at)."""

    def slot_depth(self, kind: str, options: IoOptions, iodepth: int, *, dir_mode: bool) -> int:
        """How many operations one slot keeps in flight: 1 here, so a thread runs
        ``iodepth`` slots, one executor thread each; an engine that queues operations
        asynchronously runs one slot per thread with up to ``iodepth`` in flight."""
        return 1

    def prepare_files(
        self,
        fds: Sequence[int],
        paths: Sequence[str],
        sizes: Sequence[int],
        *,
        trunc: bool,
        trunctosize: bool,
        prealloc: bool,
    ) -> BenchIOError | None:
        """Before a write phase: --trunc, --trunctosize, --preallocfile, in that order."""
        for fd, path, size in zip(fds, paths, sizes, strict=True):
            step = "ftruncate"
            try:
                if trunc:
                    os.ftruncate(fd, 0)
                if trunctosize:
                    os.ftruncate(fd, size)
                if prealloc:
                    step = "posix_fallocate"
                    os.posix_fallocate(fd, 0, size)
            except OSError as exc:
                detail = f"{step}: {exc.strerror or os.strerror(exc.errno or 0)}"
                return BenchIOError(path=path, offset=0, errno=exc.errno or 0, detail=detail)
        return None

    def rank_dirs(
        self,
        fds: Sequence[int],
        paths: Sequence[str],
        dirs: Sequence[tuple[int, str]],
        *,
        remove: bool,
        missing_ok: bool,
    ) -> BenchIOError | None:
        """Create (or with ``remove`` remove) the ``(path index, name)`` dirs, names of one
        component relative to their PATH. An existing dir is reused (a real dir only, never
        a symlink); with ``missing_ok`` (--nodelerr) a missing one is fine on removal."""
        index, name = 0, ""
        try:
            for index, name in dirs:
                if not remove:
                    try:
                        os.mkdir(name, DIR_MODE, dir_fd=fds[index])
                    except FileExistsError:
                        reuse_dir(name, fds[index])
                else:
                    with contextlib.suppress(*((FileNotFoundError,) if missing_ok else ())):
                        os.rmdir(name, dir_fd=fds[index])
        except OSError as exc:
            cause = explain(exc, name, fds[index])  # rmdir of a symlink: ENOTDIR
            return BenchIOError.from_os(os.path.join(paths[index], name), None, cause)
        return None

    def sync(self, fds: Sequence[int], paths: Sequence[str]) -> None:
        """Write back each filesystem (or block device) of the targets once; raises
        :class:`~aiobench.errors.BenchIOError`."""
        seen: set[int] = set()
        for fd, path in zip(fds, paths, strict=True):
            st = os.fstat(fd)
            key = st.st_rdev if st.st_rdev else st.st_dev
            if key in seen:
                continue
            seen.add(key)
            try:
                if st.st_rdev:
                    os.fsync(fd)  # a block device: its own buffers
                else:
                    _syncfs(fd)
            except OSError as exc:
                raise BenchIOError(
                    path=path, offset=0, errno=exc.errno or 0, detail=f"sync: {exc.strerror}"
                ) from None
