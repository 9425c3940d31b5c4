"""The GEMM/GEMV kernel of the tier in force (csrc/matmul/kernel.h), layout by layout.

Every path of the kernel chosen for this process (register-block edges, KC blocks, the float32 tile,
the packers for each input layout, GEMV with 1..16 columns) is checked against the float64 product
of the exact bfloat16 values, within the float32-accumulation bound, and bit for bit across thread
counts 1/2/3/5/8. test_gemm_tiers.py runs this file again under every lower tier the CPU supports
(``BFLOAT16_DTYPE_ISA``), so each shipped kernel is exercised on this machine.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bfloat16_dtype as bd
from bfloat16_dtype import bfloat16
from conftest import exact_f32, reference_round

from conftest import TESTS_DIR, X86_64  # noqa: E402

U = 2.0 ** -24
# kernel tiers shipped on x86-64, lowest first (kernel.h's table)
SHIPPED = ("baseline", "avx2", "avx512", "avx512bf16", "amx")
TIERS = ("baseline", "avx2", "avx512", "avx512bf16", "amx")


def gemm_tier():
    """The tier of the matmul kernel in force: the tier in force, except on an Intel CPU whose
    tier stops at avx512bf16 (test_kernel_name_names_the_tier)."""
    return bd._ext._gemm_kernel.split(":")[0]


def bf16_pair_tier():
    """Whether the kernel in force multiplies with vdpbf16ps/tdpbf16ps (subnormals read as zero,
    pairs of k): avx512bf16, and amx, whose GEMV, skinny and small products are avx512bf16's."""
    return gemm_tier() in ("avx512bf16", "amx")


def gemv_ku():
    """k per GEMV lane block: 32 from the avx512 tier up, 16 below."""
    return 32 if TIERS.index(gemm_tier()) >= TIERS.index("avx512") else 16


def make(rng, shape):
    f = rng.standard_normal(shape).astype(np.float32)
    bits = reference_round(f)
    return bits.view(bfloat16), exact_f32(bits).astype(np.float64)


def f32_bits(x):
    return np.ascontiguousarray(x).view(np.uint32)


def bf16_bits(x):
    return np.ascontiguousarray(x).view(np.uint16)


def check_bound(res32, A, B):
    """|res - exact| <= K u sum|a||b| (float32 sums of exact products)."""
    ref = A @ B
    bound = A.shape[-1] * U * (np.abs(A) @ np.abs(B)) * (1 + 1e-12)
    err = np.abs(res32.astype(np.float64) - ref)
    assert np.all(err <= bound), float((err - bound).max())


def check_bf16_is_rounded_f32(res16, res32):
    """The bfloat16 output is the float32 accumulator rounded once (same kernel path)."""
    assert np.array_equal(bf16_bits(res16), reference_round(res32))


@pytest.fixture
def rng():
    return np.random.default_rng(2024)


def expected_kernel_tier(tier, intel, cap):
    """The matmul kernel's tier for the tier in force: that tier's kernel, except that an Intel
    CPU stopping at avx512bf16 runs the avx512 kernel unless the cap asks for avx512bf16 (an
    Intel core issues vdpbf16ps at half the FMA's rate: README, "On an Intel Xeon with AMX")."""
    if not X86_64:
        return "baseline"
    if tier == "avx512bf16" and intel and cap != "avx512bf16":
        return "avx512"
    return SHIPPED[min(TIERS.index(tier), len(SHIPPED) - 1)]


def test_kernel_name_names_the_tier():
    info = bd.config()
    expected = expected_kernel_tier(info["tier"], info["intel"], info["cap"])
    assert gemm_tier() == expected, bd._ext._gemm_kernel
    assert info["components"]["matmul (GEMM/GEMV)"].startswith(bd._ext._gemm_kernel)


@pytest.mark.parametrize("intel", [False, True])
@pytest.mark.parametrize("tier,cap", [(t, c) for t in TIERS for c in TIERS  # the tier never exceeds the cap
                                      if TIERS.index(t) <= TIERS.index(c)])
def test_kernel_choice_rule(tier, intel, cap):
    """The choice for CPUs this machine is not (an Intel one without usable AMX, say): every tier,
    vendor and cap through the same C function the import uses."""
    got = bd._ext._gemm_kernel_for(tier, intel, cap).split(":")[0]
    assert got == expected_kernel_tier(tier, intel, cap)


def test_kernel_choice_rejects_unknown_tiers():
    with pytest.raises(ValueError, match="unknown tier 'avx9'"):
        bd._ext._gemm_kernel_for("avx9", True, "amx")
    with pytest.raises(ValueError, match="unknown tier 'x'"):
        bd._ext._gemm_kernel_for("amx", False, "x")


# (M, K, N): register-block edges of every kernel (6x16, 14x32), K across KC (256, 4096) and not a
# multiple of 8, the float32 tile (K > KC with bfloat16 output), A blocks of 42 rows (avx512bf16:
# MC for K >= 4096)
GEMM_SHAPES = [(1, 1, 1), (13, 7, 31), (14, 9, 32), (15, 33, 33), (29, 300, 65), (70, 257, 97),
               (45, 600, 130), (20, 1025, 40), (15, 4097, 33), (100, 4100, 40)]
