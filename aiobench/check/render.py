"""A check for people (the table, notes and warnings), for issues and CI summaries
(markdown) and for pipelines (one JSON document with the runs inside); pure."""

from __future__ import annotations

import json
from typing import Any

from aiobench.check.model import CheckResult, Finding, Row
from aiobench.check.plan import table_order
from aiobench.results.model import SCHEMA_VERSION
from aiobench.results.tables import run_to_json
from aiobench.text import printable
from aiobench.units import MIB, NS_PER_S, format_latency

KIND = "check"
UNITS = {"bytes_per_s": "MiB/s", "iops": "IOPS", "entries_per_s": "files/s"}


def _ordered(rows: list[Row]) -> list[Row]:
    by_label = {row.test.label: row for row in rows}
    return [by_label[label] for label in table_order(list(by_label))]


def _value(row: Row) -> str:
    return str(row.value // MIB if row.test.metric == "bytes_per_s" else row.value)


def _latency(ns: int, count: int) -> str:
    return format_latency(ns) if count else "-"


def _headline(result: CheckResult) -> str:
    meta = result.meta
    direct = "direct I/O" if meta.get("direct_io") else "buffered I/O (no O_DIRECT)"
    elapsed = int(str(meta.get("elapsed_ns", 0))) / NS_PER_S
    parts = [
        str(meta.get("filesystem") or "unknown filesystem"),
        direct,
        f"{meta.get('ioengine')} engine",
        f"budget {meta.get('budget_s')} s, took {elapsed:.1f} s",
    ]
    return f"aiobench check {printable(str(meta.get('dir')))}: {', '.join(parts)}"


def _status(row: Row) -> str:
    return "" if row.status in ("ok", "time_limited") else f"  ({row.status})"


def render_check(result: CheckResult) -> str:
    """The table: a row per test (MiB/s, IOPS or files/s; p50 and p99), then the notes,
    each suspicious result and how the check ended."""
    lines = [_headline(result), ""]
    header = f"{'TEST':<11} {'OP':<6} {'RESULT':>10} {'':<7} {'p50':>9} {'p99':>9}"
    lines += [header, "=" * len(header)]
    for row in _ordered(result.rows):
        unit = UNITS[row.test.metric]
        p50, p99 = _latency(row.p50_ns, row.count), _latency(row.p99_ns, row.count)
        lines.append(
            f"{row.test.name:<11} {row.test.op:<6} {_value(row):>10} {unit:<7} "
            f"{p50:>9} {p99:>9}{_status(row)}".rstrip()
        )
    if not result.rows:
        lines.append("(nothing measured)")
    lines.append("")
    lines += [f"Note: {printable(str(note))}." for note in _notes(result)]
    lines += [f"Warning: {printable(f.message)}." for f in result.findings]
    if not result.findings and result.rows and not result.interrupted and not result.error:
        lines.append("No suspicious result.")
    return "\n".join(lines).rstrip("\n") + "\n"


def _notes(result: CheckResult) -> list[str]:
    notes = result.meta.get("notes")
    out = [str(n) for n in notes] if isinstance(notes, list) else []
    left = result.meta.get("left_behind")
    if isinstance(left, list) and left:
        out.append(
            "left in place, as the check did not create it or could not remove it: "
            + ", ".join(str(x) for x in left)
        )
    return out


def _cell(text: str) -> str:
    """Text for a markdown table cell: printable, pipes escaped."""
    return printable(text).replace("|", "\\|")


def render_markdown(result: CheckResult) -> str:
    """A GitHub-flavoured markdown table to paste into an issue or a CI job summary."""
    lines = [f"### {_cell(_headline(result))}", ""]
    lines += ["| test | op | result | unit | p50 | p99 |"]
    lines += ["|---|---|---:|---|---:|---:|"]
    for row in _ordered(result.rows):
        cells = [
            row.test.name,
            row.test.op + _status(row),
            _value(row),
            UNITS[row.test.metric],
            _latency(row.p50_ns, row.count),
            _latency(row.p99_ns, row.count),
        ]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    lines.append("")
    if result.findings:
        lines += ["**Warnings**", ""]
        lines += [f"- {_cell(f.message)}" for f in result.findings]
        lines.append("")
    notes = _notes(result)
    if notes:
        lines += ["**Notes**", ""]
        lines += [f"- {_cell(n)}" for n in notes]
        lines.append("")
    return "\n".join(lines)


def _row_dict(row: Row) -> dict[str, Any]:
    return {
        "test": row.test.name,
        "op": row.test.op,
        "label": row.test.label,
        "metric": row.test.metric,
        "value": row.value,
        "p50_ns": row.p50_ns,
        "p99_ns": row.p99_ns,
        "count": row.count,
        "status": row.status,
        "run": row.run,
        "phase": row.phase,
    }


def _finding_dict(f: Finding) -> dict[str, Any]:
    return {"test": f.test, "rule": f.rule, "message": f.message}


def check_dict(result: CheckResult) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "meta": result.meta,
        "tests": [_row_dict(r) for r in _ordered(result.rows)],
        "findings": [_finding_dict(f) for f in result.findings],
        "runs": [run_to_json(run) for run in result.runs],
        "interrupted": result.interrupted,
        "error": result.error,
    }


def dumps_check(result: CheckResult) -> str:
    return json.dumps(check_dict(result), indent=2) + "\n"
