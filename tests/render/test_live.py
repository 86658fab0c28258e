"""The live progress line: drawn on a real pseudo-terminal, never into a pipe or ``--json -``."""

from __future__ import annotations

import errno
import json
import os
import re
import select
import subprocess
import sys
import termios
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from aiobench.render.live import progress_text
from aiobench.render.table import render_table
from aiobench.results.model import Progress
from aiobench.results.saved import load_run
from aiobench.results.schema import load_schema

pytestmark = pytest.mark.slow  # real CLI runs (see tests/conftest.py)

MIB = 1 << 20
COLUMNS, ROWS = 200, 50
# One rendering of the live line, e.g. "WRITE   37%  739 MiB/s  189372 IOPS  elapsed 301ms
# ETA 1.698s".
PROGRESS = re.compile(
    r"(?P<phase>[A-Z]+) +(?P<percent>\d+)%  (?P<mibs>\d+) MiB/s  (?P<iops>\d+) IOPS"
    r"  elapsed (?P<elapsed>[0-9.hms]+)  ETA (?P<eta>[0-9.hms]+|\?)"
)
CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")
# Random 4 KiB writes and reads within a 1 MiB file: page cache only, nothing much reaches
# the disk. 512 MiB each takes a few hundred ms (several 50 ms live intervals); the time
# limit is only a safety bound (a time-limited phase ends the run).
# Two phases that end on their --randamount (no --timelimit, so no note of that on stderr).
TWO_PHASES = ["-w", "-r", "--rand", "--randamount", "2g", "-b", "4k", "-s", "1m"]
TWO_PHASES += ["--liveint", "50"]
# A READ phase of an existing file that the time limit ends after 1 s.
ONE_SECOND_READ = ["-r", "--rand", "--randamount", "64g", "-b", "4k", "--timelimit", "1"]
ONE_SECOND_READ += ["--liveint", "150"]
# Variables that make rich (or anything else) treat a stream differently than it is.
_TERMINAL_OVERRIDES = ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")


@dataclass
class Captured:
    returncode: int
    tty: str  # what the terminal (pty master) received
    stdout: str  # stdout when it was a pipe
    stderr: str  # stderr when it was a pipe


def run_on_pty(
    args: list[str], cwd: Path, *, stdout_tty: bool, stderr_tty: bool, timeout_s: float = 30
) -> Captured:
    """Run ``python -m aiobench ARGS`` with stdout and/or stderr on a new pseudo-terminal.

    Reads the terminal and the pipes until the process exits and all of them reach EOF.
    """
    master, slave = os.openpty()
    termios.tcsetwinsize(slave, (ROWS, COLUMNS))
    env = {k: v for k, v in os.environ.items() if k not in _TERMINAL_OVERRIDES}
    env |= {
        "TERM": "xterm-256color",
        "COLUMNS": str(COLUMNS),
        "LINES": str(ROWS),
        "PYTHONWARNINGS": "error",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "aiobench", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=slave if stdout_tty else subprocess.PIPE,
        stderr=slave if stderr_tty else subprocess.PIPE,
    )
    os.close(slave)
    got: dict[int, bytearray] = {master: bytearray()}
    pipes = {"stdout": proc.stdout, "stderr": proc.stderr}
    names = {pipe.fileno(): name for name, pipe in pipes.items() if pipe is not None}
    got |= {fd: bytearray() for fd in names}
    open_fds = set(got)
    deadline = time.monotonic() + timeout_s
    try:
        while open_fds:
            left = deadline - time.monotonic()
            assert left > 0, f"aiobench {args} did not finish within {timeout_s} s"
            ready, _, _ = select.select(list(open_fds), [], [], left)
            for fd in ready:
                try:
                    data = os.read(fd, 65536)
                except OSError as exc:  # a pty master reads EIO once the slave is closed
                    if exc.errno != errno.EIO:
                        raise
                    data = b""
                if data:
                    got[fd] += data
                else:
                    open_fds.discard(fd)
        returncode = proc.wait(timeout=max(deadline - time.monotonic(), 1))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
        for pipe in pipes.values():
            if pipe is not None:
                pipe.close()
    by_name = {name: got[fd].decode() for fd, name in names.items()}
    return Captured(
        returncode=returncode,
        tty=got[master].decode(),
        stdout=by_name.get("stdout", ""),
        stderr=by_name.get("stderr", ""),
    )


