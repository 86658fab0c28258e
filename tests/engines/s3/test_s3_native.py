"""The S3 engine's native route (issue #26, aiobench/engines/s3/native.py and _s3native.c):
small-object PUTs and GETs, and multipart uploads' parts, made by a C loop, with the event
loop's Python path as its reference. The real CLI, against SeaweedFS and against fake
endpoints that fail on cue; each run is made twice, the second time with the extension
hidden from the process (its import fails, as in an install without a compiler), and the
two must agree: the same counts, the same objects, the same error line. That the native
route was taken is seen with strace: its requests go out by sendmsg(2), the event loop's
by write/writev/sendto.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any, ClassVar
from xml.sax.saxutils import escape

import pytest

from aiobench.engines.s3 import native
from aiobench.engines.s3.client import S3Client
from aiobench.engines.s3.layout import Credentials, parse_endpoint
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


def routed_run(
    route: str, server: S3Server, out: Path, trace: Path, url: str, *args: str
) -> dict[str, Any]:
    """``aiobench ARGS URL`` against ``server`` on ``route`` ("python": the extension
    hidden), its sendmsg calls traced to ``trace``: its JSON result, written to ``out``
    (the run having ended well)."""
    proc = aiobench(
        *args, *s3_args(server), "--json", str(out), url,
        python_path=route == "python", strace=trace,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(out.read_text())
    return result


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
        docs[route] = routed_run(
            route, s3_server, out, trace, f"s3://{bucket}", "-d", "-w", "-r", *layout
        )
        # Every PUT and GET of the native run went out from the C loop (none handed back),
        # every one of the other run from the event loop.
        native, python = (24, 0) if route == "native" else (0, 24)
        assert (sent_by_sendmsg(trace, "PUT"), sent_by_sendmsg(trace, "GET")) == (native, native)
        assert (sent_otherwise(trace, "PUT"), sent_otherwise(trace, "GET")) == (python, python)
        # --rand GETs of single blocks of the same objects (read as 1 KiB blocks), and
        # the objects removed.
        rand = ["-t", "2", "--iodepth", "4", "-n", "1", "-N", "12", "-s", "4k", "-b", "1k"]
        out = tmp_path / f"{route}-rand.json"
        docs[f"{route}-rand"] = routed_run(
            route, s3_server, out, trace, f"s3://{bucket}", "-r", "--rand", "-F", "-D", *rand
        )
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


# -- multipart uploads: their parts on the native route ----------------------------------

# SeaweedFS takes parts of 5 MiB at least (but the last). Objects of 5 parts, more than a
# slot's 4 write windows at --iodepth 2: two C calls each.
MIB = 1 << 20
PART = 5 * MIB
SIZE = 4 * PART + MIB
MULTIPART = ["-n", "1", "-N", "2", "-s", "21m", "-b", "5m", "--seed", "7"]


async def _objects(server: S3Server, bucket: str, keys: list[str]) -> dict[str, bytes]:
    """The objects' bytes, read whole (up to 1 MiB more than an object's size: a longer
    one shows)."""
    access = Credentials(server.access_key, server.secret_key)
    got = {}
    async with S3Client(parse_endpoint(server.endpoint), access, server.region) as client:
        for key in keys:
            into = memoryview(bytearray(SIZE + MIB))
            size, _ = await client.get_range(bucket, key, 0, into)
            got[key] = bytes(into[:size])
    return got


@pytest.mark.skipif(shutil.which("strace") is None, reason="no strace")
def test_multipart_parts_take_the_native_route_and_write_what_the_python_path_writes(
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    layout = ["-t", "2", "--iodepth", "2", *MULTIPART]
    keys = [f"r{r}/d0/r{r}-f{f}" for r in range(2) for f in range(2)]
    docs, objects = {}, {}
    for route in ("native", "python"):
        bucket = f"aiobench-{uuid.uuid4().hex[:12]}"
        out = tmp_path / f"{route}.json"
        trace = tmp_path / f"{route}.strace"
        url = f"s3://{bucket}"
        docs[route] = routed_run(route, s3_server, out, trace, url, "-d", "-w", *layout)
        # Each object's 5 parts went out from the C loop, none from the event loop (there:
        # the initiations and completions, POSTs); the other run's all from the event loop.
        native, python = (20, 0) if route == "native" else (0, 20)
        assert (sent_by_sendmsg(trace, "PUT"), sent_otherwise(trace, "PUT")) == (native, python)
        assert sent_by_sendmsg(trace, "POST") == 0
        assert sent_otherwise(trace, "POST") == 8  # (initiate and complete, each object)
        objects[route] = asyncio.run(_objects(s3_server, bucket, keys))
    # The same objects, byte for byte (the same --seed: the same write windows, in the same
    # order), whole (completed from the right ETags), each part of its own bytes.
    assert objects["native"] == objects["python"]
    for data in objects["native"].values():
        assert len(data) == SIZE
        assert len({data[at : at + PART] for at in range(0, SIZE, PART)}) == 5
    assert counts(docs["native"]) == counts(docs["python"])
    assert counts(docs["native"])["WRITE"] == (4, 20, 4 * SIZE)
    # Recorded as on the Python path: an entry per object, an I/O per part, no TTFB.
    latency = {
        route: next(p for p in doc["phases"] if p["phase"] == "WRITE")["latency"]
        for route, doc in docs.items()
    }
    assert latency["native"]["io"]["count"] == latency["python"]["io"]["count"] == 20
    assert latency["native"]["entries"]["count"] == latency["python"]["entries"]["count"] == 4
    assert "ttfb" not in latency["native"] and "ttfb" not in latency["python"]


class _Uploads(http.server.BaseHTTPRequestHandler):
    """A multipart endpoint: initiations, parts (answered as :meth:`part` says) and
    completions, which succeed only with the ETags the parts were answered with (S3's
    InvalidPart otherwise); aborts. Records what it saw."""

    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[str]] = []
    etag = '"0123456789abcdef0123456789abcdef"'

    def log_message(self, format: str, *args: object) -> None:
        pass

    def reply(self, status: int, body: bytes = b"", headers: tuple[str, ...] = ()) -> None:
        self.send_response(status)
        for line in headers:
            name, _, value = line.partition(":")
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path.endswith("?uploads") or "?uploads=" in self.path:
            type(self).seen.append("initiate")
            self.reply(200, b"<InitiateMultipartUploadResult><UploadId>up1</UploadId>"
                       b"</InitiateMultipartUploadResult>")  # fmt: skip
            return
        type(self).seen.append("complete")
        etags = re.findall(rb"<ETag>(.*?)</ETag>", body)
        if etags and all(e == escape(self.etag).encode() for e in etags):
            self.reply(200, b"<CompleteMultipartUploadResult/>")
        else:
            self.reply(400, b"<Error><Code>InvalidPart</Code><Message>%s</Message></Error>"
                       % b",".join(etags))  # fmt: skip

    def do_PUT(self) -> None:
        type(self).seen.append("PUT")
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.part()

    def do_DELETE(self) -> None:
        type(self).seen.append("abort")
        self.reply(204)

    def part(self) -> None:
        # (an ETag as a server may send it: its name in lower case, a quoted value with a
        # comma and a space in it, blanks around it)
        self.reply(200, headers=(f"etag: \t{self.etag} ",))


class _OddEtag(_Uploads):
    etag = '"ab, cd"'


class _LongEtag(_Uploads):
    etag = '"' + "e" * 300 + '"'  # (longer than the C loop's slot: handed back)


class _PartError500(_Uploads):
    def part(self) -> None:
        body = b"<Error><Code>InternalError</Code><Message>the disk is on fire</Message></Error>"
        self.reply(500, body)


class _PartNoEtag(_Uploads):
    def part(self) -> None:
        self.reply(200, headers=("x-amz-etag-elsewhere: 1",))


class _PartSilent(_Uploads):
    def part(self) -> None:
        self.rfile.read(1)  # (until the client goes)
        self.close_connection = True


class _Complete404(_Uploads):
    def do_POST(self) -> None:
        if "?uploads" in self.path:
            super().do_POST()
            return
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        type(self).seen.append("complete")
        self.reply(404, b"<Error><Code>NoSuchUpload</Code></Error>")


def _uploads_run(
    handler: type[_Uploads], tmp_path: Path, python_path: bool, *extra: str
) -> tuple[int, list[str], Any, list[str], int]:
    """A multipart upload of one 8 KiB object in 4 KiB parts (-t 1, --iodepth 1) to the
    fake: (exit code, error lines, JSON, what the fake saw, part PUTs the C loop sent)."""
    handler.seen = []
    out = tmp_path / "fake.json"
    out.unlink(missing_ok=True)
    trace = tmp_path / "fake.strace"
    with serving(handler) as endpoint:
        proc = aiobench(
            "-w", "-t", "1", "-n", "1", "-N", "1", "-s", "8k", "-b", "4k", "--s3timeout", "2",
            "--s3endpoints", endpoint, "--s3key", "AKIDEXAMPLE", "--s3secret", "SECRETEXAMPLE",
            *extra, "--nolive", "--json", str(out), f"s3://{BUCKET}",
            python_path=python_path, strace=trace,
        )  # fmt: skip
    errors = [line for line in proc.stderr.splitlines() if line.startswith("Error:")]
    doc = json.loads(out.read_text()) if out.exists() else None
    endpoint_free = [line.replace(endpoint, "ENDPOINT") for line in errors]
    return proc.returncode, endpoint_free, doc, list(handler.seen), sent_by_sendmsg(trace, "PUT")


@pytest.mark.skipif(shutil.which("strace") is None, reason="no strace")
@pytest.mark.parametrize(
    ("handler", "puts"),
    [(_Uploads, 2), (_OddEtag, 2), (_LongEtag, 4)],
    ids=["etag", "quoted-comma-etag", "long-etag"],
)
def test_a_parts_etag_is_read_as_on_the_python_path(
    tmp_path: Path, handler: type[_Uploads], puts: int
) -> None:
    # The completion names each part's ETag as the part's answer gave it, else it fails.
    code, errors, doc, seen, native = _uploads_run(handler, tmp_path, python_path=False)
    assert (code, errors) == (0, [])
    # Each part by the C loop; one whose ETag it cannot hold made again on the Python path.
    assert seen == ["initiate", *["PUT"] * puts, "complete"]
    assert native == 2
    assert counts(doc)["WRITE"] == (1, 2, 8192)
    code, errors, doc, seen, native = _uploads_run(handler, tmp_path, python_path=True)
    assert (code, errors, native) == (0, [], 0)
    assert (seen, counts(doc)["WRITE"]) == (["initiate", "PUT", "PUT", "complete"], (1, 2, 8192))


@pytest.mark.skipif(shutil.which("strace") is None, reason="no strace")
@pytest.mark.parametrize(
    ("handler", "said"),
    [
        (_PartError500, "HTTP 500 InternalError (the disk is on fire)"),
        (_PartNoEtag, "HTTP 200 (no ETag for part 1)"),
        (_PartSilent, "ETIMEDOUT (UploadPart stalled after 4096 bytes"),
    ],
    ids=["part-500", "part-without-etag", "part-stall"],
)
def test_a_part_failure_reads_as_on_the_python_path(
    tmp_path: Path, handler: type[_Uploads], said: str
) -> None:
    code, errors, _, seen, native = _uploads_run(handler, tmp_path, python_path=False)
    assert code == 1 and native == 1
    assert len(errors) == 1 and said in errors[0], errors
    assert errors[0].startswith(f"Error: s3://{BUCKET}/r0/d0/r0-f0 at ENDPOINT: "), errors
    assert seen == ["initiate", "PUT", "abort"]  # (the upload aborted, as there)
    python = _uploads_run(handler, tmp_path, python_path=True)
    assert (python[0], python[1], python[4]) == (code, errors, 0)
    assert python[3] == seen  # (no part goes out once one has failed)


@pytest.mark.skipif(shutil.which("strace") is None, reason="no strace")
@pytest.mark.parametrize("option", ["--s3nompucompl", "--s3multiignore404", "--s3mpusizevar"])
def test_the_upload_options_apply_as_on_the_python_path(tmp_path: Path, option: str) -> None:
    extra = [option, "1000"] if option == "--s3mpusizevar" else [option]
    # (--s3multiignore404: a completion answered 404 is done)
    handler = _Uploads if option != "--s3multiignore404" else _Complete404
    runs = [_uploads_run(handler, tmp_path, python_path, *extra) for python_path in (False, True)]
    (code, errors, doc, seen, native), python = runs
    assert (code, errors, native, python[4]) == (0, [], 2, 0)
    assert (python[0], python[1], python[3]) == (code, errors, seen)
    assert counts(doc)["WRITE"] == counts(python[2])["WRITE"] == (1, 2, 8192)
    completed = ["complete"] if option != "--s3nompucompl" else []
    assert seen == ["initiate", "PUT", "PUT", *completed]


@pytest.mark.skipif(shutil.which("strace") is None, reason="no strace")
def test_parts_cut_off_at_the_time_limit_abort_the_upload(tmp_path: Path) -> None:
    for python_path in (False, True):
        code, errors, doc, seen, native = _uploads_run(
            _PartSilent, tmp_path, python_path, "--timelimit", "1", "--s3timeout", "30"
        )
        # No error: the upload was cut off (no entry, no I/O done) and aborted.
        assert (code, errors, native) == (0, [], 0 if python_path else 1)
        assert seen == ["initiate", "PUT", "abort"]
        assert counts(doc)["WRITE"][:2] == (0, 0)


def test_parts_get_a_send_buffer_only_where_it_is_larger_than_autotuning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def sysctls(granted: int, tuned: int) -> None:
        values = {"wmem_max": [granted], "tcp_wmem": [4096, 16384, tuned]}
        monkeypatch.setattr(native, "_sysctl", lambda path: values[path.rpartition("/")[2]])

    sysctls(4 << 20, 4 << 20)  # (the kernel doubles what it grants: 8 MiB)
    assert native.send_buffer(8 << 20) == 4 << 20
    assert native.send_buffer(1 << 20) == 0  # (2 MiB: autotuning goes further)
    sysctls(212992, 4 << 20)  # (a usual wmem_max: less than autotuning reaches)
    assert native.send_buffer(8 << 20) == 0
    monkeypatch.setattr(native, "_sysctl", lambda path: [])  # (no /proc)
    assert native.send_buffer(8 << 20) == 0
