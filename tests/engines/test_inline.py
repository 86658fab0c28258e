"""--readinline, --statinline and --nofdsharing through the real CLI, on real files.

What each option adds is a syscall (a read back, an fstat, an open per thread), so the
checks watch the syscalls themselves: ``strace -f -y`` names the file behind each
descriptor, and a FUSE filesystem (tests/faultfs.py) that fails reads shows a read made
inside the write phase. Descriptors held during a run are counted in /proc/PID/fd. The
figures of the result document must stay what elbencho counts: an inline read is part of
its write (one operation, its bytes once).
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from aiobench.engines.base import Engine
from tests.helpers import FaultFs, RunCli, errors_of, require_root_tools, run_tool

pytestmark = pytest.mark.slow  # real CLI runs

TRANSFERS = ("pwrite64", "pwritev", "pwritev2", "pread64", "preadv", "preadv2")
STATS = ("fstat", "newfstatat", "statx")
# One traced call: "PID  name(FD</path>, ..." (the rest may follow on a "resumed" line).
CALL = re.compile(r"^(\d+)\s+(\w+)\((\d+)<([^>]*)>(.*)$")


def on(engine: Engine) -> tuple[str, str]:
    return "--ioengine", engine.name


def traced(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], list[Call]]:
    """Run the CLI under ``strace -f -y``: the process, and every traced call made on a
    descriptor (its thread, name, fd, the path behind the fd, the rest of its line)."""
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace is not installed")
    log = tmp_path / "strace.log"
    calls = ",".join((*TRANSFERS, *STATS))
    cmd = [strace, "-f", "-y", "-qq", "-e", f"trace={calls}", "-o", str(log)]
    cmd += [sys.executable, "-m", "aiobench", *args]
    env = dict(os.environ, PYTHONWARNINGS="error")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, check=False)
    if "Operation not permitted" in proc.stderr and "ptrace" in proc.stderr:
        pytest.skip(f"strace cannot trace here: {proc.stderr.strip()}")
    found = []
    for line in log.read_text().splitlines():
        m = CALL.match(line)
        if m:
            found.append(Call(int(m[1]), m[2], int(m[3]), m[4], m[5]))
    return proc, found


class Call:
    __slots__ = ("fd", "name", "path", "pid", "rest")

    def __init__(self, pid: int, name: str, fd: int, path: str, rest: str) -> None:
        self.pid, self.name, self.fd, self.path, self.rest = pid, name, fd, path, rest

    @property
    def kind(self) -> str:
        """write, read or fstat (an fstat of the fd itself: newfstatat/statx with "")."""
        if self.name.startswith("pwrite"):
            return "write"
        if self.name.startswith("pread"):
            return "read"
        if self.name == "fstat" or self.rest.startswith(', ""'):
            return "fstat"
        return "other"


def on_files(calls: list[Call], root: Path) -> list[Call]:
    """The calls on the benchmark's own files under ``root`` (dir mode: r*-f*)."""
    prefix = f"{root}/"
    return [c for c in calls if c.path.startswith(prefix) and re.search(r"-f\d+$", c.path)]


