"""Casts between bfloat16 and every numpy type, their safety levels, views and memory layouts."""
from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest
from numpy.lib import NumpyVersion

from bfloat16_dtype import bfloat16
from conftest import X86_64, exact_f32, reference_round
from test_conversions import fraction_to_bits

BF = np.dtype(bfloat16)
INT_TYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
FLOAT_TYPES = [np.float16, np.float32, np.float64, np.longdouble]
COMPLEX_TYPES = [np.complex64, np.complex128, np.clongdouble]


def bits_of(x):
    return np.asarray(x).view(np.uint16)


def _nan_mask(bits):
    return (bits & 0x7FFF) > 0x7F80


# ---- into bfloat16 ----------------------------------------------------------------------

def test_bool_to_bf16():
    assert bits_of(np.array([True, False, True]).astype(bfloat16)).tolist() == [0x3F80, 0, 0x3F80]


@pytest.mark.parametrize("t", INT_TYPES, ids=lambda t: t.__name__)
def test_ints_to_bf16(t):
    info = np.iinfo(t)
    rng = np.random.default_rng(1)
    v = rng.integers(info.min, info.max, 2000, dtype=t, endpoint=True)
    edges = [e for e in (info.min, info.max, 0, 1, 255, 256, 257) if info.min <= e <= info.max]
    v = np.concatenate([v, np.array(edges, dtype=t)])
    expected = [fraction_to_bits(Fraction(int(x))) for x in v]
    assert bits_of(v.astype(bfloat16)).tolist() == expected


def test_float16_to_bf16_all_patterns():
    h = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    ref = reference_round(h.astype(np.float32))  # numpy widens float16 exactly
    got = bits_of(h.astype(bfloat16))
    nan = np.isnan(h)
    np.testing.assert_array_equal(got[~nan], ref[~nan])
    assert _nan_mask(got[nan]).all()
    np.testing.assert_array_equal(got[nan] & 0x8000, np.signbit(h[nan]) * 0x8000)


@pytest.mark.parametrize("t", COMPLEX_TYPES, ids=lambda t: t.__name__)
def test_complex_to_bf16_warns_and_keeps_real(t):
    x = np.array([1.5 + 2j, -0.25 - 1j, 1 + 2**-8 + 2**-30 + 0j], dtype=t)
    with pytest.warns(np.exceptions.ComplexWarning, match="imaginary"):
        y = x.astype(bfloat16)
    expected = [fraction_to_bits(Fraction(*np.real(v).as_integer_ratio())) for v in x]
    assert bits_of(y).tolist() == expected


