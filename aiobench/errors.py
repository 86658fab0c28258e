"""The exceptions aiobench raises, and the exit codes the CLI maps them to.

AiobenchError
├── ConfigError      bad options or paths; nothing was created (exit 2)
└── BenchIOError     an I/O call failed while measuring (exit 1)
    ├── VerifyError  --verify: a block did not hold the pattern (exit 1)
    └── S3Error      an S3 request failed: HTTP status and S3 error code, or no
                     connection (exit 1)
"""

from __future__ import annotations

import errno as errno_mod
import os

EXIT_IO_ERROR = 1
EXIT_USAGE = 2


class AiobenchError(Exception):
    """Base class of every error aiobench reports to users."""

    exit_code = EXIT_IO_ERROR


class ConfigError(AiobenchError):
    """A usage error: an option, a value or a path is not acceptable."""

    exit_code = EXIT_USAGE


class BenchIOError(AiobenchError):
    """An I/O call failed (or came back short) during a phase."""

    exit_code = EXIT_IO_ERROR

    def __init__(self, *, path: str, offset: int | None, errno: int, detail: str = "") -> None:
        """``offset`` is None where no offset means anything (creating, opening or
        removing an entry); the message then names the path alone."""
        self.path = path
        self.offset = offset
        self.errno = errno
        self.detail = detail or os.strerror(errno)
        name = errno_mod.errorcode.get(errno, str(errno))
        where = path if offset is None else f"{path}: offset {offset}"
        super().__init__(f"{where}: {name} ({self.detail})")

    @classmethod
    def from_os(cls, path: str, offset: int | None, exc: OSError) -> BenchIOError:
        return cls(path=path, offset=offset, errno=exc.errno or 0, detail=exc.strerror or "")

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "offset": self.offset,
            "errno": self.errno,
            "errno_name": errno_mod.errorcode.get(self.errno, ""),
            "message": str(self),
        }


class VerifyError(BenchIOError):
    """--verify: the first byte that differs from the pattern, and the word around it."""

    def __init__(self, *, path: str, offset: int, expected: int, found: int) -> None:
        super().__init__(path=path, offset=offset, errno=0, detail="data mismatch")
        self.expected = expected
        self.found = found
        self.args = (
            f"{path}: offset {offset}: data mismatch (--verify): expected word "
            f"0x{expected:016x}, found 0x{found:016x}",
        )

    def to_dict(self) -> dict[str, object]:
        return super().to_dict() | {"expected": self.expected, "found": self.found}


class S3Error(BenchIOError):
    """An S3 request failed: the server's HTTP status and S3 error code (``Code`` of its
    XML error body), or no answer at all (``status`` None, ``errno`` set where the system
    gave one). ``path`` is ``s3://bucket/key``; the message also names the endpoint. It
    never holds credentials."""

    def __init__(
        self,
        *,
        endpoint: str,
        bucket: str,
        key: str = "",
        offset: int | None = None,
        status: int | None = None,
        code: str = "",
        reason: str,
        errno: int = 0,
    ) -> None:
        path = f"s3://{bucket}/{key}" if key else f"s3://{bucket}"
        super().__init__(path=path, offset=offset, errno=errno, detail=reason)
        self.endpoint = endpoint
        self.bucket = bucket
        self.key = key
        self.status = status
        self.code = code
        where = f"{path} at {endpoint}" + ("" if offset is None else f": offset {offset}")
        if status is not None:
            what = f"HTTP {status}" + (f" {code}" if code else "")
        else:
            what = errno_mod.errorcode.get(errno, "") or "no response"
        self.args = (f"{where}: {what} ({reason})",)

    def to_dict(self) -> dict[str, object]:
        return super().to_dict() | {
            "endpoint": self.endpoint,
            "bucket": self.bucket,
            "key": self.key,
            "status": self.status,
            "code": self.code,
        }