def ok(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr


def phases(doc_path: Path) -> dict[str, dict[str, Any]]:
    doc = json.loads(doc_path.read_text())
    assert doc["error"] is None
    return {p["phase"]: p["last_done"] for p in doc["phases"]}


# --- --readinline ---------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["dir", "file"])
def test_readinline_reads_every_written_block_back_through_its_fd(
    tmp_path: Path, io_engine: Engine, mode: str
) -> None:
    """Each block written is read back at once, by the same thread through the same
    descriptor; the phase counts it once, as a write (elbencho's inline read)."""
    root = tmp_path / "bench"
    root.mkdir()
    out = tmp_path / "out.json"
    if mode == "dir":
        layout = ["-d", "-n", "2", "-N", "3", str(root)]  # 2 threads x 2 dirs x 3 files
        files, size = 12, 64 * 1024
    else:
        layout = [str(root / "f")]
        files, size = 1, 1024 * 1024
    args = ["-w", "-t", "2", "-s", str(size), "-b", "16k", *on(io_engine), *layout]
    blocks = files * size // (16 * 1024)

    proc, calls = traced(tmp_path, *args, "--readinline", "--json", str(out))
    ok(proc)
    mine = on_files(calls, root) if mode == "dir" else [c for c in calls if c.path == layout[-1]]
    kinds = Counter(c.kind for c in mine)
    assert kinds["write"] == blocks and kinds["read"] == blocks, kinds
    # Per thread and descriptor: write, read, write, read, ...
    seq: dict[tuple[int, int], list[str]] = defaultdict(list)
    for c in mine:
        if c.kind in ("write", "read"):
            seq[c.pid, c.fd].append(c.kind)
    for ops in seq.values():
        assert ops == ["write", "read"] * (len(ops) // 2), ops
    figures = phases(out)
    # elbencho names a dir-mode write phase with inline reads WRITE+r.
    write = "WRITE+r" if mode == "dir" else "WRITE"
    assert set(figures) == ({"MKDIRS", write} if mode == "dir" else {write})
    assert figures[write]["ops"] == blocks
    assert figures[write]["bytes"] == files * size

    # Without the option, the write phase reads nothing.
    proc, calls = traced(tmp_path, *args)
    ok(proc)
    mine = on_files(calls, root) if mode == "dir" else [c for c in calls if c.path == layout[-1]]
    kinds = Counter(c.kind for c in mine)
    assert kinds["write"] == blocks and kinds["read"] == 0, kinds


@pytest.mark.root
@pytest.mark.parametrize("mode", ["dir", "file"])
def test_readinline_read_error_ends_the_write_phase_at_its_block(
    fault_fs: FaultFs, tmp_path: Path, run_cli: RunCli, io_engine: Engine, mode: str
) -> None:
    """A mount whose reads of byte 20000 fail: a plain write phase never reads, one with
    --readinline fails at the block holding that byte (16384), named with path and
    offset, after the block before it was counted."""
    mnt = fault_fs(eio_offset=20_000, eio_ops=("read",))
    out = tmp_path / "out.json"
    if mode == "dir":
        args = ["-d", "-w", "-n", "1", "-N", "1", str(mnt)]
        failing = mnt / "r0" / "d0" / "r0-f0"
    else:
        args = ["-w", str(mnt / "f")]
        failing = mnt / "f"
    args += ["-s", "64k", "-b", "16k", *on(io_engine), "--json", str(out)]
    ok(run_cli(*args))
    proc = run_cli(*args, "--readinline")
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("Error:")]
    assert errors == [f"Error: {failing}: offset 16384: EIO (Input/output error)"]
    doc = json.loads(out.read_text())
    assert doc["error"]["path"] == str(failing)
    assert doc["error"]["offset"] == 16384
    assert doc["error"]["errno"] == errno.EIO
    name = "WRITE+r" if mode == "dir" else "WRITE"
    [write] = [p["last_done"] for p in doc["phases"] if p["phase"] == name]
    assert write["ops"] == 1 and write["bytes"] == 16384


DELAY_MS = 25  # faultfs's pause before each read and write


@pytest.mark.root
@pytest.mark.parametrize("mode", ["dir", "file"])
def test_readinline_times_the_read_with_its_write(
    fault_fs: FaultFs, tmp_path: Path, run_cli: RunCli, io_engine: Engine, mode: str
) -> None:
    """On a mount that pauses before every read and write, each operation of a write phase
    with --readinline lasts two pauses at least: the read back is inside its timing, as
    elbencho times its inline read (and so is the dir-mode file's)."""
    mnt = fault_fs(delay_ms=DELAY_MS)
    out = tmp_path / "out.json"
    layout = ["-d", "-n", "1", "-N", "2", str(mnt)] if mode == "dir" else [str(mnt / "f")]
    proc = run_cli(
        "-w", "-s", "64k", "-b", "16k", "--readinline", *on(io_engine), *layout,
        "--json", str(out),
    )  # fmt: skip
    ok(proc)
    name = "WRITE+r" if mode == "dir" else "WRITE"
    [write] = [p for p in json.loads(out.read_text())["phases"] if p["phase"] == name]
    io = write["latency"]["io"]
    assert io["count"] == (8 if mode == "dir" else 4)
    assert io["min_ns"] >= 2 * DELAY_MS * 1_000_000, io
    if mode == "dir":  # a file: its 4 blocks, each written and read back
        assert write["latency"]["entries"]["min_ns"] >= 8 * DELAY_MS * 1_000_000


def test_readinline_with_verifydirect_checks_the_block_it_read_back(
    tmp_path: Path, run_cli: RunCli, io_engine: Engine
) -> None:
    target, out = tmp_path / "f", tmp_path / "out.json"
    proc = run_cli(
        "-w", "-r", "-t", "2", "-s", "1m", "-b", "64k", "--verify", "9", "--verifydirect",
        "--readinline", *on(io_engine), str(target), "--json", str(out),
    )  # fmt: skip
    ok(proc)
    figures = phases(out)
    assert figures["WRITE"]["ops"] == figures["READ"]["ops"] == 16
    assert figures["WRITE"]["bytes"] == figures["READ"]["bytes"] == 1024 * 1024


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["-r", "--readinline"], "only applies with -w/--write"),
        (["-w", "--readinline", "--iodepth", "2"], "cannot be combined with --iodepth"),
    ],
)
def test_readinline_refuses_what_elbencho_refuses(
    tmp_path: Path, run_cli: RunCli, args: list[str], needle: str
) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"x" * 4096)
    proc = run_cli(*args, "-b", "4k", str(target))
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.startswith("Error: --readinline: ") and needle in proc.stderr
    assert proc.stderr.count("\n") == 1
    assert target.read_bytes() == b"x" * 4096


