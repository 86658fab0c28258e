"""Types of the C extension aiobench.engines._native (_native.c beside it); used by
:mod:`aiobench.engines.native`."""

import mmap
from collections.abc import Sequence
from typing import Any

from numpy import ndarray
from typing_extensions import Buffer

# A C-contiguous buffer of the field's items (int64, or int32 for fds): array("q") or
# numpy's (whose stubs give it __buffer__ only from Python 3.12 on).
Array = ndarray[Any, Any] | Buffer
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
FSTAT: int
OP_MKDIR: int
OP_UNLINK: int
OP_RMDIR: int
OP_LSTAT: int
OP_OPEN_CLOSE: int
STAMP_SPACING: int

class Slot:
    """A slot's memory and buffer state (SlotBuffer.state), advanced in place by the calls."""

    def __init__(
        self,
        read_mem: Memory,
        read_area: int,
        depth: int,
        *,
        pool: Memory | None = None,
        window_words: int = 0,
        windows: int = 0,
        stamps: int = 1,
        next_stamp: int = 0,
        sfc: Sequence[int] | None = None,
    ) -> None: ...
    @property
    def read_area(self) -> int: ...
    @property
    def depth(self) -> int: ...
    @property
    def window_words(self) -> int: ...
    @property
    def windows(self) -> int: ...
    @property
    def stamps(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    @property
    def carried(self) -> int:
        """file_aio: operations the last call left to the next (in flight or reaped)."""
    @property
    def in_flight(self) -> int:
        """file_aio: operations in flight between calls (the carried ones not reaped yet)."""
    @property
    def synchronous(self) -> int:
        """file_aio at depth 1: the device completed its operations within io_submit, the
        thread staying on its CPU."""
    next_window: int
    next_stamp: int
    sfc: tuple[int, ...]
    def settle(self) -> None:
        """Wait for what file_aio carried and forget it (before another engine's run)."""
    def close(self) -> None:
        """Wait for what file_aio carried, then release the memory (BufferError while a call
        is using the slot)."""

class Spec:
    """What one call runs (the fields it needs), and what it ended with (read-only)."""

    def __init__(self, **fields: Any) -> None: ...
    key: object
    # file mode
    fd: int
    fds: Array | None
    offsets: Array | None
    length: int
    reading: bool
    mix_pct: int
    mix_base: int
    ns_per_op: float
    schedule_ns: int
    first_seq: int
    verify: bool
    salt: int
    verify_direct: bool
    read_inline: bool
    var_words: int
    depth: int
    carry: bool
    follows: bool
    poll: bool
    pairs: bool
    intended: Array | None
    gate: Array | None
    # dir mode
    op: int
    dfd: int
    leaves: list[str] | None
    first: int
    n: int
    tolerate: bool
    flags: int
    mode: int
    size: int
    block: int
    start: int
    io_starts: Array | None
    io_ends: Array | None
    n_io: int
    deadline_ns: int
    stop: Array | None
    stat_inline: bool
    # both
    until_ns: int
    starts: Array
    ends: Array
    # what the call ended with
    @property
    def done(self) -> int: ...
    @property
    def index(self) -> int: ...
    @property
    def err(self) -> int: ...
    @property
    def a(self) -> int: ...
    @property
    def b(self) -> int: ...
    @property
    def c(self) -> int: ...

def file_run(slot: Slot, spec: Spec, /) -> int: ...
def file_aio(slot: Slot, spec: Spec, /) -> int: ...
def entries_meta(spec: Spec, /) -> int: ...
def entries_files(slot: Slot, spec: Spec, /) -> int: ...
def gate_open(gate: Array, state: int) -> None: ...
def sfc64_fill(buffer: Memory | Buffer, state: Sequence[int], /) -> tuple[int, ...]:
    """Fill ``buffer`` with SFC64's raw words from ``state``; the state after them."""

def fill_steps(out: Array, start: int, step: int, /) -> None:
    """Fill the int64 buffer ``out`` with start, start + step, ... (a range's offsets)."""
