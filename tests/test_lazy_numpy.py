"""numpy loads only where a run computes with it: its import is a third of a small run's
start. The modules of a plain native-engine run import it inside the functions that use it,
never when they are imported themselves."""

from __future__ import annotations

import ast
import subprocess
import sys
from typing import TypeGuard

import pytest

from tests.helpers import REPO

# The operation streams, the native engine and what it shares with the Python engine.
LAZY = (
    "aiobench/plan/workload.py",
    "aiobench/plan/randalgo.py",
    "aiobench/plan/dirmode.py",
    "aiobench/engines/native.py",
    "aiobench/engines/gate.py",
    "aiobench/engines/python.py",
    "aiobench/engines/verify.py",
)


def numpy_on_import(source: str) -> list[int]:
    """The lines of the numpy imports that run when ``source`` is imported: at module
    level, in a class body, or in an if/try/with/loop block around them; not in a function,
    nor under ``if TYPE_CHECKING:`` (its ``else:`` runs)."""
    found: list[int] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return
        if isinstance(node, ast.Import | ast.ImportFrom) and any(map(_numpy, _names(node))):
            found.append(node.lineno)
        children = node.orelse if _type_checking(node) else list(ast.iter_child_nodes(node))
        for child in children:
            visit(child)

    visit(ast.parse(source))
    return found


def _names(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    return [node.module or ""] if not node.level else []


def _numpy(name: str) -> bool:
    return name == "numpy" or name.startswith("numpy.")


def _type_checking(node: ast.AST) -> TypeGuard[ast.If]:
    if not isinstance(node, ast.If):
        return False
    test = node.test
    name = test.attr if isinstance(test, ast.Attribute) else getattr(test, "id", "")
    return name == "TYPE_CHECKING"


@pytest.mark.parametrize("path", LAZY)
def test_no_numpy_import_runs_when_the_module_is_imported(path: str) -> None:
    assert numpy_on_import((REPO / path).read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    ("source", "lines"),
    [
        ("import numpy as np", [1]),
        ("import os, numpy.typing as npt", [1]),
        ("from numpy import random", [1]),
        ("try:\n    import numpy\nexcept ImportError:\n    numpy = None", [2]),
        ("try:\n    pass\nexcept ImportError:\n    from numpy import ndarray", [4]),
        ("class A:\n    import numpy", [2]),
        ("if TYPE_CHECKING:\n    import numpy\nelse:\n    import numpy.typing", [4]),
        ("if typing.TYPE_CHECKING:\n    import numpy", []),
        ("def f():\n    import numpy\n    return numpy", []),
        ("class A:\n    def f(self):\n        import numpy", []),
        ("import numpyish\nfrom . import numpy", []),
    ],
)
def test_the_check_finds_what_runs_on_import(source: str, lines: list[int]) -> None:
    assert numpy_on_import(source) == lines


_SEQUENTIAL = """
import sys
from aiobench.engines import gate, verify
from aiobench.kinds import READ, WRITE
from aiobench.plan import dirmode
from aiobench.plan.split import StreamOrder, ThreadSplit
from aiobench.plan.workload import Layout

layout = Layout((1 << 20, 12345, 4096 * 3), 4096)
for kind in (WRITE, READ):
    for stream in layout.streams(kind, 0, StreamOrder(seed=1), ThreadSplit.alone(3)):
        last = None
        while (run := stream.take(100)) is not None:
            run.after(1).pieces(7)
            # (runs on several targets join with numpy: their per-target counts loaded it)
            same = last is not None and last.path_index == run.path_index
            last = last.joined(run) if same else run
print("numpy" in sys.modules)
"""


def test_sequential_streams_load_no_numpy() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _SEQUENTIAL],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=True,
    )
    assert proc.stdout.split() == ["False"]
