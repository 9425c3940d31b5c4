"""Property and fuzz tests (hypothesis, bounded): construction from arbitrary objects and nested
inputs, casts of random buffers of every numeric type, binary ufuncs on random bit patterns in
every memory layout, and the measured error bound of power/arctan2. References are independent:
exact rational rounding (fractions.Fraction) and numpy's float32/float64 paths."""
from __future__ import annotations

import math
import warnings
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bfloat16_dtype import bfloat16
from conftest import exact_f32, reference_round
from test_parse import exact_bits

FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def bits(x) -> int:
    return int(np.asarray(x, dtype=bfloat16).view(np.uint16))


def fraction_of(v) -> Fraction | None:
    """Exact value of a real number (None for NaN/inf)."""
    if isinstance(v, (np.floating, float)) and not np.isfinite(v):
        return None
    if isinstance(v, (np.integer, int, bool, np.bool_)):
        return Fraction(int(v))
    return Fraction(*v.as_integer_ratio())


def reference_bits(v) -> int:
    """bfloat16 bits of a real number rounded once (NaN: any NaN; inf kept)."""
    f = fraction_of(v)
    if f is None:
        if np.isnan(v):
            return 0x7FC0
        return 0x7F80 if v > 0 else 0xFF80
    return exact_bits(f, negative=bool(np.signbit(v)) if not isinstance(v, (int, np.integer)) else False)


def same_bits(got: int, want: int) -> bool:
    if (want & 0x7FFF) > 0x7F80:
        return (got & 0x7FFF) > 0x7F80
    return got == want


# ---- scalar construction from anything -------------------------------------------------

NUMBERS = st.one_of(
    st.integers(-(2 ** 200), 2 ** 200),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.fractions(),
    st.decimals(allow_nan=False),
)
OBJECTS = st.one_of(
    NUMBERS,
    st.text(max_size=30),
    st.binary(max_size=30),
    st.none(),
    st.complex_numbers(),
    st.lists(st.integers(), max_size=3),
    st.tuples(st.floats()),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
    st.just(object()),
    st.sampled_from([np.float16(1.5), np.float32(-2.75), np.int64(-7), np.uint64(2 ** 64 - 1),
                     np.longdouble(1) / 3, np.complex64(1), np.array(2.5), np.array([1.0]),
                     np.zeros((2, 2)), np.str_("3.5"), np.bytes_(b"-1e3"), np.array("7")]),
)


@FUZZ
@given(OBJECTS)
def test_scalar_from_anything(obj):
    """Never a crash: either the correctly rounded value or a TypeError/ValueError that says what
    was wrong. Integers, floats and text round once from their exact value; other objects with
    __float__ (Fraction, Decimal) round float(obj) once."""
    try:
        with warnings.catch_warnings():  # NumPy complex scalars warn (tests/test_scalar.py)
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            got = bfloat16(obj)
    except (TypeError, ValueError) as e:
        assert str(e)
        return
    if isinstance(got, np.ndarray):
        # a sequence or array gives an array, as np.float16(sequence) does: element by element
        assert got.dtype == bfloat16 and got.shape == np.shape(obj), (obj, got)
        for g, o in zip(got.ravel().view(np.uint16), np.asarray(obj, dtype=object).ravel()):
            assert same_bits(int(g), reference_bits(o)), (obj, hex(int(g)))
        return
    if isinstance(obj, np.ndarray):
        obj = obj[()]
    if isinstance(obj, (str, bytes, np.str_, np.bytes_)):
        float(obj)  # accepted text is text float() accepts (values: tests/test_parse.py)
        return
    if obj is None:  # NaN, as np.float16(None) gives
        assert np.isnan(np.float16(None))
        want = 0x7FC0
    elif isinstance(obj, (Fraction, Decimal)):
        want = reference_bits(float(obj))
    elif isinstance(obj, np.complexfloating):  # NumPy's complex scalars: the real part, as float16
        want = reference_bits(obj.real)
    else:
        want = reference_bits(obj)
    assert same_bits(got.bits, want), (obj, hex(got.bits), hex(want))


NESTED = st.recursive(
    st.one_of(st.integers(-(2 ** 53), 2 ** 53), st.floats(width=64), st.booleans(),
              st.sampled_from(["1.5", "-2e3", "inf", "x", ""])),
    lambda children: st.lists(children, max_size=4),
    max_leaves=20,
)


