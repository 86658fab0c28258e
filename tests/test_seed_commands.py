"""The two elbencho seed commands (SPEC §1), scaled down, through the real CLI.

Run on ext4 files in ``tmp_path`` and on four real loop block devices.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import CHANCE_ROW, RunCli

pytestmark = pytest.mark.slow  # real CLI runs (see tests/conftest.py)

HEADER = (
    "OPERATION   RESULT TYPE         FIRST DONE   LAST DONE\n"
    "=========== ================    ==========   =========\n"
)
MIB = 1 << 20
# The rows of elbencho's table for these commands (reference/elbencho-output/seq-write.txt).
ELBENCHO_ROWS = ["Elapsed time", "IOPS", "Throughput MiB/s", "Total MiB"]
TIMELIMIT_S = 5
# Start-up (imports, executor threads), untimed setup and teardown on this noisy 2-core box.
WALL_MARGIN_S = 6.0
MAX_INFLIGHT = 16 * 16

_LAT = r"\d+(?:\.\d+)?(?:ns|us|ms|s)"
_PCT = r"\d+(?:\.\d+)?"
LATENCY_ROW = re.compile(rf" {{11}} IO latency       : \[ min={_LAT} avg={_LAT} max={_LAT} \]")
PERCENT_ROW = re.compile(
    rf" {{11}} IO lat % us      : \[ 1%<={_PCT} 50%<={_PCT} 75%<={_PCT} 99%<={_PCT} \]"
)


def parse_table(stdout: str) -> dict[str, dict[str, tuple[str, str]]]:
    """Check every line's layout and return {operation: {row name: (first, last)}}."""
    assert stdout.startswith(HEADER), stdout[:200]
    blocks: dict[str, dict[str, tuple[str, str]]] = {}
    current: dict[str, tuple[str, str]] | None = None
    in_targets = False  # the per-target report has its own layout (tests/stats/test_pertarget.py)
    for line in stdout[len(HEADER) :].splitlines():
        if line == "---":
            current, in_targets = None, False
            continue
        if in_targets or line[12:29].strip() == "per target":
            assert current is None, "per-target report inside a phase block"
            in_targets = True
            continue
        if any(row.fullmatch(line) for row in (LATENCY_ROW, PERCENT_ROW, CHANCE_ROW)):
            assert current is not None, line
            continue
        op, name, sep, values = line[:11].strip(), line[12:29].strip(), line[29:31], line[31:]
        first, last = values.split()
        assert sep == ": ", line
        assert line == f"{op:<11} {name:<17}: {first:>11} {last:>11}", line
        if op:
            assert op not in blocks, f"second {op} block"
            current = blocks[op] = {}
        assert current is not None, f"row outside a block: {line!r}"
        current[name] = (first, last)
    assert current is None, "last block not closed by ---"
    return blocks


def write_cmd(paths: list[str], json_out: Path) -> list[str]:
    seed = "-w -b 4M -t 16 --direct -s 64m"
    return [*seed.split(), *paths, "--nolive", "--json", str(json_out)]


def read_cmd(paths: list[str], json_out: Path) -> list[str]:
    seed = f"-r -b 4k -t 16 --iodepth 16 --direct --rand --timelimit {TIMELIMIT_S}"
    return [*seed.split(), *paths, "--nolive", "--json", str(json_out)]


def load_phase(json_out: Path, name: str) -> dict[str, Any]:
    doc = json.loads(json_out.read_text(encoding="utf-8"))
    assert doc["interrupted"] is False
    assert doc["error"] is None
    assert [p["phase"] for p in doc["phases"]] == [name]
    phase: dict[str, Any] = doc["phases"][0]
    return phase


