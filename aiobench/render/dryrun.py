"""``--dryrun``: what a run would do (targets, threads, files and dirs, bytes per phase); pure.

Made from the validated config and what :func:`~aiobench.plan.targets.resolve` learnt from the
disk by looking only (stat, statvfs); names are shown through
:func:`~aiobench.text.printable`.
"""

from __future__ import annotations

from aiobench.config import BenchConfig
from aiobench.kinds import (
    BUCKET_MD_KINDS,
    LISTOBJ,
    MKDIRS,
    MULTIDEL,
    OBJECT_ENTRY_KINDS,
    READ,
    RMDIRS,
    RMFILES,
    STAT,
    WRITE,
    PhaseKind,
)
from aiobench.plan.dirmode import DirLayout
from aiobench.plan.slots import phase_title
from aiobench.plan.targets import Resolved
from aiobench.plan.tree import TreeLayout
from aiobench.plan.workload import Layout
from aiobench.text import printable
from aiobench.units import format_bytes, format_seconds

# More targets than this are listed as the first few and a count.
MAX_LISTED = 8


def _row(name: str, text: str) -> str:
    return f"{name:<16}: {text}\n"


def _targets(cfg: BenchConfig, resolved: Resolved) -> str:
    kind = {"file": "file", "blockdev": "block device", "dir": "directory", "s3": "bucket"}[
        resolved.path_type
    ]
    layout = resolved.layout
    sizes = None if layout.dir_mode else layout.bytes_per_path()  # (a dir: none of its own)
    shown = []
    for i, path in enumerate(cfg.paths[:MAX_LISTED]):
        size = f" ({format_bytes(sizes[i])})" if sizes is not None else ""
        shown.append(f"{printable(path)}{size}")
    more = len(cfg.paths) - MAX_LISTED
    listing = ", ".join(shown) + (f", and {more} more" if more > 0 else "")
    plural = "s" if len(cfg.paths) != 1 else ""
    kinds = "directories" if kind == "directory" and plural else kind + plural
    return _row("Targets", f"{len(cfg.paths)} {kinds}: {listing}")


def _file_phase_bytes(cfg: BenchConfig, layout: Layout) -> int:
    """Bytes one file-mode phase moves (a time limit or --infloop may change it)."""
    if cfg.rand:
        amount = layout.total_bytes if cfg.randamount_bytes is None else cfg.randamount_bytes
        return amount // cfg.threads // layout.block_size * layout.block_size * cfg.threads
    return layout.total_bytes


def _phase_rows(cfg: BenchConfig, resolved: Resolved, kinds: list[PhaseKind]) -> str:
    layout = resolved.layout
    out = ""
    for kind in kinds:
        name = phase_title(cfg, layout, kind)
        if isinstance(layout, TreeLayout):
            text = _tree_phase(layout, kind)
        elif isinstance(layout, DirLayout):
            dirs = cfg.threads * layout.dirs if not layout.sharing else layout.dirs
            files = cfg.threads * layout.files_per_rank()
            dir_word, file_word = (
                ("buckets", "objects") if cfg.object_storage else ("dirs", "files")
            )
            if cfg.object_storage:
                dirs = len(cfg.paths)
            if kind in (MKDIRS, RMDIRS, *BUCKET_MD_KINDS):
                text = f"{dirs} {dir_word}"
            elif kind == LISTOBJ:
                text = f"up to {cfg.s3listobj} objects of each bucket listed"
            elif kind == MULTIDEL:
                text = f"{files} objects, in DeleteObjects batches of {cfg.s3multidel}"
            elif kind in (STAT, RMFILES, *OBJECT_ENTRY_KINDS):
                text = f"{files} {file_word}"
            else:
                total = files * layout.file_size
                text = f"{files} {file_word}, {format_bytes(total)} in blocks of "
                text += format_bytes(layout.block_size)
        else:
            total = _file_phase_bytes(cfg, layout)
            ops = -(-total // layout.block_size)
            order = "random" if cfg.rand else "sequential"
            text = f"{format_bytes(total)}, {ops} {order} operations of "
            text += format_bytes(layout.block_size)
            if kind == WRITE and cfg.rwmixpct is not None:
                text += f", {cfg.rwmixpct} % of them reads"
            if kind == WRITE and cfg.rwmixthr is not None:
                readers = min(cfg.rwmixthr, cfg.threads)
                text += f", {readers} of the {cfg.threads} threads reading"
                if cfg.rwmixthrpct:
                    text += f" ({cfg.rwmixthrpct} % of the bytes)"
        if kind == WRITE and cfg.readinline:
            text += ", each block read back at once (--readinline)"
        out += _row(name, text)
    return out


def _tree_phase(layout: TreeLayout, kind: PhaseKind) -> str:
    """A phase of a custom tree: its dirs (made by the first thread) or its files."""
    if kind in (MKDIRS, RMDIRS):
        return f"{layout.dirs} dirs, by the first thread"
    text = f"{layout.files} files"
    if kind in (READ, WRITE):
        total = layout.bytes_per_path()[0]
        text += f", {format_bytes(total)} in blocks of {format_bytes(layout.block_size)}"
    return text


def render_plan(cfg: BenchConfig, resolved: Resolved, kinds: list[PhaseKind]) -> str:
    """The plan of a run with phases ``kinds`` (in their order), ending with a line that
    says nothing was done."""
    out = "PLAN (--dryrun)\n" + _targets(cfg, resolved)
    slots = f"{cfg.threads} x iodepth {cfg.iodepth} = {cfg.slots} slots, {cfg.ioengine} engine"
    layout = resolved.layout
    if cfg.nofdsharing and not isinstance(layout, DirLayout):
        slots += ", each thread opening every PATH itself (--nofdsharing)"
    if cfg.poll:
        slots += ", polling for completions (--poll)"
    out += _row("Threads", slots)
    if isinstance(layout, DirLayout) and cfg.object_storage:
        prefixes = "no key prefix" if layout.dirs == 0 else f"{layout.dirs} key prefixes"
        per = f"{prefixes}, {layout.files_per_rank()} objects of {format_bytes(layout.file_size)}"
        out += _row("Per thread", per)
    elif isinstance(layout, TreeLayout):
        per = f"custom tree dealt out (files of {format_bytes(layout.share_bytes)} and more "
        per += "split between the threads)"
        out += _row("Per thread", per)
    elif isinstance(layout, DirLayout):
        dirs = "files straight into PATH" if layout.dirs == 0 else f"{layout.dirs} dirs"
        shared = " (one set shared by all threads)" if layout.sharing else ""
        per = f"{dirs}{shared}, {layout.files_per_rank()} files of "
        per += format_bytes(layout.file_size)
        out += _row("Per thread", per)
    else:
        slices = layout.slices(cfg.threads)
        first, last = slices[0].blocks, slices[-1].blocks
        each = f"{first} blocks" if first == last else f"{first} blocks (the last {last})"
        out += _row("Per thread", f"{each} of {format_bytes(layout.block_size)}")
    if cfg.phase_limit_ns:
        limit = f"{format_seconds(cfg.phase_limit_ns)} s per phase"
        limit += ", --infloop" if cfg.infloop else ""
        out += _row("Time limit", limit)
    out += _phase_rows(cfg, resolved, kinds)
    if cfg.iterations > 1:
        out += _row("Iterations", f"{cfg.iterations} times the phases above")
    for note in resolved.notes:
        out += f"Note: {printable(note)}.\n"
    return out + "Nothing was created, opened or measured.\n"
