"""The check's own directory inside DIR: checking DIR, making the directory, probing it
(O_DIRECT, free space, the device), and removing exactly what the check created.

The directory is made by :func:`tempfile.mkdtemp` (a new, unique name, mode 0700), so
nothing of the user's is inside it; the check's entries are made in it never through a
link, and checked before each run to be still its own (:mod:`aiobench.check.owned`).
Cleanup removes only the names the check gave its entries, each through its parent's
descriptor without following a symlink and only while it is the inode the check made,
then the directories; whatever else is found there stays, and the caller is told what.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import tempfile
from dataclasses import dataclass, field

from aiobench.check import owned
from aiobench.errors import BenchIOError, ConfigError
from aiobench.plan.targets import FileId
from aiobench.text import printable

PREFIX = ".aiobench-check-"
FILE_NAMES = ("cal.dat", "test.dat", "direct.probe")  # (the probe's file lives for an instant)
METADATA_DIR = "meta"
# The metadata runs' files: dir mode with -n 0 puts thread r's file j at PATH/r<r>-f<j>.
_METADATA_FILE = re.compile(r"r0-f(0|[1-9][0-9]*)")


def check_dir(path: str) -> None:
    """DIR exists, is a directory (or a symlink to one) and can take new entries; else a
    usage error naming it."""
    shown = printable(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ConfigError(f"DIR: {shown} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"DIR: {shown}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"DIR: {shown} is not a directory")
    if os.statvfs(path).f_flag & os.ST_RDONLY:
        raise ConfigError(f"DIR: {shown} is on a read-only filesystem")
    if not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError(f"DIR: {shown}: no permission to create entries there")


def free_bytes(path: str) -> int:
    """What an unprivileged writer may still use on DIR's filesystem."""
    vfs = os.statvfs(path)
    return vfs.f_bavail * vfs.f_frsize


@dataclass(slots=True)
class WorkDir:
    """The check's directory and what it made there; :meth:`remove` undoes it."""

    parent: str
    path: str = ""
    metadata_files: int = 0  # the most files a metadata run of the check was given
    left: list[str] = field(default_factory=list)  # what remove() found and kept
    made: dict[str, FileId] = field(default_factory=dict)  # its entries, by name ("" = itself)
    fd: int = -1  # the directory (O_PATH): the check's entries are made in it

    def create(self) -> str:
        self.path = tempfile.mkdtemp(prefix=PREFIX, dir=self.parent)
        self.fd = os.open(self.path, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        st = os.fstat(self.fd)
        self.made[""] = (st.st_dev, st.st_ino)
        return self.path

    def file(self, name: str) -> str:
        assert name in FILE_NAMES or name == METADATA_DIR
        return os.path.join(self.path, name)

    def make_file(self, name: str) -> str:
        """Make the check's empty file ``name`` (never through a link); its path."""
        where = self.file(name)
        self.made[name] = owned.make_file(self.fd, name, where)
        return where

    def metadata_dir(self) -> str:
        """The metadata runs' PATH, made on first use (empty, a real directory)."""
        where = self.file(METADATA_DIR)
        if METADATA_DIR not in self.made:
            self.made[METADATA_DIR] = owned.make_dir(self.fd, METADATA_DIR, where)
        return where

    def verify(self, name: str, size: int = 0) -> None:
        """The check's directory and its entry ``name`` are still the ones it made (see
        :mod:`aiobench.check.owned`); else :class:`~aiobench.errors.BenchIOError`."""
        owned.verify(self.path, self.made[""], directory=True)
        owned.verify(self.file(name), self.made[name], directory=name == METADATA_DIR, size=size)

    def ident(self, name: str) -> FileId:
        return self.made[name]

    def remove_file(self, name: str) -> None:
        """Remove the check's file ``name``, once it is checked to be still its own."""
        self.verify(name)
        try:
            os.unlink(name, dir_fd=self.fd)
        except OSError as exc:
            raise BenchIOError.from_os(self.file(name), None, exc) from None
        del self.made[name]

    def probe_direct(self) -> bool:
        """Whether files here open with O_DIRECT (a filesystem without it says EINVAL)."""
        name = "direct.probe"
        flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_DIRECT | os.O_NOFOLLOW
        try:
            fd = os.open(name, flags, 0o600, dir_fd=self.fd)
        except OSError as exc:
            if exc.errno in (errno.EINVAL, errno.EOPNOTSUPP):
                return False
            raise
        st = os.fstat(fd)
        os.close(fd)
        self.made[name] = (st.st_dev, st.st_ino)
        self.remove_file(name)
        return True

    def remove(self) -> None:
        """Remove the check's files and directories; what else is there stays (in
        :attr:`left`), a name that no longer leads to what the check made too. Never
        raises: a cleanup that fails says so through :attr:`left`."""
        if not self.path:
            return
        try:
            top = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                self.left.append(f"{printable(self.path)} ({exc.strerror})")
            self._close()
            return
        try:
            if not self._same(top, ""):
                self.left.append(f"{printable(self.path)} (not the directory the check made)")
                return
            for name in FILE_NAMES:
                self._unlink(top, name)
            self._remove_metadata(top)
        finally:
            os.close(top)
            self._close()
        try:
            os.rmdir(self.path)
        except OSError as exc:
            self.left.append(f"{printable(self.path)} ({exc.strerror})")

    def _close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def _same(self, fd: int, name: str) -> bool:
        st = os.fstat(fd)
        return self.made.get(name) == (st.st_dev, st.st_ino)

    def _unlink(self, dir_fd: int, name: str) -> None:
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return
        except OSError as exc:
            self.left.append(f"{printable(os.path.join(self.path, name))} ({exc.strerror})")
            return
        if self.made.get(name) != (st.st_dev, st.st_ino):
            self.left.append(
                f"{printable(os.path.join(self.path, name))} (not the file the check made)"
            )
            return
        try:
            os.unlink(name, dir_fd=dir_fd)
        except FileNotFoundError:
            pass
        except OSError as exc:
            self.left.append(f"{printable(os.path.join(self.path, name))} ({exc.strerror})")

    def _remove_metadata(self, top: int) -> None:
        try:
            fd = os.open(METADATA_DIR, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=top)
        except FileNotFoundError:
            return
        except OSError as exc:
            self.left.append(f"{printable(os.path.join(self.path, METADATA_DIR))} ({exc.strerror})")
            return
        try:
            if not self._same(fd, METADATA_DIR):
                self.left.append(
                    f"{printable(os.path.join(self.path, METADATA_DIR))} (not the directory "
                    "the check made)"
                )
                return
            for name in os.listdir(fd):
                found = _METADATA_FILE.fullmatch(name)
                if found and int(found.group(1)) < self.metadata_files:
                    self._unlink_entry(fd, name)
        finally:
            os.close(fd)
        try:
            os.rmdir(METADATA_DIR, dir_fd=top)
        except OSError as exc:
            self.left.append(f"{printable(os.path.join(self.path, METADATA_DIR))} ({exc.strerror})")

    def _unlink_entry(self, dir_fd: int, name: str) -> None:
        try:
            os.unlink(name, dir_fd=dir_fd)
        except FileNotFoundError:
            pass
        except OSError as exc:
            where = os.path.join(self.path, METADATA_DIR, name)
            self.left.append(f"{printable(where)} ({exc.strerror})")
