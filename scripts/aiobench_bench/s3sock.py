"""The s3 section's floor for large objects (issue #26): a bare blocking-socket + SigV4 loop.

``python3 -m aiobench_bench.s3sock MODE --endpoint http://HOST:PORT --bucket B --threads T
--files K --size S`` (credentials in S3REF_ACCESS_KEY / S3REF_SECRET_KEY) prints one JSON
line like aiobench_bench.s3proto: requests, objects, bytes, the phase's wall time and
process CPU time. Modes ``put`` and ``get`` of whole objects, aiobench's keys
``r<rank>/d0/r<rank>-f<j>``: T threads, one keep-alive connection each, doing their rank's
objects one after the other. A PUT is ``sendall`` of the head and then of the body from one
preallocated buffer; a GET reads the head, then ``recv_into`` the one preallocated buffer:
no Python object per chunk, the interpreter's lock released in every call, so what is
left is the kernel's copy and the signing. Plain http; a failed request ends the run with
one line on stderr, exit 1.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import socket
import sys
import threading
import time
from urllib.parse import urlsplit

if importlib.util.find_spec("aiobench") is None:  # the checkout's aiobench as the fallback
    sys.path.append(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))))

from aiobench.engines.s3.sigv4 import Signer
from aiobench_bench.s3ref import RequestFailed, object_keys

MODES = ("put", "get")
_HEAD_BYTES = 64 << 10


def _stamp() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


def _answer(sock: socket.socket, into: memoryview) -> tuple[int, int]:
    """Read one answer: (status, body bytes), the body into ``into`` (Content-Length)."""
    head = bytearray()
    while (end := head.find(b"\r\n\r\n")) < 0:
        chunk = sock.recv(_HEAD_BYTES)
        if not chunk:
            raise RequestFailed("the server closed the connection")
        head += chunk
    lines = bytes(head[:end]).split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    if length > into.nbytes:
        raise RequestFailed(f"a body of {length} bytes, more than the object's")
    rest = head[end + 4 :]
    into[: len(rest)] = rest
    got = len(rest)
    while got < length:
        n = sock.recv_into(into[got:length])
        if not n:
            raise RequestFailed(f"the connection broke after {got} body bytes")
        got += n
    return status, got


def worker(args: argparse.Namespace, signer: Signer, keys: list[str], counts: list[int]) -> None:
    url = urlsplit(args.endpoint)
    assert url.hostname is not None
    put = args.mode == "put"
    method = "PUT" if put else "GET"
    buffer = memoryview(bytearray(os.urandom(args.size) if put else bytes(args.size)))
    sink = memoryview(bytearray(_HEAD_BYTES))
    with socket.create_connection((url.hostname, url.port or 80)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for key in keys:
            path = f"/{args.bucket}/{key}"
            extra = {"Content-Length": str(args.size)} if put else {}
            signed = signer.sign_s3(method, path, "", url.netloc, extra, _stamp())
            head = f"{method} {path} HTTP/1.1\r\n" + "".join(
                f"{k}: {v}\r\n" for k, v in signed.items()
            )
            sock.sendall((head + "\r\n").encode())
            if put:
                sock.sendall(buffer)
            status, got = _answer(sock, sink if put else buffer)
            if status != 200:
                raise RequestFailed(f"{method} {args.bucket}/{key}: HTTP {status}")
            counts[0] += 1
            counts[1] += args.size if put else got


def run(args: argparse.Namespace, access_key: str, secret_key: str) -> dict[str, float]:
    url = urlsplit(args.endpoint)
    if url.scheme != "http" or url.hostname is None:
        raise RequestFailed(f"--endpoint {args.endpoint}: only http://HOST:PORT")
    signer = Signer(access_key, secret_key, args.region)
    keys = object_keys(args.threads, args.files)
    counts = [[0, 0] for _ in keys]
    failures: list[BaseException] = []

    def guarded(rank_keys: list[str], count: list[int]) -> None:
        try:
            worker(args, signer, rank_keys, count)
        except (RequestFailed, OSError, ValueError) as exc:
            failures.append(exc)

    threads = [
        threading.Thread(target=guarded, args=(k, c)) for k, c in zip(keys, counts, strict=True)
    ]
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    if failures:
        raise failures[0]
    requests = sum(c[0] for c in counts)
    done = sum(c[1] for c in counts)
    if done != args.size * args.threads * args.files:
        raise RequestFailed(f"{args.mode}: {done} bytes moved, not all of the objects")
    return {
        "requests": requests,
        "objects": requests,
        "bytes": done,
        "elapsed_s": wall,
        "phase_cpu_s": cpu,
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="s3sock", description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=MODES)
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--bucket", required=True)
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--iodepth", type=int, default=1, help="(accepted; one connection each)")
    parser.add_argument("--files", type=int, default=1, help="objects per rank")
    parser.add_argument("--size", type=int, default=4096, help="object size, bytes")
    args = parser.parse_args(argv)
    if min(args.threads, args.files, args.size) < 1:
        parser.error("--threads, --files and --size must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    access_key = os.environ.get("S3REF_ACCESS_KEY", "")
    secret_key = os.environ.get("S3REF_SECRET_KEY", "")
    if not access_key or not secret_key:
        print("s3sock: S3REF_ACCESS_KEY and S3REF_SECRET_KEY must be set", file=sys.stderr)
        return 2
    try:
        figures = run(args, access_key, secret_key)
    except (RequestFailed, OSError, ValueError) as exc:
        print(
            f"s3sock: {args.mode} failed: {' '.join(str(exc).split()) or type(exc).__name__}",
            file=sys.stderr,
        )
        return 1
    print(json.dumps({"mode": args.mode, **figures, "python": sys.version.split()[0]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
