"""DIR's block device as sysfs describes it: whether it spins, and the loop devices under
it whose backing file is read and written through the page cache.

DIR's filesystem names its device by its number (``st_dev``) or, where that is no block
device (btrfs), by its mount's source. A partition has no queue of its own (its disk's is
one level up), and a device mapper or md device sits on the devices in its ``slaves``: a
loop device anywhere down there answers for DIR.
"""

from __future__ import annotations

import os
import stat

from aiobench.check.model import Loop
from aiobench.plan.targets import filesystem_type, mount_of

SYS_DEV_BLOCK = "/sys/dev/block"
# How far down slaves/ is followed: dm on md on partitions on a disk is 3; a loop in
# sysfs is never its own slave, but a depth bound costs nothing.
MAX_DEPTH = 8


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return None


def _sysfs_of(rdev: int) -> str | None:
    where = f"{SYS_DEV_BLOCK}/{os.major(rdev)}:{os.minor(rdev)}"
    return os.path.realpath(where) if os.path.isdir(where) else None


def device_dir(path: str) -> str | None:
    """The sysfs directory of the block device that holds ``path``'s filesystem; None
    when there is none (tmpfs, network, overlay)."""
    try:
        found = _sysfs_of(os.stat(path).st_dev)
    except OSError:
        found = None
    if found is not None:
        return found
    mount_point, _ = mount_of(path)
    source = _mount_source(mount_point)
    if not source.startswith("/dev/"):
        return None
    try:
        st = os.stat(source)
    except OSError:
        return None
    return _sysfs_of(st.st_rdev) if stat.S_ISBLK(st.st_mode) else None


def _disk_of(sysfs: str) -> str:
    """A partition's disk (the directory above it); any other device itself."""
    return os.path.dirname(sysfs) if os.path.exists(f"{sysfs}/partition") else sysfs


def rotational(path: str) -> bool | None:
    """Whether DIR's filesystem sits on a spinning disk (the device's queue/rotational);
    None when there is no single block device to ask (tmpfs, network, overlay)."""
    sysfs = device_dir(path)
    if sysfs is None:
        return None
    value = _read(f"{_disk_of(sysfs)}/queue/rotational")
    return None if value is None else value == "1"


def loops_under(path: str) -> list[Loop]:
    """The loop devices that hold DIR's filesystem (directly, or below a partition, a
    device mapper or md device), each with its backing file and whether it bypasses the
    page cache (``loop/dio``)."""
    sysfs = device_dir(path)
    return [] if sysfs is None else _loops(sysfs, 0)


def _loops(sysfs: str, depth: int) -> list[Loop]:
    disk = _disk_of(sysfs)
    backing = _read(f"{disk}/loop/backing_file")
    if backing is not None:
        return [_loop(disk, backing)]
    if depth >= MAX_DEPTH:
        return []
    try:
        below = sorted(os.listdir(f"{disk}/slaves"))
    except OSError:
        return []
    found: list[Loop] = []
    for name in below:
        found += _loops(os.path.realpath(f"{disk}/slaves/{name}"), depth + 1)
    return found


def _loop(disk: str, backing: str) -> Loop:
    # A backing file removed after losetup shows as "PATH (deleted)".
    shown = backing.removesuffix(" (deleted)")
    fstype = filesystem_type(shown) if os.path.isabs(shown) and os.path.exists(shown) else ""
    return Loop(
        device=f"/dev/{os.path.basename(disk)}",
        backing_file=backing,
        direct_io=_read(f"{disk}/loop/dio") == "1",
        backing_fstype=fstype,
    )


def _mount_source(mount_point: str, mountinfo: str = "/proc/self/mountinfo") -> str:
    try:
        with open(mountinfo, encoding="utf-8") as handle:
            lines = handle.readlines()
    except OSError:
        return ""
    source = ""
    for line in lines:
        left, _, right = line.partition(" - ")
        parts = left.split()
        if len(parts) >= 5 and parts[4].replace("\\040", " ") == mount_point and right:
            fields = right.split()
            source = fields[1] if len(fields) > 1 else ""
    return source
