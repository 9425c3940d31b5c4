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
  the same bfloat16, and where ``precision`` cuts them or ``min_digits`` asks for more, the
  stored value with the options that print float16's digits (``_dragon4_args``).
"""
from __future__ import annotations

import decimal
import functools
import math
import sys

import numpy as np

from ._ext import _shortest_str


_SCIENTIFIC = np._core.multiarray.dragon4_scientific
_EXACT = decimal.Context(prec=200)   # a bfloat16 has at most 93 significant digits, 39 integer ones


def _digit_count(value: decimal.Decimal, scientific: bool, fractional: bool) -> int:
    """The digits of ``value`` (trailing zeros dropped), counted as Dragon4's precision and
    min_digits count them: after the point in scientific notation and in fractional positional
    output (negative when the last digit lies left of the point), significant digits otherwise."""
    significant = len(value.normalize(_EXACT).as_tuple().digits)
    if scientific:
        return significant - 1
    if fractional:
        return significant - 1 - value.adjusted()
    return significant


def _dragon4_args(x, scientific, kwargs):
    """The Dragon4 argument and options that print the scalar ``x`` as float16's are printed.

    Unique mode prints the shortest digits that round back to ``x``: those of the float64 of
    its shortest text (``str(x)``, except under legacy="1.13";
    tests/test_scalar.py::test_str_shortest_round_trip_all_patterns). Where ``precision`` cuts them or ``min_digits`` asks for more, the
    digits are the stored value's, rounded once, with float16's rules for the zeros that
    remain (tests/test_printing.py::test_dragon4_emulation_matches_float16).
    """
    exact = float(x)
    if not kwargs.get("unique", True) or not math.isfinite(exact):
        return exact, kwargs
    text = _shortest_str(x)   # str(x) under legacy="1.13" prints "%.6g"
    value, changes = _unique_choice(exact, text, scientific, kwargs.get("fractional", True),
                                    kwargs.get("precision"), kwargs.get("min_digits"),
                                    kwargs.get("trim", "k"))
    return value, dict(kwargs, **changes) if changes else kwargs


@functools.lru_cache(maxsize=1 << 16)
def _unique_choice(exact, text, scientific, fractional, precision, min_digits, trim):
    """_dragon4_args' choice for a finite value in unique mode: the float to print and the
    options it changes. Kept per text and options: NumPy formats each element of an array
    twice (it measures the columns, then prints), and arrays repeat values."""
    shortest = float(text)
    if shortest == exact:
        return exact, {}
    have = _digit_count(decimal.Decimal(text), scientific, fractional)
    if precision is None or precision < 0 or (precision == 0 and not scientific
                                               and not fractional):
        precision = None   # significant digits: 0 means no cut, as for float16
    if min_digits is None or min_digits < 0:
        min_digits = None
    if precision is not None and (precision < have or (min_digits or 0) > precision):
        # Cut (or precision=0 below min_digits): rounded once, half to even. A rounding up
        # drops the zeros its carry leaves (1.96 -> "2."), down to min_digits; otherwise the
        # digits are kept (1.04 -> "1.0"); zeros pad to min_digits (2e10 -> "2.0000e+10").
        value = decimal.Decimal(exact)
        if scientific or not fractional:
            quantum = value.adjusted() - precision + (0 if scientific else 1)
        else:
            quantum = -precision
        rounded = value.quantize(decimal.Decimal(1).scaleb(quantum),
                                 rounding=decimal.ROUND_HALF_EVEN, context=_EXACT)
        if abs(rounded) > abs(value):
            # float16's zeros after a carry: padded to min_digits unless trim="-" takes them
            pad = min_digits is not None and trim != "-"
            return float(rounded), {"min_digits": min_digits if pad else -1}
        if min_digits is None or min_digits <= precision or trim == "-":
            return exact, {"unique": False, "precision": precision, "min_digits": -1}
        # precision=0 below min_digits: the rounded digit, then zeros
        return float(rounded), {"unique": False, "min_digits": -1, "precision": min_digits}
    if min_digits is not None and min_digits > have:
        # More digits: the stored value's, then zeros once they run out (-0.0078125 -> ...250).
        if _digit_count(decimal.Decimal(exact), scientific, fractional) <= min_digits:
            return exact, {}
        return exact, {"unique": False, "precision": min_digits, "min_digits": -1}
    return shortest, {}


# The C functions' parameters after x, in order (numpy/_core/src/multiarray/multiarraymodule.c).
_POSITIONAL = ("precision", "unique", "fractional", "sign", "trim", "pad_left", "pad_right",
               "min_digits")
_SCIENTIFIC_NAMES = ("precision", "unique", "sign", "trim", "pad_left", "exp_digits", "min_digits")


def _wrap_dragon4(original, scalar_type, scientific):
    names = _SCIENTIFIC_NAMES if scientific else _POSITIONAL

    @functools.wraps(original)
    def dragon4(x, *args, **kwargs):
        if isinstance(x, scalar_type):
            kwargs.update(zip(names, args))
            x, kwargs = _dragon4_args(x, scientific, kwargs)
            args = ()
        return original(x, *args, **kwargs)

    dragon4.__bfloat16_wrapped__ = original
    return dragon4


def _integer_width(arrayprint, values, legacy_113, **kwargs):
    """The widest integer part of ``values`` printed positionally with ``kwargs``."""
    parts = (arrayprint.dragon4_positional(x, fractional=True, **kwargs).split(".")[0]
             for x in values)
    return max(len(p.lstrip("-+")) if legacy_113 else len(p) for p in parts)


def _match_widths(fmt, data, options, arrayprint):
    """NumPy sizes the integer part with the shortest digits (min_digits unset), then prints with
    min_digits set, which gives the stored value's digits where the shortest ones round up to a
    power of ten a bfloat16 cannot hold: 9984, 99840 and 999424 were measured as 10000., 100000.
    and 1000000., printed one digit narrower, and every element of the array gained a space
    (positional printing: NumPy 2.0-2.2 by default, legacy <= "2.2" on later ones;
    tests/test_printing.py::test_no_stray_space_before_values_below_a_power_of_ten)."""
    if getattr(fmt, "exp_format", True) or getattr(fmt, "pad_left", None) is None:
        return fmt
    finite = data[np.isfinite(data)].ravel()
    if not np.any(np.abs(finite.astype(np.float32)) >= 9984):
        return fmt
    fixed = options.get("floatmode") == "fixed"
    sign = fmt.sign == "+"
    legacy_113 = getattr(fmt, "_legacy", sys.maxsize) <= 113
    measured = _integer_width(arrayprint, finite, legacy_113, precision=options.get("precision"),
                              unique=not fixed, trim="k" if fixed else ".", sign=sign)
    printed = _integer_width(arrayprint, finite, legacy_113, precision=fmt.precision,
                             min_digits=fmt.min_digits, unique=fmt.unique, trim=fmt.trim,
                             sign=sign)
    if measured > printed:
        pad_left = fmt.pad_left - (measured - printed)
        if data.size != finite.size:   # room for nan and inf, as NumPy makes it
            offset = fmt.pad_right + 1
            values = data.astype(np.float32)
            neginf = fmt.sign != "-" or bool(np.any(values[np.isinf(values)] < 0))
            pad_left = max(pad_left, len(options["nanstr"]) - offset,
                           len(options["infstr"]) + neginf - offset)
        fmt.pad_left = pad_left
    return fmt


def _wrap_format_function(original, scalar_type, arrayprint):
    @functools.wraps(original)
    def get_format_function(data, **options):
        if data.dtype.type is scalar_type:
            fmt = arrayprint._get_formatdict(data, **options)["float"]()
            return _match_widths(fmt, data, options, arrayprint)
        return original(data, **options)

    get_format_function.__bfloat16_wrapped__ = original
    return get_format_function


def install(scalar_type: type) -> None:
    """Wrap the arrayprint functions named above (idempotent)."""
    from numpy._core import arrayprint

    for name in ("dragon4_positional", "dragon4_scientific"):
        current = getattr(arrayprint, name)
        if getattr(current, "__bfloat16_wrapped__", None) is None:
            setattr(arrayprint, name,
                    _wrap_dragon4(current, scalar_type, name == "dragon4_scientific"))
    current = arrayprint._get_format_function
    if getattr(current, "__bfloat16_wrapped__", None) is None:
        arrayprint._get_format_function = _wrap_format_function(current, scalar_type,
                                                                arrayprint)
