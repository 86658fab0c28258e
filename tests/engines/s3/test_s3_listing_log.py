"""elbencho's parallel listing (--s3listobjpar, --s3listverify), random-object reads
(--s3randobj) and request log (--s3log, --s3logprefix), against SeaweedFS."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from aiobench.engines.s3.client import S3Client
from aiobench.engines.s3.layout import Credentials, parse_endpoint
from aiobench.engines.s3.requestlog import log_path
from tests.helpers import RunCli
from tests.s3server import S3Server, s3_server  # noqa: F401  (a fixture)

pytestmark = pytest.mark.slow  # real CLI runs and weed mini


def _args(server: S3Server) -> list[str]:
    return ["--s3endpoints", server.endpoint, "--s3key", server.access_key,
            "--s3secret", server.secret_key, "--nolive"]  # fmt: skip


def _phases(path: Path) -> dict[str, dict[str, Any]]:
    return {p["phase"]: p for p in json.loads(path.read_text())["phases"]}


def test_each_thread_lists_its_prefixes_and_the_listing_is_checked(
    run_cli: RunCli,
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    a, b = (f"aiobench-ls-{uuid.uuid4().hex[:10]}" for _ in range(2))
    # 12 objects per prefix: f10 and f11 list before f2 (S3 lists by bytes).
    layout = ["-t", "2", "-n", "2", "-N", "12", "-s", "1k", "-b", "1k", f"s3://{a}", f"s3://{b}"]
    out = tmp_path / "run.json"
    proc = run_cli("-d", "-w", "--s3listobjpar", "--s3listverify", "--iodepth", "2",
                   *_args(s3_server), "--json", str(out), *layout)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    listed = _phases(out)["LISTOBJ_P"]["last_done"]
    # 2 threads x 2 prefixes x 12 objects, each an entry; a page per prefix at least (a
    # thread's runs may split a prefix's listing into more pages)
    assert listed["entries"] == 48 and 4 <= listed["ops"] <= 48
    assert "\nLISTOBJ_P   Elapsed time" in proc.stdout

    # An object too many under a prefix fails the check, naming the prefix (f1x lists
    # after f11, where f2 belongs).
    async def add(c: S3Client) -> None:
        await c.put_object(a, "r0/d0/r0-f1x", memoryview(b"x"))

    async def with_client() -> None:
        credentials = Credentials(s3_server.access_key, s3_server.secret_key)
        endpoint = parse_endpoint(s3_server.endpoint)
        async with S3Client(endpoint, credentials, s3_server.region) as c:
            await add(c)

    asyncio.run(with_client())
    proc = run_cli("--s3listobjpar", "--s3listverify", *_args(s3_server), *layout)
    assert proc.returncode == 1
    assert f"Error: s3://{a}/r0/d0/r0- at {s3_server.endpoint}" in proc.stderr
    assert "listing check: 'r0/d0/r0-f1x' where 'r0/d0/r0-f2' was expected" in proc.stderr
    # Without the check the same listing counts as many entries as -N says.
    proc = run_cli("--s3listobjpar", *_args(s3_server), *layout)
    assert proc.returncode == 0, proc.stderr


def test_random_object_reads_as_many_as_asked(
    run_cli: RunCli,
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    bucket = f"aiobench-ro-{uuid.uuid4().hex[:10]}"
    layout = ["-t", "2", "-n", "1", "-N", "4", "-s", "4k", f"s3://{bucket}"]
    proc = run_cli("-d", "-w", "-b", "4k", *_args(s3_server), *layout)
    assert proc.returncode == 0, proc.stderr
    for extra, gets in ((["--randamount", "24k"], 24), ([], 2 * 4 * 4)):
        out = tmp_path / "read.json"
        proc = run_cli("-r", "--s3randobj", "-b", "1k", *extra, *_args(s3_server), "--json",
                       str(out), *layout)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        read = _phases(out)["READ"]["last_done"]
        # a ranged GET of one 1 KiB block each (the dataset's size by default)
        assert (read["ops"], read["entries"], read["bytes"]) == (gets, gets, gets * 1024)
    proc = run_cli("-w", "--randamount", "4k", "-b", "4k", *_args(s3_server), *layout)
    assert proc.returncode == 2
    assert proc.stderr.startswith("Error: --randamount: only applies with --rand (or --s3randobj)")


def test_the_request_log(
    run_cli: RunCli,
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    bucket = f"aiobench-lg-{uuid.uuid4().hex[:10]}"
    layout = ["-t", "1", "-N", "2", "-s", "4k", f"s3://{bucket}"]
    prefix = str(tmp_path / "req_")
    proc = run_cli("-d", "-w", "-r", "--s3log", "5", "--s3logprefix", prefix, "--s3sseckey",
                   "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", *_args(s3_server),
                   *layout)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    [log] = list(tmp_path.glob("req_*.log"))
    assert log.name == Path(log_path(prefix)).name  # (the hour the run began: the same)
    lines = log.read_text().splitlines()
    ops = [line.split()[3] for line in lines]
    assert ops == ["CreateBucket", "PutObject", "PutObject", "GetObject", "GetObject"]
    assert all(" [INFO] " in line for line in lines)
    assert f"PutObject PUT s3://{bucket}/r0/d0/r0-f1 HTTP 200" in lines[2]
    # Level 5: the headers sent, the SSE-C key hidden.
    assert "x-amz-server-side-encryption-customer-key: ***" in lines[1]
    assert "AAECAwQF" not in log.read_text()
    # Level 2: only what failed (the bucket is gone).
    proc = run_cli("-F", "-D", *_args(s3_server), *layout)
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("-r", "--s3log", "2", "--s3logprefix", prefix, *_args(s3_server), *layout)
    assert proc.returncode == 1
    failed = log.read_text().splitlines()[len(lines) :]
    assert len(failed) == 1 and " [ERROR] GetObject GET " in failed[0]
    assert "HTTP 404 NoSuchBucket" in failed[0]
    proc = run_cli("-r", "--s3log", "4", "--s3logprefix", str(tmp_path / "none" / "x_"),
                   *_args(s3_server), *layout)  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr == f"Error: --s3logprefix: {tmp_path / 'none'}: no such directory\n"
