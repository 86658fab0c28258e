"""The S3 client against misbehaving servers: small asyncio servers on loopback sockets that
answer 5xx, break the connection mid-body, never answer, dribble a body, never read one,
or echo credentials back."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import anyio
import pytest

from aiobench.engines.s3.client import S3Client
from aiobench.engines.s3.deadline import MIN_PROGRESS_BYTES
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


def _client(url: str, timeout_s: float = 30.0) -> S3Client:
    return S3Client(parse_endpoint(url), Credentials(KEY, SECRET), "us-east-1", timeout_s=timeout_s)


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
    async with fake_server(reply) as url, _client(url, timeout_s=0.5) as client:
        with pytest.raises(S3Error) as info:
            await client.get_range("bench", "obj", 0, memoryview(bytearray(16)))
    assert time.monotonic() - start < 30  # a guard against hanging, not a speed check
    assert str(info.value) == (
        f"s3://bench/obj at {url}: offset 0: ETIMEDOUT (GetObject: no answer within "
        "--s3timeout (0.5 s))"
    )


async def test_a_dribbled_body_is_a_stall() -> None:
    """Bytes keep coming, a few a second: never idle, and yet no transfer."""

    async def reply(head: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 206 Partial Content\r\nContent-Length: 4096\r\n\r\n")
        for _ in range(4096):
            writer.write(b"x")
            await writer.drain()
            await asyncio.sleep(0.05)

    start = time.monotonic()
    async with fake_server(reply) as url, _client(url, timeout_s=0.5) as client:
        with pytest.raises(S3Error) as info:
            await client.get_range("bench", "obj", 0, memoryview(bytearray(4096)))
    assert time.monotonic() - start < 30  # a guard against hanging, not a speed check
    message = str(info.value)
    assert message.startswith(f"s3://bench/obj at {url}: offset 0: ETIMEDOUT (GetObject stalled")
    assert "less than 64 KiB sent or received in --s3timeout (0.5 s))" in message


async def test_a_body_the_server_never_reads_is_a_stall() -> None:
    """A PUT larger than the socket buffers to a server that reads only its head."""
    heads: list[bytes] = []

    async def reply(head: bytes, writer: asyncio.StreamWriter) -> None:
        heads.append(head)
        await asyncio.sleep(3600)

    body = memoryview(bytearray(32 << 20))
    async with fake_server(reply) as url, _client(url, timeout_s=0.5) as client:
        with pytest.raises(S3Error) as info:
            await client.put_object("bench", "big", body)
    assert len(heads) == 1
    message = str(info.value)
    assert message.startswith(f"s3://bench/big at {url}: ETIMEDOUT (PutObject stalled after ")
    assert "nothing sent or received in --s3timeout (0.5 s))" in message
    sent = int(message.split("stalled after ")[1].split(" bytes")[0])
    assert 0 < sent < body.nbytes  # what the kernel took, not what the transport holds


async def test_a_slow_transfer_that_keeps_moving_is_no_stall() -> None:
    """A body that takes several windows, each bringing more than the least: it ends."""
    chunk = MIN_PROGRESS_BYTES * 2
    pieces = 4

    async def reply(head: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(
            f"HTTP/1.1 206 Partial Content\r\nContent-Length: {chunk * pieces}\r\n\r\n".encode()
        )
        for _ in range(pieces):
            await asyncio.sleep(0.3)
            writer.write(b"y" * chunk)
            await writer.drain()

    into = memoryview(bytearray(chunk * pieces))
    async with fake_server(reply) as url, _client(url, timeout_s=0.5) as client:
        got, _ = await client.get_range("bench", "obj", 0, into)
    assert got == chunk * pieces and bytes(into[-1:]) == b"y"


async def test_a_cancellation_from_outside_is_not_a_stall() -> None:
    """The phase's time limit cancels a request the watch also waits on: the cancellation
    goes through, no error."""

    async def reply(head: bytes, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(3600)

    async with fake_server(reply) as url, _client(url, timeout_s=1) as client:
        with anyio.move_on_after(0.3) as scope:
            await client.get_range("bench", "obj", 0, memoryview(bytearray(16)))
        assert scope.cancelled_caught
        assert not client.watches.active
        # The client is still usable afterwards, and its next request watched anew.
        with pytest.raises(S3Error, match=r"HeadObject: no answer within --s3timeout \(1 s\)"):
            await client.head_object("bench", "obj")


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
        async with _client(url, timeout_s=0.5) as client:
            with pytest.raises(S3Error) as info:
                await client.head_object("bench", "k")
    assert time.monotonic() - start < 30  # a guard against hanging, not a speed check
    assert info.value.status is None
    assert str(info.value) == (
        f"s3://bench/k at {url}: ETIMEDOUT (HeadObject: no answer within --s3timeout (0.5 s))"
    )
