"""Accurate bfloat16 numerics one call away, where numpy's own machinery has no per-dtype hook.

numpy computes a few functions as a chain of ufunc calls whose intermediates have the input's
dtype. For bfloat16 every intermediate is rounded to 8 significant bits:

* ``np.round(x, decimals)`` scales by ``10**decimals`` *in bfloat16*, rounds to an integer and
  scales back, so ``np.round(bfloat16(0.02502), 2)`` gives 0.02 (the scaled value 2.502 rounds
  to 2.5 first, then to 2) and values above ``max / 10**decimals`` become inf.
* ``np.mean`` divides a bfloat16 *rounded* sum by the count (two roundings; up to one ulp off,
  either way; numpy special-cases float16 to sum in float32 here, and cannot do so for a user
  dtype), and ``np.var``/``np.std`` subtract that mean: its error δ adds δ² to the variance,
  far off for data whose mean is large against its spread.

The functions below compute in float32 or float64 and round to bfloat16 once. They accept
anything ``np.asarray`` accepts and return bfloat16 arrays (or bfloat16 scalars for 0-d
results), like the numpy functions they mirror.

>>> import numpy as np
>>> from bfloat16_dtype import bfloat16, numerics
>>> x = np.array([0.02502, 2.5, 1e38], dtype=bfloat16)
>>> numerics.round(x, 2).astype(np.float32).tolist()   # np.round(x, 2): [0.02, 2.5, inf]
[0.030029296875, 2.5, 9.969209968386869e+37]
>>> float(numerics.mean(np.ones(600000, bfloat16)))   # np.mean gives 0.99609375
1.0
"""
from __future__ import annotations

import operator
from typing import Any, Optional, Sequence, Union

import numpy as np

from ._ext import _sum_f32, bfloat16
from .interop import _asarray, _dtype_text, _read_as_ours, _view_ml_bfloat16

__all__ = ["round", "around", "sum", "mean", "var", "std"]

_BF16 = np.dtype(bfloat16)
Axis = Union[None, int, Sequence[int]]


def _as_bf16_input(x: Any, name: str = "x") -> np.ndarray:
    if isinstance(x, np.ma.MaskedArray):
        # np.asarray would drop the mask and count the masked values
        # (tests/test_reductions.py::test_numerics_refuse_masked_arrays)
        raise TypeError(f"{name} is a masked array: these helpers would ignore its mask; use "
                        f"its own methods ({name}.mean(), {name}.sum()) or {name}.filled(...)")
    a = _read_as_ours(_asarray(x))
    if a.dtype.kind not in "fiub" and a.dtype != _BF16:
        raise TypeError(f"{name} must be a real numeric array, got dtype {_dtype_text(a.dtype)}")
    return a


def _finish(result: np.ndarray, out: Optional[np.ndarray]):
    """Round a float32/float64 result to bfloat16 once; write into `out` if given (of the
    result's shape, as NumPy's reductions require). `out` may be ml_dtypes' bfloat16, written
    through a view of ours, or byte-swapped, as np.sum's out= takes them
    (tests/test_numerics.py::test_out_of_ml_dtypes, ::test_out_byte_swapped)."""
    if out is not None:
        if not isinstance(out, np.ndarray):
            raise TypeError(f"out must be a bfloat16 ndarray, got {type(out).__name__}")
        target = _view_ml_bfloat16(out)
        if target.dtype.type is not bfloat16:
            raise TypeError(f"out must be a bfloat16 ndarray, got dtype {_dtype_text(out.dtype)}")
        if out.shape != np.shape(result):
            raise ValueError(f"out has shape {out.shape}, expected {np.shape(result)}")
        np.copyto(target, np.asarray(result).astype(_BF16), casting="unsafe")
        return out
    r = np.asarray(result).astype(_BF16)
    return r[()] if r.ndim == 0 else r


