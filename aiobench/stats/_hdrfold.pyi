"""Types of the C extension aiobench.stats._hdrfold (_hdrfold.c beside it); used by
:mod:`aiobench.stats.recorders`, and mirrored by :mod:`aiobench.stats.hdrnumpy`."""

from array import array
from collections.abc import Sequence
from typing import Any, TypeAlias

from numpy import ndarray

Int64s: TypeAlias = array[int] | ndarray[Any, Any]

def fold(
    values: Int64s,
    counts: array[int],
    geometry: tuple[int, int, int, int, int],
    /,
) -> tuple[int, int, int, int, float]: ...
def diff(out: array[int], a: Int64s, b: Int64s, /) -> None: ...
def add(counts: array[int], other: array[int], /) -> None: ...
def reach(counts: array[int], targets: Sequence[int], /) -> list[int]: ...
def nonzero(counts: array[int], /) -> list[int]: ...
