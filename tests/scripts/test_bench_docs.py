"""scripts/bench --docs: the report's sections merged into docs/benchmarks.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiobench_bench import cli
from aiobench_bench.docs import update_docs, write_docs
from tests.helpers import REPO

DOC = """# Benchmarks

Intro, kept.

## Against fio

### Targets

Old targets.

### Data

Old data, with its commands:

```
# a command's title, not a heading
aiobench -r
```

Old note.

#### A subheading, part of Data

### Metadata

Old metadata, kept.
"""

REPORT = """## Targets

New targets.

## Data

New data:

```
# 4 KiB random read, -t 1
aiobench -r -b 4k
```

## Ramp: 1024 threads

New ramp.
"""


def test_a_report_section_replaces_its_namesake_and_a_new_one_goes_at_the_end() -> None:
    assert update_docs(DOC, REPORT) == (
        "# Benchmarks\n\nIntro, kept.\n\n## Against fio\n\n"
        "### Targets\n\nNew targets.\n\n"
        "### Data\n\nNew data:\n\n```\n# 4 KiB random read, -t 1\naiobench -r -b 4k\n```\n\n"
        "### Metadata\n\nOld metadata, kept.\n\n"
        "### Ramp: 1024 threads\n\nNew ramp.\n"
    )


def test_merging_the_same_report_again_changes_nothing() -> None:
    once = update_docs(DOC, REPORT)
    assert update_docs(once, REPORT) == once


def test_an_empty_report_leaves_the_doc_as_it_is_and_an_empty_doc_gets_the_report() -> None:
    assert update_docs(DOC, "") == DOC
    assert update_docs("", "## Only\n\nText.\n") == "### Only\n\nText.\n"


def test_write_docs_merges_into_the_file(tmp_path: Path) -> None:
    path = tmp_path / "benchmarks.md"
    path.write_text(DOC, encoding="utf-8")
    write_docs(str(path), REPORT)
    assert path.read_text(encoding="utf-8") == update_docs(DOC, REPORT)
    assert [p.name for p in tmp_path.iterdir()] == ["benchmarks.md"]
    missing = tmp_path / "new.md"
    write_docs(str(missing), REPORT)
    assert missing.read_text(encoding="utf-8").startswith("### Targets\n\nNew targets.\n")


def test_docs_defaults_to_this_checkout_and_is_refused_with_json_on_stdout() -> None:
    args = cli.parse_args(["--docs"])
    assert Path(args.docs) == REPO / "docs" / "benchmarks.md"
    with pytest.raises(SystemExit):
        cli.parse_args(["--docs", "--json"])
