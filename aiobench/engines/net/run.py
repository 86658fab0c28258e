"""A netbench run: launch (servers then clients, one MPI rank each), the ports exchanged
with one MPI allgather, the clients' blocks, and the lead's table and JSON.

Without MPI the command is handed to the launcher that ``--hosts`` uses
(:mod:`aiobench.run.hosts`) with the servers and clients as its hosts.
"""

from __future__ import annotations

import datetime
import sys
from typing import Any

from aiobench.config import BenchConfig, cpu_sets, memory_zones
from aiobench.engines.net import roles as roles_mod
from aiobench.engines.net import sockets
from aiobench.engines.net.engine import ServerCounts, Sizes, ThreadRun, run_clients, serve
from aiobench.engines.net.report import phase_result, run_meta
from aiobench.errors import ConfigError
from aiobench.run.affinity import Binding
from aiobench.run.coordinator import launch_rank, wanted


def _world() -> Any:
    try:
        from mpi4py import MPI
    except ImportError:
        raise ConfigError(
            "--netbench: needs mpi4py for its ranks; python3 -m pip install mpi4py"
        ) from None
    return MPI.COMM_WORLD


def run(cfg: BenchConfig, argv: list[str]) -> int:
    """The whole netbench command on this process; its exit code."""
    roles_mod.check(cfg)
    roles = roles_mod.roles(cfg)
    devices = [d for d in (cfg.netdevs or "").replace(" ", ",").split(",") if d]
    if cfg.netdevs is not None:
        if not devices:
            raise ConfigError("--netdevs: names no device")
        sockets.check_devices(devices)
    if not wanted(cfg.mpi):
        if launch_rank() is not None:  # one rank alone: there is no one to talk to
            raise ConfigError(
                f"--netbench: {len(roles.hosts)} ranks needed (--servers then --clients), "
                "this job has 1"
            )
        from aiobench.run.hosts import hand_over, launch_plan

        command = launch_plan(roles.hosts, argv)
        if cfg.dryrun:
            print(f"PLAN (--dryrun): {len(roles.hosts)} MPI ranks: {' '.join(command)}")
            return 0
        hand_over(command)
        return 0  # (not reached)
    comm = _world()
    if comm.Get_size() != len(roles.hosts):
        raise ConfigError(
            f"--netbench: {len(roles.hosts)} ranks needed ({len(roles.servers)} --servers "
            f"then {len(roles.clients)} --clients), this job has {comm.Get_size()}"
        )
    if cfg.dryrun:
        return 0
    return _ranked(cfg, comm, roles, devices)


def _ranked(cfg: BenchConfig, comm: Any, roles: roles_mod.Roles, devices: list[str]) -> int:
    rank = comm.Get_rank()
    nservers = len(roles.servers)
    sizes = Sizes(total=cfg.size_bytes, block=cfg.block_size, resp=cfg.respsize_bytes)
    threads = cfg.threads
    binding = Binding(cpu_sets(cfg), memory_zones(cfg))  # --cores, --zones: as elbencho's
    binding.bind_process()  # workers, this rank's threads
    listener = sockets.listener(cfg.sendbuf_bytes, cfg.recvbuf_bytes) if rank < nservers else None
    port = listener.getsockname()[1] if listener is not None else 0
    ports = comm.allgather(port)  # the one exchange: each server's port
    started = datetime.datetime.now(datetime.UTC)
    server: ServerCounts | None = None
    runs: list[ThreadRun] = []
    error: str | None = None
    try:
        if listener is not None:
            mine = sum(1 for t in range(len(roles.clients) * threads) if roles.server_of(t) == rank)
            comm.barrier()
            server = serve(listener, mine, sizes, binding)
            listener.close()
            error = server.error
        else:
            first = (rank - nservers) * threads

            def connect(i: int) -> Any:
                to = roles.server_of(first + i)
                device = devices[(first + i) % len(devices)] if devices else None
                return sockets.connect(
                    roles.servers[to], ports[to], cfg.sendbuf_bytes, cfg.recvbuf_bytes, device
                )

            comm.barrier()
            runs, _ = run_clients(connect, threads, sizes, binding)
            error = next((r.error for r in runs if r.error), None)
    except (OSError, ConfigError) as exc:
        error = f"rank {rank}: {exc}"
    parts = comm.gather((rank, server, runs, error), root=0)
    if rank != 0:
        return 0 if error is None else 1
    assert parts is not None
    return _report(cfg, roles, sizes, parts, started)


def _report(
    cfg: BenchConfig,
    roles: roles_mod.Roles,
    sizes: Sizes,
    parts: list[tuple[int, ServerCounts | None, list[ThreadRun], str | None]],
    started: datetime.datetime,
) -> int:
    from aiobench.render.json import dumps
    from aiobench.render.table import TableOptions, phase_block
    from aiobench.results.model import RunResult

    errors = [e for _, _, _, e in parts if e is not None]
    client_runs = [(rank, r) for rank, _, runs, _ in parts for r in runs]
    servers = [s for _, s, _, _ in parts if s is not None]
    phase = phase_result(client_runs, sizes.block, started, errors[0] if errors else None)
    meta: dict[str, object] = {
        "netbench": {
            "servers": list(roles.servers),
            "clients": list(roles.clients),
            "respsize": sizes.resp,
            "client_bytes_sent": sum(r.sent for _, r in client_runs),
            "client_bytes_received": sum(r.received for _, r in client_runs),
            "client_blocks": sum(r.blocks for _, r in client_runs),
            "server_bytes_received": sum(s.received for s in servers),
            "server_bytes_sent": sum(s.sent for s in servers),
            "server_responses": sum(s.responses for s in servers),
        },
    } | run_meta(cfg, started)
    result = RunResult(meta=meta, phases=[phase], error=phase.error)
    human = sys.stderr if cfg.stdout_option is not None else sys.stdout
    print(phase_block(phase, TableOptions.from_config(cfg.to_dict())), end="", file=human)
    s = meta["netbench"]
    assert isinstance(s, dict)
    print(
        f"Servers: {s['server_bytes_received']} bytes received, "
        f"{s['server_responses']} responses of {sizes.resp} bytes sent",
        file=human,
    )
    if cfg.json_path is not None:
        with open(cfg.json_path, "w", encoding="utf-8") as handle:
            handle.write(dumps(result))
    for error in errors:
        print(f"Error: {error}", file=sys.stderr)
    return 1 if errors else 0
