"""The executor boundary: positional I/O on page-aligned buffers, timed per operation.

Everything here runs in an executor thread, never on the event loop. :class:`PosixEngine`
issues ``os.preadv``/``os.pwritev``; :class:`NullEngine` issues nothing and sleeps a
configurable time per operation, so the harness can be tested deterministically.
"""

from __future__ import annotations

import errno
import mmap
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import repeat
from time import perf_counter_ns
from typing import Protocol

import numpy as np

from aiobench.errors import BenchIOError
from aiobench.workload import OpRun

PAGE = mmap.PAGESIZE
# Each 4 KiB of every written block starts with a unique 64-bit stamp, so no two written
# 4 KiB blocks are equal (dedup sees nothing to share).
STAMP_SPACING = 4096
# Written blocks are windows into a per-slot pool of random bytes; consecutive writes use
# windows 4 KiB apart. 256 KiB of slack gives 64+ distinct windows, far more than gzip's
# 32 KiB reach, so written files are incompressible without per-write random generation.
POOL_SLACK = 256 * 1024

READ = "read"
WRITE = "write"


@dataclass(slots=True)
class RawBatch:
    """What one executor round-trip did: start/end instants of each completed operation."""

    starts: list[int]
    ends: list[int]
    length: int
    error: BenchIOError | None = None


@dataclass(frozen=True, slots=True)
class Job:
    """One executor round-trip: run ``ops`` on ``fds`` until done or past ``until_ns``."""

    kind: str
    fds: Sequence[int]
    paths: Sequence[str]
    ops: OpRun
    buf: SlotBuffer
    until_ns: int


class SlotBuffer:
    """Page-aligned memory of one slot, allocated and filled once, before the phase starts."""

    def __init__(
        self, block_size: int, *, for_write: bool, rng: np.random.Generator, stamp_base: int
    ) -> None:
        self.block_size = block_size
        if not for_write:
            self.mem = mmap.mmap(-1, _round_up(block_size, PAGE))
            self.read_view = [memoryview(self.mem)[:block_size]]
            self.windows: list[list[memoryview]] = []
            return
        size = _round_up(block_size, PAGE) + POOL_SLACK
        self.mem = mmap.mmap(-1, size)
        self.mem[:] = rng.bytes(size)
        view = memoryview(self.mem)
        self.read_view = [view[:block_size]]
        step = STAMP_SPACING
        self.windows = [[view[o : o + block_size]] for o in range(0, size - block_size + 1, step)]
        self.words = view.cast("Q")
        self.words_np = np.frombuffer(self.mem, dtype=np.uint64)
        self.stamps_per_block = max(1, block_size // step)
        self.stamp_offsets = np.arange(self.stamps_per_block, dtype=np.uint64)
        self.next_window = 0
        self.next_stamp = stamp_base

    def close(self) -> None:
        self.read_view.clear()
        self.windows.clear()
        if hasattr(self, "words"):
            self.words.release()
            del self.words_np
        self.mem.close()


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


class Engine(Protocol):
    """Runs a job's operations in order until all are done or one ends after ``until_ns``."""

    def run(self, job: Job) -> RawBatch: ...


class PosixEngine:
    """Real I/O: one positional syscall per operation, timed around the syscall only."""

    def run(self, job: Job) -> RawBatch:
        batch = RawBatch([], [], job.ops.length)
        try:
            if job.kind == READ:
                self._read(batch, job)
            else:
                self._write(batch, job)
        except OSError as exc:
            done = len(batch.ends)
            del batch.starts[done:]
            index = job.ops.path_index
            path_i = index if isinstance(index, int) else index[done]
            batch.error = BenchIOError(
                path=job.paths[path_i],
                offset=job.ops.offsets[done],
                errno=exc.errno or 0,
                detail=exc.strerror or "",
            )
        return batch

    @staticmethod
    def _read(batch: RawBatch, job: Job) -> None:
        # The hot loop: locals only, two clock reads, one syscall and two compares per
        # operation.
        preadv, clock = os.preadv, perf_counter_ns
        add_start, add_end = batch.starts.append, batch.ends.append
        fds, index, ops, until_ns = job.fds, job.ops.path_index, job.ops, job.until_ns
        length, buf = ops.length, job.buf
        bufs = buf.read_view if length == buf.block_size else [buf.read_view[0][:length]]
        # Two copies of the loop on purpose: the common one-path case saves a per-operation
        # index lookup (measurable at page-cache speed).
        if isinstance(index, int):
            fd = fds[index]
            for off in ops.offsets:
                add_start(clock())
                got = preadv(fd, bufs, off)
                add_end(end := clock())
                if got != length:
                    raise _short(batch, got)
                if end > until_ns:
                    return
        else:
            for i, off in zip(index, ops.offsets, strict=False):
                add_start(clock())
                got = preadv(fds[i], bufs, off)
                add_end(end := clock())
                if got != length:
                    raise _short(batch, got)
                if end > until_ns:
                    return

    @staticmethod
    def _write(batch: RawBatch, job: Job) -> None:
        pwritev, clock = os.pwritev, perf_counter_ns
        add_start, add_end = batch.starts.append, batch.ends.append
        ops, buf, until_ns = job.ops, job.buf, job.until_ns
        length, index = ops.length, ops.path_index
        windows = buf.windows
        if length != buf.block_size:
            windows = [[w[0][:length]] for w in windows]
        n_windows = len(windows)
        words, per_block = buf.words, buf.stamps_per_block
        words_np, stamp_offsets = buf.words_np, buf.stamp_offsets
        window, stamp = buf.next_window, buf.next_stamp
        op_fds = repeat(job.fds[index]) if isinstance(index, int) else [job.fds[i] for i in index]
        for fd, off in zip(op_fds, ops.offsets, strict=False):
            # Untimed data preparation: stamp this window so the block is unique.
            word = window * (STAMP_SPACING // 8)
            if per_block == 1:
                words[word] = stamp
            else:
                words_np[word : word + per_block * (STAMP_SPACING // 8) : STAMP_SPACING // 8] = (
                    stamp_offsets + np.uint64(stamp)
                )
            stamp = (stamp + per_block) & 0xFFFF_FFFF_FFFF_FFFF
            add_start(clock())
            got = pwritev(fd, windows[window], off)
            add_end(end := clock())
            window = window + 1 if window + 1 < n_windows else 0
            if got != length:
                buf.next_window, buf.next_stamp = window, stamp
                raise _short(batch, got)
            if end > until_ns:
                break
        buf.next_window, buf.next_stamp = window, stamp


def _short(batch: RawBatch, got: int) -> OSError:
    # A short transfer counts as a failed operation: drop its timing, report it as EIO.
    batch.ends.pop()
    return OSError(errno.EIO, f"short transfer: {got} of {batch.length} bytes")


class NullEngine:
    """No I/O: each operation sleeps ``delay_ns(path_index)`` (0 = returns at once)."""

    def __init__(self, delay_ns: Callable[[int], int] | None = None) -> None:
        self.delay_ns = delay_ns or (lambda _index: 0)

    def run(self, job: Job) -> RawBatch:
        ops, until_ns = job.ops, job.until_ns
        batch = RawBatch([], [], ops.length)
        index = ops.path_index
        for n in range(len(ops)):
            delay = self.delay_ns(index if isinstance(index, int) else index[n])
            start = perf_counter_ns()
            if delay:
                time.sleep(delay / 1e9)
            batch.starts.append(start)
            batch.ends.append(end := perf_counter_ns())
            if end > until_ns:
                break
        return batch
