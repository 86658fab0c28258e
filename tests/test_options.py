"""Options declared once (aiobench/options.py): the CLI, --help and the JSON read the same
declarations; pure checks, no disk."""

from __future__ import annotations

import dataclasses

import pytest
import typer

from aiobench.cli import app
from aiobench.config import LAUNCH_OPTIONS, BenchConfig, build_config, validate
from aiobench.errors import ConfigError
from aiobench.kinds import PathType
from aiobench.options import Opt, declared, parsed
from aiobench.results.schema import load_schema
from tests.conftest import make_cfg

OPTIONS = [opt for _, opt in declared(BenchConfig)] + list(LAUNCH_OPTIONS)


def test_every_flag_is_declared_once() -> None:
    flags = [part for opt in OPTIONS for flag in opt.flags for part in flag.split("/")]
    assert len(flags) == len(set(flags))
    names = [opt.name for opt in OPTIONS]
    assert len(names) == len(set(names))


def test_the_command_has_exactly_the_declared_options() -> None:
    command = typer.main.get_command(app)
    params = {p.name: p for p in command.params}
    typer_own = {"install_completion", "show_completion", "version"}
    assert set(params) - typer_own == {opt.name for opt in OPTIONS}
    for opt in OPTIONS:
        if not opt.argument:
            assert list(params[opt.name].opts) + list(params[opt.name].secondary_opts) == [
                part for flag in opt.flags for part in flag.split("/")
            ]


def test_every_config_key_is_described_by_the_schema() -> None:
    described = load_schema()["$defs"]["config"]["properties"]
    keys = make_cfg(["f"]).to_dict()
    assert [key for key in keys if key not in described] == []


def test_json_keys_stay_as_they_were_where_fields_carry_units() -> None:
    cfg = make_cfg(["f"], size="4k", rand=True, randamount="8k", limitread="1m")
    doc = cfg.to_dict()
    assert (doc["size"], doc["randamount"], doc["limitread"], doc["limitwrite"]) == (
        4096,
        8192,
        1 << 20,
        0,
    )
    assert (cfg.size_bytes, cfg.randamount_bytes, cfg.limitread_bps) == (4096, 8192, 1 << 20)


def test_raw_values_are_named_as_the_long_options() -> None:
    cfg = build_config(paths=["f"], write=True, block="4k", nolive=True, liveint=500, json="-")
    assert (cfg.block_size, cfg.live, cfg.live_interval_ms, cfg.json_path) == (
        4096,
        False,
        500,
        "-",
    )
    with pytest.raises(TypeError, match="not options: block_size"):
        parsed(BenchConfig, {"block_size": "4k"})


def test_declared_bounds_name_the_option() -> None:
    opt = Opt(flags=("-x", "--xs"), help="", panel="", given=0, cli_type=int, low=1, high=9)
    assert opt.label == "-x/--xs" and opt.name == "xs"
    assert opt.value(5) == 5
    with pytest.raises(ConfigError, match=r"^-x/--xs: must be at least 1 \(got 0\)$"):
        opt.value(0)
    with pytest.raises(ConfigError, match=r"^-x/--xs: at most 9 \(got 10\)$"):
        opt.value(10)
    zero = dataclasses.replace(opt, low=0)
    with pytest.raises(ConfigError, match=r"^-x/--xs: must not be negative \(got -1\)$"):
        zero.value(-1)


def test_validate_checks_options_against_the_path_type_without_disk() -> None:
    cfg = make_cfg(["/nonexistent/d"], rand=True, size="4k", block="4k")
    validate(cfg)  # (file mode takes --rand)
    validate(cfg, PathType.FILE)
    with pytest.raises(ConfigError, match=r"^--rand: not supported in dir mode"):
        validate(cfg, PathType.DIR)
    resize = make_cfg(["/nonexistent/b"], trunc=True, size="4k")
    with pytest.raises(ConfigError, match=r"^--trunc: only applies to files"):
        validate(resize, PathType.BLOCKDEV)
    dirs = make_cfg(["/nonexistent/d"], dirs=2)
    with pytest.raises(ConfigError, match=r"^-n/--dirs: only applies in dir mode"):
        validate(dirs, PathType.FILE)
