"""Targets: path types and sizes, and the checks of a run against them.

:func:`resolve` learns each PATH's type and size from the engine
(:meth:`~aiobench.engines.python.Engine.probe`), checks the run against them and makes its
layout (file mode's block range: :class:`~aiobench.plan.workload.Layout`); the engine then
opens the targets (:meth:`~aiobench.engines.python.Engine.open`), into a :class:`Targets`
only it looks inside. Dir mode's checks of the tree below PATH are POSIX ones, made here.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NamedTuple

from aiobench.config import BenchConfig, validate
from aiobench.errors import ConfigError
from aiobench.kinds import MKDIRS, WRITE, PathType
from aiobench.plan.dirmode import SYMLINK, DirLayout
from aiobench.plan.workload import Layout
from aiobench.units import MAX_BYTES, format_bytes

if TYPE_CHECKING:
    from aiobench.stats.opkinds import OpKindTally

FILE, BLOCKDEV, DIR = PathType.FILE, PathType.BLOCKDEV, PathType.DIR
FileId = tuple[int, int]  # (st_dev, st_ino): which file or dir a name led to


class Probe(NamedTuple):
    """What an engine found at a PATH before the run: its type and size in bytes, None
    when it does not exist (a file to create, which ``creatable`` says it can be: its
    parent is there)."""

    path_type: PathType
    size: int | None
    creatable: bool = True
    # (st_dev, st_ino) of the file or dir found there, so opening it later can tell it is
    # still the one the run was sized and checked for; None where nothing is (or a device).
    ident: FileId | None = None


class Targets:
    """What an engine opened for a run, a handle per PATH; only that engine looks inside.

    Files the run creates (file targets that did not exist, with ``-w``) are removed again
    when setup fails, and when a signal ends the run before a write phase of it completed
    (ran to its end, or to its time limit, without an error): what is left then is a file
    the run did fill. An I/O error keeps them (the error names the file). Dir mode's tree
    is the benchmark's own workload, made by its phases: a signal leaves what was made,
    which ``-F``/``-D`` (with ``--nodelerr`` for what is missing) remove.
    """

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = tuple(paths)
        self.filled = False  # a write phase of the run completed on them

    def finish(self, *, interrupted: bool) -> None:
        """Close at the end of the run; one a signal ended also removes the files it created
        unless a write phase completed on them."""
        if interrupted and not self.filled:
            self.undo()
        else:
            self.close()

    def close(self) -> None:
        """Release the handles."""
        raise NotImplementedError

    def take_op_kinds(self) -> dict[str, OpKindTally]:
        """A phase that mixes kinds of operations (object storage's MIXED): what each kind
        did since the last call; {} for engines that never mix."""
        return {}

    def of_thread(self, rank: int) -> Targets:
        """The handles thread ``rank``'s slots use: these shared ones, or (an engine that
        opens the targets once per thread, --nofdsharing) that thread's own."""
        return self

    @property
    def servers(self) -> tuple[str, ...]:
        """The servers the targets are reached through, if several can be (object
        storage's endpoints: thread rank r uses number r % len); () otherwise."""
        return ()

    def concluded(self) -> tuple[dict[str, object], str | None]:
        """After the last phase, on every process of the job (it may be a step they take
        together): what the engine adds to the run's ``meta`` on the lead, and an error
        the run ends with there if it has none ({} and None: nothing)."""
        return {}, None

    async def release(self) -> None:
        """On the event loop, after the last phase: let go of what lives on it (an
        engine that runs there: its connections)."""

    def undo(self) -> None:
        """Close and remove what the opening created (setup failed, or a signal came)."""
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Resolved:
    """What resolving the run learnt (:meth:`~aiobench.engines.base.Engine.resolve`, for
    files and dirs :func:`resolve`): path type, sizes and notes for the user."""

    path_type: PathType
    layout: Layout | DirLayout
    notes: tuple[str, ...]
    # What the engine that resolved the run parsed for itself (object storage: endpoints,
    # credentials, region), handed back to its open(); the harness does not look inside.
    settings: object = None
    # Per PATH, the file or dir its probe found (Probe.ident): open() refuses another one.
    idents: tuple[FileId | None, ...] = ()


