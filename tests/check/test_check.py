"""``aiobench check DIR`` and ``compare --fail-below`` through the real CLI, on a tmpfs and
an ext4 loop device (root; skipped otherwise): the budget is kept, DIR is left as it
was (also after SIGINT/SIGTERM at random moments), the JSON validates and the gate works.

Budgets are small (3-4 s) to keep the suite fast; the check's own clock
(``meta.elapsed_ns``, from its start to the end of its cleanup) is held to the budget
± 20 %, the process's wall time (interpreter start-up included) only to a generous guard.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import random
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from aiobench.check import plan
from tests.helpers import (
    Ext4Loop,
    FaultFs,
    Listing,
    assert_usage_error,
    call_main,
    errors_of,
    listing,
    md_table,
    mounted_tmpfs,
    run_aiobench,
    run_tool,
)

pytestmark = pytest.mark.slow  # real CLI runs (see tests/conftest.py)

Doc = dict[str, Any]
BUDGET_S = 4
WALL_GUARD_S = 60  # a busy machine starts Python slowly; the budget itself is checked apart
LABELS = list(plan.TABLE_ORDER)
SIGNAL_RUNS = 6
SEED = int(os.environ.get("AIOBENCH_SIGNAL_SEED", random.SystemRandom().randrange(1 << 32)))


def _populate(root: Path) -> Listing:
    """Something of the user's in DIR, which the check must leave alone."""
    (root / "mine.txt").write_text("keep me\n", encoding="utf-8")
    (root / "sub").mkdir()
    (root / "sub" / "data").write_bytes(b"x" * 5000)
    (root / ".aiobench-check-mine").mkdir()  # named like the check's, not made by it
    return listing(root)


def _check(root: Path, out: Path, *more: str) -> tuple[subprocess.CompletedProcess[str], Doc]:
    started = time.monotonic()
    proc = run_aiobench(
        "check", str(root), "--budget", str(BUDGET_S), "--json", str(out), *more,
        timeout=WALL_GUARD_S,
    )  # fmt: skip
    assert time.monotonic() - started < WALL_GUARD_S
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    doc: Doc = json.loads(out.read_text(encoding="utf-8"))
    return proc, doc


def _assert_complete(doc: Doc, proc: subprocess.CompletedProcess[str]) -> None:
    """Eleven rows, within budget, each row the figure of the run phase it names."""
    assert doc["kind"] == "check" and doc["schema_version"] == 3
    assert [t["label"] for t in doc["tests"]] == LABELS
    elapsed_s = doc["meta"]["elapsed_ns"] / 1e9
    assert 0.8 * BUDGET_S <= elapsed_s <= 1.2 * BUDGET_S, elapsed_s
    assert doc["interrupted"] is False and doc["error"] is None
    assert doc["meta"]["left_behind"] == []
    for test in doc["tests"]:
        phase = doc["runs"][test["run"]]["phases"][test["phase"]]
        assert test["value"] == phase["last_done"][test["metric"]] > 0, test
        key = "entries" if test["test"] == "META" else "io"
        latency = phase["latency"][key]
        assert test["p50_ns"] == latency["percentiles_ns"]["50"] > 0
        assert test["p99_ns"] == latency["percentiles_ns"]["99"] >= test["p50_ns"]
        assert test["count"] == latency["count"] > 0
    meta = [t for t in doc["tests"] if t["test"] == "META"]
    assert {t["count"] for t in meta} == {doc["meta"]["metadata_files"]}
    assert plan.METADATA_FILES_MIN <= doc["meta"]["metadata_files"] <= plan.METADATA_FILES_MAX
    # The table: a line per test, in the same order, with the same figure.
    lines = proc.stdout.splitlines()
    rule = next(i for i, line in enumerate(lines) if line and set(line) == {"="})
    rows = lines[rule + 1 : rule + 1 + len(LABELS)]
    for line, test in zip(rows, doc["tests"], strict=True):
        shown = test["value"] // (1 << 20) if test["metric"] == "bytes_per_s" else test["value"]
        words = test["label"].split()
        assert line.split()[: len(words) + 1] == [*words, str(shown)], line


