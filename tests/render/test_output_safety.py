"""Output files and streams go where the user points, whole, and never harm what is there.

Real parts throughout: the CLI as a real process, /dev/null and /dev/stdout themselves,
FIFOs with a reader thread, tiny tmpfs mounts for ENOSPC (root), concurrent processes
appending to one CSV, and stdout/stderr closed or pointed at /dev/full by a shell. A run
that could replace a node in /dev is wrapped in :func:`restored`, so that a regression
fails its test without breaking /dev for everything else on the machine.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import fcntl
import functools
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from aiobench.render.csv import LIVE_HEADER, RESULT_HEADER
from aiobench.results.saved import load_run
from tests.helpers import DATA, call_main, errors_of, mounted_tmpfs

pytestmark = pytest.mark.slow  # real CLI runs (see tests/conftest.py)

AIOBENCH = [sys.executable, "-m", "aiobench"]
SMALL = ("-w", "-r", "-b", "64k", "-s", "256k", "--nolive")
# A run slow enough to act on while it goes on, at almost no CPU: 4 KiB blocks at
# 64 KiB/s would take 16 s for the file; --timelimit ends the phase first.
SLOW = ("-w", "-b", "4k", "-s", "1m", "--limitwrite", "64k", "--nolive")
PAGE = 4096  # tmpfs hands out space a page at a time
DOC_START = '{\n  "schema_version"'
Doc = dict[str, Any]


def env() -> dict[str, str]:
    return dict(os.environ, PYTHONWARNINGS="error")


def run(
    *args: str,
    cwd: Path,
    stdout: int | IO[Any] = subprocess.PIPE,
    stderr: int | IO[Any] = subprocess.PIPE,
    shell_redirect: str = "",
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """The CLI as a real process; ``shell_redirect`` (``>&-``, ``2>&-``) is applied by
    ``sh`` to the very process that runs aiobench."""
    cmd = [*AIOBENCH, *args]
    if shell_redirect:
        cmd = ["sh", "-c", f'exec "$@" {shell_redirect}', "sh", *cmd]
    return subprocess.run(
        cmd,
        stdout=stdout,
        stderr=stderr,
        text=True,
        cwd=cwd,
        env=env(),
        timeout=timeout,
        check=False,
    )


def error_lines(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr
    assert "Exception ignored" not in stderr, stderr
    return [line for line in stderr.splitlines() if line.startswith("Error:")]


def listing(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every entry below ``root`` with its type bits, size and inode."""
    out = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        out[str(path.relative_to(root))] = (stat.S_IFMT(st.st_mode), st.st_size, st.st_ino)
    return out


@contextlib.contextmanager
def restored(path: str) -> Iterator[os.stat_result]:
    """``path`` (in /dev) as it was before the block, put back if the block replaced it."""
    before = os.lstat(path)
    link = os.readlink(path) if stat.S_ISLNK(before.st_mode) else None
    try:
        yield before
    finally:
        after = os.lstat(path)
        if (after.st_ino, after.st_mode) != (before.st_ino, before.st_mode):
            os.unlink(path)
            if link is not None:
                os.symlink(link, path)
            else:
                os.mknod(path, before.st_mode, before.st_rdev)
                os.chmod(path, stat.S_IMODE(before.st_mode))


def no_temp_files_in(directory: str) -> None:
    assert [n for n in os.listdir(directory) if "aiobench" in n] == []


class FifoReader:
    """Reads a FIFO in a thread until its writers are done (or :meth:`stop`).

    The read end is opened at once (non-blocking), so a writer never waits for it, and a
    test whose writer never comes does not hang: it stops the reader.
    """

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self.data = bytearray()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._stop.is_set():
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                time.sleep(0.01)
                continue
            if chunk:
                self.data += chunk
            elif self.data:
                return  # the writer had written and has closed
            else:
                time.sleep(0.01)  # no writer yet

    def result(self, timeout: float = 60) -> bytes:
        self._thread.join(timeout)
        self.stop()
        return bytes(self.data)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        with contextlib.suppress(OSError):
            os.close(self.fd)


