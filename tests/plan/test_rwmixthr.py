"""--rwmixthr: reader threads in the write phase, elbencho's MIX-T<N> (#24)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from aiobench.engines.verify import pattern
from aiobench.kinds import WRITE
from aiobench.plan.split import StreamOrder, ThreadSplit
from aiobench.plan.workload import Layout
from aiobench.results.schema import load_schema
from tests.helpers import RunCli, mpirun, needs_mpi

SALT = 0x0BAD_CAFE_0000_0003
BLOCK = 4096
BLOCKS = 2048


def _json(run_cli: RunCli, *args: str) -> dict[str, Any]:
    proc = run_cli(*args, "--nolive", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    Draft202012Validator(load_schema()).validate(doc)
    return doc


def test_one_reader_and_one_writer_thread(tmp_path: Path, run_cli: RunCli) -> None:
    """-t 2 --rwmixthr 1: thread 0 reads its half (the pattern stays there), thread 1
    rewrites its half; the phase shows the reads apart."""
    target = tmp_path / "f"
    common = ("-b", "4k", "-s", str(BLOCKS * BLOCK), "-t", "2", str(target))
    _json(run_cli, "-w", "--verify", str(SALT), *common)
    doc = _json(run_cli, "-w", "--rwmixthr", "1", *common)

    data = target.read_bytes()
    kept = [
        data[b * BLOCK : (b + 1) * BLOCK] == pattern(b * BLOCK, BLOCK, SALT) for b in range(BLOCKS)
    ]
    half = BLOCKS // 2
    assert all(kept[:half]) and not any(kept[half:])

    phase = doc["phases"][0]
    assert phase["phase"] == "MIX-T1"
    last = phase["last_done"]
    assert last["read"]["ops"] == half and last["write"]["ops"] == half
    assert last["read"]["bytes"] == half * BLOCK
    assert phase["latency"]["read"]["count"] == half


@pytest.mark.parametrize(("pct", "extra"), [(20, ()), (75, ("-t", "3", "--iodepth", "2"))])
def test_the_balance_holds_the_reads_share_of_the_bytes(
    tmp_path: Path, run_cli: RunCli, pct: int, extra: tuple[str, ...]
) -> None:
    """--rwmixthrpct: over a timed --infloop phase the reads are PCT % of the bytes moved
    (without it the reader runs at its own pace: tested apart below)."""
    target = tmp_path / "f"
    common = ("-b", "4k", "-s", "4m", "-t", "2", *extra, str(target))
    _json(run_cli, "-w", *common)
    timed = ("-w", "--infloop", "--timelimit", "1", "--rwmixthr", "1", *common)
    doc = _json(run_cli, *timed, "--rwmixthrpct", str(pct))
    last = doc["phases"][0]["last_done"]
    read, write = last["read"]["bytes"], last["write"]["bytes"]
    assert read > 0 and write > 0
    assert abs(100 * read / (read + write) - pct) < 2, (read, write)


def test_the_table_shows_the_read_rows(tmp_path: Path, run_cli: RunCli) -> None:
    target = tmp_path / "f"
    common = ("-b", "4k", "-s", "1m", "-t", "2", "--nolive", str(target))
    assert run_cli("-w", *common).returncode == 0
    proc = run_cli("-w", "--rwmixthr", "1", *common)
    assert proc.returncode == 0, proc.stderr
    assert "MIX-T1" in proc.stdout
    assert "IOPS read" in proc.stdout and "IOPS write" in proc.stdout


def test_bad_uses_are_one_error_line(tmp_path: Path, run_cli: RunCli) -> None:
    target = str(tmp_path / "f")
    cases = [
        (("-r", "--rwmixthr", "1"), "Error: --rwmixthr: only applies with -w"),
        (("-w", "--rwmixthr", "1", "--rwmixpct", "5"), "Error: --rwmixthr: cannot be combined"),
        (("-w", "--rwmixthrpct", "10"), "Error: --rwmixthrpct: only applies with --rwmixthr"),
        (("-w", "--rwmixthr", "1", "--rwmixthrpct", "101"), "Error: --rwmixthrpct: must be"),
        (("-w", "--rwmixthr", "1", "--rwmixthrpct", "10"), "Error: --rwmixthrpct: needs --infl"),
        (
            ("-w", "--infloop", "--rwmixthr", "2", "--rwmixthrpct", "10"),
            "Error: --rwmixthrpct: needs r",
        ),
    ]
    for args, line in cases:
        proc = run_cli(*args, "-s", "1m", "-t", "2", target)
        assert proc.returncode == 2, args
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(line), (args, lines)


def test_reader_threads_need_the_file_and_the_dry_run_says_so(
    tmp_path: Path, run_cli: RunCli
) -> None:
    target = tmp_path / "f"
    args = ("-w", "-b", "4k", "-s", "1m", "-t", "2", "--rwmixthr", "1", str(target))
    proc = run_cli(*args)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"Error: {target}: does not exist; --rwmixthr reads while it writes, so write the "
        "file first (-w without --rwmixthr)"
    ]
    assert not target.exists()
    assert run_cli("-w", "-b", "4k", "-s", "1m", str(target)).returncode == 0
    proc = run_cli(*args, "--dryrun")
    assert proc.returncode == 0, proc.stderr
    assert "MIX-T1" in proc.stdout and "1 of the 2 threads reading" in proc.stdout


def test_random_readers_draw_as_a_read_phase_and_writers_cover() -> None:
    """elbencho runs a reader thread as a read phase: --rand draws its offsets (repeats
    allowed), while a writer thread still visits each block of its share once."""
    layout = Layout((BLOCKS * BLOCK,), BLOCK)
    order = StreamOrder(seed=3, rand=True, rwmixthr=1)
    reader, writer = layout.streams(WRITE, 0, order, ThreadSplit.alone(2))
    seen = []
    for stream in (reader, writer):
        offsets: list[int] = []
        while (run := stream.take(100)) is not None:
            offsets.extend(run.offsets)
        seen.append(offsets)
    assert len(seen[0]) == len(seen[1]) == BLOCKS // 2
    assert len(set(seen[0])) < len(seen[0])
    assert sorted(seen[1]) == [b * BLOCK for b in range(BLOCKS // 2, BLOCKS)]


@needs_mpi
def test_over_mpi_each_process_has_its_own_readers(tmp_path: Path, run_cli: RunCli) -> None:
    """elbencho's N readers are per host: mpirun -n 2 -t 2 --rwmixthr 1 has thread ranks 0
    and 2 reading (the 1st and 3rd quarter keep the pattern), 1 and 3 writing."""
    target = tmp_path / "f"
    common = ("-b", "4k", "-s", str(BLOCKS * BLOCK), "-t", "2", "--nolive", str(target))
    made = run_cli("-w", "--verify", str(SALT), "-t", "4", *common[:-4], str(target))
    assert made.returncode == 0, made.stderr
    proc = mpirun(2, "-w", "--rwmixthr", "1", "--json", "-", *common)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    data = target.read_bytes()
    kept = [
        data[b * BLOCK : (b + 1) * BLOCK] == pattern(b * BLOCK, BLOCK, SALT) for b in range(BLOCKS)
    ]
    quarter = BLOCKS // 4
    for q in range(4):
        assert set(kept[q * quarter : (q + 1) * quarter]) == {q % 2 == 0}, q
    last = doc["phases"][0]["last_done"]
    assert doc["phases"][0]["phase"] == "MIX-T1"
    assert last["read"]["ops"] == last["write"]["ops"] == BLOCKS // 2
