"""The S3 engine's native route (issue #26, aiobench/engines/s3/native.py and _s3native.c):
small-object PUTs and GETs made by a C loop, with the event loop's Python path as its
reference. The real CLI, against SeaweedFS and against fake endpoints that fail on cue;
each run is made twice, the second time with the extension hidden from the process (its
import fails, as in an install without a compiler), and the two must agree: the same
counts, the same objects, the same error line. That the native route was taken is seen
with strace: its requests go out by sendmsg(2), the event loop's by write/writev/sendto.
"""

from __future__ import annotations

import http.server
import json
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any, ClassVar

import pytest

from aiobench.engines.s3 import native
from tests.engines.s3.fakes import serving
from tests.s3server import S3Server, s3_server  # noqa: F401  (a fixture)

pytestmark = [
    pytest.mark.slow,  # real CLI runs
    pytest.mark.skipif(not native.available(), reason="the extension _s3native is not built"),
]

# aiobench run as ``python -c``, the extension's import made to fail first.
_WITHOUT_NATIVE = """
import runpy, sys
class _Hide:
    def find_spec(self, name, path=None, target=None):
        if name == "aiobench.engines.s3._s3native":
            raise ImportError("hidden by the test")
        return None
sys.meta_path.insert(0, _Hide())
runpy.run_module("aiobench", run_name="__main__", alter_sys=True)
"""
BUCKET = "native-bucket"
OBJECT = 4096


