"""The validated run configuration (frozen) and every option check that needs no disk; pure."""

from __future__ import annotations

import os
import resource
import secrets
from dataclasses import asdict, dataclass

from aiobench import ioengines
from aiobench.errors import ConfigError
from aiobench.units import NS_PER_S, bracket_count, expand_brackets, parse_size

DEFAULT_BLOCK = "1M"
# --latpercent9s: more nines ask for a point past what any run has values for (10^11
# operations for 9) and past what a float tells apart from 100.
MAX_NINES = 9
# Every slot is one executor thread; past this many, thread start-up and memory dominate
# and a single interpreter cannot keep them busy anyway (use MPI ranks instead).
MAX_SLOTS = 4096
# Shortest --liveint: intervals much below the ~50 ms executor runs only add noise.
MIN_LIVE_INTERVAL_MS = 10
DEFAULT_LIVE_INTERVAL_MS = 2000  # elbencho's default
# --livecsv/--livejson names that mean stdout, as in elbencho (a file of that name: ./stdout).
STDOUT_NAMES = ("stdout", "-")
DROP_CACHES = "/proc/sys/vm/drop_caches"
# O_DIRECT needs buffers, offsets and lengths aligned to the logical block size; 512 bytes
# is the smallest any Linux block device has.
DIRECT_ALIGN = 512
# Linux moves at most 2 GiB - 4 KiB in one read or write call (MAX_RW_COUNT): a larger
# block would always come back short.
MAX_BLOCK = 0x7FFF_F000
# Instants are int64 nanoseconds of perf_counter_ns (time since boot); limits up to an
# eighth of that range (36 years) leave room for any uptime and the sums made of them.
MAX_SECONDS = 2**60 // NS_PER_S
# Every block's result is kept for the -i summary and the --json document, about 35 KiB
# each in memory (measured: 1000 iterations of WRITE and READ took 145 MB), so 10^4
# iterations of four phases already hold over a GiB.
MAX_ITERATIONS = 10_000
# Dirs and files of one dir-mode layout: 2^40 take 12 days at a million creates a second,
# more than any run does; a larger count is a typing error.
MAX_ENTRIES = 2**40
# Every PATH stays open for the whole run; beside them the interpreter, the event loop,
# its signal wake-up and the result files need a few descriptors.
FD_RESERVE = 32
# The kernel's default fs.nr_open: the most descriptors a process can be allowed.
_NR_OPEN = 1 << 20


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchConfig:
    """Everything a run needs to know, after validation."""

    paths: tuple[str, ...]
    write: bool
    read: bool
    mkdirs: bool = False
    stat: bool = False
    delfiles: bool = False
    deldirs: bool = False
    dirs: int | None = None  # dir mode: dirs per thread (None = not given: 1)
    files: int | None = None  # dir mode: files per dir (None = not given: 1)
    dirsharing: bool = False
    nodelerr: bool = False  # dir mode: deleting an entry that is gone counts as done
    threads: int
    block_size: int
    size: int  # per path, bytes; 0 = detect (reads, block devices)
    iodepth: int
    direct: bool
    rand: bool
    randamount: int | None  # bytes over all threads; None = each thread's whole slice
    norandalign: bool
    backward: bool = False  # sequential access from each slice's end to its start
    strided: bool = False  # thread r takes blocks r, r + threads, r + 2*threads, ...
    trunc: bool = False  # before a write phase: truncate each file to 0
    trunctosize: bool = False  # before a write phase: set each file's size to -s
    preallocfile: bool = False  # before a write phase: posix_fallocate -s bytes
    sync: bool = False  # SYNC block before the first phase and after each
    infloop: bool = False  # each thread starts its work over until the time limit
    iterations: int = 1  # -i: the whole phase sequence, this many times
    verify: int | None = None  # --verify SALT: the word at file offset o holds o + SALT
    verifydirect: bool = False  # read each block back right after writing it
    blockvarpct: int | None = None  # None: stamped pool windows; else % refilled per write
    rwmixpct: int | None = None  # in the write phase, this % of the operations are reads
    limitread: int = 0  # bytes per second per thread in read phases (0 = no limit)
    limitwrite: int = 0  # likewise in write phases
    dropcache: bool = False  # DROPCACHE block likewise (root)
    timelimit_s: int  # 0 = none
    # A finer limit for in-process callers (``aiobench check`` gives each test a share of
    # its budget); when set it is the phase limit instead of timelimit_s. No option sets it.
    timelimit_ns: int = 0
    label: str
    live: bool
    live_interval_ms: int = DEFAULT_LIVE_INTERVAL_MS
    json_path: str | None
    livecsv_path: str | None = None
    livejson_path: str | None = None
    jsonfile_path: str | None = None
    csvfile_path: str | None = None
    resfile_path: str | None = None
    pertarget: bool | None = None  # None: only a hint when one target is slow
    # elbencho's table rows (the JSON has everything anyway).
    lat: bool = False  # min/avg/max latency rows
    latpercent: bool = False  # the percentile row (also with latpercent9s > 0)
    latpercent9s: int = 0  # nines after 99 in that row: 2 = 99.9 and 99.99 too
    lathisto: bool = False  # the histogram row
    cpu: bool = False  # the CPU util % row
    dryrun: bool = False  # print the plan; create, open and measure nothing
    seed: int
    force: bool
    mpi: bool = False  # run as an MPI rank even if no launcher is seen
    nosvcshare: bool = False  # under MPI: each rank works on the whole dataset
    ioengine: str = "python"  # --ioengine, resolved: "native" or "python"
    # No --ioengine, and the native engine is not built here: the run says so.
    ioengine_fallback: bool = False
    argv: tuple[str, ...] = ()

    @property
    def slots(self) -> int:
        return self.threads * self.iodepth

    @property
    def stdout_option(self) -> str | None:
        """The option whose records go to stdout (``-``); the table then goes to stderr."""
        given = [
            ("--json", self.json_path),
            ("--livecsv", self.livecsv_path),
            ("--livejson", self.livejson_path),
        ]
        return next((option for option, path in given if path == "-"), None)

    @property
    def num_dirs(self) -> int:
        return 1 if self.dirs is None else self.dirs

    @property
    def num_files(self) -> int:
        return 1 if self.files is None else self.files

    @property
    def file_phases(self) -> bool:
        """Whether any phase handles files (dir mode: write, stat, read or delete)."""
        return self.write or self.read or self.stat or self.delfiles

    def dir_mode_options(self) -> list[str]:
        """The dir-mode-only options this run gives, as the user would spell them."""
        given = [
            ("-d/--mkdirs", self.mkdirs),
            ("--stat", self.stat),
            ("-F/--delfiles", self.delfiles),
            ("-D/--deldirs", self.deldirs),
            ("-n/--dirs", self.dirs is not None),
            ("-N/--files", self.files is not None),
            ("--dirsharing", self.dirsharing),
            ("--nodelerr", self.nodelerr),
        ]
        return [name for name, on in given if on]

    def output_files(self) -> list[tuple[str, str]]:
        """(option, path) of every file results are written or appended to."""
        given = [
            ("--json", self.json_path),
            ("--jsonfile", self.jsonfile_path),
            ("--csvfile", self.csvfile_path),
            ("--resfile", self.resfile_path),
            ("--livecsv", self.livecsv_path),
            ("--livejson", self.livejson_path),
        ]
        return [(option, path) for option, path in given if path is not None and path != "-"]

    def file_size_options(self) -> list[str]:
        """The options that change a file's size before writing, as the user spells them."""
        given = [
            ("--trunc", self.trunc),
            ("--trunctosize", self.trunctosize),
            ("--preallocfile", self.preallocfile),
        ]
        return [name for name, on in given if on]

    def to_dict(self) -> dict[str, object]:
        out = asdict(self)
        out["paths"] = list(self.paths)
        out["argv"] = list(self.argv)
        return out