@FUZZ
@given(NESTED)
def test_array_from_nested_input(obj):
    """np.array(obj, bfloat16) fails exactly when float64 fails, else equals float64's values
    rounded once (the inputs here are exact in float64)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = np.array(obj, dtype=np.float64)
        except (ValueError, TypeError):
            with pytest.raises((ValueError, TypeError)):
                np.array(obj, dtype=bfloat16)
            return
        got = np.array(obj, dtype=bfloat16)
    assert got.shape == want.shape
    ref = [reference_bits(v) for v in want.ravel().tolist()]
    assert all(same_bits(g, w) for g, w in zip(got.view(np.uint16).ravel().tolist(), ref))


# ---- casts of random buffers of every numeric type -------------------------------------

NUMERIC = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
           np.uint64, np.float16, np.float32, np.float64, np.longdouble, np.complex64,
           np.complex128, np.clongdouble]


@settings(max_examples=25, deadline=None)
@given(st.binary(min_size=512, max_size=512), st.sampled_from(NUMERIC))
def test_cast_random_buffer_into_bfloat16(buf, t):
    itemsize = np.dtype(t).itemsize
    raw = np.frombuffer(buf[: len(buf) // itemsize * itemsize], dtype=np.uint8)
    if t is np.bool_:
        src = (raw & 1).astype(np.bool_)
    elif t is np.longdouble or t is np.clongdouble:
        # x87 long double has 6 padding bytes: build values from random float64s instead
        src = np.frombuffer(buf, dtype=np.float64).astype(t) * t(1.0000000001)
    else:
        src = raw.view(t)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        got = src.astype(bfloat16).view(np.uint16).tolist()
        real = src.real if np.iscomplexobj(src) else src
    want = [reference_bits(v) for v in real.tolist()] if t not in (np.longdouble, np.clongdouble) \
        else [reference_bits(v) for v in real]
    bad = [(i, hex(g), hex(w)) for i, (g, w) in enumerate(zip(got, want)) if not same_bits(g, w)]
    assert not bad, bad[:5]


@settings(max_examples=25, deadline=None)
@given(st.binary(min_size=256, max_size=256),
       st.sampled_from([np.float32, np.float64, np.longdouble, np.complex64, np.complex128,
                        np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint64, np.bool_]))
def test_cast_random_bfloat16_out(buf, t):
    """bfloat16 -> T equals float32 -> T from the exact float32 widening (where float32 -> T is
    defined: ints only for in-range finite values)."""
    b = np.frombuffer(buf, dtype=np.uint16)
    x32 = exact_f32(b)
    with np.errstate(all="ignore"):
        got = b.view(bfloat16).astype(t)
        want = x32.astype(t)
    if np.issubdtype(t, np.integer):
        info = np.iinfo(t)
        ok = np.isfinite(x32) & (x32 >= info.min) & (x32 < float(info.max) + 1)
        assert (got[ok] == want[ok]).all()
    else:
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        assert same.all()


# ---- binary ufuncs on random bit patterns, every layout --------------------------------

ARITH = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "fmax", "fmin",
         "hypot", "copysign", "fmod", "arctan2", "power", "nextafter", "heaviside"]
COMPARE = ["less", "less_equal", "equal", "not_equal", "greater", "greater_equal"]


def quiet_nans(b):
    """Signalling NaNs made quiet: C's fmax/fmin (numpy's float32 reference) treat a signalling
    NaN as missing data only once quiet; bfloat16's fmax/fmin ignore every NaN, like float16."""
    return np.where((b & 0x7FFF) > 0x7F80, b | 0x40, b).astype(np.uint16)


def reference(name, xb, yb):
    """The float32 result of the same operation on the exactly widened inputs, rounded once to
    bfloat16 by integer arithmetic (conftest.reference_round)."""
    f = getattr(np, name)
    with np.errstate(all="ignore"):
        if name == "nextafter":  # bfloat16's own next value: not a float32 operation
            return None
        r = f(exact_f32(xb), exact_f32(yb))
    return r if r.dtype == np.bool_ else reference_round(r)


def check(name, got, want):
    if want is None:
        return
    got = np.asarray(got)
    if want.dtype == np.bool_:
        assert got.dtype == np.bool_ and (got == want).all(), name
        return
    g = got.view(np.uint16)
    nan_w = (want & 0x7FFF) > 0x7F80
    nan_g = (g & 0x7FFF) > 0x7F80
    assert (nan_w == nan_g).all(), name
    assert (g[~nan_w] == want[~nan_w]).all(), (name, g[~nan_w][g[~nan_w] != want[~nan_w]][:5])


