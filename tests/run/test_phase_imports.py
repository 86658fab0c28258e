"""Nothing is imported while a phase is timed.

Modules load lazily (a run loads what it uses, #28), so a module first needed inside the
phase would be imported there, holding the interpreter's lock for milliseconds while the
clock runs (numpy: ~50 ms). Each run below is a real process whose audit hook records every
module imported from the phase's start (``PhaseRun.start``, where the clock starts) to its
end (``PhaseRun.finish``); there must be none.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import run_probed

_PROBE = """
import os, sys
from aiobench.run import phases

timed = []
late = []

def hook(event, args):
    if event == "import" and timed:
        late.append(args[0])

sys.addaudithook(hook)
start, finish = phases.PhaseRun.start, phases.PhaseRun.finish

def started(self, gate):
    timed.append(1)
    return start(self, gate)

def finished(self):
    timed.clear()
    return finish(self)

phases.PhaseRun.start, phases.PhaseRun.finish = started, finished
sys.argv[0] = "aiobench"
try:
    from aiobench.entry import main
    main()
finally:
    with open(os.environ["AIOBENCH_LATE"], "w") as out:
        out.write("\\n".join(late))
"""

CASES = {
    "plain": ["-w", "-r", "-b", "4k", "-s", "256k"],
    "threads and depth": ["-w", "-r", "-t", "2", "--iodepth", "4", "-b", "4k", "-s", "1m"],
    "random": ["-w", "-r", "--rand", "-b", "4k", "-s", "1m"],
    "backward": ["-w", "-r", "--backward", "-b", "4k", "-s", "256k"],
    "strided": ["-w", "-r", "--strided", "-t", "2", "-b", "4k", "-s", "256k"],
    "rwmix": ["-w", "--rwmixpct", "30", "-b", "4k", "-s", "256k"],  # (of a file made first)
    "verify": ["-w", "-r", "--verify", "7", "-b", "4k", "-s", "256k"],
    "blockvarpct": ["-w", "--blockvarpct", "50", "-b", "8k", "-s", "256k"],
    "rate limit": ["-w", "--limitwrite", "64m", "-b", "4k", "-s", "256k"],
    "python engine": ["-w", "-r", "--ioengine", "python", "-b", "4k", "-s", "256k"],
    "opslog": ["-w", "-r", "-b", "4k", "-s", "256k", "--opslog", "{dir}/ops.log"],
    "intervals": ["-w", "-r", "-b", "4k", "-s", "1m", "--lat", "--csvfile", "{dir}/r.csv"],
    # Phases long enough for many live looks and interval records (a look each 10 ms).
    "live csv": [
        *("-w", "--infloop", "--timelimit", "0.3", "--liveint", "10", "-b", "4k", "-s", "256k"),
        *("--livecsv", "{dir}/live.csv", "--livecsvex"),
    ],
    "live json": [
        *("-r", "--infloop", "--timelimit", "0.3", "--liveint", "10", "-b", "4k", "-s", "256k"),
        *("--livejson", "{dir}/live.json"),
    ],
}


def late_imports(tmp_path: Path, args: list[str], probe: str = _PROBE) -> list[str]:
    """The modules a real ``aiobench ARGS`` process imported while a phase was timed."""
    late = tmp_path / "late.txt"
    run_probed(probe, *args, "--nolive", env={"AIOBENCH_LATE": str(late)})
    return late.read_text().split()


@pytest.mark.parametrize("case", CASES)
def test_no_module_is_imported_while_a_phase_is_timed(tmp_path: Path, case: str) -> None:
    args = [a.format(dir=tmp_path) for a in CASES[case]]
    target = tmp_path / "f"
    target.write_bytes(bytes(256 << 10))
    assert late_imports(tmp_path, [*args, str(target)]) == []


def test_nor_with_several_files(tmp_path: Path) -> None:
    paths = [str(tmp_path / "f0"), str(tmp_path / "f1")]
    assert late_imports(tmp_path, ["-w", "-r", "-t", "2", "-b", "4k", "-s", "256k", *paths]) == []


def test_nor_in_dir_mode(tmp_path: Path) -> None:
    args = ["-d", "-w", "-r", "-F", "-D", "-n", "1", "-N", "20", "-s", "8k", "-b", "4k"]
    assert late_imports(tmp_path, [*args, str(tmp_path)]) == []


def test_the_probe_sees_an_import_inside_the_phase(tmp_path: Path) -> None:
    """(The check itself: an import made while the phase runs is reported.)"""
    script = _PROBE.replace(
        "    timed.append(1)\n    return start(self, gate)",
        "    timed.append(1)\n    import xml.dom.minidom\n    return start(self, gate)",
    )
    args = ["-w", "-b", "4k", "-s", "4k", str(tmp_path / "f")]
    assert "xml.dom.minidom" in late_imports(tmp_path, args, script)
