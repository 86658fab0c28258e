"""Netbench (--netbench): real ranks under mpirun on loopback, real sockets."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from aiobench.engines.net import sockets
from aiobench.errors import ConfigError
from aiobench.render.table import HEADER
from aiobench.results.schema import document_validator
from tests.helpers import mpirun, needs_mpi

LOOPBACK = ("--servers", "127.0.0.1", "--clients", "127.0.0.1")


def _aiobench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aiobench", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _netbench_json(tmp_path: Path, *args: str) -> dict[str, object]:
    out = tmp_path / "nb.json"
    proc = mpirun(2, "--netbench", *LOOPBACK, "-w", "--json", str(out), *args)
    assert proc.returncode == 0, proc.stderr
    assert HEADER in proc.stdout  # the ordinary table: its header, then the phase
    assert "NETBENCH" in proc.stdout
    doc = json.loads(out.read_text())
    assert isinstance(doc, dict)
    document_validator(3)(doc)  # the result schema, with its NETBENCH phase and meta
    return doc


@needs_mpi
@pytest.mark.parametrize(
    ("threads", "block", "size", "resp"),
    [
        (2, 65536, 1 << 20, 1),  # -s a multiple of -b
        (1, 4096, 10_000, 4096),  # the last block short: 4096 + 4096 + 1808
    ],
)
def test_bytes_sent_received_and_answered(
    tmp_path: Path, threads: int, block: int, size: int, resp: int
) -> None:
    doc = _netbench_json(
        tmp_path, "-t", str(threads), "-b", str(block), "-s", str(size), "--respsize", str(resp)
    )
    blocks = -(-size // block) * threads
    phases = doc["phases"]
    assert isinstance(phases, list)
    (phase,) = phases
    assert phase["phase"] == "NETBENCH"
    last = phase["last_done"]
    assert last["bytes"] == size * threads  # bytes sent by the clients
    assert last["ops"] == blocks
    assert phase["latency"]["io"]["count"] == blocks  # one latency per block
    server = doc["meta"]["netbench"]  # type: ignore[index]
    assert server["client_bytes_sent"] == size * threads
    assert server["client_blocks"] == blocks
    assert server["client_bytes_received"] == blocks * resp  # the answers, in full
    assert server["server_bytes_received"] == size * threads
    assert server["server_responses"] == blocks
    assert server["server_bytes_sent"] == blocks * resp


@needs_mpi
def test_netdev_lo_and_buffers_run(tmp_path: Path) -> None:
    doc = _netbench_json(
        tmp_path, "-b", "4k", "-s", "64k", "--netdevs", "lo", "--sendbuf", "256k",
        "--recvbuf", "256k",
    )  # fmt: skip
    phases = doc["phases"]
    assert isinstance(phases, list)
    assert phases[0]["last_done"]["ops"] == 16


@needs_mpi
def test_one_rank_is_refused() -> None:
    proc = mpirun(1, "--netbench", *LOOPBACK, "-w", "-s", "1m")
    assert proc.returncode == 2
    assert "Error: --netbench: 2 ranks needed" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--netdevs", "nosuchdev0"), "Error: --netdevs: nosuchdev0: no such network device"),
        (("--iodepth", "2"), "Error: --iodepth: netbench keeps one block in flight"),
        (("-r",), "Error: --netbench: runs as the write phase only"),
    ],
)
def test_bad_input_is_one_error_line(args: tuple[str, ...], message: str) -> None:
    proc = _aiobench("--netbench", *LOOPBACK, "-w", "-s", "1m", *args)
    assert proc.returncode == 2
    assert proc.stderr.startswith(message), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_servers_without_netbench_refused() -> None:
    proc = _aiobench("--servers", "127.0.0.1", "-w", "-s", "1m", "/nonexistent/x")
    assert proc.returncode == 2
    assert "Error: --servers: only applies with --netbench" in proc.stderr


def test_buffer_sizes_read_back() -> None:
    listener = sockets.listener(sendbuf=96 * 1024, recvbuf=80 * 1024)
    try:
        port = listener.getsockname()[1]
        conn = sockets.connect("127.0.0.1", port, 64 * 1024, 48 * 1024, "lo")
        served = sockets.accepted(listener)
        try:
            # Linux doubles the size asked for (its bookkeeping), and reports that.
            assert conn.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) == 2 * 64 * 1024
            assert conn.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) == 2 * 48 * 1024
            assert served.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) == 2 * 96 * 1024
            assert served.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) == 2 * 80 * 1024
            bound = conn.getsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, 16)
            assert bound.rstrip(b"\0") == b"lo"
        finally:
            conn.close()
            served.close()
    finally:
        listener.close()


def test_unknown_device_refused() -> None:
    with pytest.raises(ConfigError, match="--netdevs: nosuchdev0"):
        sockets.check_devices(["nosuchdev0"])
