"""What shapes a phase's streams: this process's thread ranks and slices, and the order
options of the config; pure (and light: the CLI's start-up imports it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from aiobench.kinds import WRITE, PhaseKind


class ThreadSplit(NamedTuple):
    """Which thread ranks this process runs, and how the dataset is split among them."""

    ids: range  # the (global) thread ranks of this process
    base: int  # the index of its first slice of the dataset
    slices: int  # how many slices the dataset is split into, over all processes

    @classmethod
    def alone(cls, threads: int) -> ThreadSplit:
        """All ``threads`` thread ranks, as a process alone."""
        return cls(range(threads), 0, threads)


@dataclass(frozen=True, slots=True)
class StreamOrder:
    """The options that decide which operations a stream hands out, and in what order."""

    seed: int
    rand: bool = False
    randamount_bytes: int | None = None
    aligned: bool = True  # not --norandalign
    strided: bool = False
    backward: bool = False
    loop: bool = False  # --infloop
    rwmixpct: int | None = None  # of the write phase
    randalgo: str | None = None  # --randalgo (None: PCG64, writes a full-coverage order)
    rwmixthr: int | None = None  # --rwmixthr: each process's first N threads read in -w
    rwmixthrpct: int | None = None  # --rwmixthrpct: the reads' share of the bytes, balanced

    def rwmix_pct(self, kind: PhaseKind) -> int | None:
        """--rwmixpct of a phase of ``kind``: only the write phase mixes in reads."""
        return self.rwmixpct if kind == WRITE else None

    def reader_thread(self, kind: PhaseKind, local: int) -> bool | None:
        """--rwmixthr: whether a process's ``local``-th thread reads (True) or writes (False)
        in a phase of ``kind`` (elbencho: the first N threads of each host); None without
        it, or outside the write phase."""
        if self.rwmixthr is None or kind != WRITE:
            return None
        return local < self.rwmixthr
