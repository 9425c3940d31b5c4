"""Bit-exact conversions between bfloat16 and float32/float64/integers.

References used here never call the code under test: conftest's integer-arithmetic
``reference_round`` for float32, an integer-arithmetic float64 reference, and exact
``fractions.Fraction`` rounding for everything else.
"""
from __future__ import annotations

import array
import math
import pickle
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from bfloat16_dtype import bfloat16
from conftest import exact_f32, reference_round

BF16_INF = 0x7F80
BF16_MAX = 0x7F7F


# ---- an exact reference: round a rational to the bfloat16 grid --------------------------

def fraction_to_bits(q: Fraction) -> int:
    """Round the exact rational ``q`` to the nearest bfloat16, ties to even; return the bits.

    Subnormals share the quantum 2**-133 of the smallest binade; results at or past the
    halfway point above the largest finite become infinity.
    """
    q = Fraction(q)
    sign = 0x8000 if q < 0 else 0
    a = abs(q)
    if a == 0:
        return sign
    # exponent e with 2**e <= a < 2**(e+1)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, -126)
    quantum = Fraction(2) ** (e - 7)
    m_floor, rem = divmod(a, quantum)  # m_floor integer, rem in [0, quantum)
    m = int(m_floor)
    if rem * 2 > quantum or (rem * 2 == quantum and m % 2 == 1):
        m += 1
    # 128 <= m <= 256 for normals (256 carries into the next binade); m < 128: subnormal.
    bits = ((e + 127) << 7) + (m - 128)
    return sign | min(bits, BF16_INF)


def bits_to_fraction(bits: int) -> Fraction:
    """The exact value of a finite bfloat16 pattern, from the format definition."""
    sign = -1 if bits & 0x8000 else 1
    exp = (bits >> 7) & 0xFF
    man = bits & 0x7F
    assert exp != 0xFF
    if exp == 0:
        return sign * Fraction(man) * Fraction(2) ** -133
    return sign * Fraction(128 + man) * Fraction(2) ** (exp - 127 - 7)