def resolve(cfg: BenchConfig, probe: Callable[[str, bool], Probe]) -> Resolved:
    """Classify the paths (files, block devices or dirs), find their sizes and the effective
    block size; read-only. ``probe`` is the run's engine's look at one PATH (opening nothing
    under --dryrun)."""
    found = {path: probe(path, not cfg.dryrun) for path in cfg.paths}
    idents = tuple(found[path].ident for path in cfg.paths)
    types = {path: seen.path_type for path, seen in found.items()}
    kinds = set(types.values())
    if len(kinds) > 1:
        listing = ", ".join(f"{p} ({t})" for p, t in types.items())
        raise ConfigError(f"PATH: all paths must be of one type, got {listing}")
    path_type = kinds.pop()
    if path_type == DIR:
        validate(cfg, path_type)
        tree = cfg.treefile is not None or cfg.treescan is not None
        resolved = replace(_resolve_tree(cfg) if tree else _resolve_dirs(cfg), idents=idents)
        _check_space(cfg, resolved)
        return resolved
    dir_only = cfg.dir_mode_options()
    missing = [path for path in cfg.paths if found[path].size is None]
    if dir_only and missing:
        raise ConfigError(
            f"{missing[0]}: does not exist; {dir_only[0]} is for dir mode, which needs an "
            "existing directory as PATH (mkdir it first)"
        )
    validate(cfg, path_type)
    sizes = [_target_size(cfg, path, found[path]) for path in cfg.paths]
    if cfg.mmap and cfg.write and path_type == FILE:
        _check_mappable(cfg, found, sizes)
    notes: list[str] = []
    block = cfg.block_size
    smallest = min(sizes)
    if smallest < block:
        if cfg.direct:
            raise ConfigError(
                f"-b/--block: {block} is larger than the target size {smallest}, "
                "which --direct cannot cut to size"
            )
        notes.append(f"block size {block} cut to the target size {smallest}")
        block = smallest
    if cfg.direct or cfg.rand:
        rounded = [size - size % block for size in sizes]
        if rounded != sizes:
            notes.append(f"sizes rounded down to whole blocks of {block} bytes")
            sizes = rounded
    layout = Layout(tuple(sizes), block)
    if layout.total_blocks < cfg.threads:
        raise ConfigError(
            f"-t/--threads: {cfg.threads} threads but only {layout.total_blocks} blocks of "
            f"{block} bytes; use fewer threads, a smaller -b or a larger -s"
        )
    check_randamount(cfg, block)
    resolved = Resolved(path_type, layout, tuple(notes), idents=idents)
    _check_space(cfg, resolved)
    return resolved


def _check_mappable(cfg: BenchConfig, found: dict[str, Probe], sizes: list[int]) -> None:
    """--mmap -w: a shared mapping cannot make a file larger (a store past the file's end
    is a SIGBUS), so each file must be as large as what is written already, or be made so
    by --trunctosize or --preallocfile before the phase."""
    if cfg.trunctosize or cfg.preallocfile:
        return
    for path, size in zip(cfg.paths, sizes, strict=True):
        has = 0 if cfg.trunc else found[path].size or 0
        if has < size:
            now = "made empty by --trunc" if cfg.trunc else f"{has} bytes"
            raise ConfigError(
                f"--mmap: {path} is {now}, and writes through a mapping cannot extend it "
                f"to {size}; add --trunctosize or --preallocfile"
            )


def check_randamount(cfg: BenchConfig, block: int) -> None:
    """--randamount gives each thread one block at least."""
    if cfg.randamount_bytes is not None and cfg.randamount_bytes // cfg.threads < block:
        raise ConfigError(
            f"--randamount: {cfg.randamount_bytes} bytes give each of the {cfg.threads} threads "
            f"less than one block of {block} bytes"
        )


