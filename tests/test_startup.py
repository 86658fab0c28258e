"""What starting aiobench loads: a plain run and ``--help`` leave out what other paths need.

Most of a small run's start is importing (#28). These tests catch a heavy import coming
back by what a real process has loaded, not by timing it (the machine may be busy); the
times are in ``scripts/bench --section startup``.
"""

from __future__ import annotations

import gc
import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer._coercion import build_runtime_param

from aiobench import __version__
from aiobench.cli import app
from aiobench.errors import ConfigError
from aiobench.run import gcpause
from tests.helpers import run_probed

# Loaded only by the paths that use them: pydantic by typer's own coercion of unusual values,
# rich by the live line on a terminal, httptools by S3 targets, matplotlib by `plot`, the JSON
# schema by saved runs, mpi4py under MPI, the subcommands' modules by their command lines,
# statistics by an -i summary, the custom tree's modules by --treefile, aiohttp never.
NOT_FOR_A_RUN = (
    "pydantic",
    "rich",
    "httptools",
    "matplotlib",
    "fastjsonschema",
    "mpi4py",
    "aiohttp",
    "statistics",
    "aiobench.check",
    "aiobench.storagebench",
    "aiobench.plan.tree",
    "aiobench.plan.treefile",
    "aiobench.plan.treeresolve",
    "aiobench.engines.s3",
    "aiobench.render.compare",
    "aiobench.render.dryrun",
    "aiobench.render.json",
    "aiobench.render.live",
    "aiobench.render.plot",
    "aiobench.results.saved",
    "aiobench.results.schema",
    "aiobench.run.hosts",
    "aiobench.run.mpi",
)
# --help needs neither the run nor its numbers (nor the hashing modules of secrets, nor the
# MPI-aware coordinator, nor the output files' module with its socket).
NOT_FOR_HELP = (
    *NOT_FOR_A_RUN,
    "numpy",
    "hdrh",
    "asyncio",
    "anyio",
    "uvloop",
    "secrets",
    "hashlib",
    "socket",
    "aiobench.run.coordinator",
    "aiobench.render.outfiles",
    "aiobench.engines.native",
    "aiobench.render.outputs",
    "aiobench.results.model",
    "aiobench.run.runner",
)

# The console entry point, as `aiobench ARGS` runs it; at the very end (after the exit's
# SystemExit) the names of the modules loaded go to the file named by AIOBENCH_LOADED, and
# whether the garbage collector was on to that name + ".gc".
_PROBE = """
import gc, os, sys
sys.argv[0] = "aiobench"
try:
    from aiobench.entry import main
    main()
finally:
    with open(os.environ["AIOBENCH_LOADED"], "w") as out:
        out.write("\\n".join(sorted(sys.modules)))
    with open(os.environ["AIOBENCH_LOADED"] + ".gc", "w") as out:
        out.write(str(gc.isenabled()))
"""


def loaded(tmp_path: Path, *args: str) -> set[str]:
    """The modules a real ``aiobench ARGS`` process has loaded when it ends (exit code 0)."""
    return probe(tmp_path, *args)[0]


def probe(tmp_path: Path, *args: str) -> tuple[set[str], bool]:
    """What :func:`loaded` says, and whether the process's garbage collector was on at
    its end."""
    names = tmp_path / "loaded.txt"
    run_probed(_PROBE, *args, env={"AIOBENCH_LOADED": str(names)})
    gc_on = (tmp_path / "loaded.txt.gc").read_text()
    assert gc_on in ("True", "False")
    return set(names.read_text().split()), gc_on == "True"


def among(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    """The ``modules`` that are one of ``packages`` or inside one."""
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in packages))


# numpy too, where the native engine runs: the C extensions fill the arrays and fold the
# latencies, and only what computes with numpy loads it (random offsets, several targets,
# --rwmixpct, the Python engine...). Without the extensions, the Python engine runs, with it.
NATIVE = importlib.util.find_spec("aiobench.engines._native") is not None
NOT_FOR_A_NATIVE_RUN = (*NOT_FOR_A_RUN, "numpy") if NATIVE else NOT_FOR_A_RUN


