/*
 * gemm.c - driver of the bfloat16 GEMM/GEMV: problem normalisation, path choice, blocking loops,
 * workspace, threads, runtime CPU dispatch, and the portable kernels.
 *
 * Design notes are in README.md next to this file.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sysconf(_SC_NPROCESSORS_ONLN) */
#endif
#include "gemm.h"
#include "kernel.h"

#include <errno.h>
#include <fenv.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------------------------
 * Portable kernels (tier baseline). Same summation order as the AVX2 ones (see kernel.h), so the
 * two tiers give the same bits.
 * ---------------------------------------------------------------------------------------------- */

#define BG_MR 6
#define BG_NR 16

static void ukernel_portable(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                             int accumulate)
{
    float t[BG_MR][BG_NR];
    for (int i = 0; i < BG_MR; i++)
        for (int j = 0; j < BG_NR; j++) t[i][j] = 0.0f;
    for (int64_t k = 0; k < kc; k++) {
        const float *ak = a + k * BG_MR, *bk = b + k * BG_NR;
        for (int i = 0; i < BG_MR; i++) {
            float ai = ak[i];
            for (int j = 0; j < BG_NR; j++) t[i][j] += ai * bk[j];
        }
    }
    for (int i = 0; i < BG_MR; i++) {
        float *ci = c + i * ldc;
        for (int j = 0; j < BG_NR; j++) ci[j] = accumulate ? ci[j] + t[i][j] : t[i][j];
    }
}

void bg_pack_a_generic(const bg_view *a, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float *dst, int MR)
{
    for (int64_t ir = 0; ir < mc; ir += MR) {
        int64_t mr = mc - ir < MR ? mc - ir : MR;
        for (int64_t i = 0; i < MR; i++) {
            float *d = dst + i;
            if (i < mr) {
                const unsigned char *row = a->p + (i0 + ir + i) * a->rs + p0 * a->cs;
                for (int64_t k = 0; k < kc; k++) d[k * MR] = bg_load(row + k * a->cs);
            } else {
                for (int64_t k = 0; k < kc; k++) d[k * MR] = 0.0f;
            }
        }
        dst += MR * kc;
    }
}

void bg_pack_b_generic(const bg_view *b, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float *dst, int NR)
{
    for (int64_t jr = 0; jr < nc; jr += NR) {
        int64_t nr = nc - jr < NR ? nc - jr : NR;
        for (int64_t k = 0; k < kc; k++) {
            const unsigned char *row = b->p + (p0 + k) * b->rs + (j0 + jr) * b->cs;
            float *d = dst + k * NR;
            int64_t j = 0;
            for (; j < nr; j++) d[j] = bg_load(row + j * b->cs);
            for (; j < NR; j++) d[j] = 0.0f;
        }
        dst += NR * kc;
    }
}

static int pack_a_portable(const bg_view *a, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float *dst)
{
    bg_pack_a_generic(a, i0, mc, p0, kc, dst, BG_MR);
    return 0;
}

static int pack_b_portable(const bg_view *b, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float *dst)
{
    bg_pack_b_generic(b, p0, kc, j0, nc, dst, BG_NR);
    return 0;
}

/* Dot products in the order of the AVX2 kernel: 8 lane sums, lane l takes the k with
 * (k mod 16) >> 1 == l in increasing k (the zero padding up to kpad included), then bg_hsum8.
 * V is packed with KU = 16 as described in kernel.h (bg_gemv_rows_fn). */
static int gemv_rows_portable(const bg_view *a, int64_t i0, int64_t i1, int64_t K, const float *vt,
                              int64_t kpad, int64_t n, const bg_out *c)
{
    for (int64_t i = i0; i < i1; i++) {
        const unsigned char *row = a->p + i * a->rs;
        for (int64_t j = 0; j < n; j++) {
            float acc[8];
            for (int l = 0; l < 8; l++) acc[l] = 0.0f;
            for (int64_t k = 0; k < kpad; k += 16) {
                const float *v = vt + ((k / 16) * n + j) * 16;
                for (int l = 0; l < 8; l++) { /* even k of the block: v[l], odd k: v[l + 8] */
                    float x0 = k + 2 * l < K ? bg_load(row + (k + 2 * l) * 2) : 0.0f;
                    float x1 = k + 2 * l + 1 < K ? bg_load(row + (k + 2 * l + 1) * 2) : 0.0f;
                    acc[l] += x0 * v[l];
                    acc[l] += x1 * v[l + 8];
                }
            }
            bg_store(c, i, j, bg_hsum8(acc));
        }
    }
    return 0;
}

static void gemv_cols_portable(const bg_view *a, int64_t i0, int64_t i1, int64_t K, const float *v,
                               int64_t n, const bg_out *c)
{
    for (int64_t i = i0; i < i1; i++) {
        for (int64_t j = 0; j < n; j++) {
            float acc = 0.0f;
            for (int64_t k = 0; k < K; k++) acc += bg_load(a->p + i * a->rs + k * a->cs) * v[k * n + j];
            bg_store(c, i, j, acc);
        }
    }
}

void bg_write_block_generic(const bg_out *c, int64_t i0, int64_t j0, const float *t, int64_t ld,
                            int64_t mr, int64_t nr)
{
    for (int64_t i = 0; i < mr; i++)
        for (int64_t j = 0; j < nr; j++) bg_store(c, i0 + i, j0 + j, t[i * ld + j]);
}

const bg_kernel bg_kernel_portable = {
    .name = "baseline: portable C, float32 6x16",
    .tier = BF16_TIER_BASELINE,
    .mr = BG_MR, .nr = BG_NR, .kc = 256, .mc = 144, .nc = 4096,
    .pack = BG_PACK_F32,
    .gemv_ku = 16,
    .ukernel = ukernel_portable,
    .write_block = bg_write_block_generic,
    .pack_a = pack_a_portable,
    .pack_b = pack_b_portable,
    .gemv_rows = gemv_rows_portable,
    .gemv_cols = gemv_cols_portable,
    .pack_v_rows = NULL, /* V packed element by element */
    .small = NULL,
    .small_maxn = 0,
    .fallback = NULL,
};
#undef BG_MR
#undef BG_NR

/* ------------------------------------------------------------------------------------------------
 * Runtime dispatch and thread count
 * ---------------------------------------------------------------------------------------------- */

/* Every kernel, highest tier first. Adding a kernel: its file and one row here. */
static const bg_kernel *const kernel_table[] = {
#ifdef BG_HAVE_AMX
    &bg_kernel_amx,
#endif
#ifdef BG_HAVE_AVX512BF16
    &bg_kernel_avx512bf16,
#endif
#ifdef BG_HAVE_AVX512
    &bg_kernel_avx512,
#endif
#ifdef BG_HAVE_X86
    &bg_kernel_avx2,
#endif
    &bg_kernel_portable,
};

/* The first row at or below tier t. One exception: an Intel CPU whose tier stops at avx512bf16
 * (no usable AMX: Cooper Lake, a Linux before 5.16, a VM that hides AMX) gets the avx512 kernel
 * unless the cap is avx512bf16 itself (BFLOAT16_DTYPE_ISA=avx512bf16 asks for that tier's
 * kernels): an Intel core issues vdpbf16ps at half the FMA's rate, and on an Emerald Rapids Xeon
 * capped at avx512bf16 the avx512 kernel was 1.2-2x faster (README, "On an Intel Xeon with AMX").
 * tests/test_gemm_kernel.py::test_kernel_name_names_the_tier and test_kernel_choice_rule. */
static const bg_kernel *kernel_for(bf16_tier t, int intel, bf16_tier cap)
{
    if (t == BF16_TIER_AVX512BF16 && intel && cap != BF16_TIER_AVX512BF16) t = BF16_TIER_AVX512;
    for (size_t i = 0; i < sizeof kernel_table / sizeof kernel_table[0]; i++)
        if (kernel_table[i]->tier <= t) return kernel_table[i];
    return &bg_kernel_portable;
}

