/*
 * gemm_amx.c - the AMX kernel: a 32x32 micro-kernel of tdpbf16ps (AMX-BF16) on 16x16 float32
 * accumulator tiles, fed by bfloat16 tiles of 16 rows x 32 k. Everything else (GEMV, skinny
 * W @ V, small products, v @ W, the inf/NaN fallback) is the avx512bf16 kernel's, whose
 * instructions every AMX CPU has. Runs only when bf16_cpu_tier() == BF16_TIER_AMX: the CPU has
 * AMX-TILE and AMX-BF16, the OS saves the tiles and granted this process their use (cpu.c).
 *
 * Register block: C (32 x 32 float32) is four accumulator tiles C00 C01 C10 C11; per 32 k, two A
 * tiles (rows 0-15 and 16-31, 32 k each) and two B tiles (columns 0-15 and 16-31, 16 pairs of k
 * each) are loaded and multiplied four times: 8 tiles, all AMX has.
 *
 * Panels (BG_PACK_BF16_PAIR sizes, kernel.h: 32-bit slots, kslots = ceil(kc / 2) per row):
 *  - B: the avx512bf16 packer's 32-column panels, slot j of pair p at p * 32 + j. Sixteen pairs of
 *    16 columns are one B tile as stored (rows of 64 bytes, 128 bytes apart): AMX's layout for B
 *    is the same k-pair interleave as vdpbf16ps's.
 *  - A: for each whole block t of 16 pairs (32 k), the 32 rows' 16 pairs, row after row (a tile
 *    row is 64 bytes of one row's k, so the block is tiles A0 and A1 back to back); then the
 *    pairs past the last whole block, pair after pair (32 row slots each), as the avx512bf16
 *    kernel's panels are. The packer pads a partial panel's rows with zeros itself
 *    (bg_kernel.pack_a_pads): the driver's padding assumes the pair-after-pair layout.
 *
 * Arithmetic: tdpbf16ps multiplies exactly and accumulates in float32, reads subnormal inputs as
 * zero, flushes subnormal results and raises no IEEE flag, as vdpbf16ps does; the pairs of k past
 * the last whole block of 32 are added by vdpbf16ps (the avx512bf16 kernel's order). How one
 * tdpbf16ps rounds its 32 products into the accumulator is the hardware's: on a Xeon (Emerald
 * Rapids) 24-78 % of the sums differed from each model tried (Intel's description, one product
 * after the other; pairs; the exact sum of 32 products added once), so no order is promised
 * beyond this: each block of KC k is summed from +0 and added to the running total in increasing
 * k, every product takes the same instructions whatever the thread count (bit-identical results),
 * and the error stays within the float32-accumulation bound. Inputs holding an inf or NaN go to
 * the avx512 kernel (bg_kernel.fallback), as at the avx512bf16 tier; a stored result that is not
 * finite raises FE_OVERFLOW (and FE_INVALID for a NaN) here. tests/test_gemm_kernel.py checks all
 * of this at this tier where the CPU has AMX (test_gemm_within_bound, test_k_blocks_are_added_in_
 * order, test_gemm_sums_in_increasing_k_from_zero, test_products_with_inf_or_nan_are_the_avx512_
 * kernels).
 *
 * Tile state: each thread that runs the micro-kernel loads the tile configuration first and
 * releases the tiles when its share is done (bg_kernel.thread_begin / thread_end).
 *
 * BG_AMX_EMULATE (a test build only, never the shipped one): the tile instructions are C
 * functions on a thread-local model of the eight tiles, following Intel's description of each
 * instruction, so the packing, blocking and threading logic runs on CPUs without AMX (cpu.c then
 * reports the amx tier; the tests above pass on it).
 */
#include "kernel.h"

#ifdef BG_HAVE_AMX
#include <stdlib.h>

#include "simd_x86.h"

#ifdef BG_AMX_EMULATE
#define BG_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma")))
#else
#define BG_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,amx-tile,amx-bf16")))
#endif