@pytest.mark.parametrize(
    "args",
    [
        ["-w", "-r", "-b", "4k", "-s", "4k"],
        ["-w", "-r", "-t", "2", "--iodepth", "4", "-b", "4k", "-s", "1m"],
        ["-w", "-r", "-t", "2", "-b", "4k", "-s", "256k", "--lat", "--latpercent"],
    ],
    ids=["tiny", "threads and depth", "latency table"],
)
def test_a_plain_run_loads_only_what_it_uses(tmp_path: Path, args: list[str]) -> None:
    target = str(tmp_path / "f")
    modules = loaded(tmp_path, *args, target, "--nolive")
    assert {"aiobench.run.runner", "hdrh"} <= modules  # (it did run, and summarised)
    assert among(modules, NOT_FOR_A_NATIVE_RUN) == []


def test_the_benchmarks_tiny_run_loads_only_what_it_uses(tmp_path: Path) -> None:
    """``scripts/bench --section startup``'s run: with --json, and the live line's default."""
    target, out = str(tmp_path / "f"), str(tmp_path / "run.json")
    modules = loaded(tmp_path, "-w", "-r", "-b", "4k", "-s", "4k", target, "--json", out)
    assert {"aiobench.run.runner", "aiobench.render.json"} <= modules  # (it ran, wrote)
    assert (
        among(modules, tuple(m for m in NOT_FOR_A_NATIVE_RUN if m != "aiobench.render.json")) == []
    )


# What only a phase's end needs: its result's classes, the table, the sums over its slots,
# the housekeeping blocks (--sync, --dropcache). A run loads them once its first phase has
# ended, off the way to that phase's first operation (design.md, "Start-up").
AFTER_THE_FIRST_PHASE = (
    "aiobench.results.model",
    "aiobench.render.table",
    "aiobench.stats.summary",
    "aiobench.stats.opkinds",
    "aiobench.stats.iterations",
    "aiobench.run.housekeeping",
)

# As _PROBE, but the modules are those loaded when the first phase starts (its clock).
_AT_START = """
import os, sys
from aiobench.run import phases

start = phases.PhaseRun.start

def started(self, gate):
    if not os.path.exists(os.environ["AIOBENCH_LOADED"]):
        with open(os.environ["AIOBENCH_LOADED"], "w") as out:
            out.write("\\n".join(sorted(sys.modules)))
    return start(self, gate)

phases.PhaseRun.start = started
sys.argv[0] = "aiobench"
from aiobench.entry import main
main()
"""


def test_the_first_phase_starts_before_its_results_modules_load(tmp_path: Path) -> None:
    """The benchmark's tiny run, with a result file of each kind (the table, --csvfile,
    --resfile, --json): what renders the results loads after the first phase."""
    names = tmp_path / "at-start.txt"
    target = str(tmp_path / "f")
    outs = [(opt, str(tmp_path / f"out{i}")) for i, opt in enumerate(("--csvfile", "--resfile"))]
    args = ["-w", "-r", "-b", "4k", "-s", "4k", target, "--json", str(tmp_path / "run.json")]
    files = (a for pair in outs for a in pair)
    proc = run_probed(_AT_START, *args, *files, env={"AIOBENCH_LOADED": str(names)})
    at_start = set(names.read_text().split())
    assert {"aiobench.run.worker", "aiobench.results.running"} <= at_start
    assert among(at_start, AFTER_THE_FIRST_PHASE) == []
    assert "LAST DONE" in proc.stdout  # (and the results came out, in every file)
    assert all(Path(path).stat().st_size for _, path in outs)


def test_the_collector_is_paused_at_start_and_on_for_the_work(tmp_path: Path) -> None:
    """--help ends before any work (the collector stays paused, see aiobench.run.gcpause);
    a run's phases and a subcommand run with it on."""
    target, out = str(tmp_path / "f"), str(tmp_path / "run.json")
    assert probe(tmp_path, "--help")[1] is False
    assert probe(tmp_path, "-w", "-b", "4k", "-s", "4k", target, "--json", out)[1] is True
    modules, gc_on = probe(tmp_path, "show", out)
    assert gc_on is True
    assert "aiobench.cli" in modules  # (the subcommand ran in the CLI)


