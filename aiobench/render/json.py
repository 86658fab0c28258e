"""The ``--json`` document and the NDJSON records of ``--livejson``; pure (``--jsonfile``
writes elbencho's records: :mod:`aiobench.render.elbencho_json`).

The result model's JSON form itself is :mod:`aiobench.results.tables`; this module only
serialises it: the document indented, each record on one line.
"""

from __future__ import annotations

import json

from aiobench.results.model import SCHEMA_VERSION, IntervalStats
from aiobench.results.runresult import RunResult
from aiobench.results.tables import interval_to_json, run_to_json


def dumps(result: RunResult) -> str:
    return json.dumps(run_to_json(result), indent=2) + "\n"


def interval_record(label: str, phase: str, iv: IntervalStats, iso_date: str) -> str:
    """One ``--livejson`` line: an interval of a phase (NDJSON)."""
    record = {
        "schema_version": SCHEMA_VERSION,
        "record": "interval",
        "iso_date": iso_date,
        "label": label,
        "phase": phase,
        **interval_to_json(iv),
    }
    return json.dumps(record, separators=(",", ":")) + "\n"
