"""S3 targets: ``s3://bucket[/prefix]`` PATHs, endpoints, credentials, addressing and object
names; pure.

Semantics follow elbencho's S3 options: ``--s3endpoints`` is a comma-separated list of
``[http(s)://]host[:port]`` (``AWS_ENDPOINT_URL_S3``, then ``AWS_ENDPOINT_URL``, when not
given), used by thread ranks round-robin; ``--s3key``/``--s3secret`` fall back to
``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``; ``--s3objprefix`` is prepended to every
object name as it is. Object names are those of dir mode (:mod:`aiobench.plan.dirmode`, with the
buckets as its paths): ``r<rank>/d<dir>/r<rank>-f<file>`` in bucket
``(rank + dir) % buckets``. A PATH's prefix is a folder: ``s3://b/run1`` puts them below
``run1/``.

Every malformed value raises :class:`~aiobench.errors.ConfigError` naming the option (or the
environment variable it came from). Credentials never appear in a message or a repr.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import numpy as np

from aiobench.engines.s3.mixed import Mix, MixedOps
from aiobench.engines.s3.policy import (
    RequestPolicy,
    parse_credential_list,
    parse_policy,
    session_token,
)
from aiobench.errors import ConfigError
from aiobench.kinds import (
    BUCKET_MD_KINDS,
    LISTOBJ,
    MIXED,
    MKDIRS,
    MULTIDEL,
    READ,
    RMDIRS,
    WRITE,
    PhaseKind,
    phase_name,
)
from aiobench.plan.dirmode import DirLayout, EntryRun, EntryStream
from aiobench.plan.split import StreamOrder, ThreadSplit
from aiobench.plan.workload import stream_rng

if TYPE_CHECKING:
    from aiobench.config import BenchConfig

SCHEME = "s3://"
DEFAULT_REGION = "us-east-1"  # what AWS SDKs and most S3 servers assume without one
ENDPOINT_ENV = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
KEY_ENV = "AWS_ACCESS_KEY_ID"
SECRET_ENV = "AWS_SECRET_ACCESS_KEY"
TOKEN_ENV = "AWS_SESSION_TOKEN"
_DEFAULT_PORTS = {"http": 80, "https": 443}

# S3's bucket naming rules (the general-purpose bucket ones, which also make the name a
# valid DNS label sequence for virtual-host addressing).
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_BUCKET_RULE = (
    "bucket name must be 3 to 63 characters of a-z, 0-9, '.' and '-', beginning and "
    "ending with a letter or digit"
)
_REGION = re.compile(r"[a-z0-9-]{1,64}")


@dataclass(frozen=True, slots=True)
class BucketPath:
    """One PATH: a bucket and the key prefix (folder) below which the run's objects go."""

    bucket: str
    prefix: str = ""

    def __str__(self) -> str:
        return f"{SCHEME}{self.bucket}/{self.prefix}" if self.prefix else f"{SCHEME}{self.bucket}"

    def key(self, name: str, objprefix: str = "") -> str:
        """The object key of ``name`` (``r0/d1/r0-f7``): prefix folder, then ``objprefix``
        as given, then the name."""
        return f"{self.prefix}/{objprefix}{name}" if self.prefix else f"{objprefix}{name}"

    def list_prefix(self, objprefix: str = "") -> str:
        """The prefix that lists this PATH's objects (all of them, with ``objprefix``)."""
        return self.key("", objprefix)


def is_s3_path(path: str) -> bool:
    return path.startswith(SCHEME)


def parse_path(path: str) -> BucketPath:
    """``s3://bucket[/prefix]`` -> :class:`BucketPath`; anything else is a ConfigError."""
    if not is_s3_path(path):
        raise ConfigError(f"PATH: {path}: not an S3 path (expected s3://bucket[/prefix])")
    bucket, _, prefix = path[len(SCHEME) :].partition("/")
    if not bucket:
        raise ConfigError(f"PATH: {path}: no bucket name (expected s3://bucket[/prefix])")
    if not _BUCKET.fullmatch(bucket) or ".." in bucket or _is_ip(bucket):
        raise ConfigError(f"PATH: {path}: {_BUCKET_RULE}, and not an IP address")
    prefix = prefix.rstrip("/")
    if prefix and "" in prefix.split("/"):
        raise ConfigError(f"PATH: {path}: the key prefix has an empty part ('//')")
    if "\x00" in prefix or any(ord(c) < 0x20 for c in prefix):
        raise ConfigError(f"PATH: {path}: the key prefix has control characters")
    return BucketPath(bucket, prefix)