@pytest.fixture(scope="module")
def tmpfs_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with mounted_tmpfs(tmp_path_factory.mktemp("check") / "mnt", "size=512m") as mnt:
        yield mnt


@pytest.fixture(scope="module")
def tmpfs_check(tmpfs_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Doc:
    """One check of the tmpfs, with its listing before and after and its markdown."""
    out = tmp_path_factory.mktemp("out")
    before = _populate(tmpfs_dir)
    proc, doc = _check(tmpfs_dir, out / "a.json", "--markdown", str(out / "a.md"))
    return {
        "doc": doc,
        "proc": proc,
        "before": before,
        "after": listing(tmpfs_dir),
        "json": out / "a.json",
        "md": (out / "a.md").read_text(encoding="utf-8"),
    }


@pytest.mark.root
def test_check_on_tmpfs_keeps_its_budget_and_leaves_dir_as_it_was(
    tmpfs_check: Doc, validator: Draft202012Validator
) -> None:
    doc = tmpfs_check["doc"]
    assert tmpfs_check["after"] == tmpfs_check["before"]
    assert errors_of(validator, doc) == []
    for run in doc["runs"]:  # each run inside is an ordinary result document
        assert errors_of(validator, run) == []
    _assert_complete(doc, tmpfs_check["proc"])
    assert doc["meta"]["filesystem"] == "tmpfs"
    assert any("tmpfs keeps files in memory" in n for n in doc["meta"]["notes"])
    assert "Note: tmpfs keeps files in memory" in tmpfs_check["proc"].stdout


@pytest.mark.root
def test_check_markdown_renders_as_a_table(tmpfs_check: Doc) -> None:
    header, body = md_table(tmpfs_check["md"])
    assert header == ["test", "op", "result", "unit", "p50", "p99"]
    assert [" ".join(row[:2]) for row in body] == LABELS
    for row, test in zip(body, tmpfs_check["doc"]["tests"], strict=True):
        unit = {"bytes_per_s": "MiB/s", "iops": "IOPS", "entries_per_s": "files/s"}
        assert row[3] == unit[test["metric"]]
        assert int(row[2]) == (
            test["value"] // (1 << 20) if test["metric"] == "bytes_per_s" else test["value"]
        )


@contextlib.contextmanager
def read_throttled(device: str, bytes_per_s: int) -> Iterator[Path]:
    """A cgroup whose reads from ``device`` are held to ``bytes_per_s`` (cgroup v1
    blkio.throttle or v2 io.max); yields its ``cgroup.procs``. Skips where neither is."""
    st = os.stat(device)
    dev = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
    name = f"aiobench-test-{os.getpid()}"
    v1, v2 = Path("/sys/fs/cgroup/blkio"), Path("/sys/fs/cgroup")
    if (v1 / "blkio.throttle.read_bps_device").exists():
        group, limit, rule = v1 / name, "blkio.throttle.read_bps_device", f"{dev} {bytes_per_s}"
    elif "io" in (v2 / "cgroup.controllers").read_text(encoding="ascii").split():
        (v2 / "cgroup.subtree_control").write_text("+io", encoding="ascii")
        group, limit, rule = v2 / name, "io.max", f"{dev} rbps={bytes_per_s}"
    else:
        pytest.skip("no cgroup I/O throttling here (neither blkio nor io controller)")
    group.mkdir()
    try:
        (group / limit).write_text(rule, encoding="ascii")
        yield group / "cgroup.procs"
    finally:
        group.rmdir()  # (its one process has ended)


@pytest.mark.root
@pytest.mark.timing  # two checks' rates compared: other tests running at once add noise
def test_check_on_an_ext4_loop_device_and_the_gate_on_it_throttled(
    ext4_loop: Ext4Loop, tmp_path: Path, validator: Draft202012Validator
) -> None:
    """A real check of ext4 on a loop device, then the same check with the loop device's
    reads throttled in a cgroup to a quarter of what the first saw: compare fails it."""
    mnt = ext4_loop.setup(512 << 20)
    before = _populate(mnt)
    proc, doc = _check(mnt, tmp_path / "e.json")
    assert listing(mnt) == before
    assert errors_of(validator, doc) == []
    _assert_complete(doc, proc)
    assert doc["meta"]["filesystem"] == "ext4"
    assert doc["meta"]["direct_io"] is True  # ext4 takes O_DIRECT
    files = [r for r in doc["runs"] if r["meta"]["path_type"] == "file"]
    assert len(files) == 1 + 1 + 8  # calibration, fill, the tests
    assert all(r["meta"]["config"]["direct"] for r in files)
    assert all("--direct" in r["meta"]["command"] for r in files)
    seq_read = next(t for t in doc["tests"] if t["label"] == "SEQ1M Q1T1 read")["value"]
    assert ext4_loop.device is not None
    with read_throttled(ext4_loop.device, seq_read // 4) as procs:
        args = [sys.executable, "-m", "aiobench", "check", str(mnt), "--budget", str(BUDGET_S)]
        args += ["--json", str(tmp_path / "slow.json")]
        # The shell joins the cgroup, then becomes the check: every read it makes is held.
        throttled = subprocess.run(
            ["sh", "-c", f"echo $$ > {shlex.quote(str(procs))} && exec {shlex.join(args)}"],
            capture_output=True,
            text=True,
            timeout=WALL_GUARD_S,
            check=False,
        )
    assert throttled.returncode == 0, throttled.stderr
    assert listing(mnt) == before
    gate = run_aiobench(
        "compare", str(tmp_path / "e.json"), str(tmp_path / "slow.json"), "--fail-below", "10"
    )
    assert gate.returncode == 3, gate.stdout + gate.stderr
    failed = [line for line in gate.stdout.splitlines() if "FAIL: fell" in line]
    names = {" ".join(line.split()[:3]) for line in failed}
    assert {"SEQ1M Q8T1 read", "SEQ1M Q1T1 read"} <= names, gate.stdout


@pytest.mark.root
def test_two_checks_of_one_target_pass_the_gate_and_a_quarter_of_a_rate_fails_it(
    tmpfs_check: Doc, tmpfs_dir: Path, tmp_path: Path
) -> None:
    base = tmpfs_check["json"]
    _check(tmpfs_dir, tmp_path / "b.json")
    assert listing(tmpfs_dir) == tmpfs_check["before"]
    # Two real runs of the same target on a busy machine: no rate falls to a tenth beyond
    # the runs' noise (a limit that leaves room for other load, not a speed target).
    same = run_aiobench("compare", str(base), str(tmp_path / "b.json"), "--fail-below", "90")
    assert same.returncode == 0, same.stdout + same.stderr
    assert "OK: no rate fell by more than 90% beyond the runs' noise" in same.stdout
    # The first check again, with RND4K Q1T1 read taking four times as long for its
    # operations (the runs' noise on a loaded 2-core machine reached +-51 %).
    doc = copy.deepcopy(tmpfs_check["doc"])
    test = next(t for t in doc["tests"] if t["label"] == "RND4K Q1T1 read")
    last = doc["runs"][test["run"]]["phases"][test["phase"]]["last_done"]
    last["elapsed_ns"] *= 4
    for key in ("iops", "bytes_per_s", "entries_per_s"):
        last[key] //= 4
    test["value"] = last["iops"]
    slower = tmp_path / "slower.json"
    slower.write_text(json.dumps(doc), encoding="utf-8")
    gate = run_aiobench(
        "compare", str(base), str(slower), "--fail-below", "10", "--markdown",
        str(tmp_path / "cmp.md"),
    )  # fmt: skip
    assert gate.returncode == 3, gate.stdout + gate.stderr
    failed = [line for line in gate.stdout.splitlines() if "FAIL: fell" in line]
    assert [line.split()[3] for line in failed] == ["IOPS", "Throughput"], failed
    assert all(line.startswith("RND4K Q1T1 read ") for line in failed)
    assert all("FAIL: fell 75.0% (limit 10%" in line for line in failed)
    assert (
        gate.stdout.rstrip()
        .splitlines()[-1]
        .startswith("FAIL: 2 of the rates fell by more than 10%: RND4K Q1T1 read IOPS")
    )
    header, body = md_table((tmp_path / "cmp.md").read_text(encoding="utf-8"))
    assert header == ["phase", "metric", "A", "B", "B/A", "B is", "note"]
    bold = [row for row in body if row[6].startswith("**FAIL")]
    assert [(row[0], row[1], row[4], row[5]) for row in bold] == [
        ("RND4K Q1T1 read", "IOPS", "0.25\u00d7", "worse"),
        ("RND4K Q1T1 read", "Throughput MiB/s", "0.25\u00d7", "worse"),
    ]
    # Without --fail-below compare only reports, whatever fell.
    report = run_aiobench("compare", str(base), str(slower))
    assert report.returncode == 0 and "FAIL" not in report.stdout


def _usage_error(capsys: pytest.CaptureFixture[str], args: list[str], needles: list[str]) -> None:
    """The CLI in this process: exit 2, one ``Error:`` line naming every needle."""
    code, out, err = call_main(capsys, *args)
    assert_usage_error(subprocess.CompletedProcess(args, code, out, err), needles)


@pytest.mark.root
def test_a_check_and_a_run_are_not_compared(
    tmpfs_check: Doc, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "f").write_bytes(b"\0" * 65536)
    run = ["-r", "-b", "4k", "--nolive", str(tmp_path / "f"), "--json", str(tmp_path / "r.json")]
    assert call_main(capsys, *run)[0] == 0
    check = str(tmpfs_check["json"])
    _usage_error(
        capsys, ["compare", check, str(tmp_path / "r.json")], ["is a check document", "a run"]
    )
    _usage_error(capsys, ["compare", check, check, "--fail-below", "100"], ["--fail-below"])
    plot = ["plot", check, "-o", str(tmp_path / "p.png")]
    _usage_error(capsys, plot, ["a check document", "show and compare"])


@pytest.mark.root
def test_show_prints_a_saved_check_as_the_check_printed_it(
    tmpfs_check: Doc, capsys: pytest.CaptureFixture[str]
) -> None:
    check = str(tmpfs_check["json"])
    code, out, err = call_main(capsys, "show", check)
    assert (code, err) == (0, "")
    assert out == tmpfs_check["proc"].stdout
    assert "Note: tmpfs keeps files in memory" in out  # the notes and warnings come along
    # A row flag of a run's table has nothing to add to a check's.
    _usage_error(capsys, ["show", check, "--lat"], ["--lat", "check document"])


@pytest.mark.root
def test_show_of_a_check_that_ended_on_an_error_says_so(
    tmpfs_check: Doc, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = copy.deepcopy(tmpfs_check["doc"])
    message = "DIR/test.dat: ENOENT (No such file or directory)"
    doc["error"] = {"path": "DIR/test.dat", "offset": None, "errno": 2}
    doc["error"] |= {"errno_name": "ENOENT", "message": message}
    doc["interrupted"] = True
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    code, out, err = call_main(capsys, "show", str(path))
    assert (code, err) == (0, "")
    assert out.startswith(tmpfs_check["proc"].stdout.replace("No suspicious result.\n", ""))
    assert out.endswith(f"The check ended on an error: {message}\nThe check was interrupted.\n")


def test_usage_errors_name_dir_and_touch_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("x", encoding="utf-8")
    before = listing(tmp_path)
    cases = [
        ([str(tmp_path / "missing")], ["DIR:", "missing", "does not exist"]),
        ([str(tmp_path / "file")], ["DIR:", "file", "is not a directory"]),
        ([str(tmp_path), "--budget", "1"], ["--budget", "between 3 and 3600"]),
        ([str(tmp_path), "--json", str(tmp_path)], ["--json", "is a directory"]),
        ([str(tmp_path), "--markdown", str(tmp_path / "no" / "x.md")], ["--markdown"]),
    ]
    for args, needles in cases:
        _usage_error(capsys, ["check", *args], needles)
    assert listing(tmp_path) == before
    # And once as a real process.
    assert_usage_error(run_aiobench("check", str(tmp_path / "missing")), ["does not exist"])


@pytest.mark.root
def test_a_dir_without_the_space_is_refused_naming_both_figures(small_tmpfs: Path) -> None:
    before = listing(small_tmpfs)
    proc = run_aiobench("check", str(small_tmpfs), "--budget", "3")
    assert_usage_error(proc, [str(small_tmpfs), "needs 48 MiB free", "has 1.0 MiB available"])
    assert listing(small_tmpfs) == before


def _start_blocked(args: list[str]) -> subprocess.Popen[str]:
    """The child starts with SIGINT/SIGTERM blocked: one sent while Python itself starts
    waits for aiobench's handlers (see tests/run/test_signal_fuzz.py)."""
    env = dict(os.environ, PYTHONWARNINGS="error")
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "aiobench", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


@pytest.mark.root
def test_signals_at_random_moments_leave_nothing_behind(
    tmpfs_dir: Path, tmp_path: Path, validator: Draft202012Validator
) -> None:
    rng = random.Random(SEED)
    before = listing(tmpfs_dir)
    budget = plan.MIN_BUDGET_S
    stopped = 0
    for case in range(SIGNAL_RUNS):
        signum = (signal.SIGINT, signal.SIGTERM)[case % 2]
        delay = rng.uniform(0.0, budget + 1.0)  # start-up, every test, the cleanup
        out = tmp_path / f"{case}.json"
        args = ["check", str(tmpfs_dir), "--budget", str(budget), "--json", str(out)]
        child = _start_blocked(args)
        time.sleep(delay)
        child.send_signal(signum)
        stdout, stderr = child.communicate(timeout=WALL_GUARD_S)
        where = f"seed {SEED} case {case}: {signum.name} after {delay:.2f} s"
        assert "Traceback" not in stderr, (where, stderr)
        assert listing(tmpfs_dir) == before, where
        if child.returncode == 0:  # the check was over before the signal
            continue
        assert child.returncode == 128 + signum, (where, child.returncode, stderr)
        stopped += 1
        assert stderr.count(f"Interrupted by {signum.name}") == 1, (where, stderr)
        if out.exists():  # (not when the signal came before the check began)
            doc = json.loads(out.read_text(encoding="utf-8"))
            assert errors_of(validator, doc) == [], where
            assert doc["interrupted"] is True and doc["meta"]["signal"] == signum.name
            assert doc["meta"]["left_behind"] == []
            assert stdout.startswith(f"aiobench check {tmpfs_dir}: tmpfs"), where  # so far
    # (6 uniform draws over start-up and budget: all of them past the end is ~1e-6 likely)
    assert stopped >= 1, f"seed {SEED}: no signal came before the check ended"


@pytest.mark.root
def test_an_io_error_mid_check_reports_what_was_measured_and_cleans_up(
    fault_fs: FaultFs, tmp_path: Path, validator: Draft202012Validator
) -> None:
    """Reads of byte 4 MiB of any file fail with EIO: the first read test stops there."""
    mnt = fault_fs(eio_offset=4 << 20, eio_ops=("read",))
    before = _populate(mnt)
    out = tmp_path / "io.json"
    proc = run_aiobench(
        "check", str(mnt), "--budget", str(BUDGET_S), "--json", str(out), timeout=WALL_GUARD_S
    )
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    (error,) = [line for line in proc.stderr.splitlines() if line.startswith("Error: ")]
    assert "test.dat" in error and "offset 4194304" in error and "EIO" in error, error
    assert listing(mnt) == before
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert errors_of(validator, doc) == []
    assert doc["error"]["errno_name"] == "EIO" and doc["error"]["offset"] == 4 << 20
    status = {t["label"]: t["status"] for t in doc["tests"]}
    # The metadata test and the writes ran; the first read test ended with the error.
    # (On a loaded machine the FUSE mount's creates can run into their time guard, which
    # ends the metadata run before its stat and delete, as a time limit ends any run.)
    meta = {label: value for label, value in status.items() if label.startswith("META")}
    assert meta in (
        {"META create": "ok", "META stat": "ok", "META delete": "ok"},
        {"META create": "time_limited"},
    ), status
    assert {label: value for label, value in status.items() if label not in meta} == {
        "SEQ1M Q8T1 read": "error",
        "SEQ1M Q8T1 write": "time_limited",
        "SEQ1M Q1T1 write": "time_limited",
    }
    assert [f["rule"] for f in doc["findings"] if f["test"] == "SEQ1M Q8T1 read"] == ["status"]
    lines = proc.stdout.splitlines()
    assert any(line.startswith("SEQ1M Q8T1  write") for line in lines), proc.stdout
    assert any(line.endswith("(error)") for line in lines), proc.stdout


@pytest.mark.root
def test_a_broken_check_document_is_an_error_naming_the_place(
    tmpfs_check: Doc, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = str(tmpfs_check["json"])

    def broken(name: str, change: Any) -> str:
        doc = copy.deepcopy(tmpfs_check["doc"])
        change(doc)
        path = tmp_path / name
        path.write_text(json.dumps(doc), encoding="utf-8")
        return str(path)

    def set_run(doc: Doc) -> None:
        doc["tests"][0]["run"] = 999

    def set_op(doc: Doc) -> None:
        doc["tests"][1]["op"] = "fly"

    def set_hdr(doc: Doc) -> None:
        doc["runs"][2]["phases"][0]["latency"]["entries"]["hdr_histogram"] = "AAAA"

    def set_version(doc: Doc) -> None:
        doc["schema_version"] = 2

    cases = [
        (broken("run.json", set_run), ["run.json", "$.tests[0]: no run 999"]),
        (broken("op.json", set_op), ["op.json", "$.tests[1].op"]),
        (broken("hdr.json", set_hdr), ["hdr.json", "$.runs[2].phases[0].latency.entries"]),
        (broken("v2.json", set_version), ["v2.json", "schema_version 2"]),
    ]
    for path, needles in cases:
        _usage_error(capsys, ["compare", good, path], needles)


def _loop_dio(device: str) -> str:
    return Path(f"/sys/block/{os.path.basename(device)}/loop/dio").read_text("ascii").strip()


def _loop_findings(doc: Doc) -> list[str]:
    return [
        f["message"] for f in doc["findings"] if f["test"] is None and f["rule"] == "page_cache"
    ]


@pytest.mark.root
def test_a_loop_device_that_reads_its_backing_file_through_the_page_cache_is_flagged(
    ext4_loop: Ext4Loop, tmp_path: Path, validator: Draft202012Validator
) -> None:
    """ext4 on a loop device over a file on disk with the loop's direct I/O off: the
    check's O_DIRECT reads come from the host's page cache of that file, as fast as
    memory; sysfs says so (loop/dio 0), and the check names it. With it on: no word."""
    mnt = ext4_loop.setup(256 << 20, on_disk=True, direct_io=False)
    assert ext4_loop.device is not None and ext4_loop.backing is not None
    if _loop_dio(ext4_loop.device) != "0":
        pytest.skip(f"{ext4_loop.device}: losetup --direct-io=off did not take")
    proc, doc = _check(mnt, tmp_path / "cached.json")
    assert errors_of(validator, doc) == []
    (message,) = _loop_findings(doc)
    assert message.startswith(f"{ext4_loop.device}, which holds DIR's filesystem, reads and ")
    assert ext4_loop.backing in message and "direct I/O is off" in message
    assert f"Warning: {message}." in proc.stdout
    assert "No suspicious result" not in proc.stdout
    # The same device bypassing the page cache: the check has nothing to say of it.
    switched = run_tool("losetup", "--direct-io=on", ext4_loop.device)
    if switched.returncode or _loop_dio(ext4_loop.device) != "1":
        pytest.skip(f"losetup --direct-io=on {ext4_loop.device}: {switched.stderr.strip()}")
    _, direct = _check(mnt, tmp_path / "direct.json")
    assert _loop_findings(direct) == []


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class _Planter:
    """Puts a link named ``name`` to ``target`` into the check's directory as soon as it
    appears in ``root`` (``delay`` s after the check's own ``after`` file is there, if
    given): made under another name, then renamed over whatever is there, as an attacker
    would. Runs in a thread while the check runs."""

    def __init__(self, root: Path, name: str, kind: str, target: Path, after: str = "") -> None:
        self.root, self.name, self.kind, self.target, self.after = root, name, kind, target, after
        self.planted: Path | None = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        deadline = time.monotonic() + WALL_GUARD_S
        while not self.done.is_set() and time.monotonic() < deadline:
            found = [
                p for p in self.root.glob(".aiobench-check-*") if p.name != ".aiobench-check-mine"
            ]
            if found and (not self.after or (found[0] / self.after).exists()):
                if self.after:
                    time.sleep(0.3)  # into the tests on that file
                self._plant(found[0])
                return
            time.sleep(0.001)

    def _plant(self, workdir: Path) -> None:
        spare = workdir / f".planted-{self.name}"
        with contextlib.suppress(OSError):
            if self.kind == "symlink":
                spare.symlink_to(self.target)
            else:
                os.link(self.target, spare)
            os.rename(spare, workdir / self.name)
            self.planted = workdir / self.name

    def stop(self) -> None:
        self.done.set()
        self.thread.join()


@pytest.mark.root
@pytest.mark.parametrize(
    ("name", "kind", "after"),
    [
        ("cal.dat", "symlink", ""),
        ("cal.dat", "hardlink", ""),
        ("test.dat", "symlink", ""),
        ("test.dat", "hardlink", ""),
        ("test.dat", "symlink", "test.dat"),  # raced in while the tests use the file
        ("test.dat", "hardlink", "test.dat"),
    ],
)
def test_a_link_planted_in_the_checks_directory_is_an_error_never_written_through(
    tmp_path: Path, validator: Draft202012Validator, name: str, kind: str, after: str
) -> None:
    """DIR is a directory of a tmpfs; the file outside it (on the same filesystem, for a
    hard link) must come out of the check byte for byte as it went in."""
    with mounted_tmpfs(tmp_path / "mnt", "size=256m") as mnt:
        _planted(mnt, tmp_path, validator, name, kind, after)


def _planted(
    mnt: Path, tmp_path: Path, validator: Draft202012Validator, name: str, kind: str, after: str
) -> None:
    root = mnt / "dir"
    root.mkdir()
    outside = mnt / "outside.bin"
    outside.write_bytes(os.urandom(1 << 20))
    before, sha = listing(root), _sha(outside)
    out = tmp_path / "planted.json"
    planter = _Planter(root, name, kind, outside, after)
    try:
        proc = run_aiobench(
            "check", str(root), "--budget", "3", "--json", str(out), timeout=WALL_GUARD_S
        )
    finally:
        planter.stop()
    try:
        assert planter.planted is not None, "the check's directory never appeared"
        assert _sha(outside) == sha and outside.stat().st_size == 1 << 20
        assert "Traceback" not in proc.stderr
        assert proc.returncode == 1, (proc.stdout, proc.stderr)
        (error,) = [line for line in proc.stderr.splitlines() if line.startswith("Error: ")]
        assert str(planter.planted) in error, error
        assert any(e in error for e in ("EEXIST", "ELOOP")), error
        doc = json.loads(out.read_text(encoding="utf-8"))
        assert errors_of(validator, doc) == []
        assert doc["error"]["path"] == str(planter.planted)
        # The link stays (not the check's to remove), and is named; nothing else is left.
        assert f"{planter.planted} (not the file the check made)" in doc["meta"]["left_behind"]
    finally:
        for workdir in root.glob(".aiobench-check-*"):
            shutil.rmtree(workdir)
    assert listing(root) == before


def _sabotaged(
    root: Path, out: Path, harm: Callable[[Path], None]
) -> subprocess.CompletedProcess[str]:
    """A check of ``root`` whose directory ``harm`` gets once its test file is there."""
    child = subprocess.Popen(
        [sys.executable, "-m", "aiobench", "check", str(root), "--budget", "4", "--json", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONWARNINGS="error"),
    )
    try:
        deadline = time.monotonic() + WALL_GUARD_S
        while child.poll() is None and time.monotonic() < deadline:
            found = list(root.glob(".aiobench-check-*/test.dat"))
            if found:
                harm(found[0])
                break
            time.sleep(0.001)
        stdout, stderr = child.communicate(timeout=WALL_GUARD_S)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()  # (and its pipes closed)
    return subprocess.CompletedProcess(child.args, child.returncode, stdout, stderr)


def _shrink(test_file: Path) -> None:
    """Cut the test file to 1 MiB, again and again while the check has it (its writes
    lengthen it again), so the tests after the fill find it short."""
    deadline = time.monotonic() + WALL_GUARD_S
    while time.monotonic() < deadline:
        try:
            os.truncate(test_file, 1 << 20)
        except FileNotFoundError:
            return
        time.sleep(0.002)


def _remove_dir(test_file: Path) -> None:
    """Remove the check's directory while it works in it (its own entries come and go
    meanwhile, which one rmtree may trip over: again until it is gone)."""
    time.sleep(0.2)  # into the tests
    deadline = time.monotonic() + WALL_GUARD_S
    while test_file.parent.exists() and time.monotonic() < deadline:
        with contextlib.suppress(OSError):  # (an entry gone, or a new one, meanwhile)
            shutil.rmtree(test_file.parent)


@pytest.mark.root
@pytest.mark.parametrize(("harm", "needles"), [
    (_shrink, ["test.dat", "EIO"]),
    (_remove_dir, [".aiobench-check-", "ENOENT"]),
])  # fmt: skip
def test_a_run_that_fails_as_dir_changes_still_writes_the_json(
    tmp_path: Path,
    validator: Draft202012Validator,
    harm: Callable[[Path], None],
    needles: list[str],
) -> None:
    """The test file cut short, or the check's directory removed, while the check runs: a
    run-time error (exit 1, one Error line naming the path and the errno) and the JSON
    document with what was measured until then."""
    out = tmp_path / "harmed.json"
    with mounted_tmpfs(tmp_path / "mnt", "size=256m") as root:
        proc = _sabotaged(root, out, harm)
        left = listing(root)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    (error,) = [line for line in proc.stderr.splitlines() if line.startswith("Error: ")]
    assert all(n in error for n in needles), error
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert errors_of(validator, doc) == []
    assert doc["error"]["errno_name"] == needles[1]
    assert needles[0] in doc["error"]["path"]
    assert doc["runs"] and doc["meta"]["calibration"] is not None  # what ran is there
    assert left == {}
