"""The s3 bench section's reference loop (scripts/aiobench_bench/s3ref.py) against the tests'
real SeaweedFS: it makes its bucket, PUTs and GETs what it says it did, cleans up, and a
wrong secret ends it with one line and exit 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.helpers import REPO
from tests.s3server import S3Server, s3_server  # noqa: F401  (a fixture)

SCRIPTS = str(REPO / "scripts")


def s3ref(
    server: S3Server, mode: str, *extra: str, secret: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, (SCRIPTS, os.environ.get("PYTHONPATH")))),
        "S3REF_ACCESS_KEY": server.access_key,
        "S3REF_SECRET_KEY": server.secret_key if secret is None else secret,
    }
    argv = [sys.executable, "-m", "aiobench_bench.s3ref", mode, "--endpoint", server.endpoint]
    argv += ["--bucket", "bench-s3ref-test", "--threads", "2", "--iodepth", "3", *extra]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)


def figures(proc: subprocess.CompletedProcess[str]) -> dict[str, float]:
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, float] = json.loads(proc.stdout)
    return doc


def test_reference_loop_puts_gets_and_cleans_up(s3_server: S3Server) -> None:  # noqa: F811
    small = ("--files", "5", "--size", "4096", "--block", "4096")
    # S3's smallest part but the last is 5 MiB: parts of 5, 5 and 2 MiB
    big = ("--files", "1", "--size", str(12 << 20), "--block", str(5 << 20))
    figures(s3ref(s3_server, "mkbucket"))
    put = figures(s3ref(s3_server, "put", *small))
    assert (put["objects"], put["requests"], put["bytes"]) == (10, 10, 10 * 4096)
    assert put["elapsed_s"] > 0 and put["phase_cpu_s"] > 0
    get = figures(s3ref(s3_server, "get", *small))
    assert (get["objects"], get["bytes"]) == (10, 10 * 4096)
    # multipart: 3 parts + create + complete per object; ranged GETs of the part size
    put = figures(s3ref(s3_server, "put", *big))
    assert (put["objects"], put["requests"], put["bytes"]) == (2, 10, 2 * (12 << 20))
    get = figures(s3ref(s3_server, "get", *big))
    assert (get["requests"], get["bytes"]) == (6, 2 * (12 << 20))
    # the big objects replaced r0-f0 and r1-f0: deleting the small set removes them all
    figures(s3ref(s3_server, "delete", *small))
    assert s3ref(s3_server, "get", *small).returncode == 1  # they are gone
    figures(s3ref(s3_server, "delete", *big))  # r0-f0, r1-f0 again: S3 says 204 all the same
    figures(s3ref(s3_server, "rmbucket"))  # empty now, or this fails (BucketNotEmpty)


def test_reference_loop_with_a_wrong_secret_fails_in_one_line(s3_server: S3Server) -> None:  # noqa: F811
    proc = s3ref(s3_server, "mkbucket", secret="not-the-secret")
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("s3ref: mkbucket failed: PUT bench-s3ref-test/: HTTP 403")
    assert "SignatureDoesNotMatch" in lines[0]
    assert "not-the-secret" not in proc.stderr and "Traceback" not in proc.stderr
