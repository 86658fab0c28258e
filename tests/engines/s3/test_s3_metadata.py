"""Object storage's metadata phases (elbencho's ACL, tag, versioning, object lock and bucket
stat options): against SeaweedFS where it has the feature, else a recording server that
checks the exact requests."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit
from xml.etree import ElementTree as ET

import pytest

from aiobench.engines.s3.client import S3Client
from aiobench.engines.s3.layout import Credentials, parse_endpoint
from aiobench.engines.s3.metadata import Acl, tag_matches, tag_value, tagging_body
from tests.helpers import RunCli
from tests.s3server import S3Server, s3_server  # noqa: F401  (a fixture)

T = TypeVar("T")


def _args(server: S3Server) -> list[str]:
    return ["--s3endpoints", server.endpoint, "--s3key", server.access_key,
            "--s3secret", server.secret_key, "--nolive"]  # fmt: skip


def _bucket() -> str:
    return f"aiobench-md-{uuid.uuid4().hex[:10]}"


def _with_client(server: S3Server, use: Callable[[S3Client], Awaitable[T]]) -> T:
    async def run() -> T:
        credentials = Credentials(server.access_key, server.secret_key)
        async with S3Client(parse_endpoint(server.endpoint), credentials, server.region) as c:
            return await use(c)

    return asyncio.run(run())


def _xml_texts(data: bytes, name: str) -> list[str]:
    return [(e.text or "") for e in ET.fromstring(data).iter() if e.tag.endswith(name)]


def _get(server: S3Server, bucket: str, key: str, sub: str) -> bytes:
    async def get(c: S3Client) -> bytes:
        return (await c.call("Get", "GET", bucket, key, query=[(sub, "")]))[2]

    return _with_client(server, get)


def _phases(path: Path) -> dict[str, dict[str, Any]]:
    return {p["phase"]: p for p in json.loads(path.read_text())["phases"]}


# -- units --------------------------------------------------------------------------------


def test_a_tag_value_is_checked_against_its_name_alone() -> None:
    value = tag_value("r0/d0/r0-f1", 100)
    assert len(value) == 100 and value != tag_value("r0/d0/r0-f1", 100)  # random
    assert tag_matches(value, "r0/d0/r0-f1")
    assert not tag_matches(value, "r0/d0/r0-f2")
    assert not tag_matches(value[:-1] + ("0" if value[-1] != "0" else "1"), "r0/d0/r0-f1")
    body = tagging_body("b", (("medium", 100), ("long", 256)))
    keys, values = _xml_texts(body, "Key"), _xml_texts(body, "Value")
    assert keys == ["medium", "long"] and [len(v) for v in values] == [100, 256]


def test_acl_grants_as_a_policy_body_and_as_upload_headers() -> None:
    acl = Acl("someone", canned=False, gtype="id", permissions=("READ", "WRITE_ACP"))
    root = ET.fromstring(acl.body())
    assert [e.text for e in root.iter() if e.tag.endswith("Permission")] == ["READ", "WRITE_ACP"]
    assert [e.text for e in root.iter() if e.tag.endswith("}ID") or e.tag == "ID"] == [
        "someone"
    ] * 2
    assert acl.put_headers() == {}
    inline = Acl("id=123", canned=False, gtype="", permissions=("READ", "READ_ACP"))
    assert inline.inline_headers() == {
        "x-amz-grant-read": 'id="123"',
        "x-amz-grant-read-acp": 'id="123"',
    }
    canned = Acl("public-read", canned=True)
    assert canned.put_headers() == canned.inline_headers() == {"x-amz-acl": "public-read"}


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["-d", "--s3btagverify"], "--s3btagverify: needs --s3btag"),
        (["-d", "--s3bversionverify"], "--s3bversionverify: needs --s3bversion"),
        (["-d", "--s3olockcfgverify"], "--s3olockcfgverify: needs --s3olockcfg"),
        (["-w", "--s3otagverify"], "--s3otagverify: needs --s3otag"),
        (["--s3aclput"], "--s3aclput: needs --s3aclgrantee"),
        (["--s3aclput", "--s3aclgrantee", "u"], "--s3aclput: needs --s3aclgrants"),
        (
            ["--s3baclput", "--s3aclgrantee", "u", "--s3aclgrants", "read"],
            "--s3baclput: needs --s3aclgtype",
        ),
        (
            ["--s3aclput", "--s3aclgrantee", "u", "--s3aclgtype", "idd", "--s3aclgrants", "read"],
            "--s3aclgtype: 'idd' is none of",
        ),
        (
            ["--s3aclput", "--s3aclgrantee", "u", "--s3aclgtype", "id", "--s3aclgrants", "red"],
            "--s3aclgrants: 'red' is none of",
        ),
        (
            ["-w", "--s3aclputinl", "--s3aclgrantee", "u", "--s3aclgrants", "read"],
            "--s3aclputinl: the grantee needs its type",
        ),
        (
            ["-w", "--s3aclputinl", "--s3aclgrantee", "id=u", "--s3aclgrants", "write"],
            "--s3aclputinl: an upload cannot grant write",
        ),
        (["--s3aclget", "--s3aclgrantee", "u"], "--s3aclgrantee: only applies with"),
        (
            ["--s3aclget", "--s3aclverify", "--s3aclgrantee", "private"],
            "--s3aclverify: cannot check a canned ACL",
        ),
        (
            ["--s3aclput", "--s3aclverify", "--s3aclgrantee", "public-read"],
            "--s3aclverify: needs --s3aclget or --s3baclget",
        ),
        (["-d", "-w", "-D", "--s3olockcfg"], "--s3olockcfg: the objects -w writes stay locked"),
        (["-d", "--s3olockcfg", "--s3bversion"], "--s3bversion: cannot be combined"),
    ],
)
def test_wrong_or_missing_options_are_refused_before_any_request(
    run_cli: RunCli, args: list[str], said: str
) -> None:
    # (port 9 on loopback: nothing is asked of it, the options are refused first)
    proc = run_cli(*args, "-s", "4k", "--s3endpoints", "http://127.0.0.1:9", "--s3key", "K",
                   "--s3secret", "S", "s3://metabucket")  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"Error: {said}"), proc.stderr
    assert len(proc.stderr.splitlines()) == 1


def test_the_options_only_apply_to_object_storage(run_cli: RunCli, tmp_path: Path) -> None:
    proc = run_cli("-w", "-s", "4k", "--s3otag", str(tmp_path / "f"))
    assert proc.returncode == 2
    assert proc.stderr == "Error: --s3otag: only applies to object storage (s3:// PATHs)\n"
    assert not (tmp_path / "f").exists()


# -- against SeaweedFS --------------------------------------------------------------------


@pytest.mark.slow
def test_tags_and_versioning_put_checked_and_removed(
    run_cli: RunCli,
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    bucket = _bucket()
    layout = ["-t", "2", "-n", "1", "-N", "2", "-s", "4k", "-b", "4k", f"s3://{bucket}"]
    out = tmp_path / "put.json"
    proc = run_cli("-d", "-w", "--s3btag", "--s3bversion", "--s3otag", "--s3statdirs",
                   *_args(s3_server), "--json", str(out), *layout)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    got = _phases(out)
    assert list(got) == ["MKBUCKETS", "PUTBUCKETMD", "STATDIRS", "GETBUCKETMD", "WRITE",
                         "PUTOBJMD", "GETOBJMD"]  # fmt: skip
    assert [got[p]["last_done"]["entries"] for p in got] == [1, 1, 1, 1, 4, 4, 4]
    assert "\nPUTBUCKETMD Elapsed time" in proc.stdout and "Dirs total" in proc.stdout
    # What the server now holds: the bucket's two tags and each object's tag, each made
    # for its name; versioning suspended.
    tags = _get(s3_server, bucket, "", "tagging")
    assert sorted(_xml_texts(tags, "Key")) == ["long", "medium"]
    assert all(tag_matches(v, bucket) for v in _xml_texts(tags, "Value"))
    key = "r1/d0/r1-f1"
    value = _xml_texts(_get(s3_server, bucket, key, "tagging"), "Value")
    assert len(value) == 1 and tag_matches(value[0], key)
    assert _xml_texts(_get(s3_server, bucket, "", "versioning"), "Status") == ["Suspended"]

    # The GET phases alone, checking what is there.
    checks = ["--s3btag", "--s3btagverify", "--s3bversion", "--s3bversionverify", "--s3otag",
              "--s3otagverify"]  # fmt: skip
    out = tmp_path / "get.json"
    proc = run_cli(*checks, *_args(s3_server), "--json", str(out), *layout)
    assert proc.returncode == 0, proc.stderr
    assert list(_phases(out)) == ["GETBUCKETMD", "GETOBJMD"]

    # A tag that is not the one put fails its check, naming the object.
    async def retag(c: S3Client) -> None:
        await c.call("PutObjectTagging", "PUT", bucket, key, query=[("tagging", "")],
                     body=tagging_body("another-name", (("medium", 100),)))  # fmt: skip

    _with_client(s3_server, retag)
    proc = run_cli(*checks, *_args(s3_server), *layout)
    assert proc.returncode == 1
    assert f"Error: s3://{bucket}/{key} at {s3_server.endpoint}" in proc.stderr
    assert "tag check: tag 'medium' is not the one put" in proc.stderr

    # -F -D: the tags deleted, then the objects and the bucket.
    out = tmp_path / "del.json"
    proc = run_cli("-F", "-D", "--s3btag", "--s3otag", *_args(s3_server), "--json", str(out),
                   *layout)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert list(_phases(out)) == ["GETBUCKETMD", "GETOBJMD", "DELOBJMD", "RMOBJECTS",
                                  "DELBUCKETMD", "RMBUCKETS"]  # fmt: skip

    # Versioning changed behind its back fails its check (an empty bucket of its own: a
    # versioned bucket keeps what is deleted from it).
    bucket = _bucket()
    proc = run_cli("-d", "-t", "1", "--s3bversion", *_args(s3_server), f"s3://{bucket}")
    assert proc.returncode == 0, proc.stderr

    async def enable(c: S3Client) -> None:
        body = b"<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>"
        await c.call("PutBucketVersioning", "PUT", bucket, "", query=[("versioning", "")],
                     body=body)  # fmt: skip

    _with_client(s3_server, enable)
    proc = run_cli("--s3bversion", "--s3bversionverify", *_args(s3_server), f"s3://{bucket}")
    assert proc.returncode == 1
    assert "versioning check: 'Enabled', 'Suspended' expected" in proc.stderr

    proc = run_cli("-D", "-t", "1", *_args(s3_server), f"s3://{bucket}")
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_object_lock_on_buckets_made_for_it(
    run_cli: RunCli,
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    bucket = _bucket()
    proc = run_cli("-d", "-t", "1", "--s3olockcfg", "--s3olockcfgverify", *_args(s3_server),
                   f"s3://{bucket}")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lock = _get(s3_server, bucket, "", "object-lock")
    assert _xml_texts(lock, "ObjectLockEnabled") == ["Enabled"]
    assert _xml_texts(lock, "Mode") == ["COMPLIANCE"] and _xml_texts(lock, "Days") == ["1"]
    # DELBUCKETMD drops the default retention; the empty bucket goes.
    proc = run_cli("-D", "-t", "1", "--s3olockcfg", *_args(s3_server), f"s3://{bucket}")
    assert proc.returncode == 0, proc.stderr
    assert "\nDELBUCKETMD Elapsed time" in proc.stdout


@pytest.mark.slow
def test_canned_acls_put_and_got_and_grants_the_server_refuses(
    run_cli: RunCli,
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    bucket = _bucket()
    layout = ["-t", "1", "-n", "1", "-N", "2", "-s", "4k", f"s3://{bucket}"]
    out = tmp_path / "acl.json"
    proc = run_cli("-d", "-w", "--s3aclput", "--s3aclget", "--s3baclput", "--s3baclget",
                   "--s3aclgrantee", "public-read", *_args(s3_server), "--json", str(out),
                   *layout)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    got = _phases(out)
    assert list(got) == ["MKBUCKETS", "PUTBACL", "WRITE", "PUTOBJACL", "GETOBJACL", "GETBACL"]
    assert got["PUTOBJACL"]["last_done"]["entries"] == 2
    # SeaweedFS (4.48) refuses an AccessControlPolicy body with grants: one clean error.
    proc = run_cli("--s3aclput", "--s3aclgrantee", "someone", "--s3aclgtype", "id",
                   "--s3aclgrants", "read", *_args(s3_server), *layout)  # fmt: skip
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.startswith("Error: ")]
    assert errors == [f"Error: s3://{bucket}/r0/d0/r0-f0 at {s3_server.endpoint}: HTTP 400 "
                      "InvalidRequest (Invalid Request)"]  # fmt: skip
    assert "Traceback" not in proc.stderr


# -- a recording server: the grants SeaweedFS refuses -------------------------------------


class _AclServer(http.server.BaseHTTPRequestHandler):
    """Keeps each request (method, path, query, headers, body) and each object's ACL body
    as put; a GET ?acl gives it back, with the owner's grant before it."""

    protocol_version = "HTTP/1.1"
    seen: list[tuple[str, str, str, dict[str, str], bytes]]
    acls: dict[str, bytes]

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        url = urlsplit(self.path)
        query = url.query.removesuffix("=")  # (the client sends "acl=")
        self.seen.append((self.command, url.path, query, dict(self.headers.items()), body))
        out = b""
        if query == "acl" and self.command == "PUT":
            self.acls[url.path] = body
        elif query == "acl":
            grants = ET.fromstring(self.acls.get(url.path, b"<x/>"))
            listed = "".join(
                ET.tostring(g, encoding="unicode") for g in grants.iter() if g.tag.endswith("Grant")
            )
            out = (
                "<AccessControlPolicy><Owner><ID>owner</ID></Owner><AccessControlList>"
                "<Grant><Grantee><ID>owner</ID></Grantee><Permission>FULL_CONTROL</Permission>"
                f"</Grant>{listed}</AccessControlList></AccessControlPolicy>"
            ).encode()
        self.send_response(200)
        self.send_header("ETag", '"etag"')
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = _answer


