"""Every float ufunc on bfloat16 against an independent reference.

* +, -, *, /, sqrt (and the other correctly rounded ops): bit-equal to the float32 result on
  the exact widened inputs, rounded once by `reference_round` (integer arithmetic).
* transcendental ops: within one bfloat16 ulp of the float64 result on the exact widened
  inputs, rounded once by `f64_to_bf16_bits` below (float64 arithmetic on powers of two).
* unary ufuncs run over all 65,536 inputs; binary ones over hypothesis-drawn operands (NaN,
  +-inf, +-0, subnormals, largest finite) plus a large random sample.
* floating-point warnings match what float16 reports for the same operation.
"""
import itertools
import os
import subprocess
import sys
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from bfloat16_dtype import bfloat16
from bfloat16_dtype import numerics
from conftest import exact_f32, reference_round

BF16 = np.dtype(bfloat16)
ALL_BITS = np.arange(65536, dtype=np.uint32).astype(np.uint16)
ALL_VALUES = ALL_BITS.view(BF16)
MAX_BITS = 0x7F7F

# ---- independent references -------------------------------------------------------------


def widen64(bits):
    """Exact float64 value of bfloat16 bits (signalling NaNs become quiet, silently)."""
    with np.errstate(invalid="ignore"):
        return exact_f32(bits).astype(np.float64)


def f64_to_bf16_bits(x):
    """float64 -> bfloat16 bits, one rounding to nearest even, by scaling with powers of two:
    the spacing of bfloat16 around |x| is 2**(E-8) for x = m * 2**E, never below 2**-133."""
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        _, e = np.frexp(x)
        q = np.ldexp(1.0, np.maximum(e - 8, -133))
        r = np.rint(x / q) * q  # exact scaling, ties to even
        r = np.where(np.isfinite(x), r, x)
        r = np.where(np.abs(r) >= 2.0**128, np.copysign(np.inf, x), r)
        out = (r.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    nan_bits = np.where(np.signbit(x), 0xFFC0, 0x7FC0).astype(np.uint16)
    return np.where(np.isnan(x), nan_bits, out).astype(np.uint16)


def order_key(bits):
    """Bits -> integers in value order, +-0 both 0, so a difference counts ulps."""
    b = np.asarray(bits).astype(np.int32)
    return np.where(b & 0x8000, -(b & 0x7FFF), b)


def is_nan_bits(bits):
    return (np.asarray(bits) & 0x7FFF) > 0x7F80


def is_snan_bits(bits):
    b = np.asarray(bits) & 0x7FFF
    return (b > 0x7F80) & (b < 0x7FC0)


def bits_of(a):
    return np.ascontiguousarray(a).view(np.uint16)


def assert_within_ulps(got_bits, want_bits, ulps, context):
    got_nan, want_nan = is_nan_bits(got_bits), is_nan_bits(want_bits)
    bad_nan = np.nonzero(got_nan != want_nan)[0]
    assert bad_nan.size == 0, f"{context}: NaN mismatch at {bad_nan[:5]}"
    dist = np.abs(order_key(got_bits) - order_key(want_bits))
    dist[got_nan] = 0
    worst = int(np.argmax(dist)) if dist.size else 0
    assert dist.size == 0 or dist[worst] <= ulps, (
        f"{context}: {dist[worst]} ulps at index {worst}: got {got_bits[worst]:#06x}, "
        f"want {want_bits[worst]:#06x}")


def assert_same_bits(got_bits, want_bits, context, nan_sign=False):
    """Exact bit equality, NaNs compared as NaN (and by sign if asked), payloads free."""
    got_bits, want_bits = np.asarray(got_bits), np.asarray(want_bits)
    got_nan, want_nan = is_nan_bits(got_bits), is_nan_bits(want_bits)
    ok = np.where(got_nan | want_nan, got_nan == want_nan, got_bits == want_bits)
    if nan_sign:
        ok &= ~got_nan | ((got_bits & 0x8000) == (want_bits & 0x8000))
    bad = np.nonzero(~ok)[0]
    assert bad.size == 0, (f"{context}: {bad.size} mismatches, first at {bad[:5]}: got "
                           f"{got_bits[bad[:5]]}, want {want_bits[bad[:5]]}")


# ---- unary, exhaustive ------------------------------------------------------------------

# float32 computes these exactly or correctly rounded; one more rounding to bfloat16 keeps
# them correctly rounded (24 >= 2*8 + 2), so the result must equal reference_round bit for bit.
CORRECTLY_ROUNDED_UNARY = ["sqrt", "square", "reciprocal", "negative", "positive", "absolute",
                           "fabs", "floor", "ceil", "trunc", "rint", "sign", "conjugate"]
TRANSCENDENTAL_UNARY = ["cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin",
                        "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
                        "arcsinh", "arccosh", "arctanh", "deg2rad", "rad2deg", "degrees",
                        "radians"]


@pytest.mark.parametrize("name", CORRECTLY_ROUNDED_UNARY)
def test_unary_correctly_rounded_exhaustive(name):
    f = getattr(np, name)
    with np.errstate(all="ignore"):
        got = f(ALL_VALUES)
        want = reference_round(f(exact_f32(ALL_BITS)))
    assert got.dtype == BF16
    assert_same_bits(bits_of(got), want, name, nan_sign=name in ("negative", "absolute",
                                                                  "fabs", "positive"))


@pytest.mark.parametrize("name", TRANSCENDENTAL_UNARY)
def test_unary_transcendental_within_one_ulp_exhaustive(name):
    f = getattr(np, name)
    with np.errstate(all="ignore"):
        got = f(ALL_VALUES)
        want = f64_to_bf16_bits(f(widen64(ALL_BITS)))
    assert got.dtype == BF16
    assert_within_ulps(bits_of(got), want, 1, name)


def test_unary_strided_and_contiguous_agree():
    """The strided adapter and the vectorised contiguous kernel give the same bits."""
    for name in CORRECTLY_ROUNDED_UNARY + TRANSCENDENTAL_UNARY:
        f = getattr(np, name)
        with np.errstate(all="ignore"):
            contiguous = bits_of(f(ALL_VALUES))
            strided = bits_of(f(np.repeat(ALL_VALUES, 2)[::2]))
        assert_same_bits(strided, contiguous, name)


@pytest.mark.parametrize("name, ref", [
    ("isnan", lambda b: (b & 0x7FFF) > 0x7F80),
    ("isinf", lambda b: (b & 0x7FFF) == 0x7F80),
    ("isfinite", lambda b: (b & 0x7FFF) < 0x7F80),
    ("signbit", lambda b: (b & 0x8000) != 0),
    ("logical_not", lambda b: (b & 0x7FFF) == 0),
])
def test_predicates_exhaustive(name, ref):
    got = getattr(np, name)(ALL_VALUES)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, ref(ALL_BITS.astype(np.uint32)))


def test_spacing_exhaustive():
    """Distance to the next bfloat16 away from zero, with x's sign (float32's convention);
    +-0 give the smallest subnormal; inf/NaN give NaN."""
    x = widen64(ALL_BITS)
    finite = np.isfinite(x)
    _, e = np.frexp(x)
    magnitude = np.ldexp(1.0, np.maximum(e - 8, -133))
    want = np.where(x == 0, 2.0**-133, np.copysign(magnitude, x))
    want = np.where(np.abs(x) == widen64(np.uint16(MAX_BITS)), np.copysign(np.inf, x), want)
    want = np.where(finite, want, np.nan)
    with np.errstate(all="ignore"):
        got = np.spacing(ALL_VALUES)
        # the sign convention is float32's
        np.testing.assert_array_equal(np.signbit(got[finite]),
                                      np.signbit(np.spacing(exact_f32(ALL_BITS)[finite])))
    assert_same_bits(bits_of(got), f64_to_bf16_bits(want), "spacing")


