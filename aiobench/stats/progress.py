"""Live looks at a running phase: the live line's figures (:class:`Progress`), each
thread's part of them (--livecsvex, elbencho's extended live CSV), and which threads are
still at work; pure. The phase's figures once it is over are :mod:`aiobench.stats.summary`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from aiobench.results.running import Progress, ThreadProgress
from aiobench.units import rate

if TYPE_CHECKING:
    from aiobench.stats.intervals import IntervalSeries
    from aiobench.stats.tally import PhaseAbout


def active_at(planned: Sequence[int], finished: list[int]) -> Callable[[int], int]:
    """Threads with work (``planned`` operations) that had not finished by an instant
    (``finished``: each thread's finish so far, 0 until then)."""

    def active(instant_ns: int) -> int:
        return sum(
            1
            for ops, end in zip(planned, finished, strict=True)
            if ops and (end == 0 or end > instant_ns)
        )

    return active


def progress(
    about: PhaseAbout,
    series: IntervalSeries,
    deadline_ns: int,
    counts: tuple[int, int, int],
    seen: tuple[int, int, int],
    span_ns: int,
    now: int,
) -> Progress:
    """The live line at ``now``: ``counts`` (ops, bytes, entries) done, ``seen`` of them
    ``span_ns`` ago; ``deadline_ns``: the time limit's end (0: none)."""
    elapsed = now - series.start_ns
    done = counts[2] if about.dir_mode else counts[0]
    planned = series.planned_units
    eta: int | None = None
    if done and series.endless_until_ns is None:
        eta = elapsed * max(planned - done, 0) // done
    if deadline_ns:
        left = max(deadline_ns - now, 0)
        eta = left if eta is None else min(eta, left)
    return Progress(
        phase=about.name,
        elapsed_ns=elapsed,
        done_percent=series.percent_done(done, now),
        done_bytes=counts[1],
        bytes_per_s=rate(counts[1] - seen[1], span_ns),
        iops=rate(counts[0] - seen[0], span_ns),
        entries_per_s=rate(counts[2] - seen[2], span_ns),
        eta_ns=eta,
        dir_mode=about.dir_mode,
    )


def thread_progress(
    rank: int, planned: int, counts: tuple[int, int, int], dir_mode: bool
) -> ThreadProgress:
    """Thread rank ``rank``'s ``counts`` (ops, bytes, entries) done so far, of ``planned``
    units (entries in dir mode, else operations), as a percentage at most 100."""
    done = counts[2] if dir_mode else counts[0]
    percent = min(100 * done // planned, 100) if planned else 100
    return ThreadProgress(rank, percent, counts[1], counts[2] if dir_mode else 0)