def round(x: Any, decimals: int = 0, out: Optional[np.ndarray] = None):
    """Round to `decimals` decimal places, accurately: the accurate path for ``np.round``.

    Computes ``rint(x * 10**decimals) / 10**decimals`` in float64 on the exact values of `x`
    and rounds the result to bfloat16 once (ties to even, as ``np.round``). For bfloat16 input
    and ``|decimals| <= 19`` the scaling is exact in float64, so the only roundings are the
    decimal rounding itself and the final one to bfloat16. ``np.round`` on a bfloat16 array
    instead rounds the scaled value to bfloat16 first; it can land on the wrong side of a
    decimal tie and it overflows to inf for ``|x| > max / 10**decimals``.

    >>> import numpy as np
    >>> from bfloat16_dtype import bfloat16, numerics
    >>> numerics.round(np.array([0.02502, -1.2345], bfloat16), 2).astype(np.float32).tolist()
    [0.030029296875, -1.2265625]
    """
    try:
        d = operator.index(decimals)
    except TypeError:
        raise TypeError(f"decimals must be an integer, got {decimals!r}") from None
    a = _as_bf16_input(x)
    a = a.astype(_exact_float(a))
    if d < -308:
        # NumPy scales by 10**-d in float64, which overflows: values up to half of it round to a
        # zero, larger ones (long double only) to 10**309 or more, inf in bfloat16 as they are
        # (int64 and long double input had come back unrounded:
        # tests/test_ufuncs.py::test_numerics_round_far_left_of_the_point_every_input_type)
        t = a.dtype.type
        with np.errstate(over="ignore"):
            half = t(5) * t(10) ** (-d - 1)
        zero = np.isfinite(a) & (np.abs(a) <= half)
        return _finish(np.where(zero, np.copysign(t(0), a), a), out)
    with np.errstate(over="ignore", invalid="ignore"):
        r = np.round(a, d)
    # a value whose scaling overflows float64 has no digits to drop at that position, and
    # inf * 10**d / 10**d is NaN from d = 309 on: both stay as they are
    r = np.where(np.isfinite(r), r, a)
    return _finish(r, out)


#: Same as :func:`round`, under numpy's other name.
around = round


def sum(x: Any, axis: Axis = None, keepdims: bool = False, where: Any = True,
        initial: Any = 0, out: Optional[np.ndarray] = None):
    """Sum accumulated in float32, rounded to bfloat16 once.

    ``x.sum()`` on bfloat16 already accumulates in float32 through the dtype's add loop; this
    helper states it explicitly (``x.sum(dtype=np.float32)`` rounded once) and works for any
    input layout and for array-likes (``x.sum(axis=0, initial=...)`` accumulates in float32
    too: README, "Reductions accumulate in float32").

    >>> import numpy as np
    >>> from bfloat16_dtype import bfloat16, numerics
    >>> float(numerics.sum(np.ones(100000, bfloat16)))
    99840.0
    """
    a = _as_bf16_input(x)
    axis = _axis(axis)
    if a.dtype == _BF16:
        total = _sum_as_float32(a, axis, keepdims, where, initial)
    else:
        total = np.sum(a, axis=axis, dtype=_accumulator(a), keepdims=keepdims, where=where,
                       initial=initial)
    return _finish(total, out)


def _sum_as_float32(a: np.ndarray, axis=None, keepdims: bool = False, where: Any = True,
                   initial: Any = 0):
    """``np.sum(a, dtype=np.float32, ...)`` of a native bfloat16 ndarray, reading the bfloat16
    values directly (the private ufunc ``_sum_f32``: its reduce adds bfloat16 into float32).
    np.sum with dtype=float32 runs NumPy's float32 loop on buffered casts instead, about five
    times the time of np.sum(a) (README, "Reductions accumulate in float32"); the results agree
    within float32's rounding (tests/test_numerics.py::test_sum_as_float32_like_numpy)."""
    return _sum_f32.reduce(a, axis=axis, dtype=np.float32, keepdims=keepdims, where=where,
                           initial=initial)


