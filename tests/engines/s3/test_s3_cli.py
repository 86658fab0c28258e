"""Object storage end to end (#15): the CLI's S3 phases against a real S3 server on
loopback (SeaweedFS, signatures checked); counts and sizes checked by listing."""

from __future__ import annotations

import asyncio
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from aiobench.engines.s3.client import S3Client
from aiobench.engines.s3.layout import Credentials, parse_endpoint
from aiobench.errors import S3Error
from tests.helpers import RunCli, errors_of, mpirun, needs_mpi
from tests.s3server import DOMAIN, S3Server, ca_file, s3_server  # noqa: F401  (a fixture)

pytestmark = pytest.mark.slow  # real CLI runs and weed mini

MIB = 1 << 20
# A guard only: an endpoint nothing listens on must fail fast, not hang.
MAX_DEAD_ENDPOINT_S = 30.0


def s3_args(server: S3Server, secret: str | None = None) -> list[str]:
    return [
        "--s3endpoints",
        server.endpoint,
        "--s3key",
        server.access_key,
        "--s3secret",
        secret or server.secret_key,
        "--nolive",
    ]


def fresh_bucket() -> str:
    return f"aiobench-{uuid.uuid4().hex[:12]}"


def listing(server: S3Server, bucket: str) -> dict[str, int] | None:
    """key -> size of every object in ``bucket``; None when the bucket does not exist."""

    async def keys() -> dict[str, int] | None:
        credentials = Credentials(server.access_key, server.secret_key)
        async with S3Client(parse_endpoint(server.endpoint), credentials, server.region) as c:
            out: dict[str, int] = {}
            token = None
            try:
                while True:
                    page = await c.list_objects(bucket, token=token)
                    out.update(zip(page.keys, page.sizes, strict=True))
                    token = page.next_token
                    if token is None:
                        return out
            except S3Error as exc:
                if exc.code == "NoSuchBucket":
                    return None
                raise

    return asyncio.run(keys())


def phases(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["phase"]: p for p in doc["phases"]}


