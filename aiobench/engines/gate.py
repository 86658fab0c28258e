"""A phase's common start (:class:`StartGate`) and its stop request (:class:`StopEvent`),
both visible to native code without the interpreter's lock.
"""

from __future__ import annotations

import asyncio
import threading
from array import array
from time import perf_counter_ns

try:  # the native engine's half of the start gate (the extension is optional)
    from aiobench.engines import _native
except ImportError:
    _native = None  # type: ignore[assignment]


class StartGate:
    """The common start of a phase: every slot's first run waits here, in its executor
    thread, until all of them are waiting and the clock has started.

    So thread start-up, first-run hand-over and the event loop's ramp-up over many slots
    happen before the clock, not inside the timed phase. The native engine waits inside
    its C call, on :attr:`word` (``[state, time limit]``, see ``gate_pass`` in _native.c),
    so that no run needs the interpreter's lock between the release and its first
    operation, and each released run wakes the next ones (one waker waking 1024 runs took
    150 ms here: every run it woke preempted it); the others wait on an event.
    """

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.word = array("q", [0, 0, 0])  # state, time limit, start instant (int64)
        self._arrived = 0
        self._lock = threading.Lock()
        self._loop = asyncio.get_running_loop()
        self._all_arrived = asyncio.Event()
        self._open = threading.Event()
        self._open_async = asyncio.Event()  # (open() is called on the loop)
        if expected == 0:
            self._all_arrived.set()

    def register(self) -> None:
        """In an executor thread: this slot's first run is about to wait here."""
        with self._lock:
            self._arrived += 1
            if self._arrived == self.expected:
                self._loop.call_soon_threadsafe(self._all_arrived.set)

    async def all_arrived(self) -> None:
        await self._all_arrived.wait()

    @property
    def opened(self) -> bool:
        return self._open.is_set()

    def open(self, start_ns: int, deadline_ns: int, *, stopped: bool) -> None:
        """Release every run (with ``stopped``, to do nothing: the phase was stopped before
        it started); ``deadline_ns`` is the phase's time limit (0 = none)."""
        self.word[1], self.word[2] = deadline_ns, start_ns
        state = _GATE_STOPPED if stopped else _GATE_OPEN
        if _native is not None:
            _native.gate_open(self.word, state)
        else:
            self.word[0] = state
        self._open.set()
        self._open_async.set()

    async def opened_async(self) -> None:
        await self._open_async.wait()

    def until(self, budget_ns: int) -> int | None:
        """Wait for the start; then the end of a run's ``budget_ns`` (or the time limit if
        that comes first), or None when the phase was stopped before it started."""
        self._open.wait()
        if self.word[0] == _GATE_STOPPED:
            return None
        until = perf_counter_ns() + budget_ns
        limit = self.word[1]
        return min(until, limit) if limit else until


_GATE_OPEN, _GATE_STOPPED = 1, 2


class StopEvent(threading.Event):
    """A phase's stop request that native code can see without the GIL: :meth:`set` also
    sets the one-byte :attr:`flag`, which the C loops read between a file's blocks."""

    def __init__(self) -> None:
        super().__init__()
        self.flag = array("B", [0])

    def set(self) -> None:
        self.flag[0] = 1
        super().set()

    def clear(self) -> None:
        super().clear()
        self.flag[0] = 0
