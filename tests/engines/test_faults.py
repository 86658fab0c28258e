"""Injected I/O faults through the real CLI: EIO from a FUSE filesystem at an offset or call.

Each test mounts tests/faultfs.py (the ``fault_fs`` fixture: root, /dev/fuse, fusepy and
libfuse 2), runs ``python -m aiobench`` on the mount and checks what a user gets: exit 1,
one ``Error:`` line naming the path, the errno and an offset only where one means
something, the table of what was measured, and a ``--json`` document that the schema
accepts and that holds the error and the figures up to it.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from aiobench.engines.base import Engine
from tests.helpers import FaultFs, RunCli, errors_of

pytestmark = [pytest.mark.root, pytest.mark.slow]  # real CLI runs

HEADER = "OPERATION   RESULT TYPE         FIRST DONE   LAST DONE"
EIO_TEXT = "EIO (Input/output error)"


def on(engine: Engine) -> tuple[str, str]:
    """The CLI options that run a test's benchmark on ``engine`` (the io_engine fixture)."""
    return "--ioengine", engine.name


def the_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The one ``Error:`` line of a run that failed cleanly (exit 1, no traceback)."""
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def valid_doc(path: Path, validator: Draft202012Validator) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text())
    assert errors_of(validator, doc) == []
    return doc


def phase(doc: dict[str, Any], name: str) -> dict[str, Any]:
    """The last-done totals of the phase ``name``."""
    [found] = [p["last_done"] for p in doc["phases"] if p["phase"] == name]
    return found  # type: ignore[no-any-return]


def test_faultfs_fails_only_what_it_was_told(fault_fs: FaultFs) -> None:
    """The tool itself: the chosen byte fails for the chosen file and op, every time; other
    offsets, files and ops pass through; only the n-th create and mkdir fail."""
    mnt = fault_fs(eio_offset=5000, eio_file="d/f", eio_ops=("write",), eio_create_n=2)
    mnt2 = fault_fs(eio_mkdir_n=2, errno_name="ENOSPC")
    (mnt / "d").mkdir()
    fd = os.open(mnt / "d" / "f", os.O_RDWR | os.O_CREAT, 0o644)  # the 1st create
    try:
        assert os.pwrite(fd, b"a" * 4096, 0) == 4096
        for offset in (4096, 5000 - 4095, 5000):  # blocks holding byte 5000
            with pytest.raises(OSError) as failed:
                os.pwrite(fd, b"b" * 4096, offset)
            assert failed.value.errno == errno.EIO
        assert os.pwrite(fd, b"c" * 4096, 5001) == 4096
        assert os.pread(fd, 8192, 0) == b"a" * 4096 + b"\0" * 905 + b"c" * 3191  # reads pass
    finally:
        os.close(fd)
    with pytest.raises(OSError) as failed:
        (mnt / "g").touch()  # the 2nd create
    assert failed.value.errno == errno.EIO
    (mnt / "g").write_bytes(b"x" * 8192)  # the 3rd create; another file: the offset is fine
    assert (fault_fs.backing(mnt) / "g").read_bytes() == b"x" * 8192
    (mnt2 / "a").mkdir()
    with pytest.raises(OSError) as failed:
        (mnt2 / "b").mkdir()
    assert failed.value.errno == errno.ENOSPC
    (mnt2 / "c").mkdir()
    assert sorted(os.listdir(fault_fs.backing(mnt2))) == ["a", "c"]


@pytest.mark.parametrize("errno_name", ["EIO", "ENOSPC"])
def test_file_write_error_names_path_block_offset_and_keeps_results(
    fault_fs: FaultFs,
    tmp_path: Path,
    run_cli: RunCli,
    validator: Draft202012Validator,
    errno_name: str,
    io_engine: Engine,
) -> None:
    mnt = fault_fs(eio_offset=300_000, eio_file="f", errno_name=errno_name)
    target, out = mnt / "f", tmp_path / "out.json"
    proc = run_cli("-w", "-b", "64k", "-s", "1m", str(target), "--json", str(out), *on(io_engine))
    # The 64 KiB block holding byte 300000 starts at 262144: the offset the write was at.
    name = errno.errorcode[getattr(errno, errno_name)]
    text = f"{name} ({os.strerror(getattr(errno, errno_name))})"
    assert the_error_line(proc) == f"Error: {target}: offset 262144: {text}"
    assert proc.stdout.startswith(HEADER)
    assert "\nWRITE " in proc.stdout
    doc = valid_doc(out, validator)
    assert doc["error"] | {"message": ""} == {
        "path": str(target),
        "offset": 262144,
        "errno": getattr(errno, errno_name),
        "errno_name": name,
        "message": "",
    }
    # Blocks 0-3 were written before the failing one.
    assert phase(doc, "WRITE")["ops"] == 4
    assert phase(doc, "WRITE")["bytes"] == 262144


def test_file_read_error_names_path_block_offset_and_keeps_results(
    fault_fs: FaultFs,
    tmp_path: Path,
    run_cli: RunCli,
    validator: Draft202012Validator,
    io_engine: Engine,
) -> None:
    mnt = fault_fs(eio_offset=700_000, eio_file="f", eio_ops=("read",))
    (fault_fs.backing(mnt) / "f").write_bytes(bytes(range(256)) * 4096)  # 1 MiB
    target, out = mnt / "f", tmp_path / "out.json"
    proc = run_cli("-r", "-b", "64k", "-s", "1m", str(target), "--json", str(out), *on(io_engine))
    # Byte 700000 lies in the 11th block, at 655360.
    assert the_error_line(proc) == f"Error: {target}: offset 655360: {EIO_TEXT}"
    assert proc.stdout.startswith(HEADER)
    assert "\nREAD " in proc.stdout
    doc = valid_doc(out, validator)
    assert doc["error"]["path"] == str(target)
    assert doc["error"]["offset"] == 655360
    assert doc["error"]["errno_name"] == "EIO"
    assert phase(doc, "READ")["ops"] == 10
    assert phase(doc, "READ")["bytes"] == 655360


def test_an_open_that_fails_with_eio_is_a_run_time_error_with_its_document(
    fault_fs: FaultFs,
    tmp_path: Path,
    run_cli: RunCli,
    validator: Draft202012Validator,
    io_engine: Engine,
) -> None:
    """The issue's ``-r MNT/f1``: exit 2 and no errno name, no JSON; an I/O error now."""
    mnt = fault_fs(eio_open_n=1)
    (fault_fs.backing(mnt) / "f1").write_bytes(bytes(1 << 20))
    target, out = mnt / "f1", tmp_path / "out.json"
    proc = run_cli("-r", "-s", "1m", str(target), "--json", str(out), *on(io_engine))
    assert the_error_line(proc) == f"Error: {target}: {EIO_TEXT}"
    assert proc.stdout == ""  # nothing was measured: no table
    doc = valid_doc(out, validator)
    assert doc["error"] == {
        "path": str(target),
        "offset": None,
        "errno": errno.EIO,
        "errno_name": "EIO",
        "message": f"{target}: {EIO_TEXT}",
    }
    assert doc["phases"] == []


