"""The write pools' data: SFC64's raw words from SplitMix64 seeds, filled in C (numpy's
SFC64 without the extension, the same words), one stream through a phase's slots."""

from __future__ import annotations

import mmap
from pathlib import Path

import numpy as np
import pytest

from aiobench.engines import buffers, native
from aiobench.engines.buffers import PoolSource, SlotBuffer
from aiobench.plan.pool import pool_bytes
from aiobench.plan.seeding import SplitMix64
from tests.helpers import RunCli

try:  # the C fill (without the extension its tests are skipped)
    from aiobench.engines._native import sfc64_fill as c_fill
except ImportError:
    c_fill = None  # type: ignore[assignment]

built = pytest.mark.skipif(not native.available(), reason=f"{native.build_error}")

STATES = [
    (0, 0, 0, 0),
    (1, 2, 3, 4),
    (2**64 - 1, 2**64 - 1, 2**64 - 1, 2**64 - 3),  # the counter wraps after 3 words
    SplitMix64([11]).words(4),
]


def numpy_sfc64(state: tuple[int, ...]) -> np.random.SFC64:
    """numpy's own SFC64 at ``state``: the reference."""
    generator = np.random.SFC64(0)
    generator.state = {
        "bit_generator": "SFC64",
        "state": {"state": np.array(state, dtype=np.uint64)},
        "has_uint32": 0,
        "uinteger": 0,
    }
    return generator


def numpy_state(generator: np.random.SFC64) -> tuple[int, ...]:
    return tuple(int(word) for word in generator.state["state"]["state"])


