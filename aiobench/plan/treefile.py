"""elbencho's tree files (--treefile, --treescan): read, scan a directory into one, write it.

A tree file lists the entries of a custom tree relative to the benchmark dir, one a line:
``d PATH`` a directory, ``f SIZE PATH`` a file of SIZE bytes (a plain decimal number, as
elbencho reads it). Any other line is skipped (``#`` comments, blank lines). When a
``# encoding=base64`` line comes among the comment lines at the top, every PATH is base64
(elbencho's scans write them so, for names with newlines). A PATH that is absolute or
leaves the benchmark dir (``..``) is refused: the run never touches anything outside it.
"""

from __future__ import annotations

import base64
import binascii
import os
import stat
from dataclasses import dataclass

from aiobench.errors import ConfigError

DIR_PREFIX = "d"
FILE_PREFIX = "f"
COMMENT = "#"
BASE64_HEADER = "# encoding=base64"


@dataclass(frozen=True, slots=True)
class TreeSpec:
    """A custom tree: its dirs and its files with their sizes, names relative to PATH."""

    dirs: tuple[str, ...]
    files: tuple[tuple[str, int], ...]  # (name, size in bytes)


def clean_name(raw: str, where: str) -> str:
    """``raw`` as a name below the benchmark dir (``./a//b/`` is ``a/b``); an absolute
    name, a ``..`` or nothing at all is a usage error naming ``where``."""
    if raw.startswith("/"):
        raise ConfigError(f"{where}: {raw!r} is absolute; tree paths are relative to PATH")
    parts = [part for part in raw.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise ConfigError(f"{where}: {raw!r} leaves PATH (..); tree paths stay below it")
    if not parts:
        raise ConfigError(f"{where}: {raw!r} names PATH itself, not an entry below it")
    if any("\0" in part for part in parts):
        raise ConfigError(f"{where}: {raw!r} holds a NUL byte")
    return "/".join(parts)


def _uses_base64(lines: list[str]) -> bool:
    """Whether the header (the comment and blank lines at the top) says base64 names."""
    for line in lines:
        if line == BASE64_HEADER:
            return True
        if line and not line.startswith(COMMENT):
            return False
    return False


def parse_tree(text: str, source: str, round_up: int = 0) -> TreeSpec:
    """The tree in ``text`` (a tree file's content; ``source`` names it in errors); each
    file size rounded up to a multiple of ``round_up`` (--treeroundup; 0: as listed)."""
    lines = text.splitlines()
    encoded = _uses_base64(lines)
    dirs: dict[str, None] = {}
    files: dict[str, int] = {}
    for number, line in enumerate(lines, 1):
        where = f"--treefile: {source} line {number}"
        fields = line.split(None, 1)
        if not fields or fields[0] not in (DIR_PREFIX, FILE_PREFIX):
            continue  # as elbencho: lines of another kind are skipped
        rest = fields[1].strip() if len(fields) > 1 else ""
        size = 0
        if fields[0] == FILE_PREFIX:
            parts = rest.split(None, 1)
            size_text = parts[0] if parts else ""
            rest = parts[1].strip() if len(parts) > 1 else ""
            if not size_text.isdigit() or not size_text.isascii():
                raise ConfigError(
                    f"{where}: the size {size_text!r} is not a number of bytes "
                    "(f SIZE PATH, SIZE in plain bytes)"
                )
            size = int(size_text)
            if round_up and size % round_up:
                size += round_up - size % round_up
        if not rest:
            raise ConfigError(f"{where}: no path")
        if encoded:
            try:
                rest = base64.b64decode(rest, validate=True).decode("utf-8", "surrogateescape")
            except (binascii.Error, ValueError):
                raise ConfigError(f"{where}: {rest!r} is not base64 (# encoding=base64)") from None
        name = clean_name(rest, where)
        if name in dirs or name in files:
            raise ConfigError(f"{where}: {name!r} is listed twice")
        if fields[0] == DIR_PREFIX:
            dirs[name] = None
        else:
            files[name] = size
    return TreeSpec(tuple(dirs), tuple(files.items()))


def read_tree(path: str, round_up: int = 0) -> TreeSpec:
    """The tree of the tree file ``path`` (see :func:`parse_tree`)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise ConfigError(f"--treefile: {path}: {exc.strerror}") from None
    return parse_tree(data.decode("utf-8", "surrogateescape"), path, round_up)


def scan_tree(root: str) -> TreeSpec:
    """The dirs and regular files below ``root`` (--treescan), by walking it without
    following a symlink; symlinks and special files are left out, as elbencho does."""
    try:
        st = os.stat(root)
    except OSError as exc:
        raise ConfigError(f"--treescan: {root}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"--treescan: {root}: not a directory")
    dirs: list[str] = []
    files: list[tuple[str, int]] = []
    errors: list[OSError] = []
    for top, subdirs, names in os.walk(root, onerror=errors.append, followlinks=False):
        rel = os.path.relpath(top, root)
        prefix = "" if rel == "." else rel + "/"
        # os.walk lists a symlink to a dir among the dirs (without entering it): left out.
        subdirs[:] = sorted(d for d in subdirs if not os.path.islink(os.path.join(top, d)))
        dirs += [prefix + name for name in subdirs]
        for name in sorted(names):
            try:
                info = os.lstat(os.path.join(top, name))
            except OSError as exc:
                errors.append(exc)
                continue
            if stat.S_ISREG(info.st_mode):
                files.append((prefix + name, info.st_size))
    if errors:
        first = errors[0]
        raise ConfigError(f"--treescan: {first.filename}: {first.strerror}")
    return TreeSpec(tuple(dirs), tuple(files))


def tree_text(tree: TreeSpec) -> str:
    """A tree file of ``tree``, as elbencho's scans write them (base64 names)."""

    def encoded(name: str) -> str:
        return base64.b64encode(name.encode("utf-8", "surrogateescape")).decode("ascii")

    lines = [BASE64_HEADER]
    lines += [f"{DIR_PREFIX} {encoded(name)}" for name in tree.dirs]
    lines += [f"{FILE_PREFIX} {size} {encoded(name)}" for name, size in tree.files]
    return "\n".join(lines) + "\n"


def write_tree_file(path: str, tree: TreeSpec) -> None:
    """Write ``tree`` to ``path`` (replacing a regular file there); never through a symlink,
    never into anything but a regular file."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        raise ConfigError(f"--treefile: {path}: cannot write the scan: {exc.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError(f"--treefile: {path}: not a regular file; the scan is not written")
        os.ftruncate(fd, 0)
        data = tree_text(tree).encode("ascii")
        while data:
            data = data[os.write(fd, data) :]
    except OSError as exc:
        raise ConfigError(f"--treefile: {path}: cannot write the scan: {exc.strerror}") from None
    finally:
        os.close(fd)
