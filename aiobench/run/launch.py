"""Which coordinator a run gets: MPI's when launched as a rank of a job, else its own.

Apart from :mod:`aiobench.run.coordinator` so that the coordinators do not import each
other: :mod:`aiobench.run.mpi` builds on the one-process coordinator, and only this picks
between them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiobench.errors import ConfigError
from aiobench.run.coordinator import Coordinator, wanted

if TYPE_CHECKING:
    from aiobench.config import BenchConfig


def connect(cfg: BenchConfig) -> Coordinator:
    """The run's coordinator: MPI's when launched as a rank of a job, else this process's."""
    if wanted(cfg.mpi):
        # Imported only here: mpi4py and the merge code load only for a job of ranks.
        from aiobench.run.mpi import MpiCoordinator

        return MpiCoordinator.connect(shared=not cfg.nosvcshare)
    if cfg.nosvcshare:
        raise ConfigError("--nosvcshare: only applies under MPI (mpirun, srun or --mpi)")
    return Coordinator()
