"""DIR's block device as the check finds it in sysfs, on real loop devices (root; skipped
otherwise): a filesystem on a partition of a loop device, and one on no device at all."""

from __future__ import annotations

import contextlib
import os
import shutil
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiobench.check.device import loops_under, rotational
from aiobench.check.model import Loop
from aiobench.plan.targets import filesystem_type
from tests.helpers import mounted_tmpfs, require_root_tools, run_tool

pytestmark = [pytest.mark.root, pytest.mark.slow]

SECTOR = 512
IMAGE_BYTES = 64 << 20
FIRST_SECTOR = 2048  # where partitioning tools start the first partition (1 MiB)


def _mbr(image: Path) -> None:
    """One Linux partition (type 0x83) from 1 MiB to the end, in an MBR."""
    sectors = IMAGE_BYTES // SECTOR - FIRST_SECTOR
    entry = struct.pack("<B3sB3sII", 0, b"\0\0\0", 0x83, b"\0\0\0", FIRST_SECTOR, sectors)
    with image.open("r+b") as handle:
        handle.seek(446)
        handle.write(entry)
        handle.seek(510)
        handle.write(b"\x55\xaa")


@contextlib.contextmanager
def partitioned_loop(tmp_path: Path) -> Iterator[tuple[str, Path, Path]]:
    """ext4 on the first partition of a loop device over a file on disk, direct I/O off;
    yields (the loop device, its backing file, the mount point)."""
    require_root_tools("loop devices and mounts", "losetup", "mkfs.ext4", "mount", "umount")
    image = tmp_path / "disk.img"
    with image.open("wb") as handle:
        handle.truncate(IMAGE_BYTES)
    _mbr(image)
    with contextlib.ExitStack() as undo:
        made = run_tool("losetup", "--find", "--show", "--partscan", "--direct-io=off", str(image))
        if made.returncode:
            pytest.skip(f"no loop device: {made.stderr.strip()}")
        device = made.stdout.strip()
        undo.callback(run_tool, "losetup", "--detach", device)
        part = f"{device}p1"
        deadline = time.monotonic() + 10
        while not os.path.exists(part) and time.monotonic() < deadline:
            time.sleep(0.05)  # (the kernel adds the partition's node shortly)
            if not os.path.exists(part) and shutil.which("partx"):
                # A kernel without the MBR parser still takes the partition it is told of.
                run_tool("partx", "--add", device)
        if not os.path.exists(part):
            pytest.skip(f"{part} did not appear (no partition scan here)")
        if run_tool("mkfs.ext4", "-q", "-F", part).returncode:
            pytest.skip(f"mkfs.ext4 {part} failed")
        mnt = tmp_path / "mnt"
        mnt.mkdir()
        if run_tool("mount", part, str(mnt)).returncode:
            pytest.skip(f"cannot mount {part}")
        undo.callback(run_tool, "umount", str(mnt))
        yield device, image, mnt


def test_a_loop_device_is_found_under_a_partition_of_it(tmp_path: Path) -> None:
    with partitioned_loop(tmp_path) as (device, image, mnt):
        (mnt / "sub").mkdir()
        name = os.path.basename(device)
        spins = Path(f"/sys/block/{name}/queue/rotational").read_text("ascii").strip() == "1"
        expected = Loop(
            device=device,
            backing_file=str(image),
            direct_io=False,
            backing_fstype=filesystem_type(str(image)),
        )
        assert loops_under(str(mnt / "sub")) == [expected]
        assert rotational(str(mnt)) is spins  # (the partition's disk's queue)
    with mounted_tmpfs(tmp_path / "tmpfs", "size=1m") as memory:
        assert loops_under(str(memory)) == []
        assert rotational(str(memory)) is None
