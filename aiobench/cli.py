"""The typer CLI: elbencho's option names -> BenchConfig -> run -> table/JSON; exit codes."""

from __future__ import annotations

import dataclasses
import errno
import inspect
import io
import os
import re
import shlex
import sys
import traceback
from functools import cache, cached_property
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer._coercion import RuntimeParam, TypeDescriptor, build_runtime_param

from aiobench import __version__
from aiobench.config import (
    COMMAND_LINE_OPTIONS,
    CONFIGFILE_OPTION,
    LAUNCH_OPTIONS,
    NUMHOSTS_OPTION,
    RECOGNIZED_OPTIONS,
    BenchConfig,
    build_config,
    refuse_recognized,
)
from aiobench.engines import registry
from aiobench.errors import EXIT_IO_ERROR, EXIT_USAGE, AiobenchError, ConfigError
from aiobench.helptext import COMMAND_NAMES, ArgumentsCommand, PanelCommand
from aiobench.kinds import EngineName
from aiobench.options import Opt, declared, table_options
from aiobench.render import stdio
from aiobench.render.stdio import guard_standard_streams
from aiobench.run import gcpause, interrupts
from aiobench.text import printable

# The rest (numpy, the engines, the renderers, the subcommands) is imported where a command
# needs it, so that --help, --version and a run start in a fraction of the time
# (scripts/bench --section startup; tests/test_startup.py).
if TYPE_CHECKING:
    from aiobench.engines.base import Engine
    from aiobench.plan.targets import Resolved
    from aiobench.render.outputs import Outputs
    from aiobench.results.runresult import RunResult
    from aiobench.results.saved import SavedCheck
    from aiobench.run.coordinator import Coordinator

# Below this block size a second thread in the same interpreter waits for its lock often
# enough to show up in measured latency (cached 4 KiB reads: p99 ~5 us alone, 30-50 us
# with two threads).
GIL_NOTE_MAX_BLOCK = 64 * 1024

app = typer.Typer(add_completion=True, rich_markup_mode=None)
SUBCOMMANDS = COMMAND_NAMES  # (in --help's Commands panel)
# The benchmark command's words as parsed: the command line with its -c/--configfile's
# options (what --hosts hands to the ranks, which need not have the file).
_ARGS: list[str] = []
# Set when the shell asks for completions (click's name for it): the words are not in argv.
_COMPLETE_VAR = "_AIOBENCH_COMPLETE"
# A plot smaller than this has no room for its three panels; larger ones only cost memory.
MIN_PLOT_PX, MAX_PLOT_PX = 100, 10_000


# An integer as typer's coercion (pydantic's) reads it, spelled so that int() reads it alike;
# 18 digits always fit pydantic's fast integer path.
_PLAIN_INT = re.compile(r"-?[0-9]{1,18}", re.ASCII)
# What a number parameter wants, said when a value is not one; "of ..." by its placeholder.
# (typer hands an ``int | None`` parameter over as int.)
_NUMBERS: dict[object, str] = {int: "a whole number", float: "a number"}
_OF_UNIT = {"MS": " of milliseconds"}


@dataclasses.dataclass(frozen=True)
class _PlainCoercion(RuntimeParam):
    """typer's coercion of a bool, int, float, str or list[str] parameter, without pydantic
    for the values a command line usually holds: a str, an int default, plain digits, the
    PATHs.

    typer builds a pydantic TypeAdapter for every parameter it coerces, also for one not
    given; importing pydantic and building them took ~0.25 s of a run's start. Any other
    value (``+5``, ``1_000``, an error) goes to typer's own coercion, so the values stay
    typer's; a value that is not a number is one ``Error:`` line naming the option.
    """

    descriptor: TypeDescriptor

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        annotation = self.annotation
        if annotation is str and type(value) is str:
            return value
        if annotation is int and type(value) is int:
            return value
        if annotation is int and type(value) is str and _PLAIN_INT.fullmatch(value):
            return int(value)
        plain_paths = type(value) is tuple and all(type(item) is str for item in value)
        if annotation == list[str] and plain_paths:
            return list(value)
        try:
            return self._typer._coerce_value(value, param=param, ctx=ctx)
        except typer.BadParameter:
            wanted = _NUMBERS.get(annotation)
            if wanted is None or not getattr(param, "opts", None):
                raise
            label = "/".join(param.opts)
            unit = _OF_UNIT.get(param.metavar or "", "")
            raise ConfigError(f"{label}: want {wanted}{unit} (got {value!r})") from None

    @cached_property
    def _typer(self) -> RuntimeParam:
        return build_runtime_param(self.descriptor)


