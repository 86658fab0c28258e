"""Each kind of operation of a phase that mixes kinds (object storage's MIXED): what the
engine kept of each (:class:`OpKindTally`), summed up per kind (:func:`summarise_kinds`)."""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field

from aiobench.results.model import OpKindResult
from aiobench.stats.recorders import LatencyRecorder


@dataclass(slots=True)
class OpKindTally:
    """What one kind did in this process: operations, bytes moved, and each operation's
    latency (and a GET's time to first byte), in ns."""

    ops: int = 0
    bytes: int = 0
    latency_ns: list[int] = field(default_factory=list)
    ttfb_ns: list[int] = field(default_factory=list)


def _recorded(values: list[int]) -> LatencyRecorder:
    recorder = LatencyRecorder()
    if values:
        recorder.add(array("q", values))
    return recorder


def summarise_kinds(tallies: Mapping[str, OpKindTally]) -> tuple[OpKindResult, ...]:
    """One result per kind (in the tallies' order), its latency and TTFB summarised."""
    out = []
    for name, tally in tallies.items():
        ttfb = _recorded(tally.ttfb_ns).summary()
        out.append(
            OpKindResult(
                op=name,
                ops=tally.ops,
                bytes=tally.bytes,
                latency=_recorded(tally.latency_ns).summary(),
                ttfb=ttfb if ttfb.count else None,
            )
        )
    return tuple(out)
