"""Dir mode's files sized, hinted and mapped after their open (--trunctosize, --preallocfile,
--mmap, --madv), and --readinline under --flock and --mmap (#24), seen from outside.

``strace -f -y`` names the file behind each descriptor: which calls each file gets, in
which order; the files' sizes and blocks after the run; and the bytes through the Access
of the Python engine's file-mode loop, in-process.
"""

from __future__ import annotations

import json
import mmap
import os
import re
from collections import Counter
from pathlib import Path

import pytest

from aiobench.engines.access import Access
from aiobench.engines.base import IoOptions
from tests.helpers import fd_targets, run_aiobench, strace_lines

pytestmark = pytest.mark.slow  # real CLI runs

ENGINES = ("native", "python")  # (the native one hands these runs to the Python loop)
KIB = 1024
MIB = 1 << 20
TRANSFERS = "pwrite64,pwritev,pwritev2,pread64,preadv,preadv2"
# One traced call: "PID  name(args) = result"; with -y each descriptor is "FD</path>".
CALL = re.compile(r"^\d+\s+(\w+)\((.*)\)\s+= (\S+)")


def traced(tmp_path: Path, calls: str, *args: str) -> list[tuple[str, str, str]]:
    """``aiobench ARGS`` under ``strace -f -y``: (name, arguments, result) of each traced
    call of every thread, in order."""
    found = []
    for line in strace_lines(tmp_path, calls, *args, fd_paths=True):
        m = CALL.match(line)
        if m:
            found.append((m[1], m[2], m[3]))
    return found


def on_file(calls: list[tuple[str, str, str]], path: Path) -> list[tuple[str, str, str]]:
    """The calls on ``path``'s descriptor: its first argument (mmap's fifth), or its
    result (an openat)."""
    tag = f"<{path}>"
    return [
        c
        for c in calls
        if c[1].split(", ")[4 if c[0] == "mmap" else 0].endswith(tag) or c[2].endswith(tag)
    ]


def layout_files(bench: Path) -> list[Path]:
    return sorted(bench.glob("r*/d*/r*-f*"))


DIR_RUN = ["-n", "1", "-N", "2", "-b", "64k", "--nolive"]


@pytest.mark.parametrize("engine", ENGINES)
def test_dir_mode_sizes_each_file_right_after_its_open(tmp_path: Path, engine: str) -> None:
    """elbencho's dirModeOpenAndPrepFile: ftruncate to -s, then posix_fallocate of -s,
    on each file the write phase opens, before its first write."""
    bench = tmp_path / "bench"
    bench.mkdir()
    args = ["-d", "-w", *DIR_RUN, "-s", "256k", "--ioengine", engine, str(bench)]
    calls = traced(tmp_path, f"openat,ftruncate,fallocate,{TRANSFERS}", *args,
                   "--trunctosize", "--preallocfile")  # fmt: skip
    files = layout_files(bench)
    assert len(files) == 2
    for f in files:
        names = [name for name, _, _ in on_file(calls, f)]
        assert names[:3] == ["openat", "ftruncate", "fallocate"], names
        assert names.count("ftruncate") == names.count("fallocate") == 1, names
        mine = on_file(calls, f)
        assert mine[1][1].endswith(f", {256 * KIB}")  # ftruncate(fd, 256 KiB)
        assert mine[2][1].endswith(f", 0, 0, {256 * KIB}")  # fallocate(fd, 0, 0, 256 KiB)
    # A file larger than -s is cut to -s, its tail's blocks freed (without --trunctosize
    # the old tail stays).
    for f in files:
        f.write_bytes(b"x" * MIB)
    proc = run_aiobench("-w", *DIR_RUN, "-s", "256k", "--trunctosize", "--ioengine", engine,
                        str(bench))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    for f in files:
        st = f.stat()
        assert st.st_size == 256 * KIB
        assert 256 * KIB <= st.st_blocks * 512 < MIB
        head = f.read_bytes()[: 64 * KIB]  # newly written: no block of the old x's left
        assert all(head[i : i + 4096] != b"x" * 4096 for i in range(0, len(head), 4096))


