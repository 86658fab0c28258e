"""Who is what in a netbench job: the ranks are ``--servers`` then ``--clients``, in the
order named (the launcher starts one rank per host named). Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from aiobench.errors import ConfigError

if TYPE_CHECKING:
    from aiobench.config import BenchConfig


class Roles(NamedTuple):
    servers: tuple[str, ...]
    clients: tuple[str, ...]

    @property
    def hosts(self) -> list[str]:
        """One rank per entry, servers first: what the launcher is given."""
        return [*self.servers, *self.clients]

    def server_of(self, thread: int) -> int:
        """The server a client thread (numbered over all clients) connects to:
        round-robin, as elbencho connects its client threads."""
        return thread % len(self.servers)


def _names(option: str, listed: str | None, file: str | None) -> list[str]:
    if listed is None and file is None:
        raise ConfigError(f"--netbench: give --{option} HOST,... or --{option}file FILE")
    try:
        from aiobench.run.hosts import parse_hosts  # (only for netbench: not at start-up)

        return parse_hosts(listed, file)
    except ConfigError as exc:
        raise ConfigError(str(exc).replace("--hostsfile", f"--{option}file")) from None


def roles(cfg: BenchConfig) -> Roles:
    """The servers and clients of ``cfg``, or :class:`ConfigError` (as elbencho checks)."""
    servers = _names("servers", cfg.servers, cfg.serversfile)
    clients = _names("clients", cfg.clients, cfg.clientsfile)
    return Roles(tuple(servers), tuple(clients))


def check(cfg: BenchConfig) -> None:
    """The netbench checks of options together (elbencho's, and what this one refuses)."""
    if not cfg.netbench:
        for flag, value in (
            ("--servers", cfg.servers),
            ("--clients", cfg.clients),
            ("--serversfile", cfg.serversfile),
            ("--clientsfile", cfg.clientsfile),
            ("--netdevs", cfg.netdevs),
        ):
            if value is not None:
                raise ConfigError(f"{flag}: only applies with --netbench")
        return
    if cfg.read or cfg.mkdirs or cfg.stat or cfg.delfiles or cfg.deldirs:
        raise ConfigError("--netbench: runs as the write phase only (-w), as elbencho's")
    if not cfg.size_bytes:
        raise ConfigError("-s/--size: netbench needs the amount each client thread sends")
    if cfg.respsize_bytes <= 0:
        raise ConfigError("--respsize: must be greater than 0")
    for flag, given in (
        ("--rwmixpct", cfg.rwmixpct is not None),
        ("--rwmixthr", cfg.rwmixthr is not None),
        ("--limitwrite", bool(cfg.limitwrite_bps)),
        ("--verify", cfg.verify is not None),
        ("--rotatehosts", bool(cfg.rotatehosts)),
    ):
        if given:
            raise ConfigError(f"{flag}: does not apply to --netbench")
    if cfg.iodepth > 1:
        raise ConfigError(
            "--iodepth: netbench keeps one block in flight per client thread (a client "
            "sends the next block after the answer, as elbencho's); use more -t threads"
        )