def float64_reference_bits(d: np.ndarray) -> np.ndarray:
    """Vectorised float64 -> bfloat16 bits by integer arithmetic on the float64 encoding."""
    u = np.asarray(d, dtype=np.float64).view(np.uint64)
    sign = ((u >> np.uint64(48)) & np.uint64(0x8000)).astype(np.int64)
    biased = ((u >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64)
    frac = (u & np.uint64((1 << 52) - 1)).astype(np.int64)
    is_nan = (biased == 0x7FF) & (frac != 0)
    is_inf = (biased == 0x7FF) & (frac == 0)
    # significand M (53 bits) with value M * 2**(E - 52); float64 subnormals all round to 0.
    E = np.where(biased == 0, -1022, biased - 1023)
    M = np.where(biased == 0, frac, frac | (1 << 52))
    e = np.maximum(E, -126)
    shift = 45 + (e - E)  # value / quantum = M >> shift (plus remainder)
    shift = np.minimum(shift, 62)
    m = M >> shift
    rem = M - (m << shift)
    half = np.int64(1) << (shift - 1)
    up = (rem > half) | ((rem == half) & ((m & 1) == 1))
    m = m + up
    bits = np.where(m == 0, 0, ((e + 127) << 7) + (m - 128))
    bits = np.minimum(bits, BF16_INF)
    bits = np.where(is_inf, BF16_INF, bits)
    out = sign | bits
    out = np.where(is_nan, -1, out)  # NaN is checked separately
    return out


def bits_of(x) -> np.ndarray:
    return np.asarray(x).view(np.uint16)


def test_fraction_reference_sanity():
    """The references agree with facts from the spec, so they can be trusted below."""
    assert fraction_to_bits(Fraction(1)) == 0x3F80
    assert fraction_to_bits(Fraction(257)) == fraction_to_bits(Fraction(256)) == 0x4380
    assert bits_to_fraction(fraction_to_bits(Fraction(100000))) == 99840
    assert fraction_to_bits(Fraction(2) ** -133) == 0x0001
    assert fraction_to_bits(Fraction(2) ** -134) == 0  # tie, to even (zero)
    assert fraction_to_bits(Fraction(3, 2) * Fraction(2) ** -134) == 0x0001
    assert bits_to_fraction(BF16_MAX) == Fraction(255) * Fraction(2) ** 120
    assert float(bits_to_fraction(BF16_MAX)) == float(np.float32(3.3895314e38))
    assert fraction_to_bits(Fraction(511) * Fraction(2) ** 119) == BF16_INF
    assert fraction_to_bits(Fraction(511) * Fraction(2) ** 119 - 1) == BF16_MAX
    assert fraction_to_bits(Fraction(-3, 1)) == 0xC040
    vals = np.array([1.0, 2.0**-134, -3.0, 1e300, 1 + 2**-8 + 2**-30, 2.0**-140])
    assert list(float64_reference_bits(vals)) == [
        fraction_to_bits(Fraction(v)) for v in vals]


# ---- bfloat16 -> float32 / float64 and back: every pattern ---------------------------

def test_widen_to_float32_exact_all_patterns(all_bits, all_values):
    widened = all_values.astype(np.float32)
    np.testing.assert_array_equal(widened.view(np.uint32), exact_f32(all_bits).view(np.uint32))


def test_widen_to_float64_exact_all_patterns(all_bits, all_values):
    with np.errstate(invalid="ignore"):  # signalling NaNs raise "invalid", as float32's do
        wide = all_values.astype(np.float64)
        ref = exact_f32(all_bits).astype(np.float64)
    nan = np.isnan(ref)
    np.testing.assert_array_equal(wide[~nan], ref[~nan])
    assert np.isnan(wide[nan]).all()
    np.testing.assert_array_equal(np.signbit(wide), np.signbit(ref))


@pytest.mark.parametrize("via", [np.float32, np.float64])
def test_round_trip_all_patterns(all_bits, all_values, via):
    with np.errstate(invalid="ignore"):  # signalling NaNs, as for float32 -> float64
        back = bits_of(all_values.astype(via).astype(bfloat16))
    nan = (all_bits & 0x7FFF) > 0x7F80
    np.testing.assert_array_equal(back[~nan], all_bits[~nan])
    assert ((back[nan] & 0x7FFF) > 0x7F80).all(), "NaN must stay NaN"
    np.testing.assert_array_equal(back[nan] & 0x8000, all_bits[nan] & 0x8000)
    assert (back[nan] & 0x0040).all(), "NaN comes back quiet"
    if via is np.float32:
        # through float32 the payload survives, with the quiet bit forced
        np.testing.assert_array_equal(back[nan], all_bits[nan] | 0x0040)


def test_scalar_round_trip_all_patterns(all_bits):
    for b in all_bits[::7].tolist() + [0x8000, 0x7F80, 0xFF80, 0x7F7F, 0x0001]:
        v = exact_f32(np.array([b], np.uint16))[0]
        if np.isnan(v):
            continue
        assert bfloat16(float(v)).bits == b
        assert bfloat16(v).bits == b


# ---- float32 -> bfloat16 --------------------------------------------------------------

def test_float32_random_patterns_match_reference():
    """10**7 random float32 bit patterns (every class: normal, subnormal, inf, NaN)."""
    u = np.random.default_rng(20240601).integers(0, 2**32, 10**7, dtype=np.uint32)
    f = u.view(np.float32)
    with np.errstate(over="ignore"):
        got = bits_of(f.astype(bfloat16))
    np.testing.assert_array_equal(got, reference_round(f))


def test_float32_random_strided_matches_reference():
    """The strided (non-contiguous) path of the same cast."""
    u = np.random.default_rng(7).integers(0, 2**32, 3 * 10**5, dtype=np.uint32)
    f = u.view(np.float32)[::3]
    with np.errstate(over="ignore"):
        got = bits_of(f.astype(bfloat16))
    np.testing.assert_array_equal(got, reference_round(f))


# (float32 bits, expected bfloat16 bits, what it checks); expected values by hand from the spec.
F32_EDGES = [
    (0x3F808000, 0x3F80, "tie, even kept half stays"),
    (0x3F818000, 0x3F82, "tie, odd kept half rounds up"),
    (0xBF808000, 0xBF80, "negative tie to even"),
    (0xBF818000, 0xBF82, "negative tie rounds away"),
    (0x3F807FFF, 0x3F80, "just below half"),
    (0x3F808001, 0x3F81, "just above half"),
    (0x3F80FFFF, 0x3F81, "almost a full ulp"),
    (0x7F7F0000, 0x7F7F, "largest finite 0x7F7F"),
    (0x7F7F7FFF, 0x7F7F, "just below the overflow threshold"),
    (0x7F7F8000, 0x7F80, "overflow threshold 3.3961776e38: tie to even -> inf"),
    (0x7F7FFFFF, 0x7F80, "float32 max -> inf"),
    (0xFF7F8000, 0xFF80, "negative overflow threshold -> -inf"),
    (0xFF7F7FFF, 0xFF7F, "negative just below threshold"),
    (0x7F800000, 0x7F80, "inf"),
    (0xFF800000, 0xFF80, "-inf"),
    (0x00000000, 0x0000, "+0"),
    (0x80000000, 0x8000, "-0.0"),
    (0x00000001, 0x0000, "smallest float32 subnormal -> 0"),
    (0x80000001, 0x8000, "tiny negative -> -0"),
    (0x00008000, 0x0000, "half the smallest bf16 subnormal: tie to even 0"),
    (0x00008001, 0x0001, "above half -> smallest subnormal"),
    (0x00018000, 0x0002, "subnormal tie, odd -> up"),
    (0x00010000, 0x0001, "smallest bf16 subnormal 2**-133"),
    (0x007F8000, 0x0080, "largest subnormal rounds up into the normals"),
    (0x007FFFFF, 0x0080, "largest float32 subnormal -> smallest normal"),
    (0x00800000, 0x0080, "smallest normal 2**-126"),
]


@pytest.mark.parametrize("f32_bits,expected,why", F32_EDGES, ids=[e[2] for e in F32_EDGES])
def test_float32_edge_cases(f32_bits, expected, why):
    f = np.array([f32_bits], np.uint32).view(np.float32)
    assert reference_round(f)[0] == expected  # the two references agree
    with np.errstate(over="ignore"):
        assert bits_of(f.astype(bfloat16))[0] == expected
        assert bfloat16(f[0]).bits == expected


def test_overflow_threshold_decimal_figure():
    """The spec's decimal figures name the bit patterns used above."""
    assert np.float32(3.3961776e38).view(np.uint32) == 0x7F7F8000
    assert np.float32(3.3895314e38).view(np.uint32) == 0x7F7F0000


NAN_PAYLOADS = [0x7F800001, 0x7F80FFFF, 0xFF800001, 0x7FC00000, 0xFFC00000, 0x7F810000,
                0x7FBFFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 0x7FA00000, 0x7F800100]


@pytest.mark.parametrize("f32_bits", NAN_PAYLOADS, ids=hex)
def test_float32_nan_payloads_stay_quiet_nan(f32_bits):
    """Including payloads whose top 16 bits read as inf (0x7F80 / 0xFF80)."""
    f = np.array([f32_bits], np.uint32).view(np.float32)
    for got in (int(bits_of(f.astype(bfloat16))[0]), bfloat16(f[0]).bits):
        assert (got & 0x7FFF) > 0x7F80, hex(got)
        assert got & 0x0040, "quiet"
        assert (got & 0x8000) == ((f32_bits >> 16) & 0x8000), "sign kept"
        assert got == ((f32_bits >> 16) | 0x0040)


# ---- float64 -> bfloat16: one rounding ----------------------------------------------

def test_float64_single_rounding_example():
    d = 1 + 2**-8 + 2**-30
    assert float(np.float32(d)) == 1 + 2**-8  # float32 alone would land on the tie ...
    assert float(bfloat16(d)) == 1.0078125  # ... but one rounding goes up
    assert float(np.array([d]).astype(bfloat16)[0]) == 1.0078125
    assert float(np.float64(d).astype(bfloat16)) == 1.0078125
    assert float(bfloat16(-d)) == -1.0078125


def _midpoint_neighbourhood():
    """float64 values a few ulps around bfloat16 rounding midpoints (where double rounding bites)."""
    @st.composite
    def strategy(draw):
        bits = draw(st.integers(0, 0x7F7F))
        k = draw(st.integers(-4, 4))
        upper = Fraction(2) ** 128 if bits == BF16_MAX else bits_to_fraction(bits + 1)
        mid = (bits_to_fraction(bits) + upper) / 2
        d = float(mid)
        assert Fraction(d) == mid  # midpoints are exact in float64
        for _ in range(abs(k)):
            d = math.nextafter(d, math.inf if k > 0 else -math.inf)
        return -d if draw(st.booleans()) else d
    return strategy()


@settings(max_examples=600, deadline=None)
@given(st.one_of(st.floats(allow_nan=False),
                 st.floats(min_value=-4e38, max_value=4e38, allow_nan=False),
                 st.floats(min_value=-1e-37, max_value=1e-37),
                 _midpoint_neighbourhood()))
def test_float64_matches_exact_fraction_rounding(d):
    expected = BF16_INF | (0x8000 if d < 0 else 0) if math.isinf(d) else fraction_to_bits(
        Fraction(d))
    if d == 0:
        expected = 0x8000 if math.copysign(1, d) < 0 else 0
    with np.errstate(over="ignore"):
        assert bits_of(np.array([d]).astype(bfloat16))[0] == expected
    assert bfloat16(d).bits == expected
    assert bfloat16(np.float64(d)).bits == expected


def test_float64_random_patterns_match_integer_reference():
    """10**6 float64 values spread over (and past) the bfloat16 exponent range."""
    rng = np.random.default_rng(11)
    n = 10**6
    exp = rng.integers(1023 - 140, 1023 + 130, n, dtype=np.uint64)
    man = rng.integers(0, 2**52, n, dtype=np.uint64)
    sgn = rng.integers(0, 2, n, dtype=np.uint64) << np.uint64(63)
    d = (sgn | (exp << np.uint64(52)) | man).view(np.float64)
    d = np.concatenate([d, rng.integers(0, 2**64, n // 4, dtype=np.uint64).view(np.float64)])
    ref = float64_reference_bits(d)
    with np.errstate(over="ignore"):
        got = bits_of(d.astype(bfloat16)).astype(np.int64)
    nan = ref < 0
    np.testing.assert_array_equal(got[~nan], ref[~nan])
    assert ((got[nan] & 0x7FFF) > 0x7F80).all()
    np.testing.assert_array_equal(got[nan] & 0x8000, np.signbit(d[nan]) * 0x8000)


def test_float64_nan_keeps_sign():
    for d in (math.nan, -math.nan, np.float64(np.nan), -np.float64(np.nan)):
        for got in (bfloat16(d).bits, int(bits_of(np.array([d]).astype(bfloat16))[0])):
            assert (got & 0x7FFF) > 0x7F80
            assert bool(got & 0x8000) == (math.copysign(1, d) < 0)


def test_longdouble_single_rounding():
    if np.finfo(np.longdouble).nmant < 60:
        pytest.skip("longdouble is not wider than float64 here")
    v = np.longdouble(1) + np.longdouble(2) ** -8 + np.longdouble(2) ** -60
    assert Fraction(*v.as_integer_ratio()) == 1 + Fraction(1, 256) + Fraction(2) ** -60
    assert float(bfloat16(v)) == 1.0078125
    assert float(np.array([v]).astype(bfloat16)[0]) == 1.0078125
    w = np.longdouble(1) + np.longdouble(2) ** -8  # exact tie stays a tie -> even
    assert float(bfloat16(w)) == 1.0


# ---- integers -------------------------------------------------------------------------

def _int_near_midpoints(max_bits):
    @st.composite
    def strategy(draw):
        n = draw(st.integers(9, max_bits))
        odd = draw(st.integers(2**8, 2**9 - 1)) | 1  # (2j+1) * 2**(n-9) is a midpoint
        k = draw(st.integers(-3, 3))
        return odd * 2 ** (n - 9) + k
    return strategy()


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.integers(-2**63, 2**63 - 1), _int_near_midpoints(62),
                 _int_near_midpoints(62).map(lambda x: -x)))
def test_int64_matches_exact_rounding(i):
    expected = fraction_to_bits(Fraction(i))
    assert bits_of(np.array([i], np.int64).astype(bfloat16))[0] == expected
    assert bfloat16(np.int64(i)).bits == expected
    assert bfloat16(i).bits == expected


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.integers(0, 2**64 - 1), _int_near_midpoints(63)))
def test_uint64_matches_exact_rounding(i):
    expected = fraction_to_bits(Fraction(i))
    assert bits_of(np.array([i], np.uint64).astype(bfloat16))[0] == expected
    assert bfloat16(np.uint64(i)).bits == expected


