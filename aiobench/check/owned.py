"""The check's own entries: made where no link can be planted first, and looked at again
before each run uses them, so a run never writes through a link someone else put there.

A file is made with ``O_CREAT | O_EXCL | O_NOFOLLOW`` (a name already there, a symlink
included, is refused), and the check keeps its inode (``st_dev``, ``st_ino``). Before a
run on it, and after, the name must still lead to that inode with one link, itself no
symlink; the engine then opens only the inode its probe saw (``Resolved.idents``), which
the check compares to its own. Anything else is a run-time error naming the entry.
"""

from __future__ import annotations

import errno
import os
import stat

from aiobench.errors import BenchIOError
from aiobench.plan.targets import FileId

FILE_MODE = 0o600  # as mkdtemp's directory: the check's files are no one else's business


def make_file(dir_fd: int, name: str, path: str) -> FileId:
    """Create the empty file ``name`` in ``dir_fd`` (shown as ``path``); its inode."""
    flags = os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_WRONLY | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, FILE_MODE, dir_fd=dir_fd)
    except FileExistsError:
        raise _there(path, name, dir_fd) from None
    except OSError as exc:
        raise BenchIOError.from_os(path, None, exc) from None
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    return st.st_dev, st.st_ino


def make_dir(dir_fd: int, name: str, path: str) -> FileId:
    """Create the empty directory ``name`` in ``dir_fd``; its inode."""
    try:
        os.mkdir(name, 0o700, dir_fd=dir_fd)
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileExistsError:
        raise _there(path, name, dir_fd) from None
    except OSError as exc:
        raise BenchIOError.from_os(path, None, exc) from None
    return st.st_dev, st.st_ino


def _there(path: str, name: str, dir_fd: int) -> BenchIOError:
    """The error for ``name`` found where the check was to make it."""
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except OSError:
        mode = 0
    what = "a symlink" if stat.S_ISLNK(mode) else "an entry"
    return BenchIOError(
        path=path,
        offset=None,
        errno=errno.EEXIST,
        detail=f"{what} the check did not make is there; not followed, not written",
    )


def verify(path: str, ident: FileId, *, directory: bool = False, size: int = 0) -> None:
    """``path`` is still the entry the check made (``ident``): no symlink, the same inode,
    a file with one link and at least ``size`` bytes; else :class:`BenchIOError`."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        detail = f"{exc.strerror}: removed while the check ran"
        raise BenchIOError(path=path, offset=None, errno=exc.errno or 0, detail=detail) from None
    if stat.S_ISLNK(st.st_mode):
        raise BenchIOError(
            path=path,
            offset=None,
            errno=errno.ELOOP,
            detail="a symlink was put in the place of the check's own entry; not followed",
        )
    if (st.st_dev, st.st_ino) != ident:
        raise BenchIOError(
            path=path,
            offset=None,
            errno=errno.EEXIST,
            detail="another entry (a hard link to another file?) was put in the place of "
            "the check's own; not written",
        )
    if directory:
        return
    if st.st_nlink != 1:
        raise BenchIOError(
            path=path,
            offset=None,
            errno=errno.EMLINK,
            detail=f"has {st.st_nlink} links: another name was linked to the check's file",
        )
    if st.st_size < size:
        raise BenchIOError(
            path=path,
            offset=st.st_size,
            errno=errno.EIO,
            detail=f"short: {st.st_size} of the {size} bytes the check wrote "
            "(truncated while it ran)",
        )
