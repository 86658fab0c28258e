"""The S3 client against a real S3 server (SeaweedFS on loopback, tests/s3server.py)."""

from __future__ import annotations

import mmap
import os
import uuid
from collections.abc import AsyncIterator

import pytest

from aiobench.engines.s3.client import S3Client
from aiobench.engines.s3.layout import Credentials, parse_endpoint
from aiobench.errors import BenchIOError, S3Error
from tests.s3server import S3Server, s3_server  # noqa: F401  (a fixture)

pytestmark = pytest.mark.slow  # starts weed mini (once per session)

MIB = 1 << 20
# S3 (and SeaweedFS) refuse multipart parts below 5 MiB, but for the last one.
PART = 5 * MIB


def _client(server: S3Server, secret: str | None = None, max_connections: int = 4) -> S3Client:
    creds = Credentials(server.access_key, server.secret_key if secret is None else secret)
    endpoint = parse_endpoint(server.endpoint)
    return S3Client(endpoint, creds, server.region, max_connections=max_connections)


@pytest.fixture
async def client(s3_server: S3Server) -> AsyncIterator[S3Client]:  # noqa: F811
    async with _client(s3_server, max_connections=4) as c:
        yield c


@pytest.fixture
async def bucket(client: S3Client) -> AsyncIterator[str]:
    """A fresh bucket, emptied and removed afterwards."""
    name = f"t-{uuid.uuid4().hex[:16]}"
    await client.create_bucket(name)
    yield name
    while keys := (await client.list_objects(name, max_keys=1000)).keys:
        await client.delete_objects(name, keys)
    await client.delete_bucket(name)


async def _names(client: S3Client, bucket: str, prefix: str = "") -> list[str]:
    page = await client.list_objects(bucket, prefix, 1000)
    assert page.next_token is None
    return page.keys


async def test_bucket_create_exists_again_and_delete(client: S3Client) -> None:
    name = f"t-{uuid.uuid4().hex[:16]}"
    await client.create_bucket(name)
    await client.create_bucket(name)  # ours already: no error
    assert await _names(client, name) == []
    await client.delete_bucket(name)
    with pytest.raises(S3Error) as info:
        await client.delete_bucket(name)
    assert (info.value.status, info.value.code) == (404, "NoSuchBucket")


async def test_bucket_with_objects_is_not_removed(client: S3Client, bucket: str) -> None:
    await client.put_object(bucket, "keep", memoryview(b"data"))
    with pytest.raises(S3Error) as info:
        await client.delete_bucket(bucket)
    assert info.value.code == "BucketNotEmpty"
    assert await _names(client, bucket) == ["keep"]


async def test_put_then_get_gives_the_same_bytes(client: S3Client, bucket: str) -> None:
    data = os.urandom(10_000)
    etag = await client.put_object(bucket, "r0/d0/r0-f0", memoryview(data))
    assert etag.strip('"')
    into = bytearray(len(data))
    got, ttfb_ns = await client.get_range(bucket, "r0/d0/r0-f0", 0, memoryview(into))
    assert got == len(data)
    assert bytes(into) == data
    assert ttfb_ns > 0


async def test_put_and_get_through_page_aligned_buffers(client: S3Client, bucket: str) -> None:
    # As the engine's slots hold them: mmap memory, sent and filled through memoryviews.
    size = 64 * 1024
    with mmap.mmap(-1, size) as out_mem, mmap.mmap(-1, size) as in_mem:
        out_mem.write(os.urandom(size))
        out_view, in_view = memoryview(out_mem), memoryview(in_mem)
        try:
            await client.put_object(bucket, "aligned", out_view)
            got, _ = await client.get_range(bucket, "aligned", 0, in_view)
            assert got == size
            assert in_view == out_view
        finally:
            out_view.release()
            in_view.release()


async def test_ranged_get_at_an_offset_is_that_slice(client: S3Client, bucket: str) -> None:
    data = os.urandom(20_000)
    await client.put_object(bucket, "obj", memoryview(data))
    into = bytearray(4096)
    got, _ = await client.get_range(bucket, "obj", 12_288, memoryview(into))
    assert got == 4096
    assert bytes(into) == data[12_288 : 12_288 + 4096]
    # The buffer is reused: a range that runs past the end fills only what there is.
    got, _ = await client.get_range(bucket, "obj", 18_000, memoryview(into))
    assert got == 2000
    assert bytes(into[:got]) == data[18_000:]


async def test_range_past_the_end_is_an_error(client: S3Client, bucket: str) -> None:
    await client.put_object(bucket, "short", memoryview(b"x" * 100))
    with pytest.raises(S3Error) as info:
        await client.get_range(bucket, "short", 4096, memoryview(bytearray(10)))
    assert info.value.status == 416
    assert "offset 4096" in str(info.value)


