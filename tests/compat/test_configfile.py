"""elbencho's -c/--configfile: name=value lines give what the flags give; the command line
wins; a bad file is one Error line naming it (and the line), exit 2."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers import call_main

RUN = ("-w", "-b", "4k", "-s", "64k", "-t", "2", "--seed", "7", "--nolive", "--json", "-")


def config_of(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    """The run's JSON config (less the command line it was given by)."""
    code, out, err = call_main(capsys, *args)
    assert code == 0, err
    config = json.loads(out)["meta"]["config"]
    assert isinstance(config, dict)
    config.pop("argv")
    return config


def test_a_config_file_gives_the_same_config_as_the_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = str(tmp_path / "f")
    flags = ("-w", "-r", "-b", "4k", "-s", "64k", "-t", "2", "--iodepth", "2", "--rand")
    more = ("--randamount", "32k", "--label", "x y", "--lat", "--seed", "7", "--nolive")
    by_flags = config_of(capsys, *flags, *more, "--json", "-", target)
    conf = tmp_path / "run.conf"
    conf.write_text(
        "# elbencho's format\n"
        "write=1\n"
        "  read = true   # blanks and a comment\n"
        "block=4k\nsize=64k\nthreads=2\niodepth=2\nrand=yes\nrandamount=32k\n"
        "label=x y\nlat=\nseed=7\nnolive=on\ndirect=false\n"
    )
    by_file = config_of(capsys, "-c", str(conf), "--json", "-", target)
    assert by_file == by_flags
    assert (by_file["threads"], by_file["rand"], by_file["lat"], by_file["label"]) == (
        2,
        True,
        True,
        "x y",
    )


def test_the_command_line_wins(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "run.conf"
    conf.write_text("threads=4\nblock=8k\nlat=true\npertarget=false\n")
    target = str(tmp_path / "f")
    config = config_of(capsys, *RUN, "--configfile", str(conf), "-b", "16k", target)
    assert (config["threads"], config["block_size"]) == (2, 16384)  # -t and -b given
    assert (config["lat"], config["pertarget"]) == (True, False)  # from the file
    # elbencho's --flag=false: off, whatever the file says; --flag=true is --flag.
    config = config_of(capsys, *RUN, f"--configfile={conf}", "--lat=false", target)
    assert config["lat"] is False
    config = config_of(capsys, *RUN, "--cpu=1", "--pertarget=no", target)
    assert (config["cpu"], config["pertarget"]) == (True, False)


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        pytest.param("write=1\nthreads\n", ["line 2", "OPTION=VALUE", "threads"], id="no-eq"),
        pytest.param("write=1\nthredas=2\n", ["line 2", "no such option --thredas"], id="unknown"),
        pytest.param("write=1\nwrite=0\n", ["line 2", "set twice", "line 1"], id="twice"),
        pytest.param("write=maybe\n", ["line 1", "--write", "true or false"], id="bad-bool"),
        pytest.param("--write=1\n", ["line 1", "without dashes"], id="dashes"),
        pytest.param("write=1\nconfigfile=x\n", ["line 2", "cannot name another"], id="nested"),
        pytest.param("write=1\nthreads=two\n", ["-t/--threads", "two"], id="bad-value"),
    ],
)
def test_a_bad_file_is_one_error_line_naming_it(
    text: str, needles: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conf = tmp_path / "bad.conf"
    conf.write_text(text)
    target = tmp_path / "f"
    code, out, err = call_main(capsys, "-c", str(conf), "-s", "4k", str(target))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("Error: "), err
    for needle in needles:
        assert needle in err, (needle, err)
    if "line" in needles[0]:
        assert f"-c/--configfile: {conf} line" in err
    assert not target.exists()


@pytest.mark.parametrize("name", ["missing.conf", ".", "fifo"])
def test_a_file_that_cannot_be_read_is_named(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.mkfifo(tmp_path / "fifo")  # (no writer: reading it must not wait for one)
    path = str(tmp_path / name)
    code, out, err = call_main(capsys, "-c", path, "-w", str(tmp_path / "f"))
    assert (code, out) == (2, "")
    assert err.startswith(f"Error: -c/--configfile: {path}: ") and err.count("\n") == 1, err


@pytest.mark.parametrize(
    "given",
    [["-c", "{conf}"], ["-c{conf}"], ["-wc", "{conf}"], ["--configfile={conf}"]],
    ids=["-c F", "-cF", "-wc F", "--configfile=F"],
)
def test_the_file_is_read_however_the_option_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], given: list[str]
) -> None:
    """(A command line with no word that may give -c is not parsed for it: these must be.)"""
    conf = tmp_path / "run.conf"
    conf.write_text("threads=3\nblock=8k\n")
    args = [word.format(conf=conf) for word in given]
    config = config_of(
        capsys, *args, "-w", "-s", "64k", "--nolive", "--json", "-", str(tmp_path / "f")
    )
    assert (config["threads"], config["block_size"]) == (3, 8192)
