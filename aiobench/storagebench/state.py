"""The state directory: one state file (replaced atomically), the lock, the run's files.

``state.json`` says which run is or was going on (what it runs, the background process,
how it ended) and what the last write left on the targets (for a read and ``--cleanup``).
``lock`` is held (``flock``) by the background process for as long as it runs: a second
start while it is held is refused. A process is named by pid, its start time (clock ticks
after boot, /proc/PID/stat) and the boot id, so a pid reused after it died or after a
reboot is not taken for it: such a state is stale.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from typing import Any

from aiobench.errors import ConfigError

STATE = "state.json"
LOCK = "lock"
UPDATE_LOCK = "update.lock"
RESULT = "result.json"
LIVE = "live.json"
LOG = "log"
# A state file larger than this is not ours.
MAX_STATE_BYTES = 1 << 20

RUNNING, FINISHED, ERROR, STOPPED, STALE = "Running", "Finished", "Error", "Stopped", "Stale"


def default_statedir(environ: dict[str, str] | None = None) -> str:
    """``$XDG_STATE_HOME/aiobench/storagebench`` (XDG's default ``~/.local/state``)."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_STATE_HOME") or ""
    if not os.path.isabs(base):  # (XDG: a relative value is to be ignored)
        base = os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "aiobench", "storagebench")


def boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def process_start(pid: int) -> int | None:
    """The start time of process ``pid`` (clock ticks after boot); None if there is none."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    # Field 22; the command name (field 2) may hold spaces and parentheses.
    fields = text[text.rfind(")") + 2 :].split()
    return int(fields[19]) if len(fields) > 19 else None


def identity(pid: int) -> dict[str, Any]:
    return {"pid": pid, "pid_start": process_start(pid), "boot_id": boot_id()}


def alive(who: dict[str, Any] | None) -> bool:
    """Whether the process named by ``who`` (:func:`identity`) still runs on this boot."""
    if not who or not isinstance(who.get("pid"), int) or who.get("boot_id") != boot_id():
        return False
    start = process_start(who["pid"])
    if start is None or start != who.get("pid_start"):
        return False
    try:  # (a zombie has exited: its start time is still there)
        with open(f"/proc/{who['pid']}/stat", encoding="utf-8", errors="replace") as handle:
            text = handle.read()
        return text[text.rfind(")") + 2 :].split()[0] != "Z"
    except OSError:
        return False


def read_state(statedir: str) -> dict[str, Any] | None:
    """The state file's content; None when there is none."""
    path = os.path.join(statedir, STATE)
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_STATE_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"--statedir: {path}: {exc.strerror}") from None
    try:
        state = json.loads(data) if len(data) <= MAX_STATE_BYTES else None
    except ValueError:
        state = None
    if not isinstance(state, dict):
        raise ConfigError(f"--statedir: {path} is not a storagebench state file")
    return state


def write_state(statedir: str, state: dict[str, Any]) -> None:
    """Replace the state file atomically (a reader sees the old or the new one, whole)."""
    fd, tmp = tempfile.mkstemp(prefix=".state-", dir=statedir)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(state, handle, indent=1)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, os.path.join(statedir, STATE))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def update_state(statedir: str, **changes: Any) -> dict[str, Any]:
    """The state file with ``changes`` (read, changed, replaced, under a lock of its own:
    the starting and the background process both change it)."""
    fd = os.open(os.path.join(statedir, UPDATE_LOCK), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        state = read_state(statedir) or {}
        state.update(changes)
        write_state(statedir, state)
    finally:
        os.close(fd)
    return state


def make_statedir(statedir: str) -> None:
    """The state directory (mode 0700 when made here); a usage error naming why not."""
    try:
        os.makedirs(statedir, mode=0o700, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"--statedir: {statedir}: {exc.strerror}") from None
    if not os.path.isdir(statedir):
        raise ConfigError(f"--statedir: {statedir} is not a directory")


def take_lock(statedir: str) -> int | None:
    """The lock's fd, held; None when another process holds it."""
    fd = os.open(os.path.join(statedir, LOCK), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def held(statedir: str) -> bool:
    """Whether a process holds the lock (a run goes on)."""
    if not os.path.exists(os.path.join(statedir, LOCK)):
        return False
    fd = take_lock(statedir)
    if fd is None:
        return True
    os.close(fd)
    return False
