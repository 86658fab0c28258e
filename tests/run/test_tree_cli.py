"""Custom tree mode through the real CLI (--treefile, --treescan, --treerand, --treeroundup,
--sharesize): the tree made is compared entry by entry with the tree file, sizes included,
and every --json document is checked against the shipped schema."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from aiobench.units import format_bytes
from tests.helpers import RunCli, assert_usage_error, mpirun, needs_mpi

Doc = dict[str, Any]
Tree = dict[str, int | None]  # relative path -> file size, None for a dir

TREE_FILE = """# a custom tree
d docs
d docs/old
d media
f 12345 docs/readme.txt
f 0 docs/old/empty
f 70000 media/clip.bin
f 4096 top level file
f 1 docs/old/tiny
"""
LISTED: Tree = {
    "docs": None, "docs/old": None, "media": None, "docs/readme.txt": 12345,
    "docs/old/empty": 0, "media/clip.bin": 70000, "top level file": 4096, "docs/old/tiny": 1,
}  # fmt: skip
TOTAL = sum(size for size in LISTED.values() if size is not None)


def tree_of(root: Path) -> Tree:
    """Every entry below ``root``: a file's size, None for a dir (symlinks fail the test)."""
    out: Tree = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath, name)
            assert not path.is_symlink(), path
            out[str(path.relative_to(root))] = None if path.is_dir() else path.stat().st_size
    return out


def run_json(run_cli: RunCli, tmp_path: Path, validator: Draft202012Validator, *args: str) -> Doc:
    doc = tmp_path / "run.json"
    proc = run_cli(*args, "--nolive", "--json", str(doc), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out: Doc = json.loads(doc.read_text())
    assert not list(validator.iter_errors(out))
    return out


@pytest.mark.parametrize("engine", ["python", "native"])
def test_treefile_makes_exactly_the_listed_tree_then_reads_and_removes_it(
    run_cli: RunCli, tmp_path: Path, validator: Draft202012Validator, engine: str
) -> None:
    (tmp_path / "tree.txt").write_text(TREE_FILE)
    bench = tmp_path / "bench"
    bench.mkdir()
    common = ("--ioengine", engine, "-t", "3", "-b", "4k", "--treefile", "tree.txt")
    doc = run_json(run_cli, tmp_path, validator, "-d", "-w", *common, "bench")
    assert tree_of(bench) == LISTED
    assert [p["phase"] for p in doc["phases"]] == ["MKDIRS", "WRITE"]
    assert doc["phases"][0]["last_done"]["entries"] == 3
    assert doc["phases"][1]["last_done"]["bytes"] == TOTAL
    assert doc["meta"]["config"]["treefile"] == "tree.txt"
    doc = run_json(run_cli, tmp_path, validator, "-r", "--stat", *common, "bench")
    read = next(p for p in doc["phases"] if p["phase"] == "READ")
    stat = next(p for p in doc["phases"] if p["phase"] == "STAT")
    assert read["last_done"]["bytes"] == TOTAL
    assert stat["last_done"]["entries"] == 5
    run_json(run_cli, tmp_path, validator, "-F", "-D", *common, "bench")
    assert tree_of(bench) == {}


def test_treescan_writes_a_tree_file_that_recreates_the_scanned_dir(
    run_cli: RunCli, tmp_path: Path, validator: Draft202012Validator
) -> None:
    src = tmp_path / "src"
    (src / "a" / "b").mkdir(parents=True)
    (src / "empty dir").mkdir()
    (src / "a" / "one").write_bytes(b"x" * 3000)
    (src / "a" / "b" / "two").write_bytes(b"y" * 9000)
    (src / "line\nbreak").write_bytes(b"z")
    (src / "link").symlink_to(src / "a" / "one")  # left out, as elbencho does
    (src / "dirlink").symlink_to(src / "a")
    expected = tree_of_links_skipped(src)
    dst = tmp_path / "dst"
    dst.mkdir()
    out = tmp_path / "scan.txt"
    run_json(
        run_cli, tmp_path, validator,
        "-d", "-w", "-t", "2", "-b", "4k", "--treescan", str(src), "--treefile", str(out), "dst",
    )  # fmt: skip
    assert out.read_text().startswith("# encoding=base64\n")
    assert tree_of(dst) == expected
    assert "link" not in expected and "dirlink" not in expected and "a/one" in expected
    # The written tree file alone makes the same tree again.
    again = tmp_path / "again"
    again.mkdir()
    run_json(run_cli, tmp_path, validator, "-d", "-w", "--treefile", str(out), "again")
    assert tree_of(again) == expected


def tree_of_links_skipped(root: Path) -> Tree:
    out: Tree = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath, name)
            if path.is_symlink():
                continue
            out[str(path.relative_to(root))] = None if path.is_dir() else path.stat().st_size
    return out


