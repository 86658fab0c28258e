"""Runs a whole benchmark: setup, the phases in their fixed order (``-i`` times), signals."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import platform
import signal
import socket
from time import perf_counter
from typing import TYPE_CHECKING

import anyio

from aiobench import __version__
from aiobench.config import BenchConfig, cpu_sets, memory_zones
from aiobench.engines.base import Engine
from aiobench.engines.gate import StopEvent
from aiobench.errors import EXIT_IO_ERROR, BenchIOError
from aiobench.kinds import (
    DELBUCKETMD,
    DELOBJMD,
    DROPCACHE,
    GETBACL,
    GETBUCKETMD,
    GETOBJACL,
    GETOBJMD,
    LISTOBJ,
    LISTOBJPAR,
    MIXED,
    MKDIRS,
    MULTIDEL,
    PUTBACL,
    PUTBUCKETMD,
    PUTOBJACL,
    PUTOBJMD,
    READ,
    RMDIRS,
    RMFILES,
    STAT,
    STATDIRS,
    SYNC,
    WRITE,
    PhaseKind,
)
from aiobench.plan.ranks import offset
from aiobench.plan.slots import phase_title
from aiobench.plan.targets import Resolved, Targets, filesystem_type
from aiobench.plan.workload import Layout
from aiobench.results.events import Observer
from aiobench.results.runresult import RunResult
from aiobench.run import interrupts
from aiobench.run.affinity import Binding
from aiobench.run.coordinator import Coordinator
from aiobench.run.phases import RunContext, make_executor, run_phase
from aiobench.stats.tally import PhaseTally
from aiobench.units import format_bytes, format_elapsed, format_seconds

if TYPE_CHECKING:  # (--opslog's module is loaded only when it is given)
    from aiobench.results.model import PhaseResult
    from aiobench.run.opslog import OpsLog


def event_loop_name() -> str:
    """The event loop of a run of one process (:meth:`Coordinator.loop_name`)."""
    return Coordinator().loop_name()


def phase_kinds(cfg: BenchConfig, resolved: Resolved) -> list[PhaseKind]:
    """The phases to run, in their fixed order (the order of options does not matter)."""
    dirs = resolved.layout.dir_phases
    bucket_md = cfg.s3btag or cfg.s3olockcfg or cfg.s3bversion
    # elbencho's order, its metadata phases of object storage among the others
    wanted = (
        (MKDIRS, cfg.mkdirs and dirs),
        (PUTBACL, cfg.s3baclput),
        (PUTBUCKETMD, bucket_md and cfg.mkdirs),
        (STATDIRS, cfg.s3statdirs),
        (GETBUCKETMD, bucket_md),
        (WRITE, cfg.write),
        (PUTOBJACL, cfg.s3aclput),
        (PUTOBJMD, cfg.s3otag and cfg.write),
        (STAT, cfg.stat),
        (GETOBJMD, cfg.s3otag),
        (GETOBJACL, cfg.s3aclget),
        (LISTOBJ, cfg.s3listobj > 0),
        (LISTOBJPAR, cfg.s3listobjpar),
        (READ, cfg.read),
        (MIXED, cfg.s3mix is not None),
        (DELOBJMD, cfg.s3otag and cfg.delfiles),
        (MULTIDEL, cfg.s3multidel > 0),
        (RMFILES, cfg.delfiles),
        (DELBUCKETMD, bucket_md and cfg.deldirs),
        (GETBACL, cfg.s3baclget),
        (RMDIRS, cfg.deldirs and dirs),
    )
    return [kind for kind, on in wanted if on]


def skipped_note(cfg: BenchConfig, resolved: Resolved, result: RunResult) -> str | None:
    """What a time limit kept from running (elbencho's rule: a phase the limit stopped
    ends the run), as a note for the user; None when nothing was left out."""
    if not result.phases or result.interrupted or result.error is not None:
        return None
    last = result.phases[-1]
    layout = resolved.layout
    names = [phase_title(cfg, layout, kind) for kind in phase_kinds(cfg, resolved)]
    if not last.time_limited or last.name not in names:
        return None
    left = names[names.index(last.name) + 1 :]
    iterations = cfg.iterations - 1 - last.iteration
    parts = [", ".join(left)] if left else []
    if iterations:
        parts.append(f"{iterations} more iteration{'s' if iterations > 1 else ''}")
    if not parts:
        return None
    limit = format_seconds(cfg.phase_limit_ns)
    return (
        f"--timelimit {limit} s stopped {last.name}, so {' and '.join(parts)} did not run "
        "(as in elbencho, a phase the time limit stops ends the run)"
    )


def randamount_notes(cfg: BenchConfig, resolved: Resolved, result: RunResult) -> list[str]:
    """For each random-offset phase that did all of its --randamount before --timelimit
    ended it (elbencho's rule: the amount ends the phase), a note for the user that says
    how to run for the whole time; one per phase name, however many iterations."""
    if not (cfg.rand and cfg.phase_limit_ns) or cfg.infloop:
        return []
    layout = resolved.layout
    random = {layout.phase_name(READ), phase_title(cfg, layout, WRITE)}
    default = "" if cfg.randamount_bytes is not None else ", by default the files' size"
    notes: dict[str, str] = {}
    for phase in result.phases:
        if phase.name in random and phase.status == "ok" and phase.name not in notes:
            done = phase.last_done
            notes[phase.name] = (
                f"{phase.name} ended after its --randamount ({format_bytes(done.bytes)}"
                f"{default}) in {format_elapsed(done.elapsed_ns)}, before --timelimit "
                f"{format_seconds(cfg.phase_limit_ns)} s; to run for the whole time, give "
                "--infloop or a larger --randamount"
            )
    return list(notes.values())


def housekeeping_kinds(cfg: BenchConfig) -> list[PhaseKind]:
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
        "filesystems": {p: filesystem_type(p) for p in cfg.paths if not cfg.netbench},
        "host": socket.gethostname(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "event_loop": loop_name,
        "ioengine": cfg.ioengine,
        "live_interval_ms": cfg.live_interval_ms,
        "start_time": datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds"),
        "notes": list(resolved.notes),
    }


def _open(engine: Engine, cfg: BenchConfig, resolved: Resolved, job: Coordinator) -> Targets:
    """Open the targets, on every process or none (a process that opened them removes what
    it created when another could not)."""
    # A signal stops the opening between targets (under MPI: see RunContext.check_signal)
    return job.agreed(
        lambda: engine.open(cfg, resolved, check=job.check_signal),
        undo=lambda opened: opened.undo(),
    )


def run_benchmark(
    cfg: BenchConfig,
    resolved: Resolved,
    engine: Engine,
    *,
    observer: Observer | None = None,
    meta: dict[str, object] | None = None,
    coordinator: Coordinator | None = None,
    opslog: OpsLog | None = None,
) -> RunResult:
    """Open the targets and run every phase (each operation logged to ``opslog``); never
    raises for I/O errors, nor for a signal once a block has started.

    An I/O error opening the targets (:data:`~aiobench.engines.posix.IO_ERRNOS`) is the
    result's error, with no phase. Raises :class:`~aiobench.errors.ConfigError` only during
    setup, and
    :class:`~aiobench.run.interrupts.Interrupted` for a signal before the first block started,
    both before anything was measured (and after removing any file it created). A run that
    a signal ended removes the files it created unless a write phase completed on them
    (:meth:`~aiobench.plan.targets.Targets.finish`). Every process of the job calls this
    (``coordinator``); the lead's result holds the job's phases, the others' only the
    outcome. The ``observer`` hears of it all (:mod:`aiobench.results.events`).
    """
    job = coordinator or Coordinator()
    loop_name = job.loop_name()
    result = RunResult(meta=meta or run_meta(cfg, resolved, loop_name))
    result.meta["ioengine"] = engine.name
    binding = Binding(cpu_sets(cfg), memory_zones(cfg))  # --cores/--zones
    # Before the threads that opening may start (netbench's servers bind theirs) and the
    # executor's.
    binding.bind_process()
    try:
        opened = _open(engine, cfg, resolved, job)
    except BenchIOError as exc:  # the device failed, not the options: nothing measured
        result.error = exc.to_dict()
        return result
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
        observer=job.events(observer),
        live_interval_ns=cfg.live_interval_ms * 1_000_000,
        coordinator=job,
        split=offset(job.split(cfg.threads, resolved.layout.dir_mode), cfg.rankoffset),
        opslog=opslog,
        binding=binding,
    )
    kinds = phase_kinds(cfg, resolved)
    observer.ready()  # setup can no longer fail: notes for the user may go out now

    def report(
        phase: PhaseResult,
        error: BenchIOError | None,
        iteration: int,
        tally: PhaseTally | None = None,
        *,
        wrote: bool = False,
    ) -> bool:
        """Keep a block's result (``wrote``: of a write phase); whether the run goes on
        (on every process)."""
        phase = dataclasses.replace(
            phase,
            iteration=iteration,
            iterations=cfg.iterations,
            error=error.to_dict() if error is not None else None,
        )
        if wrote and error is None:
            opened.filled |= not phase.interrupted
        return job.report(result, phase, error, tally, stop, observer)

    async def housekeeping(iteration: int) -> bool:
        for kind in housekeeping_kinds(cfg):
            from aiobench.run.housekeeping import run_housekeeping  # (--sync, --dropcache)

            ctx.check_signal()
            job.barrier()
            if not report(*await run_housekeeping(kind, ctx.engine, opened), iteration):
                return False
        return True

    async def sequence(iteration: int) -> bool:
        """The housekeeping blocks and phases once, in their fixed order; whether to go on."""
        if not await housekeeping(iteration):
            return False
        for index, kind in enumerate(kinds):
            if index or iteration:  # --phasedelay (a stop ends the wait)
                await _wait(cfg.phasedelay_s, stop)
            # Each phase of each iteration draws its own offsets and data from the seed;
            # iteration 0 numbers its phases as a run without -i does (same seed, same I/O).
            phase, tally = await run_phase(ctx, kind, iteration * len(kinds) + index)
            if not report(phase, tally.error, iteration, tally, wrote=kind == WRITE):
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
            await opened.release()

    try:
        backend_options = {"use_uvloop": loop_name == "uvloop"}
        anyio.run(main, backend="asyncio", backend_options=backend_options)
        extra, failure = opened.concluded()  # (every process: may be a collective step)
        result.meta.update(extra)  # (the dict the outputs were given)
        if failure is not None and result.error is None and result.phases:
            result.error = {"message": failure}
    finally:
        executor.shutdown(wait=True)
        opened.close()
        job.close()
    signum = job.signalled(result)
    if signum is not None:  # before anything was measured: the CLI says so
        opened.finish(interrupted=True)
        raise interrupts.Interrupted(signum)
    interrupts.settle()  # the outcome is fixed: a later signal does not change it
    opened.finish(interrupted=result.interrupted)
    if job.lead:
        observer.run_done(result)
    return result


async def _wait(seconds: int, stop: StopEvent) -> None:
    """Sleep, in slices short enough that a stop (a signal, a peer's error) ends it soon;
    the stop is a threading event (the native loops read it), so it is polled."""
    until = perf_counter() + seconds
    while not stop.is_set() and (left := until - perf_counter()) > 0:  # noqa: ASYNC110
        await anyio.sleep(min(left, 0.05))


def exit_code(result: RunResult) -> int:
    if result.error is not None:
        return EXIT_IO_ERROR
    if result.interrupted:
        return 128 + int(signal.Signals[str(result.meta.get("signal", "SIGINT"))])
    return 0
