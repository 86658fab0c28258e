"""The package's layers, read from its source: every import statement (module level,
TYPE_CHECKING blocks and inside functions) of every ``aiobench/**/*.py``.

Data flows one way (cli -> config -> plan -> run -> engines -> stats -> results ->
render): what comes after run/ never imports it, plan/ imports neither run/ nor the
engines, and no modules import each other in a circle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.helpers import REPO

PACKAGE = REPO / "aiobench"

# The modules that may stay at the top of the package (the face: CLI, options, config and
# what every part shares); every other module lives in the folder of its part.
MOST_AT_THE_TOP = 12


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The module (or package) of the package a dotted name lives in."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str) -> set[str]:
    """The package's modules ``module`` imports, anywhere in it."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")
                up = up[: len(up) - (node.level - 1)]
                base = ".".join([*up, base] if base else up)
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        for name in names:
            target = _resolve(name) if name.split(".")[0] == "aiobench" else None
            # (a package's own __init__ is not an edge of the modules inside it)
            if target is not None and target != module and not module.startswith(target + "."):
                found.add(target)
    return found


GRAPH = {module: _imports(module) for module in MODULES}


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_source_is_read() -> None:
    assert "aiobench.run.phases" in GRAPH["aiobench.run.runner"]
    # An import inside a function counts (connect picks MPI's coordinator only there).
    assert "aiobench.run.mpi" in GRAPH["aiobench.run.launch"]


def _imports_into(layer: str, *forbidden: str) -> set[tuple[str, str]]:
    """(module, target) of each import from ``layer`` into one of the ``forbidden`` parts."""
    return {
        (module, target)
        for module, targets in GRAPH.items()
        if _inside(module, layer)
        for target in targets
        if any(_inside(target, part) for part in forbidden)
    }


@pytest.mark.parametrize("layer", ["aiobench.stats", "aiobench.results", "aiobench.render"])
def test_what_comes_after_the_run_never_imports_it(layer: str) -> None:
    assert _imports_into(layer, "aiobench.run") == set()


def test_the_plan_imports_neither_the_run_nor_the_engines() -> None:
    assert _imports_into("aiobench.plan", "aiobench.run", "aiobench.engines") == set()


@pytest.mark.parametrize(
    "layer",
    [
        "aiobench.config",
        "aiobench.options",
        "aiobench.units",
        "aiobench.stats",
        "aiobench.results",
        "aiobench.render",
    ],
)
def test_only_the_run_and_the_face_import_an_engine(layer: str) -> None:
    assert _imports_into(layer, "aiobench.engines") == set()


def test_few_modules_stay_at_the_top() -> None:
    top = [m for m, path in MODULES.items() if m.count(".") == 1 and path.name != "__init__.py"]
    assert len(top) <= MOST_AT_THE_TOP, sorted(top)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_modules_import_each_other_in_a_circle() -> None:
    assert _cycles(GRAPH) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
