"""--opslog FILE and --opsloglock (#24): one JSON line per operation, appended, locked.

Real runs of the CLI on real files; the lock is seen from another process (/proc/locks).
"""

from __future__ import annotations

import collections
import contextlib
import errno
import fcntl
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from aiobench.run.opslog import OpsLog
from aiobench.stats.client import cores_allowed
from tests.helpers import (
    Ext4Loop,
    RunCli,
    assert_usage_error,
    listing,
    mounted_tmpfs,
    mpirun,
    needs_mpi,
)
from tests.s3server import S3Server, s3_server  # noqa: F401  (a fixture)

pytestmark = pytest.mark.slow  # real CLI runs

# elbencho's keys (OpsLogger), then aiobench's own.
ELBENCHO_KEYS = (
    "date", "worker_rank", "op_name", "entry_name", "offset", "length", "is_finished",
    "is_error",
)  # fmt: skip
KEYS = (*ELBENCHO_KEYS, "phase", "start_unix_ns", "latency_ns", "result")
BLOCK = 4096


def _records(log: Path) -> list[dict[str, Any]]:
    """Every line of the log as JSON (each must be one whole object, newline-ended)."""
    text = log.read_text(encoding="utf-8")
    assert text.endswith("\n")
    records = []
    for line in text.splitlines():
        record = json.loads(line)
        assert isinstance(record, dict), line
        records.append(record)
    return records


def _check_ok(record: dict[str, Any]) -> None:
    assert tuple(record) == KEYS, record
    assert record["is_finished"] is True and record["is_error"] is False
    assert isinstance(record["latency_ns"], int) and record["latency_ns"] >= 0
    assert record["result"] == record["length"]


