"""Bulk conversions float32/float64 <-> bfloat16, run under every tier this CPU has.

Each tier runs in a subprocess with BFLOAT16_DTYPE_ISA forced (tests/kernel_worker.py); the
outputs are compared here with integer-arithmetic references that never call the package:
conftest's ``exact_f32`` / ``reference_round`` and test_conversions' ``float64_reference_bits``.
Array lengths cover the vector bodies, masked heads and tails, and the streaming-store path
(outputs of 4 MiB and more).
"""
from __future__ import annotations

import functools
import os
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

from conftest import exact_f32, reference_round
from kernel_tiers import run_tier, tier_params
from test_conversions import float64_reference_bits, fraction_to_bits

RNG = np.random.default_rng(20261122)
ALL_BITS = np.arange(65536, dtype=np.uint32).astype(np.uint16)


def f32(bits) -> np.ndarray:
    return np.array(bits, dtype=np.uint32).view(np.float32)


F32_EDGE = f32([
    0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x00008000, 0x00018000,
    0x00007FFF, 0x00800000, 0x3F808000, 0x3F818000, 0x3F808001, 0x3F807FFF, 0x3F80FFFF,
    0x7F7F7FFF, 0x7F7F8000, 0x7F7FFFFF, 0xFF7F8000, 0x7F800000, 0xFF800000, 0x7F800001,
    0xFF800001, 0x7FC00000, 0xFFC00000, 0x7FBFFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 0x7F80FFFF,
] * 3)  # 84 values: a vector body, then a tail


def f64_inputs() -> np.ndarray:
    """Random float64 across the bfloat16 range (subnormals, overflow, ties) plus specials;
    2.1 M of them, so the output (over 4 MiB) takes the streaming-store path."""
    n = 2_100_000
    sign = RNG.integers(0, 2, n, dtype=np.uint64) << np.uint64(63)
    exp = RNG.integers(1023 - 150, 1023 + 132, n, dtype=np.uint64) << np.uint64(52)
    man = RNG.integers(0, 1 << 52, n, dtype=np.uint64)
    # a quarter are exact ties or one float64 ulp either side of a tie
    tie = (RNG.integers(0, 1 << 7, n, dtype=np.uint64) << np.uint64(45)) | (np.uint64(1) << np.uint64(44))
    nudge = RNG.integers(-1, 2, n).astype(np.int64).view(np.uint64)
    man = np.where(np.arange(n) % 4 == 0, tie + nudge, man) & np.uint64((1 << 52) - 1)
    special = np.array([
        0, 1 << 63, 1, (1 << 63) | 1, 0x7FF0000000000000, 0xFFF0000000000000,
        0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001, 0xFFF4000000000000,
        0x47EFFFFFE0000000, 0x47EFFFF000000000, 0x47EFFFEFFFFFFFFF, 0x3810000000000000,
        0x380FFFFFFFFFFFFF, 0x3790000000000000, 0x3788000000000000, 0x3788000000000001,
        0x000FFFFFFFFFFFFF, 0x7FEFFFFFFFFFFFFF,
        # NaN payloads: top bits kept (signalling ones quieted), low bits alone dropped
        0x7FF5A00000000000, 0xFFFA5A5A5A5A5A5A, 0x7FF0000000200000, 0xFFF7E00000000001,
    ], dtype=np.uint64)
    return np.concatenate([special, sign | exp | man, special]).view(np.float64)


def f32_neighbourhoods() -> np.ndarray:
    """Float32 around every bfloat16 pattern h: h itself, one float32 ulp above, just below,
    at and just past the rounding midpoint, the last pattern before h + 1, and random low bits.
    That takes in every tie (both parities), every subnormal high half (the avx512bf16 tier's
    instruction reads float32 subnormals as zero: its fix-up), every NaN payload's high half
    and the overflow boundary. Interleaved, so that a vector holds a mix of them."""
    high = np.arange(65536, dtype=np.uint32) << np.uint32(16)
    lows = [0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF]
    cols = [high | np.uint32(lo) for lo in lows]
    cols.append(high | RNG.integers(0, 1 << 16, 65536, dtype=np.uint32))
    return np.stack(cols, axis=1).reshape(-1).view(np.float32)  # 458 752 values


def f32_subnormals() -> np.ndarray:
    """Random float32 subnormals of both signs, with zeros, specials and normals mixed in."""
    n = 1 << 20
    sign = RNG.integers(0, 2, n, dtype=np.uint32) << np.uint32(31)
    bits = RNG.integers(0, 1 << 23, n, dtype=np.uint32) | sign
    every7 = np.arange(n) % 7 == 3
    bits[every7] = RNG.integers(0, 1 << 32, int(every7.sum()), dtype=np.uint64).astype(np.uint32)
    return bits.view(np.float32)


