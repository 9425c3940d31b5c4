"""to_bfloat16: every rounding mode against an independent reference.

References: integer arithmetic on the float32 bits (nearest-even, toward zero, stochastic with
given random bits), the sorted table of all finite bfloat16 values (float64 input), exact
rational arithmetic (float64 stochastic thresholds), and binomial statistics over many draws.
"""
from __future__ import annotations

import os
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bfloat16_dtype import _ext, bfloat16
from bfloat16_dtype.rounding import ROUNDING_MODES, to_bfloat16

from conftest import exact_f32, reference_round

from conftest import TESTS_DIR  # noqa: E402

BF16 = np.dtype(bfloat16)


def bits_of(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).view(np.uint16)


def ref_toward_zero(values) -> np.ndarray:
    u = np.asarray(values, dtype=np.float32).view(np.uint32)
    upper = (u >> 16).astype(np.uint16)
    return np.where((u & 0x7FFFFFFF) > 0x7F800000, upper | 0x40, upper).astype(np.uint16)


def ref_stochastic(values, random16) -> np.ndarray:
    u = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    upper = u >> 16
    out = (u + random16.astype(np.uint64)) >> 16
    return np.where((u & 0x7FFFFFFF) > 0x7F800000, upper | 0x40, out).astype(np.uint16)


def ref_flush(bits: np.ndarray) -> np.ndarray:
    return np.where((bits & 0x7F80) == 0, bits & 0x8000, bits).astype(np.uint16)


def edge_float32() -> np.ndarray:
    """float32 values at and beside every bfloat16 interval edge: for each bfloat16 pattern h,
    the dropped halves 0, 1, 0x7fff, 0x8000, 0x8001, 0xffff (both signs, specials included)."""
    high = np.arange(65536, dtype=np.uint32) << 16
    low = np.array([0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF], dtype=np.uint32)
    return (high[:, None] | low[None, :]).ravel().view(np.float32)


SPECIALS = np.array(
    [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 3.3895314e38, 3.3961776e38, 3.4028235e38,
     -3.4028235e38, 1.1754944e-38, 9.18355e-41, 1e-45, -1e-45],
    dtype=np.float32,
)


# ---- nearest-even ----------------------------------------------------------------------------


def test_nearest_even_matches_the_default_cast_bit_for_bit():
    rng = np.random.default_rng(1)
    x = np.concatenate([
        rng.integers(0, 2**32, size=1_200_000, dtype=np.uint32).view(np.float32),
        edge_float32(),
        SPECIALS,
        np.array([0x7F800001, 0xFFC00001, 0x7FFFFFFF], dtype=np.uint32).view(np.float32),  # NaNs
    ])
    with np.errstate(over="ignore"):
        ours = bits_of(to_bfloat16(x))
        cast = bits_of(x.astype(bfloat16))
    np.testing.assert_array_equal(ours, cast)
    np.testing.assert_array_equal(ours, reference_round(x))


def finite_table():
    """Every non-negative finite bfloat16 value in increasing order, as float64 and bits."""
    bits = np.arange(0, 0x7F81, dtype=np.uint16)
    return exact_f32(bits).astype(np.float64), bits


def ref_from_f64(x: np.ndarray, mode: str) -> np.ndarray:
    """float64 -> bfloat16 bits by searching the sorted table of bfloat16 values: no float32."""
    values, bits = finite_table()
    values = values.copy()
    values[-1] = 2.0**128  # the pattern 0x7f80 (inf) stands for 2^128, the next step after max
    a = np.abs(x)
    i = np.searchsorted(values, a, side="right") - 1  # values[i] <= a < values[i + 1]
    i = np.minimum(i, len(values) - 1)
    lo = bits[i].astype(np.uint16)
    if mode == "toward_zero":
        out = np.where(i == len(values) - 1, np.uint16(0x7F7F), lo)
        out = np.where(np.isinf(a), np.uint16(0x7F80), out)
    else:
        hi = np.minimum(i + 1, len(values) - 1)
        below, above = a - values[i], values[hi] - a
        odd = (lo & 1) == 1
        up = (above < below) | ((above == below) & odd)
        out = np.where(up, bits[hi], lo).astype(np.uint16)
        out = np.where(a >= values[-1], np.uint16(0x7F80), out)
    sign = np.where(np.signbit(x), np.uint16(0x8000), np.uint16(0))
    out = (out | sign).astype(np.uint16)
    return np.where(np.isnan(x), sign | np.uint16(0x7FC0), out).astype(np.uint16)


