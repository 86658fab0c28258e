"""A slot's buffer sizes: the write pool's windows and the memory one slot maps; pure.

The arithmetic the memory budget (:mod:`aiobench.plan.memory`) counts before anything is
allocated and :class:`~aiobench.engines.buffers.SlotBuffer` allocates by.
"""

from __future__ import annotations

import mmap

PAGE = mmap.PAGESIZE


# Each 4 KiB of every written block starts with a unique 64-bit stamp, so no two written
# 4 KiB blocks are equal (dedup sees nothing to share).
STAMP_SPACING = 4096


# Written blocks are windows into a per-slot pool of random bytes; consecutive writes use
# windows that do not overlap (a block apart, rounded up to 4 KiB). Windows 4 KiB apart made
# an 8-64 KiB block repeat most of the previous one a few KiB back, which gzip, lz4 and a
# filesystem compressing 128 KiB extents all found. With 256 KiB of slack, content comes
# back no sooner than 256 KiB later in a file, beyond gzip's 32 KiB and lz4's 64 KiB reach
# and never inside one 128 KiB extent: incompressible without per-write random generation.
POOL_SLACK = 256 * 1024


# The pool scales with the block: blocks of 4 KiB and more get the windows that slack
# holds (fewer as blocks grow: a 1 MiB block gets one window and no slack). A smaller
# block holds a single stamp, so its windows are packed (8 bytes apart at least, one stamp
# word each); it gets as many windows as a 4 KiB block, so its content comes back after as
# many writes as before, from a pool of 65 blocks instead of 260 KiB.
POOL_WINDOWS = 1 + POOL_SLACK // STAMP_SPACING


def pool_windows(block_size: int, depth: int = 1, writes: int | None = None) -> tuple[int, int]:
    """(bytes from one write window's start to the next, number of windows) of a pool.

    With ``depth`` operations in flight a window is reused only once the write that used
    it last has completed; twice ``depth`` windows keep one slow write from holding up
    the next ones (only a write ``2 * depth`` submissions old must be done). A slot that
    makes at most ``writes`` writes never reuses a window of that many.
    """
    if block_size >= STAMP_SPACING:
        step = _round_up(block_size, STAMP_SPACING)
        count = 1 + POOL_SLACK // step
    else:
        step, count = _round_up(block_size, 8), POOL_WINDOWS
    count = count if depth == 1 else max(count, 2 * depth)
    return step, count if writes is None else max(1, min(count, writes))


def pool_bytes(block_size: int, depth: int = 1, writes: int | None = None) -> int:
    """The write pool of one slot: its windows, in whole pages."""
    step, count = pool_windows(block_size, depth, writes)
    return _round_up((count - 1) * step + block_size, PAGE)


def slot_buffer_bytes(
    block_size: int, *, for_write: bool, depth: int = 1, writes: int | None = None
) -> int:
    """The memory one :class:`SlotBuffer` maps: read memory, and the pool when writing."""
    read = depth * _round_up(block_size, PAGE)
    return read + (pool_bytes(block_size, depth, writes) if for_write else 0)


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple
