"""The backend seam: the engine protocol, the job an engine runs and the batch it returns.

An engine (fio's ``ioengine_ops``) makes every syscall or request on its targets; the
harness hands it whole runs of operations (:class:`Job`) and gets back the start and end
instant of each (:class:`RawBatch`). The error helpers here word a failed operation alike
in every engine.
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from time import perf_counter_ns
from typing import TYPE_CHECKING, NamedTuple, Protocol

from aiobench.engines.buffers import SlotBuffer
from aiobench.engines.gate import StartGate
from aiobench.engines.verify import Mismatch
from aiobench.errors import BenchIOError, VerifyError
from aiobench.kinds import PhaseKind
from aiobench.plan.dirmode import EntryRun
from aiobench.plan.targets import Probe, Resolved, Targets
from aiobench.plan.workload import OpRun

if TYPE_CHECKING:
    from aiobench.config import BenchConfig
    from aiobench.stats.recorders import Int64s


def _none() -> Int64s:
    return array("q")


@dataclass(slots=True, eq=False)  # (state: compared by identity)
class RawBatch:
    """What one executor round-trip did: start/end instants of each completed unit.

    A unit is one I/O operation in file mode and one entry (dir or whole file) in dir
    mode, where ``io_starts``/``io_ends`` also time each block read or written. The
    instants (``perf_counter_ns``/``CLOCK_MONOTONIC``) are int64 arrays: ``array("q")``,
    or numpy's where an engine computes with numpy anyway.
    """

    starts: Int64s
    ends: Int64s
    io_starts: Int64s = field(default_factory=_none)
    io_ends: Int64s = field(default_factory=_none)
    error: BenchIOError | None = None
    # Under a rate limit: when each completed operation was scheduled to start.
    intended: Int64s = field(default_factory=_none)
    # Object storage: each GET's time to first byte (from sending it to its first body
    # byte), in ns.
    first_bytes: Int64s = field(default_factory=_none)
    # File mode: the operations went through Linux AIO (the native engine's queue), not
    # one pread/pwrite each (--opslog's names).
    aio: bool = False


class ListRecord:
    """The Python engine's record of a run, appended to per unit; :meth:`batch` turns it
    into the arrays of a :class:`RawBatch`."""

    __slots__ = ("ends", "error", "intended", "io_ends", "io_starts", "starts")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.io_starts: list[int] = []
        self.io_ends: list[int] = []
        self.intended: list[int] = []
        self.error: BenchIOError | None = None

    def done(self) -> int:
        return len(self.ends)

    def count_as_done(self, count: int, until_ns: int) -> bool:
        for _ in range(count):
            now = perf_counter_ns()
            self.starts.append(now)
            self.ends.append(now)
            if now > until_ns:
                return True
        return False

    def batch(self) -> RawBatch:
        # A unit (or block) that failed or was cut recorded its start only: dropped here.
        done, io_done = len(self.ends), len(self.io_ends)
        return RawBatch(
            _int64(self.starts[:done]),
            _int64(self.ends),
            _int64(self.io_starts[:io_done]),
            _int64(self.io_ends),
            self.error,
            _int64(self.intended[:done]),
        )


class EntryRecord(Protocol):
    """What a dir-mode run has done so far, as one engine records it (lists or arrays)."""

    error: BenchIOError | None

    def done(self) -> int:
        """Entries completed."""
        ...

    def count_as_done(self, count: int, until_ns: int) -> bool:
        """Record ``count`` entries as done at once (their parent is gone, --nodelerr);
        whether the run's budget is used up."""
        ...

    def batch(self) -> RawBatch: ...


def _int64(values: list[int]) -> array[int]:
    return array("q", values)