def fill(directory: Path) -> None:
    """Take every free page of the filesystem of ``directory`` (until ENOSPC)."""
    with (directory / "filler").open("wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * PAGE)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    """A guard against hanging only: the condition is expected long before the timeout."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.02)


def require_root(why: str) -> None:
    if os.geteuid() != 0:
        pytest.skip(f"{why} needs root")


# ---------------------------------------------------------------------------------------
# --json goes where the user points


def test_json_to_dev_null_leaves_the_device(tmp_path: Path) -> None:
    with restored("/dev/null") as before:
        proc = run(*SMALL, "f", "--json", "/dev/null", cwd=tmp_path)
        after = os.lstat("/dev/null")
    assert proc.returncode == 0, proc.stderr
    assert error_lines(proc.stderr) == []
    assert stat.S_ISCHR(after.st_mode)
    assert (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)
    assert stat.S_IMODE(after.st_mode) == stat.S_IMODE(before.st_mode)
    no_temp_files_in("/dev")


def test_json_to_a_device_node_of_ones_own_is_written_in_place(tmp_path: Path) -> None:
    """A character device outside /dev (here a second /dev/null): the node stays."""
    require_root("making a device node")
    node = tmp_path / "sink"
    os.mknod(node, stat.S_IFCHR | 0o666, os.stat("/dev/null").st_rdev)
    before = node.lstat()
    proc = run(*SMALL, "f", "--json", str(node), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    after = node.lstat()
    assert stat.S_ISCHR(after.st_mode)
    assert (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f", "sink"]


def test_json_through_symlinks_replaces_the_real_file(
    tmp_path: Path, validator: Draft202012Validator
) -> None:
    results = tmp_path / "results"
    results.mkdir()
    real = results / "real.json"
    real.write_text("an earlier run\n", encoding="utf-8")
    real.chmod(0o640)
    (tmp_path / "LINK").symlink_to("results/real.json")
    (tmp_path / "links").mkdir()
    (tmp_path / "links" / "CHAIN").symlink_to("../LINK")  # a link to the link
    for name in ("LINK", "links/CHAIN"):
        proc = run(*SMALL, "f", "--json", name, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(real.read_text(encoding="utf-8"))
        assert errors_of(validator, doc) == []
        assert doc["meta"]["command"][-1] == name  # this very run's document
        assert os.readlink(tmp_path / "LINK") == "results/real.json"
        assert os.readlink(tmp_path / "links" / "CHAIN") == "../LINK"
        assert stat.S_IMODE(real.stat().st_mode) == 0o640  # the replaced file's mode
    # A link to a file not there yet creates that file; the link stays a link.
    (tmp_path / "NEW").symlink_to("results/new.json")
    proc = run(*SMALL, "f", "--json", "NEW", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert os.readlink(tmp_path / "NEW") == "results/new.json"
    assert json.loads((results / "new.json").read_text(encoding="utf-8"))["phases"]
    assert sorted(listing(tmp_path)) == [
        "LINK", "NEW", "f", "links", "links/CHAIN", "results", "results/new.json",
        "results/real.json",
    ]  # fmt: skip


def test_json_to_a_fifo_reaches_its_reader_whole(
    tmp_path: Path, validator: Draft202012Validator
) -> None:
    fifo = tmp_path / "doc.fifo"
    os.mkfifo(fifo)
    reader = FifoReader(fifo)
    try:
        proc = run(*SMALL, "f", "--json", str(fifo), cwd=tmp_path, timeout=60)
    finally:
        data = reader.result()
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    doc = json.loads(data)
    assert errors_of(validator, doc) == []
    assert [p["phase"] for p in doc["phases"]] == ["WRITE", "READ"]


@pytest.mark.parametrize("name", ["/dev/stdout", "/proc/self/fd/1", "/dev/fd/1"])
@pytest.mark.parametrize("stdout_is", ["pipe", "file"])
def test_json_to_own_stdout_follows_the_table(
    tmp_path: Path, validator: Draft202012Validator, name: str, stdout_is: str
) -> None:
    """The document goes where stdout goes, after the table; a file behind stdout is
    written on, not replaced (the table stays in it)."""
    saved = tmp_path / "saved.txt"
    link = os.readlink("/dev/stdout")
    with restored("/dev/stdout"), restored("/dev/fd"), saved.open("w") as handle:
        target: int | IO[Any] = subprocess.PIPE if stdout_is == "pipe" else handle
        proc = run(*SMALL, "f", "--json", name, cwd=tmp_path, stdout=target)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout if stdout_is == "pipe" else saved.read_text(encoding="utf-8")
    start = out.index(DOC_START)
    table, doc = out[:start], json.loads(out[start:])
    assert table.startswith("OPERATION   RESULT TYPE")
    assert "WRITE" in table and "READ" in table
    assert errors_of(validator, doc) == []
    assert [p["phase"] for p in doc["phases"]] == ["WRITE", "READ"]
    assert os.readlink("/dev/stdout") == link
    no_temp_files_in("/dev")


@pytest.mark.parametrize("option", ["--json", "--jsonfile", "--csvfile"])
def test_refused_targets_are_usage_errors(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    option: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dir").mkdir()
    (tmp_path / "DIRLINK").symlink_to("dir")
    cases = [("DIRLINK", "is a directory"), ("/dev/aiobench-not-there", "no file is made in /dev")]
    if os.geteuid() == 0:
        # Major 240 is for local use: no driver behind it, nothing to harm if opened.
        os.mknod(tmp_path / "disk", stat.S_IFBLK | 0o600, os.makedev(240, 0))
        cases.append(("disk", "is a block device"))
    before = listing(tmp_path)
    for name, why in cases:
        code, out, err = call_main(capsys, "-w", "-s", "64k", "f", option, name)
        assert (code, out) == (2, ""), err
        assert err.startswith(f"Error: {option}: {name} ") and why in err, err
        assert err.count("\n") == 1, err
    assert listing(tmp_path) == before
    assert not os.path.lexists("/dev/aiobench-not-there")


# A run that waits for a FIFO's reader would hang (and no signal ends that wait): this
# bounds each case, long before which a refusal comes.
FIFO_GUARD_S = 60
NO_READER = "a FIFO with no reader"


@pytest.mark.parametrize(
    "args",
    [
        *[
            pytest.param(("-w", "-s", "1m", "f", option, "p", "--nolive"), id=option)
            for option in ("--json", "--livecsv", "--livejson", "--jsonfile", "--csvfile")
        ],
        pytest.param(("-w", "-s", "1m", "f", "--resfile", "p", "--nolive"), id="--resfile"),
        pytest.param(("check", ".", "--json", "p"), id="check --json"),
        pytest.param(("check", ".", "--markdown", "p"), id="check --markdown"),
        pytest.param(("plot", str(DATA / "example-result.json"), "-o", "p"), id="plot -o"),
    ],
)
def test_a_fifo_with_no_reader_is_refused_before_anything_runs(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    os.mkfifo(tmp_path / "p")
    before = listing(tmp_path)
    proc = run(*args, cwd=tmp_path, timeout=FIFO_GUARD_S)
    option = {"-o": "-o/--output"}.get(args[args.index("p") - 1], args[args.index("p") - 1])
    assert error_lines(proc.stderr) == [f"Error: {option}: p: {NO_READER} (start the reader first)"]
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert (proc.returncode, proc.stdout) == (2, "")
    assert listing(tmp_path) == before  # no target file, nothing of the check: not begun
    assert stat.S_ISFIFO((tmp_path / "p").lstat().st_mode)


def test_plot_to_a_fifo_with_a_reader_sends_the_png(tmp_path: Path) -> None:
    fifo = tmp_path / "plot.fifo"
    os.mkfifo(fifo)
    reader = FifoReader(fifo)
    try:
        proc = run("plot", str(DATA / "example-result.json"), "-o", str(fifo), cwd=tmp_path)
    finally:
        data = reader.result()
    assert (proc.returncode, error_lines(proc.stderr)) == (0, []), proc.stderr
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 1000
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_appends_to_a_fifo_and_a_device_are_whole_with_one_header(tmp_path: Path) -> None:
    fifo = tmp_path / "rows.fifo"
    os.mkfifo(fifo)
    reader = FifoReader(fifo)
    try:
        with restored("/dev/null"):
            proc = run(*SMALL, "f", "--csvfile", str(fifo), "--resfile", "/dev/null", cwd=tmp_path)
    finally:
        data = reader.result()
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.reader(data.decode().splitlines()))
    assert rows[0] == RESULT_HEADER  # once: a FIFO's size cannot say it was written
    assert [row[RESULT_HEADER.index("operation")] for row in rows[1:]] == ["WRITE", "READ"]
    assert all(len(row) == len(RESULT_HEADER) for row in rows)
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and stat.S_ISCHR(os.lstat("/dev/null").st_mode)


# ---------------------------------------------------------------------------------------
# appends are whole records


def _records_parse(option: str, text: str) -> None:
    lines = text.splitlines()
    assert lines and text.endswith("\n")
    if option == "--jsonfile":
        for line in lines:
            assert json.loads(line)["phase_type"] in ("WRITE", "READ")
    else:
        rows = list(csv.reader(lines))
        assert rows[0] == RESULT_HEADER
        assert all(len(row) == len(RESULT_HEADER) for row in rows)


@pytest.mark.root
@pytest.mark.parametrize("option", ["--jsonfile", "--csvfile"])
def test_a_record_that_does_not_fit_is_undone_and_reported(tmp_path: Path, option: str) -> None:
    label = "L" * 2500  # every record is longer than the page left for it
    seed = tmp_path / "seed"
    made = run(*SMALL, "f", "--label", label, option, str(seed), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    with mounted_tmpfs(tmp_path / "m", "size=64k") as mnt:
        target = mnt / "results"
        content = seed.read_bytes()
        while len(content) % PAGE == 0:  # some room must be left in the last page
            content += content.splitlines(keepends=True)[-1]
        target.write_bytes(content)
        fill(mnt)
        room = PAGE - len(content) % PAGE
        record = len(content.splitlines()[-1]) + 1
        assert 0 < room < record
        proc = run(*SMALL, "f", "--label", label, option, str(target), cwd=tmp_path)
        after = target.read_bytes()
    assert after == content  # what was there, and no part of a record
    _records_parse(option, after.decode())
    assert proc.returncode == 1, proc.stderr
    assert error_lines(proc.stderr) == [
        f"Error: {option}: {target}: ENOSPC (No space left on device)"
    ]
    assert "WRITE" in proc.stdout and "READ" in proc.stdout  # the benchmark went on


@pytest.mark.parametrize(
    ("option", "header"), [("--csvfile", RESULT_HEADER), ("--livecsv", LIVE_HEADER)]
)
def test_concurrent_runs_on_one_empty_csv_write_its_header_once(
    tmp_path: Path, option: str, header: list[str]
) -> None:
    """Runs that all find the CSV empty at once: one header, then every run's rows.

    The test holds a read lease on the empty file, so every run's open for writing waits
    until all of them are at that point; then the lease goes and they write at once. Without
    the lock each run had found the file empty and wrote a header.
    """
    rows = tmp_path / "rows.csv"
    rows.touch()
    runners = 3
    args = ("-w", "-b", "4k", "-s", "64k", "--limitwrite", "256k", "--liveint", "10")
    with _read_lease(rows):
        procs = [
            subprocess.Popen(
                [*AIOBENCH, *args, f"f{i}", "--nolive", option, str(rows)],
                cwd=tmp_path,
                env=env(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(runners)
        ]
        pids = [proc.pid for proc in procs]
        # Below the kernel's 45 s lease-break time. A run that is late (a very busy machine)
        # only makes the race less likely; what is asserted holds either way.
        with contextlib.suppress(AssertionError):
            wait_for(functools.partial(_all_wait_for_lease, pids), "every run at the lease", 40)
    errs = [proc.communicate(timeout=120)[1] for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * runners, errs
    lines = rows.read_text(encoding="utf-8").splitlines()
    assert lines[0] == ",".join(header)
    assert lines.count(lines[0]) == 1, f"the header {lines.count(lines[0])} times"
    table = list(csv.reader(lines))
    assert all(len(row) == len(header) for row in table)
    if option == "--csvfile":
        assert len(lines) == 1 + runners


@contextlib.contextmanager
def _read_lease(path: Path) -> Iterator[None]:
    """A read lease on ``path``: others' opens for writing wait until the block ends."""
    fd = os.open(path, os.O_RDONLY)
    previous = signal.signal(signal.SIGIO, lambda signum, frame: None)  # "give the lease up"
    try:
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
        yield
    finally:
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
        os.close(fd)
        signal.signal(signal.SIGIO, previous)


def _all_wait_for_lease(pids: list[int]) -> bool:
    """Whether every process waits in the kernel for a lease to be given up."""
    try:
        return all("lease" in Path(f"/proc/{pid}/wchan").read_text() for pid in pids)
    except OSError:
        return False


# ---------------------------------------------------------------------------------------
# --json failing at the end


@pytest.mark.root
def test_json_on_a_full_filesystem_is_an_error_and_keeps_the_old_file(tmp_path: Path) -> None:
    with mounted_tmpfs(tmp_path / "m", "size=64k") as mnt:
        out = mnt / "run.json"
        out.write_text("an earlier run\n", encoding="utf-8")
        fill(mnt)
        before = listing(mnt)
        proc = run(*SMALL, "f", "--json", str(out), cwd=tmp_path)
        assert listing(mnt) == before  # no temporary file left
        assert out.read_text(encoding="utf-8") == "an earlier run\n"
    assert proc.returncode == 1, proc.stderr
    assert error_lines(proc.stderr) == [f"Error: --json: {out}: ENOSPC (No space left on device)"]
    assert proc.stdout.startswith("OPERATION") and "READ" in proc.stdout  # the table first


def test_json_into_a_directory_removed_during_the_run_is_an_error(tmp_path: Path) -> None:
    outdir = tmp_path / "out"
    outdir.mkdir()
    out = outdir / "run.json"
    proc = subprocess.Popen(
        [*AIOBENCH, *SLOW, "--timelimit", "3", "f", "--json", str(out)],
        cwd=tmp_path,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: (tmp_path / "f").exists(), "the run to start")
        outdir.rmdir()
    finally:
        stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1, stderr
    assert error_lines(stderr) == [f"Error: --json: {out}: ENOENT (No such file or directory)"]
    assert stdout.startswith("OPERATION") and "WRITE" in stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


# ---------------------------------------------------------------------------------------
# a phase that did not complete says so in every record


def _status_row(status: str) -> str:
    return f"{'':<11} {'Status':<17}: {status}\n---\n"


@pytest.mark.root
def test_failed_phase_is_marked_in_every_result_file(
    small_tmpfs: Path, tmp_path: Path, validator: Draft202012Validator
) -> None:
    target = small_tmpfs / "f"
    files = ("--jsonfile", "r.jsonl", "--csvfile", "r.csv", "--resfile", "r.txt")
    proc = run(
        "-w", "-r", "-b", "64k", "-s", "4m", "--force", str(target), "--nolive", *files,
        "--json", "run.json", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    doc = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    error = doc["error"]
    assert error["errno_name"] == "ENOSPC"
    (phase,) = doc["phases"]  # the run stopped after the failed WRITE
    assert (phase["phase"], phase["status"], phase["error"]) == ("WRITE", "error", error)
    assert errors_of(validator, doc) == []
    (record,) = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert (record["phase_type"], record["last_done"]["bytes"]) == (
        "WRITE",
        str(phase["last_done"]["bytes"]),
    )
    with (tmp_path / "r.csv").open(newline="") as handle:
        (row,) = list(csv.DictReader(handle))
    assert (row["operation"], row["status"], row["error"]) == ("WRITE", "error", error["message"])
    resfile = (tmp_path / "r.txt").read_text(encoding="utf-8")
    assert resfile.endswith(_status_row(f"error: {error['message']}"))
    # Read back: the saved run knows which phase failed.
    assert [p.status for p in load_run(str(tmp_path / "run.json")).phases] == ["error"]
    # The schema holds status and error together.
    for key, value in (("status", "ok"), ("error", None), ("status", "interrupted")):
        assert errors_of(validator, {**doc, "phases": [{**phase, key: value}]}) != [], key
    without = {k: v for k, v in phase.items() if k != "status"}
    assert errors_of(validator, {**doc, "phases": [without]}) != []


@pytest.mark.parametrize("how", ["time_limited", "interrupted"])
def test_phase_stopped_early_is_marked(
    tmp_path: Path, validator: Draft202012Validator, how: str
) -> None:
    files = ("--jsonfile", "r.jsonl", "--csvfile", "r.csv", "--resfile", "r.txt")
    args = [*AIOBENCH, *SLOW, "f", *files, "--json", "run.json"]
    if how == "time_limited":
        args += ["--timelimit", "1"]
    proc = subprocess.Popen(
        args, cwd=tmp_path, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    if how == "interrupted":
        # Once data is written the phase runs, and its signal handling with it.
        wait_for(lambda: (tmp_path / "f").exists() and (tmp_path / "f").stat().st_size > 0, "I/O")
        proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == (0 if how == "time_limited" else 130), stderr
    doc = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    (phase,) = doc["phases"]
    assert (phase["status"], phase["error"], phase[how]) == (how, None, True)
    assert errors_of(validator, doc) == []
    (record,) = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert record["phase_type"] == "WRITE"  # (elbencho's record has no status: --json has)
    with (tmp_path / "r.csv").open(newline="") as handle:
        (row,) = list(csv.DictReader(handle))
    assert (row["status"], row["error"]) == (how, "")
    assert (tmp_path / "r.txt").read_text(encoding="utf-8").endswith(_status_row(how))


def test_csv_of_an_earlier_aiobench_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An aiobench CSV from before the status columns: mixing would shift them."""
    monkeypatch.chdir(tmp_path)
    old = tmp_path / "old.csv"
    old.write_text(",".join(RESULT_HEADER[:-2]) + "\n", encoding="utf-8")
    code, out, err = call_main(capsys, "-w", "-s", "64k", "f", "--csvfile", "old.csv")
    assert (code, out) == (2, "")
    assert err.startswith("Error: --csvfile: old.csv was written by an earlier aiobench")
    assert old.read_text(encoding="utf-8") == ",".join(RESULT_HEADER[:-2]) + "\n"
    assert not (tmp_path / "f").exists()


# ---------------------------------------------------------------------------------------
# stdout and stderr closed or full


def _csv_operations(path: Path) -> list[str]:
    with path.open(newline="") as handle:
        return [row["operation"] for row in csv.DictReader(handle)]


def test_stdout_full_is_an_error_and_the_run_goes_on(tmp_path: Path) -> None:
    with open("/dev/full", "w") as full:
        proc = run(*SMALL, "f", "--csvfile", "r.csv", cwd=tmp_path, stdout=full)
    assert proc.returncode == 1
    assert error_lines(proc.stderr) == [
        "Error: stdout: ENOSPC (No space left on device): the result table could not be written"
    ]
    assert _csv_operations(tmp_path / "r.csv") == ["WRITE", "READ"]


def test_stdout_closed_is_an_error_and_no_file_gets_the_table(tmp_path: Path) -> None:
    proc = run(*SMALL, "f", "--csvfile", "r.csv", cwd=tmp_path, shell_redirect=">&-")
    assert proc.returncode == 1
    assert error_lines(proc.stderr) == [
        "Error: stdout: EBADF (closed when aiobench started): the result table could not be written"
    ]
    assert _csv_operations(tmp_path / "r.csv") == ["WRITE", "READ"]
    assert all(b"OPERATION" not in p.read_bytes() for p in tmp_path.iterdir())


def test_json_to_a_closed_stdout_is_a_usage_error(tmp_path: Path) -> None:
    proc = run(*SMALL, "f", "--json", "/dev/stdout", cwd=tmp_path, shell_redirect=">&-")
    assert proc.returncode == 2
    assert error_lines(proc.stderr) == [
        "Error: --json: /dev/stdout: descriptor 1 is not open for writing"
    ]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("redirect", ["2>&-", "2>/dev/full"])
def test_unusable_stderr_leaves_json_on_stdout_pure(tmp_path: Path, redirect: str) -> None:
    """With --json - the table and a note go to stderr: lost, never onto stdout."""
    args = ("-w", "-t", "2", "-b", "4k", "-s", "64k", "f", "--json", "-")
    proc = run(*args, cwd=tmp_path, shell_redirect=redirect)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [p["phase"] for p in doc["phases"]] == ["WRITE"]


@pytest.mark.parametrize("redirect", ["2>&-", "2>/dev/full"])
def test_unusable_stderr_keeps_the_exit_code_of_a_usage_error(
    tmp_path: Path, redirect: str
) -> None:
    proc = run("-w", "-s", "64k", "nodir/f", cwd=tmp_path, shell_redirect=redirect)
    assert (proc.returncode, proc.stdout) == (2, "")  # the message is lost, not moved


@pytest.mark.root
@pytest.mark.parametrize("redirect", ["2>&-", "2>/dev/full"])
def test_unusable_stderr_keeps_an_io_error_exit_code(
    small_tmpfs: Path, tmp_path: Path, redirect: str
) -> None:
    args = ("-w", "-b", "64k", "-s", "4m", "--force", str(small_tmpfs / "f"), "--nolive")
    proc = run(*args, "--json", "run.json", cwd=tmp_path, shell_redirect=redirect)
    assert proc.returncode == 1
    assert proc.stdout.startswith("OPERATION") and "Error" not in proc.stdout
    doc = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert doc["error"]["errno_name"] == "ENOSPC"


def test_json_dash_to_a_full_stdout_is_an_error(tmp_path: Path) -> None:
    with open("/dev/full", "w") as full:
        proc = run(*SMALL, "f", "--json", "-", cwd=tmp_path, stdout=full)
    assert proc.returncode == 1
    assert error_lines(proc.stderr) == ["Error: --json -: stdout: ENOSPC (No space left on device)"]
    assert "WRITE" in proc.stderr  # the table went to stderr, as with any --json -


def test_json_dash_to_a_pipe_closed_early_is_an_error_without_noise(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will ever read
    try:
        proc = run(*SMALL, "f", "--json", "-", cwd=tmp_path, stdout=write_end)
    finally:
        os.close(write_end)
    assert proc.returncode == 1
    assert error_lines(proc.stderr) == ["Error: --json -: stdout: EPIPE (Broken pipe)"]


@pytest.mark.parametrize("command", ["show", "compare"])
@pytest.mark.parametrize("redirect", [">/dev/full", ">&-"])
def test_saved_run_tools_with_unusable_stdout_exit_1(
    tmp_path: Path, command: str, redirect: str
) -> None:
    """show/compare print nothing else than their output: losing it is an error, not 0."""
    saved = str(DATA / "example-result.json")
    args = (command, saved) if command == "show" else (command, saved, saved)
    proc = run(*args, cwd=tmp_path, shell_redirect=redirect)
    assert proc.returncode == 1
    [line] = error_lines(proc.stderr)
    assert line.startswith("Error: stdout: E") and "the output could not be written" in line


@pytest.mark.parametrize("args", [("--version",), ("--help",), ("check", "--help")])
@pytest.mark.parametrize("redirect", [">/dev/full", ">&-"])
def test_version_and_help_into_unusable_stdout_exit_1(
    tmp_path: Path, args: tuple[str, ...], redirect: str
) -> None:
    """Their text is all they print: a full or closed stdout is an error (exit 1, one line),
    as for show/compare; into a pipe whose reader left, it is not (``| head``)."""
    proc = run(*args, cwd=tmp_path, shell_redirect=redirect)
    assert proc.returncode == 1, proc.stderr
    [line] = error_lines(proc.stderr)
    assert line.startswith("Error: stdout: E") and "the output could not be written" in line
    read_end, write_end = os.pipe()
    os.close(read_end)  # (a reader that went away: EPIPE, not an error)
    try:
        fine = run(*args, cwd=tmp_path, stdout=write_end)
    finally:
        os.close(write_end)
    assert fine.returncode == 0 and error_lines(fine.stderr) == []
