"""The S3 client against misbehaving servers: small asyncio servers on loopback sockets that
answer 5xx, break the connection mid-body, never answer, or echo credentials back."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest

from aiobench.engines.s3.client import S3Client
from aiobench.engines.s3.layout import Credentials, parse_endpoint
from aiobench.errors import S3Error

Reply = Callable[[bytes, asyncio.StreamWriter], Awaitable[None]]
KEY = "AKIDFAULTTEST"
SECRET = "fault-secret-" + "s" * 20


@asynccontextmanager
async def fake_server(reply: Reply) -> AsyncIterator[str]:
    """A one-purpose HTTP server: ``reply`` gets each request head and answers it."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                await reply(head, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()


def _client(url: str, read_timeout_s: float = 60.0, connect_timeout_s: float = 5.0) -> S3Client:
    return S3Client(
        parse_endpoint(url),
        Credentials(KEY, SECRET),
        "us-east-1",
        read_timeout_s=read_timeout_s,
        connect_timeout_s=connect_timeout_s,
    )


def _response(status: str, body: bytes, length: int | None = None) -> bytes:
    size = len(body) if length is None else length
    return f"HTTP/1.1 {status}\r\nContent-Length: {size}\r\n\r\n".encode() + body


async def test_5xx_names_status_and_code() -> None:
    body = b"<Error><Code>SlowDown</Code><Message>Please reduce your rate.</Message></Error>"

    async def reply(head: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(_response("503 Service Unavailable", body))

    async with fake_server(reply) as url, _client(url) as client:
        with pytest.raises(S3Error) as info:
            await client.put_object("bench", "r0-f0", memoryview(b"1234"))
    err = info.value
    assert (err.status, err.code) == (503, "SlowDown")
    assert str(err) == f"s3://bench/r0-f0 at {url}: HTTP 503 SlowDown (Please reduce your rate.)"


async def test_non_xml_error_body_still_gives_the_status() -> None:
    async def reply(head: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(_response("502 Bad Gateway", b"upstream down"))

    async with fake_server(reply) as url, _client(url) as client:
        with pytest.raises(S3Error) as info:
            await client.delete_object("bench", "k")
    assert info.value.status == 502
    assert info.value.code == ""


async def test_reset_mid_body_is_a_clean_error() -> None:
    async def reply(head: bytes, writer: asyncio.StreamWriter) -> None:
        # Promise 4096 bytes, send 100, then drop the connection.
        writer.write(_response("206 Partial Content", b"x" * 100, length=4096))
        await writer.drain()
        writer.transport.abort()

    async with fake_server(reply) as url, _client(url) as client:
        with pytest.raises(S3Error) as info:
            await client.get_range("bench", "obj", 8192, memoryview(bytearray(4096)))
    err = info.value
    assert err.status is None
    assert err.offset == 8192
    assert "response body" in str(err)
    assert "ECONNRESET" in str(err)


async def test_server_that_never_answers_times_out() -> None:
    async def reply(head: bytes, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(3600)

    start = time.monotonic()
    async with fake_server(reply) as url, _client(url, read_timeout_s=0.5) as client:
        with pytest.raises(S3Error) as info:
            await client.get_range("bench", "obj", 0, memoryview(bytearray(16)))
    assert time.monotonic() - start < 30  # a guard against hanging, not a speed check
    assert "ETIMEDOUT" in str(info.value)
    assert "no data within the read timeout of 0.5 s" in str(info.value)


async def test_credentials_a_server_echoes_are_cut_out() -> None:
    async def reply(head: bytes, writer: asyncio.StreamWriter) -> None:
        message = f"key {KEY} secret {SECRET} rejected".encode()
        body = b"<Error><Code>InvalidAccessKeyId</Code><Message>" + message + b"</Message></Error>"
        writer.write(_response("403 Forbidden", body))

    async with fake_server(reply) as url, _client(url) as client:
        with pytest.raises(S3Error) as info:
            await client.create_bucket("bench")
    text = str(info.value) + repr(info.value.to_dict())
    assert "InvalidAccessKeyId" in text
    assert SECRET not in text
    assert KEY not in text
    assert "key *** secret *** rejected" in str(info.value)


async def test_requests_carry_no_expect_or_checksum_and_an_explicit_length() -> None:
    heads: list[bytes] = []

    async def reply(head: bytes, writer: asyncio.StreamWriter) -> None:
        heads.append(head)
        writer.write(_response("200 OK", b""))

    async with fake_server(reply) as url, _client(url) as client:
        # The server above reads no body; a 1-byte PUT fits the socket buffers.
        await client.put_object("bench", "k", memoryview(b"1"))
    head = heads[0].decode().lower()
    assert head.startswith("put /bench/k http/1.1\r\n")
    assert "content-length: 1\r\n" in head
    assert "x-amz-content-sha256: unsigned-payload\r\n" in head
    assert "expect:" not in head
    assert "x-amz-checksum" not in head
    assert "transfer-encoding" not in head
    assert SECRET.lower() not in head


async def test_a_malformed_answer_is_a_clean_error() -> None:
    async def reply(head: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(b"SPAM not http at all\r\n\r\n")

    async with fake_server(reply) as url, _client(url) as client:
        with pytest.raises(S3Error) as info:
            await client.delete_object("bench", "k")
    assert info.value.status is None
    assert "malformed answer" in str(info.value)


async def test_refused_connection_fails_at_once() -> None:
    # A loopback port that nothing listens on: bound, never listening.
    with socket.socket() as hold:
        hold.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{hold.getsockname()[1]}"
        start = time.monotonic()
        async with _client(url) as client:
            with pytest.raises(S3Error) as info:
                await client.put_object("bench", "k", memoryview(b"1"))
    assert time.monotonic() - start < 30  # a guard against hanging, not a speed check
    err = info.value
    assert err.status is None
    assert err.to_dict()["errno_name"] == "ECONNREFUSED"
    assert str(err).startswith(f"s3://bench/k at {url}: ECONNREFUSED (cannot connect")
    assert SECRET not in str(err)


async def test_endpoint_that_takes_no_connection_times_out() -> None:
    # A listener whose accept queue is full drops further SYNs: a host that is down.
    with socket.socket() as listener, socket.socket() as first:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        first.connect(listener.getsockname())  # fills the queue (never accepted)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        start = time.monotonic()
        async with _client(url, connect_timeout_s=0.5) as client:
            with pytest.raises(S3Error) as info:
                await client.head_object("bench", "k")
    assert time.monotonic() - start < 30  # a guard against hanging, not a speed check
    assert info.value.status is None
    assert "ETIMEDOUT" in str(info.value)
    assert "no connection within the connect timeout of 0.5 s" in str(info.value)
