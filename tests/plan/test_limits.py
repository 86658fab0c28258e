"""Huge values, free space and the memory budget (#12 items 8, 9): refused before anything."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from aiobench.config import build_config
from aiobench.engines.buffers import PoolSource, SlotBuffer
from aiobench.kinds import WRITE
from aiobench.plan.memory import available_memory, slot_needs, slots_with_work
from aiobench.plan.pool import POOL_SLACK, POOL_WINDOWS, pool_bytes
from aiobench.plan.slots import streams_for
from aiobench.plan.split import ThreadSplit
from aiobench.run.slots import slots_for
from aiobench.run.worker import Slot
from tests.helpers import (
    RunCli,
    assert_usage_error,
    listing,
    mounted_tmpfs,
    resolved_for,
    run_aiobench_rss,
)

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30
# A refused run imports aiobench and stops: ~60 MiB here. Far below what any of these
# cases would allocate if they went on (1.4 GB for f[0-99999999], TiBs for the others).
REFUSED_RSS = 400 * MIB

HUGE = [
    pytest.param(("-w", "-s", "16E", "f"), ["-s/--size", "16E"], id="size-16E"),
    pytest.param(("-w", "-s", str(10**20), "f"), ["-s/--size"], id="size-10^20"),
    pytest.param(("-w", "-s", "9" * 5000, "f"), ["-s/--size"], id="size-5000-digits"),
    pytest.param(("-w", "-s", "4E", "f", "g"), ["-s/--size", "8.0 EiB"], id="size-sum"),
    pytest.param(
        ("-d", "-w", "-n", "4", "-N", "4", "-s", "1E", "d"), ["-s/--size"], id="dir-size-sum"
    ),
    pytest.param(("-d", "-w", "-n", str(10**20), "d"), ["-n/--dirs"], id="dirs-10^20"),
    pytest.param(("-d", "-w", "-N", str(10**20), "d"), ["-N/--files"], id="files-10^20"),
    pytest.param(
        ("-d", "-w", "-t", "8", "-n", str(2**20), "-N", str(2**20), "d"),
        ["-N/--files", "entries"],
        id="entries-product",
    ),
    pytest.param(("-w", "-s", "4k", "-b", "3g", "f"), ["-b/--block", "2 GiB"], id="block-3g"),
    pytest.param(("-w", "-s", "4k", "-b", "16E", "f"), ["-b/--block"], id="block-16E"),
    pytest.param(("-w", "-s", "4k", "-t", str(10**20), "f"), ["-t/--threads"], id="threads"),
    pytest.param(("-w", "-s", "4k", "--iodepth", str(2**63), "f"), ["--iodepth"], id="iodepth"),
    pytest.param(("-w", "-s", "4k", "--timelimit", str(10**20), "f"), ["--timelimit"], id="tl"),
    pytest.param(("-w", "-s", "4k", "--liveint", str(10**20), "f"), ["--liveint"], id="liveint"),
    pytest.param(("-w", "-s", "4k", "-i", str(10**20), "f"), ["-i/--iterations"], id="iter"),
    pytest.param(("-w", "-s", "4k", "-i", "10001", "f"), ["-i/--iterations"], id="iter-10001"),
    pytest.param(
        ("-r", "--rand", "--randamount", "16E", "exist"), ["--randamount"], id="randamount"
    ),
    pytest.param(("-r", "--limitread", str(10**20), "exist"), ["--limitread"], id="limitread"),
    pytest.param(("-w", "-s", "4k", "--limitwrite", "8E", "f"), ["--limitwrite"], id="limitw"),
    pytest.param(("-w", "-s", "4k", "--verify", str(2**64), "f"), ["--verify"], id="verify"),
    pytest.param(("-w", "-s", "4k", "--seed", str(2**63), "f"), ["--seed"], id="seed"),
    pytest.param(
        ("-w", "-s", "4k", "f[0-99999999]"),
        ["PATH", "f[0-99999999]", "100000000 paths"],
        id="brackets",
    ),
    pytest.param(
        ("-w", "-s", "4k", "f[0-" + "9" * 5000 + "]"), ["PATH", "too large"], id="bracket-digits"
    ),
    pytest.param(
        # 4096 slots of 1 GiB reading a sparse 4 TiB file: 4 TiB of buffers
        ("-r", "-b", "1g", "-t", "64", "--iodepth", "64", "sparse"),
        ["--iodepth", "64 threads x 64 slots x 1.0 GiB per slot", "available", "lower -t, --"],
        id="memory",
    ),
]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "exist").write_bytes(os.urandom(64 * KIB))
    (tmp_path / "d").mkdir()
    with open(tmp_path / "sparse", "wb") as handle:
        handle.truncate(4 << 40)  # no data blocks: nothing on the disk
    return tmp_path


@pytest.mark.parametrize(("args", "needles"), HUGE)
def test_huge_values_are_usage_errors(
    workdir: Path, args: tuple[str, ...], needles: list[str]
) -> None:
    before = listing(workdir)
    proc, rss = run_aiobench_rss(*args, cwd=workdir)
    assert_usage_error(proc, needles)
    assert listing(workdir) == before
    assert rss < REFUSED_RSS, rss


def test_path_count_is_capped_by_the_open_file_limit(tmp_path: Path) -> None:
    """Each PATH stays open for the whole run: more than ulimit -n allows are refused."""
    command = [sys.executable, "-m", "aiobench", "-w", "-s", "4k", "--nolive", "f[1-100]"]
    proc = subprocess.run(
        ["sh", "-c", 'ulimit -n 64 && exec "$@"', "sh", *command],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert_usage_error(proc, ["PATH: f[1-100] expands to 100 paths", "more than the 32"])
    assert listing(tmp_path) == {}
    proc = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, check=False)
    assert proc.returncode == 0, proc.stderr
    assert len(listing(tmp_path)) == 100


def test_force_help_names_free_space(run_cli: RunCli) -> None:
    text = " ".join(run_cli("--help").stdout.split())
    assert "and write more than the target filesystem has free" in text


# --- free space ---------------------------------------------------------------------


@pytest.fixture
def tmpfs8(tmp_path: Path) -> Iterator[Path]:
    with mounted_tmpfs(tmp_path / "mnt", "size=8m") as mnt:
        yield mnt


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("-w", "-s", "16m", "f"), ["16.0 MiB on {mnt} (tmpfs)", "8.0 MiB free"]),
        (("-w", "-s", "7E", "f"), ["7.0 EiB on {mnt} (tmpfs)", "8.0 MiB free"]),
        (("-w", "-s", "5m", "a", "b"), ["10.0 MiB on {mnt} (tmpfs)"]),
        (("-w", "-s", "3m", "--preallocfile", "a", "b", "c"), ["9.0 MiB on {mnt}"]),
        (("-d", "-w", "-n", "2", "-N", "5", "-s", "1m", "."), ["10.0 MiB on {mnt} (tmpfs)"]),
        (("-d", "-w", "-t", "3", "-n", "0", "-N", "3", "-s", "1m", "."), ["9.0 MiB on {mnt}"]),
    ],
    ids=["one-file", "7E", "two-files", "three-files", "dir-mode", "dir-mode-n0"],
)
def test_write_beyond_free_space_is_refused(
    tmpfs8: Path, args: tuple[str, ...], needles: list[str]
) -> None:
    proc, _ = run_aiobench_rss(*args, cwd=tmpfs8)
    assert_usage_error(
        proc, ["-s/--size: the write needs", *[n.format(mnt=tmpfs8) for n in needles], "--force"]
    )
    assert listing(tmpfs8) == {}


def test_force_writes_on_until_enospc_cleanly(tmpfs8: Path) -> None:
    proc, _ = run_aiobench_rss("-w", "-s", "16m", "--force", "--nolive", "f", cwd=tmpfs8)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "Error: " in proc.stderr and "ENOSPC" in proc.stderr
    assert "WRITE" in proc.stdout  # what was measured is still reported


def test_existing_data_counts_as_there_but_holes_do_not(tmpfs8: Path) -> None:
    (tmpfs8 / "f").write_bytes(os.urandom(6 * MIB))  # 2 MiB stay free
    proc, _ = run_aiobench_rss("-w", "-s", "7m", "--nolive", "f", cwd=tmpfs8)
    assert proc.returncode == 0, proc.stderr  # 1 MiB more is needed
    (tmpfs8 / "f").unlink()
    with open(tmpfs8 / "holes", "wb") as handle:
        handle.truncate(16 * MIB)  # its size, but none of the space
    before = listing(tmpfs8)
    proc, _ = run_aiobench_rss("-w", "-s", "16m", "holes", cwd=tmpfs8)
    assert_usage_error(proc, ["16.0 MiB on", "8.0 MiB free"])
    assert listing(tmpfs8) == before


# --- memory ---------------------------------------------------------------------------


def test_issue_case_allocates_only_slots_with_work(tmp_path: Path) -> None:
    """-b 64m -s 128m -t 2 --iodepth 64: one operation per thread, so one slot each
    (128 MiB of buffers), not 128 slots of 128 MiB (16 GiB, 2.5 GB RSS after 6 s)."""
    with mounted_tmpfs(tmp_path / "mnt", "size=160m") as mnt:
        args = ("-w", "-b", "64m", "-s", "128m", "-t", "2", "--iodepth", "64", "--nolive", "f")
        proc, rss = run_aiobench_rss(*args, cwd=mnt)
    assert proc.returncode == 0, proc.stderr
    assert rss < 1 * GIB, rss


@pytest.mark.parametrize(
    "over",
    [
        dict(threads=2, iodepth=64, block="64m", size="128m"),
        dict(threads=3, iodepth=4, block="4k", size="40k"),
        dict(threads=2, iodepth=8, block="4k", size="1m", rand=True, randamount="16k"),
        dict(threads=2, iodepth=8, block="4k", size="64k", strided=True),
        dict(threads=1, iodepth=16, block="4k", size="8k", infloop=True, timelimit=1),
        dict(threads=2, iodepth=3, block="4k", size="4k", dirs=2, files=1),
    ],
    ids=["issue", "uneven", "randamount", "strided", "infloop", "dirmode"],
)
def test_budget_counts_the_slots_a_phase_allocates(tmp_path: Path, over: dict[str, object]) -> None:
    """What the budget counts per thread is what the phase allocates (the most busy one)."""
    dir_mode = "dirs" in over
    if dir_mode:
        over = {**over, "mkdirs": True}
    else:
        (tmp_path / "f").write_bytes(bytes(1))
    args: dict[str, object] = dict(
        paths=[str(tmp_path if dir_mode else tmp_path / "f")],
        write=True, read=False, direct=False, rand=False, randamount=None, norandalign=False,
        timelimit=0, label="", nolive=True, seed=1, force=False,
    )  # fmt: skip
    cfg = build_config(**{**args, **over})  # type: ignore[arg-type]
    resolved = resolved_for(cfg)
    split = ThreadSplit.alone(cfg.threads)
    streams = streams_for(cfg, resolved.layout, WRITE, 0, split)
    slots = slots_for(
        cfg, resolved.layout, WRITE, 0, streams, 1,
        ranks=split.ids, paths=len(cfg.paths), check_signal=lambda: None,
    )  # fmt: skip
    try:
        counted = slot_needs(cfg, resolved.layout, cfg.threads)[1]
        assert max(len(s) for s in slots) == counted
        assert all(len(s) == slots_with_work(cfg.iodepth, st.total_ops, cfg.infloop)
                   for s, st in zip(slots, streams, strict=True))  # fmt: skip
    finally:
        for rank in slots:
            for slot in rank:
                if slot.buffer is not None:
                    slot.buffer.close()


def _rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * KIB
    raise AssertionError("no VmRSS in /proc/self/status")


def test_unused_latency_recorders_take_no_memory() -> None:
    """A slot has four recorders and fills one or two: the others cost nothing (they cost
    264 KiB of counts each, 4096 slots x 1 MiB before anything was measured)."""
    before = _rss()
    slots = [Slot(None) for _ in range(512)]
    grown = _rss() - before
    assert grown < 32 * MIB, grown  # 512 x 4 x 264 KiB would be 528 MiB
    for slot in slots[:2]:
        slot.recorder.add(np.arange(1, 101, dtype=np.int64))
    assert slots[0].recorder.summary().count == 100
    assert slots[1].read_recorder.summary().count == 0


def test_pools_scale_with_the_block() -> None:
    assert pool_bytes(1) == 4 * KIB  # 65 packed one-byte windows: one page
    assert pool_bytes(512) == 36 * KIB  # 64 windows apart, rounded up to pages
    assert pool_bytes(4 * KIB) == 4 * KIB + POOL_SLACK  # as before
    assert pool_bytes(64 * KIB) == 64 * KIB + POOL_SLACK
    assert pool_bytes(1 * MIB) == 1 * MIB  # one window: no slack it would never use
    buf = SlotBuffer(1, for_write=True, source=PoolSource([0]), stamp_base=0)
    try:
        assert len(buf.mem) == 4 * KIB  # was 260 KiB for every slot
        assert len(buf.windows) == POOL_WINDOWS
    finally:
        buf.close()


def test_a_slot_with_few_writes_gets_a_pool_of_that_many_windows(
    run_cli: RunCli, tmp_path: Path
) -> None:
    """At high -t each thread writes a few blocks: its pool holds those (a 4 KiB pool was
    260 KiB per slot, 260 MiB filled before the clock at -t 1024), and none repeats."""
    assert pool_bytes(4 * KIB, writes=16) == 16 * 4 * KIB
    assert pool_bytes(4 * KIB, writes=10**6) == pool_bytes(4 * KIB)  # (never more)
    assert pool_bytes(1 * MIB, depth=8, writes=3) == 3 * MIB  # nor reused in flight
    target = tmp_path / "f"
    proc = run_cli("-w", "-t", "4", "-b", "4k", "-s", "64k", "--nolive", str(target))
    assert proc.returncode == 0, proc.stderr
    data = target.read_bytes()
    payloads = {data[i + 8 : i + 4096] for i in range(0, len(data), 4096)}
    assert len(payloads) == 16  # 4 threads x 4 blocks: 16 different windows


def test_small_blocks_repeat_no_sooner_than_before(run_cli: RunCli, tmp_path: Path) -> None:
    """512-byte writes: past its stamp a block comes back only after 65 others, as with
    the 260 KiB pool (the writes cycle through as many windows, now packed)."""
    target = tmp_path / "f"
    proc = run_cli("-w", "-b", "512", "-s", "128k", "--nolive", str(target))
    assert proc.returncode == 0, proc.stderr
    data = target.read_bytes()
    blocks = [data[i + 8 : i + 512] for i in range(0, len(data), 512)]
    for i in range(len(blocks) - POOL_WINDOWS):
        assert blocks[i] == blocks[i + POOL_WINDOWS]
        assert blocks[i] not in blocks[i + 1 : i + POOL_WINDOWS]


def _cgroup_v2(root: Path, line: str) -> Path | None:
    parent = root / line.split(":", 2)[2].lstrip("/")
    if "memory" not in (parent / "cgroup.subtree_control").read_text().split():
        return None
    return parent


@contextlib.contextmanager
def memory_cgroup(limit: int) -> Iterator[Path]:
    """A new cgroup below this process's own with a memory limit; yields its procs file."""
    if os.geteuid() != 0:
        pytest.skip("creating a cgroup needs root")
    root = Path("/sys/fs/cgroup")
    lines = Path("/proc/self/cgroup").read_text().splitlines()
    v1 = [line for line in lines if "memory" in line.split(":")[1].split(",")]
    name = f"aiobench-test-{uuid.uuid4().hex[:8]}"
    if v1:
        group = root / "memory" / v1[0].split(":", 2)[2].lstrip("/") / name
        limit_file = "memory.limit_in_bytes"
    else:
        parent = _cgroup_v2(root, next(line for line in lines if line.startswith("0::")))
        if parent is None:
            pytest.skip("the memory controller is not delegated to this cgroup")
        group = parent / name
        limit_file = "memory.max"
    try:
        group.mkdir()
    except OSError as exc:
        pytest.skip(f"cannot create a cgroup: {exc}")
    try:
        (group / limit_file).write_text(str(limit))
        yield group / "cgroup.procs"
    finally:
        group.rmdir()


