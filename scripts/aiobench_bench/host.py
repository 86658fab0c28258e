"""The machine: files in the page cache, the filesystem, memory and the report's environment."""

from __future__ import annotations

import ctypes
import datetime
import os
import platform
from collections.abc import Callable

from aiobench_bench.common import KIB, MIB, Doc, Figures, Row
from aiobench_bench.procs import Metered, load_json, run_metered, version_of


def lay_out(path: str, size: int) -> None:
    """Write ``size`` random (incompressible) bytes to ``path``."""
    chunk = 128 * KIB
    with open(path, "wb") as handle:
        left = size
        while left:
            n = min(chunk, left)
            handle.write(os.urandom(n))
            left -= n
        handle.flush()
        os.fsync(handle.fileno())


def warm(paths: list[str]) -> None:
    """Flush dirty pages, then read every file once so it sits in the page cache."""
    os.sync()
    buf = bytearray(4 * MIB)
    view = memoryview(buf)
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            while os.readv(fd, [view]):
                pass
        finally:
            os.close(fd)


_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.mmap.restype = ctypes.c_void_p
_LIBC.mmap.argtypes = [
    ctypes.c_void_p,
    ctypes.c_size_t,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_long,
]
_LIBC.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_LIBC.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]


def resident_fraction(paths: list[str]) -> float:
    """Share of the files' pages in the page cache (mincore(2) on a PROT_READ mapping)."""
    page = os.sysconf("SC_PAGE_SIZE")
    resident = pages_total = 0
    for path in paths:
        size = os.path.getsize(path)
        if not size:
            continue
        fd = os.open(path, os.O_RDONLY)
        try:
            addr = _LIBC.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
        finally:
            os.close(fd)
        if addr in (None, ctypes.c_void_p(-1).value):
            return float("nan")
        try:
            pages = (size + page - 1) // page
            vec = (ctypes.c_ubyte * pages)()
            if _LIBC.mincore(addr, size, vec) != 0:
                return float("nan")
            resident += pages - bytes(vec).count(0)
            pages_total += pages
        finally:
            _LIBC.munmap(addr, size)
    return resident / pages_total if pages_total else float("nan")


def fs_type(path: str) -> str:
    """Filesystem type of the mount holding ``path`` (longest matching mount point)."""
    best, kind = "", "?"
    real = os.path.realpath(path)
    try:
        with open("/proc/mounts", encoding="utf-8") as handle:
            for line in handle:
                parts = line.split()
                if len(parts) < 3:
                    continue
                mount = parts[1].replace("\\040", " ")
                inside = real == mount or real.startswith(mount.rstrip("/") + "/")
                if inside and len(mount) >= len(best):
                    best, kind = mount, parts[2]
    except OSError:
        pass
    return kind


def mem_total() -> str:
    try:
        with open("/proc/meminfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    return f"{int(line.split()[1]) / (1024 * 1024):.1f} GiB RAM"
    except OSError:
        pass
    return "? RAM"


def cached_run(
    argv: list[str],
    label: str,
    files: list[str],
    out: str,
    figures: Callable[[Doc], Figures],
    env: dict[str, str] | None = None,
) -> tuple[Figures, Metered]:
    """Warm the cache, run the tool, read its figures from its JSON file ``out``; add how
    clean the run was (foreign load, the files' cached share afterwards)."""
    if os.path.exists(out):
        os.unlink(out)
    warm(files)
    run = run_metered(argv, label, env)
    fig = figures(load_json(out, label))
    fig["foreign_load"] = run.foreign_load
    fig["resident"] = resident_fraction(files)
    return fig, run


def environment(aiobench_exe: list[str], fio_exe: str | None, fs: str) -> Row:
    uname = platform.uname()
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "host": uname.node,
        "kernel": f"{uname.system} {uname.release} {uname.machine}",
        "cpus": os.cpu_count(),
        "memory": mem_total(),
        "aiobench_version": version_of([*aiobench_exe, "--version"]).split()[-1],
        "fio_version": version_of([fio_exe, "--version"]) if fio_exe else "no fio",
        "python": platform.python_version(),
        "fs": fs,
    }