@dataclass(frozen=True, slots=True)
class IoOptions:
    """How a phase issues its operations; made once per phase, shared by all its jobs."""

    direct: bool = False
    poll: bool = False  # --poll: a thread waits for its completions on the CPU (native AIO)
    ignore_missing: bool = False  # dir mode, --nodelerr: a missing entry counts as done
    verify: int | None = None  # --verify SALT: write the pattern / check what is read
    verify_direct: bool = False  # --verifydirect: read each written block back
    block_var_pct: int | None = None  # --blockvarpct: % of the block refilled per write
    block_var_algo: str = "fast"  # --blockvaralgo: the refill's generator (fast: SFC64)
    rate_bytes_per_s: int = 0  # --limitread/--limitwrite for each thread (0 = none)
    fadvise: tuple[str, ...] = ()  # --fadv's hints, given at each phase's start
    mmap: bool = False  # --mmap: each operation a copy to or from the file's mapping
    madvise: tuple[str, ...] = ()  # --madv's hints for that mapping
    flock: str | None = None  # --flock: range or full, around each operation
    # --readinline: each write is followed by a read of its block through the same fd,
    # the two timed as one operation (elbencho's); --statinline (dir mode): fstat each file
    # right after its open, inside the file's timing.
    read_inline: bool = False
    stat_inline: bool = False
    # Dir mode's write phase, --trunctosize and --preallocfile: each file set to its length
    # with ftruncate / posix_fallocate right after its open, inside its time, as elbencho
    # (file mode does it once before the phase: PosixTargets.prepare_files).
    size_files: bool = False
    prealloc_files: bool = False

    @property
    def accessed(self) -> bool:
        """Whether operations go through a mapping or take locks (aiobench.engines.access)."""
        return self.mmap or self.flock is not None


class Job(NamedTuple):
    """One executor round-trip: run ``ops`` until done or a unit ends past ``until_ns``.

    ``targets`` are what the engine opened: the targets (file mode) or the PATH dirs (dir
    mode). Inside a dir-mode file, the blocks stop early at ``deadline_ns`` (0 = none) or
    on ``stop``.
    """

    kind: PhaseKind
    targets: Targets
    ops: OpRun | EntryRun
    buf: SlotBuffer | None
    until_ns: int
    deadline_ns: int = 0
    stop: threading.Event | None = None
    options: IoOptions = IoOptions()
    schedule_start_ns: int = 0  # the phase start: operation n is due n blocks' time later
    # Operations the engine may keep in flight at once (the native engine's Linux AIO loop;
    # the buffer must have been made for this depth). 1: one after the other.
    depth: int = 1
    # A slot's first run: wait at the phase's start gate first; ``until_ns`` is then the
    # run's budget from the start instant (see :meth:`released`).
    gate: StartGate | None = None
    # The slot has operations after these: an engine that keeps a queue may leave the
    # run's last ones in flight for the next run, so that the queue does not drain at
    # the end of the run (the next run starts with them).
    follows: bool = False
    # The phase has fewer slots than cores, so each slot's thread has one to spare: an
    # engine may spend a syscall more to start the device sooner (the native AIO loop
    # submits in pairs, which the kernel does not hold back to batch).
    spare: bool = False

    @property
    def paths(self) -> tuple[str, ...]:
        return self.targets.paths

    def released(self) -> Job | None:
        """This job once its gate opened (its ``until_ns`` absolute, the schedule from the
        start, the time limit's end known), or None when the phase was stopped before it
        started; ungated: itself."""
        if self.gate is None:
            return self
        until = self.gate.until(self.until_ns)
        if until is None:
            return None
        deadline, start = int(self.gate.word[1]), int(self.gate.word[2])
        return self._replace(
            until_ns=until, deadline_ns=deadline, gate=None, schedule_start_ns=start
        )

    async def released_async(self) -> Job | None:
        """:meth:`released` for an engine that runs on the event loop (:class:`AsyncEngine`):
        the wait does not block the loop."""
        if self.gate is None:
            return self
        await self.gate.opened_async()
        return self.released()  # (open already: no wait)