def test_frexp_exhaustive():
    with np.errstate(invalid="ignore"):
        mant, expo = np.frexp(ALL_VALUES)
    want_m, want_e = np.frexp(widen64(ALL_BITS))
    assert mant.dtype == BF16 and expo.dtype == np.intc
    assert_same_bits(bits_of(mant), f64_to_bf16_bits(want_m), "frexp mantissa")
    finite = np.isfinite(widen64(ALL_BITS))
    np.testing.assert_array_equal(expo[finite], want_e[finite])


def test_modf_exhaustive():
    with np.errstate(all="ignore"):
        frac, whole = np.modf(ALL_VALUES)
        want_f, want_w = np.modf(widen64(ALL_BITS))
    assert frac.dtype == whole.dtype == BF16
    assert_same_bits(bits_of(frac), f64_to_bf16_bits(want_f), "modf fraction")
    assert_same_bits(bits_of(whole), f64_to_bf16_bits(want_w), "modf integral")


# ---- binary, hypothesis + a large random sample ------------------------------------------

SPECIAL_BITS = [0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x7F81, 0x0001, 0x8001,
                0x007F, 0x0080, 0x3F80, 0xBF80, 0x4000, 0x3F00, MAX_BITS, 0xFF7F, 0x7F7E,
                0x4B80, 0x3C00, 0x4040, 0xC0A0]
bits_strategy = st.one_of(st.sampled_from(SPECIAL_BITS), st.integers(0, 0xFFFF))
pair_arrays = st.integers(1, 64).flatmap(lambda n: st.tuples(
    hnp.arrays(np.uint16, n, elements=bits_strategy),
    hnp.arrays(np.uint16, n, elements=bits_strategy)))


