"""The engines by name (``--ioengine``): making the one a run uses.

The names, and which one a run gets, are the config's (:class:`~aiobench.kinds.EngineName`,
:func:`~aiobench.config.checked_engine`): it checks a name without loading an engine. Here
an engine is imported only when it is made. A new backend is one module or folder in
:mod:`aiobench.engines`, one name in :class:`~aiobench.kinds.EngineName` and one line here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from aiobench.errors import ConfigError
from aiobench.kinds import EngineName

if TYPE_CHECKING:
    from aiobench.engines.base import Engine


def _native() -> Engine:
    from aiobench.engines import native

    if not native.available():
        raise ConfigError(f"--ioengine native: {native.build_error}; use --ioengine python")
    return native.NativeEngine()


def _python() -> Engine:
    from aiobench.engines.python import PosixEngine

    return PosixEngine()


def _s3() -> Engine:
    from aiobench.engines.s3.engine import S3Engine

    return S3Engine()


def _net() -> Engine:
    from aiobench.engines.net.engine import NetEngine

    return NetEngine()


_MAKERS: dict[str, Callable[[], Engine]] = {
    EngineName.NATIVE: _native,
    EngineName.PYTHON: _python,
    EngineName.S3: _s3,
    EngineName.NET: _net,
}


def make(name: str) -> Engine:
    """The engine called ``name`` (one the config checked)."""
    return _MAKERS[name]()


# Said once by a run that uses the Python engine because the native one is not built.
FALLBACK_NOTE = (
    "the native engine is not built here (no C extension aiobench.engines._native), so this "
    "run uses the Python engine, which measures small blocks and metadata calls slower than "
    "the storage allows; reinstall with a C compiler to build it"
)
