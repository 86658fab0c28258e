"""--blockvarpct: how much of each block is new random data per write (#5)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from tests.helpers import RunCli

KIB = 1024


def write(run_cli: RunCli, target: Path, *extra: str, block: str = "4k") -> bytes:
    proc = run_cli("-w", "-b", block, "-s", "2m", *extra, str(target))
    assert proc.returncode == 0, proc.stderr
    return target.read_bytes()


def chunks(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def gzip_ratio(data: bytes) -> float:
    return len(gzip.compress(data, compresslevel=6)) / len(data)


def test_default_is_incompressible_and_unique(run_cli: RunCli, tmp_path: Path) -> None:
    data = write(run_cli, tmp_path / "f")
    assert gzip_ratio(data) > 0.95
    blocks = chunks(data, 4 * KIB)
    assert len(set(blocks)) == len(blocks)


def test_zero_writes_the_same_block_every_time(run_cli: RunCli, tmp_path: Path) -> None:
    data = write(run_cli, tmp_path / "f", "--blockvarpct", "0")
    assert len(set(chunks(data, 4 * KIB))) == 1  # only when the user asks for it
    assert gzip_ratio(data) < 0.05


@pytest.mark.parametrize("block", ["4k", "64k"])
def test_hundred_refills_every_block_whole(run_cli: RunCli, tmp_path: Path, block: str) -> None:
    data = write(run_cli, tmp_path / "f", "--blockvarpct", "100", block=block)
    assert gzip_ratio(data) > 0.95
    quarters = chunks(data, 4 * KIB)
    assert len(set(quarters)) == len(quarters)


def test_half_refills_the_first_half_of_each_block(run_cli: RunCli, tmp_path: Path) -> None:
    data = write(run_cli, tmp_path / "f", "--blockvarpct", "50", "-t", "1")
    blocks = chunks(data, 4 * KIB)
    firsts = [b[: 2 * KIB] for b in blocks]
    seconds = [b[2 * KIB :] for b in blocks]
    assert len(set(firsts)) == len(blocks)  # new random data each write
    assert len(set(seconds)) == 1  # the rest of the block is reused
    assert 0.4 < gzip_ratio(data) < 0.7


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--blockvarpct", "101"], "--blockvarpct: must be between 0 and 100 (got 101)"),
        (["--blockvarpct", "-1"], "--blockvarpct: must be between 0 and 100 (got -1)"),
        (["--blockvarpct", "50", "--verify", "1"], "--blockvarpct: cannot be combined"),
    ],
)
def test_bad_values_are_usage_errors(
    run_cli: RunCli, tmp_path: Path, args: list[str], message: str
) -> None:
    proc = run_cli("-w", "-s", "1m", *args, str(tmp_path / "f"))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"Error: {message}") and proc.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_help_states_the_cpu_cost(run_cli: RunCli) -> None:
    proc = run_cli("--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "--blockvarpct" in text and "CPU cost" in text