@pytest.mark.parametrize("flag", ["--readinline", "--statinline", "--nofdsharing"])
def test_object_storage_refuses_the_file_options(run_cli: RunCli, flag: str) -> None:
    proc = run_cli("--dryrun", "-w", flag, "s3://bucket/prefix")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"Error: {flag}: only applies to files, not object storage (s3://)\n"


# --- --statinline ---------------------------------------------------------------------


@pytest.mark.parametrize("size", ["64k", "0"])
def test_statinline_fstats_each_file_right_after_opening_it(
    tmp_path: Path, io_engine: Engine, size: str, validator: Draft202012Validator
) -> None:
    """Dir mode: one fstat of each file per write and read phase, before its first block;
    none without the option."""
    root = tmp_path / "bench"
    root.mkdir()
    args = ["-d", "-w", "-r", "-t", "2", "-n", "2", "-N", "3", "-s", size, "-b", "16k"]
    args += [*on(io_engine), str(root)]
    files = 12
    out = tmp_path / "out.json"

    proc, calls = traced(tmp_path, *args, "--statinline", "--json", str(out))
    ok(proc)
    doc = json.loads(out.read_text())
    assert errors_of(validator, doc) == []
    # elbencho's names: WRITE+s and READ+s; the files counted as without the option.
    figures = {p["phase"]: p["last_done"] for p in doc["phases"]}
    assert list(figures) == ["MKDIRS", "WRITE+s", "READ+s"]
    assert figures["WRITE+s"]["entries"] == figures["READ+s"]["entries"] == files
    mine = [c for c in on_files(calls, root) if c.kind != "other"]
    per_file = Counter(c.path for c in mine if c.kind == "fstat")
    assert len(per_file) == files and set(per_file.values()) == {2}, per_file  # WRITE, READ
    seq: dict[tuple[int, str], list[str]] = defaultdict(list)
    for c in mine:
        seq[c.pid, c.path].append(c.kind)
    blocks = 0 if size == "0" else 4
    for kinds in seq.values():  # each time a file is open: the fstat, then its blocks
        assert kinds[0] == "fstat", kinds
        groups = " ".join(kinds).split("fstat")[1:]
        for group in groups:
            assert group.split() in (["write"] * blocks, ["read"] * blocks), kinds

    proc, calls = traced(tmp_path, *args)
    ok(proc)
    assert [c for c in on_files(calls, root) if c.kind == "fstat"] == []


def test_statinline_in_file_mode_changes_nothing(tmp_path: Path, io_engine: Engine) -> None:
    """As in elbencho, --statinline is a dir-mode option that file mode ignores."""
    target = tmp_path / "f"
    target.write_bytes(bytes(256 * 1024))
    args = ["-w", "-r", "-s", "256k", "-b", "64k", *on(io_engine), str(target)]
    counts = []
    for extra in ([], ["--statinline"]):
        proc, calls = traced(tmp_path, *args, *extra)
        ok(proc)
        counts.append(Counter(c.kind for c in calls if c.path == str(target)))
    assert counts[0] == counts[1]
    assert counts[0]["write"] == counts[0]["read"] == 4


