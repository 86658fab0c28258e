"""Judgement over a check's rows: a finding per result that looks wrong; pure.

Rules (each names itself in ``Finding.rule``):

- ``page_cache``: a read faster than the device could deliver. A 1 MiB read whose median
  latency is under 50 us moves 20 GB/s, more than any one device (a PCIe 5 x4 NVMe drive
  reads 14 GB/s); a 4 KiB read with one in flight under 5 us beats the fastest flash
  (Optane: ~7 us). Without direct I/O on a spinning disk (``rotational``), also beyond
  600 MiB/s or 2000 random IOPS. Not applied on tmpfs/ramfs, which are memory (a note says
  so already); with direct I/O it points at a cache below the filesystem. Whatever the
  figures, a loop device under DIR's filesystem whose backing file is on tmpfs/ramfs, or
  which reads it through the page cache (``loop/dio`` 0), is named: its figures can be
  memory's however the check opens its files.
- ``stalls``: p99 more than 50 times p50: a few operations waited far longer than the
  rest (writeback, throttling, a busy or failing device).
- ``queue``: a deep-queue test below half its shallow twin (same pattern and direction):
  more operations in flight made it slower, which points at contention or a device that
  serialises badly.
- ``metadata``: creating or deleting below a tenth of the other (both change the
  directory; stat, which reads a cached inode, is left out).
- ``few_ops``: fewer than 100 operations measured: the figure says little (a larger
  ``--budget`` helps).
- ``status``: a test that did not end normally (cut by its time guard, an error).
"""

from __future__ import annotations

from collections.abc import Sequence

from aiobench.check.model import Finding, Loop, Row
from aiobench.check.plan import MEMORY_FILESYSTEMS, META
from aiobench.units import MIB, NS_PER_US, format_latency

STALL_FACTOR = 50
SEQ_CACHE_P50_NS = 50 * NS_PER_US
RND_CACHE_P50_NS = 5 * NS_PER_US
DISK_SEQ_LIMIT_BYTES_PER_S = 600 * MIB
DISK_RND_LIMIT_IOPS = 2000
QUEUE_FACTOR = 0.5
METADATA_FACTOR = 0.1
MIN_COUNT = 100


def _shown(row: Row) -> str:
    if row.test.metric == "bytes_per_s":
        return f"{row.value // MIB} MiB/s"
    if row.test.metric == "iops":
        return f"{row.value} IOPS"
    return f"{row.value} files/s"


def _page_cache(row: Row, rotational: bool | None, direct: bool) -> Finding | None:
    test = row.test
    if test.op != "read" or not row.count:
        return None
    why = None
    # Virtual disks often call themselves rotational whatever backs them; with O_DIRECT
    # only the physical limits below say more than that flag.
    if rotational and not direct:
        limit = DISK_RND_LIMIT_IOPS if test.rand else DISK_SEQ_LIMIT_BYTES_PER_S
        if row.value > limit:
            plausible = f"{limit} IOPS" if test.rand else f"{limit // MIB} MiB/s"
            why = f"more than a spinning disk delivers ({plausible})"
    elif test.rand and test.iodepth == 1 and row.p50_ns < RND_CACHE_P50_NS:
        why = (
            f"a median 4 KiB read of {format_latency(row.p50_ns)}, faster than any "
            f"device answers ({format_latency(RND_CACHE_P50_NS)})"
        )
    elif not test.rand and row.p50_ns < SEQ_CACHE_P50_NS:
        why = (
            f"a median 1 MiB read of {format_latency(row.p50_ns)} "
            "(over 20 GB/s, more than one device delivers)"
        )
    if why is None:
        return None
    which = (
        "a cache below the filesystem (a loop device's backing file, a virtual disk's "
        "host cache) answered despite direct I/O"
        if direct
        else "the page cache (memory) answered, not the device"
    )
    return Finding(
        test=test.label, rule="page_cache", message=f"{test.label}: {_shown(row)}, {why}: {which}"
    )


