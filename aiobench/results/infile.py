"""Input files (``show``, ``compare``, ``plot``): regular files only, read whole up to a cap."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable

from aiobench.errors import ConfigError

# Reads go in pieces so a small file never costs a buffer of the whole cap.
_CHUNK_BYTES = 1 << 20


def _kind(mode: int) -> str:
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "not a file")


def read_regular_file(
    path: str, max_bytes: int, each_chunk: Callable[[bytes], None] | None = None
) -> bytearray:
    """The bytes of ``path`` if it is a regular file (or a symlink to one) of at most
        ``max_bytes``; else :class:`ConfigError` naming ``path`` and why. ``each_chunk`` sees
        every piece as it is read and may refuse the file (a ConfigError) before the rest is.
    The bytes come in one bytearray grown in place, so reading costs no second copy.

        O_NONBLOCK: opening a FIFO must not wait for a writer; the type is checked on the open
        descriptor, so what is read is what was checked. Nothing beyond ``max_bytes`` is read,
        even from a file that grows meanwhile.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"{path}: not a regular file ({_kind(st.st_mode)})")
        if st.st_size > max_bytes:
            raise ConfigError(f"{path}: {st.st_size} bytes, more than the {max_bytes} this reads")
        data = bytearray()
        left = max_bytes + 1  # one byte more tells a file that grew past the cap
        while left > 0 and (chunk := os.read(fd, min(left, _CHUNK_BYTES))):
            if each_chunk is not None:
                each_chunk(chunk)
            data += chunk
            left -= len(chunk)
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if left <= 0:
        raise ConfigError(f"{path}: more than the {max_bytes} bytes this reads")
    return data