def int_inputs() -> dict[str, np.ndarray]:
    """Integers of every width: blocks within +-2^24 (the float32 route of the cast), blocks
    with larger magnitudes near rounding midpoints (the float64 route, rounded to odd above
    2^53), and the two mixed in one array; lengths that leave tails."""
    d = {}
    for t in (np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64):
        info = np.iinfo(t)
        lo, hi = int(info.min), int(info.max)
        small = RNG.integers(max(lo, -(1 << 24)), min(hi, 1 << 24), 3001, endpoint=True)
        parts = [small]
        if info.bits > 16:
            # bfloat16 midpoints k * 2^j + 2^(j-1) (k of 8 bits) and their neighbours
            j = RNG.integers(17, info.bits - (9 if lo < 0 else 8), 3000, endpoint=True)
            k = RNG.integers(1 << 7, 1 << 8, 3000)
            mid = [int(a) * (1 << int(b)) + (1 << (int(b) - 1)) + int(c)
                   for a, b, c in zip(k, j, RNG.integers(-1, 2, 3000))]
            mid = [m for m in mid if m <= hi] + [hi, (1 << 24) + 1, (1 << 24) + 3]
            if lo < 0:
                mid += [-m for m in mid[::2]] + [lo, lo + 1, -(1 << 24) - 1]
            # sorted by magnitude: whole blocks of 2^24..2^25, where a float32 step would
            # round twice
            parts.append(np.array(sorted(mid, key=abs), dtype=object).astype(t))
        d[f"int:{np.dtype(t).name}"] = np.concatenate([p.astype(t) for p in parts])
    return d


def inputs() -> dict[str, np.ndarray]:
    d = {
        "bf16:all": ALL_BITS,
        "bf16:big": np.tile(ALL_BITS, 17),  # 1.1 M elements: streaming stores
        "f32:edge": F32_EDGE,
        "f32:random": RNG.integers(0, 1 << 32, 10**7, dtype=np.uint64).astype(np.uint32).view(np.float32),
        "f32:noflag": np.concatenate([np.ones(50, np.float32), f32([0x7F7F7FFF, 0xFF7F7FFF, 0x7F800000, 0xFF800000, 0x7FC00000]), np.ones(50, np.float32)]),
        "f32:neighbourhoods": f32_neighbourhoods(),
        "f32:subnormal": f32_subnormals(),
        # one bit away from the overflow range [0x7F7F8000, 0x7F7FFFFF] in each field, and NaNs
        # with its low bits: none overflows
        "f32:noflag_near": np.concatenate([np.ones(40, np.float32), f32([
            0x7E7F8000, 0x7F7E8000, 0x7F5F8000, 0xFE7FFFFF, 0x7FFF8000, 0xFFFFFFFF, 0x7F807FFF,
            0x3F7F8000, 0x007F8000, 0x807FFFFF]), np.ones(40, np.float32)]),
        # 2.1 M elements (streaming stores): no overflow among infs, NaNs and the largest finite
        "f32:big_noflag": np.resize(f32([
            0x3F800000, 0x7F7F7FFF, 0xFF800000, 0x7F800000, 0x7FC00000, 0xFF80FFFF, 0x40000000,
            0xFF7F7FFF, 0x00000001]), 2_100_000),
        "f64:random": f64_inputs(),
        "f64:noflag": np.concatenate([np.linspace(-1e38, 1e38, 101), [np.inf, -np.inf, np.nan, 2.0**-130, -(2.0**-133), 2.0**-126]]),
        "f64:tiny_exact_f32": np.concatenate([np.ones(20), [2.0**-127 + 2.0**-140], np.ones(20)]),
    }
    d.update(int_inputs())
    d["f16:all"] = ALL_BITS
    d["f16:finite_small"] = ALL_BITS[(ALL_BITS & 0x7FFF) < 0x477F]   # |x| < 65280 (bf16), every float16
    for pos in (0, 9, 37):   # one bfloat16 at or past 65520 (rounds to the float16 inf)
        a = np.full(40, 0x3F80, np.uint16)
        a[pos] = 0x4780          # 65536
        d[f"f16:ovf{pos}"] = a
        for tiny in (0x3381, 0x33C0, 0x8001):  # below float16's normals, inexact (2^-24 * 1.0078, 1.5)
            a = np.full(40, 0x3F80, np.uint16)
            a[pos] = tiny
            d[f"f16:unf{pos}_{tiny:x}"] = a
    # float16's subnormals that bfloat16 holds (m * 2^-24 with m of 8 significant bits): exact
    d["f16:tiny_exact"] = np.tile(np.array([0x3380, 0x3400, 0x3440, 0xB580, 0x387F, 0x3800, 0x0000, 0x8000],
                                           np.uint16), 5)
    big = np.ones(2_100_000, np.float32)
    big[1_000_003] = f32([0x7F7FC000])[0]  # in the streaming loop
    d["f32:big_ovf"] = big
    for pos in (0, 37, 70, 99):
        a = np.ones(100, np.float32)
        a[pos] = f32([0x7F7F8000])[0]  # the first float32 that rounds to inf
        d[f"f32:ovf{pos}"] = a
        a = np.ones(100, np.float32)
        a[pos] = f32([0xFF7FFFFF])[0]  # the last one (negative)
        d[f"f32:ovf_last{pos}"] = a
        b = np.ones(100)
        b[pos] = -1e39
        d[f"f64:ovf{pos}"] = b
        c = np.ones(100)
        c[pos] = 1e-300
        d[f"f64:under{pos}"] = c
    # one value at an edge of the range the avx512 tier rounds on the bits, among ones (a block
    # of 16 without any other unusual lane)
    for bits in F64_EDGES_ALONE:
        e = np.ones(100)
        e[37:38] = np.array([bits], np.uint64).view(np.float64)
        d[f"f64:alone{bits:x}"] = e
    return d