def random_pairs(n=200_000, seed=0):
    """Uniform bit patterns, plus pairs of nearby values (cancellation, near-ties), plus every
    pair of special values."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 65536, n).astype(np.uint16)
    b = rng.integers(0, 65536, n).astype(np.uint16)
    near = (a.astype(np.int32) + rng.integers(-200, 200, n)).astype(np.uint16)
    sp = np.array(list(itertools.product(SPECIAL_BITS, SPECIAL_BITS)), np.uint16)
    return np.concatenate([a, a, sp[:, 0]]), np.concatenate([b, near, sp[:, 1]])


RANDOM_A, RANDOM_B = random_pairs()

# float32 on the widened inputs, rounded once: exact for these
CORRECTLY_ROUNDED_BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "true_divide": np.true_divide, "floor_divide": np.floor_divide, "remainder": np.remainder,
    "mod": np.mod, "fmod": np.fmod, "maximum": np.maximum, "minimum": np.minimum,
    "fmax": np.fmax, "fmin": np.fmin, "copysign": np.copysign, "heaviside": np.heaviside,
}
TRANSCENDENTAL_BINARY = ["power", "arctan2", "hypot", "logaddexp", "logaddexp2"]
COMPARISONS = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
               "logical_and", "logical_or", "logical_xor"]


def check_correctly_rounded_binary(name, a_bits, b_bits):
    if name in ("fmax", "fmin"):
        # fmax/fmin ignore NaN operands, signalling ones too (numpy's float32 SIMD loop
        # returns NaN for a signalling NaN): compare against quieted NaNs
        a_bits = np.where(is_snan_bits(a_bits), a_bits | 0x40, a_bits).astype(np.uint16)
        b_bits = np.where(is_snan_bits(b_bits), b_bits | 0x40, b_bits).astype(np.uint16)
    with np.errstate(all="ignore"):
        got = getattr(np, name)(a_bits.view(BF16), b_bits.view(BF16))
        want = reference_round(CORRECTLY_ROUNDED_BINARY[name](exact_f32(a_bits),
                                                               exact_f32(b_bits)))
    assert got.dtype == BF16
    if name in ("maximum", "minimum", "fmax", "fmin"):
        # which zero max(+0, -0) returns is unspecified: compare values, NaN as NaN
        np.testing.assert_array_equal(exact_f32(bits_of(got)), exact_f32(want), err_msg=name)
    else:
        assert_same_bits(bits_of(got), want, name, nan_sign=name == "copysign")


def check_transcendental_binary(name, a_bits, b_bits):
    with np.errstate(all="ignore"):
        got = getattr(np, name)(a_bits.view(BF16), b_bits.view(BF16))
        want = f64_to_bf16_bits(getattr(np, name)(widen64(a_bits), widen64(b_bits)))
    # IEEE: a signalling NaN operand gives NaN even where a quiet one would not (pow(NaN, 0)
    # is 1, hypot(inf, NaN) is inf); the float64 reference lost the signal when widening.
    snan = is_snan_bits(a_bits) | is_snan_bits(b_bits)
    want = np.where(snan & ~is_nan_bits(bits_of(got)), want, np.where(snan, 0x7FC0, want))
    assert_within_ulps(bits_of(got), want.astype(np.uint16), 1, name)


def check_comparison(name, a_bits, b_bits):
    with np.errstate(invalid="ignore"):  # signalling NaN operands raise "invalid" (IEEE)
        got = getattr(np, name)(a_bits.view(BF16), b_bits.view(BF16))
        want = getattr(np, name)(exact_f32(a_bits), exact_f32(b_bits))
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, want, err_msg=name)


def nextafter_reference(a_bits, b_bits):
    """Step one bit pattern toward b, by integer order keys."""
    ka, kb = order_key(a_bits), order_key(b_bits)
    step = np.sign(kb - ka)
    k = ka + step
    # key 0 reached from below is -0 (IEEE: nextafter(-tiny, 1) == -0.0)
    out = np.where((k > 0) | ((k == 0) & (ka > 0)), k, 0x8000 - k).astype(np.uint16)
    # from a zero the first step is the smallest subnormal with the target's sign
    out = np.where(ka == 0, np.where(step > 0, 0x0001, 0x8001), out)
    out = np.where(ka == kb, b_bits, out)  # equal (including +0 vs -0): return b
    nan = is_nan_bits(a_bits) | is_nan_bits(b_bits)
    return np.where(nan, 0x7FC0, out).astype(np.uint16)


def check_nextafter(a_bits, b_bits):
    with np.errstate(all="ignore"):
        got = np.nextafter(a_bits.view(BF16), b_bits.view(BF16))
    assert_same_bits(bits_of(got), nextafter_reference(a_bits, b_bits), "nextafter")


@pytest.mark.parametrize("name", sorted(CORRECTLY_ROUNDED_BINARY))
def test_binary_correctly_rounded(name):
    check_correctly_rounded_binary(name, RANDOM_A, RANDOM_B)

    @settings(max_examples=60, deadline=None)
    @given(pair_arrays)
    def prop(pair):
        check_correctly_rounded_binary(name, *pair)
    prop()


@pytest.mark.parametrize("name", TRANSCENDENTAL_BINARY)
def test_binary_transcendental(name):
    check_transcendental_binary(name, RANDOM_A, RANDOM_B)

    @settings(max_examples=60, deadline=None)
    @given(pair_arrays)
    def prop(pair):
        check_transcendental_binary(name, *pair)
    prop()


@pytest.mark.parametrize("name", COMPARISONS)
def test_comparisons(name):
    check_comparison(name, RANDOM_A, RANDOM_B)

    @settings(max_examples=60, deadline=None)
    @given(pair_arrays)
    def prop(pair):
        check_comparison(name, *pair)
    prop()


def test_hypot_is_float32_hypot_rounded():
    """hypot is NumPy's float32 hypot of the widened operands, rounded to bfloat16 (ops.h
    Hypot computes hypotf's float64 root itself, for the tiers' twins): 2 million random
    pairs, every pattern against 1 and against the largest finite value, every pair of the
    IEEE special values. NaN results compare as NaN (their payloads are the casts')."""
    rng = np.random.default_rng(5)
    specials = np.array([0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x7F81, 0x0001,
                         0x8001, 0x0080, 0x7F7F, 0xFF7F], np.uint16)
    sa, sb = np.meshgrid(specials, specials)
    a = np.concatenate([RANDOM_A, rng.integers(0, 65536, 2_000_000).astype(np.uint16), ALL_BITS,
                        ALL_BITS, sa.ravel()])
    b = np.concatenate([RANDOM_B, rng.integers(0, 65536, 2_000_000).astype(np.uint16),
                        np.full(65536, 0x3F80, np.uint16), np.full(65536, 0x7F7F, np.uint16),
                        sb.ravel()])
    with np.errstate(all="ignore"):
        got = bits_of(np.hypot(a.view(BF16), b.view(BF16)))
        ref = np.hypot(exact_f32(a), exact_f32(b))
    nan = np.isnan(ref)
    assert np.array_equal(is_nan_bits(got), nan)
    assert_same_bits(got[~nan], reference_round(ref[~nan]), "hypot")


def test_nextafter():
    check_nextafter(RANDOM_A, RANDOM_B)
    check_nextafter(ALL_BITS, np.full(65536, 0x7F80, np.uint16))
    check_nextafter(ALL_BITS, np.full(65536, 0xFF80, np.uint16))

    @settings(max_examples=60, deadline=None)
    @given(pair_arrays)
    def prop(pair):
        check_nextafter(*pair)
    prop()


def test_divmod_is_floor_divide_and_remainder():
    a, b = RANDOM_A.view(BF16), RANDOM_B.view(BF16)
    with np.errstate(all="ignore"):
        q, r = np.divmod(a, b)
        want_q = reference_round(np.floor_divide(exact_f32(RANDOM_A), exact_f32(RANDOM_B)))
        want_r = reference_round(np.remainder(exact_f32(RANDOM_A), exact_f32(RANDOM_B)))
    assert q.dtype == r.dtype == BF16
    assert_same_bits(bits_of(q), want_q, "divmod quotient")
    assert_same_bits(bits_of(r), want_r, "divmod remainder")


def test_strided_binary_matches_contiguous():
    a, b = RANDOM_A[:5000].view(BF16), RANDOM_B[:5000].view(BF16)
    for name in list(CORRECTLY_ROUNDED_BINARY) + TRANSCENDENTAL_BINARY:
        f = getattr(np, name)
        with np.errstate(all="ignore"):
            contiguous = bits_of(f(a, b))
            strided = bits_of(f(np.repeat(a, 2)[::2], np.repeat(b, 3)[::3]))
            scalar2 = bits_of(f(a, b[7]))
            scalar2_ref = bits_of(f(a, np.full_like(b, b[7])))
            scalar1 = bits_of(f(a[7], b))
            scalar1_ref = bits_of(f(np.full_like(a, a[7]), b))
        assert_same_bits(strided, contiguous, name)
        assert_same_bits(scalar2, scalar2_ref, name + " scalar second")
        assert_same_bits(scalar1, scalar1_ref, name + " scalar first")


@pytest.mark.parametrize("exp_dtype", [np.int32, np.int64])
def test_ldexp(exp_dtype):
    info = np.iinfo(exp_dtype)
    exps = st.one_of(st.integers(-300, 300), st.sampled_from([info.min, info.max, -134, -133,
                                                              127, 128, 0]),
                     st.integers(info.min, info.max))

    @settings(max_examples=80, deadline=None)
    @given(st.integers(1, 40).flatmap(lambda n: st.tuples(
        hnp.arrays(np.uint16, n, elements=bits_strategy),
        hnp.arrays(exp_dtype, n, elements=exps))))
    def prop(pair):
        bits, e = pair
        with np.errstate(all="ignore"):
            got = np.ldexp(bits.view(BF16), e)
            # any |e| > 300 saturates for bfloat16 inputs (2**-133 <= |x| < 2**128)
            want = f64_to_bf16_bits(np.ldexp(widen64(bits), np.clip(e, -300, 300)
                                              .astype(np.int32)))
        assert got.dtype == BF16
        assert_same_bits(bits_of(got), want, f"ldexp {exp_dtype.__name__}")
    prop()


def test_ldexp_every_pattern_at_the_exponent_edges():
    """Every pattern times 2**e for exponents that put results on both sides of the normal
    range (the exponent-field fast path and the float64 rounding path), in a strided layout,
    with "overflow" exactly when a finite value becomes inf."""
    edges = [-(2**31), -401, -400, -300, -267, -254, -253, -134, -133, -127, -126, -8, -1, 0,
             1, 7, 126, 127, 253, 254, 255, 300, 400, 401, 2**31 - 1]
    for e in edges:
        want = f64_to_bf16_bits(np.ldexp(widen64(ALL_BITS), int(np.clip(e, -300, 300))))
        exps = np.full(2 * ALL_BITS.size, e, np.int64)[::-2]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with np.errstate(invalid="ignore"):
                got = np.ldexp(ALL_VALUES[::-1], exps)[::-1]
        assert_same_bits(bits_of(got), want, f"ldexp by {e}")
        overflowed = bool(np.any(np.isfinite(widen64(ALL_BITS)) & np.isinf(widen64(want))))
        said = [str(w.message) for w in caught]
        assert said == (["overflow encountered in ldexp"] if overflowed else []), (e, said)


# ldexp with dtype= or signature= fixing the output: NumPy's legacy resolution takes the first
# user loop (the int one) and refuses exponents it cannot cast to it (README, "Differences
# from float16")
LDEXP_REFUSED_WITH_FIXED_OUTPUT = {np.dtype(np.uint32).char, np.dtype(np.longlong).char} - {
    np.dtype(np.int64).char}


@pytest.mark.parametrize("etype", [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32,
                                   np.uint32, np.int64, np.uint64, np.longlong, np.ulonglong])
@pytest.mark.parametrize("form", ["plain", "dtype", "signature_out", "signature_full", "out",
                                  "scalar"])
def test_ldexp_exponent_types_like_float16(etype, form):
    """Every integer exponent type and way of fixing the output gives float16's result (in
    bfloat16) or float16's exception type, but for the documented refusals."""
    e = np.array([1, 0, 1, 1] if etype is np.bool_ else
                 [1, 2, 3, 4] if np.dtype(etype).kind == "u" else [-1, 2, -3, 4], etype)

    def call(dt):
        x = np.array([1.5, 2.0, 3.0, 1.0], dt)
        kw = {"plain": {}, "scalar": {}, "dtype": {"dtype": dt},
              "signature_out": {"signature": (None, None, dt)},
              "signature_full": {"signature": (dt, etype, dt)},
              "out": {"out": np.empty(4, dt)}}[form]
        return np.ldexp(x, e[1] if form == "scalar" else e, **kw)

    try:
        want = call(np.float16)
    except TypeError:
        with pytest.raises(TypeError):
            call(BF16)
        return
    if form in ("dtype", "signature_out") and np.dtype(etype).char in LDEXP_REFUSED_WITH_FIXED_OUTPUT:
        with pytest.raises(TypeError, match="ldexp"):
            call(BF16)
        return
    got = call(BF16)
    assert got.dtype == BF16
    np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))
    big = np.ldexp(np.array([1.0], BF16), np.array([2**40], np.int64), dtype=BF16) \
        if form == "dtype" and etype is np.int64 else None
    if big is not None:  # the int64 loop, not a cast to int
        assert np.isinf(big[0])


def test_modf_and_frexp_strided_like_contiguous():
    """The contiguous loops and the strided ones give the same bits (every pattern, reversed)."""
    with np.errstate(all="ignore"):
        frac, whole = np.modf(ALL_VALUES[::-1])
        want_f, want_w = np.modf(widen64(ALL_BITS)[::-1])
        mant, expo = np.frexp(ALL_VALUES[::-1])
    assert_same_bits(bits_of(frac), f64_to_bf16_bits(want_f), "strided modf fraction")
    assert_same_bits(bits_of(whole), f64_to_bf16_bits(want_w), "strided modf integral")
    want_m, want_e = np.frexp(widen64(ALL_BITS)[::-1])
    assert_same_bits(bits_of(mant), f64_to_bf16_bits(want_m), "strided frexp mantissa")
    finite = np.isfinite(want_m)
    np.testing.assert_array_equal(expo[finite], want_e[finite])