def build_config(
    *,
    paths: list[str],
    write: bool,
    read: bool,
    threads: int,
    block: str,
    size: str | None,
    iodepth: int,
    direct: bool,
    rand: bool,
    randamount: str | None,
    norandalign: bool,
    timelimit: int,
    backward: bool = False,
    strided: bool = False,
    trunc: bool = False,
    trunctosize: bool = False,
    preallocfile: bool = False,
    sync: bool = False,
    dropcache: bool = False,
    infloop: bool = False,
    iterations: int = 1,
    verify: int | None = None,
    verifydirect: bool = False,
    blockvarpct: int | None = None,
    rwmixpct: int | None = None,
    limitread: str | None = None,
    limitwrite: str | None = None,
    label: str,
    nolive: bool,
    json_path: str | None,
    live_interval_ms: int = DEFAULT_LIVE_INTERVAL_MS,
    livecsv_path: str | None = None,
    livejson_path: str | None = None,
    jsonfile_path: str | None = None,
    csvfile_path: str | None = None,
    resfile_path: str | None = None,
    pertarget: bool | None = None,
    lat: bool = False,
    latpercent: bool = False,
    latpercent9s: int = 0,
    lathisto: bool = False,
    cpu: bool = False,
    dryrun: bool = False,
    seed: int | None,
    force: bool,
    mpi: bool = False,
    nosvcshare: bool = False,
    ioengine: str | None = None,
    argv: tuple[str, ...] = (),
    mkdirs: bool = False,
    stat: bool = False,
    delfiles: bool = False,
    deldirs: bool = False,
    dirs: int | None = None,
    files: int | None = None,
    dirsharing: bool = False,
    nodelerr: bool = False,
) -> BenchConfig:
    """Turn raw option values into a :class:`BenchConfig`, or raise :class:`ConfigError`."""
    if not paths:
        raise ConfigError("missing PATH: name at least one file, block device or directory")
    _check_path_count(paths)
    expanded: list[str] = []
    for path in paths:
        expanded.extend(expand_brackets(path))
    seen: dict[str, str] = {}
    for path in expanded:
        key = os.path.normpath(os.path.abspath(path))  # f and ./f are one file
        if key in seen:
            also = "" if seen[key] == path else f" (also as {seen[key]})"
            raise ConfigError(f"PATH: {path} is given more than once{also}")
        seen[key] = path
    if not (write or read or mkdirs or stat or delfiles or deldirs):
        raise ConfigError(
            "nothing to do: give -w/--write and/or -r/--read "
            "(in dir mode also -d/--mkdirs, --stat, -F/--delfiles, -D/--deldirs)"
        )
    for name, count in (("-n/--dirs", dirs), ("-N/--files", files)):
        if count is not None and count < 0:
            raise ConfigError(f"{name}: must not be negative (got {count})")
        if count is not None and count > MAX_ENTRIES:
            raise ConfigError(
                f"{name}: at most 2^40 (got {count}); that many entries take 12 days at a "
                "million creates a second"
            )
    if files == 0 and (write or read or stat or delfiles):
        raise ConfigError(
            "-N/--files: 0 files leave nothing to write, read, stat or delete; give 1 or more"
        )
    if threads < 1:
        raise ConfigError(f"-t/--threads: must be at least 1 (got {threads})")
    if iodepth < 1:
        raise ConfigError(f"--iodepth: must be at least 1 (got {iodepth})")
    if threads * iodepth > MAX_SLOTS:
        raise ConfigError(
            f"-t/--threads x --iodepth: {threads * iodepth} slots exceed the limit of "
            f"{MAX_SLOTS} in one process (use MPI ranks for more)"
        )
    _check_entries(threads, dirs, files, dirsharing)
    block_size = parse_size(block, "-b/--block")
    if block_size == 0:
        raise ConfigError("-b/--block: must be greater than 0")
    if block_size > MAX_BLOCK:
        raise ConfigError(
            f"-b/--block: at most {MAX_BLOCK} bytes (2 GiB - 4 KiB), the most Linux moves "
            f"in one read or write call (got {block_size})"
        )
    size_bytes = 0 if size is None else parse_size(size, "-s/--size")
    if timelimit < 0:
        raise ConfigError(f"--timelimit: must not be negative (got {timelimit})")
    if timelimit > MAX_SECONDS:
        raise ConfigError(f"--timelimit: at most {MAX_SECONDS} s, 36 years (got {timelimit})")
    if direct and block_size % DIRECT_ALIGN:
        raise ConfigError(
            f"-b/--block: {block_size} is not a multiple of {DIRECT_ALIGN}, which --direct needs"
        )
    amount: int | None = None
    if randamount is not None:
        if not rand:
            raise ConfigError("--randamount: only applies with --rand")
        amount = parse_size(randamount, "--randamount")
        if amount == 0:
            raise ConfigError("--randamount: must be greater than 0")
    if norandalign and not rand:
        raise ConfigError("--norandalign: only applies with --rand")
    if norandalign and direct:
        raise ConfigError(
            "--norandalign: cannot be combined with --direct (O_DIRECT needs aligned offsets)"
        )
    for name, on in (("--backward", backward), ("--strided", strided)):
        if on and rand:
            raise ConfigError(
                f"{name}: an order of sequential access; cannot be combined with --rand"
            )
    for name, on in (
        ("--trunc", trunc),
        ("--trunctosize", trunctosize),
        ("--preallocfile", preallocfile),
    ):
        if on and not write:
            raise ConfigError(f"{name}: only applies with -w/--write (it acts before writing)")
    if dropcache and not os.access(DROP_CACHES, os.W_OK):
        raise ConfigError(
            f"--dropcache: needs root (it writes {DROP_CACHES}); run as root or leave it out"
        )
    if iterations < 1:
        raise ConfigError(f"-i/--iterations: must be at least 1 (got {iterations})")
    if iterations > MAX_ITERATIONS:
        raise ConfigError(
            f"-i/--iterations: at most {MAX_ITERATIONS} (got {iterations}); every block's "
            "result is kept in memory"
        )
    if verify is not None:
        if not 0 < verify < 2**64:
            raise ConfigError(f"--verify: the salt must be between 1 and 2^64-1 (got {verify})")
        if write and rand:
            raise ConfigError(
                "--verify: cannot check random writes (give -w without --rand, then -r --rand)"
            )
    if blockvarpct is not None:
        if not 0 <= blockvarpct <= 100:
            raise ConfigError(f"--blockvarpct: must be between 0 and 100 (got {blockvarpct})")
        if verify is not None:
            raise ConfigError(
                "--blockvarpct: cannot be combined with --verify (the pattern is the data)"
            )
    limits = {}
    for name, given in (("--limitread", limitread), ("--limitwrite", limitwrite)):
        limits[name] = 0 if given is None else parse_size(given, name)
        if given is not None and limits[name] == 0:
            raise ConfigError(f"{name}: must be greater than 0 bytes per second")
    if rwmixpct is not None:
        _check_rwmix(
            rwmixpct,
            write=write,
            refused=[
                ("--verify", verify is not None),
                ("--limitread", bool(limits["--limitread"])),
                ("--limitwrite", bool(limits["--limitwrite"])),
                ("--trunc", trunc),
            ],
        )
    if verifydirect:
        if verify is None:
            raise ConfigError("--verifydirect: needs --verify SALT (the pattern to check)")
        if not write:
            raise ConfigError("--verifydirect: only applies with -w/--write")
    if backward and strided:
        raise ConfigError("--backward: cannot be combined with --strided (pick one order)")
    if json_path is not None and not json_path:
        raise ConfigError("--json: give a file name or '-' for stdout")
    livecsv_path = "-" if livecsv_path in STDOUT_NAMES else livecsv_path
    livejson_path = "-" if livejson_path in STDOUT_NAMES else livejson_path
    to_stdout = [
        option
        for option, path in (
            ("--json", json_path),
            ("--livecsv", livecsv_path),
            ("--livejson", livejson_path),
        )
        if path == "-"
    ]
    if len(to_stdout) > 1:
        raise ConfigError(
            f"{to_stdout[1]}: {' and '.join(to_stdout)} cannot both write to stdout; "
            "give one of them a file name"
        )
    if live_interval_ms < MIN_LIVE_INTERVAL_MS:
        raise ConfigError(
            f"--liveint: must be at least {MIN_LIVE_INTERVAL_MS} ms (got {live_interval_ms})"
        )
    if live_interval_ms > MAX_SECONDS * 1000:
        raise ConfigError(
            f"--liveint: at most {MAX_SECONDS * 1000} ms, 36 years (got {live_interval_ms})"
        )
    _check_output_names(
        expanded,
        [
            ("--json", json_path if json_path != "-" else None),
            ("--jsonfile", jsonfile_path),
            ("--csvfile", csvfile_path),
            ("--resfile", resfile_path),
            ("--livecsv", livecsv_path if livecsv_path != "-" else None),
            ("--livejson", livejson_path if livejson_path != "-" else None),
        ],
    )
    if not 0 <= latpercent9s <= MAX_NINES:
        raise ConfigError(
            f"--latpercent9s: between 0 and {MAX_NINES} nines after 99 (got {latpercent9s})"
        )
    if seed is not None and not 0 <= seed < 2**63:
        raise ConfigError(f"--seed: must be between 0 and 2^63-1 (got {seed})")
    engine = ioengines.checked(ioengine)
    return BenchConfig(
        paths=tuple(expanded),
        write=write,
        read=read,
        mkdirs=mkdirs,
        stat=stat,
        delfiles=delfiles,
        deldirs=deldirs,
        dirs=dirs,
        files=files,
        dirsharing=dirsharing,
        nodelerr=nodelerr,
        threads=threads,
        block_size=block_size,
        size=size_bytes,
        iodepth=iodepth,
        direct=direct,
        rand=rand,
        randamount=amount,
        norandalign=norandalign,
        backward=backward,
        strided=strided,
        trunc=trunc,
        trunctosize=trunctosize,
        preallocfile=preallocfile,
        sync=sync,
        dropcache=dropcache,
        infloop=infloop,
        iterations=iterations,
        verify=verify,
        verifydirect=verifydirect,
        blockvarpct=blockvarpct,
        rwmixpct=rwmixpct,
        limitread=limits["--limitread"],
        limitwrite=limits["--limitwrite"],
        timelimit_s=timelimit,
        label=label,
        live=not nolive,
        live_interval_ms=live_interval_ms,
        json_path=json_path,
        livecsv_path=livecsv_path,
        livejson_path=livejson_path,
        jsonfile_path=jsonfile_path,
        csvfile_path=csvfile_path,
        resfile_path=resfile_path,
        pertarget=pertarget,
        lat=lat,
        latpercent=latpercent,
        latpercent9s=latpercent9s,
        lathisto=lathisto,
        cpu=cpu,
        dryrun=dryrun,
        seed=secrets.randbits(63) if seed is None else seed,
        force=force,
        mpi=mpi,
        nosvcshare=nosvcshare,
        ioengine=engine,
        ioengine_fallback=ioengine is None and engine == ioengines.PYTHON,
        argv=argv,
    )