def test_a_failed_open_removes_the_file_the_run_created(
    fault_fs: FaultFs, tmp_path: Path, run_cli: RunCli, validator: Draft202012Validator
) -> None:
    # -w creates f2 (a create, which succeeds), then opens it for the run: that fails.
    mnt = fault_fs(eio_open_n=1)
    (fault_fs.backing(mnt) / "f1").write_bytes(bytes(1 << 20))
    out = tmp_path / "out.json"
    proc = run_cli("-w", "-s", "1m", str(mnt / "f2"), str(mnt / "f1"), "--json", str(out))
    assert the_error_line(proc) == f"Error: {mnt / 'f2'}: {EIO_TEXT}"
    assert valid_doc(out, validator)["error"]["errno_name"] == "EIO"
    assert sorted(os.listdir(fault_fs.backing(mnt))) == ["f1"]


def test_dir_mode_create_error_names_the_entry_without_offset(
    fault_fs: FaultFs,
    tmp_path: Path,
    run_cli: RunCli,
    validator: Draft202012Validator,
    io_engine: Engine,
) -> None:
    mnt = fault_fs(eio_create_n=7)
    out = tmp_path / "out.json"
    proc = run_cli(
        "-d", "-w", "-n", "1", "-N", "20", "-s", "0", str(mnt), "--json", str(out), *on(io_engine)
    )  # fmt: skip
    entry = mnt / "r0" / "d0" / "r0-f6"  # files 0-5 were made; the 7th create failed
    # Creating an entry has no offset: the message names the path alone.
    assert the_error_line(proc) == f"Error: {entry}: {EIO_TEXT}"
    assert proc.stdout.startswith(HEADER)
    assert "\nWRITE " in proc.stdout
    doc = valid_doc(out, validator)
    assert doc["error"]["path"] == str(entry)
    assert doc["error"]["offset"] is None
    assert doc["error"]["errno_name"] == "EIO"
    assert phase(doc, "MKDIRS")["entries"] == 1
    assert phase(doc, "WRITE")["entries"] == 6