/* The kernel of the tier in force. The tier is fixed at import, so the choice never changes. */
static const bg_kernel *select_kernel(void)
{
    return kernel_for(bf16_cpu_tier(), bf16_cpu_is_intel(), bf16_cpu_cap());
}

const char *bf16_gemm_kernel_name(void) { return select_kernel()->name; }

const char *bf16_gemm_kernel_name_for(int tier, int intel, int cap)
{
    return kernel_for((bf16_tier)tier, intel, (bf16_tier)cap)->name;
}

static atomic_int g_num_threads; /* 0: not chosen yet */

static int default_num_threads(void)
{
    const char *s = getenv("BFLOAT16_DTYPE_NUM_THREADS");
    if (s && *s) {
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        while (*end == ' ' || *end == '\t' || *end == '\n') end++;
        if (errno == 0 && *end == '\0' && v >= 1 && v <= 1024) return (int)v;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    if (n > 1024) n = 1024;
    return (int)n;
}

int bf16_gemm_get_num_threads(void)
{
    int n = atomic_load(&g_num_threads);
    if (n >= 1) return n;
    n = default_num_threads();
    int expected = 0;
    if (!atomic_compare_exchange_strong(&g_num_threads, &expected, n)) n = expected;
    return n;
}

void bf16_gemm_set_num_threads(int n)
{
    if (n >= 1) atomic_store(&g_num_threads, n > BF16_GEMM_MAX_THREADS ? BF16_GEMM_MAX_THREADS : n);
}

/* ------------------------------------------------------------------------------------------------
 * Problem description and plan
 * ---------------------------------------------------------------------------------------------- */

#define BG_ALIGN 64
#define BG_MAX_THREADS 1024
#define BG_STACK_BYTES (40 * 1024)      /* small problems run from a stack buffer: no malloc */
#define BG_GEMM_MT_FLOPS 3000000.0      /* below this a GEMM runs on one thread */
#define BG_GEMV_MT_BYTES (512 * 1024)   /* below this many matrix bytes a GEMV runs on one thread */
/* GEMV path for n <= this many right-hand columns (measured against the GEMM path): */
#define BG_GEMV_MAXN_ROWS 16            /* matrix with K contiguous: dot products, k chunked */
#define BG_GEMV_MAXN_COLS 4             /* matrix with M contiguous: axpy form */
#define BG_SMALL_MINN 5                 /* the small kernel before GEMV from this many columns */
#define BG_DOT_MAXK 64                  /* 1 x 1 products up to this K: one sequential sum */

typedef struct bg_problem_s {
    int64_t M, N, K;
    bg_view a, b;
    bg_out c;
} bg_problem;

static void transpose_problem(bg_problem *p)
{
    bg_problem t = *p;
    p->M = t.N;
    p->N = t.M;
    p->a.p = t.b.p, p->a.rs = t.b.cs, p->a.cs = t.b.rs;
    p->b.p = t.a.p, p->b.rs = t.a.cs, p->b.cs = t.a.rs;
    p->c.rs = t.c.cs, p->c.cs = t.c.rs;
}

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

enum { PATH_GEMM = 0, PATH_GEMV_ROWS = 1, PATH_GEMV_COLS = 2, PATH_SMALL = 3, PATH_DOT = 4 };

typedef struct {
    int path;
    int transposed;     /* the problem was transposed (C^T = B^T A^T) */
    int nthreads;
    /* GEMM */
    int direct;         /* float32 C with unit column stride: the micro-kernel updates C in place */
    int use_tile;       /* K > KC and not direct: accumulate in a per-thread float32 tile */
    int split_m;        /* threads split rows (else columns) */
    int64_t chunk;      /* rows or columns per thread */
    int64_t mb, nc;     /* rows per outer block, columns per B panel */
    int64_t ws_b, ws_a, ws_tile, ws_thread; /* bytes, each a multiple of BG_ALIGN */
    /* GEMV */
    int skinny;         /* the kernel's skinny_rows (V packed by pairs of k) */
    int64_t kpad;
    int64_t ws_v;
    int64_t ws_threads; /* offset of the thread bookkeeping (tasks, ids) in the workspace */
    int64_t ws_total;
} bg_plan;

typedef struct {
    const struct bg_problem_s *p;
    const bg_plan *pl;
    const bg_kernel *kt;
    int64_t m0, m1, n0, n1;
    unsigned char *ws;       /* this thread's workspace */
    const float *v;          /* GEMV: packed vector block (shared, read only) */
    struct bg_batch_s *batch; /* a thread's share of a batch of products (batch_thread), or NULL */
    int fe;                  /* the IEEE flags the task raised (run_task) */
    int nonfinite;           /* a packer of a kernel with a fallback met an inf or NaN */
    int64_t peak_iters;      /* bf16_gemm_peak: rounds of kt->peak, nothing else */
    pthread_t tid;
    int started;
} bg_task;

/* Thread bookkeeping lives at the end of the workspace, so one allocation covers the call. */
static void add_thread_bookkeeping(bg_plan *pl)
{
    pl->ws_threads = pl->ws_total;
    if (pl->nthreads > 1) pl->ws_total += round_up((int64_t)sizeof(bg_task) * pl->nthreads, BG_ALIGN);
}

static int gemv_layout(const bg_view *a)
{
    if (a->cs == 2) return PATH_GEMV_ROWS;
    if (a->rs == 2) return PATH_GEMV_COLS;
    return PATH_GEMM;
}

static int gemv_fits(int layout, int64_t n)
{
    return (layout == PATH_GEMV_ROWS && n <= BG_GEMV_MAXN_ROWS) || (layout == PATH_GEMV_COLS && n <= BG_GEMV_MAXN_COLS);
}

/* The rows of an A block for a product of this K (kernel.h, bg_kernel.mc_kc). */
static int64_t bg_block_mc(const bg_kernel *kt, int64_t K)
{
    if (kt->mc_kc == 0) return kt->mc;
    int64_t mc = kt->mc_kc / min64(kt->kc, K) / kt->mr * kt->mr;
    return mc < kt->mr ? kt->mr : mc > kt->mc ? kt->mc : mc;
}

/* The columns of a B panel for a product of this K (kernel.h, bg_kernel.nc_kc). */
static int64_t bg_block_nc(const bg_kernel *kt, int64_t K)
{
    if (kt->nc_kc == 0) return kt->nc;
    int64_t nc = kt->nc_kc / min64(kt->kc, K) / kt->nr * kt->nr;
    return nc < kt->nr ? kt->nr : nc > kt->nc ? kt->nc : nc;
}

/* Workspace of one GEMM thread owning rows/columns of size m x n. */
static void gemm_sizes(bg_plan *pl, const bg_kernel *kt, int64_t m, int64_t n, int64_t K)
{
    int64_t ks = bg_kslots(kt->pack, min64(kt->kc, K));
    int64_t nc = min64(pl->nc, n);
    pl->ws_b = round_up(ks * round_up(nc, kt->nr) * 4, BG_ALIGN);
    pl->ws_a = round_up(round_up(min64(bg_block_mc(kt, K), m), kt->mr) * ks * 4, BG_ALIGN);
    pl->ws_tile = pl->use_tile ? round_up(round_up(min64(pl->mb, m), kt->mr) * round_up(nc, kt->nr) * 4, BG_ALIGN) : 0;
    pl->ws_thread = pl->ws_b + pl->ws_a + pl->ws_tile;
}

/* Decide path, threads and workspace. May transpose the problem (C^T = B^T A^T). */
static void make_plan(bg_problem *p, const bg_kernel *kt, int nthreads, bg_plan *pl)
{
    memset(pl, 0, sizeof *pl);
    /* Prefer C with contiguous rows: the micro-kernel writes rows. */
    int64_t esz = p->c.bf16 ? 2 : 4;
    if (p->c.cs != esz && p->c.rs == esz) transpose_problem(p), pl->transposed ^= 1;

    /* Matrix-vector products: stream the big operand once. */
    int la = gemv_layout(&p->a), lb = gemv_layout(&(bg_view){p->b.p, p->b.cs, p->b.rs});
    /* (a square skinny product, M == N <= 16, only with a long k: with a short one the GEMM's
     * register block beats the GEMV's per-output lane sums; a 1 x 1 product, a dot product,
     * always: the GEMM would pad it to a block) */
    /* A dot product (1 x 1): one float32 sum in increasing k up to BG_DOT_MAXK (the small
     * kernel's order; the GEMV's call costs more than the products there), 16 lane sums above
     * (run_plain; the GEMV widened the vector into its workspace first and ran a 1-row block:
     * x @ y of 10^5 elements 44 us, np.dot 13 us, AMD EPYC Zen 3). */
    if (p->M == 1 && p->N == 1) {
        pl->path = PATH_DOT;
        pl->nthreads = 1;
        return;
    }
    int gemv_a = gemv_fits(la, p->N) && (p->M > p->N || (p->M == p->N && (p->K >= 128 || p->N == 1)));
    int gemv_b = !gemv_a && gemv_fits(lb, p->M) && p->N > p->M;
    /* Small products (either orientation: C^T = B^T A^T when only M is narrow enough). From 5
     * GEMV columns on, the small kernel beats the GEMV's per-output lane sums too (measured on the
     * Ice Lake Xeon, 300 x K @ K x N for K <= 128 and N = 5..16: 1.1-4x); with fewer columns its
     * lanes are mostly padding, unless the other side fits the lanes too: then that side goes in
     * the lanes (a 32 x 32 matrix times a vector: 0.9 -> 0.3 us). The choice is the same for a
     * product and its transpose (tests/test_gemm_kernel.py::test_skinny_within_bound). */
    double flops = 2.0 * (double)p->M * (double)p->N * (double)p->K;
    int small = kt->small != NULL && p->K <= BG_SMALL_MAXK && p->K <= kt->kc && flops < BG_GEMM_MT_FLOPS &&
                (p->N <= kt->small_maxn || p->M <= kt->small_maxn);
    int64_t wide = max64(p->M, p->N);
    if (small && (gemv_a || gemv_b) && (gemv_a ? p->N : p->M) < BG_SMALL_MINN)
        small = wide <= kt->small_maxn; /* narrow on both sides: the wide one in the lanes */
    if (small) {
        if (p->N > kt->small_maxn || (p->N < BG_SMALL_MINN && p->M == wide && wide <= kt->small_maxn))
            transpose_problem(p), pl->transposed ^= 1;
        pl->path = PATH_SMALL; /* no workspace, one thread */
        pl->nthreads = 1;
        return;
    }
    if (gemv_a) {
        pl->path = la;
    } else if (gemv_b) {
        transpose_problem(p);
        pl->transposed ^= 1;
        pl->path = lb;
    }

    if (pl->path != PATH_GEMM) {
        int64_t n = p->N;
        pl->skinny = pl->path == PATH_GEMV_ROWS && kt->skinny_rows != NULL && n >= kt->skinny_minn;
        pl->kpad = round_up(p->K, kt->gemv_ku);
        int64_t vfloats = pl->skinny ? (p->K + 1) / 2 * 16 : pl->path == PATH_GEMV_ROWS ? pl->kpad * n : p->K * n;
        pl->ws_v = round_up(vfloats * 4, BG_ALIGN);
        /* threads when the matrix is large or, with several columns, the arithmetic is; at
         * least 16 rows each (one AVX-512 row panel) */
        double bytes = 2.0 * (double)p->M * (double)p->K;
        int64_t t = bytes < BG_GEMV_MT_BYTES && flops < BG_GEMM_MT_FLOPS ? 1 : nthreads;
        t = min64(t, ceil_div(p->M, 16));
        pl->nthreads = (int)max64(t, 1);
        pl->chunk = round_up(ceil_div(p->M, pl->nthreads), 8);
        pl->nthreads = (int)ceil_div(p->M, pl->chunk);
        pl->ws_total = pl->ws_v;
        add_thread_bookkeeping(pl);
        return;
    }

    pl->direct = !p->c.bf16 && p->c.cs == 4 && p->c.rs % 4 == 0 && ((uintptr_t)p->c.p % 4) == 0;
    pl->use_tile = !pl->direct && p->K > kt->kc;
    pl->nc = pl->use_tile ? min64(BG_TILE_N, bg_block_nc(kt, p->K)) : bg_block_nc(kt, p->K);
    pl->mb = pl->use_tile ? BG_TILE_M : INT64_MAX;

    int64_t t = flops < BG_GEMM_MT_FLOPS ? 1 : nthreads;
    /* Threads split the longer side; a square product splits N: each thread then packs its own
     * columns of B and all of A, whose packing costs less (measured at n = 2048, two threads,
     * AMD EPYC Zen 5: B's packing was 4-6 % of the time when every thread packed all of it). */
    pl->split_m = p->M > p->N;
    int64_t len = pl->split_m ? p->M : p->N, unit = pl->split_m ? kt->mr : kt->nr;
    t = min64(t, ceil_div(len, unit));
    pl->nthreads = (int)max64(t, 1);
    pl->chunk = round_up(ceil_div(len, pl->nthreads), unit);
    pl->nthreads = (int)ceil_div(len, pl->chunk);
    if (pl->split_m)
        gemm_sizes(pl, kt, pl->chunk, p->N, p->K);
    else
        gemm_sizes(pl, kt, p->M, pl->chunk, p->K);
    pl->ws_total = pl->ws_thread * pl->nthreads;
    add_thread_bookkeeping(pl);
}

/* ------------------------------------------------------------------------------------------------
 * GEMM
 * ---------------------------------------------------------------------------------------------- */


/*
 * The padding of a partial panel (w slots per k, the first `used` real) repeats its last real row
 * or column. The micro-kernel computes the whole register block; a padded lane then computes what
 * a real one does and raises the same IEEE flags, where zeros would turn an infinity into a NaN
 * (0 * inf) and numpy would report "invalid value" for a result without one
 * (tests/test_gemm_kernel.py::test_fp_warnings_are_the_results_own).
 */
void bg_pad_panel(float *panel, int64_t w, int64_t kc, int64_t used)
{
    for (int64_t k = 0; k < kc; k++)
        for (int64_t s = used; s < w; s++) panel[k * w + s] = panel[k * w + used - 1];
}

/* Returns nonzero when a packer reported an inf or NaN to a kernel with a fallback (the task
 * stops there: the driver computes the product again with the fallback). */
static int gemm_blocks(const bg_task *tk)
{
    const bg_problem *p = tk->p;
    const bg_plan *pl = tk->pl;
    const bg_kernel *kt = tk->kt;
    const int64_t K = p->K, MR = kt->mr, NR = kt->nr, KC = kt->kc, MC = bg_block_mc(kt, K);
    float *bp = (float *)(void *)tk->ws;
    float *ap = (float *)(void *)(tk->ws + pl->ws_b);
    float *tile = (float *)(void *)(tk->ws + pl->ws_b + pl->ws_a);
    float buf[BG_MAX_MR * BG_MAX_NR] __attribute__((aligned(64)));
    float *cf = (float *)(void *)p->c.p; /* only dereferenced when pl->direct */
    const int64_t ldc = p->c.rs / 4;

    for (int64_t ib = tk->m0; ib < tk->m1; ib += min64(pl->mb, tk->m1 - ib)) {
        int64_t mb = min64(pl->mb, tk->m1 - ib);
        for (int64_t jc = tk->n0; jc < tk->n1; jc += pl->nc) {
            int64_t nc = min64(pl->nc, tk->n1 - jc);
            int64_t ldt = round_up(nc, NR);
            for (int64_t pc = 0; pc < K; pc += KC) {
                int64_t kc = min64(KC, K - pc), ks = bg_kslots(kt->pack, kc);
                int acc = pc > 0;
                if (kt->pack_b(&p->b, pc, kc, jc, nc, bp) && kt->fallback) return 1;
                if (nc % NR) bg_pad_panel(bp + nc / NR * NR * ks, NR, ks, nc % NR);
                for (int64_t ic = ib; ic < ib + mb; ic += MC) {
                    int64_t mc = min64(MC, ib + mb - ic);
                    if (kt->pack_a(&p->a, ic, mc, pc, kc, ap) && kt->fallback) return 1;
                    if (mc % MR && !kt->pack_a_pads) bg_pad_panel(ap + mc / MR * MR * ks, MR, ks, mc % MR);
                    for (int64_t jr = 0; jr < nc; jr += NR) {
                        int64_t nr = min64(NR, nc - jr);
                        const float *bpj = bp + jr * ks;
                        for (int64_t ir = 0; ir < mc; ir += MR) {
                            int64_t mr = min64(MR, mc - ir);
                            const float *api = ap + ir * ks;
                            int64_t i = ic + ir, j = jc + jr;
                            if (pl->use_tile) {
                                kt->ukernel(kc, api, bpj, tile + (i - ib) * ldt + jr, ldt, acc);
                            } else if (pl->direct && mr == MR && nr == NR) {
                                kt->ukernel(kc, api, bpj, cf + i * ldc + j, ldc, acc);
                            } else if (pl->direct) {
                                kt->ukernel(kc, api, bpj, buf, NR, 0);
                                for (int64_t r = 0; r < mr; r++) {
                                    float *crow = cf + (i + r) * ldc + j;
                                    for (int64_t s = 0; s < nr; s++)
                                        crow[s] = acc ? crow[s] + buf[r * NR + s] : buf[r * NR + s];
                                }
                            } else if (kt->ukernel_stores_bf16 && mr == MR && nr == NR && p->c.bf16 && p->c.cs == 2) {
                                /* K <= KC, a full block of a bfloat16 C: rounded in the kernel */
                                kt->ukernel(kc, api, bpj, (float *)(void *)(p->c.p + i * p->c.rs + j * 2), p->c.rs,
                                            BG_STORE_BF16);
                            } else { /* K <= KC: the block is final, round it straight out */
                                kt->ukernel(kc, api, bpj, buf, NR, 0);
                                kt->write_block(&p->c, i, j, buf, NR, mr, nr);
                            }
                        }
                    }
                }
            }
            if (pl->use_tile) kt->write_block(&p->c, ib, jc, tile, ldt, mb, nc);
        }
    }
    return 0;
}

/* gemm_blocks between the kernel's per-thread setup and release (kernel.h, thread_begin). */
static int gemm_thread(const bg_task *tk)
{
    if (tk->kt->thread_begin != NULL) tk->kt->thread_begin();
    int rc = gemm_blocks(tk);
    if (tk->kt->thread_end != NULL) tk->kt->thread_end();
    return rc;
}

/* ------------------------------------------------------------------------------------------------
 * GEMV
 * ---------------------------------------------------------------------------------------------- */

/* Returns nonzero when a kernel with a fallback would get an inf or NaN of V (BG_PACK_BF16_PAIR). */
static int pack_vector(const bg_problem *p, const bg_plan *pl, const bg_kernel *kt, float *v)
{
    const int ku = kt->gemv_ku;
    int64_t K = p->K, n = p->N;
    if (pl->skinny) { /* pairs of k, 16 column slots each (kernel.h, skinny_rows) */
        uint32_t *d = (uint32_t *)(void *)v;
        uint16_t mx = 0;
        for (int64_t q = 0; q < (K + 1) / 2; q++) {
            uint16_t lo[16] = {0}, hi[16] = {0}; /* rows 2q and 2q + 1, zero past n and K */
            const unsigned char *r0 = p->b.p + 2 * q * p->b.rs, *r1 = r0 + p->b.rs;
            if (p->b.cs == 2) {
                memcpy(lo, r0, (size_t)n * 2);
                if (2 * q + 1 < K) memcpy(hi, r1, (size_t)n * 2);
            } else {
                for (int64_t j = 0; j < n; j++) {
                    memcpy(&lo[j], r0 + j * p->b.cs, 2);
                    if (2 * q + 1 < K) memcpy(&hi[j], r1 + j * p->b.cs, 2);
                }
            }
            for (int j = 0; j < 16; j++) {
                uint16_t m = (lo[j] & 0x7fff) > (hi[j] & 0x7fff) ? lo[j] & 0x7fff : hi[j] & 0x7fff;
                mx = m > mx ? m : mx;
                d[16 * q + j] = (uint32_t)lo[j] | (uint32_t)hi[j] << 16;
            }
        }
        return kt->fallback != NULL && mx >= 0x7f80;
    }
    if (pl->path == PATH_GEMV_ROWS && n == 1 && p->b.rs == 2) {
        /* one contiguous column (a dot product, W @ x): whole blocks at once, in loops the
         * compiler vectorises (element by element this packing cost more than the product:
         * 0.3 ns per k, AMD EPYC Zen 5) */
        const unsigned char *src = p->b.p;
        if (kt->pack == BG_PACK_BF16_PAIR) { /* V as stored, zero padded */
            int16_t *d = (int16_t *)(void *)v;
            memcpy(d, src, (size_t)K * 2);
            memset(d + K, 0, (size_t)(pl->kpad - K) * 2);
            int16_t mx = 0;
            for (int64_t k = 0; k < K; k++) {
                int16_t m = (int16_t)(d[k] & 0x7fff);
                mx = m > mx ? m : mx;
            }
            return kt->fallback != NULL && mx >= 0x7f80;
        }
        const int half = ku / 2; /* float32 blocks: even k, then odd k */
        for (int64_t k0 = 0; k0 < pl->kpad; k0 += ku) {
            float *d = v + k0;
            if (k0 + ku <= K) {
                for (int l = 0; l < half; l++) {
                    uint32_t lo = bg_ld_u16(src + (k0 + 2 * l) * 2) << 16;
                    uint32_t hi = bg_ld_u16(src + (k0 + 2 * l + 1) * 2) << 16;
                    memcpy(d + l, &lo, 4);
                    memcpy(d + half + l, &hi, 4);
                }
            } else {
                for (int l = 0; l < ku; l++) {
                    int64_t k = k0 + (l < half ? 2 * l : 2 * (l - half) + 1);
                    d[l] = k < K ? bg_load(src + k * 2) : 0.0f;
                }
            }
        }
        return 0;
    }
    if (pl->path == PATH_GEMV_ROWS && kt->pack == BG_PACK_BF16_PAIR) {
        /* block t of column j: the bfloat16 V[ku t .. ku t + ku - 1][j] (kernel.h, bg_gemv_rows_fn) */
        unsigned char *d = (unsigned char *)(void *)v;
        uint16_t mx = 0;
        for (int64_t j = 0; j < n; j++)
            for (int64_t k0 = 0; k0 < pl->kpad; k0 += ku) {
                unsigned char *blk = d + ((k0 / ku) * n + j) * ku * 2;
                int64_t cnt = min64(ku, K - k0);
                if (cnt < ku) memset(blk + max64(cnt, 0) * 2, 0, (size_t)(ku - max64(cnt, 0)) * 2);
                const unsigned char *src = p->b.p + k0 * p->b.rs + j * p->b.cs;
                if (p->b.rs == 2 && cnt > 0)
                    memcpy(blk, src, (size_t)cnt * 2);
                else
                    for (int64_t l = 0; l < cnt; l++) memcpy(blk + l * 2, src + l * p->b.rs, 2);
                for (int64_t l = 0; l < cnt; l++) {
                    uint16_t h;
                    memcpy(&h, blk + l * 2, 2);
                    if ((h & 0x7fff) > mx) mx = h & 0x7fff;
                }
            }
        return kt->fallback != NULL && mx >= 0x7f80;
    }
    if (pl->path == PATH_GEMV_ROWS) { /* ku-k blocks, columns interleaved, even k then odd k */
        const int half = ku / 2;
        int64_t vec_blocks = 0, vec_cols = 0; /* the part the vector packer did */
        if (kt->pack_v_rows != NULL && p->b.cs == 2 && n >= 8) {
            vec_blocks = K / ku;
            vec_cols = n / 8 * 8;
            kt->pack_v_rows(&p->b, vec_blocks, n, vec_cols, ku, v);
        }
        for (int64_t k0 = 0; k0 < pl->kpad; k0 += ku)
            for (int64_t j = k0 / ku < vec_blocks ? vec_cols : 0; j < n; j++) {
                float *d = v + ((k0 / ku) * n + j) * ku;
                for (int l = 0; l < ku; l++) {
                    int64_t k = k0 + (l < half ? 2 * l : 2 * (l - half) + 1);
                    d[l] = k < K ? bg_load(p->b.p + k * p->b.rs + j * p->b.cs) : 0.0f;
                }
            }
    } else { /* row k contiguous in j */
        for (int64_t k = 0; k < K; k++)
            for (int64_t j = 0; j < n; j++) v[k * n + j] = bg_load(p->b.p + k * p->b.rs + j * p->b.cs);
    }
    return 0;
}

/* Returns nonzero when the kernel met an inf or NaN (gemv_rows of a kernel with a fallback). */
static int gemv_thread(const bg_task *tk)
{
    const bg_problem *p = tk->p;
    if (tk->pl->skinny)
        return tk->kt->skinny_rows(&p->a, tk->m0, tk->m1, p->K, tk->v, tk->pl->kpad, p->N, &p->c);
    if (tk->pl->path == PATH_GEMV_ROWS)
        return tk->kt->gemv_rows(&p->a, tk->m0, tk->m1, p->K, tk->v, tk->pl->kpad, p->N, &p->c);
    tk->kt->gemv_cols(&p->a, tk->m0, tk->m1, p->K, tk->v, p->N, &p->c);
    return 0;
}

/* ------------------------------------------------------------------------------------------------
 * Threads: one pthread per extra share, created per call (only for work above the thresholds).
 * ---------------------------------------------------------------------------------------------- */

static void batch_thread(struct bg_batch_s *bt);

static int bits_nonfinite(const unsigned char *p) { return (bg_ld_u16(p) & 0x7fff) >= BG_NONFINITE; }

/* Whether row i of A (rows) or column i of B (!rows) holds an inf or a NaN, memoised in *memo
 * (0 unknown, 1 finite, 2 not) when there is one. */
static int line_nonfinite(const bg_view *v, int64_t i, int64_t K, int rows, signed char *memo)
{
    if (memo != NULL && memo[i]) return memo[i] == 2;
    const unsigned char *q = v->p + i * (rows ? v->rs : v->cs);
    int64_t step = rows ? v->cs : v->rs;
    int found = 0;
    for (int64_t k = 0; k < K && !found; k++) found = bits_nonfinite(q + k * step);
    if (memo != NULL) memo[i] = found ? 2 : 1;
    return found;
}

/*
 * FE_OVERFLOW when a bfloat16 output holds an infinity whose row of A and column of B are finite:
 * its float32 sum overflowed (the arithmetic raised the flag already) or was finite and rounded to
 * inf, which the integer and vector roundings of every tier do silently. Each task checks its own
 * block of C after computing it (its flags reach the caller's through tk->fe): one pass over the
 * block, and a pass over A's rows and B's columns only for a row of it holding an inf or a NaN
 * (tests/test_linalg.py::test_rounding_overflow_to_inf_warns_like_float16). GEMM kernels with
 * rounding_flags raise the flag as they round (kernel.h), and skip this pass.
 */
static void flag_rounding_overflow(const bg_problem *p, int64_t m0, int64_t m1, int64_t n0, int64_t n1)
{
    if (!p->c.bf16 || p->K <= 0 || fetestexcept(FE_OVERFLOW)) return;
    signed char *rows = NULL, *cols = NULL;
    int raised = 0, tried = 0;
    for (int64_t i = m0; i < m1 && !raised; i++) {
        const unsigned char *ci = p->c.p + i * p->c.rs;
        uint16_t any = 0; /* bit 15: the row holds an inf or a NaN (the compiler vectorises the
                             contiguous loop) */
        if (p->c.cs == 2) {
            for (int64_t j = n0; j < n1; j++) {
                uint16_t h;
                memcpy(&h, ci + 2 * j, 2);
                any |= (uint16_t)((h & 0x7fff) + 0x80);
            }
        } else {
            for (int64_t j = n0; j < n1; j++) any |= (uint16_t)((bg_ld_u16(ci + j * p->c.cs) & 0x7fff) + 0x80);
        }
        if (!(any & 0x8000)) continue;
        for (int64_t j = n0; j < n1 && !raised; j++) {
            uint16_t h = bg_ld_u16(p->c.p + i * p->c.rs + j * p->c.cs);
            if ((h & 0x7fff) != 0x7f80) continue;
            if (!tried) { /* without memory, each infinity scans its row and column */
                tried = 1;
                rows = calloc((size_t)p->M, 1);
                cols = calloc((size_t)p->N, 1);
            }
            raised = !line_nonfinite(&p->a, i, p->K, 1, rows) && !line_nonfinite(&p->b, j, p->K, 0, cols);
        }
    }
    free(rows);
    free(cols);
    if (raised) feraiseexcept(FE_OVERFLOW);
}

static void run_task_body(bg_task *tk)
{
    if (tk->peak_iters > 0)
        tk->kt->peak(tk->peak_iters);
    else if (tk->batch != NULL)
        batch_thread(tk->batch);
    else {
        int gemm = tk->pl->path == PATH_GEMM;
        tk->nonfinite = gemm ? gemm_thread(tk) : gemv_thread(tk);
        if (!tk->nonfinite && !(gemm && tk->kt->rounding_flags))
            flag_rounding_overflow(tk->p, tk->m0, tk->m1, tk->n0, tk->n1);
    }
}

/*
 * A task of a threaded call keeps the IEEE flags it raised in tk->fe, and leaves its thread's flags
 * as they were; the caller raises the union of all tasks' flags once they are done (run_tasks).
 * numpy reports "overflow" and "invalid value" from the calling thread's flags, so a warning
 * then does not depend on which thread computed the element
 * (tests/test_gemm_kernel.py::test_fp_warnings_are_the_results_own).
 */
#define BG_FE_FLAGS (FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW)

static void run_task(bg_task *tk)
{
    fexcept_t saved;
    fegetexceptflag(&saved, BG_FE_FLAGS);
    feclearexcept(BG_FE_FLAGS);
    run_task_body(tk);
    tk->fe = fetestexcept(BG_FE_FLAGS);
    fesetexceptflag(&saved, BG_FE_FLAGS);
}

static void *thread_main(void *arg)
{
    run_task((bg_task *)arg);
    return NULL;
}

/*
 * A small persistent pool. The caller and the workers claim the tasks of the current job one at a
 * time from a shared counter, so a worker the OS has not scheduled yet (a busy machine) delays
 * nothing: the caller runs the tasks nobody has claimed, and waits only for tasks already claimed
 * and still running. Which thread runs a task does not change its result (a task owns its rows or
 * columns and its workspace), so results stay identical for every thread count
 * (tests/test_threads.py). Workers spin briefly on the job counter (a GEMM call follows another
 * quickly in typical use) and then sleep on a condition variable. One call uses the pool at a time;
 * a concurrent call finds it busy and creates its own threads for that call (same partition, same
 * results). After fork() the child starts with an empty pool (its threads did not survive the fork).
 */
#define BG_POOL_MAX 64
#define BG_SPIN_ITERS 20000

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    atomic_uint gen;      /* job counter */
    /* the current job's claim word: gen << 32 | ntasks << 16 | next unclaimed task; a claim is a
     * compare-and-swap of it, so a worker that wakes after its job ended claims nothing */
    _Atomic uint64_t claim;
    atomic_int finished;  /* tasks of the current job completed */
    atomic_int busy;      /* 1 while a call owns the pool */
    int nworkers;         /* protected by mu */
    bg_task *tasks;       /* current job: written under mu before gen is released, read after a claim */
    /* gen at the time worker w was created (written under mu before pthread_create, which orders
     * it before the worker's first read): a worker created during job g waits for g + 1. */
    unsigned start_gen[BG_POOL_MAX];
} bg_pool;

