"""elbencho's generator choices, ``--randalgo`` (random offsets) and ``--blockvaralgo``
(the ``--blockvarpct`` refill): each name a distinct generator, seeded by the run's seed.

- ``fast``: for offsets a golden-ratio Weyl sequence through a multiply-xorshift mixer
  (:class:`GoldenWeyl`, vectorised, the cheapest per value); for the refill SFC64 (what
  ``--blockvarpct`` always used, numpy's fastest raw generator).
- ``balanced_single``: PCG64 (also the stream of ``--rand`` reads without ``--randalgo``,
  as elbencho's default for reads is ``balanced_single``).
- ``balanced``: PCG64-DXSM.
- ``strong``: MT19937, the generator elbencho itself runs for ``strong``.

numpy is imported where a generator is made (before a phase's clock), not with this
module: a run that draws no random numbers does not load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

FAST = "fast"
_GOLDEN = 0x9E3779B97F4A7C15  # 2^64 / golden ratio, odd
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB


class IntSource(Protocol):
    """What an offset stream draws from: ``numpy.random.Generator.integers``' form."""

    def integers(
        self, low: int, high: int, size: int, dtype: type[np.int64]
    ) -> npt.NDArray[np.int64]: ...


class GoldenWeyl:
    """``fast``: x_i = s + i * golden (mod 2^64), each passed through a bijective
    xorshift-multiply mixer; uniform integers from the top 53 bits."""

    def __init__(self, seed: np.random.SeedSequence) -> None:
        import numpy as np

        u64 = np.uint64
        self.state = u64(int(seed.generate_state(1, u64)[0]))
        self._steps = np.arange(1, 4097, dtype=u64) * u64(_GOLDEN)
        self._mix1, self._mix2 = u64(_MIX1), u64(_MIX2)
        self._s11, self._s27, self._s30, self._s31 = (u64(n) for n in (11, 27, 30, 31))

    def raw(self, count: int) -> npt.NDArray[np.uint64]:
        """The next ``count`` 64-bit values (uint64 arrays wrap around, no warning)."""
        if count > self._steps.size:
            import numpy as np

            return np.concatenate([self.raw(self._steps.size), self.raw(count - self._steps.size)])
        x = self._steps[:count] + self.state
        self.state = x[-1]
        x ^= x >> self._s30
        x *= self._mix1
        x ^= x >> self._s27
        x *= self._mix2
        x ^= x >> self._s31
        return x

    def integers(
        self, low: int, high: int, size: int, dtype: type[np.int64]
    ) -> npt.NDArray[np.int64]:
        """``size`` integers in ``[low, high)``: the top 53 bits scaled to the span."""
        import numpy as np

        scaled = (self.raw(size) >> self._s11) * ((high - low) / (1 << 53))
        values = scaled.astype(dtype)
        np.minimum(values, high - low - 1, out=values)
        return values + low if low else values


def offset_source(algo: str, seed: np.random.SeedSequence) -> IntSource:
    """The ``--randalgo`` generator ``algo`` for one thread's offsets."""
    if algo == FAST:
        return GoldenWeyl(seed)
    import numpy as np

    return np.random.Generator(_bit_generator(algo)(seed))


def refill_generator(algo: str, seed: np.random.SeedSequence) -> np.random.BitGenerator:
    """The ``--blockvaralgo`` generator ``algo`` (not ``fast``: SFC64's state lives in the
    slot, see :mod:`aiobench.engines.buffers`)."""
    return _bit_generator(algo)(seed)


def _bit_generator(algo: str) -> type[np.random.BitGenerator]:
    """numpy's bit generator of each name but ``fast``."""
    import numpy as np

    kinds: dict[str, type[np.random.BitGenerator]] = {
        "balanced_single": np.random.PCG64,
        "balanced": np.random.PCG64DXSM,
        "strong": np.random.MT19937,
    }
    return kinds[algo]
