"""``np.finfo(bfloat16)``.

NumPy 2.4 fills ``np.finfo`` from a DType slot (``get_constant``) that a dtype registered
through the legacy user-dtype API cannot provide, so ``np.finfo(bfloat16)`` would fail. This
module builds the finfo object from the format's constants and places it in numpy's finfo
cache, the one piece of NumPy internals the package depends on. ``tests/test_finfo.py``
fails loudly if a NumPy release changes that cache.
"""
from __future__ import annotations

import numpy as np


def _make_finfo(scalar_type: type, dtype: np.dtype) -> np.finfo:
    """Return a ``np.finfo`` instance describing bfloat16 (all values exact)."""
    info = object.__new__(np.finfo)
    values = {
        "dtype": dtype,
        "bits": 16,
        "eps": scalar_type(2.0**-7),
        "max": scalar_type(float.fromhex("0x1.fep127")),
        "min": scalar_type(-float.fromhex("0x1.fep127")),
        "smallest_normal": scalar_type(2.0**-126),
        "smallest_subnormal": scalar_type(2.0**-133),
        "nmant": 7,
        "minexp": -126,
        "maxexp": 128,
        "precision": 2,
        "_radix": scalar_type(2.0),
        "_fmt": None,
        "_repr": None,
    }
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
