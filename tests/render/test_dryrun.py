"""``--dryrun``: the plan, and nothing created, opened or changed (real files, a real loop
device, and strace to see every open)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiobench.config import checked_engine
from tests.helpers import RunCli

MIB = 1 << 20


def snapshot(root: Path) -> dict[str, tuple[int, int, str]]:
    """(size, mtime_ns, sha256 of a file's bytes or '' for a dir) of everything below root."""
    out = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
        out[str(path.relative_to(root))] = (st.st_size, st.st_mtime_ns, digest)
    return out


def test_file_mode_plan_creates_nothing(run_cli: RunCli, tmp_path: Path) -> None:
    proc = run_cli(
        "-w", "-r", "-b", "1m", "-t", "3", "-s", "10m", "--dryrun", "--json", "r.json",
        "--csvfile", "r.csv", "new[1-4]", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "PLAN (--dryrun)",
        "Targets         : 4 files: new1 (10.0 MiB), new2 (10.0 MiB), new3 (10.0 MiB), "
        "new4 (10.0 MiB)",
        f"Threads         : 3 x iodepth 1 = 3 slots, {checked_engine(None)} engine",
        "Per thread      : 13 blocks (the last 14) of 1.0 MiB",
        "WRITE           : 40.0 MiB, 40 sequential operations of 1.0 MiB",
        "READ            : 40.0 MiB, 40 sequential operations of 1.0 MiB",
        "Nothing was created, opened or measured.",
    ]
    assert list(tmp_path.iterdir()) == []  # no target, no result file


def test_existing_files_are_left_as_they_were(run_cli: RunCli, tmp_path: Path) -> None:
    for name in ("f1", "f2"):
        (tmp_path / name).write_bytes(os.urandom(2 * MIB))
    (tmp_path / "r.csv").write_text("not our header\n")  # not even read
    before = snapshot(tmp_path)
    proc = run_cli(
        "-w", "-r", "--rand", "-b", "4k", "-s", "2m", "-t", "2", "--iodepth", "4",
        "--timelimit", "5", "--trunc", "--csvfile", "r.csv", "--dryrun", "f1", "f2", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Time limit      : 5 s per phase\n" in proc.stdout
    assert "WRITE           : 4.0 MiB, 1024 random operations of 4.0 KiB\n" in proc.stdout
    assert snapshot(tmp_path) == before


def test_dir_mode_plan_counts_dirs_and_files(run_cli: RunCli, tmp_path: Path) -> None:
    root = tmp_path / "md"
    root.mkdir()
    (root / "keep").write_text("x")
    before = snapshot(tmp_path)
    args = ("-d", "-w", "-r", "--stat", "-F", "-D", "-t", "2", "-n", "3", "-N", "50")
    proc = run_cli(*args, "-s", "8k", "-b", "4k", "--dryrun", str(root))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1] == f"Targets         : 1 directory: {root}"
    assert lines[3:10] == [
        "Per thread      : 3 dirs, 150 files of 8.0 KiB",
        "MKDIRS          : 6 dirs",
        "WRITE           : 300 files, 2.3 MiB in blocks of 4.0 KiB",
        "STAT            : 300 files",
        "READ            : 300 files, 2.3 MiB in blocks of 4.0 KiB",
        "RMFILES         : 300 files",
        "RMDIRS          : 6 dirs",
    ]
    assert snapshot(tmp_path) == before


def test_with_json_dash_the_plan_goes_to_stderr(run_cli: RunCli, tmp_path: Path) -> None:
    proc = run_cli("-w", "-s", "1m", "--json", "-", "--dryrun", "f", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""  # stdout is for the JSON document only, and there is none
    assert proc.stderr.startswith("PLAN (--dryrun)\n")
    assert list(tmp_path.iterdir()) == []


def test_dryrun_keeps_usage_errors(run_cli: RunCli, tmp_path: Path) -> None:
    proc = run_cli("-r", "--dryrun", str(tmp_path / "missing"))
    assert proc.returncode == 2
    missing = tmp_path / "missing"
    assert (
        proc.stderr == f"Error: {missing}: does not exist (reading needs it; add -w to create it)\n"
    )
    assert not (tmp_path / "missing").exists()


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_no_target_or_result_file_is_opened(tmp_path: Path) -> None:
    (tmp_path / "f1").write_bytes(b"\0" * MIB)
    trace = tmp_path.parent / f"{tmp_path.name}.strace"
    # Absolute names and another cwd: the interpreter itself lists its cwd for imports.
    names = [str(tmp_path / n) for n in ("f1", "f2", "r.json", "live.csv")]
    command = [
        "strace", "-f", "-qq", "-e", "trace=open,openat,openat2,creat,mkdir,mkdirat",
        "-o", str(trace), sys.executable, "-m", "aiobench", "-w", "-r", "-s", "1m",
        "--json", names[2], "--livecsv", names[3], "--dryrun", names[0], names[1],
    ]  # fmt: skip
    proc = subprocess.run(command, cwd=tmp_path.parent, capture_output=True, text=True, check=False)
    if proc.returncode != 0 and "ptrace" in proc.stderr:
        pytest.skip(f"strace cannot trace here: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr
    calls = trace.read_text()
    trace.unlink()
    assert "openat(" in calls  # the trace works: the interpreter opened its modules
    assert [line for line in calls.splitlines() if str(tmp_path) in line] == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f1"]


@pytest.fixture
def loop_device(tmp_path: Path) -> Iterator[str]:
    """A 16 MiB loop device over a file of random bytes in tmp_path; detached afterwards."""
    if os.geteuid() != 0:
        pytest.skip("loop devices need root")
    if shutil.which("losetup") is None:
        pytest.skip("losetup (util-linux) is not installed")
    backing = tmp_path / "backing.img"
    backing.write_bytes(os.urandom(16 * MIB))
    proc = subprocess.run(
        ["losetup", "--find", "--show", str(backing)], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        pytest.skip(f"losetup failed: {proc.stderr.strip()}")
    device = proc.stdout.strip()
    try:
        yield device
    finally:
        subprocess.run(["losetup", "--detach", device], check=False)


@pytest.mark.root
def test_block_device_is_left_as_it_was(run_cli: RunCli, loop_device: str) -> None:
    def checksum() -> str:
        with open(loop_device, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()

    before = checksum()
    proc = run_cli("-w", "-b", "1m", "-t", "2", "--dryrun", loop_device)
    assert proc.returncode == 0, proc.stderr
    assert f"1 block device: {loop_device} (16.0 MiB)" in proc.stdout
    assert "WRITE           : 16.0 MiB, 16 sequential operations of 1.0 MiB" in proc.stdout
    assert checksum() == before


def test_nodiocheck_plans_unaligned_direct_io(run_cli: RunCli, tmp_path: Path) -> None:
    args = ("-w", "--direct", "-b", "1000", "-s", "4000", "--dryrun", "f")
    refused = run_cli(*args, cwd=tmp_path)
    assert refused.returncode == 2
    assert "-b/--block: 1000 is not a multiple of 512, which --direct needs" in refused.stderr
    proc = run_cli(*args, "--nodiocheck", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "WRITE           : 3.9 KiB, 4 sequential operations of 1000 B" in proc.stdout
    assert list(tmp_path.iterdir()) == []
