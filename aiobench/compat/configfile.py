"""elbencho's ``-c/--configfile``: ``OPTION=VALUE`` lines that become options of the command
line before it is parsed, and its ``--flag=false`` overrides; pure but for reading the file.

The format is elbencho's (boost::program_options' config files): a ``#`` starts a comment,
blanks around names and values do not count, every option is named by its long name
without ``--``, each at most once. A flag takes true/yes/on/1 (also an empty value) or
false/no/off/0, in any case. What the command line gives wins over the file; on the command
line ``--flag=false`` (or 0, no, off) leaves a flag off whatever the file says, and
``--flag=true`` is ``--flag``, as in elbencho.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from typing import Any, NamedTuple

from aiobench.errors import ConfigError
from aiobench.text import printable

OPTION = "-c/--configfile"
FLAGS = ("-c", "--configfile")
# A config file holds a few hundred bytes; anything this large is some other file (and a
# device such as /dev/zero would never end).
MAX_BYTES = 1 << 20
TRUE = ("", "1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")


class Entry(NamedTuple):
    """One ``name=value`` line of a config file."""

    line: int
    name: str
    value: str


def read_entries(path: str) -> list[Entry]:
    """The ``name=value`` lines of the config file ``path``; :class:`ConfigError` naming
    the file (and line) when it cannot be read or a line is no option setting."""
    shown = printable(path)
    try:
        # (without blocking: a FIFO with no writer would wait forever)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise ConfigError(f"{OPTION}: {shown}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ConfigError(f"{OPTION}: {shown}: not a regular file")
    with os.fdopen(fd, "rb") as f:
        try:
            data = f.read(MAX_BYTES + 1)
        except OSError as exc:
            raise ConfigError(f"{OPTION}: {shown}: {exc.strerror or exc}") from None
    if len(data) > MAX_BYTES:
        raise ConfigError(f"{OPTION}: {shown}: larger than {MAX_BYTES} bytes; not a config file")
    try:
        text = data.decode()
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{OPTION}: {shown}: not UTF-8 text (byte {exc.start})") from None
    entries: list[Entry] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        where = f"{OPTION}: {shown} line {number}"
        content = raw.split("#", 1)[0].strip()
        if not content:
            continue
        name, eq, value = content.partition("=")
        name = name.strip()
        if not eq or not name:
            raise ConfigError(f"{where}: want OPTION=VALUE (got {printable(content)!r})")
        if name.startswith("-"):
            raise ConfigError(f"{where}: name the option without dashes ({name.lstrip('-')}=...)")
        if name in seen:
            raise ConfigError(f"{where}: {name} is set twice (also on line {seen[name]})")
        seen[name] = number
        entries.append(Entry(number, name, value.strip()))
    return entries


def _truth(value: str) -> bool | None:
    """A flag's value in elbencho's forms; None: none of them."""
    low = value.lower()
    return True if low in TRUE else False if low in FALSE else None


def _long_flags(command: Any) -> dict[str, tuple[Any, bool]]:
    """The command's options by long flag (``--direct``): (the click parameter, whether the
    flag is its secondary one, ``--nopertarget``)."""
    out: dict[str, tuple[Any, bool]] = {}
    for param in command.params:
        if param.param_type_name != "option":
            continue
        for flag in param.opts:
            if flag.startswith("--"):
                out[flag] = (param, False)
        for flag in param.secondary_opts:
            out[flag] = (param, True)
    return out


def _is_flag(param: Any) -> bool:
    return bool(getattr(param, "is_flag", False))


def _given(command: Any, args: Sequence[str]) -> tuple[dict[str, object], set[str]]:
    """The options the command line gives (parameter name -> value), parsed only as far as
    click's parser goes (no values checked, no callbacks); an unparsable line: none."""
    settings = {**command.context_settings, "resilient_parsing": True}
    ctx = command.context_class(command, info_name="aiobench", **settings)
    try:
        opts, _, _ = command.make_parser(ctx).parse_args(args=list(args))
    except Exception:  # (the real parse reports it)
        return {}, set()
    return dict(opts), set(opts)


