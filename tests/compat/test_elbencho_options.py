"""elbencho's 164 long options (tests/data/elbencho-options.txt, from its 3.1-10
docs/usage/help-all.md): none is an unknown option to aiobench's CLI; the recognized-only
ones answer with one line saying how aiobench does that job."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiobench.compat.cuda import missing
from aiobench.config import RECOGNIZED_OPTIONS
from tests.helpers import DATA, call_main

OPTIONS_FILE = DATA / "elbencho-options.txt"
# The names this part of #24 brought (the others come from the other parts' options).
MINE = (
    "--configfile",
    "--jsonfile",
    *("--numhosts", "--start", "--svcelapsed", "--rankoffset", "--rotatehosts"),
    *("--service", "--foreground", "--port", "--quit", "--interrupt"),
    *("--svcpwfile", "--svcping", "--svcupint", "--svcwait"),
    *("--gpuids", "--gpuperservice", "--cufile", "--cufiledriveropen"),
    *("--cuhostbufreg", "--gds", "--gdsbufreg"),
)
SERVICE = ("--service", "--foreground", "--port", "--svcpwfile", "--svcping", "--svcupint")
GPU = ("--gpuids", "--gpuperservice", "--cufile", "--cufiledriveropen", "--cuhostbufreg")


def elbencho_names() -> list[str]:
    lines = OPTIONS_FILE.read_text().splitlines()
    return [line for line in lines if line and not line.startswith("#")]


def test_the_list_is_elbencho_3_1_10s_164_options() -> None:
    names = elbencho_names()
    assert "elbencho 3.1-10" in OPTIONS_FILE.read_text().splitlines()[0]
    assert len(names) == 164 and len(set(names)) == 164
    assert all(name.startswith("--") for name in names)
    assert {"--block", "--configfile", "--s3key", "--netbench", "--zones"} <= set(names)


def unknown_to_the_cli(
    names: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> list[str]:
    """The names the CLI answers with "No such option" (each given with a value and a
    PATH that does not exist, under --dryrun: nothing is created)."""
    out = []
    for name in names:
        _, _, err = call_main(capsys, "--dryrun", name, "1", str(tmp_path / "none"))
        if "No such option" in err:
            out.append(name)
    return out


def test_no_elbencho_option_of_this_part_is_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert set(MINE) <= set(elbencho_names())
    assert unknown_to_the_cli(list(MINE), tmp_path, capsys) == []


# elbencho's I/O options that #24 still has to bring (the README's table says "not
# available"); #24 stays open while this is not empty. Bringing one means taking it out here.
NOT_YET: frozenset[str] = frozenset()


def test_no_elbencho_option_is_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every one of the 164 names but those still to come (:data:`NOT_YET`) is an option
    aiobench knows; the README's table says the same of them."""
    monkeypatch.chdir(tmp_path)
    assert set(elbencho_names()) >= NOT_YET
    assert set(unknown_to_the_cli(elbencho_names(), tmp_path, capsys)) == NOT_YET
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert {f"| `{name}` | not available |" for name in NOT_YET} <= set(readme.splitlines())


@pytest.mark.parametrize("flag", SERVICE)
def test_service_options_say_to_use_hosts(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    opt = next(o for o in RECOGNIZED_OPTIONS if o.flags == (flag,))
    args = [flag] if opt.cli_type is bool else [flag, "1611"]
    code, out, err = call_main(capsys, *args)  # (no PATH: a service takes none)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith(f"Error: {flag}: "), err
    assert "--hosts" in err and "MPI" in err


@pytest.mark.parametrize("flag", ["--quit", "--interrupt"])
def test_quit_and_interrupt_point_to_the_launchers_signal(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = call_main(capsys, flag, "--hosts", "node1,node2")
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith(f"Error: {flag}: "), err
    assert "SIGTERM" in err and "mpirun" in err


@pytest.mark.parametrize("flag", GPU)
def test_gpu_options_name_what_is_missing(
    flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [flag, "0"] if flag == "--gpuids" else [flag]
    code, out, err = call_main(capsys, "-r", *args, str(tmp_path / "f"))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith(f"Error: {flag}: "), err
    lacking = missing()
    if lacking:
        assert "needs CUDA, not found here" in err
        assert all(what in err for what in lacking)
    else:
        assert "no GPU transfers" in err


def test_what_cuda_lacks_follows_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("ctypes.util.find_library", lambda name: None)
    monkeypatch.setattr("aiobench.compat.cuda.NVIDIA_DEVICES", "/nonexistent/nvidia[0-9]*")
    assert missing() == [
        "no CUDA runtime library (libcudart)",
        "no NVIDIA device (/nonexistent/nvidia[0-9]*)",
    ]
    monkeypatch.setattr("ctypes.util.find_library", lambda name: f"lib{name}.so")
    monkeypatch.setattr("aiobench.compat.cuda.NVIDIA_DEVICES", "/dev/nul[l]")
    assert missing() == []
