"""SIGINT/SIGTERM at random moments of real runs (#12, SPEC §10): never a traceback.

Each case starts ``python -m aiobench`` on a small tmpfs and sends SIGINT or SIGTERM at a
time drawn uniformly from process start to the workload's typical end (measured once per
workload: unsignalled runs, as many at once as the cases run). Workloads: the issue's
``-w -r -b 32m -s 64m --iodepth 4 -t 2`` (and a smaller one with ``--json``), dir mode with 100
and with 20,000 (empty) files, 4k random reads. It checks: no "Traceback"; exit 128 + the
signal's number, or 0 for a run that had printed its whole table before the signal was
sent; one "Interrupted by ..." line on stderr; no table and no JSON when interrupted before
the benchmark started, else the table so far and the JSON marked interrupted; every JSON
parses and is valid; no file left that the run created and had not filled (the directory
is listed before and after; dir mode's tree may stay, under the layout's own names).

Python itself starts (interpreter init, ``site``) before any aiobench code runs, and no
program can handle a signal there. So each child starts with SIGINT and SIGTERM blocked in
its signal mask: a signal sent that early stays pending until ``aiobench.entry`` has
installed its handlers and unblocks them, and is delivered to those handlers then. "From
process start" is thus covered from the first moment aiobench can act. (The mask is set in
the spawning thread around ``Popen``, which the child inherits; ``preexec_fn`` would do the
same in the child.)

The random times are seeded: a failure prints the seed; ``AIOBENCH_SIGNAL_SEED=N`` repeats
the same cases.
"""

from __future__ import annotations

import json
import os
import random
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from tests.helpers import errors_of, mounted_tmpfs

pytestmark = pytest.mark.slow  # real CLI runs (see tests/conftest.py)

MIB = 1 << 20
RUNS_PER_WORKLOAD = 20  # x 5 workloads
PARALLEL = 2  # children at a time (a 2-core machine)
SIGNALS = (signal.SIGINT, signal.SIGTERM)
HEADER = "OPERATION   RESULT TYPE         FIRST DONE   LAST DONE\n"
SEED = int(os.environ.get("AIOBENCH_SIGNAL_SEED", random.SystemRandom().randrange(1 << 32)))
# A child that has not ended this long after its start is a failure of its own.
EXIT_TIMEOUT_S = 60.0
READ_BYTES = 16 * MIB
DIR_ENTRY = re.compile(r"r0(/d[01](/r0-f\d+)?)?")


@dataclass(frozen=True)
class Workload:
    name: str
    options: str
    target: str  # PATH, in the case's directory
    blocks: int  # table blocks of a finished run
    json: bool = False
    prepare: Callable[[Path], None] = lambda case: None
    file_bytes: int = 0  # -s of a write workload: a filled target has all its bytes

    def args(self, case: Path) -> list[str]:
        json_out = ["--json", str(case / "out.json")] if self.json else []
        return [*shlex.split(self.options), *json_out, str(case / self.target), "--nolive"]


def _write_data(case: Path) -> None:
    (case / "data").write_bytes(os.urandom(READ_BYTES))


def _make_tree(case: Path) -> None:
    (case / "tree").mkdir()


ISSUE = "-w -r -b 32m -s 64m --iodepth 4 -t 2"  # the issue's command
WORKLOADS = [
    Workload("write-read", ISSUE, "f", blocks=2, file_bytes=64 * MIB),
    # Less setup, so more signals land near the end, where the JSON is written.
    Workload(
        "write-read-json",
        "-w -r -b 8m -s 32m --iodepth 4 -t 2",
        "f",
        blocks=2,
        json=True,
        file_bytes=32 * MIB,
    ),
    Workload("dir", "-d -w -r -F -D -n 2 -N 50 -s 0", "tree", blocks=5, prepare=_make_tree),
    # Phases of a few 100 ms (the one above is over in a few ms, after a longer start).
    Workload("dir-20k", "-d -w -r -F -D -n 2 -N 10000 -s 0", "tree", blocks=5, prepare=_make_tree),
    # ~1 s of reading.
    Workload(
        "rand-read",
        "-r --rand -b 4k -t 2 -s 16m --randamount 1g",
        "data",
        blocks=1,
        prepare=_write_data,
    ),
]


