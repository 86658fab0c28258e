"""Dir mode through the real CLI: phases, layout names, cleanup, usage and run-time errors.

Every run is a real ``python -m aiobench`` process; trees are compared entry by entry with
the layout the issue specifies (``PATH/r<r>/d<i>/r<r>-f<j>``), and every ``--json``
document is validated against the shipped schema.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from aiobench.plan.targets import filesystem_type
from tests.helpers import RunCli, assert_usage_error, listing, mounted_tmpfs, without_chance_rows

Doc = dict[str, Any]
Tree = dict[str, int | None]  # relative path -> file size, None for a dir
Rows = list[tuple[str, str]]  # (result type, values) of one phase block

ALL_PHASES = ["MKDIRS", "WRITE", "STAT", "READ", "RMFILES", "RMDIRS"]
FILE_PHASES = ["WRITE", "STAT", "READ", "RMFILES"]
HEADER = "OPERATION   RESULT TYPE         FIRST DONE   LAST DONE"
UNRELATED = {"keep.txt": b"not part of the layout\n", "sub/inner.bin": b"\x00\x01inner"}


# ---------------------------------------------------------------------------------------
# helpers


def read_doc(path: Path, validator: Draft202012Validator) -> Doc:
    """Parse a ``--json`` document and check it against the shipped schema."""
    return parse_doc(path.read_text(encoding="utf-8"), validator)


def parse_doc(text: str, validator: Draft202012Validator) -> Doc:
    doc: Doc = json.loads(text)
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(doc)]
    assert errors == []
    return doc


def phases_of(doc: Doc) -> dict[str, Doc]:
    return {p["phase"]: p for p in doc["phases"]}


def tree(root: Path) -> Tree:
    """Every entry below ``root``: files with their size, dirs as None."""
    out: Tree = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            out[str(Path(dirpath, name).relative_to(root))] = None
        for name in filenames:
            path = Path(dirpath, name)
            out[str(path.relative_to(root))] = path.lstat().st_size
    return out


def layout_tree(dirs: list[str], files: list[str], size: int) -> Tree:
    out: Tree = dict.fromkeys(dirs)
    out.update(dict.fromkeys(files, size))
    return out


def plain_layout(threads: int, dirs: int, files: int) -> tuple[list[str], list[str]]:
    """Dirs and files of a one-PATH layout without --dirsharing, as the issue names them."""
    dir_names = [f"r{r}" for r in range(threads)]
    dir_names += [f"r{r}/d{i}" for r in range(threads) for i in range(dirs)]
    file_names = [
        f"r{r}/d{i}/r{r}-f{j}" for r in range(threads) for i in range(dirs) for j in range(files)
    ]
    return dir_names, file_names


def add_unrelated(root: Path) -> None:
    for rel, data in UNRELATED.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def assert_unrelated_intact(root: Path) -> None:
    for rel, data in UNRELATED.items():
        assert (root / rel).read_bytes() == data, rel


def unrelated_tree() -> Tree:
    out: Tree = {"sub": None}
    out.update({rel: len(data) for rel, data in UNRELATED.items()})
    return out


def table_blocks(text: str) -> list[tuple[str, Rows]]:
    """The phase blocks of an elbencho-style table: (operation, [(result type, values)])."""
    lines = without_chance_rows(text).splitlines()
    start = lines.index(HEADER)
    assert lines[start + 1].startswith("=========== ================"), lines
    blocks: list[tuple[str, Rows]] = []
    for line in lines[start + 2 :]:
        if line == "---":
            continue
        if line.startswith(("Note: ", "Error: ")):
            break
        op = line[:11].strip()
        name, sep, values = line[12:].partition(":")
        assert sep, line
        if op:
            blocks.append((op, []))
        blocks[-1][1].append((name.strip(), values.strip()))
    return blocks


def row_names(rows: Rows) -> list[str]:
    return [name for name, _ in rows]


def last_value(rows: Rows, name: str) -> int:
    (values,) = [v for n, v in rows if n == name]
    return int(values.split()[-1])


def ok(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    assert "Error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    return proc


DIR_ROWS = ["Elapsed time", "Dirs/s", "Dirs total", "Dirs latency", "Dirs lat % us"]
META_ROWS = ["Elapsed time", "Files/s", "Files total", "Files latency", "Files lat % us"]
ONE_BLOCK_ROWS = [
    "Elapsed time", "Files/s", "Throughput MiB/s", "Total MiB", "Files total",
    "Files latency", "Files lat % us", "IO latency", "IO lat % us",
]  # fmt: skip
MULTI_BLOCK_ROWS = [*ONE_BLOCK_ROWS[:2], "IOPS", *ONE_BLOCK_ROWS[2:]]


# ---------------------------------------------------------------------------------------
# 1. all six phases in one run


def test_all_phases_count_exactly_and_leave_dir_as_it_was(
    run_cli: RunCli, tmp_path: Path, validator: Draft202012Validator
) -> None:
    root = tmp_path / "D"
    root.mkdir()
    add_unrelated(root)
    before = listing(root)
    out = tmp_path / "J.json"
    args = ["-d", "-w", "--stat", "-r", "-F", "-D", "-t", "4", "-n", "8", "-N", "250"]
    proc = ok(run_cli(*args, "--lat", "--latpercent", "-s", "4k", str(root), "--json", str(out)))

    blocks = table_blocks(proc.stdout)
    assert [op for op, _ in blocks] == ALL_PHASES
    rows = dict(blocks)
    for name in ("MKDIRS", "RMDIRS"):
        assert row_names(rows[name]) == DIR_ROWS
        assert last_value(rows[name], "Dirs total") == 32
    for name in ("STAT", "RMFILES"):
        assert row_names(rows[name]) == META_ROWS
    for name in ("WRITE", "READ"):
        # 4 KiB files in blocks cut to 4 KiB: one block per file, so no IOPS row.
        assert row_names(rows[name]) == ONE_BLOCK_ROWS
        assert last_value(rows[name], "Total MiB") == 8000 * 4096 >> 20
    for name in FILE_PHASES:
        assert last_value(rows[name], "Files total") == 8000

    doc = read_doc(out, validator)
    assert doc["error"] is None and doc["interrupted"] is False
    assert doc["meta"]["path_type"] == "dir"
    assert [p["phase"] for p in doc["phases"]] == ALL_PHASES
    for phase in doc["phases"]:
        name, last, first = phase["phase"], phase["last_done"], phase["first_done"]
        dirs = name in ("MKDIRS", "RMDIRS")
        per_thread = 8 if dirs else 2000
        assert last["entries"] == 4 * per_thread, name
        assert [t["entries"] for t in phase["threads"]] == [per_thread] * 4, name
        assert [t["rank"] for t in phase["threads"]] == [0, 1, 2, 3]
        assert 0 < first["entries"] <= last["entries"], name
        assert last["entries_per_s"] > 0 and first["elapsed_ns"] <= last["elapsed_ns"]
        assert phase["time_limited"] is False and phase["interrupted"] is False
        assert phase["latency"]["entries"]["count"] == last["entries"], name
        moves_data = name in ("WRITE", "READ")
        assert last["bytes"] == (8000 * 4096 if moves_data else 0), name
        assert last["ops"] == (8000 if moves_data else 0), name
        assert phase["latency"]["io"]["count"] == last["ops"], name
        assert sum(t["bytes"] for t in phase["threads"]) == last["bytes"]

    assert listing(root) == before
    assert tree(root) == unrelated_tree()
    assert_unrelated_intact(root)


def test_phase_order_does_not_follow_option_order(
    run_cli: RunCli, tmp_path: Path, validator: Draft202012Validator
) -> None:
    out = tmp_path / "j.json"
    (tmp_path / "D").mkdir()
    options = ("-D", "-F", "-r", "--stat", "-w", "-d", "-N", "2")
    proc = ok(run_cli(*options, "D", "--json", str(out), cwd=str(tmp_path)))
    assert [op for op, _ in table_blocks(proc.stdout)] == ALL_PHASES
    assert [p["phase"] for p in read_doc(out, validator)["phases"]] == ALL_PHASES
    assert tree(tmp_path / "D") == {}


@pytest.fixture
def layout_root(tmp_path: Path) -> Path:
    root = tmp_path / "D"
    root.mkdir()
    return root


# ---------------------------------------------------------------------------------------
# 2. layout names


def test_layout_names_and_sizes(
    run_cli: RunCli, tmp_path: Path, layout_root: Path, validator: Draft202012Validator
) -> None:
    out = tmp_path / "j.json"
    args = ("-t", "2", "-n", "2", "-N", "3")
    lat = ("--lat", "--latpercent")
    proc = ok(run_cli("-d", "-w", *args, *lat, "-s", "1k", str(layout_root), "--json", str(out)))
    dirs, files = plain_layout(threads=2, dirs=2, files=3)
    assert sorted(dirs) == ["r0", "r0/d0", "r0/d1", "r1", "r1/d0", "r1/d1"]
    assert files[:3] == ["r0/d0/r0-f0", "r0/d0/r0-f1", "r0/d0/r0-f2"]
    assert tree(layout_root) == layout_tree(dirs, files, 1024)

    rows = dict(table_blocks(proc.stdout))
    assert list(rows) == ["MKDIRS", "WRITE"]
    assert row_names(rows["WRITE"]) == ONE_BLOCK_ROWS
    assert last_value(rows["MKDIRS"], "Dirs total") == 4  # the r<r> dirs are not counted
    doc = phases_of(read_doc(out, validator))
    assert doc["MKDIRS"]["last_done"]["entries"] == 4
    assert [t["entries"] for t in doc["MKDIRS"]["threads"]] == [2, 2]
    assert doc["WRITE"]["last_done"]["entries"] == 12
    assert doc["WRITE"]["last_done"]["bytes"] == 12 * 1024
    assert doc["WRITE"]["last_done"]["ops"] == 12

    # 3. a second invocation with the same -t/-n/-N removes exactly the layout
    out2 = tmp_path / "j2.json"
    proc = ok(run_cli("-F", "-D", *args, str(layout_root), "--json", str(out2)))
    assert [op for op, _ in table_blocks(proc.stdout)] == ["RMFILES", "RMDIRS"]
    assert tree(layout_root) == {}
    doc = phases_of(read_doc(out2, validator))
    assert doc["RMFILES"]["last_done"]["entries"] == 12
    assert doc["RMDIRS"]["last_done"]["entries"] == 4


def test_no_dirs_puts_files_straight_into_path(
    run_cli: RunCli, tmp_path: Path, layout_root: Path, validator: Draft202012Validator
) -> None:
    out = tmp_path / "j.json"
    args = ("-t", "2", "-n", "0", "-N", "3")
    proc = ok(run_cli("-d", "-w", *args, "-s", "1k", str(layout_root), "--json", str(out)))
    files = [f"r{r}-f{j}" for r in range(2) for j in range(3)]
    assert tree(layout_root) == layout_tree([], files, 1024)  # no r<r> dirs
    assert [op for op, _ in table_blocks(proc.stdout)] == ["WRITE"]  # nothing to mkdir
    assert "-n 0" in proc.stderr
    doc = phases_of(read_doc(out, validator))
    assert list(doc) == ["WRITE"]
    assert doc["WRITE"]["last_done"]["entries"] == 6

    ok(run_cli("-F", "-D", *args, str(layout_root)))
    assert tree(layout_root) == {}


def test_no_dirs_over_two_paths_puts_rank_files_round_robin(
    run_cli: RunCli, tmp_path: Path
) -> None:
    one, two = tmp_path / "A", tmp_path / "B"
    one.mkdir()
    two.mkdir()
    args = ("-t", "3", "-n", "0", "-N", "2")
    ok(run_cli("-w", *args, "-s", "1k", str(one), str(two)))
    # Files of rank r go to PATH r % 2.
    assert tree(one) == layout_tree([], ["r0-f0", "r0-f1", "r2-f0", "r2-f1"], 1024)
    assert tree(two) == layout_tree([], ["r1-f0", "r1-f1"], 1024)
    ok(run_cli("-F", *args, str(one), str(two)))
    assert tree(one) == tree(two) == {}


def test_two_paths_put_dirs_round_robin(
    run_cli: RunCli, tmp_path: Path, validator: Draft202012Validator
) -> None:
    one, two = tmp_path / "D1", tmp_path / "D2"
    one.mkdir()
    two.mkdir()
    out = tmp_path / "j.json"
    args = ("-t", "2", "-n", "3")
    ok(run_cli("-d", "-w", *args, "-s", "1k", str(one), str(two), "--json", str(out)))
    # Dir i of rank r lives in PATH (r + i) % 2.
    assert tree(one) == layout_tree(
        ["r0", "r0/d0", "r0/d2", "r1", "r1/d1"],
        ["r0/d0/r0-f0", "r0/d2/r0-f0", "r1/d1/r1-f0"],
        1024,
    )
    assert tree(two) == layout_tree(
        ["r0", "r0/d1", "r1", "r1/d0", "r1/d2"],
        ["r0/d1/r0-f0", "r1/d0/r1-f0", "r1/d2/r1-f0"],
        1024,
    )
    doc = phases_of(read_doc(out, validator))
    assert doc["MKDIRS"]["last_done"]["entries"] == 6
    assert doc["WRITE"]["last_done"]["entries"] == 6

    ok(run_cli("-F", "-D", *args, str(one), str(two)))
    assert tree(one) == tree(two) == {}


def test_dirsharing_uses_one_set_of_dirs(
    run_cli: RunCli, tmp_path: Path, layout_root: Path, validator: Draft202012Validator
) -> None:
    out = tmp_path / "j.json"
    args = ("-t", "2", "-n", "2", "-N", "2", "--dirsharing")
    ok(run_cli("-d", "-w", *args, str(layout_root), "--json", str(out)))
    files = [f"r0/d{i}/r{r}-f{j}" for i in range(2) for r in range(2) for j in range(2)]
    assert tree(layout_root) == layout_tree(["r0", "r0/d0", "r0/d1"], files, 0)
    doc = phases_of(read_doc(out, validator))
    # dir i is created by rank i % threads: one each
    assert [t["entries"] for t in doc["MKDIRS"]["threads"]] == [1, 1]
    assert doc["MKDIRS"]["last_done"]["entries"] == 2
    assert [t["entries"] for t in doc["WRITE"]["threads"]] == [4, 4]

    out2 = tmp_path / "j2.json"
    ok(run_cli("-F", "-D", *args, str(layout_root), "--json", str(out2)))
    assert tree(layout_root) == {}
    doc = phases_of(read_doc(out2, validator))
    assert doc["RMFILES"]["last_done"]["entries"] == 8
    assert doc["RMDIRS"]["last_done"]["entries"] == 2


def test_a_thread_without_work_ends_at_the_phase_start(
    run_cli: RunCli, tmp_path: Path, layout_root: Path, validator: Draft202012Validator
) -> None:
    # With --dirsharing, 3 threads and 1 dir, threads 1 and 2 have nothing to create or
    # remove: their slots end before the clock starts, and their finish is the start
    # (elapsed 0), not an instant before it.
    out = tmp_path / "j.json"
    args = ("-t", "3", "-n", "1", "-N", "2", "-s", "0", "--dirsharing")
    ok(run_cli("-d", "-w", "-F", "-D", *args, str(layout_root), "--json", str(out)))
    doc = phases_of(read_doc(out, validator))
    for phase in ("MKDIRS", "RMDIRS"):
        elapsed = [t["elapsed_ns"] for t in doc[phase]["threads"]]
        assert elapsed[0] > 0 and elapsed[1:] == [0, 0], (phase, elapsed)
        assert doc[phase]["last_done"]["entries"] == 1


def test_dirsharing_over_two_paths(run_cli: RunCli, tmp_path: Path) -> None:
    one, two = tmp_path / "D1", tmp_path / "D2"
    one.mkdir()
    two.mkdir()
    args = ("-t", "2", "-n", "3", "-N", "1", "--dirsharing")
    ok(run_cli("-d", "-w", *args, str(one), str(two)))
    # Shared dir i lives in PATH i % 2.
    assert tree(one) == layout_tree(
        ["r0", "r0/d0", "r0/d2"], ["r0/d0/r0-f0", "r0/d0/r1-f0", "r0/d2/r0-f0", "r0/d2/r1-f0"], 0
    )
    assert tree(two) == layout_tree(["r0", "r0/d1"], ["r0/d1/r0-f0", "r0/d1/r1-f0"], 0)
    ok(run_cli("-F", "-D", *args, str(one), str(two)))
    assert tree(one) == tree(two) == {}


def test_size_zero_creates_empty_files_without_data_rows(
    run_cli: RunCli, tmp_path: Path, layout_root: Path, validator: Draft202012Validator
) -> None:
    out = tmp_path / "j.json"
    args = ("-t", "2", "-n", "2", "-N", "3")
    lat = ("--lat", "--latpercent")
    proc = ok(run_cli("-d", "-w", *args, *lat, "-s", "0", str(layout_root), "--json", str(out)))
    dirs, files = plain_layout(threads=2, dirs=2, files=3)
    assert tree(layout_root) == layout_tree(dirs, files, 0)
    rows = dict(table_blocks(proc.stdout))
    assert row_names(rows["WRITE"]) == META_ROWS  # no IOPS, Throughput, Total MiB, IO latency
    assert last_value(rows["WRITE"], "Files total") == 12
    write = phases_of(read_doc(out, validator))["WRITE"]
    assert write["last_done"]["bytes"] == 0 and write["last_done"]["ops"] == 0
    assert write["last_done"]["entries"] == 12
    assert write["latency"]["io"]["count"] == 0
    assert write["latency"]["entries"]["count"] == 12


def test_multi_block_files_show_iops(
    run_cli: RunCli, tmp_path: Path, layout_root: Path, validator: Draft202012Validator
) -> None:
    out = tmp_path / "j.json"
    proc = ok(
        run_cli("-d", "-w", "-r", "--lat", "--latpercent", "-N", "5", "-s", "10k", "-b", "4k",
                str(layout_root), "--json", str(out))
    )  # fmt: skip
    assert tree(layout_root) == layout_tree(
        ["r0", "r0/d0"], [f"r0/d0/r0-f{j}" for j in range(5)], 10240
    )
    rows = dict(table_blocks(proc.stdout))
    for name in ("WRITE", "READ"):
        assert row_names(rows[name]) == MULTI_BLOCK_ROWS
        phase = phases_of(read_doc(out, validator))[name]
        assert phase["last_done"]["ops"] == 15  # 4k + 4k + 2k per file
        assert phase["last_done"]["bytes"] == 5 * 10240
        assert phase["latency"]["io"]["count"] == 15
        assert phase["latency"]["entries"]["count"] == 5


def test_direct_writes_files_in_blocks_cut_to_the_file_size(
    run_cli: RunCli, layout_root: Path
) -> None:
    """-b defaults to 1M; dir mode cuts it to -s 4k, which --direct can use."""
    if filesystem_type(str(layout_root)) in ("tmpfs", "ramfs", ""):
        pytest.skip(f"{layout_root} is on a filesystem without (known) O_DIRECT support")
    ok(run_cli("-d", "-w", "-r", "--direct", "-N", "2", "-s", "4k", str(layout_root)))
    assert tree(layout_root) == layout_tree(["r0", "r0/d0"], ["r0/d0/r0-f0", "r0/d0/r0-f1"], 4096)


# ---------------------------------------------------------------------------------------
# 3. cleanup that hits an unrelated file


def test_deldirs_on_a_dir_with_an_unrelated_file_fails_and_keeps_it(
    run_cli: RunCli, tmp_path: Path, layout_root: Path, validator: Draft202012Validator
) -> None:
    args = ("-t", "2", "-n", "2", "-N", "3")
    ok(run_cli("-d", "-w", *args, "-s", "1k", str(layout_root)))
    stranger = layout_root / "r0" / "d0" / "unrelated"
    stranger.write_bytes(b"mine")
    out = tmp_path / "j.json"
    proc = run_cli("-F", "-D", *args, str(layout_root), "--json", str(out))
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("Error:")]
    busy = layout_root / "r0" / "d0"
    assert errors == [f"Error: {busy}: ENOTEMPTY ({os.strerror(errno.ENOTEMPTY)})"]  # no offset
    assert [op for op, _ in table_blocks(proc.stdout)] == ["RMFILES", "RMDIRS"]
    assert stranger.read_bytes() == b"mine"

    doc = read_doc(out, validator)
    assert doc["error"]["errno_name"] == "ENOTEMPTY"
    assert doc["error"]["path"] == str(busy)
    phases = phases_of(doc)
    assert phases["RMFILES"]["last_done"]["entries"] == 12
    removed = phases["RMDIRS"]["last_done"]["entries"]
    left = tree(layout_root)
    # every file of the layout is gone; the dirs RMDIRS counted are gone, the others stay
    assert {"r0", "r0/d0", "r0/d0/unrelated"} <= set(left)
    assert set(left) <= {"r0", "r0/d0", "r0/d0/unrelated", "r0/d1", "r1", "r1/d0", "r1/d1"}
    layout_dirs_left = [p for p in left if p.count("/") == 1 and left[p] is None]
    assert len(layout_dirs_left) == 4 - removed
    assert left["r0/d0/unrelated"] == 4


def test_delfiles_with_a_missing_middle_file_reports_it_at_run_time(
    run_cli: RunCli, layout_root: Path
) -> None:
    """Setup looks only at each thread's first and last file; a hole shows up as ENOENT."""
    args = ("-n", "1", "-N", "5")
    ok(run_cli("-d", "-w", *args, str(layout_root)))
    (layout_root / "r0" / "d0" / "r0-f2").unlink()
    proc = run_cli("-F", *args, str(layout_root))
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert proc.stderr.splitlines()[-1] == (
        f"Error: {layout_root / 'r0/d0/r0-f2'}: ENOENT ({os.strerror(errno.ENOENT)})"
    )
    assert last_value(dict(table_blocks(proc.stdout))["RMFILES"], "Files total") == 2
    assert tree(layout_root) == layout_tree(["r0", "r0/d0"], ["r0/d0/r0-f3", "r0/d0/r0-f4"], 0)


