"""Runs a whole benchmark: setup, the phases in their fixed order (``-i`` times), signals."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import platform
import signal
import socket
import threading
from collections.abc import Callable

import anyio

from aiobench import __version__, interrupts, ioengines
from aiobench.config import BenchConfig
from aiobench.dirmode import DirLayout
from aiobench.engine import Engine, StopEvent
from aiobench.errors import EXIT_IO_ERROR, BenchIOError, ConfigError
from aiobench.housekeeping import run_housekeeping
from aiobench.kinds import (
    DROPCACHE,
    MKDIRS,
    READ,
    RMDIRS,
    RMFILES,
    STAT,
    SYNC,
    WRITE,
    phase_name,
)
from aiobench.merge import RankPart, merge_phase
from aiobench.mpi import World
from aiobench.phases import Observer, RunContext, make_executor, run_phase
from aiobench.results import PhaseResult, RunResult, Totals
from aiobench.targets import Layout, Resolved, Targets, filesystem_type
from aiobench.worker import PhaseShared

PhaseCallback = Callable[[PhaseResult], None]


def event_loop_name(world: World | None = None) -> str:
    """uvloop when installed; asyncio's own loop under MPI. Open MPI's mpirun hands each
    rank a pseudo-terminal as stdout, and after a uvloop loop has run, output written
    to it at the end was cut short now and then when mpirun's stdout was a pipe (4 of 30
    runs of a 35 KB write here, Open MPI 5.0.11), which broke ``--json -``."""
    if world is not None:
        return "asyncio"
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


def phase_kinds(cfg: BenchConfig, resolved: Resolved) -> list[str]:
    """The phases to run, in their fixed order (the order of options does not matter)."""
    dirs = isinstance(resolved.layout, DirLayout) and resolved.layout.dirs > 0
    wanted = (
        (MKDIRS, cfg.mkdirs and dirs),
        (WRITE, cfg.write),
        (STAT, cfg.stat),
        (READ, cfg.read),
        (RMFILES, cfg.delfiles),
        (RMDIRS, cfg.deldirs and dirs),
    )
    return [kind for kind, on in wanted if on]


def skipped_note(cfg: BenchConfig, resolved: Resolved, result: RunResult) -> str | None:
    """What a time limit kept from running (elbencho's rule: a phase the limit stopped
    ends the run), as a note for the user; None when nothing was left out."""
    if not result.phases or result.interrupted or result.error is not None:
        return None
    last = result.phases[-1]
    names = [phase_name(kind, cfg.rwmixpct) for kind in phase_kinds(cfg, resolved)]
    if not last.time_limited or last.name not in names:
        return None
    left = names[names.index(last.name) + 1 :]
    iterations = cfg.iterations - 1 - last.iteration
    parts = [", ".join(left)] if left else []
    if iterations:
        parts.append(f"{iterations} more iteration{'s' if iterations > 1 else ''}")
    if not parts:
        return None
    return (
        f"--timelimit {cfg.timelimit_s} s stopped {last.name}, so {' and '.join(parts)} "
        "did not run (as in elbencho, a phase the time limit stops ends the run)"
    )


def housekeeping_kinds(cfg: BenchConfig) -> list[str]:
    """SYNC then DROPCACHE (only synced data can be dropped), as asked for."""
    return [kind for kind, on in ((SYNC, cfg.sync), (DROPCACHE, cfg.dropcache)) if on]


def run_meta(cfg: BenchConfig, resolved: Resolved, loop_name: str) -> dict[str, object]:
    layout = resolved.layout
    sizes = layout.sizes if isinstance(layout, Layout) else (layout.file_size,) * len(cfg.paths)
    return {
        "aiobench_version": __version__,
        "command": list(cfg.argv),
        "label": cfg.label,
        "config": cfg.to_dict(),
        "seed": cfg.seed,
        "path_type": resolved.path_type,
        "paths": list(cfg.paths),
        "sizes_bytes": list(sizes),
        "block_size_bytes": layout.block_size,
        "filesystems": {p: filesystem_type(p) for p in cfg.paths},
        "host": socket.gethostname(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "event_loop": loop_name,
        "ioengine": cfg.ioengine,
        "live_interval_ms": cfg.live_interval_ms,
        "start_time": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="milliseconds"
        ),
        "notes": list(resolved.notes),
    }


class _PhaseEvents(Observer):
    """Under MPI: only the start and end of phases reach the outputs as they happen; the
    progress and intervals of one rank are not the job's (rank 0 reports the merged
    intervals after each phase)."""

    def __init__(self, observer: Observer) -> None:
        self.observer = observer

    def phase_started(self, name: str, start: datetime.datetime) -> None:
        self.observer.phase_started(name, start)

    def phase_ended(self, name: str) -> None:
        self.observer.phase_ended(name)


def _open(engine: Engine, cfg: BenchConfig, resolved: Resolved, world: World | None) -> Targets:
    """Open the targets; under MPI only once every rank could (else all raise the first
    rank's error, and each removes what it created)."""
    try:
        # A signal stops the opening between targets (under MPI: see RunContext.check_signal)
        check = interrupts.check if world is None else None
        opened = engine.open(cfg, resolved.path_type, check=check)
    except ConfigError as exc:
        if world is None:
            raise
        world.agree(str(exc))
        raise  # (agree raised already)
    if world is not None:
        try:
            world.agree(None)
        except ConfigError:
            opened.undo()
            raise
    return opened


def run_benchmark(
    cfg: BenchConfig,
    resolved: Resolved,
    *,
    engine: Engine | None = None,
    on_phase: PhaseCallback | None = None,
    on_ready: Callable[[], None] | None = None,
    observer: Observer | None = None,
    meta: dict[str, object] | None = None,
    world: World | None = None,
) -> RunResult:
    """Open the targets and run every phase; never raises for I/O errors, nor for a signal
    once a block has started.

    Raises :class:`~aiobench.errors.ConfigError` only during setup, and
    :class:`~aiobench.interrupts.Interrupted` for a signal before the first block started,
    both before anything was measured (and after removing any file it created). A run that
    a signal ended removes the files it created unless a write phase completed on them
    (:meth:`~aiobench.targets.Targets.finish`). Under MPI (``world``) every rank calls
    this; rank 0's result holds the merged phases, the others' only the outcome.
    """
    loop_name = event_loop_name(world)
    engine = engine or ioengines.make(cfg.ioengine)
    result = RunResult(meta=meta or run_meta(cfg, resolved, loop_name))
    result.meta["ioengine"] = engine.name
    opened = _open(engine, cfg, resolved, world)
    stop = StopEvent()  # (native loops see it between blocks, see StopEvent)
    try:
        executor = make_executor(cfg.slots)
    except BaseException:
        opened.close()
        raise
    observer = observer or Observer()
    ctx = RunContext(
        cfg=cfg,
        layout=resolved.layout,
        targets=opened,
        engine=engine,
        executor=executor,
        stop=stop,
        observer=observer if world is None else _PhaseEvents(observer),
        live_interval_ns=cfg.live_interval_ms * 1_000_000,
        world=world,
    )
    if world is not None:
        ctx.thread_ids, ctx.split_base, ctx.split_threads = world.split(
            cfg.threads, isinstance(resolved.layout, DirLayout)
        )
    kinds = phase_kinds(cfg, resolved)
    if on_ready is not None:
        on_ready()  # setup can no longer fail: notes for the user may go out now

    def report(
        phase: PhaseResult,
        error: BenchIOError | None,
        iteration: int,
        shared: PhaseShared | None = None,
    ) -> bool:
        """Keep a block's result; whether the run goes on (under MPI: on every rank)."""
        phase = dataclasses.replace(
            phase,
            iteration=iteration,
            iterations=cfg.iterations,
            error=error.to_dict() if error is not None else None,
        )
        if shared is not None and shared.kind == WRITE and error is None:
            opened.filled |= not phase.interrupted
        if world is not None:
            return _report_job(world, result, phase, error, shared, stop, observer, on_phase)
        result.phases.append(phase)
        if on_phase is not None:
            on_phase(phase)
        if error is not None:
            result.error = error.to_dict()
        return error is None and not stop.is_set() and not phase.time_limited

    async def housekeeping(iteration: int) -> bool:
        for kind in housekeeping_kinds(cfg):
            ctx.check_signal()
            if world is not None:
                world.barrier()
            if not report(*await run_housekeeping(kind, ctx.engine, opened), iteration):
                return False
        return True

    async def sequence(iteration: int) -> bool:
        """The housekeeping blocks and phases once, in their fixed order; whether to go on."""
        if not await housekeeping(iteration):
            return False
        for index, kind in enumerate(kinds):
            # Each phase of each iteration draws its own offsets and data from the seed;
            # iteration 0 numbers its phases as a run without -i does (same seed, same I/O).
            phase, shared = await run_phase(ctx, kind, iteration * len(kinds) + index)
            if not report(phase, shared.error, iteration, shared):
                return False
            if not await housekeeping(iteration):
                return False
        return True

    async def main() -> None:
        loop = asyncio.get_running_loop()
        # From the signal handler: Event.set() takes a lock the main thread may hold.
        interrupts.attach(lambda: loop.call_soon_threadsafe(stop.set))
        try:
            for iteration in range(cfg.iterations):
                if not await sequence(iteration):
                    break
        except interrupts.Interrupted:
            pass  # a block's setup stopped before its start; the signal is settled below
        finally:
            interrupts.attach(None)

    try:
        backend_options = {"use_uvloop": loop_name == "uvloop"}
        anyio.run(main, backend="asyncio", backend_options=backend_options)
    finally:
        executor.shutdown(wait=True)
        opened.close()
        if world is not None:
            world.close()
    signum = interrupts.received()
    if world is None and signum is not None and not result.phases:
        opened.finish(interrupted=True)
        raise interrupts.Interrupted(signum)  # nothing measured: the CLI says so
    interrupts.settle()  # the outcome is fixed: a later signal does not change it
    if world is None and signum is not None:
        result.interrupted = True
        result.meta["signal"] = signum.name
    opened.finish(interrupted=result.interrupted)
    if world is None or world.rank == 0:
        observer.run_done(result)
    return result


# A rank without a thread that had work has no first-done instant of its own.
_NEVER = 1 << 62


def _report_job(
    world: World,
    result: RunResult,
    phase: PhaseResult,
    error: BenchIOError | None,
    shared: PhaseShared | None,
    stop: threading.Event,
    observer: Observer,
    on_phase: PhaseCallback | None,
) -> bool:
    """Under MPI, after each block on every rank: find the job's first-done instant, read
    this rank's counters at it, merge all ranks' results on rank 0 and report them there;
    every rank learns the same outcome. Whether the run goes on."""
    timeline = shared.timeline if shared is not None else None
    own_first = phase.first_done.elapsed_ns
    if shared is not None:
        own_first = (shared.first_done_ns or shared.start_ns + _NEVER) - shared.start_ns
    first = world.min(own_first)
    if first >= _NEVER:
        first = 0  # no thread of any rank had work
    ops, nbytes, entries, read_ops, read_bytes = (
        timeline.counts_at(first) if timeline is not None else (0, 0, 0, 0, 0)
    )
    at_first = Totals(
        elapsed_ns=first,
        ops=ops,
        bytes=nbytes,
        entries=entries,
        cpu_percent=phase.first_done.cpu_percent,
        read_ops=read_ops,
        read_bytes=read_bytes,
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
        if on_phase is not None:
            on_phase(merged)
    stopped = any(s[2] for s, _ in statuses)
    return not failed and not stopped and not any(limited for _, limited in statuses)


def exit_code(result: RunResult) -> int:
    if result.error is not None:
        return EXIT_IO_ERROR
    if result.interrupted:
        return 128 + int(signal.Signals[str(result.meta.get("signal", "SIGINT"))])
    return 0
