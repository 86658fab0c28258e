"""Seed words of a phase's write data, in pure Python: numpy's SeedSequence cost a plain
native run its ~50 ms import.

SplitMix64 (Steele, Lea and Flood's generator, Java's SplittableRandom): a Weyl sequence
of the golden ratio through a bijective multiply-xorshift mixer, commonly used to seed
other generators (its outputs are fine SFC64 states); ``--randalgo fast``'s offsets are
its vectorised twin (:class:`~aiobench.plan.randalgo.GoldenWeyl`). The seed words are
absorbed one by one, each through the mixer, so seeds that differ in any word start
different streams.
"""

from __future__ import annotations

from collections.abc import Sequence

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15  # 2^64 / golden ratio, odd
MIX1, MIX2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def _mix(z: int) -> int:
    """SplitMix64's finaliser: a bijection of 64-bit words."""
    z = ((z ^ (z >> 30)) * MIX1) & MASK
    z = ((z ^ (z >> 27)) * MIX2) & MASK
    return z ^ (z >> 31)


class SplitMix64:
    """SplitMix64 started from ``seeds`` (each a 64-bit word)."""

    def __init__(self, seeds: Sequence[int]) -> None:
        state = 0
        for seed in seeds:
            if not 0 <= seed <= MASK:
                raise ValueError(f"seed words are 64-bit (got {seed})")
            # (for a fixed state a bijection of the word; for a fixed word, of the state)
            state = _mix(((state ^ seed) + GOLDEN) & MASK)
        self.state = state

    def next(self) -> int:
        """The next 64-bit word."""
        self.state = (self.state + GOLDEN) & MASK
        return _mix(self.state)

    def words(self, count: int) -> tuple[int, ...]:
        """The next ``count`` words: an SFC64 state when ``count`` is 4."""
        return tuple(self.next() for _ in range(count))
