"""Work split over the concatenated block range (pure) and path resolution (real files)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aiobench.errors import ConfigError
from aiobench.plan.targets import FILE
from aiobench.plan.workload import Layout, Slice
from tests.helpers import make_cfg, resolved_for

MIB = 1 << 20


def test_three_threads_over_two_ten_block_files() -> None:
    layout = Layout((10 * 4096, 10 * 4096), 4096)
    assert [s.blocks for s in layout.slices(3)] == [6, 6, 8]
    assert layout.slices(3) == [Slice(0, 6), Slice(6, 6), Slice(12, 8)]


def test_sixteen_threads_over_four_files_get_quarters() -> None:
    layout = Layout((64 * MIB,) * 4, 4 * MIB)
    parts = layout.slices(16)
    for rank, part in enumerate(parts):
        path_index, offset, length = layout.locate(part.first_block)
        assert path_index == rank // 4
        assert offset == (rank % 4) * 16 * MIB
        assert length == 4 * MIB
        assert part.blocks == 4


def test_locate_short_last_block() -> None:
    layout = Layout((10 * 1000 + 500, 3000), 1000)
    assert layout.cum_blocks == (0, 11, 14)
    assert layout.locate(10) == (0, 10_000, 500)
    assert layout.locate(11) == (1, 0, 1000)
    assert layout.total_bytes == 13_500


def test_resolve_cuts_block_to_file_size(tmp_path: Path) -> None:
    cfg = make_cfg([str(tmp_path / "f")], block="4m", size="1m")
    resolved = resolved_for(cfg)
    assert resolved.path_type == FILE
    assert resolved.layout.block_size == MIB
    assert any("cut" in note for note in resolved.notes)
    assert not (tmp_path / "f").exists()  # resolve only looks


def test_resolve_rounds_down_with_rand(tmp_path: Path) -> None:
    cfg = make_cfg([str(tmp_path / "f")], block="4k", size="10000", rand=True)
    resolved = resolved_for(cfg)
    assert isinstance(resolved.layout, Layout)
    assert resolved.layout.sizes == (8192,)
    assert any("rounded" in note for note in resolved.notes)


def test_resolve_detects_read_sizes(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"x" * 5000)
    (tmp_path / "b").write_bytes(b"y" * 7000)
    cfg = make_cfg(
        [str(tmp_path / "a"), str(tmp_path / "b")], write=False, read=True, size=None, block="1k"
    )
    layout = resolved_for(cfg).layout
    assert isinstance(layout, Layout)
    assert layout.sizes == (5000, 7000)


def test_fewer_blocks_than_threads_is_refused(tmp_path: Path) -> None:
    cfg = make_cfg([str(tmp_path / "f")], block="4k", size="8k", threads=3)
    with pytest.raises(ConfigError, match="threads"):
        resolved_for(cfg)


def test_randamount_below_one_block_per_thread_is_refused(tmp_path: Path) -> None:
    cfg = make_cfg(
        [str(tmp_path / "f")], block="4k", size="1m", threads=4, rand=True, randamount="12k"
    )
    with pytest.raises(ConfigError, match="--randamount"):
        resolved_for(cfg)


@pytest.mark.parametrize("force", [False, True])
def test_a_missing_path_in_dev_is_refused_and_not_created(force: bool) -> None:
    # A mistyped device name (elbencho refuses it too): no regular file stands in for it.
    path = "/dev/aiobench-test-nonexistent"
    assert not os.path.lexists(path)
    cfg = make_cfg([path], block="1m", size="8m", write=True, force=force)
    with pytest.raises(ConfigError) as refused:
        resolved_for(cfg)
    assert str(refused.value) == (
        f"{path}: does not exist; no file is made in /dev (a mistyped device name?)"
    )
    assert not os.path.lexists(path)