def parse_paths(paths: Sequence[str]) -> tuple[BucketPath, ...]:
    """All PATHs of an S3 run: every one ``s3://``, none given twice."""
    if not paths:
        raise ConfigError("missing PATH: name at least one s3://bucket[/prefix]")
    local = [p for p in paths if not is_s3_path(p)]
    if local:
        raise ConfigError(
            f"PATH: {local[0]}: S3 paths (s3://...) and local paths cannot be mixed in one run"
        )
    parsed = [parse_path(p) for p in paths]
    seen: set[BucketPath] = set()
    for path, target in zip(paths, parsed, strict=True):
        if target in seen:
            raise ConfigError(f"PATH: {path} is given more than once")
        seen.add(target)
    return tuple(parsed)


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One S3 endpoint: where to connect and the Host header (and signed host) to send."""

    scheme: str
    host: str
    port: int

    @property
    def netloc(self) -> str:
        """``host[:port]`` as in a URL and the Host header; the port only when it is not
        the scheme's default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if _DEFAULT_PORTS[self.scheme] == self.port else f"{host}:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.netloc}"

    def __str__(self) -> str:
        return self.url


def parse_endpoint(text: str, source: str = "--s3endpoints") -> Endpoint:
    """``[http(s)://]host[:port][/]`` -> :class:`Endpoint`; ``source`` names the option or
    variable in messages."""
    raw = text.strip()
    if not raw:
        raise ConfigError(f"{source}: empty endpoint")
    if "@" in raw:
        # Never echo it: the part before '@' may be a key and secret.
        raise ConfigError(
            f"{source}: an endpoint holds user info ('...@'); give credentials with "
            "--s3key/--s3secret or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY"
        )
    if "://" not in raw:
        raw = "http://" + raw
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError:
        raise ConfigError(
            f"{source}: {_shown(text)}: not a URL ([http(s)://]host[:port])"
        ) from None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise ConfigError(f"{source}: {_shown(text)}: the scheme must be http or https")
    if not parts.hostname:
        raise ConfigError(f"{source}: {_shown(text)}: no host name")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ConfigError(
            f"{source}: {_shown(text)}: an endpoint is [http(s)://]host[:port], without a path "
            "(buckets are given as PATHs)"
        )
    if port == 0:
        raise ConfigError(f"{source}: {_shown(text)}: port 0 is not a port")
    return Endpoint(scheme, parts.hostname, port or _DEFAULT_PORTS[scheme])


def _shown(text: str) -> str:
    """An endpoint as quoted in a message: cut short, no user info (see parse_endpoint)."""
    text = text.strip()
    return repr(text if len(text) <= 200 else text[:200] + "...")


def parse_endpoints(value: str | None, env: Mapping[str, str]) -> tuple[Endpoint, ...]:
    """``--s3endpoints URL[,URL...]``, else the first of ``AWS_ENDPOINT_URL_S3`` and
    ``AWS_ENDPOINT_URL`` that is set (one URL each)."""
    if value is not None and value.strip():
        items, source = value.split(","), "--s3endpoints"
    else:
        source = next((name for name in ENDPOINT_ENV if env.get(name, "").strip()), "")
        if not source:
            raise ConfigError(
                "--s3endpoints: no S3 endpoint given (nor AWS_ENDPOINT_URL_S3 or "
                "AWS_ENDPOINT_URL set)"
            )
        items = [env[source]]
    if any(not item.strip() for item in items):
        raise ConfigError(f"{source}: an empty entry in the endpoint list")
    endpoints = tuple(parse_endpoint(item, source) for item in items)
    if len(set(endpoints)) != len(endpoints):
        raise ConfigError(f"{source}: an endpoint is given more than once")
    return endpoints


def check_virtual_host(endpoints: Sequence[Endpoint]) -> None:
    """``--s3virtaddr`` puts the bucket into the host name (``bucket.host``): refuse an
    endpoint given by IP address, where that names no host."""
    for endpoint in endpoints:
        if _is_ip(endpoint.host):
            raise ConfigError(
                f"--s3virtaddr: the endpoint {endpoint.url} is an IP address; virtual-host "
                "addressing (bucket.host) needs a host name"
            )


