"""Block devices (SPEC §2, §10) on real loop devices: safety refusals, size detection, types."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import RunCli, require_root_tools

MIB = 1 << 20

pytestmark = [pytest.mark.root, pytest.mark.slow]  # real CLI runs


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), capture_output=True, text=True, check=False)


class LoopDevices:
    """Creates loop devices over sparse files and mounts on them; undoes it all in close()."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.devices: list[str] = []
        self.mounts: list[Path] = []

    def make(self, size: int) -> str:
        backing = self.workdir / f"backing{len(self.devices)}.img"
        with open(backing, "wb") as handle:
            handle.truncate(size)
        proc = _run("losetup", "--find", "--show", str(backing))
        if proc.returncode != 0:
            pytest.skip(f"losetup failed: {proc.stderr.strip()}")
        device = proc.stdout.strip()
        self.devices.append(device)
        return device

    def mkfs(self, device: str) -> None:
        proc = _run("mkfs.ext4", "-q", "-F", device)
        assert proc.returncode == 0, proc.stderr

    def mount(self, device: str, where: Path) -> None:
        where.mkdir(exist_ok=True)
        proc = _run("mount", "-t", "ext4", device, str(where))
        if proc.returncode != 0:
            pytest.skip(f"cannot mount ext4 from a loop device: {proc.stderr.strip()}")
        self.mounts.append(where)

    def umount(self, where: Path) -> None:
        proc = _run("umount", str(where))
        assert proc.returncode == 0, proc.stderr
        self.mounts.remove(where)

    def close(self) -> None:
        for where in reversed(self.mounts):
            _run("umount", str(where))
        self.mounts.clear()
        for device in self.devices:
            _run("losetup", "--detach", device)
        self.devices.clear()


@pytest.fixture
def loops(tmp_path: Path) -> Iterator[LoopDevices]:
    require_root_tools(
        "loop devices and mounts", "losetup", "mkfs.ext4", "mount", "umount", "blkid"
    )
    manager = LoopDevices(tmp_path)
    try:
        yield manager
    finally:
        manager.close()


def single_error(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("Error: "), stderr
    return lines[0]


def read_head(device: str, size: int = MIB) -> bytes:
    with open(device, "rb") as handle:
        return handle.read(size)


def test_mounted_device_is_refused_and_fs_unharmed(
    run_cli: RunCli, loops: LoopDevices, tmp_path: Path
) -> None:
    device = loops.make(64 * MIB)
    loops.mkfs(device)
    mnt = tmp_path / "mnt"
    loops.mount(device, mnt)
    payload = os.urandom(300_000)
    (mnt / "keep.bin").write_bytes(payload)
    os.sync()
    for extra in ([], ["--force"]):  # --force never overrides "mounted"
        proc = run_cli("-w", "-s", "1m", *extra, device, "--nolive")
        assert proc.returncode == 2, proc.stderr
        line = single_error(proc.stderr)
        assert device in line
        assert "mounted" in line or "in use" in line, line
        assert proc.stdout == ""
    loops.umount(mnt)
    fsck = _run("e2fsck", "-f", "-n", device)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    loops.mount(device, mnt)
    assert (mnt / "keep.bin").read_bytes() == payload


def test_unmounted_filesystem_needs_force(
    run_cli: RunCli, loops: LoopDevices, tmp_path: Path
) -> None:
    device = loops.make(64 * MIB)
    loops.mkfs(device)
    before = read_head(device, 2 * MIB)
    proc = run_cli("-w", "-s", "1m", device, "--nolive")
    assert proc.returncode == 2, proc.stderr
    line = single_error(proc.stderr)
    assert device in line
    assert "--force" in line
    assert "ext4" in line
    assert proc.stdout == ""
    assert read_head(device, 2 * MIB) == before
    assert _run("blkid", "-p", "-s", "TYPE", "-o", "value", device).stdout.strip() == "ext4"

    out = tmp_path / "force.json"
    proc = run_cli("-w", "-s", "1m", "--force", device, "--nolive", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["phases"][0]["last_done"]["bytes"] == MIB
    after = read_head(device, 2 * MIB)
    assert after[:MIB] != before[:MIB]
    assert after[:MIB] != bytes(MIB)
    assert after[MIB:] == before[MIB:]  # only -s 1m was written


def test_blockdev_size_is_detected(run_cli: RunCli, loops: LoopDevices, tmp_path: Path) -> None:
    size = 40 * MIB  # not a default of anything
    device = loops.make(size)
    out = tmp_path / "read.json"
    proc = run_cli("-r", "-b", "64k", device, "--nolive", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["meta"]["path_type"] == "blockdev"
    assert doc["meta"]["sizes_bytes"] == [size]
    last = doc["phases"][0]["last_done"]
    assert last["bytes"] == size
    assert last["ops"] == size // (64 * 1024)


def test_blockdev_and_file_together_is_a_usage_error(
    run_cli: RunCli, loops: LoopDevices, tmp_path: Path
) -> None:
    device = loops.make(8 * MIB)
    missing = tmp_path / "plain-file"
    existing = tmp_path / "existing"
    existing.write_bytes(b"x" * 8192)
    for mode, other in (("-w", missing), ("-r", existing)):
        proc = run_cli(mode, "-s", "4k", "-b", "4k", device, str(other), "--nolive")
        assert proc.returncode == 2, proc.stderr
        line = single_error(proc.stderr)
        assert device in line and str(other) in line
        assert "one type" in line
        assert proc.stdout == ""
    assert not missing.exists()
    assert read_head(device) == bytes(MIB)


@pytest.mark.parametrize("option", ["--trunc", "--trunctosize", "--preallocfile"])
def test_size_options_are_refused_on_block_devices(
    run_cli: RunCli, loops: LoopDevices, option: str
) -> None:
    device = loops.make(8 * MIB)
    before = read_head(device)
    proc = run_cli("-w", "-b", "64k", option, device)
    assert proc.returncode == 2
    assert single_error(proc.stderr) == (
        f"Error: {option}: only applies to files (a block device keeps its size)"
    )
    assert read_head(device) == before


def sectors_written(device: str) -> int:
    """Sectors the block device has written so far (/sys/block/<dev>/stat, field 7)."""
    stat = Path("/sys/block") / Path(device).name / "stat"
    return int(stat.read_text().split()[6])


def test_sync_writes_the_data_back_to_the_device(
    run_cli: RunCli, loops: LoopDevices, tmp_path: Path
) -> None:
    device = loops.make(128 * MIB)
    loops.mkfs(device)
    mnt = tmp_path / "mnt"
    loops.mount(device, mnt)
    lazy, synced = mnt / "lazy", mnt / "synced"
    before = sectors_written(device)
    proc = run_cli("-w", "-b", "1m", "-s", "32m", str(lazy))
    assert proc.returncode == 0, proc.stderr
    # Without --sync, 32 MiB of fresh writes sit in the page cache (writeback waits ~30 s).
    unsynced = (sectors_written(device) - before) * 512
    assert unsynced < 16 * MIB
    before = sectors_written(device)
    proc = run_cli("-w", "-b", "1m", "-s", "32m", "--sync", str(synced))
    assert proc.returncode == 0, proc.stderr
    # The SYNC after WRITE wrote both files' data (syncfs flushes the whole filesystem).
    assert (sectors_written(device) - before) * 512 >= 64 * MIB
    assert proc.stdout.count("SYNC        Elapsed time     : ") == 2
