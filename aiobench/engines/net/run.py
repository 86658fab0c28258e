"""How a netbench command starts: launched (servers then clients, one MPI rank each) or,
as a rank of such a job, checked and then run as any other benchmark (the net engine,
:mod:`aiobench.engines.net.engine`).

Without MPI the command is handed to the launcher that ``--hosts`` uses
(:mod:`aiobench.run.hosts`) with the servers and clients as its hosts.
"""

from __future__ import annotations

from aiobench.config import BenchConfig
from aiobench.engines.net import roles as roles_mod
from aiobench.engines.net import sockets
from aiobench.errors import ConfigError
from aiobench.run.coordinator import launch_rank, wanted


def prepare(cfg: BenchConfig, argv: list[str]) -> int | None:
    """The netbench checks of this process; the command's exit code when it ends here
    (handed to the launcher, --dryrun), None when this rank runs the benchmark."""
    roles = roles_mod.roles(cfg)  # (roles_mod.check: the CLI's, with the other checks)
    if cfg.netdevs is not None:
        devices = [d for d in cfg.netdevs.replace(" ", ",").split(",") if d]
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
    from aiobench.engines.net.engine import world

    size = world().Get_size()
    if size != len(roles.hosts):
        raise ConfigError(
            f"--netbench: {len(roles.hosts)} ranks needed ({len(roles.servers)} --servers "
            f"then {len(roles.clients)} --clients), this job has {size}"
        )
    return 0 if cfg.dryrun else None