# ---------------------------------------------------------------------------------------
# 4. usage errors: exit 2, one Error: line, nothing created or changed


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """D: a dir with unrelated entries; L: the dirs of a 1-thread layout, no files; f: a file."""
    add_unrelated(tmp_path / "D")
    (tmp_path / "L" / "r0" / "d0").mkdir(parents=True)
    (tmp_path / "f").write_bytes(b"x" * 4096)
    return tmp_path


USAGE_CASES = [
    pytest.param(("-d", "-n", "-1", "D"), ["-n/--dirs", "-1"], id="dirs-negative"),
    pytest.param(("-d", "-N", "-1", "D"), ["-N/--files", "-1"], id="files-negative"),
    pytest.param(("-d", "-w", "-N", "-5", "D"), ["-N/--files", "-5"], id="files-negative-write"),
    pytest.param(
        ("-d", "-n", "1k", "D"), ["-n/--dirs", "whole number", "'1k'"], id="dirs-size-suffix"
    ),
    pytest.param(
        ("-d", "-N", "2k", "D"), ["-N/--files", "whole number", "'2k'"], id="files-size-suffix"
    ),
    pytest.param(("-d", "D", "-n"), ["'-n'", "requires an argument"], id="dirs-no-value"),
    pytest.param(("-d", "-w", "-N", "0", "D"), ["-N/--files", "0"], id="files-zero-write"),
    pytest.param(("-N", "0", "-w", "D"), ["-N/--files", "0"], id="files-zero-write-no-d"),
    pytest.param(("-d", "D", "f"), ["PATH", "D (dir)", "f (file)"], id="dir-and-file"),
    pytest.param(("-d", "-w", "f", "D"), ["PATH", "f (file)", "D (dir)"], id="file-and-dir"),
    pytest.param(("-d", "f"), ["-d/--mkdirs", "f"], id="mkdirs-on-file"),
    pytest.param(("-w", "-s", "1k", "-n", "2", "f"), ["-n/--dirs", "f"], id="dirs-on-file"),
    pytest.param(("-w", "-s", "1k", "-n", "2", "new"), ["-n/--dirs", "new"], id="dirs-on-new"),
    pytest.param(("-r", "--stat", "f"), ["--stat", "f"], id="stat-on-file"),
    pytest.param(("-w", "-s", "1k", "-F", "f"), ["-F/--delfiles", "f"], id="delfiles-on-file"),
    pytest.param(("-r", "--dirsharing", "f"), ["--dirsharing", "f"], id="dirsharing-on-file"),
    pytest.param(("-r", "--nodelerr", "f"), ["--nodelerr", "f"], id="nodelerr-on-file"),
    pytest.param(("-d", "-w", "--rand", "D"), ["--rand", "dir mode"], id="rand"),
    pytest.param(
        ("-d", "-w", "--rand", "--randamount", "1m", "D"), ["--rand"], id="rand-randamount"
    ),
    pytest.param(("-w", "D"), ["D/r0/d0", "--mkdirs"], id="write-no-mkdirs"),
    pytest.param(("-w", "-n", "3", "L"), ["L/r0/d1", "--mkdirs"], id="write-second-dir-missing"),
    pytest.param(
        ("-w", "-t", "2", "-n", "1", "L", "D"), ["D/r1/d0", "--mkdirs"], id="write-rank1-path2"
    ),
    pytest.param(("-r", "L"), ["L/r0/d0/r0-f0", "does not exist"], id="read-missing-files"),
    pytest.param(("--stat", "L"), ["L/r0/d0/r0-f0", "does not exist"], id="stat-missing-files"),
    pytest.param(("-r", "-n", "0", "D"), ["D/r0-f0", "does not exist"], id="read-no-dirs-missing"),
    pytest.param(
        ("-r", "--dirsharing", "-t", "2", "L"), ["L/r0/d0/r0-f0"], id="read-sharing-missing"
    ),
    pytest.param(("-F", "L"), ["L/r0/d0/r0-f0", "--nodelerr"], id="delfiles-missing-files"),
    pytest.param(("-F", "D"), ["D/r0/d0", "does not exist"], id="delfiles-no-layout"),
    pytest.param(
        ("-d", "-w", "--direct", "-b", "512", "-s", "1000", "D"),
        ["-s/--size", "1000", "512", "--direct"],
        id="direct-size-1000-block-512",
    ),
    pytest.param(
        ("-d", "-w", "--direct", "-s", "1000", "D"),
        ["-s/--size", "1000", "512", "--direct"],
        id="direct-size-1000",
    ),
    pytest.param(("D",), ["nothing to do", "-d/--mkdirs"], id="nothing-to-do"),
    pytest.param(("-n", "2", "-N", "3", "D"), ["nothing to do"], id="nothing-to-do-counts"),
]


