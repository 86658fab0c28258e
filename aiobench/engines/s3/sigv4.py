"""AWS Signature Version 4, header form: canonical request, string to sign, signature; pure.

Written against AWS's description of SigV4 and checked with its published test suite
(tests/data/sigv4_vectors.json). S3 flavour: the URI path is encoded once and never
normalised (``//`` and ``.`` segments are part of an object key), and request bodies go
unsigned (``x-amz-content-sha256: UNSIGNED-PAYLOAD``), so signing costs two SHA-256 and
one HMAC chain per request whatever the body size. The derived signing key depends only on
the date, region and service, so it is computed once per day and kept.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from collections.abc import Iterable
from urllib.parse import quote

ALGORITHM = "AWS4-HMAC-SHA256"
UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()

# quote() leaves ASCII letters, digits and "_.-~" alone: AWS's unreserved set exactly.
_PATH_SAFE = "/"
_QUERY_SAFE = ""
# Paths made only of these need no encoding (the benchmark's own names): checking is
# cheaper than quote() on the per-request path.
_PLAIN_PATH = re.compile(r"[A-Za-z0-9/_.~-]+").fullmatch


def encode_path(path: str) -> str:
    """The canonical URI of ``path`` for S3: UTF-8, percent-encoded once, ``/`` kept, no
    normalisation. The same string is sent on the request line."""
    if not path:
        return "/"
    return path if _PLAIN_PATH(path) else quote(path, safe=_PATH_SAFE)


def canonical_query(pairs: Iterable[tuple[str, str]]) -> str:
    """``k=v&...`` with names and values percent-encoded (spaces as ``%20``) and sorted by
    name, then value. A valid query string too, so it is sent as it is signed."""
    encoded = sorted((quote(k, safe=_QUERY_SAFE), quote(v, safe=_QUERY_SAFE)) for k, v in pairs)
    return "&".join(f"{k}={v}" for k, v in encoded)


def amz_date(epoch_s: float | None = None) -> str:
    """``YYYYMMDDTHHMMSSZ`` (UTC) of ``epoch_s``, default now."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(epoch_s))


def _canonical_headers(headers: Iterable[tuple[str, str]]) -> tuple[str, str]:
    """(canonical headers block, signed-headers list): names lower-cased and sorted, values
    trimmed with inner runs of spaces made one, repeated names joined by commas in order."""
    merged: dict[str, str] = {}
    for name, value in headers:
        key = name.strip().lower()
        if "  " in value or value != value.strip() or not value.isprintable():
            value = " ".join(value.split())
        merged[key] = f"{merged[key]},{value}" if key in merged else value
    names = sorted(merged)
    block = "".join(f"{name}:{merged[name]}\n" for name in names)
    return block, ";".join(names)


class Signer:
    """Signs requests for one access key in one region and service.

    The secret and the derived keys never leave the object; its repr names the key id only.
    """

    __slots__ = ("_keys", "_secret", "_token", "access_key", "region", "service")

    def __init__(
        self,
        access_key: str,
        secret_key: str,
        region: str,
        service: str = "s3",
        session_token: str = "",
    ) -> None:
        self.access_key = access_key
        self._secret = secret_key
        self._token = session_token  # temporary credentials: sent and signed with each request
        self.region = region
        self.service = service
        self._keys: dict[str, bytes] = {}

    def __repr__(self) -> str:
        return (
            f"Signer(access_key={self.access_key!r}, region={self.region!r}, "
            f"service={self.service!r})"
        )

    def signing_key(self, date: str) -> bytes:
        """The key derived for ``date`` (``YYYYMMDD``), made once per date."""
        key = self._keys.get(date)
        if key is None:
            key = hmac.digest(("AWS4" + self._secret).encode(), date.encode(), "sha256")
            for part in (self.region, self.service, "aws4_request"):
                key = hmac.digest(key, part.encode(), "sha256")
            if len(self._keys) > 4:  # one entry per day in use; old days are dropped
                self._keys.clear()
            self._keys[date] = key
        return key

    def canonical_request(
        self,
        method: str,
        canonical_uri: str,
        query: str,
        headers: Iterable[tuple[str, str]],
        payload_hash: str,
    ) -> tuple[str, str]:
        """(canonical request, signed-headers list); ``canonical_uri`` from
        :func:`encode_path`, ``query`` from :func:`canonical_query`."""
        block, signed = _canonical_headers(headers)
        text = f"{method}\n{canonical_uri}\n{query}\n{block}\n{signed}\n{payload_hash}"
        return text, signed

    def string_to_sign(self, when: str, canonical_request: str) -> str:
        scope = f"{when[:8]}/{self.region}/{self.service}/aws4_request"
        digest = hashlib.sha256(canonical_request.encode()).hexdigest()
        return f"{ALGORITHM}\n{when}\n{scope}\n{digest}"

    def authorization(
        self,
        method: str,
        canonical_uri: str,
        query: str,
        headers: Iterable[tuple[str, str]],
        payload_hash: str,
        when: str,
    ) -> str:
        """The ``Authorization`` header value. ``headers`` are all the headers signed, the
        Host and ``x-amz-date`` (= ``when``) among them."""
        creq, signed = self.canonical_request(method, canonical_uri, query, headers, payload_hash)
        sts = self.string_to_sign(when, creq)
        signature = hmac.digest(self.signing_key(when[:8]), sts.encode(), "sha256").hex()
        return (
            f"{ALGORITHM} Credential={self.access_key}/{when[:8]}/{self.region}/"
            f"{self.service}/aws4_request, SignedHeaders={signed}, Signature={signature}"
        )

    def sign_s3(
        self,
        method: str,
        canonical_uri: str,
        query: str,
        host: str,
        headers: dict[str, str],
        when: str,
        payload_hash: str = UNSIGNED_PAYLOAD,
    ) -> dict[str, str]:
        """Add Host, ``x-amz-date``, ``x-amz-content-sha256`` (and with a session token
        ``x-amz-security-token``) and ``Authorization`` to ``headers`` (every header in it
        is signed) and return it."""
        headers["Host"] = host
        headers["x-amz-date"] = when
        headers["x-amz-content-sha256"] = payload_hash
        if self._token:
            headers["x-amz-security-token"] = self._token
        headers["Authorization"] = self.authorization(
            method, canonical_uri, query, headers.items(), payload_hash, when
        )
        return headers