LAYOUTS = ["cc", "tc", "ct", "tt", "ss"]  # A/B: c contiguous, t transposed copy, s strided


def laid_out(x, kind):
    if kind == "c":
        return x
    if kind == "t":
        return np.ascontiguousarray(x.T).T
    big = np.zeros((x.shape[0] * 2, x.shape[1] * 3), x.dtype)
    big[::2, ::3] = x
    return big[::2, ::3]


@pytest.mark.parametrize("shape", GEMM_SHAPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_gemm_within_bound(rng, shape, layout):
    m, k, n = shape
    a, A = make(rng, (m, k))
    b, B = make(rng, (k, n))
    a, b = laid_out(a, layout[0]), laid_out(b, layout[1])
    with bd.num_threads(1):
        r32 = bd.matmul(a, b, out_dtype=np.float32)
        r16 = bd.matmul(a, b)
        rt = bd.matmul(a, b, out=np.empty((n, m), np.float32).T)  # C with unit row stride
    check_bound(r32, A, B)
    check_bf16_is_rounded_f32(r16, r32)
    assert np.array_equal(f32_bits(rt), f32_bits(r32))


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 70), k=st.integers(1, 600), n=st.integers(1, 70),
       layout=st.sampled_from(LAYOUTS), seed=st.integers(0, 2**32 - 1))
def test_random_shapes_and_layouts_within_bound(m, k, n, layout, seed):
    """Any shape and layout: every path (GEMM, GEMV either way, edges) within the bound, and the
    bfloat16 output is the float32 one rounded once."""
    rng = np.random.default_rng(seed)
    a, A = make(rng, (m, k))
    b, B = make(rng, (k, n))
    a, b = laid_out(a, layout[0]), laid_out(b, layout[1])
    r32 = bd.matmul(a, b, out_dtype=np.float32)
    check_bound(r32, A, B)
    check_bf16_is_rounded_f32(bd.matmul(a, b), r32)


# (M, K, N) on the GEMM and small-product paths with K <= KC (one k block), none of them routed to
# GEMV: both sides wider than 16, or square with k < 128; row/column remainders of every tile
SEQUENTIAL_SHAPES = [(17, 1, 17), (16, 16, 16), (5, 7, 5), (16, 100, 16), (20, 128, 64), (97, 64, 40),
                     (100, 128, 64), (33, 129, 65), (70, 256, 64), (300, 200, 17), (50, 50, 200),
                     (100, 256, 100), (1, 37, 1), (1, 64, 1)]  # (the last two: short dot products)


def sequential_sums(A, B):
    """Each element summed from +0 in increasing k in float32 (exact bfloat16 products)."""
    A, B = A.astype(np.float32), B.astype(np.float32)
    acc = np.zeros((A.shape[0], B.shape[1]), np.float32)
    for k in range(A.shape[1]):
        acc = acc + A[:, k, None] * B[None, k, :]
    return acc


TINY = np.float32(2.0 ** -126)


def ftz(x):
    """float32 values below the smallest normal flushed to zero, sign kept (vdpbf16ps)."""
    return np.where(np.abs(x) < TINY, np.copysign(np.float32(0), x), x).astype(np.float32)


def pair_sums(A, B):
    """The avx512bf16 kernel's documented order (csrc/matmul/gemm_avx512bf16.c): from +0, for each
    pair of k (k even) acc = (acc + a[k+1] b[k+1]) + a[k] b[k] in float32, the odd k of the pair
    first (an odd K pads the last pair with 0), subnormal inputs read as 0, subnormal sums flushed."""
    A, B = ftz(A.astype(np.float32)), ftz(B.astype(np.float32))
    acc = np.zeros((A.shape[0], B.shape[1]), np.float32)
    for k in range(0, A.shape[1], 2):
        if k + 1 < A.shape[1]:
            acc = ftz(acc + A[:, k + 1, None] * B[None, k + 1, :])
        acc = ftz(acc + A[:, k, None] * B[None, k, :])
    return acc


def takes_small_path(m, k, n):
    """The driver's small-product path (csrc/matmul/gemm.c, make_plan) for the shapes used here."""
    return k <= 128 and min(m, n) <= 64 and 2.0 * m * k * n < 3e6


def kernel_sums(A, B):
    """The order of the kernel in force for a product of one k block (K <= KC) on the GEMM or
    small path; 1 x 1 products with K <= 64 are one sequential sum on every tier (PATH_DOT).
    None for the amx kernel's GEMM path: tdpbf16ps rounds a block of 32 products its own way
    (csrc/matmul/gemm_amx.c), no order is documented there."""
    m, k, n = A.shape[0], A.shape[1], B.shape[1]
    if (m == 1 and n == 1 and k <= 64) or not bf16_pair_tier():
        return sequential_sums(A, B)
    if gemm_tier() == "amx" and not takes_small_path(m, k, n):
        return None
    return pair_sums(A, B)


