"""The typer CLI: elbencho's option names -> BenchConfig -> run -> table/JSON; exit codes."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from aiobench import __version__
from aiobench.config import DEFAULT_BLOCK, build_config
from aiobench.errors import AiobenchError, ConfigError
from aiobench.render.json import dumps, write_atomically
from aiobench.render.table import HEADER, phase_block
from aiobench.results import PhaseResult
from aiobench.runner import exit_code, run_benchmark
from aiobench.targets import DIR, resolve

# Below this block size a second thread in the same interpreter waits for its lock often
# enough to show up in measured latency (cached 4 KiB reads: p99 ~5 us alone, 30-50 us
# with two threads).
GIL_NOTE_MAX_BLOCK = 64 * 1024

app = typer.Typer(add_completion=False, rich_markup_mode=None)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"aiobench {__version__}")
        raise typer.Exit(0)


@app.command(context_settings={"help_option_names": ["-h", "--help"]})
def bench(
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="PATH...",
            help="Files, block devices, or directories (dir mode); [1-4] ranges expand.",
        ),
    ] = None,
    write: Annotated[bool, typer.Option("-w", "--write", help="Write phase.")] = False,
    read: Annotated[bool, typer.Option("-r", "--read", help="Read phase.")] = False,
    mkdirs: Annotated[
        bool, typer.Option("-d", "--mkdirs", help="Dir mode: create the dirs (MKDIRS phase).")
    ] = False,
    stat: Annotated[bool, typer.Option("--stat", help="Dir mode: stat every file.")] = False,
    delfiles: Annotated[
        bool, typer.Option("-F", "--delfiles", help="Dir mode: delete the files.")
    ] = False,
    deldirs: Annotated[
        bool, typer.Option("-D", "--deldirs", help="Dir mode: delete the dirs.")
    ] = False,
    dirs: Annotated[
        int | None,
        typer.Option(
            "-n", "--dirs", help="Dir mode: dirs per thread (default 1; 0 = files in PATH)."
        ),
    ] = None,
    files: Annotated[
        int | None, typer.Option("-N", "--files", help="Dir mode: files per dir (default 1).")
    ] = None,
    dirsharing: Annotated[
        bool,
        typer.Option(
            "--dirsharing", help="Dir mode: all threads put their files in one set of dirs."
        ),
    ] = False,
    nodelerr: Annotated[
        bool,
        typer.Option(
            "--nodelerr",
            help="Dir mode: deleting a file or dir that is already gone counts as done "
            "(cleans up after a time-limited or interrupted run).",
        ),
    ] = False,
    threads: Annotated[int, typer.Option("-t", "--threads", help="Threads (coroutines).")] = 1,
    block: Annotated[str, typer.Option("-b", "--block", help="Block size, e.g. 4k, 1M.")] = (
        DEFAULT_BLOCK
    ),
    size: Annotated[
        str | None,
        typer.Option(
            "-s",
            "--size",
            help="Size per file; for reads and block devices default: detect; "
            "dir mode default: 0 (create only).",
        ),
    ] = None,
    iodepth: Annotated[int, typer.Option("--iodepth", help="Operations in flight per thread.")] = 1,
    direct: Annotated[bool, typer.Option("--direct", help="Use O_DIRECT.")] = False,
    rand: Annotated[bool, typer.Option("--rand", help="Random offsets.")] = False,
    randamount: Annotated[
        str | None,
        typer.Option(
            "--randamount",
            help="Bytes to transfer with --rand over all threads "
            "(default: each thread its whole slice).",
        ),
    ] = None,
    norandalign: Annotated[
        bool, typer.Option("--norandalign", help="Random offsets not aligned to the block size.")
    ] = False,
    timelimit: Annotated[
        int, typer.Option("--timelimit", help="Seconds per phase; 0 = no limit.")
    ] = 0,
    label: Annotated[str, typer.Option("--label", help="Label stored in the results.")] = "",
    nolive: Annotated[
        bool,
        typer.Option("--nolive", help="No live progress (accepted for elbencho compatibility)."),
    ] = False,
    json_out: Annotated[
        str | None,
        typer.Option(
            "--json", metavar="FILE|-", help="Write one JSON document; '-' = stdout only JSON."
        ),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option(
            "--seed", help="Seed of the random offsets and data (default: random, recorded)."
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Write to a block device even if it holds a filesystem or partition "
            "signature (never when it is mounted).",
        ),
    ] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> int:
    """Measure what files, block devices and directories deliver (elbencho-compatible)."""
    cfg = build_config(
        paths=paths or [],
        write=write,
        read=read,
        mkdirs=mkdirs,
        stat=stat,
        delfiles=delfiles,
        deldirs=deldirs,
        dirs=dirs,
        files=files,
        dirsharing=dirsharing,
        nodelerr=nodelerr,
        threads=threads,
        block=block,
        size=size,
        iodepth=iodepth,
        direct=direct,
        rand=rand,
        randamount=randamount,
        norandalign=norandalign,
        timelimit=timelimit,
        label=label,
        nolive=nolive,
        json_path=json_out,
        seed=seed,
        force=force,
        argv=("aiobench", *sys.argv[1:]),
    )
    resolved = resolve(cfg)
    if cfg.json_path not in (None, "-"):
        _check_writable(cfg.json_path)
    human = sys.stderr if cfg.json_path == "-" else sys.stdout

    def notes() -> None:
        for note in resolved.notes:
            print(f"Note: {note}.", file=sys.stderr)
        small = resolved.path_type == DIR or resolved.layout.block_size <= GIL_NOTE_MAX_BLOCK
        if cfg.slots > 1 and small:
            print(
                f"Note: {cfg.slots} slots share one Python interpreter; for small blocks and "
                "metadata calls, waiting for its lock adds to measured latency (use MPI "
                "ranks for latency work).",
                file=sys.stderr,
            )

    shown: list[PhaseResult] = []

    def show(phase: PhaseResult) -> None:
        # The header waits for the first result: a setup error must stay a single line.
        human.write(("" if shown else HEADER) + phase_block(phase))
        human.flush()
        shown.append(phase)

    result = run_benchmark(cfg, resolved, on_phase=show, on_ready=notes)
    if result.interrupted:
        print(f"Interrupted by {result.meta.get('signal')}: results so far.", file=sys.stderr)
    if result.error is not None:
        print(f"Error: {result.error['message']}", file=sys.stderr)
    if cfg.json_path == "-":
        sys.stdout.write(dumps(result))
    elif cfg.json_path is not None:
        write_atomically(cfg.json_path, dumps(result))
    return exit_code(result)


def _check_writable(path: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise ConfigError(f"--json: directory of {path} does not exist")
    if os.path.isdir(path):
        raise ConfigError(f"--json: {path} is a directory")
    if not os.access(directory, os.W_OK):
        raise ConfigError(f"--json: cannot write to {directory}")


def main(argv: list[str] | None = None) -> None:
    """Console entry point: one-line ``Error: ...`` and exit 2 for usage errors."""
    args = sys.argv[1:] if argv is None else argv
    command = typer.main.get_command(app)
    try:
        code = command.main(args=args, prog_name="aiobench", standalone_mode=False)
    except AiobenchError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        code = exc.exit_code
    except (KeyboardInterrupt, typer.Abort):
        # SIGINT before the run installed its own handler: nothing was measured yet.
        print("Error: interrupted before the benchmark started", file=sys.stderr)
        code = 130
    except typer.TyperException as exc:
        # Parse errors (unknown option, not an integer, ...) from typer's built-in click.
        format_message = getattr(exc, "format_message", None)
        print(f"Error: {format_message() if format_message else exc}", file=sys.stderr)
        code = getattr(exc, "exit_code", 2)
    sys.exit(code if isinstance(code, int) else 0)
