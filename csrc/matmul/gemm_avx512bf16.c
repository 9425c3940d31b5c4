/*
 * gemm_avx512bf16.c - the AVX512_BF16 kernel: a 14x32 micro-kernel of vdpbf16ps on panels of
 * bfloat16 k pairs (BG_PACK_BF16_PAIR, kernel.h: copied, never widened), its packers, GEMV tiles on
 * the rows as stored (the driver is gemm_avx512.c's bg_gemv_rows_16lanes) and its small-product
 * kernel; products with M contiguous (v @ W) keep the AVX2 axpy code. Runs only when
 * bf16_cpu_tier() >= BF16_TIER_AVX512BF16.
 *
 * Arithmetic of vdpbf16ps (measured on an AMD Zen 5, matching Intel's description): for each lane,
 * acc = (acc + a[k+1] * b[k+1]) + a[k] * b[k], each product exact, each addition rounded to nearest
 * even in float32; subnormal inputs (bfloat16 elements and the accumulator) read as zero and
 * subnormal results are flushed to zero; no IEEE flag is ever raised. So an element is the float32
 * sum, from +0, of the products in increasing pairs of k (the odd k of a pair first), in blocks of
 * KC k (a block sum is added to the running total), flushed to zero below 2^-126:
 * tests/test_gemm_kernel.py::test_gemm_sums_in_increasing_k_from_zero and
 * ::test_k_blocks_are_added_in_order emulate exactly that. The order is fixed per kernel, so
 * results do not depend on the thread count.
 *
 * Because vdpbf16ps raises no flags, the packers and the small kernel report an infinity or NaN in
 * A or B, and the driver then computes the product with the avx512 kernel (bg_kernel.fallback:
 * IEEE results and numpy's warnings for 0 * inf); with finite inputs a stored result that is not
 * finite raises FE_OVERFLOW (and FE_INVALID for a NaN) here (test_fp_warnings_are_the_results_own,
 * test_overflow_warns_like_float32).
 */
#include "kernel.h"

#ifdef BG_HAVE_AVX512BF16
#include <fenv.h>

#include "simd_x86.h"

#define BG_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma")))
#define BG_INLINE                                                                                   \
    static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma")))

#define BG_MR 14
#define BG_NR 32
/* Cache blocks (k counts; a panel holds half as many pair slots). KC = 4096: a KC x NR panel of
 * B is up to KC * NR * 2 bytes = 256 KiB, read from L2 (13 bytes a cycle with A's 14 pairs, well
 * within its bandwidth); an A block holds at most 84 x 2048 rows x k (336 KiB, L2), so MC is 168
 * for K <= 1024, 84 for K = 2048, 42 for K >= 4096 (mc_kc); a panel of B holds at most 2048 x
 * 1024 k x columns (4 MiB, L3), so NC is 1024 for K <= 2048 and 512 for K >= 4096 (nc_kc): each
 * thread streams its own panel from the L3 once per A block, and two 8 MiB panels (NC = 1024 at
 * K = 4096) lost 7-17 % at n = 4096 on two threads (0.82-0.87 of the instruction's rate against
 * 0.92-0.94 with NC = 512, 10 % on one thread; NC = 2048: 0.76; AMD EPYC Zen 5 VM sharing its
 * L3, interleaved runs), while NC = 512 at K = 2048 lost 1-3 %. A long KC keeps the float32 sums of products
 * with K <= 4096 in registers until they are rounded out: no float32 tile to write and read back
 * per K block, which cost 5-10 % at n = 1024-2048 with KC = 512 (AMD EPYC Zen 5, one and two
 * threads, interleaved runs), and 5 % at n = 4096 on one thread with KC = 2048. */
#ifndef BGBF_KC
#define BGBF_KC 4096
#endif
#ifndef BGBF_MC
#define BGBF_MC 168
#endif
#ifndef BGBF_NC
#define BGBF_NC 1024
#endif
#ifndef BGBF_MC_KC
#define BGBF_MC_KC (84 * 2048)
#endif
#ifndef BGBF_NC_KC
#define BGBF_NC_KC (1024 * 2048)
#endif


/* absmax16 of the 16-bit lanes of two 32-byte vectors (raw bfloat16 pairs held as floats) */
BG_INLINE __m512i absmax16_2(__m512i mx, __m256 lo, __m256 hi)
{
    return bg_absmax16(mx, _mm512_castps_si512(_mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1)));
}

/* The pair slot (bg_pair_word) as the float the panels hold. */
static inline float pair_slot(const unsigned char *x, int64_t step, int two, uint32_t *mx)
{
    uint32_t w = bg_pair_word(x, step, two, mx);
    float f;
    memcpy(&f, &w, 4);
    return f;
}

