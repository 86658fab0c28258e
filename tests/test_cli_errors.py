"""Usage errors through the real CLI: one ``Error:`` line, exit 2, nothing created or changed."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import RunCli, assert_usage_error, listing

MIB = 1 << 20
LOOP = "/dev/loop0"


def _is_blockdev(path: str) -> bool:
    try:
        return stat.S_ISBLK(os.stat(path).st_mode)
    except OSError:
        return False


CASES = [
    # sizes
    pytest.param(("-w", "-s", "4KB", "f"), ["-s/--size", "4KB"], id="size-4KB"),
    pytest.param(("-w", "-s", "1.5M", "f"), ["-s/--size", "1.5M"], id="size-fraction"),
    pytest.param(("-w", "-s", "-1", "f"), ["-s/--size", "-1"], id="size-negative"),
    pytest.param(("-w", "-s", "1m", "-b", "abc", "f"), ["-b/--block", "abc"], id="block-abc"),
    pytest.param(("-w", "-s", "1m", "-b", "0", "f"), ["-b/--block"], id="block-zero"),
    pytest.param(("-w", "-s", "1m", "f", "-b"), ["-b"], id="block-missing-value"),
    pytest.param(
        ("-r", "--rand", "--randamount", "3X", "exist"), ["--randamount", "3X"], id="randamount-3X"
    ),
    pytest.param(
        ("-w", "-s", "1m", "--rand", "--randamount", "0", "f"), ["--randamount"], id="randamount-0"
    ),
    # sizes as other tools spell them: the spelling meant (#27)
    pytest.param(("-w", "-s", "4KB", "f"), ["-s/--size", "4k or 4KiB"], id="size-4KB-hint"),
    pytest.param(("-w", "-s", "1.5g", "f"), ["-s/--size", "1536m or 1536MiB"], id="size-1.5g-hint"),
    pytest.param(("-w", "-s", "1m", "-b", "64kb", "f"), ["-b/--block", "64KiB"], id="block-kb"),
    # durations and numbers, each in one line naming the option (#27)
    pytest.param(
        ("-w", "-s", "1m", "--timelimit", "10x", "f"),
        ["Error: --timelimit: invalid duration '10x'", "10, 2.5, 90s, 1m, 1h"],
        id="timelimit-10x",
    ),
    pytest.param(
        ("-w", "-s", "1m", "--timelimit", "-1s", "f"),
        ["Error: --timelimit: must not be negative (got -1s)"],
        id="timelimit-negative-unit",
    ),
    pytest.param(
        ("-w", "-s", "1m", "--phasedelay", "2.5", "f"),
        ["Error: --phasedelay: whole seconds only (got 2.5)"],
        id="phasedelay-fraction",
    ),
    pytest.param(
        ("-w", "-s", "1m", "--liveint", "2s", "f"),
        ["Error: --liveint: want a whole number of milliseconds (got '2s')"],
        id="liveint-2s",
    ),
    pytest.param(
        ("-w", "-s", "1m", "--iodepth", "1.5", "f"),
        ["Error: --iodepth: want a whole number (got '1.5')"],
        id="iodepth-fraction",
    ),
    pytest.param(
        ("check", "--budget", "1.5", "d"),
        ["Error: --budget: whole seconds only (got 1.5)"],
        id="check-budget-fraction",
    ),
    pytest.param(
        ("compare", "--fail-below", "x", "a.json", "b.json"),
        ["Error: --fail-below: want a number (got 'x')"],
        id="compare-fail-below-x",
    ),
    # a subcommand mistyped
    pytest.param(
        ("chek", "d"),
        ["Error: no such path or subcommand 'chek'; did you mean 'check'?", "after --"],
        id="subcommand-typo",
    ),
    # counts and times
    pytest.param(("-w", "-s", "1m", "-t", "0", "f"), ["--threads"], id="threads-zero"),
    pytest.param(("-w", "-s", "1m", "-t", "abc", "f"), ["--threads"], id="threads-abc"),
    pytest.param(("-w", "-s", "1m", "--iodepth", "0", "f"), ["--iodepth"], id="iodepth-zero"),
    pytest.param(
        ("-w", "-s", "1m", "-t", "4096", "--iodepth", "2", "f"),
        ["--threads", "--iodepth"],
        id="too-many-slots",
    ),
    pytest.param(("-w", "-s", "1m", "--timelimit", "-1", "f"), ["--timelimit"], id="timelimit-neg"),
    pytest.param(("-w", "-s", "1m", "--seed", "-1", "f"), ["--seed"], id="seed-negative"),
    # what to do
    pytest.param(("-s", "1m", "f"), ["-w/--write", "-r/--read"], id="no-phase"),
    pytest.param(("-w", "-s", "1m"), ["PATH"], id="no-path"),
    pytest.param(("--bogus", "-w", "-s", "1m", "f"), ["--bogus"], id="unknown-option"),
    pytest.param(("-r", "--randamount", "1m", "exist"), ["--randamount", "--rand"], id="randamt"),
    pytest.param(("-r", "--norandalign", "exist"), ["--norandalign", "--rand"], id="norandalign"),
    pytest.param(
        ("-w", "-s", "1m", "--rand", "--norandalign", "--direct", "f"),
        ["--norandalign", "--direct"],
        id="norandalign-direct",
    ),
    # paths
    pytest.param(("-r", "missing"), ["missing", "does not exist"], id="read-missing"),
    pytest.param(("-r", "empty"), ["empty"], id="read-empty"),
    pytest.param(("-r", "-s", "2m", "exist"), ["exist", "-s/--size"], id="read-beyond-end"),
    pytest.param(("-w", "-s", "1m", "new", "d"), ["PATH", "d (dir)"], id="mixed-file-dir"),
    pytest.param(("-w", "-s", "1m", "new", "/dev/null"), ["/dev/null"], id="mixed-file-chardev"),
    pytest.param(
        ("-r", "exist", LOOP),
        ["PATH", f"{LOOP} (blockdev)"],
        id="mixed-file-blockdev",
        marks=pytest.mark.skipif(not _is_blockdev(LOOP), reason=f"{LOOP} is not a block device"),
    ),
    pytest.param(("-w", "-s", "1m", "d"), ["d", "directory"], id="directory"),
    pytest.param(("-r", "/dev/null"), ["/dev/null"], id="read-chardev"),
    pytest.param(("-w", "-s", "1m", "/dev/null"), ["/dev/null"], id="write-chardev"),
    pytest.param(("-w", "-s", "1m", "f", "f"), ["PATH", "f", "more than once"], id="duplicate"),
    pytest.param(
        ("-w", "-s", "1m", "f", "./f"), ["PATH", "./f", "more than once"], id="duplicate-spelling"
    ),
    pytest.param(("-w", "-s", "1m", "f[1-3]", "f2"), ["f2", "more than once"], id="dup-bracket"),
    pytest.param(("-w", "-s", "1m", "nodir/f"), ["nodir/f", "parent"], id="parent-missing"),
    pytest.param(
        ("-w", "-s", "1m", "a", "nodir/b"), ["nodir/b", "parent"], id="second-parent-missing"
    ),
    pytest.param(("-w", "-s", "1m", "f[3-1]"), ["f[3-1]", "backwards"], id="bracket-backwards"),
    pytest.param(("-w", "f"), ["-s/--size"], id="write-without-size"),
    # geometry
    pytest.param(("-w", "-s", "8k", "-b", "4k", "-t", "4", "f"), ["--threads"], id="few-blocks"),
    pytest.param(
        ("-w", "-s", "4k", "-b", "8k", "--direct", "f"), ["-b/--block", "--direct"], id="bs>size"
    ),
    pytest.param(
        ("-r", "-b", "4k", "--direct", "small"), ["-b/--block", "--direct"], id="bs>file-direct"
    ),
    pytest.param(
        ("-w", "-s", "1m", "-b", "1000", "--direct", "f"),
        ["-b/--block", "--direct", "1000"],
        id="direct-unaligned-block",
    ),
    # --json
    pytest.param(
        ("-w", "-s", "1m", "f", "--json", "nodir/out.json"), ["--json", "nodir"], id="json-nodir"
    ),
    pytest.param(
        ("-w", "-s", "1m", "-t", "2", "-b", "4k", "f", "--json", "nodir/out.json"),
        ["--json", "nodir"],
        id="json-nodir-after-notes",
    ),
    pytest.param(("-w", "-s", "1m", "f", "--json", "d"), ["--json", "d"], id="json-is-dir"),
    pytest.param(("-w", "-s", "1m", "f", "--json", ""), ["--json"], id="json-empty"),
]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A directory with an existing 1 MiB file, a small one, an empty one and a subdir."""
    (tmp_path / "exist").write_bytes(os.urandom(MIB))
    (tmp_path / "small").write_bytes(b"x" * 1000)
    (tmp_path / "empty").touch()
    (tmp_path / "d").mkdir()
    return tmp_path


