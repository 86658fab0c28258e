"""``aiobench --help``: options in panels, real placeholders, every default, examples.

The options are declared once (:mod:`aiobench.options`), each with its panel, placeholder
and default as --help shows them; this module only lays their help out (plain text, no
rich: ``--help`` must start fast). Imports nothing heavy.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperCommand

from aiobench.config import LAUNCH_OPTIONS, BenchConfig
from aiobench.options import PANEL_TITLES, declared

_OPTIONS = [opt for _, opt in declared(BenchConfig) if not opt.argument] + list(LAUNCH_OPTIONS)
# Panels in the order they are shown, each with its options (parameter names) in order.
PANELS: tuple[tuple[str, tuple[str, ...]], ...] = tuple(
    (title, tuple(opt.name for opt in _OPTIONS if opt.panel == title)) for title in PANEL_TITLES
)

OTHER_PANEL = "Other"
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
    end."""

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
