"""--fadv, --mmap with --madv, and --flock (elbencho's): seen from outside the process.

The mapping in /proc/PID/maps while a run goes, the locks through a second process's
fcntl(F_GETLK), the hints in the syscalls strace records; the data through --verify.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers import assert_usage_error, run_aiobench, strace_lines

ENGINES = ("native", "python")
MIB = 1 << 20
# struct flock on Linux x86-64/aarch64: l_type, l_whence (shorts), l_start, l_len (off_t),
# l_pid (pid_t), padded to 32 bytes.
FLOCK = "hh4xqqi4x"


@contextmanager
def running(*args: str) -> Iterator[subprocess.Popen[str]]:
    """``aiobench ARGS`` in the background; stopped if still running at the end."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "aiobench", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=60)


def watch(proc: subprocess.Popen[str], look: Callable[[], object | None]) -> object | None:
    """Call ``look`` until it finds something (returned, once the run ended) or the run
    ends (None)."""
    seen = None
    while seen is None and proc.poll() is None:
        seen = look()
        time.sleep(0.001)
    proc.wait(timeout=120)
    return seen


def filled(path: Path, size: int) -> Path:
    path.write_bytes(os.urandom(size))
    return path


def mapped(pid: int, path: Path) -> Callable[[], str | None]:
    def look() -> str | None:
        try:
            maps = Path(f"/proc/{pid}/maps").read_text()
        except OSError:
            return None
        lines = [line for line in maps.splitlines() if line.endswith(str(path))]
        return lines[0] if lines else None

    return look


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("mmap", [True, False])
def test_mmap_reads_through_a_mapping_of_the_file(tmp_path: Path, engine: str, mmap: bool) -> None:
    target = filled(tmp_path / "data", 4 * MIB)
    args = ["-r", "--rand", "-b", "4k", "--infloop", "--timelimit", "3", "--nolive"]
    with running(*args, *(["--mmap"] if mmap else []), "--ioengine", engine, str(target)) as p:
        line = watch(p, mapped(p.pid, target))
    assert p.returncode == 0
    if not mmap:
        assert line is None  # (the check sees a mapping only where there is one)
        return
    assert isinstance(line, str), "the file was never mapped"
    low, high = (int(part, 16) for part in line.split()[0].split("-"))
    assert high - low == 4 * MIB
    assert line.split()[1].startswith("r") and line.split()[1][1] == "-"  # read only


@pytest.mark.parametrize("engine", ENGINES)
def test_mmap_writes_land_in_the_file(tmp_path: Path, engine: str) -> None:
    target = tmp_path / "data"
    common = ["-b", "64k", "-s", "1m", "-t", "2", "--verify", "77", "--ioengine", engine]
    wrote = run_aiobench("-w", "--mmap", "--trunctosize", *common, str(target))
    assert wrote.returncode == 0, wrote.stderr
    assert target.stat().st_size == MIB
    # Read back with plain reads and through a mapping: the pattern is there both ways.
    for more in ([], ["--mmap"]):
        read = run_aiobench("-r", *more, *common, str(target), "--json", str(tmp_path / "r.json"))
        assert read.returncode == 0, read.stderr
        doc = json.loads((tmp_path / "r.json").read_text())
        assert doc["phases"][0]["last_done"]["bytes"] == MIB
    target.write_bytes(bytes(MIB))  # the pattern gone: --verify through the mapping sees it
    bad = run_aiobench("-r", "--mmap", *common, str(target))
    assert bad.returncode != 0 and "verify" in bad.stderr.lower(), bad.stderr


