"""Netbench's layout: the one phase (the write phase, ``NETBENCH``) and each thread's
blocks; pure.

A client thread's stream is its -s bytes in -b blocks (the last one short), as file mode's
stream over a file of -s bytes; a server rank's threads have no work (its ranks take part
in the phase as ranks that add no operations, their connections served beside it).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from aiobench.kinds import WRITE, PhaseKind, phase_name
from aiobench.plan.split import StreamOrder, ThreadSplit
from aiobench.plan.workload import Layout, OpStream, Slice

PHASE = "NETBENCH"


@dataclass(frozen=True, slots=True)
class NetLayout(Layout):
    """``sizes``: (-s,), what each client thread sends per pass; ``servers``: how many of
    the first ranks are servers; ``rank_offset``: --rankoffset (thread ranks start there)."""

    servers: int = 1
    rank_offset: int = 0

    @property
    def dir_phases(self) -> bool:
        return False

    def moves_data(self, kind: PhaseKind) -> bool:
        """No slot buffers: the native loop sends from its own."""
        return False

    def phase_name(self, kind: PhaseKind, rwmix_pct: int | None = None) -> str:
        return PHASE if kind == WRITE else phase_name(kind, rwmix_pct)

    def client_thread(self, rank: int, threads: int) -> int | None:
        """Thread rank ``rank``'s number among all client threads (servers' threads: None);
        ``threads``: -t, each rank's."""
        number = rank - self.rank_offset - self.servers * threads
        return number if number >= 0 else None

    def streams(
        self, kind: PhaseKind, phase_index: int, order: StreamOrder, split: ThreadSplit
    ) -> list[OpStream]:
        """Each client thread's blocks (again and again with --infloop); none for a
        server's threads."""
        threads = len(split.ids)
        one = Layout(self.sizes, self.block_size)
        rng = partial(np.random.default_rng, 0)  # (sequential: never drawn from)
        return [
            OpStream(
                layout=one,
                part=Slice(0, one.total_blocks),
                total_ops=one.total_blocks if self.client_thread(rank, threads) is not None else 0,
                rand=False,
                aligned=True,
                permute=False,
                rng=rng,
                loop=order.loop,
            )
            for rank in split.ids
        ]
