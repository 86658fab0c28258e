"""What a new user reads first: the message for a missing dir-mode PATH, the note when a
time limit leaves phases out, and the one when a random phase ended on its --randamount
before the time limit (real runs through the CLI)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aiobench.plan.targets import Resolved
from aiobench.results.model import PhaseResult, Totals
from aiobench.results.runresult import RunResult
from aiobench.run.runner import skipped_note
from aiobench.stats.recorders import LatencyRecorder
from tests.helpers import RunCli, make_cfg, resolved_for


@pytest.mark.parametrize("option", ["-d", "--stat", "-F", "-D"])
def test_missing_dir_mode_path_is_named_missing(
    run_cli: RunCli, tmp_path: Path, option: str
) -> None:
    missing = tmp_path / "nodir"
    extra = ["-w"] if option == "-d" else []
    proc = run_cli(option, *extra, str(missing))
    assert proc.returncode == 2
    name = {"-d": "-d/--mkdirs", "--stat": "--stat", "-F": "-F/--delfiles", "-D": "-D/--deldirs"}
    assert proc.stderr == (
        f"Error: {missing}: does not exist; {name[option]} is for dir mode, which needs an "
        "existing directory as PATH (mkdir it first)\n"
    )
    assert "is a file" not in proc.stderr
    assert not missing.exists()


def test_an_existing_file_with_dir_mode_options_is_still_named_a_file(
    run_cli: RunCli, tmp_path: Path
) -> None:
    (tmp_path / "f").write_bytes(b"x" * 4096)
    proc = run_cli("--stat", str(tmp_path / "f"))
    assert proc.returncode == 2
    assert "is a file" in proc.stderr


def test_time_limit_that_stops_a_phase_says_what_did_not_run(
    run_cli: RunCli, tmp_path: Path
) -> None:
    # --infloop: the write runs until the limit, which ends the run (elbencho's rule).
    out = tmp_path / "r.json"
    args = ("-w", "-r", "-s", "1m", "--infloop", "--timelimit", "1", "--nolive")
    proc = run_cli(*args, "-i", "2", str(tmp_path / "f"), "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    phases = json.loads(out.read_text())["phases"]
    assert [(p["phase"], p["status"]) for p in phases] == [("WRITE", "time_limited")]
    assert proc.stderr == (
        "Note: --timelimit 1 s stopped WRITE, so READ and 1 more iteration did not run "
        "(as in elbencho, a phase the time limit stops ends the run).\n"
    )


def test_a_run_that_completes_has_no_note(run_cli: RunCli, tmp_path: Path) -> None:
    proc = run_cli("-w", "-r", "-s", "1m", "--timelimit", "30", "--nolive", str(tmp_path / "f"))
    assert proc.returncode == 0, proc.stderr
    assert "Note:" not in proc.stderr


RANDAMOUNT_HINT = "to run for the whole time, give --infloop or a larger --randamount"


def test_a_random_phase_that_ended_on_its_randamount_says_so(
    run_cli: RunCli, tmp_path: Path
) -> None:
    """elbencho's rule: --rand does its --randamount (by default the files' size), however
    long --timelimit is. The note says so once per phase, after the table; the document's
    meta.notes holds it too."""
    out = tmp_path / "r.json"
    args = ("-w", "-r", "--rand", "-b", "4k", "-s", "1m", "--timelimit", "1m", "-i", "2")
    proc = run_cli(*args, "--nolive", str(tmp_path / "f"), "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    notes = [
        f"{name} ended after its --randamount (1.0 MiB, by default the files' size) in "
        for name in ("WRITE", "READ")
    ]
    lines = proc.stderr.splitlines()
    assert len(lines) == 2, proc.stderr
    for line, note in zip(lines, notes, strict=True):
        assert line.startswith(f"Note: {note}"), line
        assert line.endswith(f", before --timelimit 60 s; {RANDAMOUNT_HINT}."), line
    doc = json.loads(out.read_text())
    assert [n.split(" in ")[0] for n in doc["meta"]["notes"]] == [n.split(" in ")[0] for n in notes]
    # Given, the amount is said as it was done.
    proc = run_cli("-r", "--rand", "--randamount", "64k", "-b", "4k", "--timelimit", "2.5",
                   "--nolive", str(tmp_path / "f"))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith("Note: READ ended after its --randamount (64.0 KiB) in ")
    assert proc.stderr.endswith(f", before --timelimit 2.5 s; {RANDAMOUNT_HINT}.\n")
    # No note where the time limit ended the phase, or without one.
    for extra in (
        ("--infloop", "--timelimit", "0.3"),
        ("--randamount", "1t", "--timelimit", "0.3"),
        (),
    ):
        proc = run_cli("-r", "--rand", "-b", "4k", *extra, "--nolive", str(tmp_path / "f"))
        assert (proc.returncode, proc.stderr) == (0, ""), (extra, proc.stderr)


def phase(name: str, *, time_limited: bool, iteration: int = 0) -> PhaseResult:
    totals = Totals(elapsed_ns=10**9, ops=1, bytes=4096)
    return PhaseResult(
        name=name,
        first_done=totals,
        last_done=totals,
        io_latency=LatencyRecorder().summary(),
        peak_inflight_ops=1,
        threads=(),
        time_limited=time_limited,
        iteration=iteration,
    )


def test_skipped_note_names_the_phases_left(tmp_path: Path) -> None:
    cfg = make_cfg(
        [str(tmp_path)], read=True, mkdirs=True, stat=True, delfiles=True, deldirs=True,
        block="4k", size="4k", timelimit=5,
    )  # fmt: skip
    resolved: Resolved = resolved_for(cfg)
    run = RunResult(meta={})
    run.phases = [phase("MKDIRS", time_limited=False), phase("WRITE", time_limited=True)]
    assert skipped_note(cfg, resolved, run) == (
        "--timelimit 5 s stopped WRITE, so STAT, READ, RMFILES, RMDIRS did not run "
        "(as in elbencho, a phase the time limit stops ends the run)"
    )
    # The last phase of the last iteration: nothing was left out.
    run.phases = [phase("RMDIRS", time_limited=True)]
    assert skipped_note(cfg, resolved, run) is None
    run.phases = [phase("WRITE", time_limited=False)]
    assert skipped_note(cfg, resolved, run) is None