static bg_pool g_pool = {.mu = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};
static pthread_once_t g_pool_once = PTHREAD_ONCE_INIT;

static void pool_after_fork_child(void)
{
    pthread_mutex_init(&g_pool.mu, NULL);
    pthread_cond_init(&g_pool.wake, NULL);
    pthread_cond_init(&g_pool.done, NULL);
    atomic_store(&g_pool.gen, 0);
    atomic_store(&g_pool.claim, 0);
    atomic_store(&g_pool.finished, 0);
    atomic_store(&g_pool.busy, 0);
    g_pool.nworkers = 0;
    g_pool.tasks = NULL;
}

static void pool_once(void) { pthread_atfork(NULL, NULL, pool_after_fork_child); }

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Claim and run the unclaimed tasks of job `gen` until none is left. The task a claim returns
 * belongs to a job that cannot end before the task is finished, so its memory is still live. */
static void pool_claim_and_run(unsigned gen)
{
    uint64_t c = atomic_load_explicit(&g_pool.claim, memory_order_acquire);
    for (;;) {
        unsigned nt = (unsigned)(c >> 16) & 0xffffu, next = (unsigned)c & 0xffffu;
        if ((unsigned)(c >> 32) != gen || next >= nt) return;
        if (!atomic_compare_exchange_weak_explicit(&g_pool.claim, &c, c + 1, memory_order_acq_rel,
                                                   memory_order_acquire))
            continue; /* c now holds the current word */
        run_task(&g_pool.tasks[next]);
        if (atomic_fetch_add_explicit(&g_pool.finished, 1, memory_order_acq_rel) + 1 == (int)nt) {
            pthread_mutex_lock(&g_pool.mu);
            pthread_cond_broadcast(&g_pool.done);
            pthread_mutex_unlock(&g_pool.mu);
        }
        c = atomic_load_explicit(&g_pool.claim, memory_order_acquire);
    }
}

