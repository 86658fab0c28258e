"""Output files where the user points: what a name really is, and writing to it safely.

A regular file, or a symlink to one at any depth, is replaced atomically at its real
location (a temporary file beside it, then a rename) and appended to there. A character
device, FIFO or socket, and this process's own descriptors (``/dev/stdout``,
``/dev/stderr``, ``/dev/fd/N``, ``/proc/self/fd/N``) are written in place: never
truncated, never replaced, never created (a FIFO only once a reader has it open). A
directory and a block device are refused (a JSON document written over a disk would
destroy it), as is a new file on /dev's, /proc's or /sys's filesystem. The device node
or symlink the user named is never itself replaced.

Appends write each record whole: one ``O_APPEND`` write under an advisory lock
(``flock``), checked; a short write (a nearly full filesystem) is undone by truncating the
file back and raised as the error the rest of the record got.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import socket
import stat
from collections.abc import Iterator
from typing import NamedTuple

from aiobench.errors import ConfigError
from aiobench.text import printable

# Symlinks followed before giving up with ELOOP, as the kernel does (MAXSYMLINKS).
MAX_SYMLINKS = 40
_OWN_FD = re.compile(r"/dev/fd/(\d+)|/proc/(?:self|thread-self|\d+)/fd/(\d+)")
_STD_NAMES = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
# Nothing is created on these: their names are the kernel's (/dev/shm is a tmpfs of its own).
_NO_NEW_FILES = ("/dev", "/proc", "/sys")

REGULAR, NEW, STREAM, SPECIAL = "regular", "new", "stream", "special"


class Place(NamedTuple):
    """Where an output name leads: its kind, the real path and what is there now."""

    kind: str  # REGULAR (exists), NEW (to be created), STREAM (own fd), SPECIAL (FIFO, ...)
    real: str  # the name after every symlink; for STREAM the name as resolved so far
    fd: int | None = None  # STREAM: this process's descriptor
    mode: int = 0  # st_mode of what is there (0 for NEW)


def _own_fd(path: str) -> int | None:
    if path in _STD_NAMES:
        return _STD_NAMES[path]
    match = _OWN_FD.fullmatch(path)
    if match is None:
        return None
    pid = path.split("/")[2]
    if path.startswith("/proc/") and pid not in ("self", "thread-self", str(os.getpid())):
        return None
    return int(match.group(1) or match.group(2))


def locate(path: str) -> Place:
    """Follow ``path``'s symlinks one by one to what it names; raises OSError (ELOOP, ...).

    Step by step rather than :func:`os.path.realpath`, so that ``/dev/stdout`` is known as
    this process's descriptor 1 before the kernel's magic link turns it into ``pipe:[N]``.
    """
    current = os.path.abspath(path)
    for _ in range(MAX_SYMLINKS):
        fd = _own_fd(current)
        if fd is not None:
            return Place(kind=STREAM, real=current, fd=fd)
        parent = os.path.realpath(os.path.dirname(current))
        current = os.path.join(parent, os.path.basename(current))
        fd = _own_fd(current)
        if fd is not None:
            return Place(kind=STREAM, real=current, fd=fd)
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            return Place(kind=NEW, real=current)
        if not stat.S_ISLNK(st.st_mode):
            kind = REGULAR if stat.S_ISREG(st.st_mode) else SPECIAL
            return Place(kind=kind, real=current, mode=st.st_mode)
        current = os.path.join(parent, os.readlink(current))
    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path)


def refusal(place: Place) -> str | None:
    """Why nothing may be written at ``place`` (a usage error), or None."""
    if stat.S_ISDIR(place.mode):
        return "is a directory"
    if stat.S_ISBLK(place.mode):
        return "is a block device (results are not written over a disk)"
    if place.kind in (REGULAR, NEW):
        where = _kernel_fs(os.path.dirname(place.real))
        if where is not None:
            return f"is not a device, FIFO or socket, and no file is made in {where}"
    return None


def _kernel_fs(directory: str) -> str | None:
    """Which of /dev, /proc, /sys ``directory`` lies on (each only if mounted there)."""
    try:
        device = os.stat(directory).st_dev
        root = os.stat("/").st_dev
    except OSError:
        return None
    for mount in _NO_NEW_FILES:
        with contextlib.suppress(OSError):
            if os.stat(mount).st_dev == device != root:
                return mount
    return None


def writable_stream(fd: int) -> bool:
    """Whether this process's descriptor ``fd`` is open for writing."""
    try:
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    except OSError:
        return False
    return flags & os.O_ACCMODE in (os.O_WRONLY, os.O_RDWR)


