"""tests/alone.py: a test that runs alone excludes every other worker's test, and they it."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from tests.alone import Alone


def _can_take(directory: Path, how: int) -> bool:
    """Whether another worker could take the lock ``how`` (LOCK_SH, LOCK_EX) right now."""
    fd = os.open(directory / "alone.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, how | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def test_tests_share_the_lock_and_one_that_runs_alone_holds_it_by_itself(tmp_path: Path) -> None:
    worker, other = Alone(tmp_path), Alone(tmp_path)
    with worker.held(alone=False):
        with other.held(alone=False):  # two ordinary tests at once
            assert not _can_take(tmp_path, fcntl.LOCK_EX)
        assert _can_take(tmp_path, fcntl.LOCK_SH)
        assert not _can_take(tmp_path, fcntl.LOCK_EX)
    with worker.held(alone=True):
        assert not _can_take(tmp_path, fcntl.LOCK_SH)
    assert _can_take(tmp_path, fcntl.LOCK_EX)  # released
