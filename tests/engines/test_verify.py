"""--verify SALT and --verifydirect: data written in a checkable pattern, and checked (#5)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from aiobench.engines.base import Engine, IoOptions, Job
from aiobench.engines.buffers import PoolSource, SlotBuffer
from aiobench.engines.verify import check, expected_word, pattern
from aiobench.errors import VerifyError
from aiobench.kinds import WRITE, PhaseKind
from aiobench.plan.workload import OpRun
from aiobench.results.schema import load_schema
from tests.helpers import RunCli, fd_targets

SALT = 0x1234_5678_9ABC_DEF0
KIB = 1024


def test_pattern_words_hold_offset_plus_salt_at_any_alignment() -> None:
    whole = pattern(0, 64, SALT)
    words = np.frombuffer(whole, dtype="<u8")
    assert words.tolist() == [o + SALT for o in range(0, 64, 8)]
    assert pattern(13, 21, SALT) == whole[13:34]  # a slice of the same stream
    huge = (1 << 64) - 8  # wraps modulo 2^64
    assert expected_word(huge, 16) == 8


def test_check_names_the_first_wrong_byte_and_its_word() -> None:
    data = bytearray(pattern(4096, 4096, SALT))
    assert check(bytes(data), 4096, SALT) is None
    data[1001] ^= 0xFF  # file offset 5097, inside the word at 5096 (byte 1 of it)
    bad = check(bytes(data), 4096, SALT)
    assert bad is not None
    assert bad.offset == 5097
    assert bad.expected == 5096 + SALT
    assert bad.found == bad.expected ^ (0xFF << 8)


def verified_job(
    kind: PhaseKind, fd: int, buf: SlotBuffer, offsets: list[int], **kw: object
) -> Job:
    options = IoOptions(verify=SALT, **kw)  # type: ignore[arg-type]
    return Job(
        kind, fd_targets(["f"], [fd]), OpRun(0, offsets, 4096), buf, 1 << 62, options=options
    )


def test_verifydirect_catches_a_write_that_lands_elsewhere(
    tmp_path: Path, io_engine: Engine
) -> None:
    # O_APPEND makes Linux put every pwrite at the end of the file, whatever its offset: a
    # misdirected write. Only reading the block back at its own offset shows it.
    target = tmp_path / "f"
    target.write_bytes(bytes(8 * 4096))
    buf = SlotBuffer(4096, for_write=True, source=PoolSource([1]), stamp_base=0)
    fd = os.open(target, os.O_RDWR | os.O_APPEND)
    try:
        plain = io_engine.run(verified_job(WRITE, fd, buf, [0]))
        direct = io_engine.run(verified_job(WRITE, fd, buf, [4096], verify_direct=True))
    finally:
        os.close(fd)
        buf.close()
    assert plain.error is None and len(plain.ends) == 1  # unnoticed without the read back
    assert isinstance(direct.error, VerifyError)
    assert direct.error.offset == 4096  # still zeros there: the block went to the end
    assert direct.error.found == 0 and direct.error.expected == 4096 + SALT
    assert len(direct.ends) == 0 and len(direct.starts) == 0  # the failed block is not counted
    assert target.stat().st_size == 10 * 4096


def write_then_corrupt(run_cli: RunCli, tmp_path: Path, offset: int) -> Path:
    target = tmp_path / "f"
    proc = run_cli("-w", "-b", "64k", "-s", "2m", "--verify", str(SALT), str(target))
    assert proc.returncode == 0, proc.stderr
    with open(target, "r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)
        handle.seek(offset)
        handle.write(bytes([byte[0] ^ 0x10]))
    return target


def test_clean_write_and_read_pass(run_cli: RunCli, tmp_path: Path) -> None:
    target = tmp_path / "f"
    out = tmp_path / "r.json"
    proc = run_cli(
        "-w", "-r", "-t", "2", "-b", "4k", "-s", "1m", "--verify", "3", "--verifydirect",
        str(target), "--json", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["error"] is None
    assert [p["last_done"]["bytes"] for p in doc["phases"]] == [1 << 20, 1 << 20]
    assert target.read_bytes() == pattern(0, 1 << 20, 3)
    # Random reads check every block they touch, too.
    proc = run_cli("-r", "--rand", "-b", "4k", "--verify", "3", str(target))
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("offset", [0, 777_777, (2 << 20) - 1])
def test_a_flipped_byte_fails_the_read_at_that_exact_offset(
    run_cli: RunCli, tmp_path: Path, offset: int
) -> None:
    target = write_then_corrupt(run_cli, tmp_path, offset)
    out = tmp_path / "r.json"
    proc = run_cli("-r", "-b", "64k", "--verify", str(SALT), str(target), "--json", str(out))
    assert proc.returncode == 1
    word_at = offset - offset % 8
    expected = word_at + SALT
    found = expected ^ (0x10 << (8 * (offset % 8)))
    assert proc.stderr.splitlines()[-1] == (
        f"Error: {target}: offset {offset}: data mismatch (--verify): expected word "
        f"0x{expected:016x}, found 0x{found:016x}"
    )
    assert proc.stdout.startswith("OPERATION")  # what was measured is still reported
    doc = json.loads(out.read_text())
    Draft202012Validator(load_schema()).validate(doc)
    assert doc["error"]["offset"] == offset
    assert (doc["error"]["expected"], doc["error"]["found"]) == (expected, found)
    # Blocks before the bad one were counted, the bad one was not.
    assert doc["phases"][0]["last_done"]["bytes"] == offset - offset % (64 * KIB)


def test_a_different_salt_fails_at_offset_zero(run_cli: RunCli, tmp_path: Path) -> None:
    target = write_then_corrupt(run_cli, tmp_path, 100)
    proc = run_cli("-r", "-b", "64k", "--verify", str(SALT + 1), str(target))
    assert proc.returncode == 1
    assert f"Error: {target}: offset 0: data mismatch" in proc.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-w", "--rand", "--verify", "1"], "--verify: cannot check random writes"),
        (["-w", "--verify", "0"], "--verify: the salt must be between 1 and 2^64-1 (got 0)"),
        (["-w", "--verifydirect"], "--verifydirect: needs --verify SALT"),
        (["-r", "--verify", "1", "--verifydirect"], "--verifydirect: only applies with -w"),
    ],
)
def test_bad_combinations_are_usage_errors(
    run_cli: RunCli, tmp_path: Path, args: list[str], message: str
) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"x" * 65536)
    proc = run_cli("-s", "64k", "-b", "4k", *args, str(target))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"Error: {message}") and proc.stderr.count("\n") == 1
    assert target.read_bytes() == b"x" * 65536


def test_verify_is_refused_in_dir_mode(run_cli: RunCli, tmp_path: Path) -> None:
    proc = run_cli("-d", "-w", "--verify", "1", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr == "Error: --verify: not supported in dir mode yet\n"


def test_reads_of_unverified_data_fail(run_cli: RunCli, tmp_path: Path) -> None:
    target = tmp_path / "f"
    proc = run_cli("-w", "-b", "64k", "-s", "1m", str(target))  # random data, no pattern
    assert proc.returncode == 0
    proc = run_cli("-r", "-b", "64k", "--verify", "1", str(target))
    assert proc.returncode == 1
    assert "offset 0: data mismatch" in proc.stderr
