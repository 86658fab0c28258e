"""How the native AIO loop hands its free positions to io_submit (issue #28).

The kernel holds back (plugs) the operations of an io_submit of more than two until all
are prepared. A slot with a core to spare (the phase has fewer slots than cores) submits
two per call, so that a device that completes elsewhere starts on the first at once; a
slot without one, or one whose device completes inside io_submit (tmpfs with O_DIRECT),
submits them in one call. At --iodepth 1 a slot with a core to spare goes through AIO
too, one at a time, unless its device completes inside io_submit while the thread stays on
its CPU: then pread. Each case is a real run under strace, its io_submit sizes (and
preads) read, or one with --opslog, which names each read's call.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiobench.engines import native
from aiobench.stats.client import cores_allowed
from tests.helpers import direct_file, mounted_tmpfs, require_root_tools, run_aiobench, run_tool

pytestmark = [
    pytest.mark.slow,
    pytest.mark.root,
    pytest.mark.skipif(not native.available(), reason=f"{native.build_error}"),
]

DEPTH = 8
BLKIO = Path("/sys/fs/cgroup/blkio")
# The throttled loop device's reads per second: its completions come ~50 ms apart, never
# while a slot is still submitting (which would look like a device that completes inside
# io_submit, strace's slowness included).
IOPS = 20
SUBMIT = re.compile(r"io_submit\(\w+, (\d+),")
PREAD = re.compile(r"pread64\((\d+), .*, 4096, \d+\) = ")  # (a block; not the loader's)
FILDES = re.compile(r"aio_fildes=(\d+)")
SYNC_STREAK = 64  # (_native.c: reads in a row completed inside io_submit, then pread)


def sizes_of_submits(
    tmp_path: Path, target: str, threads: int, cgroup: Path | None, depth: int = DEPTH
) -> list[int]:
    """The io_submit sizes, every thread's in order, of a 0.5 s read phase of ``target``
    at ``--iodepth`` ``depth``, run in ``cgroup`` if given."""
    return [
        int(m[1])
        for line in traced(tmp_path, target, threads, cgroup, depth)
        if (m := SUBMIT.search(line))
    ]


def traced(tmp_path: Path, target: str, threads: int, cgroup: Path | None, depth: int) -> list[str]:
    """strace's lines of io_submit and pread64 calls in a 0.5 s read phase of ``target``."""
    log = tmp_path / f"strace-{threads}-{depth}.log"
    args = ["-r", "-b", "4k", "-t", str(threads), "--iodepth", str(depth), "--direct", "--rand"]
    cmd = ["strace", "-f", "-qq", "-e", "trace=io_submit,pread64", "-o", str(log)]
    cmd += [sys.executable, "-m", "aiobench", *args, "--timelimit", "0.5", "--nolive", target]
    if cgroup is not None:  # (the shell joins the cgroup, then becomes strace)
        cmd = ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(cgroup / "cgroup.procs"), *cmd]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0 and "PTRACE" in proc.stderr:
        pytest.skip(f"strace cannot trace here: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr
    return log.read_text().splitlines()


@pytest.fixture
def slow_loop(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A loop device whose reads blkio throttles to IOPS, and the cgroup that does it."""
    require_root_tools("loop devices and blkio cgroups", "losetup", "strace")
    knob = BLKIO / "blkio.throttle.read_iops_device"
    if not knob.exists():
        pytest.skip(f"no cgroup v1 blkio throttling at {BLKIO}")
    backing = tmp_path / "backing.img"
    with open(backing, "wb") as handle:
        handle.truncate(16 << 20)
    made = run_tool("losetup", "--find", "--show", str(backing))
    if made.returncode != 0:
        pytest.skip(f"losetup failed: {made.stderr.strip()}")
    device = made.stdout.strip()
    cgroup = BLKIO / f"aiobench-submit-{os.getpid()}"
    try:
        cgroup.mkdir()
        rdev = os.stat(device).st_rdev
        (cgroup / knob.name).write_text(f"{os.major(rdev)}:{os.minor(rdev)} {IOPS}\n")
        yield device, cgroup
    finally:
        if cgroup.exists():  # (only this test's processes were in it)
            for pid in (cgroup / "cgroup.procs").read_text().split():
                with contextlib.suppress(OSError):
                    (BLKIO / "cgroup.procs").write_text(pid)
            cgroup.rmdir()
        run_tool("losetup", "--detach", device)


@pytest.fixture
def inline_file(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB file on a tmpfs, read with O_DIRECT: each read completes inside io_submit
    (skips with one core: no slot has one to spare)."""
    require_root_tools("a tmpfs mount", "strace")
    if cores_allowed() < 2:
        pytest.skip("one core: no slot has one to spare")
    with mounted_tmpfs(tmp_path / "mnt", "size=16m") as mnt:
        yield direct_file(mnt / "file", 4 << 20)


def test_a_slot_with_a_core_to_spare_submits_two_per_call(
    tmp_path: Path, slow_loop: tuple[str, Path]
) -> None:
    if cores_allowed() < 2:
        pytest.skip("one core: no slot has one to spare")
    device, cgroup = slow_loop
    sizes = sizes_of_submits(tmp_path, device, 1, cgroup)
    assert sizes[: DEPTH // 2] == [2] * (DEPTH // 2), sizes  # the first fill, in pairs
    assert max(sizes) == 2, sizes


def test_slots_without_a_core_to_spare_submit_in_one_call(
    tmp_path: Path, slow_loop: tuple[str, Path]
) -> None:
    device, cgroup = slow_loop
    threads = max(1, int(cores_allowed()))  # as many slots as cores: none to spare
    sizes = sizes_of_submits(tmp_path, device, threads, cgroup)
    assert sizes.count(DEPTH) >= threads, sizes  # each slot's first fill, whole


def test_a_device_that_completes_inside_io_submit_gets_whole_batches(
    tmp_path: Path, inline_file: Path
) -> None:
    sizes = sizes_of_submits(tmp_path, str(inline_file), 1, None)
    # The first fill goes in pairs (nothing is known of the device yet); its reads are
    # complete when io_submit returns, so every later refill of a whole queue is one call.
    assert sizes[: DEPTH // 2] == [2] * (DEPTH // 2), sizes
    assert sizes.count(DEPTH) > 10, sizes


def test_a_slot_with_a_core_to_spare_reads_through_aio_at_depth_1(
    tmp_path: Path, slow_loop: tuple[str, Path]
) -> None:
    if cores_allowed() < 2:
        pytest.skip("one core: no slot has one to spare")
    device, cgroup = slow_loop
    lines = traced(tmp_path, device, 1, cgroup, 1)
    sizes = [int(m[1]) for line in lines if (m := SUBMIT.search(line))]
    # Every read is an io_submit of one (completions ~50 ms later, never inside it) ...
    assert len(sizes) >= 5 and set(sizes) == {1}, sizes
    # ... and none a pread of the device.
    fds = {m[1] for line in lines if (m := FILDES.search(line))}
    assert len(fds) == 1, fds
    device_preads = [line for line in lines if (m := PREAD.search(line)) and m[1] in fds]
    assert not device_preads, device_preads[:3]


def test_at_depth_1_a_device_that_completes_inside_io_submit_gets_preads(
    tmp_path: Path, inline_file: Path
) -> None:
    """Untraced, the thread stays on its CPU through each io_submit that completes its read:
    SYNC_STREAK reads go through AIO, then the rest are preads (--opslog names each)."""
    log = tmp_path / "ops.log"
    args = ["-r", "-b", "4k", "-t", "1", "--iodepth", "1", "--direct", "--rand", "--nolive"]
    args += ["--timelimit", "0.5", "--opslog", str(log), str(inline_file)]
    proc = run_aiobench(*args)
    assert proc.returncode == 0, proc.stderr
    names = [json.loads(line)["op_name"] for line in log.read_text().splitlines()]
    assert names[:SYNC_STREAK] == ["aioread"] * SYNC_STREAK, names[: SYNC_STREAK + 1]
    assert set(names[SYNC_STREAK:]) == {"pread"} and len(names) > 100 + SYNC_STREAK


def test_at_depth_1_reads_completed_inside_io_submit_while_switched_out_keep_aio(
    tmp_path: Path, inline_file: Path
) -> None:
    """A read completes inside io_submit also when another thread does it while the
    submitting one is switched out (a loop device's worker that preempts it on its CPU).
    Here strace stops the thread at every call: that is no device completing inside
    io_submit, and every read goes through AIO."""
    lines = traced(tmp_path, str(inline_file), 1, None, 1)
    sizes = [int(m[1]) for line in lines if (m := SUBMIT.search(line))]
    fds = {m[1] for line in lines if (m := FILDES.search(line))}
    preads = [line for line in lines if (m := PREAD.search(line)) and m[1] in fds]
    assert len(sizes) > 4 * SYNC_STREAK and set(sizes) == {1}, sizes[:5]
    assert len(fds) == 1 and not preads, preads[:3]