/* ------------------------------------------------------------------------------------------------
 * Micro-kernel: 14 rows x 32 columns = 28 zmm accumulators; per k pair two B vectors and 14 A
 * pairs broadcast from memory: 28 vdpbf16ps.
 * ---------------------------------------------------------------------------------------------- */

#define BG_ROW(i)                                                                                   \
    do {                                                                                            \
        __m512bh av = (__m512bh)_mm512_castps_si512(_mm512_set1_ps(a[i]));                         \
        c##i##0 = _mm512_dpbf16_ps(c##i##0, av, b0);                                               \
        c##i##1 = _mm512_dpbf16_ps(c##i##1, av, b1);                                               \
    } while (0)


/*
 * FE_OVERFLOW where a float32 sum (|bits| maximum mx) rounds to bfloat16 inf, for the blocks the
 * kernel stores itself (bg_write_block_avx2 checks the others: edge blocks, the float32 tile
 * when K > KC). The inputs are finite here (the packers sent any inf or NaN to the fallback), so
 * an inf of the sums is an overflow too. The driver's pass over C this replaces
 * (rounding_flags, kernel.h) was 2.9 % of a 1024^2 product on two threads (AMD EPYC Zen 5).
 */
BG_INLINE void raise_rounding_overflow(__m512i mx)
{
    if (_mm512_cmpge_epu32_mask(mx, _mm512_set1_epi32((int)BG_F32_ROUNDS_TO_INF))) feraiseexcept(FE_OVERFLOW);
}

