"""Scale-out over MPI: the job's coordinator (:class:`MpiCoordinator`), this process's place
in the job and the steps all ranks take together.

This module is imported only when the run was launched by ``mpirun``/``srun`` or given
``--mpi`` (:func:`aiobench.run.launch.connect`), and imports mpi4py (the ``aiobench[mpi]``
extra) then. Every collective call here is made from the main
thread, between phases or at a phase's common start; during a phase a rank only polls for a
stop message from a peer (an error or a signal there), so no rank waits on another while
measuring.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from aiobench.errors import BenchIOError, ConfigError
from aiobench.plan.split import ThreadSplit
from aiobench.results.events import Observer
from aiobench.results.model import PhaseResult, Totals
from aiobench.results.runresult import RunResult
from aiobench.run import interrupts
from aiobench.run.coordinator import Coordinator
from aiobench.stats.merge import RankPart, merge_phase
from aiobench.stats.timeline import CounterTimeline, Counts

if TYPE_CHECKING:
    import datetime

    import numpy as np

    from aiobench.stats.tally import PhaseTally

T = TypeVar("T")

_STOP_TAG = 7_701
# During a phase: how often a rank looks for a peer's stop message while it measures.
_PEER_POLL_NS = 50_000_000
# How often a rank waiting for the others at a phase's end looks whether they are there.
_IDLE_POLL_S = 0.0005
# A rank without a thread that had work has no first-done instant of its own.
_NEVER = 1 << 62


def _mpi() -> Any:
    try:
        from mpi4py import MPI
    except ImportError:
        raise ConfigError(
            "--mpi: launched under MPI but mpi4py is not installed; "
            "pip install 'aiobench[mpi]' (or run without mpirun/srun)"
        ) from None
    return MPI


def _int64s(value: int) -> np.ndarray[Any, np.dtype[np.int64]]:
    """A one-element int64 array (numpy only now: the CLI's start-up imports this module)."""
    import numpy as np

    return np.array([value], dtype=np.int64)


@dataclass(slots=True)
class World:
    """The MPI job as one benchmark: ranks, their hosts and how the work is split."""

    comm: Any
    rank: int
    size: int
    hosts: list[str]  # host name of each rank
    shared: bool  # the dataset is split over all ranks' threads (else each rank has it all)
    _stop: Any = None  # a pending receive of a peer's stop message
    _stop_buffer: np.ndarray[Any, np.dtype[np.int64]] = field(default_factory=lambda: _int64s(0))
    _told: bool = False

    @classmethod
    def connect(cls, *, shared: bool) -> World:
        comm = _mpi().COMM_WORLD
        hosts = comm.allgather(socket.gethostname())
        return cls(
            comm=comm, rank=comm.Get_rank(), size=comm.Get_size(), hosts=hosts, shared=shared
        )

    @property
    def host(self) -> str:
        return self.hosts[self.rank]

    def name(self, rank: int) -> str:
        return f"rank {rank} ({self.hosts[rank]})"

    def meta(self) -> dict[str, object]:
        return {"size": self.size, "shared": self.shared, "hosts": list(self.hosts)}

    def split(self, threads: int, dir_mode: bool) -> tuple[range, int, int]:
        """(global thread ranks of this process, index of its first slice, slice count).

        Shared (and always in dir mode, where each thread rank has dirs of its own): the
        dataset is split over ``threads * size`` thread ranks, exactly as one process with
        that many threads splits it. Not shared (``--nosvcshare``): each rank splits the
        whole dataset over its own threads.
        """
        first = self.rank * threads
        ids = range(first, first + threads)
        if self.shared or dir_mode:
            return ids, first, threads * self.size
        return ids, 0, threads

    def agree(self, error: str | None) -> None:
        """Setup step done on every rank: if any rank failed, all raise the first failure."""
        errors = self.comm.allgather(error)
        for rank, message in enumerate(errors):
            if message is not None:
                raise ConfigError(f"{self.name(rank)}: {message}")

    def barrier(self) -> None:
        self.comm.Barrier()

    def idle_barrier(self) -> None:
        """:meth:`barrier` that sleeps while it waits: a blocking collective of Open MPI
        polls at full speed, which takes a core from the ranks still measuring (a rank
        without work, such as netbench's servers, would wait the whole phase so)."""
        request = self.comm.Ibarrier()
        while not request.Test():
            time.sleep(_IDLE_POLL_S)

    def min(self, value: int) -> int:
        return int(self.comm.allreduce(value, op=_mpi().MIN))

    def gather(self, value: object) -> list[Any] | None:
        """Every rank's ``value`` on rank 0 (in rank order); None elsewhere."""
        gathered: list[Any] | None = self.comm.gather(value, root=0)
        return gathered

    def allgather(self, value: object) -> list[Any]:
        gathered: list[Any] = self.comm.allgather(value)
        return gathered

    def listen(self) -> None:
        """Be ready for a peer's stop message (before each phase's I/O starts)."""
        if self._stop is None:
            mpi = _mpi()
            self._stop = self.comm.Irecv(self._stop_buffer, source=mpi.ANY_SOURCE, tag=_STOP_TAG)

    def poll(self, stop: threading.Event) -> None:
        """During a phase: tell the peers once when this rank stops (an error or a signal),
        and stop when a peer says it stopped. Never blocks."""
        if stop.is_set() and not self._told:
            self._told = True
            for peer in range(self.size):
                if peer != self.rank:
                    self.comm.Send(_int64s(self.rank), dest=peer, tag=_STOP_TAG)
        if self._stop is not None and self._stop.Test():
            self._stop = None
            stop.set()
            self._told = True  # the peer that stopped has told everyone already

    def close(self) -> None:
        """Withdraw the pending receive (the run is over)."""
        if self._stop is not None:
            self._stop.Cancel()
            self._stop.Wait()
            self._stop = None


def binding_note() -> str | None:
    """A note when mpirun bound this rank to one core of several (its event loop and I/O
    threads then share that core)."""
    allowed, cores = len(os.sched_getaffinity(0)), os.cpu_count() or 1
    if allowed == 1 < cores:
        return (
            f"this rank may run on 1 of the host's {cores} cores (mpirun binds ranks to "
            "cores by default), so its I/O threads and event loop share it; use "
            "mpirun --bind-to none (srun --cpu-bind=none)"
        )
    return None


class _PhaseEvents(Observer):
    """Only the start and end of phases reach the outputs as they happen; the progress and
    intervals of one rank are not the job's (rank 0 reports the merged intervals after
    each phase)."""

    def __init__(self, observer: Observer) -> None:
        self.observer = observer

    def phase_started(self, name: str, start: datetime.datetime) -> None:
        self.observer.phase_started(name, start)

    def phase_ended(self, name: str) -> None:
        self.observer.phase_ended(name)


@dataclass(slots=True)
class MpiCoordinator(Coordinator):
    """A job of MPI ranks run as one benchmark; rank 0 is the lead."""

    world: World

    @classmethod
    def connect(cls, *, shared: bool) -> MpiCoordinator:
        return cls(World.connect(shared=shared))

    @property
    def lead(self) -> bool:
        return self.world.rank == 0

    @property
    def peer_poll_ns(self) -> int:
        return _PEER_POLL_NS

    def loop_name(self) -> str:
        """asyncio's own loop. Open MPI's mpirun hands each rank a pseudo-terminal as
        stdout, and after a uvloop loop has run, output written to it at the end was cut
        short now and then when mpirun's stdout was a pipe (4 of 30 runs of a 35 KB write
        here, Open MPI 5.0.11), which broke ``--json -``."""
        return "asyncio"

    def agreed(self, step: Callable[[], T], undo: Callable[[T], None] | None = None) -> T:
        """Every rank goes on only if the step succeeded on all of them (else all raise
        the first rank's error)."""
        try:
            value = step()
        except (ConfigError, BenchIOError) as exc:  # (the others must not wait for it)
            self.world.agree(str(exc))
            raise  # (agree raised already)
        try:
            self.world.agree(None)
        except ConfigError:
            if undo is not None:
                undo(value)
            raise
        return value

    def split(self, threads: int, dir_mode: bool) -> ThreadSplit:
        return ThreadSplit(*self.world.split(threads, dir_mode))

    def meta(self) -> dict[str, object]:
        return {"mpi": self.world.meta()}

    def notes(self) -> list[str]:
        note = binding_note()
        return [] if note is None else [note]

    def cpus(self) -> int:
        """All of the host's cores, so the ranks of a host add up to its load (mpirun may
        bind each rank to one core)."""
        return os.cpu_count() or 1

    def check_signal(self) -> None:
        """Not here: ranks that stopped in setup would leave the others waiting at the
        phase's common start. The phase starts and its stop event ends it at once on
        every rank instead."""

    def barrier(self) -> None:
        self.world.barrier()

    def listen(self) -> None:
        self.world.listen()

    def poll(self, stop: threading.Event) -> None:
        self.world.poll(stop)

    def timeline(self, start_ns: int) -> CounterTimeline:
        return CounterTimeline(start_ns)

    def events(self, observer: Observer) -> Observer:
        return _PhaseEvents(observer)

    def report(
        self,
        result: RunResult,
        phase: PhaseResult,
        error: BenchIOError | None,
        tally: PhaseTally | None,
        stop: threading.Event,
        observer: Observer,
    ) -> bool:
        """After each block on every rank: find the job's first-done instant, read this
        rank's counters at it, merge all ranks' results on rank 0 and report them there;
        every rank learns the same outcome. Whether the run goes on."""
        world = self.world
        world.idle_barrier()  # (the ranks that ended first wait here, not in world.min)
        timeline = tally.timeline if tally is not None else None
        own_first = phase.first_done.elapsed_ns
        if tally is not None:
            own_first = (tally.first_done_ns or tally.start_ns + _NEVER) - tally.start_ns
        first = world.min(own_first)
        if first >= _NEVER:
            first = 0  # no thread of any rank had work
        counts = timeline.counts_at(first) if timeline is not None else Counts(0, 0, 0, 0, 0)
        at_first = Totals(
            elapsed_ns=first,
            ops=counts.ops,
            bytes=counts.bytes,
            entries=counts.entries,
            cpu_percent=phase.first_done.cpu_percent,
            read_ops=counts.read_ops,
            read_bytes=counts.read_bytes,
        )
        signum = interrupts.received()
        signal_name = signum.name if signum is not None else None
        status = (error.to_dict() if error is not None else None, signal_name, stop.is_set())
        statuses = world.allgather((status, phase.time_limited))
        parts = world.gather(RankPart(world.rank, world.host, phase, at_first))
        failed = [(r, s[0]) for r, (s, _) in enumerate(statuses) if s[0] is not None]
        signalled = [(r, s[1]) for r, (s, _) in enumerate(statuses) if s[1] is not None]
        if failed:
            rank, info = failed[0]
            result.error = info | {"message": f"{world.name(rank)}: {info['message']}"}
            result.error |= {"rank": rank, "host": world.hosts[rank]}
        if signalled:
            rank, name = signalled[0]
            result.interrupted = True
            result.meta["signal"] = name
            result.meta["signal_rank"] = rank
        if parts is not None:
            merged = merge_phase(parts)
            if failed:
                merged = dataclasses.replace(merged, interrupted=False, error=result.error)
            for interval in merged.intervals:
                observer.interval(merged.name, interval)
            result.phases.append(merged)
            observer.phase_done(merged)
        stopped = any(s[2] for s, _ in statuses)
        return not failed and not stopped and not any(limited for _, limited in statuses)

    def signalled(self, result: RunResult) -> signal.Signals | None:
        """A signal is the job's outcome, marked by :meth:`report` on every rank."""
        return None

    def where(self, rank: object) -> str:
        return f" on {self.world.name(rank)}" if isinstance(rank, int) else ""

    def close(self) -> None:
        self.world.close()

    def finish(self) -> None:
        """Wait for rank 0's report: a rank that exits non-zero ends the job."""
        self.world.barrier()
