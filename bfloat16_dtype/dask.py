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
from .interop import _dtype_text, _is_ml_bfloat16
from .linalg import matmul as _matmul_np
from .numerics import _axis, _sum_as_float32

__all__ = ["matmul", "sum", "mean"]

_BF16 = np.dtype(bfloat16)
_F32 = np.dtype(np.float32)


def _as_dask(x: Any, name: str) -> da.Array:
    arr = x if isinstance(x, da.Array) else da.asarray(x)
    if isinstance(arr._meta, np.ma.MaskedArray):
        # the chunks' masks would be dropped, the masked values counted
        # (tests/test_dask.py::test_masked_arrays_are_refused)
        raise TypeError(f"{name} is a masked dask array: these functions would ignore its mask; "
                        f"use its own methods ({name}.sum(), {name}.mean()) or "
                        f"da.ma.filled({name}, ...)")
    if arr.dtype.type is bfloat16 and not arr.dtype.isnative:
        arr = arr.astype(_BF16)          # byte-swapped: NumPy's own functions take it too
    elif _is_ml_bfloat16(arr.dtype):
        # ml_dtypes' bfloat16: the same bits, a view of each chunk, as the numerics helpers
        # take it (tests/test_dask.py::test_ml_dtypes_input)
        arr = arr.view(_BF16)
    if arr.dtype != _BF16:
        raise TypeError(f"{name} must have dtype bfloat16_dtype.bfloat16, got {_dtype_text(arr.dtype)}")
    return arr


def _block_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # bfloat16 products are exact in float32; the float32 accumulator is returned unrounded
    return _matmul_np(a, b, out_dtype=np.float32)[:, np.newaxis, :]


def _panel_product(a: np.ndarray, b: np.ndarray, out_dtype: np.dtype) -> np.ndarray:
    # a row panel of a and a column panel of b over all of k (blockwise concatenated them)
    return _matmul_np(a, b, out_dtype=out_dtype)


# The most bytes of bfloat16 operands one task of matmul's panel path holds (a row panel of a
# plus a column panel of b); larger panels take the partial products.
_PANEL_BYTES = 512 << 20


def _out_dtype(out_dtype) -> np.dtype:
    dt = _BF16 if out_dtype is None else np.dtype(out_dtype)
    if dt not in (_BF16, _F32) and not _is_ml_bfloat16(dt):
        raise TypeError(f"out_dtype must be bfloat16 or float32, got {_dtype_text(dt)}")
    return dt


def _as_target(total: da.Array, target: np.dtype) -> da.Array:
    """The float32 result as `target`: kept, or rounded once to bfloat16, viewed as ml_dtypes'
    bfloat16 when that was asked for, as linalg.matmul's out_dtype gives it
    (tests/test_dask.py::test_ml_dtypes_input)."""
    if target == _F32:
        return total
    out = total.astype(_BF16)
    if target == _BF16:
        return out
    # per block: dask's Array.view fails on a 0-d array (a full sum)
    return out.map_blocks(lambda blk: blk.view(target), dtype=target)


