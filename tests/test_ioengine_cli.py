"""--ioengine from the command line: the choice, its record in the JSON, the notes (#13)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from aiobench.config import native_built
from aiobench.results.schema import load_schema
from tests.helpers import RunCli

INTERPRETER_NOTE = "share one Python interpreter"
FALLBACK_NOTE = "the native engine is not built here"
needs_native = pytest.mark.skipif(not native_built(), reason="the C extension is not built")


def test_an_unknown_engine_is_a_usage_error(run_cli: RunCli, tmp_path: Path) -> None:
    proc = run_cli("-w", "-s", "64k", "--ioengine", "libaio", str(tmp_path / "f"))
    assert proc.returncode == 2
    expected = "Error: --ioengine: must be one of native, python, s3, net (got 'libaio')\n"
    assert proc.stderr == expected, proc.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("engine", ["python", pytest.param("native", marks=needs_native)])
def test_the_engine_is_recorded_with_each_phases_startup(
    run_cli: RunCli, tmp_path: Path, engine: str
) -> None:
    out = tmp_path / "r.json"
    proc = run_cli(
        "-w", "-r", "-b", "4k", "-s", "256k", "-t", "2", "--ioengine", engine,
        str(tmp_path / "f"), "--json", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    Draft202012Validator(load_schema()).validate(doc)
    assert doc["meta"]["ioengine"] == engine
    assert [p["phase"] for p in doc["phases"]] == ["WRITE", "READ"]
    assert all(p["startup_ns"] > 0 for p in doc["phases"])
    # Small blocks on several slots: only the Python engine has them share its lock.
    assert (INTERPRETER_NOTE in proc.stderr) == (engine == "python")
    assert FALLBACK_NOTE not in proc.stderr  # the engine was asked for by name


def test_the_default_engine_is_native_where_it_was_built(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = run_cli("-w", "-b", "1m", "-s", "1m", str(tmp_path / "f"), "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    built = native_built()
    assert json.loads(out.read_text())["meta"]["ioengine"] == ("native" if built else "python")
    assert (FALLBACK_NOTE in proc.stderr) == (not built)


@pytest.mark.skipif(native_built(), reason="the C extension is built: native is available")
def test_native_where_it_was_not_built_is_a_usage_error(run_cli: RunCli, tmp_path: Path) -> None:
    proc = run_cli("-w", "-s", "64k", "--ioengine", "native", str(tmp_path / "f"))
    assert proc.returncode == 2
    assert proc.stderr.startswith("Error: --ioengine native: the C extension")
    assert proc.stderr.count("\n") == 1
