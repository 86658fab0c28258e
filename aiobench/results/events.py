"""The one channel from a run to its outputs: an :class:`Observer`'s methods, in order.

``ready`` once setup can no longer fail; per block ``phase_started``, ``progress`` and
``interval`` while it runs, ``phase_ended`` when its I/O is over, ``phase_done`` with its
result; ``run_done`` at the end. Called on the event loop (the first and the last two from
the main thread between blocks): they must not block.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aiobench.results.model import IntervalStats, PhaseResult, Progress
    from aiobench.results.runresult import RunResult


class Observer:
    """What the outputs watch of a run; each method does nothing unless overridden."""

    def ready(self) -> None:
        """Setup is done and can no longer fail: notes for the user may go out now."""

    def phase_started(self, name: str, start: datetime.datetime) -> None:
        """A phase starts now (its untimed setup is done); ``start`` is the wall clock."""

    def progress(self, progress: Progress) -> None:
        """Every live interval: where the phase stands."""

    def interval(self, phase: str, interval: IntervalStats) -> None:
        """An interval of the phase is complete."""

    def phase_ended(self, name: str) -> None:
        """The phase's I/O is over (its result follows)."""

    def phase_done(self, phase: PhaseResult) -> None:
        """A block's result (under MPI: the job's, on the lead)."""

    def run_done(self, result: RunResult) -> None:
        """Every block is reported and nothing more will be measured (the ``-i`` summary
        follows the last block); called on success, error and signal alike."""
