"""``python3 -m aiobench_bench`` (from scripts/): the same as scripts/bench."""

from __future__ import annotations

import sys

from aiobench_bench.cli import main

sys.exit(main())
