"""bfloat16 on dask.array with the numerics of the single-machine path.

dask's own ``a @ b`` on bfloat16 chunks rounds every block product to bfloat16 and then adds
those in bfloat16 (one extra rounding per block of k), and ``x.sum()`` rounds each chunk's partial
sum to bfloat16. The functions here carry float32 between the blocks and round once at the end:

>>> import dask.array as da, numpy as np
>>> from bfloat16_dtype import bfloat16, dask as bfd
>>> x = da.ones(12 * 257, dtype=bfloat16, chunks=257)
>>> float(bfd.sum(x).compute())     # dask's x.sum() gives 3072.0: each chunk's 257 rounds to 256
3088.0

``3088`` is the exact 3084 rounded once to bfloat16. Work on a ``distributed`` cluster the same way:
workers unpickle bfloat16 arrays as long as ``bfloat16_dtype`` is importable there.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import dask.array as da
import numpy as np

from ._ext import bfloat16
from .linalg import matmul as _matmul_np

__all__ = ["matmul", "sum", "mean"]

_BF16 = np.dtype(bfloat16)
_F32 = np.dtype(np.float32)


def _as_dask(x: Any, name: str) -> da.Array:
    arr = x if isinstance(x, da.Array) else da.asarray(x)
    if arr.dtype.type is bfloat16 and not arr.dtype.isnative:
        arr = arr.astype(_BF16)          # byte-swapped: NumPy's own functions take it too
    if arr.dtype != _BF16:
        raise TypeError(f"{name} must have dtype bfloat16_dtype.bfloat16, got {arr.dtype!r}")
    return arr


def _block_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # bfloat16 products are exact in float32; the float32 accumulator is returned unrounded
    return _matmul_np(a, b, out_dtype=np.float32)[:, np.newaxis, :]


def _out_dtype(out_dtype) -> np.dtype:
    dt = _BF16 if out_dtype is None else np.dtype(out_dtype)
    if dt not in (_BF16, _F32):
        raise TypeError(f"out_dtype must be bfloat16 or float32, got {out_dtype!r}")
    return dt


def matmul(a: Any, b: Any, *, out_dtype=None, split_every: int | None = None) -> da.Array:
    """``a @ b`` for 2-D bfloat16 dask arrays: every block product accumulates in float32, the
    partial products of the k-blocks are added in float32, and the result is rounded to
    bfloat16 once (``out_dtype=np.float32`` keeps the float32 sum).

    ``b`` is rechunked along k to match ``a``'s column chunks when they differ.

    >>> a = da.ones((4, 12 * 257), dtype=bfloat16, chunks=(4, 257))
    >>> float(matmul(a, a.T)[0, 0].compute())     # dask's a @ a.T gives 3072.0
    3088.0
    """
    a = _as_dask(a, "a")
    b = _as_dask(b, "b")
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"matmul needs 2-D arrays, got shapes {a.shape} and {b.shape}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: shapes {a.shape} and {b.shape} do not align (k={a.shape[1]} vs {b.shape[0]})")
    target = _out_dtype(out_dtype)
    if b.chunks[0] != a.chunks[1]:
        b = b.rechunk({0: a.chunks[1]})
    partial = da.blockwise(_block_product, "ikj", a, "ik", b, "kj", dtype=_F32,
                           adjust_chunks={"k": 1}, meta=np.empty((0, 0, 0), _F32))
    total = partial.sum(axis=1, dtype=_F32, split_every=split_every)
    return total if target == _F32 else total.astype(_BF16)


def _chunk_sum(x: np.ndarray, axis=None, keepdims=False, **kwargs) -> np.ndarray:
    return np.sum(x, axis=axis, keepdims=keepdims, dtype=_F32)


def _sum_f32(x: da.Array, axis, keepdims: bool, split_every) -> da.Array:
    return da.reduction(x, _chunk_sum, _chunk_sum, combine=_chunk_sum, axis=axis,
                        keepdims=keepdims, dtype=_F32, split_every=split_every,
                        concatenate=True, meta=np.empty((0,) * x.ndim, _F32))


def _normalize_axis(axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        axes = (axis,)
    elif isinstance(axis, (tuple, list)):
        axes = tuple(axis)
    else:
        raise TypeError(f"axis must be None, an int or a tuple of ints, got {axis!r}")
    out = []
    for ax in axes:
        if isinstance(ax, (bool, np.bool_)) or not isinstance(ax, (int, np.integer)):
            raise TypeError(f"axis must be None, an int or a tuple of ints, got {axis!r}")
        if not -ndim <= int(ax) < ndim:
            raise np.exceptions.AxisError(int(ax), ndim)
        out.append(int(ax) % ndim)
    return tuple(out)


def sum(x: Any, axis: int | Sequence[int] | None = None, *, keepdims: bool = False,
        out_dtype=None, split_every: int | None = None) -> da.Array:
    """Sum of a bfloat16 dask array: each chunk sums in float32, the partial sums are added in
    float32, and the result is rounded to bfloat16 once (``out_dtype=np.float32`` keeps it)."""
    x = _as_dask(x, "x")
    target = _out_dtype(out_dtype)
    total = _sum_f32(x, _normalize_axis(axis, x.ndim), keepdims, split_every)
    return total if target == _F32 else total.astype(_BF16)


def mean(x: Any, axis: int | Sequence[int] | None = None, *, keepdims: bool = False,
         out_dtype=None, split_every: int | None = None) -> da.Array:
    """Mean of a bfloat16 dask array: the float32 sum (as in :func:`sum`) divided by the count
    in float32, rounded to bfloat16 once. The mean of an empty selection is NaN, as in NumPy."""
    x = _as_dask(x, "x")
    target = _out_dtype(out_dtype)
    axes = _normalize_axis(axis, x.ndim)
    total = _sum_f32(x, axes, keepdims, split_every)
    if any(math.isnan(x.shape[ax]) for ax in axes):
        # unknown chunk sizes (x selected by a boolean mask): the count is computed with the sum
        # (tests/test_dask.py::test_mean_with_unknown_chunk_sizes)
        ones = x.map_blocks(lambda b: np.ones(b.shape, np.int64), dtype=np.int64)
        count = ones.sum(axis=axes, keepdims=keepdims, split_every=split_every)
        m = da.where(count > 0, total / count.astype(np.float32), np.float32(np.nan))
        return m if target == _F32 else m.astype(_BF16)
    count = 1
    for ax in axes:
        count *= x.shape[ax]
    with np.errstate(invalid="ignore", divide="ignore"):
        m = total / np.float32(count) if count else total * np.float32(np.nan)
    return m if target == _F32 else m.astype(_BF16)