def _loop(loop: Loop) -> Finding | None:
    held = f"{loop.device}, which holds DIR's filesystem,"
    if loop.backing_fstype in MEMORY_FILESYSTEMS:
        message = (
            f"{held} keeps its backing file {loop.backing_file} on {loop.backing_fstype}: "
            "every figure is one of memory, not of a device"
        )
    elif not loop.direct_io:
        message = (
            f"{held} reads and writes its backing file {loop.backing_file} through the "
            "page cache (the loop device's direct I/O is off): the figures may be of "
            f"memory, not of the device (losetup --direct-io=on {loop.device} bypasses it)"
        )
    else:
        return None
    return Finding(test=None, rule="page_cache", message=message)


def _stalls(row: Row) -> Finding | None:
    if not row.count or row.p50_ns <= 0 or row.p99_ns <= STALL_FACTOR * row.p50_ns:
        return None
    factor = row.p99_ns / row.p50_ns
    return Finding(
        test=row.test.label,
        rule="stalls",
        message=f"{row.test.label}: p99 {format_latency(row.p99_ns)} is {factor:.0f}x p50 "
        f"{format_latency(row.p50_ns)}: some operations stalled (writeback, throttling, a "
        "busy or failing device)",
    )


def _queue(rows: list[Row]) -> list[Finding]:
    out = []
    by_kind = {(r.test.rand, r.test.op, r.test.deep): r for r in rows if r.test.name != META}
    for (rand, op, deep), row in by_kind.items():
        shallow = by_kind.get((rand, op, False))
        if not deep or shallow is None or not shallow.value:
            continue
        if row.value < QUEUE_FACTOR * shallow.value:
            out.append(
                Finding(
                    test=row.test.label,
                    rule="queue",
                    message=f"{row.test.label}: {_shown(row)}, below half of "
                    f"{shallow.test.label} ({_shown(shallow)}): more operations in flight "
                    "made it slower (contention, or a device that serialises them)",
                )
            )
    return out


def _metadata(rows: list[Row]) -> list[Finding]:
    # stat is left out: it reads an inode the create just cached, so it is many times
    # faster than the operations that change the directory, by nature.
    meta = [r for r in rows if r.test.name == META and r.test.op != "stat" and r.count]
    if len(meta) < 2:
        return []
    fastest = max(meta, key=lambda r: r.value)
    return [
        Finding(
            test=r.test.label,
            rule="metadata",
            message=f"{r.test.label}: {_shown(r)}, below a tenth of {fastest.test.label} "
            f"({_shown(fastest)})",
        )
        for r in meta
        if r.value < METADATA_FACTOR * fastest.value
    ]


def _few(row: Row) -> Finding | None:
    if row.count >= MIN_COUNT or row.status in ("error", "interrupted"):
        return None  # (a test cut short is named by the status rule)
    return Finding(
        test=row.test.label,
        rule="few_ops",
        message=f"{row.test.label}: only {row.count} operations measured; the figure says "
        "little (give a larger --budget)",
    )


def _status(row: Row) -> Finding | None:
    if row.status == "ok" or (row.status == "time_limited" and row.test.name != META):
        return None  # the file tests are time-based: their limit is how they end
    return Finding(
        test=row.test.label,
        rule="status",
        message=f"{row.test.label}: ended {row.status.replace('_', ' ')}",
    )


def judge(
    rows: list[Row],
    *,
    fstype: str,
    rotational: bool | None,
    direct: bool,
    loops: Sequence[Loop] = (),
) -> list[Finding]:
    """Every finding over ``rows``: the loop devices under DIR first, then row by row in
    their order, then across rows."""
    out = [f for f in map(_loop, loops) if f is not None]
    memory = fstype in MEMORY_FILESYSTEMS
    for row in rows:
        found = (
            None if memory else _page_cache(row, rotational, direct),
            _stalls(row),
            _few(row),
            _status(row),
        )
        out.extend(f for f in found if f is not None)
    return out + _queue(rows) + _metadata(rows)
