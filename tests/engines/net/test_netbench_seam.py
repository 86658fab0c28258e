"""Netbench behind the engine seam: the ordinary phase machinery, results and outputs
(--csvfile, --jsonfile, --timelimit, -i), and how it fails; real ranks under mpirun on
loopback, real sockets. The layout's streams are checked on their own too."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aiobench.engines.net.layout import NetLayout
from aiobench.kinds import WRITE
from aiobench.plan.split import StreamOrder, ThreadSplit
from aiobench.results.schema import document_validator
from tests.helpers import MPIRUN, mpi_env, mpirun, needs_mpi

LOOPBACK = ("--servers", "127.0.0.1", "--clients", "127.0.0.1", "-w", "--nolive")


def test_server_threads_have_no_work_and_client_threads_their_blocks() -> None:
    layout = NetLayout((10_000,), 4096, servers=1)
    order = StreamOrder(seed=1)
    server = layout.streams(WRITE, 0, order, ThreadSplit(range(0, 2), 0, 4))
    client = layout.streams(WRITE, 0, order, ThreadSplit(range(2, 4), 2, 4))
    assert [s.total_ops for s in server] == [0, 0]
    assert all(s.take(10) is None for s in server)
    assert [s.total_ops for s in client] == [3, 3]
    runs = [client[0].take(10), client[0].take(10)]
    assert [(r.length, list(r.offsets)) for r in runs if r is not None] == [
        (4096, [0, 4096]),
        (10_000 - 2 * 4096, [8192]),  # the short last block: a run of its own
    ]
    assert client[0].take(10) is None
    assert layout.phase_name(WRITE) == "NETBENCH"
    assert not layout.moves_data(WRITE)  # (the native loop sends from its own buffer)


@needs_mpi
def test_csvfile_and_jsonfile_have_the_netbench_phase(tmp_path: Path) -> None:
    """Before the engine seam, netbench wrote neither file (its own report)."""
    csv_path, records = tmp_path / "nb.csv", tmp_path / "nb.jsonl"
    proc = mpirun(
        2, "--netbench", *LOOPBACK, "-t", "2", "-b", "64k", "-s", "4m",
        "--csvfile", str(csv_path), "--jsonfile", str(records),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert csv_path.exists() and records.exists(), proc.stdout
    (row,) = csv.DictReader(csv_path.read_text().splitlines())
    assert row["operation"] == "NETBENCH"
    assert row["path type"] == "net"
    assert int(row["IOPS [last]"]) > 0
    assert float(row["MiB [last]"]) == 2 * 4  # two client threads, -s 4m each
    (record,) = [json.loads(line) for line in records.read_text().splitlines()]
    assert record["phase_type"] == "NETBENCH"
    assert "Servers: 8388608 bytes received, 128 responses of 1 bytes sent" in proc.stdout


@needs_mpi
def test_timelimit_stops_netbench_and_the_counts_agree(tmp_path: Path) -> None:
    out = tmp_path / "nb.json"
    started = time.monotonic()
    proc = mpirun(
        2, "--netbench", *LOOPBACK, "-b", "4k", "-s", "1t", "--respsize", "4k",
        "--timelimit", "1", "--json", str(out), timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - started < 50  # (a 1 TiB phase that the limit ended)
    doc = json.loads(out.read_text())
    document_validator(3)(doc)
    (phase,) = doc["phases"]
    assert phase["phase"] == "NETBENCH"
    assert phase["status"] == "time_limited"
    assert phase["time_limited"] is True
    last = phase["last_done"]
    assert 0.9e9 <= last["elapsed_ns"] <= 1.1e9
    assert last["bytes"] == last["ops"] * 4096
    counts = doc["meta"]["netbench"]
    # Both sides counted the same blocks; a block answered after the limit is the
    # connection's, not the phase's.
    assert counts["server_responses"] == counts["client_blocks"]
    assert counts["server_bytes_received"] == counts["client_bytes_sent"]
    assert counts["client_blocks"] - last["ops"] in (0, 1)


@needs_mpi
def test_iterations_and_the_usual_phase_keys(tmp_path: Path) -> None:
    out = tmp_path / "nb.json"
    proc = mpirun(2, "--netbench", *LOOPBACK, "-b", "4k", "-s", "1m", "-i", "2", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^SUMMARY +NETBENCH over 2", proc.stdout, re.MULTILINE), proc.stdout
    doc = json.loads(out.read_text())
    document_validator(3)(doc)
    assert doc["meta"]["ioengine"] == "net"
    assert doc["meta"]["path_type"] == "net"
    assert doc["meta"]["filesystems"] == {}
    assert [p["iteration"] for p in doc["phases"]] == [0, 1]
    for phase in doc["phases"]:
        assert {"first_done", "last_done", "latency", "threads", "per_rank"} <= set(phase)
        assert phase["last_done"]["ops"] == 256
        assert phase["latency"]["io"]["count"] == 256
        # the server rank's threads have no work; the client rank's did it all
        by_rank = {r["rank"]: r["ops"] for r in phase["per_rank"]["ranks"]}
        assert by_rank == {0: 0, 1: 256}
    assert doc["meta"]["netbench"]["server_responses"] == 2 * 256


@needs_mpi
def test_an_unreachable_server_is_one_error() -> None:
    proc = mpirun(
        2, "--netbench", "--servers", "nosuchhost.invalid", "--clients", "127.0.0.1",
        "-w", "-s", "1m", timeout=60,
    )  # fmt: skip
    assert proc.returncode != 0
    assert re.search(
        r"^Error: rank 1 \([^)]*\): --servers: nosuchhost\.invalid:\d+: cannot connect: ",
        proc.stderr,
        re.MULTILINE,
    ), proc.stderr
    assert "Traceback" not in proc.stderr


def _ranks(marker: str) -> list[int]:
    """The aiobench ranks whose command line holds ``marker``, lowest pid first."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdecimal():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[0] == sys.executable.encode() and marker.encode() in argv:
            pids.append(int(entry.name))
    return sorted(pids)