@settings(max_examples=40, deadline=None)
@given(st.binary(min_size=2 * 600, max_size=2 * 600), st.sampled_from(ARITH + COMPARE))
def test_binary_ufunc_layouts(buf, name):
    u = np.frombuffer(buf, dtype=np.uint16).copy()
    if name in ("fmax", "fmin"):
        u = quiet_nans(u)
    xb, yb = u[:300], u[300:]
    x, y = xb.view(bfloat16), yb.view(bfloat16)
    f = getattr(np, name)
    with np.errstate(all="ignore"):
        # contiguous
        check(name, f(x, y), reference(name, xb, yb))
        # strided, including a negative stride
        check(name, f(x[::3], y[1::3]), reference(name, xb[::3], yb[1::3]))
        check(name, f(x[::-2], y[::2]), reference(name, xb[::-2], yb[::2]))
        # broadcast: outer product shape and a 0-stride scalar operand
        xs, ys = x[:24], y[:17]
        check(name, f(xs[:, None], ys[None, :]),
              reference(name, np.repeat(xb[:24, None], 17, 1), np.repeat(yb[None, :17], 24, 0)))
        check(name, f(x, y[5]), reference(name, xb, np.full_like(yb, yb[5])))
        check(name, f(x[7], y), reference(name, np.full_like(xb, xb[7]), yb))
        if name in COMPARE:
            return
        # in place, into either operand
        z = x.copy()
        f(z, y, out=z)
        check(name, z, reference(name, xb, yb))
        w = y.copy()
        f(x, w, out=w)
        check(name, w, reference(name, xb, yb))
        # a size-1 operand with stride 0 against itself (the x += x pattern)
        one = x[:1].copy()
        f(one, one, out=one)
        check(name, one, reference(name, xb[:1], xb[:1]))


@settings(max_examples=40, deadline=None)
@given(st.binary(min_size=2 * 240, max_size=2 * 240),
       st.sampled_from(["maximum", "minimum", "fmax", "fmin"]))
def test_order_free_reductions(buf, name):
    """maximum/minimum/fmax/fmin reductions along each axis and over both at once (contiguous
    and strided) equal the float32 reductions of the exact values: the loops are registered as
    reorderable (README), or NumPy would refuse axis=(0, 1)."""
    b = quiet_nans(np.frombuffer(buf, dtype=np.uint16)).reshape(12, 20)
    f = getattr(np, name)
    for axis in (0, 1, None, (0, 1), (1, 0)):
        for view in (b, b[:, ::3], b[::-2]):
            got = f.reduce(view.view(bfloat16), axis=axis)
            want = reference_round(f.reduce(exact_f32(view), axis=axis))
            check(name, got, np.asarray(want))


# ---- power and arctan2: the stated error bound -----------------------------------------

def ulps_from_exact(got_bits, ref64):
    """|got - ref| in units of the bfloat16 spacing at ref; ref is float64 (its own error,
    2^-53 relative, is far below the bound measured)."""
    got = exact_f32(got_bits).astype(np.float64)
    a = np.abs(ref64)
    _, e = np.frexp(a)                     # a = m * 2^e, m in [0.5, 1)
    spacing = np.ldexp(1.0, np.maximum(e - 8, -133))
    return np.abs(got - ref64) / spacing


BOUND_ULP = 0.5 + 2.0 ** -15  # README: "power and arctan2 ... within 0.5 + 2^-15 ulp"


@pytest.mark.parametrize("name", ["power", "arctan2"])
def test_power_arctan2_error_bound(name):
    """power computes in float32 (libm) and rounds to bfloat16: the result is within
    0.5 + 2^-15 ulp of the exact value (correctly rounded unless the exact value lies within
    about 2^-16 ulp of a rounding midpoint); arctan2 (float64, rounded once) meets it too. 2 x 10^6 random pairs, uniform bit patterns and
    operands in [2^-8, 2^8] x [-16, 16]."""
    rng = np.random.default_rng(2024)
    n = 1_000_000
    uniform = rng.integers(0, 1 << 16, (2, n), dtype=np.uint32).astype(np.uint16)
    sign = rng.integers(0, 2, (2, n), dtype=np.uint32) << 15
    inrange = np.stack([rng.integers(0x3B80, 0x4380, n, dtype=np.uint32),
                        rng.integers(0x0000, 0x4180, n, dtype=np.uint32)])
    inrange = (inrange | sign).astype(np.uint16)
    uniform = quiet_nans(uniform)  # pow(signalling NaN, 0) is libm's choice; not measured here
    f = getattr(np, name)
    for xb, yb in (uniform, inrange):
        with np.errstate(all="ignore"):
            got = f(xb.view(bfloat16), yb.view(bfloat16)).view(np.uint16)
            ref = f(exact_f32(xb).astype(np.float64), exact_f32(yb).astype(np.float64))
        finite = np.isfinite(ref) & (np.abs(ref) < 3.3895313892515355e38)
        err = ulps_from_exact(got[finite], ref[finite])
        assert err.max() <= BOUND_ULP, (name, err.max())
        # outside the finite range: same inf/NaN class as the float64 result rounded
        rest = ~finite
        want = np.asarray(ref[rest]).astype(bfloat16).view(np.uint16)
        g = got[rest]
        assert (((g & 0x7FFF) > 0x7F80) == ((want & 0x7FFF) > 0x7F80)).all()
