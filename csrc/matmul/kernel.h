/*
 * kernel.h - the GEMM/GEMV kernel descriptor. A kernel is one file (kernel_<tier>.c or
 * gemm_<tier>.c) that defines one bg_kernel, plus one row in the table of gemm.c.
 *
 * The driver (gemm.c) only knows what a descriptor tells it: the register block MR x NR, the cache
 * blocks KC/MC/NC, how panels are packed, which tier the code needs, and the functions. Selection
 * takes the first table row (ordered by tier, highest first) whose tier <= bf16_cpu_tier().
 */
#ifndef BF16_GEMM_KERNEL_H
#define BF16_GEMM_KERNEL_H

#include "gemm_internal.h"
#include "../cpu.h"

/*
 * Packing format of the A and B panels the micro-kernel reads. Panels are addressed in 32-bit
 * slots (the buffers are float *):
 *  - BG_PACK_F32: one slot = one element widened to float32. An A panel holds, for each k, MR
 *    consecutive rows; a B panel, for each k, NR consecutive columns.
 *  - BG_PACK_BF16_PAIR (gemm_avx512bf16.c): one slot = the bfloat16 pair (k, k+1) of one row (A) or
 *    column (B), k even (relative to the start of the kc block), the first element in the low 16
 *    bits, the second zero when k + 1 is past the block: the layout vdpbf16ps (AVX512_BF16) and
 *    BFDOT (Arm) consume. A panel of kc k holds bg_kslots(pack, kc) = ceil(kc / 2) steps of MR
 *    (A) or NR (B) slots, so the workspace formula holds with kc rounded up to even and halved.
 */
typedef enum { BG_PACK_F32 = 0, BG_PACK_BF16_PAIR = 1 } bg_pack_format;

/* The largest register block any kernel may declare (the driver keeps an MR x NR stack tile). */
#define BG_MAX_MR 32
#define BG_MAX_NR 64

/*
 * Micro-kernel: c[i*ldc + j] (+)= sum_{k<kc} a[k*MR + i] * b[k*NR + j] for i < MR, j < NR.
 * The sum starts at +0 and adds the products in increasing k (every path of one kernel uses this
 * order, so results do not depend on the thread count); accumulate != 0 adds it to the old c.
 */
typedef void (*bg_ukernel_fn)(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                              int accumulate);
/* accumulate == BG_STORE_BF16 (kernels with ukernel_stores_bf16 only): c is a bfloat16 C block
 * ((unsigned char *)c, unit column stride, row stride ldc bytes) that receives the sums rounded to
 * nearest even, as the write_block of the float32 sums would give. */
#define BG_STORE_BF16 2
/* Pack rows [i0, i0+mc) x k [p0, p0+kc) of A into MR-row panels, padded to a multiple of MR (the
 * driver then overwrites the padding of a partial panel: bg_pad_panel). */
typedef int (*bg_pack_a_fn)(const bg_view *a, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float *dst);
/* Pack k [p0, p0+kc) x columns [j0, j0+nc) of B into NR-column panels, padded to NR (likewise).
 * Both packers return nonzero when a kernel with a `fallback` packed an infinity or a NaN (see
 * bg_kernel.fallback); kernels without one return 0 and need not look. */
typedef int (*bg_pack_b_fn)(const bg_view *b, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float *dst);
/*
 * GEMV, K contiguous (a->cs == 2): for rows [i0, i1): y(i, j) = dot(A[i, :], V[:, j]) for j < n <= 16.
 * V is float32, zero padded to kpad = K rounded up to KU = the kernel's gemv_ku (16 or 32), packed
 * by KU-k blocks: block t of column j is the KU floats vt + (t*n + j)*KU = V[KU t + 0, 2, ..., KU-2,
 * 1, 3, ..., KU-1][j] (even k first). Each output is KU/2 lane sums (lane l takes the k with
 * (k mod KU) >> 1 == l, in increasing k, padding included), combined by folding the upper half of
 * the lanes onto the lower half until one is left (lanes l and l + KU/4 first; bg_hsum8 for 8 lanes).
 * With BG_PACK_BF16_PAIR, V holds bfloat16 instead: block t of column j is the 32 bfloat16
 * V[32 t .. 32 t + 31][j] in k order (16 pair slots, 64 bytes) at vt + (t*n + j)*16, and lane l adds
 * the pair (32 t + 2l, 32 t + 2l + 1), odd k first (vdpbf16ps). Returns nonzero when a kernel with a
 * fallback met an inf or NaN (the driver then computes the product with the fallback), else 0.
 */