#define BG_MR 32
#define BG_NR 32
/* Cache blocks (k counts). KC = 1024: a KC x NR panel of B is 64 KiB (L1/L2) while the
 * micro-kernel walks the A block (MC x KC, 256 KiB, L2); the B block (KC x NC, 2 MiB) in L2/L3.
 * With K <= KC a bfloat16 C needs no float32 tile, and every thread's A block is small enough
 * that a 1024^2 product on 16 threads needs less extra memory (6.3 MB) than the float32 copies
 * another library makes (8.4 MB; MC = 256 needed 10.5 MB: tests/test_benchmarks.py's memory
 * check). On the Xeon (Emerald Rapids, 16-core VM) KC 256/512/1024 and MC 128-1024 measured
 * within the run-to-run spread of that machine (one thread 300-860 GFLOP/s at n = 1024-4096).
 * KC is a multiple of 32, so only the last k block of a product can have pairs past a whole
 * block of 32 k. */
#ifndef BGAMX_KC
#define BGAMX_KC 1024
#endif
#ifndef BGAMX_MC
#define BGAMX_MC 128
#endif
#ifndef BGAMX_NC
#define BGAMX_NC 1024
#endif
#define BG_KB 16 /* pairs of k per tile row */

/* ------------------------------------------------------------------------------------------------
 * The tile instructions (or their C model)
 * ---------------------------------------------------------------------------------------------- */

/* The tile configuration (palette 1): tiles 0-7 of 16 rows x 64 bytes. */
typedef struct {
    uint8_t palette, start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} bg_tilecfg;

#ifdef BG_AMX_EMULATE
static _Thread_local unsigned char emu_tiles[8][16][64];
static _Thread_local int emu_configured;

static void emu_load(int t, const void *p, int64_t stride)
{
    for (int r = 0; r < 16; r++) memcpy(emu_tiles[t][r], (const unsigned char *)p + r * stride, 64);
}
static void emu_store(int t, void *p, int64_t stride)
{
    for (int r = 0; r < 16; r++) memcpy((unsigned char *)p + r * stride, emu_tiles[t][r], 64);
}
static float emu_daz(uint16_t h) /* a bfloat16 as float32, subnormals read as zero */
{
    uint32_t w = (uint32_t)((h & 0x7f80) == 0 ? h & 0x8000 : h) << 16;
    float f;
    memcpy(&f, &w, 4);
    return f;
}
static float emu_ftz(float f)
{
    uint32_t w;
    memcpy(&w, &f, 4);
    if ((w & 0x7f800000u) == 0) w &= 0x80000000u;
    memcpy(&f, &w, 4);
    return f;
}
/* Intel's description of TDPBF16PS: for each row m, pair k and column n,
 * c[m][n] += a[m][2k] * b[k][2n]; c[m][n] += a[m][2k+1] * b[k][2n+1] */
static void emu_dp(int tc, int ta, int tb)
{
    if (!emu_configured) abort(); /* a tile instruction before the configuration: #UD on hardware */
    for (int m = 0; m < 16; m++)
        for (int n = 0; n < 16; n++) {
            float acc;
            memcpy(&acc, emu_tiles[tc][m] + 4 * n, 4);
            acc = emu_ftz(acc);
            for (int k = 0; k < 16; k++)
                for (int e = 0; e < 2; e++) {
                    uint16_t x, y;
                    memcpy(&x, emu_tiles[ta][m] + 4 * k + 2 * e, 2);
                    memcpy(&y, emu_tiles[tb][k] + 4 * n + 2 * e, 2);
                    acc = emu_ftz(acc + emu_daz(x) * emu_daz(y));
                }
            memcpy(emu_tiles[tc][m] + 4 * n, &acc, 4);
        }
}
#define BG_TILE_LOAD(t, p, stride) emu_load(t, p, stride)
#define BG_TILE_STORE(t, p, stride) emu_store(t, p, stride)
#define BG_TILE_ZERO(t) memset(emu_tiles[t], 0, sizeof emu_tiles[t])
#define BG_TILE_DP(c, a, b) emu_dp(c, a, b)
#define BG_TILE_CONFIG(cfg) ((void)(cfg), emu_configured = 1)
#define BG_TILE_RELEASE() (emu_configured = 0)
#else
/* ldtilecfg and tileloadd as asm that tells the compiler what they read. GCC 12's _tile_loadconfig
 * declares a read of 8 bytes, so the compiler dropped the stores of the rest of a configuration
 * built on the stack and ldtilecfg faulted on its garbage (a Xeon, GCC 12.2); its _tile_loadd
 * declares no read at all. Here the configuration is a constant in the binary, read whole
 * (tests/test_config.py::test_tile_configuration_is_whole_in_the_binary), and a tile load is a
 * compiler barrier for memory. */
