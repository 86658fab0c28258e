"""--poll through the real CLI: a thread that waits for its completions on the CPU.

The difference --poll makes is where a thread waits: asleep in io_getevents, or on its
CPU watching the AIO ring. A sleep is a voluntary context switch, so the child's
``ru_nvcsw`` tells the two apart: reading a file of an ext4 on a loop device with direct
I/O (its completions come from the loop device's worker, later than the submission), the
thread without --poll sleeps for most reads; with it, it does not.
"""

from __future__ import annotations

import json
import os
import resource
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from aiobench.engines import native
from tests.helpers import Ext4Loop, RunCli, run_aiobench

pytestmark = pytest.mark.slow  # real CLI runs

BLOCKS = 4096  # 4 KiB reads of a 16 MiB file


def sleeps_and_result(tmp_path: Path, path: Path, *extra: str) -> tuple[int, dict[str, object]]:
    """A read phase of ``path`` as a child process: its voluntary context switches and its
    JSON document."""
    out = tmp_path / "run.json"
    out.unlink(missing_ok=True)
    args = ["-r", "-t", "1", "-b", "4k", "--rand", "--direct", "--nolive", "--json", str(out)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_nvcsw
    proc = run_aiobench(*args, *extra, str(path), timeout=300)
    sleeps = resource.getrusage(resource.RUSAGE_CHILDREN).ru_nvcsw - before
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, object] = json.loads(out.read_text())
    return sleeps, doc


def ops_of(doc: dict[str, object]) -> int:
    phases = doc["phases"]
    assert isinstance(phases, list) and len(phases) == 1
    return int(phases[0]["last_done"]["ops"])


@pytest.mark.skipif(not native.available(), reason="the native engine is not built here")
def test_poll_waits_for_each_read_on_the_cpu_not_asleep(
    tmp_path: Path, ext4_loop: Ext4Loop, run_cli: RunCli, validator: Draft202012Validator
) -> None:
    mnt = ext4_loop.setup(64 << 20, direct_io=True)
    target = mnt / "file"
    made = run_cli("-w", "-t", "1", "-b", "1m", "-s", "16m", "--nolive", str(target))
    assert made.returncode == 0, made.stderr
    for depth in ("1", "8"):
        asleep, plain = sleeps_and_result(tmp_path, target, "--iodepth", depth)
        awake, polled = sleeps_and_result(tmp_path, target, "--iodepth", depth, "--poll")
        validator.validate(polled)
        assert ops_of(plain) == ops_of(polled) == BLOCKS
        config = polled["meta"]["config"]  # type: ignore[index]
        assert (config["poll"], config["ioengine"]) == (True, "native")
        assert plain["meta"]["config"]["poll"] is False  # type: ignore[index]
        if depth == "1":  # (many reads wait asleep: all but those the loop device's
            # worker completes on the slot's CPU before io_getevents; 44-56 % of them
            # slept on a quiet 2-CPU VM, 16 % under the full suite's load)
            assert asleep >= BLOCKS // 40, (asleep, awake)
        assert awake < BLOCKS // 20, (asleep, awake)  # (the loop and its threads' own)
        assert awake < asleep, (asleep, awake)


@pytest.mark.skipif(not native.available(), reason="the native engine is not built here")
def test_poll_writes_the_bytes_a_run_without_it_writes(
    ext4_loop: Ext4Loop, run_cli: RunCli
) -> None:
    """Stamped writes through AIO at depth 1 (pread's and pwrite's place without --poll)
    and at depth 4: the same bytes for the same --seed."""
    mnt = ext4_loop.setup(64 << 20, direct_io=True)
    for depth in ("1", "4"):
        files = []
        for extra in ((), ("--poll",)):
            target = mnt / f"file{depth}{''.join(extra)}"
            args = ["-w", "-t", "1", "--iodepth", depth, "-b", "4k", "-s", "1m", "--direct"]
            proc = run_cli(*args, "--seed", "5", "--nolive", *extra, str(target))
            assert proc.returncode == 0, proc.stderr
            files.append(target.read_bytes())
        assert len(files[0]) == 1 << 20
        assert files[0] == files[1]


def test_the_note_says_when_polling_threads_take_every_cpu(run_cli: RunCli, tmp_path: Path) -> None:
    if not native.available():
        pytest.skip("the native engine is not built here")
    target = tmp_path / "file"
    target.write_bytes(b"x" * 8192)
    cpus = len(os.sched_getaffinity(0))
    # (-t cpus on a 2-block file: threads without a block of their own do nothing)
    proc = run_cli("-r", "-t", str(cpus), "-b", "4k", "--direct", "--poll", "--nolive", str(target))
    if proc.returncode == 2 and "O_DIRECT" in proc.stderr:
        pytest.skip(f"this filesystem refuses O_DIRECT: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr
    note = f"Note: --poll with -t {cpus} on {cpus} CPUs: each polling thread keeps a CPU busy"
    assert note in proc.stderr
    if cpus > 1:
        few = run_cli("-r", "-t", "1", "-b", "4k", "--direct", "--poll", "--nolive", str(target))
        assert few.returncode == 0, few.stderr
        assert "--poll with" not in few.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["-r", "--poll"], "--poll: needs --direct"),
        (["-r", "--direct", "--poll", "--ioengine", "python"], "--poll: needs --ioengine native"),
        (["-w", "--direct", "--poll", "--verify", "7"], "cannot be combined with --verify"),
        (["-w", "--direct", "--poll", "--blockvarpct", "50"], "with --blockvarpct"),
        (["-w", "--direct", "--poll", "--rwmixpct", "50"], "with --rwmixpct"),
        (["-r", "--direct", "--poll", "--limitread", "1m"], "with --limitread"),
        (["-w", "--direct", "--poll", "--limitwrite", "1m"], "with --limitwrite"),
        (["-r", "--direct", "--poll", "--mmap"], "with --mmap"),
        (["-r", "--direct", "--poll", "--flock", "range"], "with --flock"),
        (["-w", "--direct", "--poll", "--readinline"], "with --readinline"),
    ],
)
def test_poll_refuses_what_it_cannot_poll_for(
    run_cli: RunCli, tmp_path: Path, args: list[str], needle: str
) -> None:
    """One Error line naming --poll, exit 2, and the file the run would write is not made."""
    if not native.available() and "python" not in args:
        pytest.skip("the native engine is not built here")
    target = tmp_path / "file"
    proc = run_cli(*args, "-b", "4k", "-s", "8k", str(target))
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.startswith("Error: --poll: ") and needle in proc.stderr
    assert proc.stderr.count("\n") == 1
    assert not target.exists()


def test_poll_is_for_files_and_block_devices(run_cli: RunCli, tmp_path: Path) -> None:
    if not native.available():
        pytest.skip("the native engine is not built here")
    for path in (str(tmp_path), "s3://bucket/prefix"):
        proc = run_cli("--dryrun", "-w", "--direct", "--poll", path)
        assert (proc.returncode, proc.stdout) == (2, "")
        assert proc.stderr == "Error: --poll: only applies to files and block devices (file mode)\n"