@pytest.mark.parametrize("engine", ["python", "native"])
def test_sharesize_splits_a_big_file_between_the_threads(
    run_cli: RunCli, tmp_path: Path, validator: Draft202012Validator, engine: str
) -> None:
    big = 300_000  # 74 blocks of 4 KiB: spans of 24, 24 and the last 26 (short) blocks
    (tmp_path / "tree.txt").write_text(f"f {big} big\n")
    (tmp_path / "bench").mkdir()
    args = ("-w", "-t", "3", "-b", "4k", "--ioengine", engine, "--treefile", "tree.txt")
    shared = run_json(run_cli, tmp_path, validator, *args, "--sharesize", "64k", "bench")
    per_thread = [t["bytes"] for t in shared["phases"][0]["threads"]]
    assert per_thread == [24 * 4096, 24 * 4096, big - 48 * 4096]
    assert (tmp_path / "bench" / "big").stat().st_size == big
    whole = run_json(run_cli, tmp_path, validator, *args, "--sharesize", "1m", "bench")
    assert sorted(t["bytes"] for t in whole["phases"][0]["threads"]) == [0, 0, big]


def test_treeroundup_rounds_the_sizes_written(
    run_cli: RunCli, tmp_path: Path, validator: Draft202012Validator
) -> None:
    (tmp_path / "tree.txt").write_text("f 1 a\nf 5000 b\nf 8192 c\n")
    (tmp_path / "bench").mkdir()
    run_json(
        run_cli, tmp_path, validator,
        "-w", "--direct", "-b", "4k", "--treeroundup", "4k", "--treefile", "tree.txt", "bench",
    )  # fmt: skip
    assert tree_of(tmp_path / "bench") == {"a": 4096, "b": 8192, "c": 8192}


@pytest.mark.parametrize(
    ("line", "needles"),
    [
        ("f 10 ../escape", ["--treefile", "line 2", "leaves PATH"]),
        ("f 10 /tmp/abs", ["--treefile", "line 2", "absolute"]),
        ("d ../../up", ["--treefile", "line 2", "leaves PATH"]),
        ("f 1k x", ["--treefile", "line 2", "not a number"]),
    ],
)
def test_a_tree_path_outside_the_bench_dir_is_a_usage_error(
    run_cli: RunCli, tmp_path: Path, line: str, needles: list[str]
) -> None:
    (tmp_path / "tree.txt").write_text(f"d ok\n{line}\n")
    (tmp_path / "bench").mkdir()
    proc = run_cli("-d", "-w", "--nolive", "--treefile", "tree.txt", "bench", cwd=tmp_path)
    assert_usage_error(proc, needles)
    assert tree_of(tmp_path / "bench") == {}
    assert not (tmp_path / "escape").exists()


def test_a_symlink_where_the_tree_has_a_dir_is_refused_and_not_followed(
    run_cli: RunCli, tmp_path: Path
) -> None:
    (tmp_path / "tree.txt").write_text("d d\nf 100 d/file\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "d").symlink_to(outside)
    proc = run_cli("-d", "-w", "--nolive", "--treefile", "tree.txt", "bench", cwd=tmp_path)
    assert_usage_error(proc, ["bench/d", "symbolic link"])
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--treerand"], ["--treerand", "--treefile"]),
        (["--sharesize", "1m"], ["--sharesize", "--treefile"]),
        (["--treefile", "tree.txt", "-N", "3"], ["-N/--files", "--treefile"]),
        (["--treefile", "tree.txt", "--rand"], ["--rand"]),
        (["--treefile", "missing.txt"], ["--treefile", "missing.txt"]),
    ],
)
def test_tree_option_misuse_is_a_usage_error(
    run_cli: RunCli, tmp_path: Path, args: list[str], needles: list[str]
) -> None:
    (tmp_path / "tree.txt").write_text("f 10 x\n")
    (tmp_path / "bench").mkdir()
    proc = run_cli("-w", "--nolive", *args, "bench", cwd=tmp_path)
    assert_usage_error(proc, needles)
    assert tree_of(tmp_path / "bench") == {}