def test_float_power_is_float64():
    a, b = RANDOM_A[:20000], RANDOM_B[:20000]
    with np.errstate(all="ignore"):
        got = np.float_power(a.view(BF16), b.view(BF16))
        want = np.float_power(widen64(a), widen64(b))
    assert got.dtype == np.float64
    snan = is_snan_bits(a) | is_snan_bits(b)
    np.testing.assert_array_equal(got[~snan], want[~snan])


def test_clip():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 65536, 20000).astype(np.uint16)
    lo = np.sort(rng.integers(0, 65536, (2, 20000)).astype(np.uint16).view(BF16), axis=0)
    got = np.clip(x.view(BF16), lo[0], lo[1])
    want = np.clip(exact_f32(x), lo[0].astype(np.float32), lo[1].astype(np.float32))
    assert got.dtype == BF16
    np.testing.assert_array_equal(exact_f32(bits_of(got)), want)
    # Python-scalar bounds keep bfloat16
    assert np.clip(x.view(BF16), -1.0, 1.0).dtype == BF16


BOUND_TYPES = [bool, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
               np.uint64, np.float16, np.float32, np.float64, np.longdouble, np.complex64,
               np.complex128]


@pytest.mark.parametrize("t", BOUND_TYPES)
def test_clip_bounds_of_every_type_promote_like_the_table(t):
    """np.clip(bf16, lo, hi) takes the dtype bf16 + lo + hi has (float16's clip does the same with
    its own table), for NumPy scalar, array and Python bounds, and clips the values."""
    x = np.array([-3.0, 0.5, 1.5, 3.0], BF16)
    for lo, hi in ((t(0), 2), (-1, np.array([2, 2, 2, 2], t)), (t(0), t(2)), (np.array(0, t), 2.0)):
        want = np.add(np.add(x, lo), hi).dtype     # the binary promotion table
        got = np.clip(x, lo, hi)
        assert got.dtype == want, (t, lo, hi)
        ref = np.clip(x.astype(np.float64), np.float64(np.real(lo)), np.asarray(np.real(hi), np.float64))
        assert np.real(got).astype(np.float64).tolist() == ref.tolist()


@pytest.mark.parametrize("t", BOUND_TYPES)
def test_clip_of_other_arrays_by_bfloat16_bounds(t):
    """np.clip(array of another type, bounds of which one or both are bfloat16) takes the dtype
    of the binary promotion table too (as float16's clip of an int8 array by float16 bounds
    gives float16), and clips the values."""
    x = np.array([0, 1, 2, 3], t)
    lo, hi = BF16.type(1), np.array([2, 2, 2, 2], BF16)
    for a, b in ((lo, hi), (lo, 2), (1, hi), (t(1), hi), (lo, np.int8(2))):
        # Python ints are weak and meet a bfloat16 here: they change nothing
        want = np.result_type(*[o for o in (x, a, b) if not isinstance(o, int)])
        got = np.clip(x, a, b)
        assert got.dtype == want, (t, a, b)
        assert np.real(got).astype(np.float64).tolist() == np.clip(x.astype(np.float64), 1, 2).tolist()
    # the reference behaviour, with float16 in bfloat16's place
    if t in (bool, np.int8, np.uint8):
        assert np.clip(x, np.float16(1), np.float16(2)).dtype == np.float16
        assert np.clip(x, BF16.type(1), BF16.type(2)).dtype == BF16
    # a Python number clipped: NumPy makes it an array of its default type first
    v = np.array(1, t).item()
    want16 = np.clip(v, np.float16(1), np.float16(2)).dtype
    assert np.clip(v, lo, BF16.type(2)).dtype == (BF16 if want16 == np.float16 else want16), v