def _rank_of(pid: int) -> int:
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    (value,) = [v for v in environ if v.startswith(b"OMPI_COMM_WORLD_RANK=")]
    return int(value.split(b"=")[1])


def _ss(*args: str) -> list[str]:
    return subprocess.run(["ss", *args], capture_output=True, text=True, check=True).stdout.split(
        "\n"
    )


def _netbench_port(server: int, client: int) -> int | None:
    """The server rank's netbench port: one it listens on that the client rank is
    connected to (None: not yet)."""
    listening = {
        line.split()[3].rsplit(":", 1)[1] for line in _ss("-ltnpH") if f"pid={server}," in line
    }
    for line in _ss("-tnpH", "state", "established"):
        fields = line.split()
        if f"pid={client}," in line and fields[3].rsplit(":", 1)[1] in listening:
            return int(fields[3].rsplit(":", 1)[1])
    return None


def _start(tmp_path: Path, marker: str) -> subprocess.Popen[str]:
    assert MPIRUN is not None
    cmd = [MPIRUN, "-n", "2", "--oversubscribe", sys.executable, "-m", "aiobench"]
    cmd += ["--netbench", *LOOPBACK, "-b", "64k", "-s", "1t", "--json", marker]
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=mpi_env()
    )


def _server_and_client(marker: str, proc: subprocess.Popen[str]) -> tuple[int, int, int]:
    """(server pid, client pid, netbench port) once the client is connected."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        pids = _ranks(marker)
        if len(pids) == 2:
            ranks = {_rank_of(pid): pid for pid in pids}
            port = _netbench_port(ranks[0], ranks[1])
            if port is not None:
                return ranks[0], ranks[1], port
        time.sleep(0.1)
    raise AssertionError(f"the ranks did not connect: {proc.communicate()}")


@needs_mpi
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("ss"), reason="needs root and ss -K")
def test_a_server_connection_reset_mid_phase_is_the_runs_error(tmp_path: Path) -> None:
    """The server's side of a connection is destroyed (ss -K, as a host whose network
    fails would): the client's error names the server, the offset and the errno; the
    figures so far are kept, and the run ends non-zero without a hang."""
    marker = str(tmp_path / "nb.json")
    proc = _start(tmp_path, marker)
    try:
        _, _, port = _server_and_client(marker, proc)
        time.sleep(1)  # (in the phase)
        subprocess.run(
            ["ss", "-K", "state", "established", f"( sport = :{port} )"],
            capture_output=True,
            check=False,
        )
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1, err
    assert re.search(
        rf"^Error: rank 1 \([^)]*\): [0-9.]+:{port}: offset \d+: ECONNRESET ", err, re.MULTILINE
    ), err
    assert "Traceback" not in err
    assert "NETBENCH" in out
    doc = json.loads(Path(marker).read_text())
    assert doc["error"]["errno_name"] == "ECONNRESET"
    assert doc["phases"][0]["last_done"]["ops"] > 0
    counts = doc["meta"]["netbench"]
    assert counts["server_responses"] == counts["client_blocks"] > 0


@needs_mpi
def test_a_killed_server_rank_ends_the_job(tmp_path: Path) -> None:
    """A server rank that dies (SIGKILL) takes the job down: mpirun says which rank, the
    exit is non-zero and nothing waits for it. (Rank 0, the lead, was that server: no rank
    is left to write results.)"""
    marker = str(tmp_path / "nb.json")
    proc = _start(tmp_path, marker)
    try:
        server, _, _ = _server_and_client(marker, proc)
        time.sleep(1)
        os.kill(server, signal.SIGKILL)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode != 0
    assert "Traceback" not in err


@needs_mpi
def test_two_servers_share_one_clients_threads(tmp_path: Path) -> None:
    out = tmp_path / "nb.json"
    proc = mpirun(
        3, "--netbench", "--servers", "127.0.0.1,127.0.0.1", "--clients", "127.0.0.1",
        "-w", "--nolive", "-t", "3", "-b", "4k", "-s", "10000", "--respsize", "100",
        "--json", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    (phase,) = doc["phases"]
    assert phase["last_done"]["bytes"] == 3 * 10_000  # 4096 + 4096 + 1808 per thread
    by_rank = {r["rank"]: r["ops"] for r in phase["per_rank"]["ranks"]}
    assert by_rank == {0: 0, 1: 0, 2: 9}
    counts = doc["meta"]["netbench"]
    assert counts["server_bytes_received"] == counts["client_bytes_sent"] == 30_000
    assert counts["server_responses"] == counts["client_blocks"] == 9
    assert counts["client_bytes_received"] == counts["server_bytes_sent"] == 900
