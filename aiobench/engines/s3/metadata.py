"""Object storage's metadata phases, with elbencho's meaning: ACLs, tags, versioning, object
lock and bucket stat.

Per bucket: PUTBACL/GETBACL (``--s3baclput``/``--s3baclget``), PUTBUCKETMD, GETBUCKETMD and
DELBUCKETMD (``--s3btag``: two tags; ``--s3bversion``: versioning suspended, then enabled at
the end; ``--s3olockcfg``: a 1-day COMPLIANCE default retention, then a configuration without
one), STATDIRS (``--s3statdirs``: HeadBucket). Per object: PUTOBJACL/GETOBJACL
(``--s3aclput``/``--s3aclget``) and PUTOBJMD/GETOBJMD/DELOBJMD (``--s3otag``: one tag).
The ``*verify`` options check what the GET phases read back: a tag's value carries a check
of its object's (bucket's) name, so that it is checked without keeping what was put.

:func:`settings` reads and checks the options (a :class:`~aiobench.errors.ConfigError`
names the option); :func:`bucket_request` and :func:`object_request` make one entry's
requests.
"""

from __future__ import annotations

import base64
import hashlib
import os
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from xml.etree import ElementTree as ET
from xml.sax.saxutils import escape

from aiobench.errors import ConfigError, S3Error
from aiobench.kinds import (
    DELBUCKETMD,
    DELOBJMD,
    GETBACL,
    GETBUCKETMD,
    GETOBJACL,
    GETOBJMD,
    PUTBACL,
    PUTBUCKETMD,
    PUTOBJACL,
    PUTOBJMD,
    STATDIRS,
    PhaseKind,
)

if TYPE_CHECKING:
    from aiobench.config import BenchConfig
    from aiobench.engines.s3.client import S3Client

S3_NS = "http://s3.amazonaws.com/doc/2006-03-01/"
XSI_NS = "http://www.w3.org/2001/XMLSchema-instance"

# elbencho's tags: "medium" (100 characters) on objects and buckets, "long" (256, S3's
# most) on buckets too.
MEDIUM_TAG, LONG_TAG = ("medium", 100), ("long", 256)
RETENTION_DAYS = 1  # the default retention of --s3olockcfg
CANNED_ACLS = (
    "private",
    "public-read",
    "public-read-write",
    "authenticated-read",
    "aws-exec-read",
    "bucket-owner-read",
    "bucket-owner-full-control",
)
# --s3aclgrants' words and S3's permission names
PERMISSIONS = {
    "full": "FULL_CONTROL",
    "read": "READ",
    "write": "WRITE",
    "racp": "READ_ACP",
    "wacp": "WRITE_ACP",
}
# --s3aclgtype: (xsi:type, the Grantee element holding the grantee) as elbencho sends them
GRANTEE_TYPES = {
    "id": ("CanonicalUser", "ID"),
    "email": ("AmazonCustomerByEmail", "EmailAddress"),
    "uri": ("CanonicalUser", "URI"),
    "group": ("Group", "URI"),
}
# --s3aclputinl: the upload's header of each permission (no WRITE: S3 has no such header)
INLINE_HEADERS = {
    "FULL_CONTROL": "x-amz-grant-full-control",
    "READ": "x-amz-grant-read",
    "READ_ACP": "x-amz-grant-read-acp",
    "WRITE_ACP": "x-amz-grant-write-acp",
}


