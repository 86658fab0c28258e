"""How an option is declared: once, as a field of :class:`~aiobench.config.BenchConfig`.

The field's metadata (:class:`Opt`) holds what the CLI needs (flags, help, placeholder,
panel, the value when the option is not given) and how the typed value becomes the field's
(``parse``), with the bounds of one option (``low``/``high``: written here only). Everything
else reads the declarations: :mod:`aiobench.cli` builds the command's parameters (and those
of ``aiobench show`` from the table options, :func:`table_options`), :mod:`aiobench.helptext`
lays out ``--help`` by their panels, :func:`aiobench.config.build_config` parses them,
:meth:`aiobench.render.table.TableOptions.from_config` reads a saved run's table options back,
and :mod:`aiobench.results.schema.config` checks and extends the JSON schema's ``config``
block. Checks that involve more than one option live in :func:`aiobench.config.validate`.
Pure; imports nothing heavy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, get_args

from aiobench.errors import ConfigError
from aiobench.units import parse_size

OPT = "aiobench.option"  # the metadata key of a field's declaration

# The --help panels, in the order they are shown.
WORKLOAD = "Workload"
DIR_MODE = "Dir mode (PATH is a directory)"
OUTPUTS = "Outputs"
SCALE_OUT = "Scale-out (MPI)"
OBJECTS = "Object storage (PATH is an S3 bucket)"
SAFETY = "Safety"
# elbencho's options that aiobench recognizes but answers with how it does that job.
COMPAT = "elbencho compatibility"
PANEL_TITLES = (WORKLOAD, DIR_MODE, OBJECTS, OUTPUTS, SCALE_OUT, SAFETY, COMPAT)
SECRET = "***"  # what the results and the recorded command show of a secret option

Parse = Callable[[Any, str], Any]


@dataclass(frozen=True, slots=True)
class Opt:
    """One option (or the PATH argument) as the user meets it."""

    flags: tuple[str, ...]  # as typed: ("-t", "--threads"); ("--pertarget/--nopertarget",)
    help: str
    panel: str
    given: object  # the value when the option is not given, as the CLI hands it over
    cli_type: object  # the type the CLI hands over: bool, int, str, int | None, ...
    metavar: str | None = None  # the placeholder in --help (typer's when None)
    shown: str | None = None  # the default as --help says it, where no plain value does
    parse: Parse | None = None  # the typed value -> the field's; its name for messages
    low: int | None = None  # the least value allowed (None: no bound)
    high: int | None = None  # the greatest, likewise
    unit: str | None = None  # what low..high count ("nines after 99"): said in the message
    json_key: str | None = None  # the key in the JSON document, when not the field's name
    # A table option (which rows the result table shows): `aiobench show` takes it too, to
    # add to a saved run's table, with this help.
    show_help: str | None = None
    argument: bool = False  # the positional PATH... argument, not an option
    secret: bool = False  # a credential: never in results, messages or the command recorded
    # An elbencho option aiobench only recognizes: given, it is refused (exit 2) with this,
    # how aiobench does that job (the compatibility table shows it too).
    recognized: str | None = None

    @property
    def name(self) -> str:
        """The raw value's name: the long flag's (``--nolive``: ``nolive``)."""
        return self.flags[-1].split("/")[0].lstrip("-")

    @property
    def label(self) -> str:
        """What messages call it: ``-t/--threads``."""
        if self.argument:
            return "PATH"
        return "/".join(flag.split("/")[0] for flag in self.flags)

    def value(self, raw: object) -> object:
        """The field's value of ``raw``; :class:`ConfigError` naming the option if not."""
        problem = self._out_of_bounds(raw)
        if problem is not None:
            raise ConfigError(f"{self.label}: {problem} (got {raw})")
        return raw if self.parse is None else self.parse(raw, self.label)

    def admits(self, value: object) -> bool:
        """Whether ``value`` (read back from a saved run) is one the option's typed value can
        be: of :attr:`cli_type` (a bool is no int here) and within the bounds. Meant for
        options without ``parse``, whose typed value is the field's."""
        allowed = get_args(self.cli_type) or (self.cli_type,)
        if isinstance(value, bool) and bool not in allowed:
            return False
        types = tuple(t for t in allowed if isinstance(t, type))
        return isinstance(value, types) and self._out_of_bounds(value) is None

    def _out_of_bounds(self, raw: object) -> str | None:
        """What is wrong with an integer ``raw`` against ``low``/``high``; None: nothing."""
        if not isinstance(raw, int) or isinstance(raw, bool):
            return None
        low, high = self.low, self.high
        below = low is not None and raw < low
        above = high is not None and raw > high
        if not (below or above):
            return None
        if self.unit is not None:
            return f"between {low} and {high} {self.unit}"
        if below:
            return "must not be negative" if low == 0 else f"must be at least {low}"
        return f"at most {high}"


def option(
    given: object,
    *flags: str,
    help: str,
    panel: str,
    cli_type: object = None,
    default: object = dataclasses.MISSING,
    **rest: Any,
) -> Any:
    """A :class:`BenchConfig` field declared as an option. Its default is ``given`` parsed,
    or ``default`` when parsing is not the same every time (the seed); ``cli_type`` is
    ``type(given)`` unless given."""
    opt = Opt(
        flags=flags,
        help=help,
        panel=panel,
        given=given,
        cli_type=type(given) if cli_type is None else cli_type,
        **rest,
    )
    if default is dataclasses.MISSING and not opt.argument:
        default = opt.value(given)
    return dataclasses.field(default=default, metadata={OPT: opt})


def declared(cls: type) -> list[tuple[str, Opt]]:
    """(field name, declaration) of every option of the dataclass ``cls``, in order."""
    return [(f.name, f.metadata[OPT]) for f in dataclasses.fields(cls) if OPT in f.metadata]


def table_options(cls: type) -> list[tuple[str, Opt]]:
    """(field name, declaration) of the table options of ``cls`` (those with a
    :attr:`Opt.show_help`), in order."""
    return [(name, opt) for name, opt in declared(cls) if opt.show_help is not None]


def parsed(cls: type, raw: Mapping[str, object]) -> dict[str, object]:
    """The field values of ``raw`` option values (by :attr:`Opt.name`; an option not in it
    is not given); raises :class:`ConfigError` for a bad one, in declaration order."""
    options = declared(cls)
    unknown = set(raw) - {opt.name for _, opt in options}
    if unknown:
        raise TypeError(f"not options: {', '.join(sorted(unknown))}")  # a programming error
    return {field: opt.value(raw.get(opt.name, opt.given)) for field, opt in options}


def size(text: str | None, name: str) -> int:
    """A size option (``4k``, ``1M``); not given: 0."""
    return 0 if text is None else parse_size(text, name)


def optional_size(text: str | None, name: str) -> int | None:
    """A size option that is off when not given; given, more than 0."""
    if text is None:
        return None
    value = parse_size(text, name)
    if value == 0:
        raise ConfigError(f"{name}: must be greater than 0")
    return value


def redacted(argv: Sequence[str], options: Sequence[Opt]) -> tuple[str, ...]:
    """``argv`` with the values of secret ``options`` replaced by :data:`SECRET` (as
    ``--opt VALUE`` and as ``--opt=VALUE``)."""
    flags = {flag for opt in options if opt.secret for flag in opt.flags}
    out: list[str] = []
    hide = False
    for arg in argv:
        name, eq, _ = arg.partition("=")
        if hide:
            out.append(SECRET)
        elif eq and name in flags:
            out.append(f"{name}={SECRET}")
        else:
            out.append(arg)
        hide = not hide and arg in flags
    return tuple(out)