def test_aliases_are_the_same_ufunc_loops():
    a, b = RANDOM_A[:5000].view(BF16), RANDOM_B[:5000].view(BF16)
    with np.errstate(all="ignore"):
        assert_same_bits(bits_of(np.abs(a)), bits_of(np.absolute(a)), "abs")
        assert_same_bits(bits_of(np.mod(a, b)), bits_of(np.remainder(a, b)), "mod")
        assert_same_bits(bits_of(np.true_divide(a, b)), bits_of(np.divide(a, b)), "divide")
        assert_same_bits(bits_of(a / b), bits_of(np.divide(a, b)), "/ operator")
        assert_same_bits(bits_of(a // b), bits_of(np.floor_divide(a, b)), "// operator")
        assert_same_bits(bits_of(a % b), bits_of(np.remainder(a, b)), "% operator")
        assert_same_bits(bits_of(a ** b), bits_of(np.power(a, b)), "** operator")


# ---- np.round / np.around / np.fix ------------------------------------------------------

FINITE = np.isfinite(widen64(ALL_BITS))


def test_round_zero_decimals_is_rint_and_fix_is_trunc():
    with np.errstate(all="ignore"):
        want = reference_round(np.rint(exact_f32(ALL_BITS)))
        assert_same_bits(bits_of(np.round(ALL_VALUES)), want, "np.round")
        assert_same_bits(bits_of(np.around(ALL_VALUES)), want, "np.around")
        fix = np.fix(ALL_VALUES)
    assert fix.dtype == BF16
    assert_same_bits(bits_of(fix), reference_round(np.trunc(exact_f32(ALL_BITS))), "np.fix")


def decimal_round_reference(bits, decimals):
    """round(x, d) with exact rational arithmetic (ties to even), then one rounding."""
    scale = Fraction(10) ** decimals
    x = widen64(bits)
    out = np.array([float(round(Fraction(float(v)) * scale) / scale) for v in x])
    return f64_to_bf16_bits(np.copysign(out, x))  # a value rounding to zero keeps its sign


@pytest.mark.parametrize("decimals", [-2, -1, 1, 2, 3])
def test_numpy_round_decimals_is_what_numpy_gives(decimals):
    """numpy scales in bfloat16 (no per-dtype hook): for moderate values it stays within an
    ulp of the exact decimal rounding... except when the bfloat16 scaling misses the tie,
    then the result is off by one decimal unit. Pin down what it does: it equals the three
    bfloat16 steps, and the accurate helper is what users who care should call."""
    sample = ALL_BITS[FINITE & (np.abs(widen64(ALL_BITS)) < 1e4)
                      & (np.abs(widen64(ALL_BITS)) > 1e-3)][::7]
    x = sample.view(BF16)
    with np.errstate(all="ignore"):
        got = np.round(x, decimals)
    assert got.dtype == BF16
    scale = 10.0**decimals
    scaled = reference_round(exact_f32(sample) * np.float32(scale))          # in bfloat16
    rounded = reference_round(np.rint(exact_f32(scaled)))
    if decimals >= 0:
        want = reference_round(exact_f32(rounded) / np.float32(scale))
    else:  # numpy divides by 10**-d first, then multiplies back
        scaled = reference_round(exact_f32(sample) / np.float32(10.0**-decimals))
        rounded = reference_round(np.rint(exact_f32(scaled)))
        want = reference_round(exact_f32(rounded) * np.float32(10.0**-decimals))
    assert_same_bits(bits_of(got), want, f"np.round(x, {decimals})")


@pytest.mark.parametrize("decimals", [-3, -1, 0, 1, 2, 4])
def test_numerics_round_is_exact_decimal_rounding(decimals):
    bits = ALL_BITS[FINITE][::3]
    got = numerics.round(bits.view(BF16), decimals)
    assert got.dtype == BF16
    assert_same_bits(bits_of(got), decimal_round_reference(bits, decimals),
                     f"numerics.round(x, {decimals})")
    out = np.empty(bits.shape, BF16)
    assert numerics.round(bits.view(BF16), decimals, out=out) is out
    assert_same_bits(bits_of(out), bits_of(got), "out=")
    assert numerics.around is numerics.round


def test_numerics_round_no_overflow_and_specials():
    big = np.array([3e38, -3e38, np.inf, -np.inf, np.nan, -0.0], BF16)
    with np.errstate(all="raise"):
        got = numerics.round(big, 2)
    np.testing.assert_array_equal(got.astype(np.float32), big.astype(np.float32))
    assert np.signbit(got[-1])
    with np.errstate(over="ignore"):
        assert np.isinf(np.round(big[:1], 2)[0])  # what numpy does: the bf16 scaling overflows
    with pytest.raises(TypeError, match="decimals"):
        numerics.round(big, 1.5)


def test_numerics_round_far_left_of_the_point_every_input_type():
    """decimals below -308 (NumPy's float64 scale 10**-d overflows): every finite input up to
    half of 10**-d rounds to a zero of its sign, whatever its type (int64, uint64 and long double
    input, which numerics.round keeps exact, had come back unrounded: 123 for round(123, -309));
    inf and NaN stay; a long double beyond that rounds to 10**309 or more, inf in bfloat16."""
    for dtype in (np.float64, np.float32, np.int64, np.uint64, np.int32, np.longdouble, BF16):
        x = np.array([123, 7, 0], dtype)
        if np.dtype(dtype).kind != "u":
            x = np.concatenate([x, np.array([-5, -0.0 if np.dtype(dtype).kind == "f" else 0], dtype)])
        for d in (-309, -400, -5000):
            got = numerics.round(x, d)
            assert got.dtype == BF16 and not np.any(got.astype(np.float32)), (dtype, d, got)
            want_sign = np.signbit(x.astype(np.float64))
            assert np.array_equal(np.signbit(got.astype(np.float32)), want_sign), (dtype, d)
    special = np.array([np.inf, -np.inf, np.nan], np.longdouble)
    got = numerics.round(special, -309).astype(np.float32)
    assert got[0] == np.inf and got[1] == -np.inf and np.isnan(got[2])
    if np.finfo(np.longdouble).maxexp > 1024:                  # x86's 80-bit long double
        huge = np.array([np.longdouble("1e400")])
        with pytest.warns(RuntimeWarning, match="overflow"):
            assert np.isinf(numerics.round(huge, -309).astype(np.float32)[0])
        assert numerics.round(huge, -5000).astype(np.float32)[0] == 0


# ---- floating-point exceptions, as float16 reports them ------------------------------------

F16_MAX, BF16_MAX = 65504.0, float(np.uint16(MAX_BITS).view(BF16))
SPECIAL_NAMES = ["0", "-0", "1", "-1", "2", "0.5", "3", "-2.5", "inf", "-inf", "nan", "max",
                 "-max", "tiny"]


def special(dtype, name):
    table = {"0": 0.0, "-0": -0.0, "1": 1.0, "-1": -1.0, "2": 2.0, "0.5": 0.5, "3": 3.0,
             "-2.5": -2.5, "inf": np.inf, "-inf": -np.inf, "nan": np.nan}
    if name in table:
        return np.array([table[name]], dtype)
    biggest = F16_MAX if dtype == np.float16 else BF16_MAX
    smallest = 2.0**-24 if dtype == np.float16 else 2.0**-133
    return np.array([{"max": biggest, "-max": -biggest, "tiny": smallest}[name]], dtype)


def warning_kinds(f, args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with np.errstate(over="warn", invalid="warn", divide="warn", under="ignore"):
            f(*args)
    return sorted({(w.category.__name__, str(w.message).split(" encountered")[0])
                   for w in caught})


UNARY_ALL = (CORRECTLY_ROUNDED_UNARY + TRANSCENDENTAL_UNARY
             + ["isnan", "isinf", "isfinite", "signbit", "logical_not", "modf", "frexp",
                "spacing"])
BINARY_ALL = (sorted(CORRECTLY_ROUNDED_BINARY) + TRANSCENDENTAL_BINARY + COMPARISONS
              + ["nextafter", "divmod"])


@pytest.mark.parametrize("name", UNARY_ALL)
def test_unary_warnings_match_float16(name):
    f = getattr(np, name)
    for s in SPECIAL_NAMES:
        if name == "spacing" and s == "-max":
            continue  # float16's spacing is always positive (toward +inf); ours, float32's
        assert warning_kinds(f, (special(BF16, s),)) == \
            warning_kinds(f, (special(np.float16, s),)), f"{name}({s})"


@pytest.mark.parametrize("name", BINARY_ALL)
def test_binary_warnings_match_float16(name):
    f = getattr(np, name)
    for s, t in itertools.product(SPECIAL_NAMES, SPECIAL_NAMES):
        assert warning_kinds(f, (special(BF16, s), special(BF16, t))) == \
            warning_kinds(f, (special(np.float16, s), special(np.float16, t))), \
            f"{name}({s}, {t})"


def test_errstate_raise():
    big = np.array([BF16_MAX], BF16)
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError, match="overflow"):
            big * 2
        with pytest.raises(FloatingPointError, match="overflow"):
            np.exp(np.array([89.0], BF16))  # finite in float32, inf in bfloat16
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError, match="divide"):
            np.array([1.0], BF16) / np.array([0.0], BF16)
    with np.errstate(invalid="raise"):
        with pytest.raises(FloatingPointError, match="invalid"):
            np.sqrt(np.array([-1.0], BF16))
    with np.errstate(all="raise"):  # NaN comparisons are quiet
        nan = np.array([np.nan], BF16)
        assert not (nan < nan)[0] and not np.maximum(nan, 1)[0] == 1


@pytest.mark.parametrize("name", [u for u in UNARY_ALL if u not in ("modf", "frexp")])
def test_large_array_table_path_matches_direct_loop(name, all_values):
    """Large arrays read unary results from a 65,536-entry table; small calls compute directly.
    Both paths must give the same bits and raise the same floating-point warnings."""
    ufunc = getattr(np, name)
    with np.errstate(all="ignore"):
        whole = ufunc(all_values)                       # one call: table path
        pieces = np.concatenate([ufunc(all_values[i:i + 32])  # 32 at a time: direct path
                                 for i in range(0, 65536, 32)])
    np.testing.assert_array_equal(whole.view(np.uint16), pieces.view(np.uint16))
    for i in range(0, 65536, 4096):
        block = all_values[i:i + 4096]
        small = np.concatenate([block] * 16)            # >= 32768 elements: table path
        with np.errstate(all="raise"):
            try:
                ufunc(block[:32]); direct = None
            except FloatingPointError as exc:
                direct = str(exc)
            for j in range(32, 4096, 32):
                if direct is None:
                    try:
                        ufunc(block[j:j + 32])
                    except FloatingPointError as exc:
                        direct = str(exc)
            try:
                ufunc(small); table = None
            except FloatingPointError as exc:
                table = str(exc)
        assert (direct is None) == (table is None), (name, i, direct, table)


_COUNTED_TABLE = '''
import sys, numpy as np, bfloat16_dtype as bd
name = sys.argv[1]
f = getattr(np, name)
values = np.arange(65536, dtype=np.uint16).view(bd.bfloat16)
rounds = []
for r in range(6):  # 6 x 65,536 elements in calls of 1024: past UNARY_TABLE_BUILD_AFTER (2^18)
    bits, warned = [], []
    for i in range(0, 65536, 1024):
        with np.errstate(all="raise"):
            try:
                f(values[i:i + 1024]); warned.append("")
            except FloatingPointError as exc:
                warned.append(str(exc))
        with np.errstate(all="ignore"):
            bits.append(f(values[i:i + 1024]).view(np.uint16))
    rounds.append((np.concatenate(bits), warned))
for out, warned in rounds[1:]:
    assert np.array_equal(out, rounds[0][0]) and warned == rounds[0][1], name
print("ok")
'''


@pytest.mark.parametrize("name", ["sinh", "arccosh", "cbrt", "arcsin"])
def test_table_built_after_many_small_calls_matches_direct_loop(name):
    """Calls of 64 to 32,767 elements build the function's table once the elements they computed
    directly reach 2^18 (UNARY_TABLE_BUILD_AFTER, csrc/umath/unary_table.h): in a fresh process the
    first rounds over all 65,536 inputs run the scalar functor, the last ones the table (flags
    found in blocks of 64, per input only in blocks that raised one); every round gives the same
    bits and the same warnings, chunk by chunk."""
    r = subprocess.run([sys.executable, "-c", _COUNTED_TABLE, name], capture_output=True, text=True,
                       timeout=300, cwd=os.path.dirname(os.path.abspath(__file__)))
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


# ---- dtype=bfloat16 with inputs of other types ------------------------------------------

DTYPE_KW_UNARY = [u for u in CORRECTLY_ROUNDED_UNARY + TRANSCENDENTAL_UNARY + ["spacing"]]
DTYPE_KW_BINARY = sorted(CORRECTLY_ROUNDED_BINARY) + TRANSCENDENTAL_BINARY + [
    "copysign", "nextafter", "divmod"]
DTYPE_KW_INPUTS = {
    "float32": np.array([0.3, -2.7, 1e-3, 7.0], np.float32),
    "float64": np.array([0.3, -2.7, 1e-3, 7.0]),
    "float16": np.array([0.3, -2.7, 1e-3, 7.0], np.float16),
    "int64": np.array([3, -2, 1, 7]),
    "int8": np.array([3, -2, 1, 7], np.int8),
    "bool": np.array([True, False, True, True]),
    "python float": 0.3,
    "python int": 3,
}


def _call_or_error(fn):
    try:
        with np.errstate(all="ignore"):
            return fn(), None
    except TypeError as e:
        return None, e


@pytest.mark.parametrize("kind", sorted(DTYPE_KW_INPUTS))
@pytest.mark.parametrize("name", DTYPE_KW_UNARY + DTYPE_KW_BINARY)
def test_dtype_keyword_casts_the_inputs_like_float16(name, kind):
    """`np.sqrt(x, dtype=bfloat16)` with x of another type casts x to bfloat16 (same_kind) and
    runs the bfloat16 loop, as `dtype=np.float16` does; the inputs of a binary ufunc may also
    mix bfloat16 with the other type. The reference is the loop on inputs cast beforehand."""
    u = getattr(np, name)
    x = DTYPE_KW_INPUTS[kind]
    operand_sets = [(x,)] if u.nin == 1 else [(x, x), (x, np.array([1.5, 2, -0.5, 3], BF16)),
                                              (np.array([1.5, 2, -0.5, 3], BF16), x)]
    for ops in operand_sets:
        f16_ops = tuple(o.astype(np.float16) if isinstance(o, np.ndarray) and o.dtype == BF16
                        else o for o in ops)
        _, f16_err = _call_or_error(lambda: u(*f16_ops, dtype=np.float16))
        got, err = _call_or_error(lambda: u(*ops, dtype=bfloat16))
        assert (err is None) == (f16_err is None), (name, kind, err, f16_err)
        if err is not None:
            continue
        want, _ = _call_or_error(lambda: u(*(np.asarray(o).astype(BF16) for o in ops)))
        for g, w in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            assert g.dtype == BF16
            assert_same_bits(bits_of(np.atleast_1d(g)), bits_of(np.atleast_1d(w)),
                             f"{name}({kind}, dtype=bfloat16)", nan_sign=True)


def test_dtype_keyword_refusals_like_float16():
    """The casting rule still applies to the inputs (complex, string and the safe rule refused,
    as for float16), with NumPy's message naming both types."""
    for bad, casting in [(np.array([1 + 1j]), "same_kind"), (np.array(["1"]), "same_kind"),
                         (np.array([1.0]), "safe")]:
        with pytest.raises(TypeError, match="Cannot cast ufunc 'sqrt' input"):
            np.sqrt(bad, dtype=np.float16, casting=casting)
        with pytest.raises(TypeError, match="Cannot cast ufunc 'sqrt' input"):
            np.sqrt(bad, dtype=bfloat16, casting=casting)


def test_numpy_functions_that_pass_dtype_bfloat16():
    """np.linalg.norm(ord=3) and np.fft.ifft call `np.reciprocal(n, dtype=x.dtype)` on an
    integer; both work as for float16 (references: the same calls on float64 data)."""
    x = np.array([3.0, -4.0, 0.5], BF16)
    for order in (3, -1, 0.5):
        got = np.linalg.norm(x, ord=order)
        assert got.dtype == BF16
        want = np.linalg.norm(x.astype(np.float64), ord=order)
        assert abs(float(got) - want) <= 4 * 2.0**-8 * abs(want)
    y = np.array([1, 2, 3, 4], BF16)
    assert np.fft.ifft(y).dtype == np.fft.ifft(y.astype(np.float16)).dtype == np.complex64
    np.testing.assert_allclose(np.fft.ifft(y), np.fft.ifft(y.astype(np.float64)), rtol=1e-6)
    got = np.fft.irfft(y)  # a real result keeps the input's type, as for float16 and float32
    assert got.dtype == BF16 and np.fft.irfft(y.astype(np.float16)).dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), np.fft.irfft(y.astype(np.float64)),
                               rtol=2.0**-8, atol=2.0**-8)