typedef int (*bg_gemv_rows_fn)(const bg_view *a, int64_t i0, int64_t i1, int64_t K, const float *vt,
                                int64_t kpad, int64_t n, const bg_out *c);
/*
 * GEMV, M contiguous (a->rs == 2): for rows [i0, i1): y(i, j) = sum_k A[i, k] * V[k, j] in increasing k,
 * where V[k, j] = v[k*n + j] (float32).
 */
typedef void (*bg_gemv_cols_fn)(const bg_view *a, int64_t i0, int64_t i1, int64_t K, const float *v,
                                int64_t n, const bg_out *c);
/* The complete KU-k blocks [0, nblocks) of the gemv_rows V packing, columns [0, n8) (n8 a multiple
 * of 8), for a V whose rows are contiguous (cs == 2); the driver packs the rest element by
 * element. NULL: the driver packs everything element by element. */
typedef void (*bg_pack_v_rows_fn)(const bg_view *b, int64_t nblocks, int64_t n, int64_t n8, int ku, float *v);
/*
 * Small products, the driver's choice for GEMM-path problems with N <= the kernel's small_maxn,
 * K <= BG_SMALL_MAXK and too little work for threads: C = A B straight from float32 copies of A's
 * rows and of B on the stack (no panels, no plan, no heap). Each element is summed from +0 in
 * increasing k with FMAs, the micro-kernel's order, so the results are the GEMM path's bits
 * (tests/test_gemm_kernel.py::test_gemm_sums_in_increasing_k_from_zero).
 */
#define BG_SMALL_MAXK 128 /* the driver also guarantees 1 <= N <= small_maxn */
/* Returns nonzero when a kernel with a `fallback` finds an infinity or a NaN in A or B (the driver
 * then runs the fallback's small kernel, which writes every element again); 0 otherwise. Every
 * small kernel raises FE_OVERFLOW itself where it rounds a finite sum to bfloat16 inf (through
 * bg_write_block_avx2 or bg_store_tile16), so the driver makes no pass over C after it. */
typedef int (*bg_small_fn)(int64_t M, int64_t N, int64_t K, const bg_view *a, const bg_view *b, const bg_out *c);
/* Write an mr x nr block of float32 values t (row stride ld) to C at (i0, j0), rounding to bfloat16
 * if C is bfloat16. */
typedef void (*bg_write_fn)(const bg_out *c, int64_t i0, int64_t j0, const float *t, int64_t ld,
                            int64_t mr, int64_t nr);

/* |float32 bits| from which a value rounds to bfloat16 inf: the midpoint between bfloat16's
 * largest finite value and inf (a tie rounds to the even inf); see rounding_flags below */
#define BG_F32_ROUNDS_TO_INF 0x7f7f8000u

