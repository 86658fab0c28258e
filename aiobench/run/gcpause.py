"""The cyclic garbage collector, paused while aiobench starts.

Start-up (importing typer, numpy, asyncio and aiobench's own modules, parsing, planning)
makes some 200,000 objects that live as long as the process and leaves almost no cyclic
garbage (~500 objects in a tiny run). Each of the collector's passes over the young
objects, ~90 of them in that time, costs ~15 ms of a ~250 ms tiny run. So
:mod:`aiobench.entry` pauses it first thing, and the command resumes it where its real
work begins: a benchmark just before its first phase, a subcommand before it runs. What
start-up made is then frozen (never looked at by the collector again, as at the exit: see
:mod:`aiobench.entry`), and the collector goes on as before for everything made after.
A command that ends before that point (``--help``, ``--dryrun``, a usage error) never
resumes it: the process ends anyway.
"""

from __future__ import annotations

import gc

_paused: list[bool] = []  # [True] between pause() and resume()


def pause() -> None:
    """Stop the collector until :func:`resume` (start-up, under :mod:`aiobench.entry`)."""
    if gc.isenabled():
        gc.disable()
        _paused[:] = [True]


def resume() -> None:
    """Start-up is over: freeze what it made and run the collector again. A no-op unless
    :func:`pause` stopped it (a test calling the CLI in its own process)."""
    if _paused:
        _paused.clear()
        gc.freeze()
        gc.enable()
