"""Options declared once (aiobench/options.py): the CLI, --help and the JSON read the same
declarations; pure checks, no disk."""

from __future__ import annotations

import dataclasses
import json

import pytest
import typer

from aiobench.cli import app, tools
from aiobench.config import COMMAND_LINE_OPTIONS, BenchConfig, build_config, validate
from aiobench.errors import ConfigError
from aiobench.kinds import PathType
from aiobench.options import Opt, declared, parsed, table_options
from aiobench.render.table import TableOptions
from aiobench.results.schema import load_schema
from aiobench.results.schema.config import SCHEMA_FILE, disagreements, with_new_keys
from tests.helpers import make_cfg

OPTIONS = [opt for _, opt in declared(BenchConfig)] + list(COMMAND_LINE_OPTIONS)


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


def test_bounds_with_a_unit_name_the_whole_range() -> None:
    opt = Opt(flags=("--xs",), help="", panel="", given=0, cli_type=int, low=0, high=9,
              unit="nines")  # fmt: skip
    for raw in (-1, 10):
        with pytest.raises(ConfigError, match=rf"^--xs: between 0 and 9 nines \(got {raw}\)$"):
            opt.value(raw)
    with pytest.raises(ConfigError, match=r"^--latpercent9s: between 0 and 9 nines after 99"):
        build_config(paths=["f"], write=True, latpercent9s=10)


def test_admits_takes_only_the_declared_type_within_bounds() -> None:
    nines = dict(table_options(BenchConfig))["latpercent9s"]
    assert [nines.admits(v) for v in (0, 9, 10, -1, True, "2", None)] == [
        True, True, False, False, False, False, False,
    ]  # fmt: skip
    pertarget = dict(table_options(BenchConfig))["pertarget"]
    assert [pertarget.admits(v) for v in (True, None, 1, "no")] == [True, True, False, False]


def test_table_options_are_the_fields_of_table_options() -> None:
    defaults = {f.name: f.default for f in dataclasses.fields(BenchConfig)}
    table = {field: defaults[field] for field, _ in table_options(BenchConfig)}
    # (files_per_dir: the run's -N, which --dirstats divides by; not an option of its own)
    fields = {f.name: f.default for f in dataclasses.fields(TableOptions)}
    assert table == {name: v for name, v in fields.items() if name != "files_per_dir"}
    assert list(table) == [
        "pertarget", "lat", "latpercent", "latpercent9s", "lathisto", "cpu", "allelapsed",
        "no0usecerr", "log", "dirstats", "svcelapsed",
    ]  # fmt: skip


def test_show_takes_every_table_option_as_declared() -> None:
    show = typer.main.get_command(tools).commands["show"]  # type: ignore[attr-defined]
    params = {p.name: p for p in show.params}
    assert set(params) == {"run"} | {opt.name for _, opt in table_options(BenchConfig)}
    for _, opt in table_options(BenchConfig):
        param = params[opt.name]
        assert list(param.opts) + list(param.secondary_opts) == [
            part for flag in opt.flags for part in flag.split("/")
        ]
        assert (param.help, param.default) == (opt.show_help, None)  # None: as the run had it


def test_the_schema_admits_every_config_key_as_declared() -> None:
    assert disagreements(load_schema()) == []
    narrowed = load_schema()
    narrowed["$defs"]["config"]["properties"]["latpercent9s"]["maximum"] = 8
    del narrowed["$defs"]["config"]["properties"]["dryrun"]
    assert disagreements(narrowed) == [
        "latpercent9s: the schema's maximum 8 is below the declared high 9",
        "dryrun: not in the schema (python3 -m aiobench.results.schema.config adds it)",
    ]


def test_the_schema_file_gets_the_entries_it_lacks_from_the_declarations() -> None:
    text = SCHEMA_FILE.read_text(encoding="utf-8")
    assert with_new_keys(text) == text  # (nothing to add: the file is up to date)
    bare = (
        '{\n  "$defs": {\n    "config": {\n      "type": "object",\n      "properties": {\n'
        '        "write": {\n          "type": "boolean"\n        }\n      }\n    }\n  }\n}\n'
    )
    grown = with_new_keys(bare)
    assert grown.startswith(bare[: bare.index("\n      }\n")])
    config = json.loads(grown)["$defs"]["config"]["properties"]
    keys = make_cfg(["f"]).to_dict()
    assert list(config) == ["write", *(key for key in keys if key != "write")]  # appended
    assert disagreements(json.loads(grown)) == []
    assert config["latpercent9s"] == {"type": "integer", "minimum": 0, "maximum": 9}
    assert '        "pertarget": {\n          "type": ["boolean", "null"]\n        }' in grown


def test_nodiocheck_skips_the_direct_io_alignment_checks() -> None:
    unaligned = make_cfg(["f"], direct=True, block="1000", size="4000", nodiocheck=True)
    assert (unaligned.nodiocheck, unaligned.to_dict()["nodiocheck"]) == (True, True)
    with pytest.raises(ConfigError, match=r"^-b/--block: 1000 is not a multiple of 512"):
        make_cfg(["f"], direct=True, block="1000", size="4000")
    dirs = dict(direct=True, block="4k", size="1000", dirs=1, files=1)
    with pytest.raises(ConfigError, match=r"^-s/--size: 1000 is not a multiple of 512"):
        validate(make_cfg(["/nonexistent/d"], **dirs), PathType.DIR)
    validate(make_cfg(["/nonexistent/d"], **dirs, nodiocheck=True), PathType.DIR)


def test_the_config_is_made_as_a_dataclass_would_make_it() -> None:
    """BenchConfig's own __init__, __eq__, __hash__ and __repr__ (not the dataclass's, see
    there): every field takes its value or its default, a missing required one or an
    unknown one is a TypeError, and the result is frozen, compares and hashes by value,
    shows every field and goes through dataclasses.replace."""
    cfg = build_config(paths=["f"], write=True, block="8k")
    fields = dataclasses.fields(BenchConfig)
    assert {f.name for f in fields} == set(BenchConfig.__slots__)
    given = {f.name: getattr(cfg, f.name) for f in fields}
    again = BenchConfig(**given)
    assert again == cfg and hash(again) == hash(cfg) and again is not cfg
    defaults = BenchConfig(paths=("f",))
    for f in fields:
        if f.name != "paths":
            assert getattr(defaults, f.name) == f.default, f.name
    assert dataclasses.replace(cfg, threads=3).threads == 3 and cfg.threads == 1
    assert dataclasses.replace(cfg, threads=3) != cfg and cfg != given
    assert len({cfg, again, dataclasses.replace(cfg, seed=cfg.seed + 1)}) == 2
    shown = ", ".join(f"{f.name}={getattr(cfg, f.name)!r}" for f in fields)
    assert repr(cfg) == f"BenchConfig({shown})"
    with pytest.raises(TypeError, match="missing field 'paths'"):
        BenchConfig(write=True)
    with pytest.raises(TypeError, match="unknown fields bogus, nope"):
        BenchConfig(paths=("f",), nope=1, bogus=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.threads = 2  # type: ignore[misc]
