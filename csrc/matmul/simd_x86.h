/*
 * simd_x86.h - AVX2 (and AVX-512) helpers shared by the x86 kernels. Each helper is always inlined
 * into a caller compiled for its instruction set or a superset of it. Include after kernel.h.
 */
#ifndef BF16_GEMM_SIMD_X86_H
#define BF16_GEMM_SIMD_X86_H

#include <fenv.h>
#include <immintrin.h>

#define BG_AVX2_INLINE static inline __attribute__((always_inline, target("avx2,fma")))

/*
 * A kernel's peak loop (kernel.h, bg_kernel.peak): `fn(iters)` runs BG_PEAK_CHAINS accumulators
 * of type ACC, each updated once a round by STEP(acc, x) with an operand x = INIT of type OPND
 * that an empty asm makes opaque every round (so nothing is folded or hoisted); the empty asm at
 * the end keeps the sums alive without storing them anywhere.
 */
#define BG_PEAK_LOOP(fn, TARGET, ACC, ZERO, OPND, INIT, STEP)                                        \
    TARGET static void fn(int64_t iters)                                                             \
    {                                                                                                \
        ACC s[BG_PEAK_CHAINS];                                                                       \
        OPND x = INIT;                                                                               \
        for (int j = 0; j < BG_PEAK_CHAINS; j++) s[j] = ZERO;                                        \
        for (int64_t i = 0; i < iters; i++) {                                                        \
            __asm__("" : "+v"(x));                                                                   \
            for (int j = 0; j < BG_PEAK_CHAINS; j++) s[j] = STEP(s[j], x);                           \
        }                                                                                            \
        for (int j = 0; j < BG_PEAK_CHAINS; j++) __asm__ volatile("" : : "v"(s[j]));                 \
    }

/* 8 bfloat16 (16 bytes, any alignment) -> 8 float32: zero-extend to 32 bits, shift into the high half. */
BG_AVX2_INLINE __m256 widen8(const unsigned char *p)
{
    __m128i h = _mm_loadu_si128((const __m128i *)(const void *)p);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* In-register transpose of an 8x8 float block held in r[0..7]. */
BG_AVX2_INLINE void transpose8(__m256 r[8])
{
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
    r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
    r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
    r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
    r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
    r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
    r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
    r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

#if defined(__x86_64__)
#define BG_AVX512_INLINE static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))

/* 16 float32 -> 16 bfloat16: round8_bf16's formula (gemm_avx2.c), 16 lanes at a time */
BG_AVX512_INLINE __m256i round16_bf16(__m512 x)
{
    __m512i u = _mm512_castps_si512(x), hi = _mm512_srli_epi32(u, 16);
    __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)),
                                 _mm512_and_si512(hi, _mm512_set1_epi32(1)));
    __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                            _mm512_set1_epi32(0x7f800000));
    r = _mm512_mask_mov_epi32(_mm512_srli_epi32(r, 16), nan, _mm512_or_si512(hi, _mm512_set1_epi32(0x40)));
    return _mm512_cvtepi32_epi16(r);
}
/* The lane sums of the cnt (<= 16) accumulators acc + 16 j: lane j of the result is
 * the fold of kernel.h (upper half of the remaining lanes onto the lower half, 16 -> 8 -> 4 -> 2 -> 1)
 * of acc + 16 j, for 16 accumulators at once (the others read as zero): the same pairs of lanes
 * are added in the same order as one accumulator at a time
 * (tests/test_gemm_kernel.py::test_gemv_sums_in_the_documented_lane_order). */
