"""Types of the C extension aiobench.engines.net._netnative (_netnative.c beside it)."""

from typing import Any

from numpy import ndarray

def client(
    fd: int, total: int, bs: int, resp: int, times: ndarray[Any, Any], /
) -> tuple[int, int, int, int]: ...
def serve(fd: int, total: int, bs: int, resp: int, /) -> tuple[int, int, int, int]: ...
