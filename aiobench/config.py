"""The run configuration: every option declared once, as a field of :class:`BenchConfig`;
:func:`validate` holds every check that needs no disk (pure)."""

from __future__ import annotations

import importlib.util
import os
import random
import re
import resource
from dataclasses import MISSING, dataclass, fields
from operator import attrgetter
from typing import Any

from aiobench.errors import ConfigError
from aiobench.kinds import NATIVE_MODULE, EngineName, PathType
from aiobench.options import (
    COMPAT,
    DIR_MODE,
    OBJECTS,
    OPT,
    OUTPUTS,
    SAFETY,
    SCALE_OUT,
    SECRET,
    WORKLOAD,
    Opt,
    declared,
    option,
    optional_size,
    parsed,
    redacted,
    size,
)
from aiobench.units import (
    NS_PER_S,
    bracket_count,
    expand_brackets,
    parse_duration,
    parse_size,
)

DEFAULT_BLOCK = "1M"
# Every slot is one executor thread; past this many, thread start-up and memory dominate
# and a single interpreter cannot keep them busy anyway (use MPI ranks instead).
MAX_SLOTS = 4096
# Shortest --liveint: intervals much below the executor runs (50-200 ms) only add noise.
MIN_LIVE_INTERVAL_MS = 10
DEFAULT_LIVE_INTERVAL_MS = 2000  # elbencho's default
S3_SCHEME = "s3://"  # a PATH of object storage: s3://bucket[/prefix]
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
# --s3timeout's default: a loopback or LAN request takes milliseconds, a busy gateway's
# slowest (a multipart completion, a large DeleteObjects) seconds; half a minute without
# progress is a server that stopped answering, well before TCP's own timeouts (minutes).
DEFAULT_S3_TIMEOUT_S = 30
# Options of object storage's alone (field name, flag; each field is named as its flag):
# they only apply to s3:// PATHs.
S3_ONLY = tuple(
    (name, f"--{name}")
    for name in (
        "s3statdirs",
        "s3btag",
        "s3btagverify",
        "s3bversion",
        "s3bversionverify",
        "s3olockcfg",
        "s3olockcfgverify",
        "s3otag",
        "s3otagverify",
        "s3aclput",
        "s3aclget",
        "s3baclput",
        "s3baclget",
        "s3aclputinl",
        "s3aclgrantee",
        "s3aclgtype",
        "s3aclgrants",
        "s3aclverify",
        "s3sessiontoken",
        "s3credfile",
        "s3credlist",
        "s3sse",
        "s3sseckey",
        "s3ssekmskey",
        "s3chksumalgo",
        "s3fastput",
        "s3fastget",
        "s3nocompress",
        "s3single",
        "s3targetgbps",
        "s3mpusizevar",
        "s3mpusplit",
        "s3nompcheck",
        "s3nompucompl",
        "s3multiignore404",
        "s3ignoreerrors",
        "s3listobjpar",
        "s3listverify",
        "s3randobj",
        "s3log",
        "s3mix",
        "s3mixops",
    )
)
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


def _path_patterns(given: list[str] | None, name: str) -> tuple[str, ...]:
    """PATH... as given: at least one (:func:`expanded_paths` expands them)."""
    if not given:
        raise ConfigError("missing PATH: name at least one file, block device or directory")
    return tuple(given)


def expanded_paths(patterns: tuple[str, ...], *, literal: bool = False) -> tuple[str, ...]:
    """PATH...: bracket ranges expanded (``literal``, --nopathexp: kept as typed), none
    twice."""
    if literal:
        expanded = list(patterns)
    else:
        _check_path_count(list(patterns))
        expanded = [path for pattern in patterns for path in expand_brackets(pattern)]
    seen: dict[str, str] = {}
    for path in expanded:
        key = os.path.normpath(os.path.abspath(path))  # f and ./f are one file
        if key in seen:
            also = "" if seen[key] == path else f" (also as {seen[key]})"
            raise ConfigError(f"PATH: {path} is given more than once{also}")
        seen[key] = path
    return tuple(expanded)


def _seed(given: int | None, name: str) -> int:
    if given is not None and not 0 <= given < 2**63:
        raise ConfigError(f"{name}: must be between 0 and 2^63-1 (got {given})")
    # (what secrets.randbits is, without the hashing modules secrets loads: ~3 ms of start)
    return random.SystemRandom().getrandbits(63) if given is None else given


def _stdout_name(given: str | None, name: str) -> str | None:
    """--livecsv/--livejson: ``stdout`` is ``-`` (elbencho's name for it)."""
    return "-" if given in STDOUT_NAMES else given


def _rate(given: str | None, name: str) -> int:
    """--limitread/--limitwrite: bytes per second; not given: 0 (no limit)."""
    if given is None:
        return 0
    value = parse_size(given, name)
    if value == 0:
        raise ConfigError(f"{name}: must be greater than 0 bytes per second")
    return value


def duration_ns(given: str | int, name: str, *, whole: bool = False) -> int:
    """A duration option (``10``, ``2.5``, ``90s``, ``1m``, ``1h``; an int from an
    in-process caller is seconds) in nanoseconds, at most :data:`MAX_SECONDS`."""
    return parse_duration(str(given), name, max_s=MAX_SECONDS, whole=whole)


