"""The console entry point: signal handlers first, then the CLI.

Nothing heavy is imported before the handlers are in place, so a SIGINT or SIGTERM at any
moment after aiobench's own code starts is recorded (never raised into the code it
interrupts; see :mod:`aiobench.run.interrupts`). A signal that arrives while Python itself
starts cannot be handled by any program; one that is blocked then (in the signal mask the
process was started with) stays pending and is delivered to these handlers when they
unblock it.
"""

from __future__ import annotations

import gc
import os
import signal

from aiobench.run import interrupts


def main() -> None:
    # aiobench does no linear algebra. Unless told otherwise, importing numpy starts one
    # OpenBLAS thread per core, whose spinning cost ~50 ms of CPU per run here.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    interrupts.install()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, interrupts.HANDLED)
    try:
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
