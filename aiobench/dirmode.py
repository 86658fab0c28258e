"""Dir mode layout: which dirs and files each thread rank owns, and the runs it hands out; pure.

Thread rank r uses ``PATH/r<r>/d<i>/r<r>-f<j>`` (i < dirs, j < files); with ``dirs == 0`` the
files go straight into ``PATH`` as ``r<r>-f<j>``. Dir i of rank r lives in path
``(r + i) % num_paths``. With ``sharing`` every rank puts its files into the same dirs
``r0/d<i>`` (in path ``i % num_paths``), and the dirs are created and removed once, dir i by
rank ``i % threads``. Names are relative to their PATH (the engine opens them with ``dir_fd``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from aiobench.kinds import MKDIRS, READ, RMDIRS, WRITE


@dataclass(frozen=True, slots=True)
class EntryRun:
    """Consecutive entries (dirs or files) of one thread, handled back to back by one slot.

    ``path_index`` is one int when every entry lives in the same PATH, else one per entry.
    Files are written/read whole, ``size`` bytes in blocks of ``block``; 0 = no data.
    """

    path_index: int | list[int]
    names: list[str]
    size: int
    block: int

    def __len__(self) -> int:
        return len(self.names)

    def after(self, done: int) -> EntryRun:
        index = self.path_index
        rest = index if isinstance(index, int) else index[done:]
        return EntryRun(rest, self.names[done:], self.size, self.block)

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
        """Path indices and names of files ``start`` .. ``stop - 1`` of rank ``rank``.

        Dir-major order (all files of dir 0 first), built a dir at a time as one prefix
        plus the file number: this runs on the event loop between executor runs, so it must
        stay far cheaper than the metadata calls it feeds.
        """
        if self.dirs == 0:
            return rank % self.num_paths, self._names(f"r{rank}-f", start, stop)
        names: list[str] = []
        indices: list[int] = []
        k = start
        while k < stop:
            i, j = divmod(k, self.files)
            last = min(stop - k, self.files - j) + j
            names += self._names(f"r{self._dir_rank(rank)}/d{i}/r{rank}-f", j, last)
            indices += [self.dir_path_index(rank, i)] * (last - j)
            k += last - j
        if len(set(indices)) == 1:
            return indices[0], names
        return indices, names

    def _names(self, prefix: str, first: int, stop: int) -> list[str]:
        numbers = _decimal_strings(self.files)
        if numbers is None:
            return [f"{prefix}{j}" for j in range(first, stop)]
        return [prefix + number for number in numbers[first:stop]]

    def files_per_path(self) -> list[int]:
        """How many files of all thread ranks each PATH gets."""
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

    def entries(self, kind: str, rank: int) -> int:
        """How many entries rank ``rank`` handles in a phase of ``kind``."""
        if kind in (MKDIRS, RMDIRS):
            return len(self.dir_ids(rank))
        return self.files_per_rank()

    def entry(self, kind: str, rank: int, k: int) -> tuple[int, str]:
        """(path index, name) of entry ``k`` of rank ``rank`` in a phase of ``kind``."""
        if kind in (MKDIRS, RMDIRS):
            i = self.dir_ids(rank)[k]
            return self.dir_path_index(rank, i), self.dir_name(rank, i)
        index, names = self.file_names(rank, k, k + 1)
        return index if isinstance(index, int) else index[0], names[0]


class EntryStream:
    """The entries of one thread rank in one phase, handed out in runs to its slots."""

    def __init__(self, layout: DirLayout, kind: str, rank: int) -> None:
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
        path_index: int | list[int]
        if self.kind in (MKDIRS, RMDIRS):
            pairs = [self.layout.entry(self.kind, self.rank, k) for k in range(start, self.issued)]
            indices = [index for index, _ in pairs]
            names = [name for _, name in pairs]
            path_index = indices[0] if len(set(indices)) == 1 else indices
        else:
            path_index, names = self.layout.file_names(self.rank, start, self.issued)
        return EntryRun(path_index, names, self.size, self.layout.block_size)
