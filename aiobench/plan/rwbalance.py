"""--rwmixthrpct: the reads held at a share of the bytes of a --rwmixthr phase, elbencho's
balance between its reader and writer threads (one balance per process, as elbencho's is
per host).

A thread may take its next operations when its side is not ahead: the readers while
``read <= (read + write + headroom) * pct / 100``, the writers likewise with ``100 - pct``,
the headroom being one run of every thread on the other side (elbencho: one block). The
bytes count when handed out, before they are done (elbencho counts them before the I/O
too). A thread held back waits in short steps, so a time limit, a stop or the other side's
progress frees it at once; the thread that planned the phase (it hands out the first runs
before the clock) never waits.
"""

from __future__ import annotations

import threading
from time import perf_counter_ns
from typing import Protocol

# At most this many operations per run under a balance, so one run moves the ratio little.
RUN_OPS = 64
_STEP_S = 0.005  # one wait step


class _Stop(Protocol):
    def is_set(self) -> bool: ...


class _Clock(Protocol):
    @property
    def deadline_ns(self) -> int: ...


class _Phase(Protocol):
    """What a balance watches of the running phase (aiobench.run.worker.PhaseState)."""

    @property
    def stop(self) -> _Stop: ...

    @property
    def clock(self) -> _Clock: ...


class RwBalance:
    """The shared byte counts of one phase's reader and writer threads in this process."""

    def __init__(self, read_pct: int, readers: int, writers: int, block_size: int) -> None:
        self.read_pct = read_pct
        self.readers, self.writers = readers, writers
        self.block_size = block_size
        self.read_bytes = 0
        self.write_bytes = 0
        self._cond = threading.Condition()
        self._planner = threading.get_ident()
        self._phase: _Phase | None = None

    def watch(self, phase: _Phase) -> None:
        """Wait no longer than the phase runs (its stop and its time limit)."""
        self._phase = phase

    def _allowed(self, reader: bool) -> bool:
        room = RUN_OPS * self.block_size
        if reader:
            total = self.read_bytes + self.write_bytes + room * self.writers
            return self.read_bytes * 100 <= total * self.read_pct
        total = self.read_bytes + self.write_bytes + room * self.readers
        return self.write_bytes * 100 <= total * (100 - self.read_pct)

    def acquire(self, reader: bool, count: int) -> int:
        """How many of ``count`` operations a thread of this side may take now (0: the phase
        is over while it waited), after waiting until its side is not ahead."""
        count = min(count, RUN_OPS)
        with self._cond:
            while not self._allowed(reader) and threading.get_ident() != self._planner:
                if self._over():
                    return 0
                self._cond.wait(_STEP_S)
            if reader:
                self.read_bytes += count * self.block_size
            else:
                self.write_bytes += count * self.block_size
            self._cond.notify_all()
        return count

    def refund(self, reader: bool, ops: int) -> None:
        """Operations granted but not handed out (the run came out shorter)."""
        with self._cond:
            if reader:
                self.read_bytes -= ops * self.block_size
            else:
                self.write_bytes -= ops * self.block_size

    def _over(self) -> bool:
        phase = self._phase
        if phase is None:
            return False
        deadline = phase.clock.deadline_ns
        return phase.stop.is_set() or bool(deadline and perf_counter_ns() >= deadline)
