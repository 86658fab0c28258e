"""Multipart uploads and failed transfers with elbencho's options: part size variance, no
completion, a completion's 404, the 10,000-part limit, ignored errors. Against SeaweedFS,
and a recording server for what a real one will not do (a 404 on completion, failures)."""

from __future__ import annotations

import http.server
import json
import random
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from aiobench.engines.s3.uploads import UploadSettings
from tests.engines.s3.test_s3_cli import listing
from tests.helpers import RunCli
from tests.s3server import S3Server, s3_server  # noqa: F401  (a fixture)

MIB = 1 << 20
Request = tuple[str, str, dict[str, list[str]], int]  # method, path, query, body length


class _Server(http.server.BaseHTTPRequestHandler):
    """An S3 endpoint that keeps each request and answers as told: ``complete`` is the
    status of CompleteMultipartUpload, ``transfer`` that of every PUT and GET of data."""

    protocol_version = "HTTP/1.1"
    seen: list[Request]
    complete = 200
    transfer = 200

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        url = urlsplit(self.path)
        query = parse_qs(url.query, keep_blank_values=True)
        self.seen.append((self.command, url.path, query, length))
        status, body = 200, b""
        if self.command == "POST" and "uploads" in query:
            body = b"<InitiateMultipartUploadResult><UploadId>u1</UploadId>"
            body += b"</InitiateMultipartUploadResult>"
        elif self.command == "POST" and "uploadId" in query:
            status = self.complete
            if status == 200:
                body = b"<CompleteMultipartUploadResult></CompleteMultipartUploadResult>"
            else:
                body = b"<Error><Code>NoSuchUpload</Code><Message>gone</Message></Error>"
        elif self.command in ("PUT", "GET") and url.path.count("/") > 1:
            status = self.transfer
            if status != 200:
                body = b"<Error><Code>InternalError</Code><Message>failed</Message></Error>"
            elif self.command == "GET":
                first, last = self.headers["Range"].removeprefix("bytes=").split("-")
                body = b"z" * (int(last) - int(first) + 1)
                status = 206
        self.send_response(status)
        self.send_header("ETag", '"etag"')
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = _answer


@contextmanager
def _server(**behaviour: int) -> Iterator[tuple[str, list[Request]]]:
    seen: list[Request] = []
    handler = type("Handler", (_Server,), {"seen": seen, **behaviour})
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}", seen
        finally:
            server.shutdown()


FAKE = ["--s3key", "K", "--s3secret", "S", "--nolive"]


def _args(server: S3Server) -> list[str]:
    return ["--s3endpoints", server.endpoint, "--s3key", server.access_key,
            "--s3secret", server.secret_key, "--nolive"]  # fmt: skip


# -- units --------------------------------------------------------------------------------


def test_part_sizes_vary_and_the_last_part_takes_up_the_rest() -> None:
    rng = random.Random(7)
    plain = UploadSettings().part_sizes(10 * MIB + 5, 2 * MIB, rng)
    assert plain == [(k * 2 * MIB, 2 * MIB) for k in range(5)] + [(10 * MIB, 5)]
    varied = UploadSettings(size_var=MIB).part_sizes(10 * MIB + 5, 2 * MIB, rng)
    assert len(varied) == 6
    lengths = [length for _, length in varied]
    assert all(MIB < n <= 2 * MIB for n in lengths[:-1])
    assert len(set(lengths[:-1])) > 1  # (random: five equal draws of 2^20 are unlikely)
    assert sum(lengths) == 10 * MIB + 5 and lengths[-1] == 10 * MIB + 5 - sum(lengths[:-1])
    assert [offset for offset, _ in varied] == [sum(lengths[:k]) for k in range(6)]
    assert UploadSettings(size_var=MIB).part_sizes(MIB, 2 * MIB, rng) == [(0, MIB)]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["-s", "20001k", "-b", "2k"], "-b/--block: objects of 20481024 bytes in parts of 2048"),
        (
            ["-s", "8m", "-b", "4m", "--s3mpusizevar", "4m"],
            "--s3mpusizevar: must be less than -b/--block",
        ),
    ],
)
def test_wrong_upload_options_are_refused(run_cli: RunCli, args: list[str], said: str) -> None:
    proc = run_cli("-w", *args, "--s3endpoints", "http://127.0.0.1:9", *FAKE, "s3://uploads")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"Error: {said}"), proc.stderr