#define BG_TILE_LOAD(t, p, stride) \
    __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"((const void *)(p)), "r"((long)(stride)) : "memory")
#define BG_TILE_STORE(t, p, stride) _tile_stored(t, p, stride)
#define BG_TILE_ZERO(t) _tile_zero(t)
#define BG_TILE_DP(c, a, b) _tile_dpbf16ps(c, a, b)
#define BG_TILE_CONFIG(cfg) __asm__ volatile("ldtilecfg %0" ::"m"(*(cfg)))
#define BG_TILE_RELEASE() _tile_release()
#endif

/* The tile configuration: palette 1, tiles 0-7 of 16 rows x 64 bytes, the rest zero. */
static const bg_tilecfg bg_amx_config __attribute__((aligned(64))) = {
    .palette = 1,
    .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
    .rows = {16, 16, 16, 16, 16, 16, 16, 16},
};

BG_TARGET static void amx_begin(void) { BG_TILE_CONFIG(&bg_amx_config); }

BG_TARGET static void amx_end(void) { BG_TILE_RELEASE(); }

/* ------------------------------------------------------------------------------------------------
 * Micro-kernel
 * ---------------------------------------------------------------------------------------------- */

/* The pairs past the last whole block: vdpbf16ps on the C rows at c (row stride ldc floats). */
BG_TARGET static void tail_pairs(int64_t ntail, const float *at, const float *bt, float *c, int64_t ldc)
{
    for (int r = 0; r < BG_MR; r++) {
        __m512 c0 = _mm512_loadu_ps(c + r * ldc), c1 = _mm512_loadu_ps(c + r * ldc + 16);
        for (int64_t q = 0; q < ntail; q++) {
            __m512bh av = (__m512bh)_mm512_castps_si512(_mm512_set1_ps(at[q * BG_MR + r]));
            c0 = _mm512_dpbf16_ps(c0, av, (__m512bh)_mm512_load_si512((const void *)(bt + q * BG_NR)));
            c1 = _mm512_dpbf16_ps(c1, av, (__m512bh)_mm512_load_si512((const void *)(bt + q * BG_NR + 16)));
        }
        _mm512_storeu_ps(c + r * ldc, c0);
        _mm512_storeu_ps(c + r * ldc + 16, c1);
    }
}

BG_TARGET static void ukernel_amx(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int accumulate)
{
    const int64_t np = (kc + 1) / 2, nblk = np / BG_KB, ntail = np % BG_KB;
    /* the block's sum from +0: into C itself, or into t when it is added to C's old values */
    float t[BG_MR * BG_NR] __attribute__((aligned(64)));
    float *s = accumulate ? t : c;
    const int64_t lds = accumulate ? BG_NR : ldc;
    BG_TILE_ZERO(0);
    BG_TILE_ZERO(1);
    BG_TILE_ZERO(2);
    BG_TILE_ZERO(3);
    for (int64_t k = 0; k < nblk; k++) {
        const float *ak = a + k * BG_KB * BG_MR, *bk = b + k * BG_KB * BG_NR;
        BG_TILE_LOAD(4, ak, 64);
        BG_TILE_LOAD(5, ak + 16 * BG_KB, 64);
        BG_TILE_LOAD(6, bk, BG_NR * 4);
        BG_TILE_LOAD(7, bk + 16, BG_NR * 4);
        BG_TILE_DP(0, 4, 6);
        BG_TILE_DP(1, 4, 7);
        BG_TILE_DP(2, 5, 6);
        BG_TILE_DP(3, 5, 7);
    }
    BG_TILE_STORE(0, s, lds * 4);
    BG_TILE_STORE(1, s + 16, lds * 4);
    BG_TILE_STORE(2, s + 16 * lds, lds * 4);
    BG_TILE_STORE(3, s + 16 * lds + 16, lds * 4);
    if (ntail) tail_pairs(ntail, a + nblk * BG_KB * BG_MR, b + nblk * BG_KB * BG_NR, s, lds);
    __m512i mx = _mm512_setzero_si512();
    for (int r = 0; r < BG_MR; r++) {
        float *cr = c + r * ldc;
        __m512 x0 = _mm512_loadu_ps(s + r * lds), x1 = _mm512_loadu_ps(s + r * lds + 16);
        if (accumulate) {
            x0 = _mm512_add_ps(_mm512_loadu_ps(cr), x0);
            x1 = _mm512_add_ps(_mm512_loadu_ps(cr + 16), x1);
            _mm512_storeu_ps(cr, x0);
            _mm512_storeu_ps(cr + 16, x1);
        }
        mx = bg_absmax32(bg_absmax32(mx, x0), x1);
    }
    bg_raise_nonfinite(mx);
}

