"""The published JSON Schema of the ``--json`` result document, and its validator."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from importlib import resources
from typing import Any

RESULT_SCHEMA = "result.schema.json"
# The keys version 2 added (see the history in aiobench/results/model.py); apart from them a
# version-1 document has version 2's shape, so it is checked by the same schema with
# these keys optional.
ADDED_IN_2 = {
    "meta": ("live_interval_ms",),
    "phase": ("start_time", "per_target", "intervals"),
    "totals": ("cpu_percent",),
}


def load_schema() -> dict[str, Any]:
    """The result document's JSON Schema (draft 2020-12), read from the package data."""
    text = resources.files(__name__).joinpath(RESULT_SCHEMA).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def document_schema(version: int) -> dict[str, Any]:
    """The schema of a ``--json`` document (no NDJSON record) of ``schema_version`` 1, or
    of 2 and 3 (one schema: 3 only widened ``error.offset``)."""
    schema = load_schema()
    del schema["oneOf"]
    schema["$ref"] = "#/$defs/document"
    if version == 1:
        defs = schema["$defs"]
        defs["document"]["properties"]["schema_version"] = {"const": 1}
        for name, keys in ADDED_IN_2.items():
            defs[name]["required"] = [k for k in defs[name]["required"] if k not in keys]
    return schema


@functools.cache
def document_validator(version: int) -> Callable[[Any], Any]:
    """A function that raises ``fastjsonschema.JsonSchemaValueException`` at the first
    place a document of ``version`` breaks its schema.

    fastjsonschema compiles the schema to Python once (about 0.15 s), then checks a
    document some 40 times faster than jsonschema does; imported here, on first use, so
    the benchmark itself never loads it. It has no draft 2020-12 generator and uses its
    draft 2019-09 one, which knows every keyword this schema uses, with the same meaning.
    """
    import fastjsonschema

    validate: Callable[[Any], Any] = fastjsonschema.compile(
        document_schema(version), use_default=False
    )
    return validate


@functools.cache
def check_validator() -> Callable[[Any], Any]:
    """Like :func:`document_validator`, for the document of ``aiobench check --json``."""
    import fastjsonschema

    schema = load_schema()
    del schema["oneOf"]
    schema["$ref"] = "#/$defs/check_document"
    validate: Callable[[Any], Any] = fastjsonschema.compile(schema, use_default=False)
    return validate


ELBENCHO_RECORD_SCHEMA = "elbencho-record.schema.json"


def load_elbencho_schema() -> dict[str, Any]:
    """The JSON Schema of a ``--jsonfile`` line: elbencho's per-phase record."""
    text = resources.files(__name__).joinpath(ELBENCHO_RECORD_SCHEMA).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema
