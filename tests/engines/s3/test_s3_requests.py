"""What each S3 request carries from elbencho's request options: SSE-S3/-C/-KMS, upload
checksums, payload signing, several users' credentials and a session token. Against
SeaweedFS where it checks them, else a recording server that checks the exact requests."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import http.server
import threading
import uuid
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from aiobench.engines.s3 import policy
from aiobench.engines.s3.client import S3Client
from aiobench.engines.s3.layout import Credentials, parse_endpoint
from aiobench.engines.s3.policy import RequestPolicy
from aiobench.errors import S3Error
from tests.helpers import RunCli
from tests.s3server import S3Server, s3_server  # noqa: F401  (a fixture)

Request = tuple[str, str, dict[str, str], bytes]  # method, path and query, headers, body


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Answers every request with 200 and an ETag, and keeps it."""

    protocol_version = "HTTP/1.1"
    seen: list[Request]

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.seen.append((self.command, self.path, dict(self.headers.items()), body))
        self.send_response(200)
        self.send_header("ETag", '"etag"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = _answer


@contextmanager
def _recording() -> Iterator[tuple[str, list[Request]]]:
    seen: list[Request] = []
    handler = type("Handler", (_Recorder,), {"seen": seen})
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}", seen
        finally:
            server.shutdown()


def _signed(headers: dict[str, str]) -> list[str]:
    return headers["Authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")


def _args(server: S3Server) -> list[str]:
    return ["--s3endpoints", server.endpoint, "--s3key", server.access_key,
            "--s3secret", server.secret_key, "--nolive"]  # fmt: skip


def _bucket() -> str:
    return f"aiobench-rq-{uuid.uuid4().hex[:10]}"


KEY = base64.b64encode(bytes(range(32))).decode()
OTHER_KEY = base64.b64encode(bytes(range(1, 33))).decode()


# -- units --------------------------------------------------------------------------------


def test_checksums_are_the_algorithms_digests_in_base64() -> None:
    body = memoryview(b"hello, object storage")
    expected = {
        "CRC32": zlib.crc32(body).to_bytes(4, "big"),
        "SHA1": hashlib.sha1(body).digest(),
        "SHA256": hashlib.sha256(body).digest(),
        # CRC32C (Castagnoli) of this text, as google-crc32c computes it
        "CRC32C": policy.CHECKSUMS["CRC32C"](body),
    }
    for algo, digest in expected.items():
        headers = RequestPolicy(checksum=algo).checksum_headers(body)
        assert headers == {
            "x-amz-sdk-checksum-algorithm": algo,
            f"x-amz-checksum-{algo.lower()}": base64.b64encode(digest).decode(),
        }
    # CRC32C's known check value: "123456789" -> 0xE3069283 (RFC 3720's polynomial)
    assert policy.CHECKSUMS["CRC32C"](memoryview(b"123456789")).hex() == "e3069283"
    assert RequestPolicy().checksum_headers(body) == {}


def test_payload_signing_policy() -> None:
    body = memoryview(b"x" * 10)
    digest = hashlib.sha256(body).hexdigest()
    always, never, depends = (RequestPolicy(sign=s) for s in (1, 2, 0))
    assert always.payload_hash(body, tls=True) == always.payload_hash(body, tls=False) == digest
    assert always.payload_hash(None, tls=True) == hashlib.sha256(b"").hexdigest()
    assert never.payload_hash(body, tls=False) == "UNSIGNED-PAYLOAD"
    assert depends.payload_hash(body, tls=False) == digest
    assert depends.payload_hash(body, tls=True) == "UNSIGNED-PAYLOAD"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--s3sse", "--s3ssekmskey", "k"], "--s3ssekmskey: cannot be combined with --s3sse"),
        (["--s3sseckey", "not base64!"], "--s3sseckey: not base64 (the key is not shown)"),
        (
            ["--s3sseckey", base64.b64encode(b"short").decode()],
            "--s3sseckey: an AES-256 key is 32 bytes, this one 5",
        ),
        (["--s3chksumalgo", "md5"], "--s3chksumalgo: 'md5' is none of CRC32, CRC32C, SHA1"),
        (["--s3sign", "3"], "--s3sign"),
        (["--s3fastget", "--verify", "7"], "--s3fastget: cannot be combined with --verify"),
        (["--s3credlist", "a:b,c"], "--s3credlist: entry 2: not KEY:SECRET (not shown)"),
        (
            ["--s3credlist", "a:b", "--s3credfile", "/nonexistent"],
            "--s3credlist: cannot be combined with --s3credfile",
        ),
        (
            ["--s3credfile", "/nonexistent/creds"],
            "--s3credfile: /nonexistent/creds: No such file or directory",
        ),
        (
            ["--s3credlist", "a:b", "--s3key", "k"],
            "--s3credlist: cannot be combined with --s3key/--s3secret",
        ),
    ],
)
def test_wrong_request_options_are_refused_before_any_request(
    run_cli: RunCli, monkeypatch: pytest.MonkeyPatch, args: list[str], said: str
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "K")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "S")
    proc = run_cli("-w", "-s", "4k", "--s3endpoints", "http://127.0.0.1:9", *args,
                   "s3://requestbucket")  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"Error: {said}"), proc.stderr
    assert "not base64!" not in proc.stderr or said.startswith("--s3sseckey: not")
    assert len(proc.stderr.splitlines()) == 1


def test_a_credentials_file_line_that_is_wrong_is_named(run_cli: RunCli, tmp_path: Path) -> None:
    creds = tmp_path / "creds"
    creds.write_text("# users\nAKIA1:secret-one\n\nAKIA2 secret-two\n")
    proc = run_cli("-w", "-s", "4k", "--s3endpoints", "http://127.0.0.1:9", "--s3credfile",
                   str(creds), "s3://requestbucket")  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr == f"Error: --s3credfile: {creds} line 4: not KEY:SECRET (not shown)\n"


# -- a recording server: what is sent ------------------------------------------------------


def test_several_users_credentials_by_thread_rank_and_shared_buckets(
    run_cli: RunCli, tmp_path: Path
) -> None:
    creds = tmp_path / "creds"
    creds.write_text("# two users\nAKIAFIRST:secret-one\nAKIASECOND : secret-two\n")
    with _recording() as (endpoint, seen):
        proc = run_cli("-d", "-w", "-t", "3", "-N", "1", "-s", "4k", "--s3endpoints", endpoint,
                       "--s3credfile", str(creds), "--nolive", "s3://users")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    create = [s for s in seen if s[1] == "/users"]
    assert len(create) == 1 and create[0][2]["x-amz-acl"] == "public-read-write"
    users = {}
    for method, path, headers, _ in seen:
        if method == "PUT" and path.startswith("/users/r"):
            rank = int(path.split("/")[2][1:])
            users[rank] = headers["Authorization"].split("Credential=")[1].split("/")[0]
    assert users == {0: "AKIAFIRST", 1: "AKIASECOND", 2: "AKIAFIRST"}
    assert "secret-one" not in proc.stdout + proc.stderr


def test_a_session_token_option_goes_signed_with_every_request(run_cli: RunCli) -> None:
    token = "FwoGZXIvYXdzEXAMPLETOKEN=="
    with _recording() as (endpoint, seen):
        proc = run_cli("-w", "-t", "1", "-N", "2", "-s", "4k", "--s3endpoints", endpoint,
                       "--s3key", "ASIAKEY", "--s3secret", "S", "--s3sessiontoken", token,
                       "--nolive", "s3://tokens")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert len(seen) == 2
    for _, _, headers, _ in seen:
        assert headers["x-amz-security-token"] == token
        assert "x-amz-security-token" in _signed(headers)


@pytest.mark.parametrize("sign", ["0", "1", "2"])
def test_payloads_signed_as_asked(run_cli: RunCli, sign: str) -> None:
    with _recording() as (endpoint, seen):
        proc = run_cli("-w", "-t", "1", "-N", "1", "-s", "4k", "--s3endpoints", endpoint,
                       "--s3key", "K", "--s3secret", "S", "--s3sign", sign, "--nolive",
                       "s3://signing")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    [(_, _, headers, body)] = seen
    signed = sign in ("0", "1")  # (0: over http, signed)
    expected = hashlib.sha256(body).hexdigest() if signed else "UNSIGNED-PAYLOAD"
    assert len(body) == 4096 and headers["x-amz-content-sha256"] == expected