typedef struct bg_kernel_s {
    const char *name;      /* reported as _ext._gemm_kernel; starts with the tier name */
    bf16_tier tier;        /* the lowest tier whose instructions the code needs */
    int mr, nr;            /* register block; mr <= BG_MAX_MR, nr <= BG_MAX_NR */
    int64_t kc, mc, nc;    /* cache blocks; mc a multiple of mr, nc of nr */
    /* 0, or the most rows x k an A block may hold: MC is then cut to a multiple of mr that keeps
     * the block of the product's k (min(K, kc)) within it, and is never above mc (bg_block_mc) */
    int64_t mc_kc;
    /* 0, or the most k x columns a B panel may hold: NC is then cut to a multiple of nr that
     * keeps the panel of the product's k within it, and is never above nc (bg_block_nc) */
    int64_t nc_kc;
    bg_pack_format pack;
    /* 0: pack_a writes rows past mc as zeros or not at all, and the driver pads a partial panel
     * by repeating its last row in the pair-after-pair (or k-after-k) layout (bg_pad_panel);
     * 1: pack_a lays its panels out otherwise (gemm_amx.c) and writes their padding itself */
    int pack_a_pads;
    /* May be NULL. Called by each thread before its first micro-kernel call of a product and
     * after its last (AMX: load the tile configuration, release the tiles). */
    void (*thread_begin)(void);
    void (*thread_end)(void);
    int gemv_ku;           /* k per packed V block of gemv_rows: 16 or 32 */
    bg_ukernel_fn ukernel;
    int ukernel_stores_bf16; /* ukernel takes BG_STORE_BF16: full blocks with K <= KC skip write_block */
    /* 1: on the GEMM path, ukernel (BG_STORE_BF16) and write_block raise FE_OVERFLOW themselves
     * where a finite float32 sum rounds to bfloat16 inf (bg_write_block_avx2 does), so the
     * driver makes no pass over C afterwards (gemm.c, flag_rounding_overflow) */
    int rounding_flags;
    bg_write_fn write_block;
    bg_pack_a_fn pack_a;
    bg_pack_b_fn pack_b;
    bg_gemv_rows_fn gemv_rows;
    /*
     * May be NULL. W @ V on the gemv_rows path with skinny_minn <= n <= 16 columns goes here
     * instead, with V packed by pairs of k (BG_PACK_BF16_PAIR kernels): slot j of pair p, at
     * vt + 16 p + j, holds the bfloat16 pair (V[2p][j], V[2p+1][j]), zero for j >= n and past K.
     * Each element is then the GEMM kernel's sum over all K (no KC blocks); kpad is unused.
     */
    bg_gemv_rows_fn skinny_rows;
    int skinny_minn;
    bg_gemv_cols_fn gemv_cols;
    bg_pack_v_rows_fn pack_v_rows; /* may be NULL */
    bg_small_fn small;             /* may be NULL: small products take the GEMM path */
    int small_maxn;                /* the widest C small takes */
    /*
     * NULL for kernels whose arithmetic is IEEE float32 (it raises the flags numpy reports). A
     * kernel whose instructions raise no flags (vdpbf16ps) names a kernel of a lower tier here:
     * when its packers or its small kernel meet an infinity or a NaN in A or B (its GEMV and
     * skinny kernels, which do not copy W, look in a row only when its sums are not finite:
     * bg_check_row_sums in simd_x86.h), the driver
     * discards the partial result and the flags raised so far and computes the whole product again
     * with the fallback, so such products get the fallback's IEEE results and warnings (0 * inf is
     * an "invalid value"). With finite inputs the kernel raises FE_OVERFLOW (and FE_INVALID for a
     * NaN) itself when a result it stores is not finite. The fallback's small kernel must take
     * every product this one's does (small_maxn at least as large).
     */
    const struct bg_kernel_s *fallback;
    /*
     * May be NULL (the portable kernel). The micro-kernel's arithmetic instruction alone: `iters`
     * rounds of BG_PEAK_CHAINS independent register-only chains of it, peak_flops flops per
     * round, for bf16_gemm_peak (benchmarks: what fraction of the instruction's rate the GEMM
     * reaches).
     */
    void (*peak)(int64_t iters);
    int peak_flops;
} bg_kernel;

/* independent accumulators of a peak loop: at least the instruction's latency x throughput, and
 * within the 16 ymm registers of AVX2 (Zen 5: 16, 24 and 28 chains of vdpbf16ps ran as fast) */
#define BG_PEAK_CHAINS 12

/* 32-bit slots per row or column of a panel of kc k (BG_PACK_BF16_PAIR: pairs of k). */
static inline int64_t bg_kslots(bg_pack_format pack, int64_t kc)
{
    return pack == BG_PACK_BF16_PAIR ? (kc + 1) / 2 : kc;
}

/* The kernels (one per file). The x86 ones exist only where the compiler targets x86. */
extern const bg_kernel bg_kernel_portable;
#if defined(__x86_64__) || defined(__i386__)
#define BG_HAVE_X86 1
extern const bg_kernel bg_kernel_avx2;
#endif
#if defined(__x86_64__)
#define BG_HAVE_AVX512 1
extern const bg_kernel bg_kernel_avx512;
/* AVX512_BF16 intrinsics need GCC 10 or clang 9; older compilers build without that kernel (the
 * avx512bf16 tier then runs the avx512 one) */
