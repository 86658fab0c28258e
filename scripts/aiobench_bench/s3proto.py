"""The s3 section's floor (issue #26): a bare ``asyncio.Protocol`` + SigV4 loop on uvloop.

``python3 -m aiobench_bench.s3proto MODE --endpoint http://HOST:PORT --bucket B --threads T
--iodepth D --files K --size S`` (credentials in S3REF_ACCESS_KEY / S3REF_SECRET_KEY),
prints one JSON line like aiobench_bench.s3ref: requests, objects, bytes, the phase's wall
time and process CPU time. Modes ``put`` and ``get`` of whole objects (one request each,
Content-Length bodies), the objects aiobench's ``r<rank>/d0/r<rank>-f<j>``, T x D
connections each doing its share of the keys one request after the other (HTTP/1.1
keep-alive, path style, unsigned payload). No HTTP library: the request is one bytes
object written to the transport, the response's status line and Content-Length are found
by hand and its body is copied into a preallocated buffer. Plain http only: this is the
reference, not a client. A failed request ends the run with one line on stderr, exit 1.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import sys
import time
from typing import cast
from urllib.parse import urlsplit

if importlib.util.find_spec("aiobench") is None:  # the checkout's aiobench as the fallback
    sys.path.append(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))))

import uvloop

from aiobench.engines.s3.sigv4 import Signer
from aiobench_bench.s3ref import RequestFailed, deal, object_keys

MODES = ("put", "get")


class Connection(asyncio.Protocol):
    """One keep-alive connection: ``request`` sends a request and waits for its whole
    response; the body (Content-Length) is copied into ``into``."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.head = bytearray()
        self.into = memoryview(bytearray())
        self.want = -1  # body bytes still to come; -1 while the head is read
        self.got = 0
        self.status = 0
        self.done: asyncio.Future[int] | None = None
        self.lost: Exception | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = exc or ConnectionResetError("connection closed by the server")
        if self.done is not None and not self.done.done():
            self.done.set_exception(self.lost)

    def data_received(self, data: bytes) -> None:
        if self.want < 0:
            self.head += data
            end = self.head.find(b"\r\n\r\n")
            if end < 0:
                return
            lines = bytes(self.head[:end]).split(b"\r\n")
            rest = bytes(self.head[end + 4 :])
            self.head.clear()
            self.status = int(lines[0].split(b" ", 2)[1])
            length = 0
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                low = name.strip().lower()
                if low == b"content-length":
                    length = int(value)
                elif low == b"transfer-encoding":
                    self.fail(RequestFailed("chunked responses are not read by this loop"))
                    return
            self.want = length
            self.got = 0
            data = rest
        if data:
            n = min(len(data), self.want, len(self.into) - self.got)
            if n > 0:
                self.into[self.got : self.got + n] = data[:n]
            self.got += n
            self.want -= len(data)
        if self.want <= 0:
            self.want = -1
            if self.done is not None and not self.done.done():
                self.done.set_result(self.status)

    def fail(self, exc: Exception) -> None:
        if self.done is not None and not self.done.done():
            self.done.set_exception(exc)

    async def request(self, head: bytes, body: memoryview | None, into: memoryview) -> int:
        if self.lost is not None:
            raise self.lost
        assert self.transport is not None
        self.into = into
        self.done = asyncio.get_running_loop().create_future()
        self.transport.write(head)
        if body is not None:
            self.transport.write(body)
        return await self.done


async def run(args: argparse.Namespace, access_key: str, secret_key: str) -> dict[str, float]:
    url = urlsplit(args.endpoint)
    if url.scheme != "http" or url.hostname is None:
        raise RequestFailed(f"--endpoint {args.endpoint}: only http://HOST:PORT")
    host = url.netloc
    signer = Signer(access_key, secret_key, args.region)
    loop = asyncio.get_running_loop()
    parts = deal(object_keys(args.threads, args.files), args.iodepth)
    conns = [
        (await loop.create_connection(Connection, url.hostname, url.port or 80))[1] for _ in parts
    ]
    payload = os.urandom(args.size)
    counts = {"requests": 0, "objects": 0, "bytes": 0}
    second, when = -1, ""

    def stamp() -> str:
        nonlocal second, when
        now = int(time.time())
        if now != second:
            second, when = now, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
        return when

    put = args.mode == "put"
    method = "PUT" if put else "GET"

    async def worker(conn: Connection, keys: list[str]) -> None:
        buffer = memoryview(bytearray(payload))
        sink = memoryview(bytearray(4096))  # a PUT's reply body (empty or an error)
        for key in keys:
            path = f"/{args.bucket}/{key}"
            extra = {"Content-Length": str(args.size)} if put else {}
            signed = signer.sign_s3(method, path, "", host, extra, stamp())
            head = f"{method} {path} HTTP/1.1\r\n" + "".join(
                f"{k}: {v}\r\n" for k, v in signed.items()
            )
            status = await conn.request(
                (head + "\r\n").encode(), buffer if put else None, sink if put else buffer
            )
            if status != 200:
                raise RequestFailed(f"{method} {args.bucket}/{key}: HTTP {status}")
            counts["requests"] += 1
            counts["objects"] += 1
            counts["bytes"] += args.size if put else min(conn.got, args.size)

    cpu0, wall0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker(c, p) for c, p in zip(conns, parts, strict=True)))
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    for conn in conns:
        assert conn.transport is not None
        conn.transport.close()
    if not put and counts["bytes"] != args.size * args.threads * args.files:
        raise RequestFailed(f"GET: {counts['bytes']} bytes read, not all of the objects")
    return {**counts, "elapsed_s": wall, "phase_cpu_s": cpu}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="s3proto", description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=MODES)
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--bucket", required=True)
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--iodepth", type=int, default=8)
    parser.add_argument("--files", type=int, default=1, help="objects per rank")
    parser.add_argument("--size", type=int, default=4096, help="object size, bytes")
    args = parser.parse_args(argv)
    if min(args.threads, args.iodepth, args.files, args.size) < 1:
        parser.error("--threads, --iodepth, --files and --size must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    access_key = os.environ.get("S3REF_ACCESS_KEY", "")
    secret_key = os.environ.get("S3REF_SECRET_KEY", "")
    if not access_key or not secret_key:
        print("s3proto: S3REF_ACCESS_KEY and S3REF_SECRET_KEY must be set", file=sys.stderr)
        return 2
    try:
        figures = uvloop.run(run(args, access_key, secret_key))
    except (TimeoutError, RequestFailed, OSError, ValueError) as exc:
        print(
            f"s3proto: {args.mode} failed: {' '.join(str(exc).split()) or type(exc).__name__}",
            file=sys.stderr,
        )
        return 1
    out = {"mode": args.mode, **figures, "python": sys.version.split()[0], "loop": "uvloop"}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
