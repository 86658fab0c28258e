"""Dir mode under attack and faults: planted symlinks, a full or read-only filesystem, no access.

Real parts throughout: real ``python -m aiobench`` processes, real files and symlinks, a
1 MiB tmpfs that fills up, tmpfs mounts remounted read-only, and the CLI run as an
unprivileged user. What must hold: nothing outside PATH is written or deleted, and every
fault ends in one ``Error:`` line (no traceback), the results measured so far, and the
documented exit code.
"""

from __future__ import annotations

import errno
import gc
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from aiobench.config import BenchConfig
from aiobench.engines import registry
from aiobench.engines.base import Engine, IoOptions, Job
from aiobench.engines.buffers import PoolSource, SlotBuffer
from aiobench.kinds import MKDIRS, READ, RMDIRS, RMFILES, STAT, WRITE, PhaseKind
from aiobench.plan.dirmode import DirLayout, EntryRun
from aiobench.plan.targets import DIR, Resolved
from aiobench.run.runner import run_benchmark
from tests.helpers import (
    RunCli,
    errors_of,
    fd_targets,
    main_as_nobody,
    make_cfg,
    mounted_tmpfs,
    run_tool,
)

SYMLINK = "is a symbolic link; aiobench never follows symlinks below PATH"
VICTIM = b"precious data outside PATH\n"

Doc = dict[str, Any]


# ---------------------------------------------------------------------------------------
# helpers


def errors(proc: subprocess.CompletedProcess[str]) -> list[str]:
    assert "Traceback" not in proc.stderr, proc.stderr
    return [line for line in proc.stderr.splitlines() if line.startswith("Error:")]


def one_error(proc: subprocess.CompletedProcess[str], code: int) -> str:
    """The run's only ``Error:`` line, after checking its exit code."""
    assert proc.returncode == code, (proc.stdout, proc.stderr)
    lines = errors(proc)
    assert len(lines) == 1, proc.stderr
    return lines[0]


def blocks(stdout: str) -> dict[str, list[str]]:
    """Phase name -> its rows in the table."""
    out: dict[str, list[str]] = {}
    rows: list[str] = []
    for line in stdout.splitlines():
        if line[:1].isalpha() and not line.startswith("OPERATION"):
            rows = out.setdefault(line.split()[0], [])
        if line[:1].isalpha() or line.startswith(" "):
            rows.append(line)
    return out


def row_last(rows: list[str], name: str) -> str:
    (line,) = [row for row in rows if f" {name} " in row]
    return line.split()[-1]


def read_doc(path: Path, validator: Draft202012Validator) -> Doc:
    doc: Doc = json.loads(path.read_text(encoding="utf-8"))
    assert errors_of(validator, doc) == []
    return doc


def phases_of(doc: Doc) -> dict[str, Doc]:
    return {p["phase"]: p for p in doc["phases"]}


