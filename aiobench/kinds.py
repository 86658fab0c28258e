"""Phase kinds and their names in results, in the fixed order phases run; pure.

File mode has WRITE and READ; dir mode has all six. SYNC and DROPCACHE (``--sync``,
``--dropcache``) are not benchmark phases but get result blocks of their own, before the
first phase and after each one.
"""

from __future__ import annotations

MKDIRS = "mkdirs"
WRITE = "write"
STAT = "stat"
READ = "read"
RMFILES = "rmfiles"
RMDIRS = "rmdirs"
SYNC = "sync"
DROPCACHE = "dropcache"

PHASE_NAMES = {
    MKDIRS: "MKDIRS",
    WRITE: "WRITE",
    STAT: "STAT",
    READ: "READ",
    RMFILES: "RMFILES",
    RMDIRS: "RMDIRS",
    SYNC: "SYNC",
    DROPCACHE: "DROPCACHE",
}
