"""Conversions to bfloat16 in a chosen rounding mode.

``x.astype(bfloat16)`` always rounds to nearest, ties to even. :func:`to_bfloat16` adds the
modes low-precision training asks for: round toward zero (truncation) and stochastic rounding
(unbiased: the expected result is the input), each optionally flushing subnormal results to
zero as a TPU does.

>>> import numpy as np
>>> from bfloat16_dtype.rounding import to_bfloat16
>>> x = np.float32([1 + 2**-9, 1 + 2**-7 - 2**-20])
>>> to_bfloat16(x)                             # nearest-even, same bits as x.astype(bfloat16)
array([1.  , 1.01], dtype=bfloat16)
>>> to_bfloat16(x, "toward_zero")
array([1., 1.], dtype=bfloat16)
>>> draws = to_bfloat16(np.full(100_000, 1 + 2**-9, np.float32), "stochastic", rng=0)
>>> float(draws.astype(np.float64).mean())   # 1 + 2**-9 = 1.001953125 in expectation
1.00193...
"""
from __future__ import annotations

from typing import Optional, Union

import numpy as np

from . import _ext
from ._ext import bfloat16
from .interop import _asarray, _dtype_text, _view_ml_bfloat16

__all__ = ["ROUNDING_MODES", "to_bfloat16"]

#: The rounding modes :func:`to_bfloat16` accepts, with their number in the C kernel.
ROUNDING_MODES = {"nearest_even": 0, "toward_zero": 1, "stochastic": 2}

_BF16 = np.dtype(bfloat16)
_SOURCES = (np.dtype(np.float32), np.dtype(np.float64))

RngLike = Union[None, int, np.integer, np.random.Generator, np.random.SeedSequence,
                np.random.BitGenerator]


