"""Runs a check: calibration, the metadata test and the file tests, each one in-process
run of the phase runner in the check's own directory; cleanup on every way out.

Each test is a :func:`~aiobench.run.runner.run_benchmark` of a config built as the CLI builds
one (so every run inside the check's JSON is an ordinary result document, its
``meta.command`` the equivalent aiobench command line), with a time limit finer than
``--timelimit`` takes (``BenchConfig.timelimit_ns``). A signal stops the test in
progress as it stops any run (results so far), then the check: its directory is removed
whatever happened, and the rows measured until then are reported.
"""

from __future__ import annotations

import dataclasses
import datetime
import platform
import secrets
import socket
import statistics
import time
from collections.abc import Callable

from aiobench import __version__
from aiobench.check import plan
from aiobench.check.device import loops_under, rotational
from aiobench.check.judge import judge
from aiobench.check.model import CheckResult, Finding, row_of
from aiobench.check.plan import Calibration, CheckTest
from aiobench.check.workdir import METADATA_DIR, WorkDir, check_dir, free_bytes
from aiobench.config import BenchConfig, build_config, checked_engine
from aiobench.engines import registry
from aiobench.errors import BenchIOError, ConfigError
from aiobench.plan.memory import available_memory, check_memory
from aiobench.plan.targets import filesystem_type
from aiobench.results.model import PhaseResult
from aiobench.results.runresult import RunResult
from aiobench.run import interrupts
from aiobench.run.runner import event_loop_name, run_benchmark, run_meta
from aiobench.text import printable
from aiobench.units import MIB, NS_PER_S

Clock = Callable[[], int]
LABEL = "aiobench check"


class _Stopped(Exception):
    """A run ended by a signal or an I/O error: the check goes no further."""


class _RunRefused(Exception):
    """A run of the check refused to start although its entry was the check's own: DIR
    changed under the check (what the refusal says)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "offset": None,
            "errno": 0,
            "errno_name": "",
            "message": str(self),
        }


@dataclasses.dataclass(slots=True)
class _Check:
    dir: str
    budget_ns: int
    seed: int
    work: WorkDir
    result: CheckResult
    clock: Clock
    start_ns: int
    direct: bool = False
    runs: int = 0
    overheads: list[int] = dataclasses.field(default_factory=list)  # per run so far
    progress: Callable[[str], None] = lambda step: None  # what the check does now
    after: BenchIOError | None = None  # the last run's entry was not the check's own after it

    def overhead_ns(self) -> int:
        """What the next run costs besides its timed phases: the median of the runs so
        far (the first runs also pay for warming up, one slow run should not count)."""
        return int(statistics.median(self.overheads)) if self.overheads else 0

    @property
    def deadline_ns(self) -> int:
        return self.start_ns + self.budget_ns

    def config(
        self,
        path: str,
        *,
        argv: list[str],
        limit_ns: int,
        **options: object,
    ) -> BenchConfig:
        args: dict[str, object] = dict(
            paths=[path],
            write=False,
            read=False,
            threads=1,
            block="1m",
            size=None,
            iodepth=1,
            direct=False,
            rand=False,
            randamount=None,
            norandalign=False,
            timelimit=0,
            label=LABEL,
            nolive=True,
            seed=(self.seed + self.runs) % 2**63,
            force=False,
            argv=("aiobench", *argv, path),
        )
        args.update(options)
        cfg = build_config(**args)  # type: ignore[arg-type]
        return dataclasses.replace(cfg, timelimit_ns=limit_ns)

    def run(self, cfg: BenchConfig, own: str, size: int = 0) -> tuple[RunResult, int]:
        """One run of the phase runner on the check's entry ``own`` (at least ``size``
        bytes long); (its result, its wall time in ns). The caller keeps it (:meth:`keep`),
        which stops the check when a signal or error ended it, or ``own`` was not the
        check's own before or after it (:class:`BenchIOError`, raised here before it)."""
        interrupts.resume()  # the previous run settled its signals; this one counts them
        interrupts.check()
        began = self.clock()
        self.work.verify(own, size)
        engine = registry.make(cfg.ioengine)
        try:
            resolved = engine.resolve(cfg)
            # The engine opens only what its probe saw: that must be the check's own.
            if resolved.idents != (self.work.ident(own),):
                self.work.verify(own, size)  # (names what is there instead)
                raise ConfigError(f"{cfg.paths[0]}: not the check's own entry; not opened")
            check_memory(cfg, resolved, cfg.threads)
            meta = run_meta(cfg, resolved, event_loop_name())
            run = run_benchmark(cfg, resolved, engine, meta=meta)
        except ConfigError as exc:  # a run the check set up right, refused: DIR changed
            self.work.verify(own, size)
            raise _RunRefused(cfg.paths[0], str(exc)) from None
        self.runs += 1
        self.overheads.append(_overhead(run, self.clock() - began))
        if cfg.ioengine_fallback and registry.FALLBACK_NOTE not in self.notes:
            self.notes.append(registry.FALLBACK_NOTE)
        if run.error is None and not run.interrupted:
            try:
                self.work.verify(own)
            except BenchIOError as exc:
                self.after = exc  # (the run is kept first: it measured the check's own)
        return run, self.clock() - began

    @property
    def notes(self) -> list[str]:
        notes = self.result.meta["notes"]
        assert isinstance(notes, list)
        return notes

    def keep(self, run: RunResult, rows: list[tuple[CheckTest, int, PhaseResult]]) -> None:
        """Keep a run and the rows taken from its phases; raises :class:`_Stopped` when
        a signal or an I/O error ended it (its rows so far are kept, marked so)."""
        index = len(self.result.runs)
        self.result.runs.append(run)
        self.result.rows += [row_of(test, index, i, phase) for test, i, phase in rows]
        if run.error is not None:
            self.result.error = run.error
        if self.after is not None:
            self.result.error = self.after.to_dict()
        if run.interrupted or self.result.error is not None:
            raise _Stopped


