"""Durations and sizes as a newcomer types them, through the real CLI (#27): fio's and the
IEC spellings are taken where they mean what elbencho's do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import RunCli

S = 1_000_000_000


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("10s", "10"),
        ("2.5", "2.5"),
        ("1m", "60"),
        ("1.5m", "90"),
        ("1h", "3600"),
        ("0.25s", "0.25"),
    ],
)
def test_timelimit_takes_seconds_and_units(
    run_cli: RunCli, tmp_path: Path, given: str, shown: str
) -> None:
    proc = run_cli("-w", "-s", "1m", "--timelimit", given, "--dryrun", "f", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
    assert f"\nTime limit      : {shown} s per phase\n" in proc.stdout


def test_a_fractional_time_limit_ends_the_phase_then(run_cli: RunCli, tmp_path: Path) -> None:
    """--timelimit 0.5 limits the phase to half a second (the JSON config keeps it exactly
    in timelimit_ns; timelimit_s rounds it up for readers that know only that key)."""
    target, out = tmp_path / "f", tmp_path / "r.json"
    target.write_bytes(bytes(1 << 20))
    args = ("-r", "--rand", "--randamount", "1t", "-b", "4k", "--timelimit", "0.5", "-i", "2")
    proc = run_cli(*args, "--nolive", str(target), "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == (
        "Note: --timelimit 0.5 s stopped READ, so 1 more iteration did not run (as in "
        "elbencho, a phase the time limit stops ends the run).\n"
    )
    doc = json.loads(out.read_text())
    config = doc["meta"]["config"]
    assert (config["timelimit_s"], config["timelimit_ns"]) == (1, S // 2)
    (phase,) = doc["phases"]
    assert phase["status"] == "time_limited"
    # Its last operation ended about the deadline at half a second (without a limit, the
    # 1 TiB would take hours); a generous guard above.
    assert S // 4 <= phase["last_done"]["elapsed_ns"] < 30 * S


def test_phasedelay_and_check_budget_take_durations(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    args = ("-w", "-r", "-s", "4k", "--phasedelay", "0m", "--nolive", str(tmp_path / "f"))
    proc = run_cli(*args, "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["meta"]["config"]["phasedelay_s"] == 0
    # The shortest budget; whether every test fits into it is not the question here.
    (tmp_path / "d").mkdir()
    check = tmp_path / "check.json"
    proc = run_cli("check", "--budget", "3s", str(tmp_path / "d"), "--json", str(check))
    assert proc.returncode in (0, 1), proc.stderr
    assert json.loads(check.read_text())["meta"]["budget_s"] == 3


def test_every_size_option_takes_the_iec_spellings(run_cli: RunCli, tmp_path: Path) -> None:
    target = tmp_path / "f"
    sizes = ("-s", "64KiB", "-b", "4KiB", "--randamount", "16kib")
    limits = ("--limitwrite", "1GiB", "--limitread", "1GiB")
    proc = run_cli("-w", "--rand", *sizes, *limits, "--nolive", str(target), "--json", "-")
    assert proc.returncode == 0, proc.stderr
    config = json.loads(proc.stdout)["meta"]["config"]
    got = [config[key] for key in ("size", "block_size", "randamount", "limitwrite", "limitread")]
    assert got == [64 << 10, 4 << 10, 16 << 10, 1 << 30, 1 << 30]
    (phase,) = json.loads(proc.stdout)["phases"]
    assert phase["last_done"]["bytes"] == 16 << 10  # the --randamount, in 4 KiB blocks
    assert phase["last_done"]["ops"] == 4