def _check_space(cfg: BenchConfig, resolved: Resolved) -> None:
    """The data fits an off_t and, when written, each filesystem's free space (unless
    --force; a block device's size was checked already); read-only."""
    sizes = resolved.layout.bytes_per_path()
    if sum(sizes) > MAX_BYTES:
        raise ConfigError(
            f"-s/--size: {format_bytes(sum(sizes))} in all, more than the OS can address "
            "(2^63-1 bytes, just under 8E)"
        )
    if not cfg.write or cfg.force or resolved.path_type == BLOCKDEV:
        return
    needs: dict[int, tuple[int, str]] = {}  # per filesystem (st_dev): bytes, a path on it
    for path, size in zip(cfg.paths, sizes, strict=True):
        where = path if os.path.exists(path) else os.path.dirname(os.path.abspath(path))
        try:
            info = os.stat(where)
        except OSError:
            continue  # opening it will say why
        # Blocks a file has already are rewritten in place (st_blocks, not st_size: a
        # sparse file has its size but none of the space).
        there = info.st_blocks * 512 if stat.S_ISREG(info.st_mode) else 0
        need, _ = needs.get(info.st_dev, (0, where))
        needs[info.st_dev] = (need + max(size - there, 0), where)
    for need, where in needs.values():
        try:
            vfs = os.statvfs(where)
        except OSError:
            continue
        if vfs.f_blocks == 0:
            continue  # a filesystem without a size (ramfs, some FUSE ones) says nothing
        free = vfs.f_bavail * vfs.f_frsize
        if need > free:
            mount, fstype = mount_of(where)
            on = f"{mount} ({fstype})" if fstype else mount or where
            raise ConfigError(
                f"-s/--size: the write needs {format_bytes(need)} on {on}, which has "
                f"{format_bytes(free)} free; lower -s or add --force"
            )


def _resolve_dirs(cfg: BenchConfig) -> Resolved:
    """Dir mode: the layout, and that the tree the phases need is there; read-only."""
    notes: list[str] = []
    block = cfg.block_size
    if 0 < cfg.size_bytes < block:
        block = cfg.size_bytes  # small files are written whole, in one block (no note: common)
    if cfg.num_dirs == 0 and (cfg.mkdirs or cfg.deldirs):
        notes.append("-n 0: files go straight into PATH; no dirs to create or delete")
    layout = DirLayout(
        num_paths=len(cfg.paths),
        threads=cfg.threads,
        dirs=cfg.num_dirs,
        files=cfg.num_files,
        file_size=cfg.size_bytes,
        block_size=block,
        sharing=cfg.dirsharing,
    )
    for path in cfg.paths:
        if not os.access(path, os.R_OK | os.X_OK):
            raise ConfigError(f"{path}: cannot access the directory")
    _check_writable(cfg, layout)
    _check_tree(cfg, layout, notes)
    return Resolved(DIR, layout, tuple(notes))


def _resolve_tree(cfg: BenchConfig) -> Resolved:
    """Custom tree mode: the tree (read, or scanned and written), its layout, and that the
    dirs it needs are there (or -d makes them), none of them a symlink; read-only but for
    the tree file a scan writes."""
    from aiobench.plan.tree import all_dirs  # (only this mode loads the tree's modules)
    from aiobench.plan.treeresolve import custom_tree

    layout, notes = custom_tree(cfg)
    path = cfg.paths[0]
    if not os.access(path, os.R_OK | os.X_OK):
        raise ConfigError(f"{path}: cannot access the directory")
    _check_writable(cfg, layout)
    seen: set[str] = set()
    for name in all_dirs(layout.tree):
        st = _lstat_below(path, name, seen)
        exists = st is not None and stat.S_ISDIR(st.st_mode)
        if st is not None and not exists and cfg.mkdirs:
            raise ConfigError(f"{os.path.join(path, name)}: not a directory")
        if not exists and not cfg.mkdirs and cfg.file_phases and not cfg.nodelerr:
            raise ConfigError(
                f"{os.path.join(path, name)}: directory does not exist (add -d/--mkdirs to "
                "create the dirs of the tree)"
            )
    files = layout.tree.files
    if files and not cfg.write and (cfg.read or cfg.stat) and not cfg.nodelerr:
        for name, _ in {files[0], files[-1]}:
            st = _lstat_below(path, name, seen)
            if st is None or not stat.S_ISREG(st.st_mode):
                raise ConfigError(
                    f"{os.path.join(path, name)}: file does not exist (add -w to create the "
                    "files of the tree)"
                )
    return Resolved(DIR, layout, tuple(notes))


