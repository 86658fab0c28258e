"""Entry point for ``python -m aiobench``."""

from aiobench.entry import main

main()