def test_int64_uint64_extremes():
    cases = {np.int64: [-2**63, 2**63 - 1, -2**63 + 1, 2**62 + 2**54 - 1, 2**62 + 2**54,
                        2**62 + 2**54 + 1, -(2**62 + 2**54)],
             np.uint64: [2**64 - 1, 2**63, 2**63 + 2**55, 2**63 + 2**55 + 1, 2**63 + 3 * 2**55]}
    for t, values in cases.items():
        got = bits_of(np.array(values, t).astype(bfloat16))
        assert got.tolist() == [fraction_to_bits(Fraction(v)) for v in values]


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.integers(-2**200, 2**200), _int_near_midpoints(140),
                 st.integers(511 * 2**119 - 2**20, 511 * 2**119 + 2**20)))
def test_huge_python_ints_match_exact_rounding(i):
    assert bfloat16(i).bits == fraction_to_bits(Fraction(i))


class _HostileInt(int):
    """An int whose operators lie: a conversion must use the int's value, never these."""

    def __neg__(self):
        return 1e300

    def __abs__(self):
        return 5

    def __rshift__(self, other):
        return 0

    def __lshift__(self, other):
        return 0

    def __ne__(self, other):
        return False

    __hash__ = int.__hash__


@pytest.mark.parametrize("value", [3, -3, 2**70 + 2**40 + 1, -(2**70) - 2**62 - 1, 2**63, 2**64 + 1,
                                   511 * 2**119, -(2**200)])
