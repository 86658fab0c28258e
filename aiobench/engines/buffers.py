"""A slot's page-aligned memory: read areas and the write pool of stamped random windows."""

from __future__ import annotations

import contextlib
import mmap
from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Protocol

from aiobench.plan.pool import PAGE, STAMP_SPACING, _round_up, pool_bytes, pool_windows
from aiobench.plan.randalgo import refill_generator
from aiobench.plan.seeding import MASK, SplitMix64

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from aiobench.engines._native import Spec

try:  # the slot state's C type and the pool fill, when the optional extension is built
    from aiobench.engines._native import Slot as _Slot
    from aiobench.engines._native import sfc64_fill as _sfc64_fill
except ImportError:
    _Slot = None  # type: ignore[assignment,misc]
    _sfc64_fill = None  # type: ignore[assignment]

_STAMP_WORDS = STAMP_SPACING // 8  # 64-bit words from one stamp to the next


class PoolSource:
    """A phase's write data, drawn before its clock without numpy: one SFC64 stream through
    the pools of its slots in turn, and the words seeding the rest (each slot's
    --blockvarpct refill, the stamps' salt), all from a SplitMix64 of ``seeds``."""

    def __init__(self, seeds: Sequence[int]) -> None:
        self.seeding = SplitMix64(seeds)
        self.sfc = self.seeding.words(4)

    def fill(self, mem: mmap.mmap) -> None:
        """``mem`` filled with the stream's next words."""
        self.sfc = sfc64_fill(mem, self.sfc)