def _acl_server(
    run: Callable[[str], T],
) -> tuple[T, list[tuple[str, str, str, dict[str, str], bytes]]]:
    seen: list[tuple[str, str, str, dict[str, str], bytes]] = []
    handler = type("Handler", (_AclServer,), {"seen": seen, "acls": {}})
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            result = run(f"http://127.0.0.1:{server.server_address[1]}")
        finally:
            server.shutdown()
    return result, seen


GRANTS = ["--s3aclgrantee", "someone", "--s3aclgtype", "id", "--s3aclgrants", "read,racp"]


def test_grants_are_put_signed_and_checked_when_got(run_cli: RunCli, tmp_path: Path) -> None:
    def run(endpoint: str) -> Any:
        return run_cli("-w", "-t", "1", "-N", "2", "-s", "4k", "--s3aclput", "--s3aclget",
                       "--s3aclverify", *GRANTS, "--s3endpoints", endpoint, "--s3key", "K",
                       "--s3secret", "S", "--nolive", "s3://grants")  # fmt: skip

    proc, seen = _acl_server(run)
    assert proc.returncode == 0, proc.stderr
    puts = [s for s in seen if s[0] == "PUT" and s[2] == "acl"]
    assert [s[1] for s in puts] == ["/grants/r0/d0/r0-f0", "/grants/r0/d0/r0-f1"]
    for _, _, _, headers, body in puts:
        root = ET.fromstring(body)
        perms = [e.text for e in root.iter() if e.tag.endswith("Permission")]
        ids = [e.text for e in root.iter() if e.tag.endswith("ID")]
        assert perms == ["READ", "READ_ACP"] and ids == ["someone", "someone"]
        assert "Content-MD5" in headers
        signed = headers["Authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")
        assert {"host", "x-amz-date", "x-amz-content-sha256", "content-md5"} <= set(signed)
    assert len([s for s in seen if s[0] == "GET" and s[2] == "acl"]) == 2


