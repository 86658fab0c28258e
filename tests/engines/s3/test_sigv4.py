"""The SigV4 signer against AWS's published test vectors and S3 example; pure."""

from __future__ import annotations

import hashlib
import json
from typing import Any
from urllib.parse import unquote

import pytest

from aiobench.engines.s3.sigv4 import (
    EMPTY_SHA256,
    UNSIGNED_PAYLOAD,
    Signer,
    amz_date,
    canonical_query,
    encode_path,
)
from tests.helpers import DATA

# Which vectors are used, which are left out and why: the file's "skipped" table.
_DATA = json.loads((DATA / "sigv4_vectors.json").read_text("utf-8"))
_SUITE: list[dict[str, Any]] = _DATA["vectors"]
_S3 = _DATA["s3_examples"]


def _query_pairs(raw: str) -> list[tuple[str, str]]:
    if not raw:
        return []
    pairs = []
    for part in raw.split("&"):
        key, _, value = part.partition("=")
        pairs.append((unquote(key), unquote(value)))
    return pairs


def _suite_signer() -> Signer:
    return Signer(_DATA["access_key"], _DATA["secret_key"], _DATA["region"], _DATA["service"])


@pytest.mark.parametrize("vector", _SUITE, ids=[v["name"] for v in _SUITE])
def test_suite_vector(vector: dict[str, Any]) -> None:
    signer = _suite_signer()
    headers = [(name, value) for name, value in vector["headers"]]
    payload = hashlib.sha256(vector["body"].encode()).hexdigest()
    uri = encode_path(vector["path"])
    query = canonical_query(_query_pairs(vector["query"]))
    creq, _ = signer.canonical_request(vector["method"], uri, query, headers, payload)
    assert creq == vector["creq"]
    if vector["authorization"] is not None:
        auth = signer.authorization(vector["method"], uri, query, headers, payload, _DATA["when"])
        assert auth == vector["authorization"]


def test_suite_keeps_its_skips_named() -> None:
    # The vectors left out are named with their reason and are not also run.
    used = {v["name"] for v in _SUITE}
    assert _DATA["skipped"]
    assert not used & {name.rsplit("/", 1)[-1] for name in _DATA["skipped"]}
    assert all(reason.strip() for reason in _DATA["skipped"].values())


@pytest.mark.parametrize("vector", _S3["vectors"], ids=[v["name"] for v in _S3["vectors"]])
def test_s3_example(vector: dict[str, Any]) -> None:
    signer = Signer(_S3["access_key"], _S3["secret_key"], _S3["region"])
    headers = dict(vector["headers"])
    signer.sign_s3(
        vector["method"],
        encode_path(vector["path"]),
        canonical_query(_query_pairs(vector["query"])),
        vector["host"],
        headers,
        _S3["when"],
        vector["payload_hash"],
    )
    assert headers["Authorization"] == vector["authorization"]
    assert headers["x-amz-date"] == _S3["when"]
    assert headers["Host"] == vector["host"]


def test_sign_s3_defaults_to_an_unsigned_payload() -> None:
    signer = Signer("AKID", "secret", "us-east-1")
    headers = signer.sign_s3("PUT", "/b/k", "", "h:1", {"Content-Length": "3"}, "20240101T000000Z")
    assert headers["x-amz-content-sha256"] == UNSIGNED_PAYLOAD
    signed = "SignedHeaders=content-length;host;x-amz-content-sha256;x-amz-date,"
    assert signed in headers["Authorization"]


def test_a_session_token_is_sent_and_signed_with_each_request() -> None:
    """Temporary credentials: sign_s3 adds the token as x-amz-security-token, among the
    signed headers, as the suite's post-sts-header-before vector signs it."""
    token = "FwoGZXIvYXdzEXAMPLE/token+value=="
    signer = Signer("AKID", "secret", "us-east-1", session_token=token)
    when = "20240101T000000Z"
    headers = signer.sign_s3("GET", "/b/k", "", "h:1", {"Range": "bytes=0-9"}, when)
    assert headers["x-amz-security-token"] == token
    signed = "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date;x-amz-security-token,"
    assert signed in headers["Authorization"]
    unsigned = [(k, v) for k, v in headers.items() if k != "Authorization"]
    expected = signer.authorization("GET", "/b/k", "", unsigned, UNSIGNED_PAYLOAD, when)
    assert headers["Authorization"] == expected
    plain = Signer("AKID", "secret", "us-east-1").sign_s3("GET", "/b/k", "", "h:1", {}, when)
    assert "x-amz-security-token" not in plain
    assert token not in repr(signer)


def test_s3_paths_are_encoded_once_and_not_normalised() -> None:
    assert encode_path("/b/r0/d1/r0-f7") == "/b/r0/d1/r0-f7"
    assert encode_path("/b//x/./y/../z") == "/b//x/./y/../z"
    assert encode_path("/b/a b+c%") == "/b/a%20b%2Bc%25"
    assert encode_path("/b/\u00e4") == "/b/%C3%A4"
    assert encode_path("") == "/"


def test_query_encoding_and_order() -> None:
    pairs = [("prefix", "r0/d 1"), ("list-type", "2"), ("max-keys", "10"), ("delete", "")]
    assert canonical_query(pairs) == "delete=&list-type=2&max-keys=10&prefix=r0%2Fd%201"
    assert canonical_query([]) == ""


def test_signing_key_is_derived_once_per_date() -> None:
    signer = _suite_signer()
    first = signer.signing_key("20150830")
    assert signer.signing_key("20150830") is first
    assert signer.signing_key("20150831") != first


def test_different_secret_different_signature() -> None:
    args = ("GET", "/", "", [("host", "h"), ("x-amz-date", "20150830T123600Z")], EMPTY_SHA256)
    one = Signer("AKID", "one", "us-east-1").authorization(*args, "20150830T123600Z")
    two = Signer("AKID", "two", "us-east-1").authorization(*args, "20150830T123600Z")
    assert one != two


def test_secret_not_in_repr() -> None:
    signer = Signer("AKIDVISIBLE", "very-secret-value", "eu-west-1")
    assert "very-secret-value" not in repr(signer)
    assert "AKIDVISIBLE" in repr(signer)


def test_amz_date_format() -> None:
    assert amz_date(0) == "19700101T000000Z"
    assert amz_date(1_440_938_160) == "20150830T123600Z"


def test_header_values_are_trimmed_and_inner_whitespace_made_one_space() -> None:
    signer = _suite_signer()
    creq, signed = signer.canonical_request(
        "GET", "/", "", [("X-A", "a\tb"), ("x-b", " c   d "), ("X-A", "e")], EMPTY_SHA256
    )
    assert "x-a:a b,e\nx-b:c d\n" in creq
    assert signed == "x-a;x-b"


def test_plain_and_encoded_paths_agree() -> None:
    # The no-encoding shortcut gives what quote() gives for the names the benchmark makes.
    for path in ("/b/r0/d1/r0-f7", "/b/pre-fix_1.~/x"):
        assert encode_path(path) == path
