"""Netbench's line under the table: what the servers counted (``meta.netbench``); pure."""

from __future__ import annotations

from collections.abc import Mapping


def servers_text(meta: Mapping[str, object]) -> str:
    """``Servers: N bytes received, M responses of R bytes sent``, or '' for a run that
    is no netbench."""
    counts = meta.get("netbench")
    if not isinstance(counts, Mapping):
        return ""
    return (
        f"Servers: {counts['server_bytes_received']} bytes received, "
        f"{counts['server_responses']} responses of {counts['respsize']} bytes sent\n"
    )