def lock_seen(path: Path) -> Callable[[], tuple[int, int, int, int] | None]:
    """A look with F_GETLK from this process: (type, start, len, pid) of a lock another
    process holds that an exclusive lock of the whole file would wait for."""
    fd = os.open(path, os.O_RDWR)

    def look() -> tuple[int, int, int, int] | None:
        query = struct.pack(FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
        kind, _, start, length, pid = struct.unpack(FLOCK, fcntl.fcntl(fd, fcntl.F_GETLK, query))
        return None if kind == fcntl.F_UNLCK else (kind, start, length, pid)

    return look


@pytest.mark.parametrize(
    ("phase", "mode", "kind", "engine"),
    [  # (each engine once per phase: the native one hands these runs to the Python loop)
        ("-w", "full", fcntl.F_WRLCK, "python"),
        ("-w", "range", fcntl.F_WRLCK, "native"),
        ("-r", "range", fcntl.F_RDLCK, "python"),
        ("-r", "full", fcntl.F_RDLCK, "native"),
        ("-r", None, None, "native"),
    ],
)
def test_flock_takes_the_lock_another_process_sees(
    tmp_path: Path, engine: str, phase: str, mode: str | None, kind: int | None
) -> None:
    target = filled(tmp_path / "data", 32 * MIB)
    lock = ["--flock", mode] if mode else []
    args = [phase, "-b", "1m", "-s", "32m", "--infloop", "--timelimit", "2", "--nolive", *lock]
    with running(*args, "--ioengine", engine, str(target)) as proc:
        seen = watch(proc, lock_seen(target))
    assert proc.returncode == 0
    if kind is None:
        assert seen is None  # no lock without --flock: the look can come back empty
        return
    assert isinstance(seen, tuple), "no lock seen"
    got_kind, start, length, pid = seen
    assert (got_kind, pid) == (kind, proc.pid)
    if mode == "full":
        assert (start, length) == (0, 0)  # (0 to the end: the whole file)
    else:
        assert length == MIB and start % MIB == 0


def traced(tmp_path: Path, syscall: str, *args: str) -> list[str]:
    """The lines of ``syscall`` (comma-separated names) of ``aiobench ARGS``, every thread's,
    as strace records them."""
    names = [f"{name}(" for name in syscall.split(",")]
    lines = strace_lines(tmp_path, syscall, *args)
    return [line for line in lines if any(n in line for n in names)]


@pytest.mark.parametrize("engine", ENGINES)
def test_fadv_hints_each_file_at_each_phase(tmp_path: Path, engine: str) -> None:
    files = [str(tmp_path / f"f{i}") for i in range(2)]
    run = ["-w", "-r", "-b", "64k", "-s", "1m", "--ioengine", engine, *files]
    calls = traced(tmp_path, "fadvise64", *run, "--fadv", "seq,dontneed")
    advice = [re.search(r"POSIX_FADV_\w+", line) for line in calls]
    names = sorted(m.group(0) for m in advice if m is not None)
    # 2 phases x 2 files x 2 hints, each on the whole file (offset 0, length 0).
    assert names == ["POSIX_FADV_DONTNEED"] * 4 + ["POSIX_FADV_SEQUENTIAL"] * 4, calls
    assert all(", 0, 0, POSIX_FADV_" in line for line in calls), calls
    assert traced(tmp_path, "fadvise64", *run) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_madv_hints_the_mapping(tmp_path: Path, engine: str) -> None:
    target = filled(tmp_path / "data", 2 * MIB)
    run = ["-r", "-b", "64k", "--mmap", "--ioengine", engine, str(target)]
    calls = traced(tmp_path, "madvise", *run, "--madv", "rand,willneed")
    ours = [line for line in calls if f", {2 * MIB}, MADV_" in line]
    hints = sorted(re.findall(r"MADV_(RANDOM|WILLNEED)", " ".join(ours)))
    assert hints == ["RANDOM", "WILLNEED"], calls
    assert [line for line in traced(tmp_path, "madvise", *run) if "MADV_RANDOM" in line] == []


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--fadv", "seq,sometimes"], ["--fadv", "'sometimes'"]),
        (["--fadv", ","], ["--fadv", "seq"]),
        (["--madv", "huge"], ["--madv", "'huge'"]),
        (["--flock", "half"], ["--flock", "range", "full"]),
        (["--mmap", "--trunctosize", "--iodepth", "2"], ["--mmap", "--iodepth"]),
    ],
)
def test_bad_hints_and_modes_are_refused(
    tmp_path: Path, args: list[str], needles: list[str]
) -> None:
    target = tmp_path / "data"
    proc = run_aiobench("-w", "-s", "1m", *args, str(target))
    assert_usage_error(proc, needles)
    assert not target.exists()


