"""SIGINT/SIGTERM: recorded by a handler installed first thing, acted on at safe points.

The handler never raises into the code it interrupts (an exception in the middle of
allocating a buffer or handing one to a thread is what left tracebacks behind): it records
the first signal and has the run in progress set its stop event. Setup code calls
:func:`check` between its steps and stops there with :class:`Interrupted`; a phase that has
started its clock ends through the stop event, which its workers watch. When the run is
over it calls :func:`settle`: a signal until then is its outcome (table and JSON marked
interrupted); one after that moment is ignored, so the outputs of a finished run are
written whole and the exit code is the run's. A signal that no run settled ends the command
as "interrupted before the benchmark started".

This module is imported before typer and numpy (see :mod:`aiobench.entry`); keep it light.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from types import FrameType

HANDLED = (signal.SIGINT, signal.SIGTERM)


class Interrupted(Exception):
    """Setup stopped at a safe point because a signal came; nothing of it was measured."""

    def __init__(self, signum: signal.Signals) -> None:
        super().__init__(signum.name)
        self.signum = signum


class _State:
    """What the handler records; one per process (signal handlers are per process)."""

    received: signal.Signals | None = None
    on_signal: Callable[[], object] | None = None  # what the run in progress does
    settled = False  # the run's outcome is fixed: later signals are ignored
    # A signal that came while settled, for a caller that runs another run after it
    # (``aiobench check``: several runs, one outcome); see :func:`resume`.
    late: signal.Signals | None = None


_state = _State()


def _handle(signum: int, frame: FrameType | None) -> None:
    if _state.settled:
        if _state.late is None:
            _state.late = signal.Signals(signum)
        return
    if _state.received is None:
        _state.received = signal.Signals(signum)
    if _state.on_signal is not None:
        with contextlib.suppress(RuntimeError):  # its event loop closed just now
            _state.on_signal()


def install(held: Sequence[int] = ()) -> None:
    """Record SIGINT/SIGTERM from now on (main thread only: handlers live there); ``held``
    are those the handler before these held (:mod:`aiobench.entry`), the first counting as
    received."""
    _state.received, _state.on_signal, _state.settled = None, None, False
    _state.late = None
    for signum in HANDLED:
        signal.signal(signum, _handle)
    if held and _state.received is None:  # (one may have come since, to _handle)
        _state.received = signal.Signals(held[0])


def installed() -> bool:
    return all(signal.getsignal(signum) is _handle for signum in HANDLED)


@contextlib.contextmanager
def handled() -> Iterator[None]:
    """Signals are recorded inside; for callers in this process (tests) whose handlers were
    not ours, theirs are put back afterwards. Under :mod:`aiobench.entry` (installed
    already) this changes nothing, so a signal received during the imports still counts."""
    if installed() or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.getsignal(signum) for signum in HANDLED}
    install()
    try:
        yield
    finally:
        for signum, handler in previous.items():
            if handler is not None:  # (None: not set from Python, cannot be put back)
                signal.signal(signum, handler)
        _state.received, _state.on_signal, _state.settled = None, None, False
        _state.late = None


def received() -> signal.Signals | None:
    """The first signal since the handlers were installed (None after :func:`settle`)."""
    return None if _state.settled else _state.received


def check() -> None:
    """A safe point of setup: raise :class:`Interrupted` if a signal came."""
    signum = received()
    if signum is not None:
        raise Interrupted(signum)


def attach(on_signal: Callable[[], object] | None) -> None:
    """What a signal does while the run is in progress (None: nothing more); called at once
    if a signal came already. It runs inside the handler, that is between any two steps of
    the main thread: it must not take a lock the code there may hold (so not
    ``Event.set()`` itself; ``loop.call_soon_threadsafe(stop.set)`` is fine)."""
    _state.on_signal = on_signal
    if on_signal is not None and received() is not None:
        on_signal()


def settle() -> signal.Signals | None:
    """The outcome is fixed now: the signal received until now, if any; from now on signals
    are ignored."""
    signum = received()
    _state.settled, _state.on_signal = True, None
    return signum


def resume() -> None:
    """Another run follows one that settled (``aiobench check`` runs several): signals
    count again, and one that came since :func:`settle` counts as received now."""
    if not _state.settled:
        return
    _state.settled = False
    # (a signal from here on is recorded as received by the handler itself)
    if _state.received is None and _state.late is not None:
        _state.received = _state.late
    _state.late = None
