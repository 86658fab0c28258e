"""Types of the C extension aiobench.engines._native (_native.c beside it); used by
:mod:`aiobench.engines.native`."""

import mmap
from typing import Any

from numpy import ndarray

Array = ndarray[Any, Any]
Memory = mmap.mmap | Array

DONE: int
BUDGET: int
ERRNO: int
SHORT: int
MISMATCH: int
EXISTS: int
SYMLINK: int
CUT: int
FULL: int
BLOCK: int
SETUP: int
OP_MKDIR: int
OP_UNLINK: int
OP_RMDIR: int
OP_LSTAT: int
OP_OPEN_CLOSE: int
STAMP_SPACING: int

def file_run(
    fd: int,
    fds: Array | None,
    offsets: Array,
    length: int,
    reading: bool,
    mix_pct: int,
    mix_base: int,
    ns_per_op: float,
    schedule_ns: int,
    first_seq: int,
    verify: bool,
    salt: int,
    verify_direct: bool,
    var_words: int,
    sfc: Array | None,
    read_mem: Memory,
    pool: Memory | None,
    window_words: int,
    windows: int,
    stamps: int,
    pool_state: Array | None,
    until_ns: int,
    starts: Array,
    ends: Array,
    intended: Array | None,
    gate: Array | None = None,
    /,
) -> tuple[int, int, int, int, int, int]: ...
def file_aio(
    fd: int,
    fds: Array | None,
    offsets: Array,
    length: int,
    reading: bool,
    depth: int,
    read_mem: Memory,
    area_bytes: int,
    pool: Memory | None,
    window_words: int,
    windows: int,
    stamps: int,
    pool_state: Array | None,
    until_ns: int,
    starts: Array,
    ends: Array,
    gate: Array | None = None,
    /,
) -> tuple[int, int, int, int, int, int]: ...
def entries_meta(
    op: int,
    dfd: int,
    leaves: list[str],
    first: int,
    until_ns: int,
    starts: Array,
    ends: Array,
    n: int,
    tolerate_enoent: bool,
    flags: int,
    mode: int,
    /,
) -> tuple[int, int, int, int]: ...
def entries_files(
    dfd: int,
    leaves: list[str],
    first: int,
    until_ns: int,
    starts: Array,
    ends: Array,
    n: int,
    flags: int,
    mode: int,
    writing: bool,
    size: int,
    block: int,
    io_starts: Array,
    io_ends: Array,
    n_io: int,
    read_mem: Memory | None,
    pool: Memory | None,
    window_words: int,
    windows: int,
    stamps: int,
    pool_state: Array | None,
    deadline_ns: int,
    stop: Array | None,
    /,
) -> tuple[int, int, int, int, int, int, int, int]: ...
def gate_open(gate: Array, state: int) -> None: ...
