"""The real engine on real files: coverage of random writes, written data, errors."""

from __future__ import annotations

import gzip
import os
import zlib
from pathlib import Path

import numpy as np
import pytest

from aiobench.engines import registry
from aiobench.engines.base import Engine, Job
from aiobench.engines.buffers import PoolSource, SlotBuffer
from aiobench.errors import ConfigError
from aiobench.kinds import READ
from aiobench.plan.workload import OpRun
from aiobench.run.runner import run_benchmark
from tests.helpers import fd_targets, make_cfg, resolved_for
from tests.helpers import run as run_cfg


def run(paths: list[Path], **over: object) -> object:
    cfg = make_cfg([str(p) for p in paths], **over)
    return run_cfg(cfg)


def blocks_of(path: Path, size: int) -> list[bytes]:
    data = path.read_bytes()
    return [data[i : i + size] for i in range(0, len(data), size)]


def test_random_write_writes_every_block_exactly_once(tmp_path: Path) -> None:
    files = [tmp_path / "f1", tmp_path / "f2"]
    for f in files:
        f.write_bytes(bytes(10 * 4096))  # zeros: an unwritten block stays all-zero
    result = run(files, threads=3, block="4k", size="40k", rand=True)
    phase = result.phases[0]  # type: ignore[attr-defined]
    assert [t.ops for t in phase.threads] == [6, 6, 8]
    assert phase.last_done.ops == 20
    blocks = [b for f in files for b in blocks_of(f, 4096)]
    assert len(blocks) == 20
    # 20 writes and 20 distinct, non-zero blocks: each block was written exactly once.
    assert all(any(b) for b in blocks)
    assert len(set(blocks)) == 20


def test_written_data_is_unique_and_incompressible(tmp_path: Path) -> None:
    target = tmp_path / "f"
    run([target], threads=2, block="4k", size="4m")
    data = target.read_bytes()
    assert len(data) == 4 << 20
    blocks = blocks_of(target, 4096)
    assert len(set(blocks)) == len(blocks)
    assert len(gzip.compress(data, compresslevel=6)) / len(data) > 0.95
    big = tmp_path / "g"
    run([big], threads=1, block="1m", size="8m")
    big_blocks = blocks_of(big, 4096)
    assert len(set(big_blocks)) == len(big_blocks)


@pytest.mark.parametrize("block", ["4k", "8k", "16k", "32k", "64k", "128k", "1m"])
def test_written_data_is_incompressible_at_every_block_size(tmp_path: Path, block: str) -> None:
    """gzip over the whole file, and zlib per 128 KiB extent as btrfs and ZFS compress."""
    target = tmp_path / "f"
    run([target], threads=1, block=block, size="4m")
    data = target.read_bytes()
    assert len(gzip.compress(data, compresslevel=6)) / len(data) > 0.95
    extent = 128 * 1024
    chunks = [data[i : i + extent] for i in range(0, len(data), extent)]
    assert min(len(zlib.compress(c, 1)) / len(c) for c in chunks) > 0.95
    quarters = blocks_of(target, 4096)
    assert len(set(quarters)) == len(quarters)  # nothing for 4 KiB dedup either


def test_sequential_write_then_read_counts_every_byte(tmp_path: Path) -> None:
    files = [tmp_path / "a", tmp_path / "b"]
    result = run(files, threads=2, block="64k", size="1000k", read=True)
    write, read = result.phases  # type: ignore[attr-defined]
    assert write.name == "WRITE" and read.name == "READ"
    for phase in (write, read):
        assert phase.last_done.bytes == 2 * 1000 * 1024
        assert phase.io_latency.count == phase.last_done.ops == 2 * 16  # 15 full + 1 short
    assert all(os.path.getsize(f) == 1000 * 1024 for f in files)


