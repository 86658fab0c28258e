"""The S3 engine's native route: a benchmark thread's object requests made by one C call
(``_s3native.c`` beside this module) with the GIL released, in an executor thread.

Where it applies (:func:`route_of` at open, :func:`applies` per phase): PUTs of whole
objects (``-s`` <= ``-b``), the part uploads of larger objects' multipart uploads, GETs of
whole objects or of ``--rand``'s single blocks, over plain http with path-style addressing
to one endpoint, without --s3log, --s3chksumalgo, --s3ignoreerrors, --verify, --opslog,
--s3mix or a rate limit, with --s3maxconns (if given) at least -t x --iodepth; the
extension built. Everything else (and every phase when the extension is absent) stays on
the event loop's Python path, the reference: among them a multipart upload's initiation,
completion and abort, and the ranged GETs of objects larger than ``-b``.

A multipart upload (:func:`native_parts`) is the Python path's in every other respect
(engine ``_multipart``): initiated on the event loop, its parts (of --s3mpusizevar's
sizes) then made by C calls, up to --iodepth at once, as many per call as the slot's
write windows hold (each part's body is its window, which must stay as stamped until
sent); the C loop hands back each part's ETag, and the completion (or none, with
--s3nompucompl; a 404 taken as done with --s3multiignore404) goes on the event loop
again. Each part is an I/O operation, timed in C, and the object the entry, as there.
The connections of such a run get a send buffer of a part where the kernel allows one
larger than TCP's autotuning reaches (:func:`send_buffer`).

A thread then has one slot with ``--iodepth`` requests in flight, one per keep-alive
connection of its own (plain sockets, made here and kept in :class:`Connections` from run
to run and phase to phase; one that broke, was cut off, or said ``Connection: close`` is
replaced before the next call). The requests' heads are signed here, in chunks, just
before the C call that sends them (their ``x-amz-date`` lags the send by a chunk's time at
most); each PUT's body is its next write window of the slot's buffer, as on the Python
path, and each GET lands in its connection's read area. The C loop times each request,
stops starting new ones once one ended past the run's budget or the phase is stopped,
cuts those in flight at the time limit, and hands back the first failure, which is worded
here as the Python path words it (:class:`~aiobench.engines.s3.client.S3Client`'s errors);
an answer it does not frame (chunked, no Content-Length) is made again on the Python path.
"""

from __future__ import annotations

import asyncio
import errno as errno_mod
import socket
import threading
from array import array
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import numpy as np
import numpy.typing as npt

from aiobench.engines.base import IoOptions, Job
from aiobench.engines.gate import StopEvent
from aiobench.engines.s3.deadline import MIN_PROGRESS_BYTES, Stalled
from aiobench.errors import S3Error
from aiobench.kinds import READ, WRITE, PhaseKind
from aiobench.stats.client import LOOP_HELPER_PREFIX

if TYPE_CHECKING:
    from collections.abc import Sequence

    from aiobench.config import BenchConfig
    from aiobench.engines.base import ListRecord
    from aiobench.engines.buffers import SlotBuffer
    from aiobench.engines.s3.client import S3Client
    from aiobench.engines.s3.layout import S3Access
    from aiobench.engines.s3.metadata import MetaSettings
    from aiobench.plan.dirmode import EntryRun

try:
    from aiobench.engines.s3 import _s3native
except ImportError:  # (optional: not built, or not loadable here)
    _s3native = None  # type: ignore[assignment]

# The C loop's failures (see _s3native.c)
_STATUS, _BROKEN, _STALLED, _LENGTH, _HANDBACK, _MALFORMED, _ETAG = 1, 2, 3, 4, 5, 6, 7
# Requests signed per C call: their dates lag the send by this many requests' time.
CHUNK = 256
# PUT bodies of a chunk beyond the slot's write windows are copied to a staging buffer of
# at most this size (a window is reused once its request is done).
_STAGING_BYTES = 4 << 20
# Calls in a row that start no request (connections that close at once) before giving up.
_MAX_IDLE_CALLS = 3
# A multipart upload's parts: all of them are made, whatever the run's budget or a stop say
# (those are looked at between objects, as on the Python path): no end, no stop flag.
_NEVER_NS = 1 << 62
_NO_STOP = np.zeros(1, dtype=np.uint8)


