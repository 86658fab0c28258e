"""The floor under a tiny run's start-up: what aiobench's design has to load and start
before its first timed operation, and nothing of aiobench.

It imports aiobench's packages (typer, numpy with numpy.random, hdrhistogram, anyio with
its asyncio backend, uvloop), starts an event loop as aiobench does (anyio on uvloop), and
writes one 4 KiB block to FILE from an executor thread. It prints the wall clock (seconds
since the epoch) at that write's start: the startup section's time from exec to the first
operation of this program is the least a run of aiobench could take on this machine with
these packages, with no option parsed, no plan made and no result kept. With
--without-numpy it leaves numpy out: the floor of a plain run on the native engine, which
loads numpy only where it computes with it (random offsets, several targets, ...).

Usage: python startfloor.py [--without-numpy] FILE
"""

from __future__ import annotations

import os
import sys
import time

import anyio
import anyio.to_thread
import hdrh.histogram  # noqa: F401  (loaded by every run: its latency histograms)
import typer  # noqa: F401  (the command line)
import uvloop  # noqa: F401  (anyio's loop, as aiobench starts it)

BLOCK = 4096


def write_one(path: str) -> float:
    """Write one block of zeros at offset 0 of ``path``; the wall clock at its start."""
    block = bytes(BLOCK)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        started = time.time()
        os.pwrite(fd, block, 0)
        return started
    finally:
        os.close(fd)


async def first_op(path: str) -> float:
    return await anyio.to_thread.run_sync(write_one, path)


def main() -> None:
    args = sys.argv[1:]
    with_numpy = args[:1] != ["--without-numpy"]
    if not with_numpy:
        args = args[1:]
    if len(args) != 1:
        sys.exit(__doc__.rstrip().rsplit("\n", 1)[-1])
    if with_numpy:  # (the offsets' and the write buffers' generators: numpy.random)
        import numpy.random  # noqa: F401
    options = {"use_uvloop": True}
    print(repr(anyio.run(first_op, args[0], backend="asyncio", backend_options=options)))


if __name__ == "__main__":
    main()