def test_a_grant_missing_from_what_is_got_fails_the_check(run_cli: RunCli) -> None:
    # Only GETOBJACL: nothing was put, so the server lists the owner's grant alone.
    def run(endpoint: str) -> Any:
        return run_cli("-t", "1", "-N", "1", "-s", "4k", "--s3aclget", "--s3aclverify",
                       *GRANTS, "--s3endpoints", endpoint, "--s3key", "K", "--s3secret", "S",
                       "--nolive", "s3://grants")  # fmt: skip

    proc, _ = _acl_server(run)
    assert proc.returncode == 1
    assert "ACL check: no READ grant for 'someone'" in proc.stderr
    assert "s3://grants/r0/d0/r0-f0" in proc.stderr


def test_an_inline_acl_goes_with_every_upload(run_cli: RunCli) -> None:
    def run(endpoint: str) -> Any:
        return run_cli("-w", "-t", "1", "-N", "2", "-s", "4k", "--s3aclputinl",
                       "--s3aclgrantee", "emailAddress=a@example.org", "--s3aclgrants", "full",
                       "--s3endpoints", endpoint, "--s3key", "K", "--s3secret", "S",
                       "--nolive", "s3://inline")  # fmt: skip

    proc, seen = _acl_server(run)
    assert proc.returncode == 0, proc.stderr
    uploads = [s for s in seen if s[0] == "PUT" and s[1].startswith("/inline/")]
    assert len(uploads) == 2
    for _, _, _, headers, _ in uploads:
        assert headers["x-amz-grant-full-control"] == 'emailAddress="a@example.org"'
        signed = headers["Authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")
        assert "x-amz-grant-full-control" in signed
