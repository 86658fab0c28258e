"""An S3 client for one endpoint on the event loop: aiobench's HTTP/1.1 connections
(:mod:`~aiobench.engines.s3.http`) and its SigV4 signer.

Only what the benchmark needs, each call one request: buckets (create, delete), objects
(PUT, multipart upload, HEAD, ranged GET into the caller's buffer, DELETE), listing
(ListObjectsV2, a page at a time) and batched DeleteObjects. Requests go unsigned-payload,
without checksums or ``Expect: 100-continue``; PUT bodies are sent from the caller's
memoryview with an explicit Content-Length, GET bodies are received into the caller's
reused buffer. Connections are pooled, at most ``max_connections`` per host. Each request
is watched (:mod:`~aiobench.engines.s3.deadline`): one that neither ends nor moves enough of
its bytes for ``timeout_s`` (``--s3timeout``) fails, however it got stuck (connecting,
waiting for an answer, sending or receiving a body).

Every failure is an :class:`~aiobench.errors.S3Error` naming the endpoint, bucket/key (and
offset of a ranged GET), the HTTP status and S3 error code, or why no answer came
(connection refused, reset, timed out). Credentials never appear in one: the key id and
secret are scrubbed from any text a server sends back.
"""

from __future__ import annotations

import base64
import errno as errno_mod
import hashlib
import ssl
import time
import xml.etree.ElementTree as ET
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TypeVar
from xml.sax.saxutils import escape

from aiobench.config import DEFAULT_S3_TIMEOUT_S
from aiobench.engines.s3.deadline import Stalled, Watches
from aiobench.engines.s3.http import Broken, Headers, Pool
from aiobench.engines.s3.layout import BucketAddress, Credentials, Endpoint, bucket_address
from aiobench.engines.s3.policy import RequestPolicy
from aiobench.engines.s3.requestlog import RequestLog, outcome_of
from aiobench.engines.s3.sigv4 import Signer, canonical_query, encode_path
from aiobench.errors import S3Error

# An error body is a short XML document; more than this is not read.
_MAX_ERROR_BODY_BYTES = 64 << 10
# S3's limit of keys in one DeleteObjects request.
MAX_DELETE_KEYS = 1000


@dataclass(frozen=True, slots=True)
class ListPage:
    """One ListObjectsV2 page: keys with their sizes, and the token of the next page
    (None on the last)."""

    keys: list[str]
    sizes: list[int]
    next_token: str | None


def _bytes_view(body: bytes | memoryview) -> memoryview:
    """``body`` as a flat view of bytes (no new view where it is one already)."""
    if isinstance(body, memoryview) and body.format == "B" and body.ndim == 1:
        return body
    return memoryview(body).cast("B")


def _local(tag: str) -> str:
    """An XML tag without its namespace."""
    return tag.rpartition("}")[2]


def _child_text(element: ET.Element, name: str) -> str:
    for child in element:
        if _local(child.tag) == name:
            return child.text or ""
    return ""


T = TypeVar("T")


def _status(answer: tuple[int, Headers, bytes]) -> str:
    return f"HTTP {answer[0]}"


def _got_bytes(answer: tuple[int, int]) -> str:
    return f"{answer[0]} bytes"


