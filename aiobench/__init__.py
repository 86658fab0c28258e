"""aiobench: elbencho-compatible I/O benchmark on a batched asyncio engine."""

__version__ = "0.1.0"