@pytest.mark.parametrize("engine", ENGINES)
def test_dir_mode_mmap_copies_through_a_mapping_of_each_file(tmp_path: Path, engine: str) -> None:
    bench, out = tmp_path / "bench", tmp_path / "out.json"
    bench.mkdir()
    args = ["-d", "-w", "-r", *DIR_RUN, "-N", "3", "-s", "256k", "--ioengine", engine]
    more = ["--mmap", "--trunctosize", "--madv", "seq,willneed", str(bench), "--json", str(out)]
    calls = traced(tmp_path, f"openat,mmap,munmap,madvise,{TRANSFERS}", *args, *more)
    files = layout_files(bench)
    assert len(files) == 3
    # Per file and phase: one mmap of the whole file (writable to write, read-only to
    # read), both hints on that mapping, its munmap; no pwrite or pread of the file.
    addresses: Counter[str] = Counter()
    for f in files:
        mine = on_file(calls, f)
        maps = [(args_, res) for name, args_, res in mine if name == "mmap"]
        assert [a.split(", ")[1:4] for a, _ in maps] == [
            [str(256 * KIB), "PROT_READ|PROT_WRITE", "MAP_SHARED"],
            [str(256 * KIB), "PROT_READ", "MAP_SHARED"],
        ], maps
        assert not [c for c in mine if c[0].startswith(("pwrite", "pread"))], mine
        addresses.update(res for _, res in maps)
    for address, count in addresses.items():
        hints = [a for name, a, _ in calls if name == "madvise" and a.startswith(address + ",")]
        assert sorted(h.split(", ")[2] for h in hints) == sorted(
            ["MADV_SEQUENTIAL", "MADV_WILLNEED"] * count
        ), hints
        unmaps = [a for name, a, _ in calls if name == "munmap" and a.startswith(address + ",")]
        assert len(unmaps) >= count and all(a.endswith(f", {256 * KIB}") for a in unmaps)
    doc = json.loads(out.read_text())
    assert doc["error"] is None
    moved = {p["phase"]: p["last_done"]["bytes"] for p in doc["phases"]}
    assert (moved["WRITE"], moved["READ"]) == (3 * 256 * KIB, 3 * 256 * KIB), moved
    # (dir mode has no --verify: the writes are seen as data where --trunctosize left zeros)
    zero = bytes(64 * KIB)
    for f in files:
        data = f.read_bytes()
        blocks = {data[at : at + 64 * KIB] for at in range(0, len(data), 64 * KIB)}
        assert len(blocks) == 4 and zero not in blocks  # 4 distinct written blocks
    # A file cut short meanwhile: the copy past its end is an I/O error naming the file
    # and the offset, not a SIGBUS.
    os.truncate(files[1], 100 * KIB)
    proc = run_aiobench("-r", *DIR_RUN, "-N", "3", "-s", "256k", "--mmap", "--ioengine",
                        engine, str(bench))  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines()[-1].startswith(f"Error: {files[1]}: offset 65536: EIO")


def test_readinline_under_flock_holds_one_lock_around_write_and_read(tmp_path: Path) -> None:
    """elbencho locks once around pwrite and the pread of its block (pwriteAndReadWrapper)."""
    target = tmp_path / "f"
    args = ["-w", "-s", "256k", "-b", "64k", "--readinline", "--flock", "range", str(target)]
    calls = on_file(traced(tmp_path, f"fcntl,{TRANSFERS}", *args), target)
    steps = []
    for name, args_, _ in calls:
        if name == "fcntl" and "F_SETLKW" in args_:
            steps.append("unlock" if "F_UNLCK" in args_ else "lock")
        elif name.startswith(("pwrite", "pread")):
            steps.append(name[1:5])  # writ / read
    assert steps == ["lock", "writ", "read", "unlock"] * 4, steps


@pytest.mark.parametrize("mode", ["dir", "file"])
def test_readinline_under_mmap_writes_and_reads_back_through_the_fd(
    tmp_path: Path, mode: str
) -> None:
    """elbencho's --readinline replaces the write the mapping chose (pwriteAndReadWrapper):
    the files are mapped, each block still goes out with pwrite and back with pread, one
    lock around both."""
    bench = tmp_path / "bench"
    bench.mkdir()
    where = ["-d", "-n", "1", "-N", "2", str(bench)] if mode == "dir" else [str(bench / "f")]
    args = ["-w", "-s", "256k", "-b", "64k", "--readinline", "--mmap", "--trunctosize", *where]
    calls = traced(tmp_path, f"mmap,fcntl,{TRANSFERS}", *args, "--flock", "range")
    files = layout_files(bench) if mode == "dir" else [bench / "f"]
    for f in files:
        mine = on_file(calls, f)
        steps = [c[0][1:5] for c in mine if c[0].startswith(("pwrite", "pread"))]
        assert steps == ["writ", "read"] * 4, mine
        locks = [a for name, a, _ in mine if name == "fcntl" and "F_SETLKW" in a]
        assert len(locks) == 2 * 4  # one lock and one unlock per block
        assert any(name == "mmap" for name, _, _ in mine)
        data = f.read_bytes()
        assert len(data) == 256 * KIB  # every 64 KiB block written (none left zero)
        assert all(data[i : i + 4096] != bytes(4096) for i in range(0, len(data), 64 * KIB))


def test_access_reads_each_write_back_through_the_descriptor_under_mmap(
    tmp_path: Path,
) -> None:
    """Access with --readinline --mmap: the write's block written and read back through the
    descriptor (as elbencho's), the mapping left as it was."""
    path = tmp_path / "f"
    path.write_bytes(bytes(8192))
    fd = os.open(path, os.O_RDWR)
    targets = fd_targets([str(path)], [fd])  # (closes fd, unmaps)
    targets.maps.append(mmap.mmap(fd, 4096, flags=mmap.MAP_SHARED))  # (half the file)
    back = bytearray(4096)
    access = Access(targets, IoOptions(mmap=True, read_inline=True), [memoryview(back)])
    data = memoryview(os.urandom(4096))
    try:
        # Past the mapping's end, whole: the descriptor's write and read back.
        assert access.transfer(0, [data], 4096, False) == 4096
        assert back == data
        assert os.pread(fd, 4096, 4096) == data
    finally:
        access.close()
        targets.close()
