"""Running a test alone among pytest-xdist's workers: a readers-writer lock over files.

Every test of a parallel run holds the lock shared, a test that must run alone (its bounds
assume an otherwise idle machine) holds it exclusively, so it starts once the tests running
on the other workers are done and no other test starts until it is. A second lock, the
turnstile, is taken on the way in: a test waiting for the exclusive lock holds it, so that
the other workers cannot keep the shared lock between them and starve that test.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


class Alone:
    """The lock of one parallel run, in files below ``directory`` (shared by its workers)."""

    def __init__(self, directory: Path) -> None:
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC
        self._turnstile = os.open(directory / "alone.turnstile", flags, 0o600)
        self._lock = os.open(directory / "alone.lock", flags, 0o600)

    @contextlib.contextmanager
    def held(self, *, alone: bool) -> Iterator[None]:
        """Hold the lock for one test: exclusively when ``alone``, else shared."""
        fcntl.flock(self._turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            fcntl.flock(self._turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
