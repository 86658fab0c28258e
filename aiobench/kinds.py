"""Phase kinds and their names in results, in the fixed order phases run; pure.

File mode has WRITE and READ; dir mode has all six.
"""

from __future__ import annotations

MKDIRS = "mkdirs"
WRITE = "write"
STAT = "stat"
READ = "read"
RMFILES = "rmfiles"
RMDIRS = "rmdirs"

PHASE_NAMES = {
    MKDIRS: "MKDIRS",
    WRITE: "WRITE",
    STAT: "STAT",
    READ: "READ",
    RMFILES: "RMFILES",
    RMDIRS: "RMDIRS",
}
