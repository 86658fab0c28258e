"""How an option is declared: once, as a field of :class:`~aiobench.config.BenchConfig`.

The field's metadata (:class:`Opt`) holds what the CLI needs (flags, help, placeholder,
panel, the value when the option is not given) and how the typed value becomes the field's
(``parse``), with the simple bounds of one option. :mod:`aiobench.cli` builds the command's
parameters from these declarations, :mod:`aiobench.helptext` lays out ``--help`` by their
panels, and :func:`aiobench.config.build_config` parses them; checks that involve more
than one option live in :func:`aiobench.config.validate`. Pure; imports nothing heavy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
PANEL_TITLES = (WORKLOAD, DIR_MODE, OBJECTS, OUTPUTS, SCALE_OUT, SAFETY)
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
    json_key: str | None = None  # the key in the JSON document, when not the field's name
    argument: bool = False  # the positional PATH... argument, not an option
    secret: bool = False  # a credential: never in results, messages or the command recorded

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
        if isinstance(raw, int) and not isinstance(raw, bool):
            if self.low is not None and raw < self.low:
                bound = "must not be negative" if self.low == 0 else f"must be at least {self.low}"
                raise ConfigError(f"{self.label}: {bound} (got {raw})")
            if self.high is not None and raw > self.high:
                raise ConfigError(f"{self.label}: at most {self.high} (got {raw})")
        return raw if self.parse is None else self.parse(raw, self.label)


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
