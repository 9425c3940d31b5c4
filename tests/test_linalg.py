"""Matrix products on bfloat16: ``a @ b`` and numpy's entry points, and ``bfloat16_dtype.linalg``.

References never use the code under test: inputs are made from bit patterns produced by
conftest's integer-arithmetic rounding, widened exactly with integer ops (``exact_f32``) and
multiplied in float64. The kernel contract (csrc/matmul/gemm.h) is: exact products, float32
accumulation, one rounding per output element. So

* a float32 result is within ``k * 2**-24 * sum|a||b|`` of the float64 product, and
* a bfloat16 result is within that bound plus half a bfloat16 ulp of the result.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import bfloat16_dtype as bd
from bfloat16_dtype import bfloat16
from conftest import exact_f32, reference_round

# np.matvec / np.vecmat exist from NumPy 2.2 (np.matmul covers the same loops before)
HAS_MATVEC = hasattr(np, "matvec")
needs_matvec = pytest.mark.skipif(not HAS_MATVEC, reason="np.matvec/np.vecmat: NumPy >= 2.2")

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
BF16 = np.dtype(bfloat16)
U = 2.0 ** -24  # float32 unit roundoff


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------

def bits_of(x) -> np.ndarray:
    """The uint16 bit patterns of a bfloat16 array or scalar (any layout)."""
    arr = np.asarray(x)
    assert arr.dtype == BF16, arr.dtype
    return np.ascontiguousarray(arr).reshape(-1).view(np.uint16).reshape(arr.shape)


def widen(x) -> np.ndarray:
    """Exact float64 values of a bfloat16 array, via integer bit manipulation."""
    return exact_f32(bits_of(x)).astype(np.float64)


def make(rng, shape, scale=1.0):
    """A random bfloat16 array and its exact float64 values (the same numbers)."""
    f = (rng.standard_normal(shape) * scale).astype(np.float32)
    bits = reference_round(f)
    return bits.view(bfloat16), exact_f32(bits).astype(np.float64)


def ref_and_bound(A64, B64, k=None):
    """float64 product of the exact values and the float32-accumulation error bound."""
    ref = np.matmul(A64, B64)
    k = A64.shape[-1] if k is None else k
    bound = k * U * np.matmul(np.abs(A64), np.abs(B64)) * (1 + 1e-12)
    return ref, bound


def half_ulp_bf16(mag):
    """Half a bfloat16 ulp at magnitude ``mag`` (normal range; subnormal spacing below)."""
    mag = np.maximum(np.asarray(mag, dtype=np.float64), 2.0 ** -126)
    return np.ldexp(1.0, (np.floor(np.log2(mag)) - 8).astype(int))


def assert_f32_close(res, A64, B64, k=None):
    res = np.asarray(res)
    assert res.dtype == F32
    ref, bound = ref_and_bound(A64, B64, k)
    assert res.shape == ref.shape
    err = np.abs(res.astype(np.float64) - ref)
    assert np.all(err <= bound), (err - bound).max()


def assert_bf16_close(res, A64, B64, k=None):
    res = np.asarray(res)
    assert res.dtype == BF16, res.dtype
    ref, bound = ref_and_bound(A64, B64, k)
    assert res.shape == ref.shape
    tol = bound + half_ulp_bf16(np.abs(ref) + bound)
    err = np.abs(widen(res) - ref)
    assert np.all(err <= tol), (err - tol).max()


def int_bf16(rng, shape, lo=-8, hi=9):
    """Small-integer bfloat16 matrices: every product and partial sum is exact in float32."""
    v = rng.integers(lo, hi, size=shape).astype(np.float32)
    return reference_round(v).view(bfloat16), v.astype(np.float64)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


# ----------------------------------------------------------------------------------------------
# accuracy
# ----------------------------------------------------------------------------------------------

SIZES = [(1, 1, 1), (1, 3, 17), (3, 17, 1), (17, 127, 3), (127, 129, 17), (129, 17, 127),
         (6, 16, 256), (7, 257, 33), (13, 35, 37), (5, 300, 1030)]


@pytest.mark.parametrize("m,k,n", SIZES)
def test_float32_accumulator_within_bound(rng, m, k, n):
    a, A = make(rng, (m, k))
    b, B = make(rng, (k, n))
    assert_f32_close(bd.matmul(a, b, out_dtype=np.float32), A, B)


@pytest.mark.parametrize("m,k,n", SIZES)
def test_bf16_output_within_bound(rng, m, k, n):
    a, A = make(rng, (m, k))
    b, B = make(rng, (k, n))
    assert_bf16_close(bd.matmul(a, b), A, B)
    assert_bf16_close(a @ b, A, B)


def test_bf16_output_is_the_float32_accumulator_rounded_once(rng):
    a, _ = make(rng, (37, 300))
    b, _ = make(rng, (300, 41))
    acc = bd.matmul(a, b, out_dtype=np.float32)
    assert np.array_equal(bits_of(bd.matmul(a, b)), reference_round(acc))
    assert np.array_equal(bits_of(a @ b), reference_round(acc))


def test_large_case_1000ish(rng):
    # K > KC (tile path), odd M and N; kept cheap (~130 MFLOP)
    a, A = make(rng, (1001, 129))
    b, B = make(rng, (129, 1003))
    assert_f32_close(bd.matmul(a, b, out_dtype=np.float32), A, B)
    a, A = make(rng, (9, 1000))
    b, B = make(rng, (1000, 11))
    assert_bf16_close(a @ b, A, B)


def test_exact_integer_sums_round_to_nearest_even():
    # float32 sums are exact; the only rounding is the final one to bfloat16 (8-bit significand)
    a = reference_round(np.array([[256, 1], [256, 3], [258, 1], [255, 1], [-256, -1]],
                                 np.float32)).view(bfloat16)
    b = reference_round(np.array([[1], [1]], np.float32)).view(bfloat16)
    # exact sums 257 (tie -> 256), 259 (tie -> 260), 259, 256, -257 (tie -> -256)
    expected = reference_round(np.array([[257], [259], [259], [256], [-257]], np.float32))
    assert np.array_equal(bits_of(bd.matmul(a, b)), expected)
    assert np.array_equal(bits_of(a @ b), expected)
    np.testing.assert_array_equal(bd.matmul(a, b, out_dtype=np.float32),
                                  [[257], [259], [259], [256], [-257]])


def test_exact_integer_matrices_match_rounded_reference(rng):
    a, A = int_bf16(rng, (23, 131))
    b, B = int_bf16(rng, (131, 19))
    exact = A @ B  # |sum| < 2**24: exact in float32 too
    assert np.array_equal(bd.matmul(a, b, out_dtype=np.float32), exact.astype(np.float32))
    expected = reference_round(exact.astype(np.float32))
    assert np.array_equal(bits_of(a @ b), expected)
    assert np.array_equal(bits_of(bd.matmul(a, b)), expected)


def test_rounding_overflow_to_inf_only_in_bf16():
    # bf16 max (0x7F7F) + 2**119 is exactly the midpoint to 2**128: finite in float32,
    # ties-to-even rounds the odd significand up to inf in bfloat16.
    a = np.array([[0x7F7F, 0x7B00]], np.uint16).view(bfloat16)  # 0x7B00 = 2**119
    b = np.array([[0x3F80], [0x3F80]], np.uint16).view(bfloat16)  # ones
    exact = widen(a) @ widen(b)
    acc = bd.matmul(a, b, out_dtype=np.float32)
    assert np.isfinite(acc).all() and acc[0, 0] == np.float32(exact[0, 0])
    assert bits_of(bd.matmul(a, b))[0, 0] == 0x7F80
    assert bits_of(a @ b)[0, 0] == 0x7F80


def _products():
    """Every entry point that rounds a float32 sum to a bfloat16 result, as (name, f(a, b))."""
    fs = [("@", lambda a, b: a @ b), ("np.dot", np.dot), ("bd.matmul", bd.matmul),
          ("bd.dot", bd.dot), ("einsum", lambda a, b: np.einsum("ij,jk->ik", a, b, optimize=True)),
          ("stacked", lambda a, b: (np.stack([a, a]) @ b)[1])]
    if HAS_MATVEC:
        fs.append(("vecmat", lambda a, b: np.stack([np.vecmat(r, b) for r in a])))
    return fs


@pytest.mark.parametrize("m,k,n", [(1, 2, 1), (3, 5, 4), (1, 300, 1), (100, 300, 1), (1, 300, 100),
                                   (64, 64, 64), (200, 300, 150), (140, 300, 128), (30, 4200, 70)])
@pytest.mark.parametrize("name,f", _products())
def test_rounding_overflow_to_inf_warns_like_float16(m, k, n, name, f):
    """A finite float32 sum that rounds to bfloat16 inf (bfloat16's largest + 2**119, a tie that
    rounds up) reports "overflow" as float16's a @ b and np.dot do when their sum rounds to inf,
    on every path (dot, small, GEMV, GEMM; one row of the output; 140 x 128 only full register
    blocks of the avx512bf16 kernel, 30 x 70 with K > 4096 its float32 tile: that kernel raises
    the flag as it rounds, gemm_avx512bf16.c). An inf operand gives an inf
    result without it (as float16), also beside the overflowing row; finite results none."""
    if name == "einsum" and 1 in (m, n):
        pytest.skip("NumPy's einsum refuses a size-1 index of a user dtype (README, Known limits)")
    # NumPy 2.0 reads no IEEE flags after np.dot's per-output hook (float16's np.dot of
    # a sum rounding to inf says nothing there either): there the value alone is checked
    h16 = np.array([[65504.0, 16.0]], np.float16)
    reported = True
    if name in ("np.dot", "einsum"):
        with np.errstate(over="raise"):
            try:
                f(h16, np.ones((2, 1), np.float16))
                reported = False
            except FloatingPointError:
                pass
    rng = np.random.default_rng(m * 1000 + n)
    a32 = rng.uniform(0.5, 1.0, (m, k)).astype(np.float32)
    b = np.ones((k, n), bfloat16)
    base = a32.astype(bfloat16)
    a = base.copy()
    r = m // 2
    a[r] = 0
    a[r, :2] = np.array([0x7F7F, 0x7B00], np.uint16).view(bfloat16)
    with np.errstate(over="raise"):
        f(base, b)  # finite: nothing raised
        if reported:
            with pytest.raises(FloatingPointError, match="overflow"):
                f(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = bits_of(f(a, b))
    assert (got[r] == 0x7F80).all() and np.isfinite(f(base, b).astype(np.float32)).all()
    inf_row = base.copy()
    inf_row[r, 0] = np.inf
    with np.errstate(over="raise"):
        assert bits_of(f(inf_row, b))[r].tolist() == [0x7F80] * n  # no overflow: inf came in
    if m > 1 and reported:
        both = a.copy()
        both[(r + 1) % m, 0] = np.inf
        with np.errstate(over="raise"), pytest.raises(FloatingPointError, match="overflow"):
            f(both, b)
    # float16's a @ b does the same where its sum rounds to inf
    with np.errstate(over="raise"), pytest.raises(FloatingPointError, match="overflow"):
        h16 @ np.ones((2, 1), np.float16)


def test_operands_beyond_bfloat16_range_warn():
    """The functions round an operand of another type to bfloat16 first: one beyond its range
    becomes inf with the cast's "overflow" warning, not silently (np.matmul's float64 path
    keeps 1e39)."""
    ones = np.ones((1, 1), bfloat16)
    for fn in (bd.matmul, bd.dot):
        with pytest.warns(RuntimeWarning, match="overflow encountered in cast"):
            r = fn(np.array([[1e39]]), ones)
        assert r.dtype == np.float64 and r[0, 0] == np.inf
        with np.errstate(over="raise"), pytest.raises(FloatingPointError, match="overflow"):
            fn(ones, np.array([[-1e39]], np.float64))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bd.matmul(np.array([[3e38]]), ones)[0, 0] == np.float64(bfloat16(3e38))


def test_masked_operands_are_refused():
    """The functions would use a masked array's hidden values and drop its mask: TypeError
    naming the problem (np.matmul / @ keep the masked semantics)."""
    m = np.ma.array(np.ones((2, 2), bfloat16), mask=[[0, 1], [0, 0]])
    v = np.ones(2, bfloat16)
    for call in (lambda: bd.matmul(m, m), lambda: bd.dot(v, m), lambda: bd.inner(m, v),
                 lambda: bd.vdot(m, m), lambda: bd.matvec(m, v), lambda: bd.vecmat(v, m)):
        with pytest.raises(TypeError, match="masked arrays are not supported"):
            call()


def test_float32_overflow_gives_inf():
    big = np.array([[0x7180]], np.uint16).view(bfloat16)  # 2**100
    for out_dtype in (np.float32, None):
        r = np.asarray(bd.matmul(big, big, out_dtype=out_dtype), np.float64)
        assert r[0, 0] == np.inf
    neg = np.array([[0xF180]], np.uint16).view(bfloat16)  # -2**100
    with np.errstate(over="ignore"):
        assert widen(neg @ big)[0, 0] == -np.inf


def _nan_inf_inputs(rng, m, k, n):
    a, A = make(rng, (m, k))
    b, B = make(rng, (k, n))
    A32, B32 = A.astype(np.float32), B.astype(np.float32)
    specials = np.array([np.nan, np.inf, -np.inf, 0.0], np.float32)
    for X32 in (A32, B32):
        idx = rng.choice(X32.size, size=max(1, X32.size // 40), replace=False)
        X32.flat[idx] = rng.choice(specials, size=idx.size)
    # zero rows/columns so inf * 0 appears too
    A32[0, :] = 0
    B32[:, 0] = 0
    A32[1, 0] = np.inf
    B32[0, 1] = 0
    return A32, B32


@pytest.mark.parametrize("m,k,n", [(2, 2, 2), (13, 37, 35), (40, 300, 20)])
def test_nan_inf_propagate_like_float32_blas(rng, m, k, n):
    A32, B32 = _nan_inf_inputs(rng, m, k, n)
    a = reference_round(A32).view(bfloat16)
    b = reference_round(B32).view(bfloat16)
    with np.errstate(invalid="ignore", over="ignore"):
        blas = np.matmul(A32, B32)
        results = (bd.matmul(a, b, out_dtype=np.float32), widen(bd.matmul(a, b)), widen(a @ b))
    for res in results:
        res = np.asarray(res, np.float64)
        np.testing.assert_array_equal(np.isnan(res), np.isnan(blas))
        np.testing.assert_array_equal(np.isposinf(res), np.isposinf(blas))
        np.testing.assert_array_equal(np.isneginf(res), np.isneginf(blas))


def test_nan_result_is_quiet_nan():
    a = np.array([[np.inf, 1.0]], np.float32)
    b = np.array([[0.0], [1.0]], np.float32)
    r = bits_of(bd.matmul(reference_round(a).view(bfloat16), reference_round(b).view(bfloat16)))
    assert (r[0, 0] & 0x7FC0) == 0x7FC0


@pytest.mark.parametrize("m,n", [(1, 1), (3, 4), (0, 5), (7, 0)])
def test_k_zero_gives_zeros(m, n):
    a, b = np.empty((m, 0), bfloat16), np.empty((0, n), bfloat16)
    for res in (a @ b, np.matmul(a, b), bd.matmul(a, b), np.dot(a, b)):
        assert res.dtype == BF16 and res.shape == (m, n)
        assert np.all(bits_of(res) == 0)
    r32 = bd.matmul(a, b, out_dtype=np.float32)
    assert r32.dtype == F32 and r32.shape == (m, n) and np.all(r32 == 0)
    if m and n:  # an output that held garbage is overwritten
        out = np.full((m, n), np.nan, np.float32)
        assert bd.matmul(a, b, out=out) is out and np.all(out == 0)


@pytest.mark.parametrize("out_dtype", [np.float32, bfloat16])
@pytest.mark.parametrize("sa,sb", [((0, 3), (3, 5)), ((4, 3), (3, 0)), ((0, 0), (0, 5))])
def test_empty_out(sa, sb, out_dtype):
    a, b = np.ones(sa, bfloat16), np.ones(sb, bfloat16)
    shape = (sa[0], sb[1])
    out = np.empty(shape, out_dtype)
    assert bd.matmul(a, b, out=out) is out
    expected = np.empty(shape, np.float32)
    np.matmul(np.ones(sa, np.float32), np.ones(sb, np.float32), out=expected)
    assert out.shape == expected.shape


# ----------------------------------------------------------------------------------------------
# shapes and layouts
# ----------------------------------------------------------------------------------------------

SHAPE_PAIRS = [
    ((5,), (5,)), ((5,), (5, 3)), ((4, 5), (5,)), ((2, 4, 5), (5,)), ((5,), (2, 5, 3)),
    ((4, 5), (5, 3)), ((2, 4, 5), (5, 3)), ((4, 5), (2, 5, 3)), ((2, 4, 5), (2, 5, 3)),
    ((2, 1, 3, 4), (5, 4, 2)), ((1, 3, 4), (5, 1, 4, 2)), ((1, 1), (1, 1)), ((1,), (1,)),
    ((3, 17, 129), (129, 1)), ((0, 2, 3), (3, 4)), ((3, 0), (0,)), ((0,), (0, 2)),
    ((1, 3, 4), (0, 4, 5)), ((2, 3, 0), (2, 0, 4)), ((0, 3), (3, 4)), ((3, 0), (0, 4)),
    ((2, 0, 3), (3, 4)), ((2, 3, 0), (0, 4)), ((2, 3, 4), (4, 0)),
]


@pytest.mark.parametrize("sa,sb", SHAPE_PAIRS)
def test_shapes_match_numpy(rng, sa, sb):
    a, A = make(rng, sa)
    b, B = make(rng, sb)
    expected_shape = np.matmul(np.ones(sa, np.float32), np.ones(sb, np.float32)).shape
    for res in (a @ b, np.matmul(a, b)):
        assert np.shape(res) == expected_shape
        assert_bf16_close(res, A, B)


@pytest.mark.parametrize("sa,sb", SHAPE_PAIRS)
def test_function_shapes_match_numpy(rng, sa, sb):
    a, A = make(rng, sa)
    b, B = make(rng, sb)
    expected_shape = np.matmul(np.ones(sa, np.float32), np.ones(sb, np.float32)).shape
    res = bd.matmul(a, b)
    assert np.shape(res) == expected_shape
    assert_bf16_close(res, A, B)
    assert_f32_close(bd.matmul(a, b, out_dtype=np.float32), A, B)


def test_1d_at_1d_returns_scalar_like_numpy(rng):
    a, A = make(rng, (7,))
    b, B = make(rng, (7,))
    r = a @ b
    assert np.ndim(r) == 0 and np.asarray(r).dtype == BF16
    assert np.ndim(bd.matmul(a, b)) == 0
    assert_bf16_close(np.asarray(r), A, B)


# view functions applied identically to the bfloat16 and float64 arrays
VIEWS = {
    "T": lambda v: v.T,
    "rev0": lambda v: v[::-1],
    "rev1": lambda v: v[:, ::-1],
    "step2": lambda v: v[:, ::2],
    "revstep": lambda v: v[::-2, ::-3],
}


@pytest.mark.parametrize("which", ["a", "b", "both"])
@pytest.mark.parametrize("view", list(VIEWS))
def test_strided_views(rng, which, view):
    fn = VIEWS[view]
    a0, A0 = make(rng, (38, 38))
    b0, B0 = make(rng, (38, 38))
    a, A = (fn(a0), fn(A0)) if which in ("a", "both") else (a0[:, :19], A0[:, :19])
    b, B = (fn(b0), fn(B0)) if which in ("b", "both") else (b0, B0)
    k = a.shape[-1]
    b, B = b[:k], B[:k]
    assert_bf16_close(a @ b, A, B)
    assert_bf16_close(bd.matmul(a, b), A, B)
    assert_f32_close(bd.matmul(a, b, out_dtype=np.float32), A, B)
    # same values as the contiguous computation, bit for bit
    assert np.array_equal(bits_of(a @ b), bits_of(np.ascontiguousarray(a) @ np.ascontiguousarray(b)))


def test_fortran_order(rng):
    a, A = make(rng, (33, 21))
    b, B = make(rng, (21, 19))
    af, bf = np.asfortranarray(a), np.asfortranarray(b)
    assert af.flags.f_contiguous and not af.flags.c_contiguous
    for res in (af @ bf, af @ b, a @ bf, bd.matmul(af, bf)):
        assert_bf16_close(res, A, B)
    out = np.empty((33, 19), np.float32, order="F")
    assert bd.matmul(af, bf, out=out) is out
    assert_f32_close(out, A, B)


def _unaligned(x):
    """A copy of bfloat16 array ``x`` living at an odd byte offset of a uint8 buffer."""
    buf = np.zeros(x.nbytes + 1, np.uint8)
    buf[1:] = np.ascontiguousarray(x).reshape(-1).view(np.uint8)
    u = np.ndarray(x.shape, dtype=bfloat16, buffer=buf, offset=1)
    assert not u.flags.aligned
    return u


def test_unaligned_buffers(rng):
    a, A = make(rng, (13, 37))
    b, B = make(rng, (37, 35))
    ua, ub = _unaligned(a), _unaligned(b)
    assert np.array_equal(bits_of(ua), bits_of(a))
    ref_bits = bits_of(a @ b)
    for res in (ua @ ub, np.matmul(ua, b), bd.matmul(a, ub), np.dot(ua, ub)):
        assert_bf16_close(res, A, B)
    assert np.array_equal(bits_of(ua @ ub), ref_bits)
    assert np.array_equal(bits_of(bd.matmul(ua, ub)), ref_bits)
    # unaligned views with strides, too
    assert_bf16_close(ua[::2, 1::3] @ ub[1::3, ::-1], A[::2, 1::3], B[1::3, ::-1])
    # unaligned output
    out = _unaligned(np.zeros((13, 35), bfloat16))
    assert bd.matmul(a, b, out=out) is out
    assert np.array_equal(bits_of(out), ref_bits)
    out2 = _unaligned(np.zeros((13, 35), bfloat16))
    np.matmul(a, b, out=out2)
    assert np.array_equal(bits_of(out2), ref_bits)


@needs_matvec
def test_unaligned_matvec_vecmat(rng):
    a, A = make(rng, (65, 130))
    v, V = make(rng, (130,))
    w, W = make(rng, (65,))
    ua, uv, uw = _unaligned(a), _unaligned(v), _unaligned(w)
    assert_bf16_close(np.matvec(ua, uv), A, V)
    assert_bf16_close(np.vecmat(uw, ua), W, A)
    assert_bf16_close(bd.matvec(ua, uv), A, V)


MISMATCH = [((3, 4), (5, 2)), ((4,), (5,)), ((3,), (4, 2)), ((3, 4), (5,)),
            ((2, 1, 3, 4), (5, 3, 2)), ((), (3,)), ((3,), ()), ((), ())]
BROADCAST_MISMATCH = [((2, 3, 4), (3, 4, 2)), ((2, 5, 3, 4), (3, 4, 2))]


def _error(f):
    with pytest.raises(Exception) as info:
        f()
    return type(info.value), str(info.value)


@pytest.mark.parametrize("sa,sb", MISMATCH + BROADCAST_MISMATCH)
def test_operator_shape_errors_match_numpy(sa, sb):
    expected = _error(lambda: np.matmul(np.ones(sa, np.float32), np.ones(sb, np.float32)))
    a, b = np.ones(sa, bfloat16), np.ones(sb, bfloat16)
    assert _error(lambda: np.matmul(a, b)) == expected
    if a.ndim and b.ndim:
        assert _error(lambda: a @ b) == expected


@pytest.mark.parametrize("sa,sb", MISMATCH)
def test_function_shape_errors_match_numpy(sa, sb):
    expected = _error(lambda: np.matmul(np.ones(sa, np.float32), np.ones(sb, np.float32)))
    assert _error(lambda: bd.matmul(np.ones(sa, bfloat16), np.ones(sb, bfloat16))) == expected


@pytest.mark.parametrize("sa,sb", BROADCAST_MISMATCH)
def test_function_broadcast_errors_match_numpy(sa, sb):
    expected = _error(lambda: np.matmul(np.ones(sa, np.float32), np.ones(sb, np.float32)))
    assert _error(lambda: bd.matmul(np.ones(sa, bfloat16), np.ones(sb, bfloat16))) == expected


def test_function_broadcast_error_type():
    with pytest.raises(ValueError, match="could not be broadcast"):
        bd.matmul(np.ones((2, 3, 4), bfloat16), np.ones((3, 4, 2), bfloat16))


# ----------------------------------------------------------------------------------------------
# out=
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("sa,sb", [((4, 5), (5, 3)), ((2, 1, 3, 4), (5, 4, 2)), ((5,), (5, 3)),
                                   ((4, 5), (5,))])
def test_out_bf16_and_float32(rng, sa, sb):
    a, A = make(rng, sa)
    b, B = make(rng, sb)
    shape = np.matmul(A, B).shape
    out = np.full(shape, np.nan, np.float32)
    assert bd.matmul(a, b, out=out) is out
    assert_f32_close(out, A, B)
    outb = np.zeros(shape, bfloat16)
    assert bd.matmul(a, b, out=outb) is outb
    assert_bf16_close(outb, A, B)
    assert np.array_equal(bits_of(outb), reference_round(out))
    outc = np.zeros(shape, bfloat16)
    assert np.matmul(a, b, out=outc) is outc
    assert np.array_equal(bits_of(outc), bits_of(outb))
    # explicit out_dtype agreeing with out
    out2 = np.empty(shape, np.float32)
    assert bd.matmul(a, b, out=out2, out_dtype=np.float32) is out2
    assert np.array_equal(out2, out)


def test_out_noncontiguous_and_float64(rng):
    a, A = make(rng, (6, 9))
    b, B = make(rng, (9, 7))
    big = np.full((6, 14), np.nan, np.float32)
    out = big[:, ::2]
    assert bd.matmul(a, b, out=out) is out
    assert_f32_close(out, A, B)
    assert np.isnan(big[:, 1::2]).all()  # untouched
    bigb = np.zeros((12, 7), bfloat16)
    outb = bigb[::-2]
    assert bd.matmul(a, b, out=outb) is outb
    assert np.array_equal(bits_of(outb), bits_of(a @ b))
    out64 = np.empty((6, 7), np.float64)
    assert bd.matmul(a, b, out=out64) is out64
    assert np.array_equal(out64, bd.matmul(a, b, out_dtype=np.float32).astype(np.float64))


def test_out_errors(rng):
    a, b = np.ones((4, 5), bfloat16), np.ones((5, 3), bfloat16)
    with pytest.raises(ValueError, match=r"\(4, 3\)"):
        bd.matmul(a, b, out=np.empty((3, 4), np.float32))
    with pytest.raises(TypeError):
        bd.matmul(a, b, out=np.empty((4, 3), np.float32), out_dtype=bfloat16)
    with pytest.raises(TypeError):
        bd.matmul(a, b, out=[[0.0] * 3] * 4)


def test_out_is_an_input(rng):
    a, _ = make(rng, (40, 40))
    b, _ = make(rng, (40, 40))
    expected = bits_of(a @ b)
    a1 = a.copy()
    assert bd.matmul(a1, b, out=a1) is a1
    assert np.array_equal(bits_of(a1), expected)
    b1 = b.copy()
    assert bd.matmul(a, b1, out=b1) is b1
    assert np.array_equal(bits_of(b1), expected)
    a2 = a.copy()
    np.matmul(a2, b, out=a2)
    assert np.array_equal(bits_of(a2), expected)
    b2 = b.copy()
    np.matmul(a, b2, out=b2)
    assert np.array_equal(bits_of(b2), expected)
    c = a.copy()
    assert bd.matmul(c, c, out=c) is c
    assert np.array_equal(bits_of(c), bits_of(a @ a))


def test_out_partially_overlaps_inputs(rng):
    base, _ = make(rng, (24, 48))
    b, _ = make(rng, (24, 24))
    for a_sl, o_sl in [((slice(None), slice(0, 24)), (slice(None), slice(12, 36))),
                       ((slice(None), slice(24, 48)), (slice(None), slice(0, 48, 2))),
                       ((slice(None), slice(0, 24)), (slice(None, None, -1), slice(24, 0, -1)))]:
        for fn in (bd.matmul, np.matmul):
            buf = base.copy()
            a = buf[a_sl]
            expected = bits_of(a.copy() @ b)
            out = buf[o_sl]
            assert np.shares_memory(a, out)
            fn(a, b, out=out)
            assert np.array_equal(bits_of(out), expected), fn


def test_float32_out_overlapping_bf16_input(rng):
    a0, _ = make(rng, (8, 8))
    b, _ = make(rng, (8, 8))
    raw = np.zeros(8 * 8 * 4, np.uint8)
    a = raw[: a0.nbytes].view(bfloat16).reshape(8, 8)
    a[...] = a0
    out = raw.view(np.float32).reshape(8, 8)
    expected = bd.matmul(a0, b, out_dtype=np.float32)
    assert bd.matmul(a, b, out=out) is out
    assert np.array_equal(out, expected)


# ----------------------------------------------------------------------------------------------
# numpy entry points on bfloat16 arrays
# ----------------------------------------------------------------------------------------------

def test_numpy_entry_points(rng):
    a, A = make(rng, (13, 37))
    b, B = make(rng, (37, 11))
    v, V = make(rng, (37,))
    w, W = make(rng, (13,))
    for res in (a @ b, np.matmul(a, b), np.dot(a, b), a.dot(b), np.tensordot(a, b, axes=1),
                np.einsum("ij,jk->ik", a, b, optimize=True), np.inner(a, b.T)):
        assert res.dtype == BF16
        assert_bf16_close(res, A, B)
    if HAS_MATVEC:
        assert_bf16_close(np.matvec(a, v), A, V)
        assert_bf16_close(np.vecmat(w, a), W, A)
    assert_bf16_close(np.dot(a, v), A, V)
    assert_bf16_close(np.dot(w, a), W, A)
    r = np.vdot(a[0], a[1])
    assert np.asarray(r).dtype == BF16 and np.ndim(r) == 0
    assert_bf16_close(np.asarray(r), A[0], A[1])
    r = np.vdot(a, a)  # flattens
    assert_bf16_close(np.asarray(r), A.ravel(), A.ravel())
    vd = np.vecdot(a, a)
    assert vd.dtype == BF16 and vd.shape == (13,)
    tol_ref = np.einsum("ij,ij->i", A, A)
    bound = 37 * U * np.einsum("ij,ij->i", np.abs(A), np.abs(A))
    assert np.all(np.abs(widen(vd) - tol_ref) <= bound + half_ulp_bf16(np.abs(tol_ref) + bound))


def test_einsum_without_optimize_is_a_numpy_limitation(rng):
    # numpy's C einsum only knows builtin dtypes; optimize=True goes through tensordot/dot.
    a = np.ones((2, 3), bfloat16)
    with pytest.raises(TypeError, match="invalid data type for einsum"):
        np.einsum("ij,jk->ik", a, a.T)


def test_tensordot_3d(rng):
    a, A = make(rng, (3, 4, 5))
    b, B = make(rng, (4, 3, 6))
    res = np.tensordot(a, b, axes=([1, 0], [0, 1]))
    assert res.dtype == BF16 and res.shape == (5, 6)
    ref = np.tensordot(A, B, axes=([1, 0], [0, 1]))
    bound = 12 * U * np.tensordot(np.abs(A), np.abs(B), axes=([1, 0], [0, 1]))
    assert np.all(np.abs(widen(res) - ref) <= bound + half_ulp_bf16(np.abs(ref) + bound))


def test_np_dot_nd(rng):
    a, A = make(rng, (2, 3, 5))
    b, B = make(rng, (4, 5, 6))
    res = np.dot(a, b)
    assert res.dtype == BF16 and res.shape == (2, 3, 4, 6)
    ref = np.dot(A, B)
    bound = 5 * U * np.dot(np.abs(A), np.abs(B))
    assert np.all(np.abs(widen(res) - ref) <= bound + half_ulp_bf16(np.abs(ref) + bound))


@needs_matvec
def test_batched_gufuncs(rng):
    a, A = make(rng, (3, 1, 6, 9))
    v, V = make(rng, (4, 9))
    r = np.matvec(a, v)
    assert r.dtype == BF16 and r.shape == (3, 4, 6)
    ref = np.matmul(A, V[..., None])[..., 0]
    bound = 9 * U * np.matmul(np.abs(A), np.abs(V)[..., None])[..., 0]
    assert np.all(np.abs(widen(r) - ref) <= bound + half_ulp_bf16(np.abs(ref) + bound))
    w, W = make(rng, (4, 6))
    r = np.vecmat(w, a)
    assert r.shape == (3, 4, 9)
    ref = np.matmul(W[..., None, :], A)[..., 0, :]
    bound = 6 * U * np.matmul(np.abs(W)[..., None, :], np.abs(A))[..., 0, :]
    assert np.all(np.abs(widen(r) - ref) <= bound + half_ulp_bf16(np.abs(ref) + bound))


def test_promotion_with_other_float_types(rng):
    a, A = make(rng, (5, 7))
    b, B = make(rng, (7, 3))
    b32 = B.astype(np.float32)
    r = a @ b32
    assert r.dtype == F32
    assert_f32_close(r, A, B)
    assert (b32.T @ a.T).dtype == F32
    assert np.matmul(a, B).dtype == F64
    assert bd.matmul(a, b32).dtype == F32
    assert_f32_close(bd.matmul(a, b32), A, B)


def test_function_converts_mixed_inputs(rng):
    # non-bf16 operands are rounded to bfloat16 first (the reference uses the rounded values)
    f = rng.standard_normal((9, 31)).astype(np.float32)
    g = rng.standard_normal((31, 5)).astype(np.float32)
    F = exact_f32(reference_round(f)).astype(np.float64)
    G = exact_f32(reference_round(g)).astype(np.float64)
    r = bd.matmul(f, g)
    assert r.dtype == F32
    assert_f32_close(r, F, G)
    h16 = g.astype(np.float16)
    H = exact_f32(reference_round(h16.astype(np.float32))).astype(np.float64)
    r = bd.matmul(f.astype(bfloat16), h16)
    assert r.dtype == (np.empty(0, bfloat16) + np.empty(0, np.float16)).dtype
    assert_f32_close(np.asarray(r, np.float32), F, H)
    r = bd.matmul(f, g, out_dtype=bfloat16)
    assert_bf16_close(r, F, G)
    assert_f32_close(bd.matmul(f.tolist(), g.tolist(), out_dtype=np.float32), F, G)


def test_function_integer_inputs():
    # ints become bfloat16 (257 -> 256), int @ int gives bfloat16
    a = np.array([[257, 2], [3, -4]], np.int64)
    b = np.array([[1, 0], [1, 1]], np.int8)
    r = bd.matmul(a, b)
    assert r.dtype == BF16
    np.testing.assert_array_equal(widen(r), [[258, 2], [-1, -4]])
    r = bd.matmul(a, b, out_dtype=np.float32)
    np.testing.assert_array_equal(r, [[258, 2], [-1, -4]])
    i8 = np.array([[100, 27], [-128, 1]], np.int8)  # 100*100 + 27*27 = 10729 -> 10752
    assert widen(bd.matmul(i8, i8.T))[0, 0] == 10752
    x = np.ones((2, 2), bfloat16)
    # mixed bf16 @ int follows the package's elementwise promotion
    for t in (np.int8, np.uint8, np.bool_, np.int64):
        r = bd.matmul(x, np.ones((2, 2), t))
        assert r.dtype == (np.empty(0, bfloat16) + np.empty(0, t)).dtype
        np.testing.assert_array_equal(np.asarray(r, np.float64), 2.0)


def test_function_rejects_non_numeric():
    with pytest.raises(TypeError, match="real numeric"):
        bd.matmul(np.ones((2, 2), bfloat16), np.ones((2, 2), np.complex64))
    with pytest.raises(TypeError, match="out_dtype"):
        bd.matmul(np.ones((2, 2), bfloat16), np.ones((2, 2), bfloat16), out_dtype="not a dtype")


# ----------------------------------------------------------------------------------------------
# helper functions: dot, inner, vdot, matvec, vecmat
# ----------------------------------------------------------------------------------------------

def test_dot_helper(rng):
    a, A = make(rng, (6, 40))
    b, B = make(rng, (40, 5))
    assert_bf16_close(bd.dot(a, b), A, B)
    assert_f32_close(bd.dot(a, b, out_dtype=np.float32), A, B)
    v, V = make(rng, (40,))
    assert_bf16_close(bd.dot(a, v), A, V)
    assert_bf16_close(bd.dot(v, v), V, V)
    # N-d: numpy's dot semantics
    a3, A3 = make(rng, (2, 3, 40))
    b3, B3 = make(rng, (4, 40, 5))
    r = bd.dot(a3, b3, out_dtype=np.float32)
    ref = np.dot(A3, B3)
    assert r.shape == ref.shape == (2, 3, 4, 5)
    assert np.all(np.abs(r - ref) <= 40 * U * np.dot(np.abs(A3), np.abs(B3)))
    assert_f32_close(bd.dot(a3, v, out_dtype=np.float32), A3, V)
    # scalars multiply
    s = bd.dot(np.array(3, bfloat16), a)
    assert s.dtype == BF16
    np.testing.assert_array_equal(bits_of(s), reference_round((3 * A).astype(np.float32)))
    out = np.empty((6, 5), np.float32)
    assert bd.dot(a, b, out=out) is out
    with pytest.raises(ValueError, match="not aligned"):
        bd.dot(a3, np.ones((4, 39, 5), bfloat16))


def test_inner_helper(rng):
    a, A = make(rng, (4, 3, 33))
    b, B = make(rng, (5, 33))
    r = bd.inner(a, b)
    ref = np.inner(A, B)
    assert r.dtype == BF16 and r.shape == ref.shape == (4, 3, 5)
    bound = 33 * U * np.inner(np.abs(A), np.abs(B))
    assert np.all(np.abs(widen(r) - ref) <= bound + half_ulp_bf16(np.abs(ref) + bound))
    r32 = bd.inner(a, b, out_dtype=np.float32)
    assert r32.dtype == F32 and np.all(np.abs(r32 - ref) <= bound)
    with pytest.raises(ValueError, match="not aligned"):
        bd.inner(a, np.ones((5, 32), bfloat16))


def test_vdot_helper(rng):
    a, A = make(rng, (7, 9))
    b, B = make(rng, (63,))
    r = bd.vdot(a, b, out_dtype=np.float32)
    ref = A.ravel() @ B
    assert np.ndim(r) == 0 and abs(float(r) - ref) <= 63 * U * (np.abs(A.ravel()) @ np.abs(B))
    rb = bd.vdot(a, b)
    assert np.asarray(rb).dtype == BF16
    assert_bf16_close(np.asarray(rb), A.ravel(), B)
    with pytest.raises(ValueError, match="different sizes"):
        bd.vdot(a, b[:-1])
    assert float(bd.vdot(np.empty(0, bfloat16), np.empty(0, bfloat16))) == 0.0


def test_matvec_vecmat_helpers(rng):
    a, A = make(rng, (2, 70, 50))
    v, V = make(rng, (50,))
    w, W = make(rng, (3, 1, 70))
    r = bd.matvec(a, v)
    assert r.dtype == BF16 and r.shape == (2, 70)
    ref = A @ V
    bound = 50 * U * (np.abs(A) @ np.abs(V))
    assert np.all(np.abs(widen(r) - ref) <= bound + half_ulp_bf16(np.abs(ref) + bound))
    assert np.array_equal(bits_of(r), bits_of(np.matvec(a, v) if HAS_MATVEC else a @ v))
    r32 = bd.matvec(a, v, out_dtype=np.float32)
    assert r32.dtype == F32 and np.all(np.abs(r32 - ref) <= bound)
    r = bd.vecmat(w, a)
    ref = np.matmul(W[..., None, :], A)[..., 0, :]
    assert r.shape == ref.shape == (3, 2, 50)
    bound = 70 * U * np.matmul(np.abs(W)[..., None, :], np.abs(A))[..., 0, :]
    assert np.all(np.abs(widen(r) - ref) <= bound + half_ulp_bf16(np.abs(ref) + bound))
    out = np.empty((2, 70), np.float32)
    assert bd.matvec(a, v, out=out) is out
    assert np.all(np.abs(out - A @ V) <= 50 * U * (np.abs(A) @ np.abs(V)) + half_ulp_bf16(np.abs(A @ V)))
    with pytest.raises(ValueError):
        bd.matvec(a, v, out=np.empty((70, 2), np.float32))


# ----------------------------------------------------------------------------------------------
# threads
# ----------------------------------------------------------------------------------------------

THREAD_CASES = [((300, 300), (300, 300)),   # GEMM, above the multithreading threshold
                ((257, 700), (700, 129)),   # K > KC: float32 tile path
                ((1024, 512), (512,)),      # GEMV, > 512 KiB matrix
                ((512,), (512, 1024))]


@pytest.mark.parametrize("sa,sb", THREAD_CASES)
def test_results_do_not_depend_on_thread_count(rng, sa, sb):
    a, _ = make(rng, sa)
    b, _ = make(rng, sb)
    results = []
    for n in (1, 2, 3):
        with bd.num_threads(n):
            results.append((bits_of(bd.matmul(a, b)), bd.matmul(a, b, out_dtype=np.float32),
                            bits_of(a @ b)))
    for r in results[1:]:
        assert np.array_equal(r[0], results[0][0])
        assert np.array_equal(r[1].view(np.uint32), results[0][1].view(np.uint32))
        assert np.array_equal(r[2], results[0][2])
    # operator and function share the kernel: same bits
    assert np.array_equal(results[0][0], results[0][2])


def test_concurrent_python_threads(rng):
    matvec = np.matvec if HAS_MATVEC else np.matmul
    a, _ = make(rng, (200, 300))
    b, _ = make(rng, (300, 150))
    v, _ = make(rng, (300,))
    expected = (bits_of(a @ b), bd.matmul(a, b, out_dtype=np.float32).view(np.uint32),
                bits_of(matvec(a, v)))
    barrier = threading.Barrier(4)
    failures, errors = [], []

    def work():
        try:
            barrier.wait()
            for _ in range(5):
                got = (bits_of(a @ b), bd.matmul(a, b, out_dtype=np.float32).view(np.uint32),
                       bits_of(matvec(a, v)))
                if not all(np.array_equal(g, e) for g, e in zip(got, expected)):
                    failures.append(got)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    with bd.num_threads(2):
        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert not errors, errors
    assert not failures


@pytest.mark.parametrize("bad,exc", [(0, ValueError), (-1, ValueError), ("2", TypeError),
                                     (2.0, TypeError), (None, TypeError), (True, TypeError),
                                     (10 ** 6, ValueError), (1025, ValueError)])
def test_set_num_threads_validation(bad, exc):
    before = bd.get_num_threads()
    with pytest.raises(exc, match=repr(bad).replace("(", r"\(").replace(")", r"\)")):
        bd.set_num_threads(bad)
    assert bd.get_num_threads() == before


def test_set_num_threads_huge_value():
    with pytest.raises(ValueError, match=str(2 ** 64)):
        bd.set_num_threads(2 ** 64)


def test_set_num_threads_accepts_numpy_ints():
    before = bd.get_num_threads()
    try:
        bd.set_num_threads(np.int64(1))
        assert bd.get_num_threads() == 1
        bd.set_num_threads(np.uint8(2))
        assert bd.get_num_threads() == 2
    finally:
        bd.set_num_threads(before)


def test_num_threads_context_manager_restores():
    before = bd.get_num_threads()
    with bd.num_threads(1):
        assert bd.get_num_threads() == 1
        with bd.num_threads(3):
            assert bd.get_num_threads() == 3
        assert bd.get_num_threads() == 1
    assert bd.get_num_threads() == before
    with pytest.raises(RuntimeError):
        with bd.num_threads(1):
            raise RuntimeError("boom")
    assert bd.get_num_threads() == before
    with pytest.raises(ValueError, match="0"):
        with bd.num_threads(0):
            pass  # pragma: no cover
    assert bd.get_num_threads() == before


def test_default_num_threads_from_environment(tmp_path):
    code = "import bfloat16_dtype as bd; print(bd.get_num_threads())"
    env = dict(os.environ, BFLOAT16_DTYPE_NUM_THREADS="3")
    # run outside the checkout so the installed package is imported, not the source folder
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, cwd=tmp_path).stdout
    assert out.strip() == "3"
    # leading zeros: the kernel's strtol reads 3, and no warning says otherwise
    env["BFLOAT16_DTYPE_NUM_THREADS"] = "0" * 20 + "3"
    run = subprocess.run([sys.executable, "-W", "error", "-c", code], env=env, capture_output=True,
                         text=True, cwd=tmp_path)
    assert run.returncode == 0 and run.stdout.strip() == "3", run.stderr[-500:]


@pytest.mark.parametrize("value", ["0", "-3", "abc", "2000", "1_0", "\u0663", "1e2", "9" * 5000])
def test_unusable_thread_environment_warns(tmp_path, value):
    """An unusable BFLOAT16_DTYPE_NUM_THREADS is ignored by the kernel (every CPU is used), with
    a RuntimeWarning at import instead of silently; 1024 is the most set_num_threads takes."""
    code = ("import warnings, os; warnings.simplefilter('always')\n"
            "import bfloat16_dtype as bd; print(bd.get_num_threads() == os.cpu_count())")
    env = dict(os.environ, BFLOAT16_DTYPE_NUM_THREADS=value)
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, cwd=tmp_path)
    assert res.stdout.strip() == "True"
    assert "RuntimeWarning" in res.stderr and "BFLOAT16_DTYPE_NUM_THREADS" in res.stderr
    before = bd.get_num_threads()
    bd.set_num_threads(1024)
    try:
        assert bd.get_num_threads() == 1024
    finally:
        bd.set_num_threads(before)


def test_dot_contiguous_and_strided_same_bits(rng):
    """np.dot of two 1-d arrays (the dtype's dot function): the contiguous vector loop adds in
    the strided loop's 8 lanes and order, so both give the same bits, within the float32
    accumulation bound of the float64 product; and a 1 x 1 matmul takes the GEMV path."""
    for n in (0, 1, 7, 8, 9, 15, 16, 17, 100, 1000, 4099):
        a, A = make(rng, (n,))
        b, B = make(rng, (n,))
        spread_a = np.zeros(2 * n, bfloat16)
        spread_b = np.zeros(3 * n, bfloat16)
        spread_a[::2], spread_b[::3] = a, b
        got = np.dot(a, b)
        assert bits_of(got) == bits_of(np.dot(spread_a[::2], spread_b[::3])), n
        ref = float(np.dot(A, B))
        bound = (n + 2) * U * float(np.dot(np.abs(A), np.abs(B))) + abs(ref) * 2.0**-8
        assert abs(float(got) - ref) <= bound, n
        if n:
            mm = a.reshape(1, n) @ b.reshape(n, 1)
            assert abs(float(mm[0, 0]) - ref) <= bound, n
    # lanes 0 and 4 cancel exactly when combined first, as the 8-lane order does: 2, not 0
    a = np.array([2.0**15, 1, 0, 0, -(2.0**15), 1, 0, 0] * 3, bfloat16)
    b = np.array([2.0**15, 1, 0, 0, 2.0**15, 1, 0, 0] * 3, bfloat16)
    assert float(np.dot(a, b)) == 6.0
    assert float(np.dot(a[::-1][::-1], b)) == 6.0
    # specials: overflowing products, infinities, NaNs, zeros of both signs, subnormals
    special = np.array([3e38, -3e38, 2.0**100, np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-39, 1.0],
                       bfloat16)
    for n in (8, 9, 16, 23, 40):
        for _ in range(30):
            x, y = rng.choice(special, n), rng.choice(special, n)
            sx, sy = np.zeros(2 * n, bfloat16), np.zeros(3 * n, bfloat16)
            sx[::2], sy[::3] = x, y
            with np.errstate(all="ignore"):
                got, want = bits_of(np.dot(x, y)), bits_of(np.dot(sx[::2], sy[::3]))
            assert got == want or ((got & 0x7FFF) > 0x7F80 and (want & 0x7FFF) > 0x7F80), (x, y)


# ---- the functions' own paths (out=, out_dtype=, conversions) ---------------------------

def test_fp_warnings_from_every_entry_point():
    """Overflow and invalid results warn (or raise, under np.errstate) from the functions' own
    paths too (out=, out_dtype=, converted inputs), as from the operator and as float32's."""
    big = np.full((2, 2), 3e38, bfloat16)
    calls = [lambda: bd.matmul(big, big, out_dtype=np.float32),
             lambda: bd.matmul(big, big, out=np.empty((2, 2), bfloat16)),
             lambda: bd.matvec(big, big[0], out=np.empty(2, np.float32)),
             lambda: bd.matmul(big.astype(np.float32), big),
             lambda: big @ big]
    for call in calls:
        with pytest.warns(RuntimeWarning, match="overflow encountered in matmul"):
            assert np.isinf(call()).all()
        with np.errstate(over="raise"), pytest.raises(FloatingPointError, match="overflow"):
            call()
    x = np.array([[np.inf, 1], [np.nan, 0]], bfloat16)
    y = np.array([[0, 1], [1, 1]], bfloat16)
    with np.errstate(invalid="raise"), pytest.raises(FloatingPointError, match="invalid"):
        bd.matmul(x, y, out=np.empty((2, 2), bfloat16))
    with np.errstate(all="raise"):                          # an infinite operand alone: silent
        bd.matmul(np.array([[np.inf, 1.0]], bfloat16), np.ones((2, 1), bfloat16), out_dtype=np.float32)


def test_float32_out_receives_the_accumulator(rng):
    """out= of float32 gets the float32 accumulator from every function, as out_dtype=float32."""
    M = rng.standard_normal((4, 50)).astype(bfloat16)
    v = rng.standard_normal(50).astype(bfloat16)
    want = bd.matmul(M, v, out_dtype=np.float32)
    assert want.dtype == np.float32
    exact = M.astype(np.float64) @ v.astype(np.float64)
    assert np.abs(want - exact).max() < 50 * 2.0**-24 * (np.abs(M.astype(np.float64)) @ np.abs(v.astype(np.float64))).max()
    for got in (bd.matvec(M, v, out=np.empty(4, np.float32)),
                bd.vecmat(v, M.T, out=np.empty(4, np.float32)),
                bd.dot(M[np.newaxis], v[:, np.newaxis], out=np.empty((1, 4, 1), np.float32)).ravel()):
        np.testing.assert_array_equal(got, want)
    one = np.float32(1 + 2**-7)                             # 0-d: the exact product, unrounded
    assert bd.dot(one, one, out_dtype=np.float32) == np.float32(1 + 2**-6 + 2**-14)


def test_zero_length_k_gives_zeros_everywhere():
    assert bd.inner(np.zeros((2, 0), bfloat16), np.zeros((3, 0), bfloat16)).tolist() == [[0] * 3] * 2
    got = bd.dot(np.zeros((2, 3, 0), bfloat16), np.zeros((4, 0, 6), bfloat16))
    assert got.shape == (2, 3, 4, 6) and not got.astype(np.float32).any()
    assert np.inner(np.zeros((2, 0), np.float32), np.zeros((3, 0), np.float32)).shape == (2, 3)


def test_inner_of_vectors_is_a_scalar_like_numpy():
    v = np.array([1.5, 2.0], bfloat16)
    assert type(bd.inner(v, v)) is bfloat16 and float(bd.inner(v, v)) == 6.25
    assert np.ndim(np.inner(v.astype(np.float32), v.astype(np.float32))) == 0


@pytest.mark.parametrize("bad", [np.int32, np.int8, bool, "U5", "S1", "V2", "datetime64[s]", object])
def test_out_and_out_dtype_must_be_floating(bad):
    """As np.matmul's output casting (same_kind) refuses them for a bfloat16 result."""
    a = np.ones((2, 3), bfloat16)
    with pytest.raises(TypeError, match="bfloat16 or a floating-point dtype"):
        bd.matmul(a, a.T, out_dtype=bad)
    with pytest.raises(TypeError, match="bfloat16 or a floating-point dtype"):
        bd.matmul(a, a.T, out=np.empty((2, 2), bad))
    with pytest.raises(TypeError, match="bfloat16 or a floating-point dtype"):
        bd.matvec(a, a[0], out=np.empty(2, bad))
    with pytest.raises(TypeError, match="same_kind"):              # NumPy's own rule
        np.matmul(a, a.T, out=np.empty((2, 2), np.int32))
    for ok in (np.float16, np.float64, np.complex64):
        assert bd.matmul(a, a.T, out_dtype=ok).dtype == ok


def test_matvec_vecmat_need_their_core_dimensions():
    v = np.ones(3, bfloat16)
    with pytest.raises(ValueError, match="matvec: Input operand 0 does not have enough dimensions"):
        bd.matvec(v, v)
    with pytest.raises(ValueError, match="matvec: Input operand 1 does not have enough dimensions"):
        bd.matvec(np.ones((2, 3), bfloat16), np.ones((), bfloat16))
    with pytest.raises(ValueError, match="vecmat: Input operand 1 does not have enough dimensions"):
        bd.vecmat(v, v)
    if hasattr(np, "matvec"):
        with pytest.raises(ValueError, match="does not have enough dimensions"):
            np.matvec(v, v)


def test_other_libraries_types_convert():
    """Inputs NumPy can cast to bfloat16 (ml_dtypes' bfloat16 and float8) are converted, as
    numbers of other types are; text is refused naming the operand."""
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes not installed")
    a = np.array([[1.5, 2.0], [0.5, -1.0]], bfloat16)
    want = bd.matmul(a, a)
    got = bd.matmul(a.astype(ml_dtypes.bfloat16), a)
    assert got.dtype == np.dtype(bfloat16) and got.tobytes() == want.tobytes()
    assert bd.matmul(a.astype(ml_dtypes.float8_e4m3fn), a).astype(np.float32).tolist() == \
        want.astype(np.float32).tolist()
    with pytest.raises(TypeError, match="a must be a real numeric array"):
        bd.matmul(np.array([["x"]]), a[:1, :1])


def test_broadcast_batches_are_not_copied(rng):
    """Batches broadcast in several dimensions (which do not merge into one stride) run one
    kernel call per leading index on views: same bits as the operator, no operand copies."""
    import tracemalloc
    a = rng.standard_normal((2, 1, 256, 256)).astype(bfloat16)
    b = rng.standard_normal((1, 8, 256, 8)).astype(bfloat16)
    want = a @ b                                      # NumPy's gufunc loop: views
    tracemalloc.start()
    got = bd.matmul(a, b, out_dtype=np.float32)       # the function's own path
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert got.shape == (2, 8, 256, 8)
    assert np.array_equal(got.astype(bfloat16).view(np.uint16), want.view(np.uint16))
    assert peak < got.nbytes + 64 * 1024, peak      # the result; a copy of a would add 2 MiB
    out32 = np.empty((2, 8, 256, 8), np.float32)
    assert bd.matmul(a, b, out=out32) is out32
    assert np.array_equal(out32.astype(bfloat16).view(np.uint16), want.view(np.uint16))


def test_vector_products_and_out_rules():
    """1-D @ 1-D gives a scalar with or without out_dtype (np.matmul's rule); matvec/vecmat
    refuse an out and out_dtype that disagree, as matmul does; a byte-swapped bfloat16 out is a
    bfloat16 out; a plain void operand is refused by name."""
    v = np.array([1.5, 2.0, -0.5, 4.0], bfloat16)
    matmul, dot, matvec, vecmat = bd.matmul, bd.dot, bd.matvec, bd.vecmat
    for got in (matmul(v, v, out_dtype=np.float32), dot(v, v, out_dtype=np.float32)):
        assert type(got) is np.float32 and got == 1.5 * 1.5 + 4 + 0.25 + 16
    assert type(matmul(v, v)) is bfloat16
    a = np.ones((3, 4), bfloat16)
    for fn, args in ((matvec, (a, v)), (vecmat, (v, a.T.copy()))):
        with pytest.raises(TypeError, match="out has dtype float32 but out_dtype is bfloat16"):
            fn(*args, out=np.empty(3, np.float32), out_dtype=bfloat16)
    swapped = np.dtype(bfloat16).newbyteorder()
    out = np.empty((3, 3), swapped)
    b = np.arange(12, dtype=np.float32).reshape(4, 3).astype(bfloat16)
    assert matmul(a, b, out=out) is out
    np.testing.assert_array_equal(np.asarray(out, np.float32), np.asarray(matmul(a, b), np.float32))
    with pytest.raises(TypeError, match="real numeric"):
        matmul(np.zeros((2, 2), "V2"), np.ones((2, 2), bfloat16))


@pytest.mark.parametrize("other", [np.float32(2.5), np.float64(2.5), 2.5, 3, np.int8(3),
                                   np.array(2.5, np.float32), np.float16(2.5)])
def test_dot_with_a_zero_d_operand_promotes_like_np_dot(other):
    """bd.dot/bd.inner with a 0-d operand give np.dot's result dtype (the promotion table, as
    with arrays); the value is the exact product rounded once in that dtype."""
    x = np.array([1.5, -3.0, 0.1], bfloat16)
    want = np.dot(x, other)                     # numpy's own entry point, our promotion
    for f in (bd.dot, bd.inner):
        for got in (f(x, other), f(other, x)):
            assert got.dtype == want.dtype, (f, other, got.dtype, want.dtype)
            exact = x.astype(np.float64) * float(other)
            assert np.array_equal(got.astype(np.float64), exact.astype(want.dtype).astype(np.float64))


def test_ml_dtypes_targets_and_matrix_outputs():
    """An ml_dtypes bfloat16 out= receives the product's bits and out_dtype=ml_dtypes.bfloat16
    gives such an array, as np.matmul writes them; an np.matrix out= is filled as np.matmul
    fills it (once refused through a private function's 3-D message)."""
    a = np.array([[1.0, 2.0], [3.0, 4.5]], bfloat16)
    want = bits_of(np.matmul(a, a))
    for f in (bd.matmul, bd.dot):
        m = np.matrix(np.zeros((2, 2), bfloat16))
        assert f(a, a, out=m) is m and bits_of(np.asarray(m)).tolist() == want.tolist()
    ml_dtypes = pytest.importorskip("ml_dtypes")
    for f in (bd.matmul, bd.dot):
        out = np.zeros((2, 2), ml_dtypes.bfloat16)
        assert f(a, a, out=out) is out
        assert out.view(np.uint16).tolist() == want.tolist()
        r = f(a, a, out_dtype=ml_dtypes.bfloat16)
        assert r.dtype == np.dtype(ml_dtypes.bfloat16) and r.view(np.uint16).tolist() == want.tolist()
    # out= and out_dtype= naming bfloat16 in two forms (np.matmul(out=, dtype=) takes them)
    for out, out_dtype in ((np.zeros((2, 2), bfloat16), ml_dtypes.bfloat16),
                           (np.zeros((2, 2), ml_dtypes.bfloat16), bfloat16),
                           (np.zeros((2, 2), np.dtype(bfloat16).newbyteorder()), bfloat16)):
        for f in (bd.matmul, bd.dot):
            assert f(a, a, out=out, out_dtype=out_dtype) is out
            assert out.astype(np.float32).tolist() == np.matmul(a, a).astype(np.float32).tolist()
    v = np.array([1.0, 2.0], bfloat16)
    out = np.zeros(2, ml_dtypes.bfloat16)
    assert bd.matvec(a, v, out=out) is out
    assert out.view(np.uint16).tolist() == bits_of(np.matmul(a, v)).tolist()
    r = bd.dot(a[0, 0], v, out_dtype=ml_dtypes.bfloat16)
    assert r.dtype == np.dtype(ml_dtypes.bfloat16) and r.astype(np.float32).tolist() == [1.0, 2.0]


def test_errors_name_the_function_called():
    """Shape and type errors of dot/inner/matvec/vecmat/vdot name that function, with numpy's
    wording for it (np.dot's "not aligned", the gufunc signature of np.matvec)."""
    h = np.ones((2, 3), np.float16)
    x = np.ones((2, 3), bfloat16)
    cases = [(bd.dot, np.dot, (x, x), (h, h)), (bd.dot, np.dot, (x[0], x[0, :2]), (h[0], h[0, :2])),
             (bd.inner, np.inner, (x, x[:, :2]), (h, h[:, :2])),
             (bd.inner, np.inner, (x, np.ones((4, 5, 2), bfloat16)), (h, np.ones((4, 5, 2), np.float16)))]
    if HAS_MATVEC:
        cases += [(bd.matvec, np.matvec, (x, x[0, :2]), (h, h[0, :2])),
                  (bd.vecmat, np.vecmat, (x[0, :2], x.T), (h[0, :2], h.T))]
    for ours, theirs, args, hargs in cases:
        with pytest.raises(ValueError) as want:
            theirs(*hargs)
        with pytest.raises(ValueError) as got:
            ours(*args)
        assert str(got.value) == str(want.value)
    for f, args in ((bd.dot, (x, x.T)), (bd.matvec, (x, x[0])), (bd.vecmat, (x[:, 0], x)),
                    (bd.inner, (x, x)), (bd.vdot, (x, x))):
        with pytest.raises(TypeError, match=f"^{f.__name__}: b must be a real numeric array"):
            f(args[0], np.asarray(args[1], object))
    with pytest.raises(TypeError, match="^dot: out must be a numpy array"):
        bd.dot(x, x.T, out=[0])
    # an out= of the wrong shape names the function too (matvec's and vecmat's did not)
    for f, args, wrong in ((bd.matvec, (x, x[0]), (3,)), (bd.vecmat, (x[:, 0], x), (2,)),
                           (bd.dot, (x[0, 0], x), (3, 2)), (bd.dot, (x, np.ones((4, 3, 5), bfloat16)), (2, 5))):
        with pytest.raises(ValueError, match=f"^{f.__name__}: out has shape {re.escape(str(wrong))}"):
            f(*args, out=np.empty(wrong, bfloat16))
