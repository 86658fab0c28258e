"""``aiobench check DIR``: the CLI edge of the check (options, outputs, exit code)."""

from __future__ import annotations

import errno
import signal
import sys
import time
from typing import Annotated

import typer

from aiobench.check.plan import DEFAULT_BUDGET_S, MAX_BUDGET_S, MIN_BUDGET_S
from aiobench.config import duration_ns
from aiobench.errors import EXIT_IO_ERROR, ConfigError
from aiobench.render import stdio
from aiobench.text import printable
from aiobench.units import NS_PER_S

# The run and its renderers are imported by the command itself: `aiobench --help` loads
# this module, and must start fast (scripts/bench --section startup).


def check(
    directory: Annotated[
        str, typer.Argument(metavar="DIR", help="The directory to check (its filesystem).")
    ],
    budget_text: Annotated[
        str,
        typer.Option(
            "--budget",
            metavar="TIME",
            help="About how long the whole check takes: whole seconds, or with s, m or h (2m).",
        ),
    ] = str(DEFAULT_BUDGET_S),
    json_out: Annotated[
        str | None,
        typer.Option(
            "--json", metavar="FILE|-", help="Write one JSON document; '-' = stdout only JSON."
        ),
    ] = None,
    markdown: Annotated[
        str | None,
        typer.Option("--markdown", metavar="FILE", help="Write the table as markdown."),
    ] = None,
) -> int:
    """A one-command sanity check of DIR: sequential 1 MiB and random 4 KiB reads and
    writes at deep and shallow queues, and metadata, sized to --budget; everything it
    creates is removed."""
    from aiobench.check.render import dumps_check, render_check, render_markdown
    from aiobench.check.run import run_check
    from aiobench.render.export import checked_export, write_export
    from aiobench.render.outfiles import reason

    budget = duration_ns(budget_text, "--budget", whole=True) // NS_PER_S
    if not MIN_BUDGET_S <= budget <= MAX_BUDGET_S:
        raise ConfigError(
            f"--budget: between {MIN_BUDGET_S} and {MAX_BUDGET_S} seconds (got {budget})"
        )
    json_export = None if json_out in (None, "-") else checked_export("--json", json_out)
    md_export = None if markdown is None else checked_export("--markdown", markdown)
    live = _Live(budget) if _on_terminal() else None
    try:
        result = run_check(
            directory,
            budget,
            ["aiobench", *sys.argv[1:]],
            progress=None if live is None else live.show,
        )
    finally:
        if live is not None:
            live.clear()
    human = sys.stderr if json_out == "-" else sys.stdout
    errors = []
    failed = stdio.show(human, render_check(result))
    if failed is not None and failed.errno != errno.EPIPE:
        errors.append(f"{'stderr' if json_out == '-' else 'stdout'}: {reason(failed)}")
    if json_out == "-":
        failed = stdio.show(sys.stdout, dumps_check(result))
        if failed is not None:
            errors.append(f"--json -: stdout: {reason(failed)}")
    elif json_export is not None:
        errors.append(write_export(json_export, dumps_check(result)) or "")
    if md_export is not None:
        errors.append(write_export(md_export, render_markdown(result)) or "")
    if result.interrupted:
        print(
            f"Interrupted by {result.meta.get('signal')}: results so far; the check's "
            "files are removed.",
            file=sys.stderr,
        )
    if result.error is not None:
        print(f"Error: {printable(str(result.error['message']))}", file=sys.stderr)
    if not (result.complete or result.interrupted or result.error):
        errors.append(f"the check did not complete: {len(result.rows)} of its tests ran")
    for message in filter(None, errors):
        print(f"Error: {message}", file=sys.stderr)
    if result.error is not None or any(errors):
        return EXIT_IO_ERROR
    if result.interrupted:
        return 128 + int(signal.Signals[str(result.meta.get("signal", "SIGINT"))])
    return 0


def _on_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (OSError, ValueError):
        return False


class _Live:
    """One line on a terminal's stderr saying which test runs, redrawn in place."""

    def __init__(self, budget_s: int) -> None:
        self.budget_s = budget_s
        self.start = time.monotonic()
        self.drawn = False

    def show(self, step: str) -> None:
        elapsed = time.monotonic() - self.start
        line = f"\r\x1b[Kaiobench check: {step} ({elapsed:.0f} of about {self.budget_s} s)"
        self.drawn = stdio.show(sys.stderr, line) is None

    def clear(self) -> None:
        if self.drawn:
            stdio.show(sys.stderr, "\r\x1b[K")
