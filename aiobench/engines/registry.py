"""The engines by name (``--ioengine``): which exist, which is the default, making one.

``native`` (the C extension, where it was built) is the default; ``python`` is the
reference engine and the fallback, always there. (The engines are imported when asked
for: the config checks a name before anything else is loaded.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiobench.errors import ConfigError

if TYPE_CHECKING:
    from aiobench.engines.base import Engine

NATIVE, PYTHON, S3 = "native", "python", "s3"
NAMES = (NATIVE, PYTHON, S3)


def native_built() -> bool:
    """Whether the C extension loads here."""
    try:
        from aiobench.engines import _native  # noqa: F401
    except ImportError:
        return False
    return True


def default_name() -> str:
    return NATIVE if native_built() else PYTHON


def checked(name: str | None) -> str:
    """The engine a run uses: ``name`` (``--ioengine``), or the default; raises
    :class:`ConfigError` for an unknown one or a native engine that is not built."""
    if name is None:
        return default_name()
    if name not in NAMES:
        raise ConfigError(f"--ioengine: must be one of {', '.join(NAMES)} (got {name!r})")
    if name == NATIVE and not native_built():
        raise ConfigError(
            "--ioengine native: the C extension aiobench.engines._native is not built here "
            "(install with a C compiler and Python's headers), or use --ioengine python"
        )
    return name


def for_paths(name: str, given: bool, objects: bool) -> str:
    """The engine for the run's PATHs: s3:// ones take the S3 engine, which takes nothing
    else (``given``: ``name`` came from --ioengine)."""
    if objects and given and name != S3:
        raise ConfigError(f"--ioengine {name}: does not do object storage (s3:// PATHs)")
    if not objects and name == S3:
        raise ConfigError("--ioengine s3: only for s3:// PATHs (buckets)")
    return S3 if objects else name


def make(name: str) -> Engine:
    if name == S3:
        from aiobench.engines.s3.engine import S3Engine

        s3: Engine = S3Engine()
        return s3
    if name == NATIVE:
        from aiobench.engines.native import NativeEngine

        engine: Engine = NativeEngine()
        return engine
    from aiobench.engines.python import PosixEngine

    return PosixEngine()


# Said once by a run that uses the Python engine because the native one is not built.
FALLBACK_NOTE = (
    "the native engine is not built here (no C extension aiobench.engines._native), so this run "
    "uses the Python engine, which measures small blocks and metadata calls slower than "
    "the storage allows; reinstall with a C compiler to build it"
)
