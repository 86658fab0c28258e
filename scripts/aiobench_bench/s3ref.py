"""The s3 section's reference: a bare aiohttp + SigV4 loop, no aiobench harness.

``python3 -m aiobench_bench.s3ref MODE --endpoint URL --bucket B --threads T --iodepth D
--files K --size S --block B`` (credentials in S3REF_ACCESS_KEY / S3REF_SECRET_KEY, never
on the command line), on uvloop, prints one JSON line: requests, objects, bytes and the
phase's wall time (perf_counter around the requests only) and process CPU time. The
objects are aiobench's: ``r<rank>/d0/r<rank>-f<j>``, K per rank, T ranks.

Modes: ``put`` and ``get`` are measured; ``mkbucket``, ``delete`` (the objects) and
``rmbucket`` prepare and clean up. Objects of one block (S == B): T x D coroutines, each
doing whole objects (one request each), the keys dealt out among them. Larger objects: T
coroutines, each doing its objects one after the other, PUT as a multipart upload of
B-sized parts and GET as B-sized ranged GETs, up to D of them in flight per coroutine
(as aiobench's --iodepth). Signing: aiobench.engines.s3.sigv4.Signer, unsigned payload. A failed
request ends the run with one line on stderr and exit 1.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Awaitable, Callable

if importlib.util.find_spec("aiobench") is None:  # the checkout's aiobench as the fallback
    sys.path.append(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))))

import aiohttp
import uvloop
from multidict import CIMultiDictProxy
from yarl import URL

from aiobench.engines.s3.sigv4 import Signer, canonical_query

MODES = ("mkbucket", "put", "get", "delete", "rmbucket")


class RequestFailed(Exception):
    pass


def object_keys(threads: int, files: int) -> list[list[str]]:
    """Each rank's keys, in aiobench's dir-mode names (-n 1)."""
    return [[f"r{r}/d0/r{r}-f{j}" for j in range(files)] for r in range(threads)]


def deal(keys: list[list[str]], iodepth: int) -> list[list[str]]:
    """Each rank's keys dealt round-robin to its ``iodepth`` coroutines (empty lists
    dropped)."""
    return [part for rank in keys for c in range(iodepth) if (part := rank[c::iodepth])]


def ranges(size: int, block: int) -> list[tuple[int, int]]:
    """(offset, length) of each block of an object of ``size`` bytes."""
    return [(off, min(block, size - off)) for off in range(0, size, block)]


class Client:
    """Signed requests to one bucket, path style."""

    def __init__(
        self, session: aiohttp.ClientSession, endpoint: str, bucket: str, signer: Signer
    ) -> None:
        self.session = session
        url = URL(endpoint)
        self.origin = f"{url.scheme}://{url.raw_authority}"
        self.host = url.raw_authority
        self.bucket = bucket
        self.signer = signer
        self._second = -1
        self._when = ""

    def when(self) -> str:
        now = int(time.time())
        if now != self._second:
            self._second = now
            self._when = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
        return self._when

    def prepare(
        self, method: str, key: str, query: str = "", headers: dict[str, str] | None = None
    ) -> tuple[URL, dict[str, str]]:
        path = f"/{self.bucket}/{key}" if key else f"/{self.bucket}"
        signed = self.signer.sign_s3(method, path, query, self.host, headers or {}, self.when())
        target = f"{self.origin}{path}?{query}" if query else f"{self.origin}{path}"
        return URL(target, encoded=True), signed

    async def call(
        self,
        method: str,
        key: str,
        query: str = "",
        body: bytes | memoryview = b"",
        ok: tuple[int, ...] = (200,),
        headers: dict[str, str] | None = None,
    ) -> tuple[CIMultiDictProxy[str], bytes]:
        sent = dict(headers or {})
        if method in ("PUT", "POST"):
            sent["Content-Length"] = str(len(body))
        url, signed = self.prepare(method, key, query, sent)
        async with self.session.request(
            method, url, headers=signed, data=body if method in ("PUT", "POST") else None
        ) as resp:
            data = await resp.read()
            if resp.status not in ok:
                raise RequestFailed(
                    f"{method} {self.bucket}/{key}: HTTP {resp.status} {data[:200]!r}"
                )
            return resp.headers, data

    async def get_into(self, key: str, offset: int, into: memoryview) -> int:
        """A ranged GET of ``len(into)`` bytes from ``offset``, copied into ``into``; bytes
        read."""
        headers = {"Range": f"bytes={offset}-{offset + len(into) - 1}"}
        url, signed = self.prepare("GET", key, "", headers)
        got = 0
        async with self.session.get(url, headers=signed) as resp:
            if resp.status not in (200, 206):
                data = await resp.read()
                raise RequestFailed(f"GET {self.bucket}/{key}: HTTP {resp.status} {data[:200]!r}")
            while chunk := await resp.content.readany():
                into[got : got + len(chunk)] = chunk
                got += len(chunk)
        return got


async def put_multipart(client: Client, key: str, body: memoryview, block: int, depth: int) -> int:
    """A multipart upload of ``body`` in ``block`` parts, ``depth`` in flight; requests."""
    _, data = await client.call("POST", key, canonical_query([("uploads", "")]))
    upload = next(
        (e.text or "" for e in ET.fromstring(data).iter() if e.tag.endswith("UploadId")), ""
    )
    gate = asyncio.Semaphore(depth)

    async def part(number: int, offset: int, length: int) -> str:
        async with gate:
            query = canonical_query([("partNumber", str(number)), ("uploadId", upload)])
            headers, _ = await client.call("PUT", key, query, body[offset : offset + length])
            return headers.get("ETag", "")

    parts = ranges(len(body), block)
    etags = await asyncio.gather(*(part(n, o, ln) for n, (o, ln) in enumerate(parts, start=1)))
    xml = "".join(
        f"<Part><PartNumber>{n}</PartNumber><ETag>{tag}</ETag></Part>"
        for n, tag in enumerate(etags, start=1)
    )
    done = f"<CompleteMultipartUpload>{xml}</CompleteMultipartUpload>".encode()
    await client.call("POST", key, canonical_query([("uploadId", upload)]), done)
    return len(parts) + 2


async def get_ranged(client: Client, key: str, into: memoryview, block: int, depth: int) -> int:
    """The object in ``block``-sized ranged GETs, ``depth`` in flight; bytes read."""
    gate = asyncio.Semaphore(depth)

    async def one(offset: int, length: int) -> int:
        async with gate:
            return await client.get_into(key, offset, into[offset : offset + length])

    return sum(await asyncio.gather(*(one(o, ln) for o, ln in ranges(len(into), block))))


async def run(args: argparse.Namespace, access_key: str, secret_key: str) -> dict[str, float]:
    signer = Signer(access_key, secret_key, args.region)
    keys = object_keys(args.threads, args.files)
    small = args.size <= args.block
    slots = args.threads * args.iodepth
    connector = aiohttp.TCPConnector(limit=slots, limit_per_host=0)
    async with aiohttp.ClientSession(
        connector=connector,
        auto_decompress=False,
        skip_auto_headers=("User-Agent", "Accept-Encoding"),
        cookie_jar=aiohttp.DummyCookieJar(),
    ) as session:
        client = Client(session, args.endpoint, args.bucket, signer)
        if args.mode == "mkbucket":
            await client.call("PUT", "", ok=(200, 409))
            return {"requests": 1}
        if args.mode == "rmbucket":
            await client.call("DELETE", "", ok=(200, 204))
            return {"requests": 1}
        counts = {"requests": 0, "objects": 0, "bytes": 0}
        # One buffer per coroutine: random bytes to PUT, room to GET into.
        payload = os.urandom(args.size)

        def worker(
            job: Callable[[str, memoryview], Awaitable[tuple[int, int]]],
        ) -> Callable[[list[str]], Awaitable[None]]:
            async def loop(part: list[str]) -> None:
                buffer = memoryview(bytearray(payload))
                for key in part:
                    requests, moved = await job(key, buffer)
                    counts["requests"] += requests
                    counts["objects"] += 1
                    counts["bytes"] += moved

            return loop

        async def put(key: str, buffer: memoryview) -> tuple[int, int]:
            if small:
                await client.call("PUT", key, body=buffer)
                return 1, len(buffer)
            return await put_multipart(client, key, buffer, args.block, args.iodepth), len(buffer)

        async def get(key: str, buffer: memoryview) -> tuple[int, int]:
            if small:
                got = await client.get_into(key, 0, buffer)
                return 1, got
            got = await get_ranged(client, key, buffer, args.block, args.iodepth)
            return len(ranges(len(buffer), args.block)), got

        async def delete(key: str, buffer: memoryview) -> tuple[int, int]:
            await client.call("DELETE", key, ok=(200, 204))
            return 1, 0

        job = {"put": put, "get": get, "delete": delete}[args.mode]
        parts = deal(keys, args.iodepth) if small or args.mode == "delete" else keys
        loop = worker(job)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        await asyncio.gather(*(loop(part) for part in parts))
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        if args.mode == "get" and counts["bytes"] != args.size * len(keys) * args.files:
            raise RequestFailed(f"GET: {counts['bytes']} bytes read, not all of the objects")
        return {**counts, "elapsed_s": wall, "phase_cpu_s": cpu}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="s3ref", description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=MODES)
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--bucket", required=True)
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--iodepth", type=int, default=8)
    parser.add_argument("--files", type=int, default=1, help="objects per rank")
    parser.add_argument("--size", type=int, default=4096, help="object size, bytes")
    parser.add_argument("--block", type=int, default=4096, help="part / range size, bytes")
    args = parser.parse_args(argv)
    if min(args.threads, args.iodepth, args.files, args.size, args.block) < 1:
        parser.error("--threads, --iodepth, --files, --size and --block must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    access_key = os.environ.get("S3REF_ACCESS_KEY", "")
    secret_key = os.environ.get("S3REF_SECRET_KEY", "")
    if not access_key or not secret_key:
        print("s3ref: S3REF_ACCESS_KEY and S3REF_SECRET_KEY must be set", file=sys.stderr)
        return 2
    try:
        figures = uvloop.run(run(args, access_key, secret_key))
    except (TimeoutError, RequestFailed, aiohttp.ClientError, OSError) as exc:
        print(
            f"s3ref: {args.mode} failed: {' '.join(str(exc).split()) or type(exc).__name__}",
            file=sys.stderr,
        )
        return 1
    figures_out = {"mode": args.mode, **figures, "python": sys.version.split()[0], "loop": "uvloop"}
    print(json.dumps(figures_out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