BG_AVX512_INLINE __m512 hsum16_many(const float *acc, int cnt)
{
    __m512 v[16], w[8], x[4], y[2];
    for (int j = 0; j < 16; j++) v[j] = j < cnt ? _mm512_load_ps(acc + 16 * j) : _mm512_setzero_ps();
    for (int j = 0; j < 8; j++) /* 128-bit quarters: lanes 0-7 of acc 2j + lanes 8-15, same for 2j+1 */
        w[j] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * j], v[2 * j + 1], 0x44),
                             _mm512_shuffle_f32x4(v[2 * j], v[2 * j + 1], 0xEE));
    for (int j = 0; j < 4; j++) /* quarter q of x[j]: 4 lanes of acc 4j + q */
        x[j] = _mm512_add_ps(_mm512_shuffle_f32x4(w[2 * j], w[2 * j + 1], 0x88),
                             _mm512_shuffle_f32x4(w[2 * j], w[2 * j + 1], 0xDD));
    for (int j = 0; j < 2; j++) /* quarter q of y[j]: 2 lanes of acc 8j + q, then of 8j + 4 + q */
        y[j] = _mm512_add_ps(_mm512_shuffle_ps(x[2 * j], x[2 * j + 1], 0x44),
                             _mm512_shuffle_ps(x[2 * j], x[2 * j + 1], 0xEE));
    /* lane 4q + m: the sum of acc 4m + q; lane j takes it from 4 (j mod 4) + j / 4 */
    __m512 z = _mm512_add_ps(_mm512_shuffle_ps(y[0], y[1], 0x88), _mm512_shuffle_ps(y[0], y[1], 0xDD));
    const __m512i idx = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    return _mm512_permutexvar_ps(idx, z);
}

/* Store rows [0, min(R, rows)) x columns [0, N) of a small kernel's tile s (R x NV vectors of 16
 * lanes; N <= 16 NV) at row i0 of C, rounded to bfloat16 if C is bfloat16 (the block writer's
 * rounding), raising FE_OVERFLOW for a finite sum that rounds to inf as bg_write_block_avx2 does
 * (so the driver makes no pass over C after a small product: gemm.c, run_plain). */
BG_AVX512_INLINE void bg_store_tile16(const bg_out *c, int64_t i0, int64_t rows, int64_t N, __m512 s[8][4], int R,
                                      int NV)
{
    __mmask16 last = (__mmask16)(0xffffu >> (16 * NV - N));
    if (c->cs == (c->bf16 ? 2 : 4)) {
        const __m512i lo = _mm512_set1_epi32((int)BG_F32_ROUNDS_TO_INF);
        const __m512i span = _mm512_set1_epi32((int)(0x7f800000u - BG_F32_ROUNDS_TO_INF));
        __mmask16 over = 0;
        for (int r = 0; r < R && r < rows; r++) {
            unsigned char *q = c->p + (i0 + r) * c->rs;
            for (int v = 0; v < NV; v++) {
                __mmask16 m = v == NV - 1 ? last : (__mmask16)0xffff;
                if (c->bf16) {
                    /* |bits| in [BG_F32_ROUNDS_TO_INF, inf): finite, rounding to inf */
                    __m512i u = _mm512_and_si512(_mm512_castps_si512(s[r][v]), _mm512_set1_epi32(0x7fffffff));
                    over |= _mm512_mask_cmplt_epu32_mask(m, _mm512_sub_epi32(u, lo), span);
                    _mm256_mask_storeu_epi16(q + 32 * v, m, round16_bf16(s[r][v]));
                }
                else
                    _mm512_mask_storeu_ps(q + 64 * v, m, s[r][v]);
            }
        }
        if (over) feraiseexcept(FE_OVERFLOW);
    } else { /* strided C */
        float t[8 * 64] __attribute__((aligned(64)));
        for (int r = 0; r < R; r++)
            for (int v = 0; v < NV; v++) _mm512_store_ps(t + r * 64 + 16 * v, s[r][v]);
        bg_write_block_avx2(c, i0, 0, t, 64, rows, N);
    }
}

/* even/odd 16-bit lanes from two rows: slot j of lo = (r0[j], r1[j]) for j < 16, of hi for j >= 16
 * (the bfloat16 k pairs of 32 rows or columns, from the 32 values of k and those of k + 1) */
