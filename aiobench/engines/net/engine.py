"""The net engine (``--netbench``): netbench's phase behind the engine seam.

The ranks are the servers, then the clients (:mod:`.roles`). :meth:`NetEngine.open` is a
step of every rank: each server listens and serves its connections in threads of its own
(:class:`Server`) from then on, the ports are exchanged with one MPI allgather, and each
client thread connects to its server (round-robin). In the phase a client thread's runs go
through the native loop of :mod:`._netnative` (the GIL released, each block timed there,
from sending it to its answer's end); the servers' ranks take part in the phase as ranks
without operations. After the last phase every rank's counts meet on the lead
(:meth:`NetTargets.concluded`): ``meta.netbench``.
"""

from __future__ import annotations

import contextlib
import errno as errnos
import os
import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from aiobench.engines.base import IoOptions, Job, RawBatch
from aiobench.engines.gate import StopEvent
from aiobench.engines.net import roles as roles_mod
from aiobench.engines.net import sockets
from aiobench.engines.net.layout import NetLayout
from aiobench.errors import BenchIOError, ConfigError
from aiobench.kinds import EngineName, PathType, PhaseKind
from aiobench.plan.targets import Probe, Resolved, Targets
from aiobench.plan.workload import OpRun
from aiobench.run.affinity import Binding

if TYPE_CHECKING:
    from aiobench.config import BenchConfig

Int64Array = np.ndarray[Any, np.dtype[np.int64]]
_NONE: Int64Array = np.empty(0, dtype=np.int64)


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


def world() -> Any:
    try:
        from mpi4py import MPI
    except ImportError:
        raise ConfigError(
            "--netbench: needs mpi4py for its ranks; python3 -m pip install mpi4py"
        ) from None
    return MPI.COMM_WORLD


@dataclass(frozen=True, slots=True, kw_only=True)
class Sizes:
    total: int  # per client thread and pass (-s)
    block: int  # -b
    resp: int  # --respsize


@dataclass(frozen=True, slots=True, kw_only=True)
class NetSettings:
    """What :meth:`NetEngine.resolve` read of the options, for :meth:`NetEngine.open`."""

    roles: roles_mod.Roles
    devices: tuple[str, ...]  # --netdevs
    sizes: Sizes
    sendbuf: int
    recvbuf: int


@dataclass(frozen=True, slots=True)
class Counts:
    """What one rank's side counted over the run."""

    server: bool
    received: int = 0  # bytes
    sent: int = 0  # bytes
    blocks: int = 0  # a server's: responses sent; a client's: blocks answered
    error: str | None = None


def _failure(what: str, code: int) -> str:
    if code < 0:
        return f"{what}: the peer closed the connection inside a block"
    return f"{what}: {os.strerror(code)} (errno {errnos.errorcode.get(code, code)})"


class Server:
    """A server rank's connections: ``expected`` are accepted (in a thread started at
    once), each answered in a thread of its own until its client closes it. Connection i's
    thread is bound as benchmark thread i (--cores, --zones)."""

    def __init__(
        self, listener: socket.socket, expected: int, sizes: Sizes, binding: Binding
    ) -> None:
        self.listener, self.expected, self.sizes, self.binding = listener, expected, sizes, binding
        self.lock = threading.Lock()
        self.results: list[tuple[int, int, int, int]] = []
        self.conns: list[socket.socket] = []
        self.workers: list[threading.Thread] = []
        self.error: str | None = None
        self.stopping = False
        self.loops = native()
        self.acceptor = threading.Thread(target=self._accept, name="netbench-accept", daemon=True)
        self.acceptor.start()

    def _accept(self) -> None:
        for i in range(self.expected):
            try:
                conn = sockets.accepted(self.listener)
            except OSError as exc:
                if not self.stopping:
                    self.error = f"server: accepting a connection: {exc.strerror}"
                return
            worker = threading.Thread(
                target=self._serve, args=(i, conn), name=f"netbench-serve-{i}", daemon=True
            )
            with self.lock:
                self.conns.append(conn)
                self.workers.append(worker)
            worker.start()

    def _serve(self, i: int, conn: socket.socket) -> None:
        self.binding.bind_thread(i)
        sizes = self.sizes
        result = self.loops.serve(conn.fileno(), sizes.total, sizes.block, sizes.resp)
        with self.lock:
            self.results.append(result)

    def join(self) -> Counts:
        """Once the clients closed their connections: what was served."""
        self.acceptor.join()
        for worker in list(self.workers):
            worker.join()
        self.close()
        errors = [_failure("server", r[3]) for r in self.results if r[3]]
        if self.error is not None:
            errors.insert(0, self.error)
        return Counts(
            server=True,
            received=sum(r[0] for r in self.results),
            sent=sum(r[1] for r in self.results),
            blocks=sum(r[2] for r in self.results),
            error=errors[0] if errors else None,
        )

    def stop(self) -> None:
        """Setup failed or the run ends early: wake the threads and let them go."""
        self.stopping = True
        for sock in (self.listener, *self.conns):
            with contextlib.suppress(OSError):  # (not connected)
                sock.shutdown(socket.SHUT_RDWR)
        self.acceptor.join()
        for worker in list(self.workers):
            worker.join()
        self.close()

    def close(self) -> None:
        for sock in (self.listener, *self.conns):
            sock.close()


