"""The published JSON Schema of the ``--json`` result document."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

RESULT_SCHEMA = "result.schema.json"


def load_schema() -> dict[str, Any]:
    """The result document's JSON Schema (draft 2020-12), read from the package data."""
    text = resources.files(__name__).joinpath(RESULT_SCHEMA).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema
