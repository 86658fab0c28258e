"""--cores and --zones at run time (elbencho's binding): the process on all the listed
CPUs, and each benchmark thread's work on its own entry of the list.

The CPU sets are the config's (:func:`aiobench.config.cpu_sets`). A thread's work runs in
executor threads (native loops included: they run inside them with the interpreter's lock
released), so each executor thread binds itself to its benchmark thread's set when it takes
up a slot; the event-loop thread and every other thread keep the process's set.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence


def bind_process(sets: Sequence[frozenset[int]]) -> None:
    """Every thread this process has now on the union of ``sets`` (the threads started
    later inherit it from the thread that starts them); nothing when there are none."""
    if not sets:
        return
    union = frozenset().union(*sets)
    for task in os.listdir("/proc/self/task"):
        with contextlib.suppress(ProcessLookupError):  # (a thread that ended meanwhile)
            os.sched_setaffinity(int(task), union)


def thread_cpus(sets: Sequence[frozenset[int]], local: int) -> frozenset[int] | None:
    """The CPUs of benchmark thread ``local`` (round-robin over ``sets``), or None."""
    return sets[local % len(sets)] if sets else None


def bind_thread(cpus: frozenset[int] | None) -> None:
    """The calling thread on ``cpus`` (None: as it is)."""
    if cpus is not None:
        os.sched_setaffinity(0, cpus)
