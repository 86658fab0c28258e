"""Fuzzed command lines over every option of the bench command (#12).

A seeded generator builds each line from the options the typer app declares (a new option
is covered without touching this file), with boundary-heavy values and paths in a fresh
directory: files, a dir, a missing name, a symlink and a FIFO. Every line runs in this
process through the console entry point. Whatever the line: no traceback, an exit code of
0, 1, 2, 130 or 143, nothing created or changed by a usage error (exit 2), and a bounded
peak RSS. A failure names the seed and the line; ``AIOBENCH_FUZZ_SEED`` replays a batch.
"""

from __future__ import annotations

import contextlib
import os
import random
import select
import shlex
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from typer.core import TyperOption

import aiobench.cli
from tests.helpers import call_main, listing, mounted_tmpfs

pytestmark = pytest.mark.slow  # real CLI runs (see tests/conftest.py)

# Batches of lines, each a test of its own (well inside the per-test timeout).
BATCHES = 6
LINES_PER_BATCH = 50
BASE_SEED = int(os.environ.get("AIOBENCH_FUZZ_SEED", "12012"))
EXIT_CODES = {0, 1, 2, 130, 143}
# A valid line here moves at most a few MiB with blocks of 1 MiB at most; far below this.
MAX_RSS = 1536 << 20
# Left out, with the reason: --mpi starts MPI inside the test process (tests/run/test_mpi.py
# runs it under mpirun); --dropcache as root empties the page cache of the whole machine;
# --hosts/--hostsfile replace the process with mpirun (tests/run/test_hosts.py runs them);
# --install-completion writes the user's shell start-up files (tests/test_completion.py
# runs both completion options with a HOME of their own).
EXCLUDED = {
    "--mpi": "starts MPI in this process",
    "--dropcache": "drops the machine's cache",
    "--hosts": "replaces this process with mpirun",
    "--hostsfile": "replaces this process with mpirun",
    "--install-completion": "writes the shell start-up files of the user running the tests",
    "--show-completion": "a shell script for the user's shell, not a run",
}

INTS = ["0", "1", "2", "-1", "3", str(2**31), str(2**63), str(10**20), "abc", "", "4KB", "0x10"]
SIZES = [
    *("0", "1", "512", "4k", "4K", "64k", "1m", "-1", "16E", "8E", "7E", "4KB", "1.5M"),
    *("", "abc", str(2**31), str(2**63), str(10**20), "9" * 40, "\x1b[2J", " 4k "),
]
TEXTS = ["", "abc", "\x1b[31mred\x1b[0m", "x" * 5000, "-", "a b", "\n", "\u00fc", "%s%n"]
PATHS = [
    *("f", "small", "empty", "d", "link", "dlink", "fifo", "missing", "d/new", "nodir/x"),
    *("f[0-3]", "f[0-99999999]", "f[3-1]", "g[1-2]", "", "-", ".", "\x1b[1mbold", "n" * 300),
]
# The start of a line that runs (often perturbed into one that does not); its sizes keep a
# valid run small.
BASES = [
    ["-w", "-s", "4k", "f"],
    ["-w", "-s", "64k", "missing"],
    ["-w", "-s", "1m", "-b", "64k", "link"],
    ["-w", "-s", "4k", "f[0-3]"],
    ["-r", "-b", "4k", "f"],
    ["-w", "-r", "-s", "64k", "-b", "4k", "f"],
    ["-d", "-w", "-r", "--stat", "-F", "-D", "-n", "2", "-N", "2", "-s", "4k", "d"],
    ["-d", "-w", "-n", "0", "-N", "3", "-s", "0", "d"],
]
# Values that often keep a line valid, per kind.
TAME = {"int": ["1", "2", "0", "4"], "size": ["4k", "64k", "1", "512"], "path": ["out", "fifo"]}


def _options() -> list[tuple[str, str | None]]:
    """(spelling, value kind) of every option of the bench command; kind None = a flag."""
    out: list[tuple[str, str | None]] = []
    for param in typer.main.get_command(aiobench.cli.app).params:
        if not isinstance(param, TyperOption):
            continue
        for spelling in [*param.opts, *param.secondary_opts]:
            if spelling in EXCLUDED:
                continue
            if param.is_flag:
                out.append((spelling, None))
                continue
            text = f"{param.name} {param.metavar or ''}".lower()
            if param.type_descriptor.annotation is int:
                kind = "int"
            elif "file" in text or "json" in text:
                kind = "path"
            elif any(word in text for word in ("size", "block", "amount", "limit")):
                kind = "size"
            else:
                kind = "text"
            out.append((spelling, kind))
    return out


OPTIONS = _options()
VALUES = {"int": INTS, "size": SIZES, "path": PATHS + TEXTS, "text": TEXTS + SIZES + PATHS}