# float64 bits -> (overflow, underflow) its narrowing raises: the first value that rounds to
# the bfloat16 inf (the midpoint above the largest finite one) and the last that does not;
# the last value below 2^-126 (rounds up to it, inexact: underflow) and 2^-126 itself
F64_EDGES_ALONE = {
    0x47EFF00000000000: (True, False), 0xC7EFF00000000000: (True, False),
    0x47EFEFFFFFFFFFFF: (False, False), 0xC7EFEFFFFFFFFFFF: (False, False),
    0x380FFFFFFFFFFFFF: (False, True), 0xB80FFFFFFFFFFFFF: (False, True),
    0x3810000000000000: (False, False), 0xB810000000000000: (False, False),
}


INPUTS = inputs()


@pytest.fixture(scope="module", params=tier_params())
def out(request, tmp_path_factory):
    return run_tier(request.param, INPUTS, tmp_path_factory.mktemp("convert"))


def same_bits(got, want):
    np.testing.assert_array_equal(np.asarray(got).view(np.uint16), np.asarray(want).view(np.uint16))


@pytest.mark.parametrize("key", ["bf16:all", "bf16:big"])
def test_widen_every_pattern(out, key):
    bits = INPUTS[key]
    for suffix, sel in (("", slice(None)), (":off1", slice(1, None)), (":stride3", slice(None, None, 3)),
                        (":dst1", slice(None))):
        np.testing.assert_array_equal(out[key + suffix].view(np.uint32),
                                      exact_f32(bits[sel]).view(np.uint32), err_msg=suffix)


@pytest.mark.parametrize("key", ["bf16:all", "bf16:big"])
def test_widen_to_float64_every_pattern(out, key):
    bits = INPUTS[key]
    want = exact_f32(bits).astype(np.float64).view(np.uint64)  # numpy's own float32 -> float64
    for suffix, sel in ((":f64", slice(None)), (":f64_off1", slice(1, None)),
                        (":f64_stride3", slice(None, None, 3))):
        np.testing.assert_array_equal(out[key + suffix].view(np.uint64), want[sel], err_msg=suffix)


@pytest.mark.parametrize("key", sorted(k for k in INPUTS if k.startswith("int:")))
def test_integers_round_once(out, key):
    """Each integer rounded once to the nearest bfloat16 (ties to even), the reference in Python
    integers (test_conversions.fraction_to_bits), from contiguous and strided sources."""
    want = np.array([fraction_to_bits(Fraction(int(v))) for v in INPUTS[key]], np.uint16)
    np.testing.assert_array_equal(out[key], want)
    np.testing.assert_array_equal(out[key + ":off1"], want[1:])
    np.testing.assert_array_equal(out[key + ":stride2"], want[::2])     # the kernels' strides
    np.testing.assert_array_equal(out[key + ":stride3"], want[::-3])    # any other stride