def test_a_cgroup_memory_limit_is_respected(workdir: Path) -> None:
    if (available_memory() or 0) < 4 * GIB:
        pytest.skip("the machine itself has too little memory to tell the limit apart")
    cases = [
        # 8 slots x 64 MiB = 512 MiB: fine for the machine, not for the cgroup
        (["-r", "-b", "64m", "--iodepth", "8", "sparse"], "1 thread x 8 slots x 64.3 MiB"),
        # the shape of the issue's case with work for every slot
        (
            ["-w", "-b", "64m", "-s", "8g", "-t", "2", "--iodepth", "64", "f"],
            "2 threads x 64 slots x 128.3 MiB per slot = 16.0 GiB of buffers",
        ),
    ]
    with memory_cgroup(768 * MIB) as procs:
        for args, needle in cases:
            before = listing(workdir)
            command = [sys.executable, "-m", "aiobench", *args]
            proc = subprocess.run(
                ["sh", "-c", f'echo $$ > {procs} && exec "$@"', "sh", *command],
                capture_output=True,
                text=True,
                cwd=workdir,
                timeout=120,
                check=False,
            )
            line = assert_usage_error(proc, [f"--iodepth: {needle}", "lower -"])
            available = float(line.split("half of the ")[1].split(" MiB available")[0])
            assert 384 < available <= 768
            assert listing(workdir) == before


