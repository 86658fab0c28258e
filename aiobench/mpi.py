"""Scale-out over MPI: this process's place in the job and the steps all ranks take together.

mpi4py (the ``aiobench[mpi]`` extra) is imported only when the run was launched by
``mpirun``/``srun`` or given ``--mpi``. Every collective call here is made from the main
thread, between phases or at a phase's common start; during a phase a rank only polls for a
stop message from a peer (an error or a signal there), so no rank waits on another while
measuring.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiobench.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np

# Set in every rank's environment by the launchers we know: Open MPI, MPICH/Intel MPI
# (PMI), PMIx (Open MPI 5, Slurm's srun --mpi=pmix), MVAPICH.
_RANK_VARS = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK")
_SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE", "SLURM_NTASKS")
_STOP_TAG = 7_701


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


def abort_job(code: int) -> None:
    """This rank ends on its own (a signal before the run could stop in step, an
    unexpected error): end every rank of the job now, rather than leave them waiting for
    it in a collective step. Does nothing without a running MPI job of several ranks."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is None or not mpi.Is_initialized() or mpi.Is_finalized():
        return
    if mpi.COMM_WORLD.Get_size() > 1:
        sys.stderr.flush()
        mpi.COMM_WORLD.Abort(code)


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
