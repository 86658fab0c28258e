"""What plan and run code asks of a layout, whichever it is (file range, dir tree,
buckets): the streams a phase hands out and its names; pure.

:class:`~aiobench.plan.workload.Layout`, :class:`~aiobench.plan.dirmode.DirLayout` and
:class:`~aiobench.engines.s3.layout.BucketLayout` implement it, so the code that runs a
phase asks the layout instead of which kind of layout or path it has.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from aiobench.kinds import PhaseKind
from aiobench.plan.dirmode import EntryRun, EntryStream
from aiobench.plan.split import StreamOrder, ThreadSplit
from aiobench.plan.workload import OpRun, OpStream

# What a thread's slots take their runs from, and the runs they hand to the engine.
Stream = OpStream | EntryStream
Run = OpRun | EntryRun


class PhaseLayout(Protocol):
    """A run's layout as its phases see it."""

    @property
    def block_size(self) -> int: ...

    @property
    def dir_mode(self) -> bool:
        """Whether a phase's units are entries (dirs, files, objects), not blocks."""
        ...

    @property
    def dir_phases(self) -> bool:
        """Whether -d/-D (MKDIRS, RMDIRS) have anything to make or remove."""
        ...

    def moves_data(self, kind: PhaseKind) -> bool:
        """Whether a phase of ``kind`` reads or writes data (its slots need buffers)."""
        ...

    def bytes_per_path(self) -> list[int]:
        """The bytes of data the layout puts into each PATH."""
        ...

    def phase_name(self, kind: PhaseKind, rwmix_pct: int | None = None) -> str:
        """The name of a phase of ``kind`` in results."""
        ...

    def streams(
        self, kind: PhaseKind, phase_index: int, order: StreamOrder, split: ThreadSplit
    ) -> Sequence[Stream]:
        """One stream per thread rank of ``split``, for phase number ``phase_index``."""
        ...
