"""Whole-document outputs of ``check`` and ``compare`` (``--json FILE``, ``--markdown
FILE``): checked before anything runs, then written where the name leads (the rules of
:mod:`aiobench.render.outfiles`: a regular file replaced atomically, a FIFO or device written in
place, a directory or block device refused)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from aiobench.errors import ConfigError
from aiobench.render import outfiles
from aiobench.render.outfiles import NEW, REGULAR, Place
from aiobench.render.outputs import checked_place, reason
from aiobench.text import printable


@dataclass(frozen=True, slots=True)
class Export:
    option: str
    path: str
    place: Place


def checked_export(option: str, path: str) -> Export:
    """Where ``option``'s file leads, or a usage error naming the option and the file."""
    if not path:
        raise ConfigError(f"{option}: give a file name")
    place = checked_place(option, path)
    directory = os.path.dirname(place.real)
    if place.kind in (NEW, REGULAR) and not os.access(directory, os.W_OK):
        raise ConfigError(f"{option}: cannot write to {printable(directory)}")
    return Export(option, path, place)


def write_export(export: Export, text: str) -> str | None:
    """Write ``text`` whole; the error line to report when that failed, else None."""
    try:
        if export.place.kind in (NEW, REGULAR):
            outfiles.replace_file(export.place, text)
            return None
        fd = outfiles.open_in_place(export.place)
        try:
            outfiles.write_all(fd, text.encode("utf-8"))
        finally:
            os.close(fd)
    except OSError as exc:
        return f"{export.option}: {printable(export.path)}: {reason(exc)}"
    return None
