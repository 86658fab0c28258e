"""scripts/bench's netbench section: its figures and targets, and one real run of it."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aiobench_bench.cli import section_list
from aiobench_bench.common import MIB, ToolError
from aiobench_bench.netbench import (
    NET_WORKS,
    aiobench_net_figures,
    net_summarise,
    net_targets,
    netref_figures,
)
from tests.helpers import needs_mpi

ONE_M, FOUR_K = NET_WORKS
ROOT = Path(__file__).resolve().parents[2]


def test_netbench_is_a_section() -> None:
    assert section_list("netbench") == ["netbench"]


def test_plain_loop_figures_and_its_counts_checked() -> None:
    fig = netref_figures("500000000 64 67108864 64\n", ONE_M, 64 * MIB)
    assert fig["bytes_per_s"] == pytest.approx(64 * MIB / 0.5)
    assert fig["blocks_per_s"] == pytest.approx(128)
    with pytest.raises(ToolError):
        netref_figures("500000000 64 67108864 63\n", ONE_M, 64 * MIB)  # an answer short


def test_aiobench_figures_refuse_another_amount() -> None:
    phase = {"phase": "NETBENCH", "last_done": {"bytes": 4 * MIB, "ops": 1024, "elapsed_ns": 10**8}}
    fig = aiobench_net_figures({"phases": [phase]}, FOUR_K, 64 * MIB)
    assert fig["blocks_per_s"] == pytest.approx(10240)
    with pytest.raises(ToolError):
        aiobench_net_figures({"phases": [phase]}, ONE_M, 64 * MIB)


def test_ratios_and_targets() -> None:
    samples = {
        "1m": {
            "aiobench": [{"bytes_per_s": 900.0}, {"bytes_per_s": 1000.0}, {"bytes_per_s": 950.0}],
            "ref": [{"bytes_per_s": 1000.0}] * 3,
            "iperf3": [{"bytes_per_s": 2000.0}] * 3,
        },
        "4k4k": {
            "aiobench": [{"blocks_per_s": 80.0}],
            "ref": [{"blocks_per_s": 100.0}],
        },
    }
    rows = net_summarise(samples)
    assert rows[0]["ratio"] == pytest.approx(0.95)
    assert rows[0]["iperf_ratio"] == pytest.approx(0.475)
    assert math.isnan(rows[1]["iperf_ratio"])
    targets = net_targets(rows)
    assert [(t["reference_label"], t["met"]) for t in targets] == [
        ("plain C loop", True),
        ("iperf3", None),
        ("plain C loop", False),  # 0.8x
    ]


@needs_mpi
def test_the_section_runs(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{ROOT / 'scripts'}")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench"), "--section", "netbench", "--quick",
         "--size", "8M", "--json", str(out), "--docs", str(tmp_path / "docs.md")],
        capture_output=True, text=True, timeout=300, env=env, check=False,
    )  # fmt: skip
    report = json.loads(out.read_text())
    assert "netbench" not in report["meta"]["skipped"], proc.stderr
    rows = report["netbench"]
    assert [row["work"] for row in rows] == ["1m", "4k4k"]
    for row in rows:
        assert row["median"]["aiobench"] > 0
        assert row["median"]["ref"] > 0
        assert row["ratio"] > 0
    assert {t["section"] for t in report["targets"]} == {"netbench"}