@pytest.mark.parametrize(("args", "needles"), CASES)
def test_usage_error(
    run_cli: RunCli, workdir: Path, args: tuple[str, ...], needles: list[str]
) -> None:
    before = listing(workdir)
    proc = run_cli(*args, cwd=str(workdir))
    assert_usage_error(proc, needles)
    assert listing(workdir) == before


def test_a_first_word_that_is_a_path_is_not_taken_for_a_subcommand(
    run_cli: RunCli, tmp_path: Path
) -> None:
    """``chek`` is a typing error of ``check`` until a file of that name exists; then it is
    a PATH like any other (and after ``--`` it is one anyway). A word spelled like a path
    is one."""
    assert_usage_error(run_cli("chek", "-r", cwd=tmp_path), ["did you mean 'check'?"])
    assert_usage_error(run_cli("check.json", "-r", cwd=tmp_path), ["check.json: does not exist"])
    assert listing(tmp_path) == {}
    proc = run_cli("-w", "-s", "4k", "--nolive", "--", "chek", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("chek", "-r", "-b", "4k", "--nolive", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
    assert "READ" in proc.stdout


def test_cases_cover_the_brief() -> None:
    assert len(CASES) >= 24


@pytest.fixture
def ramfs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A freshly mounted ramfs (no O_DIRECT support); unmounted afterwards."""
    mount_point = tmp_path_factory.mktemp("ramfs")
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("mounting a ramfs needs root and mount(8)")
    proc = subprocess.run(
        ["mount", "-t", "ramfs", "-o", "size=4m", "ramfs", str(mount_point)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        pytest.skip(f"cannot mount ramfs: {proc.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], check=True)


def test_direct_on_filesystem_without_o_direct(run_cli: RunCli, ramfs: Path) -> None:
    target = ramfs / "f"
    proc = run_cli("-w", "--direct", "-s", "1m", str(target))
    assert_usage_error(proc, ["--direct", str(target)])
    assert not target.exists()  # the file created during setup was removed again
    assert os.listdir(ramfs) == []


def test_direct_failure_removes_every_created_file(
    run_cli: RunCli, ramfs: Path, workdir: Path
) -> None:
    """The first file (on ext4) opens fine; the second fails; both created files go away."""
    before = listing(workdir)
    target = ramfs / "f"
    proc = run_cli("-w", "--direct", "-s", "1m", "first", str(target), cwd=str(workdir))
    assert_usage_error(proc, ["--direct", str(target)])
    assert not target.exists()
    assert listing(workdir) == before


def test_setup_error_after_notes_stays_one_line(run_cli: RunCli, ramfs: Path) -> None:
    """A run that would print notes (size rounded, several small-block slots) but fails to
    open its target prints only the error."""
    target = ramfs / "f"
    proc = run_cli("-w", "--direct", "-t", "2", "-b", "4k", "-s", "1000000", str(target))
    assert_usage_error(proc, ["--direct", str(target)])
    assert os.listdir(ramfs) == []


@pytest.mark.parametrize("force", [(), ("--force",)], ids=["plain", "force"])
def test_a_mistyped_device_path_makes_no_file_in_dev(
    run_cli: RunCli, tmp_path: Path, force: tuple[str, ...]
) -> None:
    path = "/dev/aiobench-test-nonexistent"
    assert not os.path.lexists(path)
    try:
        proc = run_cli("-w", "-s", "8m", *force, path, "--nolive", cwd=str(tmp_path))
        assert_usage_error(proc, [path, "does not exist", "no file is made in /dev"])
        assert not os.path.lexists(path)
    finally:
        if os.path.isfile(path):  # a regression: not left in /dev for the rest of the machine
            os.unlink(path)