def test_the_pause_is_undone_only_by_resume() -> None:
    """resume() without a pause (the CLI called in a test's process) changes nothing."""
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    gcpause.resume()
    assert gc.isenabled() and gc.get_freeze_count() == frozen
    try:
        gcpause.pause()
        assert not gc.isenabled()
        gcpause.resume()
        assert gc.isenabled() and gc.get_freeze_count() > frozen
        gcpause.resume()  # (once)
        assert gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()


def test_help_loads_neither_the_run_nor_numpy(tmp_path: Path) -> None:
    modules = loaded(tmp_path, "--help")
    assert "aiobench.helptext" in modules
    assert among(modules, NOT_FOR_HELP) == []


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_alone_loads_no_cli_and_says_what_the_cli_says(tmp_path: Path, flag: str) -> None:
    modules = loaded(tmp_path, flag)
    assert "aiobench.render.stdio" in modules  # (the streams guarded, as by the CLI)
    assert among(modules, ("typer", "aiobench.cli", *NOT_FOR_HELP)) == []
    alone = subprocess.run([sys.executable, "-m", "aiobench", flag], capture_output=True, text=True)
    # With another word beside it the CLI answers (typer's eager --version): the same line.
    cli = subprocess.run(
        [sys.executable, "-m", "aiobench", flag, "--nolive"], capture_output=True, text=True
    )
    assert (alone.returncode, alone.stdout, alone.stderr) == (0, f"aiobench {__version__}\n", "")
    assert (cli.returncode, cli.stdout) == (0, alone.stdout)


def test_the_among_check_finds_a_package_and_its_modules() -> None:
    modules = {"rich", "rich.console", "richer", "numpy"}
    assert among(modules, ("rich",)) == ["rich", "rich.console"]


# -- the plain coercion (cli._PlainCoercion) gives what typer's own gives ----------------------

_VALUES: dict[object, tuple[Any, ...]] = {
    int: ("0", "7", "007", "-12", "-0", 5, "+5", " 5", "1_000", "12.0", "x", "1e3", "", "٣"),
    str: ("", " a ", "é", "-", "x\udcff"),
    bool: (True, False),
    list[str]: (("a", "b"), (), ("-",)),
}


def _outcome(coercion: Any, value: object, param: Any, ctx: Any) -> tuple[str, object]:
    """The value coerced (its type and itself), or ("error", None) for a value refused."""
    try:
        got = coercion.coerce(value, param=param, ctx=ctx)
    except (typer.BadParameter, ConfigError):
        return ("error", None)
    return (type(got).__name__, got)


@pytest.mark.parametrize("annotation", list(_VALUES), ids=repr)
def test_plain_coercion_gives_typers_values(annotation: object) -> None:
    """The same values as typer's, the same refused; a refused number is aiobench's
    one-line error naming the option (not pydantic's wording)."""
    command = typer.main.get_command(app)
    ctx = command.make_context("aiobench", [], resilient_parsing=True)
    every: list[Any] = command.get_params(ctx)  # typer's parameters
    params = [p for p in every if p.type_descriptor.annotation == annotation]
    assert params
    for param in params:
        plain = param.get_runtime_param()
        assert type(plain).__name__ == "_PlainCoercion", param.name
        typers = build_runtime_param(param.type_descriptor)
        for value in (None, *_VALUES[annotation]):
            outcome = _outcome(plain, value, param, ctx)
            assert outcome == _outcome(typers, value, param, ctx), (param.name, value)
            if outcome[0] == "error":
                with pytest.raises(ConfigError) as refused:
                    plain.coerce(value, param=param, ctx=ctx)
                label = "/".join(param.opts)
                assert str(refused.value).startswith(f"{label}: want a whole number"), value