class _PlainCommand(ArgumentsCommand):
    """A typer command whose parameters coerce plain values without pydantic."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # (typer's own click)
        _plain_coercion(self.get_params(ctx))  # (the help option is made only with ctx)
        return super().parse_args(ctx, args)


class _BenchCommand(_PlainCommand, PanelCommand):
    """The benchmark command: --help in panels, plain values without pydantic."""


def _plain_coercion(params: list[Any]) -> None:
    """Give ``params`` :class:`_PlainCoercion` where their type allows; a parameter that
    typer would coerce otherwise keeps typer's coercion."""
    for param in params:
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None or getattr(param, "_runtime_param", False) is not None:
            continue  # (a typer that no longer works this way: its own coercion)
        info = descriptor.parameter_info
        plain = descriptor.annotation in (bool, str, list[str], *_NUMBERS) and (
            descriptor.file_annotation is None
            and info.parser is None
            and (info.min, info.max, info.clamp) == (None, None, False)
        )
        if plain:
            param._runtime_param = _PlainCoercion(
                annotation=descriptor.annotation, parameter_info=info, descriptor=descriptor
            )


def _version(value: bool) -> None:
    if value:
        typer.echo(f"aiobench {__version__}")
        raise typer.Exit(0)


def _typer_parameter(opt: Opt) -> inspect.Parameter:
    """The typer parameter of a declared option (:mod:`aiobench.options`)."""
    info: object
    if opt.argument:
        info = typer.Argument(metavar=opt.metavar, help=opt.help, show_default=False)
    else:
        info = typer.Option(
            *opt.flags,
            help=opt.help,
            metavar=opt.metavar,
            # (a recognized-only option has no default to show: it is never run)
            show_default=False if opt.recognized else True if opt.shown is None else opt.shown,
        )
    annotation = Annotated[opt.cli_type, info]  # type: ignore[name-defined]
    keyword = inspect.Parameter.KEYWORD_ONLY
    return inspect.Parameter(opt.name, keyword, default=opt.given, annotation=annotation)


_VERSION = inspect.Parameter(
    "version",
    inspect.Parameter.KEYWORD_ONLY,
    default=False,
    annotation=Annotated[
        bool,
        typer.Option(
            "-V", "--version", callback=_version, is_eager=True, help="Print the version."
        ),
    ],
)