static void *pool_worker(void *arg)
{
    int w = (int)(intptr_t)arg;
    unsigned seen = g_pool.start_gen[w];
    for (;;) {
        unsigned g;
        int spins = 0;
        while ((g = atomic_load_explicit(&g_pool.gen, memory_order_acquire)) == seen && spins < BG_SPIN_ITERS) {
            cpu_relax();
            spins++;
        }
        if (g == seen) {
            pthread_mutex_lock(&g_pool.mu);
            while ((g = atomic_load(&g_pool.gen)) == seen) pthread_cond_wait(&g_pool.wake, &g_pool.mu);
            pthread_mutex_unlock(&g_pool.mu);
        }
        seen = g;
        pool_claim_and_run(g);
    }
    return NULL;
}

/* Run tasks[0..nt) on the pool; returns 0, or -1 if the pool is busy (the caller then spawns). */
static int pool_run(bg_task *tasks, int nt)
{
    pthread_once(&g_pool_once, pool_once);
    int expected = 0;
    if (!atomic_compare_exchange_strong(&g_pool.busy, &expected, 1)) return -1;
    pthread_mutex_lock(&g_pool.mu);
    int want = nt - 1 < BG_POOL_MAX ? nt - 1 : BG_POOL_MAX;
    while (g_pool.nworkers < want) {
        pthread_t tid;
        pthread_attr_t attr;
        if (pthread_attr_init(&attr) != 0) break;
        int ok = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0;
        g_pool.start_gen[g_pool.nworkers] = atomic_load(&g_pool.gen);
        ok = ok && pthread_create(&tid, &attr, pool_worker, (void *)(intptr_t)g_pool.nworkers) == 0;
        pthread_attr_destroy(&attr);
        if (!ok) break;
        g_pool.nworkers++;
    }
    unsigned g = atomic_load(&g_pool.gen) + 1u;
    g_pool.tasks = tasks;
    atomic_store(&g_pool.finished, 0);
    atomic_store_explicit(&g_pool.claim, (uint64_t)g << 32 | (uint64_t)nt << 16, memory_order_release);
    atomic_store_explicit(&g_pool.gen, g, memory_order_release);
    pthread_cond_broadcast(&g_pool.wake);
    pthread_mutex_unlock(&g_pool.mu);

    pool_claim_and_run(g);

    int spins = 0;
    while (atomic_load_explicit(&g_pool.finished, memory_order_acquire) != nt && spins < 4 * BG_SPIN_ITERS) {
        cpu_relax();
        spins++;
    }
    if (atomic_load_explicit(&g_pool.finished, memory_order_acquire) != nt) {
        pthread_mutex_lock(&g_pool.mu);
        while (atomic_load(&g_pool.finished) != nt) pthread_cond_wait(&g_pool.done, &g_pool.mu);
        pthread_mutex_unlock(&g_pool.mu);
    }
    atomic_store(&g_pool.busy, 0);
    return 0;
}