@pytest.mark.parametrize(("args", "needles"), USAGE_CASES)
def test_usage_error(
    run_cli: RunCli, workdir: Path, args: tuple[str, ...], needles: list[str]
) -> None:
    before = listing(workdir)
    proc = run_cli(*args, cwd=str(workdir))
    assert_usage_error(proc, needles)
    assert listing(workdir) == before
    assert_unrelated_intact(workdir / "D")


def test_delfiles_on_a_partial_layout_names_the_missing_file(
    run_cli: RunCli, tmp_path: Path, layout_root: Path
) -> None:
    args = ("-t", "2", "-n", "2", "-N", "3")
    ok(run_cli("-d", "-w", *args, str(layout_root)))
    missing = layout_root / "r1" / "d1" / "r1-f2"  # the last file of rank 1
    missing.unlink()
    before = listing(tmp_path)
    proc = run_cli("-F", "-D", *args, str(layout_root))
    line = assert_usage_error(proc, [str(missing), "does not exist", "--nodelerr"])
    assert line.startswith(f"Error: {missing}:")
    assert listing(tmp_path) == before

    ok(run_cli("-F", "-D", "--nodelerr", *args, str(layout_root)))
    assert tree(layout_root) == {}


# ---------------------------------------------------------------------------------------
# 5. --nodelerr after a time-limited write


