"""A run's result: its meta, its phases' results as they end, and how it ended.

Apart from :mod:`aiobench.results.model` (the phases' results), which a run loads once its
first phase has ended, whereas it holds this from its start.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aiobench.results.model import PhaseResult


@dataclass(slots=True, kw_only=True)
class RunResult:
    meta: dict[str, object]
    phases: list[PhaseResult] = field(default_factory=list)
    interrupted: bool = False
    error: dict[str, object] | None = None


def labelled_phases(run: RunResult) -> list[tuple[str, PhaseResult]]:
    """A run's phases under their compare labels (``WRITE``, ``WRITE#2``, ...)."""
    seen: dict[str, int] = {}
    out = []
    for phase in run.phases:
        nth = seen.get(phase.name, 0) + 1
        seen[phase.name] = nth
        out.append((phase.name if nth == 1 else f"{phase.name}#{nth}", phase))
    return out
