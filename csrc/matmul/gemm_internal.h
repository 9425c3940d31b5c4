/*
 * gemm_internal.h - shared between the driver (gemm.c) and the instruction-set specific kernels.
 * Not part of the public API.
 */
#ifndef BF16_GEMM_INTERNAL_H
#define BF16_GEMM_INTERNAL_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include "../bf16.h"

/* Register block of the micro-kernel: MR rows of A times NR columns of B (12 ymm accumulators). */
#define BG_MR 6
#define BG_NR 16
/* Cache blocks (see README.md): a KC x NR panel of B stays in L1, an MC x KC block of A in L2,
 * a KC x NC panel of B in L3. */
#ifndef BG_KC
#define BG_KC 256
#endif
#ifndef BG_MC
#define BG_MC 144
#endif
#ifndef BG_NC
#define BG_NC 4096
#endif
/* Bounded float32 tile for outputs that cannot be accumulated in place (bfloat16 or strided C with
 * K > KC): TILE_M x TILE_N floats per thread. */
#ifndef BG_TILE_M
#define BG_TILE_M 1024
#endif
#ifndef BG_TILE_N
#define BG_TILE_N 1024
#endif
/* GEMV: the vector block is zero padded to a multiple of this many k. */
#define BG_GEMV_KU 16

/* A strided bfloat16 matrix view; element (i, k) lives at p + i*rs + k*cs (bytes). */
typedef struct {
    const unsigned char *p;
    int64_t rs, cs;
} bg_view;

static inline float bg_load(const unsigned char *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return bf16_to_f32(h);
}

/* Output view: element (i, j) at p + i*rs + j*cs, float32 or bfloat16. */
typedef struct {
    unsigned char *p;
    int64_t rs, cs;
    int bf16;
} bg_out;

static inline void bg_store(const bg_out *c, int64_t i, int64_t j, float v)
{
    unsigned char *q = c->p + i * c->rs + j * c->cs;
    if (c->bf16) {
        uint16_t h = f32_to_bf16(v);
        memcpy(q, &h, 2);
    } else {
        memcpy(q, &v, 4);
    }
}

/*
 * Micro-kernel: c[i*ldc + j] (+)= sum_{k<kc} a[k*MR + i] * b[k*NR + j] for i < MR, j < NR.
 * The sum starts at +0 and adds the products in increasing k (every path uses this order, so results
 * do not depend on which path or how many threads ran); accumulate != 0 adds it to the old c.
 */
typedef void (*bg_ukernel_fn)(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                              int accumulate);
/* Pack rows [i0, i0+mc) x k [p0, p0+kc) of A into MR-row panels, zero padded to a multiple of MR. */
typedef void (*bg_pack_a_fn)(const bg_view *a, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float *dst);
/* Pack k [p0, p0+kc) x columns [j0, j0+nc) of B into NR-column panels, zero padded to NR. */
typedef void (*bg_pack_b_fn)(const bg_view *b, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float *dst);
/*
 * GEMV, K contiguous (a->cs == 2): for rows [i0, i1): y(i, j) = dot(A[i, :], V[:, j]) for j < n <= 16.
 * V is float32, zero padded to kpad = K rounded up to KU = 16, packed by 16-k blocks: block t of
 * column j is the 16 floats vt + (t*n + j)*16 = V[16t + 0, 2, ..., 14, 1, 3, ..., 15][j] (even k
 * first). Each output is 8 lane sums (lane l takes the k with (k mod 16) >> 1 == l, in increasing k,
 * padding included) combined by bg_hsum8.
 */
typedef void (*bg_gemv_rows_fn)(const bg_view *a, int64_t i0, int64_t i1, int64_t K, const float *vt,
                                int64_t kpad, int64_t n, const bg_out *c);
/*
 * GEMV, M contiguous (a->rs == 2): for rows [i0, i1): y(i, j) = sum_k A[i, k] * V[k, j] in increasing k,
 * where V[k, j] = v[k*n + j] (float32).
 */
typedef void (*bg_gemv_cols_fn)(const bg_view *a, int64_t i0, int64_t i1, int64_t K, const float *v,
                                int64_t n, const bg_out *c);

/* Write an mr x nr block of float32 values t (row stride ld) to C at (i0, j0), rounding to bfloat16
 * if C is bfloat16. */
typedef void (*bg_write_fn)(const bg_out *c, int64_t i0, int64_t j0, const float *t, int64_t ld,
                            int64_t mr, int64_t nr);

typedef struct {
    const char *name;
    bg_ukernel_fn ukernel;
    bg_write_fn write_block;
    bg_pack_a_fn pack_a;
    bg_pack_b_fn pack_b;
    bg_gemv_rows_fn gemv_rows;
    bg_gemv_cols_fn gemv_cols;
} bg_kernels;

/* Portable implementations (gemm.c); the SIMD kernels fall back to them for uncommon layouts. */
void bg_pack_a_generic(const bg_view *a, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float *dst);
void bg_pack_b_generic(const bg_view *b, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float *dst);
void bg_write_block_generic(const bg_out *c, int64_t i0, int64_t j0, const float *t, int64_t ld,
                            int64_t mr, int64_t nr);
/* Horizontal sum of 8 lanes in the fixed tree order every GEMV path uses. */
static inline float bg_hsum8(const float *l)
{
    float s0 = l[0] + l[4], s1 = l[1] + l[5], s2 = l[2] + l[6], s3 = l[3] + l[7];
    float t0 = s0 + s2, t1 = s1 + s3;
    return t0 + t1;
}

#if defined(__x86_64__) || defined(__i386__)
#define BG_HAVE_X86 1
extern const bg_kernels bg_kernels_avx2;
#endif

#endif /* BF16_GEMM_INTERNAL_H */