class _Requests(Protocol):
    """What the route needs of the engine's requests of one run (its ``_Requests``): the
    job and its run, the client, what every upload carries, where timings go, and the
    Python path for one object (an answer the C loop hands back)."""

    job: Job
    run: EntryRun
    client: S3Client
    meta: MetaSettings
    record: ListRecord
    first_bytes: list[int]

    async def object(self, k: int, bucket: str, key: str) -> None: ...


def available() -> bool:
    """Whether the extension loads here."""
    return _s3native is not None


@dataclass(frozen=True, slots=True)
class Route:
    """What open() decided: whether the run may take the native route, and its settings."""

    enabled: bool = False
    host: str = ""
    port: int = 0
    timeout_s: float = 0.0
    threads: int = 1
    whole: bool = False  # objects of one block at most: a PUT each, a GET each
    rand: bool = False  # --rand: a GET of one block each
    parts: bool = False  # objects larger than a block: their uploads' parts (WRITE)
    send_buffer: int = 0  # SO_SNDBUF of its connections (0: the kernel's autotuning)


def route_of(cfg: BenchConfig, access: S3Access, *, in_parts: bool) -> Route:
    """The native route of a run, where it is exactly the Python path's equivalent."""
    endpoints = access.endpoints
    enabled = (
        available()
        and len(endpoints) == 1
        and endpoints[0].scheme == "http"
        and not access.virtual_host
        and not access.policy.checksum
        and not cfg.s3log
        and not cfg.s3ignoreerrors
        and cfg.opslog_path is None
        and cfg.s3mix is None
        # (a thread's --iodepth connections of its own: within --s3maxconns)
        and (not cfg.s3maxconns or cfg.s3maxconns >= cfg.threads * cfg.iodepth)
    )
    endpoint = endpoints[0]
    return Route(
        enabled=enabled,
        host=endpoint.host,
        port=endpoint.port,
        timeout_s=access.timeout_s,
        threads=cfg.threads,
        whole=0 < cfg.size_bytes <= cfg.block_size,
        rand=cfg.rand,
        parts=in_parts,
        send_buffer=send_buffer(cfg.block_size) if in_parts else 0,
    )


def _sysctl(path: str) -> list[int]:
    try:
        with open(path) as f:
            return [int(word) for word in f.read().split()]
    except (OSError, ValueError):
        return []


def send_buffer(part_bytes: int) -> int:
    """SO_SNDBUF for connections that send parts of ``part_bytes``: one that holds a whole
    part, where the kernel grants more than its autotuning reaches (net.core.wmem_max,
    doubled, above tcp_wmem's maximum); else 0, autotuning. Measured at 64 MiB objects in
    8 MiB parts, 16 connections on loopback: ~10-15 % less client CPU per MiB (fewer, fuller
    sends; the copy and the TCP path are most of it)."""
    granted = _sysctl("/proc/sys/net/core/wmem_max")
    tuned = _sysctl("/proc/sys/net/ipv4/tcp_wmem")
    if not granted or len(tuned) != 3:
        return 0
    want = min(part_bytes, granted[0])
    return want if 2 * want > tuned[2] else 0


def applies(route: Route, kind: PhaseKind, options: IoOptions) -> bool:
    """Whether a phase of ``kind`` takes the native route."""
    return (
        route.enabled
        and (
            (kind == READ and (route.whole or route.rand))
            or (kind == WRITE and (route.whole or route.parts))
        )
        and options.verify is None
        and not options.rate_bytes_per_s
    )


