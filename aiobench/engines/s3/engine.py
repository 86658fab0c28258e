"""The S3 engine: dir mode's phases as S3 requests, on the event loop.

A run is a thread rank's objects (dir mode's files, :class:`~aiobench.plan.dirmode.EntryRun`),
or the buckets of MKBUCKETS/RMBUCKETS, done one after the other by one slot's coroutine.
Each slot has one request in flight, so a thread with ``--iodepth D`` has up to D: its D
slots. Every object is an entry (its latency is the object's); every request that moves
data is an I/O operation (a PUT, a part of a multipart upload, a ranged GET of ``-b``
bytes). Objects larger than ``-b`` are uploaded in parts of ``-b``. With ``--verify SALT``
each object holds the pattern of :mod:`aiobench.engines.verify` (its offsets those within the
object), and every GET body is checked against it. The requests are
:class:`~aiobench.engines.s3.client.S3Client`'s, one client per endpoint, used by the thread ranks
round-robin. A run's requests end at the phase's time limit, those still in flight then
cancelled (:func:`~aiobench.engines.s3.deadline.phase_cap`); each request's own timeout
(``--s3timeout``) is the client's.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import math
import os
import random
from collections.abc import Awaitable, Callable, Sequence
from time import perf_counter_ns
from typing import TYPE_CHECKING, TypeVar

import anyio
import numpy as np

from aiobench.config import validate
from aiobench.engines.base import IoOptions, Job, ListRecord, RawBatch
from aiobench.engines.s3.client import S3Client
from aiobench.engines.s3.deadline import phase_cap
from aiobench.engines.s3.layout import (
    BucketPath,
    Endpoint,
    S3Access,
    endpoint_of_rank,
    object_layout,
    parse_access,
    parse_path,
)
from aiobench.engines.s3.metadata import MetaSettings, bucket_request, object_request, settings
from aiobench.engines.s3.mixed import DELETE, GET, PUT, Mix, parse_mix
from aiobench.engines.s3.mixed import STAT as STAT_OP
from aiobench.engines.s3.native import (
    Connections,
    Route,
    applies,
    native_entries,
    native_parts,
    route_of,
    window_body,
)
from aiobench.engines.s3.requestlog import RequestLog, check_prefix
from aiobench.engines.s3.uploads import UploadSettings, upload_settings
from aiobench.engines.verify import check, pattern
from aiobench.errors import BenchIOError, ConfigError, S3Error, VerifyError
from aiobench.kinds import (
    BUCKET_MD_KINDS,
    LISTOBJ,
    LISTOBJPAR,
    MIXED,
    MKDIRS,
    MULTIDEL,
    OBJECT_MD_KINDS,
    READ,
    RMDIRS,
    RMFILES,
    STAT,
    WRITE,
    PathType,
    PhaseKind,
)
from aiobench.plan.dirmode import EntryRun
from aiobench.plan.targets import Probe, Resolved, Targets, check_randamount
from aiobench.stats.opkinds import OpKindTally

if TYPE_CHECKING:
    from aiobench.config import BenchConfig

T = TypeVar("T")


class S3Targets(Targets):
    """The buckets of a run and the clients of its endpoints (made on the event loop when
    first used, closed there by :meth:`release`)."""

    def __init__(
        self,
        paths: Sequence[str],
        *,
        access: S3Access,
        objprefix: str,
        max_connections: int,
        multidel: int = 0,
        in_parts: bool = False,
        meta: MetaSettings | None = None,
        uploads: UploadSettings | None = None,
        list_verify: bool = False,
        files_per_prefix: int = 0,
        log: RequestLog | None = None,
        route: Route | None = None,
    ) -> None:
        super().__init__(paths)
        # The native route of small-object PUTs and GETs (engines.s3.native), and its
        # connections
        self.route = route or Route()
        self.native = Connections(self.route) if self.route.enabled else None
        # LISTOBJ_P: each prefix's listing (its token, pages in a row that brought nothing,
        # and with --s3listverify the keys so far), its objects as -N says.
        self.log = log  # --s3log: the requests' log (closed with the clients)
        self.list_verify = list_verify
        self.files_per_prefix = files_per_prefix
        self.prefix_tokens: dict[tuple[int, str], str | None] = {}
        self.prefix_idle: dict[tuple[int, str], int] = {}
        self.listed: dict[tuple[int, str], list[str]] = {}
        # MIXED: what each kind of operation did in this phase (taken at its end)
        self.op_kinds: dict[str, OpKindTally] = {}
        self.uploads = uploads or UploadSettings()  # multipart and errors (engines.s3.uploads)
        self.meta = meta or MetaSettings()  # the metadata phases' (engines.s3.metadata)
        self.buckets = access.buckets
        self.endpoints = access.endpoints
        self.objprefix = objprefix
        self.in_parts = in_parts
        self._access = access
        self._max_connections = max_connections
        self.multidel = multidel  # --s3multidel: keys per DeleteObjects request
        self._clients: dict[tuple[Endpoint, int], S3Client] = {}
        # LISTOBJ and MULTIDEL: one listing of a bucket at a time (a thread's slots share
        # its buckets), where LISTOBJ's listing of each got to, and how many of its pages
        # in a row brought nothing new (see _Requests._list_page).
        self._locks: dict[object, asyncio.Lock] = {}
        self.tokens: dict[int, str | None] = {}
        self.idle_pages: dict[int, int] = {}

    def lock(self, listing: object) -> asyncio.Lock:
        """The lock of a listing: PATH ``listing``'s, or a (PATH, prefix)'s (made on the
        event loop)."""
        return self._locks.setdefault(listing, asyncio.Lock())

    @property
    def servers(self) -> tuple[str, ...]:
        return tuple(endpoint.url for endpoint in self.endpoints)

    async def client(self, rank: int) -> S3Client:
        """The client of thread rank ``rank``'s endpoint and credentials."""
        access = self._access
        endpoint = endpoint_of_rank(self.endpoints, rank)
        user = access.credentials_of_rank(rank)
        client = self._clients.get((endpoint, user))
        if client is None:
            client = S3Client(
                endpoint,
                access.credentials[user],
                access.region,
                virtual_host=access.virtual_host,
                max_connections=self._max_connections,
                timeout_s=access.timeout_s,
                policy=access.policy,
                log=self.log,
            )
            await client.__aenter__()  # (does not wait: no other slot gets in between)
            self._clients[(endpoint, user)] = client
        return client

    def take_op_kinds(self) -> dict[str, OpKindTally]:
        kinds, self.op_kinds = self.op_kinds, {}
        return kinds

    @property
    def shared_buckets(self) -> bool:
        """Several users' credentials write into the buckets (made public-read-write)."""
        return len(self._access.credentials) > 1

    async def release(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()

    def close(self) -> None:
        """The request log and the native route's connections; the clients are the event
        loop's (see :meth:`release`)."""
        if self.native is not None:
            self.native.close()
        if self.log is not None:
            self.log.close()
            self.log = None

    def undo(self) -> None:
        """Opening created nothing: the buckets and objects are the phases' work."""


def _first_failure(failed: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first exception of a task group's (nested groups opened)."""
    first = failed.exceptions[0]
    return _first_failure(first) if isinstance(first, BaseExceptionGroup) else first


def _opened(targets: Targets) -> S3Targets:
    if not isinstance(targets, S3Targets):
        raise TypeError("the S3 engine runs only on what it opened")  # a programming error
    return targets


def _targets(job: Job) -> S3Targets:
    return _opened(job.targets)


def _block(job: Job, offset: int, length: int) -> memoryview:
    """The body of ``length`` bytes at ``offset`` of an object: with --verify its pattern,
    else the next write window of the slot's buffer, as one view."""
    salt = job.options.verify
    if salt is not None:
        return memoryview(pattern(offset, length, salt))
    assert job.buf is not None
    return window_body(job.buf, length)  # (--s3mpusizevar's last part: several windows)


class S3Engine:
    """Object storage over S3's REST API (:class:`~aiobench.engines.python.AsyncEngine`)."""

    name = "s3"

    def probe(self, path: str, opening: bool = True) -> Probe:
        """An ``s3://bucket[/prefix]`` PATH; nothing is asked of the server before the run."""
        parse_path(path)
        return Probe(PathType.S3, None)

    def resolve(self, cfg: BenchConfig) -> Resolved:
        """The buckets as dir mode's paths, and what the requests need (endpoints,
        credentials, region, from the options or the environment), parsed once."""
        for path in cfg.paths:
            self.probe(path, not cfg.dryrun)
        settings(cfg)  # (checked first: each ACL, tag and lock option)
        upload_settings(cfg)
        if cfg.s3log:
            check_prefix(cfg.s3logprefix)
        validate(cfg, PathType.S3)
        access = parse_access(cfg, os.environ)
        size = cfg.size_bytes
        if size == 0 and (cfg.write or cfg.read or cfg.s3mix is not None):
            raise ConfigError("-s/--size: needed (and > 0): the size of each object")
        block = min(cfg.block_size, size or cfg.block_size)
        check_randamount(cfg, block)
        mix = _checked_mix(cfg)
        layout = object_layout(
            len(cfg.paths),
            cfg.threads,
            cfg.num_dirs,
            cfg.num_files,
            size,
            block,
            list_max=cfg.s3listobj,
            rand_objects=cfg.s3randobj,
            mix=mix,
            mix_ops=cfg.s3mixops,
        )
        return Resolved(PathType.S3, layout, (), settings=access)

    def open(
        self, cfg: BenchConfig, resolved: Resolved, check: Callable[[], None] | None = None
    ) -> S3Targets:
        access = resolved.settings
        if not isinstance(access, S3Access):
            raise TypeError("the S3 engine opens only what it resolved")  # a programming error
        # Each endpoint serves every len(endpoints)-th thread rank, each with its slots.
        slots = math.ceil(cfg.threads / len(access.endpoints)) * cfg.iodepth
        in_parts = cfg.size_bytes > cfg.block_size and not (cfg.rand or cfg.s3randobj)
        return S3Targets(
            cfg.paths,
            access=access,
            objprefix=cfg.s3objprefix,
            max_connections=min(slots, cfg.s3maxconns or slots),
            multidel=cfg.s3multidel,
            # Objects larger than -b (but not --rand's single blocks): a thread keeps up
            # to --iodepth of one object's parts or ranges in flight (see slot_depth).
            in_parts=in_parts,
            meta=settings(cfg),
            uploads=upload_settings(cfg),
            list_verify=cfg.s3listverify,
            files_per_prefix=cfg.num_files,
            log=RequestLog(cfg.s3logprefix, cfg.s3log) if cfg.s3log else None,
            route=route_of(cfg, access, in_parts=in_parts),
        )

    def begin_phase(
        self, targets: Targets, kind: PhaseKind, options: IoOptions
    ) -> BenchIOError | None:
        return None  # (--fadv and --mmap are refused for object storage)

    def prepare_files(
        self,
        targets: Targets,
        sizes: Sequence[int],
        *,
        trunc: bool,
        trunctosize: bool,
        prealloc: bool,
    ) -> BenchIOError | None:
        return None  # (refused for object storage: see config.validate)

    def rank_dirs(
        self,
        targets: Targets,
        dirs: Sequence[tuple[int, str]],
        *,
        remove: bool,
        missing_ok: bool,
    ) -> BenchIOError | None:
        return None  # key prefixes need no making

    def sync(self, targets: Targets) -> None:
        """(--sync is refused for object storage.)"""

    def slot_depth(
        self, targets: Targets, kind: PhaseKind, options: IoOptions, iodepth: int
    ) -> int:
        """Objects larger than a block, and the native route's phases: one slot per
        thread, with up to ``iodepth`` of an object's parts or ranges, or of its objects,
        in flight; else ``iodepth`` slots with one request each."""
        opened = _opened(targets)
        if applies(opened.route, kind, options):
            return iodepth
        return iodepth if kind in (WRITE, READ) and opened.in_parts else 1

    def run(self, job: Job) -> RawBatch:
        raise TypeError("the S3 engine runs on the event loop (run_async)")

    async def run_async(self, job: Job) -> RawBatch:
        released = await job.released_async()
        if released is None:
            return ListRecord().batch()  # the phase was stopped before it started
        run = released.ops
        assert isinstance(run, EntryRun)
        targets = _targets(released)
        requests = _Requests(released, run, await targets.client(run.rank), targets.meta)
        requests.shared = targets.shared_buckets
        requests.uploads = targets.uploads
        requests.op_kinds = targets.op_kinds
        stopped = released.stop.is_set if released.stop is not None else (lambda: False)
        try:
            # At the time limit the requests in flight are cut off: not counted, no error.
            with phase_cap(released.deadline_ns):
                if released.kind in (LISTOBJ, MULTIDEL):
                    await requests.whole_buckets(targets, stopped)
                elif released.kind == LISTOBJPAR:
                    await requests.prefixes(targets, stopped)
                elif targets.native is not None and applies(
                    targets.route, released.kind, released.options
                ):
                    if targets.route.parts:  # (multipart uploads: their parts natively)
                        requests.native = targets.native
                        await requests.entries(targets, stopped)
                    else:
                        await native_entries(requests, targets.native, _names(run, targets))
                else:
                    await requests.entries(targets, stopped)
        except BenchIOError as exc:  # a request failed, or --verify found a wrong byte
            requests.record.error = exc
        return requests.batch()


# How long an upload the time limit cut off may take to be aborted (a round trip, after
# the phase's end: its time is not the phase's).
ABORT_GRACE_S = 2.0
# The most keys one ListObjectsV2 page holds.
MAX_LIST_KEYS = 1000
# A listing whose pages say "more to come" (IsTruncated) yet bring no key, or hand back the
# token they were asked with, this many times in a row is going nowhere: an error, not an
# endless loop. (S3 may answer a page or two without keys, skipping deleted ones.)
MAX_IDLE_PAGES = 3


# The phase whose request each kind of a MIXED phase makes
_MIXED_AS = {GET: READ, PUT: WRITE, DELETE: RMFILES, STAT_OP: STAT}


def _checked_mix(cfg: BenchConfig) -> Mix | None:
    """--s3mix's shares; ConfigError where the run cannot do them as asked."""
    if cfg.s3mix is None:
        if cfg.s3mixops is not None:
            raise ConfigError("--s3mixops: only applies with --s3mix")
        return None
    mix = parse_mix(cfg.s3mix)
    if cfg.iodepth > 1:
        raise ConfigError(
            "--s3mix: a thread's operations run one after the other (--iodepth 1); "
            "give more threads (-t) for more in flight"
        )
    if dict(mix.shares)[DELETE] and cfg.num_files * max(cfg.num_dirs, 1) < 2:
        raise ConfigError(
            "--s3mix: deletes need two objects per thread at least (-n x -N), so that one "
            "is always there to read"
        )
    return mix


def _names(run: EntryRun, targets: S3Targets) -> Callable[[int], tuple[str, str]]:
    """Entry k's bucket and key."""
    index, buckets, objprefix = run.path_index, targets.buckets, targets.objprefix

    def names(k: int) -> tuple[str, str]:
        path = buckets[index if isinstance(index, int) else index[k]]
        return path.bucket, path.key(run.name(k), objprefix)

    return names


def _prefix_of(name: str) -> str:
    """The listing prefix of an object's name: ``r0/d1/r0-f7`` -> ``r0/d1/r0-``."""
    return name[: name.rindex("-f") + 1]


def _too_few(path: BucketPath, what: str) -> BenchIOError:
    return BenchIOError(
        path=str(path),
        offset=None,
        errno=errno.ENOENT,
        detail=f"{what}: the bucket holds fewer of the objects than -t, -n and -N make "
        "(they must match the run that wrote them)",
    )


async def _sleep_until(instant_ns: int) -> None:
    wait = instant_ns - perf_counter_ns()
    if wait > 0:
        await asyncio.sleep(wait / 1e9)


class _Requests:
    """The requests of one run, and what they recorded: each request that moves data is
    timed (``io_starts``/``io_ends``), each GET's time to first byte kept. Under a rate
    limit request j of entry k is due ``((first + k) * per + j) * block / rate`` after the
    phase start, its thread's requests numbered in order (all its slots share them)."""

    def __init__(self, job: Job, run: EntryRun, client: S3Client, meta: MetaSettings) -> None:
        self.job, self.run, self.client, self.meta = job, run, client, meta
        self.shared = False  # MKBUCKETS: buckets for several users' credentials
        self.uploads = UploadSettings()
        self.op_kinds: dict[str, OpKindTally] = {}  # MIXED: S3Targets.op_kinds
        self._rng: random.Random | None = None  # --s3mpusizevar's part sizes (made once used)
        # The native route's connections, where it makes multipart uploads' parts
        self.native: Connections | None = None
        self.record = ListRecord()
        self.first_bytes: list[int] = []
        rate = job.options.rate_bytes_per_s
        self._ns_per_request = run.block * 1_000_000_000 / rate if rate else 0.0
        self._per_entry = max(run.blocks_per_entry, 1)

    def due(self, k: int, j: int) -> int:
        """When request ``j`` of entry ``k`` may start (0: at once, no rate limit)."""
        if not self._ns_per_request:
            return 0
        seq = (self.run.first + k) * self._per_entry + j
        return self.job.schedule_start_ns + int(seq * self._ns_per_request)

    def _record(self, start: int, end: int, first_byte: int = 0) -> None:
        """A request that moved data, timed (with its time to first byte: a GET)."""
        self.record.io_starts.append(start)
        self.record.io_ends.append(end)
        if first_byte:
            self.first_bytes.append(first_byte)

    def batch(self) -> RawBatch:
        batch = self.record.batch()
        if self.first_bytes:
            done = len(batch.io_ends)
            batch.first_bytes = np.array(self.first_bytes[:done], dtype=np.int64)
        return batch

    async def entries(self, targets: S3Targets, stopped: Callable[[], bool]) -> None:
        """The run's entries (buckets or objects) one after the other, each timed; the run
        ends at its budget's end or a stop."""
        job, run, record, index = self.job, self.run, self.record, self.run.path_index
        whole_buckets = job.kind in (MKDIRS, RMDIRS, *BUCKET_MD_KINDS)
        for k in range(len(run)):
            due = self.due(k, 0)
            if due > job.until_ns:  # --limit...: not before this run's end
                await _sleep_until(job.until_ns)
                return  # (the rest waits for the slot's next run)
            if due:
                await _sleep_until(due)
            bucket = targets.buckets[index if isinstance(index, int) else index[k]]
            record.starts.append(perf_counter_ns())
            if whole_buckets:
                await self.bucket(bucket.bucket)
            else:
                try:
                    await self.object(k, bucket.bucket, bucket.key(run.name(k), targets.objprefix))
                except S3Error:
                    # --s3ignoreerrors: a failed transfer ends its object, not the run (its
                    # failed requests are no I/O operations)
                    if not (self.uploads.ignore_errors and job.kind in (WRITE, READ)):
                        raise
            record.ends.append(end := perf_counter_ns())
            if due:
                record.intended.append(due)
            if end > job.until_ns or stopped():
                return

    async def whole_buckets(self, targets: S3Targets, stopped: Callable[[], bool]) -> None:
        """LISTOBJ and MULTIDEL: the run's entries (objects, by bucket), a page or a batch
        at a time, each entry ending with the requests that listed or deleted it; a run
        ends between them at its budget's end or a stop."""
        run, index = self.run, self.run.path_index
        k = 0
        while k < len(run):
            if isinstance(index, int):
                bucket, left = index, len(run) - k
            else:  # the entries of one bucket are consecutive
                bucket, left = index[k], 1
                while k + left < len(run) and index[k + left] == bucket:
                    left += 1
            while left:
                if self.job.kind == LISTOBJ:
                    done = await self._list_page(targets, bucket, left)
                else:
                    done = await self._delete_batch(targets, bucket, left)
                k, left = k + done, left - done
                if perf_counter_ns() > self.job.until_ns or stopped():
                    return

    async def _list_page(self, targets: S3Targets, index: int, want: int) -> int:
        """Up to ``want`` more keys of PATH ``index``'s listing (a page of at most 1000)."""
        path = targets.buckets[index]
        async with targets.lock(index):
            want = min(want, MAX_LIST_KEYS)
            start = perf_counter_ns()
            token = targets.tokens.get(index)
            page = await self._timed(
                self.client.list_objects(
                    path.bucket, path.list_prefix(targets.objprefix), max_keys=want, token=token
                )
            )
            got = min(len(page.keys), want)
            if got < want and page.next_token is None:
                raise _too_few(path, "the listing ended early")
            idle = page.next_token is not None and (not got or page.next_token == token)
            targets.idle_pages[index] = idle_pages = (
                targets.idle_pages.get(index, 0) + 1 if idle else 0
            )
            if idle_pages >= MAX_IDLE_PAGES:
                raise self._listing_stuck(path, idle_pages, page.next_token == token)
            targets.tokens[index] = page.next_token
            self._entries(got, start)
        return got

    async def prefixes(self, targets: S3Targets, stopped: Callable[[], bool]) -> None:
        """LISTOBJ_P: the run's entries (the thread's objects) listed by their prefix
        (``r<r>/d<i>/r<r>-``), a page at a time; a run ends between pages at its budget's
        end or a stop."""
        run, index = self.run, self.run.path_index
        k = 0
        while k < len(run):
            bucket = index if isinstance(index, int) else index[k]
            prefix = _prefix_of(run.name(k))
            left = 1
            while k + left < len(run) and _prefix_of(run.name(k + left)) == prefix:
                if not isinstance(index, int) and index[k + left] != bucket:
                    break
                left += 1
            while left:
                done = await self._list_prefix(targets, bucket, prefix, left)
                k, left = k + done, left - done
                if perf_counter_ns() > self.job.until_ns or stopped():
                    return

    async def _list_prefix(self, targets: S3Targets, index: int, prefix: str, want: int) -> int:
        """Up to ``want`` more keys of ``prefix`` in PATH ``index`` (a page of at most 1000);
        with --s3listverify, once the prefix is listed whole, its keys checked."""
        path = targets.buckets[index]
        full = path.key(prefix, targets.objprefix)
        listing = (index, full)
        async with targets.lock(listing):
            want = min(want, MAX_LIST_KEYS)
            start = perf_counter_ns()
            token = targets.prefix_tokens.get(listing)
            page = await self._timed(
                self.client.list_objects(path.bucket, full, max_keys=want, token=token)
            )
            got = min(len(page.keys), want)
            if got < want and page.next_token is None:
                raise _too_few(path, f"the listing of {full} ended early")
            idle = page.next_token is not None and (not got or page.next_token == token)
            pages = targets.prefix_idle[listing] = (
                targets.prefix_idle.get(listing, 0) + 1 if idle else 0
            )
            if pages >= MAX_IDLE_PAGES:
                raise self._listing_stuck(path, pages, page.next_token == token)
            targets.prefix_tokens[listing] = page.next_token
            if targets.list_verify:
                keys = targets.listed.setdefault(listing, [])
                keys.extend(page.keys[:got])
                if len(keys) >= targets.files_per_prefix:
                    self._check_listing(path, full, keys, targets.files_per_prefix)
            self._entries(got, start)
        return got

    def _check_listing(self, path: BucketPath, prefix: str, keys: list[str], files: int) -> None:
        """--s3listverify: the keys of ``prefix`` are its ``files`` objects, in S3's order
        (by UTF-8 bytes)."""
        expected = sorted((f"{prefix}f{j}" for j in range(files)), key=str.encode)
        if keys != expected:
            wrong = next(
                (
                    f"{got!r} where {want!r} was expected"
                    for got, want in zip(keys, expected, strict=False)
                    if got != want
                ),
                f"{len(keys)} keys, {files} expected",
            )
            raise S3Error(
                endpoint=self.client.endpoint.url,
                bucket=path.bucket,
                key=prefix,
                status=200,
                code="VerifyFailed",
                reason=f"listing check: {wrong}",
            )

    def _listing_stuck(self, path: BucketPath, pages: int, same_token: bool) -> S3Error:
        """LISTOBJ's error for PATH ``path`` after ``pages`` idle pages (the last one
        handing back its own token if ``same_token``, else bringing no key)."""
        did = "handed back the token they were asked with" if same_token else "brought no keys"
        return S3Error(
            endpoint=self.client.endpoint.url,
            bucket=path.bucket,
            status=200,
            reason=f"the listing makes no progress: {pages} ListObjectsV2 pages in a row "
            f"said more is to come (IsTruncated) and {did}",
        )

    async def _delete_batch(self, targets: S3Targets, index: int, want: int) -> int:
        """List up to ``want`` (at most --s3multidel) of PATH ``index``'s objects, and
        delete them in one DeleteObjects request."""
        path = targets.buckets[index]
        async with targets.lock(index):
            want = min(want, targets.multidel)
            start = perf_counter_ns()
            prefix = path.list_prefix(targets.objprefix)
            page = await self._timed(self.client.list_objects(path.bucket, prefix, want))
            keys = page.keys[:want]
            if len(keys) < want:
                raise _too_few(path, f"{len(keys)} objects left of the {want} to delete")
            await self._timed(self.client.delete_objects(path.bucket, keys))
            self._entries(want, start)
        return want

    def _entries(self, count: int, start: int) -> None:
        """``count`` entries done together, from ``start`` to now."""
        end = perf_counter_ns()
        self.record.starts.extend([start] * count)
        self.record.ends.extend([end] * count)

    async def bucket(self, bucket: str) -> None:
        kind = self.job.kind
        if kind == MKDIRS:
            await self.client.create_bucket(
                bucket, object_lock=self.meta.olockcfg, shared=self.shared
            )
        elif kind == RMDIRS:
            await self.client.delete_bucket(bucket)
        else:
            await bucket_request(kind, self.client, self.meta, bucket)

    async def object(self, k: int, bucket: str, key: str, kind: PhaseKind | None = None) -> None:
        """Object ``k`` of the run in a phase of ``kind`` (default: the job's)."""
        client, size, block = self.client, self.run.size, self.run.block
        kind = kind or self.job.kind
        if kind == MIXED:
            await self._mixed(k, bucket, key)
        elif kind in OBJECT_MD_KINDS:
            await object_request(kind, client, self.meta, bucket, key)
        elif kind == STAT:
            await client.head_object(bucket, key)
        elif kind == RMFILES:
            await client.delete_object(bucket, key)
        elif kind == WRITE and size <= block:
            body = _block(self.job, 0, size)
            start = perf_counter_ns()
            await client.put_object(bucket, key, body, self.meta.upload_headers(), etag=False)
            self._record(start, perf_counter_ns())
        elif kind == WRITE:
            await self._multipart(k, bucket, key)
        elif kind == READ and self.run.offsets is not None:  # --rand: one block of it
            await self._get(bucket, key, self.run.offsets[k], block, 0)
        elif kind == READ and 0 < size <= block:  # one GET, into the slot's read area
            await self._get(bucket, key, 0, size, 0)
        elif kind == READ:
            areas = list(range(self.job.depth))  # the slot's read areas not in use

            async def get(j: int, offset: int) -> None:
                await _sleep_until(self.due(k, j))
                area = areas.pop()
                try:
                    await self._get(bucket, key, offset, min(block, size - offset), area)
                finally:
                    areas.append(area)

            ranges = enumerate(range(0, size, block))
            await self._in_flight([functools.partial(get, j, offset) for j, offset in ranges])
        else:  # pragma: no cover - a programming error
            raise ValueError(kind)

    async def _mixed(self, k: int, bucket: str, key: str) -> None:
        """Operation ``k`` of a MIXED run, its kind the run's (engines.s3.mixed), kept in
        its kind's tally."""
        assert self.run.ops is not None  # (a MIXED run says each operation's kind)
        op = self.run.ops[k]
        tally = self.op_kinds.setdefault(op, OpKindTally())
        first_bytes = len(self.first_bytes)
        start = perf_counter_ns()
        await self.object(k, bucket, key, _MIXED_AS[op])
        tally.latency_ns.append(perf_counter_ns() - start)
        tally.ops += 1
        if op in (GET, PUT):
            tally.bytes += self.run.size
        if len(self.first_bytes) > first_bytes:  # (a GET's first range)
            tally.ttfb_ns.append(self.first_bytes[first_bytes])

    async def _in_flight(self, requests: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
        """The results of ``requests``, in order, up to the job's depth of them at a time
        (a task group); the first to fail is raised once the others are cancelled. None
        starts once one has failed: the place it frees would otherwise go to the next
        request before the group is cancelled (a part PUT after the one that failed, sent
        before the upload's abort, and on S3 perhaps kept past it)."""
        gate = anyio.Semaphore(self.job.depth)
        results: dict[int, T] = {}
        stopped = False

        async def limited(index: int, request: Callable[[], Awaitable[T]]) -> None:
            nonlocal stopped
            async with gate:
                if stopped:
                    return
                try:
                    results[index] = await request()
                except BaseException:
                    stopped = True
                    raise

        try:
            async with anyio.create_task_group() as group:
                for index, request in enumerate(requests):
                    group.start_soon(limited, index, request)
        except BaseExceptionGroup as failed:
            raise _first_failure(failed) from None
        return [results[index] for index in range(len(requests))]

    async def _timed(self, request: Awaitable[T]) -> T:
        start = perf_counter_ns()
        result = await request
        self._record(start, perf_counter_ns())
        return result

    async def _get(self, bucket: str, key: str, offset: int, length: int, area: int) -> None:
        """A ranged GET into read area ``area`` of the slot's buffer, checked."""
        buf = self.job.buf
        assert buf is not None
        view = memoryview(buf.read_mem)[area * buf.read_area :][:length]
        start = perf_counter_ns()
        got, ttfb = await self.client.get_range(bucket, key, offset, view)
        end = perf_counter_ns()
        if got != length:
            raise S3Error(
                endpoint=self.client.endpoint.url,
                bucket=bucket,
                key=key,
                offset=offset + got,
                reason=f"the object ended after {offset + got} bytes, "
                f"{self.run.size} expected (-s)",
            )
        salt = self.job.options.verify
        mismatch = None if salt is None else check(view, offset, salt)
        if mismatch is not None:
            raise VerifyError(
                path=f"s3://{bucket}/{key}",
                offset=mismatch.offset,
                expected=mismatch.expected,
                found=mismatch.found,
            )
        self._record(start, end, max(ttfb, 1))

    async def _multipart(self, k: int, bucket: str, key: str) -> None:
        """An object larger than ``-b``: uploaded in parts of ``-b`` bytes (the last may be
        shorter), up to the job's depth of them in flight; an upload that fails is
        aborted."""
        client, size, block, uploads = self.client, self.run.size, self.run.block, self.uploads
        upload = await client.create_multipart_upload(bucket, key, self.meta.upload_headers())

        async def part(number: int, offset: int, length: int) -> str:
            await _sleep_until(self.due(k, number - 1))
            body = _block(self.job, offset, length)
            return await self._timed(client.upload_part(bucket, key, upload, number, body))

        try:
            if self._rng is None:  # (seeding costs a getrandom call: not for every run)
                self._rng = random.Random()
            sizes = uploads.part_sizes(size, block, self._rng)
            if self.native is not None:  # (the native route: engines.s3.native)
                etags = await native_parts(self, self.native, bucket, key, upload, sizes)
            else:
                parts = enumerate(sizes, 1)
                etags = await self._in_flight(
                    [functools.partial(part, n, offset, length) for n, (offset, length) in parts]
                )
            if uploads.complete:
                await client.complete_multipart_upload(
                    bucket, key, upload, etags, missing_ok=uploads.ignore_404
                )
        except BaseException:
            # The parts would stay on the server: aborted, also when the time limit cut the
            # upload off (shielded from that, for a moment).
            with anyio.move_on_after(ABORT_GRACE_S, shield=True):
                with contextlib.suppress(S3Error):  # the first error is the one to report
                    await client.abort_multipart_upload(bucket, key, upload)
            raise
