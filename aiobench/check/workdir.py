"""The check's own directory inside DIR: checking DIR, making the directory, probing it
(O_DIRECT, free space, the device), and removing exactly what the check created.

The directory is made by :func:`tempfile.mkdtemp` (a new, unique name, mode 0700), so
nothing of the user's is inside it. Cleanup removes only the names the check gave its
files, each through its parent's descriptor without following a symlink, then the
directories; whatever else is found there stays, and the caller is told what.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import tempfile
from dataclasses import dataclass, field

from aiobench.errors import ConfigError
from aiobench.plan.targets import mount_of
from aiobench.text import printable

PREFIX = ".aiobench-check-"
FILE_NAMES = ("cal.dat", "test.dat", "direct.probe")
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

    def create(self) -> str:
        self.path = tempfile.mkdtemp(prefix=PREFIX, dir=self.parent)
        return self.path

    def file(self, name: str) -> str:
        assert name in FILE_NAMES
        return os.path.join(self.path, name)

    def metadata_dir(self) -> str:
        """The metadata runs' PATH, made once (empty, a real directory)."""
        where = os.path.join(self.path, METADATA_DIR)
        with contextlib.suppress(FileExistsError):
            os.mkdir(where, 0o700)
        return where

    def probe_direct(self) -> bool:
        """Whether files here open with O_DIRECT (a filesystem without it says EINVAL)."""
        name = self.file("direct.probe")
        flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_DIRECT | os.O_NOFOLLOW
        try:
            fd = os.open(name, flags, 0o600)
        except OSError as exc:
            if exc.errno in (errno.EINVAL, errno.EOPNOTSUPP):
                return False
            raise
        os.close(fd)
        os.unlink(name)
        return True

    def remove(self) -> None:
        """Remove the check's files and directories; what else is there stays (in
        :attr:`left`). Never raises: a cleanup that fails says so through :attr:`left`."""
        if not self.path:
            return
        try:
            top = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                self.left.append(f"{printable(self.path)} ({exc.strerror})")
            return
        try:
            for name in FILE_NAMES:
                self._unlink(top, name)
            self._remove_metadata(top)
        finally:
            os.close(top)
        try:
            os.rmdir(self.path)
        except OSError as exc:
            self.left.append(f"{printable(self.path)} ({exc.strerror})")

    def _unlink(self, dir_fd: int, name: str) -> None:
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
            for name in os.listdir(fd):
                found = _METADATA_FILE.fullmatch(name)
                if found and int(found.group(1)) < self.metadata_files:
                    self._unlink(fd, name)
        finally:
            os.close(fd)
        try:
            os.rmdir(METADATA_DIR, dir_fd=top)
        except OSError as exc:
            self.left.append(f"{printable(os.path.join(self.path, METADATA_DIR))} ({exc.strerror})")


def rotational(path: str) -> bool | None:
    """Whether DIR's filesystem sits on a spinning disk (the device's queue/rotational);
    None when there is no single block device to ask (tmpfs, network, overlay)."""
    mount_point, _ = mount_of(path)
    source = _mount_source(mount_point)
    if not source.startswith("/dev/"):
        return None
    try:
        st = os.stat(source)
    except OSError:
        return None
    if not stat.S_ISBLK(st.st_mode):
        return None
    sysfs = f"/sys/dev/block/{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
    # A partition has no queue of its own: its disk's is one level up.
    candidates = (f"{sysfs}/queue/rotational", f"{sysfs}/../queue/rotational")
    found = [c for c in candidates if os.path.exists(c)]
    if not found:
        return None
    try:
        with open(found[0], encoding="ascii") as handle:
            return handle.read().strip() == "1"
    except (OSError, ValueError):
        return None


def _mount_source(mount_point: str, mountinfo: str = "/proc/self/mountinfo") -> str:
    try:
        with open(mountinfo, encoding="utf-8") as handle:
            lines = handle.readlines()
    except OSError:
        return ""
    source = ""
    for line in lines:
        left, _, right = line.partition(" - ")
        parts = left.split()
        if len(parts) >= 5 and parts[4].replace("\\040", " ") == mount_point and right:
            fields = right.split()
            source = fields[1] if len(fields) > 1 else ""
    return source
