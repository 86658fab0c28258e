"""How uploads and their failures go, from elbencho's options: multipart parts of varying
size (``--s3mpusizevar``), no completion (``--s3nompucompl``), a completion's 404 taken as
done (``--s3multiignore404``), S3's 10,000-part limit (``--s3nompcheck``), and failed
transfers that do not end the run (``--s3ignoreerrors``)."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiobench.errors import ConfigError

if TYPE_CHECKING:
    from aiobench.config import BenchConfig

MAX_PARTS = 10_000  # S3's most parts of one multipart upload


@dataclass(frozen=True, slots=True)
class UploadSettings:
    size_var: int = 0  # --s3mpusizevar: at most this many bytes less per part (0: none)
    complete: bool = True  # not --s3nompucompl
    ignore_404: bool = False  # --s3multiignore404
    ignore_errors: bool = False  # --s3ignoreerrors

    def part_sizes(self, size: int, block: int, rng: random.Random) -> list[tuple[int, int]]:
        """(offset, length) of each part of an object of ``size`` bytes in parts of
        ``block``: with a size variance, each part but the last is a random 0..var-1 bytes
        shorter, and the last takes up the rest (as many parts as without it)."""
        count = max(math.ceil(size / block), 1)
        lengths = [min(block, size - k * block) for k in range(count)]
        if self.size_var and count > 1:
            for k in range(count - 1):
                cut = rng.randrange(self.size_var)
                if cut < lengths[k]:
                    lengths[k] -= cut
            lengths[-1] = size - sum(lengths[:-1])
        parts, offset = [], 0
        for length in lengths:
            parts.append((offset, length))
            offset += length
        return parts


def upload_settings(cfg: BenchConfig) -> UploadSettings:
    """The run's upload settings; ConfigError naming a wrong option."""
    var = cfg.s3mpusizevar or 0
    size, block = cfg.size_bytes, cfg.block_size
    parts = math.ceil(size / block) if size and block else 0
    if parts > MAX_PARTS and not cfg.s3nompcheck and cfg.write:
        raise ConfigError(
            f"-b/--block: objects of {size} bytes in parts of {block} make {parts} parts; "
            f"S3 allows {MAX_PARTS} (give a larger -b, or --s3nompcheck to send them anyway)"
        )
    if var and var >= block:
        raise ConfigError(f"--s3mpusizevar: must be less than -b/--block ({block} bytes)")
    return UploadSettings(
        size_var=var,
        complete=not cfg.s3nompucompl,
        ignore_404=cfg.s3multiignore404,
        ignore_errors=cfg.s3ignoreerrors,
    )
