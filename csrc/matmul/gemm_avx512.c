/*
 * gemm_avx512.c - AVX-512 (F/BW/VL/DQ) kernels for CPUs without AVX512_BF16: a float32 14x32
 * micro-kernel on zmm registers (bfloat16 widened to float32 while packing), its packers, and the
 * GEMV / skinny kernels for K-contiguous matrices. Every function carries the target attribute and
 * runs only when bf16_cpu_tier() >= BF16_TIER_AVX512.
 *
 * Summation order (see kernel.h): GEMM elements add exact products in increasing k in blocks of KC;
 * GEMV outputs keep 16 lane sums (lane l takes the k with (k mod 32) >> 1 == l) combined by
 * hsum16_many. Both are fixed per kernel, so results do not depend on the thread count; they may
 * differ in the last bits from the avx2/baseline tiers (another KC, another lane count).
 */
#include "kernel.h"

#ifdef BG_HAVE_AVX512
#include "simd_x86.h"

#define BG_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))
#define BG_INLINE static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))

#define BG_MR 14
#define BG_NR 32
/* Cache blocks (measured, see README.md) */
#ifndef BG512_KC
#define BG512_KC 256
#endif
#ifndef BG512_MC
#define BG512_MC 336
#endif
#ifndef BG512_NC
#define BG512_NC 4096
#endif

/* 16 bfloat16 (32 bytes, any alignment) -> 16 float32 */
BG_INLINE __m512 widen16(const unsigned char *p)
{
    __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)p);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* the first n (<= 16) bfloat16 at p -> float32, the other lanes zero; reads only n elements */
