"""Array printing with bfloat16's own shortest digits.

``np.array2string`` formats every float element with numpy's Dragon4, which knows float16,
float32, float64 and longdouble and reads anything else as a float64: 3.140625 (the bfloat16
nearest 3.14159) would print as ``3.140625``. A bfloat16 holds 2-3 significant digits, so it
should print as ``3.14`` the way a float16 array does. When unique (shortest) digits are asked
for, the wrappers installed here hand Dragon4 the float64 that has exactly the shortest
digits that round back to the same bfloat16; everything else passes through untouched.
"""
from __future__ import annotations

import functools

import numpy as np


def _shortest_double(x) -> float:
    return float(str(x)) if np.isfinite(float(x)) else float(x)


def _wrap(original, scalar_type):
    @functools.wraps(original)
    def dragon4(x, *args, **kwargs):
        if isinstance(x, scalar_type) and kwargs.get("unique", True):
            x = _shortest_double(x)
        return original(x, *args, **kwargs)

    dragon4.__bfloat16_wrapped__ = original
    return dragon4


def install(scalar_type: type) -> None:
    """Wrap numpy's Dragon4 entry points used by arrayprint (idempotent)."""
    from numpy._core import arrayprint

    for name in ("dragon4_positional", "dragon4_scientific"):
        current = getattr(arrayprint, name)
        if getattr(current, "__bfloat16_wrapped__", None) is None:
            setattr(arrayprint, name, _wrap(current, scalar_type))
