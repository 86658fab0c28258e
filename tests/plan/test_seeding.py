"""SplitMix64 from the run's seeds (aiobench.plan.seeding): the write pools' SFC64 states,
the stamps' salt and the refill states, without numpy."""

from __future__ import annotations

import numpy as np
import pytest

from aiobench.plan.randalgo import GoldenWeyl
from aiobench.plan.seeding import MASK, SplitMix64


def test_the_stream_is_splitmix64() -> None:
    """The reference generator's first outputs from state 1234567."""
    mix = SplitMix64([])
    mix.state = 1234567
    expected = (
        6457827717110365317,
        3203168211198807973,
        9817491932198370423,
        4593380528125082431,
        16408922859458223821,
    )
    assert mix.words(5) == expected


def test_golden_weyl_is_its_vectorised_twin() -> None:
    weyl = GoldenWeyl(np.random.SeedSequence(4))
    mix = SplitMix64([])
    mix.state = int(weyl.state)
    assert weyl.raw(5000).tolist() == list(mix.words(5000))


def test_the_same_seeds_give_the_same_words() -> None:
    words = SplitMix64([7, 0, 1 << 32]).words(64)
    assert SplitMix64([7, 0, 1 << 32]).words(64) == words
    assert all(0 <= w <= MASK for w in words)
    assert len(set(words)) == len(words)


def test_any_seed_word_starts_another_stream() -> None:
    """slots_for's seeds (--seed, phase index, 2^32 + the first rank), one word changed at
    a time; and lists of other lengths or order."""
    lists = [
        [1, 0, 1 << 32],
        [2, 0, 1 << 32],
        [1, 1, 1 << 32],
        [1, 0, (1 << 32) + 1],
        [MASK, 0, 1 << 32],
        [0, 1, 1 << 32],
        [1, 0],
        [1],
        [0],
        [],
        [1, 0, 1 << 32, 0],
    ]
    firsts = [SplitMix64(seeds).words(4) for seeds in lists]
    assert len(set(firsts)) == len(lists)
    assert len({w for words in firsts for w in words}) == 4 * len(lists)


@pytest.mark.parametrize("bad", [-1, 1 << 64])
def test_seed_words_are_64_bit(bad: int) -> None:
    with pytest.raises(ValueError, match="64-bit"):
        SplitMix64([1, bad])