def test_complex_overflow_warns():
    with pytest.warns(RuntimeWarning, match="overflow"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            y = np.array([1e39 + 0j]).astype(bfloat16)
    assert bits_of(y).tolist() == [0x7F80]


def _real_parts_to_bf16(x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            return bits_of(x.astype(bfloat16))


@pytest.mark.parametrize("t", COMPLEX_TYPES, ids=lambda t: t.__name__)
def test_complex_all_bf16_values_as_real_parts(all_bits, t):
    """Every bfloat16 value as the real part (random imaginary parts) comes back bit for bit;
    NaNs stay NaN with their sign."""
    x = np.empty(all_bits.size, dtype=t)
    with np.errstate(invalid="ignore"):  # signalling NaNs widen to quiet ones
        x.real = exact_f32(all_bits)
    x.imag = np.random.default_rng(2).standard_normal(all_bits.size)
    got = _real_parts_to_bf16(x)
    nan = _nan_mask(all_bits)
    np.testing.assert_array_equal(got[~nan], all_bits[~nan])
    assert _nan_mask(got[nan]).all()
    np.testing.assert_array_equal(got[nan] & 0x8000, all_bits[nan] & 0x8000)


def test_complex64_random_real_parts_round_once():
    bits = np.random.default_rng(3).integers(0, 2**32, 200_000, dtype=np.uint32)
    re = bits.view(np.float32)
    x = np.empty(re.size, np.complex64)
    x.real = re  # float32 -> float32: the bits unchanged, signalling NaNs included
    x.imag = 3
    got = _real_parts_to_bf16(x)
    ref = reference_round(re)
    nan = np.isnan(re)
    np.testing.assert_array_equal(got[~nan], ref[~nan])
    assert _nan_mask(got[nan]).all()


@pytest.mark.parametrize("t", [np.complex128, np.clongdouble], ids=lambda t: t.__name__)
def test_complex_random_real_parts_round_once(t):
    """Real parts near bfloat16 halfway points (where rounding twice, through float32, goes
    wrong) and random ones, against exact rational rounding."""
    rng = np.random.default_rng(4)
    mid = exact_f32(rng.integers(0, 0x7F7F, 1500, dtype=np.uint32) | 0x8000 * rng.integers(
        0, 2, 1500, dtype=np.uint32)).astype(np.float64)
    halfway = mid + np.spacing(mid.astype(np.float32)) * 2**15 * rng.choice([1, -1], 1500)
    nudged = halfway * (1 + rng.choice([-1, 0, 1], 1500) * 2.0**-50)
    wide = rng.standard_normal(1500) * 10.0 ** rng.integers(-45, 39, 1500)
    re = np.concatenate([nudged, wide, [1 + 2**-8 + 2**-60, 2**-133, 2**-134 * 1.5]])
    x = np.empty(re.size, dtype=t)
    x.real = re
    x.imag = -7.0
    got = _real_parts_to_bf16(x)
    expected = [fraction_to_bits(Fraction(*np.real(v).as_integer_ratio())) for v in x]
    assert got.tolist() == expected


def _complex_layouts(t):
    """(name, complex input array) pairs holding the same values in other memory layouts."""
    base = (np.linspace(-300, 300, 257) + 1j * np.linspace(5, -5, 257)).astype(t)
    swapped = base.astype(base.dtype.newbyteorder())
    raw = np.zeros(base.nbytes + 1, np.uint8)
    unaligned = raw[1:].view(t)
    unaligned[...] = base
    padded = np.zeros((257, 3), t)
    padded[:, 1] = base
    return base, [("byteswapped", swapped), ("unaligned", unaligned),
                  ("strided", padded[:, 1]), ("reversed", base[::-1].copy()[::-1])]


@pytest.mark.parametrize("t", COMPLEX_TYPES, ids=lambda t: t.__name__)
def test_complex_cast_in_every_layout(t):
    base, layouts = _complex_layouts(t)
    assert not layouts[1][1].flags.aligned
    want = _real_parts_to_bf16(base.real.copy())  # the real parts alone: no complex cast
    for name, x in layouts:
        np.testing.assert_array_equal(_real_parts_to_bf16(x), want, err_msg=name)
    out = np.zeros((257, 2), bfloat16)[:, 1]
    with pytest.warns(np.exceptions.ComplexWarning):
        np.copyto(out, base, casting="unsafe")
    np.testing.assert_array_equal(bits_of(out), want)
    out_swapped = np.zeros(257, BF.newbyteorder())
    with pytest.warns(np.exceptions.ComplexWarning):
        np.copyto(out_swapped, base, casting="unsafe")
    np.testing.assert_array_equal(bits_of(out_swapped.astype(BF)), want)


@pytest.mark.parametrize("t", COMPLEX_TYPES, ids=lambda t: t.__name__)
def test_complex_cast_safety_like_float16(t):
    for k in ("no", "equiv", "safe", "same_kind", "unsafe"):
        assert np.can_cast(t, BF, k) == np.can_cast(t, np.float16, k), k
        assert np.can_cast(BF, t, k) == np.can_cast(np.float16, t, k), k
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # deciding safety issues no ComplexWarning
        np.can_cast(t, BF, "unsafe")
        np.result_type(t, BF)
    with pytest.raises(TypeError, match="same_kind"):
        np.zeros(1, t).astype(BF, casting="same_kind")
    with pytest.raises(TypeError):
        np.zeros(1, t).astype(np.float16, casting="same_kind")


def test_complex_warning_like_float16():
    """One warning per cast, with float16's category and text; bfloat16 -> complex warns not."""
    x = np.array([1 + 2j, 3 - 4j])
    caught = {}
    for target in (np.float16, BF):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            x.astype(target)
        caught[target] = [(type(m.message), str(m.message)) for m in w]
    assert caught[BF] == caught[np.float16]
    assert caught[BF][0][0] is np.exceptions.ComplexWarning
    assert len(caught[BF]) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for t in COMPLEX_TYPES:
            assert np.array([1.5, -2], bfloat16).astype(t).tolist() == [1.5, -2]


@pytest.mark.parametrize("kind", ["U", "S"])
def test_text_to_bf16_parses_like_float(kind):
    """Strings parse as float() does (to float64), then round once: float16's behaviour."""
    texts = ["1.5", " -2e3 ", "nan", "-inf", "0.1", "1e-40", "3.3961776e38", "1_0"]
    arr = np.array(texts if kind == "U" else [t.encode() for t in texts], dtype=kind)
    with np.errstate(over="ignore"):
        got = bits_of(arr.astype(bfloat16))
    for g, t in zip(got.tolist(), texts):
        f = float(t)
        if f != f:
            assert (g & 0x7FFF) > 0x7F80 and bool(g & 0x8000) == t.startswith("-")
        elif abs(f) == float("inf"):
            assert g == (0xFF80 if f < 0 else 0x7F80)
        else:
            assert g == fraction_to_bits(Fraction(f)), t


@pytest.mark.parametrize("kind", ["U", "S"])
@pytest.mark.parametrize("bad", ["abc", "1.5x", "--1"])
def test_bad_text_names_the_text(kind, bad):
    arr = np.array(["1.0", bad] if kind == "U" else [b"1.0", bad.encode()], dtype=kind)
    with pytest.raises(ValueError, match=bad):
        arr.astype(bfloat16)


def test_object_to_bf16():
    objs = np.array([1.5, 2**70, np.float32(0.1), "2.5", True, np.int8(-3), Fraction(1, 3)],
                    dtype=object)
    got = bits_of(objs.astype(bfloat16)).tolist()
    expected = [fraction_to_bits(Fraction(1.5)), fraction_to_bits(Fraction(2**70)),
                reference_round(np.float32(0.1)).item(), fraction_to_bits(Fraction(2.5)),
                0x3F80, fraction_to_bits(Fraction(-3)), fraction_to_bits(Fraction(1, 3))]
    assert got == expected


def test_object_none_gives_nan_like_float16():
    objs = np.array([1.5, None], dtype=object)
    assert np.isnan(objs.astype(np.float16)[1])  # the behaviour mirrored
    got = objs.astype(bfloat16)
    assert got[0] == 1.5 and np.isnan(got.astype(np.float32)[1])


@pytest.mark.parametrize("bad,exc,text", [("xyz", ValueError, "xyz"),
                                          ([1], ValueError, "with a sequence.*list")])
def test_object_to_bf16_bad_names_value(bad, exc, text):
    arr = np.empty(2, dtype=object)
    arr[0], arr[1] = 1.0, bad
    with pytest.raises(exc, match=text):
        arr.astype(bfloat16)


# ---- out of bfloat16 ------------------------------------------------------------------

@pytest.mark.parametrize("t", [np.float32, np.float64, np.longdouble] + COMPLEX_TYPES,
                         ids=lambda t: t.__name__)
def test_bf16_to_wider_exact_all_patterns(all_bits, all_values, t):
    with np.errstate(invalid="ignore"):
        got = all_values.astype(t)
        ref = exact_f32(all_bits).astype(t)
    nan = np.isnan(ref)
    np.testing.assert_array_equal(got[~nan], ref[~nan])
    assert np.isnan(got[nan]).all()
    np.testing.assert_array_equal(np.signbit(np.real(got)), np.signbit(np.real(ref)))
    if np.iscomplexobj(got):
        assert (np.imag(got) == 0).all()


def test_bf16_to_float16_all_patterns_like_numpy(all_bits, all_values):
    """Reference: numpy's own float32 -> float16 of the exact value (one rounding)."""
    with np.errstate(over="ignore", invalid="ignore"):
        got = all_values.astype(np.float16)
        ref = exact_f32(all_bits).astype(np.float16)
    nan = np.isnan(ref)
    np.testing.assert_array_equal(got.view(np.uint16)[~nan], ref.view(np.uint16)[~nan])
    assert np.isnan(got[nan]).all()
    np.testing.assert_array_equal(np.signbit(got), np.signbit(ref))


def test_bf16_to_float16_overflow_warns_like_float32():
    x = np.array([1e5], bfloat16)
    with pytest.warns(RuntimeWarning, match="overflow"):
        x.astype(np.float16)
    with pytest.warns(RuntimeWarning, match="overflow"):
        np.array([1e5], np.float32).astype(np.float16)  # the behaviour we copy


def test_bf16_to_bool_all_patterns(all_bits, all_values):
    np.testing.assert_array_equal(all_values.astype(bool), (all_bits & 0x7FFF) != 0)


@pytest.mark.parametrize("t", INT_TYPES, ids=lambda t: t.__name__)
def test_bf16_to_ints_truncate_in_range(all_bits, all_values, t):
    info = np.iinfo(t)
    with np.errstate(invalid="ignore"):  # signalling NaNs, as numpy's float32 -> float64
        f = exact_f32(all_bits).astype(np.float64)
        ok = np.isfinite(f) & (f > info.min - 1) & (f < info.max + 1)
    got = all_values[ok].astype(t)
    assert got.tolist() == [int(x) for x in f[ok].tolist()]


@pytest.mark.parametrize("t", INT_TYPES, ids=lambda t: t.__name__)
@pytest.mark.parametrize("special", ["nan", "inf"])
def test_bf16_nan_inf_to_int_warns_like_float16(t, special):
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        np.array([1.0, float(special)], bfloat16).astype(t)
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        np.array([1.0, float(special)], np.float16).astype(t)
    assert [(w.category, str(w.message)) for w in ours] == \
        [(w.category, str(w.message)) for w in theirs]
    if special == "nan":
        assert any("invalid" in str(w.message) for w in ours)


# Values both formats hold exactly; float16's own cast of them is the reference (what the CPU's
# conversion gives for NaN, inf and values outside the target's conversion range).
_SHARED_VALUES = [np.nan, np.inf, -np.inf, 1280, -1280, 49152, -49152, 300, -300, -1.5, 2.75,
                  65280, 200, -129, 40960, 0.0, -0.0]


@pytest.mark.skipif(not X86_64,
                    reason="float16's out-of-range casts give what the x86 conversion gives")
@pytest.mark.parametrize("t", INT_TYPES, ids=lambda t: t.__name__)
def test_nan_inf_and_out_of_range_to_int_like_float16(t):
    with np.errstate(invalid="ignore"):
        want = np.array(_SHARED_VALUES, np.float16).astype(t)
        got = np.array(_SHARED_VALUES, bfloat16).astype(t)
        # beyond float16's range: float32's cast of the same (exact) values
        big = np.array([2.0**33, -2.0**33, 3 * 2.0**30, -3 * 2.0**30, 2.0**63, -2.0**63,
                        2.0**64, 2.0**70, -2.0**70], np.float32)
        want_big = big.astype(t)
        got_big = big.astype(bfloat16).astype(t)
    assert got.tolist() == want.tolist()
    if t not in (np.uint32, np.uint64):  # float32's SIMD casts to these differ from float16's
        assert got_big.tolist() == want_big.tolist()


@pytest.mark.parametrize("t", [np.int64, np.uint32, np.int32, np.uint64])
def test_values_from_2_63_to_2_64_to_ints_like_float32(t):
    """[2^63, 2^64) fits uint64 alone: int64 gives INT64_MIN and uint32 0 (INT64_MIN's low
    bits), each with "invalid value", as float32's scalar cast of the same exact values does
    (they once wrapped silently); uint64 converts exactly."""
    bits = np.arange(0x5F00, 0x5F80, dtype=np.uint16)        # [2^63, 2^64)
    x = bits.view(bfloat16)
    exact = [int(v) for v in exact_f32(bits).astype(np.float64)]
    if t is np.uint64:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert x.astype(t).tolist() == exact
        return
    want = {np.int64: -2**63, np.int32: -2**31, np.uint32: 0}[t]
    with pytest.warns(RuntimeWarning, match="invalid value"):
        got = x.astype(t)
    assert got.tolist() == [want] * len(exact)
    for v in x[::16]:  # the scalar cast of the same values, element by element
        with pytest.warns(RuntimeWarning, match="invalid value"):
            assert np.array([v], bfloat16).astype(t)[0] == want


# ---- datetime64 / timedelta64 ------------------------------------------------------------

@pytest.mark.parametrize("unit", ["M8[D]", "m8[s]", ">m8[ms]", "m8[ns]", "M8"])
def test_datetimes_to_bf16_give_their_count_like_float16(unit):
    """float16 casts a datetime64/timedelta64 array as its int64 count of units (NaT is the
    int64 minimum); bfloat16 had no such cast (TypeError from astype, np.full, setitem)."""
    counts = np.array([0, 3, -7, 18262, 2**40 + 2**31, -(2**62), np.iinfo(np.int64).min])
    src = counts.astype(np.int64).view(np.dtype(unit).newbyteorder("=")).astype(unit)
    expected = [fraction_to_bits(Fraction(int(c))) for c in counts]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bits_of(src.astype(bfloat16)).tolist() == expected
        assert bits_of(src[::-2].astype(bfloat16)).tolist() == expected[::-2]
        a = np.zeros(len(counts), bfloat16)
        a[:] = src
        assert bits_of(a).tolist() == expected
    with np.errstate(over="ignore"):  # float16 overflows on the larger counts
        assert src.astype(np.float16)[1] == 3  # the reference takes the same cast
    one = src[1:2].reshape(())
    assert bits_of(np.full(2, one[()], dtype=bfloat16)).tolist() == [expected[1]] * 2
    assert bits_of(one.astype(bfloat16)).tolist() == expected[1]


@pytest.mark.parametrize("unit", ["m8[s]", "M8[D]", ">m8[us]", "m8"])
def test_bf16_to_datetimes_truncate_like_float16(all_bits, unit):
    """bfloat16 -> datetime64/timedelta64: the value truncated to an int64 count of units; NaN
    NaT, inf and values out of int64's range NaT with "invalid value", as float16's cast."""
    x = all_bits.view(bfloat16)
    with np.errstate(invalid="ignore"):
        got = x.astype(unit)
        values = exact_f32(all_bits).astype(np.float64)
        nat = ~np.isfinite(values) | (np.abs(values) >= 2.0**63)
    assert got.dtype == np.dtype(unit)
    ints = got.astype(got.dtype.newbyteorder("=")).view(np.int64)
    assert (ints[nat] == np.iinfo(np.int64).min).all()
    np.testing.assert_array_equal(ints[~nat], np.trunc(values[~nat]).astype(np.int64))
    for t in (bfloat16, np.float16, np.float32):  # each warns the same (float16 adds overflow)
        with pytest.warns(RuntimeWarning, match="invalid value"):
            np.array([-np.inf], t).astype(unit)
        with pytest.warns(RuntimeWarning, match="invalid value"):
            np.array([1e30], t).astype(unit)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            np.array([np.nan, 2.5], t).astype(unit)  # NaN is NaT, no "invalid"


@pytest.mark.parametrize("unit", ["M8[D]", "m8[s]"])
def test_datetime_casts_are_unsafe_like_float16(unit):
    for casting in ("safe", "same_kind", "unsafe"):
        assert np.can_cast(unit, BF, casting) == np.can_cast(unit, np.float16, casting)
        assert np.can_cast(BF, unit, casting) == np.can_cast(np.float16, unit, casting)
    assert np.can_cast(unit, BF, "unsafe") and not np.can_cast(unit, BF, "same_kind")


@pytest.mark.parametrize("size", [1, 2, 3, 4, 8])
def test_to_void_gives_the_bytes_like_float16(all_bits, size):
    """astype('V<n>') writes each value's bytes as they lie in memory, cut or padded with
    zeros (float16's rule); byte-swapped and strided sources give the native bytes."""
    h = np.array([1.5, -2.0, 3.0], np.float16)
    pad = bytes(max(size - 2, 0))
    assert [bytes(v) for v in h.astype(f"V{size}")] == [bytes(b)[:size] + pad for b in h]
    x = all_bits.view(bfloat16)
    want = [b[:size] + pad for b in (np.uint16(v).tobytes() for v in all_bits)]
    got = x.astype(f"V{size}")
    assert got.dtype == np.dtype(f"V{size}")
    assert [bytes(v) for v in got] == want
    assert [bytes(v) for v in x[::-3].astype(f"V{size}")] == want[::-3]
    swapped = x.astype(BF.newbyteorder())
    assert [bytes(v) for v in swapped[:4096].astype(f"V{size}")] == want[:4096]


def test_to_unsized_void_takes_two_bytes_and_void_cannot_come_back():
    x = np.array([1.5, -2.0], bfloat16)
    assert x.astype("V").dtype == np.array([1.5], np.float16).astype("V").dtype == np.dtype("V2")
    assert x.astype("V").tobytes() == x.tobytes()
    v = np.empty(2, "V2")
    v[...] = x
    assert v.tobytes() == x.tobytes()
    for casting in ("safe", "same_kind", "unsafe"):
        assert np.can_cast(BF, "V2", casting) == np.can_cast(np.float16, "V2", casting)
    with pytest.raises(ValueError):          # float16 refuses too (a sequence error)
        np.array([b"\x00\x3f"], "V2").astype(bfloat16)


def test_bf16_to_object_gives_scalars(all_bits, all_values):
    objs = all_values.astype(object)
    assert objs.dtype == object
    assert all(type(o) is bfloat16 for o in objs[::97])
    np.testing.assert_array_equal([o.bits for o in objs], all_bits)
    back = objs.astype(bfloat16)
    np.testing.assert_array_equal(bits_of(back), all_bits)


def _fewest_digits(bits: int) -> int:
    """Independent reference: the fewest significant digits of a decimal that rounds (exactly,
    by rational arithmetic) back to the finite bfloat16 `bits`."""
    v = float((np.array([bits], np.uint32) << 16).view(np.float32)[0])
    for p in range(1, 10):
        m, e = f"{v:.{p - 1}e}".split("e")
        mant = int(m.replace(".", "").replace("-", ""))
        for cand in (mant - 1, mant, mant + 1):  # power-of-2 gaps are lopsided
            q = Fraction(cand) * Fraction(10) ** (int(e) - (p - 1))
            if fraction_to_bits(-q if v < 0 else q) == bits:
                return p
    raise AssertionError(bits)


def _significant_digits(text: str) -> int:
    mant = text.lstrip("-").split("e")[0].replace(".", "")
    return len(mant.lstrip("0").rstrip("0")) or 1


def test_bf16_to_str_all_patterns_shortest_round_trip(all_bits, all_values):
    """astype(str): every finite value's text is a decimal that rounds back (exactly) to the
    same bits, with the fewest significant digits that do; NaN/inf read 'nan'/'inf'."""
    s = all_values.astype(str)
    assert s.dtype == np.dtype("U32")  # as NumPy sizes float16's
    texts = s.tolist()
    f = exact_f32(all_bits)
    for b in range(65536):
        if np.isfinite(f[b]):
            sign = 0x8000 if texts[b].startswith("-") else 0
            assert fraction_to_bits(abs(Fraction(texts[b]))) | sign == b, (b, texts[b])
        elif np.isnan(f[b]):
            assert texts[b] == "nan"
        else:
            assert texts[b] == ("-inf" if f[b] < 0 else "inf")
    for b in range(1, 65536, 101):  # digit counts against the brute-force reference
        if np.isfinite(f[b]):
            assert _significant_digits(texts[b]) == _fewest_digits(b), (b, texts[b])
    np.testing.assert_array_equal(all_values.astype("S"), s.astype("S"))


def test_float64_nan_payloads_like_float32_path():
    """A float64 (and longdouble) NaN becomes a quiet NaN with its sign and the top 7 payload
    bits, as through float32 (NumPy's float16 keeps its payload's top bits too), at every length
    and stride (each tier's kernel: test_kernels_convert.py); every bfloat16 NaN survives a
    float64 round trip, quieted (a signalling one warns "invalid" on the way out, as float32's)."""
    rng = np.random.default_rng(11)
    n = 1000
    pay = rng.integers(1, 2**51, n, dtype=np.uint64) | (rng.integers(0, 2, n, dtype=np.uint64) << np.uint64(51))
    sign = rng.integers(0, 2, n, dtype=np.uint64) << np.uint64(63)
    u = np.uint64(0x7FF0000000000000) | pay | sign
    want = ((sign >> np.uint64(48)) | np.uint64(0x7FC0) | ((u >> np.uint64(45)) & np.uint64(0x7F))).astype(np.uint16)
    d = u.view(np.float64)
    with np.errstate(invalid="ignore"):
        for m in (1, 7, 16, 33, n):
            np.testing.assert_array_equal(d[:m].astype(BF).view(np.uint16), want[:m])
        np.testing.assert_array_equal(d[::3].astype(BF).view(np.uint16), want[::3])
        np.testing.assert_array_equal(d.astype(np.float32).astype(BF).view(np.uint16), want)
        np.testing.assert_array_equal(d.astype(np.longdouble).astype(BF).view(np.uint16), want)
        nans = np.arange(65536, dtype=np.uint32).astype(np.uint16)
        nans = nans[((nans & 0x7F80) == 0x7F80) & ((nans & 0x7F) != 0)]
        quiet = nans | 0x0040
        back = nans.view(BF).astype(np.float64).astype(BF).view(np.uint16)
        np.testing.assert_array_equal(back, quiet)
    snan32 = np.array([0x7F810000], np.uint32).view(np.float32)
    for x in (snan32, np.array([0x7F81], np.uint16).view(BF)):   # float32's behaviour, and ours
        with pytest.warns(RuntimeWarning, match="invalid value"):
            x.astype(np.float64)


def test_stringdtype_casts_like_float16(all_bits, all_values):
    """NumPy's StringDType both ways: every pattern's text rounds back exactly to its bits (NaN
    reads 'nan'); casting levels, missing values, bad text and overflow as for float16."""
    S = np.dtypes.StringDType
    texts = all_values.astype(S())
    assert texts.dtype == S()
    f = exact_f32(all_bits)
    for b, t in zip(range(65536), texts.tolist()):
        if np.isfinite(f[b]):
            sign = 0x8000 if t.startswith("-") else 0
            assert fraction_to_bits(abs(Fraction(t))) | sign == b, (b, t)
        else:
            assert t == ("nan" if np.isnan(f[b]) else "-inf" if f[b] < 0 else "inf"), (b, t)
    back = texts.astype(BF)
    finite = np.isfinite(f)
    np.testing.assert_array_equal(back.view(np.uint16)[finite], all_bits[finite])
    assert np.isnan(back[~np.isfinite(f) & np.isnan(f)].astype(np.float32)).all()
    for na in (None, np.nan):
        assert np.can_cast(BF, S(na_object=na)) == np.can_cast(np.float16, S(na_object=na)) is True
    assert np.can_cast(S(), BF, "same_kind") == np.can_cast(S(), np.float16, "same_kind") is False
    got = np.array([" 2.5 ", "1_000", "-inf", "0.1"], dtype=S()).astype(BF)
    assert got.astype(np.float64).tolist() == [2.5, 1000.0, -np.inf, 0.10009765625]
    assert np.array(got[::-2], dtype=S()).tolist() == ["0.1", "1e+03"]      # a strided source
    for t in (np.float16, BF):
        with pytest.raises(ValueError, match="missing data"):
            np.array(["1", None], dtype=S(na_object=None)).astype(t)
        with pytest.raises(ValueError, match="could not convert string to"):
            np.array(["abc"], dtype=S()).astype(t)
    with pytest.warns(RuntimeWarning, match="overflow encountered in cast"):
        assert np.isinf(np.array(["1e39"], dtype=S()).astype(BF).astype(np.float32)).all()


def test_stringdtype_without_coercion_takes_bfloat16_scalars():
    """StringDType(coerce=False) refuses NumPy's own scalars (they are types it knows, and its
    setitem refuses non-strings) but takes a bfloat16 scalar: NumPy reads it as a bfloat16
    array and casts, and a cast does not see `coerce` (an array's astype converts float16 too).
    README, "Casts"."""
    S = np.dtypes.StringDType(coerce=False)
    with pytest.raises(ValueError, match="coercion"):
        np.array([np.float16(1.5)], dtype=S)
    assert np.array([bfloat16(1.5)], dtype=S).tolist() == ["1.5"]
    assert np.array([1.5], np.float16).astype(S).tolist() == ["1.5"]
    assert np.array([1.5], BF).astype(S).tolist() == ["1.5"]


@pytest.mark.parametrize("target", ["U3", "S3", "U1", "U40", ">U5"])
def test_bf16_to_narrow_text_truncates_like_float16(target):
    values = [0.5, -1.5, 0.25, 1e30, -np.inf]
    x = np.array(values, bfloat16)
    full = x.astype(str).tolist()
    want = [t[: np.dtype(target).itemsize // (4 if "U" in target else 1)] for t in full]
    got = x.astype(target)
    assert got.dtype == np.dtype(target)
    assert [v if isinstance(v, str) else v.decode() for v in got.tolist()] == want
    f16 = np.array([0.5, -1.5, 0.25], np.float16).astype(target).tolist()
    assert got.tolist()[:3] == f16


def test_bf16_to_text_casting_levels_like_float16():
    for t in ("U", "U32", "S32", "U40"):
        assert np.can_cast(BF, t, "safe") == np.can_cast(np.float16, t, "safe"), t
    for t in ("U3", "S3"):
        assert np.can_cast(BF, t, "same_kind") == np.can_cast(np.float16, t, "same_kind"), t
        assert np.can_cast(BF, t, "safe") == np.can_cast(np.float16, t, "safe"), t
    x = np.array([1.5, -0.1], bfloat16)
    assert x.astype(str).tolist() == ["1.5", "-0.1"]
    assert x.astype(x.dtype.newbyteorder()).astype(str).tolist() == ["1.5", "-0.1"]
    assert np.array(x[::-1], dtype=str).tolist() == ["-0.1", "1.5"]


# ---- safety levels --------------------------------------------------------------------

SAFE_INTO = [np.bool_, np.int8, np.uint8]
SAFE_FROM = [np.float32, np.float64, np.longdouble] + COMPLEX_TYPES


@pytest.mark.parametrize("t", [np.bool_] + INT_TYPES + FLOAT_TYPES + COMPLEX_TYPES,
                         ids=lambda t: t.__name__)
def test_can_cast_table(t):
    into_safe = t in SAFE_INTO
    into_same_kind = into_safe or np.issubdtype(t, np.integer) or t in FLOAT_TYPES
    from_safe = t in SAFE_FROM
    from_same_kind = from_safe or t is np.float16
    assert np.can_cast(t, BF, "safe") == into_safe
    assert np.can_cast(t, BF, "same_kind") == into_same_kind
    assert np.can_cast(t, BF, "unsafe")
    assert np.can_cast(BF, t, "safe") == from_safe
    assert np.can_cast(BF, t, "same_kind") == from_same_kind
    assert np.can_cast(BF, t, "unsafe")
    assert not np.can_cast(t, BF, "equiv") and not np.can_cast(BF, t, "equiv")


def test_can_cast_float16_pair_matches_spec():
    """bf16 <-> f16: same_kind both ways, safe neither way (each loses range or precision)."""
    for a, b in ((BF, np.float16), (np.float16, BF)):
        assert np.can_cast(a, b, "same_kind") and not np.can_cast(a, b, "safe")


def test_can_cast_self():
    assert np.can_cast(BF, BF, "no") and np.can_cast(BF, BF, "equiv")


# ---- views, byte order, layouts ---------------------------------------------------------

def test_views_round_trip(all_bits):
    x = all_bits.view(bfloat16)
    assert x.dtype == BF and x.view(np.uint16) is not None
    np.testing.assert_array_equal(x.view(np.uint16), all_bits)
    np.testing.assert_array_equal(all_bits.view(np.uint8).view(bfloat16).view(np.uint16),
                                  all_bits)


def test_byteswap(all_bits):
    x = all_bits.view(bfloat16)
    swapped = x.byteswap()
    np.testing.assert_array_equal(swapped.view(np.uint16), all_bits.byteswap())
    np.testing.assert_array_equal(swapped.byteswap().view(np.uint16), all_bits)
    y = x.copy()
    y.byteswap(inplace=True)
    np.testing.assert_array_equal(y.view(np.uint16), all_bits.byteswap())


def test_same_dtype_copies_every_layout(all_bits):
    """The bfloat16 -> bfloat16 cast (NumPy's copies, buffers, concatenate, byte-order
    changes): every bit pattern, NaN payloads included, arrives unchanged (or byte-swapped
    where the byte order changes), contiguous, strided, reversed and into swapped storage."""
    x = all_bits.view(bfloat16)
    swapped_bits = all_bits.byteswap()
    np.testing.assert_array_equal(x.copy().view(np.uint16), all_bits)
    np.testing.assert_array_equal(np.array(x, copy=True).view(np.uint16), all_bits)
    np.testing.assert_array_equal(x[::3].copy().view(np.uint16), all_bits[::3])
    np.testing.assert_array_equal(x[::-1].copy().view(np.uint16), all_bits[::-1])
    np.testing.assert_array_equal(np.concatenate([x[::2], x[1::2]]).view(np.uint16),
                                  np.concatenate([all_bits[::2], all_bits[1::2]]))
    grid = x.reshape(256, 256)
    np.testing.assert_array_equal(grid.T.copy().view(np.uint16), all_bits.reshape(256, 256).T)
    other = x.astype(BF.newbyteorder())
    np.testing.assert_array_equal(other.view(np.uint16), swapped_bits)
    np.testing.assert_array_equal(other[::2].astype(BF).view(np.uint16), all_bits[::2])
    out = np.zeros(65536, BF)
    np.copyto(out, other)
    np.testing.assert_array_equal(out.view(np.uint16), all_bits)


def test_non_native_byte_order_reads_and_casts():
    values = np.array([1.5, -0.1, 3e38, -0.0], bfloat16)
    other = BF.newbyteorder("S")
    swapped = values.byteswap().view(other)
    assert [x.bits for x in swapped] == [x.bits for x in values]
    np.testing.assert_array_equal(swapped.astype(np.float32), values.astype(np.float32))
    np.testing.assert_array_equal(bits_of(swapped.astype(BF)), bits_of(values))


def test_unaligned_buffers():
    values = np.array([1.5, -0.1, 3e38, 2.0**-130, -7.0], bfloat16)
    buf = np.zeros(2 * len(values) + 1, np.uint8)
    buf[1:] = values.view(np.uint8)
    u = buf[1:].view(bfloat16)
    assert not u.flags.aligned
    np.testing.assert_array_equal(u.view(np.uint16), bits_of(values))
    np.testing.assert_array_equal(u.astype(np.float32), exact_f32(bits_of(values)))
    np.testing.assert_array_equal(bits_of(u.astype(np.float64).astype(bfloat16)),
                                  bits_of(values))
    np.testing.assert_array_equal(bits_of(u + 0), bits_of(values + 0))
    f = np.array([1.5, -0.1, 3e38, 2.0**-130, -7.0], np.float32)
    np.copyto(u, f, casting="unsafe")  # unaligned destination
    np.testing.assert_array_equal(buf[1:].view(np.uint16), reference_round(f))


def test_non_contiguous(all_bits):
    x = all_bits.view(bfloat16).reshape(256, 256)
    for view in (x[::3, ::5], x.T, x[:, 7], x[::-2]):
        bits = view.view(np.uint16) if view.flags.c_contiguous else np.ascontiguousarray(
            view).view(np.uint16)
        np.testing.assert_array_equal(view.astype(np.float32), exact_f32(bits))
        assert [v.bits for v in view.ravel()[:50]] == bits.ravel()[:50].tolist()
    f = np.random.default_rng(2).standard_normal((64, 64)).astype(np.float32)
    np.testing.assert_array_equal(bits_of(f.T.astype(bfloat16)), reference_round(f.T))
    out = np.zeros((64, 128), bfloat16)[:, ::2]
    np.copyto(out, f, casting="unsafe")
    np.testing.assert_array_equal(np.ascontiguousarray(out).view(np.uint16), reference_round(f))


def _layouts(a):
    """The values of 1-D `a` in other memory layouts: (name, array) pairs."""
    swapped = a.astype(a.dtype.newbyteorder())
    raw = np.zeros(a.nbytes + 1, np.uint8)
    unaligned = raw[1:].view(a.dtype)
    unaligned[...] = a
    padded = np.zeros((a.size, 3), a.dtype)
    padded[:, 1] = a
    pairs = np.full((a.size, 2), 7, a.dtype)  # every other element, as x[::2]
    pairs[:, 0] = a
    rev = a[::-1].copy()[::-1]
    fortran = np.asfortranarray(a.reshape(256, -1))  # 2-D, Fortran order
    return [("contiguous", a), ("byteswapped", swapped), ("unaligned", unaligned),
            ("strided", padded[:, 1]), ("every other", pairs[:, 0]), ("reversed", rev),
            ("fortran", fortran)]


def _casts_in_every_layout(src, to):
    """src.astype(to) computed from every layout of src and into every layout of the output,
    each with the warnings it gave; all must match the contiguous cast."""
    with warnings.catch_warnings(record=True) as w0:
        warnings.simplefilter("always")
        want = src.astype(to)
    want_w = sorted(str(w.message) for w in w0)
    for name, x in _layouts(src):
        for out_name, out in _layouts(np.zeros(src.size, to)):
            if x.ndim != out.ndim:
                continue
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                np.copyto(out, x, casting="unsafe")
            assert sorted(str(m.message) for m in w) == want_w, (name, out_name)
            native = out.astype(out.dtype.newbyteorder("=")).ravel()
            np.testing.assert_array_equal(native.view(f"u{out.itemsize}"),
                                          want.view(f"u{want.itemsize}"),
                                          err_msg=f"{name} -> {out_name}")
    return want


def test_float_casts_every_layout(all_bits):
    """float32/float64 <-> bfloat16 are strided ArrayMethods: every input layout (byte-swapped,
    unaligned, strided, reversed, Fortran through a transpose) into every output layout gives the
    contiguous cast's bits and warnings; bfloat16 -> float32 is the exact widening and
    float32 -> bfloat16 the reference rounding (with float32 ties, overflow and NaNs)."""
    got = _casts_in_every_layout(all_bits.view(bfloat16), np.float32)
    np.testing.assert_array_equal(got.view(np.uint32), exact_f32(all_bits).view(np.uint32))
    got64 = _casts_in_every_layout(all_bits.view(bfloat16), np.float64)
    with np.errstate(invalid="ignore"):  # signalling NaNs come back quiet from float64
        np.testing.assert_array_equal(got64.astype(np.float32), exact_f32(all_bits))
    rng = np.random.default_rng(7)
    f = rng.integers(0, 2**32, 2**16, dtype=np.uint64).astype(np.uint32)
    f[:4096] = (f[:4096] & 0xFFFF0000) | 0x8000  # ties
    f[4096:4100] = [0x7F7FFFFF, 0xFF7FFFFF, 0x7FC00001, 0xFF800001]  # overflow, NaNs
    f32 = f.view(np.float32)
    with np.errstate(over="warn"):
        got = _casts_in_every_layout(f32, bfloat16)
        np.testing.assert_array_equal(got.view(np.uint16), reference_round(f32))
        got = _casts_in_every_layout(f32.astype(np.float64), bfloat16)
        np.testing.assert_array_equal(got.view(np.uint16), reference_round(f32))
    with pytest.warns(RuntimeWarning, match="overflow"):
        np.full(8, 3.4e38, np.float32)[::2].astype(bfloat16)


def test_float_cast_levels_and_no_gil_needed():
    for t in (np.float32, np.float64):
        for level in ("no", "equiv", "safe", "same_kind", "unsafe"):
            assert np.can_cast(BF, t, level) == np.can_cast(np.float16, t, level), (t, level)
            assert np.can_cast(t, BF, level) == np.can_cast(t, np.float16, level), (t, level)
        assert np.can_cast(BF.newbyteorder(), np.dtype(t).newbyteorder(), "safe")
        assert not np.can_cast(np.dtype(t).newbyteorder(), BF, "safe")


def test_bytes_with_trailing_zeros_parse_in_full():
    """Regression: trailing '0' characters were once stripped with the NUL padding (b'10' -> 1)."""
    arr = np.array([b"10", b"100", b"2.50", b"1e10", b"0"], dtype="S8")
    assert bits_of(arr.astype(bfloat16)).tolist() == [
        fraction_to_bits(Fraction(v)) for v in (10, 100, 2.5, 10**10, 0)]


# ---- bfloat16 -> integers at every tier ------------------------------------------------------

_INT_CAST_CHILD = r"""
import sys, warnings
import numpy as np
from bfloat16_dtype import bfloat16, _ext
bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
x = bits.view(bfloat16)
lengths = [1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 255, 256, 257, 1000]
out = {"isa": np.array(_ext._kernels_isa)}
for name in sys.argv[2:]:
    t = np.dtype(name)
    with np.errstate(invalid="ignore"):
        out[name] = x.astype(t)
        out[name + "_strided"] = np.repeat(x, 2)[::2].astype(t)
    # pieces at every tail length, each with the warnings it raised
    pieces, warned, start = [], [], 0
    while start < 65536:
        for n in lengths:
            stop = min(65536, start + n)
            with warnings.catch_warnings(record=True) as caught, np.errstate(invalid="warn"):
                warnings.simplefilter("always")
                pieces.append(x[start:stop].astype(t))
            warned.extend([any("invalid" in str(w.message) for w in caught)] * (stop - start))
            start = stop
            if start >= 65536:
                break
    out[name + "_pieces"] = np.concatenate(pieces)
    out[name + "_warned"] = np.array(warned)
np.savez(sys.argv[1], **out)
"""


def _int_cast_reference(t):
    """The rule of the comment in casts.c, in Python integers: truncation in range; out of
    range (NaN, inf) the conversion's minimum and "invalid"; int8..int32 through int32."""
    size, signed = np.dtype(t).itemsize, np.dtype(t).kind == "i"
    through32 = size < 4 or (size == 4 and signed)
    values, invalid = [], []
    for v in exact_f32(np.arange(65536, dtype=np.uint32).astype(np.uint16)).astype(float).tolist():
        bad = False
        if through32:
            if -2.0**31 <= v < 2.0**31:
                r = int(v)
            else:
                r, bad = -2**31, True
        elif -2.0**63 <= v < 2.0**63 or (size == 8 and not signed and 0 <= v < 2.0**64):
            r = int(v)  # [2^63, 2^64) for uint64 alone (float32's casts)
        else:
            bad = True
            r = 0 if (v > 0 and size == 8 and not signed) else -2**63
        r %= 2 ** (8 * size)
        if signed and r >= 2 ** (8 * size - 1):
            r -= 2 ** (8 * size)
        values.append(r)
        invalid.append(bad)
    return np.array(values, dtype=object).astype(t), np.array(invalid)


@pytest.mark.parametrize("tier", ["baseline", "avx2", "avx512"])
def test_bf16_to_int_casts_exhaustive_every_tier(tier, tmp_path):
    """All 65,536 bfloat16 values cast to every integer type, at each tier this CPU has (a
    child interpreter with BFLOAT16_DTYPE_ISA set), whole, strided and in pieces of every tail
    length: the values of the rule model above, float32's cast wherever |x| < 2^31, and an
    "invalid" warning exactly for the pieces holding an out-of-range value."""
    import os
    import subprocess
    import sys

    from bfloat16_dtype import _ext
    from conftest import TESTS_DIR

    tiers = ["baseline", "avx2", "avx512", "avx512bf16", "amx"]
    info = _ext._cpu_info()
    if tiers.index(tier) > tiers.index(info["detected"]):
        pytest.skip(f"this CPU lacks the {tier} tier ({info['reason']})")
    names = [np.dtype(t).name for t in INT_TYPES]
    dst = tmp_path / "casts.npz"
    proc = subprocess.run([sys.executable, "-c", _INT_CAST_CHILD, str(dst)] + names,
                          cwd=TESTS_DIR, env=dict(os.environ, BFLOAT16_DTYPE_ISA=tier),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = np.load(dst)
    assert str(got["isa"]) == tier
    small = np.abs(exact_f32(np.arange(65536, dtype=np.uint32).astype(np.uint16))) < 2.0**31
    for t, name in zip(INT_TYPES, names):
        want, invalid = _int_cast_reference(t)
        with np.errstate(invalid="ignore"):
            f32 = exact_f32(np.arange(65536, dtype=np.uint32).astype(np.uint16)).astype(t)
        if X86_64:  # the model agrees with float32 (other CPUs' conversions saturate)
            assert np.array_equal(want[small], f32[small]), name
        for layout in ("", "_strided", "_pieces"):
            assert np.array_equal(got[name + layout], want), (tier, name, layout)
        # each piece warned exactly when it held an out-of-range value
        warned = got[name + "_warned"]
        piece_bad = np.zeros(65536, bool)
        start = 0
        lengths = [1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 255, 256, 257, 1000]
        while start < 65536:
            for n in lengths:
                stop = min(65536, start + n)
                piece_bad[start:stop] = invalid[start:stop].any()
                start = stop
                if start >= 65536:
                    break
        assert np.array_equal(warned, piece_bad), (tier, name)


LENGTHS = [0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1000, 65536]


def test_copies_and_fills_move_the_bits_like_uint16():
    """The bfloat16 copy (NumPy's copies, strided views, reversal, fills): every layout moves
    all 65,536 patterns (signalling NaNs included) exactly as the same operation on a uint16
    view does, at every tail length, from unaligned memory and across byte orders."""
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    spread = np.repeat(bits, 3)
    x, xs = bits.view(BF), spread.view(BF)
    for n in LENGTHS:
        for view_bits, view in ((bits[:n], x[:n]), (spread[: 3 * n: 3], xs[: 3 * n: 3]),
                                (spread[: 2 * n: 2], xs[: 2 * n: 2]), (bits[::-1][:n], x[::-1][:n]),
                                (bits.reshape(256, 256)[:, ::2].ravel()[:n], None)):
            if view is None:
                got = x.reshape(256, 256)[:, ::2].copy().view(np.uint16).ravel()[:n]
            else:
                got = view.copy().view(np.uint16)
            assert np.array_equal(got, view_bits), n
    assert np.array_equal(x.reshape(256, 256).T.copy().view(np.uint16), bits.reshape(256, 256).T)
    raw = np.zeros(2 * 65536 + 1, np.uint8)
    unaligned = raw[1:].view(BF)
    unaligned[:] = x
    assert np.array_equal(unaligned[::2].copy().view(np.uint16), bits[::2])
    assert np.array_equal(unaligned[::-1].copy().view(np.uint16), bits[::-1])
    swapped = x.astype(BF.newbyteorder())
    assert np.array_equal(swapped.view(np.uint16), bits.byteswap())
    assert np.array_equal(swapped[::-1].astype(BF).view(np.uint16), bits[::-1])
    for b in (0x0000, 0x8000, 0x3F80, 0x7F80, 0x7FC0, 0x7F81, 0xFFFF, 0x0001):
        v = np.uint16(b).view(BF)
        for n in LENGTHS[:-1]:
            filled = np.empty(n, BF)
            filled.fill(v)
            assert np.array_equal(filled.view(np.uint16), np.full(n, b, np.uint16)), (b, n)
            full = np.full(2 * n, v, BF)[::2]
            assert np.array_equal(full.view(np.uint16), np.full(n, b, np.uint16)), (b, n)
            target = np.zeros(3 * n, BF)
            target[::3] = v
            assert np.array_equal(target.view(np.uint16)[::3], np.full(n, b, np.uint16))
            assert not target.view(np.uint16)[1::3].any()


@pytest.mark.parametrize("shape", [(3, 0), (0, 3), (2, 0, 2)])
def test_copies_of_empty_arrays(shape):
    """Copies of empty arrays: NumPy may call the copy loop with no elements and a zero stride over
    a 1-byte block; the loop reads nothing then (.ci/sanitize.sh asan reported a 2-byte read)."""
    a = np.empty(shape, BF)
    for r in (a.astype(BF), a.copy(), a.T.copy(), np.ascontiguousarray(a.T), a.astype(BF.newbyteorder())):
        assert r.size == 0 and r.dtype.kind == BF.kind


def test_byte_swapped_dtype_prints_as_V2():
    """NumPy prints a non-native bfloat16 dtype from its kind and size ('>V2', float16: '>f2');
    it is still bfloat16: its scalar type, values and arithmetic (README, "Casting rules")."""
    swapped = np.dtype(bfloat16).newbyteorder()
    x = np.array([1.5, -2.0], swapped)
    assert str(swapped) == ">V2" and repr(x) == "array([ 1.5, -2. ], dtype='>V2')"
    assert swapped.type is bfloat16 and x.tobytes() == bytes([0x3F, 0xC0, 0xC0, 0x00])
    assert (x + 1).dtype == np.dtype(bfloat16) and (x + 1).tolist() == [2.5, -1.0]


@pytest.mark.skipif(NumpyVersion(np.__version__) < "2.4.0",
                    reason="casting='same_value' arrived in NumPy 2.4")
def test_same_value_casts():
    """astype(..., casting="same_value"): float32/float64 -> bfloat16 succeeds exactly when every
    value survives (all 65,536 bfloat16 values as float32 and float64, NaN included, any layout)
    and otherwise raises NumPy's ValueError; bfloat16 -> float32/float64 and the byte-swapping
    copy always succeed. The integer, bool, float16 and complex casts do not declare it
    (TypeError, README "Differences from float16 that remain")."""
    every = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(bfloat16)
    for wide in (np.float32, np.float64):
        with np.errstate(invalid="ignore"):   # signalling NaNs, as in the plain casts
            src = every.astype(wide)
        for view in (src, src[::-1], np.concatenate([src, src])[::2]):
            with np.errstate(invalid="ignore"):
                back = view.astype(bfloat16, casting="same_value")
            nan = np.isnan(view)
            assert np.array_equal(back.astype(wide)[~nan], view[~nan])
            assert np.isnan(back.astype(wide)[nan]).all()
        for bad in ([1.5, 0.1], [3.4e38], [2.0 ** -140, 1.0]):
            arr = np.array(bad, wide)
            with np.errstate(all="ignore"), pytest.raises(ValueError, match="same_value"):
                arr.astype(bfloat16, casting="same_value")
        with np.errstate(invalid="ignore"):
            assert every.astype(wide, casting="same_value").size == 65536
    swapped = every.astype(np.dtype(bfloat16).newbyteorder(), casting="same_value")
    assert np.array_equal(swapped.astype(bfloat16).view(np.uint16), every.view(np.uint16))
    for other in (np.int32, np.float16, np.bool_):
        with pytest.raises(TypeError, match="same_value"):
            every[:4].astype(other, casting="same_value")