/* ------------------------------------------------------------------------------------------------
 * Packing A: whole blocks row by row (tiles), the tail pair by pair; reports an inf or NaN.
 * ---------------------------------------------------------------------------------------------- */

/* The whole blocks of one panel of an A whose columns are contiguous (rs == 2: a transposed
 * matrix): for each pair q of a block, the 32 rows' values of k and of k + 1 (rows past `rows`
 * read as zeros: the panel's padding) interleaved into pairs (bg_interleave_rows) and scattered to
 * slot q of each row of the block. Returns the running |bfloat16| maximum. */
BG_TARGET static __m512i pack_a_blocks_cols(const bg_view *a, int64_t i, int64_t rows, int64_t p0, int64_t nblk,
                                            int64_t kc, uint32_t *d, __m512i mx)
{
    const __mmask32 lm = rows >= BG_MR ? (__mmask32)0xffffffffu : (__mmask32)((1u << rows) - 1u);
    const __m512i row_slot = _mm512_mullo_epi32(
        _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi32(BG_KB));
    for (int64_t t = 0; t < nblk; t++) {
        uint32_t *db = d + t * BG_KB * BG_MR;
        for (int q = 0; q < BG_KB; q++) {
            const unsigned char *s = a->p + i * 2 + (p0 + t * 2 * BG_KB + 2 * q) * a->cs;
            /* an odd kc ends the last block on a half pair: column kc is not A's */
            __m512i r0 = _mm512_maskz_loadu_epi16(lm, s);
            __m512i r1 = t * 2 * BG_KB + 2 * q + 1 < kc ? _mm512_maskz_loadu_epi16(lm, s + a->cs)
                                                         : _mm512_setzero_si512();
            mx = bg_absmax16(bg_absmax16(mx, r0), r1);
            __m512i lo, hi;
            bg_interleave_rows(r0, r1, &lo, &hi);
            _mm512_i32scatter_epi32((void *)(db + q), row_slot, lo, 4);
            _mm512_i32scatter_epi32((void *)(db + 16 * BG_KB + q), row_slot, hi, 4);
        }
    }
    return mx;
}

BG_TARGET static int pack_a_amx(const bg_view *a, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float *dst)
{
    const int64_t np = (kc + 1) / 2, nblk = np / BG_KB, ntail = np % BG_KB;
    __m512i mx = _mm512_setzero_si512();
    uint32_t smx = 0;
    /* columns contiguous in i: the whole blocks by 32 x 32 transposes (pack_a_blocks_cols) */
    const int cols = a->rs == 2 && a->cs != 2;
    for (int64_t ir = 0; ir < mc; ir += BG_MR, dst += BG_MR * np) {
        const int64_t rows = mc - ir < BG_MR ? mc - ir : BG_MR;
        uint32_t *d = (uint32_t *)(void *)dst;
        if (cols) mx = pack_a_blocks_cols(a, i0 + ir, rows, p0, nblk, kc, d, mx);
        for (int64_t r = 0; r < BG_MR; r++) {
            if (r >= rows) { /* padding: zero rows */
                for (int64_t k = 0; k < nblk && !cols; k++)
                    _mm512_storeu_si512((void *)(d + (k * BG_MR + r) * BG_KB), _mm512_setzero_si512());
                for (int64_t q = 0; q < ntail; q++) d[nblk * BG_KB * BG_MR + q * BG_MR + r] = 0;
                continue;
            }
            const unsigned char *row = a->p + (i0 + ir + r) * a->rs + p0 * a->cs;
            if (a->cs == 2) { /* the row's 32 k of a block are its 64 bytes as stored; an odd kc
                               * ends the last block one element short, which reads as 0
                               * (tests/test_gemm_kernel.py::test_odd_k_reads_nothing_past_a_row) */
                for (int64_t k = 0; k < nblk; k++) {
                    const int64_t left = kc - 2 * BG_KB * k;
                    const __mmask32 m = left >= 2 * BG_KB ? (__mmask32)0xffffffffu
                                                          : (__mmask32)((1u << left) - 1u);
                    __m512i x = _mm512_maskz_loadu_epi16(m, (const void *)(row + 64 * k));
                    mx = bg_absmax16(mx, x);
                    _mm512_storeu_si512((void *)(d + (k * BG_MR + r) * BG_KB), x);
                }
            } else if (!cols) { /* any other layout, element by element */
                for (int64_t k = 0; k < nblk; k++)
                    for (int64_t q = 0; q < BG_KB; q++)
                        d[(k * BG_MR + r) * BG_KB + q] = bg_pair_word(row + 2 * (k * BG_KB + q) * a->cs, a->cs,
                                                                      2 * (k * BG_KB + q) + 1 < kc, &smx);
            }
            for (int64_t q = 0; q < ntail; q++) { /* the last pair's second element is 0 past kc */
                const int64_t p = nblk * BG_KB + q;
                d[nblk * BG_KB * BG_MR + q * BG_MR + r] = bg_pair_word(row + 2 * p * a->cs, a->cs, 2 * p + 1 < kc, &smx);
            }
        }
    }
    return bg_any_nonfinite16(mx) || smx >= BG_NONFINITE;
}