@built
@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("size", [8, 4096 + 8, 3 << 20])
def test_the_c_fill_draws_numpys_sfc64_words(state: tuple[int, ...], size: int) -> None:
    reference = numpy_sfc64(state)
    want = reference.random_raw(size // 8).tobytes()
    with mmap.mmap(-1, size) as mem:
        after = c_fill(mem, state)
        assert mem[:] == want
    assert after == numpy_state(reference)
    # Anywhere in a buffer: an odd address, a bytearray, numpy's words.
    odd = bytearray(size + 1)
    assert c_fill(memoryview(odd)[1:], state) == after
    assert odd[1:] == want
    words = np.zeros(size // 8, dtype=np.uint64)
    assert c_fill(words, state) == after
    assert words.tobytes() == want


@built
def test_the_c_fill_continues_where_it_stopped() -> None:
    state = SplitMix64([12]).words(4)
    whole, halves = bytearray(1 << 16), bytearray(1 << 16)
    end = c_fill(whole, state)
    mid = c_fill(memoryview(halves)[: 1 << 15], state)
    assert c_fill(memoryview(halves)[1 << 15 :], mid) == end
    assert halves == whole
    assert c_fill(bytearray(), state) == state  # (no words: the same state)


@built
@pytest.mark.parametrize(
    ("buffer", "state", "error"),
    [
        (bytes(8), (1, 2, 3, 4), TypeError),  # read-only
        (None, (1, 2, 3, 4), TypeError),
        (bytearray(12), (1, 2, 3, 4), ValueError),  # not whole words
        (bytearray(8), (1, 2, 3), ValueError),
        (bytearray(8), (1, 2, 3, 4, 5), ValueError),
        (bytearray(8), (1, 2, 3, -1), ValueError),
        (bytearray(8), (1, 2, 3, 1 << 64), ValueError),
        (bytearray(8), 7, TypeError),
        (bytearray(8), (1, 2, 3, "4"), TypeError),
        (bytearray(8), (1, 2, 3, 4.0), TypeError),
    ],
)
def test_the_c_fill_refuses_what_it_cannot_fill(
    buffer: object, state: object, error: type[Exception]
) -> None:
    with pytest.raises(error):
        c_fill(buffer, state)  # type: ignore[arg-type]
    if isinstance(buffer, bytearray):
        assert not any(buffer)  # (nothing written)


def slot_buffers(seeds: list[int], blocks: list[int]) -> tuple[list[SlotBuffer], PoolSource]:
    source = PoolSource(seeds)
    return [SlotBuffer(b, for_write=True, source=source, stamp_base=0) for b in blocks], source


def pools(bufs: list[SlotBuffer]) -> list[tuple[bytes, tuple[int, ...]]]:
    """Each slot's pool bytes and --blockvarpct state (the buffers closed)."""
    seen = []
    for buf in bufs:
        assert buf.pool is not None
        seen.append((buf.pool[:], buf.state.sfc))
        buf.close()
    return seen


BLOCKS = [4096, 1000, 1 << 20, 64 * 1024]


def test_a_phases_pools_continue_one_sfc64_stream() -> None:
    """Pool after pool: the SFC64 words of the SplitMix64 state, then each slot's refill
    state the next SplitMix64 words."""
    bufs, source = slot_buffers([5, 1, 1 << 32], BLOCKS)
    seen = pools(bufs)
    seeding = SplitMix64([5, 1, 1 << 32])
    stream = numpy_sfc64(seeding.words(4))
    for (pool, refill), block in zip(seen, BLOCKS, strict=True):
        assert len(pool) == pool_bytes(block)
        assert pool == stream.random_raw(len(pool) // 8).tobytes()
        assert refill == seeding.words(4)
    assert source.sfc == numpy_state(stream)


@built
def test_pools_are_the_same_without_the_extension(monkeypatch: pytest.MonkeyPatch) -> None:
    with_c = pools(slot_buffers([9, 0, 1 << 32], BLOCKS)[0])
    monkeypatch.setattr(buffers, "_sfc64_fill", None)  # (as a build without it)
    without = pools(slot_buffers([9, 0, 1 << 32], BLOCKS)[0])
    assert without == with_c


def test_other_seeds_phases_and_ranks_fill_other_pools() -> None:
    """The seed list of slots_for: (--seed, phase index, 2^32 + the first thread rank)."""
    seen = []
    for seeds in ([1, 0, 1 << 32], [2, 0, 1 << 32], [1, 1, 1 << 32], [1, 0, (1 << 32) + 1]):
        first, second = pools(slot_buffers(seeds, [4096, 4096])[0])
        assert first[0] != second[0] and first[1] != second[1]  # slot by slot
        seen += [first[0][:64], second[0][:64]]
    assert len(set(seen)) == len(seen)


def test_next_block_stamps_each_4k_and_wraps_at_2_to_the_64() -> None:
    """(A loop over the pool's words, no numpy: the Python engine's and dir mode's.)"""
    buf = SlotBuffer(16384, for_write=True, source=PoolSource([1]), stamp_base=(1 << 64) - 2)
    try:
        before = buf.words.tolist()
        [view] = buf.next_block(16384)
        assert view.obj is buf.mem and buf.state.next_stamp == 2
        stamps = [0, 512, 1024, 1536]
        after = buf.words.tolist()
        assert [after[w] for w in stamps] == [(1 << 64) - 2, (1 << 64) - 1, 0, 1]
        assert [a for w, a in enumerate(after) if w not in stamps] == [
            b for w, b in enumerate(before) if w not in stamps
        ]
        [view] = buf.next_block(16384)
        assert buf.words[buf.window_words] == 2 and buf.state.next_stamp == 6
    finally:
        buf.close()


# -- the CLI: the same --seed, the same bytes ------------------------------------------------


def written(run_cli: RunCli, where: Path, *args: str) -> list[bytes]:
    """Two files written by two threads with ``args``."""
    where.mkdir()
    files = [where / "a", where / "b"]
    base = ["-w", "-t", "2", "-b", "16k", "-s", "256k", "--nolive"]
    proc = run_cli(*base, *args, *(str(f) for f in files))
    assert proc.returncode == 0, proc.stderr
    return [f.read_bytes() for f in files]


def bodies(data: list[bytes]) -> list[bytes]:
    """Every 4 KiB block without its stamp: the pool's own bytes."""
    return [d[i + 8 : i + 4096] for d in data for i in range(0, len(d), 4096)]


@built
def test_the_same_seed_writes_the_same_bytes_on_either_engine(
    run_cli: RunCli, tmp_path: Path
) -> None:
    first = written(run_cli, tmp_path / "1", "--seed", "7", "--ioengine", "native")
    assert [len(d) for d in first] == [256 * 1024] * 2
    assert len(set(bodies(first))) == len(bodies(first))  # each thread a pool of its own
    assert written(run_cli, tmp_path / "2", "--seed", "7", "--ioengine", "native") == first
    assert written(run_cli, tmp_path / "3", "--seed", "7", "--ioengine", "python") == first
    for k, other in enumerate((["--seed", "8"], ["--seed", "7", "--rankoffset", "2"])):
        data = written(run_cli, tmp_path / f"other{k}", *other)
        assert not set(bodies(data)) & set(bodies(first))