def snapshot(root: Path) -> dict[str, bytes | str | None]:
    """Every entry below ``root`` without following links: file contents, link targets, None
    for dirs."""
    out: dict[str, bytes | str | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = "-> " + os.readlink(path)
            elif path.is_dir():
                out[rel] = None
            else:
                out[rel] = path.read_bytes()
    return out


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A tree outside PATH shaped like a layout dir: ``victim/d0/r0-f0..2`` with known data."""
    root = tmp_path / "victim"
    (root / "d0").mkdir(parents=True)
    for j in range(3):
        (root / "d0" / f"r0-f{j}").write_bytes(VICTIM + bytes([j]))
    return root


def victim_intact(victim: Path) -> None:
    assert snapshot(victim) == {
        "d0": None,
        **{f"d0/r0-f{j}": VICTIM + bytes([j]) for j in range(3)},
    }


def dir_cfg(path: Path, **over: Any) -> BenchConfig:
    args: dict[str, Any] = dict(write=False, block="4k", size="4k", dirs=1, files=3)
    return make_cfg([str(path)], **(args | over))


def run_past_setup(path: Path, **over: Any) -> Doc:
    """A run whose tree changed after the setup checks looked at it: the phases alone stand
    between a symlink planted then and the data it points to. Returns the error."""
    cfg = dir_cfg(path, **over)
    layout = DirLayout(
        num_paths=1,
        threads=1,
        dirs=cfg.num_dirs,
        files=cfg.num_files,
        file_size=cfg.size_bytes,
        block_size=cfg.block_size,
        sharing=False,
    )
    result = run_benchmark(cfg, Resolved(DIR, layout, ()), registry.make(cfg.ioengine))
    assert result.error is not None
    error: Doc = result.error
    return error


# ---------------------------------------------------------------------------------------
# 1. symlinks below PATH


def test_planted_rank_dir_symlink_from_the_issue(
    run_cli: RunCli, tmp_path: Path, victim: Path
) -> None:
    """``PATH/r0 -> ../victim``: -d -w -F -D used to overwrite, then delete victim/d0/r0-f0."""
    path = tmp_path / "p"
    path.mkdir()
    (path / "r0").symlink_to("../victim")
    proc = run_cli("-d", "-w", "-F", "-D", "-n", "1", "-N", "1", "-s", "4k", str(path))
    assert one_error(proc, 2) == f"Error: {path / 'r0'}: {SYMLINK}"
    victim_intact(victim)
    assert snapshot(path) == {"r0": "-> ../victim"}


@pytest.fixture
def layout_root(tmp_path: Path, run_cli: RunCli) -> Path:
    """PATH holding a written 1-thread layout: r0/d0/r0-f0..2, 4 KiB each."""
    path = tmp_path / "p"
    path.mkdir()
    proc = run_cli("-d", "-w", "-n", "1", "-N", "3", "-s", "4k", str(path))
    assert proc.returncode == 0, proc.stderr
    return path


PHASES = [
    pytest.param(("-w", "-s", "4k"), id="write"),
    pytest.param(("-r", "-s", "4k"), id="read"),
    pytest.param(("--stat",), id="stat"),
    pytest.param(("-F",), id="delfiles"),
]


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("where", ["r0/d0", "r0/d0/r0-f0"])
def test_symlink_the_setup_sees_is_a_usage_error(
    run_cli: RunCli, layout_root: Path, victim: Path, phase: tuple[str, ...], where: str
) -> None:
    """A link at a dir of the layout, or at a thread's first file: refused before the run."""
    link = layout_root / where
    if where == "r0/d0":
        for name in os.listdir(link):
            (link / name).unlink()
        link.rmdir()
        link.symlink_to(victim / "d0")
    else:
        link.unlink()
        link.symlink_to(victim / "d0" / "r0-f0")
    before = snapshot(layout_root)
    proc = run_cli(*phase, "-n", "1", "-N", "3", str(layout_root))
    assert one_error(proc, 2) == f"Error: {link}: {SYMLINK}"
    victim_intact(victim)
    assert snapshot(layout_root) == before


@pytest.mark.parametrize("phase", PHASES)
def test_symlink_at_a_middle_file_fails_at_run_time(
    run_cli: RunCli,
    tmp_path: Path,
    layout_root: Path,
    victim: Path,
    validator: Draft202012Validator,
    phase: tuple[str, ...],
) -> None:
    """Setup looks at each thread's first and last file only; the engine refuses the rest.

    -F too: the link is no file of the layout, so it is neither removed nor counted (each
    name is looked at before its unlink, which would remove the link itself).
    """
    link = layout_root / "r0" / "d0" / "r0-f1"
    link.unlink()
    link.symlink_to(victim / "d0" / "r0-f1")
    out = tmp_path / "out.json"
    proc = run_cli(*phase, "-n", "1", "-N", "3", str(layout_root), "--json", str(out))
    victim_intact(victim)
    doc = read_doc(out, validator)
    message = f"{link}: ELOOP ({SYMLINK})"
    assert one_error(proc, 1) == f"Error: {message}"
    assert doc["error"] == {
        "path": str(link),
        "offset": None,
        "errno": errno.ELOOP,
        "errno_name": "ELOOP",
        "message": message,
    }
    ((name, phase_doc),) = phases_of(doc).items()
    assert phase_doc["last_done"]["entries"] == 1  # r0-f0, before the link
    assert row_last(blocks(proc.stdout)[name], "Files total") == "1"
    assert os.readlink(link) == str(victim / "d0" / "r0-f1")


def test_symlink_at_a_dir_mkdirs_reaches_fails_at_run_time(
    run_cli: RunCli, tmp_path: Path, victim: Path, validator: Draft202012Validator
) -> None:
    """With -d setup looks at each thread's first and last dir; mkdir finds a link at d1
    (EEXIST) and refuses to reuse it as a dir, so no file goes through it."""
    path = tmp_path / "p"
    (path / "r0").mkdir(parents=True)
    (path / "r0" / "d1").symlink_to(victim / "d0")
    out = tmp_path / "out.json"
    proc = run_cli("-d", "-w", "-n", "3", "-N", "3", "-s", "4k", str(path), "--json", str(out))
    link = path / "r0" / "d1"
    assert one_error(proc, 1) == f"Error: {link}: ELOOP ({SYMLINK})"
    victim_intact(victim)
    doc = read_doc(out, validator)
    assert doc["error"]["path"] == str(link) and doc["error"]["offset"] is None
    assert phases_of(doc)["MKDIRS"]["last_done"]["entries"] == 1  # d0 only
    assert "WRITE" not in phases_of(doc)


@pytest.mark.parametrize(
    ("over", "where"),
    [
        pytest.param({"mkdirs": True}, "r0", id="mkdirs-rank-dir"),
        pytest.param({"write": True}, "r0", id="write-rank-dir"),
        pytest.param({"write": True}, "r0/d0", id="write-dir"),
        pytest.param({"read": True}, "r0/d0", id="read-dir"),
        pytest.param({"stat": True}, "r0", id="stat-rank-dir"),
        pytest.param({"delfiles": True}, "r0/d0", id="delfiles-dir"),
        pytest.param({"deldirs": True}, "r0/d0", id="deldirs-dir"),
        pytest.param({"deldirs": True}, "r0", id="deldirs-rank-dir"),
    ],
)
def test_symlink_planted_after_setup_is_never_followed(
    tmp_path: Path, victim: Path, over: dict[str, bool], where: str
) -> None:
    """The phases' own no-follow walk, with setup's look behind them: an error naming the
    link (ELOOP, no offset), and the files it points to untouched."""
    path = tmp_path / "p"
    (path / "r0").mkdir(parents=True)
    link = path / where
    if link.exists():
        link.rmdir()
    link.symlink_to(victim if where == "r0" else victim / "d0")
    error = run_past_setup(path, **over)
    assert error == {
        "path": str(link),
        "offset": None,
        "errno": errno.ELOOP,
        "errno_name": "ELOOP",
        "message": f"{link}: ELOOP ({SYMLINK})",
    }
    victim_intact(victim)
    assert link.is_symlink()


def test_path_itself_may_be_a_symlink(run_cli: RunCli, tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    args = ("-n", "2", "-N", "2", "-s", "4k", str(tmp_path / "link"))
    assert run_cli("-d", "-w", "--stat", "-r", *args).returncode == 0
    assert sorted(snapshot(real)) == [
        "r0",
        "r0/d0",
        "r0/d0/r0-f0",
        "r0/d0/r0-f1",
        "r0/d1",
        "r0/d1/r0-f0",
        "r0/d1/r0-f1",
    ]
    assert run_cli("-F", "-D", *args).returncode == 0
    assert snapshot(real) == {}


def test_a_file_where_a_dir_should_be_is_not_reused(tmp_path: Path) -> None:
    """mkdir's EEXIST means "reuse the dir" only for a real dir."""
    path = tmp_path / "p"
    (path / "r0").mkdir(parents=True)
    (path / "r0" / "d0").write_bytes(b"mine")
    error = run_past_setup(path, mkdirs=True)
    assert error["path"] == str(path / "r0" / "d0")
    assert error["errno_name"] == "EEXIST" and error["offset"] is None
    assert (path / "r0" / "d0").read_bytes() == b"mine"


# -- the engine alone: hand-made runs with the names as the layout makes them --------------


def engine_run(engine: Engine, kind: PhaseKind, root: Path, names: list[str], size: int = 0) -> Any:
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    buf = None
    if size:
        buf = SlotBuffer(4096, for_write=kind == WRITE, source=PoolSource([1]), stamp_base=1)
    try:
        run = EntryRun(0, names, size=size, block=4096)
        return engine.run(Job(kind, fd_targets([str(root)], [fd]), run, buf, 2**62))
    finally:
        os.close(fd)
        if buf is not None:
            buf.close()


@pytest.mark.parametrize("kind", [WRITE, READ, STAT, RMFILES, MKDIRS, RMDIRS])
def test_engine_refuses_a_symlinked_parent_dir(
    tmp_path: Path, victim: Path, kind: PhaseKind, io_engine: Engine
) -> None:
    root = tmp_path / "p"
    (root / "r0").mkdir(parents=True)
    (root / "r0" / "d0").symlink_to(victim / "d0")
    names = ["r0/d0/r0-f0", "r0/d0/r0-f1"]
    if kind in (MKDIRS, RMDIRS):
        (root / "r1").symlink_to(victim)
        names = ["r1/d0"]
    fds_before = set(os.listdir("/proc/self/fd"))
    batch = engine_run(io_engine, kind, root, names, size=4096 if kind in (READ, WRITE) else 0)
    assert set(os.listdir("/proc/self/fd")) == fds_before  # the walk closed what it opened
    assert batch.error is not None
    failed = root / ("r1" if kind in (MKDIRS, RMDIRS) else "r0/d0")
    assert (batch.error.path, batch.error.errno) == (str(failed), errno.ELOOP)
    assert batch.error.offset is None and str(batch.error) == f"{failed}: ELOOP ({SYMLINK})"
    assert len(batch.ends) == len(batch.starts) == 0
    victim_intact(victim)


@pytest.mark.parametrize("engine", ["python", "native"])
def test_delfiles_leaves_a_dangling_symlink_at_a_layout_name(
    run_cli: RunCli,
    tmp_path: Path,
    layout_root: Path,
    validator: Draft202012Validator,
    engine: str,
) -> None:
    """The issue's case: a link to nothing at r0-f1 was unlinked, counted, and exit 0."""
    link = layout_root / "r0" / "d0" / "r0-f1"
    link.unlink()
    link.symlink_to(tmp_path / "nothing-here")
    out = tmp_path / "out.json"
    proc = run_cli(
        "-F", "-n", "1", "-N", "3", str(layout_root), "--ioengine", engine, "--json", str(out)
    )
    assert one_error(proc, 1) == f"Error: {link}: ELOOP ({SYMLINK})"
    doc = read_doc(out, validator)
    assert doc["error"]["path"] == str(link) and doc["error"]["errno_name"] == "ELOOP"
    assert phases_of(doc)["RMFILES"]["last_done"]["entries"] == 1  # r0-f0 only
    assert os.readlink(link) == str(tmp_path / "nothing-here")
    assert sorted(os.listdir(link.parent)) == ["r0-f1", "r0-f2"]


@pytest.mark.parametrize("kind", [WRITE, READ, STAT, RMFILES, RMDIRS])
def test_engine_refuses_a_symlinked_entry(
    tmp_path: Path, victim: Path, kind: PhaseKind, io_engine: Engine
) -> None:
    root = tmp_path / "p"
    (root / "r0" / "d0").mkdir(parents=True)
    (root / "r0" / "d0" / "r0-f0").write_bytes(bytes(4096))
    if kind == RMDIRS:
        (root / "r0" / "e0").mkdir()
        (root / "r0" / "d1").symlink_to(victim / "d0")
        names, link = ["r0/e0", "r0/d1"], root / "r0" / "d1"
    else:
        (root / "r0" / "d0" / "r0-f1").symlink_to(victim / "d0" / "r0-f1")
        names, link = ["r0/d0/r0-f0", "r0/d0/r0-f1"], root / "r0" / "d0" / "r0-f1"
    fds_before = set(os.listdir("/proc/self/fd"))
    batch = engine_run(io_engine, kind, root, names, size=4096 if kind in (READ, WRITE) else 0)
    assert set(os.listdir("/proc/self/fd")) == fds_before
    assert batch.error is not None
    assert (batch.error.path, batch.error.errno) == (str(link), errno.ELOOP)
    assert batch.error.offset is None and SYMLINK in str(batch.error)
    assert len(batch.ends) == len(batch.starts) == 1
    victim_intact(victim)
    assert link.is_symlink()


def test_engine_walks_many_dirs_and_closes_what_it_opened(
    tmp_path: Path, io_engine: Engine
) -> None:
    root = tmp_path / "p"
    names = [f"r{r}/d{i}/r{r}-f{j}" for r in range(2) for i in range(3) for j in range(2)]
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
    fds_before = set(os.listdir("/proc/self/fd"))
    for kind in (WRITE, STAT, READ, RMFILES):
        batch = engine_run(io_engine, kind, root, names, size=4096 if kind in (READ, WRITE) else 0)
        assert batch.error is None and len(batch.ends) == len(names)
        if kind == WRITE:
            assert all((root / name).stat().st_size == 4096 for name in names)
    assert sorted(p.name for p in (root / "r1" / "d2").iterdir()) == []
    assert set(os.listdir("/proc/self/fd")) == fds_before


@pytest.mark.parametrize("kind", [RMFILES, STAT, RMDIRS])
def test_nodelerr_counts_the_entries_of_a_missing_parent_as_done(
    tmp_path: Path, kind: PhaseKind, io_engine: Engine
) -> None:
    """--nodelerr: a parent dir that is gone took its entries with it (as unlink of each
    would have said ENOENT before the walk); without it the walk names the missing dir."""
    root = tmp_path / "p"
    (root / "r0" / "d0").mkdir(parents=True)
    (root / "r0" / "d0" / "r0-f0").write_bytes(b"")
    names = ["r0/d0/r0-f0", "r0/d1/r0-f0", "r0/d1/r0-f1"]
    if kind == RMDIRS:
        (root / "r0" / "d0" / "r0-f0").unlink()
        names = ["r0/d0", "r9/d0"]
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        run = EntryRun(0, names, size=0, block=4096)
        strict = io_engine.run(Job(kind, fd_targets([str(root)], [fd]), run, None, 2**62))
        assert strict.error is not None and strict.error.errno == errno.ENOENT
        missing = root / ("r9" if kind == RMDIRS else "r0/d1")
        assert (strict.error.path, strict.error.offset) == (str(missing), None)
        assert len(strict.ends) == 1
        if kind == RMDIRS:  # the first entry is gone now: make it again for the second run
            (root / names[0]).mkdir()
        elif kind == RMFILES:
            (root / names[0]).write_bytes(b"")
        options = IoOptions(ignore_missing=True)
        lenient = io_engine.run(
            Job(kind, fd_targets([str(root)], [fd]), run, None, 2**62, options=options)
        )
        assert lenient.error is None and len(lenient.ends) == len(names)
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------------------
# 2. a write error in dir mode with data: ENOSPC on a 1 MiB tmpfs


@pytest.mark.root
@pytest.mark.parametrize(
    ("size", "block"), [pytest.param("64k", "64k", id="one-block"), ("48k", "16k")]
)
def test_enospc_with_data_reports_cleanly(
    run_cli: RunCli,
    tmp_path: Path,
    small_tmpfs: Path,
    validator: Draft202012Validator,
    size: str,
    block: str,
) -> None:
    """Used to end in ``BufferError: cannot close exported pointers exist``: no Error: line,
    no JSON, the WRITE results lost."""
    out = tmp_path / "out.json"
    # --force: past the free-space check, to the ENOSPC this test is about
    proc = run_cli("-d", "-w", "-n", "1", "-N", "64", "-s", size, "-b", block, "--force",
                   str(small_tmpfs), "--json", str(out))  # fmt: skip
    line = one_error(proc, 1)
    doc = read_doc(out, validator)
    phases = phases_of(doc)
    assert list(phases) == ["MKDIRS", "WRITE"]
    done = phases["WRITE"]["last_done"]
    files = done["entries"]
    assert 0 < files < 64
    blocks_per_file = int(size[:-1]) // int(block[:-1])
    in_file = done["ops"] - files * blocks_per_file  # blocks of the file that failed
    assert 0 <= in_file < blocks_per_file
    assert done["bytes"] == done["ops"] * int(block[:-1]) * 1024
    failed = small_tmpfs / "r0" / "d0" / f"r0-f{files}"
    offset = in_file * int(block[:-1]) * 1024
    message = f"{failed}: offset {offset}: ENOSPC ({os.strerror(errno.ENOSPC)})"
    assert doc["error"] == {
        "path": str(failed),
        "offset": offset,  # inside the file: the block write that failed
        "errno": errno.ENOSPC,
        "errno_name": "ENOSPC",
        "message": message,
    }
    assert line == f"Error: {message}"
    table = blocks(proc.stdout)
    assert list(table) == ["MKDIRS", "WRITE"]
    assert row_last(table["WRITE"], "Files total") == str(files)


def test_read_error_with_data_reports_cleanly(
    run_cli: RunCli, tmp_path: Path, validator: Draft202012Validator
) -> None:
    """A short read inside a file: the same clean report, with the offset in that file.

    (60 KiB files: the last block is short, so the read loop holds a view of its own.)
    """
    path = tmp_path / "p"
    path.mkdir()
    args = ("-n", "1", "-N", "4", "-s", "60k", "-b", "16k", str(path))
    assert run_cli("-d", "-w", *args).returncode == 0
    short = path / "r0" / "d0" / "r0-f2"
    os.truncate(short, 40 * 1024)  # the third block comes back 8 KiB short
    out = tmp_path / "out.json"
    proc = run_cli("-r", *args, "--json", str(out))
    message = f"{short}: offset 32768: EIO (short transfer: 8192 of 16384 bytes)"
    assert one_error(proc, 1) == f"Error: {message}"
    doc = read_doc(out, validator)
    assert doc["error"]["message"] == message and doc["error"]["offset"] == 32768
    read = phases_of(doc)["READ"]["last_done"]
    assert (read["entries"], read["ops"]) == (2, 2 * 4 + 2)
    assert row_last(blocks(proc.stdout)["READ"], "Files total") == "2"


@pytest.mark.root
def test_a_failed_file_write_keeps_no_view_of_the_slot_buffer(
    small_tmpfs: Path, io_engine: Engine
) -> None:
    """The cause, not only the symptom: after a failed run every view of the slot's memory
    is gone at once (without a GC pass), so the buffer really unmaps."""
    root = small_tmpfs
    (root / "r0" / "d0").mkdir(parents=True)
    names = [f"r0/d0/r0-f{j}" for j in range(64)]
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    buf = SlotBuffer(16384, for_write=True, source=PoolSource([1]), stamp_base=1)
    gc.disable()
    try:
        run = EntryRun(0, names, size=48 * 1024, block=16384)
        job = Job(WRITE, fd_targets([str(root)], [fd]), run, buf, 2**62, options=IoOptions())
        batch = io_engine.run(job)
        assert batch.error is not None and batch.error.errno == errno.ENOSPC
        buf.close()
        assert buf.read_mem.closed and buf.mem.closed
    finally:
        gc.enable()
        os.close(fd)


# ---------------------------------------------------------------------------------------
# 3. a PATH the run cannot change: usage error; run-time entry errors carry no offset


@pytest.fixture
def readonly_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A small tmpfs with a written layout (r0/d0/r0-f0..1), remounted read-only."""
    with mounted_tmpfs(tmp_path / "ro", "size=1m") as mnt:
        (mnt / "r0" / "d0").mkdir(parents=True)
        for j in range(2):
            (mnt / "r0" / "d0" / f"r0-f{j}").write_bytes(bytes(4096))
        remounted = run_tool("mount", "-o", "remount,ro", str(mnt))
        if remounted.returncode:
            pytest.skip(f"cannot remount read-only: {remounted.stderr.strip()}")
        yield mnt


CHANGES = [
    pytest.param(("-d", "-n", "1"), id="mkdirs"),
    pytest.param(("-D", "-n", "1"), id="deldirs"),
    pytest.param(("-w", "-n", "1", "-N", "2", "-s", "4k"), id="write-into-dirs"),
    pytest.param(("-w", "-n", "0", "-N", "2", "-s", "4k"), id="write-into-path"),
    pytest.param(("-F", "-n", "1", "-N", "2"), id="delfiles"),
]


@pytest.mark.root
@pytest.mark.parametrize("args", CHANGES)
def test_read_only_path_is_a_usage_error(
    run_cli: RunCli, readonly_tmpfs: Path, args: tuple[str, ...]
) -> None:
    before = snapshot(readonly_tmpfs)
    proc = run_cli(*args, str(readonly_tmpfs))
    assert one_error(proc, 2) == (
        f"Error: {readonly_tmpfs}: cannot create or delete entries in the directory: "
        f"{os.strerror(errno.EROFS)}"
    )
    assert proc.stdout == ""
    assert snapshot(readonly_tmpfs) == before


@pytest.mark.root
def test_read_only_path_still_serves_reads(run_cli: RunCli, readonly_tmpfs: Path) -> None:
    proc = run_cli("--stat", "-r", "-n", "1", "-N", "2", "-s", "4k", str(readonly_tmpfs))
    assert proc.returncode == 0, proc.stderr
    assert list(blocks(proc.stdout)) == ["STAT", "READ"]


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A root-owned tmpfs of mode 755 holding r0/d0, that an unprivileged user can reach
    but not change (outside tmp_path, whose parents are mode 700)."""
    mnt = Path("/tmp") / f"aiobench-test-{os.getpid()}-nobody"
    try:
        with mounted_tmpfs(mnt, "size=1m,mode=0755") as path:
            (path / "r0" / "d0").mkdir(parents=True, mode=0o755)
            yield path
    finally:
        mnt.rmdir()


@pytest.mark.root
@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("-d", "-n", "1"), id="mkdirs"),
        pytest.param(("-w", "-n", "0", "-N", "2", "-s", "4k"), id="write-into-path"),
        pytest.param(("-D", "-n", "1"), id="deldirs"),
    ],
)
def test_path_without_write_permission_is_a_usage_error(
    shared_dir: Path, args: tuple[str, ...]
) -> None:
    before = snapshot(shared_dir)
    code, stderr = main_as_nobody(*args, str(shared_dir))
    assert (code, stderr) == (
        2,
        f"Error: {shared_dir}: cannot create or delete entries in the directory: "
        f"{os.strerror(errno.EACCES)}\n",
    )
    assert snapshot(shared_dir) == before