def _timelimit(given: str | int, name: str) -> int:
    """--timelimit in whole seconds, a fraction rounded up (:func:`build_config` keeps the
    exact limit in ``timelimit_ns``), so that a reader of ``timelimit_s`` alone sees a
    limit, and never a shorter one."""
    return -(-duration_ns(given, name) // NS_PER_S)


def _whole_seconds(given: str | int, name: str) -> int:
    return duration_ns(given, name, whole=True) // NS_PER_S


def _not(given: bool, name: str) -> bool:
    return not given


@dataclass(frozen=True, slots=True, kw_only=True, init=False, eq=False, repr=False)
class BenchConfig:
    """Everything a run needs to know, after validation; each option is declared here, once
    (:func:`aiobench.options.option`), in the order of the JSON document's ``config``."""

    paths: tuple[str, ...] = option(
        None,
        "paths",
        help="Files, block devices, directories (dir mode) or s3://bucket[/prefix] (object "
        "storage); [1-4] ranges expand.",
        panel=WORKLOAD,
        cli_type=list[str] | None,
        metavar="PATH",
        parse=_path_patterns,
        argument=True,
    )
    write: bool = option(False, "-w", "--write", help="Write phase.", panel=WORKLOAD)
    read: bool = option(False, "-r", "--read", help="Read phase.", panel=WORKLOAD)
    mkdirs: bool = option(
        False, "-d", "--mkdirs", help="Dir mode: create the dirs (MKDIRS phase).", panel=DIR_MODE
    )
    stat: bool = option(False, "--stat", help="Dir mode: stat every file.", panel=DIR_MODE)
    delfiles: bool = option(
        False, "-F", "--delfiles", help="Dir mode: delete the files.", panel=DIR_MODE
    )
    deldirs: bool = option(
        False, "-D", "--deldirs", help="Dir mode: delete the dirs.", panel=DIR_MODE
    )
    dirs: int | None = option(  # None = not given: 1
        None,
        "-n",
        "--dirs",
        help="Dir mode: dirs per thread (0 = files straight into PATH).",
        panel=DIR_MODE,
        cli_type=int | None,
        metavar="N",
        shown="1",
        low=0,
    )
    files: int | None = option(  # None = not given: 1
        None,
        "-N",
        "--files",
        help="Dir mode: files per dir.",
        panel=DIR_MODE,
        cli_type=int | None,
        metavar="N",
        shown="1",
        low=0,
    )
    dirsharing: bool = option(
        False,
        "--dirsharing",
        help="Dir mode: all threads put their files in one set of dirs.",
        panel=DIR_MODE,
    )
    nodelerr: bool = option(
        False,
        "--nodelerr",
        help="Dir mode: deleting a file or dir that is already gone counts as done "
        "(cleans up after a time-limited or interrupted run).",
        panel=DIR_MODE,
    )
    threads: int = option(
        1, "-t", "--threads", help="Threads (coroutines).", panel=WORKLOAD, metavar="N", low=1
    )
    block_size: int = option(
        DEFAULT_BLOCK,
        "-b",
        "--block",
        help="Block size, e.g. 4k, 1M.",
        panel=WORKLOAD,
        metavar="SIZE",
        parse=size,
    )
    size_bytes: int = option(  # per path; 0 = detect (reads, block devices)
        None,
        "-s",
        "--size",
        help="Size per file (dir mode: 0 = create empty files).",
        panel=WORKLOAD,
        cli_type=str | None,
        metavar="SIZE",
        shown="detect for reads and block devices; 0 in dir mode",
        parse=size,
        json_key="size",
    )
    iodepth: int = option(
        1,
        "--iodepth",
        help="Operations in flight per thread.",
        panel=WORKLOAD,
        metavar="N",
        low=1,
    )
    direct: bool = option(False, "--direct", help="Use O_DIRECT.", panel=WORKLOAD)
    nodiocheck: bool = option(  # elbencho's: for filesystems that take unaligned O_DIRECT
        False,
        "--nodiocheck",
        help="With --direct: do not check that -b (in dir mode also -s) is a multiple of "
        "512 bytes (NFS, for one, takes unaligned direct I/O).",
        panel=WORKLOAD,
    )
    poll: bool = option(
        False,
        "--poll",
        help="With --direct: each thread waits for its reads and writes to complete by "
        "polling on its CPU instead of sleeping in the kernel (fio's "
        "--iodepth_batch_complete_min=0), so on devices that answer in microseconds the "
        "thread's wake-up is not counted in each operation. Takes a whole CPU per thread: "
        "give fewer threads than CPUs. File mode, native engine.",
        panel=WORKLOAD,
    )
    rand: bool = option(False, "--rand", help="Random offsets.", panel=WORKLOAD)
    randamount_bytes: int | None = option(  # over all threads; None = each its whole slice
        None,
        "--randamount",
        help="Bytes to transfer with --rand over all threads.",
        panel=WORKLOAD,
        cli_type=str | None,
        metavar="SIZE",
        shown="each thread its whole slice",
        parse=optional_size,
        json_key="randamount",
    )
    norandalign: bool = option(
        False,
        "--norandalign",
        help="Random offsets not aligned to the block size.",
        panel=WORKLOAD,
    )
    backward: bool = option(
        False,
        "--backward",
        help="Sequential access from the end of each slice backwards.",
        panel=WORKLOAD,
    )
    strided: bool = option(  # thread r takes blocks r, r + threads, r + 2*threads, ...
        False,
        "--strided",
        help="Interleaved access: thread r takes blocks r, r+t, r+2t, ... of all PATHs.",
        panel=WORKLOAD,
    )
    trunc: bool = option(
        False, "--trunc", help="Truncate files to 0 before a write phase.", panel=WORKLOAD
    )
    trunctosize: bool = option(
        False,
        "--trunctosize",
        help="Set each file's size to -s before a write phase (a larger file is cut); in "
        "dir mode each file's, right after its open.",
        panel=WORKLOAD,
    )
    preallocfile: bool = option(
        False,
        "--preallocfile",
        help="Allocate -s bytes (posix_fallocate) before a write phase; in dir mode in "
        "each file, right after its open.",
        panel=WORKLOAD,
    )
    sync: bool = option(
        False,
        "--sync",
        help="Flush the targets' filesystems before the first and after each phase.",
        panel=WORKLOAD,
    )
    infloop: bool = option(
        False,
        "--infloop",
        help="Each thread starts its work over when done, until --timelimit (or Ctrl+C).",
        panel=WORKLOAD,
    )
    iterations: int = option(
        1,
        "-i",
        "--iterations",
        help="Run the whole phase sequence N times, then a summary.",
        panel=WORKLOAD,
        metavar="N",
        low=1,
    )
    verify: int | None = option(  # SALT: the word at file offset o holds o + SALT
        None,
        "--verify",
        help="Write the 64-bit word o + SALT at every file offset o; reads check it and "
        "stop at the first mismatch.",
        panel=WORKLOAD,
        cli_type=int | None,
        metavar="SALT",
        shown="off",
    )
    verifydirect: bool = option(
        False,
        "--verifydirect",
        help="With --verify: read each block back right after writing it.",
        panel=WORKLOAD,
    )
    blockvarpct: int | None = option(  # None: stamped pool windows; else % refilled
        None,
        "--blockvarpct",
        help="Share of each block refilled with new random data before each write "
        "(0 = the same block every time). CPU cost: about 0.3 ms per MiB refilled on "
        "one core. Without it: windows of a random pool, each 4 KiB stamped unique "
        "(incompressible, nothing to dedup) at no cost per write.",
        panel=WORKLOAD,
        cli_type=int | None,
        metavar="PCT",
        shown="no refill",
    )
    rwmixpct: int | None = option(  # in the write phase, this % of the operations read
        None,
        "--rwmixpct",
        help="With -w: PCT % of the operations read instead of write (elbencho's rule: "
        "thread r's operation n reads if (r + n) % 100 < PCT). The files must exist "
        "with their full size; the phase is named RWMIX<PCT>.",
        panel=WORKLOAD,
        cli_type=int | None,
        metavar="PCT",
        shown="off",
    )
    # --- elbencho's generator choices and reader threads (--randalgo, --blockvaralgo,
    # --rwmixthr, --rwmixthrpct): aiobench/plan/randalgo.py, aiobench/plan/workload.py ---
    randalgo: str | None = option(  # None: full coverage for writes, balanced_single else
        None,
        "--randalgo",
        help="Generator of --rand's offsets: fast (golden-ratio Weyl sequence, mixed), "
        "balanced_single (PCG64), balanced (PCG64-DXSM), strong (MT19937, elbencho's "
        "'strong'); each seeded by --seed. Given, it also draws random writes' offsets "
        "(no full coverage then, as in elbencho).",
        panel=WORKLOAD,
        cli_type=str | None,
        metavar="ALGO",
        shown="full coverage for writes, balanced_single for reads",
    )
    blockvaralgo: str = option(
        "fast",
        "--blockvaralgo",
        help="Generator of --blockvarpct's refill: fast (SFC64), balanced_single (PCG64), "
        "balanced (PCG64-DXSM), strong (MT19937); each seeded by --seed.",
        panel=WORKLOAD,
        metavar="ALGO",
    )
    rwmixthr: int | None = option(  # of the -t threads, this many read in the write phase
        None,
        "--rwmixthr",
        help="With -w: the first N of the -t threads (of each host) read instead of "
        "write (their own share of the files, which must exist with their full size); "
        "the phase is named "
        "MIX-T<N>, its reads shown apart as --rwmixpct's are.",
        panel=WORKLOAD,
        cli_type=int | None,
        metavar="N",
        shown="off",
    )
    rwmixthrpct: int | None = option(  # % of the operations that are reads, balanced
        None,
        "--rwmixthrpct",
        help="With --rwmixthr and --infloop: keep the reads at PCT % of all operations "
        "of the bytes (elbencho's balance: the side that runs ahead waits; 0: none).",
        panel=WORKLOAD,
        cli_type=int | None,
        metavar="PCT",
        shown="off",
    )
    # --- end of --randalgo/--blockvaralgo/--rwmixthr ---
    # --- elbencho's access hints, mappings and locks (--fadv, --madv, --mmap, --flock):
    # aiobench/engines/access.py ---
    fadv: str | None = option(
        None,
        "--fadv",
        help="File access hints given to the kernel with posix_fadvise() on each file at "
        "the start of each phase: a comma-separated list of seq, rand, willneed, "
        "dontneed, noreuse.",
        panel=WORKLOAD,
        cli_type=str | None,
        metavar="HINTS",
        shown="none",
    )
    mmap: bool = option(
        False,
        "--mmap",
        help="Read and write files and block devices through a shared memory mapping "
        "(in dir mode each file's, after its open; each operation a copy to or from it). "
        "A mapping cannot make a file larger: writes need --trunctosize or "
        "--preallocfile, or (file mode) files already as large as -s.",
        panel=WORKLOAD,
    )
    madv: str | None = option(
        None,
        "--madv",
        help="With --mmap: access hints given with madvise() on each mapping, a "
        "comma-separated list of seq, rand, willneed, dontneed, hugepage, nohugepage.",
        panel=WORKLOAD,
        cli_type=str | None,
        metavar="HINTS",
        shown="none",
    )
    flock: str | None = option(
        None,
        "--flock",
        help="Take a POSIX lock (fcntl F_SETLKW) around each read and write, inside its "
        "time: range (the operation's bytes) or full (the whole file); a shared lock to "
        "read, an exclusive one to write.",
        panel=WORKLOAD,
        cli_type=str | None,
        metavar="MODE",
        shown="none",
    )
    # --- end of --fadv/--madv/--mmap/--flock ---
    # --- elbencho's CPU binding (--cores, --zones): aiobench/run/affinity.py ---
    cores: str | None = option(
        None,
        "--cores",
        help="Bind the process to these CPU cores (commas or spaces, ranges as 0-3 or "
        "[0-3], or all) and benchmark thread i to entry i mod the list's length (its I/O "
        "threads, native loops included; with --zones, the cores bind).",
        panel=WORKLOAD,
        cli_type=str | None,
        metavar="LIST",
        shown="unbound",
    )
    zones: str | None = option(
        None,
        "--zones",
        help="Bind the process to the CPUs of these NUMA zones (a list as --cores', or "
        "all: each zone with CPUs) and benchmark thread i to entry i mod the list's length.",
        panel=WORKLOAD,
        cli_type=str | None,
        metavar="LIST",
        shown="unbound",
    )
    # --- end of --cores/--zones ---
    # --- elbencho's inline read and stat, and per-thread file descriptors (--readinline,
    # --statinline, --nofdsharing): aiobench/engines/python.py, native.py, posix.py ---
    readinline: bool = option(
        False,
        "--readinline",
        help="With -w: read each block back through the same open file right after writing "
        "it, the read timed with the write as one operation (elbencho's inline read: dir "
        "mode, and file mode too).",
        panel=WORKLOAD,
    )
    statinline: bool = option(
        False,
        "--statinline",
        help="Dir mode: fstat each file right after opening it in the write and read "
        "phases, timed with the file (no effect in file mode, as in elbencho).",
        panel=DIR_MODE,
    )
    nofdsharing: bool = option(
        False,
        "--nofdsharing",
        help="File mode: each thread opens the files or block devices itself instead of all "
        "threads sharing one descriptor per PATH (no effect in dir mode, as in elbencho).",
        panel=WORKLOAD,
    )
    # --- end of --readinline/--statinline/--nofdsharing ---
    limitread_bps: int = option(  # bytes per second per thread in read phases; 0 = none
        None,
        "--limitread",
        help="Read at most SIZE bytes per second per thread, e.g. 20m; latency is also "
        "reported from each operation's scheduled start.",
        panel=WORKLOAD,
        cli_type=str | None,
        metavar="SIZE",
        shown="no limit",
        parse=_rate,
        json_key="limitread",
    )
    limitwrite_bps: int = option(  # likewise in write phases
        None,
        "--limitwrite",
        help="Likewise for writes, per thread.",
        panel=WORKLOAD,
        cli_type=str | None,
        metavar="SIZE",
        shown="no limit",
        parse=_rate,
        json_key="limitwrite",
    )
    dropcache: bool = option(
        False,
        "--dropcache",
        help="Drop the page cache before the first and after each phase (root; use "
        "with --sync, only clean pages can be dropped).",
        panel=WORKLOAD,
    )
    timelimit_s: int = option(  # 0 = none; a fraction of a second rounded up
        "0",
        "--timelimit",
        help="Time per phase: seconds (10, 2.5) or with s, m or h (90s, 1m, 1h); 0 = no limit.",
        panel=WORKLOAD,
        metavar="TIME",
        parse=_timelimit,
    )
    # The exact phase limit where it is not whole seconds (--timelimit 2.5; ``aiobench
    # check`` gives each test a share of its budget), else 0: then timelimit_s applies.
    timelimit_ns: int = 0
    phasedelay_s: int = option(
        "0",
        "--phasedelay",
        help="Time to wait before each phase but the first (the storage settles): whole "
        "seconds, or with s, m or h (1m).",
        panel=WORKLOAD,
        metavar="TIME",
        parse=_whole_seconds,
    )
    label: str = option(
        "",
        "--label",
        help="Label stored in the results.",
        panel=OUTPUTS,
        metavar="TEXT",
        shown="none",
    )
    live: bool = option(
        False,
        "--nolive",
        help="No live progress line (only drawn on a terminal).",
        panel=OUTPUTS,
        parse=_not,
    )
    live_interval_ms: int = option(
        DEFAULT_LIVE_INTERVAL_MS,
        "--liveint",
        help="Interval of the live line and of the latency-over-time series, in ms.",
        panel=OUTPUTS,
        metavar="MS",
    )
    json_path: str | None = option(
        None,
        "--json",
        help="Write one JSON document; '-' = stdout only JSON.",
        panel=OUTPUTS,
        cli_type=str | None,
        metavar="FILE|-",
        shown="none",
    )
    livecsv_path: str | None = option(
        None,
        "--livecsv",
        help="Append a CSV row per interval (elbencho's live columns, then latency); "
        "stdout or '-': to stdout, the table to stderr.",
        panel=OUTPUTS,
        cli_type=str | None,
        metavar="FILE|stdout",
        shown="none",
        parse=_stdout_name,
    )
    livejson_path: str | None = option(
        None,
        "--livejson",
        help="Append a JSON line per interval; stdout or '-': to stdout, the table to stderr.",
        panel=OUTPUTS,
        cli_type=str | None,
        metavar="FILE|stdout",
        shown="none",
        parse=_stdout_name,
    )
    jsonfile_path: str | None = option(
        None,
        "--jsonfile",
        help="Append a JSON line per phase.",
        panel=OUTPUTS,
        cli_type=str | None,
        metavar="FILE",
        shown="none",
    )
    csvfile_path: str | None = option(
        None,
        "--csvfile",
        help="Append a CSV row per phase (elbencho's columns, then percentiles).",
        panel=OUTPUTS,
        cli_type=str | None,
        metavar="FILE",
        shown="none",
    )
    resfile_path: str | None = option(
        None,
        "--resfile",
        help="Append the result table with date and command.",
        panel=OUTPUTS,
        cli_type=str | None,
        metavar="FILE",
        shown="none",
    )
    # --- the operations log (--opslog, --opsloglock): aiobench/run/opslog.py ---
    opslog_path: str | None = option(
        None,
        "--opslog",
        help="Append a JSON line per I/O operation to FILE (created if missing): "
        "op_name, entry_name, offset, length, is_error, result, latency_ns, date, "
        "worker_rank, phase. Written from each run's timings once the run is back, "
        "outside the timed loop; each MPI rank opens FILE on its own host.",
        panel=OUTPUTS,
        cli_type=str | None,
        metavar="FILE",
        shown="none",
    )
    opsloglock: bool = option(
        False,
        "--opsloglock",
        help="Take an exclusive flock on --opslog's FILE around each append of lines, "
        "so that processes (MPI ranks, hosts, other runs) sharing it never interleave.",
        panel=OUTPUTS,
    )
    # --- end of --opslog/--opsloglock ---
    pertarget: bool | None = option(  # None: only a hint when one target is slow
        None,
        "--pertarget/--nopertarget",
        help="Per-target report (min/max target, average, aggregate) in the table; "
        "--nopertarget: not even the line naming a slow target (always in JSON).",
        panel=OUTPUTS,
        cli_type=bool | None,
        shown="only a line naming a target over 10 % below the average",
        show_help="Per-target report [default: as the run had it].",
    )
    # elbencho's table rows (the JSON has everything anyway).
    lat: bool = option(
        False,
        "--lat",
        help="Latency rows (min, avg, max) in the table.",
        panel=OUTPUTS,
        show_help="Add the latency rows.",
    )
    latpercent: bool = option(  # (also shown with latpercent9s > 0)
        False,
        "--latpercent",
        help="Latency percentile row in the table (1, 50, 75, 99 %).",
        panel=OUTPUTS,
        show_help="Add the percentile row.",
    )
    latpercent9s: int = option(  # nines after 99: 2 = 99.9 and 99.99 too
        0,
        "--latpercent9s",
        help="Also N nines after 99 in the percentile row (2: 99.9 and 99.99 %); shows the row.",
        panel=OUTPUTS,
        metavar="N",
        low=0,
        # More nines ask for a point past what any run has values for (10^11 operations for
        # 9) and past what a float tells apart from 100.
        high=9,
        unit="nines after 99",
        show_help="Nines after 99 in the percentile row.",
    )
    lathisto: bool = option(
        False,
        "--lathisto",
        help="Latency histogram row in the table (4 buckets per power of 2 us).",
        panel=OUTPUTS,
        show_help="Add the histogram row.",
    )
    cpu: bool = option(
        False,
        "--cpu",
        help="CPU util % row in the table (this process, all cores).",
        panel=OUTPUTS,
        show_help="Add the CPU util % row.",
    )
    dryrun: bool = option(
        False,
        "--dryrun",
        help="Print the plan (targets, threads, files and dirs per thread, bytes per "
        "phase) and exit; nothing is created, opened or measured.",
        panel=SAFETY,
    )
    seed: int = option(
        None,
        "--seed",
        help="Seed of the random offsets and data (recorded in the results).",
        panel=WORKLOAD,
        cli_type=int | None,
        metavar="N",
        shown="random, recorded",
        parse=_seed,
        default=0,
    )
    force: bool = option(
        False,
        "--force",
        help="Write to a block device even if it holds a filesystem or partition "
        "signature (never when it is mounted), and write more than the target "
        "filesystem has free.",
        panel=SAFETY,
    )
    mpi: bool = option(
        False,
        "--mpi",
        help="Run as one rank of an MPI job (found without it under mpirun and srun); "
        "needs the aiobench[mpi] extra.",
        panel=SCALE_OUT,
    )
    nosvcshare: bool = option(
        False,
        "--nosvcshare",
        help="Under MPI: each rank works on the whole dataset with its own -t threads, "
        "instead of a share of it.",
        panel=SCALE_OUT,
    )
    ioengine: str = option(  # resolved: "native" or "python"
        None,
        "--ioengine",
        help="How operations are issued: native (C) or python (the reference engine); "
        "s3 for s3:// PATHs; net with --netbench.",
        panel=WORKLOAD,
        cli_type=str | None,
        metavar="native|python|s3|net",
        shown="native where it was built, else python; s3 for s3:// PATHs; net with --netbench",
        parse=lambda name, _: checked_engine(name),
        default=EngineName.PYTHON,
    )
    s3endpoints: str | None = option(
        None,
        "--s3endpoints",
        help="S3 endpoints, [http(s)://]host[:port] comma-separated; thread ranks use them "
        "round-robin.",
        panel=OBJECTS,
        cli_type=str | None,
        metavar="URL,URL...",
        shown="AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL",
    )
    s3key: str | None = option(
        None,
        "--s3key",
        help="S3 access key (never shown in results). Temporary credentials: give key, "
        "secret and AWS_SESSION_TOKEN in the environment.",
        panel=OBJECTS,
        cli_type=str | None,
        metavar="KEY",
        shown="AWS_ACCESS_KEY_ID",
        secret=True,
    )
    s3secret: str | None = option(
        None,
        "--s3secret",
        help="S3 secret key (never shown in results).",
        panel=OBJECTS,
        cli_type=str | None,
        metavar="SECRET",
        shown="AWS_SECRET_ACCESS_KEY",
        secret=True,
    )
    s3region: str | None = option(
        None,
        "--s3region",
        help="S3 region the requests are signed for.",
        panel=OBJECTS,
        cli_type=str | None,
        metavar="REGION",
        shown="us-east-1",
    )
    s3virtaddr: bool = option(
        False,
        "--s3virtaddr",
        help="Virtual-host addressing (bucket.host) instead of path style (host/bucket).",
        panel=OBJECTS,
    )
    s3objprefix: str = option(
        "",
        "--s3objprefix",
        help="Put before every object name (after the PATH's prefix).",
        panel=OBJECTS,
        metavar="TEXT",
        shown="none",
    )
    s3listobj: int = option(  # 0 = no LISTOBJ phase
        0,
        "--s3listobj",
        help="LISTOBJ phase: list up to N objects of each bucket (ListObjectsV2 pages "
        "of up to 1000), thread rank r the buckets r, r+t, ...",
        panel=OBJECTS,
        metavar="N",
        shown="0 (no such phase)",
        low=0,
    )
    s3multidel: int = option(  # 0 = no MULTIDEL phase
        0,
        "--s3multidel",
        help="MULTIDEL phase: delete the objects of each bucket in DeleteObjects requests "
        "of up to N keys (a listing, then its keys deleted), thread rank r the buckets "
        "r, r+t, ...",
        panel=OBJECTS,
        metavar="N",
        shown="0 (no such phase)",
        low=0,
        high=1000,
    )
    s3maxconns: int | None = option(
        None,
        "--s3maxconns",
        help="At most N connections per endpoint.",
        panel=OBJECTS,
        cli_type=int | None,
        metavar="N",
        shown="the slots that use the endpoint",
        low=1,
    )
    s3timeout_s: int = option(
        DEFAULT_S3_TIMEOUT_S,
        "--s3timeout",
        help="A request that neither ends nor moves 64 KiB for this long (connecting, "
        "waiting for an answer, sending or receiving) is an error.",
        panel=OBJECTS,
        metavar="SECS",
        low=1,
        high=MAX_SECONDS,
    )
    # -- object storage: ACLs, tags, versioning, object lock, bucket stat (elbencho's
    # metadata phases; aiobench.engines.s3.metadata) ---------------------------------------
    s3statdirs: bool = option(
        False,
        "--s3statdirs",
        help="STATDIRS phase: a HeadBucket request per bucket.",
        panel=OBJECTS,
    )
    s3btag: bool = option(
        False,
        "--s3btag",
        help="Bucket tagging: PUTBUCKETMD (with -d) puts two tags on each bucket, "
        "GETBUCKETMD gets them, DELBUCKETMD (with -D) deletes them.",
        panel=OBJECTS,
    )
    s3btagverify: bool = option(
        False,
        "--s3btagverify",
        help="GETBUCKETMD checks each bucket's tags against those put (needs --s3btag).",
        panel=OBJECTS,
    )
    s3bversion: bool = option(
        False,
        "--s3bversion",
        help="Bucket versioning: PUTBUCKETMD (with -d) suspends it, GETBUCKETMD gets it, "
        "DELBUCKETMD (with -D) enables it, as elbencho does.",
        panel=OBJECTS,
    )
    s3bversionverify: bool = option(
        False,
        "--s3bversionverify",
        help="GETBUCKETMD checks that versioning is Suspended (needs --s3bversion).",
        panel=OBJECTS,
    )
    s3olockcfg: bool = option(
        False,
        "--s3olockcfg",
        help="Object lock: MKBUCKETS makes lock-enabled buckets, PUTBUCKETMD puts a 1-day "
        "COMPLIANCE default retention, GETBUCKETMD gets it. Objects written then are "
        "locked for a day.",
        panel=OBJECTS,
    )
    s3olockcfgverify: bool = option(
        False,
        "--s3olockcfgverify",
        help="GETBUCKETMD checks the lock configuration (needs --s3olockcfg).",
        panel=OBJECTS,
    )
    s3otag: bool = option(
        False,
        "--s3otag",
        help="Object tagging: PUTOBJMD (with -w) puts a tag on each object, GETOBJMD gets "
        "it, DELOBJMD (with -F) deletes it.",
        panel=OBJECTS,
    )
    s3otagverify: bool = option(
        False,
        "--s3otagverify",
        help="GETOBJMD checks each object's tag against the one put (needs --s3otag).",
        panel=OBJECTS,
    )
    s3aclput: bool = option(
        False,
        "--s3aclput",
        help="PUTOBJACL phase: put each object's ACL (--s3aclgrantee, --s3aclgtype, "
        "--s3aclgrants).",
        panel=OBJECTS,
    )
    s3aclget: bool = option(
        False,
        "--s3aclget",
        help="GETOBJACL phase: get each object's ACL.",
        panel=OBJECTS,
    )
    s3baclput: bool = option(
        False,
        "--s3baclput",
        help="PUTBACL phase: put each bucket's ACL (as --s3aclput).",
        panel=OBJECTS,
    )
    s3baclget: bool = option(
        False,
        "--s3baclget",
        help="GETBACL phase: get each bucket's ACL.",
        panel=OBJECTS,
    )
    s3aclputinl: bool = option(
        False,
        "--s3aclputinl",
        help="Upload objects with their ACL in the request (x-amz-acl or x-amz-grant-*; the "
        "grantee as type=value, e.g. id=123).",
        panel=OBJECTS,
    )
    s3aclgrantee: str | None = option(
        None,
        "--s3aclgrantee",
        help="ACL grantee: an id, email or URI (by --s3aclgtype), or a canned ACL: private, "
        "public-read, public-read-write, authenticated-read, aws-exec-read, "
        "bucket-owner-read, bucket-owner-full-control.",
        panel=OBJECTS,
        cli_type=str | None,
        metavar="GRANTEE",
        shown="none",
    )
    s3aclgtype: str | None = option(
        None,
        "--s3aclgtype",
        help="ACL grantee type: id, email, uri or group.",
        panel=OBJECTS,
        cli_type=str | None,
        metavar="TYPE",
        shown="none",
    )
    s3aclgrants: str | None = option(
        None,
        "--s3aclgrants",
        help="ACL permissions, comma-separated: none, full, read, write, racp, wacp.",
        panel=OBJECTS,
        cli_type=str | None,
        metavar="PERMS",
        shown="none",
    )
    s3aclverify: bool = option(
        False,
        "--s3aclverify",
        help="GETOBJACL and GETBACL check that the grants given are there.",
        panel=OBJECTS,
    )
    # -- object storage: credentials, encryption, checksums and signing of each request
    # (aiobench.engines.s3.policy) ----------------------------------------------------------
    s3sessiontoken: str | None = option(
        None,
        "--s3sessiontoken",
        help="S3 session token of temporary credentials (never shown in results).",
        panel=OBJECTS,
        cli_type=str | None,
        metavar="TOKEN",
        shown="AWS_SESSION_TOKEN with the environment's key and secret",
        secret=True,
    )
    s3credfile: str | None = option(
        None,
        "--s3credfile",
        help="A file of credentials, one KEY:SECRET a line (# comments): thread rank r uses "
        "the (r mod lines)-th; buckets are made public-read-write for them all.",
        panel=OBJECTS,
        cli_type=str | None,
        metavar="FILE",
        shown="none",
    )
    s3credlist: str | None = option(
        None,
        "--s3credlist",
        help="Credentials KEY:SECRET,KEY:SECRET,... used as --s3credfile's (never shown).",
        panel=OBJECTS,
        cli_type=str | None,
        metavar="LIST",
        shown="none",
        secret=True,
    )
    s3sse: bool = option(
        False,
        "--s3sse",
        help="Server-side encryption of uploads with S3's keys (SSE-S3, AES256).",
        panel=OBJECTS,
    )
    s3sseckey: str | None = option(
        None,
        "--s3sseckey",
        help="SSE-C: encrypt with this base64 AES-256 key, sent with every object request "
        "(never shown).",
        panel=OBJECTS,
        cli_type=str | None,
        metavar="KEY",
        shown="none",
        secret=True,
    )
    s3ssekmskey: str | None = option(
        None,
        "--s3ssekmskey",
        help="SSE-KMS: encrypt uploads with this KMS key id.",
        panel=OBJECTS,
        cli_type=str | None,
        metavar="KEYID",
        shown="none",
    )
    s3chksumalgo: str | None = option(
        None,
        "--s3chksumalgo",
        help="Send each upload's checksum (CRC32, CRC32C, SHA1 or SHA256) for the server to "
        "check (x-amz-checksum-*).",
        panel=OBJECTS,
        cli_type=str | None,
        metavar="ALGO",
        shown="none",
    )
    s3sign: int = option(
        2,
        "--s3sign",
        help="Payload signing: 0 signed over http, not over https (the AWS SDK's rule); 1 "
        "always (a SHA-256 of each body); 2 never (UNSIGNED-PAYLOAD).",
        panel=OBJECTS,
        metavar="0|1|2",
        low=0,
        high=2,
    )
    s3fastput: bool = option(
        False,
        "--s3fastput",
        help="Uploads with the least client CPU: --s3sign 2 (and no compression, which "
        "aiobench never does).",
        panel=OBJECTS,
    )
    s3fastget: bool = option(
        False,
        "--s3fastget",
        help="Downloads kept nowhere (aiobench's GETs always land in one reused buffer per "
        "slot); refused with --verify, as in elbencho.",
        panel=OBJECTS,
    )
    s3nocompress: bool = option(
        False,
        "--s3nocompress",
        help="No request compression (aiobench never compresses requests).",
        panel=OBJECTS,
    )
    s3single: bool = option(
        False,
        "--s3single",
        help="One client shared by all threads (aiobench always shares one client per "
        "endpoint and credential).",
        panel=OBJECTS,
    )
    s3targetgbps: int | None = option(
        None,
        "--s3targetgbps",
        help="The AWS CRT client's throughput target; no effect, as in elbencho's builds "
        "without the CRT (connections: --s3maxconns).",
        panel=OBJECTS,
        cli_type=int | None,
        metavar="GBPS",
        shown="none",
        low=1,
    )
    # -- object storage: multipart uploads and errors (aiobench.engines.s3.engine) -------
    s3mpusizevar: int = option(
        None,
        "--s3mpusizevar",
        help="Multipart uploads: take a random 0..N-1 bytes off each part but the last, "
        "which grows by as much.",
        panel=OBJECTS,
        metavar="SIZE",
        shown="0",
        parse=size,
        cli_type=str | None,
    )
    s3mpusplit: int = option(
        None,
        "--s3mpusplit",
        help="The AWS CRT client's own part size; no effect, as in elbencho's builds without "
        "the CRT (parts are -b).",
        panel=OBJECTS,
        metavar="SIZE",
        shown="0",
        parse=size,
        cli_type=str | None,
    )
    s3nompcheck: bool = option(
        False,
        "--s3nompcheck",
        help="Allow multipart uploads of more than 10,000 parts (S3's limit).",
        panel=OBJECTS,
    )
    s3nompucompl: bool = option(
        False,
        "--s3nompucompl",
        help="Send no CompleteMultipartUpload: the uploads stay incomplete (no objects).",
        panel=OBJECTS,
    )
    s3multiignore404: bool = option(
        False,
        "--s3multiignore404",
        help="A CompleteMultipartUpload answered 404 is no error (a retried completion).",
        panel=OBJECTS,
    )
    s3ignoreerrors: bool = option(
        False,
        "--s3ignoreerrors",
        help="A failed upload or download is no error: the run goes on, the failed request "
        "is not counted as an I/O operation.",
        panel=OBJECTS,
    )
    # -- object storage: parallel listing, random objects, request log -----------------------
    s3listobjpar: bool = option(
        False,
        "--s3listobjpar",
        help="LISTOBJ_P phase: each thread lists its own prefixes of the -n/-N dataset "
        "(ListObjectsV2 pages of up to 1000).",
        panel=OBJECTS,
    )
    s3listverify: bool = option(
        False,
        "--s3listverify",
        help="LISTOBJ_P checks that each prefix lists exactly its objects, in order (needs "
        "--s3listobjpar).",
        panel=OBJECTS,
    )
    s3randobj: bool = option(
        False,
        "--s3randobj",
        help="READ: ranged GETs of one block, each of a random object of the thread's "
        "(--randamount bytes over all threads; default: the dataset's size).",
        panel=OBJECTS,
    )
    s3log: int = option(
        0,
        "--s3log",
        help="Request log level: 0 none; 1-3 failed requests; 4 every request; 5-6 also its "
        "headers (credentials left out).",
        panel=OBJECTS,
        metavar="0-6",
        low=0,
        high=6,
    )
    s3logprefix: str = option(
        "aws_sdk_",
        "--s3logprefix",
        help="The request log's path and file name prefix; DATE.log is added (YYYY-MM-DD-HH).",
        panel=OBJECTS,
        metavar="PREFIX",
    )
    # -- object storage: the MIXED phase (aiobench.engines.s3.mixed) -------------------------
    s3mix: str | None = option(
        None,
        "--s3mix",
        help="MIXED phase (after READ): GETs, PUTs, DELETEs and HEADs of the thread's "
        "objects in these shares of 100, as warp mixed, each kind reported apart.",
        panel=OBJECTS,
        cli_type=str | None,
        metavar="get=70,put=20,delete=5,stat=5",
        shown="no such phase",
    )
    s3mixops: int | None = option(
        None,
        "--s3mixops",
        help="MIXED: operations per thread (or until --timelimit).",
        panel=OBJECTS,
        cli_type=int | None,
        metavar="N",
        shown="the thread's objects (-n x -N)",
        low=1,
    )
    # --- elbencho drop-in: custom tree and output options (#24) ---
    nopathexp: bool = option(
        False,
        "--nopathexp",
        help="Take each PATH literally: no expansion of [1-4] ranges.",
        panel=WORKLOAD,
    )
    nocsvlabels: bool = option(
        False,
        "--nocsvlabels",
        help="No header row with the column labels in a new --csvfile.",
        panel=OUTPUTS,
    )
    treefile: str | None = option(
        None,
        "--treefile",
        help="Dir mode: a custom tree in PATH, as listed in FILE (elbencho's tree file: "
        "'d DIR' and 'f BYTES FILE' lines, names relative to PATH; other lines skipped). "
        "With --treescan: where the scan is written.",
        panel=DIR_MODE,
        cli_type=str | None,
        metavar="FILE",
        shown="none; with --treescan /var/tmp/aiobench_USER_treescan.txt",
    )
    treescan: str | None = option(
        None,
        "--treescan",
        help="Dir mode: scan DIR (its dirs and regular files, no symlinks) into a tree file "
        "(--treefile) and run on that tree in PATH.",
        panel=DIR_MODE,
        cli_type=str | None,
        metavar="DIR",
        shown="none",
    )
    treerand: bool = option(
        False,
        "--treerand",
        help="Custom tree: files in a random order (by --seed) instead of by size.",
        panel=DIR_MODE,
    )
    treeroundup_bytes: int = option(
        None,
        "--treeroundup",
        help="Custom tree: round every file size up to a multiple of SIZE (for --direct).",
        panel=DIR_MODE,
        cli_type=str | None,
        metavar="SIZE",
        shown="0: as listed",
        parse=size,
        json_key="treeroundup",
    )
    sharesize_bytes: int = option(
        None,
        "--sharesize",
        help="Custom tree: files of at least SIZE are split between the threads, each "
        "writing or reading its part; smaller ones go whole to one thread.",
        panel=DIR_MODE,
        cli_type=str | None,
        metavar="SIZE",
        shown="32 blocks",
        parse=size,
        json_key="sharesize",
    )
    live1: bool = option(
        False,
        "--live1",
        help="The live progress as one line redrawn in place (aiobench's only live view "
        "on a terminal; elbencho's default there is a full screen).",
        panel=OUTPUTS,
    )
    live1n: bool = option(
        False,
        "--live1n",
        help="The live progress as a new line on stderr at each --liveint, on a terminal "
        "or not (a log file, a pipe).",
        panel=OUTPUTS,
    )
    allelapsed: bool = option(
        False,
        "--allelapsed",
        help="A row with each thread's time to completion in ms, by thread rank.",
        panel=OUTPUTS,
        show_help="Add each thread's time to completion.",
    )
    no0usecerr: bool = option(
        False,
        "--no0usecerr",
        help="No warning under a phase whose fastest thread completed in less than 1 "
        "microsecond (its rates show as 0).",
        panel=OUTPUTS,
        show_help="Leave out the warning of a fastest thread under 1 microsecond.",
    )
    livecsvex: bool = option(
        False,
        "--livecsvex",
        help="With --livecsv: also a row per thread at each interval (its rank, done %, "
        "bytes and entries so far).",
        panel=OUTPUTS,
    )
    log: int = option(
        0,
        "--log",
        help="elbencho's log level: 0 normal, 1 verbose, 2 debug; 1 and up add the IOs "
        "total row (blocks read or written) to the table.",
        panel=OUTPUTS,
        metavar="LEVEL",
        low=0,
        high=2,
        unit="(0 normal, 1 verbose, 2 debug)",
        show_help="Log level: 1 and up add the IOs total row.",
    )
    dirstats: bool = option(
        False,
        "--dirstats",
        help="Dir mode: Dirs/s and Dirs total rows in the write and read phases (a dir "
        "counts as done once all its -N files are; not with a custom tree).",
        panel=OUTPUTS,
        show_help="Add the Dirs/s and Dirs total rows (dir mode).",
    )
    # --- end of the custom tree and output options ---
    # --- elbencho drop-in (#24): netbench (aiobench/engines/net) ---
    netbench: bool = option(
        False,
        "--netbench",
        help="Network benchmark instead of storage: each client thread sends -b blocks "
        "(-s per thread) over TCP to a server and waits for --respsize bytes back after "
        "each; the ranks are --servers then --clients (needs MPI).",
        panel=SCALE_OUT,
    )
    servers: str | None = option(
        None,
        "--servers",
        help="Netbench: the server hosts, comma-separated (one MPI rank each).",
        panel=SCALE_OUT,
        cli_type=str | None,
        metavar="HOST,HOST...",
        shown="none",
    )
    clients: str | None = option(
        None,
        "--clients",
        help="Netbench: the client hosts, comma-separated (one MPI rank each).",
        panel=SCALE_OUT,
        cli_type=str | None,
        metavar="HOST,HOST...",
        shown="none",
    )
    serversfile: str | None = option(
        None,
        "--serversfile",
        help="Netbench: the server hosts, one per line (# comments).",
        panel=SCALE_OUT,
        cli_type=str | None,
        metavar="FILE",
        shown="none",
    )
    clientsfile: str | None = option(
        None,
        "--clientsfile",
        help="Netbench: the client hosts, one per line (# comments).",
        panel=SCALE_OUT,
        cli_type=str | None,
        metavar="FILE",
        shown="none",
    )
    respsize_bytes: int = option(
        "1",
        "--respsize",
        help="Netbench: bytes a server sends back for each block received.",
        panel=SCALE_OUT,
        cli_type=str,
        metavar="SIZE",
        shown="1",
        parse=size,
        json_key="respsize",
    )
    sendbuf_bytes: int = option(
        "0",
        "--sendbuf",
        help="Netbench: the sockets' send buffer size (SO_SNDBUF); 0: the system's.",
        panel=SCALE_OUT,
        cli_type=str,
        metavar="SIZE",
        shown="0",
        parse=size,
        json_key="sendbuf",
    )
    recvbuf_bytes: int = option(
        "0",
        "--recvbuf",
        help="Netbench: the sockets' receive buffer size (SO_RCVBUF); 0: the system's.",
        panel=SCALE_OUT,
        cli_type=str,
        metavar="SIZE",
        shown="0",
        parse=size,
        json_key="recvbuf",
    )
    netdevs: str | None = option(
        None,
        "--netdevs",
        help="Netbench: network devices (eth0,...) that the client connections are bound "
        "to, round-robin (SO_BINDTODEVICE; needs root).",
        panel=SCALE_OUT,
        cli_type=str | None,
        metavar="DEV,DEV...",
        shown="none",
    )
    # --- end of netbench ---
    # --- elbencho drop-in (#24): distributed options (MPI ranks, --hosts) ---
    start_epoch: int | None = option(  # UTC seconds since the epoch; None: at once
        None,
        "--start",
        help="Start the first phase at this instant, UTC seconds since the epoch (date "
        "+%s); every rank waits for it (synchronized clocks), with a countdown.",
        panel=SCALE_OUT,
        cli_type=int | None,
        metavar="EPOCH",
        shown="at once",
        low=0,
        high=2**40,  # (year 36812: a typing error)
        json_key="start",
    )
    rankoffset: int = option(
        0,
        "--rankoffset",
        help="Number the threads from N (dir mode: their dirs r<N>...; their seeds), as "
        "elbencho's worker ranks; under MPI added to every rank's.",
        panel=SCALE_OUT,
        metavar="N",
        low=0,
        high=MAX_SLOTS * 2**20,  # (far past any job's thread count)
    )
    rotatehosts: int = option(
        0,
        "--rotatehosts",
        help="Under MPI: in each phase, rank r works on the share of rank r + N*phase "
        "(modulo the ranks), so that no host reads what it wrote itself.",
        panel=SCALE_OUT,
        metavar="N",
        low=0,
        high=2**31,
    )
    svcelapsed: bool = option(
        False,
        "--svcelapsed",
        help="Under MPI: a row with each rank's completion time (its slowest thread), "
        "fastest first, as elbencho's 'Svc compl. time'.",
        panel=SCALE_OUT,
        show_help="Add the ranks' completion time row.",
    )
    # No --ioengine, and the native engine is not built here: the run says so.
    ioengine_fallback: bool = False
    argv: tuple[str, ...] = ()

    # __init__, __eq__, __hash__ and __repr__ are written here, once for all fields, not
    # generated: Python 3.11 compiles each generated method from its source, and for ~160
    # fields that took ~6 ms of every start. They do what the dataclass's would.

    def __init__(self, **values: Any) -> None:
        """Every field from ``values`` or its default; a missing or unknown one is a
        TypeError (build_config makes the one call, and dataclasses.replace)."""
        for name, default in _INIT_DEFAULTS:
            value = values.pop(name, default)
            if value is MISSING:
                raise TypeError(f"BenchConfig: missing field {name!r}")
            object.__setattr__(self, name, value)
        if values:
            raise TypeError(f"BenchConfig: unknown fields {', '.join(sorted(values))}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _field_values(self) == _field_values(other)

    def __hash__(self) -> int:
        return hash(_field_values(self))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name, _ in _INIT_DEFAULTS)
        return f"BenchConfig({shown})"

    @property
    def phase_limit_ns(self) -> int:
        """The time limit of each phase; 0 = none."""
        return self.timelimit_ns or self.timelimit_s * NS_PER_S

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

    def s3_options(self) -> list[str]:
        """The object-storage-only options this run gives, as the user spells them."""
        given = [
            ("--s3endpoints", self.s3endpoints is not None),
            ("--s3key", self.s3key is not None),
            ("--s3secret", self.s3secret is not None),
            ("--s3region", self.s3region is not None),
            ("--s3virtaddr", self.s3virtaddr),
            ("--s3objprefix", bool(self.s3objprefix)),
            ("--s3listobj", bool(self.s3listobj)),
            ("--s3multidel", bool(self.s3multidel)),
            ("--s3maxconns", self.s3maxconns is not None),
            ("--s3timeout", self.s3timeout_s != DEFAULT_S3_TIMEOUT_S),
        ]
        given += [(flag, getattr(self, name) not in (None, False, 0)) for name, flag in S3_ONLY]
        given.append(("--s3sign", self.s3sign != 2))
        given.append(("--s3logprefix", self.s3logprefix != "aws_sdk_"))
        return [name for name, on in given if on]

    @property
    def s3_meta_phases(self) -> bool:
        """Whether object storage's metadata phases have work without -d, -w, ... (their
        GET and stat phases, and the ACL phases, run on their own)."""
        return any(
            (
                self.s3statdirs,
                self.s3baclput,
                self.s3baclget,
                self.s3aclput,
                self.s3aclget,
                self.s3btag,
                self.s3olockcfg,
                self.s3bversion,
                self.s3otag,
                self.s3listobjpar,
                self.s3mix is not None,
            )
        )

    def file_size_options(self) -> list[str]:
        """The options that change a file's size before writing, as the user spells them."""
        given = [
            ("--trunc", self.trunc),
            ("--trunctosize", self.trunctosize),
            ("--preallocfile", self.preallocfile),
        ]
        return [name for name, on in given if on]

    @property
    def object_storage(self) -> bool:
        """Whether the PATHs are S3 buckets (``s3://``)."""
        return any(path.startswith(S3_SCHEME) for path in self.paths)

    def to_dict(self) -> dict[str, object]:
        """The JSON document's ``config``: every field, by its JSON key (a secret option
        given: :data:`~aiobench.options.SECRET`)."""
        out: dict[str, object] = {}
        for f in fields(self):
            opt: Opt | None = f.metadata.get(OPT)
            value = getattr(self, f.name)
            if opt is not None and opt.secret and value is not None:
                value = SECRET
            out[opt.json_key or f.name if opt else f.name] = (
                list(value) if isinstance(value, tuple) else value
            )
        return out


# BenchConfig's fields, in order, with their defaults (MISSING: required), and a getter of
# all their values (a tuple, as the dataclass's __eq__ and __hash__ compare).
_INIT_DEFAULTS = tuple((f.name, f.default) for f in fields(BenchConfig))
_field_values = attrgetter(*(name for name, _ in _INIT_DEFAULTS))

# Options of the command line only, not of a run: where to launch it.
LAUNCH_OPTIONS = (
    Opt(
        flags=("--hosts",),
        help="Run the same command on these hosts, one MPI rank each (a host named twice "
        "gets two), through the mpirun found next to this Python or on PATH.",
        panel=SCALE_OUT,
        given=None,
        cli_type=str | None,
        metavar="HOST,HOST...",
        shown="this host only",
    ),
    Opt(
        flags=("--hostsfile",),
        help="Likewise, the hosts one per line (# comments).",
        panel=SCALE_OUT,
        given=None,
        cli_type=str | None,
        metavar="FILE",
        shown="none",
    ),
)


def native_built() -> bool:
    """Whether the native engine's C extension is installed here: found, not loaded (the
    config loads no engine; one that is found but does not load is refused when made)."""
    return importlib.util.find_spec(NATIVE_MODULE) is not None


def checked_engine(name: str | None) -> str:
    """The engine a run uses: ``name`` (``--ioengine``), or the default (native where it
    was built, else python); raises :class:`ConfigError` for an unknown one or a native
    engine that is not built."""
    if name is None:
        return EngineName.NATIVE if native_built() else EngineName.PYTHON
    names = tuple(EngineName)
    if name not in names:
        raise ConfigError(f"--ioengine: must be one of {', '.join(names)} (got {name!r})")
    if name == EngineName.NATIVE and not native_built():
        raise ConfigError(
            f"--ioengine native: the C extension {NATIVE_MODULE} is not built here "
            "(install with a C compiler and Python's headers), or use --ioengine python"
        )
    return name


def _engine_for_paths(name: str, given: bool, objects: bool, netbench: bool = False) -> str:
    """The engine for the run's PATHs: s3:// ones take the S3 engine, which takes nothing
    else, and --netbench the net engine (``given``: ``name`` came from --ioengine)."""
    if netbench:
        if given and name != EngineName.NET:
            raise ConfigError(f"--ioengine {name}: --netbench runs on its own engine, net")
        return EngineName.NET
    if name == EngineName.NET:
        raise ConfigError("--ioengine net: only with --netbench")
    if objects and given and name != EngineName.S3:
        raise ConfigError(f"--ioengine {name}: does not do object storage (s3:// PATHs)")
    if not objects and name == EngineName.S3:
        raise ConfigError("--ioengine s3: only for s3:// PATHs (buckets)")
    return EngineName.S3 if objects else name


def build_config(*, argv: tuple[str, ...] = (), **raw: object) -> BenchConfig:
    """A :class:`BenchConfig` of raw option values, named as the long options are
    (``block="4k"``, ``nolive=True``; one not given takes its default), or
    :class:`ConfigError`. Besides :func:`validate`, it checks what this process may do
    (``--dropcache`` needs the right to drop the page cache)."""
    values = parsed(BenchConfig, raw)
    patterns = values["paths"]
    assert isinstance(patterns, tuple)
    values["paths"] = expanded_paths(patterns, literal=bool(values["nopathexp"]))
    limit_ns = duration_ns(str(raw.get("timelimit", 0)), "--timelimit")  # (parsed: valid)
    values["timelimit_ns"] = limit_ns if limit_ns % NS_PER_S else 0
    paths = values["paths"]
    assert isinstance(paths, tuple)
    objects = any(str(path).startswith(S3_SCHEME) for path in paths)
    engine = values["ioengine"]
    assert isinstance(engine, str)
    values["ioengine"] = _engine_for_paths(
        engine, raw.get("ioengine") is not None, objects, bool(values["netbench"])
    )
    values["ioengine_fallback"] = raw.get("ioengine") is None and (
        values["ioengine"] == EngineName.PYTHON
    )
    argv = redacted(argv, [opt for _, opt in declared(BenchConfig)])
    cfg = BenchConfig(argv=argv, **values)
    validate(cfg)
    if cfg.dropcache and not os.access(DROP_CACHES, os.W_OK):
        raise ConfigError(
            f"--dropcache: needs root (it writes {DROP_CACHES}); run as root or leave it out"
        )
    return cfg


def validate(cfg: BenchConfig, path_type: PathType | None = None) -> None:
    """Every check of options together that needs no disk; raises :class:`ConfigError`.

    With ``path_type`` (what the engine found at PATH, :mod:`aiobench.plan.targets`), also
    the checks of options against it (dir mode refuses --rand, ...)."""
    phases = (cfg.write, cfg.read, cfg.mkdirs, cfg.stat, cfg.delfiles, cfg.deldirs)
    if not any(phases) and not (cfg.s3listobj or cfg.s3multidel or cfg.s3_meta_phases):
        raise ConfigError(
            "nothing to do: give -w/--write and/or -r/--read "
            "(in dir mode also -d/--mkdirs, --stat, -F/--delfiles, -D/--deldirs)"
        )
    for name, count in (("-n/--dirs", cfg.dirs), ("-N/--files", cfg.files)):
        if count is not None and count > MAX_ENTRIES:
            raise ConfigError(
                f"{name}: at most 2^40 (got {count}); that many entries take 12 days at a "
                "million creates a second"
            )
    if cfg.files == 0 and cfg.file_phases:
        raise ConfigError(
            "-N/--files: 0 files leave nothing to write, read, stat or delete; give 1 or more"
        )
    if cfg.slots > MAX_SLOTS:
        raise ConfigError(
            f"-t/--threads x --iodepth: {cfg.slots} slots exceed the limit of "
            f"{MAX_SLOTS} in one process (use MPI ranks for more)"
        )
    _check_entries(cfg.threads, cfg.dirs, cfg.files, cfg.dirsharing)
    _check_workload(cfg)
    _check_outputs(cfg)
    _check_elbencho_options(cfg, path_type)
    _check_randalgo_rwmixthr(cfg, path_type)
    _check_opslog(cfg)
    _check_access(cfg, path_type)
    cpu_sets(cfg)  # (--cores, --zones: each named CPU or zone exists here)
    _check_inline(cfg, path_type)
    _check_poll(cfg, path_type)
    if path_type == PathType.S3:
        _check_objects(cfg)
        return
    if path_type is not None:
        s3_only = cfg.s3_options()
        if s3_only:
            raise ConfigError(f"{s3_only[0]}: only applies to object storage (s3:// PATHs)")
    if path_type == PathType.DIR:
        _check_dir_mode(cfg)
    elif path_type is not None:
        _check_file_mode(cfg, path_type)


def _check_workload(cfg: BenchConfig) -> None:
    block = cfg.block_size
    if block == 0:
        raise ConfigError("-b/--block: must be greater than 0")
    if block > MAX_BLOCK:
        raise ConfigError(
            f"-b/--block: at most {MAX_BLOCK} bytes (2 GiB - 4 KiB), the most Linux moves "
            f"in one read or write call (got {block})"
        )
    if cfg.direct and not cfg.nodiocheck and block % DIRECT_ALIGN:
        raise ConfigError(
            f"-b/--block: {block} is not a multiple of {DIRECT_ALIGN}, which --direct needs"
        )
    if cfg.s3listverify and not cfg.s3listobjpar:
        raise ConfigError("--s3listverify: needs --s3listobjpar (it checks that listing)")
    if cfg.randamount_bytes is not None and not (cfg.rand or cfg.s3randobj):
        raise ConfigError("--randamount: only applies with --rand (or --s3randobj)")
    if cfg.norandalign and not cfg.rand:
        raise ConfigError("--norandalign: only applies with --rand")
    if cfg.norandalign and cfg.direct:
        raise ConfigError(
            "--norandalign: cannot be combined with --direct (O_DIRECT needs aligned offsets)"
        )
    for name, on in (("--backward", cfg.backward), ("--strided", cfg.strided)):
        if on and cfg.rand:
            raise ConfigError(
                f"{name}: an order of sequential access; cannot be combined with --rand"
            )
    for name in cfg.file_size_options():
        if not cfg.write:
            raise ConfigError(f"{name}: only applies with -w/--write (it acts before writing)")
    if cfg.iterations > MAX_ITERATIONS:
        raise ConfigError(
            f"-i/--iterations: at most {MAX_ITERATIONS} (got {cfg.iterations}); every block's "
            "result is kept in memory"
        )
    if cfg.verify is not None:
        if not 0 < cfg.verify < 2**64:
            raise ConfigError(f"--verify: the salt must be between 1 and 2^64-1 (got {cfg.verify})")
        if cfg.write and cfg.rand:
            raise ConfigError(
                "--verify: cannot check random writes (give -w without --rand, then -r --rand)"
            )
    if cfg.blockvarpct is not None:
        if not 0 <= cfg.blockvarpct <= 100:
            raise ConfigError(f"--blockvarpct: must be between 0 and 100 (got {cfg.blockvarpct})")
        if cfg.verify is not None:
            raise ConfigError(
                "--blockvarpct: cannot be combined with --verify (the pattern is the data)"
            )
    _check_rwmix(cfg)
    if cfg.verifydirect:
        if cfg.verify is None:
            raise ConfigError("--verifydirect: needs --verify SALT (the pattern to check)")
        if not cfg.write:
            raise ConfigError("--verifydirect: only applies with -w/--write")
    if cfg.backward and cfg.strided:
        raise ConfigError("--backward: cannot be combined with --strided (pick one order)")


def _check_outputs(cfg: BenchConfig) -> None:
    if cfg.json_path is not None and not cfg.json_path:
        raise ConfigError("--json: give a file name or '-' for stdout")
    to_stdout = [
        option
        for option, path in (
            ("--json", cfg.json_path),
            ("--livecsv", cfg.livecsv_path),
            ("--livejson", cfg.livejson_path),
        )
        if path == "-"
    ]
    if len(to_stdout) > 1:
        raise ConfigError(
            f"{to_stdout[1]}: {' and '.join(to_stdout)} cannot both write to stdout; "
            "give one of them a file name"
        )
    interval = cfg.live_interval_ms
    if interval < MIN_LIVE_INTERVAL_MS:
        raise ConfigError(f"--liveint: must be at least {MIN_LIVE_INTERVAL_MS} ms (got {interval})")
    if interval > MAX_SECONDS * 1000:
        raise ConfigError(f"--liveint: at most {MAX_SECONDS * 1000} ms, 36 years (got {interval})")
    _check_output_names(
        list(cfg.paths),
        [
            ("--json", cfg.json_path if cfg.json_path != "-" else None),
            ("--jsonfile", cfg.jsonfile_path),
            ("--csvfile", cfg.csvfile_path),
            ("--resfile", cfg.resfile_path),
            ("--livecsv", cfg.livecsv_path if cfg.livecsv_path != "-" else None),
            ("--livejson", cfg.livejson_path if cfg.livejson_path != "-" else None),
        ],
    )


def _check_dir_mode(cfg: BenchConfig) -> None:
    """Dir mode (PATH is a directory) refuses what only file mode has."""
    for name, given in (
        ("--rand", cfg.rand),
        ("--randamount", cfg.randamount_bytes is not None),
        ("--norandalign", cfg.norandalign),
        ("--backward", cfg.backward),
        ("--strided", cfg.strided),
    ):
        if given:
            raise ConfigError(f"{name}: not supported in dir mode (files are read whole)")
    not_yet = (
        ("--infloop", cfg.infloop),
        ("--verify", cfg.verify is not None),
        ("--blockvarpct", cfg.blockvarpct is not None),
        ("--rwmixpct", cfg.rwmixpct is not None),
        ("--limitread", bool(cfg.limitread_bps)),
        ("--limitwrite", bool(cfg.limitwrite_bps)),
    )
    for name, given in not_yet:
        if given:
            raise ConfigError(f"{name}: not supported in dir mode yet")
    if cfg.trunc:  # (--trunctosize, --preallocfile: each file after its open, as elbencho)
        raise ConfigError("--trunc: not supported in dir mode yet (files are created whole)")
    if cfg.direct and not cfg.nodiocheck and cfg.size_bytes % DIRECT_ALIGN:
        raise ConfigError(
            f"-s/--size: {cfg.size_bytes} is not a multiple of {DIRECT_ALIGN}, which --direct needs"
        )
    if cfg.num_dirs == 0 and (cfg.mkdirs or cfg.deldirs) and not cfg.file_phases:
        raise ConfigError("-n/--dirs: 0 dirs leave -d/--mkdirs and -D/--deldirs nothing to do")


def _check_objects(cfg: BenchConfig) -> None:
    """Object storage (s3:// PATHs) refuses what only files have, and what it does not do
    yet."""
    files_only = (
        ("--direct", cfg.direct),
        ("--backward", cfg.backward),
        ("--strided", cfg.strided),
        ("--dirsharing", cfg.dirsharing),
        ("--sync", cfg.sync),
        ("--dropcache", cfg.dropcache),
        *((name, True) for name in cfg.file_size_options()),
    )
    for name, given in files_only:
        if given:
            raise ConfigError(f"{name}: only applies to files, not object storage (s3://)")
    if cfg.rand and cfg.write:
        raise ConfigError(
            "--rand: object storage reads random blocks (-r --rand); it writes whole objects"
        )
    not_yet = (
        ("--norandalign", cfg.norandalign),
        ("--infloop", cfg.infloop),
        ("--verifydirect", cfg.verifydirect),
        ("--blockvarpct", cfg.blockvarpct is not None),
        ("--rwmixpct", cfg.rwmixpct is not None),
    )
    for name, given in not_yet:
        if given:
            raise ConfigError(f"{name}: not supported for object storage (s3://) yet")


def _check_file_mode(cfg: BenchConfig, path_type: PathType) -> None:
    """File and block-device mode refuse dir mode's options."""
    kind = "block device" if path_type == PathType.BLOCKDEV else path_type
    dir_only = cfg.dir_mode_options()
    if dir_only:
        raise ConfigError(
            f"{dir_only[0]}: only applies in dir mode (PATH is a directory), "
            f"but {cfg.paths[0]} is a {kind}"
        )
    resizing = cfg.file_size_options()
    if resizing and path_type == PathType.BLOCKDEV:
        raise ConfigError(f"{resizing[0]}: only applies to files (a block device keeps its size)")


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


def _check_rwmix(cfg: BenchConfig) -> None:
    pct = cfg.rwmixpct
    if pct is None:
        return
    if not 0 <= pct <= 100:
        raise ConfigError(f"--rwmixpct: must be between 0 and 100 (got {pct})")
    if not cfg.write:
        raise ConfigError("--rwmixpct: only applies with -w/--write (it mixes reads into it)")
    pacing = "one thread's reads and writes share one schedule; elbencho paces them apart"
    reasons = {
        "--verify": "a mixed phase neither writes nor checks the whole pattern",
        "--trunc": "it would empty the files the reads need",
        "--limitread": pacing,
        "--limitwrite": pacing,
    }
    refused = (
        ("--verify", cfg.verify is not None),
        ("--limitread", bool(cfg.limitread_bps)),
        ("--limitwrite", bool(cfg.limitwrite_bps)),
        ("--trunc", cfg.trunc),
    )
    for name, given in refused:
        if given:
            why = reasons[name]
            raise ConfigError(f"--rwmixpct: cannot be combined with {name} ({why})")


def _check_output_names(paths: list[str], outputs: list[tuple[str, str | None]]) -> None:
    """Result files: named, each a file of its own, never one of the benchmark PATHs."""
    seen: dict[str, str] = {os.path.realpath(p): "PATH" for p in paths}
    for name, path in outputs:
        if path is None:
            continue
        if not path:
            raise ConfigError(f"{name}: give a file name")
        key = os.path.realpath(path)
        if key in seen:
            raise ConfigError(f"{name}: {path} is also given as {seen[key]}")
        seen[key] = name


def _check_elbencho_options(cfg: BenchConfig, path_type: PathType | None) -> None:
    """elbencho's output options, and the custom tree's (--treefile, --treescan and what
    shapes the tree)."""
    if cfg.livecsvex and cfg.livecsv_path is None:
        raise ConfigError("--livecsvex: only applies with --livecsv FILE")
    for name, given in (("--live1", cfg.live1), ("--live1n", cfg.live1n)):
        if given and not cfg.live:
            raise ConfigError(f"{name}: cannot be combined with --nolive (no live view)")
    tree = cfg.treefile is not None or cfg.treescan is not None
    if not tree:
        for name, given in (
            ("--treerand", cfg.treerand),
            ("--treeroundup", bool(cfg.treeroundup_bytes)),
            ("--sharesize", bool(cfg.sharesize_bytes)),
        ):
            if given:
                raise ConfigError(f"{name}: only applies with --treefile or --treescan")
        return
    option = "--treefile" if cfg.treescan is None else "--treescan"
    if cfg.treefile is not None and not cfg.treefile:
        raise ConfigError("--treefile: give a file name")
    if cfg.treescan is not None and cfg.treescan.startswith(S3_SCHEME):
        raise ConfigError("--treescan: scans a directory; s3:// is not supported")
    for name, given in (
        ("-n/--dirs", cfg.dirs is not None),
        ("-N/--files", cfg.files is not None),
        ("--dirsharing", cfg.dirsharing),
    ):
        if given:
            raise ConfigError(f"{name}: cannot be combined with {option} (the tree lists them)")
    if len(cfg.paths) > 1:
        raise ConfigError(f"{option}: takes one PATH, the directory the tree is made in")
    if path_type is not None and path_type != PathType.DIR:
        raise ConfigError(f"{option}: PATH must be a directory (dir mode), not a {path_type}")


# --- elbencho drop-in (#24): the config file and the options aiobench only recognizes ---
# elbencho's -c/--configfile: its name=value lines become options before the command line
# is parsed (aiobench.compat.configfile); the command line wins.
CONFIGFILE_OPTION = Opt(
    flags=("-c", "--configfile"),
    help="Read options from FILE: OPTION=VALUE lines (long names without --), # comments; "
    "flags take true/false, yes/no, on/off, 1/0. The command line wins.",
    panel=WORKLOAD,
    given=None,
    cli_type=str | None,
    metavar="FILE",
    shown="none",
)
# elbencho's --numhosts: of the hosts --hosts/--hostsfile name, the first N get ranks.
NUMHOSTS_OPTION = Opt(
    flags=("--numhosts",),
    help="With --hosts/--hostsfile: use only the first N hosts named.",
    panel=SCALE_OUT,
    given=None,
    cli_type=int | None,
    metavar="N",
    shown="all",
    low=1,
)
_SERVICE = (
    "elbencho's service mode is not needed: aiobench runs the same command on every host "
    "as an MPI job; give --hosts HOST,... or --hostsfile FILE (or start it with mpirun "
    "or srun)"
)
_STOP = (
    "there are no services to {}: an MPI run (--hosts, mpirun, srun) stops on Ctrl+C or "
    "SIGTERM to its launcher (mpirun), which passes it to every rank"
)
_GPU = (
    "GPU buffers and GPUDirect Storage are not available: aiobench does no GPU transfers "
    "(they need CUDA)"
)
# elbencho's GPU options, with their value's placeholder (None: a flag).
_GPU_OPTIONS = (
    ("--gpuids", "IDS"),
    ("--gpuperservice", None),
    ("--cufile", None),
    ("--cufiledriveropen", None),
    ("--cuhostbufreg", None),
    ("--gds", None),
    ("--gdsbufreg", None),
)


def _recognized(flag: str, short: str, answer: str, arg: str | None = None) -> Opt:
    """An elbencho option aiobench recognizes and answers: ``short`` for --help,
    ``answer`` when given (``arg``: its value's placeholder, None for a flag)."""
    return Opt(
        flags=(flag,),
        help=short,
        panel=COMPAT,
        given=False if arg is None else None,
        cli_type=bool if arg is None else str | None,
        metavar=arg,
        recognized=answer,
    )


RECOGNIZED_OPTIONS = (
    *(
        _recognized(flag, "elbencho's service mode: aiobench uses --hosts (MPI).", _SERVICE, arg)
        for flag, arg in (
            ("--service", None),
            ("--foreground", None),
            ("--port", "PORT"),
            ("--svcpwfile", "FILE"),
            ("--svcping", None),
            ("--svcupint", "MS"),
            ("--svcwait", "SECS"),
        )
    ),
    *(
        _recognized(
            flag,
            "elbencho's: stop an MPI run with Ctrl+C or SIGTERM to mpirun.",
            _STOP.format(flag.lstrip("-")),
        )
        for flag in ("--quit", "--interrupt")
    ),
    *(
        _recognized(flag, "elbencho's GPU option: not available (no GPU transfers).", _GPU, arg)
        for flag, arg in _GPU_OPTIONS
    ),
)
# Every option of the command line that is no field of BenchConfig.
COMMAND_LINE_OPTIONS = (
    *LAUNCH_OPTIONS,
    NUMHOSTS_OPTION,
    CONFIGFILE_OPTION,
    *RECOGNIZED_OPTIONS,
)


def refuse_recognized(given: dict[str, object]) -> None:
    """:class:`ConfigError` for the first recognized-only option in ``given`` (raw values
    by :attr:`Opt.name`): how aiobench does that job; for a GPU option without CUDA, what
    is missing."""
    gpu = {flag for flag, _ in _GPU_OPTIONS}
    for opt in RECOGNIZED_OPTIONS:
        if given.get(opt.name, opt.given) == opt.given:
            continue
        if opt.flags[0] in gpu:
            from aiobench.compat.cuda import missing

            lacking = missing()
            if lacking:
                raise ConfigError(f"{opt.label}: needs CUDA, not found here: {'; '.join(lacking)}")
        raise ConfigError(f"{opt.label}: {opt.recognized}")


# --randalgo/--blockvaralgo names (elbencho's), see aiobench/plan/randalgo.py.
RAND_ALGOS = ("fast", "balanced_single", "balanced", "strong")


def _check_randalgo_rwmixthr(cfg: BenchConfig, path_type: PathType | None) -> None:
    """--randalgo, --blockvaralgo, --rwmixthr and --rwmixthrpct (elbencho's rules)."""
    for name, algo in (("--randalgo", cfg.randalgo), ("--blockvaralgo", cfg.blockvaralgo)):
        if algo is not None and algo not in RAND_ALGOS:
            raise ConfigError(f"{name}: must be one of {', '.join(RAND_ALGOS)} (got {algo!r})")
    if cfg.rwmixthr is None:
        if cfg.rwmixthrpct is not None:
            raise ConfigError("--rwmixthrpct: only applies with --rwmixthr")
        return
    if cfg.rwmixthr < 0:
        raise ConfigError(f"--rwmixthr: must be 0 or more (got {cfg.rwmixthr})")
    if not cfg.write:
        raise ConfigError("--rwmixthr: only applies with -w/--write (its threads read in it)")
    if cfg.rwmixpct is not None:
        raise ConfigError("--rwmixthr: cannot be combined with --rwmixpct")
    if path_type is not None and path_type not in (PathType.FILE, PathType.BLOCKDEV):
        raise ConfigError("--rwmixthr: only applies to files and block devices as PATHs")
    for name, given in (("--verify", cfg.verify is not None), ("--trunc", cfg.trunc)):
        if given:
            raise ConfigError(f"--rwmixthr: cannot be combined with {name}")
    pct = cfg.rwmixthrpct
    if pct is None:
        return
    if not 0 <= pct <= 100:
        raise ConfigError(f"--rwmixthrpct: must be between 0 and 100 (got {pct})")
    if cfg.limitread_bps or cfg.limitwrite_bps:
        raise ConfigError("--rwmixthrpct: cannot be combined with --limitread or --limitwrite")
    if pct and not cfg.infloop:
        raise ConfigError(
            "--rwmixthrpct: needs --infloop (the threads held back would run dry otherwise)"
        )
    if pct and not 0 < cfg.rwmixthr < cfg.threads:
        raise ConfigError(
            "--rwmixthrpct: needs reader and writer threads (--rwmixthr between 1 and "
            f"-t minus 1, got {cfg.rwmixthr} of {cfg.threads})"
        )


# --- --opslog/--opsloglock (aiobench/run/opslog.py opens and writes the log) ---
def _check_opslog(cfg: BenchConfig) -> None:
    """--opslog needs a name; --opsloglock needs --opslog."""
    if cfg.opslog_path is not None and not cfg.opslog_path:
        raise ConfigError("--opslog: give a file name")
    if cfg.opsloglock and cfg.opslog_path is None:
        raise ConfigError("--opsloglock: only applies with --opslog")
    if cfg.netbench and cfg.opslog_path is not None:
        raise ConfigError("--opslog: does not apply to --netbench (no file or object I/O)")


# --fadv/--madv names (elbencho's) and --flock's modes, see aiobench/engines/access.py.
FADV_HINTS = ("seq", "rand", "willneed", "dontneed", "noreuse")
MADV_HINTS = ("seq", "rand", "willneed", "dontneed", "hugepage", "nohugepage")
FLOCK_MODES = ("range", "full")


def hint_list(text: str | None) -> tuple[str, ...]:
    """--fadv's or --madv's comma-separated names (none given: ())."""
    if text is None:
        return ()
    return tuple(name.strip() for name in text.split(",") if name.strip())


def _check_access(cfg: BenchConfig, path_type: PathType | None) -> None:
    """--fadv, --madv, --mmap and --flock: elbencho's names; files and block devices."""
    for name, text, known in (("--fadv", cfg.fadv, FADV_HINTS), ("--madv", cfg.madv, MADV_HINTS)):
        names = hint_list(text)
        if text is not None and not names:
            raise ConfigError(f"{name}: give one or more of {', '.join(known)}")
        for hint in names:
            if hint not in known:
                raise ConfigError(f"{name}: must be a list of {', '.join(known)} (got {hint!r})")
    if cfg.flock is not None and cfg.flock not in FLOCK_MODES:
        raise ConfigError(f"--flock: must be one of {', '.join(FLOCK_MODES)} (got {cfg.flock!r})")
    given = [
        name
        for name, on in (
            ("--fadv", cfg.fadv is not None),
            ("--mmap", cfg.mmap),
            ("--madv", cfg.madv is not None),
            ("--flock", cfg.flock is not None),
        )
        if on
    ]
    if given and path_type == PathType.S3:
        raise ConfigError(f"{given[0]}: only applies to files, not object storage (s3://)")
    if cfg.mmap and cfg.iodepth > 1:
        raise ConfigError("--mmap: cannot be combined with --iodepth above 1 (as in elbencho)")
    sized = cfg.trunctosize or cfg.preallocfile
    if cfg.mmap and cfg.write and path_type == PathType.DIR and not sized:
        # (elbencho maps -s bytes of each new, empty file and dies of SIGBUS at the first
        # store)
        raise ConfigError(
            "--mmap: dir mode's files may be new (empty), and writes through a mapping "
            "cannot extend them; add --trunctosize or --preallocfile"
        )


NODES = "/sys/devices/system/node"  # the NUMA zones, node<N>/cpulist each
# elbencho splits its zone and core lists at commas and spaces, and expands a bracketed
# entry ("[0-3,6]") as it does host names; a bare range ("0-3") is aiobench's addition.
_LIST_SPLIT = re.compile(r"[,\s]+(?![^\[]*\])")  # (not inside brackets)
_MAX_NUMBER = 1 << 16  # above Linux's largest NR_CPUS (8192): "0-999999999" is refused early


def _numbers(text: str, name: str, once: bool = True) -> list[int]:
    """A list as the kernel writes CPU lists ("0,2-3") or as elbencho takes them (commas or
    spaces, "[0-3,6]" expanded), in order; each number once unless ``once`` is False (a
    user's list keeps its repeats: "0,0,1" puts threads 0 and 1 on core 0, as elbencho)."""
    out: list[int] = []
    for entry in _LIST_SPLIT.split(text.strip()):
        inner = entry[1:-1] if entry.startswith("[") and entry.endswith("]") else entry
        for part in inner.split(","):
            low, dash, high = part.strip().partition("-")
            if not (low.isdecimal() and (not dash or high.isdecimal())):
                raise ConfigError(
                    f"{name}: not a list of numbers and ranges such as 0,2-3 ({entry!r})"
                )
            first, last = int(low), int(high) if dash else int(low)
            if last < first:
                raise ConfigError(f"{name}: range {part.strip()} runs backwards")
            if last > _MAX_NUMBER:
                raise ConfigError(f"{name}: {last} is beyond any CPU or zone number")
            out.extend(n for n in range(first, last + 1) if not (once and n in out))
    return out


def _listed(text: str, name: str) -> list[int]:
    """A user's --cores or --zones list (empty entries left out, as elbencho does)."""
    entries = [entry for entry in _LIST_SPLIT.split(text.strip()) if entry]
    if not entries:
        raise ConfigError(f"{name}: names no number (a list such as 0,2-3, or all)")
    return _numbers(",".join(entries), name, once=False)


def _zone_cpus(zone: int) -> frozenset[int]:
    try:
        with open(f"{NODES}/node{zone}/cpulist", encoding="ascii") as handle:
            listed = handle.read().strip()
    except OSError:
        raise ConfigError(f"--zones: there is no NUMA zone {zone} here ({NODES})") from None
    return frozenset(_numbers(listed, "--zones")) if listed else frozenset()


def _zones(spec: str, allowed: set[int]) -> list[tuple[int, frozenset[int]]]:
    """Each zone of ``spec`` with its CPUs (of ``allowed``); ``all``: each online zone
    that has one (zones of memory alone left out)."""
    if spec == "all":
        try:
            with open(f"{NODES}/online", encoding="ascii") as handle:
                online = _numbers(handle.read().strip(), "--zones")
        except OSError:
            raise ConfigError(f"--zones: this kernel shows no NUMA zones ({NODES})") from None
        zones = [(z, cpus) for z in online if (cpus := _zone_cpus(z) & allowed)]
        if not zones:
            raise ConfigError("--zones: no NUMA zone has a CPU this process may use")
        return zones
    if not os.path.isdir(NODES):
        raise ConfigError(f"--zones: this kernel shows no NUMA zones ({NODES})")
    zones = []
    for zone in _listed(spec, "--zones"):
        cpus = _zone_cpus(zone) & allowed
        if not cpus:
            raise ConfigError(f"--zones: zone {zone} has no CPU this process may use")
        zones.append((zone, cpus))
    return zones


def memory_zones(cfg: BenchConfig) -> tuple[int, ...]:
    """--zones: the zone each benchmark thread's memory prefers (thread i: entry i mod
    their count, as elbencho's workers; with --cores too); () without --zones."""
    if cfg.zones is None:
        return ()
    return tuple(zone for zone, _ in _zones(cfg.zones, os.sched_getaffinity(0)))


def cpu_sets(cfg: BenchConfig) -> tuple[frozenset[int], ...]:
    """--cores or --zones: the CPUs of each entry of the list (benchmark thread i runs on
    entry i mod their count; the process on all of them); () when neither is given.
    Both given: the zones are checked and the cores bind, as in elbencho (whose core
    binding comes after, and replaces, its zone binding).
    Raises :class:`ConfigError` for a core this process may not use or a zone not here."""
    allowed = os.sched_getaffinity(0)
    zones = _zones(cfg.zones, allowed) if cfg.zones is not None else []
    if cfg.cores is None:
        return tuple(cpus for _, cpus in zones)
    cores = sorted(allowed) if cfg.cores == "all" else _listed(cfg.cores, "--cores")
    for core in cores:
        if core not in allowed:
            usable = ",".join(map(str, sorted(allowed)))
            raise ConfigError(f"--cores: core {core} is not one this process may use ({usable})")
    return tuple(frozenset((core,)) for core in cores)


def _check_poll(cfg: BenchConfig, path_type: PathType | None) -> None:
    """--poll: the native engine's Linux AIO path (direct, plain reads and stamped writes
    of files and block devices) is where a thread waits for completions."""
    if not cfg.poll:
        return
    if path_type == PathType.DIR or cfg.object_storage or cfg.netbench:
        raise ConfigError("--poll: only applies to files and block devices (file mode)")
    if cfg.ioengine != EngineName.NATIVE:
        if cfg.ioengine_fallback:
            raise ConfigError(
                f"--poll: needs the native engine, and the C extension {NATIVE_MODULE} is "
                "not built here (install with a C compiler and Python's headers)"
            )
        raise ConfigError(f"--poll: needs --ioengine native (not {cfg.ioengine})")
    if not cfg.direct:
        raise ConfigError(
            "--poll: needs --direct (without it the kernel does each operation inside its "
            "submission, and there is no completion to wait for)"
        )
    for name, given in (
        ("--verify", cfg.verify is not None),
        ("--blockvarpct", cfg.blockvarpct is not None and cfg.write),
        ("--rwmixpct", cfg.rwmixpct is not None),
        ("--limitread", bool(cfg.limitread_bps)),
        ("--limitwrite", bool(cfg.limitwrite_bps)),
        ("--mmap", cfg.mmap),
        ("--flock", cfg.flock is not None),
        ("--readinline", cfg.readinline),
    ):
        if given:
            raise ConfigError(
                f"--poll: cannot be combined with {name} (its operations are not run "
                "through Linux AIO, where --poll waits)"
            )


def _check_inline(cfg: BenchConfig, path_type: PathType | None) -> None:
    """--readinline, --statinline and --nofdsharing (elbencho's rules, and what files only
    have)."""
    if cfg.readinline:
        if not cfg.write:
            raise ConfigError("--readinline: only applies with -w/--write (it reads back writes)")
        if cfg.iodepth > 1:
            raise ConfigError(
                "--readinline: cannot be combined with --iodepth above 1 (as in elbencho)"
            )
    if path_type == PathType.S3:
        for name, given in (
            ("--readinline", cfg.readinline),
            ("--statinline", cfg.statinline),
            ("--nofdsharing", cfg.nofdsharing),
        ):
            if given:
                raise ConfigError(f"{name}: only applies to files, not object storage (s3://)")
    if cfg.nofdsharing and path_type not in (None, PathType.DIR):
        # Each thread holds its own descriptor per PATH, beside the shared one.
        needed = len(cfg.paths) * (cfg.threads + 1)
        cap = open_file_cap()
        if needed > cap:
            raise ConfigError(
                f"--nofdsharing: {len(cfg.paths)} paths x (-t {cfg.threads} + 1) need "
                f"{needed} open files, more than the {cap} this process may open"
            )