def test_nodelerr_cleans_up_after_a_time_limited_write(
    run_cli: RunCli, tmp_path: Path, layout_root: Path, validator: Draft202012Validator
) -> None:
    add_unrelated(layout_root)
    out = tmp_path / "w.json"
    args = ("-t", "2", "-n", "2", "-N", "100000")
    proc = ok(run_cli("-d", "-w", *args, "-s", "0", "--timelimit", "1", str(layout_root),
                      "--json", str(out)))  # fmt: skip
    assert [op for op, _ in table_blocks(proc.stdout)] == ["MKDIRS", "WRITE"]
    phases = phases_of(read_doc(out, validator))
    assert list(phases) == ["MKDIRS", "WRITE"]
    assert phases["MKDIRS"]["last_done"]["entries"] == 4
    write = phases["WRITE"]
    assert write["time_limited"] is True
    written = write["last_done"]["entries"]
    assert 0 < written < 200_000
    left = tree(layout_root)
    made = [p for p, size in left.items() if size is not None and p.startswith(("r0/", "r1/"))]
    assert len(made) == written  # every file counted is there, and only those

    out2 = tmp_path / "d.json"
    proc = ok(run_cli("-F", "-D", "--nodelerr", *args, str(layout_root), "--json", str(out2)))
    assert tree(layout_root) == unrelated_tree()
    assert_unrelated_intact(layout_root)
    phases = phases_of(read_doc(out2, validator))
    assert list(phases) == ["RMFILES", "RMDIRS"]
    assert phases["RMFILES"]["last_done"]["entries"] == 400_000  # gone already counts as done
    assert phases["RMDIRS"]["last_done"]["entries"] == 4


