"""--livecsvex: elbencho's extended live CSV, a row per thread after the total's; pure."""

from __future__ import annotations

import datetime

from aiobench.render.csv import LIVE_HEADER, elbencho_date, line
from aiobench.results.running import Progress
from aiobench.units import NS_PER_MS


def thread_rows(label: str, progress: Progress, moment: datetime.datetime) -> str:
    """A ``--livecsv`` row per thread of ``progress``, in :data:`LIVE_HEADER` order: its
    rank in the Rank column, its done %, bytes and (dir mode) entries so far, cumulative;
    the rates, latency and host columns empty, as elbencho leaves them."""
    out = ""
    for thread in progress.threads:
        cells = [
            elbencho_date(moment),
            label.replace(",", " "),
            progress.phase,
            str(progress.elapsed_ns // NS_PER_MS),
            str(thread.rank),
            "",
            str(thread.done_percent),
            str(thread.done_bytes),
            "",
            "",
            str(thread.done_entries),
        ]
        out += line(cells + [""] * (len(LIVE_HEADER) - len(cells)))
    return out