def bench(**options: Any) -> int:
    """Measure what files, block devices and directories deliver (elbencho-compatible)."""
    hosts, hostsfile = (options.pop(opt.name) for opt in LAUNCH_OPTIONS)
    options.pop(_VERSION.name)
    options.pop(CONFIGFILE_OPTION.name)  # (read before the command line was parsed)
    numhosts = NUMHOSTS_OPTION.value(options.pop(NUMHOSTS_OPTION.name))
    refuse_recognized({opt.name: options.pop(opt.name) for opt in RECOGNIZED_OPTIONS})
    if options.get("netbench") and not options.get("paths"):
        options["paths"] = ["(netbench)"]  # netbench touches no path
    cfg = build_config(argv=("aiobench", *sys.argv[1:]), **options)
    from aiobench.engines.net.roles import check as check_netbench

    check_netbench(cfg)
    if cfg.netbench:
        if hosts is not None or hostsfile is not None or numhosts is not None:
            raise ConfigError("--hosts: netbench places its ranks by --servers and --clients")
        from aiobench.engines.net.run import prepare

        code = prepare(cfg, _ARGS or sys.argv[1:])
        if code is not None:  # (launched, or --dryrun)
            return code
    from aiobench.run.coordinator import launch_rank
    from aiobench.run.start import check_start, wait_for_start

    if launch_rank() is None:  # (a rank the launcher was slow to start just starts)
        check_start(cfg.start_epoch)
    if hosts is not None or hostsfile is not None:
        return _on_hosts(cfg, hosts, hostsfile, numhosts)
    if numhosts is not None:
        raise ConfigError("--numhosts: only applies with --hosts or --hostsfile")

    from aiobench.render.outputs import Outputs, check_output_files
    from aiobench.results.events import Observer
    from aiobench.run.launch import connect
    from aiobench.run.runner import (
        exit_code,
        phase_kinds,
        randamount_notes,
        run_benchmark,
        run_meta,
        skipped_note,
    )

    job = connect(cfg)
    engine = registry.make(cfg.ioengine)  # the one engine of the run: it resolves and runs
    resolved = job.agreed(lambda: _resolve(cfg, job, engine))
    job.agreed(lambda: check_output_files(cfg) if job.lead else None)
    if cfg.opslog_path is not None:  # (every process appends to its own host's path)
        from aiobench.run.opslog import checked_path, open_opslog, undo_opslog

        job.agreed(lambda: checked_path(cfg.opslog_path or ""))
    human = sys.stderr if cfg.stdout_option is not None else sys.stdout
    if cfg.dryrun:
        from aiobench.render.dryrun import render_plan

        if job.lead:
            print(render_plan(cfg, resolved, phase_kinds(cfg, resolved)), end="", file=human)
        return 0
    job.check_signal()  # the last moment before anything is created
    opslog = None
    if cfg.opslog_path is not None:
        opslog = job.agreed(
            lambda: open_opslog(cfg.opslog_path, lock_file=cfg.opsloglock), undo_opslog
        )
    meta = run_meta(cfg, resolved, job.loop_name()) | job.meta()
    # Only the lead prints and writes files; the others run their share. (Agreed: a FIFO
    # with no reader is refused on every process.)
    notes = _notes(cfg, resolved, job)
    outputs = job.agreed(lambda: Outputs(cfg, meta, human, notes=notes) if job.lead else None)
    gcpause.resume()  # start-up is over
    wait_for_start(cfg.start_epoch, sys.stderr if job.lead else None)
    try:
        result = run_benchmark(
            cfg,
            resolved,
            engine,
            observer=outputs or Observer(),
            meta=meta,
            coordinator=job,
            opslog=opslog,
        )
    finally:
        if opslog is not None:
            opslog.close()
    code = exit_code(result)
    if outputs is not None:
        skipped = skipped_note(cfg, resolved, result)
        if skipped is not None:
            print(f"Note: {skipped}.", file=sys.stderr)
        ended = randamount_notes(cfg, resolved, result)
        for note in ended:
            print(f"Note: {note}.", file=sys.stderr)
        if ended:  # the document's notes (meta.notes) say so too
            setup = result.meta.get("notes")
            notes = [*(setup if isinstance(setup, list) else []), *ended]
            result = dataclasses.replace(result, meta=result.meta | {"notes": notes})
        code = _report_end(cfg, result, outputs, job)
    if opslog is not None and opslog.failure is not None:  # (each process says its own)
        print(f"Error: {opslog.failure}", file=sys.stderr)
        code = code or EXIT_IO_ERROR
    job.finish()
    return code


def _notes(cfg: BenchConfig, resolved: Resolved, job: Coordinator) -> list[str]:
    """What the user should know about how the run measures, said once setup is done."""
    from aiobench.plan.targets import DIR

    notes = [*resolved.notes, *job.notes()]
    if cfg.ioengine_fallback:
        notes.append(registry.FALLBACK_NOTE)
    small = resolved.path_type == DIR or resolved.layout.block_size <= GIL_NOTE_MAX_BLOCK
    if cfg.ioengine == EngineName.PYTHON and cfg.slots > 1 and small:
        notes.append(
            f"{cfg.slots} slots share one Python interpreter; for small blocks and "
            "metadata calls, waiting for its lock adds to measured latency (use MPI "
            "ranks for latency work)"
        )
    if cfg.poll and cfg.threads >= (cpus := len(os.sched_getaffinity(0))):
        notes.append(
            f"--poll with -t {cfg.threads} on {cpus} CPUs: each polling thread keeps a CPU "
            "busy, and the device's completions need CPU time too (give fewer threads)"
        )
    return notes


# The command's parameters are the declared options (each declared once, in BenchConfig).
bench.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [
        *(_typer_parameter(opt) for _, opt in declared(BenchConfig)),
        *(_typer_parameter(opt) for opt in COMMAND_LINE_OPTIONS),
        _VERSION,
    ],
    return_annotation=int,
)
bench.__annotations__ = {}  # (typer reads the signature's)
app.command(
    cls=_BenchCommand,
    context_settings={"help_option_names": ["-h", "--help"]},
)(bench)


