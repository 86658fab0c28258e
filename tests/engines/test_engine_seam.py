"""The engine seam: a backend that is not POSIX runs a whole benchmark through it.

An in-memory engine (its targets are byte arrays, its handles not descriptors) probes,
opens, prepares, runs, syncs and closes its targets; the harness never looks inside them
and makes no syscall on them: the paths never exist on disk.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from time import perf_counter_ns

import pytest

from aiobench.config import BenchConfig
from aiobench.engines.base import IoOptions, Job, RawBatch, _int64
from aiobench.engines.posix import FdTargets, PosixTargets, fds_of
from aiobench.errors import BenchIOError, ConfigError
from aiobench.kinds import READ, WRITE, PhaseKind
from aiobench.plan.targets import FILE, Probe, Resolved, Targets, resolve
from aiobench.plan.workload import Layout, OpRun
from aiobench.run.runner import run_benchmark
from tests.helpers import make_cfg


class MemoryTargets(Targets):
    def __init__(self, paths: Sequence[str], store: dict[str, bytearray]) -> None:
        super().__init__(paths)
        self.store = store
        self.created = [p for p in paths if p not in store]
        for path in self.created:
            store[path] = bytearray()
        self.closed = False

    def close(self) -> None:
        self.closed = True

    def undo(self) -> None:
        self.close()
        for path in self.created:
            del self.store[path]


class MemoryEngine:
    """Objects in a dict: what an S3 engine will be, without the network."""

    name = "memory"

    def __init__(self) -> None:
        self.store: dict[str, bytearray] = {}
        self.calls: list[str] = []
        self.opened: list[MemoryTargets] = []

    def probe(self, path: str, opening: bool = True) -> Probe:
        self.calls.append("probe")
        if path.endswith("/"):
            raise ConfigError(f"{path}: not an object name")
        found = self.store.get(path)
        return Probe(FILE, None if found is None else len(found))

    def resolve(self, cfg: BenchConfig) -> Resolved:
        return resolve(cfg, self.probe)

    def open(
        self, cfg: BenchConfig, resolved: Resolved, check: Callable[[], None] | None = None
    ) -> MemoryTargets:
        self.calls.append("open")
        self.opened.append(MemoryTargets(cfg.paths, self.store))
        return self.opened[-1]

    def begin_phase(
        self, targets: Targets, kind: PhaseKind, options: IoOptions
    ) -> BenchIOError | None:
        self.calls.append(f"begin {kind}")
        return None

    def prepare_files(
        self,
        targets: Targets,
        sizes: Sequence[int],
        *,
        trunc: bool,
        trunctosize: bool,
        prealloc: bool,
    ) -> BenchIOError | None:
        self.calls.append("prepare")
        assert isinstance(targets, MemoryTargets)
        for path, size in zip(targets.paths, sizes, strict=True):
            if trunctosize:
                targets.store[path] = bytearray(size)
        return None

    def rank_dirs(
        self,
        targets: Targets,
        dirs: Sequence[tuple[int, str]],
        *,
        remove: bool,
        missing_ok: bool,
    ) -> BenchIOError | None:
        raise AssertionError("no dir mode here")

    def sync(self, targets: Targets) -> None:
        self.calls.append("sync")

    def slot_depth(self, targets: Targets, kind: str, options: IoOptions, iodepth: int) -> int:
        return 1

    def run(self, job: Job) -> RawBatch:
        released = job.released()
        if released is None:
            return RawBatch(_int64([]), _int64([]))
        job = released
        assert isinstance(job.targets, MemoryTargets) and isinstance(job.ops, OpRun)
        self.calls.append("run")
        ops, starts, ends = job.ops, [], []
        index = ops.path_index
        for n, offset in enumerate(ops.offsets):
            blob = job.targets.store[job.paths[index if isinstance(index, int) else index[n]]]
            starts.append(perf_counter_ns())
            if job.kind == WRITE:
                if len(blob) < offset + ops.length:
                    blob.extend(bytes(offset + ops.length - len(blob)))
                blob[offset : offset + ops.length] = bytes([n % 251 + 1]) * ops.length
            else:
                assert job.kind == READ
                assert len(blob[offset : offset + ops.length]) == ops.length
            ends.append(perf_counter_ns())
            if ends[-1] > job.until_ns:
                break
        return RawBatch(_int64(starts), _int64(ends))


def test_a_new_engine_runs_a_benchmark_on_targets_that_are_not_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    engine = MemoryEngine()
    paths = ["bucket/a", "bucket/b"]
    cfg = make_cfg(paths, read=True, block="4k", size="64k", threads=2, sync=True)
    result = run_benchmark(cfg, engine.resolve(cfg), engine)
    assert result.error is None
    assert [p.name for p in result.phases if p.name in ("WRITE", "READ")] == ["WRITE", "READ"]
    for phase in (p for p in result.phases if p.name in ("WRITE", "READ")):
        assert phase.last_done.ops == 2 * 16 and phase.last_done.bytes == 2 * 64 * 1024
    assert result.meta["ioengine"] == "memory"
    # Every block of both objects was written through the engine's own handles.
    assert {path: len(blob) for path, blob in engine.store.items()} == dict.fromkeys(paths, 65536)
    assert all(0 not in blob for blob in engine.store.values())
    assert engine.calls[:3] == ["probe", "probe", "open"] and "sync" in engine.calls
    begun = [call for call in engine.calls if call.startswith("begin")]
    assert begun == [f"begin {WRITE}", f"begin {READ}"]  # each phase's start, in order
    [targets] = engine.opened
    assert targets.closed and targets.filled
    assert list(tmp_path.iterdir()) == []  # the harness made no file of its own


def test_the_engines_probe_decides_what_a_path_is() -> None:
    engine = MemoryEngine()
    with pytest.raises(ConfigError, match="bucket/: not an object name"):
        resolve(make_cfg(["bucket/"]), engine.probe)
    cfg = make_cfg(["bucket/x"], write=False, read=True)
    with pytest.raises(ConfigError, match="bucket/x: does not exist"):
        resolve(cfg, engine.probe)
    engine.store["bucket/x"] = bytearray(8192)
    layout = resolve(dataclasses.replace(cfg, size_bytes=0), engine.probe).layout
    assert isinstance(layout, Layout) and layout.total_bytes == 8192


def test_posix_handles_are_only_the_posix_engines(tmp_path: Path) -> None:
    engine = MemoryEngine()
    memory = engine.open(make_cfg(["x"]), Resolved(FILE, Layout((4096,), 4096), ()))
    with pytest.raises(TypeError, match="targets of another engine: MemoryTargets"):
        fds_of(memory)
    with pytest.raises(TypeError):
        PosixTargets().sync(memory)
    cfg = make_cfg([str(tmp_path / "f")])
    opened = PosixTargets().open(cfg, Resolved(FILE, Layout((cfg.size_bytes,), 4096), ()))
    assert isinstance(opened, FdTargets) and len(fds_of(opened)) == 1
    opened.undo()  # it created the file: removed again
    assert list(tmp_path.iterdir()) == []