#if (defined(__clang__) && __clang_major__ >= 9) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 10)
#define BG_HAVE_AVX512BF16 1
extern const bg_kernel bg_kernel_avx512bf16;
/* The avx512bf16 kernel's pieces the AMX kernel reuses (gemm_avx512bf16.c): its B packer
 * (32-column panels of k pairs), GEMV, skinny W @ V and small products. */
int bg_pack_b_bf16_pairs(const bg_view *b, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float *dst);
int bg_gemv_rows_bf16(const bg_view *a, int64_t i0, int64_t i1, int64_t K, const float *vt, int64_t kpad,
                      int64_t n, const bg_out *c);
int bg_skinny_rows_bf16(const bg_view *a, int64_t i0, int64_t i1, int64_t K, const float *vt, int64_t kpad,
                        int64_t n, const bg_out *c);
int bg_small_bf16(int64_t M, int64_t N, int64_t K, const bg_view *a, const bg_view *b, const bg_out *c);
#ifndef BG_BF16_SKINNY_MINN
#define BG_BF16_SKINNY_MINN 5 /* W @ V with this many columns or more (up to 16) takes skinny_rows */
#endif
/* AMX intrinsics need GCC 11 or clang 12 */
#if (defined(__clang__) && __clang_major__ >= 12) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 11)
#define BG_HAVE_AMX 1
extern const bg_kernel bg_kernel_amx;
#endif
#endif
#endif

/* Portable pieces (gemm.c), parametrised by the register block; SIMD kernels fall back to them for
 * uncommon layouts. */
void bg_pack_a_generic(const bg_view *a, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float *dst, int mr);
void bg_pack_b_generic(const bg_view *b, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float *dst, int nr);
void bg_write_block_generic(const bg_out *c, int64_t i0, int64_t j0, const float *t, int64_t ld,
                            int64_t mr, int64_t nr);
/* Fill the slots [used, w) of each of the kc steps of a panel (or of kc rows of w floats) with a
 * copy of slot used - 1: padding that raises only the flags real elements raise (gemm.c). */
void bg_pad_panel(float *panel, int64_t w, int64_t kc, int64_t used);
#ifdef BG_HAVE_X86
/* AVX2 pieces the AVX-512 kernel reuses (AVX-512 CPUs have AVX2): gemm_avx2.c. */
void bg_write_block_avx2(const bg_out *c, int64_t i0, int64_t j0, const float *t, int64_t ld,
                         int64_t mr, int64_t nr);
/* the avx2 and avx512 kernels' pack_v_rows */
void bg_pack_v_rows_avx2(const bg_view *b, int64_t nblocks, int64_t n, int64_t n8, int ku, float *v);
/* the small kernels' float32 copies: B (K x N) as rows of ld floats, and rows [i0, i0 + rows) of
 * A as R rows of K floats; columns past N and rows past `rows` repeat the last (bg_pad_panel) */
void bg_small_widen_b_avx2(const bg_view *b, int64_t K, int64_t N, int64_t ld, float *dst);
void bg_small_widen_a_avx2(const bg_view *a, int64_t i0, int64_t rows, int64_t R, int64_t K, float *dst);
void bg_gemv_cols_avx2(const bg_view *a, int64_t i0, int64_t i1, int64_t K, const float *v,
                       int64_t n, const bg_out *c);
#endif
#ifdef BG_HAVE_AVX512
/* AVX-512 pieces the AVX512-BF16 kernel reuses: gemm_avx512.c. A GEMV tile: R rows x C columns
 * of 16-lane accumulators over nb 32-k blocks (see bg_gemv_rows_16lanes). */
typedef void (*bg_rows_tile_fn)(const unsigned char *const *rows, const float *v, int64_t vstep, int64_t nb,
                                float *acc, int64_t ldacc, int64_t pf);
int bg_gemv_rows_16lanes(const bg_view *a, int64_t i0, int64_t i1, int64_t K, const float *vt, int64_t kpad,
                         int64_t n, const bg_out *c, const bg_rows_tile_fn tiles[4][4], int vfl, int check,
                         int stream);
#endif

#endif /* BF16_GEMM_KERNEL_H */
