"""One thread's part of a live look (--livecsvex, elbencho's extended live CSV); pure."""

from __future__ import annotations

from aiobench.results.model import ThreadProgress


def thread_progress(
    rank: int, planned: int, counts: tuple[int, int, int], dir_mode: bool
) -> ThreadProgress:
    """Thread rank ``rank``'s ``counts`` (ops, bytes, entries) done so far, of ``planned``
    units (entries in dir mode, else operations), as a percentage at most 100."""
    done = counts[2] if dir_mode else counts[0]
    percent = min(100 * done // planned, 100) if planned else 100
    return ThreadProgress(rank, percent, counts[1], counts[2] if dir_mode else 0)
