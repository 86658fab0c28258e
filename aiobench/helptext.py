"""``aiobench --help``: options in panels, real placeholders, every default, examples.

The options are declared once (:mod:`aiobench.options`), each with its panel, placeholder
and default as --help shows them; this module only lays their help out (plain text, no
rich: ``--help`` must start fast). Imports nothing heavy.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperCommand

from aiobench.config import COMMAND_LINE_OPTIONS, BenchConfig
from aiobench.options import PANEL_TITLES, declared

_OPTIONS = [opt for _, opt in declared(BenchConfig) if not opt.argument] + list(
    COMMAND_LINE_OPTIONS
)
# Panels in the order they are shown, each with its options (parameter names) in order.
PANELS: tuple[tuple[str, tuple[str, ...]], ...] = tuple(
    (title, tuple(opt.name for opt in _OPTIONS if opt.panel == title)) for title in PANEL_TITLES
)

OTHER_PANEL = "Other"
COMMANDS_PANEL = "Commands"
# The subcommands (the first word of the command line): name, arguments, what it does.
COMMANDS = (
    ("check", "DIR", "A quick health check of DIR's storage, sized to --budget."),
    ("show", "RUN.json", "The result table of a saved --json run again."),
    ("compare", "A.json B.json", "Per phase and metric the ratio B/A, and the noise."),
    ("plot", "RUN.json -o FILE.png", "Throughput and latency over time as a PNG."),
    ("storagebench", "--write PATH...", "BeeGFS storagebench: in the background, --status."),
)
COMMAND_NAMES = tuple(name for name, _, _ in COMMANDS)
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


class ArgumentsCommand(TyperCommand):
    """typer's command with its arguments shown as click shows them: ``DIR`` and
    ``[PATH]...`` in the usage line (not typer's ``{DIR}``), and without the Python type
    typer adds in the Arguments section (``DIR <str>``)."""

    # (ctx and formatter are those of the click that typer carries with it.)
    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name != "argument":
                pieces += param.get_usage_pieces(ctx)
                continue
            name = param.metavar or str(param.name).upper()
            name = name if param.required else f"[{name}]"
            pieces.append(name + ("..." if param.nargs != 1 else ""))
        return pieces

    def format_options(self, ctx: Any, formatter: Any) -> None:
        self.format_arguments(ctx, formatter)
        records = self.option_records(ctx)
        if records:
            with formatter.section("Options"):
                formatter.write_dl(list(records.values()))

    def format_arguments(self, ctx: Any, formatter: Any) -> None:
        arguments = [
            (param.metavar or str(param.name).upper(), getattr(param, "help", "") or "")
            for param in self.get_params(ctx)
            if param.param_type_name == "argument"
        ]
        if arguments:
            with formatter.section("Arguments"):
                formatter.write_dl(arguments)

    def option_records(self, ctx: Any) -> dict[str, tuple[str, str]]:
        """The help line of each option, by parameter name."""
        records: dict[str, tuple[str, str]] = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx) if param.param_type_name != "argument" else None
            if record is not None and param.name is not None:
                records[param.name] = record
        return records


class PanelCommand(ArgumentsCommand):
    """The benchmark command's help: the subcommands, the options grouped in
    :data:`PANELS`, and the examples at the end."""

    def format_options(self, ctx: Any, formatter: Any) -> None:
        self.format_arguments(ctx, formatter)
        with formatter.section(COMMANDS_PANEL):
            formatter.write_dl([(f"{name} {args}", text) for name, args, text in COMMANDS])
            formatter.write_paragraph()
            formatter.write_text(
                "Each has its own --help (aiobench check --help). A PATH named like one of "
                "them goes after --."
            )
        records = self.option_records(ctx)
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
