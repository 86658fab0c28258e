"""numpy's folding of latencies into HDR counts: the functions of the C extension
:mod:`aiobench.stats._hdrfold`, for an install built without a compiler (which runs the
Python engine, numpy loaded anyway). Same arguments, same results (checked in the tests).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeAlias

import numpy as np
import numpy.typing as npt

Int64Array: TypeAlias = npt.NDArray[np.int64]
if TYPE_CHECKING:
    # What engines hand back and recorders fold: any C-contiguous int64 buffer.
    Int64s: TypeAlias = array[int] | Int64Array


def _view(values: Int64s) -> Int64Array:
    return np.asarray(values, dtype=np.int64)


def bucket_indices(values: Int64Array, geometry: tuple[int, int, int, int, int]) -> Int64Array:
    """HDR counts-array index of each value (vectorised ``_counts_index_for``)."""
    unit_magnitude, sub_half_mag, sub_half_count, sub_mask, highest = geometry
    v = np.clip(values, 0, highest).astype(np.int64)
    # floor(log2(v | mask)) is exact through frexp for values below 2^53.
    _, exp = np.frexp((v | sub_mask).astype(np.float64))
    bucket = exp.astype(np.int64) - 1 - unit_magnitude - sub_half_mag
    sub = v >> (bucket + unit_magnitude)
    indices: Int64Array = ((bucket + 1) << sub_half_mag) + (sub - sub_half_count)
    return indices


def fold(
    values: Int64s,
    counts: array[int],
    geometry: tuple[int, int, int, int, int],
) -> tuple[int, int, int, int, float]:
    v = _view(values)
    if not v.size:
        return 0, 0, 0, 0, 0.0
    out = _view(counts)  # (a view: the recorder's array changes)
    out += np.bincount(bucket_indices(v, geometry), minlength=out.size)
    as_float = v.astype(np.float64)
    # Not np.dot: it hands the product to OpenBLAS, whose worker thread then busy-waits
    # between calls and takes a whole core away from the benchmark (measured: 22 % of a
    # stat run's CPU samples). einsum computes it in the calling thread.
    squares = float(np.einsum("i,i->", as_float, as_float))
    return int(v.size), int(v.min()), int(v.max()), int(v.sum()), squares


def diff(out: array[int], a: Int64s, b: Int64s) -> None:
    np.subtract(_view(a), _view(b), out=_view(out))


def add(counts: array[int], other: array[int]) -> None:
    view = _view(counts)
    view += _view(other)


def reach(counts: array[int], targets: Sequence[int]) -> list[int]:
    cumulative = np.cumsum(_view(counts))
    return [int(i) for i in np.searchsorted(cumulative, np.asarray(targets, dtype=np.int64))]


def nonzero(counts: array[int]) -> list[int]:
    return [int(i) for i in np.flatnonzero(_view(counts))]
