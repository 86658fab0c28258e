"""Shared fixtures: a subprocess runner for the real CLI."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable

import pytest
import uvloop

RunCli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def run_cli() -> RunCli:
    """Run ``python -m aiobench ARGS`` as a real process; returns the completed process."""

    def run(
        *args: str, timeout: float = 120, cwd: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, PYTHONWARNINGS="error")
        return subprocess.run(
            [sys.executable, "-m", "aiobench", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            cwd=cwd,
            check=False,
        )

    return run


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> dict[str, Callable[[], asyncio.AbstractEventLoop]]:
    """Every async test runs on the plain asyncio loop and on uvloop (the CLI's default)."""
    return {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}