def test_more_than_10000_parts_with_nompcheck(run_cli: RunCli) -> None:
    with _server() as (endpoint, seen):
        proc = run_cli("-w", "-t", "1", "-N", "1", "-s", "10001k", "-b", "1k", "--iodepth", "8",
                       "--s3nompcheck", "--s3endpoints", endpoint, *FAKE, "s3://uploads",
                       timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    parts = [s for s in seen if s[0] == "PUT" and "partNumber" in s[2]]
    assert len(parts) == 10_001


# -- a recording server -------------------------------------------------------------------


def test_no_completion_and_a_404_on_completion(run_cli: RunCli, tmp_path: Path) -> None:
    layout = ["-w", "-t", "1", "-N", "2", "-s", "8k", "-b", "4k", *FAKE, "s3://uploads"]
    with _server() as (endpoint, seen):
        proc = run_cli("--s3nompucompl", "--s3endpoints", endpoint, *layout)
    assert proc.returncode == 0, proc.stderr
    assert len([s for s in seen if "partNumber" in s[2]]) == 4
    assert not [s for s in seen if s[0] == "POST" and "uploadId" in s[2]]  # no completion
    with _server(complete=404) as (endpoint, seen):
        failed = run_cli("--s3endpoints", endpoint, *layout)
    assert failed.returncode == 1
    assert "HTTP 404 NoSuchUpload" in failed.stderr
    with _server(complete=404) as (endpoint, seen):
        out = tmp_path / "run.json"
        proc = run_cli("--s3multiignore404", "--s3endpoints", endpoint, "--json", str(out),
                       *layout)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    write = json.loads(out.read_text())["phases"][0]["last_done"]
    assert (write["entries"], write["ops"], write["bytes"]) == (2, 4, 16 * 1024)


def test_ignored_errors_leave_the_failed_requests_uncounted(
    run_cli: RunCli, tmp_path: Path
) -> None:
    layout = ["-t", "2", "-N", "3", "-s", "4k", *FAKE, "s3://uploads"]
    with _server(transfer=500) as (endpoint, _seen):
        failed = run_cli("-w", "--s3endpoints", endpoint, *layout)
        out = tmp_path / "run.json"
        proc = run_cli("-w", "-r", "--s3ignoreerrors", "--s3endpoints", endpoint, "--json",
                       str(out), *layout)  # fmt: skip
    assert failed.returncode == 1 and "HTTP 500 InternalError" in failed.stderr
    assert proc.returncode == 0, proc.stderr
    phases = json.loads(out.read_text())["phases"]
    assert [p["phase"] for p in phases] == ["WRITE", "READ"]
    for phase in phases:
        done = phase["last_done"]
        assert (done["entries"], done["ops"], done["bytes"]) == (6, 0, 0)


# -- against SeaweedFS --------------------------------------------------------------------


@pytest.mark.slow
def test_varied_parts_make_whole_objects_and_no_completion_makes_none(
    run_cli: RunCli,
    s3_server: S3Server,  # noqa: F811
) -> None:
    bucket = f"aiobench-up-{uuid.uuid4().hex[:10]}"
    layout = ["-t", "1", "-N", "2", "-s", "17m", "-b", "6m", "--iodepth", "2", f"s3://{bucket}"]
    # (parts of 5 to 6 MiB but the last: S3 takes parts of 5 MiB and more)
    proc = run_cli("-d", "-w", "-r", "--s3mpusizevar", "1m", *_args(s3_server), *layout)
    assert proc.returncode == 0, proc.stderr
    assert listing(s3_server, bucket) == {"r0/d0/r0-f0": 17 * MIB, "r0/d0/r0-f1": 17 * MIB}
    proc = run_cli("-F", *_args(s3_server), *layout)
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("-w", "--s3nompucompl", *_args(s3_server), *layout)
    assert proc.returncode == 0, proc.stderr
    assert listing(s3_server, bucket) == {}  # the parts are there, no object
    proc = run_cli("-D", *_args(s3_server), *layout)
    assert proc.returncode == 0, proc.stderr  # (incomplete uploads are no objects)