# --- --nofdsharing --------------------------------------------------------------------


def fds_to(pid: int, target: Path) -> int:
    """Descriptors of process ``pid`` open on ``target`` now (0 once it is gone)."""
    count = 0
    try:
        for name in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{name}") == str(target):
                    count += 1
            except FileNotFoundError:
                pass
    except (FileNotFoundError, ProcessLookupError):
        return 0
    return count


@pytest.mark.parametrize("shared", [True, False])
def test_nofdsharing_holds_a_descriptor_per_thread_during_the_run(
    tmp_path: Path, io_engine: Engine, shared: bool
) -> None:
    """While a time-limited run writes, the process holds one descriptor on the file, or
    with --nofdsharing one more per thread (elbencho keeps the shared one open too)."""
    target = tmp_path / "f"
    args = [sys.executable, "-m", "aiobench", "-w", "-t", "4", "-s", "4m", "-b", "64k"]
    args += ["--infloop", "--timelimit", "3", *on(io_engine), str(target)]
    if not shared:
        args.append("--nofdsharing")
    env = dict(os.environ, PYTHONWARNINGS="error")
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    seen = Counter[int]()
    try:
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            seen[fds_to(proc.pid, target)] += 1
            time.sleep(0.02)
    finally:
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    held = max(seen)
    assert held == (1 if shared else 1 + 4), seen
    assert seen[held] >= 10, seen  # held for the run, not a moment
    assert b"\nWRITE " in out


def test_nofdsharing_threads_use_their_own_descriptors_and_measure_alike(
    tmp_path: Path, io_engine: Engine
) -> None:
    """Every transfer of a thread's slice goes through a descriptor of its own (4 threads:
    4 descriptors, each moving a quarter); the data read back through them is the pattern
    written through the others', and the figures are those of a shared run."""
    target, out = tmp_path / "f", tmp_path / "out.json"
    args = ["-w", "-r", "-t", "4", "-s", "8m", "-b", "64k", "--verify", "5", *on(io_engine)]
    args += [str(target), "--json", str(out)]
    results = {}
    for extra in ([], ["--nofdsharing"]):
        proc, calls = traced(tmp_path, *args, *extra)
        ok(proc)
        by_fd = {
            kind: Counter(c.fd for c in calls if c.path == str(target) and c.kind == kind)
            for kind in ("write", "read")
        }
        results[bool(extra)] = (by_fd, phases(out))
    for own in (False, True):
        by_fd, figures = results[own]
        for kind in ("write", "read"):
            counts = by_fd[kind]
            assert sorted(counts.values()) == ([32] * 4 if own else [128]), counts
        for name in ("WRITE", "READ"):
            assert figures[name]["ops"] == 128
            assert figures[name]["bytes"] == 8 * 1024 * 1024
    shared_fd = set(results[False][0]["write"])
    assert not shared_fd & set(results[True][0]["write"])  # not the shared descriptor
    assert set(results[True][0]["write"]) == set(results[True][0]["read"])


def test_nofdsharing_in_dir_mode_changes_nothing(tmp_path: Path, run_cli: RunCli) -> None:
    """As in elbencho, --nofdsharing applies to files and block devices; dir mode opens
    each file itself anyway."""
    out = tmp_path / "out.json"
    proc = run_cli(
        "-d", "-w", "-r", "-t", "2", "-n", "1", "-N", "2", "-s", "32k", "--nofdsharing",
        str(tmp_path), "--json", str(out),
    )  # fmt: skip
    ok(proc)
    assert phases(out)["READ"]["bytes"] == 4 * 32 * 1024


