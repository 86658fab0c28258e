"""A passthrough FUSE filesystem that fails chosen calls: a byte offset, the n-th create or mkdir.

Run as its own process (the ``fault_fs`` fixture in conftest.py does), never inside the
process that uses the mount: a process serving its own mount can deadlock on it.

    python3 tests/faultfs.py BACKING MOUNTPOINT [--eio-offset N] [--eio-file REL]
        [--eio-ops read,write] [--eio-create-n N] [--eio-mkdir-n N] [--eio-open-n N]
        [--errno EIO|ENOSPC] [--delay-ms MS]

It mounts with ``direct_io`` so every read and write of the application reaches it with
the application's offset (nothing is answered from or gathered in the page cache), and
with zero attribute and entry timeouts so changes made in BACKING show at once. It runs
single-threaded: the n-th create is then the n-th the kernel sent, whatever the order of
the caller's threads (so ``--delay-ms``, a pause before each read and write, makes the whole
mount slow: a slow target). It stays in the foreground until the mount is unmounted.
"""

from __future__ import annotations

import argparse
import errno
import os
import stat
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from fuse import FUSE, FuseOSError, fuse_get_context  # type: ignore[import-untyped]

# Options of libfuse 2's high-level layer (see mount.fuse(8) / fuse(8)). allow_other with
# default_permissions: an unprivileged user meets the kernel's usual permission checks on
# the mount (the server itself runs as root); hard_remove: unlink really unlinks instead of
# hiding still-open files as .fuse_hidden*.
MOUNT_OPTIONS: dict[str, bool | int | str] = {
    "direct_io": True,
    "attr_timeout": 0,
    "entry_timeout": 0,
    "negative_timeout": 0,
    "hard_remove": True,
    "allow_other": True,
    "default_permissions": True,
    "fsname": "faultfs",
    "subtype": "faultfs",
}

# The kernel may pass O_DIRECT through to open(); a tmpfs backing need not accept it, and
# direct_io already keeps the page cache out of the way.
_NOT_PASSED_ON = getattr(os, "O_DIRECT", 0)