def test_int_subclasses_convert_by_their_value(value):
    """bfloat16(x), setitem and an object array's cast of an int subclass wider than 64 bits
    took the subclass's shifts and negation (128.0 for 2**70, a ValueError, a crash)."""
    expected = fraction_to_bits(Fraction(value))
    x = _HostileInt(value)
    assert bfloat16(x).bits == expected
    a = np.zeros(2, bfloat16)
    a[1] = x
    assert bits_of(a)[1] == expected
    assert bits_of(np.array([x, 0], dtype=object).astype(bfloat16))[0] == expected
    assert bits_of(np.array([x], dtype=bfloat16))[0] == expected


_TEXT_BUFFERS = [
    (lambda t: bytearray(t), "bytearray"),
    (lambda t: memoryview(t), "memoryview"),
    (lambda t: memoryview(bytearray(t)).cast("c"), "memoryview of chars"),
    (lambda t: array.array("b", t), "array.array('b')"),
    (lambda t: pickle.PickleBuffer(t), "PickleBuffer (no sequence)"),
]


@pytest.mark.parametrize("make, name", _TEXT_BUFFERS, ids=[n for _, n in _TEXT_BUFFERS])
@pytest.mark.parametrize("text, expected", [
    ("1.5", 0x3FC0), (" -2_5 ", 0xC1C8), ("-inf", 0xFF80), ("1e-40", 0x0001),
    # one rounding of the decimal: through float64 it would be 1.0 (0x3F80)
    ("1.00390625000000001", 0x3F81),
])
def test_buffers_of_text_convert_like_float16(make, name, text, expected):
    """float() reads any buffer's bytes as text, and so do float16's item assignment, fill and
    object casts; bfloat16 refused them as sequences. The text is rounded once, as a str is."""
    for store in (_store_setitem, _store_fill, _store_object_cast):
        assert store(make(text.encode()), bfloat16) == expected, (store.__name__, name)
        # float16 takes the same objects (its value: through float64)
        assert store(make(text.encode()), np.float16) == np.float16(float(text))


