"""``--docs``: the report's sections written into docs/benchmarks.md.

The printed report is a run of ``## `` sections. In the docs file each is a ``### ``
section (under ``## Against fio``): a report section replaces the docs section with the
same heading, every other part of the file stays as it is, and a section the file does not
have yet is added at its end. Headings inside fenced code blocks (the reports' commands
start with ``# ``) are text, not headings.
"""

from __future__ import annotations

import os
import re
import tempfile

# A Markdown heading: its level (the number of #) and its text.
HEADING = re.compile(r"(#{1,6}) +(.*?)\s*$")


def _blocks(text: str, level: int) -> list[tuple[str | None, list[str]]]:
    """``text`` cut before every heading of ``level`` or above (fewer #) outside code
    fences: (the heading's text if it is of ``level`` exactly, else None; the lines)."""
    blocks: list[tuple[str | None, list[str]]] = [(None, [])]
    fenced = False
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        match = None if fenced else HEADING.match(line)
        if match and len(match.group(1)) <= level:
            title = match.group(2) if len(match.group(1)) == level else None
            blocks.append((title, []))
        blocks[-1][1].append(line)
    return blocks


def update_docs(doc: str, report: str) -> str:
    """``doc`` (the docs file's text) with the ``## `` sections of ``report`` (the printed
    Markdown report) as its ``### `` sections: each replaces the first ``### `` section of
    the same heading, or is added at the end."""
    new: dict[str, str] = {}
    for title, lines in _blocks(report, 2):
        if title is not None:
            body = "".join(lines[1:]).strip("\n")
            new[title] = f"### {title}\n\n{body}\n\n" if body else f"### {title}\n\n"
    parts = []
    for title, lines in _blocks(doc, 3):
        block = "".join(lines)
        if title is not None and title in new:
            block = new.pop(title)
        parts.append(block)
    text = "".join(parts).rstrip("\n")
    rest = "".join(new.values()).rstrip("\n")
    text = f"{text}\n\n{rest}" if text and rest else text or rest
    return text + "\n" if text else ""


def write_docs(path: str, report: str) -> None:
    """Merge ``report`` into the file at ``path`` (see :func:`update_docs`; a missing file
    is started empty), replacing it whole: a reader never sees half a file."""
    try:
        with open(path, encoding="utf-8") as handle:
            doc = handle.read()
    except FileNotFoundError:
        doc = ""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".bench-docs-", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(update_docs(doc, report))
        os.chmod(tmp, os.stat(path).st_mode & 0o7777 if os.path.exists(path) else 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
