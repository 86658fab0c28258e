"""``--verify SALT``: the data pattern, and the check of a block read back; pure.

Every 64-bit little-endian word at file (or device) offset ``o`` (a multiple of 8) holds
``o + SALT`` modulo 2^64, elbencho's pattern, so any block can be checked on its own and a
wrong byte is named by its exact offset.

numpy is imported by the functions that compute with it: an engine that uses them loads
it before a phase's clock (see ``PosixEngine.begin_phase``).
"""

from __future__ import annotations

from typing import NamedTuple

WORD = 8
_MASK = (1 << 64) - 1


def pattern(offset: int, length: int, salt: int) -> bytes:
    """The bytes ``offset .. offset + length`` of the pattern (any alignment)."""
    import numpy as np

    first, last = offset // WORD, -(-(offset + length) // WORD)
    words = np.arange(first, last, dtype=np.uint64) * np.uint64(WORD) + np.uint64(salt)
    skip = offset - first * WORD
    return words.astype("<u8").tobytes()[skip : skip + length]


def expected_word(offset: int, salt: int) -> int:
    """The word the pattern holds at the 8-byte-aligned ``offset``."""
    return (offset + salt) & _MASK


class Mismatch(NamedTuple):
    """The first wrong byte of a block: its offset, and the word around it."""

    offset: int
    expected: int
    found: int


def check(data: memoryview | bytes, offset: int, salt: int) -> Mismatch | None:
    """Compare a block read at ``offset`` with the pattern; None when it matches."""
    want = pattern(offset, len(data), salt)
    if data == want:
        return None
    import numpy as np

    got = np.frombuffer(data, dtype=np.uint8)
    first_bad = int(np.argmax(got != np.frombuffer(want, dtype=np.uint8)))
    bad = offset + first_bad
    word_at = bad - bad % WORD
    # The found word from the block; bytes of it outside the block are taken as expected.
    found = bytearray(expected_word(word_at, salt).to_bytes(WORD, "little"))
    for i in range(WORD):
        pos = word_at + i - offset
        if 0 <= pos < len(data):
            found[i] = got[pos]
    return Mismatch(bad, expected_word(word_at, salt), int.from_bytes(found, "little"))