def expanded(command: Any, args: Sequence[str]) -> list[str]:
    """``args`` with elbencho's ``--flag=false``/``--flag=true`` forms turned into what
    click takes, and the options of the ``-c/--configfile`` file (if one is given) put in
    front of those the command line gives, for every option the command line does not
    give. :class:`ConfigError` for a bad file, naming it and the line."""
    flags = _long_flags(command)
    out: list[str] = []
    disabled: set[str] = set()  # parameter names a --flag=false turned off
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--":  # PATHs only from here on
            out += [arg, *rest]
            break
        name, eq, value = arg.partition("=")
        param_flag = flags.get(name) if eq and name.startswith("--") else None
        if param_flag is not None and _is_flag(param_flag[0]) and not param_flag[1]:
            truth = _truth(value)
            if truth is None:
                raise ConfigError(f"{name}: want true or false, 1 or 0 (got {value!r})")
            param = param_flag[0]
            if truth:
                out.append(name)
            elif param.secondary_opts:  # --pertarget=false: --nopertarget
                out.append(param.secondary_opts[0])
            else:
                disabled.add(param.name)
            continue
        out.append(arg)
    if not any(_may_give_configfile(arg) for arg in out):
        return out  # (no parse needed: the usual case, ~1 ms of every start)
    given, names = _given(command, out)
    path = given.get("configfile")
    if not isinstance(path, str):
        return out
    return _from_file(path, flags, names | disabled) + _without_configfile(out)


def _may_give_configfile(arg: str) -> bool:
    """Whether the command-line word ``arg`` may give -c/--configfile: it starts with
    --configfile, or it is a cluster of short options with a c in it (``-c``, ``-wc``,
    ``-cFILE``). Only such a word can; which one does, the parse decides."""
    return arg.startswith(FLAGS[1]) or (arg[:1] == "-" and arg[1:2] != "-" and "c" in arg)


def _without_configfile(args: list[str]) -> list[str]:
    """``args`` less their ``-c FILE`` (``-cFILE``, ``--configfile[=]FILE``): its
    options are in the words now, and an MPI rank on another host need not have the file."""
    out: list[str] = []
    words = iter(args)
    for arg in words:
        if arg == "--":
            out += [arg, *words]
            break
        if arg in FLAGS:
            next(words, None)
        elif not arg.startswith(("--configfile=", "-c")):
            out.append(arg)
    return out


def _from_file(path: str, flags: dict[str, tuple[Any, bool]], given: set[str]) -> list[str]:
    """The command-line words of the config file ``path``'s options, leaving out those of
    parameters in ``given``."""
    words: list[str] = []
    set_by: dict[str, int] = {}  # parameter name -> the line that set it
    for entry in read_entries(path):
        where = f"{OPTION}: {printable(path)} line {entry.line}"
        found = flags.get(f"--{entry.name}")
        if found is None:
            raise ConfigError(f"{where}: no such option --{printable(entry.name)}")
        param, secondary = found
        if param.name == "configfile":
            raise ConfigError(f"{where}: a config file cannot name another")
        if param.name in set_by:
            raise ConfigError(
                f"{where}: --{entry.name} sets what line {set_by[param.name]} set already"
            )
        set_by[param.name] = entry.line
        if param.name in given:
            continue  # the command line wins
        if not _is_flag(param):
            words.append(f"--{entry.name}={entry.value}")
            continue
        truth = _truth(entry.value)
        if truth is None:
            raise ConfigError(
                f"{where}: --{entry.name} wants true or false, 1 or 0 "
                f"(got {printable(entry.value)!r})"
            )
        on = truth != secondary  # pertarget=false is --nopertarget
        if param.secondary_opts:
            words.append(param.opts[-1] if on else param.secondary_opts[0])
        elif on:
            words.append(f"--{entry.name}")
    return words
