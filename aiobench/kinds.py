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
    LISTOBJPAR = "listobjpar"  # object storage: each thread lists its own (--s3listobjpar)
    MIXED = "mixed"  # object storage: GETs, PUTs, DELETEs and HEADs in shares (--s3mix)
    # Object storage's metadata phases (aiobench.engines.s3.metadata), per bucket ...
    PUTBACL = "putbacl"  # --s3baclput
    PUTBUCKETMD = "putbucketmd"  # --s3btag, --s3olockcfg, --s3bversion (with -d)
    STATDIRS = "statdirs"  # --s3statdirs
    GETBUCKETMD = "getbucketmd"
    DELBUCKETMD = "delbucketmd"  # (with -D)
    GETBACL = "getbacl"  # --s3baclget
    # ... and per object
    PUTOBJACL = "putobjacl"  # --s3aclput
    PUTOBJMD = "putobjmd"  # --s3otag (with -w)
    GETOBJMD = "getobjmd"
    GETOBJACL = "getobjacl"  # --s3aclget
    DELOBJMD = "delobjmd"  # (with -F)
    SYNC = "sync"
    DROPCACHE = "dropcache"


MKDIRS, WRITE, STAT, READ = PhaseKind.MKDIRS, PhaseKind.WRITE, PhaseKind.STAT, PhaseKind.READ
RMFILES, RMDIRS = PhaseKind.RMFILES, PhaseKind.RMDIRS
LISTOBJ, MULTIDEL, LISTOBJPAR = PhaseKind.LISTOBJ, PhaseKind.MULTIDEL, PhaseKind.LISTOBJPAR
MIXED = PhaseKind.MIXED
SYNC, DROPCACHE = PhaseKind.SYNC, PhaseKind.DROPCACHE
PUTBACL, PUTBUCKETMD, STATDIRS = PhaseKind.PUTBACL, PhaseKind.PUTBUCKETMD, PhaseKind.STATDIRS
GETBUCKETMD, DELBUCKETMD, GETBACL = PhaseKind.GETBUCKETMD, PhaseKind.DELBUCKETMD, PhaseKind.GETBACL
PUTOBJACL, PUTOBJMD, GETOBJMD = PhaseKind.PUTOBJACL, PhaseKind.PUTOBJMD, PhaseKind.GETOBJMD
GETOBJACL, DELOBJMD = PhaseKind.GETOBJACL, PhaseKind.DELOBJMD
# The metadata phases of whole buckets and of each object (one entry a bucket, an object).
BUCKET_MD_KINDS = (PUTBACL, PUTBUCKETMD, STATDIRS, GETBUCKETMD, DELBUCKETMD, GETBACL)
OBJECT_MD_KINDS = (PUTOBJACL, PUTOBJMD, GETOBJMD, GETOBJACL, DELOBJMD)
# The phases of object storage whose entries are each thread's objects (as STAT's are)
OBJECT_ENTRY_KINDS = (*OBJECT_MD_KINDS, LISTOBJPAR)

PHASE_NAMES: dict[PhaseKind, str] = {
    MKDIRS: "MKDIRS",
    WRITE: "WRITE",
    STAT: "STAT",
    READ: "READ",
    RMFILES: "RMFILES",
    RMDIRS: "RMDIRS",
    LISTOBJ: "LISTOBJ",
    MULTIDEL: "MULTIDEL",
    LISTOBJPAR: "LISTOBJ_P",
    MIXED: "MIXED",
    **{kind: kind.value.upper() for kind in BUCKET_MD_KINDS + OBJECT_MD_KINDS},
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
    NET = "net"  # --netbench: TCP blocks between MPI ranks (aiobench.engines.net)


# The C extension of the native engine, by module name (found here, loaded by the engine).
NATIVE_MODULE = "aiobench.engines._native"


class PathType(StrEnum):
    """What the PATHs of a run are (all of one type): the JSON's ``meta.path_type``."""

    FILE = "file"
    BLOCKDEV = "blockdev"
    DIR = "dir"
    S3 = "s3"  # buckets of object storage (s3://bucket[/prefix])
    NET = "net"  # --netbench: no PATH, the network between the ranks
