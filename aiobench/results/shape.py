"""How many JSON values a saved document may hold, counted on its bytes as they are read.

The size cap alone does not bound what parsing builds: 250 MiB of ``[],[],…`` is 87
million empty lists, 6.7 GB once built. So the bytes are counted first, chunk by chunk
while the file is read, and a document with more containers (``{``, ``[``) or more values
(``,``) than the largest real one could hold is refused before ``json`` builds anything.
A brace or comma inside a string counts too: that can only refuse sooner, and aiobench's
own strings (the base64 histograms, phase names) hold none but what a label or path has.
"""

from __future__ import annotations

from aiobench.errors import ConfigError

# The largest real document is one of the 256 MiB size cap (MAX_DOCUMENT_BYTES). Measured:
# a --liveint interval holds 4 containers and 37 commas in 1.5 KB as aiobench writes it
# (indented), 1.2 KB written compactly (jq -c); a phase besides its intervals 18 and 96 in
# 3.3 KB compact. So 256 MiB of compact intervals holds 0.9 million containers and 8.3
# million commas, of bare phases 1.5 and 7.8 million. The bounds leave room above both,
# and keep what parsing can build from junk to a few hundred MB (an empty list is 56
# bytes, a list slot 8).
MAX_CONTAINERS = 2_500_000
MAX_VALUES = 25_000_000


class ShapeBound:
    """Counts the containers and values of a document's bytes as they arrive; raises
    :class:`ConfigError` naming ``path`` as soon as either passes its bound."""

    def __init__(self, path: str) -> None:
        self._path = path
        self.containers = 0
        self.values = 0

    def __call__(self, chunk: bytes) -> None:
        self.containers += chunk.count(b"{") + chunk.count(b"[")
        self.values += chunk.count(b",")
        if self.containers > MAX_CONTAINERS:
            self._refuse(f"over {MAX_CONTAINERS:,} objects and arrays")
        if self.values > MAX_VALUES:
            self._refuse(f"over {MAX_VALUES:,} values")

    def _refuse(self, what: str) -> None:
        raise ConfigError(f"{self._path}: {what}, more than any result document holds")