def test_every_phase_with_two_threads(
    run_cli: RunCli,
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
    validator: Draft202012Validator,
) -> None:
    a, b = fresh_bucket(), fresh_bucket()
    paths = [f"s3://{a}", f"s3://{b}/run1"]
    layout = ["-t", "2", "-n", "2", "-N", "3", "-s", "4k", "-b", "4k"]
    out = tmp_path / "write.json"
    proc = run_cli(
        "-d", "-w", *layout, *s3_args(s3_server), "--json", str(out), *paths
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert errors_of(validator, doc) == []
    assert [p["phase"] for p in doc["phases"]] == ["MKBUCKETS", "WRITE"]
    assert phases(doc)["MKBUCKETS"]["last_done"]["entries"] == 2
    write = phases(doc)["WRITE"]["last_done"]
    # 2 threads x 2 prefixes x 3 objects of 4 KiB, a PUT each.
    assert (write["entries"], write["ops"], write["bytes"]) == (12, 12, 12 * 4096)
    # Dir mode's names, bucket (rank + prefix) % 2, the PATH's prefix as a folder.
    objects = {**{f"{a}/{k}": v for k, v in (listing(s3_server, a) or {}).items()}}
    objects |= {f"{b}/{k}": v for k, v in (listing(s3_server, b) or {}).items()}
    expected = {
        f"{[a, b][(rank + d) % 2]}/{'run1/' if (rank + d) % 2 else ''}r{rank}/d{d}/r{rank}-f{f}"
        for rank in range(2)
        for d in range(2)
        for f in range(3)
    }
    assert set(objects) == expected
    assert set(objects.values()) == {4096}
    # STAT and READ on them, then everything removed by -F -D.
    out = tmp_path / "rest.json"
    proc = run_cli(
        "--stat", "-r", "-F", "-D", "--lat", *layout, *s3_args(s3_server), "--json", str(out),
        *paths,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert errors_of(validator, doc) == []
    got = phases(doc)
    assert list(got) == ["STAT", "READ", "RMOBJECTS", "RMBUCKETS"]
    assert got["STAT"]["last_done"]["entries"] == 12
    read = got["READ"]["last_done"]
    assert (read["entries"], read["ops"], read["bytes"]) == (12, 12, 12 * 4096)
    # Each GET's time to first byte, within its whole request; only READ has it.
    ttfb, io = got["READ"]["latency"]["ttfb"], got["READ"]["latency"]["io"]
    assert ttfb["count"] == io["count"] == 12
    assert 0 < ttfb["min_ns"] <= io["min_ns"] and ttfb["max_ns"] <= io["max_ns"]
    assert "ttfb" not in got["STAT"]["latency"]
    assert "\n            TTFB latency     : [ min=" in proc.stdout
    assert got["RMOBJECTS"]["last_done"]["entries"] == 12
    assert got["RMBUCKETS"]["last_done"]["entries"] == 2
    assert listing(s3_server, a) is None and listing(s3_server, b) is None
    # The table names the phases as elbencho does.
    for name in ("STAT", "READ", "RMOBJECTS", "RMBUCKETS"):
        assert f"\n{name:<11} Elapsed time" in proc.stdout


def test_objects_larger_than_a_block_are_multipart_uploads(
    run_cli: RunCli,
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    bucket = fresh_bucket()
    # SeaweedFS, like AWS, takes parts of at least 5 MiB (but the last). With --iodepth 3
    # each thread has its object's 3 parts (and ranges) in flight at once.
    layout = ["-t", "2", "--iodepth", "3", "-n", "1", "-N", "1", "-s", "11m", "-b", "5m"]
    out = tmp_path / "mp.json"
    proc = run_cli("-d", "-w", "-r", "--verify", "5", *layout, *s3_args(s3_server), "--json",
                   str(out), f"s3://{bucket}")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    for name in ("WRITE", "READ"):
        done = phases(doc)[name]["last_done"]
        assert (done["entries"], done["ops"], done["bytes"]) == (2, 6, 22 * MIB), name
    assert listing(s3_server, bucket) == {"r0/d0/r0-f0": 11 * MIB, "r1/d0/r1-f0": 11 * MIB}
    proc = run_cli("-F", "-D", *layout, *s3_args(s3_server), f"s3://{bucket}")
    assert proc.returncode == 0, proc.stderr
    assert listing(s3_server, bucket) is None


def test_verify_checks_every_get_body(
    run_cli: RunCli,
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    bucket = fresh_bucket()
    layout = ["-t", "2", "-N", "2", "-s", "11m", "-b", "5m", *s3_args(s3_server)]
    proc = run_cli("-d", "-w", "-r", "--verify", "7", *layout, f"s3://{bucket}")
    assert proc.returncode == 0, proc.stderr
    # Ranged reads of another size check the same pattern; another salt finds it wrong.
    again = run_cli("-r", "--verify", "7", *layout, "-b", "3m", f"s3://{bucket}")
    assert again.returncode == 0, again.stderr
    out = tmp_path / "bad.json"
    proc = run_cli("-r", "--verify", "8", *layout, "--json", str(out), f"s3://{bucket}")
    assert proc.returncode == 1, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and f"s3://{bucket}/r" in errors[0], proc.stderr
    assert "offset 0: data mismatch (--verify): expected word 0x0000000000000008" in errors[0]
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["error"]["expected"] == 8 and doc["error"]["found"] == 7
    assert run_cli("-F", "-D", *layout, f"s3://{bucket}").returncode == 0
    assert listing(s3_server, bucket) is None


def test_rand_reads_random_blocks_of_random_objects(
    run_cli: RunCli,
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    bucket = fresh_bucket()
    layout = ["-t", "2", "-N", "10", "-s", "64k", *s3_args(s3_server), f"s3://{bucket}"]
    assert run_cli("-d", "-w", "--verify", "3", "-b", "64k", *layout).returncode == 0
    out = tmp_path / "rand.json"
    # Without --randamount as many GETs as the objects have blocks: 2 x 10 x 16.
    proc = run_cli("-r", "--rand", "--verify", "3", "-b", "4k", *layout, "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    read = phases(json.loads(out.read_text(encoding="utf-8")))["READ"]
    assert (read["last_done"]["ops"], read["last_done"]["bytes"]) == (320, 320 * 4096)
    assert read["latency"]["ttfb"]["count"] == 320
    proc = run_cli("-r", "--rand", "--randamount", "200k", "-b", "4k", *layout, "--json",
                   str(out))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert phases(json.loads(out.read_text(encoding="utf-8")))["READ"]["last_done"]["ops"] == 50
    # Another salt: the first random block checked is wrong, named with its offset.
    bad = run_cli("-r", "--rand", "--verify", "4", "-b", "4k", *layout)
    assert bad.returncode == 1
    assert "data mismatch (--verify)" in bad.stderr and f"s3://{bucket}/r" in bad.stderr
    refused = run_cli("-w", "--rand", "-b", "4k", *layout)
    assert refused.returncode == 2 and refused.stderr.startswith("Error: --rand: object storage")
    assert run_cli("-F", "-D", *layout).returncode == 0
    assert listing(s3_server, bucket) is None


def test_rate_limits_pace_each_threads_requests(
    run_cli: RunCli,
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    bucket = fresh_bucket()
    # 2 threads x 40 objects of 4 KiB at 400 KiB/s each: at least 0.4 s per phase.
    layout = ["-t", "2", "-N", "40", "-s", "4k", "-b", "4k", *s3_args(s3_server)]
    out = tmp_path / "run.json"
    proc = run_cli("-d", "-w", "-r", "--limitwrite", "400k", "--limitread", "400k", *layout,
                   "--json", str(out), f"s3://{bucket}")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    got = phases(json.loads(out.read_text(encoding="utf-8")))
    for name in ("WRITE", "READ"):
        done = got[name]["last_done"]
        assert done["entries"] == 80
        # Object n of a thread starts n x 10 ms after the start: the last at 390 ms.
        assert done["elapsed_ns"] >= 390_000_000, (name, done["elapsed_ns"])
        assert done["bytes_per_s"] <= 2 * 400 * 1024 * 1.05
        assert got[name]["latency"]["sched"]["count"] == 80
    assert "sched" not in got["MKBUCKETS"]["latency"]
    assert run_cli("-F", "-D", *layout, f"s3://{bucket}").returncode == 0


def test_wrong_secret_is_one_clean_error_and_never_shown(
    run_cli: RunCli,
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    wrong = "not-the-secret-" + uuid.uuid4().hex
    out = tmp_path / "run.json"
    proc = run_cli("-d", "-w", "-s", "4k", *s3_args(s3_server, secret=wrong), "--json",
                   str(out), f"s3://{fresh_bucket()}")  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, proc.stderr
    assert "HTTP 403 SignatureDoesNotMatch" in errors[0]
    assert s3_server.endpoint in errors[0] and "Traceback" not in proc.stderr
    text = out.read_text(encoding="utf-8")
    for shown in (proc.stdout, proc.stderr, text):
        assert wrong not in shown and s3_server.access_key not in shown
    doc = json.loads(text)
    assert doc["meta"]["config"]["s3secret"] == "***"
    assert doc["error"]["code"] == "SignatureDoesNotMatch"
    assert "--s3secret" in doc["meta"]["command"] and wrong not in doc["meta"]["command"]


def test_a_dead_endpoint_fails_fast_with_a_clean_error(
    run_cli: RunCli,
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # free once closed: nothing listens there
    args = s3_args(s3_server)
    args[1] = f"http://127.0.0.1:{port}"
    began = time.monotonic()
    proc = run_cli("-d", "-w", "-s", "4k", *args, f"s3://{fresh_bucket()}")
    assert time.monotonic() - began < MAX_DEAD_ENDPOINT_S
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and f"127.0.0.1:{port}" in errors[0], proc.stderr
    assert "ECONNREFUSED" in errors[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--s3endpoints", "ftp://h"], "Error: --s3endpoints: 'ftp://h': the scheme must be"),
        (["--s3endpoints", "http://h", "--s3key", "k"], "Error: --s3secret: no S3 secret"),
        (["--s3endpoints", "http://h", "--s3key", "k", "--s3secret", "s", "--direct"],
         "Error: --direct: only applies to files"),
        (["--s3endpoints", "http://h", "--s3key", "k", "--s3secret", "s", "--infloop"],
         "Error: --infloop: not supported for object storage (s3://) yet"),
        (["--ioengine", "native", "--s3endpoints", "http://h"],
         "Error: --ioengine native: does not do object storage"),
        (["--s3endpoints", "http://h,http://10.1.2.3:9000", "--s3key", "k", "--s3secret", "s",
          "--s3virtaddr"],
         "Error: --s3virtaddr: the endpoint http://10.1.2.3:9000 is an IP address"),
        (["--s3endpoints", "http://h", "--s3key", "k", "--s3secret", "s", "--s3timeout", "0"],
         "Error: --s3timeout: must be at least 1 (got 0)"),
    ],
)  # fmt: skip
def test_what_can_be_checked_before_the_run_is_a_usage_error(
    run_cli: RunCli, args: list[str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    proc = run_cli("-w", "-s", "4k", *args, "s3://some-bucket")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(message) and proc.stderr.count("\n") == 1, proc.stderr


def test_keys_that_need_percent_encoding_are_signed_and_stored_as_given(
    run_cli: RunCli,
    s3_server: S3Server,  # noqa: F811
) -> None:
    """A PATH prefix and --s3objprefix with a space, '+', '~' and a non-ASCII letter: every
    phase's requests are signed as sent (the server checks), and the keys listed are the
    names exactly, not their encodings."""
    bucket = fresh_bucket()
    path = f"s3://{bucket}/run 1/x"
    layout = ["-t", "1", "-n", "1", "-N", "2", "-s", "4k", "--s3objprefix", "o+1 ä~"]
    proc = run_cli("-d", "-w", "--stat", "-r", "--verify", "3", *layout, *s3_args(s3_server),
                   path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert sorted(listing(s3_server, bucket) or {}) == [
        "run 1/x/o+1 ä~r0/d0/r0-f0",
        "run 1/x/o+1 ä~r0/d0/r0-f1",
    ]
    assert run_cli("-F", "-D", *layout, *s3_args(s3_server), path).returncode == 0
    assert listing(s3_server, bucket) is None


def test_an_https_endpoint_is_verified_against_the_trusted_cas(
    run_cli: RunCli,
    s3_server: S3Server,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The gateway's HTTPS port, its certificate from a private CA: with that CA trusted
    (SSL_CERT_FILE, as Python's ssl reads it) every phase runs; without it the first
    request fails with one clean error, and nothing is created."""
    bucket = fresh_bucket()
    args = s3_args(s3_server)
    args[1] = s3_server.https_endpoint
    layout = ["-t", "2", "-n", "1", "-N", "3", "-s", "8k", "-b", "8k"]
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    refused = run_cli("-d", "-w", *layout, *args, f"s3://{bucket}")
    assert refused.returncode == 1, refused.stderr
    assert "Traceback" not in refused.stderr
    errors = [line for line in refused.stderr.splitlines() if line.startswith("Error: ")]
    assert errors == [
        f"Error: s3://{bucket} at {s3_server.https_endpoint}: no response (the server's TLS "
        "certificate was not accepted: unable to get local issuer certificate; for a private "
        "CA, point SSL_CERT_FILE at its certificate)"
    ], refused.stderr
    assert listing(s3_server, bucket) is None
    monkeypatch.setenv("SSL_CERT_FILE", ca_file(s3_server))
    proc = run_cli("-d", "-w", "-r", "--verify", "5", *layout, *args, "--json", "-",
                   f"s3://{bucket}")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    got = phases(json.loads(proc.stdout))
    assert [got[name]["last_done"]["entries"] for name in ("MKBUCKETS", "WRITE", "READ")] == [
        1, 6, 6,
    ]  # fmt: skip
    assert set((listing(s3_server, bucket) or {}).values()) == {8192}
    assert run_cli("-F", "-D", *layout, *args, f"s3://{bucket}").returncode == 0
    assert listing(s3_server, bucket) is None


UNSHARE = shutil.which("unshare")


@pytest.mark.skipif(
    os.geteuid() != 0 or UNSHARE is None,
    reason="needs root and unshare(1): the run gets a hosts file of its own in a private "
    "mount namespace, so that BUCKET.s3.aiobench.test resolves to the test server",
)
def test_virtual_host_addressing_puts_the_bucket_in_the_host_name(
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    """--s3virtaddr against the gateway's virtual-host domain, over HTTP and HTTPS. Only
    BUCKET.s3.aiobench.test resolves, not the endpoint's own name, so every request went
    to the bucket's host name; and their paths hold no bucket, so a gateway reading them
    path style would have taken a key's first segment for one."""
    bucket = fresh_bucket()
    hosts = tmp_path / "hosts"
    hosts.write_text(f"127.0.0.1 localhost {bucket}.{DOMAIN}\n", encoding="ascii")
    port = s3_server.endpoint.rpartition(":")[2]
    https_port = s3_server.https_endpoint.rpartition(":")[2]
    layout = ["-t", "2", "-n", "1", "-N", "2", "-s", "4k", "--s3virtaddr"]

    def run(endpoint: str, *phase_args: str) -> subprocess.CompletedProcess[str]:
        args = s3_args(s3_server)
        args[1] = endpoint
        command = [sys.executable, "-m", "aiobench", *phase_args, *layout, *args]
        return subprocess.run(
            [UNSHARE or "unshare", "--mount", "--propagation", "private", "sh", "-c",
             'mount --bind "$0" /etc/hosts && exec "$@"', str(hosts), *command,
             f"s3://{bucket}"],
            capture_output=True, text=True, timeout=120, check=False,
            env=dict(os.environ, SSL_CERT_FILE=ca_file(s3_server)),
        )  # fmt: skip

    made = run(f"http://{DOMAIN}:{port}", "-d", "-w")
    assert made.returncode == 0, made.stderr
    assert set(listing(s3_server, bucket) or {}) == {
        f"r{rank}/d0/r{rank}-f{f}" for rank in range(2) for f in range(2)
    }
    read = run(f"https://{DOMAIN}:{https_port}", "-r", "-F", "-D")
    assert read.returncode == 0, read.stderr
    assert listing(s3_server, bucket) is None


@pytest.mark.parametrize("option", [["--s3endpoints", "http://h"], ["--s3timeout", "5"]])
def test_s3_options_need_s3_paths(run_cli: RunCli, tmp_path: Path, option: list[str]) -> None:
    proc = run_cli("-w", "-s", "4k", *option, str(tmp_path / "f"))
    assert proc.returncode == 2
    assert proc.stderr == f"Error: {option[0]}: only applies to object storage (s3:// PATHs)\n"
    assert list(tmp_path.iterdir()) == []


@needs_mpi
def test_mpirun_of_two_ranks_makes_the_objects_of_two_threads(
    run_cli: RunCli,
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    layout = ["-n", "2", "-N", "3", "-s", "4k", "-b", "4k"]
    counts = {}
    for how in ("threads", "ranks"):
        bucket = fresh_bucket()
        args = ["-d", "-w", *layout, *s3_args(s3_server), "--json", "-", f"s3://{bucket}"]
        proc = run_cli("-t", "2", *args) if how == "threads" else mpirun(2, "-t", "1", *args)
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(proc.stdout)
        counts[how] = (
            [(p["phase"], p["last_done"]["entries"]) for p in doc["phases"]],
            listing(s3_server, bucket),
        )
        assert run_cli("-F", "-D", "-t", "2", *layout, *s3_args(s3_server),
                       f"s3://{bucket}").returncode == 0  # fmt: skip
    assert counts["ranks"] == counts["threads"]
    assert counts["ranks"][0] == [("MKBUCKETS", 1), ("WRITE", 12)]
    assert counts["ranks"][1] is not None and len(counts["ranks"][1]) == 12


def test_dryrun_prints_the_plan_and_sends_nothing(
    run_cli: RunCli,
    s3_server: S3Server,  # noqa: F811
) -> None:
    bucket = fresh_bucket()
    proc = run_cli("--dryrun", "-d", "-w", "-t", "2", "-n", "2", "-N", "5", "-s", "4k",
                   *s3_args(s3_server), f"s3://{bucket}")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Targets         : 1 bucket: s3://" in proc.stdout
    assert "MKBUCKETS       : 1 buckets\n" in proc.stdout
    assert "WRITE           : 20 objects, 80.0 KiB" in proc.stdout
    assert s3_server.secret_key not in proc.stdout + proc.stderr
    assert listing(s3_server, bucket) is None


def test_thread_ranks_use_the_endpoints_round_robin_and_each_is_reported(
    run_cli: RunCli,
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
    validator: Draft202012Validator,
) -> None:
    # The same server under two names: two endpoints to the client.
    second = s3_server.endpoint.replace("127.0.0.1", "localhost")
    args = s3_args(s3_server)
    args[1] = f"{s3_server.endpoint},{second}"
    bucket = fresh_bucket()
    out = tmp_path / "run.json"
    # Threads 0 and 2 use the first endpoint, 1 the second: 2 x 4 and 1 x 4 objects.
    proc = run_cli("-d", "-w", "-F", "-D", "-t", "3", "-N", "4", "-s", "4k", *args,
                   "--json", str(out), f"s3://{bucket}")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert errors_of(validator, doc) == []
    report = phases(doc)["WRITE"]["per_endpoint"]
    got = [(e["index"], e["endpoint"], e["entries"]) for e in report["endpoints"]]
    assert got == [(0, s3_server.endpoint, 8), (1, second, 4)]
    assert report["aggregate"]["entries_per_s"] == sum(
        e["entries_per_s"] for e in report["endpoints"]
    )
    assert "\n WRITE      per endpoint     :" in proc.stdout
    assert listing(s3_server, bucket) is None


class _Faulty(http.server.BaseHTTPRequestHandler):
    """An S3 endpoint that fails: 503 SlowDown to everything (``mode`` "busy"), or all is
    well but each GET body breaks off after 100 of its bytes ("reset")."""

    mode = "busy"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass  # (quiet)

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        if self.mode == "busy":
            body = b"<Error><Code>SlowDown</Code><Message>Reduce your rate</Message></Error>"
            self.send_response(503)
        elif self.command == "GET":
            first, last = self.headers["Range"].removeprefix("bytes=").split("-")
            self.send_response(206)
            self.send_header("Content-Length", str(int(last) - int(first) + 1))
            self.end_headers()
            self.wfile.write(b"x" * 100)
            self.wfile.flush()
            self.close_connection = True
            return
        else:
            body = b""
            self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = _answer


@pytest.mark.parametrize(
    ("mode", "args", "failed", "said"),
    [
        ("busy", ["-d", "-w"], "MKBUCKETS", "HTTP 503 SlowDown (Reduce your rate)"),
        (
            "reset",
            ["-w", "-r"],
            "READ",
            "ECONNRESET (the connection broke in the response body after 100",
        ),
    ],
)
def test_a_failing_server_ends_the_run_with_one_error_and_what_was_measured(
    run_cli: RunCli, tmp_path: Path, mode: str, args: list[str], failed: str, said: str
) -> None:
    handler = type("Handler", (_Faulty,), {"mode": mode})
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        endpoint = f"http://127.0.0.1:{server.server_address[1]}"
        out = tmp_path / "run.json"
        proc = run_cli(*args, "-t", "2", "-N", "2", "-s", "4k", "--s3endpoints", endpoint,
                       "--s3key", "KEY", "--s3secret", "SECRET", "--nolive", "--json",
                       str(out), "s3://faulty")  # fmt: skip
        server.shutdown()
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, proc.stderr
    assert errors[0].startswith("Error: s3://faulty") and endpoint in errors[0], errors
    assert said in errors[0], errors
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["phases"][-1]["phase"] == failed and doc["phases"][-1]["status"] == "error"
    assert f"\n{failed:<11} Elapsed time" in proc.stdout or proc.stdout.startswith(failed)


class _Recording(_Faulty):
    """An endpoint that answers every request with 200 and keeps its headers."""

    seen: list[dict[str, str]]

    def _answer(self) -> None:
        self.seen.append(dict(self.headers.items()))
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = _answer


def test_temporary_credentials_send_their_session_token_signed(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AWS_SESSION_TOKEN with the environment's key and secret: every request carries it
    as x-amz-security-token, among its signed headers; no output shows it."""
    token = "IQoJb3JpZ2luX2VjEXAMPLE+session/token=="
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ASIAEXAMPLEKEY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "temporary-secret")
    monkeypatch.setenv("AWS_SESSION_TOKEN", token)
    seen: list[dict[str, str]] = []
    handler = type("Handler", (_Recording,), {"seen": seen})
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        endpoint = f"http://127.0.0.1:{server.server_address[1]}"
        out = tmp_path / "run.json"
        proc = run_cli("-d", "-w", "-t", "1", "-N", "2", "-s", "4k", "--s3endpoints", endpoint,
                       "--nolive", "--json", str(out), "s3://tokens")  # fmt: skip
        server.shutdown()
    assert proc.returncode == 0, proc.stderr
    assert len(seen) == 3  # the bucket, then two objects
    for headers in seen:
        assert headers["x-amz-security-token"] == token
        signed = headers["Authorization"].split("SignedHeaders=")[1].split(",")[0]
        assert "x-amz-security-token" in signed.split(";")
    assert token not in proc.stdout + proc.stderr + out.read_text(encoding="utf-8")


def test_listobj_and_multidel_phases(
    run_cli: RunCli,
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
    validator: Draft202012Validator,
) -> None:
    buckets = [fresh_bucket() for _ in range(3)]
    paths = [f"s3://{b}" for b in buckets]
    # 2 threads x 2 prefixes x 30 objects; prefix d of thread r in bucket (r + d) % 3:
    # 30, 60 and 30 objects. Thread 0 lists buckets 0 and 2, thread 1 bucket 1.
    layout = ["-t", "2", "--iodepth", "4", "-n", "2", "-N", "30", "-s", "4k", "-b", "4k",
              *s3_args(s3_server)]  # fmt: skip
    assert run_cli("-d", "-w", *layout, *paths).returncode == 0
    out = tmp_path / "list.json"
    proc = run_cli("--s3listobj", "50", *layout, "--json", str(out), *paths)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert errors_of(validator, doc) == []
    listed = phases(doc)["LISTOBJ"]
    assert listed["last_done"]["entries"] == 30 + 50 + 30  # at most 50 of each bucket
    assert [t["entries"] for t in listed["per_target"]["targets"]] == [30, 50, 30]
    assert [len(listing(s3_server, b) or {}) for b in buckets] == [30, 60, 30]  # untouched
    # More than a bucket holds of the layout: an error naming the bucket, exit 1.
    fewer = run_cli("--s3listobj", "50", *layout[:6], "-N", "40", *layout[8:], *paths)
    assert fewer.returncode == 1
    errors = [line for line in fewer.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, fewer.stderr
    # Buckets 0 and 2 (thread 0's) hold 30 of the 40: whichever slot finds it first says so.
    assert any(
        errors[0].startswith(f"Error: s3://{buckets[i]}: ENOENT (the listing ended early")
        for i in (0, 2)
    ), errors
    # MULTIDEL deletes every object in batches of 7; -D removes the empty buckets.
    out = tmp_path / "del.json"
    proc = run_cli("--s3multidel", "7", "-D", *layout, "--json", str(out), *paths)
    assert proc.returncode == 0, proc.stderr
    got = phases(json.loads(out.read_text(encoding="utf-8")))
    assert list(got) == ["MULTIDEL", "RMBUCKETS"]
    deleted = got["MULTIDEL"]["last_done"]
    assert deleted["entries"] == 120
    assert deleted["ops"] >= 2 * (5 + 9 + 5)  # a listing and a DeleteObjects per batch
    assert all(listing(s3_server, b) is None for b in buckets)