def _store_setitem(value, dtype):
    a = np.zeros(2, dtype)
    a[1] = value
    return a[1:].view(np.uint16)[0] if dtype is bfloat16 else a[1]


def _store_fill(value, dtype):
    a = np.zeros(2, dtype)
    a.fill(value)
    return a[1:].view(np.uint16)[0] if dtype is bfloat16 else a[1]


def _store_object_cast(value, dtype):
    a = np.array([0, value], dtype=object).astype(dtype)
    return a[1:].view(np.uint16)[0] if dtype is bfloat16 else a[1]


@pytest.mark.parametrize("value", [bytearray(b"abc"), bytearray(b""), bytearray(b"1.5\x00"),
                                   array.array("d", [1.5]), memoryview(np.array([1.5])),
                                   memoryview(b"1.55")[::2]])
def test_buffers_that_are_no_number_are_sequences_like_float16(value):
    for dtype in (np.float16, bfloat16):
        with pytest.raises(ValueError, match="sequence"):
            _store_setitem(value, dtype)


def test_buffer_text_past_the_range_overflows_like_a_str():
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError, match="overflow"):
            _store_setitem(bytearray(b"1e39"), bfloat16)
        with pytest.raises(FloatingPointError, match="overflow"):
            _store_setitem("1e39", bfloat16)
        assert _store_setitem(bytearray(b"-inf"), bfloat16) == 0xFF80  # already infinite


