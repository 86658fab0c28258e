"""Scale-out over MPI with a real ``mpirun`` (#6): split, merge, reports and failures."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from aiobench.results.schema import load_schema
from aiobench.run.coordinator import launch_rank, launched_size, wanted
from tests.helpers import MPIRUN, Ext4Loop, RunCli, mpi_env, mpirun, needs_mpi

pytestmark = pytest.mark.slow  # real CLI runs (see tests/conftest.py)

HOST = socket.gethostname()


def _doc(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    Draft202012Validator(load_schema()).validate(doc)
    return doc


def _phase_totals(doc: dict[str, Any]) -> list[tuple[str, int, int, int]]:
    return [
        (p["phase"], p["last_done"]["ops"], p["last_done"]["bytes"], p["last_done"]["entries"])
        for p in doc["phases"]
    ]


def _thread_work(doc: dict[str, Any]) -> list[list[tuple[int, int, int, int]]]:
    return [
        [(t["rank"], t["ops"], t["bytes"], t["entries"]) for t in p["threads"]]
        for p in doc["phases"]
    ]


def test_launch_is_found_from_the_launchers_environment() -> None:
    assert launch_rank({"OMPI_COMM_WORLD_RANK": "3"}) == 3
    assert launch_rank({"PMIX_RANK": "0"}) == 0
    assert launch_rank({"HOME": "/root"}) is None
    assert launched_size({"PMI_SIZE": "4"}) == 4
    assert wanted(False, {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2"})
    assert not wanted(False, {"PMIX_RANK": "0", "SLURM_NTASKS": "1"})  # srun of one task
    assert not wanted(False, {})
    assert wanted(True, {})


@needs_mpi
@pytest.mark.parametrize("ranks", [2, 3])
def test_shared_files_split_over_all_ranks_threads_as_one_process_would(
    tmp_path: Path, run_cli: RunCli, ranks: int
) -> None:
    """mpirun -n N aiobench -t 1 moves what aiobench -t N does, thread rank for thread
    rank; rank 0 alone prints; the JSON names ranks and hosts and validates."""
    files = [str(tmp_path / f"f{i}") for i in range(2)]
    args = ("-w", "-r", "-b", "4k", "-s", "3m", "--nolive", "--seed", "7", "--json", "-")
    job = _doc(mpirun(ranks, *args, "-t", "1", *files))
    single = _doc(run_cli(*args, "-t", str(ranks), *files))
    assert _phase_totals(job) == _phase_totals(single)
    assert _thread_work(job) == _thread_work(single)
    assert job["meta"]["mpi"] == {"size": ranks, "shared": True, "hosts": [HOST] * ranks}
    for phase in job["phases"]:
        first, last = phase["first_done"], phase["last_done"]
        assert 0 < first["elapsed_ns"] <= last["elapsed_ns"]
        assert 0 < first["ops"] <= last["ops"] == 2 * 768
        per_rank = phase["per_rank"]
        assert [(r["rank"], r["host"]) for r in per_rank["ranks"]] == [
            (r, HOST) for r in range(ranks)
        ]
        assert sum(r["ops"] for r in per_rank["ranks"]) == last["ops"]
        assert max(r["elapsed_ns"] for r in per_rank["ranks"]) == last["elapsed_ns"]
        # Every rank's threads measured: the merged latency holds every operation.
        assert phase["latency"]["io"]["count"] == last["ops"]
    text = mpirun(ranks, *args[:-2], "-t", "1", *files)
    assert text.returncode == 0, text.stderr
    assert text.stdout.count("OPERATION   RESULT TYPE") == 1
    assert text.stdout.count("per rank ") == 2  # WRITE and READ
    # (which ranks are the slowest and the fastest is the machine's to say)
    assert "Min              :" in text.stdout
    assert re.search(rf"Max +:.* rank [0-{ranks - 1}] {re.escape(HOST)}\n", text.stdout)


@needs_mpi
@pytest.mark.parametrize("ranks", [2, 3])
def test_dir_mode_uses_global_thread_ranks(tmp_path: Path, run_cli: RunCli, ranks: int) -> None:
    args: tuple[str, ...] = ("-d", "-w", "--stat", "-r", "-F", "-D", "-n", "2", "-N", "12")
    args += ("-s", "8k")
    args += ("--nolive", "--json", "-")
    job = _doc(mpirun(ranks, *args, "-t", "1", str(tmp_path)))
    assert list(tmp_path.iterdir()) == []  # every rank removed its own r<rank> dirs
    single = _doc(run_cli(*args, "-t", str(ranks), str(tmp_path)))
    assert _phase_totals(job) == _phase_totals(single)
    assert _thread_work(job) == _thread_work(single)
    write = next(p for p in job["phases"] if p["phase"] == "WRITE")
    assert write["last_done"]["entries"] == ranks * 2 * 12


@needs_mpi
def test_nosvcshare_gives_each_rank_the_whole_dataset(tmp_path: Path, run_cli: RunCli) -> None:
    target = str(tmp_path / "f")
    args = ("-w", "-b", "4k", "-s", "2m", "-t", "2", "--nolive", "--json", "-", target)
    live = tmp_path / "live.ndjson"
    job = _doc(mpirun(2, "--nosvcshare", "--liveint", "10", "--livejson", str(live), *args))
    single = _doc(run_cli(*args))
    # The merged interval series goes to --livejson when the phase ends, once.
    records = [json.loads(line) for line in live.read_text().splitlines()]
    assert [r["index"] for r in records] == [iv["index"] for iv in job["phases"][0]["intervals"]]
    assert records and sum(r["ops"] for r in records) == job["phases"][0]["last_done"]["ops"]
    assert job["phases"][0]["last_done"]["ops"] == 2 * single["phases"][0]["last_done"]["ops"]
    assert job["meta"]["mpi"]["shared"] is False
    assert [t["rank"] for t in job["phases"][0]["threads"]] == [0, 1, 2, 3]


@needs_mpi
def test_first_done_of_the_job_reads_the_slow_ranks_series(
    tmp_path: Path, ext4_loop: Ext4Loop
) -> None:
    """Rank 0 writes to tmpfs, rank 1 to an ext4 frozen until a second after the phase
    starts: FIRST DONE is rank 0's finish, and its totals are all of rank 0's work plus
    rank 1's counters at that instant, as the 10 ms interval series brackets them."""
    mnt = ext4_loop.setup(64 << 20)
    fast, slow = tmp_path / "fast", mnt / "slow"
    size = 8 << 20
    for path in (fast, slow):  # made beforehand: only the writes wait for the thaw
        path.write_bytes(b"\0" * size)
    ext4_loop.freeze()
    assert MPIRUN is not None
    cmd = [MPIRUN, "-n", "2", "--oversubscribe", sys.executable, "-m", "aiobench", "-w"]
    cmd += ["-b", "4k", "-s", "8m", "-t", "1", "--liveint", "10", "--nolive", "--json", "-"]
    with subprocess.Popen(
        [*cmd, str(fast), str(slow)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=mpi_env(),
    ) as job:
        try:
            deadline = time.monotonic() + 60
            with fast.open("rb") as watch:  # rank 0's first block marks the phase start
                while watch.read(4096) == bytes(4096) and time.monotonic() < deadline:
                    watch.seek(0)
                    time.sleep(0.005)
            time.sleep(1.0)
        finally:
            ext4_loop.thaw()
        out, err = job.communicate(timeout=60)
    doc = _doc(subprocess.CompletedProcess(cmd, job.returncode, out, err))
    phase = doc["phases"][0]
    ranks = {r["rank"]: r for r in phase["per_rank"]["ranks"]}
    first, last = phase["first_done"], phase["last_done"]
    assert first["elapsed_ns"] == ranks[0]["elapsed_ns"] < ranks[1]["elapsed_ns"] - 500_000_000
    assert last["elapsed_ns"] == ranks[1]["elapsed_ns"]
    assert ranks[0]["ops"] == ranks[1]["ops"] == size // 4096
    rank1_at_first = first["ops"] - ranks[0]["ops"]
    assert 0 <= rank1_at_first < ranks[1]["ops"]
    # The merged series' cumulative counts at the interval edges around the instant
    # bracket the FIRST DONE totals.
    instant = first["elapsed_ns"]
    done_before = [iv["done_ops"] for iv in phase["intervals"] if iv["end_ns"] <= instant]
    after = min((iv for iv in phase["intervals"] if iv["end_ns"] >= instant), key=_end)
    assert max(done_before, default=0) <= first["ops"] <= after["done_ops"]


def _end(interval: dict[str, Any]) -> int:
    return int(interval["end_ns"])


@needs_mpi
def test_a_missing_file_on_one_rank_ends_the_job_with_its_name(
    tmp_path: Path, run_cli: RunCli
) -> None:
    made = run_cli(
        "-d", "-w", "-t", "2", "-n", "1", "-N", "400", "-s", "4k", "--nolive", str(tmp_path)
    )
    assert made.returncode == 0, made.stderr
    gone = tmp_path / "r1" / "d0" / "r1-f200"
    gone.unlink()
    saved = tmp_path.parent / f"{tmp_path.name}-run.json"
    args = ("-r", "-t", "1", "-n", "1", "-N", "400", "-s", "4k", "--nolive")
    started = time.monotonic()
    proc = mpirun(2, *args, "--json", str(saved), str(tmp_path), timeout=60)
    took = time.monotonic() - started
    assert proc.returncode == 1
    assert took < 45, took  # ends with the error, far from the 60 s a hang would take
    assert f"Error: rank 1 ({HOST}): {gone}: ENOENT" in proc.stderr, proc.stderr  # no offset
    assert proc.stderr.count("Error:") == 1  # one message, from rank 0
    doc = json.loads(saved.read_text())
    Draft202012Validator(load_schema()).validate(doc)
    assert doc["error"]["rank"] == 1 and doc["error"]["host"] == HOST
    assert doc["error"]["path"] == str(gone)
    assert (doc["phases"][-1]["status"], doc["phases"][-1]["error"]) == ("error", doc["error"])
    assert "READ        Elapsed time" in proc.stdout  # what was measured is still shown


@needs_mpi
def test_setup_error_is_reported_once_and_nothing_is_created(tmp_path: Path) -> None:
    target = tmp_path / "f"
    proc = mpirun(2, "-r", "-t", "1", "--nolive", str(target), timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.count("Error:") == 1, proc.stderr
    assert f"{target}: does not exist" in proc.stderr
    assert not target.exists()


@needs_mpi
def test_sigint_to_one_rank_stops_every_rank(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"\0" * (4 << 20))
    label = f"sigint-{os.getpid()}"
    assert MPIRUN is not None
    cmd = [MPIRUN, "-n", "2", "--oversubscribe", sys.executable, "-m", "aiobench", "-r"]
    cmd += ["-b", "4k", "-t", "1", "--infloop", "--timelimit", "60", "--nolive"]
    cmd += ["--label", label, "--json", "-", str(target)]
    with subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=mpi_env()
    ) as job:
        ranks = _wait_for_ranks(label, 2, str(target))
        time.sleep(1.0)  # well into the phase: its target is open
        os.kill(ranks[1], signal.SIGINT)
        started = time.monotonic()
        out, err = job.communicate(timeout=30)
        took = time.monotonic() - started
    assert took < 25, took  # every rank ended (a hang runs into the 30 s timeout)
    assert job.returncode == 130, err
    assert _ranks_with(label) == {}  # no rank left behind
    assert f"Interrupted by SIGINT on rank 1 ({HOST})" in err
    doc = json.loads(out)
    Draft202012Validator(load_schema()).validate(doc)
    assert doc["interrupted"] is True
    assert doc["phases"][0]["last_done"]["elapsed_ns"] < 30_000_000_000


def _wait_for_ranks(label: str, count: int, target: str) -> list[int]:
    """PIDs of the aiobench ranks whose command line holds ``label``, by MPI rank, once
    each has ``target`` open."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = _ranks_with(label)
        if len(found) == count and all(
            _has_open(Path("/proc", str(p)), target) for p in found.values()
        ):
            return [found[r] for r in range(count)]
        time.sleep(0.1)
    raise AssertionError(f"the {count} ranks did not start")


def _has_open(proc: Path, target: str) -> bool:
    try:
        return any(os.readlink(fd) == target for fd in (proc / "fd").iterdir())
    except OSError:
        return False


def _ranks_with(label: str) -> dict[int, int]:
    """{MPI rank: PID} of the aiobench processes whose command line holds ``label``."""
    found: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if label.encode() not in cmdline or b"aiobench" not in cmdline:
            continue
        for item in environ:
            if item.startswith(b"OMPI_COMM_WORLD_RANK="):
                found[int(item.split(b"=", 1)[1])] = int(entry.name)
    return found