def test_mmap_writes_need_a_file_as_large_as_they_write(tmp_path: Path) -> None:
    target = tmp_path / "data"
    proc = run_aiobench("-w", "-s", "1m", "--mmap", str(target))
    assert_usage_error(proc, ["--mmap", str(target), "--trunctosize", "--preallocfile"])
    assert not target.exists()
    filled(target, MIB)
    before = target.read_bytes()
    cut = run_aiobench("-w", "-s", "1m", "--mmap", "--trunc", str(target))
    assert_usage_error(cut, ["--mmap", "--trunc"])
    assert target.read_bytes() == before  # nothing of the user's touched
    assert run_aiobench("-w", "-s", "1m", "--mmap", str(target)).returncode == 0


def test_dir_mode_mmap_writes_need_files_sized_first(tmp_path: Path) -> None:
    # (elbencho maps -s bytes of each new, empty file: its first store is a SIGBUS)
    proc = run_aiobench("-d", "-w", "-n", "1", "-N", "1", "--mmap", "--madv", "seq", str(tmp_path))
    assert_usage_error(proc, ["--mmap", "dir mode", "--trunctosize", "--preallocfile"])
    assert list(tmp_path.iterdir()) == []


DIR_RUN = ["-d", "-w", "-r", "-n", "1", "-N", "3", "-s", "64k", "-b", "16k", "--nolive"]


@pytest.mark.parametrize("engine", ENGINES)
def test_dir_mode_hints_each_file_after_its_open(tmp_path: Path, engine: str) -> None:
    bench = tmp_path / "bench"
    bench.mkdir()
    run = [*DIR_RUN, "--ioengine", engine, str(bench)]
    calls = traced(tmp_path, "openat,fadvise64", *run, "--fadv", "rand")
    hinted = [line for line in calls if "POSIX_FADV_RANDOM" in line]
    assert len(hinted) == 2 * 3, calls  # each of the 3 files in the write and the read phase
    opened = {m.group(1) for line in calls if (m := re.search(r"openat\(.*= (\d+)$", line))}
    fds = {re.search(r"fadvise64\((\d+),", line).group(1) for line in hinted}  # type: ignore[union-attr]
    assert fds <= opened  # (on the files' own descriptors)
    assert run_aiobench("-F", "-D", "-n", "1", "-N", "3", str(bench)).returncode == 0
    calls = traced(tmp_path, "fadvise64", *run)
    assert calls == []


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("mode", "length"), [("range", 16384), ("full", 0)])
def test_dir_mode_locks_each_block(tmp_path: Path, engine: str, mode: str, length: int) -> None:
    bench = tmp_path / "bench"
    bench.mkdir()
    run = [*DIR_RUN, "--ioengine", engine, str(bench)]
    calls = traced(tmp_path, "fcntl", *run, "--flock", mode)
    locks = [line for line in calls if "F_SETLKW" in line]
    kinds = [re.search(r"l_type=(F_\w+)", line).group(1) for line in locks]  # type: ignore[union-attr]
    # 3 files x 4 blocks, in each phase: a lock and an unlock around each block
    assert kinds.count("F_WRLCK") == kinds.count("F_RDLCK") == 12, calls
    assert kinds.count("F_UNLCK") == 24
    assert all(f"l_len={length}" in line for line in locks), locks
    assert run_aiobench("-F", "-D", "-n", "1", "-N", "3", str(bench)).returncode == 0
    assert [line for line in traced(tmp_path, "fcntl", *run) if "F_SETLKW" in line] == []
