"""Shared fixtures (a subprocess runner for the real CLI, small mounts, a fault-injecting FUSE)
and pytest's hooks; the builders they use are in tests/helpers.py."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import os
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

import pytest
import uvloop
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from aiobench.engines.base import Engine
from aiobench.engines.python import PosixEngine
from aiobench.results.schema import load_schema
from tests.alone import Alone
from tests.helpers import (
    Ext4Loop,
    FaultFs,
    RunCli,
    mounted_tmpfs,
    require_root_tools,
    run_aiobench,
)

# Every aiobench the tests start (``python -m aiobench``, under mpirun too) runs this
# checkout's code, also where an editable install of another checkout is on the path.
_ROOT = str(Path(__file__).resolve().parent.parent)
os.environ["PYTHONPATH"] = os.pathsep.join(
    [_ROOT, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
)


# A test that starts a process (the real CLI, mpirun, pip) or mounts something is marked
# ``slow``, so that ``pytest -m "not slow"`` is a fast inner loop over the pure logic and the
# in-process engine tests; CI runs everything. Marked by what the test uses: these fixtures,
# or one of these calls in its own source; modules of CLI runs mark themselves.
_SLOW_FIXTURES = frozenset({"run_cli", "ext4_loop", "fault_fs", "small_tmpfs"})
_SLOW_CALLS = (
    "run_aiobench",
    "subprocess.",
    "Popen(",
    "mpirun(",
    "mounted_tmpfs(",
    "_start_blocked(",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        function = getattr(item, "function", None)
        try:
            source = inspect.getsource(function) if function is not None else ""
        except (OSError, TypeError):
            source = ""
        if fixtures & _SLOW_FIXTURES or any(call in source for call in _SLOW_CALLS):
            item.add_marker(pytest.mark.slow)


# ``-n auto``: two workers per core. Most tests spend much of their time waiting for a child
# (the CLI, mpirun, a mount): a run on one core keeps about half of a 2-core machine busy.
# PYTEST_XDIST_AUTO_NUM_WORKERS still sets the number (xdist's own hook reads it).
@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return 2 * len(os.sched_getaffinity(0))


# In a parallel run (pytest-xdist's ``-n``), a test marked ``timing`` runs alone: its bounds
# assume a machine not also busy with the other workers' tests (tests/alone.py). The lock's
# files are in the run's base temporary dir, the parent of each worker's own.
_ALONE = pytest.StashKey[Alone | None]()


def _alone(config: pytest.Config) -> Alone | None:
    if _ALONE not in config.stash:
        worker = hasattr(config, "workerinput")
        config.stash[_ALONE] = Alone(Path(config.option.basetemp).parent) if worker else None
    return config.stash[_ALONE]


# tryfirst: outside pytest-timeout's wrapper, so that waiting for the lock is not timed.
@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    lock = _alone(item.config)
    if lock is None:
        return (yield)
    with lock.held(alone=item.get_closest_marker("timing") is not None):
        return (yield)


@pytest.fixture(params=["python", "native"])
def io_engine(request: pytest.FixtureRequest) -> Engine:
    """An engine-level test on each engine: the Python reference and the native one."""
    if request.param == "python":
        return PosixEngine()
    from aiobench.engines import native

    if not native.available():
        pytest.skip(f"no native engine: {native.build_error}")
    return native.NativeEngine()


@pytest.fixture(scope="session")
def validator() -> Draft202012Validator:
    """The result schema's validator (the schema itself checked first), with formats."""
    schema = load_schema()
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


@pytest.fixture
def run_cli() -> RunCli:
    """:func:`run_aiobench`, for tests that take it as a fixture."""
    return run_aiobench


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> dict[str, Callable[[], asyncio.AbstractEventLoop]]:
    """Every async test runs on the plain asyncio loop and on uvloop (the CLI's default)."""
    return {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A real 1 MiB tmpfs (root): writes past it fail with ENOSPC."""
    with mounted_tmpfs(tmp_path / "mnt", "size=1m") as mnt:
        yield mnt


@pytest.fixture
def ext4_loop(tmp_path: Path) -> Iterator[Ext4Loop]:
    require_root_tools(
        "loop devices, mounts and fsfreeze", "mkfs.ext4", "losetup", "mount", "umount", "fsfreeze"
    )
    fs = Ext4Loop(tmp_path)
    try:
        yield fs
    finally:
        fs.close()


@pytest.fixture
def fault_fs(tmp_path: Path) -> Iterator[FaultFs]:
    """A factory of faultfs mounts (root, /dev/fuse, fusepy and libfuse 2), over a tmpfs."""
    if os.geteuid() != 0:
        pytest.skip("mounting a FUSE filesystem needs root")
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse is missing (no FUSE in this kernel or container)")
    try:
        importlib.import_module("fuse")  # fusepy; loads libfuse 2 through ctypes
    except (ImportError, OSError) as exc:
        pytest.skip(f"fusepy or libfuse 2 cannot load: {exc}")
    with contextlib.ExitStack() as stack:
        backing_root = stack.enter_context(mounted_tmpfs(tmp_path / "backing", "size=64m"))
        factory = FaultFs(tmp_path, backing_root)
        stack.callback(factory.close)
        yield factory