NUMPY_OWN_CALLS = """
import numpy as np
S = np.array(["ab", "c"], dtype=np.dtypes.StringDType())
td, dt = np.array([1, 2], "m8[s]"), np.array([1, 2], "M8[s]")
i8, u64, f16 = np.array([1, 2], np.int8), np.array([1, 2], np.uint64), np.array([1.5], np.float16)
calls = [lambda: S + S, lambda: S * 2, lambda: dt + td, lambda: td * 1.5, lambda: td // td,
         lambda: i8 + u64, lambda: f16 + np.int8(3), lambda: np.sqrt(i8), lambda: np.divide(i8, u64),
         lambda: np.add.reduce(i8), lambda: np.add.reduce(np.array([True, True])),
         lambda: np.add.reduce(i8, dtype=np.float16), lambda: np.maximum.accumulate(u64),
         lambda: np.add.reduce(S), lambda: np.power(np.int8(2), np.int16(3)),
         lambda: np.sqrt(np.array([4]), dtype=np.float32), lambda: np.ldexp(f16, i8[:1]),
         lambda: np.add.reduce(np.array([1, 2], object)), lambda: np.clip(u64, 1, 1)]
for f in calls:
    try:
        r = np.asarray(f())
        print(r.dtype, r.tolist())
    except Exception as e:
        print(type(e).__name__)
"""


def test_output_promoter_leaves_other_calls_to_numpy():
    """The promoter behind `dtype=bfloat16` matches calls NumPy was given no output type for;
    those keep NumPy's own results (mixed integers, StringDType, datetimes, reductions and
    accumulations of other types, float16): the reference is the same calls in a child
    interpreter that never imports this package."""
    import subprocess
    import sys
    from conftest import TESTS_DIR

    def run(code):
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True, cwd=TESTS_DIR).stdout
    env_free = run(NUMPY_OWN_CALLS)
    assert run("import bfloat16_dtype\n" + NUMPY_OWN_CALLS) == env_free
    assert len(env_free.splitlines()) == 19
    assert np.add.reduce(np.ones(3, BF16)).dtype == BF16
    assert np.maximum.reduce(np.array([1.5, 2.5], np.float16)) == np.float16(2.5)
    got = np.add.reduce(np.array([1.0, 2.0**-8, 2.0**-8], np.float32), dtype=bfloat16)
    assert got.dtype == BF16 and float(got) == 1.0078125  # float32 accumulation, one rounding
    assert np.divmod(np.array([7]), np.array([2.0], np.float32))[0].dtype == np.float64


