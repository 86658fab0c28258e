"""Which phases start on quiet CPUs (run.phases.settles, issue #28): direct reads and
writes at depth 1 with a core to spare, the ones whose slots sleep on one operation at a
time through Linux AIO (a pause of SETTLE_S between the slots' readiness and the clock)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aiobench.engines.base import IoOptions
from aiobench.kinds import READ, STAT, WRITE, PhaseKind
from aiobench.run.phases import SETTLE_S, settles
from aiobench.stats.client import cores_allowed
from aiobench.stats.tally import PhaseAbout
from tests.helpers import direct_file, run_aiobench

DIRECT = IoOptions(direct=True)


def about(*, dir_mode: bool = False, rwmix_pct: int | None = None) -> PhaseAbout:
    return PhaseAbout("READ", rwmix_pct, ("/dev/x",), (), 2, dir_mode, False)


@pytest.mark.parametrize("kind", [READ, WRITE])
def test_direct_io_at_depth_one_with_a_core_to_spare_settles(kind: PhaseKind) -> None:
    assert settles(about(), kind, DIRECT, 1, True)


@pytest.mark.parametrize(
    ("phase", "kind", "options", "depth", "spare"),
    [
        (about(), READ, IoOptions(), 1, True),  # cached: no device worker to wait on
        (about(), READ, DIRECT, 8, True),  # a queue: its first fill is in flight at once
        (about(), READ, DIRECT, 1, False),  # no core to spare: pread, CPU-bound
        (about(), READ, IoOptions(direct=True, poll=True), 1, True),  # never sleeps
        (about(dir_mode=True), WRITE, DIRECT, 1, True),  # entries, not one file's blocks
        (about(rwmix_pct=50), READ, DIRECT, 1, True),  # mixes go one by one, pread
        (about(), STAT, DIRECT, 1, True),
    ],
)
def test_other_phases_start_at_once(
    phase: PhaseAbout, kind: PhaseKind, options: IoOptions, depth: int, spare: bool
) -> None:
    assert not settles(phase, kind, options, depth, spare)


def test_a_run_that_settles_starts_its_clock_after_the_pause(tmp_path: Path) -> None:
    if cores_allowed() < 2:
        pytest.skip("one core: no slot has one to spare")
    target = direct_file(tmp_path / "file", 1 << 20)
    out = tmp_path / "run.json"
    args = ("-r", "-b", "4k", "-t", "1", "--direct", "--nolive", "--json", str(out))
    proc = run_aiobench(*args, str(target))
    assert proc.returncode == 0, proc.stderr
    phase = json.loads(out.read_text())["phases"][0]
    assert phase["startup_ns"] >= SETTLE_S * 1e9, phase["startup_ns"]  # (ready to clock)
