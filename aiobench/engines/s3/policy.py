"""What each S3 request carries besides its own headers, from elbencho's options: server-side
encryption (``--s3sse``, ``--s3sseckey``, ``--s3ssekmskey``), an upload's checksum
(``--s3chksumalgo``) and payload signing (``--s3sign``, ``--s3fastput``); and the credentials
of several users (``--s3credfile``, ``--s3credlist``, ``--s3sessiontoken``).

:func:`parse_policy` and :func:`parse_credential_list` check the options (a
:class:`~aiobench.errors.ConfigError` names the option); :class:`RequestPolicy` is what the
client (:class:`~aiobench.engines.s3.client.S3Client`) adds to its requests.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from aiobench.errors import ConfigError

if TYPE_CHECKING:
    from aiobench.config import BenchConfig

SIGN_REQUEST_DEPENDENT, SIGN_ALWAYS, SIGN_NEVER = 0, 1, 2
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def _crc32(body: memoryview) -> bytes:
    return zlib.crc32(body).to_bytes(4, "big")


def _crc32c(body: memoryview) -> bytes:
    import google_crc32c  # (only for --s3chksumalgo CRC32C)

    return int(google_crc32c.value(bytes(body))).to_bytes(4, "big")


def _sha1(body: memoryview) -> bytes:
    return hashlib.sha1(body, usedforsecurity=False).digest()


def _sha256(body: memoryview) -> bytes:
    return hashlib.sha256(body).digest()


# --s3chksumalgo: the algorithm's digest of a body, by S3's name for it
CHECKSUMS: dict[str, Callable[[memoryview], bytes]] = {
    "CRC32": _crc32,
    "CRC32C": _crc32c,
    "SHA1": _sha1,
    "SHA256": _sha256,
}


@dataclass(frozen=True, slots=True)
class RequestPolicy:
    """Headers and signing of a run's requests.

    ``upload``: headers of every upload (PutObject, CreateMultipartUpload): SSE-S3 or
    SSE-KMS; ``object``: headers of every request on an object's data (SSE-C's key goes
    with the upload, each part, each GET and HEAD); ``checksum``: the algorithm whose
    digest goes with each body uploaded; ``sign``: --s3sign."""

    upload: Mapping[str, str] = field(default_factory=dict)
    object: Mapping[str, str] = field(default_factory=dict)
    checksum: str = ""
    sign: int = SIGN_NEVER

    def checksum_headers(self, body: memoryview) -> dict[str, str]:
        """The headers that carry an upload's checksum (none without --s3chksumalgo)."""
        if not self.checksum:
            return {}
        digest = base64.b64encode(CHECKSUMS[self.checksum](body)).decode()
        return {
            "x-amz-sdk-checksum-algorithm": self.checksum,
            f"x-amz-checksum-{self.checksum.lower()}": digest,
        }

    def payload_hash(self, body: memoryview | None, tls: bool) -> str:
        """What ``x-amz-content-sha256`` signs of a request with ``body`` (None: none) sent
        over TLS or not: the body's SHA-256, or UNSIGNED-PAYLOAD."""
        signed = self.sign == SIGN_ALWAYS or (self.sign == SIGN_REQUEST_DEPENDENT and not tls)
        if not signed:
            return "UNSIGNED-PAYLOAD"
        return hashlib.sha256(body).hexdigest() if body is not None else EMPTY_SHA256


