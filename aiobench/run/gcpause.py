"""The cyclic garbage collector, paused while aiobench starts.

Start-up (importing typer, numpy, asyncio and aiobench's own modules, parsing, planning)
makes some 40,000 objects that the collector tracks, nearly all of them alive until the
process ends, and almost no cyclic garbage (~500 objects in a tiny run). The collector's
~90 passes over them took 12-19 ms of a tiny run (``-w -r -b 4k -s 4k``) and ~5 ms of
``--help``. So :mod:`aiobench.entry` pauses it first thing, and the command resumes it
where its own work begins: a benchmark once its set-up is done (before ``--start``'s wait
and the opening of the targets), a subcommand before it runs. What start-up made is then
frozen (never looked at by the collector again, as at the exit: see
:mod:`aiobench.entry`), and the collector goes on as before for everything made after. A
command that ends before that point (``--help``, ``--dryrun``, a usage error) never
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