def random_float64(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    mant = rng.random(n) + 1.0
    exps = rng.integers(-140, 129, size=n)
    x = np.ldexp(mant, exps) * rng.choice([-1.0, 1.0], size=n)
    # exact ties of the bfloat16 grid and the float32-double-rounding example of the spec
    ties = np.ldexp(rng.integers(256, 512, size=1000) * 2.0 + 1.0, rng.integers(-140, 110, size=1000))
    return np.concatenate([x, ties, [1 + 2**-8 + 2**-30, 2.0**-134, 2.0**-133 * 1.5, 1e300, -1e-300]])


def test_float64_nearest_even_rounds_once_and_matches_the_cast():
    x = random_float64(300_000, seed=2)
    with np.errstate(over="ignore"):
        ours = bits_of(to_bfloat16(x))
        np.testing.assert_array_equal(ours, bits_of(x.astype(bfloat16)))
    np.testing.assert_array_equal(ours, ref_from_f64(x, "nearest_even"))
    assert float(to_bfloat16(np.float64(1 + 2**-8 + 2**-30))) == 1.0078125


# ---- toward zero -------------------------------------------------------------------------------


def test_toward_zero_float32_against_integer_truncation():
    rng = np.random.default_rng(3)
    x = np.concatenate([
        rng.integers(0, 2**32, size=1_000_000, dtype=np.uint32).view(np.float32), edge_float32(),
        SPECIALS,
    ])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # truncation never overflows
        ours = bits_of(to_bfloat16(x, "toward_zero"))
    np.testing.assert_array_equal(ours, ref_toward_zero(x))


def test_toward_zero_float64_against_the_value_table():
    x = random_float64(300_000, seed=4)
    x = np.concatenate([x, [np.inf, -np.inf, np.nan, 0.0, -0.0, 3.4e38, -1e300, 5e-324]])
    ours = bits_of(to_bfloat16(x, "toward_zero"))
    np.testing.assert_array_equal(ours, ref_from_f64(x, "toward_zero"))


# ---- flush to zero -----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["nearest_even", "toward_zero"])
def test_flush_subnormals_float32(mode):
    x = np.concatenate([edge_float32(), SPECIALS])
    with np.errstate(over="ignore"):
        plain = to_bfloat16(x, mode)
        flushed = bits_of(to_bfloat16(x, mode, flush_subnormals=True))
    np.testing.assert_array_equal(flushed, ref_flush(bits_of(plain)))
    # the flush acts on results: the largest float32 subnormal rounds (nearest) up to 2^-126
    top = np.array([0x007FFFFF], np.uint32).view(np.float32)
    expected = 0x0080 if mode == "nearest_even" else 0x0000
    assert bits_of(to_bfloat16(top, mode, flush_subnormals=True))[0] == expected
    assert bits_of(to_bfloat16(np.float32([-1e-39]), mode, flush_subnormals=True))[0] == 0x8000


def test_flush_subnormals_float64_and_stochastic():
    x = np.concatenate([-np.logspace(-45, -30, 2000), np.logspace(-45, -30, 2000)])
    for mode, rng in (("nearest_even", None), ("toward_zero", None), ("stochastic", 5)):
        plain = bits_of(to_bfloat16(x, mode, rng=rng))
        flushed = bits_of(to_bfloat16(x, mode, flush_subnormals=True, rng=rng))
        np.testing.assert_array_equal(flushed, ref_flush(plain))
        x32 = x.astype(np.float32)
        plain = bits_of(to_bfloat16(x32, mode, rng=rng))
        flushed = bits_of(to_bfloat16(x32, mode, flush_subnormals=True, rng=rng))
        np.testing.assert_array_equal(flushed, ref_flush(plain))


# ---- stochastic --------------------------------------------------------------------------------


def test_stochastic_float32_kernel_against_integer_reference():
    """Given the random bits, the result is exactly (bits + random) >> 16 (NaN made quiet)."""
    rng = np.random.default_rng(6)
    x = np.concatenate([
        rng.integers(0, 2**32, size=500_000, dtype=np.uint32).view(np.float32), edge_float32(),
        SPECIALS,
    ])
    random16 = rng.integers(0, 2**16, size=x.size, dtype=np.uint16)
    random16[:6] = [0, 1, 0x7FFF, 0x8000, 0xFFFE, 0xFFFF]
    dst = np.empty(x.size, bfloat16)
    with np.errstate(over="ignore"):
        _ext._round_to_bf16(x, dst, ROUNDING_MODES["stochastic"], False, random16)
    np.testing.assert_array_equal(bits_of(dst), ref_stochastic(x, random16))


def test_stochastic_float64_kernel_threshold_is_exact():
    """float64 rounds up exactly when random64 < ceil(frac * 2^64), frac computed as a Fraction."""
    rng = np.random.default_rng(7)
    x = np.abs(random_float64(3000, seed=8))
    x = x[x < 3.3e38]
    lo_bits = ref_from_f64(x, "toward_zero")
    lo = exact_f32(lo_bits).astype(np.float64)
    spacing = exact_f32((lo_bits + 1).astype(np.uint16)).astype(np.float64) - lo
    thresholds = []
    for xi, li, si in zip(x.tolist(), lo.tolist(), spacing.tolist()):
        frac = (Fraction(xi) - Fraction(li)) / Fraction(si)
        t = frac * 2**64
        thresholds.append(int(t) + (t.denominator != 1))
    thresholds = np.array(thresholds, dtype=object)
    for offset in (-1, 0):  # just below the threshold rounds up, at it does not
        r = np.array([max(int(t) + offset, 0) for t in thresholds], dtype=np.uint64)
        dst = np.empty(x.size, bfloat16)
        _ext._round_to_bf16(x, dst, ROUNDING_MODES["stochastic"], False, r)
        expect_up = np.array([int(ri) < int(t) for ri, t in zip(r, thresholds)])
        np.testing.assert_array_equal(bits_of(dst), lo_bits + expect_up.astype(np.uint16))
    # random bits anywhere
    r = rng.integers(0, 2**64, size=x.size, dtype=np.uint64)
    dst = np.empty(x.size, bfloat16)
    _ext._round_to_bf16(-x, dst, ROUNDING_MODES["stochastic"], False, r)
    expect_up = np.array([int(ri) < int(t) for ri, t in zip(r, thresholds)])
    np.testing.assert_array_equal(bits_of(dst), (lo_bits + expect_up.astype(np.uint16)) | 0x8000)


def stochastic_values(dtype) -> np.ndarray:
    """Values with known dropped fractions, normal and subnormal, both signs."""
    rng = np.random.default_rng(9)
    lo_bits = np.concatenate([
        rng.integers(0x0080, 0x7F7F, size=20), rng.integers(1, 0x0080, size=6), [0, 0x3F80, 0x7F7E],
    ]).astype(np.uint16)
    fracs = np.concatenate([rng.random(26), [0.5, 2**-12, 1 - 2**-14]])
    lo = exact_f32(lo_bits).astype(np.float64)
    spacing = exact_f32((lo_bits + 1).astype(np.uint16)).astype(np.float64) - lo
    if dtype == np.float32:
        fracs = np.round(fracs * 2**16) / 2**16  # float32 can only hold 16 dropped bits
    x = (lo + fracs * spacing) * np.where(np.arange(lo.size) % 2, -1.0, 1.0)
    x = x.astype(dtype)
    exact_frac = (np.abs(x.astype(np.float64)) - lo) / spacing
    return x, lo, spacing, exact_frac


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_stochastic_mean_and_variance_over_many_draws(dtype):
    """Each value rounds to one of its two neighbours, up with probability equal to the dropped
    fraction p: the up count is Binomial(N, p). Bounds of 7 standard deviations (+1 for the
    smallest p) essentially never fail; the seeds are fixed anyway."""
    x, lo, spacing, p = stochastic_values(dtype)
    draws = 40_000
    got = to_bfloat16(np.repeat(x, draws), "stochastic", rng=np.random.default_rng(10))
    got = got.astype(np.float64).reshape(x.size, draws) * np.sign(x.astype(np.float64))[:, None]
    assert np.all((got == lo[:, None]) | (got == (lo + spacing)[:, None]))  # only the neighbours
    ups = (got > lo[:, None]).sum(axis=1)
    sd = np.sqrt(draws * p * (1 - p))
    assert np.all(np.abs(ups - draws * p) <= 7 * sd + 1), (ups, draws * p)
    # mean of the result = the input; variance = spacing^2 p (1 - p)
    mean_err = np.abs(got.mean(axis=1) - np.abs(x.astype(np.float64)))
    assert np.all(mean_err <= spacing * (7 * sd + 1) / draws)
    var = got.var(axis=1)
    var_expected = spacing**2 * p * (1 - p)
    # the sample variance is spacing^2 q(1-q) with q = ups/draws; |q(1-q) - p(1-p)| <= |q - p|
    assert np.all(np.abs(var - var_expected) <= spacing**2 * (7 * sd + 1) / draws * 1.0001)


def test_stochastic_specials_and_overflow():
    x = np.float32([np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0, 3.4028235e38, -3.4028235e38])
    for seed in range(5):
        with np.errstate(over="ignore"):
            b = bits_of(to_bfloat16(x, "stochastic", rng=seed))
        assert list(b[:2]) == [0x7F80, 0xFF80]
        assert b[2] == 0x7FC0 and b[3] == 0xFFC0
        assert list(b[4:6]) == [0x0000, 0x8000]
        assert b[6] in (0x7F7F, 0x7F80) and b[7] in (0xFF7F, 0xFF80)
    # float32 max has dropped part 0xffff: it overflows to inf unless the random bits are 0
    big = np.full(1000, 3.4028235e38, np.float32)
    with pytest.warns(RuntimeWarning, match="overflow"):
        out = to_bfloat16(big, "stochastic", rng=0)
    assert np.isinf(out.astype(np.float32)).mean() > 0.99
    with pytest.warns(RuntimeWarning, match="overflow"):
        assert float(to_bfloat16(np.float64(1e39), "stochastic", rng=0)) == np.inf


def test_stochastic_is_reproducible_from_seed_and_generator():
    x = np.random.default_rng(12).standard_normal(10_000).astype(np.float32)
    a = to_bfloat16(x, "stochastic", rng=42)
    b = to_bfloat16(x, "stochastic", rng=np.random.default_rng(42))
    np.testing.assert_array_equal(bits_of(a), bits_of(b))
    gen = np.random.default_rng(42)
    c1 = to_bfloat16(x, "stochastic", rng=gen)
    c2 = to_bfloat16(x, "stochastic", rng=gen)  # the generator advanced
    np.testing.assert_array_equal(bits_of(c1), bits_of(a))
    assert (bits_of(c1) != bits_of(c2)).any()
    d = to_bfloat16(x, "stochastic", rng=np.uint32(42))
    np.testing.assert_array_equal(bits_of(d), bits_of(a))


# ---- overflow, NaN, inf ------------------------------------------------------------------------


def test_overflow_warns_like_the_cast_and_follows_errstate():
    x = np.float32([3.3961776e38, 1.0])
    with pytest.warns(RuntimeWarning, match="overflow encountered in cast"):
        out = to_bfloat16(x)
    assert bits_of(out)[0] == 0x7F80
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        to_bfloat16(np.float64([-1e39]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        below_half = np.array([0x7F7F7FFF], np.uint32).view(np.float32)  # just below halfway past max
        assert bits_of(to_bfloat16(below_half))[0] == 0x7F7F
        assert bits_of(to_bfloat16(np.float64([-1e300]), "toward_zero"))[0] == 0xFF7F
        assert bits_of(to_bfloat16(np.float32([np.inf, -np.inf])))[1] == 0xFF80  # not an overflow


@pytest.mark.parametrize("mode", list(ROUNDING_MODES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_inf_zero_preserved_in_every_mode(mode, dtype):
    x = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0], dtype=dtype)
    rng = 0 if mode == "stochastic" else None
    b = bits_of(to_bfloat16(x, mode, rng=rng))
    assert list(b) == [0x7FC0, 0xFFC0, 0x7F80, 0xFF80, 0x0000, 0x8000]
    if dtype == np.float32:  # signalling NaNs
        payload = np.array([0x7F800001], np.uint32).view(np.float32)
    else:
        payload = np.array([0x7FF0000000000001], np.uint64).view(np.float64)
    assert bits_of(to_bfloat16(payload, mode, rng=rng))[0] & 0x7FC0 == 0x7FC0


# ---- shapes, out=, errors ----------------------------------------------------------------------


def test_shapes_strides_and_out():
    x = np.arange(24, dtype=np.float64).reshape(2, 3, 4)[:, ::2, ::-1] / 7
    got = to_bfloat16(x)
    assert got.shape == x.shape and got.dtype == BF16
    np.testing.assert_array_equal(bits_of(got), bits_of(x.astype(bfloat16)))
    out = np.zeros((2, 2, 4), bfloat16)
    assert to_bfloat16(x, "toward_zero", out=out) is out
    np.testing.assert_array_equal(bits_of(out), ref_from_f64(x, "toward_zero"))
    strided = np.zeros((2, 2, 8), bfloat16)[..., ::2]  # non-contiguous out
    to_bfloat16(x, out=strided)
    np.testing.assert_array_equal(bits_of(strided), bits_of(got))
    assert to_bfloat16(np.float32(1.5)).shape == ()
    assert to_bfloat16(np.empty((0, 3), np.float32), "stochastic", rng=1).shape == (0, 3)
    assert float(to_bfloat16(2.5)) == 2.5  # a Python float is float64


def test_out_of_ml_dtypes_is_returned_as_given():
    """out is returned as given, an ml_dtypes array too (a view of it as ours was returned)."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.arange(24, dtype=np.float64).reshape(2, 3, 4)[:, ::2, ::-1] / 7
    for theirs in (np.zeros((2, 2, 4), ml_dtypes.bfloat16), np.zeros((2, 2, 8), ml_dtypes.bfloat16)[..., ::2]):
        assert to_bfloat16(x, "toward_zero", out=theirs) is theirs
        np.testing.assert_array_equal(theirs.view(np.uint16), ref_from_f64(x, "toward_zero"))


def test_byte_swapped_input():
    """Byte-swapped float32/float64 input is float32/float64, as astype(bfloat16) takes it (it
    was refused as "dtype >f4"). References: integer arithmetic on the native float32 bits (the
    float64 copies hold the same values, so they round alike)."""
    rng = np.random.default_rng(7)
    x32 = (rng.standard_normal(1000) * 1e3).astype(np.float32)
    for mode, ref in (("nearest_even", reference_round), ("toward_zero", ref_toward_zero)):
        for x in (x32.astype(">f4"), x32.astype(">f8")):
            got = to_bfloat16(x, mode)
            assert got.dtype == BF16
            np.testing.assert_array_equal(bits_of(got), ref(x32))
            out = np.zeros(x.shape, BF16)
            assert to_bfloat16(x, mode, out=out) is out
            np.testing.assert_array_equal(bits_of(out), ref(x32))
    random16 = np.random.default_rng(5).integers(0, 2**16, size=x32.size, dtype=np.uint16)
    got = to_bfloat16(x32.astype(">f4"), "stochastic", rng=5)   # 16 bits a value from the seed
    np.testing.assert_array_equal(bits_of(got), ref_stochastic(x32, random16))
    with pytest.raises(TypeError, match="x must be float32 or float64, got dtype float16"):
        to_bfloat16(np.ones(2, ">f2"))


def test_errors_name_the_bad_argument_and_write_nothing():
    x = np.ones(4, np.float32)
    out = np.full(4, 7, bfloat16)
    cases = [
        (dict(rounding="up"), ValueError, "rounding must be one of"),
        (dict(rounding=None), ValueError, "rounding"),
        (dict(rounding="stochastic", rng="seed"), TypeError, "rng must be"),
        (dict(rounding="stochastic", rng=1.5), TypeError, "rng must be"),
        (dict(rounding="stochastic", rng=-1), ValueError, "rng seed"),
        (dict(rounding="stochastic", rng=np.random.RandomState(0)), TypeError, "rng must be"),
        (dict(rng=3), ValueError, "rng is only used with rounding='stochastic'"),
        (dict(flush_subnormals="yes"), TypeError, "flush_subnormals"),
    ]
    for kwargs, exc, message in cases:
        with pytest.raises(exc, match=message):
            to_bfloat16(x, out=out, **kwargs)
    for bad_x in (np.ones(4, np.int64), np.ones(4, np.float16), np.ones(4, bfloat16),
                  np.ones(4, np.complex64), ["a"]):
        with pytest.raises(TypeError, match="x must be float32 or float64"):
            to_bfloat16(bad_x, out=out)
    with pytest.raises(TypeError, match="out must have dtype bfloat16"):
        to_bfloat16(x, out=np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="out has shape"):
        to_bfloat16(x, out=np.zeros(5, bfloat16))
    with pytest.raises(TypeError, match="out must be a numpy array"):
        to_bfloat16(x, out=[0, 0, 0, 0])
    readonly = np.zeros(4, bfloat16)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        to_bfloat16(x, out=readonly)
    assert (out.astype(np.float32) == 7).all()  # nothing written by any failed call


def test_kernel_checks_its_arguments():
    x = np.ones(4, np.float32)
    dst = np.empty(4, bfloat16)
    with pytest.raises(ValueError, match="mode"):
        _ext._round_to_bf16(x, dst, 3, False, None)
    with pytest.raises(TypeError, match="dst"):
        _ext._round_to_bf16(x, np.empty(4, np.uint16), 0, False, None)
    with pytest.raises(ValueError, match="elements"):
        _ext._round_to_bf16(x, np.empty(3, bfloat16), 0, False, None)
    # byte-swapped arrays: the loops read and write native bits (they wrote wrong values)
    with pytest.raises(ValueError, match="src must be in native byte order"):
        _ext._round_to_bf16(x.astype(">f4"), dst, 0, False, None)
    with pytest.raises(ValueError, match="dst must be in native byte order"):
        _ext._round_to_bf16(x, np.empty(4, np.dtype(bfloat16).newbyteorder()), 0, False, None)
    with pytest.raises(ValueError, match="random bits"):
        _ext._round_to_bf16(x, dst, 2, False, None)
    with pytest.raises(TypeError, match="random"):
        _ext._round_to_bf16(x, dst, 2, False, np.zeros(4, np.uint64))  # float32 takes uint16
    with pytest.raises(ValueError, match="stochastic mode only"):
        _ext._round_to_bf16(x, dst, 0, False, np.zeros(4, np.uint16))
    with pytest.raises(ValueError, match="C-contiguous"):
        _ext._round_to_bf16(np.ones(8, np.float32)[::2], dst, 0, False, None)
    with pytest.raises(TypeError, match="src must be float32 or float64"):
        _ext._round_to_bf16(np.ones(4, np.int32), dst, 0, False, None)


def test_baseline_tier_kernel_gives_the_same_bits(tmp_path):
    """The float32 loop has a baseline and an AVX2 build; force the baseline in a child process
    (BFLOAT16_DTYPE_ISA=baseline) and compare every mode's bits with this process's."""
    import os
    import subprocess
    import sys

    rng = np.random.default_rng(13)
    x = np.concatenate([edge_float32(), rng.integers(0, 2**32, 200_000, dtype=np.uint32).view(np.float32)])
    np.save(tmp_path / "x.npy", x)
    code = (
        "import sys, numpy as np, warnings; warnings.simplefilter('ignore')\n"
        "from bfloat16_dtype.rounding import to_bfloat16\n"
        "x = np.load(sys.argv[1])\n"
        "out = [to_bfloat16(x, m, rng=1 if m == 'stochastic' else None, flush_subnormals=f)"
        ".view(np.uint16) for m in ('nearest_even', 'toward_zero', 'stochastic') for f in (False, True)]\n"
        "np.save(sys.argv[2], np.stack(out))\n"
    )
    env = {**os.environ, "BFLOAT16_DTYPE_ISA": "baseline"}
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "x.npy"), str(tmp_path / "b.npy")], cwd=TESTS_DIR,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    with np.errstate(over="ignore"):
        here = np.stack([
            bits_of(to_bfloat16(x, m, rng=1 if m == "stochastic" else None, flush_subnormals=f))
            for m in ("nearest_even", "toward_zero", "stochastic") for f in (False, True)
        ])
    np.testing.assert_array_equal(np.load(tmp_path / "b.npy"), here)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=1, max_size=20),
       st.integers(0, 2**32 - 1))
def test_property_every_mode_brackets_the_input(values, seed):
    """For any float64 input: toward zero is the largest bfloat16 magnitude <= |x|; stochastic
    gives it or the next one up; nearest-even is one of the two; signs are kept."""
    x = np.array(values, dtype=np.float64)
    finite = np.isfinite(x)
    with np.errstate(over="ignore"):
        tz = to_bfloat16(x, "toward_zero").astype(np.float64)
        sr = to_bfloat16(x, "stochastic", rng=seed).astype(np.float64)
        rne = to_bfloat16(x).astype(np.float64)
    lo = np.abs(tz[finite])
    a = np.abs(x[finite])
    assert np.all(lo <= a)
    nxt = (np.abs(to_bfloat16(x[finite], "toward_zero")).view(np.uint16) + 1).view(bfloat16)
    up = nxt.astype(np.float64)  # 0x7f80 (inf) stands for 2^128 here
    assert np.all((a < up) | (np.abs(tz[finite]) == 3.3895313892515355e38))
    for r in (sr[finite], rne[finite]):
        assert np.all((np.abs(r) == lo) | (np.abs(r) == up))
    for r in (tz, sr, rne):
        assert np.array_equal(np.isnan(r), np.isnan(x))
        keep = ~np.isnan(x)
        assert np.array_equal(np.signbit(r[keep]), np.signbit(x[keep]))


def test_masked_arrays_are_refused():
    """np.asarray drops a mask, so the masked values would come back as live data: refused,
    naming the two ways that keep the mask (which work)."""
    m = np.ma.array([1.5, 2.0, 3.0], mask=[False, True, False], dtype=np.float32)
    for mode in ("nearest_even", "toward_zero", "stochastic"):
        with pytest.raises(TypeError, match="masked array"):
            to_bfloat16(m, mode)
    kept = np.ma.array(to_bfloat16(m.data), mask=m.mask)
    cast = m.astype(bfloat16)
    for r in (kept, cast):
        assert r.dtype == np.dtype(bfloat16) and r.mask.tolist() == [False, True, False]
        assert r.compressed().astype(np.float32).tolist() == [1.5, 3.0]


def test_torch_tensors_are_read():
    """A CPU torch float32 tensor is rounded like its array; a torch.bfloat16 tensor (which
    NumPy cannot read: torch raised "Got unsupported ScalarType BFloat16") gets this function's
    own dtype error, as a bfloat16 array does."""
    torch = pytest.importorskip("torch", reason="torch not installed")
    t = torch.tensor([1.0, 1.0 + 2.0**-8 + 2.0**-20])
    assert to_bfloat16(t).view(np.uint16).tolist() == [0x3F80, 0x3F81]
    with pytest.raises(TypeError, match="x must be float32 or float64, got dtype bfloat16_dtype.bfloat16"):
        to_bfloat16(t.to(torch.bfloat16))


def test_rng_forms_like_default_rng():
    """rng takes what np.random.default_rng takes (a Generator, an int seed, a SeedSequence, a
    BitGenerator), each drawing the bits the equal Generator draws; the legacy RandomState and
    bools are refused."""
    x = np.linspace(1, 2, 1000, dtype=np.float32) + np.float32(2.0**-12)
    want = to_bfloat16(x, "stochastic", rng=np.random.default_rng(5)).view(np.uint16)
    for rng in (5, np.random.SeedSequence(5), np.random.PCG64(5)):
        got = to_bfloat16(x, "stochastic", rng=rng).view(np.uint16)
        np.testing.assert_array_equal(got, want)
    for bad in (np.random.RandomState(5), True):
        with pytest.raises(TypeError, match="rng must be"):
            to_bfloat16(x, "stochastic", rng=bad)