def test_dir_mode_phase_names_carry_both_options_as_elbencho_writes_them(
    tmp_path: Path, run_cli: RunCli, validator: Draft202012Validator
) -> None:
    out = tmp_path / "out.json"
    proc = run_cli(
        "-d", "-w", "-r", "-n", "1", "-N", "2", "-s", "32k", "-b", "8k", "--readinline",
        "--statinline", "--dirstats", str(tmp_path), "--json", str(out),
    )  # fmt: skip
    ok(proc)
    doc = json.loads(out.read_text())
    assert errors_of(validator, doc) == []
    assert [p["phase"] for p in doc["phases"]] == ["MKDIRS", "WRITE+s+r", "READ+s"]
    # The table names them so too, and --dirstats still counts their dirs.
    assert "\nWRITE+s+r " in proc.stdout and "\nREAD+s " in proc.stdout
    assert proc.stdout.count("Dirs total") >= 3, proc.stdout


@pytest.mark.root
def test_nofdsharing_on_a_block_device_opens_it_per_thread(
    tmp_path: Path, io_engine: Engine
) -> None:
    """A block device: the shared descriptor holds the exclusive claim, each thread opens
    it once more (not exclusively: that would fail) and writes and reads through it."""
    require_root_tools("loop devices", "losetup")
    image = tmp_path / "img"
    with image.open("wb") as f:
        f.truncate(8 * 1024 * 1024)
    made = run_tool("losetup", "-f", "--show", str(image))
    if made.returncode:
        pytest.skip(f"no loop device: {made.stderr.strip()}")
    device = made.stdout.strip()
    try:
        out = tmp_path / "out.json"
        proc, calls = traced(
            tmp_path, "-w", "-r", "-t", "2", "-b", "64k", "--verify", "3", "--nofdsharing",
            *on(io_engine), device, "--json", str(out),
        )  # fmt: skip
        ok(proc)
        for kind in ("write", "read"):
            counts = Counter(c.fd for c in calls if c.path == device and c.kind == kind)
            assert sorted(counts.values()) == [64, 64], counts
        figures = phases(out)
        assert figures["WRITE"]["bytes"] == figures["READ"]["bytes"] == 8 * 1024 * 1024
    finally:
        run_tool("losetup", "-d", device)


def test_dryrun_says_what_the_options_add(tmp_path: Path, run_cli: RunCli) -> None:
    target = tmp_path / "f"
    proc = run_cli(
        "--dryrun", "-w", "-r", "-t", "4", "-s", "1m", "-b", "64k", "--readinline",
        "--nofdsharing", "--ioengine", "python", str(target),
    )  # fmt: skip
    ok(proc)
    lines = proc.stdout.splitlines()
    assert (
        "Threads         : 4 x iodepth 1 = 4 slots, python engine, each thread opening "
        "every PATH itself (--nofdsharing)"
    ) in lines
    assert (
        "WRITE           : 1.0 MiB, 16 sequential operations of 64.0 KiB, each block read "
        "back at once (--readinline)"
    ) in lines
    assert "READ            : 1.0 MiB, 16 sequential operations of 64.0 KiB" in lines
    assert not target.exists()
    root = tmp_path / "d"
    root.mkdir()
    proc = run_cli(
        "--dryrun", "-d", "-w", "-r", "-s", "1m", "--statinline", "--readinline", str(root)
    )
    ok(proc)
    assert "WRITE+s+r       : 1 files, 1.0 MiB in blocks of 1.0 MiB, each block read back " in (
        proc.stdout
    )
    assert "READ+s          : 1 files, 1.0 MiB in blocks of 1.0 MiB\n" in proc.stdout


@pytest.mark.parametrize(
    "extra",
    [["--mmap", "--trunctosize"], ["--flock", "range"], ["--flock", "full", "--readinline"]],
)
def test_nofdsharing_composes_with_mappings_and_locks(
    tmp_path: Path, run_cli: RunCli, io_engine: Engine, extra: list[str]
) -> None:
    """The threads' own descriptors share the phase's mappings (--mmap) and take their
    locks (--flock); what is written through one thread is read back right by another."""
    target, out = tmp_path / "f", tmp_path / "out.json"
    proc = run_cli(
        "-w", "-r", "-t", "4", "-s", "4m", "-b", "64k", "--verify", "3", "--nofdsharing",
        *extra, *on(io_engine), str(target), "--json", str(out),
    )  # fmt: skip
    ok(proc)
    figures = phases(out)
    assert figures["WRITE"]["bytes"] == figures["READ"]["bytes"] == 4 * 1024 * 1024