class Connections:
    """Each thread rank's keep-alive connections of the native route (made when first
    used, in the thread that uses them; closed with the targets), and its executor."""

    def __init__(self, route: Route) -> None:
        self.route = route
        self._by_rank: dict[int, list[socket.socket | None]] = {}
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None

    def executor(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(
                max_workers=max(self.route.threads, 1), thread_name_prefix=LOOP_HELPER_PREFIX
            )
        return self._executor

    def of_rank(self, rank: int, count: int) -> list[socket.socket | None]:
        with self._lock:
            conns = self._by_rank.setdefault(rank, [])
        while len(conns) < count:
            conns.append(None)
        return conns

    def connect(self) -> socket.socket:
        """A new connection (OSError when it cannot be made)."""
        route = self.route
        sock = socket.create_connection((route.host, route.port), timeout=route.timeout_s)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if route.send_buffer:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, route.send_buffer)
        sock.setblocking(False)
        return sock

    def close(self) -> None:
        with self._lock:
            ranks, self._by_rank = list(self._by_rank.values()), {}
        for conns in ranks:
            for sock in conns:
                if sock is not None:
                    sock.close()
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None


@dataclass(slots=True)
class _Outcome:
    """Where a part of a run ended: the next entry, and a request to make on the Python
    path (a hand-back) or the failure, or neither (the run is over)."""

    next: int
    handback: int | None = None
    error: S3Error | None = None


def _flag(job: Job) -> array[int]:
    stop = job.stop
    return stop.flag if isinstance(stop, StopEvent) else array("B", [0])


async def native_entries(
    requests: _Requests, conns: Connections, names: Callable[[int], tuple[str, str]]
) -> None:
    """The run's objects on the native route (``names(k)``: entry k's bucket and key); a
    hand-back is made on the Python path here, on the loop, and the run goes on."""
    loop = asyncio.get_running_loop()
    executor = conns.executor()
    run, job = requests.run, requests.job
    k = 0
    while k < len(run):
        # (shielded: the C call ends at the time limit itself; its records are the run's)
        with anyio.CancelScope(shield=True):
            outcome = await loop.run_in_executor(executor, _part, requests, conns, names, k)
        if outcome.error is not None:
            raise outcome.error
        k = outcome.next
        if outcome.handback is None:
            return
        bucket, key = names(outcome.handback)
        record = requests.record
        start = perf_counter_ns()
        await requests.object(outcome.handback, bucket, key)
        record.starts.append(start)  # (once done: the time limit may cut it off)
        record.ends.append(end := perf_counter_ns())
        stopped = job.stop is not None and job.stop.is_set()
        if end > job.until_ns or stopped:
            return


def window_body(buf: SlotBuffer, length: int) -> memoryview:
    """An upload's body of ``length`` bytes from the slot's next write window (windows one
    after the other, copied into one, where it is longer than a block: --s3mpusizevar's
    last part)."""
    block = buf.block_size
    if length > block:
        windows = [buf.next_block(min(block, length - at)) for at in range(0, length, block)]
        return memoryview(b"".join(view for parts in windows for view in parts))
    parts = buf.next_block(length)
    return parts[0] if len(parts) == 1 else memoryview(b"".join(parts))


@dataclass(slots=True)
class _PartsOutcome:
    """Where a C call over a multipart upload's parts ended: a part to make on the Python
    path (a hand-back), a failure, cut off by the time limit, or its parts all done."""

    handback: int | None = None
    error: S3Error | None = None
    cut: bool = False


