"""``--cleanup``: remove the files storagebench's runs made, on every target and host.

Only names of the layout (:mod:`aiobench.storagebench.layout`) in the hidden folder are
removed, each relative to the folder opened without following a symlink; an entry of such a
name that is no regular file (a symlink, a dir) is left and named; the folder goes when it
is empty. Over hosts the same runs on each through the MPI launcher (``--hosts``), whose
ranks each report one JSON line.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import stat
import subprocess
import sys
from typing import Any

from aiobench.errors import AiobenchError
from aiobench.storagebench import layout
from aiobench.text import printable


def clean_here(targets: list[str]) -> dict[str, Any]:
    """Clean ``targets`` on this host: what was removed, left and failed."""
    from aiobench.run.coordinator import launch_rank

    out: dict[str, Any] = {"host": socket.gethostname(), "rank": launch_rank(), "removed": 0}
    out |= {"folders": 0, "left": [], "errors": []}
    for target in targets:
        _clean_target(target, out)
    return out


def _clean_target(target: str, out: dict[str, Any]) -> None:
    hidden = layout.hidden_dir(target)
    try:
        top = os.open(target, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            out["errors"].append(f"{target}: {exc.strerror}")
        return
    try:
        try:
            fd = os.open(
                layout.HIDDEN,
                os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                dir_fd=top,
            )
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                out["left"].append(f"{hidden}: not a directory storagebench made (a symlink?)")
            else:
                out["errors"].append(f"{hidden}: {exc.strerror}")
            return
        try:
            for name in sorted(os.listdir(fd)):
                if layout.rank_of(name) is None:
                    out["left"].append(f"{os.path.join(hidden, name)}: not a storagebench name")
                    continue
                _remove(fd, name, os.path.join(hidden, name), out)
        finally:
            os.close(fd)
        try:
            os.rmdir(layout.HIDDEN, dir_fd=top)
            out["folders"] += 1
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ENOTEMPTY):  # (another rank was first)
                out["errors"].append(f"{hidden}: {exc.strerror}")
    finally:
        os.close(top)


def _remove(fd: int, name: str, path: str, out: dict[str, Any]) -> None:
    try:
        mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        kind = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file"
        out["left"].append(f"{path}: {kind}, not removed")
        return
    try:
        os.unlink(name, dir_fd=fd)  # (unlink never follows: a link swapped in goes, not its target)
        out["removed"] += 1
    except FileNotFoundError:
        pass  # (another rank on this host was first)
    except OSError as exc:
        out["errors"].append(f"{path}: {exc.strerror}")


def clean_hosts(hosts: list[str], targets: list[str]) -> list[dict[str, Any]]:
    """Clean ``targets`` on every host, one MPI rank each; their reports."""
    from aiobench.run.hosts import launch_command, launch_env, launch_plan

    launch_plan(hosts, [])  # (a usage error when there is no launcher)
    from aiobench.run.hosts import find_launcher

    launcher = find_launcher() or "mpirun"
    args = ["storagebench", "--cleanup", "--here", "--", *targets]
    command = launch_command(launcher, hosts, args, sys.executable)
    done = subprocess.run(
        command,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=launch_env(os.environ, os.geteuid()),
        check=False,
    )
    reports = []
    for line in done.stdout.splitlines():
        with contextlib.suppress(ValueError):
            report = json.loads(line)
            if isinstance(report, dict) and "removed" in report:
                reports.append(report)
    if done.returncode != 0 or len(reports) != len(hosts):
        said = done.stderr.strip().splitlines()
        raise AiobenchError(
            f"--cleanup: the MPI launcher ended with code {done.returncode} and "
            f"{len(reports)} of {len(hosts)} hosts reported"
            + (f": {printable(said[0])}" if said else "")
        )
    return reports


def render(reports: list[dict[str, Any]], targets: list[str]) -> str:
    """What ``--cleanup`` did, per host; 'nothing to clean' when nothing was there."""
    lines = []
    several = len(reports) > 1
    for report in reports:
        where = f"{report['host']} [rank {report['rank']}]" if several else report["host"]
        if report["removed"] or report["folders"]:
            lines.append(
                f"{printable(where)}: removed {report['removed']} files and "
                f"{report['folders']} of {len(targets)} hidden folders ({layout.HIDDEN})"
            )
        elif several:
            lines.append(f"{printable(where)}: nothing to remove there")
        lines += [f"{printable(where)}: left {printable(item)}" for item in report["left"]]
        lines += [f"Error: {printable(where)}: {printable(i)}" for i in report["errors"]]
    if not any(r["removed"] or r["folders"] for r in reports):
        names = " ".join(printable(t) for t in targets)
        lines.insert(0, f"Nothing to clean: no storagebench files on {names}")
    return "\n".join(lines) + "\n"