@pytest.mark.parametrize("ufunc", [np.logical_and, np.logical_or, np.logical_xor])
def test_logical_reductions_into_any_output_like_float16(ufunc):
    """logical_* with a bfloat16 operand and any other type, reduced or accumulated into an out=
    of any type, run on the values cast to bool and cast the bool result, as for float16."""
    v = np.array([[1.5, 0.0, -2.0], [0.0, np.nan, 3.0]])
    for out_type in (np.float32, np.float64, np.int8, bool, "same"):
        def out(shape, dt):
            return np.empty(shape, dt if out_type == "same" else out_type)
        want = ufunc.reduce(v.astype(np.float16), axis=1, out=out(2, np.float16))
        got = ufunc.reduce(v.astype(BF16), axis=1, out=out(2, BF16))
        assert got.dtype == (BF16 if out_type == "same" else np.dtype(out_type))
        assert np.array_equal(got.astype(np.float64), want.astype(np.float64))
        want = ufunc.accumulate(v.astype(np.float16), axis=1, out=out((2, 3), np.float16))
        got = ufunc.accumulate(v.astype(BF16), axis=1, out=out((2, 3), BF16))
        assert np.array_equal(got.astype(np.float64), want.astype(np.float64))
    # the other operand is cast to bool, not to bfloat16: float32's smallest subnormal is true
    tiny = np.array([1e-45, 0.0], np.float32)
    ones = np.ones(2, BF16)
    assert ufunc(tiny, ones).tolist() == ufunc(tiny, np.ones(2, np.float16)).tolist()
    assert ufunc(ones, tiny).tolist() == ufunc(np.ones(2, np.float16), tiny).tolist()
    assert ufunc(ones, 0.0).tolist() == ufunc(np.ones(2, np.float16), 0.0).tolist()


def test_arctan2_correctly_rounded():
    """arctan2 evaluates in float64 (ops.h Arctan2) and rounds once: bit-exact against numpy's
    float64 arctan2 rounded to nearest even, on 2 million random pairs (every sign and binade,
    subnormals and the IEEE special values among them), a sweep of every bfloat16 y against
    the x values 1 and -1 (the octant edges), and the special pairs; a result below 2**-126
    raises underflow, and a quiet NaN operand raises nothing."""
    rng = np.random.default_rng(2)
    a = np.concatenate([RANDOM_A, rng.integers(0, 65536, 2_000_000).astype(np.uint16),
                        np.arange(65536, dtype=np.uint32).astype(np.uint16)] * 1)
    b = np.concatenate([RANDOM_B, rng.integers(0, 65536, 2_000_000).astype(np.uint16),
                        np.where(np.arange(65536) % 2, 0x3F80, 0xBF80).astype(np.uint16)])
    with np.errstate(all="ignore"):
        got = np.arctan2(a.view(BF16), b.view(BF16))
        want = f64_to_bf16_bits(np.arctan2(widen64(a), widen64(b)))
    assert_same_bits(bits_of(got), want, "arctan2")
    tiny = np.array([2.0**-100, -(2.0**-100)], BF16)
    with np.errstate(all="raise"):
        with pytest.raises(FloatingPointError, match="underflow"):
            np.arctan2(tiny, np.array([2.0**60, 2.0**60], BF16))
        np.arctan2(np.array([np.nan, 1.0], BF16), np.array([1.0, np.nan], BF16))
        np.arctan2(np.array([0.0, -0.0, np.inf], BF16), np.array([-0.0, 0.0, -np.inf], BF16))


@pytest.mark.parametrize("name", sorted((set(CORRECTLY_ROUNDED_BINARY) | set(TRANSCENDENTAL_BINARY)
                                        | {"nextafter"}) - {"add", "multiply"}))
def test_accumulate_of_every_binary_ufunc_follows_the_chain(name):
    """ufunc.accumulate hands the loop in1 = out - 1 element: each output is the previous one
    combined with the next input. Reference: the same ufunc on one element at a time (the
    scalar loop). (add and multiply accumulate in float32: test_reductions.py.) The vector blocks used to read outputs not yet written (subtract.accumulate
    of 1..20 gave garbage, different from run to run)."""
    f = getattr(np, name)
    rng = np.random.default_rng(5)
    for n in (15, 16, 17, 40, 100, 1000):
        vals = rng.uniform(0.5, 2.0, n).astype(np.float32)
        vals[rng.random(n) < 0.5] *= -1
        x = vals.astype(BF16)
        with np.errstate(all="ignore"):
            got = f.accumulate(x)
            want = np.empty(n, BF16)
            want[0] = x[0]
            for i in range(1, n):
                want[i:i + 1] = f(want[i - 1:i], x[i:i + 1])
            out = np.full(n, np.nan, BF16)
            f.accumulate(x, out=out)
            inplace = x.copy()
            f.accumulate(inplace, out=inplace)
        for res in (got, out, inplace):
            assert_same_bits(bits_of(res), bits_of(want), f"{name}.accumulate n={n}")


@pytest.mark.parametrize("e", [2.0, -1.0, 0.5, 3.0])
def test_power_by_two_half_and_minus_one_like_powf(e):
    """A contiguous x ** e with one exponent of 2, -1, 0.5 or 3 runs square, reciprocal, sqrt
    or x * x * x (loops.h power_by_unary): for every bfloat16 the bits and the IEEE flags equal
    the strided call's, which runs powf element by element; -0 and -inf keep powf (+0, +inf)
    for 0.5."""
    x = ALL_BITS.view(BF16)
    spread = np.zeros(2 * x.size, BF16)
    spread[::2] = x
    finite = ~is_nan_bits(ALL_BITS)        # a call with a NaN takes powf: checked whole below
    with np.errstate(all="ignore"):
        fast = np.power(x[finite], BF16.type(e))
        slow = np.power(spread[::2], BF16.type(e))
        assert np.array_equal(bits_of(fast), bits_of(slow)[finite]), f"x ** {e}"
        assert np.array_equal(bits_of(x ** e), bits_of(slow)), f"x ** {e} (Python float)"
    for v in (0x0001, 0x7F7F, 0x0080, 0x7F81, 0xFF81, 0x8000, 0xFF80, 0xBF80, 0x0000):
        one = np.full(20, v, np.uint16).view(BF16)
        ref = np.zeros(40, BF16)
        ref[::2] = one
        for mode in ("raise",):
            got_err = want_err = None
            with np.errstate(all=mode):
                try:
                    np.power(one, BF16.type(e))
                except FloatingPointError as err:
                    got_err = str(err)
                try:
                    np.power(ref[::2], BF16.type(e))
                except FloatingPointError as err:
                    want_err = str(err)
            assert got_err == want_err, (hex(v), e, got_err, want_err)


@pytest.mark.parametrize("ufunc", [np.logical_and, np.logical_or, np.logical_xor])
def test_logical_ufuncs_with_strings_dates_and_void(ufunc):
    """The logical ufuncs take the truth of a str, bytes, datetime64, timedelta64 or void
    operand in either order, as float16's do (the other ufuncs raise NumPy's no-loop error)."""
    x = np.array([1.5, 0.0], BF16)
    h = x.astype(np.float16)
    others = [np.array(["a", ""]), np.array([b"a", b""]),
              np.array(["2020-01-01", "NaT"], "M8[D]"), np.array([1, 0], "m8[s]"),
              np.zeros(2, "V2")]
    for o in others:
        for args, ref in (((x, o), (h, o)), ((o, x), (o, h))):
            got, want = ufunc(*args), ufunc(*ref)
            assert got.dtype == np.bool_ and got.tolist() == want.tolist(), o.dtype
    with pytest.raises(TypeError):
        np.add(x, others[0])


def _outcome(call):
    """(result dtype, values as Python objects) or the exception's type."""
    try:
        r = np.asarray(call())
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e)
    return r.dtype, [None if v is None else float(v) for v in r.ravel().tolist()]


