"""Types of the C extension aiobench.engines.s3._s3native (_s3native.c beside it)."""

from collections.abc import Sequence
from typing import Any

from numpy import ndarray
from typing_extensions import Buffer

ETAG_MAX: int

def run(
    fds: Sequence[int],
    heads: list[bytes],
    bodies: list[memoryview] | None,
    into: Any,
    area: int,
    want: int,
    times: ndarray[Any, Any],
    status: ndarray[Any, Any],
    done: ndarray[Any, Any],
    alive: ndarray[Any, Any],
    first: int,
    until_ns: int,
    deadline_ns: int,
    stop: ndarray[Any, Any] | Buffer,  # StopEvent.flag, or a zero byte
    timeout_ns: int,
    min_progress: int,
    etags: Any = None,
    /,
) -> tuple[int, tuple[int, int, int, int, bytes] | None]: ...
