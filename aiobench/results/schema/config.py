"""The schema's ``config`` block against the option declarations (:mod:`aiobench.options`).

Each key of ``meta.config`` (:meth:`aiobench.config.BenchConfig.to_dict`) must be described
by the published schema, admitting every value its declaration allows: exactly the JSON
types of the field, and its declared ``low``/``high`` or wider. Wider, not equal: the schema
also checks documents older aiobench versions wrote, so an entry is never narrowed here.

:func:`disagreements` is what ``tests/test_options.py`` asserts is empty; a new option's
entry is derived from its declaration and written into the file by ``python3 -m
aiobench.results.schema.config``, so the schema needs no edit by hand.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from aiobench.config import BenchConfig
from aiobench.options import OPT, Opt

SCHEMA_FILE = Path(__file__).with_name("result.schema.json")
# Where the file's config properties end: the closing brace of ``"properties"`` in
# ``$defs.config``, six spaces in (its keys are eight spaces in).
_CONFIG_START = '\n    "config": {\n'
_PROPERTIES_START = '\n      "properties": {\n'
_PROPERTIES_END = "\n      }"
_KEY_INDENT = " " * 8

_JSON_TYPES: dict[object, str] = {
    bool: "boolean",
    int: "integer",
    str: "string",
    tuple: "array",
    type(None): "null",
}


@dataclasses.dataclass(frozen=True)
class Key:
    """One key of ``meta.config``: its field's Python type, and its declaration if it is an
    option (``argv``, ``timelimit_ns`` and ``ioengine_fallback`` are not)."""

    name: str
    hint: object
    opt: Opt | None

    @property
    def json_types(self) -> frozenset[str]:
        parts = typing.get_args(self.hint) if _is_union(self.hint) else (self.hint,)
        return frozenset(_JSON_TYPES[typing.get_origin(part) or part] for part in parts)


def config_keys() -> list[Key]:
    """Every key of the JSON document's ``config``, in its order."""
    hints = typing.get_type_hints(BenchConfig)
    keys = []
    for field in dataclasses.fields(BenchConfig):
        opt: Opt | None = field.metadata.get(OPT)
        name = (opt.json_key if opt else None) or field.name
        keys.append(Key(name, hints[field.name], opt))
    return keys


def derived(key: Key) -> dict[str, Any]:
    """The schema entry of ``key`` from its declaration: its types, then its bounds."""
    names = sorted(key.json_types, key=list(_JSON_TYPES.values()).index)
    entry: dict[str, Any] = {"type": names[0] if len(names) == 1 else names}
    if "array" in names:
        entry["items"] = {"type": "string"}  # (the one tuple field: PATHs)
    if key.opt is not None and key.opt.low is not None:
        entry["minimum"] = key.opt.low
    if key.opt is not None and key.opt.high is not None:
        entry["maximum"] = key.opt.high
    return entry


def disagreements(schema: Mapping[str, Any]) -> list[str]:
    """Each config key the schema does not describe, or describes narrower than declared."""
    defs = schema["$defs"]
    described = defs["config"]["properties"]
    problems = []
    for key in config_keys():
        if key.name not in described:
            problems.append(f"{key.name}: not in the schema (python3 -m {__name__} adds it)")
            continue
        admitted = _Admitted.of(described[key.name], defs)
        problems.extend(f"{key.name}: {problem}" for problem in admitted.narrower_than(key))
    return problems


def with_new_keys(text: str) -> str:
    """The schema file's ``text`` with an entry (:func:`derived`) for each config key it
    lacks, at the end of the config properties; the rest stays byte for byte."""
    described = json.loads(text)["$defs"]["config"]["properties"]
    new = [key for key in config_keys() if key.name not in described]
    start = text.index(_PROPERTIES_START, text.index(_CONFIG_START))
    end = text.index(_PROPERTIES_END, start + len(_PROPERTIES_START))
    added = "".join(
        f",\n{_KEY_INDENT}{json.dumps(key.name)}: {_formatted(derived(key), _KEY_INDENT)}"
        for key in new
    )
    return text[:end] + added + text[end:]


def _formatted(value: object, indent: str) -> str:
    """``value`` as the file writes its config entries: two spaces more per level, a list
    of plain values on one line (``["string", "null"]``)."""
    if isinstance(value, dict):
        inner = indent + "  "
        items = [f"{inner}{json.dumps(k)}: {_formatted(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    if isinstance(value, list):
        return "[" + ", ".join(json.dumps(item) for item in value) + "]"
    return json.dumps(value)


@dataclasses.dataclass(frozen=True)
class _Admitted:
    """What a schema entry admits: its JSON types and integer bounds (None: unbounded)."""

    json_types: frozenset[str]
    minimum: int | None
    maximum: int | None

    @classmethod
    def of(cls, entry: Mapping[str, Any], defs: Mapping[str, Any]) -> _Admitted:
        branches = list(_branches(entry, defs))
        names = frozenset(name for branch in branches for name in _types(branch))
        bounded = [b for b in branches if "integer" in _types(b)]
        return cls(names, _widest(bounded, "minimum", min), _widest(bounded, "maximum", max))

    def narrower_than(self, key: Key) -> Iterator[str]:
        """What of the declaration the entry does not admit. A bound the declaration leaves
        out is not compared: parsing or :func:`~aiobench.config.validate` sets it."""
        if self.json_types != key.json_types:
            yield f"the schema's types {sorted(self.json_types)}, declared {sorted(key.json_types)}"
        low = key.opt.low if key.opt else None
        high = key.opt.high if key.opt else None
        if low is not None and self.minimum is not None and self.minimum > low:
            yield f"the schema's minimum {self.minimum} is above the declared low {low}"
        if high is not None and self.maximum is not None and self.maximum < high:
            yield f"the schema's maximum {self.maximum} is below the declared high {high}"


def _branches(entry: Mapping[str, Any], defs: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """The plain entries ``entry`` stands for: ``$ref`` followed, ``oneOf`` split."""
    if "$ref" in entry:
        yield from _branches(defs[entry["$ref"].rsplit("/", 1)[-1]], defs)
    elif "oneOf" in entry:
        for branch in entry["oneOf"]:
            yield from _branches(branch, defs)
    else:
        yield entry


def _widest(
    branches: list[Mapping[str, Any]], bound: str, pick: Callable[[list[int]], int]
) -> int | None:
    """The loosest ``bound`` of integer ``branches``; None when one of them has none."""
    given = [b.get(bound) for b in branches]
    values = [value for value in given if isinstance(value, int)]
    return None if not values or len(values) < len(given) else pick(values)


def _types(entry: Mapping[str, Any]) -> set[str]:
    if "enum" in entry:
        return {_JSON_TYPES[type(value)] for value in entry["enum"]}
    given = entry["type"]
    return {given} if isinstance(given, str) else set(given)


def _is_union(hint: object) -> bool:
    return isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union


def main() -> int:
    """Add the missing config entries to the published schema file; say which."""
    text = SCHEMA_FILE.read_text(encoding="utf-8")
    updated = with_new_keys(text)
    if updated != text:
        SCHEMA_FILE.write_text(updated, encoding="utf-8")
    problems = disagreements(json.loads(updated))
    for problem in problems:
        print(f"{SCHEMA_FILE.name}: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