def endpoint_of_rank(endpoints: Sequence[Endpoint], rank: int) -> Endpoint:
    """Thread ranks use the endpoints round-robin (elbencho's assignment)."""
    return endpoints[rank % len(endpoints)]


@dataclass(frozen=True, slots=True)
class Credentials:
    """An access key and its secret, and the session token of temporary credentials ("":
    none); the secret and the token are left out of the repr."""

    access_key: str
    secret_key: str = field(repr=False)
    session_token: str = field(default="", repr=False)


def parse_credentials(
    key: str | None, secret: str | None, env: Mapping[str, str], token: str | None = None
) -> Credentials:
    """``--s3key``/``--s3secret``, each falling back to its environment variable; the
    session token (``--s3sessiontoken``, else ``AWS_SESSION_TOKEN``) belongs to the
    environment's credentials, so the variable is taken only where both of them come from
    there."""
    access_key = key if key else env.get(KEY_ENV, "")
    secret_key = secret if secret else env.get(SECRET_ENV, "")
    if token is None:
        token = "" if key or secret else env.get(TOKEN_ENV, "")
    if token and (not token.isascii() or not token.isprintable() or token != token.strip()):
        raise ConfigError(
            f"{TOKEN_ENV}: must be printable ASCII without surrounding spaces (not shown)"
        )
    if not access_key:
        raise ConfigError(f"--s3key: no S3 access key given (nor {KEY_ENV} set)")
    if not secret_key:
        raise ConfigError(f"--s3secret: no S3 secret given (nor {SECRET_ENV} set)")
    for option, text in (("--s3key", access_key), ("--s3secret", secret_key)):
        # Both go into headers; a control character or non-ASCII cannot be sent (the
        # value itself is not shown).
        if not text.isascii() or not text.isprintable() or text != text.strip():
            raise ConfigError(
                f"{option}: must be printable ASCII without surrounding spaces (not shown)"
            )
    return Credentials(access_key, secret_key, token)


def parse_region(value: str | None) -> str:
    """``--s3region``, default us-east-1."""
    if not value:
        return DEFAULT_REGION
    if not _REGION.fullmatch(value):
        raise ConfigError(f"--s3region: {value!r}: a region is lower-case letters, digits and '-'")
    return value


@dataclass(frozen=True, slots=True)
class S3Access:
    """What the requests of a run need, parsed once when it is resolved (from the options
    and the environment) and carried to the engine's open."""

    buckets: tuple[BucketPath, ...]
    endpoints: tuple[Endpoint, ...]
    # Thread rank r uses credentials[r % len(credentials)] (--s3credfile, --s3credlist).
    credentials: tuple[Credentials, ...]
    region: str
    virtual_host: bool
    timeout_s: int  # --s3timeout: see aiobench.engines.s3.deadline
    policy: RequestPolicy = field(default_factory=RequestPolicy)

    def credentials_of_rank(self, rank: int) -> int:
        """The index of thread rank ``rank``'s credentials (elbencho's assignment)."""
        return rank % len(self.credentials)


def parse_access(cfg: BenchConfig, env: Mapping[str, str]) -> S3Access:
    """The buckets, endpoints, credentials and region of ``cfg``; :class:`ConfigError`
    naming the option (or variable) that is wrong."""
    endpoints = parse_endpoints(cfg.s3endpoints, env)
    if cfg.s3virtaddr:
        check_virtual_host(endpoints)
    return S3Access(
        buckets=parse_paths(cfg.paths),
        endpoints=endpoints,
        credentials=_all_credentials(cfg, env),
        region=parse_region(cfg.s3region),
        virtual_host=cfg.s3virtaddr,
        timeout_s=cfg.s3timeout_s,
        policy=parse_policy(cfg),
    )


def _all_credentials(cfg: BenchConfig, env: Mapping[str, str]) -> tuple[Credentials, ...]:
    """--s3credfile's or --s3credlist's credentials, else those of --s3key/--s3secret (or
    the environment), with --s3sessiontoken."""
    token = session_token(cfg)
    pairs = parse_credential_list(cfg)
    if pairs:
        if cfg.s3key or cfg.s3secret:
            given = "--s3credfile" if cfg.s3credfile is not None else "--s3credlist"
            raise ConfigError(f"{given}: cannot be combined with --s3key/--s3secret (give one)")
        return tuple(Credentials(key, secret, token or "") for key, secret in pairs)
    return (parse_credentials(cfg.s3key, cfg.s3secret, env, token),)