@dataclass
class Case:
    """One child: its command, when its signal goes out, and what it left behind."""

    index: int
    workload: Workload
    signum: signal.Signals | None  # None: the unsignalled run that measures the duration
    delay_s: float
    dir: Path
    logs: Path
    before: dict[str, tuple[int, int]] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None
    streams: list[IO[bytes]] = field(default_factory=list)
    started: float = 0.0
    sent: bool = False
    blocks_when_sent: int = 0
    duration_s: float = 0.0
    timed_out: bool = False

    @property
    def label(self) -> str:
        sig = self.signum.name if self.signum is not None else "no signal"
        return f"{self.workload.name} #{self.index} ({sig} at {self.delay_s:.3f} s)"

    def start(self) -> None:
        self.dir.mkdir()
        self.workload.prepare(self.dir)
        self.before = listing(self.dir)
        out = open(self.logs / f"{self.index}.out", "wb")  # noqa: SIM115 (closed when it ends)
        err = open(self.logs / f"{self.index}.err", "wb")  # noqa: SIM115
        self.streams = [out, err]
        self.started = time.monotonic()
        self.proc = spawn_blocked(self.workload.args(self.dir), stdout=out, stderr=err)

    def poll(self, now: float) -> bool:
        """Send the signal when its time has come; whether the child has ended."""
        assert self.proc is not None
        due = self.signum is not None and not self.sent and now >= self.started + self.delay_s
        if due and self.proc.poll() is None:
            assert self.signum is not None
            self.proc.send_signal(self.signum)
            self.sent = True
            # Read after sending: output only grows, so a block missing now was not
            # printed when the signal went out.
            self.blocks_when_sent = self.stdout().count("---\n")
        if self.proc.poll() is None:
            if now - self.started < EXIT_TIMEOUT_S:
                return False
            self.timed_out = True
            self.kill()
        self.duration_s = now - self.started
        for stream in self.streams:
            stream.close()
        return True

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in self.streams:
            stream.close()

    def stdout(self) -> str:
        return (self.logs / f"{self.index}.out").read_text(encoding="utf-8", errors="replace")

    def stderr(self) -> str:
        return (self.logs / f"{self.index}.err").read_text(encoding="utf-8", errors="replace")


def spawn_blocked(args: list[str], **popen: Any) -> subprocess.Popen[bytes]:
    """``python -m aiobench ARGS``, started with SIGINT and SIGTERM blocked (see above)."""
    cmd = [sys.executable, "-m", "aiobench", *args]
    env = dict(os.environ, PYTHONWARNINGS="error")
    old = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        return subprocess.Popen(cmd, env=env, **popen)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def listing(root: Path) -> dict[str, tuple[int, int]]:
    """Every path below ``root``: (size, bytes allocated); (-1, -1) for a directory."""
    out = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        seen = (-1, -1) if stat.S_ISDIR(st.st_mode) else (st.st_size, st.st_blocks * 512)
        out[str(path.relative_to(root))] = seen
    return out


def problems(case: Case, validator: Draft202012Validator) -> list[str]:
    """What the finished case did wrong (empty: nothing)."""
    assert case.proc is not None
    code, out, err = case.proc.returncode, case.stdout(), case.stderr()
    found: list[str] = []
    if case.timed_out:
        return [f"did not end within {EXIT_TIMEOUT_S} s; stderr {err!r}"]
    if "Traceback" in err:
        found.append(f"a traceback:\n{err}")
    lines = [line for line in err.splitlines() if not line.startswith("Note: ")]
    blocks = out.count("---\n")
    finished = code == 0
    if case.signum is None or not case.sent:
        if code != 0:
            found.append(f"exit {code} without a signal: {err}")
    elif code == 128 + case.signum:
        name = case.signum.name
        early = f"Interrupted by {name} before the benchmark started"
        late = f"Interrupted by {name}: results so far."
        if lines not in ([early], [late]):
            found.append(f"stderr is not the one interrupted line: {err!r}")
        if lines == [early] and out:
            found.append(f"a table although nothing was measured: {out!r}")
        if lines == [early] and (case.dir / "out.json").exists():
            found.append("a --json document although nothing was measured")
        if lines == [late] and not (out.startswith(HEADER) and out.endswith("---\n")):
            found.append(f"no table of the results so far: {out!r}")
    elif code == 0:
        if case.blocks_when_sent < case.workload.blocks:
            found.append(
                f"exit 0, but the signal was sent when {case.blocks_when_sent} of "
                f"{case.workload.blocks} blocks were printed (the signal was not acted on)"
            )
    else:
        found.append(f"exit {code}, expected 0 or {128 + case.signum}: {err}")
    if finished and (blocks != case.workload.blocks or lines):
        found.append(f"exit 0 but not a whole run: {blocks} blocks, stderr {err!r}")
    doc = None
    json_path = case.dir / "out.json"
    if json_path.exists():
        try:
            doc = json.loads(json_path.read_text(encoding="utf-8"))
        except ValueError as exc:
            found.append(f"--json does not parse: {exc}")
        else:
            found += [f"--json: {e}" for e in errors_of(validator, doc)]
    if isinstance(doc, dict):
        if doc.get("interrupted") is not (not finished):
            found.append(f"--json: interrupted is {doc.get('interrupted')}, exit {code}")
        if len(doc.get("phases", [])) != blocks:
            found.append(f"--json has {len(doc.get('phases', []))} phases, the table {blocks}")
    elif case.workload.json and blocks:
        found.append("no --json document although results were printed")
    found += _left_behind(case, doc, finished)
    return found