@dataclass(frozen=True, slots=True)
class Acl:
    """The ACL of --s3aclgrantee/--s3aclgtype/--s3aclgrants: a canned one, or grants."""

    grantee: str
    canned: bool
    gtype: str = ""  # --s3aclgtype (grants only)
    permissions: tuple[str, ...] = ()  # S3's names; () for "none"

    def body(self) -> bytes:
        """An AccessControlPolicy with the grants (PutObjectAcl, PutBucketAcl)."""
        xsi_type, element = GRANTEE_TYPES[self.gtype]
        grantee = (
            f'<Grantee xmlns:xsi="{XSI_NS}" xsi:type="{xsi_type}">'
            f"<{element}>{escape(self.grantee)}</{element}></Grantee>"
        )
        grants = "".join(
            f"<Grant>{grantee}<Permission>{p}</Permission></Grant>" for p in self.permissions
        )
        return (
            f'<AccessControlPolicy xmlns="{S3_NS}"><AccessControlList>{grants}'
            "</AccessControlList></AccessControlPolicy>"
        ).encode()

    def put_headers(self) -> dict[str, str]:
        """The headers of a put ACL request (a canned ACL; grants go in the body)."""
        return {"x-amz-acl": self.grantee} if self.canned else {}

    def inline_headers(self) -> dict[str, str]:
        """The headers that give an upload this ACL (--s3aclputinl): the grantee as
        ``type="value"`` (``id=123`` becomes ``id="123"``)."""
        if self.canned:
            return {"x-amz-acl": self.grantee}
        kind, _, value = self.grantee.partition("=")
        shown = f'{kind}="{value.strip(chr(34))}"'
        return {INLINE_HEADERS[p]: shown for p in self.permissions}


@dataclass(frozen=True, slots=True)
class MetaSettings:
    """What the metadata phases do, from the options."""

    btag: bool = False
    btagverify: bool = False
    bversion: bool = False
    bversionverify: bool = False
    olockcfg: bool = False
    olockcfgverify: bool = False
    otag: bool = False
    otagverify: bool = False
    acl: Acl | None = None
    aclverify: bool = False
    acl_inline: bool = False

    def upload_headers(self) -> dict[str, str]:
        """Headers every upload (PUT, CreateMultipartUpload) carries."""
        return self.acl.inline_headers() if self.acl_inline and self.acl is not None else {}


def _needs(cfg: BenchConfig, option: str, base: str) -> None:
    if getattr(cfg, option.removeprefix("--")) and not getattr(cfg, base.removeprefix("--")):
        raise ConfigError(f"{option}: needs {base}")


def settings(cfg: BenchConfig) -> MetaSettings:
    """The metadata phases' settings; a ConfigError names an option that is wrong or
    lacks another it needs."""
    for option, base in (
        ("--s3btagverify", "--s3btag"),
        ("--s3bversionverify", "--s3bversion"),
        ("--s3olockcfgverify", "--s3olockcfg"),
        ("--s3otagverify", "--s3otag"),
    ):
        _needs(cfg, option, base)
    if cfg.s3bversion and cfg.s3olockcfg:
        raise ConfigError(
            "--s3bversion: cannot be combined with --s3olockcfg (a bucket with object lock "
            "keeps versioning enabled; S3 refuses to suspend it)"
        )
    if cfg.s3olockcfg and cfg.write and cfg.deldirs:
        raise ConfigError(
            f"--s3olockcfg: the objects -w writes stay locked for {RETENTION_DAYS} day "
            "(COMPLIANCE), so -D could not remove their buckets; leave out -D"
        )
    if cfg.s3aclverify and not (cfg.s3aclget or cfg.s3baclget):
        raise ConfigError(
            "--s3aclverify: needs --s3aclget or --s3baclget (it checks what they get)"
        )
    acl = _acl(cfg)
    return MetaSettings(
        btag=cfg.s3btag,
        btagverify=cfg.s3btagverify,
        bversion=cfg.s3bversion,
        bversionverify=cfg.s3bversionverify,
        olockcfg=cfg.s3olockcfg,
        olockcfgverify=cfg.s3olockcfgverify,
        otag=cfg.s3otag,
        otagverify=cfg.s3otagverify,
        acl=acl,
        aclverify=cfg.s3aclverify,
        acl_inline=cfg.s3aclputinl,
    )