@pytest.mark.parametrize("shape", SEQUENTIAL_SHAPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_gemm_sums_in_increasing_k_from_zero(rng, shape, layout):
    """The GEMM and small-product paths give exactly the documented order's float32 bits (kernel.h;
    pairs of k at the avx512bf16 tier), with float32, strided float32 and bfloat16 output."""
    m, k, n = shape
    a, A = make(rng, (m, k))
    b, B = make(rng, (k, n))
    a, b = laid_out(a, layout[0]), laid_out(b, layout[1])
    expected = kernel_sums(A, B)
    if expected is None:
        # the amx GEMM path: within the bound, and the same bits for every layout (the packers
        # make the same panels) and thread count
        with bd.num_threads(1):
            expected = bd.matmul(np.ascontiguousarray(a), np.ascontiguousarray(b), out_dtype=np.float32)
        check_bound(expected, A, B)
    expected = f32_bits(expected)
    for threads in (1, 2):
        with bd.num_threads(threads):
            r32 = bd.matmul(a, b, out_dtype=np.float32)
            rt = bd.matmul(a, b, out=np.empty((n, m), np.float32).T)
            r16 = bd.matmul(a, b)
        assert np.array_equal(f32_bits(r32), expected), (shape, layout, threads)
        assert np.array_equal(f32_bits(rt), expected), (shape, layout, threads)
        check_bf16_is_rounded_f32(r16, r32)


def test_column_panels_narrower_than_a_threads_columns(rng):
    """K = 4096: the avx512bf16 kernel cuts its B panels to 512 columns (nc_kc), so one thread
    runs three column panels here and two threads two each; every thread count gives the same
    bits, within the bound."""
    m, k, n = 20, 4096, 1300
    a, A = make(rng, (m, k))
    b, B = make(rng, (k, n))
    results = []
    for threads in (1, 2, 3):
        with bd.num_threads(threads):
            results.append(f32_bits(bd.matmul(a, b, out_dtype=np.float32)))
    check_bound(results[0].view(np.float32), A, B)
    for r in results[1:]:
        assert np.array_equal(r, results[0])


# KC of each tier's kernel (csrc/matmul/README.md, kernel table)
KC = {"baseline": 256, "avx2": 256, "avx512": 256, "avx512bf16": 4096, "amx": 1024}


# K = 4 KC + 1, 2.7 KC and 32 KC + 1 at KC = 256; 2 KC + 1 (a last block of one k) at KC = 4096;
# KC + 1, one block and 8 KC + 1 at KC = 1024 (amx)
@pytest.mark.parametrize("shape", [(40, 1025, 50), (33, 700, 65), (17, 8193, 30)])
@pytest.mark.parametrize("layout", ["cc", "tt"])
def test_k_blocks_are_added_in_order(rng, shape, layout):
    """K > KC on the GEMM path: each block of KC k is summed from +0 in the kernel's order, and the
    block sums are added to the running total in increasing k (float32 output in place, bfloat16
    output through the float32 tile), whatever the thread count."""
    m, k, n = shape
    a, A = make(rng, (m, k))
    b, B = make(rng, (k, n))
    a, b = laid_out(a, layout[0]), laid_out(b, layout[1])
    kc = KC[gemm_tier()]
    total = None
    for k0 in range(0, k, kc):
        block = kernel_sums(A[:, k0:k0 + kc], B[k0:k0 + kc])
        if block is None:
            # amx: no documented order within a whole block of KC k; the block as a product of
            # its own (the same micro-kernel calls) then tells whether the block sums are added
            # in order (the last block, of one k, is the micro-kernel's vdpbf16ps tail: pair order)
            with bd.num_threads(1):
                block = bd.matmul(a[:, k0:k0 + kc], b[k0:k0 + kc], out_dtype=np.float32)
            check_bound(block, A[:, k0:k0 + kc], B[k0:k0 + kc])
        total = block if total is None else (total + block).astype(np.float32)
    for threads in (1, 2):
        with bd.num_threads(threads):
            r32 = bd.matmul(a, b, out_dtype=np.float32)
            r16 = bd.matmul(a, b)
        assert np.array_equal(f32_bits(r32), f32_bits(total)), (shape, layout, threads)
        check_bf16_is_rounded_f32(r16, r32)


def stacked(rng, shape, kind):
    """A stack of matrices laid out as kind: c contiguous, t each matrix transposed, s strided."""
    x, X = make(rng, shape)
    if kind == "t":
        x = np.ascontiguousarray(np.swapaxes(x, -1, -2)).swapaxes(-1, -2)
    elif kind == "s":
        big = np.zeros(shape[:-2] + (shape[-2] * 2, shape[-1] * 3), x.dtype)
        big[..., ::2, ::3] = x
        x = big[..., ::2, ::3]
    return x, X


# (batch of A, batch of B): small products, GEMM-path products, GEMV-routed ones, a broadcast B
BATCHES = [((1000, 16, 16), (1000, 16, 16)), ((60, 64, 64), (60, 64, 64)), ((9, 33, 70), (9, 70, 65)),
           ((200, 40, 100), (200, 100, 3)), ((30, 20, 50), (50, 40)), ((3, 2, 200, 60), (3, 2, 60, 90))]


@pytest.mark.parametrize("sa,sb", BATCHES)
@pytest.mark.parametrize("layout", ["cc", "ts", "st"])
def test_batches_match_single_products(rng, sa, sb, layout):
    """A stack of products gives, for every thread count, each product's one-thread bits: the
    threads share the products, never one product's sums."""
    a, _ = stacked(rng, sa, layout[0])
    b, _ = stacked(rng, sb, layout[1])
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    aa, bb = np.broadcast_to(a, shape + a.shape[-2:]), np.broadcast_to(b, shape + b.shape[-2:])
    with bd.num_threads(1):
        single = np.stack([bd.matmul(aa[i], bb[i], out_dtype=np.float32) for i in np.ndindex(shape)])
    single = single.reshape(shape + single.shape[-2:])
    for threads in (1, 2, 3, 5):
        with bd.num_threads(threads):
            r16 = np.matmul(a, b)
            r32 = bd.matmul(a, b, out_dtype=np.float32)
        assert np.array_equal(f32_bits(r32), f32_bits(single)), threads
        check_bf16_is_rounded_f32(r16, r32)


@pytest.mark.parametrize("k", [20, 300])
def test_stacked_vector_products_match_single_ones(rng, k):
    """np.vecdot / np.matvec / np.vecmat over stacks: each product's bits, for every thread count
    (short dot products take one sequential sum, long ones the GEMV)."""
    x, _ = make(rng, (400, k))
    y, _ = make(rng, (400, k))
    w, _ = make(rng, (50, 40, k))
    u, _ = make(rng, (50, 40))
    with bd.num_threads(1):
        dots = [bd.matmul(x[i], y[i], out_dtype=np.float32) for i in range(400)]
        mv = [bd.matmul(w[i], x[i], out_dtype=np.float32) for i in range(50)]
        vm = [bd.matmul(u[i], w[i], out_dtype=np.float32) for i in range(50)]
    for threads in (1, 2, 3):
        with bd.num_threads(threads):
            got = np.vecdot(x, y)
            assert np.array_equal(bf16_bits(got), reference_round(np.stack(dots))), threads
            if hasattr(np, "matvec"):
                assert np.array_equal(bf16_bits(np.matvec(w, x[:50])), reference_round(np.stack(mv)))
                assert np.array_equal(bf16_bits(np.vecmat(u, w)), reference_round(np.stack(vm)))


# a product shape per path: small (row and column remainders), GEMM with partial panels, the float32
# tile (K > KC), GEMV both ways, threaded GEMM, a stack shared by threads
WARNING_SHAPES = [((3, 2), (2, 3)), ((17, 5), (5, 33)), ((13, 300), (300, 70)), ((45, 600), (600, 130)),
                  ((37, 200), (200, 5)), ((301, 300), (300, 299)), ((1000, 16, 16), (1000, 16, 16)),
                  ((2048, 300), (300,)), ((300,), (300, 2048))]


@pytest.mark.parametrize("sa,sb", WARNING_SHAPES)
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_fp_warnings_are_the_results_own(sa, sb, threads):
    """numpy's "invalid value" warning comes with a result that holds a NaN made from an infinity
    and a zero, and never otherwise: the padding of register blocks raises nothing (bg_pad_panel)
    and a product computed on another thread still reports its flags (run_tasks)."""
    a = np.ones(sa, np.float32)
    b = np.ones(sb, np.float32)
    b[..., -1] = np.inf  # infinities in the last row (1-d) or column of B
    with bd.num_threads(threads), np.errstate(all="raise"):
        r = np.matmul(a.astype(bfloat16), b.astype(bfloat16))  # inf results, no NaN: no warning
        assert np.array_equal(widen_f64(r), a.astype(np.float64) @ b), (sa, sb)
        a[..., -1] = 0.0  # now 0 * inf in the last output element (or column)
        with pytest.raises(FloatingPointError, match="invalid value"):
            np.matmul(a.astype(bfloat16), b.astype(bfloat16))


def widen_f64(x):
    return exact_f32(bf16_bits(x)).astype(np.float64)


# (small, GEMM, GEMM, GEMM with threads, skinny W @ V with 12 columns)
OVERFLOW_SHAPES = [((3, 2), (2, 3)), ((13, 300), (300, 70)), ((45, 600), (600, 130)), ((301, 300), (300, 299)),
                   ((40, 300), (300, 12))]


@pytest.mark.parametrize("sa,sb", OVERFLOW_SHAPES)
@pytest.mark.parametrize("threads", [1, 2])
def test_overflow_warns_like_float32(sa, sb, threads):
    """Finite inputs whose sums overflow: the result is inf and numpy reports "overflow", as for
    float32 (the avx512bf16 kernel raises the flag itself: vdpbf16ps raises none); sums that
    overflow in both directions make a NaN and also report "invalid value"."""
    a = np.ones(sa, np.float32)
    b = np.ones(sb, np.float32)
    a[0, :] = 3e38  # row 0 of the result overflows to +inf
    with bd.num_threads(threads), np.errstate(all="raise"):
        with pytest.raises(FloatingPointError, match="overflow"):
            np.matmul(a.astype(bfloat16), b.astype(bfloat16))
    with bd.num_threads(threads), np.errstate(all="ignore"):
        r = np.matmul(a.astype(bfloat16), b.astype(bfloat16))
    assert np.all(np.isposinf(widen_f64(r)[0])) and np.all(np.isfinite(widen_f64(r)[1:]))
    a[1, :] = 3e38
    b[:, 0] = np.where(np.arange(sb[0]) % 2 == 0, 1.0, -1.0)  # +inf then -inf partial sums: NaN
    b[-1, 0] = 1.0 if sb[0] % 2 else b[-1, 0]
    with bd.num_threads(threads), np.errstate(all="ignore"):
        np.matmul(a.astype(bfloat16), b.astype(bfloat16))  # (no assertion on which NaN/inf appears)
    with bd.num_threads(threads), np.errstate(all="raise"):
        with pytest.raises(FloatingPointError):
            np.matmul(a.astype(bfloat16), b.astype(bfloat16))
    a[:] = 1.0  # nothing overflows: no warning at all
    with bd.num_threads(threads), np.errstate(all="raise"):
        np.matmul(a.astype(bfloat16), b.astype(bfloat16))


@pytest.mark.parametrize("m,k,n", [(84, 300, 128), (85, 300, 131), (30, 4200, 70), (1, 300, 1)])
@pytest.mark.parametrize("threads", [1, 2])
def test_rounding_to_inf_warns_at_every_tier(m, k, n, threads):
    """A finite float32 sum that rounds to bfloat16 inf (the largest bfloat16 + 2**119, a tie
    that rounds to the even inf) reports "overflow" in row 0 alone, whichever of the tier's
    stores rounds it: the kernel's own (84 x 128: full register blocks of every kernel), edge
    blocks (85 x 131), the float32 tile (K > 4096), GEMV; the GEMM kernels raise it as they round
    instead of the driver's pass over C (gemm.c, flag_rounding_overflow). An inf operand in a
    row gives an inf there without it; finite sums below the midpoint none."""
    a = np.ones((m, k), np.float32)
    a[0, :] = 0.0
    a[0, :2] = np.array([0x7F7F, 0x7B00], np.uint16).view(bfloat16).astype(np.float32)
    b = np.ones((k, n), np.float32)
    A, B = a.astype(bfloat16), b.astype(bfloat16)
    with bd.num_threads(threads), np.errstate(over="raise"):
        with pytest.raises(FloatingPointError, match="overflow"):
            np.matmul(A, B)
    with bd.num_threads(threads), np.errstate(all="ignore"):
        r = widen_f64(np.matmul(A, B))
    assert np.all(np.isposinf(r[0])) and np.all(r[1:] == widen_f64(np.float32(k).astype(bfloat16)))
    below = a.copy()
    below[0, 1] = np.array([0x7AFF], np.uint16).view(bfloat16).astype(np.float32)[0]
    inf_row = a.copy()
    inf_row[0, :2] = [np.inf, 0.0]
    with bd.num_threads(threads), np.errstate(all="raise"):
        r = widen_f64(np.matmul(below.astype(bfloat16), B))
        assert np.all(np.isfinite(r))
        r = widen_f64(np.matmul(inf_row.astype(bfloat16), B))
        assert np.all(np.isposinf(r[0]))


_NONFINITE_DIGEST = """
import hashlib, numpy as np, bfloat16_dtype as bd
rng = np.random.default_rng(3)
h = hashlib.sha256()
for sa, sb in [((70, 600), (600, 97)), ((300, 300), (300, 300)), ((20, 100), (100, 40)), ((17, 5), (5, 33)),
               ((2048, 300), (300, 16)), ((1000, 700), (700, 1)), ((300, 2000), (2000, 3)),
               ((500, 333), (333, 7))]:
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)
    a[3, 1] = np.inf
    b[-2, sb[1] // 2] = np.nan
    with np.errstate(all="ignore"):
        for x, y in [(a, b), (a, np.nan_to_num(b)), (np.nan_to_num(a, posinf=1.0), b)]:
            x, y = x.astype(bd.bfloat16), y.astype(bd.bfloat16)
            h.update(bd.matmul(x, y, out_dtype=np.float32).tobytes())
            h.update(bd.matmul(x, y).tobytes())
# W @ x and W @ V (skinny, 5 and 16 columns) with the inf or NaN where V holds 0 or a subnormal
# (0 * inf), +inf and -inf in one row, a NaN in the last, partial 32-k block, and (one thread)
# rows that stream (BG_ROWS_STREAM_BYTES): the kernels look for them only in sums not finite
for m, k, n, threads in [(300, 1000, 1, 2), (64, 77, 1, 1), (6400, 2049, 1, 1), (300, 1000, 16, 2),
                         (70, 77, 5, 1)]:
    w = rng.standard_normal((m, k)).astype(np.float32)
    x = rng.standard_normal((k, n)).astype(np.float32)
    x[5], x[9] = 0.0, 2.0 ** -130
    w[7, 5], w[8, 9], w[11, 2], w[11, 3], w[12, k - 1] = np.inf, -np.inf, np.inf, -np.inf, np.nan
    x = x[:, 0] if n == 1 else x
    with np.errstate(all="ignore"), bd.num_threads(threads):
        h.update(bd.matmul(w.astype(bd.bfloat16), x.astype(bd.bfloat16), out_dtype=np.float32).tobytes())
print(h.hexdigest())
"""


def test_products_with_inf_or_nan_are_the_avx512_kernels():
    """At the avx512bf16 and amx tiers a product whose A or B holds an inf or NaN is computed again
    by the avx512 kernel (bg_kernel.fallback in csrc/matmul/kernel.h): the same bits as that tier,
    on the GEMM, small-product and GEMV paths (an inf in the matrix or a NaN in the vectors)."""
    if not bf16_pair_tier():
        pytest.skip(f"neither the avx512bf16 nor the amx tier is in force ({bd.config()['reason']})")
    digests = []
    for tier in ("avx512", bd.config()["tier"]):
        r = subprocess.run([sys.executable, "-c", _NONFINITE_DIGEST], cwd=TESTS_DIR, capture_output=True, text=True,
                           timeout=300, env=dict(os.environ, BFLOAT16_DTYPE_ISA=tier))
        assert r.returncode == 0, r.stderr
        digests.append(r.stdout.strip())
    assert digests[0] == digests[1]


@pytest.mark.parametrize("m,k", [(1, 40), (64, 160)])  # the GEMV path; the GEMM path (amx: tdpbf16ps)
def test_avx512bf16_subnormals_read_as_zero(m, k):
    """vdpbf16ps and tdpbf16ps read subnormal bfloat16 inputs as 0 and flush subnormal sums
    (README, "Accuracy of matmul"); the other tiers keep them (float32 FMA)."""
    tiny = np.full((m, k), 2.0 ** -130, np.float32).astype(bfloat16)  # subnormal in bfloat16
    big = np.full((k, 40), 2.0 ** 100, np.float32).astype(bfloat16)
    r = widen_f64(bd.matmul(tiny, big))
    if bf16_pair_tier():
        assert np.all(r == 0)
    else:
        assert np.all(r == k * 2.0 ** -30)


@pytest.mark.parametrize("layout", ["rows", "columns", "strided"])
@pytest.mark.parametrize("k", [191, 63, 33])
def test_odd_k_reads_nothing_past_a_row(layout, k):
    """With an odd k the packers' last pair is half A's: the element after each row of A (here
    inf, where the amx packer once read it, and past the buffer for the last row) must not
    enter the product (inf * the zero padding would be NaN)."""
    m, n = 255, 300
    if layout == "rows":
        buf = np.ones((m, k + 1), np.float32)
        buf[:, k] = np.inf
        a = buf.astype(bfloat16)[:, :k]
    elif layout == "columns":
        buf = np.ones((m, k + 1), np.float32)
        buf[:, k] = np.inf
        a = np.asfortranarray(buf.astype(bfloat16))[:, :k]
    else:
        buf = np.ones((m, 2 * k + 1), np.float32)
        buf[:, 2 * k - 1:] = np.inf
        a = buf.astype(bfloat16)[:, 0:2 * k - 1:2]
    assert a.shape == (m, k) and np.isfinite(a.astype(np.float32)).all()
    b = np.ones((k, n), bfloat16)
    with np.errstate(all="raise"):
        r = np.asarray(bd.matmul(a, b, out_dtype=np.float32))
    assert np.all(r == k)


@pytest.mark.parametrize("k", [1, 7, 64, 65, 1000])
def test_dot_products_keep_subnormals_at_every_tier(k):
    """A 1 x 1 product (vector @ vector) is a float32 dot (sequential up to k = 64, sixteen
    lanes above), not vdpbf16ps: subnormal inputs count at every tier (README, "Accuracy of
    matmul")."""
    tiny = np.full(k, 2.0 ** -130, np.float32).astype(bfloat16)
    big = np.full(k, 2.0 ** 100, np.float32).astype(bfloat16)
    for a, b in ((tiny, big), (tiny[None, :], big[:, None])):
        assert np.all(np.asarray(bd.matmul(a, b, out_dtype=np.float32), np.float64)
                      == k * 2.0 ** -30)
        assert np.all(widen_f64(a @ b) == k * 2.0 ** -30)


# GEMV / skinny: W (M x K, k contiguous) @ V with 1..16 columns, K not a multiple of 16 or 32
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 9, 13, 16])
@pytest.mark.parametrize("k", [7, 40, 1000, 3001])
def test_skinny_within_bound(rng, n, k):
    w, W = make(rng, (37, k))
    v, V = make(rng, (k, n))
    r32 = bd.matmul(w, v, out_dtype=np.float32)
    check_bound(r32, W, V)
    check_bf16_is_rounded_f32(bd.matmul(w, v), r32)
    # x @ W.T (the transposed view takes the same path)
    r32t = bd.matmul(v.T, w.T, out_dtype=np.float32)
    assert np.array_equal(f32_bits(r32t), f32_bits(r32.T))