# ---------------------------------------------------------------------------------------
# 6. --json - in dir mode


def test_json_dash_in_dir_mode(
    run_cli: RunCli, tmp_path: Path, layout_root: Path, validator: Draft202012Validator
) -> None:
    proc = ok(
        run_cli("-d", "-w", "--stat", "-r", "-F", "-D", "-t", "2", "-N", "4", "-s", "2k",
                str(layout_root), "--json", "-", cwd=str(tmp_path))
    )  # fmt: skip
    assert proc.stdout.startswith("{") and proc.stdout.endswith("}\n")
    doc = parse_doc(proc.stdout, validator)  # exactly one document, nothing around it
    assert "OPERATION" not in proc.stdout
    assert [op for op, _ in table_blocks(proc.stderr)] == ALL_PHASES
    assert [p["phase"] for p in doc["phases"]] == ALL_PHASES
    assert doc["meta"]["config"]["json_path"] == "-"
    assert phases_of(doc)["READ"]["last_done"]["bytes"] == 8 * 2048
    assert tree(layout_root) == {}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["D"]


# ---------------------------------------------------------------------------------------
# 7. run-time error: inodes run out on a tiny tmpfs


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    with mounted_tmpfs(tmp_path / "mnt", "size=1M,nr_inodes=64") as mnt:
        yield mnt