def test_dir_mode_write_error_names_the_file_and_offset(
    fault_fs: FaultFs,
    tmp_path: Path,
    run_cli: RunCli,
    validator: Draft202012Validator,
    io_engine: Engine,
) -> None:
    """Dir mode with data: a failed write releases the buffers and reports like file mode
    (it used to end in ``BufferError: cannot close exported pointers exist``)."""
    mnt = fault_fs(eio_offset=40_000, eio_file="r0/d0/r0-f4", eio_ops=("write",))
    out = tmp_path / "out.json"
    args = ["-d", "-w", "-n", "1", "-N", "20", "-s", "64k", "-b", "16k", str(mnt)]
    proc = run_cli(*args, "--json", str(out), *on(io_engine))
    entry = mnt / "r0" / "d0" / "r0-f4"  # the 5th file; its 16 KiB block at 32768 failed
    assert the_error_line(proc) == f"Error: {entry}: offset 32768: {EIO_TEXT}"
    assert proc.stdout.startswith(HEADER)
    assert "\nWRITE " in proc.stdout
    doc = valid_doc(out, validator)
    assert doc["error"]["path"] == str(entry)
    assert doc["error"]["offset"] == 32768
    assert doc["error"]["errno_name"] == "EIO"
    assert phase(doc, "WRITE")["entries"] == 4


def test_dir_mode_mkdir_error_names_the_dir_without_offset(
    fault_fs: FaultFs,
    tmp_path: Path,
    run_cli: RunCli,
    validator: Draft202012Validator,
    io_engine: Engine,
) -> None:
    mnt = fault_fs(eio_mkdir_n=3)
    out = tmp_path / "out.json"
    proc = run_cli(
        "-d", "-n", "5", "-N", "1", "-s", "0", str(mnt), "--json", str(out), *on(io_engine)
    )  # fmt: skip
    entry = mnt / "r0" / "d1"  # mkdir 1 made r0 (untimed), 2 made d0, 3 failed on d1
    assert the_error_line(proc) == f"Error: {entry}: {EIO_TEXT}"
    assert proc.stdout.startswith(HEADER)
    assert "\nMKDIRS " in proc.stdout
    doc = valid_doc(out, validator)
    assert doc["error"]["path"] == str(entry)
    assert doc["error"]["offset"] is None
    assert doc["error"]["errno_name"] == "EIO"
    assert phase(doc, "MKDIRS")["entries"] == 1


def test_a_queued_read_error_names_its_offset(
    fault_fs: FaultFs, tmp_path: Path, run_cli: RunCli, validator: Draft202012Validator
) -> None:
    """The native engine's Linux AIO path (--direct --iodepth): the failing read, among
    those in flight, is the one named; the reads that completed are kept."""
    mnt = fault_fs(eio_offset=700_000, eio_file="f", eio_ops=("read",))
    (fault_fs.backing(mnt) / "f").write_bytes(bytes(range(256)) * 4096)  # 1 MiB
    target, out = mnt / "f", tmp_path / "out.json"
    args = ("-r", "-b", "64k", "-s", "1m", "--direct", "--iodepth", "4", "--ioengine", "native")
    proc = run_cli(*args, str(target), "--json", str(out))
    assert the_error_line(proc) == f"Error: {target}: offset 655360: {EIO_TEXT}"
    doc = valid_doc(out, validator)
    assert doc["error"]["offset"] == 655360
    # Blocks 0-9 completed; of the ones after the failing one, those in flight may have.
    assert 10 <= phase(doc, "READ")["ops"] <= 13
