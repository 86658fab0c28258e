"""``aiobench storagebench``: BeeGFS storagebench's workflow (start in the background,
status from any shell, per-target results, stop, cleanup) over aiobench's ordinary run.

command (the CLI edge) -> start (checks, state, spawn) -> detached (the background
process: runs ``aiobench`` with the per-target layout, records how it ended) -> state
(the state file) <- status (what is known, rendered) ; layout (names on the targets) ;
cleanup (removes what the benchmarks made).
"""
