"""Where results go while a run goes on: the terminal, the live line and the result files.

Result files (``--jsonfile``, ``--csvfile``, ``--resfile``, ``--livecsv``, ``--livejson``)
are only ever appended to, one whole record per write, and checked before anything is
measured; ``--json`` is written once at the end. Where each goes, and how it is written,
is :mod:`aiobench.render.outfiles`' business. A write that fails at run time is reported once
(``Error: OPTION: PATH: ...``) and makes the exit code 1; the benchmark itself goes on and
later records to that file are skipped.
"""

from __future__ import annotations

import datetime
import os
import shlex
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from aiobench.config import BenchConfig
from aiobench.errors import ConfigError
from aiobench.render import outfiles, stdio
from aiobench.render.csv import (
    LIVE_HEADER,
    PREVIOUS_RESULT_HEADER,
    RESULT_HEADER,
    elbencho_date,
    line,
    live_row,
    result_row,
)
from aiobench.render.netbench import servers_text
from aiobench.render.outfiles import NEW, REGULAR, STREAM, Place, reason
from aiobench.results.events import Observer
from aiobench.text import printable

# Only a run that uses them loads these: the live line (rich) on a terminal, and the JSON
# records of --jsonfile and --livejson (a run's start: scripts/bench --section startup).
# The table and the result's classes load with the first phase's result.
if TYPE_CHECKING:
    from aiobench.render.live import LiveLine
    from aiobench.render.livelines import NewLines
    from aiobench.render.table import TableOptions
    from aiobench.results.model import PhaseResult
    from aiobench.results.running import IntervalStats, Progress
    from aiobench.results.runresult import RunResult

_CSV_FILES = (("--csvfile", RESULT_HEADER), ("--livecsv", LIVE_HEADER))


def checked_place(option: str, path: str) -> Place:
    """Where ``option``'s file ``path`` leads, if a result can be written there: a stream
    open for writing, or a file (new ones in an existing dir); otherwise a usage error
    naming the option and the file."""
    shown = printable(path)
    place = outfiles.located(option, path)
    if place.kind == STREAM:
        assert place.fd is not None
        if stdio.failure(place.fd) is not None or not outfiles.writable_stream(place.fd):
            raise ConfigError(f"{option}: {shown}: descriptor {place.fd} is not open for writing")
    elif place.kind == NEW and not os.path.isdir(os.path.dirname(place.real)):
        raise ConfigError(f"{option}: directory of {shown} does not exist")
    return place


def opened_in_place(option: str, path: str, place: Place) -> int:
    """A descriptor to write ``option``'s file at a place that is not a regular file, opened
    before anything runs. A FIFO that no one reads is a usage error: waiting for a reader
    could last forever, and writing would have no one to go to."""
    try:
        return outfiles.open_in_place(place)
    except OSError as exc:
        if outfiles.no_reader(place, exc):
            raise ConfigError(
                f"{option}: {printable(path)}: a FIFO with no reader (start the reader first)"
            ) from None
        raise


def check_output_files(cfg: BenchConfig) -> None:
    """Every result file can be written where it leads, and a CSV that is appended to
    has our header (not read with ``--dryrun``, which opens nothing); otherwise a usage
    error naming the option and the file."""
    headers = dict(_CSV_FILES)
    for option, path in cfg.output_files():
        shown = printable(path)
        place = checked_place(option, path)
        if place.kind == STREAM:
            continue
        directory = os.path.dirname(place.real)
        # --json replaces a file through a new one beside it; the others append.
        target = directory if place.kind == NEW or option == "--json" else place.real
        if not os.access(target, os.W_OK):
            raise ConfigError(f"{option}: cannot write to {printable(target)}")
        appended = place.kind == REGULAR and os.path.getsize(place.real)
        # (--nocsvlabels: a --csvfile without a header row is appended to as it is.)
        labels = option in headers and not (option == "--csvfile" and cfg.nocsvlabels)
        if labels and appended and not cfg.dryrun:
            _check_header(option, shown, place.real, headers[option])


def _check_header(option: str, shown: str, real: str, header: list[str]) -> None:
    with open(real, encoding="utf-8", errors="replace", newline="") as handle:
        first = handle.readline()
    if first == line(header):
        return
    if option == "--csvfile" and first == line(PREVIOUS_RESULT_HEADER):
        raise ConfigError(
            f"{option}: {shown} was written by an earlier aiobench, without the status and "
            "error columns; appending would mix columns, so give a new file"
        )
    raise ConfigError(
        f"{option}: {shown} has a different header (another tool or version); "
        "appending would mix columns, so give a new file"
    )


