"""elbencho's output and path options (#24): --nopathexp, --nocsvlabels, through the real CLI."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from tests.helpers import make_cfg
from tests.helpers import run_aiobench as aiobench

KIB = 1024


def test_nopathexp_takes_brackets_literally(tmp_path: Path) -> None:
    expanded = make_cfg([str(tmp_path / "f[1-3]")])
    literal = make_cfg([str(tmp_path / "f[1-3]")], nopathexp=True)
    assert [Path(p).name for p in expanded.paths] == ["f1", "f2", "f3"]
    assert [Path(p).name for p in literal.paths] == ["f[1-3]"]


def test_nopathexp_writes_the_file_named_with_brackets(tmp_path: Path) -> None:
    doc = tmp_path / "r.json"
    proc = aiobench(
        "-w", "-b", "4k", "-s", "8k", "--nolive", "--nopathexp", "--json", str(doc),
        "f[1-2]", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("f")) == ["f[1-2]"]
    assert (tmp_path / "f[1-2]").stat().st_size == 8 * KIB
    assert json.loads(doc.read_text())["meta"]["config"]["paths"] == ["f[1-2]"]


def _csv_run(tmp_path: Path, *extra: str) -> list[list[str]]:
    out = tmp_path / "r.csv"
    for _ in range(2):  # a new file, then appended to
        proc = aiobench(
            "-w", "-b", "4k", "-s", "8k", "--nolive", "--csvfile", str(out), *extra, "f",
            cwd=tmp_path,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
    with out.open(newline="") as handle:
        return list(csv.reader(handle))


def test_nocsvlabels_leaves_out_the_header_row(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    labelled = _csv_run(tmp_path / "a")
    bare = _csv_run(tmp_path / "b", "--nocsvlabels")
    assert labelled[0][0] == "ISO date" and len(labelled) == 3
    assert len(bare) == 2, bare
    assert all(row[0] != "ISO date" for row in bare)
    assert [len(row) for row in bare] == [len(labelled[0])] * 2
    assert [row[labelled[0].index("operation")] for row in bare] == ["WRITE", "WRITE"]