@pytest.mark.root
def test_enospc_names_the_file_and_keeps_results(
    run_cli: RunCli, tmp_path: Path, tiny_tmpfs: Path, validator: Draft202012Validator
) -> None:
    out = tmp_path / "j.json"
    proc = run_cli("-d", "-w", "-n", "1", "-N", "1000", "-s", "0", str(tiny_tmpfs),
                   "--json", str(out))  # fmt: skip
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr

    doc = read_doc(out, validator)
    phases = phases_of(doc)
    assert list(phases) == ["MKDIRS", "WRITE"]
    written = phases["WRITE"]["last_done"]["entries"]
    assert 0 < written < 1000
    failed = tiny_tmpfs / "r0" / "d0" / f"r0-f{written}"  # the first file it could not create
    assert doc["error"] == {
        "path": str(failed),
        "offset": None,  # creating the file failed: no offset means anything
        "errno": errno.ENOSPC,
        "errno_name": "ENOSPC",
        "message": f"{failed}: ENOSPC ({os.strerror(errno.ENOSPC)})",
    }
    assert proc.stderr.splitlines()[-1] == f"Error: {doc['error']['message']}"
    rows = dict(table_blocks(proc.stdout))
    assert list(rows) == ["MKDIRS", "WRITE"]
    assert last_value(rows["WRITE"], "Files total") == written
    files = [f"r0/d0/r0-f{j}" for j in range(written)]
    assert tree(tiny_tmpfs) == layout_tree(["r0", "r0/d0"], files, 0)
