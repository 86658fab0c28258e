"""The console entry point: signal handlers first, then the CLI.

A SIGINT or SIGTERM at any moment after aiobench's own code starts is recorded, never
raised into the code it interrupts (see :mod:`aiobench.run.interrupts`): the first thing
this module does, before any import, is put a handler in place that only holds the
signal; :func:`main` hands what it held to :mod:`aiobench.run.interrupts`. A signal that
arrives while Python itself starts (before any of aiobench's code) cannot be handled by any
program; one that is blocked then (in the signal mask the process was started with) stays
pending and is delivered to these handlers when they unblock it.
"""

# No ``from __future__ import annotations`` here, unlike every other module: it is an
# import too, of a module not always loaded yet. _signal is built into the interpreter,
# which loaded it already: this import costs nothing, whereas importing signal (its enums)
# would leave milliseconds in which Python's own SIGINT handler raises KeyboardInterrupt
# (a traceback) and SIGTERM kills without a word.
import _signal  # type: ignore[import-not-found]  # (no stub: the C half of signal)

_held: list[int] = []  # the signals that came before main() took over


def _hold(signum: int, frame: object) -> None:
    _held.append(signum)


_signal.signal(_signal.SIGINT, _hold)
_signal.signal(_signal.SIGTERM, _hold)

import errno  # noqa: E402  (after the handlers, on purpose)
import gc  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402

from aiobench.run import gcpause, interrupts  # noqa: E402


def main() -> None:
    gcpause.pause()  # until the command's real work begins (see aiobench.run.gcpause)
    # aiobench does no linear algebra. Unless told otherwise, importing numpy starts one
    # OpenBLAS thread per core, whose spinning cost ~50 ms of CPU per run here.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    interrupts.install(held=_held)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, interrupts.HANDLED)
    try:
        if sys.argv[1:] in (["--version"], ["-V"]):
            _version()  # (what the CLI prints for it, without loading the CLI)
            return
        from aiobench.cli import main as cli_main  # typer, numpy, ...: only now

        cli_main()
    finally:
        # All is written and settled. Python's own shutdown puts the default handlers
        # back, under which a late SIGTERM would still kill the process: ignore them.
        for signum in interrupts.HANDLED:
            signal.signal(signum, signal.SIG_IGN)
        # Python's shutdown collects garbage across every object still alive (numpy, typer,
        # the engines: ~0.2 s of CPU here), only to free memory that the exit frees anyway.
        # Frozen, they are left to it; what is garbage by reference counting still goes,
        # and the standard streams are flushed as before (the run closed its own files).
        gc.freeze()


def _version() -> None:
    """``aiobench --version`` alone: the CLI's answer (``aiobench VERSION``) in the time
    Python takes to start, with the standard streams guarded as the CLI guards them."""
    from aiobench import __version__
    from aiobench.render.stdio import failure, guard_standard_streams

    guard_standard_streams()
    print(f"aiobench {__version__}")
    sys.stdout.flush()
    failed = failure(1)
    if failed is not None and failed.errno != errno.EPIPE:  # (as the CLI's stdout_failed)
        name, text = errno.errorcode.get(failed.errno or 0, ""), failed.strerror or str(failed)
        reason = f"{name} ({text})" if name else text
        print(f"Error: stdout: {reason}: the output could not be written", file=sys.stderr)
        sys.exit(1)