class Engine(Protocol):
    """The backend seam, as fio's ``ioengine_ops``: an engine makes every syscall on its
    targets. The harness hands it whole runs of operations (:class:`Job`) and untimed
    chores (preparing files, rank dirs, sync); it never prints."""

    name: str

    def run(self, job: Job) -> RawBatch:
        """Run the job's operations in order until all are done or one ends after
        ``until_ns``; called in an executor thread. A gated job (a slot's first run)
        waits for the phase's start first (:meth:`Job.released`)."""
        ...

    def probe(self, path: str, opening: bool = True) -> Probe:
        """Before the run: what is at ``path`` (its type and size); read-only, and without
        ``opening`` (--dryrun) opening nothing. Raises
        :class:`~aiobench.errors.ConfigError` for what the engine cannot run on."""
        ...

    def resolve(self, cfg: BenchConfig) -> Resolved:
        """Before the run: what the PATHs are (:meth:`probe`) and the run's layout on them,
        checked against the options; read-only, opening nothing under --dryrun. What the
        engine needs of it later travels to :meth:`open` in the result, parsed once."""
        ...

    def open(
        self, cfg: BenchConfig, resolved: Resolved, check: Callable[[], None] | None = None
    ) -> Targets:
        """Open (creating files to write) the targets :meth:`resolve` found; raises
        :class:`~aiobench.errors.ConfigError`, having removed what it created, when one
        cannot be. ``check`` is called before each target and may raise to stop."""
        ...

    def begin_phase(
        self, targets: Targets, kind: PhaseKind, options: IoOptions
    ) -> BenchIOError | None:
        """Untimed, at the start of each phase (after :meth:`prepare_files`): what the
        options ask of the targets then (file access hints, mappings)."""
        ...

    def prepare_files(
        self,
        targets: Targets,
        sizes: Sequence[int],
        *,
        trunc: bool,
        trunctosize: bool,
        prealloc: bool,
    ) -> BenchIOError | None: ...

    def rank_dirs(
        self,
        targets: Targets,
        dirs: Sequence[tuple[int, str]],
        *,
        remove: bool,
        missing_ok: bool,
    ) -> BenchIOError | None: ...

    def sync(self, targets: Targets) -> None: ...

    def slot_depth(
        self, targets: Targets, kind: PhaseKind, options: IoOptions, iodepth: int
    ) -> int:
        """How many operations one slot keeps in flight on ``targets``: 1, or up to
        ``iodepth`` where the engine queues them itself (a thread then runs one slot)."""
        ...


class AsyncEngine(Engine, Protocol):
    """An engine whose runs are coroutines on the event loop (object storage: each slot
    keeps its requests in flight without an executor thread); :meth:`Engine.run` is not
    called for it."""

    async def run_async(self, job: Job) -> RawBatch:
        """:meth:`Engine.run` on the event loop; a gated job waits with
        :meth:`Job.released_async`."""
        ...


def runs_on_loop(engine: Engine) -> bool:
    """Whether ``engine`` is an :class:`AsyncEngine`."""
    return callable(getattr(engine, "run_async", None))


def short_detail(got: int, length: int) -> str:
    """The text of a short transfer's EIO."""
    return f"short transfer: {got} of {length} bytes"


def op_error(job: Job, ops: OpRun, done: int, errno_: int, detail: str) -> BenchIOError:
    """File mode: operation ``done`` of the run failed with ``errno_``."""
    index = ops.path_index
    path = job.paths[index if isinstance(index, int) else index[done]]
    return BenchIOError(path=path, offset=ops.offsets[done], errno=errno_, detail=detail)


def mismatch_error(job: Job, ops: OpRun, done: int, bad: Mismatch) -> VerifyError:
    """File mode, --verify: operation ``done`` did not hold the pattern."""
    index = ops.path_index
    path = job.paths[index if isinstance(index, int) else index[done]]
    return VerifyError(path=path, offset=bad.offset, expected=bad.expected, found=bad.found)
