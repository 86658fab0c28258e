"""``--s3log LEVEL`` / ``--s3logprefix PREFIX``: a log of S3 requests, where elbencho writes
its AWS SDK's log (``PREFIX`` + ``YYYY-MM-DD-HH.log``, appended to). Levels as the SDK's:
1-3 the requests that failed, 4 every request, 5-6 also the headers sent (credentials and
keys left out). One line a request: time, level, operation, method, ``s3://bucket/key``,
status (or the error) and the request's time. Written on the event loop, after the request.
"""

from __future__ import annotations

import datetime
import os
import stat
import time
from collections.abc import Mapping
from typing import TextIO

from aiobench.errors import ConfigError, S3Error

ERRORS, EVERY, HEADERS = 1, 4, 5
# Headers whose values are secrets: never in the log.
HIDDEN = frozenset(
    (
        "authorization",
        "x-amz-security-token",
        "x-amz-server-side-encryption-customer-key",
    )
)


def outcome_of(exc: S3Error) -> str:
    """A failed request's line end: its status and S3 code, or the connection's error."""
    what = f"HTTP {exc.status} {exc.code}".rstrip() if exc.status is not None else "no answer"
    return f"{what} ({exc.detail})"


def log_path(prefix: str, now: float | None = None) -> str:
    """The log's file: the prefix and the hour it was opened (the SDK's naming)."""
    return prefix + time.strftime("%Y-%m-%d-%H", time.localtime(now)) + ".log"


def check_prefix(prefix: str) -> None:
    """The log's folder exists (checked before the run: ConfigError otherwise)."""
    folder = os.path.dirname(prefix) or "."
    if not os.path.isdir(folder):
        raise ConfigError(f"--s3logprefix: {folder}: no such directory")


class RequestLog:
    """The open log; :meth:`request` writes one line, :meth:`close` flushes it."""

    def __init__(self, prefix: str, level: int) -> None:
        self.level = level
        self.path = log_path(prefix)
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(self.path, flags | os.O_NONBLOCK, 0o644)
        except OSError as exc:
            raise ConfigError(f"--s3logprefix: {self.path}: {exc.strerror}") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # (a FIFO or device is left alone)
            os.close(fd)
            raise ConfigError(f"--s3logprefix: {self.path}: not a regular file")
        self._file: TextIO = os.fdopen(fd, "a", encoding="utf-8")

    def request(
        self,
        operation: str,
        method: str,
        where: str,
        outcome: str,
        elapsed_ns: int,
        failed: bool,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if self.level < (ERRORS if failed else EVERY):
            return
        when = datetime.datetime.now().isoformat(sep=" ", timespec="milliseconds")
        kind = "ERROR" if failed else "INFO"
        line = f"{when} [{kind}] {operation} {method} {where} {outcome} {elapsed_ns / 1e6:.3f} ms"
        if headers and self.level >= HEADERS:
            shown = "; ".join(
                f"{k}: {'***' if k.lower() in HIDDEN else v}" for k, v in headers.items()
            )
            line += f" [{shown}]"
        self._file.write(line + "\n")

    def close(self) -> None:
        self._file.close()