class S3Client:
    """Requests to one endpoint with one set of credentials; use ``async with``.

    ``max_connections`` bounds the pooled connections (the engine gives it the number of
    slots that use the endpoint). Not safe to share across event loops.
    """

    def __init__(
        self,
        endpoint: Endpoint,
        credentials: Credentials,
        region: str,
        *,
        virtual_host: bool = False,
        max_connections: int = 16,
        timeout_s: float = DEFAULT_S3_TIMEOUT_S,
        policy: RequestPolicy | None = None,
        log: RequestLog | None = None,
    ) -> None:
        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1 (got {max_connections})")
        self.endpoint = endpoint
        self.region = region
        self.virtual_host = virtual_host
        self.max_connections = max_connections
        # Encryption, checksums and payload signing of the requests (engines.s3.policy).
        self.policy = policy or RequestPolicy()
        self.log = log  # --s3log (engines.s3.requestlog)
        self._tls = endpoint.scheme == "https"
        self._upload_headers = {**self.policy.upload, **self.policy.object}
        self._signer = Signer(
            credentials.access_key,
            credentials.secret_key,
            region,
            session_token=credentials.session_token,
        )
        self._scrub = tuple(
            s
            for s in (credentials.session_token, credentials.secret_key, credentials.access_key)
            if len(s) >= 4
        )
        # Each request is watched for stalls (a read timeout would let a dribble pass).
        self.watches = Watches(timeout_s)
        self._pools: dict[str, Pool] | None = None  # by Host (None: outside 'async with')
        # Verified against the default CAs (SSL_CERT_FILE/SSL_CERT_DIR name others).
        self._ssl = ssl.create_default_context() if self._tls else None
        self._addresses: dict[str, BucketAddress] = {}
        self._date_second = -1
        self._date = ""

    def __repr__(self) -> str:
        return f"S3Client({self.endpoint.url!r}, region={self.region!r})"

    async def __aenter__(self) -> S3Client:
        self._pools = {}
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._pools is not None:
            pools, self._pools = self._pools, None
            for pool in pools.values():
                await pool.aclose()
        self.watches.close()

    # -- buckets ---------------------------------------------------------------------------

    async def create_bucket(
        self, bucket: str, object_lock: bool = False, shared: bool = False
    ) -> None:
        """Create ``bucket`` (``object_lock``: with object lock enabled; ``shared``:
        public-read-write, for several users' credentials); one that exists and is ours
        already is no error."""
        body = b""
        headers = {"x-amz-bucket-object-lock-enabled": "true"} if object_lock else {}
        if shared:
            headers["x-amz-acl"] = "public-read-write"
        if self.region != "us-east-1":  # AWS wants the region named for any other
            body = (
                "<CreateBucketConfiguration><LocationConstraint>"
                f"{escape(self.region)}</LocationConstraint></CreateBucketConfiguration>"
            ).encode()
        status, _, data = await self._call(
            "CreateBucket", "PUT", bucket, "", body=body, headers=headers, ok=(200, 409)
        )
        if status == 409:
            code, message = self._error_fields(data)
            if code != "BucketAlreadyOwnedByYou":
                raise self._error(bucket, "", None, status, code, message or "conflict")

    async def delete_bucket(self, bucket: str) -> None:
        await self._call("DeleteBucket", "DELETE", bucket, "", ok=(204, 200))

    # -- objects ---------------------------------------------------------------------------

    async def put_object(
        self,
        bucket: str,
        key: str,
        body: memoryview,
        headers: dict[str, str] | None = None,
        etag: bool = True,
    ) -> str:
        """PUT ``body`` as the object (with ``headers``: an ACL); returns its ETag (''
        without ``etag``: a caller with no use for it saves looking for it)."""
        sent = dict(self._upload_headers)
        if headers:
            sent.update(headers)
        if self.policy.checksum:
            sent.update(self.policy.checksum_headers(body))
        call = self._send if self.log is None else self._call  # (a coroutine less per PUT)
        _, got, _ = await call("PutObject", "PUT", bucket, key, body=body, headers=sent)
        return got.get("ETag", "") if etag else ""

    async def head_object(self, bucket: str, key: str) -> int:
        """The object's size in bytes (HEAD)."""
        _, headers, _ = await self._call(
            "HeadObject", "HEAD", bucket, key, headers=dict(self.policy.object)
        )
        try:
            return int(headers["Content-Length"])
        except (KeyError, ValueError):
            raise self._error(bucket, key, None, 200, "", "HEAD without a Content-Length") from None

    async def delete_object(self, bucket: str, key: str) -> None:
        await self._call("DeleteObject", "DELETE", bucket, key, ok=(204, 200))

    async def get_range(
        self, bucket: str, key: str, offset: int, into: memoryview
    ) -> tuple[int, int]:
        """:meth:`_get_range`, logged with --s3log."""
        get = self._get_range(bucket, key, offset, into)
        if self.log is None:
            return await get
        return await self._logged(get, "GetObject", "GET", bucket, key, None, _got_bytes)

    async def _get_range(
        self, bucket: str, key: str, offset: int, into: memoryview
    ) -> tuple[int, int]:
        """GET bytes ``offset`` .. ``offset + len(into) - 1`` of the object into ``into``.

        Returns (bytes read, time to first byte in ns): from just before the request is
        sent to the first body bytes reaching this coroutine (``perf_counter_ns``). Fewer
        bytes than asked come back only where the object ends earlier.
        """
        want = into.nbytes
        if want <= 0:
            raise ValueError("get_range needs a buffer of at least one byte")
        headers = {"Range": f"bytes={offset}-{offset + want - 1}", **self.policy.object}
        pool, head = self._prepare("GET", bucket, key, "", headers)
        target = into.cast("B") if into.format != "B" or into.ndim != 1 else into
        start = time.perf_counter_ns()
        watch = self.watches.request()
        try:
            with watch:
                resp = await pool.send(
                    head,
                    None,
                    watch,
                    into=target,
                    into_statuses=(200, 206),
                    limit=max(want + 1, _MAX_ERROR_BODY_BYTES),
                )
        except Broken as exc:
            raise self._broken(exc, bucket, key, offset) from None
        except Stalled as exc:
            raise self._stalled("GetObject", exc, bucket, key, offset) from None
        status = resp.status
        if status not in (200, 206):
            code, message = self._error_fields(resp.body)
            raise self._error(bucket, key, offset, status, code, message, resp.reason)
        if status == 200 and offset != 0:
            raise self._error(bucket, key, offset, 200, "", "the server ignored the Range header")
        got = resp.got
        if resp.length < 0:  # (chunked: the body came whole, not into the buffer)
            got = len(resp.body)
            if got <= want:
                target[:got] = resp.body
        if resp.length > want or got > want:
            raise self._error(bucket, key, offset, status, "", "more bytes than the range")
        return got, resp.first_byte_ns - start

    # -- multipart upload ------------------------------------------------------------------

    async def create_multipart_upload(
        self, bucket: str, key: str, headers: dict[str, str] | None = None
    ) -> str:
        """Start a multipart upload (with ``headers``: an ACL); returns its upload id."""
        _, _, data = await self._call(
            "CreateMultipartUpload",
            "POST",
            bucket,
            key,
            query=[("uploads", "")],
            headers={**self._upload_headers, **(headers or {})},
        )
        upload_id = _child_text(self._parse(data, bucket, key), "UploadId")
        if not upload_id:
            raise self._error(bucket, key, None, 200, "", "no UploadId in the answer")
        return upload_id

    async def upload_part(
        self, bucket: str, key: str, upload_id: str, part_number: int, body: memoryview
    ) -> str:
        """Upload part ``part_number`` (1-based); returns its ETag, for completing."""
        query = [("partNumber", str(part_number)), ("uploadId", upload_id)]
        sent = {**self.policy.object, **self.policy.checksum_headers(body)}
        _, headers, _ = await self._call(
            "UploadPart", "PUT", bucket, key, query=query, body=body, headers=sent
        )
        etag = headers.get("ETag", "")
        if not etag:
            raise self._error(bucket, key, None, 200, "", f"no ETag for part {part_number}")
        return etag

    async def complete_multipart_upload(
        self,
        bucket: str,
        key: str,
        upload_id: str,
        etags: Sequence[str],
        missing_ok: bool = False,
    ) -> None:
        """Complete the upload from its parts' ETags, in part order (1, 2, ...);
        ``missing_ok``: a 404 (a completion retried after the first one went through) is
        no error."""
        parts = "".join(
            f"<Part><PartNumber>{n}</PartNumber><ETag>{escape(etag)}</ETag></Part>"
            for n, etag in enumerate(etags, start=1)
        )
        body = f"<CompleteMultipartUpload>{parts}</CompleteMultipartUpload>".encode()
        status, _, data = await self._call(
            "CompleteMultipartUpload",
            "POST",
            bucket,
            key,
            query=[("uploadId", upload_id)],
            body=body,
            ok=(200, 404) if missing_ok else (200,),
        )
        if status == 404:  # (missing_ok)
            return
        # S3 may answer 200 and still fail the completion, in the body.
        root = self._parse(data, bucket, key)
        if _local(root.tag) == "Error":
            code = _child_text(root, "Code")
            raise self._error(bucket, key, None, 200, code, _child_text(root, "Message"))

    async def abort_multipart_upload(self, bucket: str, key: str, upload_id: str) -> None:
        await self._call(
            "AbortMultipartUpload",
            "DELETE",
            bucket,
            key,
            query=[("uploadId", upload_id)],
            ok=(204, 200),
        )

    # -- listing and batched deletes -------------------------------------------------------

    async def list_objects(
        self, bucket: str, prefix: str = "", max_keys: int = 1000, token: str | None = None
    ) -> ListPage:
        """One ListObjectsV2 page of up to ``max_keys`` keys below ``prefix``."""
        query = [("list-type", "2"), ("max-keys", str(max_keys))]
        if prefix:
            query.append(("prefix", prefix))
        if token:
            query.append(("continuation-token", token))
        _, _, data = await self._call("ListObjectsV2", "GET", bucket, "", query=query)
        root = self._parse(data, bucket, "")
        keys: list[str] = []
        sizes: list[int] = []
        truncated = False
        next_token: str | None = None
        for child in root:
            name = _local(child.tag)
            if name == "Contents":
                keys.append(_child_text(child, "Key"))
                size = _child_text(child, "Size")
                sizes.append(int(size) if size.isdigit() else 0)
            elif name == "IsTruncated":
                truncated = (child.text or "").strip() == "true"
            elif name == "NextContinuationToken":
                next_token = child.text or None
        if truncated and not next_token:
            raise self._error(bucket, "", None, 200, "", "a truncated listing without a token")
        return ListPage(keys, sizes, next_token if truncated else None)

    async def delete_objects(self, bucket: str, keys: Sequence[str]) -> None:
        """Delete up to 1000 objects in one DeleteObjects request (quiet mode: the server
        names only the keys it failed to delete, and the first is raised)."""
        if not 0 < len(keys) <= MAX_DELETE_KEYS:
            raise ValueError(f"delete_objects takes 1 to {MAX_DELETE_KEYS} keys (got {len(keys)})")
        objects = "".join(f"<Object><Key>{escape(key)}</Key></Object>" for key in keys)
        body = f"<Delete><Quiet>true</Quiet>{objects}</Delete>".encode()
        # S3 requires an integrity header on DeleteObjects: Content-MD5 is the one every
        # S3 server takes.
        md5 = base64.b64encode(hashlib.md5(body, usedforsecurity=False).digest()).decode()
        _, _, data = await self._call(
            "DeleteObjects",
            "POST",
            bucket,
            "",
            query=[("delete", "")],
            body=body,
            headers={"Content-MD5": md5},
        )
        root = self._parse(data, bucket, "")
        for child in root:
            if _local(child.tag) == "Error":
                key = _child_text(child, "Key")
                code = _child_text(child, "Code")
                raise self._error(bucket, key, None, 200, code, _child_text(child, "Message"))

    # -- the request path ------------------------------------------------------------------

    def _pool(self, address: BucketAddress, bucket: str) -> Pool:
        pools = self._pools
        if pools is None:
            raise RuntimeError("S3Client used outside 'async with'")
        pool = pools.get(address.host)
        if pool is None:
            endpoint = self.endpoint
            host = f"{bucket}.{endpoint.host}" if self.virtual_host else endpoint.host
            pool = pools[address.host] = Pool(
                host, endpoint.port, self._ssl, self.max_connections, server_hostname=host
            )
        return pool

    def _when(self) -> str:
        now = int(time.time())
        if now != self._date_second:
            self._date_second = now
            self._date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
        return self._date

    def _prepare(
        self,
        method: str,
        bucket: str,
        key: str,
        query: str,
        headers: dict[str, str],
        body: memoryview | None = None,
    ) -> tuple[Pool, bytes]:
        """The pool of the bucket's host and the signed request head."""
        address = self._addresses.get(bucket)
        if address is None:
            address = self._addresses[bucket] = bucket_address(
                self.endpoint, bucket, self.virtual_host
            )
        path = address.object_path(encode_path(key)) if key else (address.path or "/")
        payload = self.policy.payload_hash(body, self._tls)
        self._signer.sign_s3(method, path, query, address.host, headers, self._when(), payload)
        target = f"{path}?{query}" if query else path
        lines = "".join([f"{name}: {value}\r\n" for name, value in headers.items()])
        return self._pool(address, bucket), f"{method} {target} HTTP/1.1\r\n{lines}\r\n".encode()

    # -- the native route's heads (engines.s3.native): signed as the requests above ----------

    def put_head(self, bucket: str, key: str, body: memoryview, headers: dict[str, str]) -> bytes:
        """The signed head of :meth:`put_object`'s request (``headers``: an ACL)."""
        sent = dict(self._upload_headers)
        sent.update(headers)
        sent["Content-Length"] = str(body.nbytes)
        return self._head("PUT", bucket, key, sent, body)

    def part_head(
        self, bucket: str, key: str, upload_id: str, part_number: int, body: memoryview
    ) -> bytes:
        """The signed head of :meth:`upload_part`'s request."""
        query = canonical_query([("partNumber", str(part_number)), ("uploadId", upload_id)])
        sent = {**self.policy.object, **self.policy.checksum_headers(body)}
        sent["Content-Length"] = str(body.nbytes)
        return self._head("PUT", bucket, key, sent, body, query)

    def get_head(self, bucket: str, key: str, offset: int, length: int) -> bytes:
        """The signed head of :meth:`get_range`'s request for ``length`` bytes."""
        headers = {"Range": f"bytes={offset}-{offset + length - 1}", **self.policy.object}
        return self._head("GET", bucket, key, headers, None)

    def _head(
        self,
        method: str,
        bucket: str,
        key: str,
        headers: dict[str, str],
        body: memoryview | None,
        query: str = "",
    ) -> bytes:
        """A signed head, off the event loop (no pool is made: the caller has connections)."""
        address = self._addresses.get(bucket)
        if address is None:  # (a dict's setdefault: safe from several threads)
            address = self._addresses.setdefault(
                bucket, bucket_address(self.endpoint, bucket, self.virtual_host)
            )
        path = address.object_path(encode_path(key))
        payload = self.policy.payload_hash(body, self._tls)
        self._signer.sign_s3(method, path, query, address.host, headers, self._when(), payload)
        target = f"{path}?{query}" if query else path
        lines = "".join([f"{name}: {value}\r\n" for name, value in headers.items()])
        return f"{method} {target} HTTP/1.1\r\n{lines}\r\n".encode()

    def failure(
        self, bucket: str, key: str, offset: int | None, status: int, body: bytes, reason: str
    ) -> S3Error:
        """The error of a request answered ``status`` with ``body`` (as :meth:`_send`'s)."""
        code, message = self._error_fields(body[:_MAX_ERROR_BODY_BYTES])
        return self._error(bucket, key, offset, status, code, message, reason)

    def broken(self, err: int, reason: str, bucket: str, key: str, offset: int | None) -> S3Error:
        """The error of a request that got no (complete) answer (as :class:`Broken`'s)."""
        return self._broken(Broken(err, reason), bucket, key, offset)

    def stalled(
        self, operation: str, stall: Stalled, bucket: str, key: str, offset: int | None
    ) -> S3Error:
        return self._stalled(operation, stall, bucket, key, offset)

    async def _call(
        self,
        operation: str,
        method: str,
        bucket: str,
        key: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: bytes | memoryview | None = None,
        headers: dict[str, str] | None = None,
        ok: tuple[int, ...] = (200,),
    ) -> tuple[int, Headers, bytes]:
        """One request whose answer is read whole (:meth:`_send`), logged with --s3log."""
        send = self._send(
            operation, method, bucket, key, query=query, body=body, headers=headers, ok=ok
        )
        if self.log is None:
            return await send
        return await self._logged(send, operation, method, bucket, key, headers, _status)

    async def _logged(
        self,
        request: Awaitable[T],
        operation: str,
        method: str,
        bucket: str,
        key: str,
        headers: Mapping[str, str] | None,
        outcome: Callable[[T], str],
    ) -> T:
        """``request``'s answer, the request written to the --s3log log (how it ended:
        ``outcome`` of its answer, or its error)."""
        log = self.log
        assert log is not None
        where = f"s3://{bucket}/{key}" if key else f"s3://{bucket}"
        start = time.perf_counter_ns()
        try:
            answer = await request
        except S3Error as exc:
            elapsed = time.perf_counter_ns() - start
            log.request(operation, method, where, outcome_of(exc), elapsed, True, headers)
            raise
        elapsed = time.perf_counter_ns() - start
        log.request(operation, method, where, outcome(answer), elapsed, False, headers)
        return answer

    # A request off the data path (the metadata phases'), answered whole: (status, headers,
    # body); ``operation`` is its name in S3's API, for messages.
    call = _call

    async def _send(
        self,
        operation: str,
        method: str,
        bucket: str,
        key: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: bytes | memoryview | None = None,
        headers: dict[str, str] | None = None,
        ok: tuple[int, ...] = (200,),
    ) -> tuple[int, Headers, bytes]:
        """One request whose answer is read whole: (status, headers, body); ``operation`` is
        its name in S3's API, for messages."""
        sent = {} if headers is None else dict(headers)
        view = None if body is None else _bytes_view(body)
        if view is not None:
            sent["Content-Length"] = str(view.nbytes)
        elif method in ("PUT", "POST"):
            sent["Content-Length"] = "0"
        query_string = canonical_query(query) if query else ""
        pool, head = self._prepare(method, bucket, key, query_string, sent, view)
        watch = self.watches.request()
        try:
            with watch:
                resp = await pool.send(head, view, watch, head_only=method == "HEAD")
        except Broken as exc:
            raise self._broken(exc, bucket, key, None) from None
        except Stalled as exc:
            raise self._stalled(operation, exc, bucket, key, None) from None
        if resp.status not in ok:
            code, message = self._error_fields(resp.body[:_MAX_ERROR_BODY_BYTES])
            raise self._error(bucket, key, None, resp.status, code, message, resp.reason)
        return resp.status, resp.headers, resp.body

    # -- errors ----------------------------------------------------------------------------

    def _clean(self, text: str) -> str:
        """Server text made safe to show: credentials cut out, one line, not too long."""
        for secret in self._scrub:
            text = text.replace(secret, "***")
        text = " ".join(text.split())
        return text if len(text) <= 300 else text[:300] + "..."

    def _error_fields(self, data: bytes) -> tuple[str, str]:
        """(Code, Message) of an S3 XML error body; empty where there is none."""
        if not data:
            return "", ""
        try:
            root = ET.fromstring(data)
        except ET.ParseError:
            return "", self._clean(data[:200].decode("utf-8", "replace"))
        return self._clean(_child_text(root, "Code")), self._clean(_child_text(root, "Message"))

    def _parse(self, data: bytes, bucket: str, key: str) -> ET.Element:
        try:
            return ET.fromstring(data)
        except ET.ParseError:
            raise self._error(bucket, key, None, 200, "", "an answer that is not XML") from None

    def _error(
        self,
        bucket: str,
        key: str,
        offset: int | None,
        status: int,
        code: str,
        message: str,
        status_reason: str = "",
    ) -> S3Error:
        reason = message or status_reason or "failed"
        return S3Error(
            endpoint=self.endpoint.url,
            bucket=bucket,
            key=key,
            offset=offset,
            status=status,
            code=code,
            reason=self._clean(reason),
        )

    def _broken(self, exc: Broken, bucket: str, key: str, offset: int | None) -> S3Error:
        """No (complete) answer: refused, reset, closed, a broken body or a bad answer."""
        return S3Error(
            endpoint=self.endpoint.url,
            bucket=bucket,
            key=key,
            offset=offset,
            errno=exc.errno,
            reason=self._clean(exc.reason),
        )

    def _stalled(
        self, operation: str, exc: Stalled, bucket: str, key: str, offset: int | None
    ) -> S3Error:
        """A request the watch gave up on (see :class:`Watch`)."""
        return S3Error(
            endpoint=self.endpoint.url,
            bucket=bucket,
            key=key,
            offset=offset,
            errno=errno_mod.ETIMEDOUT,
            reason=exc.reason(operation),
        )