static int run_tasks(bg_task *tasks, int nt);

/* Returns nonzero when a task met an inf or NaN (gemm_thread). */
static int run_parallel(const bg_problem *p, const bg_plan *pl, const bg_kernel *kt, unsigned char *ws,
                         const float *v)
{
    int nt = pl->nthreads;
    bg_task *tasks = (bg_task *)(void *)(ws + pl->ws_threads);
    int64_t len = (pl->path != PATH_GEMM || pl->split_m) ? p->M : p->N;
    for (int t = 0; t < nt; t++) {
        bg_task tk = {.p = p, .pl = pl, .kt = kt, .m0 = 0, .m1 = p->M, .n0 = 0, .n1 = p->N, .ws = ws, .v = v};
        int64_t lo = t * pl->chunk, hi = min64(len, lo + pl->chunk);
        if (pl->path != PATH_GEMM || pl->split_m)
            tk.m0 = lo, tk.m1 = hi;
        else
            tk.n0 = lo, tk.n1 = hi;
        if (pl->path == PATH_GEMM) tk.ws = ws + (int64_t)t * pl->ws_thread;
        tasks[t] = tk;
    }
    return run_tasks(tasks, nt);
}

/* Run tasks[0..nt) on the pool, or on threads of this call when another call holds the pool.
 * Returns nonzero when a task met an inf or NaN (gemm_thread). */
