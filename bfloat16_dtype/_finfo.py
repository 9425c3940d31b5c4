"""``np.finfo(bfloat16)``, complete and identical on every supported NumPy.

NumPy >= 2.4 builds a finfo object from the DType's ``get_constant`` slot (``csrc/dtype.c``,
``bf16_get_constant``): ``register_finfo`` asks ``np.finfo`` for it, so every value comes from
the dtype through NumPy's own code. NumPy 2.0-2.3 only know their builtin floats (a table of
machine parameters), so there the object is built here from the format's constants, with every
attribute float16's finfo has, in the layout those versions read (precomputed values,
``_str_*`` texts, ``_machar``).

Either way the object is placed in ``np.finfo._finfo_cache``, which NumPy consults first, so
that ``np.finfo(bfloat16)`` returns it: it is also callable, as ml_dtypes' ``finfo`` class is
(``bfloat16_dtype.finfo(t)`` is ``np.finfo(t)``, so ``finfo(bfloat16).eps`` and ``finfo.eps``
both work). ``tests/test_finfo.py`` checks the values against the spec's bit patterns on every
NumPy, and on NumPy >= 2.4 also a finfo that NumPy builds afresh without the cache.
"""
from __future__ import annotations

import types

import numpy as np
from numpy.lib import NumpyVersion

# NumPy >= 2.4 reads np.finfo's values from the DType (NPY_DT_get_constant).
FINFO_FROM_DTYPE = NumpyVersion(np.__version__) >= "2.4.0"


class finfo(np.finfo):  # noqa: N801  (named like numpy's class: its repr reads "finfo(...)")
    """``np.finfo`` for bfloat16, which can also be called like ``np.finfo``."""

    def __new__(cls, *args, **kwargs):  # instances come from _make_finfo only
        return np.finfo(*args, **kwargs)

    def __call__(self, dtype) -> np.finfo:
        """``np.finfo(dtype)``: ``bfloat16_dtype.finfo(bfloat16) is bfloat16_dtype.finfo``."""
        return np.finfo(dtype)


def _make_finfo(scalar_type: type, dtype: np.dtype) -> np.finfo:
    """NumPy 2.0-2.3: a finfo instance describing bfloat16 (all values exact)."""
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
    if FINFO_FROM_DTYPE:
        for key in (dtype, scalar_type):
            cache.pop(key, None)
        built = np.finfo(dtype)  # NumPy fills it in from bf16_get_constant
        info = object.__new__(finfo)
        info.__dict__.update(built.__dict__)
    else:
        info = _make_finfo(scalar_type, dtype)
    cache[dtype] = info
    cache[scalar_type] = info
    return info
