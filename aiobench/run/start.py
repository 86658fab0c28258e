"""elbencho's ``--start EPOCH``: wait for that instant (UTC seconds since the epoch) before
the first phase, with a countdown, so that runs on several hosts (ranks, or separate
commands) start together on synchronized clocks."""

from __future__ import annotations

import datetime
import time
from typing import TextIO

from aiobench.errors import ConfigError
from aiobench.run import interrupts

# How often the wait looks at the clock and for a signal: the start is kept to this.
_STEP_S = 0.01


def check_start(epoch: int | None, now: float | None = None) -> None:
    """:class:`ConfigError` when ``epoch`` has passed (as elbencho refuses it)."""
    if epoch is None:
        return
    now = time.time() if now is None else now
    if epoch < now:
        when = datetime.datetime.fromtimestamp(epoch, datetime.UTC).isoformat()
        raise ConfigError(
            f"--start: {epoch} ({when}) has passed already ({int(now - epoch)} s ago)"
        )


def wait_for_start(epoch: int | None, out: TextIO | None) -> None:
    """Return at ``epoch`` (or at once without one, or on a signal: the run then ends as
    interrupted); ``out`` (the lead's human output, None on other ranks) gets the
    countdown: one line, redrawn each second on a terminal."""
    if epoch is None:
        return
    shown = -1
    terminal = out is not None and out.isatty()
    while (left := epoch - time.time()) > 0 and interrupts.received() is None:
        seconds = int(left) + 1
        if out is not None and seconds != shown and (terminal or shown < 0):
            end = "\r" if terminal else "\n"
            print(f"Waiting for the start (--start {epoch}): {seconds} s", end=end, file=out)
            out.flush()
            shown = seconds
        time.sleep(min(_STEP_S, left))
    if terminal and out is not None:
        print(file=out)