static int run_tasks(bg_task *tasks, int nt)
{
    if (pool_run(tasks, nt) != 0) {
        /* Pool busy (another call is using it): threads for this call only. */
        for (int t = 1; t < nt; t++) tasks[t].started = pthread_create(&tasks[t].tid, NULL, thread_main, &tasks[t]) == 0;
        run_task(&tasks[0]);
        for (int t = 1; t < nt; t++) {
            if (tasks[t].started)
                pthread_join(tasks[t].tid, NULL);
            else
                run_task(&tasks[t]); /* thread creation failed: do the share here, same result */
        }
    }
    int fe = 0, nonfinite = 0;
    for (int t = 0; t < nt; t++) fe |= tasks[t].fe, nonfinite |= tasks[t].nonfinite;
    if (fe) feraiseexcept(fe);
    return nonfinite;
}

/*
 * A long dot product: lane j sums the exact products of the k = j (mod 16), from +0 in
 * increasing k, and the lanes are added pairwise (j + 8, then + 4, + 2, + 1). The products of
 * two bfloat16 are exact in float32, so a fused multiply-add rounds as the multiply and add do,
 * and the bits are the same whether the compiler vectorises this or not, at every tier
 * (tests/test_gemm_kernel.py::test_long_dot_products_take_sixteen_lane_sums).
 */