def write_all(fd: int, data: bytes) -> None:
    """Write every byte to a stream (a pipe or terminal may take it in pieces)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def open_in_place(place: Place) -> int:
    """A descriptor to write to a STREAM or SPECIAL place: no truncation, no creation."""
    if place.kind == STREAM:
        assert place.fd is not None
        return os.dup(place.fd)
    if stat.S_ISSOCK(place.mode):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(place.real)
        except OSError:
            sock.close()
            raise
        return sock.detach()
    if stat.S_ISFIFO(place.mode):
        return _open_fifo(place.real)
    return os.open(place.real, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)


def _open_fifo(path: str) -> int:
    """A FIFO's writing end if a reader has it open, else ENXIO (:func:`no_reader`).

    Not a blocking open, as a shell redirection makes: that one would wait for a reader
    that may never come, and no signal ends it (Python retries the call after running the
    handler, which only records the signal). Once open, the writes block again, so a
    slow reader gets the whole record.
    """
    fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def no_reader(place: Place, exc: OSError) -> bool:
    """Whether ``exc`` (from :func:`open_in_place`) says ``place`` is a FIFO nobody reads."""
    return stat.S_ISFIFO(place.mode) and exc.errno == errno.ENXIO


def replace_file(place: Place, text: str | bytes) -> None:
    """Make ``text`` (UTF-8 if str) the whole content of a REGULAR or NEW place; raises
    OSError.

    A temporary file beside the real location, renamed over it once complete: a failure
    leaves the old content (or no file) and no temporary file behind.
    """
    directory, name = os.path.split(place.real)
    tmp = os.path.join(directory, f".{name}.aiobench-{os.getpid()}-{os.urandom(4).hex()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    try:
        try:
            if place.kind == REGULAR:
                _keep_owner_and_mode(fd, place.real)
            write_all(fd, text.encode("utf-8") if isinstance(text, str) else text)
            os.fsync(fd)  # the rename must not publish a file whose data is not on disk
        finally:
            os.close(fd)
        os.rename(tmp, place.real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _keep_owner_and_mode(fd: int, path: str) -> None:
    """The replacement keeps the permission bits (and, for root, the owner) it replaces."""
    try:
        st = os.stat(path)
    except OSError:
        return  # gone meanwhile: a new file's usual mode
    if os.geteuid() == 0 and (st.st_uid, st.st_gid) != (0, 0):
        with contextlib.suppress(OSError):
            os.fchown(fd, st.st_uid, st.st_gid)
    os.fchmod(fd, stat.S_IMODE(st.st_mode) & 0o777)


@contextlib.contextmanager
def locked(fd: int) -> Iterator[None]:
    """An exclusive advisory lock on the open file, for as long as the block runs."""
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def open_append(path: str) -> int:
    """Open a regular result file to append a record (created if missing; read for the
    check of its last byte). Raises OSError.

    If a FIFO, device or symlink took the file's place since it was checked, this fails
    instead of hanging or writing elsewhere. (No O_NONBLOCK for that: on a file with a
    lease, as file servers hold them, the open must wait for the lease, not fail.)
    """
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISREG(os.lstat(path).st_mode):
            raise OSError(errno.EINVAL, "is no longer a regular file", path)
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOCTTY | os.O_CLOEXEC | os.O_NOFOLLOW
    return os.open(path, flags, 0o666)


def append_record(fd: int, text: str, header: str = "") -> None:
    """Append one record (with ``header`` first if the file is empty) in one checked write.

    Under the lock the file's size is known: a record that did not fit whole is cut off
    again, and the error the rest of it got is raised.
    """
    with locked(fd):
        size = os.fstat(fd).st_size
        if size == 0:
            text = header + text
        elif os.pread(fd, 1, size - 1) != b"\n":
            text = "\n" + text  # a last line without its newline must not swallow ours
        data = text.encode("utf-8")
        written = os.write(fd, data)
        if written != len(data):
            _undo(fd, size, data[written:])


def _undo(fd: int, size: int, rest: bytes) -> None:
    reason = OSError(errno.EIO, f"short write ({len(rest)} bytes of the record not written)")
    try:
        os.write(fd, rest)  # what the rest gets is the reason (ENOSPC, EDQUOT, EFBIG)
    except OSError as exc:
        reason = exc
    try:
        os.ftruncate(fd, size)
    except OSError as exc:
        detail = f"{reason.strerror}; a partial record is left ({exc.strerror})"
        raise OSError(reason.errno, detail) from None
    raise reason


def reason(exc: OSError) -> str:
    """``ENOSPC (No space left on device)``: an OSError's errno name and text."""
    name = errno.errorcode.get(exc.errno or 0, "")
    text = exc.strerror or str(exc)
    return f"{name} ({text})" if name else text


def located(option: str, path: str) -> Place:
    """Where ``option``'s file ``path`` leads (:func:`locate`), unless :func:`refusal`
    refuses it: a usage error naming the option and the file then."""
    shown = printable(path)
    try:
        place = locate(path)
    except OSError as exc:
        raise ConfigError(f"{option}: {shown}: {reason(exc)}") from None
    why = refusal(place)
    if why is not None:
        raise ConfigError(f"{option}: {shown} {why}")
    return place
