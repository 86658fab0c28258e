"""--hosts / --hostsfile: host lists, the relayed command line and the launcher found."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from aiobench.errors import ConfigError
from aiobench.hosts import (
    HYDRA,
    OPEN_MPI,
    Launcher,
    find_launcher,
    launch_command,
    parse_hosts,
    read_hostsfile,
    without_host_options,
)


def test_hosts_are_split_as_elbencho_splits_them() -> None:
    assert parse_hosts("h1,h2") == ["h1", "h2"]
    assert parse_hosts("h1, h2 h3,,") == ["h1", "h2", "h3"]
    assert parse_hosts("node1:1611,node2") == ["node1", "node2"]  # a service port: dropped
    assert parse_hosts("localhost,localhost") == ["localhost", "localhost"]  # two ranks
    for bad in ("", " , ", "-n", "a/b"):
        with pytest.raises(ConfigError, match=r"^--hosts: "):
            parse_hosts(bad)


def test_a_hostsfile_has_hosts_per_line_with_comments(tmp_path: Path) -> None:
    listed = tmp_path / "hosts"
    listed.write_text("# storage clients\nnode1\n\nnode2, node3  # rack 2\n")
    assert read_hostsfile(str(listed)) == ["node1", "node2", "node3"]
    listed.write_text("# nothing\n\n")
    with pytest.raises(ConfigError, match="names no hosts"):
        read_hostsfile(str(listed))
    with pytest.raises(ConfigError, match=r"^--hostsfile: .*missing: No such file"):
        read_hostsfile(str(tmp_path / "missing"))


def test_the_ranks_get_the_command_without_the_host_options() -> None:
    args = ["-w", "--hosts", "a,b", "-t", "2", "--hostsfile=f", "/data", "--", "--hosts"]
    assert without_host_options(args) == ["-w", "-t", "2", "/data", "--", "--hosts"]
    launcher = Launcher("/opt/mpi/bin/mpirun", OPEN_MPI)
    assert launch_command(launcher, ["a", "a", "b"], ["-r", "--hosts", "a,a,b", "/d"]) == [
        "/opt/mpi/bin/mpirun", "-H", "a,a,b", "-n", "3", sys.executable, "-m", "aiobench",
        "-r", "/d",
    ]  # fmt: skip
    hydra = launch_command(Launcher("/usr/bin/mpiexec", HYDRA), ["a", "b"], ["-r", "/d"])
    assert hydra[:5] == ["/usr/bin/mpiexec", "-hosts", "a,b", "-n", "2"]


def _script(path: Path, says: str) -> None:
    path.write_text(f"#!/bin/sh\necho '{says}'\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_the_launcher_is_found_by_what_it_says_it_is(tmp_path: Path) -> None:
    bin_dir, python_dir = tmp_path / "bin", tmp_path / "py"
    bin_dir.mkdir()
    python_dir.mkdir()
    interpreter = str(python_dir / "python3")
    empty = {"PATH": str(tmp_path / "nowhere")}
    assert find_launcher(empty, interpreter) is None
    _script(bin_dir / "mpirun", "something else 1.0")  # not an MPI launcher we know
    _script(bin_dir / "mpiexec", "HYDRA build details:")
    on_path = {"PATH": str(bin_dir)}
    assert find_launcher(on_path, interpreter) == Launcher(str(bin_dir / "mpiexec"), HYDRA)
    _script(python_dir / "mpirun", "mpirun (Open MPI) 5.0.11")  # beside the interpreter
    beside = find_launcher(on_path, interpreter)
    assert beside == Launcher(str(python_dir / "mpirun"), OPEN_MPI)
    assert os.path.exists(beside.path)
