"""Shared fixtures: a subprocess runner for the real CLI."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

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


@contextlib.contextmanager
def mounted_tmpfs(mnt: Path, options: str) -> Iterator[Path]:
    """A real tmpfs mounted on ``mnt`` (created here) with ``options``; skips without root."""
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode:
        pytest.skip(f"cannot mount tmpfs: {proc.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
