"""The POSIX side every file engine shares: probing, opening, preparing, syncing, rank dirs.

An engine (:class:`~aiobench.engines.python.Engine`) owns the syscalls made on its targets; the
phase runner and the housekeeping blocks only say what should happen. The Python and the
native engine issue their timed I/O differently but probe, open, prepare, sync and lay out
rank dirs the same way, through :class:`PosixTargets`; their handles are descriptors
(:class:`FdTargets`), which only they look inside (:func:`fds_of`).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import mmap
import os
import shutil
import stat
import subprocess
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from aiobench.engines.nofollow import explain, reuse_dir
from aiobench.errors import BenchIOError, ConfigError
from aiobench.kinds import READ, PhaseKind
from aiobench.plan.targets import (
    BLOCKDEV,
    DIR,
    FILE,
    FileId,
    Probe,
    Resolved,
    Targets,
    resolve,
)

if TYPE_CHECKING:
    from aiobench.config import BenchConfig
    from aiobench.engines.base import IoOptions

# elbencho's --fadv and --madv names: posix_fadvise's and madvise's advice.
FADVICE = {
    "seq": os.POSIX_FADV_SEQUENTIAL,
    "rand": os.POSIX_FADV_RANDOM,
    "willneed": os.POSIX_FADV_WILLNEED,
    "dontneed": os.POSIX_FADV_DONTNEED,
    "noreuse": os.POSIX_FADV_NOREUSE,
}
MADVICE = {
    "seq": mmap.MADV_SEQUENTIAL,
    "rand": mmap.MADV_RANDOM,
    "willneed": mmap.MADV_WILLNEED,
    "dontneed": mmap.MADV_DONTNEED,
    "hugepage": mmap.MADV_HUGEPAGE,
    "nohugepage": mmap.MADV_NOHUGEPAGE,
}

# Mode of the dirs and files dir mode creates (less the umask), as mkdir(1) and touch(1).
DIR_MODE = 0o777
FILE_MODE = 0o666

# The errnos of a device or filesystem that fails, not of a PATH or option the user got
# wrong: opening or creating a target, they are run-time I/O errors (exit 1, the errno
# named, the JSON written), as in a phase; any other failure there is a usage error.
IO_ERRNOS = frozenset(
    {
        errno.EIO,
        errno.ENOSPC,
        errno.EDQUOT,
        errno.ESTALE,
        errno.ETIMEDOUT,
        errno.EREMOTEIO,
        errno.ENOLINK,
        errno.ENOMEDIUM,
        errno.EUCLEAN,
    }
)


def _setup_error(path: str, what: str, exc: OSError) -> ConfigError | BenchIOError:
    """The error of a failed open or create of ``path`` before the run (``what``: "cannot
    open", ...): an I/O error by :data:`IO_ERRNOS`, else a usage error."""
    if exc.errno in IO_ERRNOS:
        return BenchIOError.from_os(path, None, exc)
    return ConfigError(f"{path}: {what}: {exc.strerror}")


def _syncfs(fd: int) -> None:
    """syncfs(2): write back the filesystem holding ``fd`` (os has no binding)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if libc.syncfs(fd) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


class FdTargets(Targets):
    """File targets (or PATH dirs in dir mode) opened with open(2): a descriptor per PATH,
    and the files this opening created."""

    def __init__(self, paths: Sequence[str], *, dirs: bool = False) -> None:
        super().__init__(paths)
        self.dirs = dirs  # the PATH dirs of dir mode, not file targets
        self.fds: list[int] = []
        self.created: list[str] = []
        self.maps: list[mmap.mmap | None] = []  # --mmap: the phase's mappings, by PATH
        # --nofdsharing: a descriptor per PATH for each thread, opened by a call of its own
        # (its own open file: offset, readahead and lock state apart from the others'); the
        # threads share the phase's mappings (``maps``, the same list).
        self.threads: list[FdTargets] = []

    def of_thread(self, rank: int) -> FdTargets:
        return self.threads[rank % len(self.threads)] if self.threads else self

    def close(self) -> None:
        self.unmap()
        for own in self.threads:
            own.close()
        self.threads.clear()
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds.clear()

    def unmap(self) -> None:
        """Unmap the phase's mappings (--mmap; a run that still holds a view of one keeps
        it mapped until the view goes)."""
        for mapping in self.maps:
            if mapping is not None:
                with contextlib.suppress(BufferError):
                    mapping.close()
        self.maps.clear()

    def undo(self) -> None:
        self.close()
        for path in self.created:
            with contextlib.suppress(OSError):
                os.unlink(path)
        self.created.clear()


def _sysfs_size(path: str) -> int:
    """Bytes of block device ``path`` from sysfs, without opening the device."""
    try:
        rdev = os.stat(path).st_rdev
        sysfs = f"/sys/dev/block/{os.major(rdev)}:{os.minor(rdev)}/size"
        with open(sysfs, encoding="ascii") as handle:
            return int(handle.read()) * 512  # sysfs counts 512-byte sectors on every device
    except (OSError, ValueError):
        raise ConfigError(
            f"{path}: --dryrun finds no size of this block device without opening it; "
            "give -s/--size"
        ) from None


def fd_targets(targets: Targets) -> FdTargets:
    """Targets a POSIX engine opened (another engine's: an error)."""
    if not isinstance(targets, FdTargets):
        raise TypeError(f"targets of another engine: {type(targets).__name__}")
    return targets


def fds_of(targets: Targets) -> list[int]:
    """The descriptors of targets a POSIX engine opened (another engine's: an error)."""
    return fd_targets(targets).fds


class PosixTargets:
    """Probing and opening targets, and untimed work on them (file or dir fds)."""

    def probe(self, path: str, opening: bool = True) -> Probe:
        """Type and size of ``path``: a regular file (or a missing one), a block device or
        a dir; anything else is a :class:`ConfigError`. Without ``opening`` (--dryrun) a
        block device's size is the sector count sysfs shows."""
        try:
            st = os.stat(path)
        except FileNotFoundError:
            parent = os.path.dirname(os.path.abspath(path))
            return Probe(FILE, None, creatable=os.path.isdir(parent))
        except OSError as exc:
            raise ConfigError(f"{path}: cannot stat: {exc.strerror}") from None
        mode, ident = st.st_mode, (st.st_dev, st.st_ino)
        if stat.S_ISREG(mode):
            return Probe(FILE, st.st_size, ident=ident)
        if stat.S_ISDIR(mode):
            return Probe(DIR, 0, ident=ident)
        if not stat.S_ISBLK(mode):
            raise ConfigError(f"{path}: not a regular file, block device or directory")
        if not opening:
            return Probe(BLOCKDEV, _sysfs_size(path))
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise _setup_error(path, "cannot open block device", exc) from None
        try:
            return Probe(BLOCKDEV, os.lseek(fd, 0, os.SEEK_END))
        finally:
            os.close(fd)

    def resolve(self, cfg: BenchConfig) -> Resolved:
        """The paths' types and sizes by :meth:`probe`, checked against the options."""
        return resolve(cfg, self.probe)

    def open(
        self, cfg: BenchConfig, resolved: Resolved, check: Callable[[], None] | None = None
    ) -> FdTargets:
        """Open every path for the run; create missing files when writing.

        On any failure the files created here are removed again and :class:`ConfigError`
        is raised (:class:`BenchIOError` for a device that failed, :data:`IO_ERRNOS`), so a
        refused run leaves nothing behind. ``check`` is called before each
        file target and may raise to stop (:func:`aiobench.run.interrupts.check`: a signal
        came); what was created is removed then too.
        """
        path_type = resolved.path_type
        opened = FdTargets(cfg.paths, dirs=path_type == DIR)
        idents = resolved.idents or (None,) * len(cfg.paths)
        if opened.dirs:
            flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
            try:
                for path, ident in zip(cfg.paths, idents, strict=True):
                    opened.fds.append(os.open(path, flags))
                    _same(opened.fds[-1], ident, path)
            except OSError as exc:
                opened.close()
                raise _setup_error(path, "cannot open the directory", exc) from None
            except ConfigError:
                opened.close()
                raise
            return opened
        try:
            for path, ident in zip(cfg.paths, idents, strict=True):
                if check is not None:
                    check()
                opened.fds.append(_open_one(cfg, path, path_type, opened.created, ident))
            if cfg.nofdsharing:
                opened.threads.extend(_thread_fds(cfg, opened, path_type, check))
        except BaseException:
            opened.undo()
            raise
        return opened

    def slot_depth(
        self, targets: Targets, kind: PhaseKind, options: IoOptions, iodepth: int
    ) -> int:
        """How many operations one slot keeps in flight: 1 here, so a thread runs
        ``iodepth`` slots, one executor thread each; an engine that queues operations
        asynchronously runs one slot per thread with up to ``iodepth`` in flight."""
        return 1

    def begin_phase(
        self, targets: Targets, kind: PhaseKind, options: IoOptions
    ) -> BenchIOError | None:
        """Untimed, at each phase's start: the --fadv hints on every file, and with
        --mmap each file mapped for the phase (for reading only in a read phase) with the
        --madv hints (the operations: :mod:`aiobench.engines.access`). A mapping is the
        file's size when the phase starts: an operation past it is a short transfer (an
        error), never a load or store past the file's end."""
        opened = fd_targets(targets)
        opened.unmap()
        if opened.dirs or not (options.fadvise or options.mmap):
            return None  # (dir mode: each file's hints after its open, in the engine)
        for fd, path in zip(opened.fds, opened.paths, strict=True):
            step = "posix_fadvise"
            try:
                for hint in options.fadvise:
                    os.posix_fadvise(fd, 0, 0, FADVICE[hint])
                if not options.mmap:
                    continue
                step = "mmap"
                size = os.lseek(fd, 0, os.SEEK_END)  # (a block device's size too)
                if not size:
                    opened.maps.append(None)  # (nothing to map: every operation is short)
                    continue
                prot = mmap.PROT_READ if kind == READ else mmap.PROT_READ | mmap.PROT_WRITE
                mapping = mmap.mmap(fd, size, flags=mmap.MAP_SHARED, prot=prot)
                opened.maps.append(mapping)
                step = "madvise"
                for hint in options.madvise:
                    mapping.madvise(MADVICE[hint])
            except OSError as exc:
                opened.unmap()
                detail = f"{step}: {exc.strerror or os.strerror(exc.errno or 0)}"
                return BenchIOError(path=path, offset=0, errno=exc.errno or 0, detail=detail)
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
        """Before a write phase: --trunc, --trunctosize, --preallocfile, in that order."""
        for fd, path, size in zip(fds_of(targets), targets.paths, sizes, strict=True):
            step = "ftruncate"
            try:
                if trunc:
                    os.ftruncate(fd, 0)
                if trunctosize:
                    os.ftruncate(fd, size)
                if prealloc:
                    step = "posix_fallocate"
                    os.posix_fallocate(fd, 0, size)
            except OSError as exc:
                detail = f"{step}: {exc.strerror or os.strerror(exc.errno or 0)}"
                return BenchIOError(path=path, offset=0, errno=exc.errno or 0, detail=detail)
        return None

    def rank_dirs(
        self,
        targets: Targets,
        dirs: Sequence[tuple[int, str]],
        *,
        remove: bool,
        missing_ok: bool,
    ) -> BenchIOError | None:
        """Create (or with ``remove`` remove) the ``(path index, name)`` dirs, names of one
        component relative to their PATH. An existing dir is reused (a real dir only, never
        a symlink); with ``missing_ok`` (--nodelerr) a missing one is fine on removal."""
        fds, index, name = fds_of(targets), 0, ""
        try:
            for index, name in dirs:
                if not remove:
                    try:
                        os.mkdir(name, DIR_MODE, dir_fd=fds[index])
                    except FileExistsError:
                        reuse_dir(name, fds[index])
                else:
                    with contextlib.suppress(*((FileNotFoundError,) if missing_ok else ())):
                        os.rmdir(name, dir_fd=fds[index])
        except OSError as exc:
            cause = explain(exc, name, fds[index])  # rmdir of a symlink: ENOTDIR
            return BenchIOError.from_os(os.path.join(targets.paths[index], name), None, cause)
        return None

    def sync(self, targets: Targets) -> None:
        """Write back each filesystem (or block device) of the targets once; raises
        :class:`~aiobench.errors.BenchIOError`."""
        seen: set[int] = set()
        for fd, path in zip(fds_of(targets), targets.paths, strict=True):
            st = os.fstat(fd)
            key = st.st_rdev if st.st_rdev else st.st_dev
            if key in seen:
                continue
            seen.add(key)
            try:
                if st.st_rdev:
                    os.fsync(fd)  # a block device: its own buffers
                else:
                    _syncfs(fd)
            except OSError as exc:
                raise BenchIOError(
                    path=path, offset=0, errno=exc.errno or 0, detail=f"sync: {exc.strerror}"
                ) from None


def _same(fd: int, ident: FileId | None, path: str) -> None:
    """The file or dir open at ``fd`` is ``ident`` (what the probe or the creation found
    at ``path``): else ``path`` was replaced since (by another file, a symlink or a hard
    link to something else), and the run refuses it before any I/O."""
    if ident is None:
        return
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) != ident:
        raise ConfigError(
            f"{path}: replaced since it was looked at (now another file, or a link to one); "
            "not written"
        )


