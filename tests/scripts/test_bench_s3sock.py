"""The s3 bench section's floor for large objects (scripts/aiobench_bench/s3sock.py, blocking
sockets + SigV4, bodies recv_into one buffer) against the tests' real SeaweedFS, which
checks the signatures: it PUTs and GETs whole objects, the bytes it reads are the ones the
aiohttp loop can read back, and a missing key ends it with one line and exit 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.helpers import REPO
from tests.s3server import S3Server, s3_server  # noqa: F401  (a fixture)
from tests.scripts.test_bench_s3ref import s3ref

SCRIPTS = str(REPO / "scripts")


def s3sock(server: S3Server, mode: str, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, (SCRIPTS, os.environ.get("PYTHONPATH")))),
        "S3REF_ACCESS_KEY": server.access_key,
        "S3REF_SECRET_KEY": server.secret_key,
    }
    argv = [sys.executable, "-m", "aiobench_bench.s3sock", mode, "--endpoint", server.endpoint]
    argv += ["--bucket", "bench-s3ref-test", "--threads", "2", *extra]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)


def test_socket_loop_puts_and_gets_whole_objects(s3_server: S3Server) -> None:  # noqa: F811
    mk = s3ref(s3_server, "mkbucket")
    assert mk.returncode == 0, mk.stderr
    size = str(3 << 20)
    try:
        put = s3sock(s3_server, "put", "--files", "2", "--size", size)
        assert put.returncode == 0, put.stderr
        doc = json.loads(put.stdout)
        assert (doc["objects"], doc["requests"], doc["bytes"]) == (4, 4, 4 * (3 << 20))
        assert doc["elapsed_s"] > 0 and doc["phase_cpu_s"] > 0
        get = s3sock(s3_server, "get", "--files", "2", "--size", size)
        assert get.returncode == 0, get.stderr
        assert json.loads(get.stdout)["bytes"] == 4 * (3 << 20)
        # the objects are whole and where aiobench's names put them: the aiohttp loop
        # reads them in 1 MiB ranges
        ranged = s3ref(s3_server, "get", "--files", "2", "--size", size, "--block", str(1 << 20))
        assert ranged.returncode == 0, ranged.stderr
        missing = s3sock(s3_server, "get", "--files", "3", "--size", size)
        assert missing.returncode == 1 and "HTTP 404" in missing.stderr
        assert len(missing.stderr.strip().splitlines()) == 1
    finally:
        s3ref(s3_server, "delete", "--files", "2", "--size", size, "--block", str(1 << 20))
        s3ref(s3_server, "rmbucket")