async def native_parts(
    requests: _Requests,
    conns: Connections,
    bucket: str,
    key: str,
    upload_id: str,
    parts: Sequence[tuple[int, int]],
) -> list[str]:
    """The parts ((offset, length) each, numbered from 1) of upload ``upload_id`` on the
    native route; their ETags, in part order. A part handed back is made on the Python
    path here; one that failed raises as there. Cut off at the time limit, this waits for
    the phase's cancellation (which comes at the same instant), as the Python path's parts
    are cancelled, so that the caller aborts the upload the same way."""
    loop = asyncio.get_running_loop()
    executor = conns.executor()
    etags = [""] * len(parts)
    todo = list(range(len(parts)))
    while todo:
        # (shielded: the C call ends at the time limit itself; its records are the run's)
        with anyio.CancelScope(shield=True):
            outcome = await loop.run_in_executor(
                executor, _upload_parts, requests, conns, bucket, key, upload_id, parts, todo, etags
            )
        if outcome.error is not None:
            raise outcome.error
        if outcome.cut:
            await anyio.sleep_forever()  # (phase_cap's cancellation, due now)
        if outcome.handback is not None:
            j = outcome.handback
            buf = requests.job.buf
            assert buf is not None
            body = window_body(buf, parts[j][1])
            record = requests.record
            start = perf_counter_ns()
            etags[j] = await requests.client.upload_part(bucket, key, upload_id, j + 1, body)
            record.io_starts.append(start)
            record.io_ends.append(perf_counter_ns())
        todo = [j for j in todo if not etags[j]]
    return etags


