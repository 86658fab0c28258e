"""Runs a whole benchmark: setup, the phases in their fixed order (``-i`` times), signals."""

from __future__ import annotations

import dataclasses
import datetime
import platform
import signal
import socket
import threading
from collections.abc import Callable

import anyio

from aiobench import __version__
from aiobench.config import BenchConfig
from aiobench.dirmode import DirLayout
from aiobench.engine import Engine, PosixEngine
from aiobench.errors import EXIT_IO_ERROR, BenchIOError
from aiobench.housekeeping import run_housekeeping
from aiobench.kinds import DROPCACHE, MKDIRS, READ, RMDIRS, RMFILES, STAT, SYNC, WRITE
from aiobench.phases import Observer, RunContext, make_executor, run_phase
from aiobench.results import PhaseResult, RunResult
from aiobench.targets import Layout, Resolved, filesystem_type, open_targets

PhaseCallback = Callable[[PhaseResult], None]


def event_loop_name() -> str:
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
        "live_interval_ms": cfg.live_interval_ms,
        "start_time": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="milliseconds"
        ),
        "notes": list(resolved.notes),
    }


def run_benchmark(
    cfg: BenchConfig,
    resolved: Resolved,
    *,
    engine: Engine | None = None,
    on_phase: PhaseCallback | None = None,
    on_ready: Callable[[], None] | None = None,
    observer: Observer | None = None,
    meta: dict[str, object] | None = None,
) -> RunResult:
    """Open the targets and run every phase; never raises for I/O errors or signals.

    Raises :class:`~aiobench.errors.ConfigError` only during setup, before anything was
    measured (and after removing any file it created).
    """
    loop_name = event_loop_name()
    result = RunResult(meta=meta or run_meta(cfg, resolved, loop_name))
    opened = open_targets(cfg, resolved.path_type)
    stop = threading.Event()
    try:
        executor = make_executor(cfg.slots)
    except BaseException:
        opened.close()
        raise
    ctx = RunContext(
        cfg=cfg,
        layout=resolved.layout,
        paths=cfg.paths,
        fds=opened.fds,
        engine=engine or PosixEngine(),
        executor=executor,
        stop=stop,
        observer=observer or Observer(),
        live_interval_ns=cfg.live_interval_ms * 1_000_000,
    )
    kinds = phase_kinds(cfg, resolved)
    if on_ready is not None:
        on_ready()  # setup can no longer fail: notes for the user may go out now

    def report(phase: PhaseResult, error: BenchIOError | None, iteration: int) -> bool:
        """Keep a block's result; whether the run goes on."""
        phase = dataclasses.replace(phase, iteration=iteration, iterations=cfg.iterations)
        result.phases.append(phase)
        if on_phase is not None:
            on_phase(phase)
        if error is not None:
            result.error = error.to_dict()
        return error is None and not stop.is_set() and not phase.time_limited

    async def housekeeping(iteration: int) -> bool:
        for kind in housekeeping_kinds(cfg):
            if not report(*await run_housekeeping(kind, opened.fds, cfg.paths), iteration):
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
            if not report(phase, shared.error, iteration) or not await housekeeping(iteration):
                return False
        return True

    async def main() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(_watch_signals, stop, result)
            for iteration in range(cfg.iterations):
                if not await sequence(iteration):
                    break
            group.cancel_scope.cancel()

    try:
        backend_options = {"use_uvloop": loop_name == "uvloop"}
        anyio.run(main, backend="asyncio", backend_options=backend_options)
    finally:
        executor.shutdown(wait=True)
        opened.close()
    ctx.observer.run_done(result)
    return result


async def _watch_signals(stop: threading.Event, result: RunResult) -> None:
    """SIGINT/SIGTERM: mark the run interrupted and ask every slot to stop."""
    if threading.current_thread() is not threading.main_thread():
        await anyio.sleep_forever()  # signal handlers can only live in the main thread
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            result.interrupted = True
            result.meta["signal"] = signal.Signals(signum).name
            stop.set()


def exit_code(result: RunResult) -> int:
    if result.error is not None:
        return EXIT_IO_ERROR
    if result.interrupted:
        return 128 + int(signal.Signals[str(result.meta.get("signal", "SIGINT"))])
    return 0