enum { DOT_LANES = 16 };

static float dot_lanes(const bg_view *a, const bg_view *b, int64_t K)
{
    float acc[DOT_LANES] = {0};
    int64_t k = 0;
    if (a->cs == 2 && b->rs == 2) {
        const unsigned char *pa = a->p, *pb = b->p;
        for (; k + DOT_LANES <= K; k += DOT_LANES)
            for (int j = 0; j < DOT_LANES; j++)
                acc[j] += bg_load(pa + 2 * (k + j)) * bg_load(pb + 2 * (k + j));
    }
    for (; k < K; k++) acc[k % DOT_LANES] += bg_load(a->p + k * a->cs) * bg_load(b->p + k * b->rs);
    for (int w = DOT_LANES / 2; w >= 1; w /= 2)
        for (int j = 0; j < w; j++) acc[j] += acc[j + w];
    return acc[0];
}

/* The paths with no workspace and one thread. */
static int plain_path(int path) { return path == PATH_SMALL || path == PATH_DOT; }

/* The product on a plain path, with its IEEE flags: the small kernels raise the rounding
 * overflow themselves (kernel.h, bg_small_fn); the dot product's one element gets the pass
 * (flag_rounding_overflow). On a 16 x 16 x 16 product the pass and its flag test were about 60 of
 * the ~1,220 ns numpy's a @ b took (AMD EPYC Zen 5). */
static void run_plain(const bg_kernel *kt, int path, const bg_problem *p)
{
    if (path == PATH_SMALL) {
        /* a kernel with a fallback declines inputs holding an inf or NaN (kernel.h) */
        if (kt->small(p->M, p->N, p->K, &p->a, &p->b, &p->c) && kt->fallback)
            kt->fallback->small(p->M, p->N, p->K, &p->a, &p->b, &p->c);
        return;
    }
    if (p->K <= BG_DOT_MAXK) { /* PATH_DOT: from +0, exact products in increasing k */
        float acc = 0.0f;
        for (int64_t k = 0; k < p->K; k++) acc += bg_load(p->a.p + k * p->a.cs) * bg_load(p->b.p + k * p->b.rs);
        bg_store(&p->c, 0, 0, acc);
    } else {
        bg_store(&p->c, 0, 0, dot_lanes(&p->a, &p->b, p->K));
    }
    flag_rounding_overflow(p, 0, p->M, 0, p->N);
}

/* ------------------------------------------------------------------------------------------------
 * Entry points
 * ---------------------------------------------------------------------------------------------- */

static void write_zeros(const bg_problem *p)
{
    for (int64_t i = 0; i < p->M; i++)
        for (int64_t j = 0; j < p->N; j++) bg_store(&p->c, i, j, 0.0f);
}

/*
 * The heap workspace of the last call is kept for the next one (at most one block, of at most
 * BG_WS_CACHE_MAX bytes). A fresh allocation of a few MiB is fresh pages on every call (the C
 * library hands blocks that large back to the system when they are freed), and first touching
 * them cost page faults every call: at n = 512 about 140 faults per call on one thread, 190 on
 * two. A call takes the block with one atomic exchange (a concurrent call finds none and
 * allocates its own) and puts it back with another, freeing whatever block it displaces; the
 * block's capacity is stored in its first bytes.
 */
#define BG_WS_CACHE_MAX ((int64_t)64 << 20)
static _Atomic(unsigned char *) g_ws_cache;

/* A block of at least `bytes` usable bytes starting at block + BG_ALIGN, or NULL. */
static unsigned char *ws_acquire(int64_t bytes)
{
    unsigned char *blk = atomic_exchange_explicit(&g_ws_cache, NULL, memory_order_acquire);
    if (blk != NULL) {
        int64_t cap;
        memcpy(&cap, blk, sizeof cap);
        if (bytes <= cap) return blk;
        free(blk);
    }
    void *p = NULL;
    if ((uint64_t)bytes > (uint64_t)SIZE_MAX - BG_ALIGN || posix_memalign(&p, BG_ALIGN, (size_t)bytes + BG_ALIGN) != 0)
        return NULL;
    memcpy(p, &bytes, sizeof bytes);
    return p;
}

static void ws_release(unsigned char *blk)
{
    int64_t cap;
    memcpy(&cap, blk, sizeof cap);
    if (cap > BG_WS_CACHE_MAX) {
        free(blk);
        return;
    }
    free(atomic_exchange_explicit(&g_ws_cache, blk, memory_order_acq_rel));
}

static int run_planned(const bg_kernel *kt, bg_problem *pp, const bg_plan *plp);

int bf16_gemm(int64_t M, int64_t N, int64_t K,
              const void *A, int64_t a_rs, int64_t a_cs,
              const void *B, int64_t b_rs, int64_t b_cs,
              void *C, int64_t c_rs, int64_t c_cs, int c_is_bf16, int nthreads)
{
    if (M <= 0 || N <= 0) return 0;
    bg_problem p = {M, N, K, {A, a_rs, a_cs}, {B, b_rs, b_cs}, {C, c_rs, c_cs, c_is_bf16 != 0}};
    if (K <= 0) {
        write_zeros(&p);
        return 0;
    }
    if (nthreads <= 0) nthreads = bf16_gemm_get_num_threads();
    if (nthreads > BG_MAX_THREADS) nthreads = BG_MAX_THREADS;
    /* Sizes beyond this cannot describe real memory; refusing them keeps every size product in range. */
    if (K > BF16_GEMM_MAX_DIM || M > BF16_GEMM_MAX_DIM || N > BF16_GEMM_MAX_DIM) return BF16_GEMM_ETOOBIG;

    const bg_kernel *kt = select_kernel();
    const bg_problem given = p;
    fexcept_t saved;
    if (kt->fallback != NULL) fegetexceptflag(&saved, BG_FE_FLAGS);
    for (;;) {
        bg_plan pl;
        make_plan(&p, kt, nthreads, &pl);
        if (plain_path(pl.path)) {
            run_plain(kt, pl.path, &p);
            return 0;
        }
        int rc = run_planned(kt, &p, &pl);
        if (rc <= 0) return rc;
        /* rc > 0: the kernel met an inf or NaN; the fallback computes the whole product again,
         * with only its own flags (kernel.h, bg_kernel.fallback) */
        fesetexceptflag(&saved, BG_FE_FLAGS);
        p = given;
        kt = kt->fallback;
    }
}

/* The paths with a workspace, maybe threads. Not inlined into bf16_gemm: its stack buffer and the
 * small kernel's stack copies are never live at once. */
/* Returns 0, a negative BF16_GEMM_E* code, or 1 when a kernel with a fallback met an inf or NaN. */
static __attribute__((noinline)) int run_planned(const bg_kernel *kt, bg_problem *pp, const bg_plan *plp)
{
    bg_problem p = *pp;
    bg_plan pl = *plp;
    unsigned char stack_ws[BG_STACK_BYTES] __attribute__((aligned(BG_ALIGN)));
    unsigned char *ws = stack_ws, *heap = NULL;
    if (pl.ws_total > BG_STACK_BYTES) {
        heap = ws_acquire(pl.ws_total);
        if (heap == NULL) return BF16_GEMM_ENOMEM;
        ws = heap + BG_ALIGN;
    }
    const float *v = NULL;
    int nonfinite = 0;
    if (pl.path != PATH_GEMM) {
        nonfinite = pack_vector(&p, &pl, kt, (float *)(void *)ws);
        v = (const float *)(void *)ws;
    }
    /* (an inf or NaN in V: nothing is computed, the fallback takes the product: bf16_gemm) */
    if (!nonfinite && pl.nthreads <= 1) {
        bg_task tk = {.p = &p, .pl = &pl, .kt = kt, .m0 = 0, .m1 = p.M, .n0 = 0, .n1 = p.N, .ws = ws, .v = v};
        run_task_body(&tk);
        nonfinite = tk.nonfinite;
    } else if (!nonfinite) {
        nonfinite = run_parallel(&p, &pl, kt, ws, v);
    }
    if (heap != NULL) ws_release(heap);
    return nonfinite && kt->fallback != NULL ? 1 : 0;
}