BG_AVX512_INLINE void bg_interleave_rows(__m512i r0, __m512i r1, __m512i *lo, __m512i *hi)
{
    const __m512i ilo = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8,
                                         39, 7, 38, 6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
    const __m512i ihi = _mm512_add_epi16(ilo, _mm512_set1_epi16(16));
    *lo = _mm512_permutex2var_epi16(r0, ilo, r1);
    *hi = _mm512_permutex2var_epi16(r0, ihi, r1);
}

/* The largest |bfloat16| bits of the 16-bit lanes seen so far (a running maximum of x & 0x7fff),
 * and whether such a maximum is an infinity's or a NaN's (the k-pair packers' inf/NaN report). */
BG_AVX512_INLINE __m512i bg_absmax16(__m512i mx, __m512i x)
{
    return _mm512_max_epu16(mx, _mm512_and_si512(x, _mm512_set1_epi16(0x7fff)));
}
BG_AVX512_INLINE int bg_any_nonfinite16(__m512i mx)
{
    return _mm512_cmpge_epu16_mask(mx, _mm512_set1_epi16(BG_NONFINITE)) != 0;
}

/* The largest |float32 bits| of the lanes seen so far (for bg_raise_nonfinite). */
BG_AVX512_INLINE __m512i bg_absmax32(__m512i mx, __m512 x)
{
    return _mm512_max_epu32(mx, _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff)));
}

/* Does the bfloat16 row (K elements, contiguous) hold an inf or a NaN? */
BG_AVX512_INLINE int bg_row_nonfinite(const unsigned char *row, int64_t K)
{
    __m512i mx = _mm512_setzero_si512();
    const __m512i abs = _mm512_set1_epi16(0x7fff);
    for (int64_t k = 0; k < K; k += 32) {
        __mmask32 m = K - k >= 32 ? (__mmask32)0xffffffffu : (__mmask32)((1u << (K - k)) - 1u);
        mx = _mm512_max_epu16(mx, _mm512_and_si512(_mm512_maskz_loadu_epi16(m, row + 2 * k), abs));
    }
    return _mm512_cmpge_epu16_mask(mx, _mm512_set1_epi16(0x7f80)) != 0;
}

/* For kernels that stream W without checking it (gemm_avx512.c, bg_gemv_rows_16lanes;
 * gemm_avx512bf16.c, skinny_rows): z holds the sums of one row of W. An inf or NaN in the row
 * makes them all inf or NaN, so only then is the row scanned: 1 when it holds one (the product
 * goes to the kernel's fallback), else 0 with |z| folded into *mx (for bg_raise_nonfinite: the
 * sums overflowed). */
BG_AVX512_INLINE int bg_check_row_sums(__m512 z, const unsigned char *row, int64_t K, __m512i *mx)
{
    __m512i zm = bg_absmax32(_mm512_setzero_si512(), z);
    if (_mm512_cmpge_epu32_mask(zm, _mm512_set1_epi32(0x7f800000)) && bg_row_nonfinite(row, K)) return 1;
    *mx = _mm512_max_epu32(*mx, zm);
    return 0;
}

/* FE_OVERFLOW, and FE_INVALID too for a NaN, when one of the values whose |bits| maximum is mx
 * (max_epu32 of x & 0x7fffffff) was not finite: for kernels whose instructions raise no flags
 * (vdpbf16ps), on finite inputs (kernel.h, bg_kernel.fallback). */
BG_AVX512_INLINE void bg_raise_nonfinite(__m512i mx)
{
    const __m512i inf = _mm512_set1_epi32(0x7f800000);
    if (_mm512_cmpgt_epu32_mask(mx, inf))
        feraiseexcept(FE_OVERFLOW | FE_INVALID);
    else if (_mm512_cmpeq_epu32_mask(mx, inf))
        feraiseexcept(FE_OVERFLOW);
}
#endif

#endif