def parse_policy(cfg: BenchConfig) -> RequestPolicy:
    """The run's request policy; ConfigError naming a wrong option."""
    given = [
        flag
        for flag, on in (
            ("--s3sse", cfg.s3sse),
            ("--s3sseckey", cfg.s3sseckey is not None),
            ("--s3ssekmskey", cfg.s3ssekmskey is not None),
        )
        if on
    ]
    if len(given) > 1:
        raise ConfigError(f"{given[1]}: cannot be combined with {given[0]} (one kind of SSE)")
    upload: dict[str, str] = {}
    obj: dict[str, str] = {}
    if cfg.s3sse:
        upload["x-amz-server-side-encryption"] = "AES256"
    if cfg.s3ssekmskey is not None:
        if not cfg.s3ssekmskey.strip() or not cfg.s3ssekmskey.isprintable():
            raise ConfigError("--s3ssekmskey: give a KMS key id")
        upload["x-amz-server-side-encryption"] = "aws:kms"
        upload["x-amz-server-side-encryption-aws-kms-key-id"] = cfg.s3ssekmskey
    if cfg.s3sseckey is not None:
        obj.update(_sse_c(cfg.s3sseckey))
    algo = (cfg.s3chksumalgo or "").upper()
    if cfg.s3chksumalgo is not None and algo not in CHECKSUMS:
        raise ConfigError(f"--s3chksumalgo: {cfg.s3chksumalgo!r} is none of {', '.join(CHECKSUMS)}")
    if algo == "CRC32C":
        try:
            import google_crc32c  # noqa: F401
        except ImportError:
            raise ConfigError(
                "--s3chksumalgo: CRC32C needs the google-crc32c package (pip install google-crc32c)"
            ) from None
    if cfg.s3fastget and cfg.verify is not None:
        raise ConfigError(
            "--s3fastget: cannot be combined with --verify (nothing is kept to check)"
        )
    sign = SIGN_NEVER if cfg.s3fastput else cfg.s3sign
    return RequestPolicy(upload=upload, object=obj, checksum=algo, sign=sign)


def _sse_c(key_text: str) -> dict[str, str]:
    """SSE-C's three headers from the base64 key (not shown in a message)."""
    try:
        key = base64.b64decode(key_text, validate=True)
    except (binascii.Error, ValueError):
        raise ConfigError("--s3sseckey: not base64 (the key is not shown)") from None
    if len(key) != 32:
        raise ConfigError(
            f"--s3sseckey: an AES-256 key is 32 bytes, this one {len(key)} (the key is not shown)"
        )
    md5 = hashlib.md5(key, usedforsecurity=False).digest()
    return {
        "x-amz-server-side-encryption-customer-algorithm": "AES256",
        "x-amz-server-side-encryption-customer-key": key_text,
        "x-amz-server-side-encryption-customer-key-MD5": base64.b64encode(md5).decode(),
    }


def parse_credential_list(cfg: BenchConfig) -> list[tuple[str, str]]:
    """The (access key, secret) pairs of --s3credfile or --s3credlist; [] when neither is
    given. ConfigError naming the option (and the file's line) for a malformed entry; no
    key or secret is shown."""
    if cfg.s3credfile is not None and cfg.s3credlist is not None:
        raise ConfigError("--s3credlist: cannot be combined with --s3credfile (give one)")
    if cfg.s3credfile is not None:
        path = cfg.s3credfile
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise ConfigError(f"--s3credfile: {path}: {reason}") from None
        entries = [
            (f"--s3credfile: {path} line {n}", line.strip())
            for n, line in enumerate(lines, 1)
            if line.strip() and not line.lstrip().startswith("#")
        ]
        if not entries:
            raise ConfigError(f"--s3credfile: {path}: no KEY:SECRET line in it")
    elif cfg.s3credlist is not None:
        entries = [
            (f"--s3credlist: entry {n}", text.strip())
            for n, text in enumerate(cfg.s3credlist.split(","), 1)
        ]
    else:
        return []
    pairs = []
    for where, text in entries:
        key, sep, secret = text.partition(":")
        key, secret = key.strip(), secret.strip()
        if not sep or ":" in secret or not key or not secret:
            raise ConfigError(f"{where}: not KEY:SECRET (not shown)")
        for part in (key, secret):
            if not part.isascii() or not part.isprintable():
                raise ConfigError(f"{where}: must be printable ASCII (not shown)")
        pairs.append((key, secret))
    return pairs


def session_token(cfg: BenchConfig, env: Mapping[str, str] = os.environ) -> str | None:
    """--s3sessiontoken, checked; None when not given."""
    token = cfg.s3sessiontoken
    if token is not None and (not token or not token.isascii() or not token.isprintable()):
        raise ConfigError("--s3sessiontoken: must be printable ASCII (not shown)")
    return token