def _create(path: str) -> FileId | None:
    """Create the missing file ``path`` (never through a symlink: O_EXCL); what it made,
    or None when another MPI rank created it just now (not ours to remove)."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_WRONLY, 0o644)
    except FileExistsError:
        return None
    except OSError as exc:
        raise _setup_error(path, "cannot create", exc) from None
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    return st.st_dev, st.st_ino


def _open_one(
    cfg: BenchConfig,
    path: str,
    path_type: str,
    created: list[str],
    ident: FileId | None = None,
) -> int:
    flags = os.O_RDWR if cfg.write else os.O_RDONLY
    flags |= getattr(os, "O_CLOEXEC", 0)
    if path_type == BLOCKDEV and cfg.write:
        # O_EXCL on a block device: the kernel refuses (EBUSY) while it is mounted or held
        # by md/dm/swap, and keeps it from being mounted while we write.
        flags |= os.O_EXCL
    elif path_type == FILE and cfg.write and ident is None and not os.path.exists(path):
        # (A file the probe found is not made anew if it went: that is an error below.)
        made = _create(path)
        if made is not None:
            created.append(path)
            ident = made  # reopened by name below: it must still be the file made here
    if cfg.direct:
        flags |= os.O_DIRECT
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.EBUSY and path_type == BLOCKDEV:
            raise ConfigError(
                f"{path}: block device is mounted or in use; refusing to write to it"
            ) from None
        if exc.errno == errno.EINVAL and cfg.direct:
            raise ConfigError(
                f"--direct: the filesystem of {path} does not support O_DIRECT"
            ) from None
        raise _setup_error(path, "cannot open", exc) from None
    if path_type != BLOCKDEV:  # (a device node's inode says nothing of the device)
        try:
            _same(fd, ident, path)
        except ConfigError:
            os.close(fd)
            raise
    if path_type == BLOCKDEV and cfg.write:
        # Only after the exclusive open, so a mounted device is reported as mounted.
        try:
            _refuse_signature(cfg, path)
        except BaseException:
            os.close(fd)
            raise
    return fd


def _thread_fds(
    cfg: BenchConfig, shared: FdTargets, path_type: str, check: Callable[[], None] | None
) -> list[FdTargets]:
    """--nofdsharing: each of the -t threads opens every target once more (as elbencho's
    workers do before the first phase; the shared descriptors stay open beside them).

    Targets that exist by now (created above if missing) are opened without O_CREAT, and
    without O_EXCL on a block device: the shared descriptor holds the exclusive claim. Each
    open must reach the file the shared descriptor has."""
    flags = (os.O_RDWR if cfg.write else os.O_RDONLY) | os.O_CLOEXEC
    if cfg.direct:
        flags |= os.O_DIRECT
    threads: list[FdTargets] = []
    try:
        for _ in range(cfg.threads):
            own = FdTargets(shared.paths)
            own.maps = shared.maps  # (--mmap: the same mappings, made per phase)
            threads.append(own)
            for path, fd in zip(shared.paths, shared.fds, strict=True):
                if check is not None:
                    check()
                try:
                    own.fds.append(os.open(path, flags))
                except OSError as exc:
                    raise _setup_error(path, "--nofdsharing: cannot open", exc) from None
                if path_type != BLOCKDEV:
                    st = os.fstat(fd)
                    _same(own.fds[-1], (st.st_dev, st.st_ino), path)
    except BaseException:
        for own in threads:
            own.close()
        raise
    return threads


def _refuse_signature(cfg: BenchConfig, path: str) -> None:
    if cfg.force:
        return
    found = blockdev_signature(path)
    if found:
        raise ConfigError(
            f"{path}: holds {found}; writing would destroy it (add --force to overwrite)"
        )


def blockdev_signature(path: str) -> str | None:
    """Describe a filesystem/partition-table signature on ``path`` (via blkid), or None."""
    blkid = shutil.which("blkid")
    if blkid is None:
        return "data that cannot be checked (blkid from util-linux is not installed)"
    proc = subprocess.run(
        [blkid, "-p", "-o", "export", path], capture_output=True, text=True, check=False
    )
    if proc.returncode == 2 and not proc.stderr.strip():
        return None
    fields = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
    kind = fields.get("TYPE") or fields.get("PTTYPE")
    if proc.returncode == 0 and kind:
        return f"a filesystem or partition-table signature ({kind})"
    return f"data that cannot be checked (blkid: {proc.stderr.strip() or proc.returncode})"