def outcome(case: Case) -> str:
    """How the case ended, for the summary line."""
    for kind in ("before the benchmark started", "results so far"):
        if kind in case.stderr():
            return kind
    return "finished" if case.proc is not None and case.proc.returncode == 0 else "other"


def _left_behind(case: Case, doc: Any, finished: bool) -> list[str]:
    """Files this run created: only filled ones stay (dir mode: its tree may stay)."""
    before, after = case.before, listing(case.dir)
    found = [f"{name} changed or went away" for name in before if after.get(name) != before[name]]
    if case.workload.target == "tree":
        left = [name for name in after if name not in before]
        found += [f"tree/{name}: not of the layout" for name in left if not _layout(name)]
        if finished and left:
            found.append(f"a finished run with -F -D left {left}")
        return found
    for name, (size, allocated) in after.items():
        if name in before or name == "out.json":
            continue
        if name != "f":
            found.append(f"{name}: left behind")
        elif size != case.workload.file_bytes or allocated < size:
            found.append(f"f: left unfilled ({allocated} of {size} bytes allocated)")
    if isinstance(doc, dict) and doc.get("phases"):
        write = doc["phases"][0]
        completed = write["phase"] == "WRITE" and not write["interrupted"]
        if completed != ("f" in after):
            found.append(f"f {'missing' if completed else 'kept'}: WRITE was {write}")
    return found


def _layout(name: str) -> bool:
    return name.startswith("tree/") and DIR_ENTRY.fullmatch(name[len("tree/") :]) is not None


def run_cases(cases: list[Case], validator: Draft202012Validator) -> list[str]:
    """Run the cases, PARALLEL at a time, each signal sent at its moment; their problems.
    A case's directory is checked and removed as soon as it ended (the tmpfs is small)."""
    waiting, running, report = list(cases), list[Case](), list[str]()
    try:
        while waiting or running:
            while waiting and len(running) < PARALLEL:
                running.append(waiting.pop(0))
                running[-1].start()
            time.sleep(0.002)
            now = time.monotonic()
            for case in [case for case in running if case.poll(now)]:
                running.remove(case)
                report += [f"{case.label}: {p}" for p in problems(case, validator)]
                shutil.rmtree(case.dir)
    finally:
        for case in running:
            case.kill()
    return report


@pytest.fixture
def fuzz_dir(tmp_path: Path) -> Iterator[Path]:
    """A 200 MiB tmpfs: two cases of 64 MiB targets at a time (root; skipped otherwise)."""
    with mounted_tmpfs(tmp_path / "mnt", "size=200m") as mnt:
        yield mnt


@pytest.mark.timeout(300)
@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: w.name)
def test_signal_at_a_random_moment(
    workload: Workload, fuzz_dir: Path, tmp_path: Path, validator: Draft202012Validator
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    rng = random.Random(f"{SEED}-{workload.name}")

    def case(index: int, signum: signal.Signals | None, delay_s: float) -> Case:
        return Case(index, workload, signum, delay_s, fuzz_dir / f"case{index}", logs)

    # The typical duration, as the cases will run: PARALLEL at a time.
    typical = [case(-i, None, 0.0) for i in range(1, PARALLEL + 1)]
    assert run_cases(typical, validator) == []
    duration_s = sum(c.duration_s for c in typical) / len(typical)
    cases = [
        case(i, rng.choice(SIGNALS), rng.uniform(0, duration_s))
        for i in range(1, RUNS_PER_WORKLOAD + 1)
    ]
    report = run_cases(cases, validator)
    print(f"seed {SEED}: typical run {duration_s:.2f} s;", Counter(map(outcome, cases)))
    assert not report, f"AIOBENCH_SIGNAL_SEED={SEED}:\n" + "\n".join(report)


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: s.name)
def test_a_signal_pending_from_process_start_reaches_aiobench(
    tmp_path: Path, signum: signal.Signals
) -> None:
    """Sent before Python has started: aiobench's handler gets it once the entry module
    unblocks it, and the run ends before anything is created (before #12 it was never
    acted on: the run went through and exited 0)."""
    target = tmp_path / "f"
    args = ["-w", "-r", "-s", "1m", "--nolive", str(target), "--json", str(tmp_path / "o.json")]
    proc = spawn_blocked(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out) == (128 + signum, b""), err
    assert err.decode() == f"Interrupted by {signum.name} before the benchmark started\n"
    assert list(tmp_path.iterdir()) == []
