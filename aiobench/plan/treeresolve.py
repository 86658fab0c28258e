"""The custom tree of a run: its tree file read, or its --treescan dir scanned (and the
scan written as a tree file), checked against the options, as a layout."""

from __future__ import annotations

import getpass
import os

from aiobench.config import DIRECT_ALIGN, BenchConfig
from aiobench.errors import ConfigError
from aiobench.plan.tree import TreeLayout
from aiobench.plan.treefile import TreeSpec, read_tree, scan_tree, write_tree_file
from aiobench.units import format_bytes

FILE_SCHEME = "file://"  # elbencho's --treescan spelling of a POSIX path


def scan_file_default() -> str:
    """Where a scan goes without --treefile: elbencho's place, under this tool's name."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return f"/var/tmp/aiobench_{user}_treescan.txt"


def _rounded(tree: TreeSpec, round_up: int) -> TreeSpec:
    if not round_up:
        return tree
    files = tuple((name, -(-size // round_up) * round_up) for name, size in tree.files)
    return TreeSpec(tree.dirs, files)


def custom_tree(cfg: BenchConfig) -> tuple[TreeLayout, list[str]]:
    """The run's tree as a layout, and notes for the user (what a scan found, and where
    it was written)."""
    notes: list[str] = []
    if cfg.treescan is not None:
        root = cfg.treescan.removeprefix(FILE_SCHEME)
        scanned = scan_tree(root)
        out = cfg.treefile or scan_file_default()
        if not cfg.dryrun:
            write_tree_file(out, scanned)
        total = sum(size for _, size in scanned.files)
        notes.append(
            f"scanned {root}: {len(scanned.dirs)} dirs, {len(scanned.files)} files, "
            f"{format_bytes(total)}; tree file {out}"
            + (" (not written: --dryrun)" if cfg.dryrun else "")
        )
        tree = _rounded(scanned, cfg.treeroundup_bytes)
    else:
        assert cfg.treefile is not None
        tree = read_tree(cfg.treefile, cfg.treeroundup_bytes)
    if cfg.direct and not cfg.nodiocheck:
        for name, size in tree.files:
            if size % DIRECT_ALIGN:
                raise ConfigError(
                    f"--direct: {name} has {size} bytes, not a multiple of {DIRECT_ALIGN}; "
                    "add --treeroundup 4k (or --nodiocheck)"
                )
    layout = TreeLayout.of(
        tree,
        threads=cfg.threads,
        block=cfg.block_size,
        share=cfg.sharesize_bytes,
        shuffle=cfg.treerand,
        seed=cfg.seed,
    )
    return layout, notes