STAT_KEYS = ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size", "st_ino", "st_blocks")
STATVFS_KEYS = (
    *("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail"),
    *("f_files", "f_ffree", "f_favail", "f_flag", "f_namemax"),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Faults:
    """Which calls fail, and with what errno."""

    offset: int | None = None  # a read/write whose range holds this byte fails
    file: str | None = None  # ... of this file only (relative to the mount); None: any file
    ops: frozenset[str] = frozenset({"read", "write"})
    create_n: int | None = None  # the n-th creation of a file fails (1 = the first)
    mkdir_n: int | None = None  # the n-th mkdir fails
    open_n: int | None = None  # the n-th open of an existing file fails (from the n-th on)
    errno: int = errno.EIO
    delay_ms: int = 0  # a pause before each read and write: a slow device


class FaultFs:
    """fusepy operations: pass every call through to BACKING, except the faults chosen.

    Not a subclass of fusepy's ``Operations`` (an untyped base): fusepy needs only the
    methods below and ``__call__``, which dispatches an operation by name.
    """

    use_ns = True  # fusepy: times in integer nanoseconds (and no DeprecationWarning)

    def __init__(self, backing: str, faults: Faults) -> None:
        self.backing = os.path.realpath(backing)
        self.faults = faults
        self.creates = 0
        self.mkdirs = 0
        self.opens = 0

    def __call__(self, op: str, *args: Any) -> Any:
        return getattr(self, op)(*args)

    def _real(self, path: str) -> str:
        return os.path.join(self.backing, path.lstrip("/"))

    def _fail_if(self, hit: bool) -> None:
        if hit:
            raise FuseOSError(self.faults.errno)

    def _touches_fault(self, op: str, path: str, offset: int, size: int) -> bool:
        f = self.faults
        return (
            f.offset is not None
            and op in f.ops
            and (f.file is None or path.lstrip("/") == f.file)
            and offset <= f.offset < offset + size
        )

    def _own(self, real: str) -> None:
        """Give a new entry to the caller, as a local filesystem would."""
        uid, gid, _pid = fuse_get_context()
        os.lchown(real, uid, gid)

    def _count_create(self) -> None:
        self.creates += 1
        self._fail_if(self.creates == self.faults.create_n)

    # --- metadata ---------------------------------------------------------------------
    def getattr(self, path: str, fh: int | None = None) -> dict[str, int]:
        st = os.lstat(self._real(path))
        attrs = {key: getattr(st, key) for key in STAT_KEYS}
        attrs |= {"st_atime": st.st_atime_ns, "st_mtime": st.st_mtime_ns}
        return attrs | {"st_ctime": st.st_ctime_ns}

    def access(self, path: str, amode: int) -> None:
        if not os.access(self._real(path), amode):
            raise FuseOSError(errno.EACCES)

    def readdir(self, path: str, fh: int) -> Iterator[str]:
        yield from (".", "..")
        yield from os.listdir(self._real(path))

    def readlink(self, path: str) -> str:
        return os.readlink(self._real(path))

    def statfs(self, path: str) -> dict[str, int]:
        sv = os.statvfs(self._real(path))
        return {key: getattr(sv, key) for key in STATVFS_KEYS}

    def mkdir(self, path: str, mode: int) -> None:
        self.mkdirs += 1
        self._fail_if(self.mkdirs == self.faults.mkdir_n)
        real = self._real(path)
        os.mkdir(real, mode)
        self._own(real)

    def mknod(self, path: str, mode: int, dev: int) -> None:
        if stat.S_ISREG(mode):
            self._count_create()
        real = self._real(path)
        os.mknod(real, mode, dev)
        self._own(real)

    def symlink(self, target: str, source: str) -> None:
        # fusepy's names: ``target`` is the new link, ``source`` what it points to.
        real = self._real(target)
        os.symlink(source, real)
        self._own(real)

    def link(self, target: str, source: str) -> None:
        os.link(self._real(source), self._real(target))

    def unlink(self, path: str) -> None:
        os.unlink(self._real(path))

    def rmdir(self, path: str) -> None:
        os.rmdir(self._real(path))

    def rename(self, old: str, new: str) -> None:
        os.rename(self._real(old), self._real(new))

    def chmod(self, path: str, mode: int) -> None:
        os.chmod(self._real(path), mode)

    def chown(self, path: str, uid: int, gid: int) -> None:
        os.lchown(self._real(path), uid, gid)

    def truncate(self, path: str, length: int, fh: int | None = None) -> None:
        if fh is None:
            os.truncate(self._real(path), length)
        else:
            os.ftruncate(fh, length)

    def utimens(self, path: str, times: tuple[int, int] | None = None) -> None:
        if times is None:  # "now"
            os.utime(self._real(path), follow_symlinks=False)
        else:
            os.utime(self._real(path), ns=times, follow_symlinks=False)

    # --- open files -------------------------------------------------------------------
    def create(self, path: str, mode: int) -> int:
        # fusepy passes no open flags here: read-write serves every caller's mode.
        self._count_create()
        real = self._real(path)
        fd = os.open(real, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, mode)
        self._own(real)
        return fd

    def open(self, path: str, flags: int) -> int:
        self.opens += 1
        self._fail_if(self.faults.open_n is not None and self.opens >= self.faults.open_n)
        return os.open(self._real(path), (flags & ~_NOT_PASSED_ON) | os.O_CLOEXEC)

    def _pause(self) -> None:
        if self.faults.delay_ms:
            time.sleep(self.faults.delay_ms / 1000)

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        self._pause()
        self._fail_if(self._touches_fault("read", path, offset, size))
        return os.pread(fh, size, offset)

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        self._pause()
        self._fail_if(self._touches_fault("write", path, offset, len(data)))
        return os.pwrite(fh, data, offset)

    def flush(self, path: str, fh: int) -> None:
        pass  # every write went straight to the backing file

    def fsync(self, path: str, datasync: int, fh: int) -> None:
        if datasync:
            os.fdatasync(fh)
        else:
            os.fsync(fh)

    def release(self, path: str, fh: int) -> None:
        os.close(fh)


def parse_args(argv: list[str]) -> tuple[str, str, Faults]:
    parser = argparse.ArgumentParser(prog="faultfs", description=__doc__.splitlines()[0])
    parser.add_argument("backing")
    parser.add_argument("mountpoint")
    parser.add_argument("--eio-offset", type=int)
    parser.add_argument("--eio-file")
    parser.add_argument("--eio-ops", default="read,write")
    parser.add_argument("--eio-create-n", type=int)
    parser.add_argument("--eio-mkdir-n", type=int)
    parser.add_argument("--eio-open-n", type=int)
    parser.add_argument("--errno", default="EIO", choices=("EIO", "ENOSPC"))
    parser.add_argument("--delay-ms", type=int, default=0)
    args = parser.parse_args(argv)
    ops = frozenset(args.eio_ops.split(","))
    if not ops <= {"read", "write"}:
        parser.error(f"--eio-ops: read and/or write, not {args.eio_ops!r}")
    faults = Faults(
        offset=args.eio_offset,
        file=args.eio_file,
        ops=ops,
        create_n=args.eio_create_n,
        mkdir_n=args.eio_mkdir_n,
        open_n=args.eio_open_n,
        errno=getattr(errno, args.errno),
        delay_ms=args.delay_ms,
    )
    return args.backing, args.mountpoint, faults


def main(argv: list[str]) -> None:
    backing, mountpoint, faults = parse_args(argv)
    FUSE(FaultFs(backing, faults), mountpoint, foreground=True, nothreads=True, **MOUNT_OPTIONS)


if __name__ == "__main__":
    main(sys.argv[1:])
