"""Shell completion (typer's): completing options, and installing it into a HOME of its own."""

from __future__ import annotations

import os
import shlex
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


def in_bash(option: str, home: Path) -> subprocess.CompletedProcess[str]:
    """``aiobench OPTION`` started by bash, which typer (shellingham) finds as the shell;
    two commands, so that bash does not exec the last one in its own place."""
    script = f"{shlex.quote(sys.executable)} -m aiobench {option}; exit $?"
    return subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        env=dict(os.environ, HOME=str(home), SHELL="/bin/bash"),
        check=False,
        timeout=60,
    )


def test_show_completion_prints_a_script(tmp_path: Path) -> None:
    proc = in_bash("--show-completion", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "_AIOBENCH_COMPLETE=complete_bash" in proc.stdout
    assert list(tmp_path.iterdir()) == []  # shown, not installed


def test_install_completion_writes_only_below_home(tmp_path: Path) -> None:
    proc = in_bash("--install-completion", tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    script = tmp_path / ".bash_completions" / "aiobench.sh"
    assert "complete -o default -F _aiobench_completion aiobench" in script.read_text()
    assert f"source '{script}'" in (tmp_path / ".bashrc").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".bash_completions", ".bashrc"]