/*
 * A batch of products, each too small for threads of its own: the pool's threads claim contiguous
 * runs of the products, and each product runs exactly as a one-thread call would (same path,
 * same bits whichever thread runs it: tests/test_gemm_kernel.py::test_batches_match_single_products).
 */
typedef struct bg_batch_s {
    int64_t M, N, K;
    const unsigned char *a, *b;
    unsigned char *c;
    int64_t a_bs, a_rs, a_cs, b_bs, b_rs, b_cs, c_bs, c_rs, c_cs;
    int c_bf16;
    const bg_kernel *kt;
    int path, transposed;  /* the plan of every product (when plain_path(path): made once) */
    atomic_int rc;         /* the last failure, or 0 */
    int64_t count, grain;  /* products, and products per claim */
    _Atomic int64_t next;  /* the first product not claimed yet */
} bg_batch;

#define BG_BATCH_MAX_THREADS 64

/* One thread's share: runs of `grain` products claimed until none is left, so a thread the OS
 * schedules late takes fewer. */
/* Product i of the batch, untransposed. */
static bg_problem batch_problem(const bg_batch *bt, int64_t i)
{
    return (bg_problem){bt->M, bt->N, bt->K, {bt->a + i * bt->a_bs, bt->a_rs, bt->a_cs},
                        {bt->b + i * bt->b_bs, bt->b_rs, bt->b_cs},
                        {bt->c + i * bt->c_bs, bt->c_rs, bt->c_cs, bt->c_bf16}};
}

/* Product i as a call on nthreads threads would compute it. */
static int batch_product(const bg_batch *bt, int64_t i, int nthreads)
{
    bg_problem p = batch_problem(bt, i);
    if (plain_path(bt->path)) { /* the plan every product of the batch gets, made once */
        if (bt->transposed) transpose_problem(&p);
        run_plain(bt->kt, bt->path, &p);
        return 0;
    }
    return bf16_gemm(p.M, p.N, p.K, p.a.p, p.a.rs, p.a.cs, p.b.p, p.b.rs, p.b.cs, p.c.p, p.c.rs, p.c.cs, p.c.bf16,
                     nthreads);
}

static void batch_thread(bg_batch *bt)
{
    for (;;) {
        int64_t i0 = atomic_fetch_add(&bt->next, bt->grain);
        if (i0 >= bt->count) return;
        for (int64_t i = i0; i < min64(bt->count, i0 + bt->grain); i++) {
            int rc = batch_product(bt, i, 1);
            if (rc < 0) {
                atomic_store(&bt->rc, rc);
                return;
            }
        }
    }
}

int bf16_gemm_batch(int64_t count, int64_t M, int64_t N, int64_t K,
                    const void *A, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                    const void *B, int64_t b_bs, int64_t b_rs, int64_t b_cs,
                    void *C, int64_t c_bs, int64_t c_rs, int64_t c_cs, int c_is_bf16, int nthreads)
{
    if (count <= 0) return 0;
    if (nthreads <= 0) nthreads = bf16_gemm_get_num_threads();
    double flops = 2.0 * (double)M * (double)N * (double)K;
    bg_batch bt = {M, N, K, A, B, C, a_bs, a_rs, a_cs, b_bs, b_rs, b_cs, c_bs, c_rs, c_cs, c_is_bf16 != 0,
                   select_kernel(), PATH_GEMM, 0, 0, count, 1, 0};
    if (M <= 0 || N <= 0 || K <= 0 || flops >= BG_GEMM_MT_FLOPS || count == 1) {
        /* empty products, or products big enough for threads of their own */
        for (int64_t i = 0; i < count; i++) {
            int rc = batch_product(&bt, i, nthreads);
            if (rc < 0) return rc;
        }
        return 0;
    }
    bg_problem p0 = batch_problem(&bt, 0);
    bg_plan pl;
    make_plan(&p0, bt.kt, 1, &pl);
    bt.path = pl.path, bt.transposed = pl.transposed;
    int64_t t = min64(min64(nthreads, count), BG_BATCH_MAX_THREADS);
    t = min64(t, (int64_t)(flops * (double)count / BG_GEMM_MT_FLOPS));
    if (t <= 1) {
        bt.grain = count;
        batch_thread(&bt);
    } else {
        bt.grain = max64(1, count / (8 * t));
        bg_task tasks[BG_BATCH_MAX_THREADS];
        for (int i = 0; i < (int)t; i++) tasks[i] = (bg_task){.batch = &bt};
        run_tasks(tasks, (int)t);
    }
    return atomic_load(&bt.rc);
}

int bf16_gemm_peak(double flops, int nthreads)
{
    const bg_kernel *kt = select_kernel();
    if (kt->peak == NULL || !(flops > 0.0 && flops <= 1e13)) return 1;
    if (nthreads <= 0) nthreads = bf16_gemm_get_num_threads();
    if (nthreads > BG_MAX_THREADS) nthreads = BG_MAX_THREADS;
    bg_task *tasks = (bg_task *)calloc((size_t)nthreads, sizeof(bg_task));
    if (tasks == NULL) return BF16_GEMM_ENOMEM;
    /* each thread its share of the rounds, at least one */
    int64_t iters = (int64_t)(flops / ((double)kt->peak_flops * nthreads)) + 1;
    for (int t = 0; t < nthreads; t++) tasks[t].kt = kt, tasks[t].peak_iters = iters;
    run_tasks(tasks, nthreads);
    free(tasks);
    return 0;
}

int64_t bf16_gemm_workspace_bytes(int64_t M, int64_t N, int64_t K, int nthreads)
{
    if (M <= 0 || N <= 0 || K <= 0) return 0;
    if (K > BF16_GEMM_MAX_DIM || M > BF16_GEMM_MAX_DIM || N > BF16_GEMM_MAX_DIM) return 0;
    if (nthreads <= 0) nthreads = bf16_gemm_get_num_threads();
    if (nthreads > BG_MAX_THREADS) nthreads = BG_MAX_THREADS;
    /* The plan depends on strides only through the path taken; take the largest over the paths
     * (both orientations, direct or tiled output, GEMV of either operand). */
    static const unsigned char dummy[4];
    int64_t best = 0;
    for (int orient = 0; orient < 2; orient++)
        for (int variant = 0; variant < 4; variant++) {
            bg_problem p;
            int64_t m = orient ? N : M, n = orient ? M : N;
            /* variant 0: float32 direct; 1: bf16 output (tiled when K > KC);
             * 2: GEMV with A K-contiguous; 3: GEMV with A M-contiguous. */
            p.M = m, p.N = n, p.K = K;
            p.a = (bg_view){dummy, variant == 3 ? 2 : 2 * K, variant == 3 ? 2 * m : 2};
            p.b = (bg_view){dummy, 2 * n, 2};
            p.c = (bg_out){(unsigned char *)NULL, 4 * n, 4, variant == 1};
            if (variant == 1) p.c.rs = 2 * n, p.c.cs = 2;
            /* the kernel in force, and the one that recomputes products with an inf or NaN */
            for (const bg_kernel *kt = select_kernel(); kt != NULL; kt = kt->fallback) {
                bg_problem q = p;
                bg_plan pl;
                make_plan(&q, kt, nthreads, &pl);
                if (pl.ws_total > best) best = pl.ws_total;
            }
        }
    return best > BG_STACK_BYTES ? best : 0;
}
