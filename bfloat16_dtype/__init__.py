"""bfloat16_dtype: a native bfloat16 dtype for NumPy.

>>> import numpy as np
>>> from bfloat16_dtype import bfloat16
>>> x = np.array([1.5, 2, 3.14159], dtype=bfloat16)
>>> x
array([1.5 , 2.  , 3.14], dtype=bfloat16)
>>> (x * 0.5).dtype
dtype(bfloat16)
>>> np.ones(100000, bfloat16).sum()    # accumulates in float32, rounds once
bfloat16(1e+05)
"""
from __future__ import annotations

import importlib.util as _importlib_util

import numpy as np

try:
    from . import _ext
except ImportError as _exc:
    if _importlib_util.find_spec(__name__ + "._ext") is not None:
        raise                       # built, but it failed to load: NumPy's or the loader's error
    # a source checkout without the built extension, found before the installed package (for
    # example `python -m pytest` in the checkout puts it first on sys.path)
    raise ImportError(
        f"bfloat16_dtype's C extension is not built in {__path__[0]}: install the package "
        "(pip install .) and run from another directory, or build it in place "
        "(python setup.py build_ext --inplace)") from _exc
from ._ext import bfloat16
from ._config import config, show_config
from ._finfo import register_finfo
from ._printing import install as _install_printing

__version__ = "0.1.0"

#: The registered numpy dtype, ``np.dtype(bfloat16)``.
dtype: np.dtype = np.dtype(bfloat16)

# np.dtype("bfloat16") resolves through numpy's table of scalar type names; so does the type
# character, which np.vectorize uses to build its output (tests/test_dropin.py::
# test_vectorize_and_type_character_like_float16).
np.sctypeDict["bfloat16"] = bfloat16
np.sctypeDict[dtype.char] = bfloat16

#: ``np.finfo(bfloat16)``: the same object numpy returns; ``finfo(t)`` is ``np.finfo(t)``.
finfo: np.finfo = register_finfo(bfloat16, dtype)
_install_printing(bfloat16)

from . import numerics  # noqa: E402  (accurate helpers: numerics.round, .sum, .mean, .var, .std)
from .linalg import (dot, get_num_threads, inner, matmul, matvec, num_threads,  # noqa: E402
                     set_num_threads, vdot, vecmat)
from . import rounding, training  # noqa: E402  (rounding modes; mixed-precision training helpers)
from . import interop  # noqa: E402  (ml_dtypes casts, DLPack, torch/JAX helpers)
interop._install()

__all__ = ["bfloat16", "dtype", "finfo", "__version__", "numerics", "matmul", "dot", "matvec", "vecmat",
           "vdot", "inner", "get_num_threads", "set_num_threads", "num_threads", "config", "show_config",
           "rounding", "training", "interop"]
