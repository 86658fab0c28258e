"""A saved check (``check --json``) back into the check's result model, for ``show``."""

from __future__ import annotations

from typing import Any

from aiobench.check.model import CheckResult, Finding, Row
from aiobench.check.plan import FILE_TESTS, METADATA_TESTS, CheckTest
from aiobench.errors import ConfigError
from aiobench.results.saved import SavedCheck

# Every test the battery has, by its label; the fill is SEQ1M Q8T1 write's twin.
_TESTS = {t.label: t for t in (*FILE_TESTS, *METADATA_TESTS)}


def _test(row: dict[str, Any], where: str, path: str) -> CheckTest:
    test = _TESTS.get(f"{row['test']} {row['op']}")
    if test is None:
        raise ConfigError(f"{path}: {where}: no test {row['test']!r} {row['op']!r} in a check")
    return test


def check_result(saved: SavedCheck, path: str) -> CheckResult:
    """The check's result as the check had it when it wrote the document."""
    doc = saved.doc
    rows = [
        Row(
            test=_test(row, f"$.tests[{i}]", path),
            run=row["run"],
            phase=row["phase"],
            value=row["value"],
            p50_ns=row["p50_ns"],
            p99_ns=row["p99_ns"],
            count=row["count"],
            status=row["status"],
        )
        for i, row in enumerate(doc["tests"])
    ]
    findings = [
        Finding(test=f["test"], rule=f["rule"], message=f["message"]) for f in doc["findings"]
    ]
    return CheckResult(
        meta=doc["meta"],
        rows=rows,
        runs=saved.runs,
        findings=findings,
        interrupted=doc["interrupted"],
        error=doc["error"],
    )