class Connection(Targets):
    """A client thread's connection, named ``host:port``, each block answered with
    ``resp`` bytes, and what went over it."""

    def __init__(self, name: str, sock: socket.socket, resp: int) -> None:
        super().__init__((name,))
        self.name, self.sock, self.fd, self.resp = name, sock, sock.fileno(), resp
        self.sent = self.received = self.blocks = 0

    def close(self) -> None:
        self.sock.close()

    def undo(self) -> None:
        self.close()


class NetTargets(Targets):
    """One rank's part of a netbench run: a server's :class:`Server`, or a client's
    connections by thread rank."""

    def __init__(
        self,
        paths: Sequence[str],
        comm: Any,
        settings: NetSettings,
        server: Server | None,
        conns: dict[int, Connection],
    ) -> None:
        super().__init__(paths)
        self.comm, self.settings, self.server, self.conns = comm, settings, server, conns
        self.counts: Counts | None = None
        self.closed = False

    def of_thread(self, rank: int) -> Targets:
        return self.conns.get(rank, self)

    def concluded(self) -> tuple[dict[str, object], str | None]:
        """Every rank's counts, on the lead: the clients close their connections, which
        ends the servers' loops, and the counts are gathered."""
        counts = self._own_counts()
        parts = self.comm.gather(counts, root=0)
        if parts is None:
            return {}, None
        roles, sizes = self.settings.roles, self.settings.sizes
        servers = [c for c in parts if c.server]
        clients = [c for c in parts if not c.server]
        meta: dict[str, object] = {
            "netbench": {
                "servers": list(roles.servers),
                "clients": list(roles.clients),
                "respsize": sizes.resp,
                "client_bytes_sent": sum(c.sent for c in clients),
                "client_bytes_received": sum(c.received for c in clients),
                "client_blocks": sum(c.blocks for c in clients),
                "server_bytes_received": sum(s.received for s in servers),
                "server_bytes_sent": sum(s.sent for s in servers),
                "server_responses": sum(s.blocks for s in servers),
            }
        }
        failed = [(rank, c.error) for rank, c in enumerate(parts) if c.error is not None]
        error = None
        if failed:
            rank, message = failed[0]
            error = f"rank {rank}: {message}"
        return meta, error

    def _own_counts(self) -> Counts:
        if self.counts is not None:
            return self.counts
        if self.server is not None:
            self.counts = self.server.join()
        else:
            conns = self.conns.values()
            for conn in conns:
                conn.close()  # (the server's loop ends there)
            self.counts = Counts(
                server=False,
                sent=sum(c.sent for c in conns),
                received=sum(c.received for c in conns),
                blocks=sum(c.blocks for c in conns),
            )
        return self.counts

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.server is not None:
            self.server.stop()
        for conn in self.conns.values():
            conn.close()

    def undo(self) -> None:
        self.close()


def _opened(targets: Targets) -> Connection:
    if not isinstance(targets, Connection):
        raise TypeError("the net engine runs only on a client thread's connection")
    return targets


