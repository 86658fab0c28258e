"""Netbench's data path on one rank: a server answers its connections, a client's threads
each drive one connection; both through the native loops of :mod:`._netnative` (the GIL
released, every block timed in C)."""

from __future__ import annotations

import errno as errnos
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from aiobench.engines.net import sockets
from aiobench.errors import ConfigError
from aiobench.run.affinity import Binding

Int64Array = np.ndarray[Any, np.dtype[np.int64]]


def native() -> Any:
    """The native loops, or :class:`ConfigError` when the extension is not built."""
    try:
        from aiobench.engines.net import _netnative
    except ImportError:
        raise ConfigError(
            "--netbench: the C extension aiobench.engines.net._netnative is not built "
            "here; reinstall aiobench with a C compiler"
        ) from None
    return _netnative


@dataclass(frozen=True, slots=True, kw_only=True)
class Sizes:
    total: int  # per connection (-s)
    block: int  # -b
    resp: int  # --respsize

    @property
    def blocks(self) -> int:
        """Blocks per connection: the last one short when -s is no multiple of -b."""
        return -(-self.total // self.block)


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerCounts:
    received: int
    sent: int
    responses: int
    error: str | None


@dataclass(slots=True, kw_only=True)
class ThreadRun:
    sent: int = 0
    received: int = 0
    blocks: int = 0
    start_ns: int = 0
    elapsed_ns: int = 0
    times: Int64Array | None = None  # (latency, end instant) per block
    error: str | None = None


def _failure(what: str, code: int) -> str:
    if code < 0:
        return f"{what}: the peer closed the connection early"
    return f"{what}: {os.strerror(code)} (errno {errnos.errorcode.get(code, code)})"


def serve(
    listener: socket.socket,
    connections: int,
    sizes: Sizes,
    binding: Binding | None = None,
) -> ServerCounts:
    """Accept ``connections`` clients and answer each in its own thread until it has sent
    its -s; the counts over all of them. Connection i's thread is bound as benchmark
    thread i (--cores, --zones)."""
    loops = native()
    results: list[tuple[int, int, int, int]] = []
    conns = [sockets.accepted(listener) for _ in range(connections)]

    def one(i: int, conn: socket.socket) -> None:
        if binding is not None:
            binding.bind_thread(i)
        results.append(loops.serve(conn.fileno(), sizes.total, sizes.block, sizes.resp))

    threads = [threading.Thread(target=one, args=(i, c)) for i, c in enumerate(conns)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for conn in conns:
        conn.close()
    errors = [_failure("server", r[3]) for r in results if r[3]]
    return ServerCounts(
        received=sum(r[0] for r in results),
        sent=sum(r[1] for r in results),
        responses=sum(r[2] for r in results),
        error=errors[0] if errors else None,
    )


def run_clients(
    connect: Callable[[int], socket.socket],
    threads: int,
    sizes: Sizes,
    binding: Binding | None = None,
) -> tuple[list[ThreadRun], int]:
    """``threads`` client threads, thread i on ``connect(i)``'s connection and bound as
    benchmark thread i (--cores, --zones), started together; their runs and the common
    start (monotonic ns)."""
    loops = native()
    conns = [connect(i) for i in range(threads)]
    runs = [ThreadRun() for _ in range(threads)]
    go = threading.Barrier(threads + 1)

    def one(i: int) -> None:
        run = runs[i]
        if binding is not None:
            binding.bind_thread(i)
        times = np.zeros(2 * sizes.blocks, dtype=np.int64)
        go.wait()
        run.start_ns = time.monotonic_ns()
        sent, received, blocks, code = loops.client(
            conns[i].fileno(), sizes.total, sizes.block, sizes.resp, times
        )
        run.elapsed_ns = time.monotonic_ns() - run.start_ns
        run.sent, run.received, run.blocks, run.times = sent, received, blocks, times
        if blocks:  # the loop's own span: from sending the first block to the last answer
            run.start_ns = int(times[1] - times[0])
            run.elapsed_ns = int(times[2 * blocks - 1]) - run.start_ns
        if code:
            run.error = _failure(f"client thread {i}", code)

    workers = [threading.Thread(target=one, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    start = time.monotonic_ns()
    go.wait()
    for worker in workers:
        worker.join()
    for conn in conns:
        conn.close()
    return runs, start