def _on_hosts(cfg: BenchConfig, hosts: str | None, hostsfile: str | None, numhosts: object) -> int:
    """--hosts/--hostsfile: hand the command to the MPI launcher (with --dryrun: say how);
    --numhosts N: to the first N hosts named."""
    from aiobench.run.coordinator import launch_rank
    from aiobench.run.hosts import first_hosts, hand_over, launch_plan, parse_hosts

    names = first_hosts(parse_hosts(hosts, hostsfile), numhosts)
    if launch_rank() is not None or cfg.mpi:
        raise ConfigError(
            "--hosts: this is already a rank of an MPI job (mpirun, srun or --mpi); "
            "leave --hosts out there"
        )
    command = launch_plan(names, _ARGS or sys.argv[1:])
    if cfg.dryrun:
        human = sys.stderr if cfg.stdout_option is not None else sys.stdout
        print(f"PLAN (--dryrun): {len(names)} MPI ranks: {shlex.join(command)}", file=human)
        print("Nothing was started; each rank checks its PATHs when it runs.", file=human)
        return 0
    hand_over(command)
    return 0  # (not reached: the launcher took over this process)


def _report_end(cfg: BenchConfig, result: RunResult, outputs: Outputs, job: Coordinator) -> int:
    """What follows the last block: the JSON document, how the run ended; the exit code.

    Exit 1 also when a result file, the JSON document or the table could not be written
    (stdout closed or full); a reader that went away (``| head``) is not an error. What
    cannot be said because stderr is unusable is only the exit code.
    """
    from aiobench.render.outfiles import reason
    from aiobench.run.runner import exit_code

    if cfg.json_path is not None:
        from aiobench.render.json import dumps

        outputs.write_document(dumps(result))
    outputs.close()
    if result.interrupted:
        on = job.where(result.meta.get("signal_rank"))
        print(f"Interrupted by {result.meta.get('signal')}{on}: results so far.", file=sys.stderr)
    if result.error is not None:
        print(f"Error: {printable(str(result.error['message']))}", file=sys.stderr)
    errors = list(outputs.errors)
    table = outputs.table_failure()
    if table is not None:
        errors.append(f"stdout: {reason(table)}: the result table could not be written")
    for message in errors:
        print(f"Error: {message}", file=sys.stderr)
    code = exit_code(result)
    return EXIT_IO_ERROR if code == 0 and errors else code


def _print_out(text: str) -> None:
    """The output of ``show``/``compare`` on stdout; stdout closed or full is exit 1 (a
    reader that went away, ``| head``, is not an error)."""
    from aiobench.render.outfiles import reason

    failed = stdio.show(sys.stdout, text) or stdio.failure(1)
    if failed is not None and failed.errno != errno.EPIPE:
        raise AiobenchError(f"stdout: {reason(failed)}: the output could not be written")


def _resolve(cfg: BenchConfig, job: Coordinator, engine: Engine) -> Resolved:
    """The paths and sizes, then the memory budget of this process's threads."""
    from aiobench.plan.memory import check_memory

    # The layout is that of all the thread ranks the dataset is split over.
    slices = job.split(cfg.threads, os.path.isdir(cfg.paths[0])).slices
    resolved = engine.resolve(
        cfg if slices == cfg.threads else dataclasses.replace(cfg, threads=slices)
    )
    check_memory(cfg, resolved, slices)
    return resolved


def show(run: str, **asked: Any) -> int:
    """Print the result table of a saved run again, as the run printed it (the flags add
    rows)."""
    from aiobench.render.table import TableOptions, render_table
    from aiobench.results.saved import SavedCheck, load_shown

    # An option given replaces the run's value (a flag can only add its rows).
    options = [(f, opt) for f, opt in table_options(BenchConfig) if asked[opt.name] is not None]
    given: dict[str, Any] = {field: opt.value(asked[opt.name]) for field, opt in options}
    result = load_shown(run)
    if isinstance(result, SavedCheck):
        return _show_check(run, result, [opt.flags[0] for _, opt in options])
    config = result.meta.get("config")
    saved = TableOptions.from_config(config if isinstance(config, dict) else {"lat": False})
    _print_out(render_table(result.phases, dataclasses.replace(saved, **given)))
    return 0


def _show_check(path: str, saved: SavedCheck, flags: list[str]) -> int:
    """``show`` of a check document: the check's table, notes and warnings, as it printed
    them, and how it ended."""
    from aiobench.check.render import render_check
    from aiobench.check.saved import check_result

    if flags:
        raise ConfigError(f"{flags[0]}: {path} is a check document; its table has no such rows")
    result = check_result(saved, path)
    ending = []
    if result.error is not None:
        ending.append(f"The check ended on an error: {printable(str(result.error['message']))}")
    if result.interrupted:
        ending.append("The check was interrupted.")
    _print_out(render_check(result) + "".join(line + "\n" for line in ending))
    return 0


