"""S3 requests that get stuck (#27): the real CLI against endpoints that accept and never
answer, dribble a body a byte a second, never read a PUT body, or list forever without
keys. Each run ends: at ``--s3timeout`` with one error naming the request, at
``--timelimit`` with what completed, or after a few empty pages of a listing.

The endpoints are small servers on free loopback ports (a real S3 server does none of
this), one thread per connection."""

from __future__ import annotations

import contextlib
import json
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from tests.helpers import RunCli, errors_of

pytestmark = pytest.mark.slow  # real CLI runs

# Guards against hanging, not speed checks: each run below ends within a few seconds of
# its --s3timeout or --timelimit; before #27 they took 61 s, 76 s or forever.
GUARD_S = 40.0
WALL_S = 30.0
BUCKET = "stuck-bucket"
OBJECT = 4096

Answer = Callable[[socket.socket, str, threading.Event], None]


class _Handler(socketserver.BaseRequestHandler):
    """Reads each request head and hands its request line to the server's ``answer``."""

    server: _Server

    def handle(self) -> None:
        sock, server = self.request, self.server
        with contextlib.suppress(OSError):  # the client went away
            pending = b""
            while not server.closing.is_set():
                while b"\r\n\r\n" not in pending:
                    data = sock.recv(65536)
                    if not data:
                        return
                    pending += data
                head, _, pending = pending.partition(b"\r\n\r\n")
                line = head.split(b"\r\n", 1)[0].decode()
                with server.lock:
                    server.seen.append(line)
                server.answer(sock, line, server.closing)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True

    def __init__(self, answer: Answer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.answer = answer
        self.seen: list[str] = []
        self.lock = threading.Lock()
        self.closing = threading.Event()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@contextlib.contextmanager
def serving(answer: Answer) -> Iterator[_Server]:
    server = _Server(answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.closing.set()
        server.shutdown()
        server.server_close()
        thread.join()


def _ok(sock: socket.socket, body: bytes = b"", status: str = "200 OK") -> None:
    sock.sendall(f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)


def silent(sock: socket.socket, line: str, closing: threading.Event) -> None:
    """Accepts the request and never answers (reads on until the client goes)."""
    while sock.recv(65536):
        pass


def deaf(sock: socket.socket, line: str, closing: threading.Event) -> None:
    """Reads nothing more, answers nothing: a PUT body fills the socket buffers."""
    closing.wait()


def dribble(sock: socket.socket, line: str, closing: threading.Event) -> None:
    """The headers of a whole object, then its body a byte a second."""
    sock.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {OBJECT}\r\n\r\n".encode())
    for _ in range(OBJECT):
        if closing.wait(1.0):
            return
        sock.sendall(b"x")


def thread_zero_only(sock: socket.socket, line: str, closing: threading.Event) -> None:
    """Thread rank 0's objects come back at once; the others' never."""
    if f"/{BUCKET}/r0/" in line:
        _ok(sock, b"x" * OBJECT)
    else:
        silent(sock, line, closing)


def endless_listing(same_token: bool) -> Answer:
    """Every ListObjectsV2 page: more to come, no keys, and the token it was asked with
    (``same_token``) or a new one each time."""
    pages = iter(range(1 << 30))

    def answer(sock: socket.socket, line: str, closing: threading.Event) -> None:
        token = "same" if same_token else f"t{next(pages)}"
        body = (
            '<?xml version="1.0" encoding="UTF-8"?><ListBucketResult>'
            f"<Name>{BUCKET}</Name><KeyCount>0</KeyCount><IsTruncated>true</IsTruncated>"
            f"<NextContinuationToken>{token}</NextContinuationToken></ListBucketResult>"
        )
        _ok(sock, body.encode())

    return answer


def run(
    run_cli: RunCli, server: _Server, tmp_path: Path, *args: str
) -> tuple[Any, list[str], dict[str, Any], float]:
    """The CLI against ``server``: (process, its Error lines, its JSON document, seconds)."""
    out = tmp_path / "run.json"
    began = time.monotonic()
    proc = run_cli(*args, "--s3endpoints", server.endpoint, "--s3key", "KEY", "--s3secret",
                   "SECRET", "--nolive", "--json", str(out), f"s3://{BUCKET}",
                   timeout=GUARD_S)  # fmt: skip
    took = time.monotonic() - began
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("Error: ")]
    return proc, errors, json.loads(out.read_text(encoding="utf-8")), took


@pytest.mark.parametrize(
    ("answer", "args", "said"),
    [
        (silent, ["-r"], "GetObject: no answer within --s3timeout (2 s)"),
        (silent, ["-d"], "CreateBucket: no answer within --s3timeout (2 s)"),
        (dribble, ["-r"], "GetObject stalled after "),
        # 8 MiB more than the socket buffers hold: the PUT stops sending.
        (deaf, ["-w", "-s", "8m", "-b", "8m"], "PutObject stalled after "),
    ],
    ids=["never-answers", "never-answers-bucket", "dribbled-body", "unread-put-body"],
)
def test_a_stuck_request_fails_after_s3timeout_naming_it(
    run_cli: RunCli,
    tmp_path: Path,
    validator: Draft202012Validator,
    answer: Answer,
    args: list[str],
    said: str,
) -> None:
    with serving(answer) as server:
        proc, errors, doc, took = run(
            run_cli, server, tmp_path, "-t", "1", "-N", "1", "-s", "4k", *args, "--s3timeout", "2"
        )
    assert took < WALL_S
    assert proc.returncode == 1, proc.stderr
    assert len(errors) == 1, proc.stderr
    where = f"s3://{BUCKET}" if "-d" in args else f"s3://{BUCKET}/r0/d0/r0-f0"
    assert errors[0].startswith(f"Error: {where} at {server.endpoint}: "), errors
    assert "ETIMEDOUT (" in errors[0] and said in errors[0], errors
    if "stalled" in said:  # the last window: nothing, or a byte or two of the body
        assert "sent or received in --s3timeout (2 s))" in errors[0], errors
        moved = int(errors[0].split(" stalled after ")[1].split(" bytes")[0])
        assert 0 < moved < (8 << 20 if "-w" in args else OBJECT)
    assert errors_of(validator, doc) == []
    assert doc["error"]["errno_name"] == "ETIMEDOUT" and doc["error"]["bucket"] == BUCKET
    assert doc["phases"][-1]["status"] == "error"
    assert doc["meta"]["config"]["s3timeout_s"] == 2


@pytest.mark.parametrize(
    ("answer", "args"),
    [(silent, ["-r"]), (dribble, ["-r"]), (deaf, ["-w", "-s", "8m", "-b", "8m"])],
    ids=["never-answers", "dribbled-body", "unread-put-body"],
)
def test_a_time_limit_ends_the_phase_though_requests_are_stuck(
    run_cli: RunCli,
    tmp_path: Path,
    validator: Draft202012Validator,
    answer: Answer,
    args: list[str],
) -> None:
    """--timelimit with the default --s3timeout (30 s): the phase ends at its limit, the
    stuck requests cancelled, without an error (a time limit ends a phase)."""
    with serving(answer) as server:
        proc, errors, doc, took = run(
            run_cli, server, tmp_path, "-t", "2", "-N", "1", "-s", "4k", *args, "--timelimit", "3"
        )
    assert took < WALL_S
    assert proc.returncode == 0, proc.stderr
    assert errors == []
    assert errors_of(validator, doc) == []
    (read,) = doc["phases"]
    assert (read["status"], read["last_done"]["entries"]) == ("time_limited", 0)
    assert doc["error"] is None


def test_at_the_time_limit_the_figures_count_what_completed(
    run_cli: RunCli, tmp_path: Path, validator: Draft202012Validator
) -> None:
    """Thread 0 reads its 5 objects, thread 1 waits for its first: at the limit READ
    counts thread 0's, and the stuck request is no error."""
    with serving(thread_zero_only) as server:
        proc, errors, doc, took = run(
            run_cli, server, tmp_path, "-r", "-t", "2", "-N", "5", "-s", "4k", "--timelimit", "3"
        )
    assert took < WALL_S
    assert proc.returncode == 0, proc.stderr
    assert errors == []
    assert errors_of(validator, doc) == []
    (read,) = doc["phases"]
    assert read["status"] == "time_limited"
    done = read["last_done"]
    assert (done["entries"], done["ops"], done["bytes"]) == (5, 5, 5 * OBJECT)
    assert [(t["rank"], t["entries"]) for t in read["threads"]] == [(0, 5), (1, 0)]


@pytest.mark.parametrize("same_token", [True, False], ids=["same-token", "new-tokens"])
def test_a_listing_without_progress_is_an_error_naming_the_bucket(
    run_cli: RunCli, tmp_path: Path, validator: Draft202012Validator, same_token: bool
) -> None:
    with serving(endless_listing(same_token)) as server:
        proc, errors, doc, took = run(
            run_cli, server, tmp_path, "--s3listobj", "10", "-t", "1", "-N", "10"
        )
        pages = len(server.seen)
    assert took < WALL_S
    assert proc.returncode == 1, proc.stderr
    did = "handed back the token they were asked with" if same_token else "brought no keys"
    assert errors == [
        f"Error: s3://{BUCKET} at {server.endpoint}: HTTP 200 (the listing makes no progress: "
        f"3 ListObjectsV2 pages in a row said more is to come (IsTruncated) and {did})"
    ], proc.stderr
    assert pages == 3  # (before #27: 133,000 requests a minute, without end)
    assert errors_of(validator, doc) == []
    (listed,) = doc["phases"]
    assert listed["status"] == "error" and listed["last_done"]["entries"] == 0
    assert doc["error"]["bucket"] == BUCKET


def test_an_upload_the_time_limit_cuts_off_is_aborted(
    run_cli: RunCli, tmp_path: Path, validator: Draft202012Validator
) -> None:
    """The upload starts, its two parts never get read: at the limit the parts are
    cancelled and the upload aborted (its parts would stay on the server)."""

    def answer(sock: socket.socket, line: str, closing: threading.Event) -> None:
        if "?uploads" in line:
            _ok(sock, b"<InitiateMultipartUploadResult><UploadId>U1</UploadId>"
                b"</InitiateMultipartUploadResult>")  # fmt: skip
        elif line.startswith("DELETE "):
            _ok(sock, status="204 No Content")
        else:
            deaf(sock, line, closing)

    with serving(answer) as server:
        proc, errors, doc, took = run(
            run_cli, server, tmp_path, "-w", "-t", "1", "--iodepth", "2", "-N", "1", "-s", "16m",
            "-b", "8m", "--timelimit", "3",
        )  # fmt: skip
        seen = list(server.seen)
    assert took < WALL_S
    assert proc.returncode == 0, proc.stderr
    assert errors == []
    assert errors_of(validator, doc) == []
    assert doc["phases"][0]["status"] == "time_limited"
    key = f"/{BUCKET}/r0/d0/r0-f0"
    assert sorted(seen) == sorted([
        f"POST {key}?uploads= HTTP/1.1",
        f"PUT {key}?partNumber=1&uploadId=U1 HTTP/1.1",
        f"PUT {key}?partNumber=2&uploadId=U1 HTTP/1.1",
        f"DELETE {key}?uploadId=U1 HTTP/1.1",
    ])  # fmt: skip
    assert seen[-1].startswith("DELETE ")