def matmul(a: Any, b: Any, *, out_dtype=None, split_every: int | None = None) -> da.Array:
    """``a @ b`` for 2-D bfloat16 dask arrays: sums accumulate in float32 over all of k and the
    result is rounded to bfloat16 once (``out_dtype=np.float32`` keeps the float32 sum).

    Each output block is one task multiplying a row panel of ``a`` by a column panel of ``b``
    (all of k), as ``bfloat16_dtype.matmul`` on the whole arrays does (its bits wherever the
    block is large enough for the GEMM path), and no float32 partial blocks are sent between
    workers. Where a panel pair would exceed 512 MiB, or when
    ``split_every`` is given, each block product is a task of its own and their float32
    partial products are added in float32 (a tree of ``split_every`` at a time), then rounded
    once. ``b`` is rechunked along k to match ``a``'s column chunks when they differ.

    >>> a = da.ones((4, 12 * 257), dtype=bfloat16, chunks=(4, 257))
    >>> float(matmul(a, a.T)[0, 0].compute())     # dask's a @ a.T gives 3072.0
    3088.0
    """
    a = _as_dask(a, "a")
    b = _as_dask(b, "b")
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"matmul needs 2-D arrays, got shapes {a.shape} and {b.shape}")
    if a.shape[1] != b.shape[0] and not (math.isnan(a.shape[1]) and math.isnan(b.shape[0])):
        # unknown k (both operands picked by one boolean mask): dask aligns the blocks, and
        # raises at compute if they differ (tests/test_dask.py::test_matmul_of_unknown_k)
        raise ValueError(f"matmul: shapes {a.shape} and {b.shape} do not align (k={a.shape[1]} vs {b.shape[0]})")
    target = _out_dtype(out_dtype)
    if b.chunks[0] != a.chunks[1]:
        b = b.rechunk({0: a.chunks[1]})
    panel = (max(a.chunks[0], default=0) + max(b.chunks[1], default=0)) * a.shape[1] * _BF16.itemsize
    if split_every is None and panel <= _PANEL_BYTES:
        inner = _F32 if target == _F32 else _BF16
        total = da.blockwise(_panel_product, "ij", a, "ik", b, "kj", dtype=inner, concatenate=True,
                             meta=np.empty((0, 0), inner), out_dtype=inner)
        return _as_target(total, target)
    partial = da.blockwise(_block_product, "ikj", a, "ik", b, "kj", dtype=_F32,
                           adjust_chunks={"k": 1}, meta=np.empty((0, 0, 0), _F32))
    total = partial.sum(axis=1, dtype=_F32, split_every=split_every)
    return _as_target(total, target)


def _chunk_sum(x: np.ndarray, axis=None, keepdims=False, **kwargs) -> np.ndarray:
    # the chunks (bfloat16) read directly, the partial sums (float32) by np.sum
    if x.dtype == _BF16:
        return _sum_as_float32(x, axis, keepdims)
    return np.sum(x, axis=axis, keepdims=keepdims, dtype=_F32)


def _sum_f32(x: da.Array, axis, keepdims: bool, split_every) -> da.Array:
    # meta of the result's dimensions (it had the input's: da.stack of such sums failed;
    # tests/test_dask.py::test_float32_results_have_their_own_dimensions)
    ndim = x.ndim if keepdims else x.ndim - len(axis)
    return da.reduction(x, _chunk_sum, _chunk_sum, combine=_chunk_sum, axis=axis,
                        keepdims=keepdims, dtype=_F32, split_every=split_every,
                        concatenate=True, meta=np.empty((0,) * ndim, _F32))


def _divide(total: np.ndarray, count: np.ndarray):
    """The float32 mean from a sum and a count computed with it; NaN where the count is 0. A
    0-d result is a NumPy scalar, as with known chunk sizes and dask's own x.mean()
    (tests/test_dask.py::test_mean_with_unknown_chunk_sizes)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.divide(total, count, dtype=_F32)


def _normalize_axis(axis, ndim: int) -> tuple[int, ...]:
    axis = _axis(axis)     # as numerics and np.sum take it (a 0-d integer array too)
    if axis is None:
        return tuple(range(ndim))
    out = []
    for ax in (axis,) if isinstance(axis, int) else axis:
        if not -ndim <= ax < ndim:
            raise np.exceptions.AxisError(ax, ndim)
        out.append(ax % ndim)
    return tuple(out)


def sum(x: Any, axis: int | Sequence[int] | None = None, *, keepdims: bool = False,
        out_dtype=None, split_every: int | None = None) -> da.Array:
    """Sum of a bfloat16 dask array: each chunk sums in float32, the partial sums are added in
    float32, and the result is rounded to bfloat16 once (``out_dtype=np.float32`` keeps it)."""
    x = _as_dask(x, "x")
    target = _out_dtype(out_dtype)
    total = _sum_f32(x, _normalize_axis(axis, x.ndim), keepdims, split_every)
    return _as_target(total, target)


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
        m = da.map_blocks(_divide, total, count, dtype=_F32)
        return _as_target(m, target)
    count = 1
    for ax in axes:
        count *= x.shape[ax]
    with np.errstate(invalid="ignore", divide="ignore"):
        m = total / np.float32(count) if count else total * np.float32(np.nan)
    return _as_target(m, target)
