"""Hostile input files for ``show``, ``compare`` and ``plot``: one ``Error:`` line, exit 2.

Special files (a FIFO, ``/dev/zero`` behind a symlink, a directory, a sparse file over the
size cap) are refused without blocking and without reading them; corrupt documents, made
from a real saved run (named cases, then a few hundred seeded random mutations), are refused
without a traceback; and names with escape sequences reach the terminal escaped. The
special files and the run go through real processes of the CLI; the corpus goes through
:func:`aiobench.cli.main` in this process, to stay fast.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from aiobench.errors import ConfigError
from aiobench.render.compare import render_compare
from aiobench.render.live import progress_text
from aiobench.render.table import TableOptions, render_table
from aiobench.results.infile import read_regular_file
from aiobench.results.model import Progress
from aiobench.results.saved import MAX_DOCUMENT_BYTES, load_run
from aiobench.results.shape import MAX_CONTAINERS, MAX_VALUES
from tests.helpers import DATA, call_main, errors_of, run_aiobench

pytestmark = pytest.mark.slow  # real CLI runs (see tests/conftest.py)

HEADER = "OPERATION   RESULT TYPE"
ESC = "\x1b"
Doc = dict[str, Any]
# A `show` that reads nothing big stays near the interpreter's own ~70 MiB; reading
# /dev/zero or a file of the 256 MiB cap would pass this within a fraction of a second.
MAX_RSS_BYTES = 192 << 20
# Only a guard for a busy machine: a refused file takes about a second (start-up).
GUARD_S = 60
# Small, but long enough for a few 50 ms intervals: 4 threads' 128 KiB at 1 MiB/s each.
RUN = (
    "-w", "-r", "-b", "16k", "-s", "256k", "-t", "4", "--limitwrite", "1m",
    "--limitread", "2m", "--liveint", "50", "t1", "t2",
)  # fmt: skip


# ---------------------------------------------------------------------------------------
# helpers


@dataclasses.dataclass(frozen=True)
class Finished:
    code: int
    stdout: str
    stderr: str
    max_rss_bytes: int


def run_watched(*args: str, cwd: Path) -> Finished:
    """The CLI as a real process, killed as soon as its RSS passes :data:`MAX_RSS_BYTES`
    or :data:`GUARD_S` pass (a failure either way); its own peak RSS, sampled as it runs.

    Not wait4()'s ru_maxrss: Linux carries the peak of the memory image a child was forked
    from across exec, so a child of a big pytest process reports pytest's peak. VmHWM in
    /proc is the peak of the program's own image since exec."""
    out, err = cwd / "watched.out", cwd / "watched.err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "aiobench", *args], stdout=stdout, stderr=stderr, cwd=cwd
        )
    deadline = time.monotonic() + GUARD_S
    peak = 0
    while True:
        pid, status, _ = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            break
        rss = _status_bytes(proc.pid, "VmRSS:")
        peak = max(peak, _status_bytes(proc.pid, "VmHWM:"))
        if rss > MAX_RSS_BYTES or time.monotonic() > deadline:
            os.kill(proc.pid, signal.SIGKILL)
            os.wait4(proc.pid, 0)
            proc.returncode = -signal.SIGKILL
            pytest.fail(f"aiobench {' '.join(args)}: killed at RSS {rss >> 20} MiB")
        time.sleep(0.05)
    return Finished(
        proc.returncode,
        out.read_text(encoding="utf-8", errors="replace"),
        err.read_text(encoding="utf-8", errors="replace"),
        peak,
    )


