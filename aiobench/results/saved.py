"""Saved runs: a ``--json`` document checked and read back into the result model (``show``,
``compare``); the reading itself, key by key, is :mod:`aiobench.results.tables`.

Reads schema versions 1, 2 and 3; what version 1 lacks (intervals, per-target counts, CPU)
comes back empty, as do the per-rank and per-host counts of a run without MPI, and a
document without ``iteration`` keys is one iteration. The
``iterations_summary`` is not read back: it is recomputed from the phases as the run
computed it, so ``show`` prints the very summary the run printed.

Nothing of a file is trusted before it is checked: it must be a regular file of at most
:data:`MAX_DOCUMENT_BYTES` with no more objects, arrays and values than a real document
holds (:mod:`aiobench.results.shape`, counted as it is read), UTF-8 JSON whose numbers fit
64 bits, valid under the published schema, and each latency histogram must decode to the
count beside it. Anything else is a usage error naming the file (and where in it, for a
schema error).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, NoReturn

from aiobench.errors import ConfigError
from aiobench.results.infile import read_regular_file
from aiobench.results.model import SCHEMA_VERSION, Compared, PhaseResult
from aiobench.results.runresult import RunResult, labelled_phases
from aiobench.results.shape import ShapeBound
from aiobench.results.tables import latency_from_json, run_from_json
from aiobench.stats.recorders import LatencyRecorder
from aiobench.units import MIB

READABLE_VERSIONS = (1, 2, SCHEMA_VERSION)
CHECK_KIND = "check"  # the "kind" of an `aiobench check --json` document
# Room for the longest runs (measured): a --liveint interval takes about 1.4 KB of the
# indented document (2.3 KB in dir mode, with the entries' latency) and a phase 4-9 KB
# besides, so 256 MiB holds over 110,000 intervals: 60 hours of one phase at the default
# 2 s, 3 hours at 100 ms. Parsed, a document takes about twice its size in memory.
MAX_DOCUMENT_BYTES = 256 * MIB
# aiobench writes no number wider than 64 bits (byte counts, --verify's salt); a wider one
# would only overflow the renderers' float arithmetic.
MAX_NUMBER = 2**64 - 1
_MAX_DIGITS = len(str(MAX_NUMBER))
# A schema error names the place and the rule; the offending data is not worth more.
_MAX_MESSAGE_CHARS = 200


class _BadNumber(ValueError):
    """A number no result document holds (caught apart from JSON syntax errors)."""


def _out_of_range(text: str) -> _BadNumber:
    shown = text if len(text) <= _MAX_DIGITS else text[:_MAX_DIGITS] + "..."
    return _BadNumber(f"the number {shown} is out of range (beyond 2^64)")


def _int(text: str) -> int:
    # The length first: int() of a long string of digits costs quadratic time (and past
    # 4300 digits raises).
    value = int(text) if len(text.lstrip("-")) <= _MAX_DIGITS else None
    if value is None or abs(value) > MAX_NUMBER:
        raise _out_of_range(text)
    return value


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or abs(value) > MAX_NUMBER:
        raise _out_of_range(text)
    return value


def _constant(text: str) -> NoReturn:
    raise _BadNumber(f"{text} is not a JSON number")


def _brief(text: str) -> str:
    if len(text) <= _MAX_MESSAGE_CHARS:
        return text
    return text[: _MAX_MESSAGE_CHARS - 3] + "..."


def _parse(path: str) -> Any:
    """The JSON value in the file ``path``, numbers checked; else :class:`ConfigError`."""
    raw = read_regular_file(path, MAX_DOCUMENT_BYTES, ShapeBound(path))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    del raw  # (a document's bytes and its text need not both stay while it is parsed)
    try:
        doc = json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply for a result document") from None
    except _BadNumber as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except ValueError as exc:  # json.JSONDecodeError
        raise ConfigError(f"{path}: not a JSON document ({exc})") from None
    return doc


def load_document(path: str) -> dict[str, Any]:
    """The parsed and checked JSON of a saved run, or :class:`ConfigError` naming ``path``."""
    doc = _parse(path)
    if isinstance(doc, dict) and doc.get("kind") == CHECK_KIND:
        raise ConfigError(
            f"{path}: a check document (aiobench check --json); only show and compare read it"
        )
    return _checked_run(doc, path)


def _checked_run(doc: Any, path: str) -> dict[str, Any]:
    if not isinstance(doc, dict) or "phases" not in doc:
        raise ConfigError(f"{path}: not an aiobench result document (written by --json)")
    version = doc.get("schema_version")
    if type(version) is not int or version not in READABLE_VERSIONS:
        raise ConfigError(
            f"{path}: schema_version {_brief(repr(version))} is not one this aiobench reads "
            f"({', '.join(map(str, READABLE_VERSIONS))})"
        )
    _validate(doc, version, path)
    _check_histograms(doc, path)
    return doc


def _check_version(doc: dict[str, Any], path: str) -> None:
    version = doc.get("schema_version")
    if type(version) is not int or version != SCHEMA_VERSION:
        raise ConfigError(
            f"{path}: check document of schema_version {_brief(repr(version))}; this "
            f"aiobench reads {SCHEMA_VERSION}"
        )


def _validate(doc: dict[str, Any], version: int, path: str, kind: str = "run") -> None:
    """:class:`ConfigError` with the JSON path of the first place that breaks the schema."""
    # Here, not at the top: the benchmark itself imports this module and needs neither.
    import fastjsonschema

    from aiobench.results.schema import check_validator, document_validator

    try:
        (check_validator() if kind == CHECK_KIND else document_validator(version))(doc)
    except fastjsonschema.JsonSchemaValueException as exc:
        # exc.name is the place as fastjsonschema spells it: data.phases[0].latency
        name = exc.name or "data"
        where = "$" + name.removeprefix("data")
        rule = exc.message.removeprefix(name).strip()
        if exc.rule in ("anyOf", "oneOf"):  # fastjsonschema's words say nothing there
            rule = "is none of the values allowed there"
        raise ConfigError(f"{path}: {_brief(f'{where}: {rule}')}") from None


def _check_histograms(doc: dict[str, Any], path: str, where: str = "$") -> None:
    """Every latency histogram decodes to exactly the count beside it (the schema checks
    only that it is base64), so plotting and merging them later cannot fail."""
    for i, phase in enumerate(doc["phases"]):
        places = [(f"{where}.phases[{i}].latency", phase["latency"])]
        places += [
            (f"{where}.phases[{i}].intervals[{j}].latency", interval["latency"])
            for j, interval in enumerate(phase.get("intervals", []))
        ]
        for where, latencies in places:
            for kind, d in latencies.items():
                if not _histogram_holds(d):
                    raise ConfigError(
                        f"{path}: {where}.{kind}.hdr_histogram: not a histogram of "
                        f"{d['count']} latencies"
                    )


def _histogram_holds(d: dict[str, Any]) -> bool:
    hdr: str = d["hdr_histogram"]
    if d["count"] == 0:
        return hdr == ""  # as aiobench writes it: nothing to decode
    try:
        LatencyRecorder.from_summary(latency_from_json(d))
    except Exception:  # hdrh raises base64, zlib, struct and its own errors alike
        return False
    return True


def load_run(path: str) -> RunResult:
    return _run(load_document(path), path)


def _run(doc: dict[str, Any], path: str) -> RunResult:
    try:
        return run_from_json(doc)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{path}: not a complete aiobench result ({exc!r})") from None


@dataclass(frozen=True, slots=True)
class SavedCheck:
    """A checked ``check --json`` document and its runs read back; each of its tests names
    a phase that is there."""

    doc: dict[str, Any]
    runs: list[RunResult]

    def phase_of(self, test: dict[str, Any]) -> PhaseResult:
        return self.runs[int(test["run"])].phases[int(test["phase"])]


def load_shown(path: str) -> RunResult | SavedCheck:
    """A run (``--json``) or check (``check --json``) document, each checked and read back."""
    doc = _parse(path)
    if isinstance(doc, dict) and doc.get("kind") == CHECK_KIND:
        return _checked_check(doc, path)
    return _run(_checked_run(doc, path), path)


def _checked_check(doc: dict[str, Any], path: str) -> SavedCheck:
    _check_version(doc, path)
    _validate(doc, SCHEMA_VERSION, path, CHECK_KIND)
    for i, run_doc in enumerate(doc["runs"]):
        _check_histograms(run_doc, path, f"$.runs[{i}]")
    runs = [_run(run_doc, path) for run_doc in doc["runs"]]
    for i, test in enumerate(doc["tests"]):
        run_index, phase_index = test["run"], test["phase"]
        if run_index >= len(runs) or phase_index >= len(runs[run_index].phases):
            raise ConfigError(f"{path}: $.tests[{i}]: no run {run_index} phase {phase_index}")
    return SavedCheck(doc, runs)


def load_compared(path: str) -> Compared:
    """A run (``--json``) or check (``check --json``) document for ``compare``."""
    shown = load_shown(path)
    if isinstance(shown, RunResult):
        return Compared(kind="run", meta=shown.meta, phases=labelled_phases(shown))
    phases = [(str(test["label"]), shown.phase_of(test)) for test in shown.doc["tests"]]
    return Compared(kind=CHECK_KIND, meta=shown.doc["meta"], phases=phases)
