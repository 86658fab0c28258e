"""Dir mode layout: which dirs and files each thread rank owns, and the runs it hands out; pure.

Thread rank r uses ``PATH/r<r>/d<i>/r<r>-f<j>`` (i < dirs, j < files); with ``dirs == 0`` the
files go straight into ``PATH`` as ``r<r>-f<j>``. Dir i of rank r lives in path
``(r + i) % num_paths``. With ``sharing`` every rank puts its files into the same dirs
``r0/d<i>`` (in path ``i % num_paths``), and the dirs are created and removed once, dir i by
rank ``i % threads``. Names are relative to their PATH; runs keep them split into parent
dir and last part, as the engine uses them (see :mod:`aiobench.engines.nofollow`).
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiobench.kinds import (
    MIXED,
    MKDIRS,
    OBJECT_ENTRY_KINDS,
    READ,
    RMDIRS,
    RMFILES,
    STAT,
    WRITE,
    PhaseKind,
    phase_name,
)
from aiobench.plan.split import StreamOrder, ThreadSplit

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

# What a symlink below PATH is called, when the checks before the run or the engine's walk
# find one (PATH itself, named by the user, may be one).
SYMLINK = "is a symbolic link; aiobench never follows symlinks below PATH"


@dataclass(frozen=True, slots=True)
class EntryRun:
    """Consecutive entries (dirs or files) of one thread, handled back to back by one slot.

    ``path_index`` is one int when every entry lives in the same PATH, else one per entry.
    Files are written/read whole, ``size`` bytes in blocks of ``block``; 0 = no data.
    Entries are kept as the engine uses them, relative to their parent dir (it never
    passes a name with a ``/``): ``leaves[k]`` is the last part of entry k's name, and
    ``dirs`` holds ``(first entry, parent)`` of each stretch of entries with one parent in
    one PATH (``""`` = the PATH itself). Made without ``dirs``, ``leaves`` are names
    relative to the PATH (``r0/d1/r0-f7``) and are split here.
    """

    path_index: int | list[int]
    leaves: list[str]
    size: int
    block: int
    dirs: tuple[tuple[int, str], ...] = ()
    rank: int = 0  # the thread rank whose entries these are
    first: int = 0  # the number of the first entry in its thread's phase (0, 1, ...)
    # Object storage's --rand reads: each entry is one block of its object, at this offset.
    offsets: list[int] | None = None
    # A file shared between threads (custom tree, --sharesize): the entries' ``size`` bytes
    # start at this offset of the file; 0 for whole files.
    start: int = 0
    # Object storage's MIXED phase: each entry's kind of operation (engines.s3.mixed).
    ops: list[str] | None = None
    # Such a shared file's whole length (0: ``start + size``, a whole file): what
    # --trunctosize, --preallocfile and --mmap size and map in dir mode, as elbencho.
    total: int = 0

    def __post_init__(self) -> None:
        if self.dirs or not self.leaves:
            return
        index = self.path_index
        leaves: list[str] = []
        dirs: list[tuple[int, str]] = []
        last: tuple[int, str] | None = None
        for k, name in enumerate(self.leaves):
            parent, _, leaf = name.rpartition("/")
            key = (index if isinstance(index, int) else index[k], parent)
            if key != last:
                dirs.append((k, parent))
                last = key
            leaves.append(leaf)
        object.__setattr__(self, "leaves", leaves)
        object.__setattr__(self, "dirs", tuple(dirs))

    def __len__(self) -> int:
        return len(self.leaves)

    @property
    def names(self) -> list[str]:
        """The entries' names relative to their PATH."""
        return [self.name(k) for k in range(len(self.leaves))]

    def name(self, k: int) -> str:
        """Entry ``k``'s name relative to its PATH."""
        parent = self.dirs[self._stretch_of(k)][1]
        return f"{parent}/{self.leaves[k]}" if parent else self.leaves[k]

    def parent_of(self, k: int) -> tuple[int, str]:
        """(PATH index, parent dir) of entry ``k``."""
        index = self.path_index
        return index if isinstance(index, int) else index[k], self.dirs[self._stretch_of(k)][1]

    def _stretch_of(self, k: int) -> int:
        return bisect.bisect_right(self.dirs, k, key=lambda d: d[0]) - 1

    def stretches(self) -> list[tuple[int, str, list[str]]]:
        """(PATH index, parent, leaves) of each stretch of entries with one parent."""
        index, leaves = self.path_index, self.leaves
        if len(self.dirs) == 1:
            return [(index if isinstance(index, int) else index[0], self.dirs[0][1], leaves)]
        ends = [first for first, _ in self.dirs[1:]] + [len(leaves)]
        return [
            (index if isinstance(index, int) else index[first], parent, leaves[first:end])
            for (first, parent), end in zip(self.dirs, ends, strict=True)
        ]

    def after(self, done: int) -> EntryRun:
        index = self.path_index
        rest = index if isinstance(index, int) else index[done:]
        first = self.first + done
        offsets = None if self.offsets is None else self.offsets[done:]
        ops = None if self.ops is None else self.ops[done:]
        if done >= len(self.leaves):
            return EntryRun(
                rest,
                [],
                self.size,
                self.block,
                rank=self.rank,
                first=first,
                offsets=offsets,
                start=self.start,
                total=self.total,
                ops=ops,
            )
        at = self._stretch_of(done)
        dirs = ((0, self.dirs[at][1]), *((k - done, p) for k, p in self.dirs[at + 1 :]))
        return EntryRun(
            rest,
            self.leaves[done:],
            self.size,
            self.block,
            dirs,
            self.rank,
            first,
            offsets,
            self.start,
            ops,
            self.total,
        )

    @property
    def file_bytes(self) -> int:
        """The length of each file of the run (of the shared file a range is part of)."""
        return self.total or self.start + self.size

    @property
    def blocks_per_entry(self) -> int:
        return -(-self.size // self.block) if self.size else 0

    def totals(self, units: int, io_ops: int) -> tuple[int, int, int]:
        """(ops, bytes, entries) once ``units`` entries and ``io_ops`` block operations are done.

        Every entry starts at offset 0 and only its last block can be short, so the bytes
        follow from the operation count alone.
        """
        per = self.blocks_per_entry
        nbytes = (io_ops // per) * self.size + (io_ops % per) * self.block if per else 0
        return io_ops, nbytes, units

    def add_per_path(self, units: int, io_ops: int, out: npt.NDArray[np.int64]) -> None:
        """Add the (ops, bytes, entries) of the done part to ``out[path]`` (see ``totals``)."""
        index = self.path_index
        if isinstance(index, int):
            out[index] += self.totals(units, io_ops)
            return
        import numpy as np  # (``out``, per-target counts, loaded it before the clock)

        if units:
            entries = np.bincount(index[:units], minlength=out.shape[0])
            per = self.blocks_per_entry
            out[:, 0] += entries * per
            out[:, 1] += entries * self.size
            out[:, 2] += entries
        if units < len(index):
            # The blocks done of the entry in progress (a file stopped part way).
            full = self.totals(units, units * self.blocks_per_entry)
            ops, nbytes, _ = self.totals(units, io_ops)
            out[index[units], :2] += (ops - full[0], nbytes - full[1])


# File numbers as strings, made once per run: joining a prefix and a ready string costs
# less than half of formatting the number each time. Up to 2^20 files per dir (~60 MiB);
# beyond that, names are formatted as they are needed.
_MAX_CACHED_NUMBERS = 1 << 20


@functools.lru_cache(maxsize=1)
def _decimal_strings(count: int) -> list[str] | None:
    return [str(j) for j in range(count)] if count <= _MAX_CACHED_NUMBERS else None


@dataclass(frozen=True, slots=True)
class DirLayout:
    """The dir-mode tree of a run: counts, names and paths; no disk access."""

    num_paths: int
    threads: int
    dirs: int
    files: int
    file_size: int
    block_size: int
    sharing: bool

    def _dir_rank(self, rank: int) -> int:
        return 0 if self.sharing else rank

    def dir_ids(self, rank: int) -> range:
        """Indices of the dirs rank ``rank`` creates and removes."""
        if self.sharing:
            return range(rank, self.dirs, self.threads)
        return range(self.dirs)

    def dir_path_index(self, rank: int, i: int) -> int:
        return (i if self.sharing else rank + i) % self.num_paths

    def dir_name(self, rank: int, i: int) -> str:
        return f"r{self._dir_rank(rank)}/d{i}"

    @property
    def dir_phases(self) -> bool:
        """Whether -d/-D have anything to make or remove (``-n 0``: nothing)."""
        return self.dirs > 0

    @property
    def dir_mode(self) -> bool:
        """Whether a phase's units are entries (dirs, files, objects): they are."""
        return True

    def moves_data(self, kind: PhaseKind) -> bool:
        """Whether a phase of ``kind`` reads or writes data (empty files: none)."""
        return kind in (READ, WRITE, MIXED) and self.file_size > 0

    def bytes_per_path(self) -> list[int]:
        """The bytes of data in each PATH: its files'."""
        return [files * self.file_size for files in self.files_per_path()]

    def phase_name(self, kind: PhaseKind, rwmix_pct: int | None = None) -> str:
        """The name of a phase of ``kind`` in results (:func:`aiobench.kinds.phase_name`)."""
        return phase_name(kind, rwmix_pct)

    def streams(
        self, kind: PhaseKind, phase_index: int, order: StreamOrder, split: ThreadSplit
    ) -> list[EntryStream]:
        """The entries of each thread rank of ``split`` in a phase of ``kind`` (every rank
        has its own dirs and files: the split's slices do not apply)."""
        return [EntryStream(self, kind, rank) for rank in split.ids]

    def rank_dirs(self, ranks: Sequence[int] | None = None) -> list[tuple[int, str]]:
        """(path index, name) of every ``r<r>`` dir the layout needs, each once; only of
        the thread ranks ``ranks`` (under MPI, those of this process) when given. With
        --dirsharing all files go into ``r0``, which belongs to thread rank 0."""
        if self.dirs == 0:
            return []
        ranks = range(self.threads) if ranks is None else ranks
        if self.sharing:
            ranks = [0] if 0 in ranks else []
        found = {
            (self.dir_path_index(r, i), f"r{self._dir_rank(r)}")
            for r in ranks
            for i in range(min(self.dirs, self.num_paths))  # the paths repeat after that
        }
        return sorted(found)

    def files_per_rank(self) -> int:
        return max(self.dirs, 1) * self.files

    def file_names(self, rank: int, start: int, stop: int) -> tuple[int | list[int], list[str]]:
        """Path indices and names (relative to the PATH) of files ``start`` .. ``stop - 1``
        of rank ``rank``."""
        run = self.file_run(rank, start, stop)
        return run.path_index, run.names

    def file_run(self, rank: int, start: int, stop: int, size: int = 0) -> EntryRun:
        """Files ``start`` .. ``stop - 1`` of rank ``rank`` as a run of ``size``-byte files.

        Dir-major order (all files of dir 0 first), built a dir at a time as one prefix
        plus the file number: this runs on the event loop between executor runs, so it must
        stay far cheaper than the metadata calls it feeds.
        """
        leaf_prefix = f"r{rank}-f"
        if self.dirs == 0:
            files = self._names(leaf_prefix, start, stop)
            return EntryRun(
                rank % self.num_paths, files, size, self.block_size, ((0, ""),), rank, start
            )
        leaves: list[str] = []
        dirs: list[tuple[int, str]] = []
        indices: list[int] = []
        k = start
        while k < stop:
            i, j = divmod(k, self.files)
            last = min(stop - k, self.files - j) + j
            dirs.append((len(leaves), self.dir_name(rank, i)))
            leaves += self._names(leaf_prefix, j, last)
            indices += [self.dir_path_index(rank, i)] * (last - j)
            k += last - j
        index: int | list[int] = indices[0] if len(set(indices)) == 1 else indices
        return EntryRun(index, leaves, size, self.block_size, tuple(dirs), rank, start)

    def _names(self, prefix: str, first: int, stop: int) -> list[str]:
        numbers = _decimal_strings(self.files)
        if numbers is None:
            return [f"{prefix}{j}" for j in range(first, stop)]
        return [prefix + number for number in numbers[first:stop]]

    def files_per_path(self) -> list[int]:
        """How many files of all thread ranks each PATH gets."""
        import numpy as np

        paths = self.num_paths
        ranks_at = np.bincount(np.arange(self.threads) % paths, minlength=paths)
        if self.dirs == 0:  # rank r's files go straight into path r % num_paths
            return [int(n) * self.files for n in ranks_at]
        dirs_at = np.full(paths, self.dirs // paths, dtype=np.int64)  # dirs i, i % paths
        dirs_at[: self.dirs % paths] += 1
        if self.sharing:  # dir i in path i % num_paths, every rank's files in it
            return [int(n) * self.threads * self.files for n in dirs_at]
        # Rank r's dir i lives in path (r + i) % num_paths: its dirs are dirs_at turned by r.
        out = np.zeros(paths, dtype=np.int64)
        for turn in np.flatnonzero(ranks_at):
            out += ranks_at[turn] * np.roll(dirs_at, turn)
        return [int(n) * self.files for n in out]

    def entries(self, kind: PhaseKind, rank: int) -> int:
        """How many entries rank ``rank`` handles in a phase of ``kind``."""
        if kind in (MKDIRS, RMDIRS):
            return len(self.dir_ids(rank))
        return self.files_per_rank()

    def run_of(
        self,
        kind: PhaseKind,
        rank: int,
        ks: Sequence[int],
        size: int,
        *,
        first: int,
        offsets: list[int] | None = None,
        ops: list[str] | None = None,
    ) -> EntryRun:
        """A run of rank ``rank``'s entries ``ks`` (in that order, repeats allowed), the
        ``first``-th of its phase on: object storage's random and mixed runs."""
        pairs = [self.entry(kind, rank, k) for k in ks]
        indices = [index for index, _ in pairs]
        return EntryRun(
            indices[0] if len(set(indices)) == 1 else indices,
            [name for _, name in pairs],
            size,
            self.block_size,
            rank=rank,
            first=first,
            offsets=offsets,
            ops=ops,
        )

    def entry(self, kind: PhaseKind, rank: int, k: int) -> tuple[int, str]:
        """(path index, name) of entry ``k`` of rank ``rank`` in a phase of ``kind``."""
        if kind in (MKDIRS, RMDIRS):
            i = self.dir_ids(rank)[k]
            return self.dir_path_index(rank, i), self.dir_name(rank, i)
        index, names = self.file_names(rank, k, k + 1)
        return index if isinstance(index, int) else index[0], names[0]


class EntryStream:
    """The entries of one thread rank in one phase, handed out in runs to its slots."""

    def __init__(self, layout: DirLayout, kind: PhaseKind, rank: int) -> None:
        self.layout = layout
        self.kind = kind
        self.rank = rank
        self.total_ops = layout.entries(kind, rank)
        self.issued = 0
        self.size = layout.file_size if kind in (READ, WRITE) else 0
        _decimal_strings(layout.files)  # made now, in the untimed setup of the phase

    @property
    def remaining(self) -> int:
        return self.total_ops - self.issued

    def take(self, count: int) -> EntryRun | None:
        count = min(count, self.remaining)
        if count <= 0:
            return None
        start, self.issued = self.issued, self.issued + count
        if self.kind in (WRITE, STAT, READ, RMFILES, *OBJECT_ENTRY_KINDS):  # the thread's files
            return self.layout.file_run(self.rank, start, self.issued, self.size)
        pairs = [self.layout.entry(self.kind, self.rank, k) for k in range(start, self.issued)]
        indices = [index for index, _ in pairs]
        names = [name for _, name in pairs]
        path_index = indices[0] if len(set(indices)) == 1 else indices
        return EntryRun(path_index, names, self.size, self.layout.block_size, rank=self.rank)