def _check_writable(cfg: BenchConfig, layout: DirLayout) -> None:
    """A run that creates or deletes entries needs a writable PATH (root passes EACCES
    but not EROFS); refused before anything is made, as in file mode."""
    changes = cfg.mkdirs or cfg.write or cfg.delfiles or cfg.deldirs
    # r<r> dirs are made and removed in PATH; with -n 0 the files are.
    in_path = (cfg.mkdirs or cfg.deldirs) if layout.dirs else (cfg.write or cfg.delfiles)
    for path in cfg.paths:
        reason = None
        if changes and os.statvfs(path).f_flag & os.ST_RDONLY:
            reason = errno.EROFS  # the whole filesystem: below PATH too
        elif in_path and not os.access(path, os.W_OK | os.X_OK, effective_ids=True):
            reason = errno.EACCES
        if reason is not None:
            raise ConfigError(
                f"{path}: cannot create or delete entries in the directory: {os.strerror(reason)}"
            )


def _lstat_below(root: str, name: str, dirs_seen: set[str]) -> os.stat_result | None:
    """lstat of ``root/name`` one component at a time (None: not there); a symlink below
    ``root`` is a usage error. ``dirs_seen`` holds the dirs already found to be real dirs."""
    path = root
    parts = name.split("/")
    for depth, part in enumerate(parts, 1):
        path = os.path.join(path, part)
        if depth < len(parts) and path in dirs_seen:
            continue
        try:
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise ConfigError(f"{path}: cannot stat: {exc.strerror}") from None
        if stat.S_ISLNK(st.st_mode):
            raise ConfigError(f"{path}: {SYMLINK}")
        if depth < len(parts):
            if not stat.S_ISDIR(st.st_mode):
                return None
            dirs_seen.add(path)
    return st


def _check_tree(cfg: BenchConfig, layout: DirLayout, notes: list[str]) -> None:
    """The dirs to write into exist (or -d makes them); files to use exist (or -w makes them);
    no symlink where the layout has a dir or file. Read-only.

    Only each thread's first and last file (and, with -d, dir) are looked at: stat-ing
    every file would warm the metadata caches the STAT and READ phases are about to
    measure. The engine refuses a symlink anywhere else at run time.
    """
    seen: set[str] = set()

    def lstat(index: int, name: str) -> os.stat_result | None:
        return _lstat_below(cfg.paths[index], name, seen)

    def is_dir(index: int, name: str) -> bool:
        st = lstat(index, name)
        return st is not None and stat.S_ISDIR(st.st_mode)

    for index, name in layout.rank_dirs():
        lstat(index, name)
    if cfg.mkdirs and layout.dirs:
        index, name = layout.entry(MKDIRS, 0, 0)
        if is_dir(index, name):
            notes.append(
                f"{os.path.join(cfg.paths[index], name)} already exists; existing dirs of the "
                "layout are reused and still counted (as elbencho does)"
            )
        for rank in range(layout.threads):
            ids = layout.dir_ids(rank)
            for i in {ids[0], ids[-1]} if ids else ():
                lstat(layout.dir_path_index(rank, i), layout.dir_name(rank, i))
    if not cfg.file_phases:
        return
    cleanup_only = cfg.nodelerr and not (cfg.write or cfg.read or cfg.stat)
    if not cfg.mkdirs and layout.dirs and not cleanup_only:
        for rank in range(layout.threads):
            for i in layout.dir_ids(rank):
                index, name = layout.dir_path_index(rank, i), layout.dir_name(rank, i)
                if not is_dir(index, name):
                    raise ConfigError(
                        f"{os.path.join(cfg.paths[index], name)}: directory does not exist "
                        "(add -d/--mkdirs to create the dirs of the layout)"
                    )
    must_exist = not (cfg.write or cleanup_only)
    hint = "; -F --nodelerr deletes what is there" if cfg.delfiles else ""
    last = layout.files_per_rank() - 1
    for rank in range(layout.threads):
        for k in (0, last):
            index, name = layout.entry(WRITE, rank, k)
            st = lstat(index, name)
            if must_exist and (st is None or not stat.S_ISREG(st.st_mode)):
                raise ConfigError(
                    f"{os.path.join(cfg.paths[index], name)}: file does not exist (the "
                    "-t/-n/-N values must match the run that wrote the files; add -w to "
                    f"create them{hint})"
                )