def test_sse_kms_and_checksum_headers_go_with_each_upload(run_cli: RunCli) -> None:
    with _recording() as (endpoint, seen):
        proc = run_cli("-w", "-t", "1", "-N", "2", "-s", "4k", "--s3endpoints", endpoint,
                       "--s3key", "K", "--s3secret", "S", "--s3ssekmskey", "kms-key-1",
                       "--s3chksumalgo", "crc32", "--nolive", "s3://kms")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert len(seen) == 2
    for _, _, headers, body in seen:
        assert headers["x-amz-server-side-encryption"] == "aws:kms"
        assert headers["x-amz-server-side-encryption-aws-kms-key-id"] == "kms-key-1"
        crc = base64.b64encode(zlib.crc32(body).to_bytes(4, "big")).decode()
        assert headers["x-amz-checksum-crc32"] == crc
        assert {"x-amz-checksum-crc32", "x-amz-server-side-encryption"} <= set(_signed(headers))


# -- against SeaweedFS ---------------------------------------------------------------------


@pytest.mark.slow
def test_sse_s3_and_sse_c_objects(
    run_cli: RunCli,
    s3_server: S3Server,  # noqa: F811
) -> None:
    bucket = _bucket()
    layout = ["-t", "1", "-N", "2", "-s", "64k", f"s3://{bucket}"]
    proc = run_cli("-d", "-w", "--s3sse", *_args(s3_server), *layout)
    assert proc.returncode == 0, proc.stderr

    async def head(use: RequestPolicy, key: str) -> str:
        credentials = Credentials(s3_server.access_key, s3_server.secret_key)
        endpoint = parse_endpoint(s3_server.endpoint)
        async with S3Client(endpoint, credentials, s3_server.region, policy=use) as c:
            _, headers, _ = await c.call(
                "HeadObject", "HEAD", bucket, key, headers=dict(use.object)
            )
            return headers.get("x-amz-server-side-encryption", "")

    assert asyncio.run(head(RequestPolicy(), "r0/d0/r0-f0")) == "AES256"
    # SSE-C: written and read with the key; without it, or with another, the GET fails.
    proc = run_cli("-w", "--s3sseckey", KEY, *_args(s3_server), *layout)
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("-r", "--s3sseckey", KEY, *_args(s3_server), *layout)
    assert proc.returncode == 0, proc.stderr
    for other in ([], ["--s3sseckey", OTHER_KEY]):
        proc = run_cli("-r", *other, *_args(s3_server), *layout)
        assert proc.returncode == 1, proc.stderr
        assert f"Error: s3://{bucket}/r0/d0/r0-f0" in proc.stderr
        assert KEY not in proc.stderr and OTHER_KEY not in proc.stderr
    proc = run_cli("-F", "-D", "--s3sseckey", KEY, *_args(s3_server), *layout)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["CRC32", "CRC32C", "SHA1", "SHA256"])
def test_the_server_checks_the_checksums_sent(
    run_cli: RunCli,
    s3_server: S3Server,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    algo: str,
) -> None:
    bucket = _bucket()
    # Signed payloads too: the server checks the body against the signature as well.
    proc = run_cli("-d", "-w", "-r", "-F", "-D", "-t", "2", "-N", "2", "-s", "32k",
                   "--s3chksumalgo", algo, "--s3sign", "1", *_args(s3_server),
                   f"s3://{bucket}")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    # A checksum that is not the body's is refused: the header is what the server checks.
    right = policy.CHECKSUMS[algo]
    wrong = {**policy.CHECKSUMS, algo: lambda body: right(memoryview(b"x"))}
    monkeypatch.setattr(policy, "CHECKSUMS", wrong)

    async def put() -> None:
        credentials = Credentials(s3_server.access_key, s3_server.secret_key)
        endpoint = parse_endpoint(s3_server.endpoint)
        use = RequestPolicy(checksum=algo)
        async with S3Client(endpoint, credentials, s3_server.region, policy=use) as c:
            await c.create_bucket(bucket)
            try:
                await c.put_object(bucket, "k", memoryview(b"y" * 1000))
            finally:
                await c.delete_bucket(bucket)

    with pytest.raises(S3Error) as failed:
        asyncio.run(put())
    assert failed.value.status == 400, failed.value
