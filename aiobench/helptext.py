"""``aiobench --help``: options in panels, real placeholders, every default, examples.

The options are declared once, in :mod:`aiobench.cli`; this module only says how their help
is laid out (plain text, no rich: ``--help`` must start fast). Imports nothing heavy.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperCommand

# Panels in the order they are shown, each with its options (parameter names) in order.
PANELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "Workload",
        (
            "write", "read", "threads", "block", "size", "iodepth", "direct", "rand",
            "randamount", "norandalign", "backward", "strided", "timelimit", "infloop",
            "iterations", "rwmixpct", "blockvarpct", "verify", "verifydirect", "limitread",
            "limitwrite", "trunc", "trunctosize", "preallocfile", "sync", "dropcache", "seed",
            "ioengine",
        ),
    ),
    (
        "Dir mode (PATH is a directory)",
        ("mkdirs", "stat", "delfiles", "deldirs", "dirs", "files", "dirsharing", "nodelerr"),
    ),
    (
        "Outputs",
        (
            "lat", "latpercent", "latpercent9s", "lathisto", "cpu", "pertarget", "json_out",
            "jsonfile", "csvfile", "resfile", "livecsv", "livejson", "nolive", "liveint",
            "label",
        ),
    ),
    ("Scale-out (MPI)", ("hosts", "hostsfile", "mpi", "nosvcshare")),
    ("Safety", ("dryrun", "force")),
)  # fmt: skip
OTHER_PANEL = "Other"
# Placeholders where typer would print the Python type (<int>, <str>).
METAVARS = {
    "paths": "PATH",
    "threads": "N",
    "iodepth": "N",
    "iterations": "N",
    "dirs": "N",
    "files": "N",
    "block": "SIZE",
    "size": "SIZE",
    "randamount": "SIZE",
    "timelimit": "SECS",
    "label": "TEXT",
    "seed": "N",
}
# Defaults that are no plain value (the option's own default is None or a marker).
DEFAULTS = {
    "size": "detect for reads and block devices; 0 in dir mode",
    "dirs": "1",
    "files": "1",
    "randamount": "each thread its whole slice",
    "verify": "off",
    "blockvarpct": "no refill",
    "rwmixpct": "off",
    "limitread": "no limit",
    "limitwrite": "no limit",
    "label": "none",
    "seed": "random, recorded",
    "ioengine": "native where it was built, else python",
    "pertarget": "only a line naming a target over 10 % below the average",
    "json_out": "none",
    "jsonfile": "none",
    "csvfile": "none",
    "resfile": "none",
    "livecsv": "none",
    "livejson": "none",
    "hosts": "this host only",
    "hostsfile": "none",
}
EXAMPLES = (
    (
        "Write 4 files of 20 GiB with 16 threads and O_DIRECT (elbencho's first seed command):",
        "aiobench -w -b 4M -t 16 --direct -s 20g '/data/file[1-4]'",
    ),
    (
        "Random 4 KiB reads, 16 threads x queue depth 16, 20 s, with latency percentiles:",
        "aiobench -r -b 4k -t 16 --iodepth 16 --direct --rand --timelimit 20 "
        "--lat --latpercent '/data/file[1-4]'",
    ),
    (
        "Metadata: create, stat, read and delete 2 x 10 x 1000 small files, JSON for CI:",
        "aiobench -d -w -r --stat -F -D -t 2 -n 10 -N 1000 -s 4k /data/dir --json run.json",
    ),
)


class PanelCommand(TyperCommand):
    """typer's command with its options grouped in :data:`PANELS` and the examples at the
    end; placeholders and defaults from :data:`METAVARS` and :data:`DEFAULTS`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if param.name in METAVARS:
                param.metavar = METAVARS[param.name]
            if param.name in DEFAULTS and param.param_type_name == "option":
                # (an Option's attribute; typer's click is not the click mypy sees)
                setattr(param, "show_default", DEFAULTS[param.name])  # noqa: B010

    # (ctx and formatter are those of the click that typer carries with it.)
    def format_options(self, ctx: Any, formatter: Any) -> None:
        records: dict[str, tuple[str, str]] = {}
        arguments = []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                # Without the Python type typer adds to an argument (<list[str]>).
                arguments.append((param.metavar or str(param.name), getattr(param, "help", "")))
                continue
            record = param.get_help_record(ctx)
            if record is not None and param.name is not None:
                records[param.name] = record
        if arguments:
            with formatter.section("Arguments"):
                formatter.write_dl(arguments)
        placed: set[str] = set()
        for title, names in PANELS:
            rows = [records[name] for name in names if name in records]
            placed.update(names)
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)
        rest = [record for name, record in records.items() if name not in placed]
        if rest:
            with formatter.section(OTHER_PANEL):
                formatter.write_dl(rest)

    def format_epilog(self, ctx: Any, formatter: Any) -> None:
        with formatter.section("Examples"):
            for text, command in EXAMPLES:
                formatter.write_text(text)
                with formatter.indentation():
                    formatter.write(f"{' ' * formatter.current_indent}{command}\n")
        super().format_epilog(ctx, formatter)