def open_file_cap() -> int:
    """How many PATHs a run may have: the descriptors this process may open, less
    :data:`FD_RESERVE`."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        soft = _NR_OPEN
    return max(soft - FD_RESERVE, 1)


def _check_path_count(paths: list[str]) -> None:
    """Bracket ranges are counted before they are expanded: each path is an open file."""
    counts = [bracket_count(path) for path in paths]
    cap = open_file_cap()
    if sum(counts) > cap:
        pattern = paths[counts.index(max(counts))]
        many = f"{pattern} expands to {max(counts)} paths"
        if len(paths) > 1:
            many += f" ({sum(counts)} in all)"
        raise ConfigError(
            f"PATH: {many}, more than the {cap} this process may keep open (each stays "
            "open for the whole run; ulimit -n raises the limit)"
        )


def _check_entries(threads: int, dirs: int | None, files: int | None, sharing: bool) -> None:
    """A dir-mode layout of at most :data:`MAX_ENTRIES` dirs and files."""
    num_dirs = 1 if dirs is None else dirs
    num_files = 1 if files is None else files
    made = num_dirs * (1 if sharing else threads) + threads * max(num_dirs, 1) * num_files
    if made > MAX_ENTRIES:
        option = "-n/--dirs" if files is None else "-N/--files"
        raise ConfigError(
            f"{option}: {threads} threads x {num_dirs} dirs x {num_files} files make "
            f"{made} entries, more than 2^40 (12 days at a million creates a second); "
            "lower -t, -n or -N"
        )


def _check_rwmix(pct: int, *, write: bool, refused: list[tuple[str, bool]]) -> None:
    if not 0 <= pct <= 100:
        raise ConfigError(f"--rwmixpct: must be between 0 and 100 (got {pct})")
    if not write:
        raise ConfigError("--rwmixpct: only applies with -w/--write (it mixes reads into it)")
    pacing = "one thread's reads and writes share one schedule; elbencho paces them apart"
    reasons = {
        "--verify": "a mixed phase neither writes nor checks the whole pattern",
        "--trunc": "it would empty the files the reads need",
        "--limitread": pacing,
        "--limitwrite": pacing,
    }
    for name, given in refused:
        if given:
            why = reasons[name]
            raise ConfigError(f"--rwmixpct: cannot be combined with {name} ({why})")


def _check_output_names(paths: list[str], outputs: list[tuple[str, str | None]]) -> None:
    """Result files: named, each a file of its own, never one of the benchmark PATHs."""
    seen: dict[str, str] = {os.path.realpath(p): "PATH" for p in paths}
    for option, path in outputs:
        if path is None:
            continue
        if not path:
            raise ConfigError(f"{option}: give a file name")
        key = os.path.realpath(path)
        if key in seen:
            raise ConfigError(f"{option}: {path} is also given as {seen[key]}")
        seen[key] = option
