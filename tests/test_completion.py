"""Shell completion (typer's): completing options, and installing it into a HOME of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def aiobench(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aiobench", *args],
        capture_output=True,
        text=True,
        env=dict(os.environ, **env),
        check=False,
        timeout=60,
    )


def test_bash_completes_elbencho_option_names() -> None:
    proc = aiobench(
        _AIOBENCH_COMPLETE="complete_bash", COMP_WORDS="aiobench -w --latp", COMP_CWORD="2"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["--latpercent", "--latpercent9s"]


def test_show_completion_prints_a_script(tmp_path: Path) -> None:
    proc = aiobench("--show-completion", "bash", HOME=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "_AIOBENCH_COMPLETE=complete_bash" in proc.stdout
    assert list(tmp_path.iterdir()) == []  # shown, not installed


def test_install_completion_writes_only_below_home(tmp_path: Path) -> None:
    proc = aiobench("--install-completion", "bash", HOME=str(tmp_path), SHELL="/bin/bash")
    assert proc.returncode == 0, proc.stderr
    script = tmp_path / ".bash_completions" / "aiobench.sh"
    assert "complete -o default -F _aiobench_completion aiobench" in script.read_text()
    assert f"source '{script}'" in (tmp_path / ".bashrc").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".bash_completions", ".bashrc"]
