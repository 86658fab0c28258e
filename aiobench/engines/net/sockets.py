"""The sockets of a netbench run: a server's listener, a client's connection, with
--sendbuf/--recvbuf (SO_SNDBUF/SO_RCVBUF, set before connect/listen so that TCP's window
scaling sees them) and --netdevs (SO_BINDTODEVICE)."""

from __future__ import annotations

import os
import socket

from aiobench.errors import ConfigError


def _buffers(sock: socket.socket, sendbuf: int, recvbuf: int) -> None:
    if sendbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sendbuf)
    if recvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, recvbuf)


def check_devices(devices: list[str]) -> None:
    """:class:`ConfigError` for a --netdevs name that is no network device here."""
    known = {name for _, name in socket.if_nameindex()}
    for device in devices:
        if device not in known:
            raise ConfigError(
                f"--netdevs: {device}: no such network device here "
                f"(there are: {', '.join(sorted(known))})"
            )


def listener(sendbuf: int, recvbuf: int) -> socket.socket:
    """A TCP listener on every address, on a port the system picks."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    _buffers(sock, sendbuf, recvbuf)  # (accepted sockets inherit them)
    sock.bind(("", 0))
    sock.listen(socket.SOMAXCONN)
    return sock


def accepted(sock: socket.socket) -> socket.socket:
    conn, _ = sock.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return conn


def connect(host: str, port: int, sendbuf: int, recvbuf: int, device: str | None) -> socket.socket:
    """A client's connection to a server; bound to ``device`` when given."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        _buffers(sock, sendbuf, recvbuf)
        if device is not None:
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, device.encode())
            except OSError as exc:
                raise ConfigError(
                    f"--netdevs: {device}: cannot bind to it: {os.strerror(exc.errno or 0)}"
                ) from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.connect((host, port))
    except BaseException:
        sock.close()
        raise
    return sock