@pytest.mark.parametrize("ufunc", [np.logical_and, np.logical_or, np.logical_xor])
def test_logical_ufuncs_with_object_and_other_libraries_dtypes(ufunc):
    """With an object operand, dtype=object or out=object the logical ufuncs run the object
    loop, and with another library's DType first they run the bool loop, as for float16.
    These had raised NumPy's RuntimeError that two promoters (ours for reductions and NumPy's
    own) "matched the input equally well" (a SystemError with an ml_dtypes scalar), or a
    TypeError on the first call and a result on the next."""
    x = np.array([1.5, 0.0, -2.0, np.nan], BF16)
    h = x.astype(np.float16)
    obj = np.array([1, 0, 0, 2], object)
    x.astype(np.float32)  # a cast first: it had armed the ambiguity for later calls
    for attempt in range(2):  # the same answer the second time
        for make in (lambda a: ufunc(a, a, dtype=object), lambda a: ufunc(a, obj),
                     lambda a: ufunc(obj, a), lambda a: ufunc(a, a, out=np.empty(4, object)),
                     lambda a: bool(ufunc.reduce(a, dtype=object)),
                     lambda a: ufunc(a, a, dtype=bool),
                     lambda a: ufunc.accumulate(a, dtype=object)):
            got, want = _outcome(lambda: make(x)), _outcome(lambda: make(h))
            if not isinstance(want, tuple):  # logical_xor's object loop: no such method
                assert got == want, (attempt, got, want)
                continue
            assert isinstance(got, tuple), (attempt, got, want)
            assert got[0] == want[0]
            assert [None if v is None else bool(v) for v in got[1]] == \
                   [None if v is None else bool(v) for v in want[1]]
        # no loop: NumPy's plain TypeError, as for float16
        with pytest.raises(TypeError, match="No loop matching"):
            ufunc(x, x, dtype=BF16)
        with pytest.raises(TypeError, match="No loop matching"):
            ufunc(h, h, dtype=np.float16)
    ml_dtypes = pytest.importorskip("ml_dtypes")
    m = x.astype(ml_dtypes.bfloat16)
    for args in ((m, x), (x, m), (m[0], x), (x, m[0])):
        got = ufunc(*args)
        assert got.dtype == np.bool_
        assert got.tolist() == ufunc(*[np.asarray(a, np.float32) for a in args]).tolist()
    assert ufunc(x, x, out=np.empty(4, ml_dtypes.bfloat16)).astype(np.float32).tolist() == \
        ufunc(h, h).astype(np.float32).tolist()


INTEGER_ONLY = [np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.left_shift, np.right_shift,
                np.gcd, np.lcm, np.invert, np.bitwise_count]


@pytest.mark.parametrize("ufunc", INTEGER_ONLY, ids=lambda u: u.__name__)
def test_integer_only_ufuncs_with_bfloat16_like_float16(ufunc):
    """bfloat16 has no bitwise, shift, gcd or lcm loop, as float16 has none: NumPy's no-loop
    TypeError whatever the other operand and out=, a reduction with dtype=bool runs the bool
    loop, and an object operand the object loop, as for float16. With out=object these had run
    NumPy's object loop, which calls the scalar's `&`, whose generic form calls the ufunc,
    which NumPy had cached as the object loop: unbounded recursion, a segfault, here and in
    any later `~bfloat16(1)` of the process."""
    x = np.array([4.0, 6.0], BF16)
    args = (x,) * ufunc.nin
    others = [1, True, np.int64(3), np.array([1, 2], np.int32), np.array([1.0, 2.0], np.float32)]
    calls = [lambda: ufunc(*args), lambda: ufunc(*args, out=np.empty(2, object)),
             lambda: ufunc(*args, out=np.empty(2, np.int64))]
    if ufunc.nin == 2:
        for o in others:
            calls += [lambda o=o: ufunc(x, o), lambda o=o: ufunc(o, x),
                      lambda o=o: ufunc(x, o, out=np.empty(2, object))]
        calls += [lambda: ufunc.reduce(x), lambda: ufunc.accumulate(x)]
    for call in calls:
        with pytest.raises(TypeError):
            call()
    scalar = bfloat16(4.0)
    with pytest.raises(TypeError):
        ~scalar if ufunc.nin == 1 else ufunc(scalar, scalar)
    if ufunc in (np.bitwise_and, np.bitwise_or, np.bitwise_xor):
        h = x.astype(np.float16)
        assert _outcome(lambda: ufunc.reduce(x, dtype=bool)) == _outcome(lambda: ufunc.reduce(h, dtype=bool))
    if ufunc in (np.gcd, np.lcm):  # an object operand or output: the values' gcd in Python
        obj = np.array([6, 4], object)
        got, want = ufunc(x, obj), ufunc(x.astype(np.float16), obj)
        assert got.dtype == want.dtype == object and [float(v) for v in got] == [float(v) for v in want]
        got = ufunc.reduce(x, out=np.empty((), object))
        assert float(got[()]) == float(ufunc.reduce(x.astype(np.float16), out=np.empty((), object))[()])


def test_float_power_with_longdouble_keeps_longdouble():
    """float_power computes in float64 at least; a longdouble or clongdouble operand keeps its
    type (it had come out float64 / complex128), in either order, as for float16."""
    x = np.array([3.0, 0.5], BF16)
    h = x.astype(np.float16)
    for other in (np.array([1 / 3], np.longdouble), np.longdouble(2), np.clongdouble(1),
                  np.array([2.0], np.float64), np.complex64(1), 2, 2.5):
        for got, want in ((np.float_power(x, other), np.float_power(h, other)),
                          (np.float_power(other, x), np.float_power(other, h))):
            assert got.dtype == want.dtype, (type(other), got.dtype, want.dtype)
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["fmod", "remainder", "floor_divide"])
def test_fmod_family_exact_around_the_quotient_limit(name):
    """fmod, remainder and floor_divide take their remainder from a float64 quotient below 2**24
    and from fmodf above: every finite pattern against divisors that put the quotient on either
    side of 2**24, far beyond it (2**45, 2**60) and at 1, 4/3, 10/3 and below 1 equals float32's
    result rounded once, signed
    zeros included, with float32's warnings."""
    a_bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    a_bits = a_bits[(a_bits & 0x7FFF) < 0x7F80]
    a32 = exact_f32(a_bits)
    f = getattr(np, name)
    for factor in (1.0, 0.75, -0.3, 3.0, 2.0 ** -23, 2.0 ** -24, -(2.0 ** -25), 1.5 * 2.0 ** -24,
                   1.5 * 2.0 ** -45, -1.25 * 2.0 ** -60):
        with np.errstate(all="ignore"):
            b32 = exact_f32(reference_round((a32 * np.float32(factor)).astype(np.float32)))
        keep = b32 != 0
        ab, bb = a_bits[keep], bits_of(b32[keep].astype(BF16))
        with warnings.catch_warnings(record=True) as ours, np.errstate(all="warn"):
            warnings.simplefilter("always")
            got = f(ab.view(BF16), bb.view(BF16))
        with warnings.catch_warnings(record=True) as theirs, np.errstate(all="warn"):
            warnings.simplefilter("always")
            ref = f(exact_f32(ab), exact_f32(bb))
        assert_same_bits(bits_of(got), reference_round(ref), f"{name} x{factor}")
        kinds = {str(w.message).split(" encountered")[0] for w in ours}
        assert kinds <= {str(w.message).split(" encountered")[0] for w in theirs}, (name, factor)


def test_logaddexp_reports_underflow_only_past_float64_exp():
    """logaddexp runs in float64: its exp underflows only beyond about 708 (logaddexp2: 1074);
    the values are those of float32 (README, "Differences from float16")."""
    zero = np.zeros(1, BF16)
    for fn, quiet_gap, loud_gap in ((np.logaddexp, 100.0, 720.0), (np.logaddexp2, 200.0, 1080.0)):
        with np.errstate(under="raise"):
            got = fn(zero, np.array([quiet_gap], BF16))
            with pytest.raises(FloatingPointError, match="underflow"):
                fn(zero, np.array([loud_gap], BF16))
        assert float(got[0]) == quiet_gap
        with np.errstate(under="ignore"):
            assert float(fn(zero, np.array([loud_gap], BF16))[0]) == float(np.float32(loud_gap)
                                                                          .astype(BF16))


def test_signatures_name_bfloat16_by_tuple_only():
    """NumPy's ufunc.types lists builtin loops only and its signature-string parser knows only
    builtin type characters; tuples and resolve_dtypes work (README)."""
    x = np.ones(3, BF16)
    assert not [t for t in np.add.types if BF16.char in t]
    assert np.add.resolve_dtypes((BF16, BF16, None)) == (BF16, BF16, BF16)
    assert np.add(x, x, signature=(BF16, BF16, BF16)).dtype == BF16
    with pytest.raises((ValueError, TypeError)):
        np.add(x, x, signature=f"{BF16.char}{BF16.char}->{BF16.char}")
