"""The check's battery, and how a time budget is spent on it: slots, file and file-count
sizes from the calibration, the free space it needs; pure.

The battery is CrystalDiskMark's (and KDiskMark's): 1 MiB sequential with 8 and 1
operations in flight, 4 KiB random with 32 and 1, each read and write, from one thread;
then creating, stat-ing and deleting a few thousand empty files. A short calibration
measures the sequential write rate, the metadata rates and what one run costs besides its
timed phases; the file tests then share what is left of the budget equally, each one's
share recomputed from the time really left before it starts, so an early test that ran
long is paid back by the later ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aiobench.units import MIB, NS_PER_MS, NS_PER_S

DEFAULT_BUDGET_S = 30  # long enough for figures worth comparing, short enough to wait for
MIN_BUDGET_S = 3  # below this the fixed cost of a dozen runs (~0.1 s each) is most of it
MAX_BUDGET_S = 3600
SEQ_BLOCK_BYTES = MIB
RND_BLOCK_BYTES = 4096
# Calibration: big enough to leave start-up behind (16 one-MiB writes at depth 8), small
# enough for the slowest storage worth checking (0.2 s at 80 MiB/s).
CALIBRATION_FILE_BYTES = 16 * MIB
CALIBRATION_FILES = 200
# The metadata test's share of the budget (its three phases together).
METADATA_SHARE = 0.15
# Left at the end for removing the check's files (a large file on ext4 takes some ms).
CLEANUP_SHARE = 0.03
# "A few thousand files": fewer make the rates a measure of start-up; more fill a small
# inode table and take long to remove after an interrupted run.
METADATA_FILES_MIN = 1000
METADATA_FILES_MAX = 20_000
# The calibration's 200 files fit in caches and journals that thousands overflow: measured
# on ext4 (a loop device), 200 files were created 4x as fast as 13,000.
METADATA_RATE_SHARE = 0.25
MIN_TEST_NS = 50 * NS_PER_MS  # a test shorter than a few executor runs says nothing
# The fill (the first sequential write) is sized to 80 % of its share: the calibration's
# short write tends to overestimate, and a fill cut short wastes its data.
FILL_HEADROOM = 0.8
MIN_FILE_BYTES = 8 * MIB
# What a DIR must have free: the calibration file, the smallest test file and the metadata
# files' inodes and blocks, with room to spare. The test file takes at most half the free
# space, so others writing there are not starved by the check.
REQUIRED_FREE_BYTES = 48 * MIB
FREE_SHARE = 0.5
# Where there is no direct I/O, a file this much larger than memory cannot be cached whole.
PAGE_CACHE_FACTOR = 1.25
# ... and writing it may take at most this share of the budget.
PAGE_CACHE_FILL_SHARE = 0.4
MEMORY_FILESYSTEMS = ("tmpfs", "ramfs")
# Intervals shorter than the executor runs (~50 ms, see README) measure how the runs
# fall into them more than the storage.
MIN_LIVE_INTERVAL_MS = 50
MAX_LIVE_INTERVAL_MS = 2000
INTERVALS_PER_TEST = 10  # enough full intervals for compare's noise (it needs 3)
SEQ, RND, META = "SEQ1M", "RND4K", "META"


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckTest:
    """One row of the battery: a file test (``read``/``write``) or a metadata operation."""

    name: str  # CrystalDiskMark's spelling: SEQ1M Q8T1, RND4K Q1T1; META for metadata
    op: str  # read, write; create, stat, delete
    block_bytes: int = 0
    iodepth: int = 1
    rand: bool = False

    @property
    def label(self) -> str:
        return f"{self.name} {self.op}"

    @property
    def metric(self) -> str:
        """The figure the row is judged by: MiB/s for 1 MiB blocks, IOPS for 4 KiB,
        entries/s for metadata (the JSON result's key of it)."""
        if self.name == META:
            return "entries_per_s"
        return "iops" if self.rand else "bytes_per_s"

    @property
    def deep(self) -> bool:
        return self.iodepth > 1


def _file_test(kind: str, depth: int, op: str) -> CheckTest:
    block = SEQ_BLOCK_BYTES if kind == SEQ else RND_BLOCK_BYTES
    return CheckTest(
        name=f"{kind} Q{depth}T1", op=op, block_bytes=block, iodepth=depth, rand=kind == RND
    )


# In the order they run, after the fill (below): random writes last, as they leave the
# file fragmented on copy-on-write filesystems.
FILE_TESTS = (
    _file_test(SEQ, 8, "write"),
    _file_test(SEQ, 1, "write"),
    _file_test(SEQ, 8, "read"),
    _file_test(SEQ, 1, "read"),
    _file_test(RND, 32, "read"),
    _file_test(RND, 1, "read"),
    _file_test(RND, 32, "write"),
    _file_test(RND, 1, "write"),
)
# The fill writes the test file once, as SEQ1M Q8T1 write does, before the tests: every
# timed write then overwrites (a first write also allocates, which would make the first
# write test look slower than the others). It is no row of the table.
FILL = FILE_TESTS[0]
METADATA_TESTS = tuple(CheckTest(name=META, op=op) for op in ("create", "stat", "delete"))
# The metadata run's phases and the rows they make.
METADATA_PHASES = {"WRITE": "create", "STAT": "stat", "RMFILES": "delete"}


# CrystalDiskMark's order for the table: SEQ1M Q8T1, SEQ1M Q1T1, RND4K Q32T1, RND4K Q1T1,
# each read then write; then metadata.
TABLE_ORDER = tuple(
    t.label
    for kind, depths in ((SEQ, (8, 1)), (RND, (32, 1)))
    for depth in depths
    for op in ("read", "write")
    for t in (_file_test(kind, depth, op),)
) + tuple(t.label for t in METADATA_TESTS)


def table_order(labels: list[str]) -> list[str]:
    """``labels`` in the table's order (unknown ones last, as given)."""
    rank = {label: i for i, label in enumerate(TABLE_ORDER)}
    return sorted(labels, key=lambda label: rank.get(label, len(rank)))


@dataclass(frozen=True, slots=True, kw_only=True)
class Calibration:
    """What the short runs before the battery measured."""

    write_bytes_per_s: int  # 1 MiB blocks, 8 in flight (direct where the DIR has it)
    create_entries_per_s: int
    delete_entries_per_s: int
    run_overhead_ns: int  # a run's wall time besides its timed phases (setup, teardown)


def metadata_files(cal: Calibration, budget_ns: int) -> int:
    """How many files the metadata test creates, stats and deletes: its share of the
    budget over three phases at the slower of the calibrated rates, within
    :data:`METADATA_FILES_MIN` .. :data:`METADATA_FILES_MAX`."""
    per_phase_s = budget_ns * METADATA_SHARE / 3 / NS_PER_S
    slowest = min(cal.create_entries_per_s, cal.delete_entries_per_s)
    wanted = int(slowest * METADATA_RATE_SHARE * per_phase_s)
    return max(METADATA_FILES_MIN, min(METADATA_FILES_MAX, wanted))


def metadata_limit_ns(budget_ns: int) -> int:
    """A guard for the metadata run's phases (each): twice the whole test's share."""
    return max(NS_PER_S, int(2 * METADATA_SHARE * budget_ns))


def slot_ns(remaining_ns: int, tests_left: int, overhead_ns: int) -> int:
    """The time limit of the next file test: an equal share of what is left of the budget,
    less each remaining run's fixed cost and the cleanup; at least :data:`MIN_TEST_NS`."""
    if tests_left <= 0:
        return MIN_TEST_NS
    share = (remaining_ns - tests_left * overhead_ns) // tests_left
    return max(MIN_TEST_NS, share)


def cleanup_reserve_ns(budget_ns: int) -> int:
    return int(budget_ns * CLEANUP_SHARE)


def live_interval_ms(limit_ns: int) -> int:
    """A live interval that gives a test of ``limit_ns`` about ten full intervals (the
    runs' noise in ``aiobench compare``)."""
    ms = limit_ns // NS_PER_MS // INTERVALS_PER_TEST
    return max(MIN_LIVE_INTERVAL_MS, min(MAX_LIVE_INTERVAL_MS, ms))


@dataclass(frozen=True, slots=True, kw_only=True)
class FileSize:
    """The test file's size and what the user should know about it."""

    bytes: int
    notes: tuple[str, ...]
    past_cache: bool  # sized past memory so the page cache cannot hold it


def _floor_mib(n: float) -> int:
    return int(n) // MIB * MIB


def file_size(
    *,
    write_bytes_per_s: int,
    fill_ns: int,
    budget_ns: int,
    free_bytes: int,
    direct: bool,
    fstype: str,
    memory_bytes: int | None,
) -> FileSize:
    """How large the test file is: what the fill's share of the budget writes at the
    calibrated rate; with no direct I/O on a filesystem that is not memory itself, past
    the page cache when free space and the budget allow (else a note says why not)."""
    cap = max(MIN_FILE_BYTES, _floor_mib(free_bytes * FREE_SHARE))
    by_time = _floor_mib(write_bytes_per_s * FILL_HEADROOM * fill_ns / NS_PER_S)
    size = max(MIN_FILE_BYTES, min(cap, by_time))
    notes: list[str] = []
    if fstype in MEMORY_FILESYSTEMS:
        notes.append(
            f"{fstype} keeps files in memory: every figure is a figure of memory, not of a device"
        )
        return FileSize(bytes=size, notes=tuple(notes), past_cache=False)
    if direct:
        return FileSize(bytes=size, notes=(), past_cache=False)
    cached = "no direct I/O (O_DIRECT) here: reads may come from the page cache"
    if memory_bytes is None:
        notes.append(f"{cached} (the size of memory is unknown)")
        return FileSize(bytes=size, notes=tuple(notes), past_cache=False)
    want = -(-int(memory_bytes * PAGE_CACHE_FACTOR) // MIB) * MIB
    fill_s = want / write_bytes_per_s if write_bytes_per_s else float("inf")
    budget_s = budget_ns / NS_PER_S
    if want <= cap and fill_s <= budget_s * PAGE_CACHE_FILL_SHARE:
        notes.append(
            f"no direct I/O (O_DIRECT) here: the test file is sized past memory "
            f"({want // MIB} MiB, memory {memory_bytes // MIB} MiB) so the page cache "
            "cannot hold it whole"
        )
        return FileSize(bytes=max(size, want), notes=tuple(notes), past_cache=True)
    why = (
        f"{want // MIB} MiB would not fit in half the free space ({free_bytes // MIB} MiB)"
        if want > cap
        else f"writing {want // MIB} MiB takes about {fill_s:.0f} s at the measured rate, "
        f"more than {PAGE_CACHE_FILL_SHARE:.0%} of the budget"
    )
    notes.append(
        f"{cached}: the test file ({size // MIB} MiB) is smaller than memory "
        f"({memory_bytes // MIB} MiB), and a file past it does not fit: {why}"
    )
    return FileSize(bytes=size, notes=tuple(notes), past_cache=False)


def fill_guard_ns(fill_ns: int, size_bytes: int, write_bytes_per_s: int) -> int:
    """The fill's time limit, only a guard: thrice its share, or more for a file sized
    past memory."""
    expected = int(size_bytes / write_bytes_per_s * NS_PER_S) if write_bytes_per_s else 0
    return max(3 * fill_ns, 2 * expected, NS_PER_S // 2)


def usable_after_cut(written_bytes: int, iodepth: int, block_bytes: int) -> int:
    """The part of a fill cut by its guard that is surely written: the first bytes, less
    what was still in flight when it stopped (operations complete out of order)."""
    return max(0, _floor_mib(written_bytes - iodepth * block_bytes))


def free_space_error(free_bytes: int) -> str | None:
    """Why DIR cannot take the check, naming what it needs and what it has; None if it can."""
    if free_bytes >= REQUIRED_FREE_BYTES:
        return None
    return (
        f"needs {REQUIRED_FREE_BYTES // MIB} MiB free for its test files, "
        f"has {math.floor(free_bytes / MIB * 10) / 10:.1f} MiB available"
    )
