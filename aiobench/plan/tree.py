"""Custom tree mode (--treefile, --treescan): which dirs, files and file ranges each thread
rank handles; pure.

As elbencho: dirs are made in the order of their name's length (a parent before its
children) and removed the other way round, all by the first thread rank (dir create and
delete are not parallel in this mode). Files smaller than --sharesize go whole to one
thread: sorted by size (then name), or shuffled with --treerand (by the run's seed, the same
order in every phase), thread slice i takes files i, i + n, ... of the n slices. The blocks of
the larger files, laid end to end, are split into n even spans (the last takes what is left):
each thread reads or writes its span's ranges of those files. --stat and -F take every file
whole, dealt out as the small ones.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from aiobench.kinds import MKDIRS, READ, RMDIRS, WRITE, PhaseKind
from aiobench.plan.dirmode import DirLayout, EntryRun, EntryStream
from aiobench.plan.split import StreamOrder, ThreadSplit
from aiobench.plan.treefile import TreeSpec

EMPTY = TreeSpec((), ())
# elbencho's --sharesize default: files of 32 blocks and more are split between threads.
SHARE_BLOCKS = 32


@dataclass(frozen=True, slots=True)
class Unit:
    """One entry a thread handles: a dir or file by name; of a file, ``size`` bytes from
    offset ``start`` (a range of a shared file) or the whole file (``start`` 0)."""

    name: str
    size: int = 0
    start: int = 0
    ranged: bool = False
    total: int = 0  # a range's file: its whole length (--trunctosize, --mmap size it so)


def share_bytes(given: int, block: int) -> int:
    """--sharesize: files of at least this many bytes are split between threads (0: the
    default, 32 blocks)."""
    return given or SHARE_BLOCKS * block


def all_dirs(tree: TreeSpec) -> list[str]:
    """The listed dirs and the parents of every listed entry, a parent before its children
    (by name length, then name: elbencho's order)."""
    found = set(tree.dirs)
    for name in [*tree.dirs, *(name for name, _ in tree.files)]:
        parts = name.split("/")
        found.update("/".join(parts[:i]) for i in range(1, len(parts)))
    return sorted(found, key=lambda name: (len(name), name))


@dataclass(frozen=True, slots=True)
class TreeLayout(DirLayout):
    """Dir mode's layout of a custom tree in one PATH. ``dirs``, ``files`` and
    ``file_size`` (of the base) hold the dir count, the file count and the largest file,
    for the plan's memory estimate; the orders are made once, in :meth:`of`."""

    tree: TreeSpec = EMPTY
    share_bytes: int = 0
    dir_order: tuple[str, ...] = ()  # parents first
    small: tuple[tuple[str, int], ...] = ()  # below --sharesize (or empty), in file order
    shared: tuple[tuple[str, int], ...] = ()  # the others, in file order
    every: tuple[tuple[str, int], ...] = ()  # all files, in file order

    @classmethod
    def of(
        cls, tree: TreeSpec, *, threads: int, block: int, share: int, shuffle: bool, seed: int
    ) -> TreeLayout:
        share = share_bytes(share, block)

        def ordered(files: list[tuple[str, int]]) -> tuple[tuple[str, int], ...]:
            if shuffle:  # (from one order, so that the seed alone decides)
                files = sorted(files)
                random.Random(seed).shuffle(files)
                return tuple(files)
            return tuple(sorted(files, key=lambda f: (f[1], f[0])))

        dirs = all_dirs(tree)
        return cls(
            num_paths=1,
            threads=threads,
            dirs=len(dirs),
            files=len(tree.files),
            file_size=max((size for _, size in tree.files), default=0),
            block_size=block,
            sharing=False,
            tree=tree,
            share_bytes=share,
            dir_order=tuple(dirs),
            small=ordered([f for f in tree.files if f[1] < share or f[1] == 0]),
            shared=ordered([f for f in tree.files if f[1] >= share and f[1] > 0]),
            every=ordered(list(tree.files)),
        )

    @property
    def dir_phases(self) -> bool:
        return self.dirs > 0

    def moves_data(self, kind: PhaseKind) -> bool:
        return kind in (READ, WRITE) and self.file_size > 0

    def bytes_per_path(self) -> list[int]:
        return [sum(size for _, size in self.tree.files)]

    def rank_dirs(self, ranks: object = None) -> list[tuple[int, str]]:
        return []  # no r<r> dirs: the tree's own dirs are MKDIRS' entries

    def files_per_rank(self) -> int:
        """The most entries a thread handles in a file phase (a bound, for memory)."""
        return -(-self.files // self.threads) + len(self.shared)

    def units(self, kind: PhaseKind, index: int, slices: int) -> list[Unit]:
        """The entries of thread slice ``index`` of ``slices`` in a phase of ``kind``."""
        if kind in (MKDIRS, RMDIRS):
            if index != 0:
                return []
            dirs = self.dir_order
            return [Unit(name) for name in (dirs if kind == MKDIRS else dirs[::-1])]
        if kind not in (READ, WRITE):
            return [Unit(name) for name, _ in self.every[index::slices]]
        out = [Unit(name, size) for name, size in self.small[index::slices]]
        return out + self._spans(index, slices)

    def _spans(self, index: int, slices: int) -> list[Unit]:
        """Thread slice ``index``'s ranges of the shared files (elbencho's even split of
        their blocks, the last slice taking the rest)."""
        block = self.block_size
        shared = self.shared
        total = sum(-(-size // block) for _, size in shared)
        each = total // slices
        first = index * each
        last = total if index == slices - 1 else first + each
        out: list[Unit] = []
        at = 0  # the first block of the current file in the blocks laid end to end
        for name, size in shared:
            blocks = -(-size // block)
            low, high = max(at, first), min(at + blocks, last)
            if low < high:
                start = (low - at) * block
                end = min((high - at) * block, size)
                out.append(Unit(name, end - start, start, ranged=True, total=size))
            at += blocks
            if at >= last:
                break
        return out

    def streams(
        self, kind: PhaseKind, phase_index: int, order: StreamOrder, split: ThreadSplit
    ) -> list[EntryStream]:
        return [
            TreeStream(self, kind, rank, self.units(kind, split.base + i, split.slices))
            for i, rank in enumerate(split.ids)
        ]


class TreeStream(EntryStream):
    """A thread rank's entries of a custom tree in one phase, handed out in runs: whole
    files of one size together, each range of a shared file on its own."""

    def __init__(  # (not EntryStream's: the entries are listed, not numbered)
        self, layout: TreeLayout, kind: PhaseKind, rank: int, units: list[Unit]
    ) -> None:
        self.layout = layout
        self.kind = kind
        self.rank = rank
        self.units = units
        self.total_ops = len(units)
        self.issued = 0
        self.data = kind in (READ, WRITE)

    def take(self, count: int) -> EntryRun | None:
        count = min(count, self.remaining)
        if count <= 0:
            return None
        units, first = self.units, self.issued
        head = units[first]
        stop = first + 1
        if not head.ranged:
            while (
                stop < first + count
                and not units[stop].ranged
                and (not self.data or units[stop].size == head.size)
            ):
                stop += 1
        self.issued = stop
        size = head.size if self.data else 0
        return EntryRun(
            0,
            [unit.name for unit in units[first:stop]],
            size,
            self.layout.block_size,
            rank=self.rank,
            first=first,
            start=head.start,
            total=head.total,
        )