async def test_multipart_upload_of_three_parts(client: S3Client, bucket: str) -> None:
    parts = [os.urandom(PART), os.urandom(PART), os.urandom(1234)]
    upload = await client.create_multipart_upload(bucket, "big")
    etags = [
        await client.upload_part(bucket, "big", upload, n, memoryview(part))
        for n, part in enumerate(parts, start=1)
    ]
    assert await _names(client, bucket) == []  # not an object before it is completed
    await client.complete_multipart_upload(bucket, "big", upload, etags)
    whole = b"".join(parts)
    assert await client.head_object(bucket, "big") == len(whole)
    into = bytearray(len(whole))
    got, _ = await client.get_range(bucket, "big", 0, memoryview(into))
    assert got == len(whole)
    assert into == whole
    across = bytearray(4096)  # a range over the boundary of parts 1 and 2
    await client.get_range(bucket, "big", PART - 2048, memoryview(across))
    assert across == whole[PART - 2048 : PART + 2048]


async def test_aborted_multipart_upload_leaves_no_object(client: S3Client, bucket: str) -> None:
    upload = await client.create_multipart_upload(bucket, "gone")
    etag = await client.upload_part(bucket, "gone", upload, 1, memoryview(os.urandom(1000)))
    await client.abort_multipart_upload(bucket, "gone", upload)
    with pytest.raises(S3Error) as info:
        await client.complete_multipart_upload(bucket, "gone", upload, [etag])
    assert info.value.code == "NoSuchUpload"
    assert await _names(client, bucket) == []


async def test_head_gives_the_size(client: S3Client, bucket: str) -> None:
    await client.put_object(bucket, "sized", memoryview(bytes(12_345)))
    assert await client.head_object(bucket, "sized") == 12_345
    with pytest.raises(S3Error) as info:
        await client.head_object(bucket, "missing")
    assert info.value.status == 404
    assert "s3://" + bucket + "/missing" in str(info.value)


async def test_listing_pages_give_exactly_the_names(client: S3Client, bucket: str) -> None:
    names = sorted(f"r0/d{d}/r0-f{f}" for d in range(2) for f in range(4))
    for name in [*names, "other/x"]:
        await client.put_object(bucket, name, memoryview(b"1"))
    pages = []
    token: str | None = None
    while True:
        page = await client.list_objects(bucket, "r0/", max_keys=3, token=token)
        pages.append(page.keys)
        assert page.sizes == [1] * len(page.keys)
        token = page.next_token
        if token is None:
            break
    assert [len(p) for p in pages] == [3, 3, 2]
    assert [k for p in pages for k in p] == names


async def test_delete_objects_removes_them(client: S3Client, bucket: str) -> None:
    names = [f"r1/d0/r1-f{f}" for f in range(25)]
    for name in names:
        await client.put_object(bucket, name, memoryview(b"z"))
    await client.delete_objects(bucket, names[:10])
    assert await _names(client, bucket) == sorted(names[10:])
    await client.delete_objects(bucket, names[10:])
    assert await _names(client, bucket) == []


async def test_delete_object(client: S3Client, bucket: str) -> None:
    await client.put_object(bucket, "one", memoryview(b"1"))
    await client.put_object(bucket, "two", memoryview(b"2"))
    await client.delete_object(bucket, "one")
    assert await _names(client, bucket) == ["two"]


async def test_keys_with_spaces_and_unicode(client: S3Client, bucket: str) -> None:
    # The signer's path encoding must agree with the server's for any key.
    key = "pre fix/\u00e4+b=c&d/r0-f0"
    await client.put_object(bucket, key, memoryview(b"abc"))
    assert await client.head_object(bucket, key) == 3
    assert await _names(client, bucket, "pre fix/") == [key]


async def test_wrong_secret_is_signature_does_not_match(
    s3_server: S3Server,  # noqa: F811
) -> None:
    secret = "not-the-secret-" + uuid.uuid4().hex
    async with _client(s3_server, secret) as c:
        with pytest.raises(S3Error) as info:
            await c.create_bucket("t-never-made")
    err = info.value
    assert isinstance(err, BenchIOError)
    assert (err.status, err.code) == (403, "SignatureDoesNotMatch")
    assert s3_server.endpoint in str(err)
    for text in (str(err), repr(err.to_dict())):
        assert secret not in text
        assert s3_server.secret_key not in text


async def test_unknown_bucket_is_no_such_bucket(client: S3Client) -> None:
    missing = f"t-missing-{uuid.uuid4().hex[:12]}"
    with pytest.raises(S3Error) as info:
        await client.put_object(missing, "k", memoryview(b"1"))
    assert (info.value.status, info.value.code) == (404, "NoSuchBucket")
    assert f"s3://{missing}/k" in str(info.value)
    with pytest.raises(S3Error, match="NoSuchBucket"):
        await client.list_objects(missing)
    with pytest.raises(S3Error, match="NoSuchBucket"):
        await client.get_range(missing, "k", 0, memoryview(bytearray(1)))