def _generator(rng: RngLike, owner: str = "to_bfloat16") -> np.random.Generator:
    """What np.random.default_rng takes (tests/test_rounding.py::test_rng_forms_like_default_rng),
    but bools and the legacy RandomState."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, (np.random.SeedSequence, np.random.BitGenerator)):
        return np.random.default_rng(rng)
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, (bool, np.bool_)):
        if rng < 0:
            raise ValueError(f"{owner}: rng seed must be non-negative, got {rng!r}")
        return np.random.default_rng(int(rng))
    raise TypeError(
        f"{owner}: rng must be None, an int seed, a numpy.random.Generator, SeedSequence or "
        f"BitGenerator, got {rng!r}"
    )


def _random_bits(rng: np.random.Generator, n: int, source: np.dtype) -> np.ndarray:
    """The uniform random bits stochastic rounding of ``n`` values of ``source`` consumes:
    16 per float32 value (uint16), 64 per float64 value (uint64), drawn from ``rng``."""
    if source == np.float32:
        return rng.integers(0, 1 << 16, size=n, dtype=np.uint16)
    return rng.integers(0, 1 << 64, size=n, dtype=np.uint64)


def to_bfloat16(
    x,
    rounding: str = "nearest_even",
    *,
    flush_subnormals: bool = False,
    rng: RngLike = None,
    out: Optional[np.ndarray] = None,
) -> np.ndarray:
    """Convert a float32 or float64 array to bfloat16, rounding in the mode ``rounding``.

    Parameters
    ----------
    x : array_like of float32 or float64 (either byte order)
        Other dtypes raise TypeError (convert them explicitly first; bfloat16 input is
        already rounded).
    rounding : {"nearest_even", "toward_zero", "stochastic"}
        ``"nearest_even"`` matches ``x.astype(bfloat16)`` bit for bit. ``"toward_zero"``
        truncates (never overflows: values past the largest bfloat16 give ±3.39e38).
        ``"stochastic"`` rounds away from zero with probability equal to the dropped
        fraction of the spacing, so the expected result equals ``x``: exactly for float32
        input (16 random bits per value) and for float64 input of magnitude at least 2^-145
        (64 random bits per value; below that the probability is off by less than 2^-64).
        A float64 value rounds once, directly to bfloat16, never through float32.
    flush_subnormals : bool
        Replace subnormal results (magnitude below 2^-126) by zero of the same sign, as TPUs
        do. Applied after rounding, so stochastic rounding is then no longer unbiased there.
    rng : None, int, numpy.random.Generator, SeedSequence or BitGenerator
        Source of the random bits of stochastic rounding: a Generator (its state advances),
        an int seed, a SeedSequence or a BitGenerator (as ``np.random.default_rng`` takes
        them; reproducible) or None (fresh entropy). Only valid with ``"stochastic"``.
    out : bfloat16 ndarray, optional
        Destination with the shape of ``x``; writeable. Checked before anything is written.

    NaN stays NaN (sign kept, made quiet); ±inf and ±0 are preserved. Finite values that round
    past the largest finite bfloat16 become ±inf with numpy's "overflow encountered in cast"
    warning (governed by ``np.errstate(over=...)``, like ``astype``); stochastic rounding treats
    inf as 2^128, so a value between 3.3895314e38 and float32's maximum becomes inf with
    probability equal to its dropped fraction.

    >>> import numpy as np
    >>> to_bfloat16(np.array([1e-39, -1e-40, 2.5]), flush_subnormals=True)
    array([ 0. , -0. ,  2.5], dtype=bfloat16)
    """
    if not isinstance(rounding, str) or rounding not in ROUNDING_MODES:
        raise ValueError(
            f"to_bfloat16: rounding must be one of {', '.join(map(repr, ROUNDING_MODES))}, "
            f"got {rounding!r}"
        )
    mode = ROUNDING_MODES[rounding]
    if mode != ROUNDING_MODES["stochastic"] and rng is not None:
        raise ValueError(f"to_bfloat16: rng is only used with rounding='stochastic', not {rounding!r}")
    if not isinstance(flush_subnormals, (bool, np.bool_)):
        raise TypeError(f"to_bfloat16: flush_subnormals must be a bool, got {flush_subnormals!r}")
    if isinstance(x, np.ma.MaskedArray):
        # np.asarray would drop the mask: the masked values would come back as live data
        # (tests/test_rounding.py::test_masked_arrays_are_refused)
        raise TypeError("to_bfloat16: x is a masked array, whose mask the result would lose; "
                        "round x.data and mask the result again (np.ma.array(to_bfloat16("
                        "x.data), mask=x.mask)), or use x.astype(bfloat16)")
    # a torch.bfloat16 tensor too, refused below by its dtype rather than by torch's error
    # (tests/test_rounding.py::test_torch_tensors_are_read)
    arr = _asarray(x)
    if not arr.dtype.isnative:
        # byte-swapped: a native copy, as astype(bfloat16) reads it (the kernel reads native
        # order only; tests/test_rounding.py::test_byte_swapped_input)
        arr = arr.astype(arr.dtype.newbyteorder("="))
    if arr.dtype not in _SOURCES:
        raise TypeError(
            f"to_bfloat16: x must be float32 or float64, got dtype {_dtype_text(arr.dtype)} "
            "(convert it with .astype(np.float32) first)"
        )
    if out is not None:
        if not isinstance(out, np.ndarray):
            raise TypeError(f"to_bfloat16: out must be a numpy array, got {type(out).__name__}")
        given = out  # returned as it was given (an ml_dtypes array too), as ufuncs do
        out = _view_ml_bfloat16(out)
        if out.dtype != _BF16:
            raise TypeError(f"to_bfloat16: out must have dtype bfloat16 (native byte order), "
                            f"got {_dtype_text(out.dtype)}")
        if out.shape != arr.shape:
            raise ValueError(f"to_bfloat16: out has shape {out.shape}, x has shape {arr.shape}")
        if not out.flags.writeable:
            raise ValueError("to_bfloat16: out is read-only")
    generator = _generator(rng) if mode == ROUNDING_MODES["stochastic"] else None

    src = np.ascontiguousarray(arr)
    direct = out is not None and out.flags.c_contiguous and not np.may_share_memory(out, src)
    dst = out if direct else np.empty(arr.shape, _BF16)
    bits = None if generator is None else _random_bits(generator, src.size, src.dtype)
    _ext._round_to_bf16(src, dst, mode, bool(flush_subnormals), bits)
    if out is None:
        return dst
    if not direct:
        out[...] = dst
    return given
