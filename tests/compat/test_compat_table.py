"""The README's elbencho-compatibility table is the one scripts/compat_table generates from
the option declarations (a new option shows up once the table is regenerated)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from aiobench.compat.table import (
    BEGIN,
    END,
    NOT_AVAILABLE,
    SUPPORTED,
    accepted_flags,
    generated,
    replaced,
    section,
    statuses,
)
from tests.helpers import DATA, REPO


def test_the_readme_table_is_the_generated_one() -> None:
    readme = (REPO / "README.md").read_text()
    assert section(readme) == generated(DATA / "elbencho-options.txt"), (
        "README.md's elbencho table is stale: run scripts/compat_table"
    )


def test_each_status_comes_from_the_declarations() -> None:
    flags = accepted_flags()
    rows = dict(statuses(["--block", "--service", "--gds", "--nosuchthing"], flags))
    assert rows["--block"] == SUPPORTED
    assert rows["--service"].startswith("recognized: ") and "--hosts" in rows["--service"]
    assert rows["--gds"].startswith("recognized: ") and "GPU" in rows["--gds"]
    assert rows["--nosuchthing"] == NOT_AVAILABLE
    # The command's own flags count, and a recognized one is not called supported.
    assert dict(statuses(["--version", "--port"], flags)) == {
        "--version": SUPPORTED,
        "--port": dict(statuses(["--service"], flags))["--service"],
    }


def test_the_table_goes_between_the_markers_only() -> None:
    readme = f"head\n{BEGIN}\nold\n{END}\ntail\n"
    assert replaced(readme, "new\n") == f"head\n{BEGIN}\nnew\n{END}\ntail\n"
    with pytest.raises(ValueError, match="needs one"):
        replaced("no markers\n", "new\n")


def test_the_script_checks_the_readme() -> None:
    script = str(REPO / "scripts" / "compat_table")
    proc = subprocess.run([sys.executable, script, "--check"], capture_output=True, check=False)
    assert (proc.returncode, proc.stderr) == (0, b"")