def sfc64_fill(mem: mmap.mmap, state: Sequence[int]) -> tuple[int, ...]:
    """``mem`` filled with SFC64's raw 64-bit words from ``state`` (native order); the state
    after them. Without the extension numpy's SFC64 draws the same words."""
    if _sfc64_fill is not None:
        return _sfc64_fill(mem, state)
    import numpy as np

    generator = sfc64_at(state)
    np.frombuffer(mem, dtype=np.uint64)[:] = generator.random_raw(len(mem) // 8)
    return sfc64_state(generator)


def sfc64_at(state: Sequence[int]) -> np.random.SFC64:
    """numpy's SFC64 at ``state`` (numpy loaded here: only the Python engine's --blockvarpct
    and runs without the extension need it)."""
    import numpy as np

    generator = np.random.SFC64(0)
    generator.state = {
        "bit_generator": "SFC64",
        "state": {"state": np.array(state, dtype=np.uint64)},
        "has_uint32": 0,
        "uinteger": 0,
    }
    return generator


def sfc64_state(generator: np.random.SFC64) -> tuple[int, ...]:
    """The state words of numpy's SFC64, as the slot keeps them."""
    return tuple(int(word) for word in generator.state["state"]["state"])


class SlotState(Protocol):
    """A slot's buffer state, read and advanced in place by both engines: the pool position
    (next window and stamp) and the --blockvarpct generator's SFC64 state words."""

    next_window: int
    next_stamp: int
    sfc: tuple[int, ...]

    def settle(self) -> None:
        """Wait for operations the native engine left in flight with the slot's memory."""

    def close(self) -> None: ...


class PySlotState:
    """The slot state without the C extension (whose :class:`~aiobench.engines._native.Slot`
    also holds the slot's memory for the native engine): the same attributes, in Python."""

    __slots__ = ("next_stamp", "next_window", "sfc")

    def __init__(self, next_stamp: int, sfc: tuple[int, ...]) -> None:
        self.next_window = 0
        self.next_stamp = next_stamp
        self.sfc = sfc

    def settle(self) -> None:
        """(Nothing is ever in flight: only the native engine queues operations.)"""

    def close(self) -> None:
        """(Nothing to release: the memory is the SlotBuffer's.)"""


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
        source: PoolSource,
        stamp_base: int,
        depth: int = 1,
        writes: int | None = None,
    ) -> None:
        """``source``: the phase's, the pool's data and the refill's seed (drawn in the order
        the slots are made). ``writes``: the most writes the slot can make (None: no bound);
        a pool needs no more windows than that."""
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
        self.pool: mmap.mmap | None = None  # the write pool (``mem``), None when only reading
        sfc: tuple[int, ...] = (0, 0, 0, 0)
        if for_write:
            sfc = self._fill_pool(source, writes)
        self._first_sfc = sfc  # --blockvaralgo's seed (see algo_refill)
        self._algo_refills: dict[str, np.random.BitGenerator] = {}
        # The state both engines advance, made once: with the extension built, the C object
        # the native engine's calls are given, holding the memory for them.
        self.state: SlotState = _slot_state(self, stamp_base, sfc)
        # The native engine's file-mode run spec of this slot (see aiobench.engines.native),
        # made on its first run: what stays the same from one run to the next.
        self.run_spec: Spec | None = None

    def _fill_pool(self, source: PoolSource, writes: int | None) -> tuple[int, ...]:
        """Map and fill the write pool; the --blockvarpct generator's first state."""
        block_size, depth = self.block_size, self.depth
        step, count = pool_windows(block_size, depth, writes)
        size = pool_bytes(block_size, depth, writes)
        self.pool = self.mem = mmap.mmap(-1, size)
        # SFC64's raw words, written in place by C at ~10 GB/s here, page faults aside (a
        # pool per slot at -t 1024 is 260 MiB to fill before the clock).
        source.fill(self.mem)
        view = memoryview(self.mem)
        self.windows = [[view[o : o + block_size]] for o in range(0, count * step, step)]
        self.window_words = step // 8
        self.words = view.cast("Q")
        # --blockvarpct refills from SFC64's raw output too: ~3.6 GB/s on one core here,
        # against ~0.3 GB/s for Generator.bytes(). The state lives in ``state.sfc``.
        return source.seeding.words(4)

    @cached_property
    def words_np(self) -> npt.NDArray[np.uint64]:
        """The pool's words for numpy, made on first use: by the Python engine only."""
        import numpy as np

        return np.frombuffer(self.mem, dtype=np.uint64)

    def next_block(self, length: int) -> list[memoryview]:
        """The next write window, its 4 KiB stamps made unique, cut to ``length``.

        Used per block in dir mode; the file-mode write loop inlines the same steps.
        """
        state = self.state
        window, stamp = state.next_window, state.next_stamp
        word = window * self.window_words
        if self.stamps_per_block == 1:
            self.words[word] = stamp
        else:  # (~75 ns a stamp, numpy's ~1.5 us a call: as fast up to 64 KiB blocks)
            words = self.words
            for k in range(self.stamps_per_block):
                words[word + k * _STAMP_WORDS] = (stamp + k) & MASK
        state.next_stamp = (stamp + self.stamps_per_block) & MASK
        state.next_window = window + 1 if window + 1 < len(self.windows) else 0
        views = self.windows[window]
        return views if length == self.block_size else [views[0][:length]]

    def refill_generator(self) -> np.random.SFC64:
        """numpy's SFC64 at the slot's --blockvarpct state, for one run of the Python engine,
        which then hands it back with :meth:`keep_refill` (the native engine's runs advance
        ``state.sfc`` in place)."""
        return sfc64_at(self.state.sfc)

    def algo_refill(self, algo: str) -> np.random.BitGenerator:
        """--blockvaralgo other than fast: the slot's own generator ``algo``, seeded from the
        first SFC64 state (so by the run's seed), kept here from one run to the next (only
        the Python engine refills with it)."""
        generator = self._algo_refills.get(algo)
        if generator is None:
            import numpy as np

            seed = np.random.SeedSequence([int(word) for word in self._first_sfc])
            generator = self._algo_refills[algo] = refill_generator(algo, seed)
        return generator

    def keep_refill(self, generator: np.random.SFC64) -> None:
        """The generator's state after a Python-engine run, back into the slot's."""
        self.state.sfc = sfc64_state(generator)

    def close(self) -> None:
        """Drop the slot's views and unmap its memory; never raises.

        The engine keeps no view past a run, also when a run fails. Should one still be
        alive somewhere (say, in a frame an exception holds until a GC pass), ``close``
        would raise BufferError; the memory is then unmapped when that view goes instead.
        """
        self.run_spec = None
        with contextlib.suppress(BufferError):  # (a C call using it: see _unmap)
            self.state.close()
        self.read_view.clear()
        self.windows.clear()
        vars(self).pop("words_np", None)
        if hasattr(self, "words"):
            self.words.release()
        _unmap(self.read_mem)
        if self.pool is not None:
            _unmap(self.pool)


def _slot_state(buf: SlotBuffer, stamp_base: int, sfc: tuple[int, ...]) -> SlotState:
    if _Slot is None:
        return PySlotState(stamp_base, sfc)
    return _Slot(
        buf.read_mem,
        buf.read_area,
        buf.depth,
        pool=buf.pool,
        window_words=buf.window_words,
        windows=len(buf.windows),
        stamps=buf.stamps_per_block,
        next_stamp=stamp_base,
        sfc=sfc,
    )


def _unmap(mem: mmap.mmap) -> None:
    # (A view still exported: the mapping goes with the last view, see SlotBuffer.close.)
    with contextlib.suppress(BufferError):
        mem.close()