class NetEngine:
    """Netbench's client blocks as the phase's operations (see the module's text)."""

    name: str = EngineName.NET

    def probe(self, path: str, opening: bool = True) -> Probe:
        return Probe(PathType.NET, None)

    def resolve(self, cfg: BenchConfig) -> Resolved:
        roles = roles_mod.roles(cfg)
        devices = tuple(d for d in (cfg.netdevs or "").replace(" ", ",").split(",") if d)
        sizes = Sizes(total=cfg.size_bytes, block=cfg.block_size, resp=cfg.respsize_bytes)
        layout = NetLayout(
            (cfg.size_bytes,),
            cfg.block_size,
            servers=len(roles.servers),
            rank_offset=cfg.rankoffset,
        )
        settings = NetSettings(
            roles=roles,
            devices=devices,
            sizes=sizes,
            sendbuf=cfg.sendbuf_bytes,
            recvbuf=cfg.recvbuf_bytes,
        )
        return Resolved(PathType.NET, layout, (), settings=settings)

    def open(
        self, cfg: BenchConfig, resolved: Resolved, check: Callable[[], None] | None = None
    ) -> Targets:
        """Servers listen and serve from now on, ports go round, clients connect; on every
        rank (a failure anywhere is :class:`ConfigError` on all, see
        :meth:`~aiobench.run.coordinator.Coordinator.agreed`)."""
        from aiobench.config import cpu_sets, memory_zones

        settings = resolved.settings
        assert isinstance(settings, NetSettings) and isinstance(resolved.layout, NetLayout)
        comm = world()
        rank = comm.Get_rank()
        roles = settings.roles
        threads = cfg.threads
        listener: socket.socket | None = None
        failure: str | None = None
        if rank < len(roles.servers):
            try:
                native()
                listener = sockets.listener(settings.sendbuf, settings.recvbuf)
            except (OSError, ConfigError) as exc:
                failure = f"server: cannot listen: {exc}"
        ports = comm.allgather((listener.getsockname()[1] if listener else 0, failure))
        bad = [(r, f) for r, (_, f) in enumerate(ports) if f is not None]
        if bad:
            if listener is not None:
                listener.close()
            raise ConfigError(f"rank {bad[0][0]}: {bad[0][1]}")
        if listener is not None:
            mine = sum(1 for t in range(len(roles.clients) * threads) if roles.server_of(t) == rank)
            binding = Binding(cpu_sets(cfg), memory_zones(cfg))
            server = Server(listener, mine, settings.sizes, binding)
            return NetTargets(cfg.paths, comm, settings, server, {})
        layout = resolved.layout
        conns: dict[int, Connection] = {}
        first = rank * threads + cfg.rankoffset
        try:
            for thread in range(first, first + threads):
                number = layout.client_thread(thread, threads)
                assert number is not None  # (a client rank)
                to = roles.server_of(number)
                host, port = roles.servers[to], ports[to][0]
                devices = settings.devices
                device = devices[number % len(devices)] if devices else None
                name = f"{host}:{port}"
                try:
                    sock = sockets.connect(host, port, settings.sendbuf, settings.recvbuf, device)
                except OSError as exc:
                    reason = exc.strerror or str(exc)
                    raise ConfigError(f"--servers: {name}: cannot connect: {reason}") from None
                conns[thread] = Connection(name, sock, settings.sizes.resp)
        except BaseException:
            for conn in conns.values():
                conn.close()
            raise
        return NetTargets(cfg.paths, comm, settings, None, conns)

    def run(self, job: Job) -> RawBatch:
        """A run of a client thread's blocks on its connection, in the native loop."""
        released = job.released()
        if released is None:
            return RawBatch(_NONE, _NONE)
        conn = _opened(job.targets)
        ops = job.ops
        assert isinstance(ops, OpRun)
        count = len(ops)
        starts = np.empty(count, dtype=np.int64)
        ends = np.empty(count, dtype=np.int64)
        stop = released.stop
        flag = stop.flag if isinstance(stop, StopEvent) else np.zeros(1, dtype=np.uint8)
        resp = conn.resp
        done, code = native().client_run(
            conn.fd, count, ops.length, resp, released.until_ns, flag, starts, ends
        )
        conn.blocks += done
        conn.sent += done * ops.length
        conn.received += done * resp
        error = None
        if code:
            error = BenchIOError(
                path=conn.name,
                offset=ops.offsets[done],
                errno=code if code > 0 else errnos.ECONNRESET,
                detail="" if code > 0 else "the server closed the connection",
            )
        return RawBatch(starts[:done], ends[:done], error=error)

    def begin_phase(
        self, targets: Targets, kind: PhaseKind, options: IoOptions
    ) -> BenchIOError | None:
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
        return None

    def rank_dirs(
        self,
        targets: Targets,
        dirs: Sequence[tuple[int, str]],
        *,
        remove: bool,
        missing_ok: bool,
    ) -> BenchIOError | None:
        return None

    def sync(self, targets: Targets) -> None:
        """Nothing to sync: no storage."""

    def slot_depth(
        self, targets: Targets, kind: PhaseKind, options: IoOptions, iodepth: int
    ) -> int:
        return 1  # one block in flight per connection (as elbencho's)
