"""``aiobench storagebench``: the CLI edge (options, which action, output, exit code)."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Annotated, Any

import typer

from aiobench.errors import EXIT_IO_ERROR, ConfigError

# How often --wait and --stop look at the state, and how long --stop waits for the run to
# write its results so far (it stops within a second; an MPI job takes longer to end).
POLL_S = 0.2
STOP_WAIT_S = 60.0


def storagebench(
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="PATH",
            help="The target directories (a disk's mount point, a storage target's dir).",
            show_default=False,
        ),
    ] = None,
    write: Annotated[bool, typer.Option("--write", help="Start a write benchmark.")] = False,
    read: Annotated[
        bool, typer.Option("--read", help="Start a read of the files the last write made.")
    ] = False,
    status: Annotated[
        bool, typer.Option("--status", help="How the run goes or went (any shell, any time).")
    ] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", help="With --status/--wait: the per-target results.")
    ] = False,
    json_out: Annotated[
        bool,
        typer.Option("--json", help="With --status/--wait: one JSON document on stdout."),
    ] = False,
    wait: Annotated[
        bool, typer.Option("--wait", help="Block until the run is done, then its status.")
    ] = False,
    stop: Annotated[
        bool, typer.Option("--stop", help="End the run; its results so far are kept.")
    ] = False,
    cleanup: Annotated[
        bool,
        typer.Option("--cleanup", help="Remove the files the benchmarks made (every host)."),
    ] = False,
    here: Annotated[bool, typer.Option("--here", hidden=True)] = False,
    blocksize: Annotated[
        str, typer.Option("-b", "--blocksize", metavar="SIZE", help="Block size.")
    ] = "1m",
    size: Annotated[
        str | None,
        typer.Option(
            "-s",
            "--size",
            metavar="SIZE",
            help="Bytes per thread and target (a read: the last write's by default).",
        ),
    ] = None,
    threads: Annotated[
        int | None,
        typer.Option("-t", "--threads", metavar="N", help="Threads (files) per target [1]."),
    ] = None,
    iodepth: Annotated[
        int, typer.Option("--iodepth", metavar="N", help="Blocks in flight per thread.")
    ] = 1,
    direct: Annotated[
        bool | None,
        typer.Option(
            "--direct/--nodirect",
            help="O_DIRECT (bypass the page cache); default: on where every target takes it.",
            show_default=False,
        ),
    ] = None,
    hosts: Annotated[
        str | None,
        typer.Option("--hosts", metavar="H1,H2", help="Run on each host (MPI launcher)."),
    ] = None,
    hostsfile: Annotated[
        str | None,
        typer.Option("--hostsfile", metavar="FILE", help="The hosts, one per line."),
    ] = None,
    statedir: Annotated[
        str | None,
        typer.Option(
            "--statedir",
            metavar="DIR",
            help="Where the run's state is kept [$XDG_STATE_HOME/aiobench/storagebench].",
        ),
    ] = None,
) -> int:
    """BeeGFS storagebench's workflow: start a per-target --write or --read in the
    background, then --status [--verbose] from any shell, --wait, --stop, --cleanup."""
    from aiobench.storagebench import state

    targets = list(paths or [])
    if here:  # (one rank of --cleanup over hosts)
        from aiobench.storagebench.cleanup import clean_here

        print(json.dumps(clean_here(targets)))
        return 0
    actions = [
        flag
        for flag, given in (
            ("--write", write),
            ("--read", read),
            ("--status", status),
            ("--stop", stop),
            ("--cleanup", cleanup),
        )
        if given
    ]
    if len(actions) > 1:
        raise ConfigError(f"{actions[1]}: give one of {', '.join(actions)}")
    if not actions and not wait:
        raise ConfigError(
            "give one of --write, --read, --status, --wait, --stop, --cleanup "
            "(aiobench storagebench --help)"
        )
    where = os.path.abspath(statedir) if statedir else state.default_statedir()
    host_list = _hosts(hosts, hostsfile)
    if write or read:
        from aiobench.storagebench.start import Request, start
        from aiobench.units import parse_size

        request = Request(
            write=write,
            targets=targets,
            threads=threads,
            size_bytes=None if size is None else parse_size(size, "--size"),
            block_bytes=parse_size(blocksize, "--blocksize"),
            iodepth=iodepth,
            direct=direct,
            hosts=host_list,
            statedir=where,
        )
        for line in start(request):
            print(line)
        if not wait:
            return 0
    if stop:
        return _stop(where, json_out=json_out, verbose=verbose)
    if cleanup:
        return _cleanup(where, targets, host_list)
    if wait:
        _wait_done(where, timeout_s=None)
    return _status(where, verbose=verbose, json_out=json_out, strict=wait)


def _hosts(hosts: str | None, hostsfile: str | None) -> list[str] | None:
    if hosts is None and hostsfile is None:
        return None
    from aiobench.run.coordinator import launch_rank
    from aiobench.run.hosts import parse_hosts

    if launch_rank() is not None:
        raise ConfigError("--hosts: this is already a rank of an MPI job; leave --hosts out")
    return parse_hosts(hosts, hostsfile)


def _status(statedir: str, *, verbose: bool, json_out: bool, strict: bool) -> int:
    """Print the status; exit 1 for a run that ended on an error (or died) under --wait."""
    from aiobench.storagebench import state
    from aiobench.storagebench.status import collect, render

    doc = collect(statedir)
    if doc is None:
        if json_out:
            print(json.dumps({"statedir": statedir, "status": None}))
        else:
            print(f"No storagebench run was started (state: {statedir}).")
        return 0
    if json_out:
        print(json.dumps(doc, indent=1))
    else:
        sys.stdout.write(render(doc, verbose=verbose))
    failed = doc["status"] in (state.ERROR, state.STALE)
    return EXIT_IO_ERROR if failed and strict else 0


def _wait_done(statedir: str, timeout_s: float | None) -> bool:
    """Block until no run goes on (the lock is free); False when ``timeout_s`` passed."""
    from aiobench.storagebench import state

    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while state.held(statedir):
        if deadline is not None and time.monotonic() > deadline:
            return False
        time.sleep(POLL_S)
    return True


def _stop(statedir: str, *, json_out: bool, verbose: bool) -> int:
    from aiobench.storagebench import state

    current = state.read_state(statedir)
    if current is None or not state.held(statedir):
        said = "no run was started" if current is None else f"the last run is {current['status']}"
        print(f"Nothing to stop: {said} (state: {statedir}).")
        return 0
    # Asked in the state file first; signalled only once the background process said its
    # handlers are set (before, a SIGTERM would kill it; it reads the request instead).
    current = state.update_state(statedir, stop_requested=True)
    supervisor: dict[str, Any] = current.get("supervisor") or {}
    if current.get("supervisor_ready") and state.alive(supervisor):
        os.kill(int(supervisor["pid"]), signal.SIGTERM)
    if not _wait_done(statedir, STOP_WAIT_S):
        print(
            f"Error: the run did not end within {STOP_WAIT_S:.0f} s of --stop "
            f"(pid {supervisor.get('pid')})",
            file=sys.stderr,
        )
        return EXIT_IO_ERROR
    return _status(statedir, verbose=verbose, json_out=json_out, strict=False)


def _cleanup(statedir: str, targets: list[str], hosts: list[str] | None) -> int:
    from aiobench.storagebench import cleanup, state
    from aiobench.storagebench.start import running_now

    if state.held(statedir):
        raise ConfigError(f"--cleanup: {running_now(statedir)}")
    current = state.read_state(statedir) or {}
    dirty = current.get("dirty") or {}
    chosen = [os.path.abspath(t) for t in targets] or list(dirty.get("targets") or [])
    if not chosen:
        print(f"Nothing to clean: no storagebench write is recorded (state: {statedir}).")
        return 0
    on = hosts if hosts is not None else dirty.get("hosts")
    reports = cleanup.clean_hosts(on, chosen) if on else [cleanup.clean_here(chosen)]
    sys.stdout.write(cleanup.render(reports, chosen))
    if any(report["errors"] for report in reports):
        return EXIT_IO_ERROR
    recorded = set(dirty.get("targets") or [])
    if current and (not targets or set(chosen) >= recorded):  # (what was recorded is gone)
        state.update_state(statedir, dirty=None, written=None)
    return 0
