"""``--help``: panels, real placeholders, every default, examples that parse; ``-V``."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import typer

from aiobench import __version__
from aiobench.cli import app, tools
from aiobench.config import RECOGNIZED_OPTIONS
from aiobench.helptext import COMMAND_NAMES, COMMANDS_PANEL, EXAMPLES, PANELS
from tests.helpers import RunCli, call_main

PANEL_TITLES = [title for title, _ in PANELS]


def help_text(capsys: pytest.CaptureFixture[str]) -> str:
    code, out, err = call_main(capsys, "--help")
    assert (code, err) == (0, "")
    return out


def test_options_are_in_panels_in_order(capsys: pytest.CaptureFixture[str]) -> None:
    out = help_text(capsys)
    assert out.startswith("Usage: aiobench [OPTIONS] [PATH]...\n")
    sections = [line[:-1] for line in out.splitlines() if re.fullmatch(r"\S[^:]*:", line)]
    assert sections == ["Arguments", COMMANDS_PANEL, *PANEL_TITLES, "Other", "Examples"]
    # Only --version, typer's completion options and --help are outside the panels.
    other = out.split("\nOther:\n")[1].split("\n\n")[0]
    firsts = [line.split()[0] for line in other.splitlines() if line.startswith("  -")]
    assert firsts == ["-V,", "--install-completion", "--show-completion", "-h,"]


def test_every_option_is_placed_once() -> None:
    command = typer.main.get_command(app)
    names = [p.name for p in command.params if p.param_type_name == "option"]
    placed = [name for _, panel in PANELS for name in panel]
    assert sorted(placed) == sorted(set(placed))  # none twice
    assert sorted(set(names) - set(placed)) == ["install_completion", "show_completion", "version"]


def test_placeholders_are_words_not_python_types(capsys: pytest.CaptureFixture[str]) -> None:
    out = help_text(capsys)
    assert not re.search(r"<(int|str|list|float|bool)", out), out
    assert "-t, --threads N " in out and "-b, --block SIZE " in out
    assert "--timelimit TIME " in out and "--liveint MS " in out


def test_every_option_with_a_value_shows_its_default() -> None:
    command = typer.main.get_command(app)
    ctx = command.make_context("aiobench", ["-w", "x"])
    missing = []
    recognized = {opt.name for opt in RECOGNIZED_OPTIONS}  # (never run: no default)
    for param in command.params:
        if param.param_type_name != "option" or getattr(param, "is_flag", False):
            continue
        if param.name in recognized:
            continue
        record = param.get_help_record(ctx)
        assert record is not None
        if "default:" not in record[1]:
            missing.append(param.name)
    assert missing == []


def test_three_examples_that_parse() -> None:
    assert len(EXAMPLES) == 3
    command = typer.main.get_command(app)
    for _, example in EXAMPLES:
        args = shlex.split(example)
        assert args[0] == "aiobench"
        # Parsed by the real option declarations (nothing runs).
        ctx = command.make_context("aiobench", args[1:])
        assert ctx.params["paths"], example


def test_help_shows_the_examples(capsys: pytest.CaptureFixture[str]) -> None:
    out = help_text(capsys)
    for _, example in EXAMPLES:
        assert f"    {example}\n" in out


@pytest.mark.parametrize("option", ["-V", "--version"])
def test_version(run_cli: RunCli, option: str) -> None:
    proc = run_cli(option)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"aiobench {__version__}\n", "")


def test_the_commands_have_their_own_panel_before_the_options(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = help_text(capsys)
    panel = out.split("\nCommands:\n")[1].split(f"\n{PANEL_TITLES[0]}:\n")[0]
    table, after = panel.split("\n\n")
    assert [line.split()[0] for line in table.splitlines() if line[2] != " "] == [
        "check",
        "show",
        "compare",
        "plot",
        "storagebench",
    ]
    assert after.startswith("  Each has its own --help (aiobench check --help).")
    assert "  check DIR " in panel and "  plot RUN.json -o FILE.png " in panel
    assert "A PATH named like one of\n  them goes after --." in panel
    assert {command.name for command in tools.registered_commands} == set(COMMAND_NAMES)


def test_duration_options_say_what_they_take(capsys: pytest.CaptureFixture[str]) -> None:
    out = " ".join(help_text(capsys).split())  # (the help's lines joined)
    assert (
        "--timelimit TIME Time per phase: seconds (10, 2.5) or with s, m or h (90s, 1m, 1h)" in out
    )
    assert "--phasedelay TIME Time to wait before each phase but the first" in out


@pytest.mark.parametrize(
    ("command", "usage"),
    [
        ("check", "aiobench check [OPTIONS] DIR"),
        ("show", "aiobench show [OPTIONS] RUN.json"),
        ("compare", "aiobench compare [OPTIONS] A.json B.json"),
        ("plot", "aiobench plot [OPTIONS] RUN.json"),
        ("storagebench", "aiobench storagebench [OPTIONS] [PATH]..."),
    ],
)
def test_subcommand_help_names_its_arguments_plainly(
    run_cli: RunCli, command: str, usage: str
) -> None:
    """click's notation: ``DIR`` is required, without typer's ``{DIR}`` or ``DIR <str>``."""
    proc = run_cli(command, "--help")
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.startswith(f"Usage: {usage}\n"), proc.stdout
    assert "{" not in proc.stdout and "<str>" not in proc.stdout, proc.stdout


def test_plain_aiobench_says_how_to_use_it(run_cli: RunCli, tmp_path: Path) -> None:
    proc = run_cli(cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (
        "Usage: aiobench [OPTIONS] [PATH]...\n"
        "       aiobench COMMAND [ARGS]...  (check, show, compare, plot, storagebench)\n"
        "Try 'aiobench --help' for the options, the commands and examples.\n"
    )
    assert list(tmp_path.iterdir()) == []