def test_treefile_in_file_mode_is_a_usage_error(run_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / "tree.txt").write_text("f 10 x\n")
    proc = run_cli("-w", "-s", "4k", "--nolive", "--treefile", "tree.txt", "f", cwd=tmp_path)
    assert_usage_error(proc, ["--treefile", "directory"])


def test_dryrun_plans_the_tree_and_makes_nothing(run_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / "tree.txt").write_text(TREE_FILE)
    (tmp_path / "bench").mkdir()
    proc = run_cli(
        "-d", "-w", "--dryrun", "-b", "4k", "--treefile", "tree.txt", "bench", cwd=tmp_path
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "MKDIRS          : 3 dirs, by the first thread" in proc.stdout
    assert f"WRITE           : 5 files, {format_bytes(TOTAL)} in blocks of 4.0 KiB" in proc.stdout
    assert tree_of(tmp_path / "bench") == {}


def test_direct_needs_aligned_tree_sizes_unless_nodiocheck(run_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / "tree.txt").write_text("f 4096 aligned\nf 1000 short\n")
    (tmp_path / "bench").mkdir()
    args = ("-w", "--direct", "-b", "4k", "--treefile", "tree.txt", "--nolive")
    proc = run_cli(*args, "bench", cwd=tmp_path)
    assert_usage_error(proc, ["--direct", "short", "1000", "--treeroundup"])
    planned = run_cli(*args, "--nodiocheck", "--dryrun", "bench", cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    assert tree_of(tmp_path / "bench") == {}


def test_treescan_without_treefile_names_its_default_place(run_cli: RunCli, tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "d").mkdir(parents=True)
    (src / "d" / "f").write_bytes(b"x" * 10)
    (tmp_path / "bench").mkdir()
    proc = run_cli(
        "-d", "-w", "--dryrun", "--treescan", f"file://{src}", "bench", cwd=tmp_path
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    note = next(line for line in proc.stderr.splitlines() + proc.stdout.splitlines()
                if "scanned" in line)  # fmt: skip
    assert f"scanned {src}: 1 dirs, 1 files" in note
    assert "/var/tmp/aiobench_" in note and "not written: --dryrun" in note
    assert "MKDIRS          : 1 dirs" in proc.stdout


@pytest.mark.parametrize("engine", ["python", "native"])
def test_a_symlink_at_a_files_name_is_never_written_through(
    run_cli: RunCli, tmp_path: Path, engine: str
) -> None:
    (tmp_path / "tree.txt").write_text("f 100 a\nf 100 b\nf 100 c\n")
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep me")
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "b").symlink_to(victim)
    proc = run_cli(
        "-w", "--ioengine", engine, "--treefile", "tree.txt", "--nolive", "bench", cwd=tmp_path
    )  # fmt: skip
    assert proc.returncode not in (0, 2), (proc.returncode, proc.stderr)
    assert "bench/b" in proc.stderr and "Traceback" not in proc.stderr
    assert victim.read_bytes() == b"keep me"


@needs_mpi
def test_under_mpi_the_ranks_deal_out_the_tree_as_one_process_does(
    run_cli: RunCli, tmp_path: Path
) -> None:
    (tmp_path / "tree.txt").write_text(TREE_FILE + "f 300000 big\n")
    args = ["-d", "-w", "-r", "-b", "4k", "--treefile", "tree.txt", "--sharesize", "64k"]
    args += ["--nolive", "--json", "-"]
    (tmp_path / "job").mkdir()
    (tmp_path / "one").mkdir()
    job = mpirun(2, *args, "-t", "1", "job", cwd=tmp_path)
    one = run_cli(*args, "-t", "2", "one", cwd=tmp_path)
    assert job.returncode == 0 and one.returncode == 0, (job.stderr, one.stderr)
    docs = [json.loads(job.stdout), json.loads(one.stdout)]
    assert docs[0]["meta"]["mpi"]["size"] == 2
    for name in ("job", "one"):
        assert tree_of(tmp_path / name) == {**LISTED, "big": 300_000}
    work = [
        [[(t["rank"], t["bytes"], t["entries"]) for t in p["threads"]] for p in doc["phases"]]
        for doc in docs
    ]
    assert work[0] == work[1]
    assert [p["phase"] for p in docs[0]["phases"]] == ["MKDIRS", "WRITE", "READ"]