def _overhead(run: RunResult, wall_ns: int) -> int:
    return max(0, wall_ns - sum(p.last_done.elapsed_ns for p in run.phases))


def _direct(on: bool) -> list[str]:
    return ["--direct"] if on else []


def _calibrate(c: _Check) -> Calibration:
    """A small metadata run and a 16 MiB sequential write: the rates the plan needs."""
    c.progress("calibrating")
    meta_dir = c.work.metadata_dir()
    c.work.metadata_files = max(c.work.metadata_files, plan.CALIBRATION_FILES)
    files = str(plan.CALIBRATION_FILES)
    md_cfg = c.config(
        meta_dir,
        argv=["-w", "-F", "-n", "0", "-N", files],
        limit_ns=c.budget_ns // 4,
        write=True,
        delfiles=True,
        dirs=0,
        files=plan.CALIBRATION_FILES,
        size="0",
    )
    md, md_wall = c.run(md_cfg, METADATA_DIR)
    c.keep(md, [])
    by_name = {p.name: p for p in md.phases}
    size = plan.CALIBRATION_FILE_BYTES
    seq_cfg = c.config(
        c.work.make_file("cal.dat"),
        argv=["-w", "-b", "1M", "--iodepth", "8", *_direct(c.direct), "-s", f"{size // MIB}m"],
        limit_ns=c.budget_ns // 4,
        write=True,
        size=str(size),
        iodepth=8,
        direct=c.direct,
    )
    seq, seq_wall = c.run(seq_cfg, "cal.dat")
    c.keep(seq, [])
    c.work.remove_file("cal.dat")
    return Calibration(
        write_bytes_per_s=max(seq.phases[0].last_done.bytes_per_s, MIB),
        create_entries_per_s=max(by_name["WRITE"].last_done.entries_per_s, 1),
        delete_entries_per_s=max(by_name["RMFILES"].last_done.entries_per_s, 1),
        run_overhead_ns=(_overhead(md, md_wall) + _overhead(seq, seq_wall)) // 2,
    )


def _metadata(c: _Check, cal: Calibration) -> None:
    c.progress("META create, stat, delete")
    files = plan.metadata_files(cal, c.budget_ns)
    c.work.metadata_files = max(c.work.metadata_files, files)
    c.result.meta["metadata_files"] = files
    per_phase_ns = int(c.budget_ns * plan.METADATA_SHARE / 3)
    cfg = c.config(
        c.work.metadata_dir(),
        argv=["-w", "--stat", "-F", "-n", "0", "-N", str(files)],
        limit_ns=plan.metadata_limit_ns(c.budget_ns),
        write=True,
        stat=True,
        delfiles=True,
        dirs=0,
        files=files,
        size="0",
        liveint=plan.live_interval_ms(per_phase_ns),
    )
    run, _ = c.run(cfg, METADATA_DIR)
    rows = [
        (CheckTest(name=plan.META, op=plan.METADATA_PHASES[p.name]), i, p)
        for i, p in enumerate(run.phases)
        if p.name in plan.METADATA_PHASES
    ]
    c.keep(run, rows)