def command_line(rng: random.Random, options: list[tuple[str, str | None]]) -> list[str]:
    """One command line: half of them a small valid run with a few options added, half
    random options over random paths."""
    groups: list[list[str]] = [["--timelimit", "1"]]  # a generated --timelimit comes later
    tame = rng.random() < 0.5
    if tame:
        groups.append(rng.choice(BASES))
    else:  # a phase and a size, so more of these lines get past "nothing to do"
        groups.append(rng.choice([["-w"], ["-r"], ["-w", "-r"], ["-d"], []]))
        groups.append(["-s", rng.choice(SIZES)] if rng.random() < 0.5 else [])
    count = int(rng.expovariate(1 / (1.5 if tame else 3)))
    for spelling, kind in rng.sample(options, k=min(len(options), count)):
        if kind is None:
            groups.append([spelling])
            continue
        values = TAME.get(kind, VALUES[kind]) if tame and rng.random() < 0.5 else VALUES[kind]
        groups.append([spelling, rng.choice(values)])
    if not tame:
        groups += [[p] for p in rng.choices(PATHS, k=rng.choice([1, 1, 1, 2, 3]))]
        rng.shuffle(groups)
    if ["--infloop"] in groups:  # no time limit would loop for ever: 0 only for the others
        groups = [["--timelimit", "1"] if g == ["--timelimit", "0"] else g for g in groups]
    return [word for group in groups for word in group]


class FifoDrain:
    """Keeps the FIFO open for reading and empties it, so no writer ever blocks on it."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        # Read and write: the FIFO always has a writer, so select() waits instead of EOF.
        self.fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        while not self.stopped.is_set():
            if select.select([self.fd], [], [], 0.05)[0]:
                with contextlib.suppress(BlockingIOError):
                    os.read(self.fd, 1 << 16)

    def close(self) -> None:
        self.stopped.set()
        self.thread.join()
        os.close(self.fd)


@contextlib.contextmanager
def case_dir(base: Path, name: str) -> Iterator[Path]:
    """A fresh directory with a file, a small and an empty one, a dir, symlinks and a FIFO."""
    root = base / name
    root.mkdir()
    (root / "f").write_bytes(os.urandom(64 << 10))
    (root / "small").write_bytes(b"x" * 100)
    (root / "empty").touch()
    (root / "d").mkdir()
    (root / "link").symlink_to("f")
    (root / "dlink").symlink_to("d")
    drain = FifoDrain(root / "fifo")
    try:
        yield root
    finally:
        drain.close()
        shutil.rmtree(root)


@pytest.fixture
def fuzz_base(tmp_path: Path) -> Iterator[Path]:
    """A 64 MiB tmpfs as root (a forced huge write ends in ENOSPC there), else tmp_path."""
    if os.geteuid() != 0:
        yield tmp_path
        return
    with mounted_tmpfs(tmp_path / "mnt", "size=64m") as mnt:
        yield mnt


def peak_rss() -> int:
    """VmHWM: the peak RSS since the last :func:`reset_peak_rss`, in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def reset_peak_rss() -> None:
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM (Linux 4.0+)


@pytest.mark.parametrize("batch", range(BATCHES))
def test_fuzzed_command_lines(
    batch: int,
    fuzz_base: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    options = OPTIONS
    if os.geteuid() != 0:  # a forced write would fill a real disk until the time limit
        options = [option for option in OPTIONS if option[0] != "--force"]
    seed = BASE_SEED + batch
    rng = random.Random(seed)
    outcomes: dict[int, int] = {}
    for index in range(LINES_PER_BATCH):
        line = command_line(rng, options)
        where = f"seed {seed} line {index}: aiobench {shlex.join(line)}"
        with case_dir(fuzz_base, f"c{index}") as root:
            monkeypatch.chdir(root)
            before = listing(root)
            reset_peak_rss()
            code, out, err = call_main(capsys, *line)
            peak = peak_rss()
            after = listing(root)
            monkeypatch.chdir(fuzz_base)
        assert "Traceback" not in err + out, f"{where}\n{err}"
        assert code in EXIT_CODES, f"{where}: exit {code}\n{err}"
        if code == 2:
            assert after == before, f"{where}: a usage error changed the directory\n{err}"
            assert err.startswith("Error: ") and err.count("\n") == 1, f"{where}\n{err}"
        assert peak < MAX_RSS, f"{where}: peak RSS {peak >> 20} MiB"
        outcomes[code] = outcomes.get(code, 0) + 1
    # The lines are not all refused alike: some runs measure, most are refused.
    assert outcomes.get(0, 0) >= 3 and outcomes.get(2, 0) >= LINES_PER_BATCH // 3, outcomes


def test_every_option_is_fuzzed() -> None:
    """Each option the app declares is drawn from (unless left out with a reason)."""
    spellings = {spelling for spelling, _ in OPTIONS}
    for param in typer.main.get_command(aiobench.cli.app).params:
        for spelling in getattr(param, "opts", []) if param.param_type_name == "option" else []:
            assert spelling in spellings or spelling in EXCLUDED, spelling
    kinds = dict(OPTIONS)
    assert kinds["-s"] == "size" and kinds["--json"] == "path" and kinds["-t"] == "int"
    assert kinds["-w"] is None and kinds["--label"] == "text"
