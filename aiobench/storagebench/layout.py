"""Where storagebench's files live on a target, and the ordinary run that makes them; pure.

Each target gets a hidden folder :data:`HIDDEN`; the run is aiobench's dir mode over those
folders with no subdirs and one file per thread: thread rank ``r`` (counted over every host
of the run, ``threads x targets`` per host) writes ``HIDDEN/r<r>-f0`` on target
``r % targets``, so host ``r // (threads x targets)``. A read and ``--cleanup`` find the
files by these names alone.
"""

from __future__ import annotations

import os
import re

HIDDEN = ".aiobench-storagebench"
# The one name the run gives thread rank r's file (aiobench's dir mode, -n 0 -N 1).
FILE_NAME = re.compile(r"r(0|[1-9][0-9]{0,8})-f0")


def hidden_dir(target: str) -> str:
    return os.path.join(target, HIDDEN)


def file_name(rank: int) -> str:
    return f"r{rank}-f0"


def rank_of(name: str) -> int | None:
    """The thread rank whose file ``name`` is; None for any other name."""
    match = FILE_NAME.fullmatch(name)
    return None if match is None else int(match.group(1))


def place(rank: int, threads: int, targets: int) -> tuple[int, int]:
    """(host index, target index) of thread rank ``rank``; ``threads`` per target."""
    return rank // (threads * targets), rank % targets


def run_args(
    *,
    write: bool,
    targets: list[str],
    threads: int,
    size_bytes: int,
    block_bytes: int,
    iodepth: int,
    direct: bool,
    hosts: list[str] | None,
    json_path: str,
    live_path: str,
    live_interval_ms: int,
) -> list[str]:
    """The ordinary ``aiobench`` arguments of one storagebench run (after ``-m aiobench``)."""
    args = ["-w" if write else "-r", "-t", str(threads * len(targets)), "-n", "0", "-N", "1"]
    args += ["-s", str(size_bytes), "-b", str(block_bytes), "--iodepth", str(iodepth)]
    args += ["--direct"] if direct else []
    args += ["--pertarget", "--nolive", "--json", json_path]
    args += ["--livejson", live_path, "--liveint", str(live_interval_ms)]
    args += ["--hosts", ",".join(hosts)] if hosts else []
    return [*args, "--", *(hidden_dir(target) for target in targets)]
