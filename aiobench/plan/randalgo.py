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

from functools import cache
from typing import TYPE_CHECKING, NamedTuple, Protocol

from aiobench.plan.seeding import GOLDEN, MIX1, MIX2

if TYPE_CHECKING:  # (numpy is loaded on first use: a plain native run never needs it)
    import numpy as np
    import numpy.typing as npt

FAST = "fast"


@cache
def _bit_generators() -> dict[str, type[np.random.BitGenerator]]:
    import numpy as np

    return {
        "balanced_single": np.random.PCG64,
        "balanced": np.random.PCG64DXSM,
        "strong": np.random.MT19937,
    }


class _Words(NamedTuple):
    """GoldenWeyl's constants as numpy uint64 words, made on first use: each step stays in
    uint64 whatever numpy's promotion rules."""

    golden: np.uint64
    mix1: np.uint64
    mix2: np.uint64
    s11: np.uint64
    s27: np.uint64
    s30: np.uint64
    s31: np.uint64


@cache
def _words() -> _Words:
    import numpy as np

    numbers = (GOLDEN, MIX1, MIX2, 11, 27, 30, 31)
    return _Words(*(np.uint64(n) for n in numbers))


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

        self.state = np.uint64(int(seed.generate_state(1, np.uint64)[0]))
        self._steps = np.arange(1, 4097, dtype=np.uint64) * _words().golden

    def raw(self, count: int) -> npt.NDArray[np.uint64]:
        """The next ``count`` 64-bit values (uint64 arrays wrap around, no warning)."""
        import numpy as np

        if count > self._steps.size:
            return np.concatenate([self.raw(self._steps.size), self.raw(count - self._steps.size)])
        w = _words()
        x = self._steps[:count] + self.state
        self.state = x[-1]
        x ^= x >> w.s30
        x *= w.mix1
        x ^= x >> w.s27
        x *= w.mix2
        x ^= x >> w.s31
        return x

    def integers(
        self, low: int, high: int, size: int, dtype: type[np.int64]
    ) -> npt.NDArray[np.int64]:
        """``size`` integers in ``[low, high)``: the top 53 bits scaled to the span."""
        import numpy as np

        values = ((self.raw(size) >> _words().s11) * ((high - low) / (1 << 53))).astype(dtype)
        np.minimum(values, high - low - 1, out=values)
        return values + low if low else values


def offset_source(algo: str, seed: np.random.SeedSequence) -> IntSource:
    """The ``--randalgo`` generator ``algo`` for one thread's offsets."""
    if algo == FAST:
        return GoldenWeyl(seed)
    import numpy as np

    return np.random.Generator(_bit_generators()[algo](seed))


def refill_generator(algo: str, seed: np.random.SeedSequence) -> np.random.BitGenerator:
    """The ``--blockvaralgo`` generator ``algo`` (not ``fast``: SFC64's state lives in the
    slot, see :mod:`aiobench.engines.buffers`)."""
    return _bit_generators()[algo](seed)
