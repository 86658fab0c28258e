"""The memory budget of a run: what its slots will hold, against what the machine has for it.

Checked before anything is allocated or created, so a run that cannot fit is a usage error
instead of a machine swapping or an OOM kill halfway through.
"""

from __future__ import annotations

import os
from pathlib import Path

from aiobench.config import BenchConfig
from aiobench.errors import ConfigError
from aiobench.kinds import READ, WRITE
from aiobench.plan.dirmode import DirLayout
from aiobench.plan.pool import slot_buffer_bytes
from aiobench.plan.targets import Resolved
from aiobench.plan.workload import Layout
from aiobench.stats.recorders import RECORDER_BYTES
from aiobench.units import format_bytes

# The buffers may take half of the memory available: the other half is for the page cache
# the run reads and writes through (squeezed out of it, a cached benchmark measures the
# disk instead), the interpreter, the latency stores and every other process.
BUFFER_SHARE = 0.5
MEMINFO = "/proc/meminfo"
SELF_CGROUP = "/proc/self/cgroup"
CGROUP_ROOT = "/sys/fs/cgroup"
# Per cgroup version: where its memory controller is mounted below CGROUP_ROOT, and the
# files of the limit and the usage; usage that is page cache the kernel can drop (the
# memory.stat key) counts as free, as in MemAvailable.
_CgroupFiles = tuple[tuple[str, ...], tuple[str, str, str]]
_CGROUP_V2: _CgroupFiles = (("", "unified"), ("memory.max", "memory.current", "inactive_file"))
_CGROUP_V1: _CgroupFiles = (
    ("memory",),
    ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"),
)


def slots_with_work(iodepth: int, ops: int, endless: bool) -> int:
    """The slots a thread gets: --iodepth, but not more than it has operations (the others
    would never run) unless --infloop hands them out again and again; at least one."""
    return iodepth if endless else max(1, min(iodepth, ops))


def check_memory(cfg: BenchConfig, resolved: Resolved, slices: int) -> None:
    """Refuse a run whose slot memory exceeds :data:`BUFFER_SHARE` of what is available.

    ``cfg.threads`` threads of this process run; the dataset is split into ``slices``
    (more under MPI, where the other ranks take the rest).
    """
    available = available_memory()
    if available is None:
        return
    per_slot, slots = slot_needs(cfg, resolved.layout, slices)
    need = cfg.threads * slots * per_slot
    if need <= available * BUFFER_SHARE:
        return
    many = [name for name, n in (("-t", cfg.threads), ("--iodepth", slots)) if n > 1]
    lower = f"{', '.join(many)} or -b" if many else "-b"
    option = "--iodepth" if slots > 1 else "-t/--threads" if cfg.threads > 1 else "-b/--block"
    raise ConfigError(
        f"{option}: {_count(cfg.threads, 'thread')} x {_count(slots, 'slot')} x "
        f"{format_bytes(per_slot)} per slot "
        f"= {format_bytes(need)} of buffers, more than half of the "
        f"{format_bytes(available)} available; lower {lower}"
    )


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def slot_needs(cfg: BenchConfig, layout: Layout | DirLayout, slices: int) -> tuple[int, int]:
    """(bytes one slot holds in the phase that needs most, slots a thread gets)."""
    phases = ((WRITE, cfg.write), (READ, cfg.read))
    moves_data = any(layout.moves_data(kind) for kind, on in phases if on)
    most_ops = 0
    if isinstance(layout, DirLayout):
        most_ops = layout.files_per_rank() if cfg.file_phases else layout.dirs
    elif cfg.rand and cfg.randamount_bytes is not None:
        most_ops = cfg.randamount_bytes // slices // layout.block_size
    elif cfg.strided:
        most_ops = -(-layout.total_blocks // slices)
    else:  # the last thread takes what the even split leaves
        most_ops = layout.total_blocks - (slices - 1) * (layout.total_blocks // slices)
    slots = slots_with_work(cfg.iodepth, most_ops, cfg.infloop)
    # Beside its buffers a slot holds per-target counters and fills a latency recorder;
    # two in dir mode (entries and blocks), with --rwmixpct (reads and writes) and under a
    # rate limit (from the scheduled starts too).
    two = layout.dir_mode or cfg.rwmixpct is not None or cfg.rwmixthr is not None
    two = two or bool(cfg.limitread_bps or cfg.limitwrite_bps)
    per_slot = (1 + two) * RECORDER_BYTES
    per_slot += len(cfg.paths) * 3 * 8 if len(cfg.paths) > 1 else 0
    if moves_data:
        # A slot's pool holds no more windows than the writes its thread can make.
        writes = most_ops if not layout.dir_mode and not cfg.infloop else None
        buffers = slot_buffer_bytes(layout.block_size, for_write=cfg.write, writes=writes)
        if cfg.direct and slots > 1:
            # One slot may instead keep all of them in flight (Engine.slot_depth), with a
            # pool of at least two windows per operation: count whichever is larger.
            queued = slot_buffer_bytes(
                layout.block_size, for_write=cfg.write, depth=slots, writes=writes
            )
            buffers = max(buffers, -(-queued // slots))
        per_slot += buffers
    return per_slot, slots


def available_memory(
    meminfo: str = MEMINFO, self_cgroup: str = SELF_CGROUP, cgroup_root: str = CGROUP_ROOT
) -> int | None:
    """Bytes this process can still use: MemAvailable, or less under a cgroup memory limit
    (of its own cgroup or any above it); None when nothing says."""
    found = [room for room in (_mem_available(meminfo),) if room is not None]
    found += _cgroup_rooms(self_cgroup, cgroup_root)
    return min(found, default=None)


def _mem_available(meminfo: str) -> int | None:
    try:
        with open(meminfo, encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return None


def _cgroup_rooms(self_cgroup: str, cgroup_root: str) -> list[int]:
    """Room left under each memory limit of the cgroups this process is in."""
    try:
        lines = Path(self_cgroup).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    rooms = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        controllers, path = parts[1], parts[2].lstrip("/")
        if controllers == "":
            mounts, files = _CGROUP_V2
        elif "memory" in controllers.split(","):
            mounts, files = _CGROUP_V1
        else:
            continue
        for mount in mounts:
            top = Path(cgroup_root, mount)
            level = top / path
            while True:
                room = _room(level, files)
                if room is not None:
                    rooms.append(room)
                if level in (top, level.parent):
                    break
                level = level.parent
    return rooms


def _room(level: Path, files: tuple[str, str, str]) -> int | None:
    limit_file, usage_file, cache_key = files
    try:
        limit = int((level / limit_file).read_text(encoding="ascii"))
    except (OSError, ValueError):  # no such cgroup or controller, or "max"
        return None
    try:
        usage = int((level / usage_file).read_text(encoding="ascii"))
    except (OSError, ValueError):
        usage = 0
    try:
        for line in (level / "memory.stat").read_text(encoding="ascii").splitlines():
            key, _, value = line.partition(" ")
            if key == cache_key:
                usage -= int(value)
    except (OSError, ValueError):
        pass
    return max(limit - max(usage, 0), 0)
