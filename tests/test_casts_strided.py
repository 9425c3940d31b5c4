"""The numeric casts between bfloat16 and bool, every integer type, float16, long double and
complex (out of bfloat16) as strided ArrayMethods: the same bits and warnings in every memory
layout, and numpy's float16 casting levels."""
from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest
from numpy.lib import NumpyVersion

from bfloat16_dtype import bfloat16
from conftest import exact_f32, reference_round
from test_casts import _casts_in_every_layout
from test_conversions import fraction_to_bits

BF = np.dtype(bfloat16)
# every integer type numpy has, by C name: long and longlong are distinct types of one size
INT_CODES = "bBhHiIlLqQ"
INT_DTYPES = [np.dtype(c) for c in INT_CODES]
LEVELS = ["no", "equiv", "safe", "same_kind", "unsafe"]
OTHERS = ([np.dtype(np.bool_)] + INT_DTYPES +
          [np.dtype(t) for t in (np.float16, np.float32, np.float64, np.longdouble,
                                 np.complex64, np.complex128, np.clongdouble)])


def _pad(a):
    """`a` repeated up to a multiple of 256 elements (the Fortran layout reshapes to 256 rows)."""
    return np.resize(a, -(-a.size // 256) * 256)


def _nan_mask(bits):
    return (bits & 0x7FFF) > 0x7F80


# ---- casting levels ----------------------------------------------------------------------

@pytest.mark.parametrize("other", OTHERS, ids=lambda d: d.char)
def test_can_cast_every_level_like_float16(other):
    """Every level, both ways, native and byte-swapped, as numpy answers for float16 — except the
    pair with float16 itself: same_kind both ways and never safe (each format loses range or
    precision the other has)."""
    for o in (other, other.newbyteorder()):
        for b in (BF, BF.newbyteorder()):
            for level in LEVELS:
                if other.char == "e":
                    into = out = level in ("same_kind", "unsafe")
                else:
                    into = np.can_cast(o, np.float16, level)
                    out = np.can_cast(np.float16, o, level)
                assert np.can_cast(o, b, level) == into, (o, b, level)
                assert np.can_cast(b, o, level) == out, (b, o, level)


def test_can_cast_levels_spelled_out():
    """The rule the test above derives from float16, written down (an independent reference)."""
    for d in INT_DTYPES + [np.dtype(np.bool_)]:
        small = d.itemsize == 1
        assert np.can_cast(d, BF, "safe") == small, d
        assert np.can_cast(d, BF, "same_kind"), d
        assert not np.can_cast(BF, d, "same_kind"), d
        assert np.can_cast(BF, d, "unsafe"), d
    for t in (np.longdouble, np.complex64, np.complex128, np.clongdouble):
        assert np.can_cast(BF, t, "safe") and not np.can_cast(BF, t, "equiv")
    assert np.can_cast(np.longdouble, BF, "same_kind")
    assert not np.can_cast(np.longdouble, BF, "safe")


# ---- every layout -------------------------------------------------------------------------

@pytest.mark.parametrize("other", INT_DTYPES + [np.dtype(np.bool_)], ids=lambda d: d.char)
def test_bf16_to_ints_and_bool_every_layout(all_bits, other):
    """All 65,536 patterns: every layout gives the contiguous cast's bits and warnings; values in
    the target's range truncate, bool is 'not zero'."""
    with np.errstate(invalid="warn"):
        got = _casts_in_every_layout(all_bits.view(bfloat16), other)
    f = exact_f32(all_bits).astype(np.float64)
    if other.kind == "b":
        np.testing.assert_array_equal(got, (all_bits & 0x7FFF) != 0)
        return
    info = np.iinfo(other)
    ok = np.isfinite(f) & (f > info.min - 1) & (f < info.max + 1)
    assert got[ok].tolist() == [int(x) for x in f[ok].tolist()]


def _int_edges(d):
    """0, +-1, the type's limits, and values around 2^8 ... 2^64 including the halfway cases of
    bfloat16's rounding (the 9th significant bit set, with and without bits below it)."""
    info = np.iinfo(d)
    vals = {0, 1, -1, info.min, info.max, info.min + 1, info.max - 1}
    for p in (8, 9, 16, 17, 24, 25, 31, 32, 33, 53, 54, 63, 64):
        half = 2 ** max(p - 9, 0)  # half a bfloat16 step just above 2^p
        for base in (2**p, 2**p + 2 * half, 2**p - 2 * half):
            for off in (-2, -1, 0, 1, 2, half, half - 1, half + 1, 3 * half):
                vals.add(base + off)
                vals.add(-(base + off))
    vals = sorted(v for v in vals if info.min <= v <= info.max)
    return _pad(np.array(vals, dtype=d))


@pytest.mark.parametrize("other", INT_DTYPES, ids=lambda d: d.char)
def test_int_edges_to_bf16_every_layout(other):
    """Integer edge values round once to nearest even (exact rational reference) in every layout,
    with no warning."""
    v = _int_edges(other)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = _casts_in_every_layout(v, BF)
    want = [fraction_to_bits(Fraction(int(x))) for x in v.tolist()]
    assert got.view(np.uint16).tolist() == want


def test_bool_to_bf16_every_layout():
    v = _pad(np.array([True, False, False, True, True]))
    got = _casts_in_every_layout(v, BF)
    np.testing.assert_array_equal(got.view(np.uint16), np.where(v, 0x3F80, 0))


def test_float16_to_bf16_every_layout(all_bits):
    """All float16 patterns, NaNs (signalling ones included) and their warnings, in every layout."""
    h = all_bits.view(np.float16)
    with np.errstate(all="warn"):
        got = _casts_in_every_layout(h, BF).view(np.uint16)
    ref = reference_round(h.astype(np.float32))
    nan = np.isnan(h)
    np.testing.assert_array_equal(got[~nan], ref[~nan])
    assert _nan_mask(got[nan]).all()
    np.testing.assert_array_equal(got[nan] & 0x8000, np.signbit(h[nan]) * 0x8000)


def test_bf16_to_float16_every_layout(all_bits):
    """Reference: numpy's float32 -> float16 of the exact value (one rounding); overflow and
    underflow warnings the same in every layout."""
    with np.errstate(all="warn"):
        got = _casts_in_every_layout(all_bits.view(bfloat16), np.float16)
    with np.errstate(all="ignore"):
        ref = exact_f32(all_bits).astype(np.float16)
    nan = np.isnan(ref)
    np.testing.assert_array_equal(got.view(np.uint16)[~nan], ref.view(np.uint16)[~nan])
    assert np.isnan(got[nan]).all()
    np.testing.assert_array_equal(np.signbit(got), np.signbit(ref))


def _same_values(a, b):
    """Equal values, NaN where NaN, same signs (long double's padding bytes are not compared)."""
    for part in (np.real, np.imag):
        x, y = part(a), part(b)
        np.testing.assert_array_equal(x, y)  # NaNs compare equal here
        np.testing.assert_array_equal(np.signbit(x), np.signbit(y))


def _wide_casts_in_every_layout(src, to):
    """_casts_in_every_layout for targets wider than 8 bytes, compared by value."""
    with warnings.catch_warnings(record=True) as w0:
        warnings.simplefilter("always")
        want = src.astype(to)
    want_w = sorted(str(w.message) for w in w0)
    raw = np.zeros(src.nbytes + 1, np.uint8)
    unaligned = raw[1:].view(src.dtype)
    unaligned[...] = src
    sources = [src, src.astype(src.dtype.newbyteorder()), unaligned,
               np.repeat(src, 3)[1::3], src[::-1].copy()[::-1]]
    dt = np.dtype(to)
    out_raw = np.zeros(src.size * dt.itemsize + 1, np.uint8)
    outs = [np.zeros(src.size, dt), np.zeros(src.size, dt.newbyteorder()),
            out_raw[1:].view(dt), np.zeros(3 * src.size, dt)[::3], np.zeros(src.size, dt)[::-1]]
    for i, x in enumerate(sources):
        for j, out in enumerate(outs):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                np.copyto(out, x, casting="unsafe")
            assert sorted(str(m.message) for m in w) == want_w, (i, j)
            _same_values(out.astype(dt.newbyteorder("=")), want)
    return want


@pytest.mark.parametrize("t", [np.longdouble, np.complex64, np.complex128, np.clongdouble],
                         ids=lambda t: np.dtype(t).char)
def test_bf16_to_wide_every_layout(all_bits, t):
    """Exact widening (imaginary part 0) in every layout."""
    with np.errstate(invalid="warn"):
        got = _wide_casts_in_every_layout(all_bits.view(bfloat16), t)
    ref = exact_f32(all_bits)
    nan = np.isnan(ref)
    np.testing.assert_array_equal(np.real(got)[~nan], ref[~nan].astype(np.float64))
    assert np.isnan(np.real(got)[nan]).all()
    np.testing.assert_array_equal(np.signbit(np.real(got)), np.signbit(ref))
    assert (np.imag(got) == 0).all()


def test_longdouble_to_bf16_every_layout():
    """float32 values (ties, overflow, NaN included) as long double round like the reference in
    every layout, with the same overflow warning."""
    rng = np.random.default_rng(11)
    f = rng.integers(0, 2**32, 4096, dtype=np.uint64).astype(np.uint32)
    f[:512] = (f[:512] & 0xFFFF0000) | 0x8000  # ties
    f[512:516] = [0x7F7FFFFF, 0xFF7FFFFF, 0x7FC00001, 0xFF800001]  # overflow, NaNs
    f32 = f.view(np.float32)
    with np.errstate(all="warn"):
        got = _casts_in_every_layout(_pad(f32.astype(np.longdouble)), BF)
    np.testing.assert_array_equal(got.view(np.uint16), reference_round(_pad(f32)))


# ---- warnings and errstate on strided data, like float16 ---------------------------------

@pytest.mark.parametrize("other", INT_DTYPES + [np.dtype(np.bool_)], ids=lambda d: d.char)
@pytest.mark.parametrize("special", ["nan", "inf", "-inf"])
def test_strided_special_values_to_int_warn_like_float16(other, special):
    """x[::2], x[::-1] and x[::3] holding NaN or inf: the warnings float16 gives, and
    errstate(invalid="raise") raises exactly when float16's cast does."""
    for step in (2, -1, 3):
        ours = np.array([1.0, float(special)] * 3, bfloat16)[::step]
        theirs = np.array([1.0, float(special)] * 3, np.float16)[::step]
        with warnings.catch_warnings(record=True) as w_ours:
            warnings.simplefilter("always")
            ours.astype(other)
        with warnings.catch_warnings(record=True) as w_theirs:
            warnings.simplefilter("always")
            theirs.astype(other)
        assert [str(w.message) for w in w_ours] == [str(w.message) for w in w_theirs]
        with np.errstate(invalid="raise"):
            try:
                theirs.astype(other)
                raised = False
            except FloatingPointError:
                raised = True
            if raised:
                with pytest.raises(FloatingPointError, match="invalid"):
                    ours.astype(other)
            else:
                ours.astype(other)


def test_strided_float16_overflow_warns_like_float32():
    x = np.array([1e5, 1.0] * 4, bfloat16)[::2]
    with pytest.warns(RuntimeWarning, match="overflow"):
        x.astype(np.float16)
    with np.errstate(over="raise"), pytest.raises(FloatingPointError, match="overflow"):
        x.astype(np.float16)


def test_casts_into_strided_outputs_and_reductions():
    """Casting into strided and reversed outputs of an int or float16 array, and through a
    reduction that buffers (sum with dtype=bfloat16 over strided input)."""
    v = np.arange(-300, 300, dtype=np.int32) * 1001
    out = np.zeros(2 * v.size, BF)[::-2]
    np.copyto(out, v, casting="unsafe")
    assert np.ascontiguousarray(out).view(np.uint16).tolist() == \
        [fraction_to_bits(Fraction(int(x))) for x in v.tolist()]
    h = np.linspace(-4, 4, 101).astype(np.float16)
    np.testing.assert_array_equal(
        np.add.reduce(h[::2], dtype=BF).astype(np.float64),
        np.add.reduce(h[::2].astype(BF), dtype=BF).astype(np.float64))


# ---- same_value --------------------------------------------------------------------------

@pytest.mark.skipif(NumpyVersion(np.__version__) < "2.4.0",
                    reason="casting='same_value' arrived in NumPy 2.4")
@pytest.mark.parametrize("other", [d for d in OTHERS if d.char not in "fd"], ids=lambda d: d.char)
def test_same_value_not_declared(other):
    """These casts do not declare casting='same_value': NumPy raises TypeError before any loop
    runs, contiguous or strided, whatever the values (README "Differences from float16 that
    remain")."""
    x = np.ones(8, BF)
    if other.kind != "c":
        for src in (np.ones(8, other), np.ones(8, other)[::2]):
            with pytest.raises(TypeError, match="same_value"):
                src.astype(BF, casting="same_value")
    for src in (x, x[::2]):
        with pytest.raises(TypeError, match="same_value"):
            src.astype(other, casting="same_value")
