"""The MIXED phase of object storage (``--s3mix get=70,put=20,delete=5,stat=5``), as warp's
``mixed``: one phase of GETs, PUTs, DELETEs and HEADs (STAT) in the shares asked for, each
kind with its own counts, latency and (GETs) time to first byte.

Each thread works on its own objects (the ``-n``/``-N`` dataset, written before): its
operations come in a fixed, smooth order of the shares (over every 100 operations each
kind gets exactly its share), on objects drawn at random from those that exist. A DELETE
takes an object out; the next PUT puts a deleted one back (else it overwrites one), so GETs
and HEADs only ever meet objects that exist. A thread's operations run in order (one slot:
``--iodepth 1``; more threads give more in flight).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from aiobench.errors import ConfigError
from aiobench.kinds import PhaseKind
from aiobench.plan.dirmode import DirLayout, EntryRun, EntryStream

GET, PUT, DELETE, STAT = "GET", "PUT", "DELETE", "STAT"
OP_NAMES = (GET, PUT, DELETE, STAT)
# --s3mix's words for each kind (warp's, and elbencho's phase words)
_WORDS = {
    "get": GET,
    "read": GET,
    "put": PUT,
    "write": PUT,
    "delete": DELETE,
    "del": DELETE,
    "rm": DELETE,
    "stat": STAT,
    "head": STAT,
}


@dataclass(frozen=True, slots=True)
class Mix:
    """The shares of --s3mix, in % (they add up to 100), by kind; kinds not asked for: 0."""

    shares: tuple[tuple[str, int], ...]

    def order(self) -> Iterator[str]:
        """The kinds in a smooth, endless order: each 100 in a row hold exactly the shares
        (smooth weighted round robin)."""
        weights = [(name, pct) for name, pct in self.shares if pct]
        current = [0] * len(weights)
        while True:
            for i, (_, pct) in enumerate(weights):
                current[i] += pct
            best = max(range(len(weights)), key=current.__getitem__)
            current[best] -= 100
            yield weights[best][0]


def parse_mix(text: str) -> Mix:
    """``get=70,put=20,delete=5,stat=5`` (any of the kinds, shares adding up to 100)."""
    shares: dict[str, int] = {}
    for part in (p.strip() for p in text.split(",")):
        match = re.fullmatch(r"([a-z]+)\s*=\s*(\d{1,3})", part.lower())
        if match is None or match.group(1) not in _WORDS:
            raise ConfigError(
                f"--s3mix: {part!r} is not KIND=PERCENT with KIND get, put, delete or stat "
                "(e.g. get=70,put=20,delete=5,stat=5)"
            )
        name = _WORDS[match.group(1)]
        if name in shares:
            raise ConfigError(f"--s3mix: {name.lower()} is given twice")
        shares[name] = int(match.group(2))
    total = sum(shares.values())
    if total != 100:
        raise ConfigError(f"--s3mix: the shares add up to {total} %, not 100")
    if shares.get(DELETE, 0) > shares.get(PUT, 0):
        raise ConfigError(
            "--s3mix: delete's share may not be larger than put's (the deleted objects are "
            "put back; more deletes would use them up)"
        )
    return Mix(tuple((name, shares.get(name, 0)) for name in OP_NAMES))


class MixedOps(EntryStream):
    """One thread's operations of the MIXED phase: ``count`` of them, each an entry (its
    object and, in :attr:`EntryRun.ops`, its kind), planned in order."""

    def __init__(
        self,
        layout: DirLayout,
        kind: PhaseKind,
        rank: int,
        count: int,
        mix: Mix,
        rng: np.random.Generator,
    ) -> None:
        super().__init__(layout, kind, rank)
        self.total_ops = count
        self.size = layout.file_size
        self.rng = rng
        self.kinds = mix.order()
        objects = layout.files_per_rank()
        self.live = list(range(objects))  # the objects that exist
        self.gone: list[int] = []  # those deleted (and not put back yet)

    def _next(self) -> tuple[str, int]:
        kind = next(self.kinds)
        if kind == PUT and self.gone:
            obj = self.gone.pop()
            self.live.append(obj)
            return kind, obj
        at = int(self.rng.integers(len(self.live)))
        obj = self.live[at]
        if kind == DELETE:
            self.live[at] = self.live[-1]
            self.live.pop()
            self.gone.append(obj)
        return kind, obj

    def take(self, count: int) -> EntryRun | None:
        count = min(count, self.remaining)
        if count <= 0:
            return None
        first, self.issued = self.issued, self.issued + count
        planned = [self._next() for _ in range(count)]
        pairs = [self.layout.entry(self.kind, self.rank, obj) for _, obj in planned]
        indices = [index for index, _ in pairs]
        return EntryRun(
            indices[0] if len(set(indices)) == 1 else indices,
            [name for _, name in pairs],
            self.size,
            self.layout.block_size,
            rank=self.rank,
            first=first,
            ops=[kind for kind, _ in planned],
        )
