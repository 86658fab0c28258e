"""Phase kinds and their names in results, in the fixed order phases run; engine names and
path types; pure.

File mode has WRITE and READ; dir mode has all six. SYNC and DROPCACHE (``--sync``,
``--dropcache``) are not benchmark phases but get result blocks of their own, before the
first phase and after each one.
"""

from __future__ import annotations

from enum import StrEnum


class PhaseKind(StrEnum):
    """A phase (or housekeeping block) of a run; the values are the kinds' JSON names."""

    MKDIRS = "mkdirs"
    WRITE = "write"
    STAT = "stat"
    READ = "read"
    RMFILES = "rmfiles"
    RMDIRS = "rmdirs"
    LISTOBJ = "listobj"  # object storage: list the buckets' objects (--s3listobj)
    MULTIDEL = "multidel"  # object storage: delete them in batches (--s3multidel)
    SYNC = "sync"
    DROPCACHE = "dropcache"


MKDIRS, WRITE, STAT, READ = PhaseKind.MKDIRS, PhaseKind.WRITE, PhaseKind.STAT, PhaseKind.READ
RMFILES, RMDIRS = PhaseKind.RMFILES, PhaseKind.RMDIRS
LISTOBJ, MULTIDEL = PhaseKind.LISTOBJ, PhaseKind.MULTIDEL
SYNC, DROPCACHE = PhaseKind.SYNC, PhaseKind.DROPCACHE

PHASE_NAMES: dict[PhaseKind, str] = {
    MKDIRS: "MKDIRS",
    WRITE: "WRITE",
    STAT: "STAT",
    READ: "READ",
    RMFILES: "RMFILES",
    RMDIRS: "RMDIRS",
    LISTOBJ: "LISTOBJ",
    MULTIDEL: "MULTIDEL",
    SYNC: "SYNC",
    DROPCACHE: "DROPCACHE",
}


# Object storage names dir mode's phases as elbencho does: dirs are buckets, files objects.
OBJECT_PHASE_NAMES = PHASE_NAMES | {
    MKDIRS: "MKBUCKETS",
    RMFILES: "RMOBJECTS",
    RMDIRS: "RMBUCKETS",
}


def phase_name(kind: PhaseKind, rwmix_pct: int | None = None, *, objects: bool = False) -> str:
    """The phase's name in results; a write phase with --rwmixpct P is ``RWMIX<P>``;
    ``objects``: of an S3 run."""
    if kind == WRITE and rwmix_pct is not None:
        return f"RWMIX{rwmix_pct}"
    return (OBJECT_PHASE_NAMES if objects else PHASE_NAMES)[kind]


class EngineName(StrEnum):
    """The engines by name (``--ioengine``), readable without loading one;
    :mod:`aiobench.engines.registry` makes them."""

    NATIVE = "native"  # the C extension, where it was built: the default
    PYTHON = "python"  # the reference engine and the fallback, always there
    S3 = "s3"  # object storage: the only engine for s3:// PATHs


# The C extension of the native engine, by module name (found here, loaded by the engine).
NATIVE_MODULE = "aiobench.engines._native"


class PathType(StrEnum):
    """What the PATHs of a run are (all of one type): the JSON's ``meta.path_type``."""

    FILE = "file"
    BLOCKDEV = "blockdev"
    DIR = "dir"
    S3 = "s3"  # buckets of object storage (s3://bucket[/prefix])