@pytest.mark.parametrize("engine", ["native", "python"])
def test_file_mode_has_one_line_per_block_written_and_read(
    tmp_path: Path, run_cli: RunCli, engine: str
) -> None:
    """-w -r of N blocks over 2 threads: N pwrite lines then N pread lines, each block's
    offset once, its length, the thread's rank and a latency."""
    blocks = 24
    target = tmp_path / "f"
    log = tmp_path / "ops.log"
    started_ns = time.time_ns()
    proc = run_cli(
        "-w", "-r", "-t", "2", "-s", str(blocks * BLOCK), "-b", str(BLOCK), "--nolive",
        "--ioengine", engine, "--opslog", str(log), str(target),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    records = _records(log)
    assert len(records) == 2 * blocks
    for record in records:
        _check_ok(record)
        assert record["entry_name"] == str(target)
        assert record["length"] == BLOCK
        assert started_ns <= record["start_unix_ns"] <= time.time_ns()
    writes = [r for r in records if r["phase"] == "WRITE"]
    reads = [r for r in records if r["phase"] == "READ"]
    assert {r["op_name"] for r in writes} == {"pwrite"}
    assert {r["op_name"] for r in reads} == {"pread"}
    expected = [k * BLOCK for k in range(blocks)]
    assert sorted(r["offset"] for r in writes) == expected
    assert sorted(r["offset"] for r in reads) == expected
    assert {r["worker_rank"] for r in records} == {0, 1}
    assert records.index(reads[0]) == blocks  # the reads come after every write


def test_linux_aio_operations_are_named_as_elbencho_names_them(
    ext4_loop: Ext4Loop, run_cli: RunCli
) -> None:
    """--direct --iodepth 4 on ext4 (the native engine's Linux AIO): aiowrite and aioread
    lines, each block once."""
    mnt = ext4_loop.setup(64 << 20)
    target, log = mnt / "f", mnt / "ops.log"
    proc = run_cli(
        "-w", "-r", "-t", "1", "--iodepth", "4", "--direct", "-s", str(64 * BLOCK), "-b",
        str(BLOCK), "--ioengine", "native", "--nolive", "--opslog", str(log), str(target),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    records = _records(log)
    for record in records:
        _check_ok(record)
    for phase, op in (("WRITE", "aiowrite"), ("READ", "aioread")):
        mine = [r for r in records if r["phase"] == phase]
        assert {r["op_name"] for r in mine} == {op}
        assert sorted(r["offset"] for r in mine) == [k * BLOCK for k in range(64)]


def test_reads_through_linux_aio_at_depth_1_are_named_so(
    ext4_loop: Ext4Loop, run_cli: RunCli
) -> None:
    """--direct at --iodepth 1 with a core to spare: the native engine's reads go through
    Linux AIO too (one in flight), and their lines say aioread."""
    if cores_allowed() < 2:
        pytest.skip("one core: no slot has one to spare (pread then)")
    mnt = ext4_loop.setup(64 << 20)
    target, log = mnt / "f", mnt / "ops.log"
    made = run_cli(
        "-w", "-t", "1", "-s", str(64 * BLOCK), "-b", str(BLOCK), "--nolive", str(target)
    )
    assert made.returncode == 0, made.stderr
    proc = run_cli(
        "-r", "-t", "1", "--direct", "-b", str(BLOCK), "--ioengine", "native", "--nolive",
        "--opslog", str(log), str(target),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    records = _records(log)
    assert {r["op_name"] for r in records} == {"aioread"}
    assert sorted(r["offset"] for r in records) == [k * BLOCK for k in range(64)]


@pytest.mark.parametrize("engine", ["native", "python"])
def test_mmap_copies_are_named_as_such(tmp_path: Path, run_cli: RunCli, engine: str) -> None:
    """--mmap: the blocks are copies through the mapping, not pread/pwrite calls."""
    log = tmp_path / "ops.log"
    proc = run_cli(
        "-w", "-r", "-t", "1", "--mmap", "--trunctosize", "-s", str(8 * BLOCK), "-b", str(BLOCK),
        "--nolive",
        "--ioengine", engine, "--opslog", str(log), str(tmp_path / "f"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    records = _records(log)
    names = [(r["phase"], r["op_name"], r["offset"]) for r in records]
    assert names == [("WRITE", "mmap_write", k * BLOCK) for k in range(8)] + [
        ("READ", "mmap_read", k * BLOCK) for k in range(8)
    ]


def test_dir_mode_mmap_blocks_are_named_as_copies(tmp_path: Path, run_cli: RunCli) -> None:
    log, bench = tmp_path / "ops.log", tmp_path / "bench"
    bench.mkdir()
    proc = run_cli(
        "-d", "-w", "-r", "-n", "1", "-N", "1", "--mmap", "--trunctosize", "-s", str(2 * BLOCK),
        "-b", str(BLOCK), "--nolive", "--opslog", str(log), str(bench),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    names = [(r["phase"], r["op_name"]) for r in _records(log) if r["phase"] != "MKDIRS"]
    assert names == [("WRITE", "mmap_write")] * 2 + [("WRITE", "write_file")] + [
        ("READ", "mmap_read")
    ] * 2 + [("READ", "read_file")]


def test_the_log_is_appended_to(tmp_path: Path, run_cli: RunCli) -> None:
    """A second run adds its lines after what the file held (O_APPEND, no truncation)."""
    log = tmp_path / "ops.log"
    log.write_text('{"earlier": true}\n', encoding="utf-8")
    args = ("-w", "-s", "16k", "-b", "4k", "--nolive", "--opslog", str(log), str(tmp_path / "f"))
    for _ in range(2):
        proc = run_cli(*args)
        assert proc.returncode == 0, proc.stderr
    records = _records(log)
    assert records[0] == {"earlier": True}
    assert [r["op_name"] for r in records[1:]] == ["pwrite"] * 8


def test_rwmix_names_each_operation_read_or_write(tmp_path: Path, run_cli: RunCli) -> None:
    """--rwmixpct 50: each line names what its operation did, by elbencho's rule (one
    thread: operation n, at block n, reads if n % 100 < 50)."""
    target = tmp_path / "f"
    target.write_bytes(b"\0" * 64 * BLOCK)
    log = tmp_path / "ops.log"
    proc = run_cli(
        "-w", "--rwmixpct", "50", "-t", "1", "-s", str(64 * BLOCK), "-b", str(BLOCK),
        "--nolive", "--opslog", str(log), str(target),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    records = _records(log)
    assert sorted(r["offset"] for r in records) == [k * BLOCK for k in range(64)]
    for record in records:
        n = record["offset"] // BLOCK
        assert record["op_name"] == ("pread" if n % 100 < 50 else "pwrite"), record


@pytest.mark.parametrize("engine", ["native", "python"])
def test_dir_mode_has_a_line_per_entry_and_per_block(
    tmp_path: Path, run_cli: RunCli, engine: str
) -> None:
    """All six dir-mode phases: a line per dir and per file operation, and in WRITE and
    READ a line per block of each file (10 KiB files in 4 KiB blocks: 4k, 4k, 2k)."""
    root = tmp_path / "d"
    root.mkdir()
    log = tmp_path / "ops.log"
    threads, dirs, files = 2, 2, 3
    proc = run_cli(
        "-d", "-w", "--stat", "-r", "-F", "-D", "-t", str(threads), "-n", str(dirs),
        "-N", str(files), "-s", "10k", "-b", "4k", "--nolive", "--ioengine", engine,
        "--opslog", str(log), str(root),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    records = _records(log)
    for record in records:
        _check_ok(record)
    count = collections.Counter((r["phase"], r["op_name"]) for r in records)
    n_dirs, n_files = threads * dirs, threads * dirs * files
    assert count == {
        ("MKDIRS", "mkdirat"): n_dirs,
        ("WRITE", "write_file"): n_files,
        ("WRITE", "pwrite"): 3 * n_files,
        ("STAT", "fstatat"): n_files,
        ("READ", "read_file"): n_files,
        ("READ", "pread"): 3 * n_files,
        ("RMFILES", "unlinkat"): n_files,
        ("RMDIRS", "unlinkat"): n_dirs,
    }
    made = {r["entry_name"] for r in records if r["op_name"] == "write_file"}
    assert len(made) == n_files and all(name.startswith(f"{root}/r") for name in made)
    for phase, name in (("STAT", "fstatat"), ("READ", "read_file"), ("RMFILES", "unlinkat")):
        assert {
            r["entry_name"] for r in records if (r["phase"], r["op_name"]) == (phase, name)
        } == made
    assert {r["entry_name"] for r in records if r["op_name"] == "mkdirat"} == {
        r["entry_name"] for r in records if r["phase"] == "RMDIRS"
    }
    blocks = collections.defaultdict(list)
    for r in records:
        if r["op_name"] in ("pwrite", "pread"):
            blocks[(r["op_name"], r["entry_name"])].append((r["offset"], r["length"]))
    assert set(blocks) == {(op, name) for op in ("pwrite", "pread") for name in made}
    for parts in blocks.values():
        assert sorted(parts) == [(0, 4096), (4096, 4096), (8192, 2048)]
    write_files = [r for r in records if r["op_name"] == "write_file"]
    assert all(r["length"] == 10 * 1024 and r["result"] == 10 * 1024 for r in write_files)


@pytest.mark.parametrize("layout", ["file", "dir"])
def test_a_time_limited_run_logs_exactly_the_operations_it_counts(
    tmp_path: Path, run_cli: RunCli, layout: str
) -> None:
    """--timelimit ends the phase mid-way (dir mode: mid-file too): the log holds a line
    for each operation and entry the results count, no more, no fewer."""
    log, result = tmp_path / "ops.log", tmp_path / "result.json"
    with contextlib.ExitStack() as stack:
        if layout == "file":
            work: tuple[str, ...] = ("-w", "--infloop", "-s", "1m", str(tmp_path / "f"))
        else:
            # (~0.3 GiB in its second here: on a tmpfs of its own, with room for 7 times
            # that; --force: the 6 GiB planned do not fit)
            mnt = stack.enter_context(mounted_tmpfs(tmp_path / "mnt", "size=2g"))
            work = ("-d", "-w", "-n", "1", "-N", "50000", "-s", "64k", "--force", str(mnt))
        proc = run_cli(
            "-t", "2", "-b", "4k", "--timelimit", "1", "--nolive", "--json", str(result),
            "--opslog", str(log), *work,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    phase = json.loads(result.read_text(encoding="utf-8"))["phases"][-1]
    assert phase["phase"] == "WRITE" and phase["status"] == "time_limited"
    records = [r for r in _records(log) if r["phase"] == "WRITE"]
    blocks = sum(r["op_name"] == "pwrite" for r in records)
    files = sum(r["op_name"] == "write_file" for r in records)
    assert blocks + files == len(records)
    assert blocks == phase["last_done"]["ops"] > 0
    assert files == phase["last_done"]["entries"]


def test_dryrun_checks_the_log_but_makes_none(tmp_path: Path, run_cli: RunCli) -> None:
    log = tmp_path / "ops.log"
    ok = run_cli("-w", "-s", "8k", "--dryrun", "--opslog", str(log), str(tmp_path / "f"))
    assert ok.returncode == 0, ok.stderr
    assert not log.exists()
    bad = run_cli("-w", "-s", "8k", "--dryrun", "--opslog", str(tmp_path), str(tmp_path / "f"))
    assert_usage_error(bad, ["--opslog", "is a directory"])


def test_a_failed_operation_is_logged_as_an_error(tmp_path: Path, run_cli: RunCli) -> None:
    """Dir mode writing onto a full filesystem: the run fails (exit 1); the blocks and
    files done are logged, and the block that failed is a line with is_error, -ENOSPC
    as its result and no latency."""
    with mounted_tmpfs(tmp_path / "mnt", "size=64k") as mnt:
        log = tmp_path / "ops.log"
        proc = run_cli(
            "-d", "-w", "-t", "1", "-n", "1", "-N", "8", "-s", "32k", "-b", "4k", "--force",
            "--nolive",
            "--opslog", str(log), str(mnt),
        )  # fmt: skip
        assert proc.returncode == 1, proc.stderr
        records = _records(log)
        *done, failed = records
        assert failed["is_error"] is True and failed["op_name"] == "pwrite"
        assert failed["result"] == -errno.ENOSPC and "ENOSPC" in failed["error"]
        assert failed["latency_ns"] is None and failed["start_unix_ns"] is None
        assert failed["entry_name"].startswith(f"{mnt}/r0/d0/r0-f")
        assert done, "the blocks written before it are logged"
        for record in done:
            _check_ok(record)
        whole = [r["entry_name"] for r in done if r["op_name"] == "write_file"]
        assert failed["entry_name"] not in whole
        blocks = [r for r in done if r["entry_name"] == failed["entry_name"]]
        assert sorted(r["offset"] for r in blocks) == list(range(0, failed["offset"], BLOCK))


@pytest.mark.parametrize(
    "case", ["dir", "no-parent", "fifo", "chardev", "lock-alone", "empty", "netbench"]
)
def test_a_bad_log_path_is_a_usage_error_and_touches_nothing(
    tmp_path: Path, run_cli: RunCli, case: str
) -> None:
    """One Error line naming --opslog (or --opsloglock), exit 2, no file made."""
    target = tmp_path / "f"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "sub").mkdir()
    net = ("--netbench", "--servers", "127.0.0.1", "--clients", "127.0.0.1")
    args, reason = {
        "dir": (("--opslog", str(tmp_path / "sub")), "is a directory"),
        "no-parent": (("--opslog", str(tmp_path / "no" / "ops.log")), "directory of"),
        "fifo": (("--opslog", str(fifo)), "is not a regular file"),
        "chardev": (("--opslog", "/dev/null"), "is not a regular file"),
        "lock-alone": (("--opsloglock",), "--opsloglock: only applies with --opslog"),
        "empty": (("--opslog", ""), "--opslog: give a file name"),
        "netbench": ((*net, "--opslog", str(tmp_path / "l")), "does not apply to --netbench"),
    }[case]
    before = listing(tmp_path)
    proc = run_cli("-w", "-s", "8k", "--nolive", *args, str(target))
    assert_usage_error(proc, ["--opslog", reason])
    assert listing(tmp_path) == before


def test_a_log_through_a_symlink_is_written_at_its_end(tmp_path: Path, run_cli: RunCli) -> None:
    """A symlink the user names leads to the log (as for the result files); it stays a
    symlink."""
    real = tmp_path / "real.log"
    link = tmp_path / "link.log"
    link.symlink_to(real)
    proc = run_cli(
        "-w", "-s", "8k", "-b", "4k", "--nolive", "--opslog", str(link), str(tmp_path / "f")
    )
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and len(_records(real)) == 2


def _blocked_flock_waiters(inode: int) -> int:
    """Processes waiting (``->``) for a FLOCK on the file with ``inode`` (/proc/locks)."""
    waiting = 0
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "->" in fields and "FLOCK" in fields:
            device_inode = fields[
                fields.index("FLOCK") + 4
            ]  # (->, FLOCK, ADVISORY, WRITE, pid, dev:ino)
            if int(device_inode.rsplit(":", 1)[1]) == inode:
                waiting += 1
    return waiting


def _aiobench(*args: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONWARNINGS="error")
    return subprocess.Popen(
        [sys.executable, "-m", "aiobench", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip


@pytest.mark.parametrize("locking", [True, False])
def test_opsloglock_waits_for_the_files_lock(tmp_path: Path, locking: bool) -> None:
    """While another process holds flock(LOCK_EX) on the log, a run with --opsloglock waits
    for it (the kernel lists it as a waiter) and writes nothing; once it is released the
    run ends with its lines. Without --opsloglock the run does not wait."""
    log = tmp_path / "ops.log"
    log.touch()
    lock = ("--opsloglock",) if locking else ()
    args = ("-w", "-s", "16k", "-b", "4k", "--nolive", "--opslog", str(log), *lock)
    with open(log, "ab") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)
        proc = _aiobench(*args, str(tmp_path / "f"))
        try:
            if locking:
                deadline = time.monotonic() + 60
                while not _blocked_flock_waiters(os.stat(log).st_ino):
                    assert proc.poll() is None, proc.communicate()
                    assert time.monotonic() < deadline, "no process waits for the lock"
                    time.sleep(0.05)
                assert log.stat().st_size == 0
                assert proc.poll() is None
            else:
                proc.wait(timeout=60)
                assert proc.returncode == 0
        finally:
            fcntl.flock(holder, fcntl.LOCK_UN)
            _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert [r["op_name"] for r in _records(log)] == ["pwrite"] * 4


def test_two_processes_appending_with_opsloglock_leave_whole_lines(tmp_path: Path) -> None:
    """Two runs at once, each of 4 threads writing 2048 blocks of 512 bytes, into one log
    with --opsloglock: every line is whole and each run's operations are all there."""
    log = tmp_path / "ops.log"
    blocks = 2048
    args = ("-w", "-t", "4", "-s", str(blocks * 512), "-b", "512", "--nolive")
    procs = [
        _aiobench(*args, "--opslog", str(log), "--opsloglock", str(tmp_path / f"f{i}"))
        for i in range(2)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    records = _records(log)
    for record in records:
        _check_ok(record)
    per_file = collections.Counter(r["entry_name"] for r in records)
    assert per_file == {str(tmp_path / "f0"): blocks, str(tmp_path / "f1"): blocks}


def test_a_full_filesystem_under_the_log_is_reported_and_the_run_goes_on(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """The log's filesystem fills up: one Error line naming --opslog and ENOSPC, exit 1,
    the benchmark's result still reported."""
    with mounted_tmpfs(tmp_path / "mnt", "size=64k") as mnt:
        log = mnt / "ops.log"
        proc = run_cli(
            "-w", "-s", "4m", "-b", "4k", "--nolive", "--json", "-", "--opslog", str(log),
            str(tmp_path / "f"),
        )  # fmt: skip
        assert proc.returncode == 1, proc.stderr
        errors = [line for line in proc.stderr.splitlines() if line.startswith("Error:")]
        assert len(errors) == 1 and "--opslog" in errors[0] and "ENOSPC" in errors[0]
        doc = json.loads(proc.stdout)
        assert doc["phases"][0]["last_done"]["ops"] == 1024
        lines = log.read_bytes().splitlines(keepends=True)
        assert 0 < len(lines) < 1024
        for line in lines:
            json.loads(line)  # (whole chunks only: no line cut where the space ran out)


@needs_mpi
def test_every_mpi_rank_appends_to_the_one_log(tmp_path: Path) -> None:
    """mpirun -n 2 with --opsloglock: one log with both ranks' lines, each block once."""
    log = tmp_path / "ops.log"
    target = tmp_path / "f"
    proc = mpirun(
        2, "-w", "-t", "1", "-s", "64k", "-b", "4k", "--nolive", "--opslog", str(log),
        "--opsloglock", str(target),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    records = _records(log)
    assert {r["worker_rank"] for r in records} == {0, 1}
    assert sorted(r["offset"] for r in records) == [k * BLOCK for k in range(16)]


def test_object_storage_has_a_line_per_request(
    tmp_path: Path,
    run_cli: RunCli,
    s3_server: S3Server,  # noqa: F811
) -> None:
    """S3: a line per bucket made and removed and per PUT, HEAD, GET and DELETE, named as
    the S3 API names them, each object by bucket and key."""
    bucket = f"aiobench-{uuid.uuid4().hex[:12]}"
    log = tmp_path / "ops.log"
    proc = run_cli(
        "-d", "-w", "--stat", "-r", "-F", "-D", "-t", "2", "-n", "1", "-N", "3", "-s", "4k",
        "-b", "4k", "--nolive", "--s3endpoints", s3_server.endpoint, "--s3key",
        s3_server.access_key, "--s3secret", s3_server.secret_key, "--opslog", str(log),
        f"s3://{bucket}",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    records = _records(log)
    for record in records:
        _check_ok(record)
    count = collections.Counter((r["phase"], r["op_name"]) for r in records)
    assert count == {
        ("MKBUCKETS", "CreateBucket"): 1,
        ("WRITE", "PutObject"): 6,
        ("STAT", "HeadObject"): 6,
        ("READ", "GetObject"): 6,
        ("RMOBJECTS", "DeleteObject"): 6,
        ("RMBUCKETS", "DeleteBucket"): 1,
    }
    objects = {f"s3://{bucket}/r{t}/d0/r{t}-f{f}" for t in range(2) for f in range(3)}
    for phase in ("WRITE", "STAT", "READ", "RMOBJECTS"):
        assert {r["entry_name"] for r in records if r["phase"] == phase} == objects
    buckets = [r["entry_name"] for r in records if r["phase"] in ("MKBUCKETS", "RMBUCKETS")]
    assert buckets == [f"s3://{bucket}"] * 2


def test_setup_failing_elsewhere_removes_only_a_log_this_run_made(tmp_path: Path) -> None:
    """:meth:`OpsLog.undo` (another MPI rank's setup failed): a log this run created and
    left empty goes (at a symlink's end, the symlink stays); one that was there stays."""
    new, old, link = tmp_path / "new.log", tmp_path / "old.log", tmp_path / "link.log"
    old.write_text("kept\n", encoding="utf-8")
    link.symlink_to(tmp_path / "real.log")
    for path in (new, old, link):
        OpsLog.open(str(path), lock_file=False).undo()
    assert not new.exists() and old.read_text(encoding="utf-8") == "kept\n"
    assert link.is_symlink() and not (tmp_path / "real.log").exists()