def _show_parameter(opt: Opt) -> inspect.Parameter:
    """The ``show`` parameter of a table option: not given (None) keeps the run's value."""
    info = typer.Option(*opt.flags, help=opt.show_help, metavar=opt.metavar, show_default=False)
    optional = opt.cli_type | None  # type: ignore[operator]
    annotation = Annotated[optional, info]  # type: ignore[valid-type]
    keyword = inspect.Parameter.KEYWORD_ONLY
    return inspect.Parameter(opt.name, keyword, default=None, annotation=annotation)


_RUN = inspect.Parameter(
    "run",
    inspect.Parameter.POSITIONAL_OR_KEYWORD,
    annotation=Annotated[str, typer.Argument(metavar="RUN.json", help="A --json result file.")],
)
# The table options are declared once (BenchConfig); show takes each of them.
show.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [_RUN, *(_show_parameter(opt) for _, opt in table_options(BenchConfig))],
    return_annotation=int,
)
show.__annotations__ = {}  # (typer reads the signature's)


def compare(
    run_a: Annotated[str, typer.Argument(metavar="A.json", help="The baseline run.")],
    run_b: Annotated[str, typer.Argument(metavar="B.json", help="The run to compare with it.")],
    fail_below: Annotated[
        float | None,
        typer.Option(
            "--fail-below",
            metavar="PCT",
            help="Exit 3 when a rate (MiB/s, IOPS, entries/s) of B fell by more than PCT % "
            "of A's and by more than the runs' noise.",
        ),
    ] = None,
    markdown: Annotated[
        str | None,
        typer.Option("--markdown", metavar="FILE", help="Also write the table as markdown."),
    ] = None,
) -> int:
    """Per phase and metric the ratio B/A, with a warning when it is within the runs' noise
    (run or check documents)."""
    from aiobench.render.compare import compare_command

    return compare_command(run_a, run_b, fail_below, markdown, _print_out)


def plot(
    run: Annotated[str, typer.Argument(metavar="RUN.json", help="A --json result file.")],
    output: Annotated[
        str, typer.Option("-o", "--output", metavar="FILE.png", help="Where to write the PNG.")
    ],
    width: Annotated[int, typer.Option("--width", help="Width in pixels.")] = 1200,
    height: Annotated[int, typer.Option("--height", help="Height in pixels.")] = 800,
) -> int:
    """Throughput and p50/p99 latency over time, and the latency percentile curve (PNG)."""
    from aiobench.render.export import checked_export, write_export
    from aiobench.render.plot import render_plot  # matplotlib is an optional extra
    from aiobench.results.saved import load_document

    if not (MIN_PLOT_PX <= width <= MAX_PLOT_PX and MIN_PLOT_PX <= height <= MAX_PLOT_PX):
        raise ConfigError(f"--width/--height: between {MIN_PLOT_PX} and {MAX_PLOT_PX} pixels")
    doc = load_document(run)
    # Where the name leads, by the rules of every output (a FIFO only with a reader).
    export = checked_export("-o/--output", output)
    png = io.BytesIO()
    notes = render_plot(doc, png, width_px=width, height_px=height)
    failed = write_export(export, png.getvalue())
    if failed is not None:
        raise AiobenchError(failed)
    for note in notes:
        print(f"Note: {note}.", file=sys.stderr)
    return 0


