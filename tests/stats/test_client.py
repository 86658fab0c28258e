"""The client-bound check: aiobench's own CPU over a phase against what it may use."""

from __future__ import annotations

import dataclasses
import os
import threading
from pathlib import Path

import anyio
import pytest

from aiobench.engines.null import NullEngine
from aiobench.kinds import READ
from aiobench.plan.workload import Layout
from aiobench.render.table import client_bound_row, phase_block
from aiobench.results.model import PhaseResult
from aiobench.results.tables import PHASE, from_json, to_json
from aiobench.run.phases import run_phase
from aiobench.stats import client
from aiobench.stats.client import ClientSample, client_cpu_pct, quota_cores
from tests.helpers import CHANCE_ROW, context, make_cfg


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_the_quota_in_cores_from_cgroup_v2_else_v1(tmp_path: Path) -> None:
    v1 = (tmp_path / "quota", tmp_path / "period")
    missing = tmp_path / "none"
    assert quota_cores(_write(tmp_path / "a", "150000 100000\n"), v1) == 1.5
    assert quota_cores(_write(tmp_path / "b", "max 100000\n"), v1) is None
    assert quota_cores(_write(tmp_path / "c", "garbage\n"), v1) is None
    _write(v1[0], "50000\n"), _write(v1[1], "100000\n")
    assert quota_cores(missing, v1) == 0.5
    _write(v1[0], "-1\n")
    assert quota_cores(missing, v1) is None
    assert quota_cores(missing, (missing, missing)) is None


def test_cores_allowed_is_the_affinity_at_most_the_quota(monkeypatch: pytest.MonkeyPatch) -> None:
    affinity = len(os.sched_getaffinity(0))
    monkeypatch.setattr(client, "quota_cores", lambda: None)
    assert client.cores_allowed() == affinity
    monkeypatch.setattr(client, "quota_cores", lambda: 0.25)
    assert client.cores_allowed() == 0.25


def test_the_larger_of_the_process_share_and_the_busiest_thread() -> None:
    start = ClientSample(0, 0, {1: 0, 2: 100})
    # 1 s: the process used 1.2 s of 4 cores (30 %), thread 1 0.5 s, thread 2 0.7 s (70 %).
    end = ClientSample(10**9, 1_200_000_000, {1: 500_000_000, 2: 700_000_100})
    assert client_cpu_pct(start, end, 4) == 70
    assert client_cpu_pct(start, end, 1) == 100  # (clamped: 120 % of one core)
    assert client_cpu_pct(start, end, 1.5) == 80
    # A thread that started after the first sample counts from 0.
    late = ClientSample(10**9, 1_200_000_000, {3: 950_000_000})
    assert client_cpu_pct(start, late, 4) == 95
    assert client_cpu_pct(start, start, 4) == 0  # no time between the samples


def test_a_thread_sample_sees_this_threads_cpu() -> None:
    before = client.sample()
    end = before.wall_ns + 50_000_000
    while client.sample().wall_ns < end:  # 50 ms on the CPU (or waiting for it)
        pass
    after = client.sample()
    me = threading.get_ident()
    assert after.threads[me] > before.threads[me]
    # (the process's clock is read just after the threads': within a millisecond)
    mine = after.threads[me] - before.threads[me]
    assert after.process_ns - before.process_ns >= mine - 1_000_000


def _phase(tmp_path: Path, delay_ns: int) -> PhaseResult:
    cfg = make_cfg([str(tmp_path / "a")], threads=2, block="4k", size="64k", write=False, read=True)
    ctx = context(cfg, Layout((16 * 4096,), 4096), NullEngine(lambda _: delay_ns))
    try:
        phase, _ = anyio.run(run_phase, ctx, READ, 0)
    finally:
        ctx.executor.shutdown()
    return phase


def test_a_phase_that_waits_on_its_storage_is_not_client_bound(tmp_path: Path) -> None:
    # 8 ops of 40 ms each per thread: 0.32 s of waiting, next to no CPU.
    phase = _phase(tmp_path, 40_000_000)
    assert phase.last_done.elapsed_ns >= client.CLIENT_BOUND_MIN_NS
    assert phase.client_cpu_pct < 50
    assert client_bound_row(phase) == ""
    assert "Client bound" not in phase_block(phase)


def test_a_phase_over_its_cpu_allowance_says_so_in_the_table_and_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A thousandth of a core to use: the loop's and threads' own CPU over 0.32 s exceeds it.
    monkeypatch.setattr(client, "quota_cores", lambda: 0.001)
    phase = _phase(tmp_path, 40_000_000)
    assert phase.client_cpu_pct == 100
    assert "Client bound     : aiobench's CPU at 100 % of what it may use" in phase_block(phase)
    assert CHANCE_ROW.fullmatch(client_bound_row(phase)[:-1])  # real runs' tables skip it
    back = from_json(PhaseResult, PHASE, to_json(PHASE, phase))
    assert back.client_cpu_pct == 100
    # A phase shorter than the minimum is left out: its share is mostly start and stop.
    short = dataclasses.replace(
        phase,
        last_done=dataclasses.replace(phase.last_done, elapsed_ns=client.CLIENT_BOUND_MIN_NS - 1),
    )
    assert client_bound_row(short) == ""


def test_the_loop_helpers_cpu_counts_only_threads_named_so() -> None:
    """The S3 native route's threads (named LOOP_HELPER_PREFIX...) count with the loop's
    CPU (phases[].loop_cpu_ns); other threads do not; one started since counts from 0."""
    stop = threading.Event()

    def burn() -> None:
        while not stop.is_set():
            sum(range(1000))

    start = client.sample()
    helper = threading.Thread(target=burn, name=f"{client.LOOP_HELPER_PREFIX}_0")
    other = threading.Thread(target=burn, name="someone-else")
    helper.start()
    other.start()
    try:
        while client.sample().threads.get(helper.ident or 0, 0) < 20_000_000:
            stop.wait(0.01)
        end = client.sample()
    finally:
        stop.set()
        helper.join()
        other.join()
    assert end.helpers == {helper.ident}
    assert client.helpers_cpu_ns(start, end) == end.threads[helper.ident or 0]
    assert client.helpers_cpu_ns(start, end) >= 20_000_000
    assert client.helpers_cpu_ns(end, end) == 0
