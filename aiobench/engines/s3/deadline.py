"""The deadlines of S3 requests: the phase's time limit over a run's requests, and each
request's stall watch (``--s3timeout``).

Two rules, kept apart from the request path so that any client can use them:

* :func:`phase_cap`: a cancel scope that ends at the phase's time limit. Requests still in
  flight then are cancelled and not counted; that is how a time limit ends a phase, no
  error.
* :class:`Watch`: a request must, every ``timeout_s`` seconds, end or move at least
  :data:`MIN_PROGRESS_BYTES` (sent or received). One that does not (a server that accepts
  and says nothing, a connect that never completes, a body dribbled a byte at a time) has
  its task cancelled, and leaving the watch raises :class:`Stalled`, which the client turns
  into an error naming the request.

One timer of a client (:class:`Watches`) looks at all its requests' watches, a few times a
``timeout_s``: a request costs a set insertion and removal, and nothing per chunk of its
body but an addition to a counter (a timer per request cost ~5 us of the loop's CPU).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from time import perf_counter_ns
from types import TracebackType

import anyio

# What a request must move each window to count as alive (--s3timeout's help says it).
# Less than this per --s3timeout seconds (2.1 KiB/s at the default) is a stall for a
# benchmark, not a transfer: a body dribbled a byte at a time never ends and must not hold
# the run.
MIN_PROGRESS_BYTES = 64 << 10
# The watches are looked at this many times a timeout: a stall is caught between
# timeout_s and (1 + 1/LOOKS) * timeout_s after its window began.
LOOKS = 4


def phase_cap(deadline_ns: int) -> anyio.CancelScope:
    """A cancel scope that cancels what runs in it at ``deadline_ns`` (``perf_counter_ns``;
    0: never). Its ``cancelled_caught`` says whether the limit cut something off."""
    if not deadline_ns:
        return anyio.CancelScope()
    return anyio.move_on_after(max(deadline_ns - perf_counter_ns(), 0) / 1e9)


class Stalled(TimeoutError):
    """A request that made too little progress for ``timeout_s`` (see :class:`Watch`);
    ``moved`` bytes in all, none of them in the last window if ``silent``."""

    def __init__(self, timeout_s: float, moved: int, silent: bool) -> None:
        super().__init__(f"stalled for {timeout_s:g} s")
        self.timeout_s = timeout_s
        self.moved = moved
        self.silent = silent

    def reason(self, operation: str) -> str:
        """What happened, for the error of ``operation`` (``GetObject``, ...)."""
        if not self.moved:
            return f"{operation}: no answer within --s3timeout ({self.timeout_s:g} s)"
        last = "nothing" if self.silent else f"less than {MIN_PROGRESS_BYTES >> 10} KiB"
        return (
            f"{operation} stalled after {self.moved} bytes: {last} sent or received in "
            f"--s3timeout ({self.timeout_s:g} s)"
        )


class Watches:
    """The watches of one client's requests (on one event loop), and the one timer that
    looks at them while any is active."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.active: set[Watch] = set()
        self._handle: asyncio.TimerHandle | None = None
        self.loop: asyncio.AbstractEventLoop | None = None  # (the one it is used on)

    def request(self) -> Watch:
        """A watch for one request, to enter in the task that makes it."""
        return Watch(self)

    def started(self, watch: Watch) -> None:
        self.active.add(watch)
        if self._handle is None:
            assert self.loop is not None
            self._handle = self.loop.call_later(self.timeout_s / LOOKS, self._look)

    def _look(self) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        for watch in list(self.active):  # (a stalled one leaves the set)
            watch.look(now)
        self._handle = None
        if self.active:
            self._handle = loop.call_later(self.timeout_s / LOOKS, self._look)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


class Watch:
    """One request's stall watch (made by :meth:`Watches.request`).

    The client adds body bytes received to :attr:`received` and may set :attr:`sending`,
    a function giving the bytes of the request body sent so far. Once ``timeout_s`` has
    passed since its window began, a look at their sum either starts a new window (at
    least :data:`MIN_PROGRESS_BYTES` more than at the window's start) or cancels the task;
    leaving the ``with`` then raises :class:`Stalled` instead of the cancellation (as
    :func:`asyncio.timeout` does, so that a cancellation from outside still goes through).
    """

    __slots__ = (
        "_cancelling",
        "_judged",
        "_seen",
        "_since",
        "_task",
        "_watches",
        "received",
        "sending",
        "stalled",
    )

    def __init__(self, watches: Watches) -> None:
        self._watches = watches
        self.received = 0
        self.sending: Callable[[], int] | None = None
        self.stalled = False
        self._seen = 0  # bytes moved when the window began
        self._judged = 0  # bytes moved when the request was found stalled
        self._since = 0.0  # when it began (the loop's clock)
        self._task: asyncio.Task[object] | None = None
        self._cancelling = 0

    @property
    def moved(self) -> int:
        """Bytes sent and received so far."""
        return self.received + (self.sending() if self.sending is not None else 0)

    def __enter__(self) -> Watch:
        watches = self._watches
        loop = watches.loop
        if loop is None:  # (the first request: a client serves one loop)
            loop = watches.loop = asyncio.get_running_loop()
        task = asyncio.current_task(loop)
        if task is None:  # pragma: no cover - a programming error
            raise RuntimeError("Watch entered outside a task")
        self._task, self._cancelling = task, task.cancelling()
        self._since = loop.time()
        watches.started(self)
        return self

    def look(self, now: float) -> None:
        """At ``now`` (the loop's clock): a new window, or the task cancelled."""
        if now - self._since < self._watches.timeout_s:
            return
        moved = self.moved
        if moved - self._seen >= MIN_PROGRESS_BYTES:
            self._seen, self._since = moved, now
            return
        self.stalled = True
        self._judged = moved
        self._watches.active.discard(self)
        assert self._task is not None
        self._task.cancel()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._watches.active.discard(self)
        if not self.stalled:
            return
        assert self._task is not None
        # This watch cancelled the task: its cancellation is taken back, and raised as a
        # stall unless someone else cancelled the task too.
        # (What moved as it was judged: ending the request may move the count again.)
        if self._task.uncancel() <= self._cancelling and exc_type is asyncio.CancelledError:
            moved = self._judged
            raise Stalled(self._watches.timeout_s, moved, silent=moved == self._seen) from None