def screen(output: str) -> list[str]:
    """What a terminal shows after ``output``: text, CR, LF, cursor up, erase line."""
    lines, row, col = [""], 0, 0
    for token in re.split(r"(\x1b\[[0-9;?]*[A-Za-z]|\r|\n)", output):
        if not token:
            continue
        if token == "\r":
            col = 0
        elif token == "\n":
            row += 1
            if row == len(lines):
                lines.append("")
        elif token.startswith("\x1b["):
            count = int(token[2:-1]) if token[2:-1].isdigit() else 1
            if token.endswith("A"):
                row = max(0, row - count)
            elif token.endswith("K") and token[2:-1] == "2":
                lines[row] = ""
            elif token.endswith("K"):
                lines[row] = lines[row][:col]
            # Anything else (cursor show/hide, colours) leaves the text as it is.
        else:
            line = lines[row].ljust(col)
            lines[row] = line[:col] + token + line[col + len(token) :]
            col += len(token)
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def renderings(text: str) -> list[dict[str, str]]:
    """Every live line drawn in ``text``, in order (control sequences taken out)."""
    return [m.groupdict() for m in PROGRESS.finditer(CONTROL.sub("\n", text))]


def ms(elapsed: str) -> float:
    """Milliseconds of an elapsed time as the live line prints it (``301ms``, ``1.208s``)."""
    if elapsed.endswith("ms"):
        return float(elapsed[:-2])
    assert elapsed.endswith("s") and "m" not in elapsed, elapsed
    return float(elapsed[:-1]) * 1000


@pytest.fixture
def cached_file(tmp_path: Path) -> Path:
    target = tmp_path / "f"
    target.write_bytes(os.urandom(MIB))
    return target


def assert_table_blocks(text: str, phases: list[str]) -> None:
    assert text.startswith("OPERATION   RESULT TYPE")
    starts = [line.split()[0] for line in text.splitlines() if line[:1].isalpha()][1:]
    assert starts == phases
    assert text.count("\n---\n") == len(phases) and text.endswith("\n---\n")


# ---------------------------------------------------------------------------------------
# On a terminal


@pytest.mark.timing  # each phase lasts a few 50 ms intervals, and less than its time limit
def test_live_line_updates_on_a_terminal_and_is_cleared_before_each_table_block(
    tmp_path: Path, cached_file: Path
) -> None:
    got = run_on_pty([*TWO_PHASES, str(cached_file)], tmp_path, stdout_tty=True, stderr_tty=False)
    assert got.returncode == 0, got.stderr
    assert got.stderr == ""
    shown = renderings(got.tty)
    plain = CONTROL.sub("\n", got.tty)
    for phase in ("WRITE", "READ"):
        mine = [r for r in shown if r["phase"] == phase]
        # LAST DONE's elapsed time in the phase's table row
        row = re.search(rf"\n{phase} +Elapsed time +: +\S+ +(\S+)", plain)
        assert row is not None, plain
        total = ms(row[1])
        # Redrawn every 50 ms, each time further on.
        assert len({(r["percent"], r["elapsed"]) for r in mine}) >= 2, got.tty
        elapsed = [ms(r["elapsed"]) for r in mine]
        assert elapsed == sorted(elapsed) and elapsed[0] < elapsed[-1]
        assert all(0 < t < 5000 for t in elapsed)
        percent = [int(r["percent"]) for r in mine]
        assert percent == sorted(percent) and percent[-1] <= 100
        # The ETA is the rate so far carried forward: once known, elapsed + ETA projects the
        # phase's time within a factor that a busy machine's swings leave room for.
        for r in mine:
            if r["eta"] != "?":
                projected = ms(r["elapsed"]) + ms(r["eta"])
                assert total / 10 <= projected <= total * 10 + 200, (r, total)
    # Each phase's line is drawn before its table block, the WRITE block before READ's line.
    at = {
        phase: [m.start() for m in PROGRESS.finditer(plain) if m["phase"] == phase]
        for phase in ("WRITE", "READ")
    }
    write_block = plain.index("\nWRITE       Elapsed time")
    read_block = plain.index("\nREAD        Elapsed time")
    assert max(at["WRITE"]) < write_block < min(at["READ"])
    assert max(at["READ"]) < read_block
    # What stays on the screen: the table alone, the live lines cleared.
    lines = screen(got.tty)
    shown_text = "\n".join(lines) + "\n"
    assert not PROGRESS.search(shown_text), shown_text
    assert "ETA" not in shown_text and "starting" not in shown_text
    assert_table_blocks(shown_text, ["WRITE", "READ"])