def _upload_parts(
    requests: _Requests,
    conns: Connections,
    bucket: str,
    key: str,
    upload_id: str,
    parts: Sequence[tuple[int, int]],
    todo: list[int],
    etags: list[str],
) -> _PartsOutcome:
    """In an executor thread: the next of the ``todo`` parts, as many as the slot's write
    windows hold, signed and made by the C loop; each one done an I/O operation, its ETag
    put in ``etags``."""
    job, client = requests.job, requests.client
    buf = job.buf
    assert buf is not None
    chunk: list[int] = []
    windows = 0
    for j in todo:
        need = max(-(-parts[j][1] // buf.block_size), 1)
        if chunk and windows + need > len(buf.windows):
            break
        chunk.append(j)
        windows += need
    heads: list[bytes] = []
    bodies: list[memoryview] = []
    for j in chunk:
        body = window_body(buf, parts[j][1])
        heads.append(client.part_head(bucket, key, upload_id, j + 1, body))
        bodies.append(body)
    n = len(chunk)
    times = np.zeros(3 * n, dtype=np.int64)
    status = np.zeros(n, dtype=np.int64)
    done = np.zeros(n, dtype=np.uint8)
    slot = _s3native.ETAG_MAX
    found = bytearray(n * slot)
    rank_conns = conns.of_rank(requests.run.rank, job.depth)
    record = requests.record
    timeout_s = conns.route.timeout_s
    at = 0
    idle_calls = 0
    while at < n:
        error = _connect(conns, rank_conns, client, bucket, key, None, "UploadPart")
        if error is not None:
            return _PartsOutcome(error=error)
        fds, alive = _fds(rank_conns)
        issued, failure = _s3native.run(
            fds, heads, bodies, None, 0, 0, times, status, done, alive, at, _NEVER_NS,
            job.deadline_ns, _NO_STOP, int(timeout_s * 1e9), MIN_PROGRESS_BYTES, found,
        )  # fmt: skip
        _close_dropped(rank_conns, alive)
        for i in range(at, at + issued):
            if done[i]:
                record.io_starts.append(int(times[3 * i]))
                record.io_ends.append(int(times[3 * i + 1]))
                etag = found[i * slot : (i + 1) * slot].partition(b"\0")[0]
                etags[chunk[i]] = etag.decode("latin-1")
        if failure is not None:
            index = chunk[failure[1]]
            if failure[0] == _HANDBACK:
                return _PartsOutcome(handback=index)
            return _PartsOutcome(
                error=_part_failure(client, failure, bucket, key, index + 1, timeout_s)
            )
        if not done[at : at + issued].all() or (
            at + issued < n and job.deadline_ns and perf_counter_ns() >= job.deadline_ns
        ):
            return _PartsOutcome(cut=True)  # (the time limit: the rest is not made)
        at += issued
        # (else connections closed: new ones, and the chunk goes on)
        idle_calls = idle_calls + 1 if not issued else 0
        if idle_calls >= _MAX_IDLE_CALLS:
            reason = "the server closed the connection without an answer"
            return _PartsOutcome(
                error=client.broken(errno_mod.ECONNRESET, reason, bucket, key, None)
            )
    return _PartsOutcome()


def _part_failure(
    client: S3Client,
    failure: tuple[int, int, int, int, bytes],
    bucket: str,
    key: str,
    number: int,
    timeout_s: float,
) -> S3Error:
    """The C loop's failure of part ``number`` worded as the Python path's (UploadPart)."""
    if failure[0] == _ETAG:
        return client.failure(bucket, key, None, 200, b"", f"no ETag for part {number}")
    return _worded(client, failure, bucket, key, None, "UploadPart", timeout_s)


def _fds(rank_conns: list[socket.socket | None]) -> tuple[list[int], npt.NDArray[Any]]:
    """The C loop's connections: their fds, and which are there."""
    alive = np.array([s is not None for s in rank_conns], dtype=np.uint8)
    return [s.fileno() if s is not None else -1 for s in rank_conns], alive


def _close_dropped(rank_conns: list[socket.socket | None], alive: npt.NDArray[Any]) -> None:
    """Connections the C loop gave up closed (new ones are made before the next call)."""
    for c, ok in enumerate(alive):
        sock = rank_conns[c]
        if not ok and sock is not None:
            sock.close()
            rank_conns[c] = None


def _part(
    requests: _Requests, conns: Connections, names: Callable[[int], tuple[str, str]], k: int
) -> _Outcome:
    """In an executor thread: the run's entries from ``k`` on, chunk after chunk, until the
    run is done or over, a failure, or a hand-back."""
    job, run, client = requests.job, requests.run, requests.client
    get = job.kind == READ
    buf = job.buf
    assert buf is not None
    while k < len(run):
        end = min(len(run), k + CHUNK)
        if not get and end - k > len(buf.windows):
            end = min(end, k + max(len(buf.windows), _STAGING_BYTES // max(run.size, 1)))
        chunk = _Chunk(requests, names, k, end)
        at = 0  # the chunk's next request
        idle_calls = 0
        while at < chunk.n:
            bucket, key = names(k + at)
            offset = None if not get else 0 if run.offsets is None else run.offsets[k + at]
            rank_conns = conns.of_rank(run.rank, job.depth)
            error = _connect(conns, rank_conns, client, bucket, key, offset)
            if error is not None:
                return _Outcome(k + at, error=error)
            issued, failure = chunk.call(conns, at)
            handback = failure[1] if failure is not None and failure[0] == _HANDBACK else None
            # The entries done: those in a row from the first (a hand-back's request apart,
            # made next on the Python path); ones after a gap (cut off at the time limit)
            # are not counted.
            gap = handback if handback is not None else at + issued
            count = _leading(chunk.done[at:gap])
            chunk.record(at, count)
            if failure is not None and handback is None:
                error = _failure(requests, failure, k, names, chunk.want, conns.route.timeout_s)
                return _Outcome(k + at + count, error=error)
            ignored = _ignored_range(chunk.status, chunk.done, run.offsets, k)
            if ignored is not None:  # (--rand: a whole object where a range was asked)
                bucket, key = names(ignored)
                offset = int(run.offsets[ignored]) if run.offsets is not None else 0
                reason = "the server ignored the Range header"
                return _Outcome(k, error=client.failure(bucket, key, offset, 200, b"", reason))
            if handback is not None:
                after = _leading(chunk.done[handback + 1 : at + issued])
                chunk.record(handback + 1, after)
                return _Outcome(k + handback + 1 + after, handback=k + handback)
            at += count
            if count < issued or (at < chunk.n and _over(requests)):
                return _Outcome(k + at)  # (cut off at the time limit, or the budget spent)
            # (else connections closed: new ones, and the chunk goes on)
            idle_calls = idle_calls + 1 if not issued else 0
            if idle_calls >= _MAX_IDLE_CALLS:
                bucket, key = names(k + at)
                reason = "the server closed the connection without an answer"
                error = client.broken(errno_mod.ECONNRESET, reason, bucket, key, None)
                return _Outcome(k + at, error=error)
        k = end
        if _over(requests):
            break
    return _Outcome(k)


class _Chunk:
    """Requests ``k`` .. ``end - 1`` of a run, signed (PUT bodies from the slot's write
    windows, copied to a staging buffer where the chunk holds more requests than there
    are windows), and what the C loop recorded of them."""

    def __init__(
        self, requests: _Requests, names: Callable[[int], tuple[str, str]], k: int, end: int
    ) -> None:
        job, run, client = requests.job, requests.run, requests.client
        self.requests = requests
        self.get = get = job.kind == READ
        buf = job.buf
        assert buf is not None
        self.buf = buf
        size = run.size
        self.want = run.block if run.offsets is not None else size
        self.n = n = end - k
        self.heads: list[bytes] = []
        self.bodies: list[memoryview] | None = None if get else []
        staging = memoryview(bytearray(size * n)) if not get and n > len(buf.windows) else None
        upload = requests.meta.upload_headers()
        for j in range(k, end):
            bucket, key = names(j)
            if self.bodies is None:
                offset = run.offsets[j] if run.offsets is not None else 0
                self.heads.append(client.get_head(bucket, key, int(offset), self.want))
                continue
            body = window_body(buf, size)
            if staging is not None:
                slot = staging[(j - k) * size : (j - k + 1) * size]
                slot[:] = body
                body = slot
            self.heads.append(client.put_head(bucket, key, body, upload))
            self.bodies.append(body)
        self.times = np.zeros(3 * n, dtype=np.int64)
        self.status = np.zeros(n, dtype=np.int64)
        self.done = np.zeros(n, dtype=np.uint8)

    def call(
        self, conns: Connections, at: int
    ) -> tuple[int, tuple[int, int, int, int, bytes] | None]:
        """The C loop over the chunk's requests from ``at``; (how many it started, its
        failure). Connections it gave up are closed (new ones are made before the next)."""
        requests = self.requests
        job = requests.job
        rank_conns = conns.of_rank(requests.run.rank, job.depth)
        fds, alive = _fds(rank_conns)
        result = _s3native.run(
            fds,
            self.heads,
            self.bodies,
            self.buf.read_mem if self.get else None,
            self.buf.read_area,
            self.want,
            self.times,
            self.status,
            self.done,
            alive,
            at,
            job.until_ns,
            job.deadline_ns,
            _flag(job),
            int(conns.route.timeout_s * 1e9),
            MIN_PROGRESS_BYTES,
        )
        _close_dropped(rank_conns, alive)
        return result

    def record(self, at: int, count: int) -> None:
        """Requests ``at`` .. ``at + count - 1`` done: each an entry and an I/O."""
        if count <= 0:
            return
        view = self.times[3 * at : 3 * (at + count)].reshape(count, 3)
        starts = view[:, 0].tolist()
        ends = view[:, 1].tolist()
        requests = self.requests
        record = requests.record
        record.starts.extend(starts)
        record.ends.extend(ends)
        record.io_starts.extend(starts)
        record.io_ends.extend(ends)
        if self.get:
            requests.first_bytes.extend(np.maximum(view[:, 2], 1).tolist())


def _ignored_range(
    status: npt.NDArray[Any],
    done: npt.NDArray[Any],
    offsets: list[int] | None,
    k: int,
) -> int | None:
    """--rand: the first request answered 200 (the whole object) for a range at an offset
    other than 0, as an entry index; the Python path raises for it."""
    if offsets is None:
        return None
    whole = np.flatnonzero((status == 200) & (done == 1))
    for i in whole.tolist():
        if int(offsets[k + i]) != 0:
            return k + int(i)
    return None


def _connect(
    conns: Connections,
    rank_conns: list[socket.socket | None],
    client: S3Client,
    bucket: str,
    key: str,
    offset: int | None,
    operation: str = "",
) -> S3Error | None:
    """Connections made where there are none (the Python path's errors when that fails,
    for the request about to go: ``bucket``/``key``, ``operation`` in S3's API: by default
    PutObject, or GetObject where there is an ``offset``)."""
    for c, sock in enumerate(rank_conns):
        if sock is not None:
            continue
        try:
            rank_conns[c] = conns.connect()
        except TimeoutError:
            stall = Stalled(conns.route.timeout_s, 0, True)
            operation = operation or ("PutObject" if offset is None else "GetObject")
            return client.stalled(operation, stall, bucket, key, offset)
        except OSError as exc:
            err = 0 if isinstance(exc, socket.gaierror) else exc.errno or 0
            reason = f"cannot connect: {exc.strerror or exc}"
            return client.broken(err, reason, bucket, key, offset)
    return None


def _over(requests: _Requests) -> bool:
    """The run's budget is spent (the last request ended past it), the phase stopped or
    its time limit reached."""
    job = requests.job
    ends = requests.record.ends
    now = perf_counter_ns()
    return bool(
        (ends and ends[-1] > job.until_ns)
        or (job.stop is not None and job.stop.is_set())
        or (job.deadline_ns and now >= job.deadline_ns)
    )


def _leading(done: npt.NDArray[Any]) -> int:
    """How many of ``done`` are set in a row from the first."""
    gaps = np.flatnonzero(done == 0)
    return int(gaps[0]) if gaps.size else int(done.size)


def _failure(
    requests: _Requests,
    failure: tuple[int, int, int, int, bytes],
    k: int,
    names: Callable[[int], tuple[str, str]],
    want: int,
    timeout_s: float,
) -> S3Error:
    """The C loop's failure of request ``k + index`` worded as the Python path's."""
    kind, index, a, b, _ = failure
    client: S3Client = requests.client
    j = k + index
    bucket, key = names(j)
    run = requests.run
    offset = int(run.offsets[j]) if run.offsets is not None else 0
    get = requests.job.kind == READ
    where = offset if get else None
    if kind == _LENGTH:
        if a > want:
            return client.failure(bucket, key, where, b, b"", "more bytes than the range")
        return S3Error(
            endpoint=client.endpoint.url,
            bucket=bucket,
            key=key,
            offset=offset + a,
            reason=f"the object ended after {offset + a} bytes, {run.size} expected (-s)",
        )
    operation = "GetObject" if get else "PutObject"
    return _worded(client, failure, bucket, key, where, operation, timeout_s)


def _worded(
    client: S3Client,
    failure: tuple[int, int, int, int, bytes],
    bucket: str,
    key: str,
    where: int | None,
    operation: str,
    timeout_s: float,
) -> S3Error:
    """A failure the C loop had with request ``operation`` on ``bucket``/``key`` (at offset
    ``where``, a GET's) as the Python path words it: a status, a broken connection, a
    stall or a malformed answer."""
    kind, _, a, b, data = failure
    if kind == _STATUS:
        reason, _, body = data.partition(b"\n")
        return client.failure(bucket, key, where, a, body, reason.decode("latin-1").strip())
    if kind == _BROKEN:
        if b < 0:
            text = "the server closed the connection without an answer"
        else:
            text = f"the connection broke in the response body after {b} bytes"
        return client.broken(a or errno_mod.ECONNRESET, text, bucket, key, where)
    if kind == _STALLED:
        stall = Stalled(timeout_s, a, bool(b))
        return client.stalled(operation, stall, bucket, key, where)
    return client.broken(0, data.decode("latin-1"), bucket, key, where)