def aiobench(
    *args: str, python_path: bool = False, strace: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """The CLI in a process of its own (``python_path``: with the extension hidden; with
    ``strace``: the sendmsg calls of all its threads written there)."""
    argv = [sys.executable, "-c", _WITHOUT_NATIVE] if python_path else [sys.executable]
    if not python_path:
        argv += ["-m", "aiobench"]
    if strace is not None:
        calls = "trace=sendmsg,write,writev,sendto"
        argv = ["strace", "-f", "-qq", "-e", calls, "-s", "48", "-o", str(strace), *argv]
    return subprocess.run([*argv, *args], capture_output=True, text=True, timeout=120)


def s3_args(server: S3Server) -> list[str]:
    return [
        *("--s3endpoints", server.endpoint, "--s3key", server.access_key),
        *("--s3secret", server.secret_key, "--nolive"),
    ]


def counts(doc: dict[str, Any]) -> dict[str, tuple[int, int, int]]:
    return {
        p["phase"]: (p["last_done"]["entries"], p["last_done"]["ops"], p["last_done"]["bytes"])
        for p in doc["phases"]
    }


def sent_by_sendmsg(trace: Path, method: str) -> int:
    """Object requests (``/BUCKET/r...``) of ``method`` the process sent by sendmsg (the
    native route's way)."""
    text = trace.read_text()
    return len(re.findall(rf'sendmsg\(\d+, \{{msg_name=NULL.*?"{method} /[^/"]+/r', text))


def sent_otherwise(trace: Path, method: str) -> int:
    """Object requests of ``method`` the process sent by write, writev or sendto (the
    event loop's transports)."""
    text = trace.read_text()
    return len(re.findall(rf'(?:write|writev|sendto)\(\d+, .*?"{method} /[^/"]+/r', text))


@pytest.mark.skipif(shutil.which("strace") is None, reason="no strace")
def test_native_route_is_taken_and_the_python_path_agrees(
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    layout = ["-t", "2", "--iodepth", "4", "-n", "1", "-N", "12", "-s", "4k", "-b", "4k"]
    docs = {}
    for route in ("native", "python"):
        bucket = f"aiobench-{uuid.uuid4().hex[:12]}"
        out = tmp_path / f"{route}.json"
        trace = tmp_path / f"{route}.strace"
        proc = aiobench(
            "-d", "-w", "-r", *layout, *s3_args(s3_server), "--json", str(out), f"s3://{bucket}",
            python_path=route == "python", strace=trace,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        docs[route] = json.loads(out.read_text())
        # Every PUT and GET of the native run went out from the C loop (none handed back),
        # every one of the other run from the event loop.
        native, python = (24, 0) if route == "native" else (0, 24)
        assert (sent_by_sendmsg(trace, "PUT"), sent_by_sendmsg(trace, "GET")) == (native, native)
        assert (sent_otherwise(trace, "PUT"), sent_otherwise(trace, "GET")) == (python, python)
        # --rand GETs of single blocks of the same objects (read as 1 KiB blocks), and
        # the objects removed.
        rand = ["-t", "2", "--iodepth", "4", "-n", "1", "-N", "12", "-s", "4k", "-b", "1k"]
        out = tmp_path / f"{route}-rand.json"
        proc = aiobench(
            "-r", "--rand", "-F", "-D", *rand, *s3_args(s3_server), "--json", str(out),
            f"s3://{bucket}", python_path=route == "python", strace=trace,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        docs[f"{route}-rand"] = json.loads(out.read_text())
        rand_gets = counts(docs[f"{route}-rand"])["READ"][1]
        native, python = (rand_gets, 0) if route == "native" else (0, rand_gets)
        assert (sent_by_sendmsg(trace, "GET"), sent_otherwise(trace, "GET")) == (native, python)
    assert counts(docs["native"]) == counts(docs["python"])
    assert counts(docs["native"])["WRITE"] == (24, 24, 24 * OBJECT)
    assert counts(docs["native"])["READ"] == (24, 24, 24 * OBJECT)
    assert counts(docs["native-rand"]) == counts(docs["python-rand"])
    # (each object's 4 blocks, in random order: 4 GETs of 1 KiB each)
    assert counts(docs["native-rand"])["READ"][1:] == (96, 96 * 1024)
    # Each request timed by the C loop: latencies and times to first byte recorded.
    read = next(p for p in docs["native"]["phases"] if p["phase"] == "READ")
    assert read["latency"]["io"]["count"] == 24, read["latency"]
    assert read["latency"]["ttfb"]["count"] == 24, read["latency"]


class _Fake(http.server.BaseHTTPRequestHandler):
    """Answers every request as :meth:`answer` says, and counts the GETs and PUTs seen."""

    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[str]] = []

    def log_message(self, format: str, *args: object) -> None:
        pass

    def answer(self) -> None:
        raise NotImplementedError

    def do_GET(self) -> None:
        type(self).seen.append("GET")
        self.answer()

    def do_PUT(self) -> None:
        type(self).seen.append("PUT")
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.answer()


class _Error500(_Fake):
    def answer(self) -> None:
        body = b"<Error><Code>InternalError</Code><Message>the disk is on fire</Message></Error>"
        self.send_response(500)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _CutMidBody(_Fake):
    def answer(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(OBJECT))
        self.end_headers()
        self.wfile.write(b"x" * 100)
        self.wfile.flush()
        self.close_connection = True


class _Silent(_Fake):
    def answer(self) -> None:
        self.rfile.read(1)  # (until the client goes)
        self.close_connection = True


class _Chunked(_Fake):
    def answer(self) -> None:
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (OBJECT, b"y" * OBJECT))


def _fake_run(
    handler: type[_Fake], flag: str, tmp_path: Path, python_path: bool, objects: int = 1
) -> Any:
    handler.seen = []
    out = tmp_path / "fake.json"
    out.unlink(missing_ok=True)
    with serving(handler) as endpoint:
        proc = aiobench(
            flag, "-t", "1", "-n", "1", "-N", str(objects), "-s", "4k", "--s3timeout", "2",
            "--s3endpoints", endpoint, "--s3key", "AKIDEXAMPLE", "--s3secret", "SECRETEXAMPLE",
            "--nolive", "--json", str(out), f"s3://{BUCKET}", python_path=python_path,
        )  # fmt: skip
    errors = [line for line in proc.stderr.splitlines() if line.startswith("Error:")]
    doc = json.loads(out.read_text()) if out.exists() else None
    endpoint_free = [line.replace(endpoint, "ENDPOINT") for line in errors]
    return proc.returncode, endpoint_free, doc, list(handler.seen)


@pytest.mark.parametrize(
    ("handler", "flag", "said"),
    [
        (_Error500, "-w", "HTTP 500 InternalError (the disk is on fire)"),
        (_Error500, "-r", "HTTP 500 InternalError (the disk is on fire)"),
        (_CutMidBody, "-r", "ECONNRESET (the connection broke in the response body after 100"),
        (_Silent, "-r", "ETIMEDOUT (GetObject: no answer within --s3timeout (2 s))"),
        (_Silent, "-w", "ETIMEDOUT (PutObject stalled after 4096 bytes"),
    ],
    ids=["put-500", "get-500", "cut-mid-body", "get-stall", "put-stall"],
)
def test_a_failure_reads_as_on_the_python_path(
    tmp_path: Path, handler: type[_Fake], flag: str, said: str
) -> None:
    code, errors, _, _ = _fake_run(handler, flag, tmp_path, python_path=False)
    assert code == 1
    assert len(errors) == 1 and said in errors[0], errors
    assert errors[0].startswith(f"Error: s3://{BUCKET}/r0/d0/r0-f0 at ENDPOINT: "), errors
    assert _fake_run(handler, flag, tmp_path, python_path=True)[:2] == (code, errors)


def test_a_chunked_answer_is_made_again_on_the_python_path(tmp_path: Path) -> None:
    code, errors, doc, seen = _fake_run(_Chunked, "-r", tmp_path, python_path=False, objects=3)
    assert (code, errors) == (0, [])
    assert counts(doc)["READ"] == (3, 3, 3 * OBJECT)
    # The C loop handed each GET back on its chunked answer; the Python path made it again,
    # and the run went on natively with the next object.
    assert seen == ["GET"] * 6
    code, errors, doc, seen = _fake_run(_Chunked, "-r", tmp_path, python_path=True, objects=3)
    assert (code, errors, counts(doc)["READ"], seen) == (0, [], (3, 3, 3 * OBJECT), ["GET"] * 3)


class _Closing(_Fake):
    def answer(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True


def test_a_connection_the_server_closes_is_replaced(tmp_path: Path) -> None:
    # Every answer says "Connection: close": each PUT goes on a new connection.
    for python_path in (False, True):
        code, errors, doc, seen = _fake_run(_Closing, "-w", tmp_path, python_path, objects=5)
        assert (code, errors, seen) == (0, [], ["PUT"] * 5)
        assert counts(doc)["WRITE"] == (5, 5, 5 * OBJECT)
