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

from conftest import TESTS_DIR  # noqa: E402

U = 2.0 ** -24
# kernel tiers shipped on x86-64, lowest first (kernel.h's table)
SHIPPED = ("baseline", "avx2", "avx512")
TIERS = ("baseline", "avx2", "avx512", "avx512bf16")


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


def test_kernel_name_names_the_tier():
    tier = bd.config()["tier"]
    expected = SHIPPED[min(TIERS.index(tier), len(SHIPPED) - 1)]
    assert bd._ext._gemm_kernel.split(":")[0] == expected, bd._ext._gemm_kernel


# (M, K, N): register-block edges of every kernel (6x16, 14x32), K across KC (256) and not a
# multiple of 8, the float32 tile (K > KC with bfloat16 output)
GEMM_SHAPES = [(1, 1, 1), (13, 7, 31), (14, 9, 32), (15, 33, 33), (29, 300, 65), (70, 257, 97),
               (45, 600, 130)]
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
@pytest.mark.parametrize("k", [15, 16, 31, 32, 33, 64, 95, 1000])
@pytest.mark.parametrize("m", [37, 16])
def test_v_packing_layouts_same_bits(rng, m, n, k):
    """V with contiguous rows is packed by the vector packer (complete k blocks, groups of eight
    columns), a strided V element by element: the same floats, so the same bits; a square skinny
    product (m == n, the GEMV path from k = 128, the GEMM below) is within the bound."""
    w, W = make(rng, (m, k))
    v, V = make(rng, (k, n))
    r32 = bd.matmul(w, v, out_dtype=np.float32)
    check_bound(r32, W, V)
    r32s = bd.matmul(w, laid_out(v, "s"), out_dtype=np.float32)
    assert np.array_equal(f32_bits(r32s), f32_bits(r32))


def gemv_lane_order(W32, V32, ku):
    """The documented GEMV sum (csrc/matmul/kernel.h) emulated in float32: ku/2 lane sums, lane l
    taking the k with (k mod ku) >> 1 == l in increasing k (products of bfloat16 values are exact
    in float32, so each FMA is a float32 addition), then the lanes folded in halves."""
    m, k = W32.shape
    kpad = -(-k // ku) * ku
    W = np.zeros((m, kpad), np.float32)
    W[:, :k] = W32
    V = np.zeros((kpad, V32.shape[1]), np.float32)
    V[:k] = V32
    lanes = np.zeros((m, ku // 2, V.shape[1]), np.float32)
    for t in range(0, kpad, ku):
        for parity in (0, 1):
            ks = t + 2 * np.arange(ku // 2) + parity
            lanes += W[:, ks, None] * V[None, ks, :]  # exact products, float32 additions
    while lanes.shape[1] > 1:
        half = lanes.shape[1] // 2
        lanes = lanes[:, :half] + lanes[:, half:]
    return lanes[:, 0]


@pytest.mark.parametrize("n", [1, 2, 5, 8, 13, 16])
@pytest.mark.parametrize("k", [1, 31, 33, 700, 2100])
def test_gemv_sums_in_the_documented_lane_order(rng, n, k):
    """W @ V on the k-contiguous GEMV path gives exactly the documented order's float32 bits (16
    lanes of 32 k at the avx512 tier, 8 lanes of 16 k below), whatever the chunking."""
    w, W = make(rng, (40, k))
    v, V = make(rng, (k, n))
    ku = 32 if bd._ext._gemm_kernel.startswith("avx512") else 16
    expected = gemv_lane_order(W.astype(np.float32), V.astype(np.float32), ku)
    for threads in (1, 3):
        with bd.num_threads(threads):
            r32 = bd.matmul(w, v, out_dtype=np.float32)
        assert np.array_equal(f32_bits(r32), f32_bits(expected)), (n, k, threads)


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
