/*
 * gemm_internal.h - shared between the driver (gemm.c) and the instruction-set specific kernels.
 * Not part of the public API. The kernel descriptor is in kernel.h.
 */
#ifndef BF16_GEMM_INTERNAL_H
#define BF16_GEMM_INTERNAL_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include "../bf16.h"

/* Bounded float32 tile for outputs that cannot be accumulated in place (bfloat16 or strided C with
 * K > KC): TILE_M x TILE_N floats per thread. */
#ifndef BG_TILE_M
#define BG_TILE_M 1024
#endif
#ifndef BG_TILE_N
#define BG_TILE_N 1024
#endif

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

/* Packing k pairs (BG_PACK_BF16_PAIR, kernel.h): |x| >= BG_NONFINITE in a 16-bit lane is an
 * infinity or a NaN, which kernels with a fallback report. */
#define BG_NONFINITE 0x7f80

static inline uint32_t bg_ld_u16(const unsigned char *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return h;
}

/* The pair word of elements x[0] and x[step] (the first in the low 16 bits, the second 0 when
 * !two), with the running maximum of their |bits| in *mx. */
static inline uint32_t bg_pair_word(const unsigned char *x, int64_t step, int two, uint32_t *mx)
{
    uint32_t lo = bg_ld_u16(x), hi = two ? bg_ld_u16(x + step) : 0;
    uint32_t m = (lo & 0x7fff) > (hi & 0x7fff) ? lo & 0x7fff : hi & 0x7fff;
    if (m > *mx) *mx = m;
    return lo | hi << 16;
}

/* Horizontal sum of 8 lanes in the fixed tree order every GEMV path uses. */
static inline float bg_hsum8(const float *l)
{
    float s0 = l[0] + l[4], s1 = l[1] + l[5], s2 = l[2] + l[6], s3 = l[3] + l[7];
    float t0 = s0 + s2, t1 = s1 + s3;
    return t0 + t1;
}

#endif /* BF16_GEMM_INTERNAL_H */
