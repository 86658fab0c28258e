"""Types of the C extension aiobench.engines.net._netnative (_netnative.c beside it)."""

from typing import Any

from numpy import ndarray
from typing_extensions import Buffer

def client_run(
    fd: int,
    count: int,
    length: int,
    resp: int,
    until_ns: int,
    stop: ndarray[Any, Any] | Buffer,  # StopEvent.flag, or a zero byte
    starts: ndarray[Any, Any],
    ends: ndarray[Any, Any],
    /,
) -> tuple[int, int]: ...
def serve(fd: int, total: int, bs: int, resp: int, /) -> tuple[int, int, int, int]: ...
