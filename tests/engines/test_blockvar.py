"""--blockvarpct: how much of each block is new random data per write (#5)."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np
import pytest

from aiobench.engines import native
from aiobench.engines.base import Engine, IoOptions, Job
from aiobench.engines.buffers import PoolSource, SlotBuffer
from aiobench.engines.python import PosixEngine
from aiobench.kinds import WRITE
from aiobench.plan.seeding import SplitMix64
from aiobench.plan.workload import OpRun
from tests.helpers import RunCli, fd_targets

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


@pytest.mark.parametrize("engines", ["python", "native", "python,native"])
def test_refills_continue_the_slots_sfc64_stream(tmp_path: Path, engines: str) -> None:
    """Write k refills words k*w .. k*w+w-1 of numpy's SFC64 from the slot's refill state
    (the phase's SplitMix64 words after the pool's SFC64 state), whichever engine makes it
    (runs of two writes, engines taking turns)."""
    if "native" in engines and not native.available():
        pytest.skip(native.build_error)
    choice: dict[str, Engine] = {"python": PosixEngine()}
    if native.available():
        choice["native"] = native.NativeEngine()
    turns = [choice[name] for name in engines.split(",")]
    block, pct, runs = 4096, 30, 4
    words = -(-block * pct // 100) // 8
    seeding = SplitMix64([3])
    seeding.words(4)  # the pools' SFC64 state
    refill = np.random.SFC64(0)
    refill.state = {
        "bit_generator": "SFC64",
        "state": {"state": np.array(seeding.words(4), dtype=np.uint64)},
        "has_uint32": 0,
        "uinteger": 0,
    }
    stream = refill.random_raw(2 * runs * words)
    buf = SlotBuffer(block, for_write=True, source=PoolSource([3]), stamp_base=0)
    target = tmp_path / "f"
    fd = os.open(target, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        for k in range(runs):
            ops = OpRun(0, [2 * k * block, (2 * k + 1) * block], block, first_seq=2 * k)
            options = IoOptions(block_var_pct=pct)
            job = Job(WRITE, fd_targets(["f"], [fd]), ops, buf, 1 << 62, options=options)
            assert turns[k % len(turns)].run(job).error is None
    finally:
        os.close(fd)
        buf.close()
    data = np.frombuffer(target.read_bytes(), dtype=np.uint64).reshape(2 * runs, block // 8)
    assert data[:, :words].tobytes() == stream.tobytes()