def mean(x: Any, axis: Axis = None, keepdims: bool = False, where: Any = True,
         out: Optional[np.ndarray] = None):
    """Mean computed in float32 (sum and division), rounded to bfloat16 once.

    ``np.mean`` on bfloat16 divides an already-rounded bfloat16 sum: up to one ulp off, e.g.
    ``np.ones(600000, bfloat16).mean()`` is 0.996. This gives 1.

    >>> import numpy as np
    >>> from bfloat16_dtype import bfloat16, numerics
    >>> float(numerics.mean(np.array([1, 2, 4], bfloat16)))
    2.328125
    """
    a = _as_bf16_input(x)
    axis = _axis(axis)
    if a.dtype == _BF16 and where is True:
        with np.errstate(over="ignore"):
            total = _sum_as_float32(a, axis, keepdims)
        count = a.size // total.size if total.size else 1
        if count and np.isinf(total).any():
            # a float32 sum past float32's range (values near bfloat16's largest; float32 has
            # the same range): float64 sums do not overflow and infinite inputs stay so
            # (tests/test_numerics.py::test_mean_of_values_near_the_largest_does_not_overflow)
            return _finish(np.mean(a, axis=axis, dtype=np.float64, keepdims=keepdims), out)
        if count:
            # np.mean's steps (the float32 sum divided by the count in float32), the sum reading
            # bfloat16 directly (tests/test_numerics.py::test_mean_like_numpy_float32); an
            # empty selection takes np.mean's path for its NaN and warning
            return _finish(np.true_divide(total, count, dtype=np.float32), out)
    return _finish(np.mean(a, axis=axis, dtype=_accumulator(a), keepdims=keepdims,
                           where=where), out)


def var(x: Any, axis: Axis = None, ddof: float = 0, keepdims: bool = False, where: Any = True,
        out: Optional[np.ndarray] = None):
    """Variance computed in float64 throughout, rounded to bfloat16 once.

    float64 because numpy's float32 var sums the squared deviations sequentially along outer
    axes, which drifts by more than a bfloat16 ulp over ~10**7 elements.

    >>> import numpy as np
    >>> from bfloat16_dtype import bfloat16, numerics
    >>> float(numerics.var(np.array([1, 2, 3, 4], bfloat16)))
    1.25
    """
    a = _as_bf16_input(x)
    return _finish(np.var(a, axis=_axis(axis), dtype=np.float64, ddof=ddof,
                          keepdims=keepdims, where=where), out)


def std(x: Any, axis: Axis = None, ddof: float = 0, keepdims: bool = False, where: Any = True,
        out: Optional[np.ndarray] = None):
    """Standard deviation computed in float64 throughout (see :func:`var`), rounded once.

    >>> import numpy as np
    >>> from bfloat16_dtype import bfloat16, numerics
    >>> float(numerics.std(np.array([1, 2, 3, 4], bfloat16)))
    1.1171875
    """
    a = _as_bf16_input(x)
    return _finish(np.std(a, axis=_axis(axis), dtype=np.float64, ddof=ddof,
                          keepdims=keepdims, where=where), out)


def _exact_float(a: np.ndarray) -> type:
    """A float type that holds every value of `a` exactly where the platform has one: long
    double for 64-bit integers and long double input (x86's 64-bit significand), float64 for the
    rest. Converting through float64 would round those twice
    (tests/test_reductions.py::test_numerics_round_wide_inputs_once)."""
    if a.dtype == np.longdouble or (a.dtype.kind in "iu" and a.dtype.itemsize == 8):
        return np.longdouble
    return np.float64


def _accumulator(a: np.ndarray) -> type:
    """float32 for bfloat16 and narrower input; _exact_float for wider (float64 input summed in
    float32 would round twice, once to float32 and once to bfloat16)."""
    return _exact_float(a) if a.dtype.itemsize > 2 else np.float32


def _axis(axis: Axis):
    """`axis` as np.sum takes it: None, an integer (anything with __index__, a 0-d integer
    array too) or a tuple (or list) of them; bools, floats, text, dicts, sets and 1-D arrays
    raise TypeError (bytes were once read as the axes of their byte values;
    tests/test_numerics.py::test_axis_as_numpy_takes_it). The dask helpers check their axis
    here too."""
    if axis is None:
        return None
    one = not isinstance(axis, (tuple, list))
    try:
        axes = tuple(_index(a) for a in ((axis,) if one else axis))
    except TypeError:
        raise TypeError(f"axis must be None, an int or a tuple of ints, got {axis!r}") from None
    return axes[0] if one else axes


def _index(a) -> int:
    if isinstance(a, (bool, np.bool_)):     # np.sum refuses them; operator.index takes True
        raise TypeError("a bool is not an axis")
    return operator.index(a)
