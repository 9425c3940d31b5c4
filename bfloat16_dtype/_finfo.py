"""``np.finfo(bfloat16)``, complete and identical on every supported NumPy.

A dtype registered through NumPy's user-dtype API has no machine-parameter entry of NumPy's
own (NumPy >= 2.4 reads a DType slot, 2.0-2.3 a table of its builtin floats), so
``np.finfo(bfloat16)`` would fail. This module builds the finfo object from the format's
constants and places it in ``np.finfo._finfo_cache``, which NumPy consults first; that cache is
the one piece of NumPy internals the module depends on, and ``tests/test_finfo.py`` fails loudly
if a NumPy release changes it. Every attribute float16's finfo has is filled in, in the
layouts both NumPy 2.0-2.3 (precomputed values and ``_str_*`` texts, ``_machar``) and
NumPy >= 2.4 (plain attributes and cached properties) read.

The object is also callable, as ml_dtypes' ``finfo`` class is: ``bfloat16_dtype.finfo(t)`` is
``np.finfo(t)``, so ``finfo(bfloat16).eps`` and ``finfo.eps`` both work.
"""
from __future__ import annotations

import types

import numpy as np


class finfo(np.finfo):  # noqa: N801  (named like numpy's class: its repr reads "finfo(...)")
    """``np.finfo`` for bfloat16, which can also be called like ``np.finfo``."""

    def __new__(cls, *args, **kwargs):  # instances come from _make_finfo only
        return np.finfo(*args, **kwargs)

    def __call__(self, dtype) -> np.finfo:
        """``np.finfo(dtype)``: ``bfloat16_dtype.finfo(bfloat16) is bfloat16_dtype.finfo``."""
        return np.finfo(dtype)


def _make_finfo(scalar_type: type, dtype: np.dtype) -> np.finfo:
    """Return a finfo instance describing bfloat16 (all values exact)."""
    info = object.__new__(finfo)
    bf = scalar_type
    eps, epsneg = bf(2.0**-7), bf(2.0**-8)
    huge = bf(float.fromhex("0x1.fep127"))
    normal, subnormal = bf(2.0**-126), bf(2.0**-133)
    resolution = bf(0.01)  # 10**-precision, rounded to bfloat16 as numpy computes it
    values = {
        "dtype": dtype,
        "bits": 16,
        "eps": eps,
        "epsneg": epsneg,
        "max": huge,
        "min": -huge,
        "smallest_normal": normal,
        "tiny": normal,
        "smallest_subnormal": subnormal,
        "resolution": resolution,
        "nmant": 7,
        "nexp": 8,
        "iexp": 8,
        "minexp": -126,
        "maxexp": 128,
        "machep": -7,
        "negep": -8,
        "precision": 2,
        "_radix": bf(2.0),
        # NumPy >= 2.4 caches its str/repr texts here
        "_fmt": None,
        "_repr": None,
        # NumPy 2.0-2.3: properties read _machar; str/repr read the _str_* texts
        "_machar": types.SimpleNamespace(
            smallest_normal=np.array([normal], dtype), xmin=np.array([normal], dtype)),
    }
    for name in ("eps", "epsneg", "max", "resolution", "smallest_normal",
                 "smallest_subnormal"):
        values["_str_" + name] = str(values[name])
    values["_str_tiny"] = str(normal)
    info.__dict__.update(values)
    return info


def register_finfo(scalar_type: type, dtype: np.dtype) -> np.finfo:
    """Make ``np.finfo(bfloat16)`` and ``np.finfo(x.dtype)`` return the bfloat16 finfo."""
    cache = getattr(np.finfo, "_finfo_cache", None)
    if not isinstance(cache, dict):
        raise ImportError(
            "bfloat16_dtype: this NumPy version has no np.finfo._finfo_cache; "
            "np.finfo(bfloat16) cannot be registered (please report this)")
    info = _make_finfo(scalar_type, dtype)
    cache[dtype] = info
    cache[scalar_type] = info
    return info