@pytest.mark.root
def test_read_only_dir_below_path_fails_mkdir_without_an_offset(
    run_cli: RunCli, tmp_path: Path, small_tmpfs: Path, validator: Draft202012Validator
) -> None:
    """PATH is writable, r0 a read-only mount: mkdir of r0/d0 fails at run time (EROFS),
    which used to be reported at "offset 0"."""
    out = tmp_path / "out.json"
    with mounted_tmpfs(small_tmpfs / "r0", "size=1m,ro"):
        proc = run_cli("-d", "-w", "-n", "1", "-N", "1", str(small_tmpfs), "--json", str(out))
    failed = small_tmpfs / "r0" / "d0"
    message = f"{failed}: EROFS ({os.strerror(errno.EROFS)})"
    assert one_error(proc, 1) == f"Error: {message}"
    doc = read_doc(out, validator)
    assert doc["error"] == {
        "path": str(failed),
        "offset": None,
        "errno": errno.EROFS,
        "errno_name": "EROFS",
        "message": message,
    }
    assert list(phases_of(doc)) == ["MKDIRS"]


@pytest.mark.root
def test_rank_dir_mkdir_failure_has_no_offset(
    run_cli: RunCli, tmp_path: Path, validator: Draft202012Validator
) -> None:
    """No inode left for PATH/r0 (made before MKDIRS starts): ENOSPC naming it, no offset."""
    with mounted_tmpfs(tmp_path / "mnt", "size=1m,nr_inodes=1") as mnt:
        out = tmp_path / "out.json"
        proc = run_cli("-d", "-n", "1", str(mnt), "--json", str(out))
        failed = mnt / "r0"
        message = f"{failed}: ENOSPC ({os.strerror(errno.ENOSPC)})"
        assert one_error(proc, 1) == f"Error: {message}"
        doc = read_doc(out, validator)
        assert doc["error"]["message"] == message and doc["error"]["offset"] is None
        assert snapshot(mnt) == {}
