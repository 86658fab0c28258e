"""File mode's block range (:class:`Layout`) and its seeded per-thread operation streams:
sequential, uniform random, full-coverage permutation.

Pure: a stream turns a thread's :class:`Slice` of the range into runs of
``(path index, offset)`` pairs of one length, without touching the disk. A sequential
stream's offsets are ranges and load no numpy (its import is a third of a small run's
start); the streams that compute with numpy (random, backward or strided, --rwmixpct)
import it when they are made or first taken from, before the phase's clock.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from importlib import import_module
from typing import TYPE_CHECKING, NamedTuple

from aiobench.kinds import READ, WRITE, PhaseKind, phase_name
from aiobench.plan.randalgo import IntSource, offset_source
from aiobench.plan.rwbalance import RwBalance
from aiobench.plan.split import StreamOrder, ThreadSplit

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    IntArray = npt.NDArray[np.int64]
    BoolArray = npt.NDArray[np.bool_]

# How many permutation values one vectorised step computes (about 32 KiB of state).
_PERM_CHUNK = 4096


class Slice(NamedTuple):
    """One thread's contiguous share of the concatenated block range."""

    first_block: int
    blocks: int


@dataclass(frozen=True, slots=True)
class Layout:
    """All paths as one virtual range of blocks (``path1 || path2 || ...``); pure."""

    sizes: tuple[int, ...]
    block_size: int
    cum_blocks: tuple[int, ...] = field(init=False)

    def __post_init__(self) -> None:
        cum = [0]
        for size in self.sizes:
            cum.append(cum[-1] + -(-size // self.block_size))
        object.__setattr__(self, "cum_blocks", tuple(cum))

    @property
    def total_blocks(self) -> int:
        return self.cum_blocks[-1]

    @property
    def total_bytes(self) -> int:
        return sum(self.sizes)

    def slices(self, threads: int) -> list[Slice]:
        """``total // threads`` blocks each, in order; the last thread takes the remainder."""
        each = self.total_blocks // threads
        out = [Slice(r * each, each) for r in range(threads - 1)]
        out.append(Slice((threads - 1) * each, self.total_blocks - (threads - 1) * each))
        return out

    def locate(self, block: int) -> tuple[int, int, int]:
        """Global block -> (path index, byte offset in that path, length of the block)."""
        index = bisect.bisect_right(self.cum_blocks, block) - 1
        offset = (block - self.cum_blocks[index]) * self.block_size
        return index, offset, min(self.block_size, self.sizes[index] - offset)

    @property
    def dir_mode(self) -> bool:
        """Whether a phase's units are entries (dirs, files, objects): here they are blocks."""
        return False

    @property
    def dir_phases(self) -> bool:
        """Whether -d/-D have dirs to make or remove: file mode has none."""
        return False

    def moves_data(self, kind: PhaseKind) -> bool:
        """Whether a phase of ``kind`` reads or writes data (its slots need buffers)."""
        return kind in (READ, WRITE)

    def bytes_per_path(self) -> list[int]:
        """The bytes of data in each PATH: its size."""
        return list(self.sizes)

    def phase_name(self, kind: PhaseKind, rwmix_pct: int | None = None) -> str:
        """The name of a phase of ``kind`` in results (:func:`aiobench.kinds.phase_name`)."""
        return phase_name(kind, rwmix_pct)

    def streams(
        self, kind: PhaseKind, phase_index: int, order: StreamOrder, split: ThreadSplit
    ) -> list[OpStream]:
        """The operations of each thread rank of ``split`` in a phase of ``kind``."""
        stride = split.slices if order.strided else 1
        mine = range(split.base, split.base + len(split.ids))
        if order.strided:
            # Thread r takes blocks r, r + threads, ... of the concatenated range.
            total = self.total_blocks
            parts = [Slice(r, len(range(r, total, stride))) for r in mine]
        else:
            parts = self.slices(split.slices)[mine.start : mine.stop]
        counts = ops_per_thread(self, parts, split.slices, order.rand, order.randamount_bytes)
        balance = stream_balance(order, kind, split.ids, self.block_size)
        return [
            OpStream(
                layout=self,
                part=part,
                total_ops=count,
                rand=order.rand,
                aligned=order.aligned,
                permute=kind == WRITE
                and order.randalgo is None
                and not order.reader_thread(kind, rank - split.ids.start),
                rng=partial(stream_rng, order, phase_index, rank),
                backward=order.backward,
                stride=stride,
                loop=order.loop,
                mix=stream_mix(order, kind, rank, rank - split.ids.start),
                draw=offsets_rng(order, phase_index, rank),
                balance=balance,
            )
            for rank, part, count in zip(split.ids, parts, counts, strict=True)
        ]


def stream_rng(order: StreamOrder, phase_index: int, rank: int) -> np.random.Generator:
    """Thread rank ``rank``'s random stream of offsets in phase ``phase_index``."""
    import numpy as np

    return np.random.default_rng(np.random.SeedSequence([order.seed, phase_index, rank]))


def offsets_rng(order: StreamOrder, phase_index: int, rank: int) -> IntSource | None:
    """--randalgo: thread rank ``rank``'s generator of offsets (None: :func:`stream_rng`)."""
    if order.randalgo is None or not order.rand:
        return None
    import numpy as np

    return offset_source(order.randalgo, np.random.SeedSequence([order.seed, phase_index, rank]))


def stream_balance(
    order: StreamOrder, kind: PhaseKind, ranks: range, block_size: int
) -> RwBalance | None:
    """--rwmixthrpct: the balance of this process's reader and writer threads (None: none)."""
    if not order.rwmixthrpct or kind != WRITE or order.rwmixthr is None:
        return None
    readers = min(order.rwmixthr, len(ranks))  # (the first N threads of each process)
    return RwBalance(order.rwmixthrpct, readers, len(ranks) - readers, block_size)


def stream_mix(order: StreamOrder, kind: PhaseKind, rank: int, local: int) -> RwMix | None:
    """Which operations of thread ``rank`` (the ``local``-th of its process) read:
    --rwmixpct's rule, or with --rwmixthr all of a reader thread's (pct 100) and none of a
    writer's (pct 0)."""
    reader = order.reader_thread(kind, local)
    if reader is not None:
        return RwMix(100 if reader else 0, rank)
    pct = order.rwmix_pct(kind)
    return None if pct is None else RwMix(pct, rank)


@dataclass(frozen=True, slots=True)
class RwMix:
    """--rwmixpct: which operations of a write phase are reads, elbencho's rule.

    Operation ``seq`` of thread ``rank`` (its count of operations handed out before it) is
    a read when ``(rank + seq) % 100 < pct``; every other operation is a write.
    """

    pct: int
    rank: int

    def __post_init__(self) -> None:
        # :meth:`is_read` computes with numpy in the phase: loaded now, before its clock.
        import_module("numpy")

    def _reads_below(self, x: int) -> int:
        return (x // 100) * self.pct + min(x % 100, self.pct)

    def reads(self, first_seq: int, count: int) -> int:
        """How many of the ``count`` operations from ``first_seq`` on are reads."""
        start = self.rank + first_seq
        return self._reads_below(start + count) - self._reads_below(start)

    def is_read(self, first_seq: int, count: int) -> BoolArray:
        """Per operation from ``first_seq`` on: whether it is a read."""
        import numpy as np

        seqs = np.arange(self.rank + first_seq, self.rank + first_seq + count, dtype=np.int64)
        return (seqs % 100) < self.pct


@dataclass(frozen=True, slots=True)
class OpRun:
    """Consecutive operations of one length, issued back to back by one slot.

    ``path_index`` is one int when every operation hits the same path, else a list with
    one entry per operation. ``offsets`` is a range where they are evenly spaced (a
    sequential stream's: made, cut and joined in O(1)), else a list.
    """

    path_index: int | list[int]
    offsets: Sequence[int]
    length: int
    # ``path_index`` as an array when it is a list (per-target counting without a
    # conversion on the event loop).
    path_array: IntArray | None = None
    # The thread's count of operations handed out before this run's first (its place in
    # the thread's schedule under --limitread/--limitwrite).
    first_seq: int = 0
    mix: RwMix | None = None  # --rwmixpct: which of the operations are reads
    # ``offsets`` as an array, where the stream made one: the native engine's operations
    # without a conversion per run. A slot's first run is long (made before the clock) and
    # a run does a budget's worth of it; the rest (``after``) is a view of it, not a copy.
    offsets_array: IntArray | None = None

    def __len__(self) -> int:
        return len(self.offsets)

    def totals(self, units: int, io_ops: int) -> tuple[int, int, int]:
        """(ops, bytes, entries) once the first ``units`` operations are done."""
        del io_ops  # file mode: the units are the I/O operations
        return units, units * self.length, 0

    def reads(self, units: int) -> tuple[int, int]:
        """(ops, bytes) of the reads among the first ``units`` operations (--rwmixpct)."""
        if self.mix is None:
            return 0, 0
        ops = self.mix.reads(self.first_seq, units)
        return ops, ops * self.length

    def add_per_path(self, units: int, io_ops: int, out: IntArray) -> None:
        """Add the (ops, bytes, entries) of the first ``units`` operations to ``out[path]``."""
        del io_ops
        if isinstance(self.path_index, int):
            out[self.path_index, :2] += (units, units * self.length)
            return
        import numpy as np

        array = self.path_array if self.path_array is not None else np.asarray(self.path_index)
        counts = np.bincount(array[:units], minlength=out.shape[0])
        out[:, 0] += counts
        out[:, 1] += counts * self.length

    def after(self, done: int) -> OpRun:
        """The operations of this run that come after the first ``done``."""
        index, array = self.path_index, self.path_array
        rest = index if isinstance(index, int) else index[done:]
        rest_array = None if array is None else array[done:]
        offsets = self.offsets_array
        return OpRun(
            rest,
            self.offsets[done:],
            self.length,
            rest_array,
            self.first_seq + done,
            self.mix,
            None if offsets is None else offsets[done:],
        )

    def pieces(self, size: int) -> list[OpRun]:
        """This run as consecutive runs of at most ``size`` operations."""
        if len(self) <= size:
            return [self]
        index, array, offsets = self.path_index, self.path_array, self.offsets_array
        out = []
        for start in range(0, len(self), size):
            end = start + size
            out.append(
                OpRun(
                    index if isinstance(index, int) else index[start:end],
                    self.offsets[start:end],
                    self.length,
                    None if array is None else array[start:end],
                    self.first_seq + start,
                    self.mix,
                    None if offsets is None else offsets[start:end],
                )
            )
        return out

    def joined(self, other: OpRun) -> OpRun | None:
        """This run and then ``other``, the same thread's next operations, as one run; None
        when they cannot be one (another length or --rwmixpct, or not consecutive)."""
        if (other.length, other.mix) != (self.length, self.mix):
            return None
        if other.first_seq != self.first_seq + len(self):
            return None
        offsets = _concat(self.offsets, other.offsets)
        array = None
        if self.offsets_array is not None and other.offsets_array is not None:
            array = _concat_arrays(self.offsets_array, other.offsets_array)
        first, mix = self.first_seq, self.mix
        if isinstance(self.path_index, int) and self.path_index == other.path_index:
            return OpRun(self.path_index, offsets, self.length, None, first, mix, array)
        # (runs on several targets: their per-target counts loaded numpy before the clock)
        paths = _concat_arrays(self._paths(), other._paths())
        return OpRun(paths.tolist(), offsets, self.length, paths, first, mix, array)

    def _paths(self) -> IntArray:
        import numpy as np

        if isinstance(self.path_index, int):
            return np.full(len(self), self.path_index, dtype=np.int64)
        if self.path_array is not None:
            return self.path_array
        return np.asarray(self.path_index, dtype=np.int64)


def _concat(first: Sequence[int], then: Sequence[int]) -> Sequence[int]:
    """``first`` and then ``then``: one range when they are ranges that go on one from the
    other (a sequential stream's consecutive runs), else a list."""
    if isinstance(first, range) and isinstance(then, range) and first:
        step = first.step
        whole = range(first.start, first.start + (len(first) + len(then)) * step, step)
        if whole[len(first) :] == then:
            return whole
    return [*first, *then]


def _concat_arrays(first: IntArray, then: IntArray) -> IntArray:
    import numpy as np

    return np.concatenate((first, then))


class Permutation:
    """A full-period pseudo-random order of ``range(n)``, generated in vectorised chunks.

    An LCG modulo 2^k (a = 1 mod 4, c odd: full period) is passed through a bijective
    xorshift-multiply mixer on k bits and values >= n are skipped (cycle walking), so each
    period visits every value below n exactly once, in O(1) memory.
    """

    def __init__(self, n: int, rng: np.random.Generator) -> None:
        import numpy as np

        self.n = n
        self.bits = max(1, (n - 1).bit_length())
        self.mask = np.uint64((1 << self.bits) - 1)
        modulus = 1 << self.bits
        a = (int(rng.integers(0, modulus)) * 4 + 1) % modulus or 1
        c = (int(rng.integers(0, modulus)) * 2 + 1) % modulus
        self.mul = np.uint64((int(rng.integers(0, modulus)) * 2 + 1) % modulus)
        self.shift = np.uint64(max(1, self.bits // 2))
        # x_{i+j} = A_j * x_i + C_j (mod 2^k): jump-ahead coefficients for one chunk.
        jump_a, jump_c = [], []
        acc_a, acc_c = 1, 0
        for _ in range(_PERM_CHUNK):
            acc_a, acc_c = (acc_a * a) % modulus, (acc_c * a + c) % modulus
            jump_a.append(acc_a)
            jump_c.append(acc_c)
        self.jump_a = np.array(jump_a, dtype=np.uint64)
        self.jump_c = np.array(jump_c, dtype=np.uint64)
        self.state = np.uint64(int(rng.integers(0, modulus)))
        self._pending = np.empty(0, dtype=np.int64)  # values made, not taken yet

    def take(self, count: int) -> IntArray:
        """The next ``count`` values of the sequence."""
        import numpy as np

        while self._pending.size < count:
            self._pending = np.concatenate((self._pending, self.chunk()))
        out, self._pending = self._pending[:count], self._pending[count:]
        return out

    def chunk(self) -> IntArray:
        """The next values of the sequence (at least a few, all < n)."""
        import numpy as np

        while True:
            with np.errstate(over="ignore"):
                raw = (self.jump_a * self.state + self.jump_c) & self.mask
                self.state = raw[-1]
                mixed = raw ^ (raw >> self.shift)
                mixed = (mixed * self.mul) & self.mask
            kept = mixed[mixed < np.uint64(self.n)]
            if kept.size:
                return kept.astype(np.int64)


class OpStream:
    """The operations of one thread rank, handed out in runs to its slots."""

    def __init__(
        self,
        *,
        layout: Layout,
        part: Slice,
        total_ops: int,
        rand: bool,
        aligned: bool,
        permute: bool,
        rng: Callable[[], np.random.Generator],
        backward: bool = False,
        stride: int = 1,
        loop: bool = False,
        mix: RwMix | None = None,
        draw: IntSource | None = None,
        balance: RwBalance | None = None,
    ) -> None:
        """``part`` holds the thread's blocks ``first + i*stride`` for ``i < blocks``;
        ``backward`` visits them from the last to the first. With ``loop`` (--infloop) the
        stream starts over after its last operation and never runs dry. ``mix`` marks the
        reads among the operations (--rwmixpct). ``rng`` makes the thread's generator,
        called on first use: a sequential stream never makes one."""
        self.layout = layout
        self.part = part
        self.total_ops = total_ops
        self.issued = 0
        self.rand = rand
        self.aligned = aligned
        self.backward = backward
        self.stride = stride
        self.loop = loop
        self.mix = mix
        self.passes = 0  # completed passes over the thread's work (--infloop)
        self.taken = 0  # operations handed out in all passes
        self._new_rng = rng
        # --rwmixthrpct: the balance this thread waits on (a reader: its mix reads all).
        self.balance = balance
        self.reader = mix is not None and mix.pct == 100
        self.draw = draw  # --randalgo's generator (None: :attr:`rng`)
        # Random writes visit every block once, aligned or not (unaligned ones shifted inside
        # their block), so each file reaches its full size and a later read finds no EOF.
        self._perm = Permutation(part.blocks, self.rng) if rand and permute else None
        first_path = layout.locate(part.first_block)[0]
        last_path = layout.locate(part.first_block + (part.blocks - 1) * stride)[0]
        self._single_path = first_path if first_path == last_path else None

    @cached_property
    def rng(self) -> np.random.Generator:
        """The thread's generator, made on first use (a sequential stream never draws)."""
        return self._new_rng()

    @property
    def _source(self) -> IntSource:
        """Where random offsets come from: --randalgo's generator, else :attr:`rng`."""
        return self.draw if self.draw is not None else self.rng

    @cached_property
    def _cum(self) -> IntArray:
        import numpy as np

        return np.asarray(self.layout.cum_blocks, dtype=np.int64)

    @cached_property
    def _sizes(self) -> IntArray:
        import numpy as np

        return np.asarray(self.layout.sizes, dtype=np.int64)

    @property
    def remaining(self) -> int:
        return self.total_ops - self.issued

    def take(self, count: int) -> OpRun | None:
        """Up to ``count`` next operations as one run, or None when the stream is done."""
        count = min(count, self.remaining)
        if count <= 0:
            return None
        granted = 0
        if self.balance is not None:
            count = granted = self.balance.acquire(self.reader, count)
            if not count:
                return None  # the phase ended while the thread waited
        if self.rand:
            run = self._random(count)
        elif self.backward or self.stride > 1:
            run = self._ordered(count)
        else:
            run = self._sequential(count)
        run = dataclasses.replace(run, first_seq=self.taken, mix=self.mix)
        if granted > len(run) and self.balance is not None:
            self.balance.refund(self.reader, granted - len(run))
        self.issued += len(run)
        self.taken += len(run)
        if self.loop and self.issued == self.total_ops:
            # Start over at once, so a looping stream always has operations left; random
            # writes go on with the next period of their permutation (again every block).
            self.issued = 0
            self.passes += 1
        return run

    def _sequential(self, count: int) -> OpRun:
        block = self.part.first_block + self.issued
        index, offset, length = self.layout.locate(block)
        # A run stays inside one path and one block length (the short last block of a path
        # is a run of its own).
        end_of_path = self.layout.cum_blocks[index + 1]
        full_end = end_of_path if length == self.layout.block_size else block + 1
        if length == self.layout.block_size and self.layout.sizes[index] % length:
            full_end = end_of_path - 1
        count = max(1, min(count, full_end - block))
        bs = self.layout.block_size
        return OpRun(index, range(offset, offset + count * bs, bs), length)

    def _ordered(self, count: int) -> OpRun:
        """The next ``count`` blocks backwards or strided, cut where the block length
        changes (a run has one length; a short last block of a path is its own run)."""
        import numpy as np

        index = np.arange(self.issued, self.issued + count, dtype=np.int64)
        if self.backward:
            index = self.part.blocks - 1 - index
        blocks = self.part.first_block + index * self.stride
        paths = np.searchsorted(self._cum, blocks, side="right") - 1
        offsets = (blocks - self._cum[paths]) * self.layout.block_size
        lengths = np.minimum(self.layout.block_size, self._sizes[paths] - offsets)
        differs = np.flatnonzero(lengths != lengths[0])
        keep = int(differs[0]) if differs.size else count
        paths = paths[:keep]
        offsets = offsets[:keep]
        if (paths == paths[0]).all():
            return OpRun(int(paths[0]), offsets.tolist(), int(lengths[0]), offsets_array=offsets)
        return OpRun(
            paths.tolist(), offsets.tolist(), int(lengths[0]), paths, offsets_array=offsets
        )

    def _blocks(self, count: int) -> IntArray:
        if self._perm is not None:
            return self._perm.take(count)
        import numpy as np

        return self._source.integers(0, self.part.blocks, size=count, dtype=np.int64)

    def _random(self, count: int) -> OpRun:
        import numpy as np

        bs = self.layout.block_size
        blocks = self._blocks(count) + self.part.first_block
        path_index: int | list[int]
        path_array: IntArray | None = None
        if self._single_path is not None:
            path_index = self._single_path
            index: IntArray | int = self._single_path
        else:
            index = path_array = np.searchsorted(self._cum, blocks, side="right") - 1
            path_index = index.tolist()
        offsets = (blocks - self._cum[index]) * bs
        if not self.aligned:
            # Shift each operation by a random amount inside its block, clamped so it stays
            # inside its path.
            jitter = self._source.integers(0, bs, size=count, dtype=np.int64)
            offsets = np.minimum(offsets + jitter, self._sizes[index] - bs)
        return OpRun(path_index, offsets.tolist(), bs, path_array, offsets_array=offsets)


def ops_per_thread(
    layout: Layout, parts: list[Slice], threads: int, rand: bool, randamount: int | None
) -> list[int]:
    """Operations each thread issues: its slice, or an even share (over all ``threads``,
    these ``parts`` among them) of ``--randamount``."""
    if not rand or randamount is None:
        return [part.blocks for part in parts]
    share = randamount // threads // layout.block_size
    return [share] * len(parts)
