"""The MIXED phase (--s3mix, warp's mixed): shares, planning on objects that exist, each
kind reported apart in the table and JSON, against SeaweedFS."""

from __future__ import annotations

import itertools
import json
import uuid
from pathlib import Path

import numpy as np
import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from aiobench.engines.s3.layout import object_layout
from aiobench.engines.s3.mixed import DELETE, GET, PUT, STAT, MixedOps, parse_mix
from aiobench.errors import ConfigError
from aiobench.kinds import MIXED
from aiobench.results.model import OpKindResult
from aiobench.stats.merge import _merge_op_kinds
from aiobench.stats.opkinds import OpKindTally, summarise_kinds
from tests.helpers import RunCli, errors_of
from tests.s3server import S3Server, s3_server  # noqa: F401  (a fixture)


def test_the_order_holds_the_shares_in_every_100() -> None:
    mix = parse_mix("get=70,put=20,delete=5,stat=5")
    kinds = list(itertools.islice(mix.order(), 1000))
    for start in range(0, 1000, 100):
        window = kinds[start : start + 100]
        assert [window.count(k) for k in (GET, PUT, DELETE, STAT)] == [70, 20, 5, 5]
    # Smooth: no long runs of one kind (the 5 % kinds are spread out).
    deletes = [i for i, k in enumerate(kinds[:100]) if k == DELETE]
    assert min(b - a for a, b in itertools.pairwise(deletes)) >= 10
    assert dict(parse_mix("READ=50, write=50").shares) == {GET: 50, PUT: 50, DELETE: 0, STAT: 0}


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("get=70,put=20", "--s3mix: the shares add up to 90 %, not 100"),
        ("get=50,copy=50", "--s3mix: 'copy=50' is not KIND=PERCENT"),
        ("get=50,get=50", "--s3mix: get is given twice"),
        ("get=80,put=5,delete=15", "--s3mix: delete's share may not be larger than put's"),
    ],
)
def test_wrong_shares_are_refused(text: str, said: str) -> None:
    with pytest.raises(ConfigError, match=said.replace("(", r"\(")):
        parse_mix(text)


def test_the_plan_reads_only_objects_that_exist() -> None:
    """Each thread's operations, planned in order, never GET or HEAD an object a DELETE
    removed and no PUT has put back; a PUT puts a deleted one back first."""
    layout = object_layout(2, 1, 1, 5, 4096, 4096, mix=parse_mix("get=30,put=30,delete=30,stat=10"))
    stream = MixedOps(layout, MIXED, 0, 2000, layout.mix, np.random.default_rng(1))  # type: ignore[arg-type]
    gone: set[str] = set()
    seen = {GET: 0, PUT: 0, DELETE: 0, STAT: 0}
    while (run := stream.take(37)) is not None:
        assert run.ops is not None
        for k, op in enumerate(run.ops):
            name = run.name(k)
            seen[op] += 1
            if op in (GET, STAT):
                assert name not in gone
            elif op == DELETE:
                assert name not in gone
                gone.add(name)
            elif gone:  # a PUT with objects deleted: one of them
                assert name in gone
                gone.discard(name)
    assert seen == {GET: 600, PUT: 600, DELETE: 600, STAT: 200}


def test_kinds_summarised_and_merged_over_ranks() -> None:
    one = summarise_kinds(
        {GET: OpKindTally(3, 300, [10, 20, 30], [5, 6, 7]), PUT: OpKindTally(1, 100, [40])}
    )
    two = summarise_kinds({GET: OpKindTally(1, 100, [50], [8])})
    assert one[1].ttfb is None and one[0].ttfb is not None
    merged = _merge_op_kinds(
        [type("P", (), {"op_kinds": one})(), type("P", (), {"op_kinds": two})()]
    )
    assert [(k.op, k.ops, k.bytes, k.latency.count) for k in merged] == [
        (GET, 4, 400, 4),
        (PUT, 1, 100, 1),
    ]
    assert isinstance(merged[0], OpKindResult) and merged[0].ttfb is not None
    assert merged[0].ttfb.count == 4 and merged[0].latency.max_ns == 50


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--s3mix", "get=100", "--iodepth", "2"], "--s3mix: a thread's operations run one after"),
        (["--s3mixops", "10", "-r"], "--s3mixops: only applies with --s3mix"),
        (["--s3mix", "get=50,put=25,delete=25", "-N", "1"], "--s3mix: deletes need two objects"),
        (["--s3mix", "get=90"], "--s3mix: the shares add up to 90 %"),
    ],
)
def test_wrong_mixed_runs_are_refused(run_cli: RunCli, args: list[str], said: str) -> None:
    proc = run_cli(*args, "-s", "4k", "--s3endpoints", "http://127.0.0.1:9", "--s3key", "K",
                   "--s3secret", "S", "s3://mixbucket")  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"Error: {said}"), proc.stderr


@pytest.mark.slow
def test_a_mixed_phase_against_a_real_server(
    run_cli: RunCli,
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
    validator: Draft202012Validator,
) -> None:
    bucket = f"aiobench-mx-{uuid.uuid4().hex[:10]}"
    args = ["--s3endpoints", s3_server.endpoint, "--s3key", s3_server.access_key,
            "--s3secret", s3_server.secret_key, "--nolive"]  # fmt: skip
    layout = ["-t", "2", "-n", "2", "-N", "10", "-s", "8k", "-b", "8k", f"s3://{bucket}"]
    proc = run_cli("-d", "-w", *args, *layout)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "mixed.json"
    proc = run_cli("--s3mix", "get=70,put=20,delete=5,stat=5", "--s3mixops", "600", *args,
                   "--json", str(out), *layout)  # fmt: skip
    assert proc.returncode == 0, proc.stderr  # (no GET met a deleted object)
    doc = json.loads(out.read_text())
    assert errors_of(validator, doc) == []
    [phase] = doc["phases"]
    assert phase["phase"] == "MIXED"
    kinds = {k["op"]: k for k in phase["op_kinds"]}
    total = sum(k["ops"] for k in kinds.values())
    assert total == phase["last_done"]["entries"] == 1200
    for op, share in ((GET, 70), (PUT, 20), (DELETE, 5), (STAT, 5)):
        assert abs(100 * kinds[op]["ops"] / total - share) <= 1, kinds[op]
        assert kinds[op]["latency"]["count"] == kinds[op]["ops"]
    assert kinds[GET]["bytes"] == kinds[GET]["ops"] * 8192
    assert kinds[PUT]["bytes"] == kinds[PUT]["ops"] * 8192
    assert kinds[DELETE]["bytes"] == kinds[STAT]["bytes"] == 0
    assert kinds[GET]["ttfb"]["count"] == kinds[GET]["ops"] and "ttfb" not in kinds[PUT]
    # The data requests are the phase's IO operations and bytes.
    assert phase["last_done"]["ops"] == kinds[GET]["ops"] + kinds[PUT]["ops"]
    for op in (GET, PUT, DELETE, STAT):
        assert f"\n            {op:<17}: {kinds[op]['ops']} ops (" in proc.stdout
    proc = run_cli("-F", "-D", *args, *layout)
    assert proc.returncode == 0, proc.stderr
