"""A phase's plan, made before its clock starts: each thread's stream of operations, and
the per-phase limits read from the config; no I/O (the slots that carry it out are
:mod:`aiobench.run.slots`')."""

from __future__ import annotations

from collections.abc import Sequence

from aiobench.config import BenchConfig
from aiobench.kinds import READ, WRITE, PhaseKind
from aiobench.plan.layout import PhaseLayout, Stream
from aiobench.plan.split import StreamOrder, ThreadSplit


def streams_for(
    cfg: BenchConfig, layout: PhaseLayout, kind: PhaseKind, phase_index: int, split: ThreadSplit
) -> Sequence[Stream]:
    """The streams of this process's thread ranks (``split``) in phase ``phase_index``."""
    return layout.streams(kind, phase_index, stream_order(cfg), split)


def stream_order(cfg: BenchConfig) -> StreamOrder:
    """The options of ``cfg`` that decide which operations the streams hand out."""
    return StreamOrder(
        seed=cfg.seed,
        rand=cfg.rand,
        randamount_bytes=cfg.randamount_bytes,
        aligned=not cfg.norandalign,
        strided=cfg.strided,
        backward=cfg.backward,
        loop=cfg.infloop,
        rwmixpct=cfg.rwmixpct,
        randalgo=cfg.randalgo,
        rwmixthr=cfg.rwmixthr,
        rwmixthrpct=cfg.rwmixthrpct,
    )


def rwmix_pct(cfg: BenchConfig, kind: PhaseKind) -> int | None:
    """--rwmixpct of this phase: only the write phase mixes in reads. With --rwmixthr N
    the share of reading threads, ``100 * min(N, -t) // -t`` (the phase's reads are shown
    apart, as --rwmixpct's are)."""
    if kind != WRITE:
        return None
    if cfg.rwmixthr is not None:
        return 100 * min(cfg.rwmixthr, cfg.threads) // cfg.threads
    return cfg.rwmixpct


def phase_title(cfg: BenchConfig, layout: PhaseLayout, kind: PhaseKind) -> str:
    """The phase's name in results: with --rwmixthr N the write phase is elbencho's
    ``MIX-T<N>`` (N at most -t), else the layout's name; in dir mode elbencho's ``+s``
    (--statinline, write and read) and ``+r`` (--readinline, write) follow it."""
    if kind == WRITE and cfg.rwmixthr is not None:
        name = f"MIX-T{min(cfg.rwmixthr, cfg.threads)}"
    else:
        name = layout.phase_name(kind, rwmix_pct(cfg, kind))
    if layout.dir_mode and kind in (WRITE, READ):
        name += "+s" if cfg.statinline else ""
        name += "+r" if cfg.readinline and kind == WRITE else ""
    return name


def rate_limit(cfg: BenchConfig, kind: PhaseKind) -> int:
    """Bytes per second per thread this phase may move (0 = no limit). (Dir mode on a
    filesystem refuses the limits: :func:`aiobench.config.validate`.)"""
    return {READ: cfg.limitread_bps, WRITE: cfg.limitwrite_bps}.get(kind, 0)