@dataclass(frozen=True, slots=True)
class BucketAddress:
    """Where a bucket's requests go: the scheme, the host to connect to (also the Host
    header), and the path that comes before an (encoded) object key."""

    scheme: str
    host: str
    path: str

    def object_path(self, encoded_key: str) -> str:
        return f"{self.path}/{encoded_key}"


def bucket_address(endpoint: Endpoint, bucket: str, virtual_host: bool) -> BucketAddress:
    """Path style (``http://host/bucket/key``, the default) or virtual-host style
    (``http://bucket.host/key``, ``--s3virtaddr``)."""
    if virtual_host:
        return BucketAddress(endpoint.scheme, f"{bucket}.{endpoint.netloc}", "")
    return BucketAddress(endpoint.scheme, endpoint.netloc, f"/{bucket}")


@dataclass(frozen=True, slots=True)
class BucketLayout(DirLayout):
    """Dir mode's layout with the buckets as its paths. Its phases of whole buckets are
    shared out by bucket: thread rank r takes those at PATH index r, r + threads, ...
    (elbencho: more threads help only with more buckets). MKBUCKETS and RMBUCKETS make and
    remove them; LISTOBJ lists up to ``list_max`` objects of each, and MULTIDEL deletes
    all of the layout's objects in each: an entry of these is one object listed or
    deleted, by bucket."""

    list_max: int = 0  # --s3listobj N
    rand_objects: bool = False  # --s3randobj: READ as --rand reads it
    mix: Mix | None = None  # --s3mix
    mix_ops: int | None = None  # --s3mixops (None: the thread's objects)

    @property
    def dir_phases(self) -> bool:
        return True  # the buckets

    def phase_name(self, kind: PhaseKind, rwmix_pct: int | None = None) -> str:
        """Dir mode's phases as elbencho names them on object storage (MKBUCKETS, ...)."""
        return phase_name(kind, rwmix_pct, objects=True)

    def streams(
        self, kind: PhaseKind, phase_index: int, order: StreamOrder, split: ThreadSplit
    ) -> list[EntryStream]:
        """Dir mode's streams; ``--rand`` reads are ranged GETs of single blocks
        (:class:`RandomBlocks`)."""
        if kind == MIXED:
            assert self.mix is not None  # (the phase runs only with --s3mix)
            return [
                MixedOps(
                    self,
                    kind,
                    rank,
                    self.entries(kind, rank),
                    self.mix,
                    stream_rng(order, phase_index, rank),
                )
                for rank in split.ids
            ]
        if not ((order.rand or self.rand_objects) and kind == READ):
            return DirLayout.streams(self, kind, phase_index, order, split)
        count = self.random_reads(order, split.slices)
        return [
            RandomBlocks(self, rank, count, stream_rng(order, phase_index, rank))
            for rank in split.ids
        ]

    def random_reads(self, order: StreamOrder, slices: int) -> int:
        """Each thread's ranged GETs of one block under --rand: --randamount over all
        ``slices`` thread ranks, else as many as its objects have blocks."""
        if order.randamount_bytes is None:
            return self.files_per_rank() * max(self.file_size // self.block_size, 1)
        return order.randamount_bytes // slices // self.block_size

    def buckets(self, rank: int) -> range:
        """The PATH indices of thread rank ``rank``'s buckets."""
        return range(rank, self.num_paths, self.threads)

    def per_bucket(self, kind: PhaseKind, bucket: int) -> int:
        """Entries of ``bucket`` in a phase of whole buckets."""
        if kind in (MKDIRS, RMDIRS, *BUCKET_MD_KINDS):
            return 1
        objects = _objects_per_bucket(self)[bucket]
        return min(objects, self.list_max) if kind == LISTOBJ else objects

    def entries(self, kind: PhaseKind, rank: int) -> int:
        if kind == MIXED:
            return self.mix_ops or self.files_per_rank()
        if kind in BUCKET_KINDS:
            return sum(self.per_bucket(kind, b) for b in self.buckets(rank))
        return DirLayout.entries(self, kind, rank)

    def entry(self, kind: PhaseKind, rank: int, k: int) -> tuple[int, str]:
        if kind not in BUCKET_KINDS:
            return DirLayout.entry(self, kind, rank, k)
        for bucket in self.buckets(rank):
            count = self.per_bucket(kind, bucket)
            if k < count:
                return bucket, ""
            k -= count
        raise IndexError(k)


# The phases that work on whole buckets (see BucketLayout).
BUCKET_KINDS = (MKDIRS, LISTOBJ, MULTIDEL, RMDIRS, *BUCKET_MD_KINDS)


class RandomBlocks(EntryStream):
    """``--rand`` reads of object storage: ``count`` ranged GETs of one block each, every
    one of a random object of the thread's and at a random block of it (whole blocks
    only). Each GET is an entry of ``block`` bytes (:attr:`EntryRun.offsets`)."""

    def __init__(self, layout: DirLayout, rank: int, count: int, rng: np.random.Generator) -> None:
        super().__init__(layout, READ, rank)
        self.total_ops = count
        self.size = layout.block_size
        self.rng = rng
        self.blocks = max(layout.file_size // layout.block_size, 1)

    def take(self, count: int) -> EntryRun | None:
        count = min(count, self.remaining)
        if count <= 0:
            return None
        first, self.issued = self.issued, self.issued + count
        objects = self.rng.integers(0, self.layout.files_per_rank(), count)
        blocks = self.rng.integers(0, self.blocks, count) * self.layout.block_size
        pairs = [self.layout.entry(READ, self.rank, int(j)) for j in objects]
        indices = [index for index, _ in pairs]
        return EntryRun(
            indices[0] if len(set(indices)) == 1 else indices,
            [name for _, name in pairs],
            self.size,
            self.layout.block_size,
            rank=self.rank,
            first=first,
            offsets=[int(o) for o in blocks],
        )


@functools.lru_cache(maxsize=4)
def _objects_per_bucket(layout: BucketLayout) -> tuple[int, ...]:
    """How many of the layout's objects each bucket holds (asked for every entry)."""
    return tuple(layout.files_per_path())


def object_layout(
    buckets: int,
    threads: int,
    dirs: int,
    files: int,
    size: int,
    block: int,
    list_max: int = 0,
    rand_objects: bool = False,
    mix: Mix | None = None,
    mix_ops: int | None = None,
) -> BucketLayout:
    """The layout of an S3 run: ``-n`` prefixes per thread, ``-N`` objects each, the
    buckets as its paths; ``list_max``: --s3listobj; ``rand_objects``: --s3randobj."""
    return BucketLayout(
        num_paths=buckets,
        threads=threads,
        dirs=dirs,
        files=files,
        file_size=size,
        block_size=block,
        sharing=False,
        list_max=list_max,
        rand_objects=rand_objects,
        mix=mix,
        mix_ops=mix_ops,
    )


def object_names(layout: DirLayout, rank: int, start: int, stop: int) -> list[tuple[int, str]]:
    """(bucket index, name) of objects ``start`` .. ``stop - 1`` of thread rank ``rank``:
    ``r<rank>/d<dir>/r<rank>-f<file>`` in bucket ``(rank + dir) % buckets`` (no ``d<dir>``
    part and bucket ``rank % buckets`` with no dirs), as dir mode names its files."""
    run = layout.file_run(rank, start, stop)
    names = run.names
    index = run.path_index
    if isinstance(index, int):
        return [(index, name) for name in names]
    return list(zip(index, names, strict=True))


def object_keys(
    layout: DirLayout,
    paths: Sequence[BucketPath],
    objprefix: str,
    rank: int,
    start: int,
    stop: int,
) -> list[tuple[int, str]]:
    """(PATH index, object key) of objects ``start`` .. ``stop - 1`` of thread rank
    ``rank``: :func:`object_names` below each PATH's prefix, with ``objprefix``."""
    return [
        (i, paths[i].key(name, objprefix)) for i, name in object_names(layout, rank, start, stop)
    ]


def object_count(layout: DirLayout, rank: int) -> int:
    """How many objects thread rank ``rank`` writes, reads and removes."""
    return layout.entries(WRITE, rank)
