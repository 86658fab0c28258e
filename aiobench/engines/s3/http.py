"""HTTP/1.1 for the S3 client: keep-alive connections on asyncio's ``BufferedProtocol``,
pooled per host.

A request is one head written with its body (small bodies in the same write; large ones in
slices, with the transport's flow control). Response heads, and bodies of unknown length
(chunked, or up to the close), are parsed by httptools (llhttp); a body of known length
is received straight into its buffer: the caller's for a GET, so an object's bytes are
copied once, by the kernel, with no Python object per chunk. One exchange at a time per
connection (no pipelining); a connection whose exchange did not end cleanly (cancelled,
cut short, a body not read to its end) is closed, never reused.
"""

from __future__ import annotations

import asyncio
import collections
import errno as errno_mod
import re
import socket
import ssl
from time import perf_counter_ns
from typing import cast

import httptools

from aiobench.engines.s3.deadline import Watch

# What a connection reads into while no sized body is being received.
_SCRATCH_BYTES = 256 << 10
# Request bodies up to this size go in the same write as the head.
_SMALL_BODY_BYTES = 64 << 10
_CONTENT_LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*(\d+)", re.IGNORECASE)
_TRANSFER_ENCODING = re.compile(rb"\r\ntransfer-encoding:", re.IGNORECASE)
# How long closing a pool waits for its connections to go (TLS's goodbye), twice.
_CLOSE_WAIT_S = 1.0
# Larger ones are handed to the transport in slices of this size, with its flow control.
_WRITE_SLICE_BYTES = 1 << 20


class Broken(Exception):
    """No complete answer: the connection could not be made, broke, or the answer could
    not be parsed. ``errno`` (0: none) and ``reason`` in words; ``got`` body bytes had
    arrived (None before the body)."""

    def __init__(self, err: int, reason: str, got: int | None = None) -> None:
        super().__init__(reason)
        self.errno = err
        self.reason = reason
        self.got = got


# A header's pattern by the name asked for (a handful of names in all).
_HEADER_PATTERNS: dict[str, re.Pattern[bytes]] = {}