def test_nolive_draws_nothing_on_a_terminal(tmp_path: Path, cached_file: Path) -> None:
    got = run_on_pty(
        [*ONE_SECOND_READ, "--nolive", str(cached_file)], tmp_path, stdout_tty=True, stderr_tty=True
    )
    assert got.returncode == 0, got.tty
    assert "OPERATION" in got.tty
    assert not renderings(got.tty)
    for trace in ("ETA", "elapsed ", "starting", "\x1b["):
        assert trace not in got.tty, got.tty
    assert_table_blocks(got.tty.replace("\r\n", "\n"), ["READ"])


@pytest.mark.timing  # both phases within the 5 s time limit
def test_pipe_gets_only_the_table(tmp_path: Path, cached_file: Path) -> None:
    out = tmp_path / "result.json"
    got = run_on_pty(
        [*TWO_PHASES, "--json", str(out), str(cached_file)],
        tmp_path,
        stdout_tty=False,
        stderr_tty=True,
    )
    assert got.returncode == 0, got.tty
    for trace in ("ETA", "elapsed ", "starting", "\x1b[", "\r"):
        assert trace not in got.stdout, got.stdout
    assert not renderings(got.stdout) and not renderings(got.tty)
    assert got.tty == ""  # nor does it move to stderr because that one is a terminal
    # Exactly the table the run's results make, byte for byte.
    result = load_run(str(out))
    assert got.stdout == render_table(result.phases)
    assert_table_blocks(got.stdout, ["WRITE", "READ"])


@pytest.mark.timing  # three 150 ms intervals in the 1 s phase
def test_json_dash_keeps_stdout_pure_and_draws_the_line_on_stderr(
    tmp_path: Path, cached_file: Path
) -> None:
    got = run_on_pty(
        [*ONE_SECOND_READ, "--json", "-", str(cached_file)],
        tmp_path,
        stdout_tty=False,
        stderr_tty=True,
    )
    assert got.returncode == 0, got.tty
    assert got.stdout.startswith("{") and got.stdout.endswith("}\n")
    doc = json.loads(got.stdout)  # one document, nothing before or after it
    schema = load_schema()
    checker = Draft202012Validator.FORMAT_CHECKER
    errors = list(Draft202012Validator(schema, format_checker=checker).iter_errors(doc))
    assert errors == []
    assert [p["phase"] for p in doc["phases"]] == ["READ"]
    # (" ETA ": the line's words; base64 histograms may hold the letters, never a space)
    assert " ETA " not in got.stdout and "\x1b" not in got.stdout
    # The human output, live line included, went to the terminal on stderr.
    shown = renderings(got.tty)
    assert len(shown) >= 3 and {r["phase"] for r in shown} == {"READ"}
    assert len({r["elapsed"] for r in shown}) >= 3
    lines = screen(got.tty)
    assert not any("ETA" in line for line in lines)
    assert_table_blocks("\n".join(lines) + "\n", ["READ"])


# ---------------------------------------------------------------------------------------
# The line's text (pure)


def progress(**over: object) -> Progress:
    args: dict[str, object] = dict(
        phase="WRITE",
        elapsed_ns=301_000_000,
        done_percent=37,
        done_bytes=222 * MIB,
        bytes_per_s=739 * MIB + 12345,
        iops=189372,
        entries_per_s=0,
        eta_ns=1_698_000_000,
        dir_mode=False,
    )
    args.update(over)
    return Progress(**args)  # type: ignore[arg-type]


def test_progress_text_of_a_file_phase() -> None:
    assert progress_text(progress()) == (
        "WRITE   37%  739 MiB/s  189372 IOPS  elapsed 301ms  ETA 1.698s"
    )
    text = progress_text(progress(phase="READ", done_percent=100, elapsed_ns=123_241_000_000))
    assert text.startswith("READ  100%  ") and "elapsed 2m3.241s" in text


def test_progress_text_of_a_dir_phase_shows_entries_per_second() -> None:
    meta = progress(
        phase="MKDIRS",
        done_percent=5,
        done_bytes=0,
        bytes_per_s=0,
        iops=0,
        entries_per_s=4321,
        eta_ns=11_559_000_000,
        dir_mode=True,
    )
    text = progress_text(meta)
    assert text.startswith("MKDIRS    5%  ")
    assert "4321 entries/s" in text
    assert text.endswith("elapsed 301ms  ETA 11.559s")
    files = progress_text(progress(entries_per_s=250, iops=500, dir_mode=True))
    assert "739 MiB/s" in files and "250 entries/s" in files and "500 IOPS" in files


def test_progress_text_without_a_pace_has_an_unknown_eta() -> None:
    text = progress_text(progress(done_percent=0, done_bytes=0, bytes_per_s=0, iops=0, eta_ns=None))
    assert text.startswith("WRITE    0%  ")
    assert text.endswith("elapsed 301ms  ETA ?")
