"""The S3 client's HTTP/1.1 connections (engines/s3/http.py) against small loopback
servers that count connections: keep-alive reuse, answers that close, chunked and sized
bodies, HEAD, bodies longer than the range, and GET bodies landing in the caller's buffer."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import pytest

from aiobench.engines.s3.client import S3Client
from aiobench.engines.s3.layout import Credentials, parse_endpoint
from aiobench.errors import S3Error

Reply = Callable[[bytes, asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@dataclass
class Seen:
    url: str = ""
    connections: int = 0
    heads: list[bytes] = field(default_factory=list)


@asynccontextmanager
async def server(reply: Reply) -> AsyncIterator[Seen]:
    """A loopback server that counts connections and hands each request head to ``reply``."""
    seen = Seen()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                seen.heads.append(head)
                await reply(head, reader, writer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    listening = await asyncio.start_server(handle, "127.0.0.1", 0)
    seen.url = f"http://127.0.0.1:{listening.sockets[0].getsockname()[1]}"
    try:
        yield seen
    finally:
        listening.close()
        await listening.wait_closed()


def client(url: str, connections: int = 4) -> S3Client:
    credentials = Credentials("AKHTTPTEST", "http-secret-" + "x" * 20)
    return S3Client(parse_endpoint(url), credentials, "us-east-1", max_connections=connections)


def length_of(head: bytes) -> int:
    for line in head.decode().split("\r\n"):
        name, _, value = line.partition(":")
        if name.lower() == "content-length":
            return int(value)
    return 0


async def test_requests_one_after_another_share_one_connection() -> None:
    async def reply(head: bytes, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await reader.readexactly(length_of(head))
        w.write(b'HTTP/1.1 200 OK\r\nETag: "e"\r\nContent-Length: 0\r\n\r\n')

    async with server(reply) as seen, client(seen.url) as c:
        for n in range(5):
            assert await c.put_object("bench", f"k{n}", memoryview(b"x" * 100)) == '"e"'
    assert len(seen.heads) == 5
    assert seen.connections == 1


async def test_an_answer_that_closes_is_not_reused() -> None:
    async def reply(head: bytes, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        w.write(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
        await w.drain()
        w.close()

    async with server(reply) as seen, client(seen.url) as c:
        for n in range(3):
            await c.delete_object("bench", f"k{n}")
    assert seen.connections == 3


async def test_head_answers_carry_a_length_but_no_body() -> None:
    async def reply(head: bytes, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        w.write(b"HTTP/1.1 200 OK\r\nContent-Length: 123456\r\n\r\n")

    async with server(reply) as seen, client(seen.url) as c:
        assert await c.head_object("bench", "a") == 123456
        assert await c.head_object("bench", "b") == 123456  # (the same connection, in step)
    assert seen.connections == 1


async def test_a_chunked_body_is_read_whole_into_the_buffer() -> None:
    data = os.urandom(5000)

    async def reply(head: bytes, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        w.write(b"HTTP/1.1 206 Partial Content\r\nTransfer-Encoding: chunked\r\n\r\n")
        for start in range(0, len(data), 1500):
            piece = data[start : start + 1500]
            w.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        w.write(b"0\r\n\r\n")

    into = bytearray(8192)
    async with server(reply) as seen, client(seen.url) as c:
        got, ttfb = await c.get_range("bench", "obj", 0, memoryview(into))
        got2, _ = await c.get_range("bench", "obj", 0, memoryview(into))
    assert got == got2 == len(data) and ttfb > 0
    assert bytes(into[: len(data)]) == data
    assert seen.connections == 1


async def test_a_sized_body_lands_in_the_callers_buffer() -> None:
    """8 MiB in one answer, sent in odd pieces: every byte in place, the connection
    ready for the next request."""
    data = os.urandom(8 << 20)

    async def reply(head: bytes, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        w.write(f"HTTP/1.1 200 OK\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data[:7])
        for start in range(7, len(data), 777_777):
            w.write(data[start : start + 777_777])
            await w.drain()

    into = bytearray(len(data))
    async with server(reply) as seen, client(seen.url) as c:
        for _ in range(2):
            into[:] = bytes(len(into))
            got, _ = await c.get_range("bench", "obj", 0, memoryview(into))
            assert got == len(data)
            assert into == data
    assert seen.connections == 1


async def test_a_body_longer_than_the_range_is_an_error_and_ends_the_connection() -> None:
    async def reply(head: bytes, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        w.write(b"HTTP/1.1 206 Partial Content\r\nContent-Length: 200\r\n\r\n" + b"z" * 200)

    async with server(reply) as seen, client(seen.url) as c:
        with pytest.raises(S3Error, match="more bytes than the range"):
            await c.get_range("bench", "obj", 0, memoryview(bytearray(100)))
        with pytest.raises(S3Error, match="more bytes than the range"):
            await c.get_range("bench", "obj", 0, memoryview(bytearray(100)))
    assert seen.connections == 2


async def test_a_large_put_body_arrives_whole_and_in_order() -> None:
    body = os.urandom(5 << 20)
    received: list[bytes] = []

    async def reply(head: bytes, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        received.append(await reader.readexactly(length_of(head)))
        w.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")

    async with server(reply) as seen, client(seen.url) as c:
        await c.put_object("bench", "big", memoryview(body))
        await c.put_object("bench", "small", memoryview(b"tiny"))
    assert received == [body, b"tiny"]
    assert seen.connections == 1


async def test_at_most_max_connections_at_once() -> None:
    inside = 0
    most = 0

    async def reply(head: bytes, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        nonlocal inside, most
        inside += 1
        most = max(most, inside)
        await asyncio.sleep(0.02)
        inside -= 1
        w.write(b"HTTP/1.1 204 No Content\r\n\r\n")

    async with server(reply) as seen, client(seen.url, connections=3) as c:
        await asyncio.gather(*(c.delete_object("bench", f"k{n}") for n in range(12)))
    assert most == 3
    assert seen.connections == 3


async def test_an_interim_answer_is_skipped_for_the_real_one() -> None:
    async def reply(head: bytes, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await reader.readexactly(length_of(head))
        w.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        w.write(b'HTTP/1.1 200 OK\r\nETag: "real"\r\nContent-Length: 0\r\n\r\n')

    async with server(reply) as seen, client(seen.url) as c:
        assert await c.put_object("bench", "k", memoryview(b"abc")) == '"real"'
        assert await c.put_object("bench", "k", memoryview(b"abc")) == '"real"'
    assert seen.connections == 1


async def test_requests_waiting_for_a_connection_go_on_when_one_is_cancelled() -> None:
    """One connection, three requests: the one cancelled while waiting for its turn takes
    no turn with it; the others are served in order."""
    served: list[bytes] = []

    async def reply(head: bytes, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        served.append(head.split(b" ", 2)[1])
        await asyncio.sleep(0.05)
        w.write(b"HTTP/1.1 204 No Content\r\n\r\n")

    async with server(reply) as seen, client(seen.url, connections=1) as c:
        first = asyncio.create_task(c.delete_object("bench", "a"))
        await asyncio.sleep(0.01)
        doomed = asyncio.create_task(c.delete_object("bench", "b"))
        last = asyncio.create_task(c.delete_object("bench", "c"))
        await asyncio.sleep(0.01)
        doomed.cancel()
        await asyncio.gather(first, last)
        with pytest.raises(asyncio.CancelledError):
            await doomed
        await c.delete_object("bench", "d")  # (the turn came back: not stuck)
    assert served == [b"/bench/a", b"/bench/c", b"/bench/d"]
    assert seen.connections == 1
