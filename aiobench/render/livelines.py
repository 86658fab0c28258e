"""elbencho's --live1n: the live progress as a new line on stderr at each update, on a
terminal or not (a log, a pipe), instead of one line redrawn in place."""

from __future__ import annotations

from typing import TextIO

from aiobench.render import stdio
from aiobench.render.live import progress_text
from aiobench.results.running import Progress


class NewLines:
    """The live line's text, one line per update, on ``stream``."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def start(self, phase: str) -> None:
        pass  # (the first update names the phase)

    def update(self, progress: Progress) -> None:
        # A failure (closed, full) is not the run's: the table's own write reports it.
        stdio.show(self._stream, progress_text(progress) + "\n")

    def stop(self) -> None:
        pass
