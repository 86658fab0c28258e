"""Where results go while a run goes on: the terminal, the live line and the appended files.

Result files (``--jsonfile``, ``--csvfile``, ``--resfile``, ``--livecsv``, ``--livejson``)
are only ever appended to, one complete record per write, and checked before anything is
measured. A write that fails at run time is reported once and makes the exit code 1; the
benchmark itself goes on.
"""

from __future__ import annotations

import datetime
import os
import shlex
from typing import Any, TextIO

from aiobench.config import BenchConfig
from aiobench.errors import ConfigError
from aiobench.phases import Observer
from aiobench.render.csv import (
    LIVE_HEADER,
    RESULT_HEADER,
    elbencho_date,
    line,
    live_row,
    result_row,
)
from aiobench.render.json import interval_record, phase_record
from aiobench.render.live import LiveLine
from aiobench.render.table import HEADER, phase_text, summary_text
from aiobench.results import IntervalStats, PhaseResult, Progress, RunResult

_CSV_FILES = (("--csvfile", RESULT_HEADER), ("--livecsv", LIVE_HEADER))


def check_output_files(cfg: BenchConfig) -> None:
    """Every result file can be written, and a CSV being appended to has our header."""
    headers = dict(_CSV_FILES)
    for option, path in cfg.output_files():
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise ConfigError(f"{option}: directory of {path} does not exist")
        if os.path.isdir(path):
            raise ConfigError(f"{option}: {path} is a directory")
        # --json is replaced atomically through a new file beside it; the others append.
        target = path if os.path.exists(path) and option != "--json" else directory
        if not os.access(target, os.W_OK):
            raise ConfigError(f"{option}: cannot write to {target}")
        if option in headers and os.path.exists(path) and os.path.getsize(path):
            with open(path, encoding="utf-8", errors="replace", newline="") as handle:
                first = handle.readline()
            if first != line(headers[option]):
                raise ConfigError(
                    f"{option}: {path} has a different header (another tool or version); "
                    "appending would mix columns, so give a new file"
                )


def silence(stream: TextIO) -> None:
    """Point a stream whose reader has gone at /dev/null, so later writes and the final
    flush at exit do not fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, stream.fileno())
    finally:
        os.close(devnull)


def _append(path: str, text: str) -> None:
    # One write per record in O_APPEND mode: never truncates, never interleaves records.
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            text = "\n" + text  # a last line without its newline must not swallow ours
        os.write(fd, text.encode("utf-8"))
    finally:
        os.close(fd)


def _is_empty(path: str) -> bool:
    return not os.path.exists(path) or os.path.getsize(path) == 0


class Outputs(Observer):
    """Fans a run's results out to the terminal, the live line and the result files."""

    def __init__(self, cfg: BenchConfig, meta: dict[str, Any], human: TextIO) -> None:
        self.cfg = cfg
        self.meta = meta
        self.human = human
        self.live = LiveLine(human) if cfg.live and human.isatty() else None
        self.shown: list[PhaseResult] = []
        self.errors: list[str] = []
        self._phase_start = datetime.datetime.now(datetime.timezone.utc)

    def _write(self, option: str, path: str | None, text: str) -> None:
        if path is None or any(e.startswith(f"{option}:") for e in self.errors):
            return
        try:
            _append(path, text)
        except OSError as exc:
            self.errors.append(f"{option}: {path}: {exc.strerror or exc}")

    def phase_started(self, name: str, start: datetime.datetime) -> None:
        self._phase_start = start
        if self.live is not None:
            self.live.start(name)

    def progress(self, progress: Progress) -> None:
        if self.live is not None:
            self.live.update(progress)

    def interval(self, phase: str, interval: IntervalStats) -> None:
        cfg = self.cfg
        moment = self._phase_start + datetime.timedelta(microseconds=interval.end_ns // 1000)
        if cfg.livecsv_path is not None:
            header = line(LIVE_HEADER) if _is_empty(cfg.livecsv_path) else ""
            self._write(
                "--livecsv",
                cfg.livecsv_path,
                header + line(live_row(cfg.label, phase, interval, moment)),
            )
        if cfg.livejson_path is not None:
            iso = moment.isoformat(timespec="milliseconds")
            self._write(
                "--livejson", cfg.livejson_path, interval_record(cfg.label, phase, interval, iso)
            )

    def phase_ended(self, name: str) -> None:
        if self.live is not None:
            self.live.stop()

    def _show(self, text: str) -> None:
        try:
            self.human.write(text)
            self.human.flush()
        except BrokenPipeError:
            # The reader went away (`| head`): the run and its result files go on.
            silence(self.human)

    def phase_done(self, phase: PhaseResult) -> None:
        """A phase's result: the table block on the terminal, a record in each result file."""
        cfg = self.cfg
        text = phase_text(phase, cfg.show_pertarget)
        # The header waits for the first result: a setup error must stay a single line.
        self._show(("" if self.shown else HEADER) + text)
        if cfg.resfile_path is not None:
            self._write(
                "--resfile", cfg.resfile_path, (self._res_header() if not self.shown else "") + text
            )
        if cfg.csvfile_path is not None:
            header = line(RESULT_HEADER) if _is_empty(cfg.csvfile_path) else ""
            self._write("--csvfile", cfg.csvfile_path, header + line(result_row(self.meta, phase)))
        if cfg.jsonfile_path is not None:
            self._write(
                "--jsonfile", cfg.jsonfile_path, phase_record(self.meta, phase, phase.start_time)
            )
        self.shown.append(phase)

    def run_done(self, result: RunResult) -> None:
        """After the last block: the ``-i`` summary, in the table and the ``--resfile``.

        ``--csvfile`` and ``--jsonfile`` keep one record per block; their readers have
        every iteration's figures (and the ``--json`` document has the summary).
        """
        text = summary_text(result.phases)
        if not text:
            return
        self._show(text)
        if self.cfg.resfile_path is not None:
            self._write("--resfile", self.cfg.resfile_path, text)

    def _res_header(self) -> str:
        """elbencho's resfile preamble: date, label, command line, then the table header."""
        start = datetime.datetime.fromisoformat(str(self.meta["start_time"]))
        out = f"ISO DATE: {elbencho_date(start)}\n"
        if self.cfg.label:
            out += f"LABEL: {self.cfg.label}\n"
        command = shlex.join(str(a) for a in self.meta.get("command", []))
        return out + f"COMMAND LINE: {command}\n\n" + HEADER