def check_seed_pair(run_cli: RunCli, paths: list[str], tmp_path: Path) -> None:
    """Run the write seed command, then the read seed command, and check both results."""
    wjson = tmp_path / "write.json"
    proc = run_cli(*write_cmd(paths, wjson))
    assert proc.returncode == 0, proc.stderr
    blocks = parse_table(proc.stdout)
    assert list(blocks) == ["WRITE"]
    assert list(blocks["WRITE"]) == ELBENCHO_ROWS  # no latency rows without --lat
    assert blocks["WRITE"]["Total MiB"][1] == "256"
    write = load_phase(wjson, "WRITE")
    assert write["last_done"]["bytes"] == 256 * MIB
    assert write["last_done"]["ops"] == 64
    assert 0 < write["first_done"]["elapsed_ns"] <= write["last_done"]["elapsed_ns"]

    rjson = tmp_path / "read.json"
    start = time.monotonic()
    proc = run_cli(*read_cmd(paths, rjson))
    wall = time.monotonic() - start
    print(f"read seed command: {wall:.2f} s wall for --timelimit {TIMELIMIT_S}")
    assert proc.returncode == 0, proc.stderr
    assert wall < TIMELIMIT_S + WALL_MARGIN_S
    blocks = parse_table(proc.stdout)
    assert list(blocks) == ["READ"]
    assert list(blocks["READ"]) == ELBENCHO_ROWS
    read = load_phase(rjson, "READ")
    first, last = read["first_done"], read["last_done"]
    assert last["ops"] > 0
    assert last["bytes"] == last["ops"] * 4096
    assert int(blocks["READ"]["Total MiB"][1]) == last["bytes"] // MIB
    assert 0 < first["elapsed_ns"] <= last["elapsed_ns"]
    assert last["elapsed_ns"] < (TIMELIMIT_S + 1) * 1_000_000_000
    assert 0 < read["peak_inflight_ops"] <= MAX_INFLIGHT
    assert read["latency"]["io"]["count"] == last["ops"]


@pytest.mark.parametrize("syntax", ["shell", "brackets"])
def test_seed_commands_on_ext4(run_cli: RunCli, tmp_path: Path, syntax: str) -> None:
    files = [str(tmp_path / f"file{i}") for i in range(1, 5)]
    paths = files if syntax == "shell" else [str(tmp_path / "file[1-4]")]
    check_seed_pair(run_cli, paths, tmp_path)
    for name in files:
        assert os.stat(name).st_size == 64 * MIB
        assert os.stat(name).st_blocks * 512 >= 64 * MIB  # really written, not sparse


def _losetup(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["losetup", *args], capture_output=True, text=True, check=False)


@pytest.fixture
def four_loop_devices(tmp_path: Path) -> Iterator[list[str]]:
    """Four 64 MiB loop devices over sparse files in tmp_path; detached afterwards."""
    if os.geteuid() != 0:
        pytest.skip("loop devices need root")
    if shutil.which("losetup") is None:
        pytest.skip("losetup (util-linux) is not installed")
    devices: list[str] = []
    try:
        for i in range(4):
            backing = tmp_path / f"backing{i}.img"
            with open(backing, "wb") as handle:
                handle.truncate(64 * MIB)
            proc = _losetup("--find", "--show", "--direct-io=on", str(backing))
            if proc.returncode != 0:
                proc = _losetup("--find", "--show", str(backing))
            if proc.returncode != 0:
                pytest.skip(f"losetup failed: {proc.stderr.strip()}")
            devices.append(proc.stdout.strip())
        yield devices
    finally:
        for device in devices:
            _losetup("--detach", device)


@pytest.mark.root
def test_seed_commands_on_loop_devices(
    run_cli: RunCli, tmp_path: Path, four_loop_devices: list[str]
) -> None:
    check_seed_pair(run_cli, four_loop_devices, tmp_path)
    # The write really reached every device: its last 4 MiB block is no longer zero.
    for device in four_loop_devices:
        with open(device, "rb") as handle:
            handle.seek(64 * MIB - 4096)
            assert handle.read(4096) != bytes(4096), device