def test_python_int_overflow_threshold():
    threshold = 511 * 2**119  # halfway between 0x7F7F and 2**128
    assert bfloat16(threshold - 1).bits == BF16_MAX
    assert bfloat16(threshold).bits == BF16_INF
    assert bfloat16(-threshold).bits == 0xFF80
    assert bfloat16(-(threshold - 1)).bits == 0x8000 | BF16_MAX
    assert bfloat16(2**1000).bits == BF16_INF and bfloat16(-(2**1000)).bits == 0xFF80


def test_small_ints_exhaustive():
    for t in (np.int8, np.uint8, np.int16, np.uint16):
        info = np.iinfo(t)
        v = np.arange(info.min, info.max + 1, dtype=np.int64).astype(t)
        ref = reference_round(v.astype(np.float32))  # exact in float32, so the reference is exact
        np.testing.assert_array_equal(bits_of(v.astype(bfloat16)), ref)


def test_int32_random_match_exact_rounding():
    rng = np.random.default_rng(5)
    for t in (np.int32, np.uint32):
        info = np.iinfo(t)
        v = rng.integers(info.min, info.max, 3000, dtype=np.int64, endpoint=True).astype(t)
        got = bits_of(v.astype(bfloat16)).tolist()
        assert got == [fraction_to_bits(Fraction(int(x))) for x in v]


# ---- overflow reporting -------------------------------------------------------------

@pytest.mark.parametrize("src", [np.float32, np.float64, np.longdouble])
def test_overflow_warns_by_default(src):
    x = np.array([1.0, 3.3961776e38, 2.5], dtype=src)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning, match="overflow"):
            x.astype(bfloat16)
    with pytest.warns(RuntimeWarning, match="overflow"):
        y = x.astype(bfloat16)
    assert bits_of(y).tolist() == [0x3F80, BF16_INF, 0x4020]


@pytest.mark.parametrize("src", [np.float32, np.float64, np.longdouble])
def test_overflow_raises_under_errstate(src):
    x = np.array([-1e39 if src is not np.float32 else -3.4e38], dtype=src)
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError, match="overflow"):
            x.astype(bfloat16)


@pytest.mark.parametrize("src", [np.float32, np.float64])
def test_no_spurious_overflow(src):
    """inf, NaN and values just below the threshold are not overflows."""
    just_below = np.array([0x7F7F7FFF], np.uint32).view(np.float32)[0]
    x = np.array([np.inf, -np.inf, np.nan, just_below, -just_below, 0.0], dtype=src)
    with np.errstate(all="raise"):
        y = x.astype(bfloat16)
    assert bits_of(y)[:2].tolist() == [0x7F80, 0xFF80]
    assert bits_of(y)[3:5].tolist() == [BF16_MAX, 0x8000 | BF16_MAX]