@cache
def saved_run_tools() -> typer.Typer:
    """The subcommands' app (``aiobench show ...`` etc.; a PATH spelled like one goes after
    ``--``), built when a command line starts with one of them: the check's and
    storagebench's modules are not loaded by a run or by ``--help``."""
    from aiobench.check.command import check as check_command
    from aiobench.storagebench.command import storagebench as storagebench_command

    tools = typer.Typer(
        add_completion=False,
        rich_markup_mode=None,
        help="Work with saved runs (--json files).",
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    tools.command("show", cls=_PlainCommand)(show)
    tools.command("compare", cls=_PlainCommand)(compare)
    tools.command("plot", cls=_PlainCommand)(plot)
    tools.command("check", cls=_PlainCommand)(check_command)
    tools.command("storagebench", cls=_PlainCommand)(storagebench_command)
    return tools


def __getattr__(name: str) -> typer.Typer:
    """``aiobench.cli.tools``: :func:`saved_run_tools`, made on first use."""
    if name == "tools":
        return saved_run_tools()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None) -> None:
    """The CLI in this process (:mod:`aiobench.entry` is the console entry point): the
    command's exit code; a signal that no run reported ends it with its own line and code."""
    guard_standard_streams()  # closed or full stdout/stderr: an exit code, no traceback
    with interrupts.handled():  # (a no-op under aiobench.entry, which installed them first)
        code = _command(sys.argv[1:] if argv is None else argv)
        signum = interrupts.settle()  # a run settles the signal it reported itself
    if signum is not None:
        from aiobench.run.coordinator import abort_job

        print(f"Interrupted by {signum.name} before the benchmark started", file=sys.stderr)
        abort_job(128 + signum)
        code = 128 + signum
    sys.exit(code)


def _command(args: list[str]) -> int:
    """Run the command; one-line ``Error: ...`` and exit 2 for usage errors."""
    subcommand = bool(args) and args[0] in SUBCOMMANDS
    command = typer.main.get_command(saved_run_tools() if subcommand else app)
    if not args and _COMPLETE_VAR not in os.environ:  # what to type, not a missing PATH
        ctx = command.make_context("aiobench", [], resilient_parsing=True)
        print(command.get_usage(ctx), file=sys.stderr)
        print(
            f"       aiobench COMMAND [ARGS]...  ({', '.join(SUBCOMMANDS)})\n"
            "Try 'aiobench --help' for the options, the commands and examples.",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        if args:
            _check_first_word(args[0])
        if subcommand:
            gcpause.resume()  # (check and storagebench run benchmarks, show reads a run)
        elif args:
            from aiobench.compat.configfile import expanded

            args = expanded(command, args)  # -c/--configfile, --flag=false
            _ARGS[:] = args
        code = command.main(args=args, prog_name="aiobench", standalone_mode=False)
    except AiobenchError as exc:
        from aiobench.run.coordinator import launch_rank

        if launch_rank() in (None, 0):  # under MPI every rank fails alike; one says so
            # printable(): paths and file contents in a message must not act on a terminal
            print(f"Error: {printable(str(exc))}", file=sys.stderr)
        code = exc.exit_code
    except interrupts.Interrupted as exc:  # setup stopped before any phase started
        code = 128 + exc.signum  # (main() says so: the signal is not settled)
    except typer.TyperException as exc:
        # Parse errors (unknown option, not an integer, ...) from typer's built-in click.
        format_message = getattr(exc, "format_message", None)
        message = format_message() if format_message else str(exc)
        print(f"Error: {printable(message)}", file=sys.stderr)
        code = getattr(exc, "exit_code", 2)
    except Exception:  # a bug: its traceback, then (under MPI) the end of every rank
        from aiobench.run.coordinator import abort_job

        traceback.print_exc()
        abort_job(1)
        code = 1
    code = code if isinstance(code, int) else 0
    if code == 0 and stdout_failed():  # (--help, --version, ... into a full or closed stdout)
        return EXIT_IO_ERROR
    return code


def stdout_failed() -> bool:
    """Whether what went to stdout could not be written (said in one ``Error:`` line): a
    full device or stdout closed at start; not a reader that went away (``| head``)."""
    sys.stdout.flush()
    failed = stdio.failure(1)
    if failed is None or failed.errno == errno.EPIPE:
        return False
    from aiobench.render.outfiles import reason  # (its socket import: only for this line)

    print(f"Error: stdout: {reason(failed)}: the output could not be written", file=sys.stderr)
    return True


def _check_first_word(word: str) -> None:
    """A first word that is no path but close to a subcommand's name is a typing error
    (``aiobench chek DIR``), not a file to create: :class:`ConfigError` saying which. One
    spelled like a path (``check.json``, ``./chek``) is taken for one."""
    if word in SUBCOMMANDS or word.startswith("-") or "/" in word or "." in word:
        return
    if os.path.lexists(word):
        return
    import difflib  # (only for a first word that is neither)

    close = difflib.get_close_matches(word, SUBCOMMANDS, n=1, cutoff=0.6)
    if close:
        raise ConfigError(
            f"no such path or subcommand {word!r}; did you mean {close[0]!r}? (a PATH of "
            "that name goes after --)"
        )
