"""Custom tree mode's pure parts: elbencho's tree file format and how a tree is dealt out."""

from __future__ import annotations

import base64

import pytest

from aiobench.errors import ConfigError
from aiobench.kinds import MKDIRS, READ, RMDIRS, STAT, WRITE
from aiobench.plan.split import StreamOrder, ThreadSplit
from aiobench.plan.tree import TreeLayout, all_dirs
from aiobench.plan.treefile import TreeSpec, parse_tree, tree_text

TEXT = """# made by hand
d top
d top/sub
f 5000 top/sub/x
f 100\ttop/y
something else
f 0 a file with spaces
"""


def test_parse_reads_dirs_files_and_sizes_and_skips_other_lines() -> None:
    tree = parse_tree(TEXT, "t")
    assert tree.dirs == ("top", "top/sub")
    assert tree.files == (("top/sub/x", 5000), ("top/y", 100), ("a file with spaces", 0))


def test_parse_rounds_sizes_up() -> None:
    tree = parse_tree(TEXT, "t", round_up=4096)
    assert [size for _, size in tree.files] == [8192, 4096, 0]


def test_base64_header_decodes_names_and_round_trips() -> None:
    tree = TreeSpec(("a", "a/new\nline"), (("a/new\nline/f", 7),))
    text = tree_text(tree)
    assert text.startswith("# encoding=base64\n")
    assert base64.b64encode(b"a/new\nline/f").decode() in text
    assert parse_tree(text, "t") == tree


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("f 10 /etc/passwd", "absolute"),
        ("f 10 ../outside", "leaves PATH"),
        ("d a/../../b", "leaves PATH"),
        ("f 4k name", "not a number"),
        ("f 10", "no path"),
        ("d .", "names PATH itself"),
    ],
)
def test_bad_lines_are_usage_errors_with_their_line(line: str, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle) as info:
        parse_tree(f"d ok\n{line}\n", "tree.txt")
    assert "tree.txt line 2" in str(info.value)


def test_a_name_listed_twice_is_refused() -> None:
    with pytest.raises(ConfigError, match="listed twice"):
        parse_tree("f 1 a\nf 2 ./a\n", "t")


def test_parents_come_first_and_implied_ones_are_added() -> None:
    tree = TreeSpec(("zz",), (("p/q/r", 1),))
    assert all_dirs(tree) == ["p", "zz", "p/q"]


def _layout(tree: TreeSpec, threads: int, share: int, **over: object) -> TreeLayout:
    return TreeLayout.of(
        tree, threads=threads, block=4096, share=share, shuffle=bool(over.get("shuffle")),
        seed=int(str(over.get("seed", 1))),
    )  # fmt: skip


def _units(layout: TreeLayout, kind: str, threads: int) -> list[list[tuple[str, int, int]]]:
    split = ThreadSplit.alone(threads)
    streams = layout.streams(kind, 0, StreamOrder(seed=1), split)  # type: ignore[arg-type]
    out = []
    for stream in streams:
        got = []
        while (run := stream.take(100)) is not None:
            got += [(name, run.size, run.start) for name in run.names]
        out.append(got)
    return out


BIG = 300_000  # 74 blocks of 4 KiB, the last short


def test_small_files_go_whole_by_size_and_big_ones_are_split_in_even_spans() -> None:
    tree = TreeSpec((), (("big", BIG), ("s2", 200), ("s1", 100), ("s3", 300)))
    per = _units(_layout(tree, 3, share=64 * 1024), WRITE, 3)
    assert [u[0][0] for u in per] == ["s1", "s2", "s3"]  # by size: slice i takes file i
    spans = [u[1] for u in per]
    assert spans == [("big", 24 * 4096, 0), ("big", 24 * 4096, 24 * 4096),
                     ("big", BIG - 48 * 4096, 48 * 4096)]  # fmt: skip
    # Below --sharesize the big file goes whole to one thread.
    whole = _units(_layout(tree, 3, share=BIG + 1), WRITE, 3)
    assert sorted(u for units in whole for u in units if u[0] == "big") == [("big", BIG, 0)]


def test_default_share_size_is_32_blocks() -> None:
    tree = TreeSpec((), (("f31", 31 * 4096), ("f32", 32 * 4096)))
    per = _units(_layout(tree, 2, share=0), READ, 2)
    names = [[name for name, _, _ in units] for units in per]
    assert names == [["f31", "f32"], ["f32"]]


def test_treerand_shuffles_by_seed_and_stat_takes_files_whole() -> None:
    files = tuple((f"f{i:03}", i) for i in range(200))
    tree = TreeSpec((), files)
    by_size = [n for n, _, _ in _units(_layout(tree, 1, share=1 << 30), STAT, 1)[0]]
    shuffled = [n for n, _, _ in _units(_layout(tree, 1, share=1 << 30, shuffle=True), STAT, 1)[0]]
    again = [n for n, _, _ in _units(_layout(tree, 1, share=1 << 30, shuffle=True), STAT, 1)[0]]
    other = _units(_layout(tree, 1, share=1 << 30, shuffle=True, seed=2), STAT, 1)[0]
    assert by_size == [name for name, _ in files]
    assert shuffled == again != by_size
    assert sorted(shuffled) == by_size
    assert [n for n, _, _ in other] != shuffled


def test_dirs_are_made_by_the_first_thread_parents_first_and_removed_children_first() -> None:
    tree = parse_tree(TEXT, "t")
    made = _units(_layout(tree, 2, share=0), MKDIRS, 2)
    removed = _units(_layout(tree, 2, share=0), RMDIRS, 2)
    assert [n for n, _, _ in made[0]] == ["top", "top/sub"] and made[1] == []
    assert [n for n, _, _ in removed[0]] == ["top/sub", "top"] and removed[1] == []


def test_a_span_of_a_shared_file_knows_the_whole_file_length() -> None:
    # (--trunctosize, --preallocfile and --mmap size and map the whole file, as elbencho's
    # totalLen, not the thread's span of it)
    tree = TreeSpec((), (("big", BIG), ("s1", 100)))
    split = ThreadSplit.alone(3)
    streams = _layout(tree, 3, share=64 * 1024).streams(WRITE, 0, StreamOrder(seed=1), split)
    lengths = []
    for stream in streams:
        while (run := stream.take(100)) is not None:
            lengths += [(name, run.file_bytes) for name in run.names]
    assert sorted(lengths) == [("big", BIG)] * 3 + [("s1", 100)]
