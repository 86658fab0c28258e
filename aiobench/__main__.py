"""Entry point for ``python -m aiobench``."""

from aiobench.cli import main

main()
