"""--trunc, --trunctosize, --preallocfile: what a file looks like before its write phase (#5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import RunCli

MIB = 1 << 20


def test_trunc_drops_what_lay_beyond_the_new_write(run_cli: RunCli, tmp_path: Path) -> None:
    kept, cut = tmp_path / "kept", tmp_path / "cut"
    for f in (kept, cut):
        f.write_bytes(b"x" * (2 * MIB))
    for f, extra in ((kept, []), (cut, ["--trunc"])):
        proc = run_cli("-w", "-b", "64k", "-s", "1m", *extra, str(f))
        assert proc.returncode == 0, proc.stderr
    assert kept.stat().st_size == 2 * MIB  # without --trunc the old tail stays
    assert cut.stat().st_size == MIB
    assert b"x" * 64 not in cut.read_bytes()  # every byte is newly written data


def test_trunctosize_sets_the_size_without_writing_it(run_cli: RunCli, tmp_path: Path) -> None:
    grown, shrunk = tmp_path / "grown", tmp_path / "shrunk"
    shrunk.write_bytes(b"x" * (8 * MIB))
    for f in (grown, shrunk):
        proc = run_cli(
            "-w", "--rand", "--randamount", "64k", "-b", "64k", "-s", "4m", "--trunctosize", str(f)
        )
        assert proc.returncode == 0, proc.stderr
        assert f.stat().st_size == 4 * MIB
    # Only one 64 KiB block was written to the new file: the rest is a hole.
    assert grown.stat().st_blocks * 512 < MIB


def test_preallocfile_allocates_every_byte_before_writing(run_cli: RunCli, tmp_path: Path) -> None:
    f = tmp_path / "f"
    out = tmp_path / "r.json"
    proc = run_cli(
        "-w", "--rand", "--randamount", "64k", "-b", "64k", "-s", "4m", "--preallocfile", str(f),
        "--json", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f.stat().st_size == 4 * MIB
    assert f.stat().st_blocks * 512 >= 4 * MIB
    write = json.loads(out.read_text())["phases"][0]
    assert write["last_done"]["bytes"] == 64 * 1024  # the allocation is untimed setup


@pytest.mark.root
def test_preallocfile_without_room_names_path_and_errno(
    run_cli: RunCli, small_tmpfs: Path, tmp_path: Path
) -> None:
    target = small_tmpfs / "f"
    out = tmp_path / "r.json"
    args = ("-w", "-s", "4m", "--preallocfile", "--force")  # --force: more than is free
    proc = run_cli(*args, str(target), "--json", str(out))
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == (
        f"Error: {target}: offset 0: ENOSPC (posix_fallocate: No space left on device)"
    )
    doc = json.loads(out.read_text())
    assert doc["error"]["errno_name"] == "ENOSPC"
    assert doc["phases"][0]["last_done"]["ops"] == 0
    assert proc.stdout.startswith("OPERATION")


@pytest.mark.parametrize("option", ["--trunc", "--trunctosize", "--preallocfile"])
def test_size_options_need_a_write_phase(run_cli: RunCli, tmp_path: Path, option: str) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"x" * 4096)
    proc = run_cli("-r", "-b", "4k", option, str(f))
    assert proc.returncode == 2
    assert (
        proc.stderr == f"Error: {option}: only applies with -w/--write (it acts before writing)\n"
    )
    assert f.read_bytes() == b"x" * 4096


def test_trunc_is_refused_in_dir_mode(run_cli: RunCli, tmp_path: Path) -> None:
    # (--trunctosize and --preallocfile size each file after its open there:
    # tests/engines/test_dirfiles.py)
    proc = run_cli("-d", "-w", "--trunc", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.startswith("Error: --trunc: not supported in dir mode")
    assert list(tmp_path.iterdir()) == []