def f16_nan_from_bf16(bits: np.ndarray) -> np.ndarray:
    """A bfloat16 NaN as float16: quiet, its sign and the top 10 bits of its float32 payload."""
    u = bits.astype(np.uint32) << np.uint32(16)
    return (((u >> np.uint32(16)) & np.uint32(0x8000)) | np.uint32(0x7E00)
            | ((u >> np.uint32(13)) & np.uint32(0x3FF))).astype(np.uint16)


def test_float16_casts_every_pattern(out):
    """All 65,536 float16 patterns to bfloat16 (exact widening, one rounding: the integer
    reference; NaNs quiet with sign and top payload bits) and all 65,536 bfloat16 patterns to
    float16 (NumPy's own float32 -> float16 cast of the exact value; NaNs likewise), and the
    overflow warning exactly when a finite bfloat16 reaches float16's inf, the underflow warning
    exactly when a value below float16's normals is not given back exactly (NumPy's rule for its
    float32 -> float16 cast)."""
    h = ALL_BITS.view(np.float16).astype(np.float32)          # NumPy's exact widening
    want = reference_round(h)
    nan = np.isnan(h)
    hb = h.view(np.uint32)
    want[nan] = ((hb[nan] >> np.uint32(16)) | np.uint32(0x40)).astype(np.uint16)
    np.testing.assert_array_equal(out["f16:all:to_bf16"], want)
    assert not out["f16:all:to_bf16_flags"].any()
    with np.errstate(all="ignore"):
        want16 = exact_f32(ALL_BITS).astype(np.float16).view(np.uint16).copy()
    bnan = np.isnan(exact_f32(ALL_BITS))
    want16[bnan] = f16_nan_from_bf16(ALL_BITS[bnan])
    np.testing.assert_array_equal(out["f16:all:to_f16"], want16)
    assert out["f16:all:to_f16_flags"].tolist() == [True, True, False]   # 65520 and up; tiny
    finite = exact_f32(ALL_BITS[(ALL_BITS & 0x7FFF) < 0x477F])
    back = want16[(ALL_BITS & 0x7FFF) < 0x477F].view(np.float16).astype(np.float32)
    assert (back != finite).any()    # the input does hold inexact tiny values ...
    assert out["f16:finite_small:to_f16_flags"].tolist() == [False, True, False]
    assert out["f16:tiny_exact:to_f16_flags"].tolist() == [False, False, False]  # ... these are exact
    np.testing.assert_array_equal(out["f16:tiny_exact:to_f16"].view(np.float16).astype(np.float32),
                                  exact_f32(np.tile(np.array([0x3380, 0x3400, 0x3440, 0xB580, 0x387F, 0x3800, 0, 0x8000],
                                                             np.uint16), 5)))
    for pos in (0, 9, 37):
        assert out[f"f16:ovf{pos}:to_f16"][pos] == 0x7C00
        assert out[f"f16:ovf{pos}:to_f16_flags"].tolist() == [True, False, False], pos
        for tiny in (0x3381, 0x33C0, 0x8001):
            assert out[f"f16:unf{pos}_{tiny:x}:to_f16_flags"].tolist() == [False, True, False], (pos, tiny)
            with np.errstate(under="raise"):  # the reference: NumPy's own cast of the exact value
                with pytest.raises(FloatingPointError):
                    exact_f32(np.array([tiny], np.uint16)).astype(np.float16)


@functools.lru_cache(maxsize=None)
def reference(key: str) -> np.ndarray:
    """The reference bits of an input, computed once (it is elementwise, so slices of it are
    the references of the sliced inputs)."""
    x = INPUTS[key]
    return f64_reference(x) if key.startswith("f64") else reference_round(x)


@pytest.mark.parametrize("key", ["f32:edge", "f32:random", "f32:neighbourhoods", "f32:subnormal"])
def test_narrow_float32_matches_integer_reference(out, key):
    ref = reference(key)
    same_bits(out[key], ref)
    same_bits(out[key + ":off1"], ref[1:])
    same_bits(out[key + ":stride3"], ref[::3])
    same_bits(out[key + ":dst1"], ref)


def test_narrow_float32_overflow_flag(out):
    for pos in (0, 37, 70, 99):
        assert out[f"f32:ovf{pos}"][pos] == 0x7F80
        assert out[f"f32:ovf{pos}:flags"][0], f"overflow at {pos} not reported"
        assert out[f"f32:ovf_last{pos}"][pos] == 0xFF80
        assert out[f"f32:ovf_last{pos}:flags"][0], f"overflow at {pos} not reported"
    assert out["f32:big_ovf"][1_000_003] == 0x7F80
    assert out["f32:big_ovf:flags"][0]
    assert not out["f32:noflag:flags"].any()
    assert not out["f32:noflag_near:flags"].any()
    assert not out["f32:big_noflag:flags"].any()
    same_bits(out["f32:big_noflag"], reference_round(INPUTS["f32:big_noflag"]))
    assert not out["f32:edge:flags"][2]  # NaN inputs are no 'invalid' operation