BG_TARGET static void ukernel_bf16(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                                   int accumulate)
{
    __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m512 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00;
    __m512 c70 = c00, c71 = c00, c80 = c00, c81 = c00, c90 = c00, c91 = c00;
    __m512 c100 = c00, c101 = c00, c110 = c00, c111 = c00, c120 = c00, c121 = c00, c130 = c00, c131 = c00;
    if (accumulate == BG_STORE_BF16) { /* the 64-byte row of the bfloat16 C block */
        for (int i = 0; i < BG_MR; i++) _mm_prefetch((const char *)c + i * ldc, _MM_HINT_T0);
    } else {
        for (int i = 0; i < BG_MR; i++) { /* both 64-byte lines of each row of the C block */
            _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
            _mm_prefetch((const char *)(c + i * ldc + 16), _MM_HINT_T0);
        }
    }
    const int64_t np = (kc + 1) / 2;
    for (int64_t k = 0; k < np; k++) {
        __m512bh b0 = (__m512bh)_mm512_load_si512((const void *)b);
        __m512bh b1 = (__m512bh)_mm512_load_si512((const void *)(b + 16));
        _mm_prefetch((const char *)(b + 8 * BG_NR), _MM_HINT_T0);
        BG_ROW(0); BG_ROW(1); BG_ROW(2); BG_ROW(3); BG_ROW(4); BG_ROW(5); BG_ROW(6);
        BG_ROW(7); BG_ROW(8); BG_ROW(9); BG_ROW(10); BG_ROW(11); BG_ROW(12); BG_ROW(13);
        a += BG_MR;
        b += BG_NR;
    }
    __m512i mx = _mm512_setzero_si512();
    if (accumulate == BG_STORE_BF16) {
        /* vcvtne2ps2bf16 rounds to nearest even as f32_to_bf16 does for every value but a
         * subnormal one (it reads those as 0), and vdpbf16ps sums are never subnormal */
#define BG_OUT16(i)                                                                                 \
    do {                                                                                            \
        mx = bg_absmax32(bg_absmax32(mx, c##i##0), c##i##1);                                        \
        _mm512_storeu_si512((void *)((unsigned char *)c + (i) * ldc),                               \
                            (__m512i)_mm512_cvtne2ps_pbh(c##i##1, c##i##0));                        \
    } while (0)
        BG_OUT16(0); BG_OUT16(1); BG_OUT16(2); BG_OUT16(3); BG_OUT16(4); BG_OUT16(5); BG_OUT16(6);
        BG_OUT16(7); BG_OUT16(8); BG_OUT16(9); BG_OUT16(10); BG_OUT16(11); BG_OUT16(12); BG_OUT16(13);
#undef BG_OUT16
        bg_raise_nonfinite(mx);
        raise_rounding_overflow(mx);
        return;
    }
#define BG_OUT(i)                                                                                   \
    do {                                                                                            \
        float *cr = c + (i) * ldc;                                                                  \
        if (accumulate) {                                                                           \
            c##i##0 = _mm512_add_ps(_mm512_loadu_ps(cr), c##i##0);                                  \
            c##i##1 = _mm512_add_ps(_mm512_loadu_ps(cr + 16), c##i##1);                             \
        }                                                                                           \
        mx = bg_absmax32(bg_absmax32(mx, c##i##0), c##i##1);                                              \
        _mm512_storeu_ps(cr, c##i##0);                                                              \
        _mm512_storeu_ps(cr + 16, c##i##1);                                                         \
    } while (0)
    BG_OUT(0); BG_OUT(1); BG_OUT(2); BG_OUT(3); BG_OUT(4); BG_OUT(5); BG_OUT(6);
    BG_OUT(7); BG_OUT(8); BG_OUT(9); BG_OUT(10); BG_OUT(11); BG_OUT(12); BG_OUT(13);
#undef BG_OUT
    bg_raise_nonfinite(mx);
}
#undef BG_ROW

/* ------------------------------------------------------------------------------------------------
 * Packing: pairs of k copied into 32-bit slots; each packer reports an inf or NaN it copied.
 * ---------------------------------------------------------------------------------------------- */

/* Any layout, element by element: MR-row panels (rows past mc zero; the driver pads them). */
static int pack_a_generic_pairs(const bg_view *a, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float *dst)
{
    const int64_t np = (kc + 1) / 2;
    uint32_t mx = 0;
    for (int64_t ir = 0; ir < mc; ir += BG_MR, dst += BG_MR * np)
        for (int64_t i = 0; i < BG_MR; i++) {
            if (ir + i >= mc) {
                for (int64_t p = 0; p < np; p++) dst[p * BG_MR + i] = 0.0f;
                continue;
            }
            const unsigned char *row = a->p + (i0 + ir + i) * a->rs + p0 * a->cs;
            for (int64_t p = 0; p < np; p++) dst[p * BG_MR + i] = pair_slot(row + 2 * p * a->cs, a->cs, 2 * p + 1 < kc, &mx);
        }
    return mx >= BG_NONFINITE;
}

/* Columns [j0, j0 + nc) of any layout: NR-column panels (columns past nc zero). */
static int pack_b_generic_pairs(const bg_view *b, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float *dst)
{
    const int64_t np = (kc + 1) / 2;
    uint32_t mx = 0;
    for (int64_t jr = 0; jr < nc; jr += BG_NR, dst += BG_NR * np)
        for (int64_t p = 0; p < np; p++) {
            const unsigned char *row = b->p + (p0 + 2 * p) * b->rs + (j0 + jr) * b->cs;
            for (int64_t j = 0; j < BG_NR; j++)
                dst[p * BG_NR + j] = jr + j < nc ? pair_slot(row + j * b->cs, b->rs, 2 * p + 1 < kc, &mx) : 0.0f;
        }
    return mx >= BG_NONFINITE;
}

BG_TARGET static int pack_a_bf16(const bg_view *a, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float *dst)
{
    /* rows past the end of a last, partial panel read zeros (kc <= BGBF_KC: the driver cuts k
     * into the kernel's kc blocks) */
    static const unsigned char zero_row[BGBF_KC * 2] __attribute__((aligned(64)));
    const int64_t np = (kc + 1) / 2, nfull = kc / 2;
    __m512i mx = _mm512_setzero_si512();
    uint32_t smx = 0;
    if (a->cs == 2) { /* rows contiguous in k: a pair is one 32-bit word; 8 pairs of 8 rows transposed */
        for (int64_t ir = 0; ir < mc; ir += BG_MR, dst += BG_MR * np) {
            const unsigned char *rp[16];
            for (int i = 0; i < 16; i++)
                rp[i] = i < BG_MR && ir + i < mc ? a->p + (i0 + ir + i) * a->rs + p0 * 2 : zero_row;
            int64_t p = 0;
            for (; p + 8 <= nfull; p += 8) {
                __m256 r[8], s[8];
                for (int i = 0; i < 8; i++) {
                    r[i] = _mm256_loadu_ps((const float *)(const void *)(rp[i] + p * 4));
                    s[i] = _mm256_loadu_ps((const float *)(const void *)(rp[8 + i] + p * 4));
                }
                for (int i = 0; i < 8; i += 2) mx = absmax16_2(absmax16_2(mx, r[i], r[i + 1]), s[i], s[i + 1]);
                transpose8(r);
                transpose8(s);
                float *d = dst + p * BG_MR;
                for (int q = 0; q < 8; q++) {
                    _mm256_storeu_ps(d + q * BG_MR, r[q]);
                    _mm_storeu_ps(d + q * BG_MR + 8, _mm256_castps256_ps128(s[q]));
                    _mm_storel_pi((__m64 *)(void *)(d + q * BG_MR + 12), _mm256_extractf128_ps(s[q], 1));
                }
            }
            for (; p < np; p++)
                for (int i = 0; i < BG_MR; i++) dst[p * BG_MR + i] = pair_slot(rp[i] + p * 4, 2, 2 * p + 1 < kc, &smx);
        }
    } else if (a->rs == 2) { /* columns contiguous in i: the 14 rows of k and of k + 1, interleaved */
        for (int64_t ir = 0; ir < mc; ir += BG_MR, dst += BG_MR * np) {
            const unsigned char *src = a->p + (i0 + ir) * 2 + p0 * a->cs;
            int m = mc - ir < BG_MR ? (int)(mc - ir) : BG_MR;
            __mmask16 lm = (__mmask16)((1u << m) - 1u);
            for (int64_t p = 0; p < np; p++) {
                __m256i lo = _mm256_maskz_loadu_epi16(lm, src + 2 * p * a->cs);
                __m256i hi = 2 * p + 1 < kc ? _mm256_maskz_loadu_epi16(lm, src + (2 * p + 1) * a->cs)
                                            : _mm256_setzero_si256();
                mx = bg_absmax16(mx, _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1));
                __m512i w = _mm512_or_si512(_mm512_cvtepu16_epi32(lo), _mm512_slli_epi32(_mm512_cvtepu16_epi32(hi), 16));
                _mm512_mask_storeu_epi32(dst + p * BG_MR, (__mmask16)0x3fff, w);
            }
        }
    } else {
        return pack_a_generic_pairs(a, i0, mc, p0, kc, dst);
    }
    return bg_any_nonfinite16(mx) || smx >= BG_NONFINITE;
}

/* One k pair of a B panel from rows contiguous in j: the lm columns of rows k (at s) and k + 1
 * (s + rs; zero when !two) interleaved into the panel's 32 slots at d; returns the running
 * |bfloat16| maximum. */
BG_INLINE __m512i pack_row_pair(const unsigned char *s, int64_t rs, int two, __mmask32 lm, float *d, __m512i mx)
{
    __m512i r0 = _mm512_maskz_loadu_epi16(lm, s);
    __m512i r1 = two ? _mm512_maskz_loadu_epi16(lm, s + rs) : _mm512_setzero_si512();
    __m512i lo, hi;
    bg_interleave_rows(r0, r1, &lo, &hi);
    _mm512_store_si512((void *)d, lo);
    _mm512_store_si512((void *)(d + 16), hi);
    return bg_absmax16(bg_absmax16(mx, r0), r1);
}

BG_TARGET int bg_pack_b_bf16_pairs(const bg_view *b, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float *dst)
{
    const int64_t np = (kc + 1) / 2, nfull = kc / 2;
    __m512i mx = _mm512_setzero_si512();
    uint32_t smx = 0;
    int64_t jr = 0;
    if (b->cs == 2) { /* rows contiguous in j: rows k and k + 1 interleaved (fewer columns at the edge) */
        /* four panels at a time: each row is read 256 contiguous bytes at a time (whole lines
         * in order for the prefetcher, a quarter of the pages per panel) */
        for (; jr + 4 * BG_NR <= nc; jr += 4 * BG_NR, dst += 4 * BG_NR * np) {
            const unsigned char *src = b->p + p0 * b->rs + (j0 + jr) * 2;
            for (int64_t p = 0; p < np; p++)
                for (int g = 0; g < 4; g++)
                    mx = pack_row_pair(src + 2 * p * b->rs + 64 * g, b->rs, 2 * p + 1 < kc, (__mmask32)0xffffffffu,
                                       dst + g * BG_NR * np + p * BG_NR, mx);
        }
        for (; jr < nc; jr += BG_NR, dst += BG_NR * np) {
            const unsigned char *src = b->p + p0 * b->rs + (j0 + jr) * 2;
            int64_t nr = nc - jr < BG_NR ? nc - jr : BG_NR;
            __mmask32 lm = nr == BG_NR ? (__mmask32)0xffffffffu : (__mmask32)((1u << nr) - 1u);
            for (int64_t p = 0; p < np; p++)
                mx = pack_row_pair(src + 2 * p * b->rs, b->rs, 2 * p + 1 < kc, lm, dst + p * BG_NR, mx);
        }
    } else if (b->rs == 2) { /* columns contiguous in k: a pair is one 32-bit word; 8x8 transposes */
        for (; jr + BG_NR <= nc; jr += BG_NR, dst += BG_NR * np) {
            const unsigned char *src = b->p + p0 * 2 + (j0 + jr) * b->cs;
            int64_t p = 0;
            for (; p + 8 <= nfull; p += 8) {
                for (int h = 0; h < BG_NR / 8; h++) {
                    __m256 r[8];
                    for (int j = 0; j < 8; j++)
                        r[j] = _mm256_loadu_ps((const float *)(const void *)(src + (h * 8 + j) * b->cs + p * 4));
                    for (int j = 0; j < 8; j += 2)
                        mx = absmax16_2(mx, r[j], r[j + 1]);
                    transpose8(r);
                    for (int q = 0; q < 8; q++) _mm256_store_ps(dst + (p + q) * BG_NR + h * 8, r[q]);
                }
            }
            for (; p < np; p++)
                for (int j = 0; j < BG_NR; j++) dst[p * BG_NR + j] = pair_slot(src + j * b->cs + p * 4, 2, 2 * p + 1 < kc, &smx);
        }
    }
    int nf = bg_any_nonfinite16(mx) || smx >= BG_NONFINITE;
    if (jr < nc) nf |= pack_b_generic_pairs(b, p0, kc, j0 + jr, nc - jr, dst);
    return nf;
}

/* ------------------------------------------------------------------------------------------------
 * GEMV / skinny products, K contiguous: the avx512 kernel's driver (bg_gemv_rows_16lanes) with
 * tiles of vdpbf16ps on the rows as loaded (32 bfloat16 = 16 pairs per 64 bytes) and V packed as
 * bfloat16 (kernel.h, bg_gemv_rows_fn): one instruction per 32 k, row and column, where the float32
 * tiles widen the row twice and issue two FMAs. The driver looks for inf/NaN in the sums (check).
 * ---------------------------------------------------------------------------------------------- */

BG_INLINE void rows_tile_dp(const unsigned char *const *rows, int R, const float *v, int64_t vstep, int C,
                            int64_t nb, float *acc, int64_t ldacc, int64_t pf)
{
    __m512 s[4][4];
    for (int r = 0; r < R; r++)
        for (int j = 0; j < C; j++) s[r][j] = _mm512_load_ps(acc + r * ldacc + j * 16);
    for (int64_t t = 0; t < nb; t++) {
        __m512i x[4];
        for (int r = 0; r < R; r++) x[r] = _mm512_loadu_si512((const void *)(rows[r] + t * 64));
        if (pf)
            for (int r = 0; r < R; r++) _mm_prefetch((const char *)(rows[r] + t * 64 + pf), _MM_HINT_T0);
        for (int j = 0; j < C; j++) {
            __m512bh vv = (__m512bh)_mm512_load_si512((const void *)(v + j * 16));
            for (int r = 0; r < R; r++) s[r][j] = _mm512_dpbf16_ps(s[r][j], (__m512bh)x[r], vv);
        }
        v += vstep;
    }
    for (int r = 0; r < R; r++)
        for (int j = 0; j < C; j++) _mm512_store_ps(acc + r * ldacc + j * 16, s[r][j]);
}

#define BG_RT(R, C)                                                                                 \
    BG_TARGET static void rows_tile_##R##x##C(const unsigned char *const *rows, const float *v,     \
                                              int64_t vstep, int64_t nb, float *acc, int64_t ldacc, \
                                              int64_t pf)                                           \
    {                                                                                               \
        rows_tile_dp(rows, R, v, vstep, C, nb, acc, ldacc, pf);                                     \
    }
BG_RT(1, 1) BG_RT(1, 2) BG_RT(1, 3) BG_RT(1, 4)
BG_RT(2, 1) BG_RT(2, 2) BG_RT(2, 3) BG_RT(2, 4)
BG_RT(3, 1) BG_RT(3, 2) BG_RT(3, 3) BG_RT(3, 4)
BG_RT(4, 1) BG_RT(4, 2) BG_RT(4, 3) BG_RT(4, 4)
#undef BG_RT
static const bg_rows_tile_fn rows_tiles[4][4] = {
    {rows_tile_1x1, rows_tile_1x2, rows_tile_1x3, rows_tile_1x4},
    {rows_tile_2x1, rows_tile_2x2, rows_tile_2x3, rows_tile_2x4},
    {rows_tile_3x1, rows_tile_3x2, rows_tile_3x3, rows_tile_3x4},
    {rows_tile_4x1, rows_tile_4x2, rows_tile_4x3, rows_tile_4x4},
};

BG_TARGET int bg_gemv_rows_bf16(const bg_view *a, int64_t i0, int64_t i1, int64_t K, const float *vt,
                                    int64_t kpad, int64_t n, const bg_out *c)
{
    return bg_gemv_rows_16lanes(a, i0, i1, K, vt, kpad, n, c, rows_tiles, 16, 1, 1);
}

/* ------------------------------------------------------------------------------------------------
 * Skinny W @ V (skinny_minn to 16 columns), K contiguous (kernel.h, bg_kernel.skinny_rows): V packed
 * by pairs of k, 16 column slots per pair. A tile of BG_SK_R rows keeps one accumulator per row,
 * lane j holding column j, and broadcasts each row's pair (k, k + 1) straight from the row as
 * stored (one 32-bit word): one vdpbf16ps per row and pair, W never packed, no lane sums to fold.
 * Each element is the GEMM kernel's sum (from +0, in increasing pairs, the odd k first) over all K
 * at once. Twelve rows: fewer leave the vdpbf16ps latency exposed, more streams (and their
 * addresses) than the core keeps going (AMD EPYC Zen 5, one thread, W 8192 x 8192: 4 rows 180,
 * 8 rows 355, 12 rows 393, 16 rows 283 GFLOP/s in a C harness; the 16-lane GEMV: about 200).
 * Eight rows where the L1 data cache has fewer than 12 ways (or CPUID does not say): rows a multiple of 4 KiB apart
 * (K a multiple of 2048) fall into one L1 set, and twelve of them, beside V's lines, overflow an
 * 8-way set (AMD EPYC Zen 4, 32 KiB 8-way L1, one thread, W 8192 x 8192 with 16 columns: 15.5
 * ms with 12 rows, 10.8 with 8, 10.9 with 6; W 8192 x 8000, rows in different sets: 10.2 and
 * 10.1 ms).
 * ---------------------------------------------------------------------------------------------- */

#define BG_SK_R 12
#define BG_SK_PF 512 /* software prefetch distance along each row, bytes */

BG_INLINE void skinny_tile(const unsigned char *w, int64_t lda, const int R, int64_t K, const uint32_t *v,
                           float *out)
{
    __m512 acc[BG_SK_R];
    for (int r = 0; r < R; r++) acc[r] = _mm512_setzero_ps();
    const int64_t nfull = K / 32; /* complete 64-byte blocks of every row */
    for (int64_t t = 0; t < nfull; t++) {
        const unsigned char *blk = w + 64 * t;
        for (int r = 0; r < R; r++) _mm_prefetch((const char *)(blk + r * lda + BG_SK_PF), _MM_HINT_T0);
        const uint32_t *vt = v + 16 * 16 * t;
        for (int q = 0; q < 16; q++) {
            __m512bh vv = (__m512bh)_mm512_load_si512((const void *)(vt + 16 * q));
            for (int r = 0; r < R; r++) {
                uint32_t x;
                memcpy(&x, blk + r * lda + 4 * q, 4);
                acc[r] = _mm512_dpbf16_ps(acc[r], (__m512bh)_mm512_set1_epi32((int)x), vv);
            }
        }
    }
    if (K > 32 * nfull) { /* the last k (fewer than 32): zero-padded copies, as the pair packers do */
        const int64_t rem = K - 32 * nfull, npr = (rem + 1) / 2;
        const __mmask32 lm = (__mmask32)((1u << rem) - 1u);
        uint32_t tail[BG_SK_R][16] __attribute__((aligned(64)));
        for (int r = 0; r < R; r++) {
            _mm512_store_si512((void *)tail[r], _mm512_maskz_loadu_epi16(lm, w + r * lda + 64 * nfull));
        }
        const uint32_t *vt = v + 16 * 16 * nfull;
        for (int64_t q = 0; q < npr; q++) {
            __m512bh vv = (__m512bh)_mm512_load_si512((const void *)(vt + 16 * q));
            for (int r = 0; r < R; r++)
                acc[r] = _mm512_dpbf16_ps(acc[r], (__m512bh)_mm512_set1_epi32((int)tail[r][q]), vv);
        }
    }
    for (int r = 0; r < R; r++) _mm512_store_ps(out + 16 * r, acc[r]);
}

typedef void (*skinny_tile_fn)(const unsigned char *, int64_t, int64_t, const uint32_t *, float *);
#define BG_SKT(R)                                                                                   \
    BG_TARGET static void skinny_tile_##R(const unsigned char *w, int64_t lda, int64_t K, const uint32_t *v, \
                                          float *out)                                               \
    {                                                                                               \
        skinny_tile(w, lda, R, K, v, out);                                                          \
    }
BG_SKT(12) BG_SKT(8) BG_SKT(4) BG_SKT(1)
#undef BG_SKT

BG_TARGET int bg_skinny_rows_bf16(const bg_view *a, int64_t i0, int64_t i1, int64_t K, const float *vt,
                                      int64_t kpad, int64_t n, const bg_out *c)
{
    (void)kpad;
    float out[BG_SK_R * 16] __attribute__((aligned(64)));
    __m512i mx = _mm512_setzero_si512();
    const int rmax = bf16_cpu_l1d_ways() >= 12 ? 12 : 8;
    for (int64_t i = i0; i < i1;) {
        /* tiles of 12 rows (8 for an L1 of fewer ways); the last rows by 8, 4 and 1 */
        int64_t left = i1 - i;
        int R = left >= rmax ? rmax : left >= 8 ? 8 : left >= 4 ? 4 : 1;
        skinny_tile_fn tile = R == 12 ? skinny_tile_12 : R == 8 ? skinny_tile_8 : R == 4 ? skinny_tile_4 : skinny_tile_1;
        tile(a->p + i * a->rs, a->rs, K, (const uint32_t *)(const void *)vt, out);
        /* an inf or NaN in a row of W makes all 16 lanes of its sums inf or NaN (those past n are
         * times a zero of V): only then is the row scanned, and an inf or NaN there sends the
         * whole product to the fallback (kernel.h); else the sums overflowed */
        for (int r = 0; r < R; r++)
            if (bg_check_row_sums(_mm512_load_ps(out + 16 * r), a->p + (i + r) * a->rs, K, &mx)) return 1;
        bg_write_block_avx2(c, i, 0, out, 16, R, n);
        i += R;
    }
    bg_raise_nonfinite(mx);
    return 0;
}
#undef BG_SK_R
#undef BG_SK_PF

/* ------------------------------------------------------------------------------------------------
 * Small products (kernel.h, bg_small_fn): B's pairs (rows of ldb slots) and R rows of A's pairs
 * on the stack, R x NV tiles of accumulators over all k, the GEMM path's order and bits.
 * ---------------------------------------------------------------------------------------------- */

BG_INLINE void small_tile(int64_t np, const unsigned char *const *arow, const float *bw, const bg_out *c,
                          int64_t i0, int64_t rows, int64_t N, const int R, const int NV)
{
    __m512 s[8][4];
    for (int r = 0; r < R; r++)
        for (int v = 0; v < NV; v++) s[r][v] = _mm512_setzero_ps();
    for (int64_t p = 0; p < np; p++) {
        __m512bh bv[4];
        for (int v = 0; v < NV; v++) /* vector v: half v % 2 of panel v / 2 */
            bv[v] = (__m512bh)_mm512_load_si512((const void *)(bw + (v >> 1) * BG_NR * np + p * BG_NR + 16 * (v & 1)));
        for (int r = 0; r < R; r++) {
            uint32_t pair;
            memcpy(&pair, arow[r] + 4 * p, 4);
            __m512bh av = (__m512bh)_mm512_set1_epi32((int)pair);
            for (int v = 0; v < NV; v++) s[r][v] = _mm512_dpbf16_ps(s[r][v], av, bv[v]);
        }
    }
    __m512i mx = _mm512_setzero_si512(); /* padded rows and columns repeat real ones */
    for (int r = 0; r < R; r++)
        for (int v = 0; v < NV; v++) mx = bg_absmax32(mx, s[r][v]);
    bg_store_tile16(c, i0, rows, N, s, R, NV);
    bg_raise_nonfinite(mx);
}

/* rows per tile for NV vectors: 8 accumulators for one vector, else 6 rows (24 at most) */
#define BG_SMALL_ROWS(NV) ((NV) == 1 ? 8 : 6)
typedef void (*small_tile_fn)(int64_t, const unsigned char *const *, const float *, const bg_out *, int64_t, int64_t,
                              int64_t);
#define BG_ST(NV)                                                                                   \
    BG_TARGET static void small_tile_##NV(int64_t np, const unsigned char *const *arow, const float *bw,   \
                                          const bg_out *c, int64_t i0, int64_t rows, int64_t N)     \
    {                                                                                               \
        small_tile(np, arow, bw, c, i0, rows, N, BG_SMALL_ROWS(NV), NV);                            \
    }
BG_ST(1) BG_ST(2) BG_ST(3) BG_ST(4)
#undef BG_ST

BG_TARGET int bg_small_bf16(int64_t M, int64_t N, int64_t K, const bg_view *a, const bg_view *b,
                                const bg_out *c)
{
    static const small_tile_fn tiles[4] = {small_tile_1, small_tile_2, small_tile_3, small_tile_4};
    float bw[BG_SMALL_MAXK / 2 * 64] __attribute__((aligned(64)));
    float af[8 * BG_SMALL_MAXK / 2];
    const int nv = (int)((N + 15) / 16), R = BG_SMALL_ROWS(nv);
    const int64_t np = (K + 1) / 2;
    /* B: the GEMM packer's 32-column panels, one after another, read in place by the tiles (a copy
     * into rows of 16 nv slots made 1000 x (16x16 @ 16x16) 9 % slower); the columns the tiles read
     * past N repeat the last one */
    if (bg_pack_b_bf16_pairs(b, 0, K, 0, N, bw)) return 1;
    for (int64_t j = N; j < 16 * nv; j++) {
        float *panel = bw + (j / BG_NR) * BG_NR * np;
        for (int64_t p = 0; p < np; p++) panel[p * BG_NR + j % BG_NR] = panel[p * BG_NR + (N - 1) % BG_NR];
    }
    for (int64_t i0 = 0; i0 < M; i0 += R) {
        int64_t rows = M - i0 < R ? M - i0 : R;
        __m512i mx = _mm512_setzero_si512();
        uint32_t smx = 0;
        const unsigned char *arow[8]; /* row r's k pairs, 4 bytes each */
        for (int64_t r = 0; r < R; r++) { /* rows past the end repeat the last (see bg_pad_panel) */
            const unsigned char *src = a->p + (i0 + (r < rows ? r : rows - 1)) * a->rs;
            float *d = af + r * np;
            arow[r] = (const unsigned char *)d;
            if (a->cs == 2) {
                /* the row's bytes are its pairs: with an even K the tile reads them in place (a
                 * copy, read back at once, made 1000 x (16x16 @ 16x16) 11 % slower); an odd K's
                 * last pair gets a high half 0 in a copy */
                for (int64_t k = 0; k < 2 * np; k += 32) {
                    __mmask32 lm = K - k >= 32 ? (__mmask32)0xffffffffu : (__mmask32)((1u << (K - k)) - 1u);
                    __m512i x = _mm512_maskz_loadu_epi16(lm, src + 2 * k);
                    mx = bg_absmax16(mx, x);
                    if (K % 2)
                        _mm512_mask_storeu_epi16((unsigned char *)d + 2 * k,
                                                 2 * np - k >= 32 ? (__mmask32)0xffffffffu
                                                                  : (__mmask32)((1u << (2 * np - k)) - 1u), x);
                }
                if (K % 2 == 0) arow[r] = src;
            } else {
                for (int64_t p = 0; p < np; p++) d[p] = pair_slot(src + 2 * p * a->cs, a->cs, 2 * p + 1 < K, &smx);
            }
        }
        /* an inf or NaN in A: the fallback computes the whole product again (kernel.h) */
        if (bg_any_nonfinite16(mx) || smx >= BG_NONFINITE) return 1;
        tiles[nv - 1](np, arow, bw, c, i0, rows, N);
    }
    return 0;
}
#undef BG_SMALL_ROWS

_Static_assert(BGBF_MC % BG_MR == 0 && BGBF_NC % BG_NR == 0 && BG_TILE_N % BG_NR == 0 && BGBF_KC % 2 == 0,
               "kernel.h: MC must be a multiple of MR, NC and the tile width of NR, KC even");

#define BG_DP(s, x) _mm512_dpbf16_ps(s, x, x)
BG_PEAK_LOOP(peak_bf16, BG_TARGET, __m512, _mm512_setzero_ps(), __m512bh, (__m512bh)_mm512_setzero_si512(),
             BG_DP)
#undef BG_DP

const bg_kernel bg_kernel_avx512bf16 = {
    .name = "avx512bf16: AVX512-BF16 vdpbf16ps 14x32 on bfloat16 k pairs",
    .tier = BF16_TIER_AVX512BF16,
    .mr = BG_MR, .nr = BG_NR, .kc = BGBF_KC, .mc = BGBF_MC, .nc = BGBF_NC, .mc_kc = BGBF_MC_KC, .nc_kc = BGBF_NC_KC,
    .pack = BG_PACK_BF16_PAIR,
    .gemv_ku = 32,
    .ukernel = ukernel_bf16,
    .ukernel_stores_bf16 = 1,
    .rounding_flags = 1,
    .write_block = bg_write_block_avx2,
    .pack_a = pack_a_bf16,
    .pack_b = bg_pack_b_bf16_pairs,
    .gemv_rows = bg_gemv_rows_bf16,
    .skinny_rows = bg_skinny_rows_bf16,
    .skinny_minn = BG_BF16_SKINNY_MINN,
    .gemv_cols = bg_gemv_cols_avx2,
    .pack_v_rows = NULL, /* V is packed as bfloat16 by the driver (pack_vector) */
    .small = bg_small_bf16,
    .small_maxn = 64,
    .fallback = &bg_kernel_avx512,
    .peak = peak_bf16,
    .peak_flops = BG_PEAK_CHAINS * 64, /* 16 lanes x 2 pairs x (multiply + add) per vdpbf16ps */
};

#endif /* BG_HAVE_AVX512BF16 */
