"""--blockvaralgo: the generator of --blockvarpct's refill (#24), seen in the file's bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import RunCli

KIB = 4096
ALGOS = ("fast", "balanced_single", "balanced", "strong")


def _write(run_cli: RunCli, target: Path, *extra: str) -> bytes:
    proc = run_cli(
        "-w", "-b", "4k", "-s", "1m", "-t", "1", "--seed", "3", "--nolive", *extra, str(target)
    )
    assert proc.returncode == 0, proc.stderr
    return target.read_bytes()


@pytest.mark.parametrize("engine", ["native", "python"])
def test_each_algo_writes_its_own_data_at_the_same_share(
    run_cli: RunCli, tmp_path: Path, engine: str
) -> None:
    """pct 50: the second half of every block is the same in all, the first half new per
    write, different per algo and the same again for the same seed."""
    target = tmp_path / "f"
    seen: dict[str, bytes] = {}
    for algo in ALGOS:
        extra = ("--ioengine", engine, "--blockvarpct", "50", "--blockvaralgo", algo)
        data = seen[algo] = _write(run_cli, target, *extra)
        assert len(data) == 1 << 20
        blocks = [data[i : i + KIB] for i in range(0, len(data), KIB)]
        assert len({b[KIB // 2 :] for b in blocks}) == 1  # the share that stays
        assert len({b[: KIB // 2] for b in blocks}) == len(blocks)  # refilled per write
        assert _write(run_cli, target, *extra) == data
    assert len(set(seen.values())) == len(ALGOS)
    assert seen["fast"] == _write(run_cli, target, "--ioengine", engine, "--blockvarpct", "50")
