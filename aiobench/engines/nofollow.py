"""Dir mode's way below PATH: each component is opened or looked at without following a symlink.

A symlink planted where a generated dir or file should be (``PATH/r0 -> /elsewhere``) would
otherwise have the benchmark write and delete outside PATH. So the engine reaches each
entry's parent dir from the PATH's fd one component at a time with
``O_NOFOLLOW | O_DIRECTORY`` and calls ``mkdir``/``open``/``stat``/``unlink``/``rmdir`` on
the last component only, relative to that parent. PATH itself, named by the user, may be a
symlink. A symlink found on the way is reported as ``ELOOP`` with
:data:`~aiobench.plan.dirmode.SYMLINK`.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence

from aiobench.plan.dirmode import SYMLINK

DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def symlink_error() -> OSError:
    return OSError(errno.ELOOP, SYMLINK)


def is_symlink(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def explain(exc: OSError, name: str, dir_fd: int) -> OSError:
    """``exc`` from a call on ``name`` in ``dir_fd``, or the symlink there that caused it.

    With no-follow semantics a symlink shows up as ELOOP (``open``), ENOTDIR (``open`` with
    ``O_DIRECTORY``, ``rmdir``) or EEXIST (``mkdir``); only then is the entry looked at.
    """
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EEXIST) and is_symlink(name, dir_fd):
        return symlink_error()
    return exc


def reuse_dir(name: str, dir_fd: int) -> None:
    """After ``mkdir`` found ``name`` there: reuse it only if it is a real dir.

    As elbencho, an existing dir of the layout is reused; a symlink (even to a dir) or a
    file is an error.
    """
    mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    if stat.S_ISLNK(mode):
        raise symlink_error()
    if not stat.S_ISDIR(mode):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST))


class WalkError(Exception):
    """Reaching a parent dir failed at ``name`` (relative to the PATH): a plain carrier of
    the errno and text, holding no frame (see ``SlotBuffer.close``)."""

    def __init__(self, name: str, errno: int, detail: str) -> None:
        super().__init__(name, errno, detail)
        self.name = name
        self.errno = errno
        self.detail = detail


class ParentDirs:
    """The open parent dir of the entries being handled, reached from the PATHs' fds.

    Consecutive entries share a parent (runs are dir-major), so it stays open until the
    parent changes. The dirs above it (``r0`` of ``r0/d0``) stay open until :meth:`close`,
    so a new parent costs one ``open`` and one ``close``. The PATH fds belong to the
    caller. (O_PATH: the fds only anchor ``*at`` calls, and cost less to open.)
    """

    def __init__(self, roots: Sequence[int], *, missing_ok: bool = False) -> None:
        """``missing_ok``: a parent that is not there gives -1 instead of an error."""
        self.roots = roots
        self.missing_ok = missing_ok
        self.index, self.parent = -1, ""  # the parent open now, below PATH ``index``
        self.fd = -1  # its fd, unless the parent is the PATH itself
        self.above: dict[tuple[int, str], int] = {}

    def open(self, index: int, parent: str) -> int:
        """The fd of ``parent`` (``"r0/d1"``; ``""`` = the PATH itself) below PATH ``index``."""
        # Once per new parent, which with few files per dir is often: kept lean.
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        self.index, self.parent = index, parent
        if not parent:
            return self.roots[index]
        try:
            self.fd = self._walk(index, parent)
        except WalkError as exc:
            if self.missing_ok and exc.errno == errno.ENOENT:
                return -1
            raise
        return self.fd

    def current(self, index: int, parent: str) -> int | None:
        """The fd of ``parent`` below PATH ``index`` if it is the one open now, else None."""
        if (self.index, self.parent) != (index, parent):
            return None
        fd = self.fd if parent else self.roots[index]
        return fd if fd >= 0 else None

    def _walk(self, index: int, path: str) -> int:
        head, _, tail = path.rpartition("/")
        if head:
            at = self.above.get((index, head), -1)
            if at < 0:
                at = self.above[(index, head)] = self._walk(index, head)
        else:
            at = self.roots[index]
        try:
            return os.open(tail, DIR_FLAGS, dir_fd=at)
        except OSError as exc:
            cause = explain(exc, tail, at)
            raise WalkError(path, cause.errno or 0, cause.strerror or "") from None

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        self.index = -1
        while self.above:
            os.close(self.above.popitem()[1])