class Headers:
    """A response's headers by case-insensitive name (repeated ones joined by ", "),
    kept as the head came (bytes, checked by llhttp) and read at the first look: most
    answers' headers are never looked at."""

    __slots__ = ("_items", "head")

    def __init__(self, head: bytes = b"") -> None:
        self.head = head  # status line and header lines, without the blank line
        self._items: dict[str, str] | None = None

    @property
    def items(self) -> dict[str, str]:
        items = self._items
        if items is None:
            items = self._items = {}
            for line in self.head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                key = name.decode("latin-1").strip().lower()
                text = value.decode("latin-1").strip()
                old = items.get(key)
                items[key] = text if old is None else f"{old}, {text}"
        return items

    def get(self, name: str, default: str = "") -> str:
        if self._items is not None:
            return self._items.get(name.lower(), default)
        # One look (an ETag, a length): found in the head's bytes, none of the rest decoded
        # (llhttp allows no space before a header's colon).
        pattern = _HEADER_PATTERNS.get(name)
        if pattern is None:
            line = rb"\r\n" + re.escape(name.encode("latin-1")) + rb":[ \t]*([^\r]*)"
            pattern = _HEADER_PATTERNS[name] = re.compile(line, re.IGNORECASE)
        found = pattern.findall(self.head)
        if not found:
            return default
        return ", ".join([value.decode("latin-1").strip() for value in found])

    def __getitem__(self, name: str) -> str:
        return self.items[name.lower()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self.items

    def __repr__(self) -> str:
        return f"Headers({self.items!r})"


_NO_HEADERS = Headers()  # (an answer's until its head is read)


class Response:
    """An answer: status and reason, headers, and the body (``body`` when it was read
    into a buffer of the connection's; for a GET into the caller's buffer, ``got`` bytes
    of it). ``length`` is the Content-Length (-1: none); ``first_byte_ns`` when the first
    body byte (or, with no body, the head) arrived, on ``perf_counter_ns``'s clock."""

    __slots__ = ("body", "first_byte_ns", "got", "headers", "length", "status")

    def __init__(self) -> None:
        self.status = 0
        self.headers = _NO_HEADERS
        self.body = b""
        self.got = 0
        self.length = -1
        self.first_byte_ns = 0

    @property
    def reason(self) -> str:
        """The status line's reason phrase ("Not Found"; may be empty)."""
        line = self.headers.head.partition(b"\r\n")[0]
        parts = line.split(b" ", 2)
        return parts[2].decode("latin-1").strip() if len(parts) > 2 else ""


class Connection(asyncio.BufferedProtocol):
    """One keep-alive connection and its exchange in progress."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._loop = asyncio.get_running_loop()
        self.gone: asyncio.Future[None] = self._loop.create_future()
        self.reusable = True
        self.handed = 0  # request body bytes given to the transport
        self.received = 0  # response bytes received (for the stall watch)
        self._scratch = memoryview(bytearray(_SCRATCH_BYTES))
        self._parser: httptools.HttpResponseParser | None = None
        self._head: bytearray | None = None  # the answer's bytes while its head is read
        self._done: asyncio.Future[Response] | None = None
        self._drain: asyncio.Future[None] | None = None
        self._paused = False
        self._resp = Response()
        self._head_only = False
        self._into: memoryview | None = None  # where a wanted body goes (a GET's buffer)
        self._into_statuses: tuple[int, ...] = ()
        self._limit = 0  # most body bytes read into a buffer of ours
        self._body: memoryview | None = None  # a sized body's destination
        self._into_body = False  # ... and it is the caller's
        self._chunks: bytearray | None = None  # an unsized body
        self._want = 0
        self._direct = False  # the rest of a sized body goes straight into _body
        self._interim = False
        self._keep = True  # this exchange leaves the connection fit for another

    # -- asyncio's side ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # (uvloop's is no subclass)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self.gone.done():
            self.gone.set_result(None)
        self.reusable = False
        self._wake_drain()
        done = self._done
        if done is None or done.done():
            return
        resp = self._resp
        if resp.status and self._chunks is not None and self._want < 0 and not self._chunked():
            self._finish()  # a body that ends with the connection
            return
        err = exc.errno if isinstance(exc, OSError) and exc.errno else errno_mod.ECONNRESET
        if not resp.status:
            done.set_exception(Broken(err, "the server closed the connection without an answer"))
        else:
            got = resp.got if self._body is not None else len(self._chunks or b"")
            reason = f"the connection broke in the response body after {got} bytes"
            done.set_exception(Broken(err, reason, got))

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake_drain()

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._direct:
            assert self._body is not None
            return self._body[self._resp.got : self._want]
        return self._scratch

    def buffer_updated(self, nbytes: int) -> None:
        self.received += nbytes
        resp = self._resp
        if self._direct:
            resp.got += nbytes
            if resp.got >= self._want:
                self._finish()
            return
        if self._done is None or self._done.done():
            # Bytes nobody asked for: the connection is out of step; it ends here.
            self._drop()
            return
        parser = self._parser
        if parser is None:
            parser = self._parser = httptools.HttpResponseParser(self)
            self._head = bytearray()
        data = self._scratch[:nbytes]
        if self._head is not None:  # (until the head is whole)
            self._head += data
        try:
            parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(Broken(0, f"a malformed answer: {' '.join(str(exc).split())}"))
            return
        if self._body is not None and not self._done.done():
            self._direct = True
            if not resp.first_byte_ns and resp.got:
                resp.first_byte_ns = perf_counter_ns()

    # -- httptools' callbacks ------------------------------------------------------------

    def on_headers_complete(self) -> None:
        parser = self._parser
        assert parser is not None
        resp = self._resp
        status = parser.get_status_code()
        raw = self._head
        assert raw is not None
        end = raw.find(b"\r\n\r\n")
        if status < 200:  # an interim answer (100 Continue, ...): the real one follows
            self._interim = True
            del raw[: end + 4]
            return
        head = bytes(raw[:end])
        self._head = None  # (the head is whole)
        resp.status = status
        resp.headers = Headers(head)
        if not parser.should_keep_alive():
            self._keep = False
        # What framing needs, without reading every header (llhttp has checked them).
        length = _CONTENT_LENGTH.search(head)
        resp.length = int(length.group(1)) if length is not None else -1
        sized = _TRANSFER_ENCODING.search(head) is None
        if self._head_only or status in (204, 304):
            self._finish()
            return
        if resp.length < 0 or not sized:
            self._chunks = bytearray()
            self._want = -1
            return
        if self._into is not None and status in self._into_statuses:
            if resp.length > self._into.nbytes:  # (the caller says it is an error)
                self._keep = False
                self._finish()
                return
            self._body = self._into[: resp.length]
            self._into_body = True
        else:
            self._body = memoryview(bytearray(min(resp.length, self._limit)))
            if resp.length > self._limit:
                self._keep = False  # the rest is never read
        self._want = self._body.nbytes
        if not self._want:
            self._finish()

    def on_body(self, data: bytes) -> None:
        resp = self._resp
        if not resp.first_byte_ns:
            resp.first_byte_ns = perf_counter_ns()
        body = self._body
        if body is not None:
            n = min(len(data), self._want - resp.got)
            body[resp.got : resp.got + n] = data[:n]
            resp.got += n
            if resp.got >= self._want:
                self._finish()
            return
        chunks = self._chunks
        if chunks is None or self._done is None or self._done.done():
            return
        chunks += data
        if len(chunks) >= self._limit:
            del chunks[self._limit :]
            self._keep = False
            self._finish()

    def on_message_complete(self) -> None:
        if self._interim:
            self._interim = False
            return
        if self._done is not None and not self._done.done():
            self._finish()

    # -- the exchange --------------------------------------------------------------------

    def _chunked(self) -> bool:
        return "chunked" in self._resp.headers.get("Transfer-Encoding").lower()

    def _finish(self) -> None:
        resp = self._resp
        self._direct = False
        self._parser = None  # (a fresh one for the next answer)
        if self._chunks is not None:
            resp.body = bytes(self._chunks)
            resp.got = len(self._chunks)
        elif self._body is not None and not self._into_body:
            resp.body = self._body[: resp.got].tobytes()
        if not resp.first_byte_ns:
            resp.first_byte_ns = perf_counter_ns()
        done = self._done
        if done is not None and not done.done():
            done.set_result(resp)
        self._wake_drain()

    def _fail(self, exc: Broken) -> None:
        self.reusable = False
        done = self._done
        if done is not None and not done.done():
            done.set_exception(exc)
        self._drop()

    def _drop(self) -> None:
        self.reusable = self._keep = False
        if self.transport is not None:
            self.transport.abort()

    def _wake_drain(self) -> None:
        drain = self._drain
        if drain is not None and not drain.done():
            drain.set_result(None)

    def moved(self) -> int:
        """Bytes of this exchange moved: the request body's handed to the transport and
        gone from its buffer, and the answer's received."""
        transport = self.transport
        pending = transport.get_write_buffer_size() if transport is not None else 0
        return max(self.handed - pending, 0) + self.received

    async def exchange(
        self,
        head: bytes,
        body: memoryview | None,
        *,
        head_only: bool = False,
        into: memoryview | None = None,
        into_statuses: tuple[int, ...] = (),
        limit: int = 64 << 20,
    ) -> Response:
        """Send ``head`` (and ``body``) and wait for the whole answer. ``into``: where a
        body of a status in ``into_statuses`` goes (one longer than ``into`` is not read:
        :attr:`Response.length` says so); other bodies are read up to ``limit`` bytes.
        ``head_only``: the answer to a HEAD (no body follows its head)."""
        transport = self.transport
        if self.closed or transport is None:
            raise Broken(errno_mod.ECONNRESET, "the connection was closed")
        self._resp = Response()
        self._head_only = head_only
        self._into, self._into_statuses, self._limit = into, into_statuses, limit
        self._body = self._chunks = None
        self._into_body = False
        self._want = 0
        self._direct = self._interim = False
        self.handed = self.received = 0
        done: asyncio.Future[Response] = self._loop.create_future()
        self._done = done
        self.reusable = False  # until the answer is whole
        self._keep = True  # unless the answer says otherwise or is not read whole
        try:
            if body is None:
                transport.write(head)
            elif body.nbytes <= _SMALL_BODY_BYTES:
                self.handed = body.nbytes
                transport.write(head + body)
            else:
                transport.write(head)
                await self._send_body(transport, body, done)
            resp = await done
            if self.handed == (body.nbytes if body is not None else 0) and not self.closed:
                self.reusable = self._keep_alive(resp)
            return resp
        finally:
            self._done = None
            self._into = self._body = None  # (the caller's buffer is the caller's again)
            self._direct = False

    def _keep_alive(self, resp: Response) -> bool:
        whole = self._body is None or resp.got == self._want
        return self._keep and bool(resp.status) and whole

    async def _send_body(
        self, transport: asyncio.Transport, body: memoryview, done: asyncio.Future[Response]
    ) -> None:
        """A large body in slices; stops early if the answer came first (an error) or
        the connection ended."""
        loop = self._loop
        for start in range(0, body.nbytes, _WRITE_SLICE_BYTES):
            if done.done() or self.closed:
                return
            piece = body[start : start + _WRITE_SLICE_BYTES]
            self.handed += piece.nbytes
            transport.write(piece)
            if self._paused:
                self._drain = loop.create_future()
                await self._drain
                self._drain = None

    def abort(self) -> None:
        """The exchange will not be finished (cancelled): the connection ends."""
        self._done = None
        self._drop()


class Pool:
    """At most ``limit`` connections to one host, in use or idle."""

    def __init__(
        self,
        host: str,
        port: int,
        tls: ssl.SSLContext | None,
        limit: int,
        server_hostname: str | None = None,
    ) -> None:
        self.host, self.port, self.tls = host, port, tls
        self.server_hostname = server_hostname if tls is not None else None
        self._free = limit  # connections that may still be taken into use
        self._turns: collections.deque[asyncio.Future[None]] = collections.deque()
        self._idle: list[Connection] = []
        self._all: set[Connection] = set()

    async def _connect(self) -> Connection:
        loop = asyncio.get_running_loop()
        try:
            _, conn = await loop.create_connection(
                Connection, self.host, self.port, ssl=self.tls, server_hostname=self.server_hostname
            )
        except ssl.SSLCertVerificationError as exc:
            detail = exc.verify_message or exc.reason or exc
            raise Broken(
                0,
                f"the server's TLS certificate was not accepted: {detail}; for a private "
                "CA, point SSL_CERT_FILE at its certificate",
            ) from None
        except ssl.SSLError as exc:  # (its errno is OpenSSL's, not the OS's)
            raise Broken(0, f"the TLS handshake failed: {exc.reason or exc}") from None
        except OSError as exc:
            err = exc.errno or 0
            if isinstance(exc, socket.gaierror):  # (getaddrinfo's codes are not errnos)
                err = 0
            raise Broken(err, f"cannot connect: {exc.strerror or exc}") from None
        self._all.add(conn)
        conn.gone.add_done_callback(lambda _: self._all.discard(conn))
        return conn

    async def send(
        self,
        head: bytes,
        body: memoryview | None,
        watch: Watch,
        *,
        head_only: bool = False,
        into: memoryview | None = None,
        into_statuses: tuple[int, ...] = (),
        limit: int = 64 << 20,
    ) -> Response:
        """One exchange on an idle connection or a new one (:meth:`Connection.exchange`);
        ``watch`` sees the bytes it moves. A connection whose exchange did not end
        cleanly is closed."""
        if self._free > 0 and not self._turns:
            self._free -= 1
        else:
            await self._turn()
        try:
            conn = self._take() or await self._connect()
            watch.sending = conn.moved
            whole = False
            try:
                resp = await conn.exchange(
                    head,
                    body,
                    head_only=head_only,
                    into=into,
                    into_statuses=into_statuses,
                    limit=limit,
                )
                whole = True
                return resp
            finally:
                if whole and conn.reusable and not conn.closed:
                    self._idle.append(conn)
                elif not conn.closed:
                    conn.abort()
        finally:
            self._give_turn()

    async def _turn(self) -> None:
        """Wait until a connection may be taken into use (the first waiter first)."""
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._turns.append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():  # (handed over, then cancelled)
                self._give_turn()
            raise

    def _give_turn(self) -> None:
        """A request is done with its connection: the next waiter's turn, else one more free."""
        turns = self._turns
        while turns:
            turn = turns.popleft()
            if not turn.done():
                turn.set_result(None)
                return
        self._free += 1

    def _take(self) -> Connection | None:
        """An idle connection still open, if there is one."""
        idle = self._idle
        while idle:
            conn = idle.pop()
            if not conn.closed:
                return conn
        return None

    async def aclose(self) -> None:
        """Close every connection and wait (a little) until they are gone: a TLS one
        says goodbye first, and its loop must not close before."""
        self._idle.clear()
        conns = list(self._all)
        for conn in conns:
            if conn.transport is not None and not conn.closed:
                conn.transport.close()
        if conns:
            _, late = await asyncio.wait([c.gone for c in conns], timeout=_CLOSE_WAIT_S)
            for conn in conns:
                if not conn.closed and conn.transport is not None:
                    conn.transport.abort()
            if late:
                await asyncio.wait([c.gone for c in conns], timeout=_CLOSE_WAIT_S)