/* ------------------------------------------------------------------------------------------------
 * The instruction's rate: four accumulator tiles, each tdpbf16ps 16 x 16 x 32 products
 * ---------------------------------------------------------------------------------------------- */

BG_TARGET static void peak_amx(int64_t iters)
{
    amx_begin();
    /* zero tiles: tdpbf16ps on them costs what it costs on any data */
    BG_TILE_ZERO(0);
    BG_TILE_ZERO(1);
    BG_TILE_ZERO(2);
    BG_TILE_ZERO(3);
    BG_TILE_ZERO(4);
    BG_TILE_ZERO(5);
    BG_TILE_ZERO(6);
    BG_TILE_ZERO(7);
    for (int64_t i = 0; i < iters; i++) {
        BG_TILE_DP(0, 4, 6);
        BG_TILE_DP(1, 4, 7);
        BG_TILE_DP(2, 5, 6);
        BG_TILE_DP(3, 5, 7);
    }
    amx_end();
}

_Static_assert(BGAMX_MC % BG_MR == 0 && BGAMX_NC % BG_NR == 0 && BG_TILE_N % BG_NR == 0 &&
                   BGAMX_KC % (2 * BG_KB) == 0 && BG_MR <= BG_MAX_MR,
               "kernel.h: MC a multiple of MR, NC and the tile width of NR, KC of 32 k");

const bg_kernel bg_kernel_amx = {
    .name = "amx: AMX-BF16 tdpbf16ps 32x32 on 16x16 float32 tiles",
    .tier = BF16_TIER_AMX,
    .mr = BG_MR, .nr = BG_NR, .kc = BGAMX_KC, .mc = BGAMX_MC, .nc = BGAMX_NC, .mc_kc = 0,
    .pack = BG_PACK_BF16_PAIR,
    .pack_a_pads = 1,
    .thread_begin = amx_begin,
    .thread_end = amx_end,
    .gemv_ku = 32,
    .ukernel = ukernel_amx,
    .ukernel_stores_bf16 = 0,
    .write_block = bg_write_block_avx2,
    .pack_a = pack_a_amx,
    .pack_b = bg_pack_b_bf16_pairs,
    .gemv_rows = bg_gemv_rows_bf16,
    .skinny_rows = bg_skinny_rows_bf16,
    .skinny_minn = BG_BF16_SKINNY_MINN,
    .gemv_cols = bg_gemv_cols_avx2,
    .pack_v_rows = NULL, /* V is packed as bfloat16 by the driver (pack_vector) */
    .small = bg_small_bf16,
    .small_maxn = 64,
    .fallback = &bg_kernel_avx512,
    .peak = peak_amx,
    .peak_flops = 4 * 16 * 16 * 32 * 2, /* four tdpbf16ps of 16 x 16 x 32 products (multiply + add) */
};
#endif /* BG_HAVE_AMX */
