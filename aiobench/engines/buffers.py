"""A slot's page-aligned memory: read areas and the write pool of stamped random windows."""

from __future__ import annotations

import contextlib
import mmap

import numpy as np

from aiobench.plan.pool import PAGE, STAMP_SPACING, _round_up, pool_bytes, pool_windows


class SlotBuffer:
    """Page-aligned memory of one slot, allocated and filled once, before the phase starts.

    With ``depth`` > 1 (operations in flight at once, each needing memory of its own) it
    holds ``depth`` read areas and at least twice as many write windows.
    """

    def __init__(
        self,
        block_size: int,
        *,
        for_write: bool,
        rng: np.random.Generator,
        stamp_base: int,
        depth: int = 1,
        writes: int | None = None,
    ) -> None:
        """``writes``: the most writes the slot can make (None: no bound); a pool needs no
        more windows than that."""
        self.block_size = block_size
        self.depth = depth
        # Reads land in memory of their own, so an --rwmixpct read never changes what the
        # slot writes next. (Untouched pages of it cost no memory.) Area i of ``depth``
        # starts at ``i * read_area``; the Python engine uses the first.
        self.read_area = _round_up(block_size, PAGE)
        self.read_mem = mmap.mmap(-1, depth * self.read_area)
        self.read_view = [memoryview(self.read_mem)[:block_size]]
        self.windows: list[list[memoryview]] = []
        self.window_words = 0  # 64-bit words from one window's start to the next
        self.stamps_per_block = max(1, block_size // STAMP_SPACING)
        self.next_window = 0
        self.next_stamp = stamp_base
        self.pool: mmap.mmap | None = None  # the write pool (``mem``), None when only reading
        if not for_write:
            return
        step, count = pool_windows(block_size, depth, writes)
        size = pool_bytes(block_size, depth, writes)
        self.pool = self.mem = mmap.mmap(-1, size)
        # The generator's raw words: ~11x Generator.bytes()'s speed here (a pool per slot
        # at -t 1024 is 260 MiB to fill before the clock).
        self.mem[:] = rng.bit_generator.random_raw(size // 8).tobytes()
        view = memoryview(self.mem)
        self.windows = [[view[o : o + block_size]] for o in range(0, count * step, step)]
        self.window_words = step // 8
        self.words = view.cast("Q")
        self.words_np = np.frombuffer(self.mem, dtype=np.uint64)
        self.stamp_offsets = np.arange(self.stamps_per_block, dtype=np.uint64)
        # --blockvarpct refills from SFC64's raw output: ~3.6 GB/s on one core here,
        # against ~0.3 GB/s for Generator.bytes().
        self.refill = np.random.SFC64(int(rng.integers(0, 1 << 63)))

    def next_block(self, length: int) -> list[memoryview]:
        """The next write window, its 4 KiB stamps made unique, cut to ``length``.

        Used per block in dir mode; the file-mode write loop inlines the same steps.
        """
        window, stamp = self.next_window, self.next_stamp
        word = window * self.window_words
        if self.stamps_per_block == 1:
            self.words[word] = stamp
        else:
            end = word + self.stamps_per_block * (STAMP_SPACING // 8)
            self.words_np[word : end : STAMP_SPACING // 8] = self.stamp_offsets + np.uint64(stamp)
        self.next_stamp = (stamp + self.stamps_per_block) & 0xFFFF_FFFF_FFFF_FFFF
        self.next_window = window + 1 if window + 1 < len(self.windows) else 0
        views = self.windows[window]
        return views if length == self.block_size else [views[0][:length]]

    def close(self) -> None:
        """Drop the slot's views and unmap its memory; never raises.

        The engine keeps no view past a run, also when a run fails. Should one still be
        alive somewhere (say, in a frame an exception holds until a GC pass), ``close``
        would raise BufferError; the memory is then unmapped when that view goes instead.
        """
        self.read_view.clear()
        self.windows.clear()
        if hasattr(self, "words"):
            self.words.release()
            del self.words_np
        _unmap(self.read_mem)
        if self.pool is not None:
            _unmap(self.pool)


def _unmap(mem: mmap.mmap) -> None:
    # (A view still exported: the mapping goes with the last view, see SlotBuffer.close.)
    with contextlib.suppress(BufferError):
        mem.close()
