"""Whole-document outputs of ``check`` and ``compare`` (``--json FILE``, ``--markdown
FILE``): checked before anything runs, then written where the name leads (the rules of
:mod:`aiobench.render.outfiles`: a regular file replaced atomically, a FIFO or device written in
place once checked (a FIFO only with a reader), a directory or block device refused)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from aiobench.errors import ConfigError
from aiobench.render import outfiles
from aiobench.render.outfiles import NEW, REGULAR, Place, reason
from aiobench.render.outputs import checked_place, opened_in_place
from aiobench.text import printable


@dataclass(frozen=True, slots=True)
class Export:
    option: str
    path: str
    place: Place
    # Written in place (a FIFO, a device): the descriptor opened when it was checked, or
    # the error that opening got (reported when the document is written).
    fd: int | OSError | None = None


def checked_export(option: str, path: str) -> Export:
    """Where ``option``'s file leads, or a usage error naming the option and the file. A
    place written in place is opened now (a FIFO only if it has a reader)."""
    if not path:
        raise ConfigError(f"{option}: give a file name")
    place = checked_place(option, path)
    directory = os.path.dirname(place.real)
    if place.kind in (NEW, REGULAR):
        if not os.access(directory, os.W_OK):
            raise ConfigError(f"{option}: cannot write to {printable(directory)}")
        return Export(option, path, place)
    try:
        return Export(option, path, place, opened_in_place(option, path, place))
    except OSError as exc:
        return Export(option, path, place, exc)


def write_export(export: Export, data: str | bytes) -> str | None:
    """Write ``data`` (UTF-8 if str) whole; the error line to report when that failed, else
    None."""
    try:
        if export.place.kind in (NEW, REGULAR):
            outfiles.replace_file(export.place, data)
            return None
        if isinstance(export.fd, OSError):
            raise export.fd
        assert export.fd is not None
        try:
            outfiles.write_all(export.fd, data.encode("utf-8") if isinstance(data, str) else data)
        finally:
            os.close(export.fd)
    except OSError as exc:
        return f"{export.option}: {printable(export.path)}: {reason(exc)}"
    return None
