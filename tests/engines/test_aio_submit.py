"""How the native AIO loop hands its free positions to io_submit (issue #28).

The kernel holds back (plugs) the operations of an io_submit of more than two until all
are prepared. A slot with a core to spare (the phase has fewer slots than cores) submits
two per call, so that a device that completes elsewhere starts on the first at once; a
slot without one, or one whose device completes inside io_submit (tmpfs with O_DIRECT),
submits them in one call. Each case is a real run under strace, its io_submit sizes read.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiobench.engines import native
from aiobench.stats.client import cores_allowed
from tests.helpers import mounted_tmpfs, require_root_tools, run_tool

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


def sizes_of_submits(tmp_path: Path, target: str, threads: int, cgroup: Path | None) -> list[int]:
    """The io_submit sizes, every thread's in order, of a 0.5 s read phase of ``target``
    at ``--iodepth`` DEPTH, run in ``cgroup`` if given."""
    log = tmp_path / f"strace-{threads}.log"
    args = ["-r", "-b", "4k", "-t", str(threads), "--iodepth", str(DEPTH), "--direct", "--rand"]
    cmd = ["strace", "-f", "-qq", "-e", "trace=io_submit", "-o", str(log), sys.executable]
    cmd += ["-m", "aiobench", *args, "--timelimit", "0.5", "--nolive", target]
    if cgroup is not None:  # (the shell joins the cgroup, then becomes strace)
        cmd = ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(cgroup / "cgroup.procs"), *cmd]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0 and "PTRACE" in proc.stderr:
        pytest.skip(f"strace cannot trace here: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr
    return [int(m[1]) for line in log.read_text().splitlines() if (m := SUBMIT.search(line))]


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


def test_a_device_that_completes_inside_io_submit_gets_whole_batches(tmp_path: Path) -> None:
    require_root_tools("a tmpfs mount", "strace")
    if cores_allowed() < 2:
        pytest.skip("one core: no slot has one to spare")
    with mounted_tmpfs(tmp_path / "mnt", "size=16m") as mnt:
        target = mnt / "file"
        target.write_bytes(os.urandom(4 << 20))
        try:
            os.close(os.open(target, os.O_RDONLY | os.O_DIRECT))
        except OSError as exc:
            pytest.skip(f"this tmpfs has no O_DIRECT: {exc}")
        sizes = sizes_of_submits(tmp_path, str(target), 1, None)
    # The first fill goes in pairs (nothing is known of the device yet); its reads are
    # complete when io_submit returns, so every later refill of a whole queue is one call.
    assert sizes[: DEPTH // 2] == [2] * (DEPTH // 2), sizes
    assert sizes.count(DEPTH) > 10, sizes