@pytest.mark.parametrize("n", [1, 3, 8, 9, 13, 16])
@pytest.mark.parametrize("k", [15, 16, 31, 33, 95, 129, 160, 161, 1000])
@pytest.mark.parametrize("m", [37, 16])
def test_v_packing_layouts_same_bits(rng, m, n, k):
    """V with contiguous rows is packed by the vector packer (complete k blocks, groups of eight
    columns), a strided V element by element: the same floats, so the same bits (from five columns
    and k <= 128 both take the small-product kernel); every result is within the bound."""
    w, W = make(rng, (m, k))
    v, V = make(rng, (k, n))
    r32 = bd.matmul(w, v, out_dtype=np.float32)
    check_bound(r32, W, V)
    r32s = bd.matmul(w, laid_out(v, "s"), out_dtype=np.float32)
    assert np.array_equal(f32_bits(r32s), f32_bits(r32))


def gemv_lane_order(W32, V32, ku, pairs=False):
    """The documented GEMV sum (csrc/matmul/kernel.h) emulated in float32: ku/2 lane sums, lane l
    taking the k with (k mod ku) >> 1 == l in increasing k (products of bfloat16 values are exact
    in float32, so each FMA is a float32 addition), then the lanes folded in halves. pairs: the
    avx512bf16 kernel's vdpbf16ps, the odd k of each pair first, subnormal sums flushed."""
    m, k = W32.shape
    kpad = -(-k // ku) * ku
    W = np.zeros((m, kpad), np.float32)
    W[:, :k] = W32
    V = np.zeros((kpad, V32.shape[1]), np.float32)
    V[:k] = V32
    lanes = np.zeros((m, ku // 2, V.shape[1]), np.float32)
    for t in range(0, kpad, ku):
        for parity in ((1, 0) if pairs else (0, 1)):
            ks = t + 2 * np.arange(ku // 2) + parity
            lanes += W[:, ks, None] * V[None, ks, :]  # exact products, float32 additions
            if pairs:
                lanes = ftz(lanes)
    while lanes.shape[1] > 1:
        half = lanes.shape[1] // 2
        lanes = lanes[:, :half] + lanes[:, half:]
    return lanes[:, 0]


# (from five columns, products with k <= 128 take the small-product kernel instead: sequential sums;
# so do those with both sides at most 64 wide)
@pytest.mark.parametrize("n,k", [(n, k) for n in (1, 2, 5, 8, 13, 16) for k in (129, 161, 700, 2100)]
                         + [(n, k) for n in (1, 2, 4) for k in (1, 31, 33)])
def test_gemv_sums_in_the_documented_lane_order(rng, n, k):
    """W @ V on the k-contiguous GEMV path gives exactly the documented order's float32 bits (16
    lanes of 32 k at the avx512 and avx512bf16 tiers, pairs odd k first at the latter; 8 lanes of
    16 k below), whatever the chunking; at the avx512bf16 tier 5 to 16 columns take the skinny
    kernel instead (bg_kernel.skinny_rows): the GEMM kernel's pair sums over all K, one row per
    accumulator (its tiles of 12, 8, 4 and 1 rows: 70 = 5 x 12 + 8 + 1 + 1, 76 = 6 x 12 + 4; with
    an L1 of fewer than 12 ways 8, 4 and 1 rows: 70 = 8 x 8 + 4 + 1 + 1, 76 = 9 x 8 + 4; both run
    here whatever this CPU's L1, through _ext._set_l1d_ways; three threads split the rows anew)."""
    w, W = make(rng, (70 if k % 2 == 0 else 76, k))  # wider than any small-product kernel's 64
    v, V = make(rng, (k, n))
    ku = gemv_ku()
    pairs = bf16_pair_tier()
    if pairs and n >= 5:
        expected = pair_sums(W, V)
    else:
        expected = gemv_lane_order(W.astype(np.float32), V.astype(np.float32), ku, pairs)
    for ways in (8, 12):
        before = bd._ext._set_l1d_ways(ways)
        try:
            for threads in (1, 3):
                with bd.num_threads(threads):
                    r32 = bd.matmul(w, v, out_dtype=np.float32)
                assert np.array_equal(f32_bits(r32), f32_bits(expected)), (n, k, threads, ways)
        finally:
            bd._ext._set_l1d_ways(before)


def test_l1d_ways_are_probed_and_checked():
    """The L1 associativity comes from CPUID (0 where it does not say; x86-64 CPUs report 4 to 16
    ways, /proc/cpuinfo does not give it); the setter refuses what no cache has."""
    ways = bd._ext._cpu_info()["l1d_ways"]
    assert ways == 0 or 2 <= ways <= 64
    with pytest.raises(ValueError, match="L1 ways"):
        bd._ext._set_l1d_ways(-1)
    with pytest.raises(TypeError):
        bd._ext._set_l1d_ways("8")
    assert bd._ext._cpu_info()["l1d_ways"] == ways


@pytest.mark.parametrize("m,k", [(6400, 2049), (2000, 8200)])
def test_gemv_streamed_rows_keep_the_lane_order(rng, m, k):
    """A W @ x whose rows in one thread exceed BG_ROWS_STREAM_BYTES (24 MiB, csrc/matmul/
    gemm_avx512.c) is streamed at the avx512bf16 tier: one row per tile for rows of at most
    BG_ROWS_STREAM_ROW (12 KiB: 6400 x 2049), four above (2000 x 8200). The same documented order
    either way, so one thread (streamed) and two (12.5 / 15.6 MiB each, four-row tiles with
    prefetch) give the same bits."""
    w = rng.standard_normal((m, k)).astype(np.float32).astype(bfloat16)
    v = rng.standard_normal(k).astype(np.float32).astype(bfloat16)
    W, V = w.astype(np.float32), v.astype(np.float32)
    expected = gemv_lane_order(W, V[:, None], gemv_ku(), bf16_pair_tier())[:, 0]
    for threads in (1, 2):
        with bd.num_threads(threads):
            r32 = bd.matmul(w, v, out_dtype=np.float32)
        assert np.array_equal(f32_bits(r32), f32_bits(expected)), threads


@pytest.mark.parametrize("n", [1, 3, 4])
def test_gemv_matrix_contiguous_along_output(rng, n):
    w, W = make(rng, (500, 301))
    wt = np.ascontiguousarray(w.T).T  # M contiguous
    v, V = make(rng, (301, n))
    check_bound(bd.matmul(wt, v, out_dtype=np.float32), W, V)


def test_long_k_and_large_values(rng):
    a, A = make(rng, (3, 6000))
    b, B = make(rng, (6000, 50))
    check_bound(bd.matmul(a, b, out_dtype=np.float32), A, B)


# thread-count independence: shapes above the multithreading thresholds, each path
THREAD_SHAPES = [((300, 300), (300, 300)),     # GEMM, rows split
                 ((40, 700), (700, 900)),      # GEMM, columns split
                 ((257, 700), (700, 129)),     # K > KC
                 ((1024, 512), (512,)),        # GEMV
                 ((2048, 300), (300, 16)),     # skinny W @ V, 16 columns
                 ((600, 3000), (3000, 16)),    # skinny, V cut into k chunks (panels of rows)
                 ((1500, 200), (200, 5)),      # skinny, 5 columns
                 ((512,), (512, 1024))]        # x @ W


@pytest.mark.parametrize("sa,sb", THREAD_SHAPES)
def test_bit_identical_across_thread_counts(rng, sa, sb):
    a, _ = make(rng, sa)
    b, _ = make(rng, sb)
    outs = {}
    for t in (1, 2, 3, 5, 8):
        with bd.num_threads(t):
            outs[t] = (f32_bits(bd.matmul(a, b, out_dtype=np.float32)), bf16_bits(bd.matmul(a, b)))
    for t in (2, 3, 5, 8):
        assert np.array_equal(outs[t][0], outs[1][0]), t
        assert np.array_equal(outs[t][1], outs[1][1]), t


def test_raising_thread_count_after_a_parallel_call():
    """The pool grows while it has already run a job (issue 11 item 5): results stay bit for bit
    those of one thread. A fresh interpreter, so the pool starts empty."""
    code = textwrap.dedent("""
        import numpy as np, bfloat16_dtype as bd
        rng = np.random.default_rng(5)
        a = rng.standard_normal((400, 300)).astype(bd.bfloat16)
        b = rng.standard_normal((300, 350)).astype(bd.bfloat16)
        w = rng.standard_normal((2048, 512)).astype(bd.bfloat16)
        x = rng.standard_normal(512).astype(bd.bfloat16)
        def run():
            return (bd.matmul(a, b, out_dtype=np.float32).view(np.uint32),
                    bd.matmul(w, x, out_dtype=np.float32).view(np.uint32))
        with bd.num_threads(1):
            ref = run()
        bad = 0
        for rep in range(6):
            for t in (2, 3, 5, 8, 2, 13):
                with bd.num_threads(t):
                    got = run()
                bad += sum(not np.array_equal(g, r) for g, r in zip(got, ref))
        print("mismatches", bad)
    """)
    r = subprocess.run([sys.executable, "-c", code], cwd=TESTS_DIR, capture_output=True, text=True, timeout=300,
                       env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "mismatches 0", r.stdout + r.stderr


def lane_dot_model(x: np.ndarray, y: np.ndarray) -> np.float32:
    """csrc/matmul/gemm.c, dot_lanes, in NumPy float32: lane j sums the products of the
    k = j (mod 16) from +0 in increasing k, then lanes j and j + w are added for w = 8, 4, 2, 1."""
    p = (exact_f32(bf16_bits(x)) * exact_f32(bf16_bits(y))).astype(np.float32)  # exact
    acc = np.zeros(16, np.float32)
    for k in range(0, p.size, 16):
        row = p[k:k + 16]
        acc[:row.size] = (acc[:row.size] + row).astype(np.float32)
    for w in (8, 4, 2, 1):
        acc[:w] = (acc[:w] + acc[w:2 * w]).astype(np.float32)
    return acc[0]


@pytest.mark.parametrize("k", [65, 100, 1000, 4097])
def test_long_dot_products_take_sixteen_lane_sums(rng, k):
    """A 1 x 1 product past 64 k (x @ y of vectors, np.vecdot, a row times a column): sixteen
    float32 lane sums added pairwise, the same bits for contiguous and strided operands and for
    every thread count, within float32 accumulation's bound of the float64 product."""
    x, x64 = make(rng, (2 * k,))
    y, y64 = make(rng, (k,))
    want = lane_dot_model(x[::2], y)
    for threads in (1, 2):
        with bd.num_threads(threads):
            for a in (x[::2], x[::2].copy()):
                got = bd.matmul(a, y, out_dtype=np.float32)
                assert f32_bits(np.float32(got)) == f32_bits(want), (threads, a.flags.c_contiguous)
                assert bf16_bits(np.asarray(a @ y)) == reference_round(np.array([want]))
                assert bf16_bits(np.vecdot(a, y)) == reference_round(np.array([want]))
            m = bd.matmul(x[::2].copy()[np.newaxis, :], y[:, np.newaxis], out_dtype=np.float32)
            assert f32_bits(m.reshape(())) == f32_bits(want)
    exact = float(x64[::2] @ y64)
    bound = k * 2.0**-23 * float(np.abs(x64[::2]) @ np.abs(y64))
    assert abs(float(want) - exact) <= bound