BG_INLINE __m512 widen16_n(const unsigned char *p, int n)
{
    __mmask16 m = (__mmask16)((1u << n) - 1u);
    __m256i h = _mm256_maskz_loadu_epi16(m, p);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* ------------------------------------------------------------------------------------------------
 * Micro-kernel: 14 rows x 32 columns = 28 zmm accumulators, two B vectors per k, A broadcast from
 * memory (embedded broadcast operand of the FMA): 30 of the 32 zmm registers.
 * ---------------------------------------------------------------------------------------------- */

#define BG_ROW(i)                                                                                   \
    do {                                                                                            \
        __m512 av = _mm512_set1_ps(a[i]);                                                           \
        c##i##0 = _mm512_fmadd_ps(av, b0, c##i##0);                                                \
        c##i##1 = _mm512_fmadd_ps(av, b1, c##i##1);                                                \
    } while (0)

BG_TARGET static void ukernel_avx512(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                                     int accumulate)
{
    __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m512 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00;
    __m512 c70 = c00, c71 = c00, c80 = c00, c81 = c00, c90 = c00, c91 = c00;
    __m512 c100 = c00, c101 = c00, c110 = c00, c111 = c00, c120 = c00, c121 = c00, c130 = c00, c131 = c00;
    for (int i = 0; i < BG_MR; i++) _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
    for (int64_t k = 0; k < kc; k++) {
        __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
        _mm_prefetch((const char *)(b + 8 * BG_NR), _MM_HINT_T0);
        BG_ROW(0); BG_ROW(1); BG_ROW(2); BG_ROW(3); BG_ROW(4); BG_ROW(5); BG_ROW(6);
        BG_ROW(7); BG_ROW(8); BG_ROW(9); BG_ROW(10); BG_ROW(11); BG_ROW(12); BG_ROW(13);
        a += BG_MR;
        b += BG_NR;
    }
#define BG_OUT(i)                                                                                   \
    do {                                                                                            \
        float *cr = c + (i) * ldc;                                                                  \
        if (accumulate) {                                                                           \
            c##i##0 = _mm512_add_ps(_mm512_loadu_ps(cr), c##i##0);                                  \
            c##i##1 = _mm512_add_ps(_mm512_loadu_ps(cr + 16), c##i##1);                             \
        }                                                                                           \
        _mm512_storeu_ps(cr, c##i##0);                                                              \
        _mm512_storeu_ps(cr + 16, c##i##1);                                                         \
    } while (0)
    BG_OUT(0); BG_OUT(1); BG_OUT(2); BG_OUT(3); BG_OUT(4); BG_OUT(5); BG_OUT(6);
    BG_OUT(7); BG_OUT(8); BG_OUT(9); BG_OUT(10); BG_OUT(11); BG_OUT(12); BG_OUT(13);
#undef BG_OUT
}
#undef BG_ROW

/* ------------------------------------------------------------------------------------------------
 * Packing with widening
 * ---------------------------------------------------------------------------------------------- */

BG_TARGET static int pack_a_avx512(const bg_view *a, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float *dst)
{
    /* rows past the end of a last, partial panel read zeros (kc <= BG512_KC: the driver cuts k
     * into the kernel's kc blocks) */
    static const unsigned char zero_row[BG512_KC * 2] __attribute__((aligned(64)));
    int64_t ir = 0;
    if (a->cs == 2) { /* rows contiguous in k: 8 k of rows 0-7 and 8-13, two 8x8 transposes */
        for (; ir < mc; ir += BG_MR) {
            const unsigned char *rp[BG_MR];
            for (int i = 0; i < BG_MR; i++)
                rp[i] = ir + i < mc ? a->p + (i0 + ir + i) * a->rs + p0 * 2 : zero_row;
            int64_t k = 0;
            for (; k + 8 <= kc; k += 8) {
                __m256 r[8], s[8];
                for (int i = 0; i < 8; i++) r[i] = widen8(rp[i] + k * 2);
                for (int i = 0; i < 6; i++) s[i] = widen8(rp[8 + i] + k * 2);
                s[6] = _mm256_setzero_ps();
                s[7] = _mm256_setzero_ps();
                transpose8(r);
                transpose8(s);
                float *d = dst + k * BG_MR;
                for (int q = 0; q < 8; q++) {
                    _mm256_storeu_ps(d + q * BG_MR, r[q]);
                    _mm_storeu_ps(d + q * BG_MR + 8, _mm256_castps256_ps128(s[q]));
                    _mm_storel_pi((__m64 *)(void *)(d + q * BG_MR + 12), _mm256_extractf128_ps(s[q], 1));
                }
            }
            for (; k < kc; k++)
                for (int i = 0; i < BG_MR; i++) dst[k * BG_MR + i] = bg_load(rp[i] + k * 2);
            dst += BG_MR * kc;
        }
    } else if (a->rs == 2) { /* columns contiguous in i: 14 consecutive bfloat16 per k */
        for (; ir < mc; ir += BG_MR) {
            const unsigned char *src = a->p + (i0 + ir) * 2 + p0 * a->cs;
            int m = mc - ir < BG_MR ? (int)(mc - ir) : BG_MR; /* widen16_n zero-fills past m */
            for (int64_t k = 0; k < kc; k++)
                _mm512_mask_storeu_ps(dst + k * BG_MR, (__mmask16)0x3fff, widen16_n(src + k * a->cs, m));
            dst += BG_MR * kc;
        }
    }
    if (ir < mc) bg_pack_a_generic(a, i0 + ir, mc - ir, p0, kc, dst, BG_MR);
    return 0;
}

BG_TARGET static int pack_b_avx512(const bg_view *b, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float *dst)
{
    int64_t jr = 0;
    if (b->cs == 2) { /* rows contiguous in j: 32 bfloat16 per k (fewer, zero filled, at the edge) */
        for (; jr < nc; jr += BG_NR) {
            const unsigned char *src = b->p + p0 * b->rs + (j0 + jr) * 2;
            int64_t nr = nc - jr < BG_NR ? nc - jr : BG_NR;
            if (nr == BG_NR) {
                for (int64_t k = 0; k < kc; k++) {
                    const unsigned char *s = src + k * b->rs;
                    _mm512_store_ps(dst + k * BG_NR, widen16(s));
                    _mm512_store_ps(dst + k * BG_NR + 16, widen16(s + 32));
                }
            } else {
                int n0 = nr < 16 ? (int)nr : 16, n1 = (int)nr - n0;
                for (int64_t k = 0; k < kc; k++) {
                    const unsigned char *s = src + k * b->rs;
                    _mm512_store_ps(dst + k * BG_NR, n0 == 16 ? widen16(s) : widen16_n(s, n0));
                    _mm512_store_ps(dst + k * BG_NR + 16, n1 > 0 ? widen16_n(s + 32, n1) : _mm512_setzero_ps());
                }
            }
            dst += BG_NR * kc;
        }
    } else if (b->rs == 2) { /* columns contiguous in k: widen 8 k of 8 columns, transpose */
        for (; jr + BG_NR <= nc; jr += BG_NR) {
            const unsigned char *src = b->p + p0 * 2 + (j0 + jr) * b->cs;
            int64_t k = 0;
            for (; k + 8 <= kc; k += 8) {
                for (int h = 0; h < BG_NR / 8; h++) {
                    __m256 r[8];
                    for (int j = 0; j < 8; j++) r[j] = widen8(src + (h * 8 + j) * b->cs + k * 2);
                    transpose8(r);
                    for (int q = 0; q < 8; q++) _mm256_store_ps(dst + (k + q) * BG_NR + h * 8, r[q]);
                }
            }
            for (; k < kc; k++)
                for (int j = 0; j < BG_NR; j++) dst[k * BG_NR + j] = bg_load(src + j * b->cs + k * 2);
            dst += BG_NR * kc;
        }
    }
    if (jr < nc) bg_pack_b_generic(b, p0, kc, j0 + jr, nc - jr, dst, BG_NR);
    return 0;
}

/* ------------------------------------------------------------------------------------------------
 * GEMV / skinny GEMM, K contiguous: y(i, j) = dot(A[i, :], V[:, j]) for n <= 16 columns.
 *
 * One 64-byte load gives 32 bfloat16 of a row; x << 16 holds the even k, x & 0xffff0000 the odd
 * k, matching V packed with KU = 32 (even k first). Register tile: R rows x C columns of 16-lane
 * accumulators (R*C <= 16, C <= BG_ROWS_MAXC), the R raw and R widened rows and one V vector: at most 25 zmm.
 * k is cut into chunks whose V block stays in L1 while a panel of rows is multiplied with it; the
 * panel's accumulators live in a buffer between chunks, so the blocking does not change the order.
 * ---------------------------------------------------------------------------------------------- */

/* Measured on the Ice Lake Xeon (W @ V, 16 columns, CPU time of one thread, noisy shared machine):
 * 4-wide tiles beat 8-wide ones by ~10 %, a 16-row panel matches a 32-row one, a 32 KiB V block
 * beats 16 KiB by ~10 % and 8 KiB by ~30 %; separate even/odd accumulators were ~35 % slower. */
#ifndef BG_ROWS_VBYTES
#define BG_ROWS_VBYTES (32 * 1024)    /* V block per k chunk (the L1 is 48 KiB) */
#endif
#define BG_ROWS_L2VBYTES (128 * 1024) /* no k chunks when all of V is at most this (in L2) */
#define BG_ROWS_MAXC 4                /* columns per tile: 16 columns run as four 4 x 4 tiles */
#define BG_ROWS_RC 16                 /* accumulators per tile */
#ifndef BG_ROWS_PF_TILES
#define BG_ROWS_PF_TILES 1
#endif
#ifndef BG_ROWS_PANEL
#define BG_ROWS_PANEL 16              /* rows sharing one V block (accumulators: 16 KiB at n = 16) */
#endif
/* stream (kernels with one instruction per 64 bytes of a row): W @ x whose rows in this thread
 * exceed BG_ROWS_STREAM_BYTES come from memory rather than the L3. Those rows are read without
 * software prefetch (the hardware prefetcher follows them; the extra prefetches only cost), one row
 * per tile while a row (and V, as long) is at most BG_ROWS_STREAM_ROW bytes, so that V stays in the
 * L1 beside the stream, four rows per tile above that (V read once per four rows). AMD EPYC Zen 4
 * VM (32 KiB L1), avx512bf16, one thread, ms per call (one row with prefetch / one row / four rows with
 * prefetch / four rows): W 16384 x 4096 5.7-6.1 / 4.1-4.2 / 6.3-6.6 / 5.9-6.2; 8192 x 8192
 * 7.5-7.7 / 5.7-5.9 / 5.6-5.9 / 4.9-5.2; 4096 x 16384 7.8-7.9 / 6.7-7.0 / 5.2-5.4 / 4.2-4.4
 * (sgemv 5.3-7.7 ms); 12288 x 6144, one row / four rows: 4.8-5.0 / 6.3. The order of each sum does
 * not depend on the rows per tile. */
#define BG_ROWS_STREAM_BYTES (24 << 20)
#define BG_ROWS_STREAM_ROW (12 << 10)

BG_INLINE void rows_tile(const unsigned char *const *rows, int R, const float *v, int64_t vstep, int C,
                         int64_t nb, float *acc, int64_t ldacc, int64_t pf)
{
    __m512 s[4][BG_ROWS_MAXC];
    for (int r = 0; r < R; r++)
        for (int j = 0; j < C; j++) s[r][j] = _mm512_load_ps(acc + r * ldacc + j * 16);
    const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
    for (int64_t t = 0; t < nb; t++) {
        __m512i x[4];
        __m512 w[4];
        for (int r = 0; r < R; r++) {
            x[r] = _mm512_loadu_si512((const void *)(rows[r] + t * 64));
            w[r] = _mm512_castsi512_ps(_mm512_slli_epi32(x[r], 16));
        }
        if (pf)
            for (int r = 0; r < R; r++) _mm_prefetch((const char *)(rows[r] + t * 64 + pf), _MM_HINT_T0);
        /* the empty asm keeps vv in a register: one load of V feeds R FMAs */
        for (int j = 0; j < C; j++) {
            __m512 vv = _mm512_load_ps(v + j * 32);
            if (R > 1) __asm__("" : "+v"(vv));
            for (int r = 0; r < R; r++) s[r][j] = _mm512_fmadd_ps(w[r], vv, s[r][j]);
        }
        for (int r = 0; r < R; r++) w[r] = _mm512_castsi512_ps(_mm512_and_si512(x[r], hi));
        for (int j = 0; j < C; j++) {
            __m512 vv = _mm512_load_ps(v + j * 32 + 16);
            if (R > 1) __asm__("" : "+v"(vv));
            for (int r = 0; r < R; r++) s[r][j] = _mm512_fmadd_ps(w[r], vv, s[r][j]);
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
        rows_tile(rows, R, v, vstep, C, nb, acc, ldacc, pf);                                        \
    }
BG_RT(1, 1) BG_RT(1, 2) BG_RT(1, 3) BG_RT(1, 4)
BG_RT(2, 1) BG_RT(2, 2) BG_RT(2, 3) BG_RT(2, 4)
BG_RT(3, 1) BG_RT(3, 2) BG_RT(3, 3) BG_RT(3, 4)
BG_RT(4, 1) BG_RT(4, 2) BG_RT(4, 3) BG_RT(4, 4)
#undef BG_RT
/* [R-1][C-1]: R <= 4 rows, C <= BG_ROWS_MAXC = 4 columns */
static const bg_rows_tile_fn rows_tiles[4][BG_ROWS_MAXC] = {
    {rows_tile_1x1, rows_tile_1x2, rows_tile_1x3, rows_tile_1x4},
    {rows_tile_2x1, rows_tile_2x2, rows_tile_2x3, rows_tile_2x4},
    {rows_tile_3x1, rows_tile_3x2, rows_tile_3x3, rows_tile_3x4},
    {rows_tile_4x1, rows_tile_4x2, rows_tile_4x3, rows_tile_4x4},
};

/*
 * The GEMV driver of the 16-lane kernels: panels of rows, k chunks whose V block stays in L1, tiles
 * of R rows x C columns (tiles[R-1][C-1]); vfl = floats of packed V per column and 32 k (32: float32
 * V, 16: bfloat16 pairs). check (tiles whose instructions raise no flags, in a kernel with a
 * fallback): the tiles only load and multiply, and the driver looks at the sums. An inf or NaN in a
 * row makes every sum of that row an inf or a NaN (inf times anything nonzero is inf, 0 * inf is
 * NaN, and both stay so under addition), so a row is scanned only when one of its sums is not
 * finite: an inf or NaN there returns 1 (the caller computes the product again with the fallback;
 * V was checked when packed), otherwise the sum overflowed and FE_OVERFLOW (FE_INVALID for a NaN)
 * is raised. A finite product costs no check per element (W streamed from memory: the check's two
 * vector ops per 64 bytes cost 10-25 % of W @ x, AMD EPYC Zen 5).
 */
BG_TARGET int bg_gemv_rows_16lanes(const bg_view *a, int64_t i0, int64_t i1, int64_t K, const float *vt,
                                   int64_t kpad, int64_t n, const bg_out *c, const bg_rows_tile_fn tiles[4][4],
                                   int vfl, int check, int stream)
{
    float accbuf[BG_ROWS_PANEL * 16 * 16] __attribute__((aligned(64)));
    unsigned char tail[4][64] __attribute__((aligned(64)));
    /* column groups: ceil(n / MAXC) groups of nearly equal width (<= MAXC); rows per tile: RC / width */
    int ng = (int)((n + BG_ROWS_MAXC - 1) / BG_ROWS_MAXC);
    int cw = (int)((n + ng - 1) / ng);
    int R = BG_ROWS_RC / cw > 4 ? 4 : BG_ROWS_RC / cw;
    const int streamed = stream && n == 1 && (i1 - i0) * K * 2 > BG_ROWS_STREAM_BYTES;
    if (streamed && K * 2 <= BG_ROWS_STREAM_ROW) R = 1;
    int64_t kb = (BG_ROWS_VBYTES / (vfl / 8 * n)) / 32 * 32; /* k per chunk, multiple of 32 */
    if (kb < 64) kb = 64;
    if (kb >= kpad || kpad * n * (vfl / 8) <= BG_ROWS_L2VBYTES) kb = kpad;
    int64_t panel = BG_ROWS_PANEL / R * R;
    const int64_t nfull = K / 32; /* complete 32-k blocks of every row */
    const int64_t ld = n * 16;
    for (int64_t p0 = i0; p0 < i1; p0 += panel) {
        int64_t pn = i1 - p0 < panel ? i1 - p0 : panel;
        memset(accbuf, 0, (size_t)(pn * ld) * sizeof(float));
        for (int64_t k0 = 0; k0 < kpad; k0 += kb) {
            int64_t t0 = k0 / 32, t1 = (k0 + kb < kpad ? k0 + kb : kpad) / 32;
            int64_t tf = t1 < nfull ? t1 : nfull; /* blocks [t0, tf) are read in place */
            /* prefetch distance: the next k chunk of the panel's rows, or (whole rows) the rows
             * of the next tile, at the same k */
            int64_t pf = (t1 < kpad / 32 && panel > R) ? kb * 2 : 0;
            for (int64_t r0 = 0; r0 < pn; r0 += R) {
                int rr = (int)(pn - r0 < R ? pn - r0 : R);
                const unsigned char *rows[4];
                for (int r = 0; r < rr; r++) rows[r] = a->p + (p0 + r0 + r) * a->rs + t0 * 64;
                int64_t pft = pf ? pf : (!streamed && p0 + r0 + (1 + BG_ROWS_PF_TILES) * R <= i1 ? BG_ROWS_PF_TILES * R * a->rs : 0);
                for (int g = 0, j0 = 0; g < ng; g++) {
                    int cj = (int)(n - j0 < cw ? n - j0 : cw);
                    float *ap = accbuf + r0 * ld + j0 * 16;
                    const float *vp = vt + (t0 * n + j0) * vfl;
                    if (tf > t0) tiles[rr - 1][cj - 1](rows, vp, n * vfl, tf - t0, ap, ld, g == 0 ? pft : 0);
                    if (tf < t1) { /* the last, partial block: zero padded copies of the rows */
                        const unsigned char *tr[4];
                        for (int r = 0; r < rr; r++) {
                            memset(tail[r], 0, 64);
                            memcpy(tail[r], a->p + (p0 + r0 + r) * a->rs + nfull * 64, (size_t)(K - nfull * 32) * 2);
                            tr[r] = tail[r];
                        }
                        tiles[rr - 1][cj - 1](tr, vt + (nfull * n + j0) * vfl, n * vfl, 1, ap, ld, 0);
                    }
                    j0 += cj;
                }
            }
        }
        __m512i mx = _mm512_setzero_si512();
        float sums[BG_ROWS_PANEL * 16] __attribute__((aligned(64)));
        for (int64_t r = 0; r < pn; r++) {
            __m512 z = hsum16_many(accbuf + r * ld, (int)n); /* lanes from n on hold 0 */
            if (check && bg_check_row_sums(z, a->p + (p0 + r) * a->rs, K, &mx)) return 1;
            _mm512_store_ps(sums + 16 * r, z);
        }
        bg_write_block_avx2(c, p0, 0, sums, 16, pn, n);
        if (check) bg_raise_nonfinite(mx);
    }
    return 0;
}

BG_TARGET static int gemv_rows_avx512(const bg_view *a, int64_t i0, int64_t i1, int64_t K, const float *vt,
                                      int64_t kpad, int64_t n, const bg_out *c)
{
    return bg_gemv_rows_16lanes(a, i0, i1, K, vt, kpad, n, c, rows_tiles, 32, 0, 0);
}

/* ------------------------------------------------------------------------------------------------
 * Small products (kernel.h, bg_small_fn): float32 copies of B and of A's rows on the stack, then
 * R x NV tiles of 16-column vectors over the whole k range, A broadcast from memory, results
 * rounded and stored from the registers.
 * ---------------------------------------------------------------------------------------------- */

BG_INLINE void small_tile(int64_t K, const float *af, const float *bw, int64_t ldb, const bg_out *c, int64_t i0,
                          int64_t rows, int64_t N, const int R, const int NV)
{
    __m512 s[8][4];
    for (int r = 0; r < R; r++)
        for (int v = 0; v < NV; v++) s[r][v] = _mm512_setzero_ps();
    for (int64_t k = 0; k < K; k++) {
        __m512 bv[4];
        for (int v = 0; v < NV; v++) bv[v] = _mm512_load_ps(bw + k * ldb + 16 * v);
        for (int r = 0; r < R; r++) {
            __m512 av = _mm512_set1_ps(af[r * K + k]);
            for (int v = 0; v < NV; v++) s[r][v] = _mm512_fmadd_ps(av, bv[v], s[r][v]);
        }
    }
    bg_store_tile16(c, i0, rows, N, s, R, NV);
}

/* rows per tile for NV vectors: 8 accumulators for one vector, else 6 rows (24 at most) */
#define BG_SMALL_ROWS(NV) ((NV) == 1 ? 8 : 6)
typedef void (*small_tile_fn)(int64_t, const float *, const float *, int64_t, const bg_out *, int64_t, int64_t,
                              int64_t);
#define BG_ST(NV)                                                                                   \
    BG_TARGET static void small_tile_##NV(int64_t K, const float *af, const float *bw, int64_t ldb, \
                                          const bg_out *c, int64_t i0, int64_t rows, int64_t N)     \
    {                                                                                               \
        small_tile(K, af, bw, ldb, c, i0, rows, N, BG_SMALL_ROWS(NV), NV);                          \
    }
BG_ST(1) BG_ST(2) BG_ST(3) BG_ST(4)
#undef BG_ST

BG_TARGET static int small_avx512(int64_t M, int64_t N, int64_t K, const bg_view *a, const bg_view *b,
                                   const bg_out *c)
{
    static const small_tile_fn tiles[4] = {small_tile_1, small_tile_2, small_tile_3, small_tile_4};
    float bw[BG_SMALL_MAXK * 64] __attribute__((aligned(64)));
    float af[8 * BG_SMALL_MAXK] __attribute__((aligned(64)));
    int nv = (int)((N + 15) / 16);
    int R = BG_SMALL_ROWS(nv);
    int64_t ldb = nv * 16;
    if (b->cs == 2) { /* rows contiguous: 16 columns at a time, zero filled past N */
        for (int64_t k = 0; k < K; k++) {
            const unsigned char *src = b->p + k * b->rs;
            int v = 0;
            for (; 16 * v + 16 <= N; v++) _mm512_store_ps(bw + k * ldb + 16 * v, widen16(src + 32 * v));
            if (v < nv) _mm512_store_ps(bw + k * ldb + 16 * v, widen16_n(src + 32 * v, (int)(N - 16 * v)));
        }
        if (N < ldb) bg_pad_panel(bw, ldb, K, N);
    } else {
        bg_small_widen_b_avx2(b, K, N, ldb, bw);
    }
    for (int64_t i0 = 0; i0 < M; i0 += R) {
        int64_t rows = M - i0 < R ? M - i0 : R;
        if (a->cs == 2) {
            for (int64_t r = 0; r < R; r++) { /* rows past the end repeat the last (see bg_pad_panel) */
                const unsigned char *src = a->p + (i0 + (r < rows ? r : rows - 1)) * a->rs;
                int64_t k = 0;
                for (; k + 16 <= K; k += 16) _mm512_storeu_ps(af + r * K + k, widen16(src + 2 * k));
                if (k < K) {
                    int cnt = (int)(K - k);
                    _mm512_mask_storeu_ps(af + r * K + k, (__mmask16)((1u << cnt) - 1u), widen16_n(src + 2 * k, cnt));
                }
            }
        } else {
            bg_small_widen_a_avx2(a, i0, rows, R, K, af);
        }
        tiles[nv - 1](K, af, bw, ldb, c, i0, rows, N);
    }
    return 0;
}
#undef BG_SMALL_ROWS

_Static_assert(BG512_MC % BG_MR == 0 && BG512_NC % BG_NR == 0 && BG_TILE_N % BG_NR == 0,
               "kernel.h: MC must be a multiple of MR, NC and the tile width of NR");

#define BG_FMA16(s, x) _mm512_fmadd_ps(x, x, s)
BG_PEAK_LOOP(peak_avx512, BG_TARGET, __m512, _mm512_setzero_ps(), __m512, _mm512_setzero_ps(), BG_FMA16)
#undef BG_FMA16

const bg_kernel bg_kernel_avx512 = {
    .name = "avx512: AVX-512F float32 14x32 (bfloat16 widened while packing)",
    .tier = BF16_TIER_AVX512,
    .mr = BG_MR, .nr = BG_NR, .kc = BG512_KC, .mc = BG512_MC, .nc = BG512_NC,
    .pack = BG_PACK_F32,
    .gemv_ku = 32,
    .ukernel = ukernel_avx512,
    .rounding_flags = 1,
    .write_block = bg_write_block_avx2,
    .pack_a = pack_a_avx512,
    .pack_b = pack_b_avx512,
    .gemv_rows = gemv_rows_avx512,
    .gemv_cols = bg_gemv_cols_avx2,
    .pack_v_rows = bg_pack_v_rows_avx2,
    .small = small_avx512,
    .small_maxn = 64,
    .fallback = NULL,
    .peak = peak_avx512,
    .peak_flops = BG_PEAK_CHAINS * 32, /* 16 lanes x (multiply + add) per FMA */
};

#endif /* BG_HAVE_AVX512 */