def _acl(cfg: BenchConfig) -> Acl | None:
    users = [
        flag
        for flag, on in (
            ("--s3aclput", cfg.s3aclput),
            ("--s3baclput", cfg.s3baclput),
            ("--s3aclputinl", cfg.s3aclputinl),
            ("--s3aclverify", cfg.s3aclverify),
        )
        if on
    ]
    given = [
        flag
        for flag, value in (
            ("--s3aclgrantee", cfg.s3aclgrantee),
            ("--s3aclgtype", cfg.s3aclgtype),
            ("--s3aclgrants", cfg.s3aclgrants),
        )
        if value is not None
    ]
    if not users:
        if given:
            raise ConfigError(
                f"{given[0]}: only applies with --s3aclput, --s3baclput, --s3aclputinl or "
                "--s3aclverify"
            )
        return None
    user = users[0]
    grantee = cfg.s3aclgrantee
    if not grantee:
        raise ConfigError(f"{user}: needs --s3aclgrantee (a grantee or a canned ACL)")
    if grantee in CANNED_ACLS:
        if cfg.s3aclverify:
            raise ConfigError(
                "--s3aclverify: cannot check a canned ACL (give a grantee, --s3aclgtype and "
                "--s3aclgrants)"
            )
        return Acl(grantee, canned=True)
    if cfg.s3aclgrants is None:
        raise ConfigError(f"{user}: needs --s3aclgrants (or a canned ACL as --s3aclgrantee)")
    permissions = _permissions(cfg.s3aclgrants)
    inline_only = cfg.s3aclputinl and not (cfg.s3aclput or cfg.s3baclput or cfg.s3aclverify)
    gtype = cfg.s3aclgtype or ""
    if not inline_only and gtype not in GRANTEE_TYPES:
        if not gtype:
            raise ConfigError(f"{user}: needs --s3aclgtype ({', '.join(GRANTEE_TYPES)})")
        raise ConfigError(f"--s3aclgtype: {gtype!r} is none of {', '.join(GRANTEE_TYPES)}")
    if cfg.s3aclputinl:
        if "WRITE" in permissions:
            raise ConfigError(
                "--s3aclputinl: an upload cannot grant write (S3 has no such header); "
                "use --s3aclput"
            )
        if "=" not in grantee:
            raise ConfigError(
                "--s3aclputinl: the grantee needs its type, as id=123, "
                "emailAddress=user@example.org or uri=http://..."
            )
    return Acl(grantee, canned=False, gtype=gtype, permissions=permissions)


def _permissions(text: str) -> tuple[str, ...]:
    words = [w.strip() for w in text.split(",") if w.strip()]
    known = ("none", *PERMISSIONS)
    for word in words:
        if word not in known:
            raise ConfigError(f"--s3aclgrants: {word!r} is none of {', '.join(known)}")
    if not words:
        raise ConfigError(f"--s3aclgrants: give one or more of {', '.join(known)}")
    if "full" in words:
        return ("FULL_CONTROL",)
    if "none" in words:
        return ()
    return tuple(dict.fromkeys(PERMISSIONS[w] for w in words))


# -- tags ---------------------------------------------------------------------------------


