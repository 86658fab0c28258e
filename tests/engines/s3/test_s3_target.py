"""S3 PATHs, endpoints, credentials, addressing and object names; pure."""

from __future__ import annotations

import pytest

from aiobench.engines.s3.layout import (
    DEFAULT_REGION,
    BucketPath,
    Endpoint,
    bucket_address,
    endpoint_of_rank,
    object_count,
    object_keys,
    object_layout,
    object_names,
    parse_credentials,
    parse_endpoint,
    parse_endpoints,
    parse_path,
    parse_paths,
    parse_region,
)
from aiobench.errors import ConfigError
from aiobench.kinds import LISTOBJ, MKDIRS, MULTIDEL


def test_path_bucket_and_prefix() -> None:
    assert parse_path("s3://bench") == BucketPath("bench", "")
    assert parse_path("s3://bench/") == BucketPath("bench", "")
    assert parse_path("s3://bench/run1/a/") == BucketPath("bench", "run1/a")
    assert str(parse_path("s3://bench/run1/")) == "s3://bench/run1"


@pytest.mark.parametrize(
    ("path", "needle"),
    [
        ("/mnt/x", "not an S3 path"),
        ("s3://", "no bucket name"),
        ("s3:///x", "no bucket name"),
        ("s3://Bench", "bucket name must be 3 to 63"),
        ("s3://ab", "bucket name must be 3 to 63"),
        ("s3://-ab", "bucket name must be 3 to 63"),
        ("s3://a..b", "bucket name must be 3 to 63"),
        ("s3://" + "a" * 64, "bucket name must be 3 to 63"),
        ("s3://under_score", "bucket name must be 3 to 63"),
        ("s3://10.0.0.1", "not an IP address"),
        ("s3://bench//x", "empty part"),
        ("s3://bench/a\nb", "control characters"),
    ],
)
def test_bad_paths_name_the_path(path: str, needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_path(path)
    message = str(info.value)
    assert message.startswith("PATH: ")
    assert needle in message


def test_several_buckets_and_mistakes() -> None:
    assert parse_paths(["s3://one", "s3://two/p", "s3://one/q"]) == (
        BucketPath("one"),
        BucketPath("two", "p"),
        BucketPath("one", "q"),
    )
    with pytest.raises(ConfigError, match=r"^PATH: s3://one/ is given more than once"):
        parse_paths(["s3://one", "s3://one/"])
    with pytest.raises(ConfigError, match="cannot be mixed"):
        parse_paths(["s3://one", "/tmp/x"])
    with pytest.raises(ConfigError, match="missing PATH"):
        parse_paths([])


def test_object_keys_below_prefix_and_objprefix() -> None:
    assert BucketPath("b").key("r0/d1/r0-f7") == "r0/d1/r0-f7"
    assert BucketPath("b", "run1").key("r0/d1/r0-f7") == "run1/r0/d1/r0-f7"
    assert BucketPath("b", "run1").key("r0/d1/r0-f7", "x-") == "run1/x-r0/d1/r0-f7"
    assert BucketPath("b").key("r0-f0", "pre/") == "pre/r0-f0"
    assert BucketPath("b", "run1").list_prefix("x-") == "run1/x-"
    assert BucketPath("b").list_prefix() == ""


def test_endpoints() -> None:
    assert parse_endpoint("127.0.0.1:9000") == Endpoint("http", "127.0.0.1", 9000)
    assert parse_endpoint("https://s3.example.org/") == Endpoint("https", "s3.example.org", 443)
    assert parse_endpoint("HTTP://Host") == Endpoint("http", "host", 80)
    assert parse_endpoint("http://[::1]:8333").netloc == "[::1]:8333"
    assert parse_endpoint("http://h:80").netloc == "h"
    assert parse_endpoint("https://h:8443").url == "https://h:8443"
    listed = parse_endpoints("h1:1, http://h2:2", {})
    assert [e.url for e in listed] == ["http://h1:1", "http://h2:2"]


def test_endpoint_env_fallbacks_in_order() -> None:
    both = {"AWS_ENDPOINT_URL_S3": "http://s3only:1", "AWS_ENDPOINT_URL": "http://all:2"}
    assert parse_endpoints(None, both)[0].host == "s3only"
    assert parse_endpoints("", {"AWS_ENDPOINT_URL": "http://all:2"})[0].host == "all"
    assert parse_endpoints("http://given:3", both)[0].host == "given"
    with pytest.raises(ConfigError, match=r"^--s3endpoints: no S3 endpoint given"):
        parse_endpoints(None, {})
    with pytest.raises(ConfigError, match=r"^AWS_ENDPOINT_URL_S3: .*scheme"):
        parse_endpoints(None, {"AWS_ENDPOINT_URL_S3": "ftp://x"})


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("ftp://h", "scheme must be http or https"),
        ("http://h:99999", "not a URL"),
        ("http://h:0", "port 0"),
        ("http://h/bucket", "without a path"),
        ("http://h/?x=1", "without a path"),
        ("http://", "no host name"),
        ("h1,,h2", "empty entry"),
        ("h1,h1", "more than once"),
    ],
)
def test_bad_endpoints_name_the_option(value: str, needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_endpoints(value, {})
    assert str(info.value).startswith("--s3endpoints: ")
    assert needle in str(info.value)


@pytest.mark.parametrize(
    "value", ["http://AKID:s3cr3t@h:1", "AKID:s3cr3t@h", "http://u:s3cr3t@h:x"]
)
def test_endpoint_user_info_is_refused_and_never_echoed(value: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_endpoints(value, {})
    assert "user info" in str(info.value)
    assert "s3cr3t" not in str(info.value)
    assert "AKID" not in str(info.value)


def test_endpoints_round_robin_over_ranks() -> None:
    endpoints = parse_endpoints("a:1,b:2,c:3", {})
    assert [endpoint_of_rank(endpoints, r).host for r in range(5)] == ["a", "b", "c", "a", "b"]


def test_credentials_and_env_fallbacks() -> None:
    env = {"AWS_ACCESS_KEY_ID": "ENVKEY", "AWS_SECRET_ACCESS_KEY": "envsecret"}
    assert parse_credentials("K", "S", env).access_key == "K"
    assert parse_credentials(None, None, env).secret_key == "envsecret"
    assert parse_credentials("K", None, env).secret_key == "envsecret"
    creds = parse_credentials("VISIBLEKEY", "hidden-secret", {})
    assert "hidden-secret" not in repr(creds)
    assert "VISIBLEKEY" in repr(creds)


def test_a_session_token_comes_with_the_environments_credentials_only() -> None:
    env = {"AWS_ACCESS_KEY_ID": "ENVKEY", "AWS_SECRET_ACCESS_KEY": "envsecret",
           "AWS_SESSION_TOKEN": "env-token-value"}  # fmt: skip
    assert parse_credentials(None, None, env).session_token == "env-token-value"
    # Given on the command line, a key or secret is not the environment's: nor its token.
    assert parse_credentials("K", None, env).session_token == ""
    assert parse_credentials(None, "S", env).session_token == ""
    assert parse_credentials("K", "S", {}).session_token == ""
    assert "env-token-value" not in repr(parse_credentials(None, None, env))
    with pytest.raises(ConfigError) as info:
        parse_credentials(None, None, env | {"AWS_SESSION_TOKEN": "bad\ntoken-text"})
    assert str(info.value).startswith("AWS_SESSION_TOKEN: must be printable ASCII")
    assert "token-text" not in str(info.value)


def test_missing_or_bad_credentials_never_echo_them() -> None:
    with pytest.raises(ConfigError, match=r"^--s3key: no S3 access key given"):
        parse_credentials(None, "s", {})
    with pytest.raises(ConfigError, match=r"^--s3secret: no S3 secret given"):
        parse_credentials("k", "", {})
    with pytest.raises(ConfigError) as info:
        parse_credentials("k", "bad\nsecret-text", {})
    assert str(info.value).startswith("--s3secret: ")
    assert "secret-text" not in str(info.value)


def test_region() -> None:
    assert parse_region(None) == DEFAULT_REGION == "us-east-1"
    assert parse_region("eu-central-1") == "eu-central-1"
    with pytest.raises(ConfigError, match=r"^--s3region: "):
        parse_region("EU Central")


def test_path_and_virtual_host_addressing() -> None:
    endpoint = parse_endpoint("http://127.0.0.1:8333")
    path_style = bucket_address(endpoint, "bench", virtual_host=False)
    assert (path_style.scheme, path_style.host, path_style.path) == (
        "http",
        "127.0.0.1:8333",
        "/bench",
    )
    assert path_style.object_path("r0/d0/r0-f0") == "/bench/r0/d0/r0-f0"
    virtual = bucket_address(parse_endpoint("https://s3.example.org"), "bench", virtual_host=True)
    assert (virtual.scheme, virtual.host, virtual.path) == (
        "https",
        "bench.s3.example.org",
        "",
    )
    assert virtual.object_path("k") == "/k"


def test_object_names_are_dir_mode_names_and_buckets() -> None:
    layout = object_layout(buckets=3, threads=2, dirs=2, files=2, size=10, block=5)
    assert object_count(layout, 1) == 4
    assert object_names(layout, 1, 0, 4) == [
        (1, "r1/d0/r1-f0"),  # bucket (rank + dir) % buckets
        (1, "r1/d0/r1-f1"),
        (2, "r1/d1/r1-f0"),
        (2, "r1/d1/r1-f1"),
    ]
    assert object_names(layout, 0, 3, 4) == [(1, "r0/d1/r0-f1")]


def test_object_names_without_dirs() -> None:
    layout = object_layout(buckets=2, threads=3, dirs=0, files=2, size=0, block=1)
    assert object_names(layout, 2, 0, 2) == [(0, "r2-f0"), (0, "r2-f1")]
    assert object_names(layout, 1, 0, 1) == [(1, "r1-f0")]


def test_object_keys_per_path() -> None:
    paths = parse_paths(["s3://one/run1", "s3://two"])
    layout = object_layout(buckets=len(paths), threads=1, dirs=2, files=1, size=1, block=1)
    assert object_keys(layout, paths, "p-", 0, 0, 2) == [
        (0, "run1/p-r0/d0/r0-f0"),
        (1, "p-r0/d1/r0-f0"),
    ]


def test_whole_bucket_phases_share_the_buckets_out_by_thread() -> None:
    # 2 threads x 2 prefixes x 30 objects over 3 buckets: 30, 60 and 30 objects.
    layout = object_layout(buckets=3, threads=2, dirs=2, files=30, size=1, block=1, list_max=50)
    assert [layout.entries(MKDIRS, r) for r in (0, 1)] == [2, 1]  # buckets 0 and 2; 1
    assert [layout.entries(LISTOBJ, r) for r in (0, 1)] == [30 + 30, 50]
    assert [layout.entries(MULTIDEL, r) for r in (0, 1)] == [60, 60]
    assert [layout.entry(LISTOBJ, 0, k) for k in (0, 29, 30, 59)] == [
        (0, ""), (0, ""), (2, ""), (2, ""),
    ]  # fmt: skip
    with pytest.raises(IndexError):
        layout.entry(LISTOBJ, 0, 60)