def test_read_past_end_reports_path_offset_and_errno(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(np.random.default_rng(0).bytes(64 * 1024))
    cfg = make_cfg([str(target)], write=False, read=True, block="4k", size=None)
    resolved = resolved_for(cfg)
    os.truncate(target, 32 * 1024)  # shrinks after the size was detected
    result = run_benchmark(cfg, resolved, registry.make(cfg.ioengine))
    assert result.error is not None
    assert result.error["path"] == str(target)
    assert result.error["offset"] == 32 * 1024
    assert result.error["errno_name"] == "EIO"
    assert result.phases[0].last_done.ops == 8  # what was measured is still reported


@pytest.mark.parametrize(("iodepth", "expected"), [(16, 32), (1, 2)])
def test_peak_inflight_on_real_direct_io(tmp_path: Path, iodepth: int, expected: int) -> None:
    # O_DIRECT reads go to the device, so executor threads wait in the kernel, not for the
    # interpreter lock, and every slot is in flight at once.
    target = tmp_path / "f"
    target.write_bytes(np.random.default_rng(1).bytes(8 << 20))
    cfg = make_cfg(
        [str(target)],
        write=False,
        read=True,
        threads=2,
        iodepth=iodepth,
        block="4k",
        size=None,
        rand=True,
        direct=True,
        timelimit=1,
    )
    result = run_cfg(cfg)
    phase = result.phases[0]
    assert phase.peak_inflight_ops == expected
    assert phase.last_done.ops > 0


def test_engine_run_ends_at_its_time_budget(tmp_path: Path, io_engine: Engine) -> None:
    target = tmp_path / "f"
    target.write_bytes(bytes(64 * 4096))
    fd = os.open(target, os.O_RDONLY)
    buf = SlotBuffer(4096, for_write=False, source=PoolSource([0]), stamp_base=0)
    ops = OpRun(0, [i * 4096 for i in range(64)], 4096)
    try:
        engine = io_engine
        past = engine.run(Job(READ, fd_targets([str(target)], [fd]), ops, buf, until_ns=0))
        assert len(past.ends) == 1  # one operation always runs, then the budget is spent
        whole = engine.run(Job(READ, fd_targets([str(target)], [fd]), ops, buf, until_ns=2**62))
        assert len(whole.ends) == len(whole.starts) == 64
        assert all(s <= e for s, e in zip(whole.starts, whole.ends, strict=True))
    finally:
        buf.close()
        os.close(fd)


@pytest.mark.parametrize("swap", ["symlink", "hardlink", "file"])
def test_a_path_replaced_after_its_probe_is_refused_before_any_write(
    tmp_path: Path, io_engine: Engine, swap: str
) -> None:
    """The run was sized and checked for the file the probe found; a symlink, a hard link
    to another file or another file renamed over it by the time it opens is refused (and
    what it leads to is left as it was). A dir mode PATH likewise."""
    target, outside = tmp_path / "f", tmp_path / "outside"
    target.write_bytes(bytes(1 << 20))
    outside.write_bytes(b"mine" * 1024)
    cfg = make_cfg([str(target)])
    resolved = io_engine.resolve(cfg)
    spare = tmp_path / "spare"
    if swap == "symlink":
        spare.symlink_to(outside)
    elif swap == "hardlink":
        os.link(outside, spare)
    else:
        spare.write_bytes(bytes(1 << 20))
    os.rename(spare, target)
    with pytest.raises(ConfigError, match=f"{target}: replaced since it was looked at"):
        run_benchmark(cfg, resolved, io_engine)
    assert outside.read_bytes() == b"mine" * 1024
    if swap == "file":
        assert target.read_bytes() == bytes(1 << 20)
    # A file the probe found and that is gone by then is not made anew.
    target.unlink()
    with pytest.raises(ConfigError, match="cannot open"):
        run_benchmark(cfg, resolved, io_engine)
    assert not target.exists()
    # Dir mode: the PATH dir swapped for another.
    tree, other = tmp_path / "tree", tmp_path / "other"
    tree.mkdir()
    other.mkdir()
    dir_cfg = make_cfg([str(tree)], dirs=0, files=2, size="4k", block="4k")
    dir_resolved = io_engine.resolve(dir_cfg)
    tree.rmdir()
    other.rename(tree)
    with pytest.raises(ConfigError, match=f"{tree}: replaced since it was looked at"):
        run_benchmark(dir_cfg, dir_resolved, io_engine)
    assert list(tree.iterdir()) == []