def _file_tests(c: _Check, cal: Calibration, free: int, fstype: str) -> None:
    path = c.work.make_file("test.dat")
    size = 0
    steps: list[CheckTest | None] = [None, *plan.FILE_TESTS]  # None: the fill
    for done, step in enumerate(steps):
        remaining = c.deadline_ns - plan.cleanup_reserve_ns(c.budget_ns) - c.clock()
        limit = plan.slot_ns(remaining, len(steps) - done, c.overhead_ns())
        test = plan.FILL if step is None else step
        if step is None:
            sized = plan.file_size(
                write_bytes_per_s=cal.write_bytes_per_s,
                fill_ns=limit,
                budget_ns=c.budget_ns,
                free_bytes=free,
                direct=c.direct,
                fstype=fstype,
                memory_bytes=available_memory(),
            )
            size = sized.bytes
            c.notes.extend(sized.notes)
            limit = plan.fill_guard_ns(limit, size, cal.write_bytes_per_s)
        block = "1M" if test.block_bytes == MIB else "4k"
        argv = ["-w" if test.op == "write" else "-r", "-b", block]
        argv += ["--iodepth", str(test.iodepth), *_direct(c.direct)]
        argv += [*(["--rand"] if test.rand else []), *([] if step is None else ["--infloop"])]
        argv += ["-s", f"{size // MIB}m"]
        cfg = c.config(
            path,
            argv=argv,
            limit_ns=limit,
            write=test.op == "write",
            read=test.op == "read",
            block=str(test.block_bytes),
            size=str(size),
            iodepth=test.iodepth,
            direct=c.direct,
            rand=test.rand,
            infloop=step is not None,
            liveint=plan.live_interval_ms(limit),
        )
        c.progress("writing the test file" if step is None else test.label)
        run, _ = c.run(cfg, "test.dat", 0 if step is None else size)
        phase = run.phases[0]
        c.keep(run, [] if step is None else [(test, 0, phase)])
        if step is None and phase.time_limited:
            size = plan.usable_after_cut(phase.last_done.bytes, test.iodepth, test.block_bytes)
            c.result.findings.append(
                Finding(
                    test=None,
                    rule="status",
                    message="the test file was written more slowly than the calibration "
                    f"promised; the tests use its first {size // MIB} MiB",
                )
            )
            c.result.meta["file_bytes"] = size
            if size < MIB:
                return  # no file to test: the check is incomplete (the command says so)
        c.result.meta["file_bytes"] = size


def run_check(
    dir_path: str,
    budget_s: int,
    argv: list[str],
    clock: Clock = time.perf_counter_ns,
    progress: Callable[[str], None] | None = None,
) -> CheckResult:
    """The whole check; raises :class:`ConfigError` for a DIR it cannot run in (before
    creating anything, or after removing what it created)."""
    start = clock()
    check_dir(dir_path)
    free = free_bytes(dir_path)
    refusal = plan.free_space_error(free)
    if refusal is not None:
        raise ConfigError(f"DIR: {printable(dir_path)}: the check {refusal}")
    fstype = filesystem_type(dir_path)
    seed = secrets.randbits(63)
    result = CheckResult(
        meta={
            "aiobench_version": __version__,
            "command": list(argv),
            "dir": dir_path,
            "filesystem": fstype,
            "direct_io": False,
            "rotational": rotational(dir_path),
            "ioengine": checked_engine(None),
            "event_loop": event_loop_name(),
            "budget_s": budget_s,
            "elapsed_ns": 0,
            "start_time": datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds"),
            "host": socket.gethostname(),
            "kernel": platform.release(),
            "python": platform.python_version(),
            "seed": seed,
            "free_bytes": free,
            "file_bytes": 0,
            "metadata_files": 0,
            "calibration": None,
            "notes": [],
        }
    )
    work = WorkDir(dir_path)
    c = _Check(
        dir=dir_path,
        budget_ns=budget_s * NS_PER_S,
        seed=seed,
        work=work,
        result=result,
        clock=clock,
        start_ns=start,
    )
    if progress is not None:
        c.progress = progress
    try:
        interrupts.check()
        work.create()
        c.direct = work.probe_direct()
        result.meta["direct_io"] = c.direct
        cal = _calibrate(c)
        result.meta["calibration"] = dataclasses.asdict(cal)
        _metadata(c, cal)
        _file_tests(c, cal, free, fstype)
    except (_Stopped, interrupts.Interrupted):
        pass
    except (BenchIOError, _RunRefused) as exc:  # its entries were not its own, a run refused
        result.error = exc.to_dict()
    except OSError as exc:  # the check's own steps (its directory, the probe)
        result.error = BenchIOError.from_os(str(exc.filename or dir_path), None, exc).to_dict()
    finally:
        c.progress("removing its files")
        work.remove()
    interrupts.resume()  # a signal during the last run's end or the cleanup counts too
    signum = interrupts.settle()  # the outcome is fixed from here
    if signum is not None:
        result.interrupted = True
        result.meta["signal"] = signum.name
    result.meta["left_behind"] = list(work.left)
    result.meta["elapsed_ns"] = clock() - start
    result.findings += judge(
        result.rows,
        fstype=fstype,
        rotational=_rot(result),
        direct=c.direct,
        loops=loops_under(dir_path),
    )
    return result


def _rot(result: CheckResult) -> bool | None:
    value = result.meta.get("rotational")
    return value if isinstance(value, bool) else None
