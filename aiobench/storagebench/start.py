"""Starting a storagebench run: the checks, the hidden folders, the state, the spawn.

Everything that can be checked here is, before anything is created: a bad option or path is
one ``Error:`` line and exit 2, as in the ordinary run. The run itself goes on in a process
of its own session (``setsid``: no terminal, no job control of the shell that started it),
which holds the state directory's lock for as long as it runs.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import os
import stat
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

from aiobench.errors import ConfigError
from aiobench.storagebench import layout, state
from aiobench.text import printable

# What the background process is started as.
DETACHED_MODULE = "aiobench.storagebench.detached"
# How often the run writes its progress (--livejson) for --status, in ms.
PROGRESS_INTERVAL_MS = 500
# O_DIRECT wants blocks that are a multiple of the logical block size (at most 4 KiB here).
DIRECT_ALIGN = 4096


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    """A --write or --read as given (sizes in bytes; None: not given)."""

    write: bool
    targets: list[str]
    threads: int | None
    size_bytes: int | None
    block_bytes: int
    iodepth: int
    direct: bool | None  # None: on where every target takes O_DIRECT
    hosts: list[str] | None
    statedir: str


def start(req: Request) -> list[str]:
    """Check ``req``, start the run in the background; the lines to print."""
    state.make_statedir(req.statedir)
    lock = state.take_lock(req.statedir)
    if lock is None:
        raise ConfigError(f"--statedir: {running_now(req.statedir)}")
    try:
        previous = state.read_state(req.statedir) or {}
        plan = _plan(req, previous)
        if req.write:
            for target in plan["targets"]:
                _make_hidden(target)
        direct, direct_why = _direct(req, plan)
        plan |= {"direct": direct, "direct_why": direct_why}
        _spawn(req.statedir, previous, plan, lock)
    finally:
        os.close(lock)  # (the background process holds its own copy)
    name = "Write" if req.write else "Read"
    return [
        f"{name} storage benchmark was started.",
        "You can query the status with the --status argument of aiobench storagebench.",
        f"O_DIRECT: {'on' if direct else 'off'} ({direct_why}).",
    ]


def running_now(statedir: str) -> str:
    """What holds the lock, said for a refused start."""
    current = state.read_state(statedir) or {}
    what = str(current.get("operation", "storagebench")).lower()
    pid = (current.get("supervisor") or {}).get("pid", "?")
    return (
        f"a storagebench {what} started {current.get('started', '?')} is still running "
        f"(pid {pid}, state {statedir}); wait for it (--wait) or end it (--stop)"
    )


def _plan(req: Request, previous: dict[str, Any]) -> dict[str, Any]:
    """The run's parameters, checked; a read's come from the last write."""
    written = previous.get("written")
    targets = [_target(path) for path in req.targets]
    if req.write:
        if not targets:
            raise ConfigError("--write: name the target directories (PATH...)")
        if req.size_bytes is None or req.size_bytes <= 0:
            raise ConfigError("--size: give the size per thread and target (e.g. --size 1g)")
        threads = req.threads or 1
        size = req.size_bytes
        hosts = req.hosts
    else:
        if not isinstance(written, dict):
            raise ConfigError(
                f"--read: no finished write in {req.statedir} to read back; run --write first"
            )
        targets = targets or list(written["targets"])
        if targets != written["targets"]:
            raise ConfigError(
                "--read: reads the targets the last write used, in its order: "
                + " ".join(printable(t) for t in written["targets"])
            )
        threads = req.threads or written["threads"]
        size = written["size_bytes"] if req.size_bytes is None else req.size_bytes
        hosts = req.hosts if req.hosts is not None else written.get("hosts")
        if threads > written["threads"]:
            raise ConfigError(
                f"--threads: the last write made {written['threads']} files per target; "
                f"a read can use at most that many threads (got {threads})"
            )
        if not 0 < size <= written["size_bytes"]:
            raise ConfigError(
                f"--size: the last write made files of {written['size_bytes']} bytes; "
                f"a read can read at most that much of each (got {size})"
            )
        if hosts != written.get("hosts"):
            raise ConfigError(
                "--hosts: a read runs on the hosts of the last write: "
                + (",".join(written.get("hosts") or []) or "this host only")
            )
    if len(set(map(os.path.realpath, targets))) != len(targets):
        raise ConfigError("PATH: a target is named twice")
    if threads < 1:
        raise ConfigError(f"--threads: at least 1 (got {threads})")
    if req.block_bytes <= 0:
        raise ConfigError(f"--blocksize: more than 0 (got {req.block_bytes})")
    if req.iodepth < 1:
        raise ConfigError(f"--iodepth: at least 1 (got {req.iodepth})")
    return {
        "operation": "write" if req.write else "read",
        "targets": targets,
        "threads": threads,
        "size_bytes": size,
        "block_bytes": min(req.block_bytes, size),
        "iodepth": req.iodepth,
        "hosts": hosts,
    }


def _target(path: str) -> str:
    """A target as stored: absolute (the user's own symlink kept), an existing directory
    whose hidden folder, if there, is a real directory."""
    if not os.path.isdir(path):
        why = "does not exist" if not os.path.lexists(path) else "is not a directory"
        raise ConfigError(f"PATH: {printable(path)} {why} (a target is a directory)")
    hidden = layout.hidden_dir(path)
    with contextlib.suppress(FileNotFoundError):
        mode = os.lstat(hidden).st_mode
        if not stat.S_ISDIR(mode):
            kind = "a symbolic link" if stat.S_ISLNK(mode) else "not a directory"
            raise ConfigError(f"PATH: {printable(hidden)} is {kind}; storagebench never uses it")
    return os.path.abspath(path)


def _make_hidden(target: str) -> None:
    """The hidden folder in ``target`` (made relative to the target: never a symlink)."""
    fd = os.open(target, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            os.mkdir(layout.HIDDEN, 0o755, dir_fd=fd)
        except FileExistsError:
            if not stat.S_ISDIR(os.stat(layout.HIDDEN, dir_fd=fd, follow_symlinks=False).st_mode):
                hidden = printable(layout.hidden_dir(target))
                raise ConfigError(f"PATH: {hidden} is no directory") from None
        except OSError as exc:
            raise ConfigError(
                f"PATH: {printable(layout.hidden_dir(target))}: {exc.strerror}"
            ) from None
    finally:
        os.close(fd)


def _direct(req: Request, plan: dict[str, Any]) -> tuple[bool, str]:
    """Whether the run uses O_DIRECT, and why."""
    targets: list[str] = plan["targets"]
    if req.direct is not None:
        return req.direct, "as asked" if req.direct else "--nodirect"
    if plan["block_bytes"] % DIRECT_ALIGN:
        return False, f"the block size is no multiple of {DIRECT_ALIGN} bytes"
    for target in targets:
        if not _takes_direct(layout.hidden_dir(target) if req.write else target):
            return False, f"the filesystem of {printable(target)} does not take it"
    hosts = " on this host" if plan["hosts"] else ""
    return True, f"every target's filesystem takes it{hosts}; the page cache is bypassed"


def _takes_direct(directory: str) -> bool:
    """Whether a file in ``directory`` opens with O_DIRECT (a probe, removed at once)."""
    try:
        fd = os.open(
            directory,
            os.O_RDWR | os.O_TMPFILE | os.O_DIRECT | os.O_CLOEXEC,
            0o600,
        )
    except OSError as exc:
        if exc.errno in (errno.EINVAL, errno.EOPNOTSUPP, errno.EISDIR):
            return _takes_direct_named(directory)
        return False
    os.close(fd)
    return True


def _takes_direct_named(directory: str) -> bool:
    """The probe without O_TMPFILE (filesystems that have none, FUSE among them)."""
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    name = f".aiobench-direct-probe-{os.getpid()}"
    try:
        fd = os.open(
            name,
            os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_DIRECT | os.O_CLOEXEC,
            0o600,
            dir_fd=dir_fd,
        )
    except OSError:
        return False
    else:
        os.close(fd)
        os.unlink(name, dir_fd=dir_fd)
        return True
    finally:
        os.close(dir_fd)


def _spawn(statedir: str, previous: dict[str, Any], plan: dict[str, Any], lock: int) -> None:
    """The state of the new run, then its background process (which inherits the lock)."""
    for name in (state.RESULT, state.LIVE):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(statedir, name))
    now = datetime.datetime.now(datetime.UTC)
    dirty = previous.get("dirty") or {"targets": [], "hosts": None}
    if plan["operation"] == "write":
        # Where files may be from now on, for --cleanup (a write that fails leaves some).
        targets = list(dict.fromkeys([*dirty["targets"], *plan["targets"]]))
        dirty = {"targets": targets, "hosts": plan["hosts"] or dirty.get("hosts")}
    record = {
        "version": 1,
        **plan,
        "started": now.isoformat(timespec="seconds"),
        "status": state.RUNNING,
        "why": None,
        "supervisor": None,
        "supervisor_ready": False,  # (its signal handlers are set: --stop may signal it)
        "run": None,
        "stop_requested": False,
        "ended": None,
        "exit_code": None,
        "written": None if plan["operation"] == "write" else previous.get("written"),
        "dirty": dirty,
    }
    state.write_state(statedir, record)
    log = os.open(
        os.path.join(statedir, state.LOG),
        os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW,
        0o600,
    )
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", DETACHED_MODULE, statedir, str(lock)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            pass_fds=(lock,),
            start_new_session=True,
        )
    finally:
        os.close(log)
    state.update_state(statedir, supervisor=state.identity(child.pid))
