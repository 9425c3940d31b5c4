"""Array printing with bfloat16's own shortest digits, the same on every supported NumPy.

Two hooks into ``numpy._core.arrayprint`` (checked by ``tests/test_printing.py``):

* ``_get_format_function`` picks the element formatter. NumPy >= 2.5 formats arrays whose
  scalar type is not defined in numpy with plain ``str()`` (numpy gh-30798), which would ignore
  every print option; for bfloat16 the wrapper hands back NumPy's own float formatter, so
  precision, floatmode, sign, suppress and legacy apply exactly as they do for float16.
* ``np.array2string`` formats every float element with NumPy's Dragon4, which knows float16,
  float32, float64 and longdouble and reads anything else as a float64: 3.140625 (the bfloat16
  nearest 3.14159) would print as ``3.140625``. When unique (shortest) digits are asked for, the
  Dragon4 wrappers hand it the float64 that has exactly the shortest digits that round back to
  the same bfloat16; everything else passes through untouched.
"""
from __future__ import annotations

import functools

import numpy as np


def _shortest_double(x) -> float:
    return float(str(x)) if np.isfinite(float(x)) else float(x)


def _wrap_dragon4(original, scalar_type):
    @functools.wraps(original)
    def dragon4(x, *args, **kwargs):
        if isinstance(x, scalar_type) and kwargs.get("unique", True):
            x = _shortest_double(x)
        return original(x, *args, **kwargs)

    dragon4.__bfloat16_wrapped__ = original
    return dragon4


def _wrap_format_function(original, scalar_type, arrayprint):
    @functools.wraps(original)
    def get_format_function(data, **options):
        if data.dtype.type is scalar_type:
            return arrayprint._get_formatdict(data, **options)["float"]()
        return original(data, **options)

    get_format_function.__bfloat16_wrapped__ = original
    return get_format_function


def install(scalar_type: type) -> None:
    """Wrap the arrayprint functions named above (idempotent)."""
    from numpy._core import arrayprint

    for name in ("dragon4_positional", "dragon4_scientific"):
        current = getattr(arrayprint, name)
        if getattr(current, "__bfloat16_wrapped__", None) is None:
            setattr(arrayprint, name, _wrap_dragon4(current, scalar_type))
    current = arrayprint._get_format_function
    if getattr(current, "__bfloat16_wrapped__", None) is None:
        arrayprint._get_format_function = _wrap_format_function(current, scalar_type,
                                                                arrayprint)
