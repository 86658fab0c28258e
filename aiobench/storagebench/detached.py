"""The background process of a storagebench run: the ordinary ``aiobench`` run, then how
it ended, into the state file.

Started by :mod:`aiobench.storagebench.start` in a session of its own, with the state
directory's lock (an inherited fd) that it holds until it exits. The run is ``python -m
aiobench`` with the per-target layout (:func:`aiobench.storagebench.layout.run_args`): its
result document and progress go to the state directory; with hosts it is the MPI launcher
that ``--hosts`` hands over to. A SIGTERM or SIGINT here is passed on to the run, which
stops within a second and writes its results so far.
"""

from __future__ import annotations

import datetime
import json
import os
import signal
import subprocess
import sys
from typing import Any

from aiobench.run.hosts import launch_env
from aiobench.storagebench import layout, state

# The last lines of the run's log looked at for its error.
LOG_TAIL_BYTES = 16 * 1024
# Why a run that a --stop came before (its process not ready yet, or no result written)
# ended Stopped.
_STOPPED_EARLY = "stopped by --stop before any result"


def main(argv: list[str]) -> int:
    statedir, lock = argv[0], int(argv[1])
    os.set_inheritable(lock, False)  # (held here; the run needs no copy)
    plan = state.read_state(statedir) or {}
    args = layout.run_args(
        write=plan["operation"] == "write",
        targets=plan["targets"],
        threads=plan["threads"],
        size_bytes=plan["size_bytes"],
        block_bytes=plan["block_bytes"],
        iodepth=plan["iodepth"],
        direct=plan["direct"],
        hosts=plan["hosts"],
        json_path=os.path.join(statedir, state.RESULT),
        live_path=os.path.join(statedir, state.LIVE),
        live_interval_ms=500,
    )
    env = launch_env(os.environ, os.getuid())
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    started: list[subprocess.Popen[bytes]] = []
    held: list[int] = []

    def pass_on(signum: int, frame: object) -> None:
        for proc in started:
            proc.send_signal(signum)
        if not started:
            held.append(signum)

    signal.signal(signal.SIGTERM, pass_on)
    signal.signal(signal.SIGINT, pass_on)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    # From here --stop signals this process; a --stop that came before (while Python was
    # still starting, when its SIGTERM would have killed it) asked in the state file, and
    # the two updates are serialized there (state.update_state), so one of them sees the
    # other: a stop is never lost, nor this process killed before it could say so.
    if state.update_state(statedir, supervisor_ready=True).get("stop_requested"):
        state.update_state(statedir, ended=_now(), status=state.STOPPED, why=_STOPPED_EARLY)
        return 0
    run = subprocess.Popen(
        [sys.executable, "-m", "aiobench", *args], stdin=subprocess.DEVNULL, env=env
    )
    started.append(run)
    for signum in held:  # (a --stop before the run was there)
        run.send_signal(signum)
    state.update_state(statedir, run=state.identity(run.pid))
    code = run.wait()
    ended = ended_as(statedir, code)
    changes: dict[str, Any] = {"ended": _now(), "exit_code": code, **ended}
    if plan["operation"] == "write" and ended["status"] == state.FINISHED:
        changes["written"] = {
            key: plan[key] for key in ("targets", "threads", "size_bytes", "hosts")
        }
    state.update_state(statedir, **changes)
    return 0


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def ended_as(statedir: str, code: int) -> dict[str, Any]:
    """How the run ended: status and why, from its result document and its log."""
    result = read_result(statedir)
    current = state.read_state(statedir) or {}
    if result is not None and result.get("interrupted"):
        why = "stopped by --stop" if current.get("stop_requested") else "interrupted"
        if not current.get("stop_requested") and result.get("meta", {}).get("signal"):
            why = f"interrupted by {result['meta']['signal']}"
        return {"status": state.STOPPED, "why": why}
    if result is None and current.get("stop_requested"):
        return {"status": state.STOPPED, "why": _STOPPED_EARLY}
    error = result.get("error") if result is not None else None
    if isinstance(error, dict):
        return {"status": state.ERROR, "why": str(error.get("message", "an I/O error"))}
    if code != 0 or result is None:
        said = log_error(statedir)
        why = said or f"the run exited with code {code} and wrote no result"
        return {"status": state.ERROR, "why": why}
    return {"status": state.FINISHED, "why": None}


def read_result(statedir: str) -> dict[str, Any] | None:
    try:
        with open(os.path.join(statedir, state.RESULT), encoding="utf-8") as handle:
            doc = json.load(handle)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def log_error(statedir: str) -> str | None:
    """The last ``Error: ...`` line of the run's log, without its ``Error: ``."""
    try:
        with open(os.path.join(statedir, state.LOG), "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - LOG_TAIL_BYTES))
            tail = handle.read().decode("utf-8", "replace")
    except OSError:
        return None
    errors = [line[len("Error: ") :] for line in tail.splitlines() if line.startswith("Error: ")]
    return errors[-1] if errors else None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
