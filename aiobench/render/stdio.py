"""stdout and stderr made harmless when closed or failing: no traceback, the failure kept.

A standard stream closed at start gets /dev/null on its descriptor, so no file the run
opens can become fd 1 or 2 and receive the table or a message. A write to stdout or stderr
that fails (a full device, a reader gone) is remembered, never raised, and the descriptor is
pointed at /dev/null, so later writes and the final flush at exit go nowhere quietly. The
CLI asks :func:`failure` afterwards to decide the exit code.
"""

from __future__ import annotations

import errno
import io
import os
import sys
from typing import TextIO

# The first failure of each standard descriptor: closed at start (EBADF) or a failed write.
_failures: dict[int, OSError] = {}


def _null_onto(fd: int) -> None:
    devnull = os.open(os.devnull, os.O_RDWR)
    if devnull != fd:  # else the descriptor was closed and /dev/null took its number
        os.dup2(devnull, fd)
        os.close(devnull)


def note_failure(stream: TextIO, exc: OSError) -> None:
    """``stream`` could not be written: keep the first reason, send the rest to /dev/null."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError):
        return
    _failures.setdefault(fd, exc)
    _null_onto(fd)


def failure(fd: int) -> OSError | None:
    """Why writing to standard descriptor ``fd`` failed (closed at start, full, ...)."""
    return _failures.get(fd)


def show(stream: TextIO, text: str) -> OSError | None:
    """Write and flush ``text``; the failure of this or an earlier write, if any."""
    try:
        stream.write(text)
        stream.flush()
    except OSError as exc:
        note_failure(stream, exc)
        return exc
    try:
        return failure(stream.fileno())
    except (OSError, ValueError):
        return None


class _Guarded(io.TextIOWrapper):
    """A standard stream whose write errors are noted instead of raised."""

    def write(self, s: str) -> int:
        try:
            return super().write(s)
        except OSError as exc:
            note_failure(self, exc)
            return len(s)

    def flush(self) -> None:
        try:
            super().flush()
        except OSError as exc:
            note_failure(self, exc)


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _closed() -> OSError:
    return OSError(errno.EBADF, "closed when aiobench started")


def guard_standard_streams() -> None:
    """Make stdin, stdout and stderr safe for the rest of the process (idempotent).

    Only the interpreter's own streams are replaced; a stream someone else installed (a
    test's capture) is left as it is. The replaced one stays in ``sys.__stdout__`` (or
    ``__stderr__``), flushed and unused.
    """
    for fd in (0, 1, 2):
        if not _is_open(fd):
            _null_onto(fd)
            if fd:
                _failures.setdefault(fd, _closed())
    for fd, name in ((1, "stdout"), (2, "stderr")):
        current: TextIO | None = getattr(sys, name)
        if isinstance(current, _Guarded) or current is not getattr(sys, f"__{name}__"):
            continue
        if current is None:  # closed when Python started: whatever holds fd now is not it
            _failures.setdefault(fd, _closed())
            raw = open(os.open(os.devnull, os.O_WRONLY), "wb", closefd=False)  # noqa: SIM115
        else:
            try:
                current.flush()
            except OSError as exc:
                _failures.setdefault(fd, exc)
                _null_onto(fd)
            raw = open(fd, "wb", closefd=False)  # noqa: SIM115 - as long as the process
        setattr(
            sys,
            name,
            _Guarded(
                raw,
                encoding=current.encoding if current is not None else "utf-8",
                errors=current.errors if current is not None else "backslashreplace",
                line_buffering=bool(current.line_buffering) if current is not None else True,
            ),
        )
