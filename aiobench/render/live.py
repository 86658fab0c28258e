"""The live progress line on a terminal: phase, % done, rates, elapsed, ETA (rich).

Drawn in place and cleared when the phase ends, so the result table that follows stays
clean. Only used when the human output is a terminal and ``--nolive`` is not given. The
phase name is shown through :func:`~aiobench.text.printable`, as every name on a terminal.
"""

from __future__ import annotations

from typing import TextIO

from rich.console import Console
from rich.live import Live
from rich.text import Text

from aiobench.results.running import Progress
from aiobench.text import printable
from aiobench.units import MIB, format_elapsed


def progress_text(p: Progress) -> str:
    """``WRITE  37%  1234 MiB/s  5678 IOPS  elapsed 12.300s  ETA 21.040s``; pure."""
    parts = [printable(p.phase), f"{p.done_percent:>3}%"]
    if p.bytes_per_s or p.done_bytes:
        parts.append(f"{p.bytes_per_s // MIB} MiB/s")
    if p.dir_mode:
        parts.append(f"{p.entries_per_s} entries/s")
    if p.iops or not p.dir_mode:
        parts.append(f"{p.iops} IOPS")
    parts.append(f"elapsed {format_elapsed(p.elapsed_ns)}")
    parts.append("ETA " + ("?" if p.eta_ns is None else format_elapsed(p.eta_ns)))
    return "  ".join(parts)


class LiveLine:
    """One progress line redrawn in place on ``stream`` (a terminal)."""

    def __init__(self, stream: TextIO) -> None:
        self._console = Console(file=stream, highlight=False, markup=False, emoji=False)
        self._live: Live | None = None

    def start(self, phase: str) -> None:
        self._live = Live(
            Text(f"{printable(phase)}  starting"),
            console=self._console,
            auto_refresh=False,  # redrawn at --liveint by the caller; no refresh thread
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._live.start(refresh=True)

    def update(self, progress: Progress) -> None:
        if self._live is not None:
            self._live.update(Text(progress_text(progress)), refresh=True)

    def stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