def _target_size(cfg: BenchConfig, path: str, seen: Probe) -> int:
    if seen.path_type == BLOCKDEV:
        dev_size = seen.size or 0
        if cfg.size_bytes > dev_size:
            raise ConfigError(
                f"-s/--size: {cfg.size_bytes} exceeds the size of {path} ({dev_size})"
            )
        size = cfg.size_bytes or dev_size
    elif seen.size is not None:
        file_size = seen.size
        mix = _mixing(cfg)
        reads_first = not cfg.write or mix is not None  # reads from the start
        if reads_first and cfg.size_bytes > file_size:
            raise ConfigError(
                f"{path}: has {file_size} bytes, fewer than -s/--size {cfg.size_bytes} to read"
                + (f" ({mix} reads while it writes; write the file first)" if mix else "")
            )
        size = cfg.size_bytes or (file_size if reads_first else 0)
    else:
        mix = _mixing(cfg)
        if mix is not None:
            raise ConfigError(
                f"{path}: does not exist; {mix} reads while it writes, so write the "
                f"file first (-w without {mix})"
            )
        if not cfg.write:
            raise ConfigError(f"{path}: does not exist (reading needs it; add -w to create it)")
        if not seen.creatable:
            raise ConfigError(f"{path}: parent directory does not exist")
        if _in_dev(path):
            raise ConfigError(
                f"{path}: does not exist; no file is made in /dev (a mistyped device name?)"
            )
        size = cfg.size_bytes
    if size == 0:
        if cfg.write and _mixing(cfg) is None:
            raise ConfigError("-s/--size: needed (and > 0) to write files")
        raise ConfigError(f"{path}: is empty; nothing to read")
    return size


def _mixing(cfg: BenchConfig) -> str | None:
    """The option that makes the write phase read too (--rwmixpct, or --rwmixthr with
    reader threads), or None."""
    if cfg.rwmixpct is not None:
        return "--rwmixpct"
    return "--rwmixthr" if cfg.rwmixthr else None


def _in_dev(path: str) -> bool:
    """Whether a new file at ``path`` would be made in /dev itself, where the names are the
    kernel's: a missing one is a device mistyped or gone, which a file must not stand in
    for (elbencho's rule too). Filesystems mounted below /dev (/dev/shm) are not /dev."""
    parent = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    if parent != "/dev" and not parent.startswith("/dev/"):
        return False
    try:
        return os.stat(parent).st_dev == os.stat("/dev").st_dev
    except OSError:
        return False


def filesystem_type(path: str, mountinfo: str = "/proc/self/mountinfo") -> str:
    """The filesystem type of the mount that holds ``path`` ('' when unknown)."""
    return mount_of(path, mountinfo)[1]


def mount_of(path: str, mountinfo: str = "/proc/self/mountinfo") -> tuple[str, str]:
    """(mount point, filesystem type) of the mount that holds ``path`` ('' when unknown)."""
    real = os.path.realpath(path if os.path.exists(path) else os.path.dirname(path) or ".")
    best, fstype = "", ""
    try:
        with open(mountinfo, encoding="utf-8") as handle:
            lines = handle.readlines()
    except OSError:
        return "", ""
    for line in lines:
        left, _, right = line.partition(" - ")
        parts = left.split()
        if len(parts) < 5 or not right:
            continue
        mount_point = parts[4].replace("\\040", " ")
        inside = real == mount_point or real.startswith(mount_point.rstrip("/") + "/")
        if inside and len(mount_point) >= len(best):
            best, fstype = mount_point, right.split()[0]
    return best, fstype
