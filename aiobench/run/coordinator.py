"""How the processes of a run work together, behind one interface: scale-out.

:class:`Coordinator` is a run of one process, where every step of the job is this
process's own: each method does nothing, or the one obvious thing. A job of MPI ranks is
:class:`aiobench.run.mpi.MpiCoordinator`, the only place that knows about MPI;
:func:`aiobench.run.launch.connect` picks it when the run was launched by
``mpirun``/``srun`` or given ``--mpi``. The CLI, the runner and the phases call these
methods and never ask which coordinator they have.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeVar

from aiobench.plan.split import ThreadSplit
from aiobench.run import interrupts

if TYPE_CHECKING:
    from aiobench.errors import BenchIOError
    from aiobench.results.events import Observer
    from aiobench.results.model import PhaseResult
    from aiobench.results.runresult import RunResult
    from aiobench.stats.tally import PhaseTally
    from aiobench.stats.timeline import CounterTimeline

T = TypeVar("T")

# Set in every rank's environment by the launchers we know: Open MPI, MPICH/Intel MPI
# (PMI), PMIx (Open MPI 5, Slurm's srun --mpi=pmix), MVAPICH.
_RANK_VARS = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK")
_SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE", "SLURM_NTASKS")


class Coordinator:
    """A run of one process: the job is this process alone."""

    @property
    def lead(self) -> bool:
        """Whether this is the process that prints the results and writes the files."""
        return True

    @property
    def peer_poll_ns(self) -> int | None:
        """How often a phase looks for a peer's stop message while it measures (None:
        never)."""
        return None

    def loop_name(self) -> str:
        """The event loop to run on: uvloop when installed."""
        try:
            import uvloop  # noqa: F401
        except ImportError:
            return "asyncio"
        return "uvloop"

    def agreed(self, step: Callable[[], T], undo: Callable[[T], None] | None = None) -> T:
        """A setup step that succeeds on every process or fails on all of them (``undo``
        takes back a success here when another process failed)."""
        return step()

    def split(self, threads: int, dir_mode: bool) -> ThreadSplit:
        return ThreadSplit.alone(threads)

    def meta(self) -> dict[str, object]:
        """What the run's ``meta`` says of the job."""
        return {}

    def notes(self) -> list[str]:
        """Notes for the user about how the job runs."""
        return []

    def cpus(self) -> int:
        """The cores CPU percentages are shares of: those this process may run on."""
        return len(os.sched_getaffinity(0))

    def check_signal(self) -> None:
        """A safe point of setup: stop here (:class:`~aiobench.run.interrupts.Interrupted`)
        if a signal came."""
        interrupts.check()

    def barrier(self) -> None:
        """Wait until every process got here."""

    def listen(self) -> None:
        """Before a phase's I/O starts: be ready for a peer's stop message."""

    def poll(self, stop: threading.Event) -> None:
        """During a phase: pass a stop on to the peers, and take theirs; never blocks."""

    def timeline(self, start_ns: int) -> CounterTimeline | None:
        """A record of the phase's counters over time, where the job's FIRST DONE must be
        read off later (None: this process's own FIRST DONE is the job's)."""
        return None

    def events(self, observer: Observer) -> Observer:
        """The events of this process that reach the outputs while a phase runs."""
        return observer

    def report(
        self,
        result: RunResult,
        phase: PhaseResult,
        error: BenchIOError | None,
        tally: PhaseTally | None,
        stop: threading.Event,
        observer: Observer,
    ) -> bool:
        """Keep a block's result (the job's, on the lead) and tell the observer; whether
        the run goes on."""
        result.phases.append(phase)
        observer.phase_done(phase)
        if error is not None:
            result.error = error.to_dict()
        return error is None and not stop.is_set() and not phase.time_limited

    def signalled(self, result: RunResult) -> signal.Signals | None:
        """After the last block: mark the result of a run a signal ended; the signal if
        it came before anything was measured (the caller raises
        :class:`~aiobench.run.interrupts.Interrupted`)."""
        signum = interrupts.received()
        if signum is None or not result.phases:
            return signum
        result.interrupted = True
        result.meta["signal"] = signum.name
        return None

    def where(self, rank: object) -> str:
        """`` on rank 3 (host)``: where a rank given in the result is, for messages."""
        return ""

    def close(self) -> None:
        """The run's I/O is over."""

    def finish(self) -> None:
        """The last step of the command, after the lead reported."""


def _first_number(environ: Mapping[str, str], names: tuple[str, ...]) -> int | None:
    for name in names:
        value = environ.get(name, "")
        if value.isdigit():
            return int(value)
    return None


def launch_rank(environ: Mapping[str, str] = os.environ) -> int | None:
    """This process's rank as the launcher set it, without starting MPI; None if none."""
    return _first_number(environ, _RANK_VARS)


def launched_size(environ: Mapping[str, str] = os.environ) -> int | None:
    """The job size the launcher announced, if it did."""
    return _first_number(environ, _SIZE_VARS)


def wanted(forced: bool, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether to run under MPI: asked for, or launched as one of several ranks."""
    if forced:
        return True
    if launch_rank(environ) is None:
        return False
    return launched_size(environ) != 1  # srun of one task: an ordinary run


def abort_job(code: int) -> None:
    """This process ends on its own (a signal before the run could stop in step, an
    unexpected error): under MPI, end every rank of the job now, rather than leave them
    waiting for it in a collective step. Does nothing without a running job of several
    ranks (mpi4py is not imported here)."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is None or not mpi.Is_initialized() or mpi.Is_finalized():
        return
    if mpi.COMM_WORLD.Get_size() > 1:
        sys.stderr.flush()
        mpi.COMM_WORLD.Abort(code)
