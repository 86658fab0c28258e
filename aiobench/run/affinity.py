"""--cores and --zones at run time (elbencho's binding): the process on all the listed
CPUs, and each benchmark thread's work on its own entry of the list, its memory preferring
its own zone of --zones.

The lists are the config's (:func:`aiobench.config.cpu_sets`,
:func:`aiobench.config.memory_zones`), taken once before the process is bound (a list
read afterwards would see only the bound CPUs). A thread's work runs in executor threads
(native loops included: they run inside them with the interpreter's lock released), so
each executor thread binds itself to its benchmark thread's entry when it takes up a slot;
the event-loop thread and every other thread keep the process's set and memory policy.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
from collections.abc import Sequence
from typing import NamedTuple

# set_mempolicy(2) has no wrapper in the C library (libnuma has one); its number per machine.
_SET_MEMPOLICY = {"x86_64": 238, "aarch64": 237, "riscv64": 237, "ppc64le": 261, "s390x": 270}
_MPOL_PREFERRED = 1  # <linux/mempolicy.h>: allocate on the node given, else anywhere
_MASK_WORDS = 16  # 1024 nodes, Linux's largest MAX_NUMNODES
_PR_SET_NAME = 15  # <linux/prctl.h>
BOOKS_THREAD = b"aiobench-books"  # the kernel's name of a phase's bookkeeping thread


class Binding(NamedTuple):
    """Benchmark thread i's CPUs (``cpu_sets``, entry i mod their count) and the zone its
    memory prefers (``zones``, likewise); both empty: nothing bound."""

    cpu_sets: tuple[frozenset[int], ...] = ()
    zones: tuple[int, ...] = ()

    def bind_process(self) -> None:
        bind_process(self.cpu_sets)

    def bind_thread(self, local: int) -> None:
        """The calling thread as benchmark thread ``local``'s (nothing when unbound)."""
        bind_thread(thread_cpus(self.cpu_sets, local))
        if self.zones:
            prefer_zone(self.zones[local % len(self.zones)])


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


def prefer_zone(zone: int) -> bool:
    """The calling thread's new memory (its buffers, the page cache its reads fill) from
    ``zone`` while that has room, as elbencho's numa_set_preferred. A preference, not a
    binding: like elbencho, a machine where it cannot be set (an unknown system call
    number, a zone outside the cpuset's memory) runs on without it; whether it was set."""
    number = _SET_MEMPOLICY.get(os.uname().machine)
    if number is None or not 0 <= zone < 64 * _MASK_WORDS:
        return False
    mask = (ctypes.c_uint64 * _MASK_WORDS)()
    mask[zone // 64] = 1 << (zone % 64)
    done: int = _libc().syscall(number, _MPOL_PREFERRED, mask, 64 * _MASK_WORDS + 1)
    return done == 0


def name_thread(name: bytes) -> None:
    """The calling thread's name as the kernel shows it (``top -H``, /proc/PID/task/TID/comm;
    at most 15 bytes), so that aiobench's own threads can be told from its I/O threads."""
    _libc().prctl(_PR_SET_NAME, name[:15], 0, 0, 0)


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)