def _status_bytes(pid: int, key: str) -> int:
    """A ``kB`` line of /proc/PID/status (VmRSS, VmHWM) in bytes; 0 once it exited."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="ascii")
    except OSError:
        return 0  # exited meanwhile
    kib = next((line.split()[1] for line in status.splitlines() if line.startswith(key)), "0")
    return int(kib) * 1024


def assert_refused(code: int, out: str, err: str, path: str) -> str:
    """Exit 2, nothing on stdout, one ``Error: PATH: ...`` line: that line."""
    assert code == 2, (code, out, err)
    assert out == ""
    assert "Traceback" not in err
    assert err.count("\n") == 1 and err.startswith(f"Error: {path}: "), err
    return err.rstrip("\n")


def commands(bad: str, good: str) -> list[tuple[str, ...]]:
    """show, compare (the bad file as A and as B) and plot of ``bad``."""
    return [
        ("show", bad),
        ("compare", bad, good),
        ("compare", good, bad),
        ("plot", bad, "-o", "plot.png"),
    ]


def leaves(node: object, path: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """The path of every value in a parsed document, containers included (root excepted)."""
    if path:
        yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from leaves(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from leaves(value, (*path, i))


def parent_of(doc: Doc, path: tuple[str | int, ...]) -> Any:
    node: Any = doc
    for key in path[:-1]:
        node = node[key]
    return node


def with_raw(doc: Doc, place: Callable[[Doc], tuple[Any, str | int]], raw: str) -> bytes:
    """``doc`` as JSON with the value at ``place`` spelled ``raw`` (JSON json.dumps won't
    write: 5000 digits, NaN where a number goes, deep nesting)."""
    doc = copy.deepcopy(doc)
    parent, key = place(doc)
    parent[key] = "@RAW@"
    return json.dumps(doc, indent=2).replace('"@RAW@"', raw, 1).encode()


# ---------------------------------------------------------------------------------------
# a real saved run, made once for this module


@pytest.fixture(scope="module")
def run_doc(tmp_path_factory: pytest.TempPathFactory) -> Doc:
    """A real ``--json`` document with intervals, per-target counts and sched latency."""
    work = tmp_path_factory.mktemp("hostile")
    proc = run_aiobench(*RUN, "--json", "run.json", cwd=work)
    assert proc.returncode == 0, proc.stderr
    doc: Doc = json.loads((work / "run.json").read_text(encoding="utf-8"))
    assert all(len(p["intervals"]) >= 2 for p in doc["phases"]), "the run was too quick"
    assert all("sched" in p["latency"] for p in doc["phases"])
    return doc


@pytest.fixture
def good(run_doc: Doc, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The real run saved as good.json in the test's directory, which is the cwd."""
    (tmp_path / "good.json").write_text(json.dumps(run_doc, indent=2), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return "good.json"


def test_the_real_run_and_the_frozen_examples_load(
    good: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The corpus below starts from documents that are accepted, so each refusal is the
    mutation's doing; versions 1 and 2 keep loading."""
    for path in (good, str(DATA / "example-result.json"), str(DATA / "example-result-v1.json")):
        code, out, err = call_main(capsys, "show", path)
        assert (code, err) == (0, ""), err
        assert out.startswith(HEADER)
        code, out, err = call_main(capsys, "compare", good, path)
        assert (code, err) == (0, ""), err


# ---------------------------------------------------------------------------------------
# special files: refused from fstat(), never read


def test_symlink_to_dev_zero_is_refused_without_reading(good: str, tmp_path: Path) -> None:
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    for args in commands("zero.json", good):
        done = run_watched(*args, cwd=tmp_path)
        line = assert_refused(done.code, done.stdout, done.stderr, "zero.json")
        assert "not a regular file (a character device)" in line
        assert done.max_rss_bytes < MAX_RSS_BYTES


def test_file_over_the_cap_is_refused_without_reading(good: str, tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as handle:  # sparse: no block of it is written
        handle.truncate(MAX_DOCUMENT_BYTES + 1)
    done = run_watched("show", "big.json", cwd=tmp_path)
    line = assert_refused(done.code, done.stdout, done.stderr, "big.json")
    assert f"{MAX_DOCUMENT_BYTES + 1} bytes, more than the {MAX_DOCUMENT_BYTES}" in line
    assert done.max_rss_bytes < MAX_RSS_BYTES


@pytest.mark.parametrize(
    ("item", "what"),
    [(b"[],", "objects and arrays"), (b"0,", "values")],
    ids=["empty-lists", "zeros"],
)
def test_junk_under_the_cap_is_refused_before_it_is_built(
    good: str, tmp_path: Path, item: bytes, what: str
) -> None:
    """250 MiB of ``[],[],…`` is 87 million lists once parsed (6.7 GB, 40 s): refused by
    its count of containers or values while it is read, in little memory and time."""
    junk = tmp_path / "junk.json"
    block = item * ((1 << 20) // len(item))
    with junk.open("wb") as handle:
        handle.write(b"[")
        while handle.tell() < 250 << 20:
            handle.write(block)
        handle.write(b"0]")
    assert junk.stat().st_size < MAX_DOCUMENT_BYTES  # the size cap does not refuse it
    for args in commands("junk.json", good):
        done = run_watched(*args, cwd=tmp_path)
        line = assert_refused(done.code, done.stdout, done.stderr, "junk.json")
        assert f"over {MAX_CONTAINERS if item == b'[],' else MAX_VALUES:,} {what}" in line
        assert done.max_rss_bytes < MAX_RSS_BYTES


def test_fifo_is_refused_without_blocking(good: str, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.json")
    for args in commands("fifo.json", good):
        try:
            proc = run_aiobench(*args, timeout=GUARD_S, cwd=tmp_path)
        except subprocess.TimeoutExpired:
            pytest.fail(f"aiobench {' '.join(args)} blocked on the FIFO")
        line = assert_refused(proc.returncode, proc.stdout, proc.stderr, "fifo.json")
        assert "not a regular file (a FIFO)" in line


def test_directory_is_refused(
    good: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "dir.json").mkdir()
    for args in commands("dir.json", good):
        line = assert_refused(*call_main(capsys, *args), "dir.json")
        assert "not a regular file (a directory)" in line


def test_symlink_to_a_regular_file_is_read(good: str, tmp_path: Path) -> None:
    (tmp_path / "link.json").symlink_to(tmp_path / good)
    proc = run_aiobench("show", "link.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == run_aiobench("show", good, cwd=tmp_path).stdout


def test_a_file_that_reads_longer_than_its_size_stops_at_the_cap() -> None:
    """/proc files are regular with st_size 0: the cap holds for what is read, not only
    for what fstat() says."""
    status = Path("/proc/self/status")
    assert status.stat().st_size == 0
    assert len(read_regular_file(str(status), 1 << 20)) > 100
    with pytest.raises(ConfigError, match=r"^/proc/self/status: more than the 100 bytes"):
        read_regular_file(str(status), 100)


# ---------------------------------------------------------------------------------------
# corrupt documents: named cases


def _phase0(key: str) -> Callable[[Doc], tuple[Any, str | int]]:
    return lambda d: (d["phases"][0], key)


def _io(key: str) -> Callable[[Doc], tuple[Any, str | int]]:
    return lambda d: (d["phases"][0]["latency"]["io"], key)


def _ops(d: Doc) -> tuple[Any, str | int]:
    return d["phases"][0]["last_done"], "ops"


def _edited(edit: Callable[[Doc], object]) -> Callable[[Doc], bytes]:
    def make(doc: Doc) -> bytes:
        doc = copy.deepcopy(doc)
        edit(doc)
        return json.dumps(doc, indent=2).encode()

    return make


def _nulled(node: object) -> object:
    if isinstance(node, dict):
        return {key: _nulled(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_nulled(value) for value in node]
    return None


def _all_null(doc: Doc) -> bytes:
    """Every value null but the version (else the version is all the error says)."""
    nulled = {key: _nulled(value) for key, value in doc.items()}
    return json.dumps({**nulled, "schema_version": 3}).encode()


def _truncated_histogram(d: Doc) -> None:
    io = d["phases"][1]["latency"]["io"]
    io["hdr_histogram"] = io["hdr_histogram"][:40]  # still base64 as the schema wants


def _miscounted_histogram(d: Doc) -> None:
    d["phases"][0]["intervals"][0]["latency"]["io"]["count"] += 1


# name -> (document bytes from the real run's document, a word the error line must hold)
CORRUPT: dict[str, tuple[Callable[[Doc], bytes], str]] = {
    "deep-nesting": (lambda d: with_raw(d, _ops, "[" * 100_000 + "]" * 100_000), "nested"),
    "deep-nesting-in-meta": (
        lambda d: with_raw(d, lambda d: (d["meta"], "x"), "{" + '"a":{' * 50_000 + "}" * 50_001),
        "nested",
    ),
    "5000-digits": (lambda d: with_raw(d, _ops, "1" + "0" * 4999), "out of range"),
    "21-digits": (lambda d: with_raw(d, _ops, str(2**64)), "out of range"),
    "1e308": (lambda d: with_raw(d, _io("mean_ns"), "1e308"), "out of range"),
    "1e999": (lambda d: with_raw(d, _io("mean_ns"), "1e999"), "out of range"),
    "nan": (lambda d: with_raw(d, _io("stddev_ns"), "NaN"), "NaN"),
    "infinity": (lambda d: with_raw(d, _ops, "-Infinity"), "Infinity"),
    "string-for-number": (_edited(lambda d: _ops(d)[0].update(ops="32")), "last_done.ops"),
    "bool-for-number": (_edited(lambda d: _ops(d)[0].update(ops=True)), "last_done.ops"),
    "float-for-count": (_edited(lambda d: _ops(d)[0].update(ops=1.5)), "last_done.ops"),
    "negative-count": (_edited(lambda d: _ops(d)[0].update(ops=-1)), "last_done.ops"),
    "empty-percentiles": (
        _edited(lambda d: d["phases"][0]["latency"]["io"].update(percentiles_ns={})),
        "percentiles_ns",
    ),
    "missing-key": (_edited(lambda d: d["phases"][0].pop("last_done")), "last_done"),
    "missing-meta": (_edited(lambda d: d.pop("meta")), "meta"),
    "list-for-object": (_edited(lambda d: d["phases"][0].update(latency=[])), "latency"),
    "object-for-list": (_edited(lambda d: d.update(phases={})), "phases"),
    "list-of-lists": (_edited(lambda d: d["phases"][0].update(threads=[[1, 2]])), "threads"),
    "null-everywhere": (_all_null, "$.meta"),
    "null-phase": (_edited(lambda d: d["phases"].append(None)), "phases[2]"),
    "unknown-phase-name": (_edited(lambda d: d["phases"][0].update(phase="ERASE")), "phase"),
    "broken-hdr-histogram": (_edited(_truncated_histogram), "hdr_histogram"),
    "hdr-histogram-of-another-count": (_edited(_miscounted_histogram), "intervals[0]"),
    "not-utf8": (lambda d: b'{"phases": "\xff\xfe"}', "UTF-8"),
    "empty-file": (lambda d: b"", "JSON"),
    "top-level-list": (lambda d: b"[1, 2]", "result document"),
    "version-true": (_edited(lambda d: d.update(schema_version=True)), "schema_version"),
    "version-2.0": (_edited(lambda d: d.update(schema_version=2.0)), "schema_version"),
}


@pytest.mark.parametrize("case", sorted(CORRUPT))
def test_corrupt_document_is_one_error_line_everywhere(
    case: str, run_doc: Doc, good: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make, needle = CORRUPT[case]
    (tmp_path / "bad.json").write_bytes(make(run_doc))
    for args in commands("bad.json", good):
        line = assert_refused(*call_main(capsys, *args), "bad.json")
        assert needle in line, (args, line)
        assert len(line) < 300
    assert not (tmp_path / "plot.png").exists()


def test_schema_error_names_the_json_path(
    run_doc: Doc, good: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = copy.deepcopy(run_doc)
    doc["phases"][1]["intervals"][1]["latency"]["io"]["percentiles_ns"]["99.9"] = "fast"
    (tmp_path / "bad.json").write_text(json.dumps(doc), encoding="utf-8")
    line = assert_refused(*call_main(capsys, "show", "bad.json"), "bad.json")
    assert line == (
        "Error: bad.json: $.phases[1].intervals[1].latency.io.percentiles_ns.99.9: must be integer"
    )


def test_version_1_document_is_checked_against_its_own_shape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Version 1 lacks intervals and more, but what it has must be right."""
    doc = json.loads((DATA / "example-result-v1.json").read_text(encoding="utf-8"))
    doc["phases"][0]["threads"][0]["ops"] = "16"
    (tmp_path / "v1.json").write_text(json.dumps(doc), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    line = assert_refused(*call_main(capsys, "show", "v1.json"), "v1.json")
    assert "$.phases[0].threads[0].ops: must be integer" in line
    # A version-2 document without the keys version 1 lacks is not read as version 1.
    doc = json.loads((DATA / "example-result.json").read_text(encoding="utf-8"))
    del doc["phases"][0]["intervals"]
    (tmp_path / "v2.json").write_text(json.dumps(doc), encoding="utf-8")
    line = assert_refused(*call_main(capsys, "show", "v2.json"), "v2.json")
    assert "$.phases[0]: must contain" in line and "intervals" in line


# ---------------------------------------------------------------------------------------
# corrupt documents: a few hundred random mutations of the real run

# Any value at all in any place: mostly what the schema refuses.
_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**66), max_value=2**66),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.lists(st.integers(min_value=0, max_value=3), max_size=2),
    st.dictionaries(st.sampled_from(["count", "ops", "x"]), st.integers(0, 3), max_size=2),
)
# A value of the kind already there (a list emptied): mostly what the schema allows, so
# the renderers meet odd counts, empty lists and any text.
_SAME_KIND = st.tuples(
    st.integers(min_value=0, max_value=2**64 - 1),
    st.floats(min_value=0, max_value=2.0**64),
    st.text(max_size=12),
)
_EDITS = st.sampled_from(["<delete>", "<as-string>", "<in-list>"])
# (where, what): where indexes the document's paths; what is one of the above
_MUTATIONS = st.lists(
    st.tuples(st.integers(min_value=0), st.one_of(_VALUES, _SAME_KIND, _EDITS)),
    min_size=1,
    max_size=3,
)
# For plot, whose refusals are show's: values of the kind already there, so that most
# documents are drawn.
_KIND_MUTATIONS = st.lists(st.tuples(st.integers(min_value=0), _SAME_KIND), min_size=1, max_size=3)


def _same_kind(old: object, kinds: tuple[int, float, str]) -> object:
    number, real, text = kinds
    if isinstance(old, list):
        return []
    by_type: dict[type, object] = {int: number, float: real, str: text}
    return by_type.get(type(old), old)


def mutated(doc: Doc, mutations: list[tuple[int, object]]) -> Doc:
    doc = copy.deepcopy(doc)
    for where, what in mutations:
        paths = list(leaves(doc))
        if not paths:
            break
        path = paths[where % len(paths)]
        parent, key = parent_of(doc, path), path[-1]
        old = parent[key]
        if what == "<delete>":
            del parent[key]
        elif what == "<as-string>":
            parent[key] = str(old)
        elif what == "<in-list>":
            parent[key] = [old]
        elif isinstance(what, tuple):  # JSON has no tuples: only _SAME_KIND draws one
            parent[key] = _same_kind(old, what)
        else:
            parent[key] = what
    return doc


HYPOTHESIS = settings(
    max_examples=300,
    derandomize=True,  # the same corpus in every run and in CI
    database=None,
    deadline=None,
    # No shrinking: a failing example is at most three edits as it is, and shrinking
    # plot examples took minutes.
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@HYPOTHESIS
@given(mutations=_MUTATIONS)
def test_mutated_run_is_shown_or_refused_never_a_traceback(
    mutations: list[tuple[int, object]],
    run_doc: Doc,
    good: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    validator: Draft202012Validator,
) -> None:
    doc = mutated(run_doc, mutations)
    (tmp_path / "bad.json").write_text(json.dumps(doc), encoding="utf-8")
    for args in commands("bad.json", good)[:3]:
        code, out, err = call_main(capsys, *args)
        event(f"{args[0]} exit {code}")  # --hypothesis-show-statistics counts them
        assert ESC not in out + err
        if code == 0:  # a mutation the schema allows (a label, a number in range)
            assert err == ""
            assert out.startswith(HEADER if args[0] == "show" else "A: ")
            # fastjsonschema (draft 2019-09 rules) lets nothing through that the
            # published draft 2020-12 schema refuses
            assert errors_of(validator, doc) == []
        elif args[0] == "compare" and err.endswith(" have no phase in common\n"):
            # A valid document whose phases were renamed: nothing to compare with.
            refusal = f"Error: {args[1]} and {args[2]} have no phase in common\n"
            assert (code, out, err) == (2, "", refusal)
            assert errors_of(validator, doc) == []
        else:
            assert_refused(code, out, err, "bad.json")


@settings(HYPOTHESIS, max_examples=12)  # ~2 s a drawing
@given(mutations=_KIND_MUTATIONS)
def test_mutated_run_is_plotted_or_refused_never_a_traceback(
    mutations: list[tuple[int, object]],
    run_doc: Doc,
    good: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = mutated(run_doc, mutations)
    (tmp_path / "bad.json").write_text(json.dumps(doc), encoding="utf-8")
    code, out, err = call_main(capsys, "plot", "bad.json", "-o", "plot.png")
    event(f"plot exit {code}")
    if code == 0:
        assert (out, err) == ("", "")
        assert (tmp_path / "plot.png").stat().st_size > 0
    else:
        assert_refused(code, out, err, "bad.json")


def test_label_that_looks_like_math_is_plotted(
    run_doc: Doc, good: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """matplotlib would parse ``$...$`` in the title as math, and fail on this one; it has
    no glyph for an escape or for U+06C1 and would warn (an error under pytest) for each."""
    doc = copy.deepcopy(run_doc)
    doc["meta"]["label"] = "$\\frac{$ \x1b[31mred \u06c1"
    (tmp_path / "math.json").write_text(json.dumps(doc), encoding="utf-8")
    assert call_main(capsys, "plot", "math.json", "-o", "plot.png") == (0, "", "")
    assert (tmp_path / "plot.png").stat().st_size > 0


def test_plot_that_cannot_be_written_is_an_io_error(
    good: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = call_main(capsys, "plot", good, "-o", "/dev/full")
    assert (code, out) == (1, "")
    assert err == "Error: -o/--output: /dev/full: ENOSPC (No space left on device)\n"


# ---------------------------------------------------------------------------------------
# escape sequences: shown escaped, never sent raw


def test_escape_sequences_in_saved_names_are_shown_escaped(
    run_doc: Doc,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = copy.deepcopy(run_doc)
    doc["meta"]["label"] = "\x1b[31mred\x1b[0m"
    for phase in doc["phases"]:
        phase["per_target"]["targets"][0]["path"] = "\x1b]0;pwned\x07t1"
    name = "run\x1b[2J.json"
    (tmp_path / name).write_text(json.dumps(doc), encoding="utf-8")
    monkeypatch.chdir(tmp_path)

    code, out, err = call_main(capsys, "show", "--pertarget", name)
    assert (code, err) == (0, "")
    assert out.count("  \\x1b]0;pwned\\x07t1\n") == len(doc["phases"])
    assert ESC not in out and "\x07" not in out

    code, out, err = call_main(capsys, "compare", name, name)
    assert (code, err) == (0, "")
    assert out.startswith("A: run\\x1b[2J.json  ")
    assert "label '\\x1b[31mred\\x1b[0m'" in out
    assert ESC not in out


def test_escape_sequences_in_error_lines_are_escaped(
    run_doc: Doc,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = call_main(capsys, "show", "gone\x1b[2J.json")
    assert (code, out) == (2, "")
    assert err == "Error: gone\\x1b[2J.json: No such file or directory\n"
    # A phase name is one of aiobench's: the schema refuses any other, escapes and all.
    doc = copy.deepcopy(run_doc)
    doc["phases"][0]["phase"] = "\x1b[2JWRITE"
    (tmp_path / "phase.json").write_text(json.dumps(doc), encoding="utf-8")
    line = assert_refused(*call_main(capsys, "show", "phase.json"), "phase.json")
    assert line == "Error: phase.json: $.phases[0].phase: is none of the values allowed there"
    # An option typer does not know is named in its message.
    code, _, err = call_main(capsys, "show", "--\x1b[2J")
    assert code == 2 and ESC not in err and "--\\x1b[2J" in err


def test_phase_names_are_escaped_by_the_renderers() -> None:
    """Phase names of a loaded document are aiobench's own (the schema says so); the
    renderers escape them anyway, as every name they print."""
    run = load_run(str(DATA / "example-result.json"))
    hostile = "\x1b[2JWRITE"
    phases = [dataclasses.replace(p, name=hostile) for p in run.phases]
    run = dataclasses.replace(run, phases=phases)
    table = render_table(run.phases, TableOptions(pertarget=True))
    assert table.count("\\x1b[2JWRITE") >= 2 * len(phases) and ESC not in table
    compared = render_compare(run, run, "a.json", "b.json")
    assert "\\x1b[2JWRITE" in compared and ESC not in compared
    live = Progress(
        phase=hostile,
        elapsed_ns=10**9,
        done_percent=50,
        done_bytes=1,
        bytes_per_s=1,
        iops=1,
        entries_per_s=0,
        eta_ns=None,
        dir_mode=False,
    )
    assert progress_text(live).startswith("\\x1b[2JWRITE   50%")


def test_escape_sequences_in_a_note_are_escaped(tmp_path: Path) -> None:
    """Dir mode notes a dir of its layout that is already there, naming it."""
    root = tmp_path / "d\x1b[2J"
    root.mkdir()
    args = ("-d", "-n", "1", "-N", "1", "--nolive", str(root))
    first = run_aiobench(*args, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    again = run_aiobench(*args, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "d\\x1b[2J" in again.stderr and "already exists" in again.stderr
    assert ESC not in again.stderr + again.stdout