def tag_value(name: str, length: int) -> str:
    """A random tag value of ``length`` hex digits whose last 8 are a CRC-32 of ``name`` and
    the rest: :func:`tag_matches` checks it against ``name`` alone."""
    body = os.urandom((length - 8 + 1) // 2).hex()[: length - 8]
    return body + f"{zlib.crc32((name + body).encode()):08x}"


def tag_matches(value: str, name: str) -> bool:
    body, check = value[:-8], value[-8:]
    return len(value) > 8 and f"{zlib.crc32((name + body).encode()):08x}" == check


def tagging_body(name: str, tags: Sequence[tuple[str, int]]) -> bytes:
    cells = "".join(
        f"<Tag><Key>{key}</Key><Value>{tag_value(name, length)}</Value></Tag>"
        for key, length in tags
    )
    return f'<Tagging xmlns="{S3_NS}"><TagSet>{cells}</TagSet></Tagging>'.encode()


# -- requests -----------------------------------------------------------------------------


def _md5(body: bytes) -> dict[str, str]:
    """Content-MD5: S3 asks for an integrity header on tagging, ACL and lock bodies."""
    return {
        "Content-MD5": base64.b64encode(hashlib.md5(body, usedforsecurity=False).digest()).decode()
    }


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


def _texts(root: ET.Element, name: str) -> list[str]:
    return [(e.text or "").strip() for e in root.iter() if _local(e.tag) == name]


class _Requests:
    """One entry's metadata requests through ``client``; a check that fails raises an
    :class:`~aiobench.errors.S3Error` naming what was expected and found."""

    def __init__(self, client: S3Client, meta: MetaSettings) -> None:
        self.client, self.meta = client, meta

    def _wrong(self, bucket: str, key: str, what: str) -> S3Error:
        return S3Error(
            endpoint=self.client.endpoint.url,
            bucket=bucket,
            key=key,
            status=200,
            code="VerifyFailed",
            reason=what,
        )

    async def _put(
        self, op: str, bucket: str, key: str, sub: str, body: bytes | None, headers: dict[str, str]
    ) -> None:
        if body is not None:
            headers = headers | _md5(body)
        await self.client.call(
            op, "PUT", bucket, key, query=[(sub, "")], body=body, headers=headers
        )

    async def _get(self, op: str, bucket: str, key: str, sub: str) -> ET.Element:
        _, _, data = await self.client.call(op, "GET", bucket, key, query=[(sub, "")])
        try:
            return ET.fromstring(data)
        except ET.ParseError:
            raise self._wrong(bucket, key, f"{op}: an answer that is not XML") from None

    async def acl_put(self, bucket: str, key: str = "") -> None:
        acl = self.meta.acl
        assert acl is not None  # (settings: --s3aclput and --s3baclput need one)
        body = None if acl.canned else acl.body()
        op = "PutObjectAcl" if key else "PutBucketAcl"
        await self._put(op, bucket, key, "acl", body, acl.put_headers())

    async def acl_get(self, bucket: str, key: str = "") -> None:
        root = await self._get("GetObjectAcl" if key else "GetBucketAcl", bucket, key, "acl")
        acl = self.meta.acl
        if not self.meta.aclverify or acl is None:
            return
        found: set[tuple[str, str]] = set()
        for grant in (e for e in root.iter() if _local(e.tag) == "Grant"):
            who = set(_texts(grant, "ID") + _texts(grant, "EmailAddress") + _texts(grant, "URI"))
            for permission in _texts(grant, "Permission"):
                found.update((person, permission) for person in who)
        for permission in acl.permissions:
            if (acl.grantee, permission) not in found:
                raise self._wrong(
                    bucket, key, f"ACL check: no {permission} grant for {acl.grantee!r}"
                )

    async def tags_put(self, bucket: str, key: str, tags: Sequence[tuple[str, int]]) -> None:
        op = "PutObjectTagging" if key else "PutBucketTagging"
        await self._put(op, bucket, key, "tagging", tagging_body(key or bucket, tags), {})

    async def tags_get(
        self, bucket: str, key: str, tags: Sequence[tuple[str, int]], verify: bool
    ) -> None:
        root = await self._get(
            "GetObjectTagging" if key else "GetBucketTagging", bucket, key, "tagging"
        )
        if not verify:
            return
        values = {}
        for tag in (e for e in root.iter() if _local(e.tag) == "Tag"):
            keys, texts = _texts(tag, "Key"), _texts(tag, "Value")
            if keys and texts:
                values[keys[0]] = texts[0]
        for name, _ in tags:
            value = values.get(name)
            if value is None:
                raise self._wrong(bucket, key, f"tag check: no tag {name!r}")
            if not tag_matches(value, key or bucket):
                raise self._wrong(bucket, key, f"tag check: tag {name!r} is not the one put")

    async def tags_delete(self, bucket: str, key: str) -> None:
        op = "DeleteObjectTagging" if key else "DeleteBucketTagging"
        await self.client.call(op, "DELETE", bucket, key, query=[("tagging", "")], ok=(204, 200))

    async def versioning_put(self, bucket: str, enable: bool) -> None:
        status = "Enabled" if enable else "Suspended"
        body = (
            f'<VersioningConfiguration xmlns="{S3_NS}"><Status>{status}</Status>'
            "</VersioningConfiguration>"
        ).encode()
        await self._put("PutBucketVersioning", bucket, "", "versioning", body, {})

    async def versioning_get(self, bucket: str) -> None:
        root = await self._get("GetBucketVersioning", bucket, "", "versioning")
        status = (_texts(root, "Status") or [""])[0]
        if self.meta.bversionverify and status != "Suspended":
            raise self._wrong(
                bucket, "", f"versioning check: {status or 'never set'!r}, 'Suspended' expected"
            )

    async def lock_put(self, bucket: str, retention: bool) -> None:
        rule = (
            "<Rule><DefaultRetention><Mode>COMPLIANCE</Mode>"
            f"<Days>{RETENTION_DAYS}</Days></DefaultRetention></Rule>"
            if retention
            else ""
        )
        body = (
            f'<ObjectLockConfiguration xmlns="{S3_NS}"><ObjectLockEnabled>Enabled'
            f"</ObjectLockEnabled>{rule}</ObjectLockConfiguration>"
        ).encode()
        await self._put("PutObjectLockConfiguration", bucket, "", "object-lock", body, {})

    async def lock_get(self, bucket: str) -> None:
        root = await self._get("GetObjectLockConfiguration", bucket, "", "object-lock")
        if not self.meta.olockcfgverify:
            return
        enabled = _texts(root, "ObjectLockEnabled")
        days = _texts(root, "Days")
        if enabled != ["Enabled"]:
            raise self._wrong(bucket, "", "object lock check: the lock is not enabled")
        if days != [str(RETENTION_DAYS)]:
            got = days[0] if days else "none"
            raise self._wrong(
                bucket,
                "",
                f"object lock check: default retention {got}, {RETENTION_DAYS} day expected",
            )


BUCKET_TAGS = (MEDIUM_TAG, LONG_TAG)
OBJECT_TAGS = (MEDIUM_TAG,)


async def bucket_request(
    kind: PhaseKind, client: S3Client, meta: MetaSettings, bucket: str
) -> None:
    """The requests of one bucket in a metadata phase of ``kind`` (elbencho's order)."""
    r = _Requests(client, meta)
    if kind == PUTBACL:
        await r.acl_put(bucket)
    elif kind == GETBACL:
        await r.acl_get(bucket)
    elif kind == STATDIRS:
        await client.call("HeadBucket", "HEAD", bucket, "")
    elif kind == PUTBUCKETMD:
        if meta.btag:
            await r.tags_put(bucket, "", BUCKET_TAGS)
        if meta.olockcfg:
            await r.lock_put(bucket, retention=True)
        if meta.bversion:
            await r.versioning_put(bucket, enable=False)
    elif kind == GETBUCKETMD:
        if meta.btag:
            await r.tags_get(bucket, "", BUCKET_TAGS, meta.btagverify)
        if meta.olockcfg:
            await r.lock_get(bucket)
        if meta.bversion:
            await r.versioning_get(bucket)
    elif kind == DELBUCKETMD:
        if meta.bversion:
            await r.versioning_put(bucket, enable=True)
        if meta.olockcfg:
            await r.lock_put(bucket, retention=False)
        if meta.btag:
            await r.tags_delete(bucket, "")
    else:  # pragma: no cover - a programming error
        raise ValueError(kind)


async def object_request(
    kind: PhaseKind, client: S3Client, meta: MetaSettings, bucket: str, key: str
) -> None:
    """The request of one object in a metadata phase of ``kind``."""
    r = _Requests(client, meta)
    if kind == PUTOBJACL:
        await r.acl_put(bucket, key)
    elif kind == GETOBJACL:
        await r.acl_get(bucket, key)
    elif kind == PUTOBJMD:
        await r.tags_put(bucket, key, OBJECT_TAGS)
    elif kind == GETOBJMD:
        await r.tags_get(bucket, key, OBJECT_TAGS, meta.otagverify)
    elif kind == DELOBJMD:
        await r.tags_delete(bucket, key)
    else:  # pragma: no cover - a programming error
        raise ValueError(kind)