def test_available_memory_reads_meminfo_and_cgroup_limits(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 100 kB\nMemAvailable:   8388608 kB\n")  # 8 GiB
    own = tmp_path / "self-cgroup"
    root = tmp_path / "cg"
    group = root / "job" / "step"
    group.mkdir(parents=True)
    own.write_text("0::/job/step\n")

    def found() -> int | None:
        return available_memory(str(meminfo), str(own), str(root))

    assert found() == 8 * GIB  # no limit files: MemAvailable
    (group / "memory.max").write_text("max\n")
    assert found() == 8 * GIB
    (root / "job" / "memory.max").write_text(f"{4 * GIB}\n")  # a limit further up
    (root / "job" / "memory.current").write_text(f"{1 * GIB}\n")
    (root / "job" / "memory.stat").write_text(f"anon 1\ninactive_file {GIB // 2}\n")
    assert found() == 4 * GIB - GIB // 2  # droppable page cache counts as free
    (group / "memory.max").write_text(f"{2 * GIB}\n")
    assert found() == 2 * GIB
    own.write_text("4:memory:/job\n0::/\n")  # cgroup v1's memory controller
    v1 = root / "memory" / "job"
    v1.mkdir(parents=True)
    (v1 / "memory.limit_in_bytes").write_text(f"{3 * GIB}\n")
    (v1 / "memory.usage_in_bytes").write_text(f"{2 * GIB}\n")
    assert found() == 1 * GIB
    meminfo.unlink()  # no /proc/meminfo: the C library's count, still under the limit
    libc = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")  # (free pages now)
    value = found()
    assert value is not None and value <= GIB and value in (GIB, pytest.approx(libc, rel=0.05))