def f64_reference(x: np.ndarray) -> np.ndarray:
    """Finite and infinite values from the exact-rounding reference; a NaN is quiet and keeps its
    sign and the top 7 bits of its payload (float64 bits 51..45), as float64 -> float32 ->
    bfloat16 does."""
    ref = float64_reference_bits(x)
    nan = ref < 0
    u = np.asarray(x, np.float64).view(np.uint64)
    sign = (np.signbit(x).astype(np.int64) << 15)
    payload = ((u >> np.uint64(45)) & np.uint64(0x7F)).astype(np.int64)
    return np.where(nan, sign | 0x7FC0 | payload, ref).astype(np.uint16)


def test_narrow_float64_matches_exact_rounding(out):
    ref = reference("f64:random")
    same_bits(out["f64:random"], ref)
    same_bits(out["f64:random:off1"], ref[1:])
    same_bits(out["f64:random:stride3"], ref[::3])
    same_bits(out["f64:random:dst1"], ref)
    same_bits(out["f64:random:complex"], ref)


@pytest.mark.parametrize("bits", sorted(F64_EDGES_ALONE))
def test_narrow_float64_range_edges_alone_in_a_block(out, bits):
    key = f"f64:alone{bits:x}"
    same_bits(out[key], reference(key))
    overflow, underflow, _ = out[key + ":flags"]
    assert (bool(overflow), bool(underflow)) == F64_EDGES_ALONE[bits]


def test_narrow_float64_flags(out):
    for pos in (0, 37, 70, 99):
        assert out[f"f64:ovf{pos}"][pos] == 0xFF80
        overflow, underflow, _ = out[f"f64:ovf{pos}:flags"]
        assert overflow and not underflow
        overflow, underflow, _ = out[f"f64:under{pos}:flags"]
        assert underflow and not overflow, f"underflow at {pos} not reported"
        assert (out[f"f64:ovf{pos}:complex_flags"] == [True, False, False]).all()
        assert (out[f"f64:under{pos}:complex_flags"] == [False, True, False]).all()
    # inf, NaN, exact subnormals and values below the threshold raise nothing
    assert not out["f64:noflag:flags"].any()
    assert not out["f64:noflag:complex_flags"].any()
    # exact in float32 but not in bfloat16, and below 2**-126: an underflow as for float16
    assert out["f64:tiny_exact_f32:flags"][1]
    assert out["f64:tiny_exact_f32:complex_flags"][1]


_FLAG_SCRIPT = r"""
import numpy as np, bfloat16_dtype
snan = np.array([0x7FF0000000000001, 0x3FF8000000000000], np.uint64).view(np.float64)
h = np.array([0x7C01, 0x3C00], np.uint16).view(np.float16)         # a signalling float16 NaN
with np.errstate(all="raise"):
    for n in (1, 2, 5, 17, 40, 1000):
        x = np.resize(snan, n)
        x.astype(bfloat16_dtype.bfloat16)                   # contiguous: the kernel, tail included
        x[::2].astype(bfloat16_dtype.bfloat16)              # strided: the element loop
        np.resize(h, n).astype(bfloat16_dtype.bfloat16)
    z = np.zeros(5, bfloat16_dtype.bfloat16)
    np.add.at(z, [0, 0, 1], np.array([1.0, np.nan, 2.0]))   # one-element calls, float64 loop
print("ok")
"""


@pytest.mark.parametrize("tier", tier_params())
def test_conversions_leave_no_flags_of_their_own(tier, tmp_path):
    """Narrowing float64 and float16 goes through FPU steps that raise flags of their own (a
    signalling NaN's "invalid" in the float32 step); the conversions discard them, so only the
    flags computed on the bits reach NumPy, contiguous or strided, one element or many, at
    every tier (csrc/kernels/convert.c, kf_mark/kf_discard)."""
    env = dict(os.environ, BFLOAT16_DTYPE_ISA=tier)
    # run outside the checkout, so the installed package is imported, not the source folder
    proc = subprocess.run([sys.executable, "-c", _FLAG_SCRIPT], env=env, capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
