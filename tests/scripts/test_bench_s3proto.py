"""The s3 bench section's floor (scripts/aiobench_bench/s3proto.py, a bare asyncio.Protocol
+ SigV4 loop) against the tests' real SeaweedFS, which checks the signatures: it PUTs and
GETs what it says it did, the bytes it reads are the ones written, and a wrong secret ends
it with one line and exit 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.helpers import REPO
from tests.s3server import S3Server, s3_server  # noqa: F401  (a fixture)
from tests.scripts.test_bench_s3ref import s3ref

SCRIPTS = str(REPO / "scripts")


def s3proto(
    server: S3Server, mode: str, *extra: str, secret: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, (SCRIPTS, os.environ.get("PYTHONPATH")))),
        "S3REF_ACCESS_KEY": server.access_key,
        "S3REF_SECRET_KEY": server.secret_key if secret is None else secret,
    }
    argv = [sys.executable, "-m", "aiobench_bench.s3proto", mode, "--endpoint", server.endpoint]
    argv += ["--bucket", "bench-s3ref-test", "--threads", "2", "--iodepth", "3", *extra]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)


def test_protocol_loop_puts_and_gets_signed_objects(s3_server: S3Server) -> None:  # noqa: F811
    # the aiohttp reference makes and removes the bucket (the same bucket name)
    mk = s3ref(s3_server, "mkbucket")
    assert mk.returncode == 0, mk.stderr
    try:
        small = ("--files", "5", "--size", "4096")
        put = s3proto(s3_server, "put", *small)
        assert put.returncode == 0, put.stderr
        doc = json.loads(put.stdout)
        assert (doc["objects"], doc["requests"], doc["bytes"]) == (10, 10, 10 * 4096)
        assert doc["elapsed_s"] > 0 and doc["phase_cpu_s"] > 0
        get = s3proto(s3_server, "get", *small)
        assert get.returncode == 0, get.stderr
        assert json.loads(get.stdout)["bytes"] == 10 * 4096
        # the objects are really there, written by this loop: the aiohttp loop reads them
        assert s3ref(s3_server, "get", *small, "--block", "4096").returncode == 0
        # a key never written: 404, one line, exit 1
        missing = s3proto(s3_server, "get", "--files", "6", "--size", "4096")
        assert missing.returncode == 1 and "HTTP 404" in missing.stderr
        assert len(missing.stderr.strip().splitlines()) == 1
    finally:
        s3ref(s3_server, "delete", "--files", "5", "--size", "4096", "--block", "4096")
        s3ref(s3_server, "rmbucket")


def test_protocol_loop_with_a_wrong_secret_fails_in_one_line(s3_server: S3Server) -> None:  # noqa: F811
    proc = s3proto(s3_server, "put", "--files", "1", secret="not-the-secret")
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("s3proto: put failed: ")
    assert "HTTP 403" in lines[0]
