"""Escaping of text shown on a terminal."""

from __future__ import annotations

from aiobench.text import printable


def test_control_characters_are_escaped() -> None:
    assert printable("a\x1b[31mb\nc\td\x7fe\x9bf") == "a\\x1b[31mb\\x0ac\\x09d\\x7fe\\x9bf"


def test_other_text_is_unchanged() -> None:
    text = "/data/r0/d1/r0-f2 ünïcødé 数据 ~!@#$%^&*()[]{}"
    assert printable(text) == text
