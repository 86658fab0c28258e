"""elbencho's generator choices, ``--randalgo`` (random offsets) and ``--blockvaralgo``
(the ``--blockvarpct`` refill): each name a distinct generator, seeded by the run's seed.

- ``fast``: for offsets a golden-ratio Weyl sequence through a multiply-xorshift mixer
  (:class:`GoldenWeyl`, vectorised, the cheapest per value); for the refill SFC64 (what
  ``--blockvarpct`` always used, numpy's fastest raw generator).
- ``balanced_single``: PCG64 (also the stream of ``--rand`` reads without ``--randalgo``,
  as elbencho's default for reads is ``balanced_single``).
- ``balanced``: PCG64-DXSM.
- ``strong``: MT19937, the generator elbencho itself runs for ``strong``.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt

FAST = "fast"
_BIT_GENERATORS: dict[str, type[np.random.BitGenerator]] = {
    "balanced_single": np.random.PCG64,
    "balanced": np.random.PCG64DXSM,
    "strong": np.random.MT19937,
}
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # 2^64 / golden ratio, odd
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


class IntSource(Protocol):
    """What an offset stream draws from: ``numpy.random.Generator.integers``' form."""

    def integers(
        self, low: int, high: int, size: int, dtype: type[np.int64]
    ) -> npt.NDArray[np.int64]: ...


class GoldenWeyl:
    """``fast``: x_i = s + i * golden (mod 2^64), each passed through a bijective
    xorshift-multiply mixer; uniform integers from the top 53 bits."""

    def __init__(self, seed: np.random.SeedSequence) -> None:
        self.state = np.uint64(int(seed.generate_state(1, np.uint64)[0]))
        self._steps = np.arange(1, 4097, dtype=np.uint64) * _GOLDEN

    def raw(self, count: int) -> npt.NDArray[np.uint64]:
        """The next ``count`` 64-bit values."""
        out = np.empty(count, dtype=np.uint64)
        done = 0
        with np.errstate(over="ignore"):
            while done < count:
                step = min(count - done, self._steps.size)
                x = self._steps[:step] + self.state
                self.state = x[-1]
                x ^= x >> np.uint64(30)
                x *= _MIX1
                x ^= x >> np.uint64(27)
                x *= _MIX2
                x ^= x >> np.uint64(31)
                out[done : done + step] = x
                done += step
        return out

    def integers(
        self, low: int, high: int, size: int, dtype: type[np.int64] = np.int64
    ) -> npt.NDArray[np.int64]:
        """``size`` integers in ``[low, high)``."""
        unit = (self.raw(size) >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))
        values = np.floor(unit * (high - low)).astype(dtype) + low
        return np.minimum(values, high - 1)


def offset_source(algo: str, seed: np.random.SeedSequence) -> IntSource:
    """The ``--randalgo`` generator ``algo`` for one thread's offsets."""
    if algo == FAST:
        return GoldenWeyl(seed)
    return np.random.Generator(_BIT_GENERATORS[algo](seed))


def refill_generator(algo: str, seed: np.random.SeedSequence) -> np.random.BitGenerator:
    """The ``--blockvaralgo`` generator ``algo`` (not ``fast``: SFC64's state lives in the
    slot, see :mod:`aiobench.engines.buffers`)."""
    return _BIT_GENERATORS[algo](seed)