def status_row(phase: PhaseResult) -> str:
    """The ``--resfile`` row that marks a phase that did not complete: '' for one that did."""
    if phase.status == "ok":
        return ""
    text = phase.status
    if phase.error is not None:
        text += f": {phase.error.get('message', '')}"
    return f"{'':<11} {'Status':<17}: {printable(text)}\n"


class Outputs(Observer):
    """Fans a run's results out to the terminal, the live line and the result files.

    Files written in place (a FIFO, a device, ``/dev/stdout``) are opened here, before the
    run: a FIFO without a reader is a usage error now rather than a wait in the middle of a
    phase. Regular files are opened for each record, as the records come.
    """

    def __init__(
        self, cfg: BenchConfig, meta: dict[str, Any], human: TextIO, notes: Sequence[str] = ()
    ) -> None:
        self.cfg = cfg
        self.notes = list(notes)  # said on stderr once setup is done
        self.meta = meta
        self.human = human
        self.table: TableOptions | None = None  # (with the first phase's result)
        self.live: LiveLine | NewLines | None = None
        if cfg.live and cfg.live1n:  # (elbencho's --live1n: a line per update, on stderr)
            from aiobench.render.livelines import NewLines

            self.live = NewLines(sys.stderr)
        elif cfg.live and human.isatty():
            from aiobench.render.live import LiveLine

            self.live = LiveLine(human)
        if cfg.jsonfile_path is not None:
            import aiobench.render.elbencho_json
        if cfg.livejson_path is not None:
            import aiobench.render.json
        if cfg.livecsvex:  # (its rows go out while the phase is timed: loaded before it)
            import aiobench.render.livecsvex  # noqa: F401
        self.shown: list[PhaseResult] = []
        self.errors: list[str] = []
        self._phase_start = datetime.datetime.now(datetime.UTC)
        self._paths = dict(cfg.output_files())
        self._places: dict[str, Place] = {}
        self._in_place: dict[str, int] = {}  # option -> descriptor kept for the run
        self._headed: set[str] = set()  # in-place CSVs whose header went out
        # --livecsv -/stdout, --livejson -/stdout: records on stdout (the table on stderr).
        self._stdout = {
            option
            for option, path in (("--livecsv", cfg.livecsv_path), ("--livejson", cfg.livejson_path))
            if path == "-"
        }
        try:
            for option, path in self._paths.items():
                self._open(option, path)
        except BaseException:
            self.close()
            raise

    def _open(self, option: str, path: str) -> None:
        try:
            place = outfiles.locate(path)
            if place.kind not in (REGULAR, NEW):
                self._in_place[option] = opened_in_place(option, path, place)
        except OSError as exc:
            self._failed(option, exc)
            return
        self._places[option] = place

    def _failed(self, option: str, exc: OSError) -> None:
        self.errors.append(f"{option}: {printable(self._paths[option])}: {reason(exc)}")

    def _write(self, option: str, text: str, header: list[str] | None = None) -> None:
        """Append a record to a result file; the first failure is reported, later records
        to that file are skipped."""
        if option in self._stdout:
            self._write_stdout(option, text, header)
            return
        place = self._places.get(option)
        if place is None or any(e.startswith(f"{option}:") for e in self.errors):
            return
        try:
            fd = self._in_place.get(option)
            if fd is None:
                fd = outfiles.open_append(place.real)
                try:
                    outfiles.append_record(fd, text, line(header) if header else "")
                finally:
                    os.close(fd)
                return
            if header and option not in self._headed:
                text = line(header) + text  # a FIFO's or device's size says nothing
            self._headed.add(option)
            if place.kind == STREAM:
                _flush_python_streams()
            outfiles.write_all(fd, text.encode("utf-8"))
        except OSError as exc:
            self._failed(option, exc)

    def _write_stdout(self, option: str, text: str, header: list[str] | None) -> None:
        """A record on stdout, after the CSV header once; a reader that went away
        (``| head``) is not an error, any other failure is reported once."""
        failed_before = f"{option} -:"
        if any(e.startswith(failed_before) for e in self.errors):
            return
        if header and option not in self._headed:
            text = line(header) + text
        self._headed.add(option)
        failed = stdio.show(sys.stdout, text)
        if failed is not None and not isinstance(failed, BrokenPipeError):
            self.errors.append(f"{option} -: stdout: {reason(failed)}")

    def write_document(self, text: str) -> None:
        """The ``--json`` document: replaces a regular file, is written into anything
        else, and goes to stdout for ``-``."""
        if self.cfg.json_path == "-":
            failed = stdio.show(sys.stdout, text) or stdio.failure(1)
            if failed is not None:
                self.errors.append(f"--json -: stdout: {reason(failed)}")
            return
        place = self._places.get("--json")
        if place is None:
            return  # it could not be opened; that is reported already
        try:
            fd = self._in_place.get("--json")
            if fd is None:
                outfiles.replace_file(place, text)
                return
            if place.kind == STREAM:
                _flush_python_streams()
            outfiles.write_all(fd, text.encode("utf-8"))
        except OSError as exc:
            self._failed("--json", exc)

    def close(self) -> None:
        for option, fd in self._in_place.items():
            self._close(option, fd)
        self._in_place.clear()

    def _close(self, option: str, fd: int) -> None:
        try:
            os.close(fd)
        except OSError as exc:  # a device that reports its error only now
            self._failed(option, exc)

    def table_failure(self) -> OSError | None:
        """Why the table could not be written to stdout (a reader that went away is not an
        error: ``aiobench ... | head``)."""
        if self.human is not sys.stdout:
            return None  # stderr (with --json -) is for people: nothing to report it on
        failed = stdio.failure(1)
        return None if isinstance(failed, BrokenPipeError) else failed

    def ready(self) -> None:
        for note in self.notes:
            print(f"Note: {printable(note)}.", file=sys.stderr)

    def phase_started(self, name: str, start: datetime.datetime) -> None:
        self._phase_start = start
        if self.live is not None:
            self.live.start(name)

    def progress(self, progress: Progress) -> None:
        if self.live is not None:
            self.live.update(progress)
        if progress.threads and self.cfg.livecsv_path is not None:  # (--livecsvex)
            from aiobench.render.livecsvex import thread_rows

            moment = self._phase_start + datetime.timedelta(
                microseconds=progress.elapsed_ns // 1000
            )
            self._write("--livecsv", thread_rows(self.cfg.label, progress, moment), LIVE_HEADER)

    def interval(self, phase: str, interval: IntervalStats) -> None:
        cfg = self.cfg
        moment = self._phase_start + datetime.timedelta(microseconds=interval.end_ns // 1000)
        if cfg.livecsv_path is not None:
            row = line(live_row(cfg.label, phase, interval, moment))
            self._write("--livecsv", row, LIVE_HEADER)
        if cfg.livejson_path is not None:
            from aiobench.render.json import interval_record

            iso = moment.isoformat(timespec="milliseconds")
            self._write("--livejson", interval_record(cfg.label, phase, interval, iso))

    def phase_ended(self, name: str) -> None:
        if self.live is not None:
            self.live.stop()

    def _show(self, text: str) -> None:
        # A failure (closed, full, the reader gone) is kept for the end; the run goes on.
        stdio.show(self.human, text)

    def phase_done(self, phase: PhaseResult) -> None:
        """A phase's result: the table block on the terminal, a record in each result file."""
        from aiobench.render.table import HEADER, SEPARATOR, TableOptions, phase_text

        cfg = self.cfg
        if self.table is None:
            self.table = TableOptions.from_config(cfg.to_dict())
        text = phase_text(phase, self.table)
        # The header waits for the first result: a setup error must stay a single line.
        self._show(("" if self.shown else HEADER) + text)
        if cfg.resfile_path is not None:
            # The block marks a phase that failed or stopped early, before its separator.
            block = text.replace(SEPARATOR, status_row(phase) + SEPARATOR, 1)
            self._write("--resfile", (self._res_header() if not self.shown else "") + block)
        if cfg.csvfile_path is not None:
            labels = None if cfg.nocsvlabels else RESULT_HEADER
            self._write("--csvfile", line(result_row(self.meta, phase)), labels)
        if cfg.jsonfile_path is not None:
            from aiobench.render.elbencho_json import elbencho_record

            self._write("--jsonfile", elbencho_record(self.meta, phase))
        self.shown.append(phase)

    def run_done(self, result: RunResult) -> None:
        """After the last block: the ``-i`` summary, in the table and the ``--resfile``.

        ``--csvfile`` and ``--jsonfile`` keep one record per block; their readers have
        every iteration's figures (and the ``--json`` document has the summary).
        """
        from aiobench.render.table import summary_text

        text = summary_text(result.phases) + servers_text(result.meta)
        if not text:
            return
        self._show(text)
        if self.cfg.resfile_path is not None:
            self._write("--resfile", text)

    def _res_header(self) -> str:
        """elbencho's resfile preamble: date, label, command line, then the table header."""
        from aiobench.render.table import HEADER

        start = datetime.datetime.fromisoformat(str(self.meta["start_time"]))
        out = f"ISO DATE: {elbencho_date(start)}\n"
        if self.cfg.label:
            out += f"LABEL: {self.cfg.label}\n"
        command = shlex.join(str(a) for a in self.meta.get("command", []))
        return out + f"COMMAND LINE: {command}\n\n" + HEADER


def _flush_python_streams() -> None:
    """What Python holds for stdout and stderr goes out before a write to their fds."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stdio.show(stream, "")
