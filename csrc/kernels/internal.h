/*
 * kernels/internal.h - shared by the bulk-kernel files (convert.c, reduce.c, argext.c, sort.c,
 * dispatch.c); not part of the public interface, which is csrc/kernels.h.
 *
 * A tier is one bf16k_table: every contiguous kernel that has a per-tier version. Each concern
 * file defines its kernels for each tier (a generic body compiled under a target attribute, or
 * intrinsics where the compiler's vectorisation falls short); dispatch.c assembles the tables
 * and picks one from bf16_cpu_tier() at import.
 */
#ifndef BF16_KERNELS_INTERNAL_H
#define BF16_KERNELS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define BF16K_X86 1
#define KTARGET_AVX2 __attribute__((target("avx2,fma")))
#define KTARGET_AVX512 __attribute__((target("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq")))
/* AVX512_BF16 intrinsics need GCC 10 or clang 9; older compilers build without that tier's
 * kernels (the tier then runs the avx512 table). */
#if (defined(__clang__) && __clang_major__ >= 9) || (!defined(__clang__) && __GNUC__ >= 10)
#define BF16K_AVX512BF16 1
#define KTARGET_AVX512BF16 \
    __attribute__((target("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))
#endif
#endif

#if defined(__GNUC__) || defined(__clang__)
#define KINLINE static inline __attribute__((always_inline))
#else
#define KINLINE static inline
#endif

/* unaligned loads and stores, no type punning */
KINLINE uint16_t ld16(const char *p) { uint16_t v; memcpy(&v, p, 2); return v; }
KINLINE void st16(char *p, uint16_t v) { memcpy(p, &v, 2); }
KINLINE uint32_t ld32(const char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
KINLINE void stf(char *p, float v) { memcpy(p, &v, 4); }

/* Contiguous kernels of one tier. Pointers may be unaligned; n >= 1. */
typedef struct {
    const char *name;
    int (*from_f32)(const char *src, char *dst, ptrdiff_t n);  /* returns 1 on overflow */
    void (*to_f32)(const char *src, char *dst, ptrdiff_t n);
    /* bit 0: a finite value overflowed to inf; bit 1: a tiny result was inexact (underflow) */
    int (*from_f64)(const char *src, char *dst, ptrdiff_t n);
    void (*to_f64)(const char *src, char *dst, ptrdiff_t n);
    void (*from_f16)(const char *src, char *dst, ptrdiff_t n);
    int (*to_f16)(const char *src, char *dst, ptrdiff_t n);   /* returns the bits of from_f64 */
    float (*sum32)(const char *src, ptrdiff_t n);
    double (*sum64)(const char *src, ptrdiff_t n);
    float (*prod32)(const char *src, ptrdiff_t stride, ptrdiff_t n);
    int64_t (*cnz)(const char *src, ptrdiff_t n);
    ptrdiff_t (*argmax)(const char *src, ptrdiff_t n);
    ptrdiff_t (*argmin)(const char *src, ptrdiff_t n);
    /* contiguous int64 / int32 -> float32; 1 when every |value| <= 2^24 (then exact) */
    int (*i64_as_f32)(const char *src, ptrdiff_t ss, float *dst, ptrdiff_t n);
    int (*i32_as_f32)(const char *src, ptrdiff_t ss, float *dst, ptrdiff_t n);
    /* float32 a[i] + bfloat16 b[i] -> float32 o[i] (o may be a) */
    void (*add_to_f32)(const char *a, const char *b, char *o, ptrdiff_t n);
} bf16k_table;

/* The table in force (baseline until bf16_kernels_init() has run). */
const bf16k_table *bf16k_table_get(void);

/* convert.c */
int bf16k_from_f32_baseline(const char *s, char *d, ptrdiff_t n);
void bf16k_to_f32_baseline(const char *s, char *d, ptrdiff_t n);
int bf16k_from_f64_baseline(const char *s, char *d, ptrdiff_t n);
void bf16k_to_f64_baseline(const char *s, char *d, ptrdiff_t n);
void bf16k_from_f16_baseline(const char *s, char *d, ptrdiff_t n);
int bf16k_to_f16_baseline(const char *s, char *d, ptrdiff_t n);
int bf16k_i64_as_f32_baseline(const char *s, ptrdiff_t ss, float *d, ptrdiff_t n);
int bf16k_i32_as_f32_baseline(const char *s, ptrdiff_t ss, float *d, ptrdiff_t n);

/* reduce.c */
float bf16k_sum32_baseline(const char *s, ptrdiff_t n);
double bf16k_sum64_baseline(const char *s, ptrdiff_t n);
float bf16k_prod32_baseline(const char *s, ptrdiff_t ss, ptrdiff_t n);
int64_t bf16k_cnz_baseline(const char *s, ptrdiff_t n);
void bf16k_add_to_f32_baseline(const char *a, const char *b, char *o, ptrdiff_t n);

/* argext.c */
ptrdiff_t bf16k_argmax_baseline(const char *s, ptrdiff_t n);
ptrdiff_t bf16k_argmin_baseline(const char *s, ptrdiff_t n);

#if defined(BF16K_X86)
int bf16k_from_f32_avx2(const char *s, char *d, ptrdiff_t n);
void bf16k_to_f32_avx2(const char *s, char *d, ptrdiff_t n);
int bf16k_from_f64_avx2(const char *s, char *d, ptrdiff_t n);
void bf16k_to_f64_avx2(const char *s, char *d, ptrdiff_t n);
void bf16k_from_f16_avx2(const char *s, char *d, ptrdiff_t n);
int bf16k_to_f16_avx2(const char *s, char *d, ptrdiff_t n);
int bf16k_i64_as_f32_avx2(const char *s, ptrdiff_t ss, float *d, ptrdiff_t n);
int bf16k_i32_as_f32_avx2(const char *s, ptrdiff_t ss, float *d, ptrdiff_t n);
float bf16k_sum32_avx2(const char *s, ptrdiff_t n);
double bf16k_sum64_avx2(const char *s, ptrdiff_t n);
float bf16k_prod32_avx2(const char *s, ptrdiff_t ss, ptrdiff_t n);
int64_t bf16k_cnz_avx2(const char *s, ptrdiff_t n);
void bf16k_add_to_f32_avx2(const char *a, const char *b, char *o, ptrdiff_t n);
ptrdiff_t bf16k_argmax_avx2(const char *s, ptrdiff_t n);
ptrdiff_t bf16k_argmin_avx2(const char *s, ptrdiff_t n);

int bf16k_from_f32_avx512(const char *s, char *d, ptrdiff_t n);
void bf16k_to_f32_avx512(const char *s, char *d, ptrdiff_t n);
int bf16k_from_f64_avx512(const char *s, char *d, ptrdiff_t n);
int bf16k_i64_as_f32_avx512(const char *s, ptrdiff_t ss, float *d, ptrdiff_t n);
int bf16k_i32_as_f32_avx512(const char *s, ptrdiff_t ss, float *d, ptrdiff_t n);
float bf16k_sum32_avx512(const char *s, ptrdiff_t n);
double bf16k_sum64_avx512(const char *s, ptrdiff_t n);
float bf16k_prod32_avx512(const char *s, ptrdiff_t ss, ptrdiff_t n);
int64_t bf16k_cnz_avx512(const char *s, ptrdiff_t n);
void bf16k_add_to_f32_avx512(const char *a, const char *b, char *o, ptrdiff_t n);
ptrdiff_t bf16k_argmax_avx512(const char *s, ptrdiff_t n);
ptrdiff_t bf16k_argmin_avx512(const char *s, ptrdiff_t n);
#endif

#if defined(BF16K_AVX512BF16)
int bf16k_from_f32_avx512bf16(const char *s, char *d, ptrdiff_t n);
#endif

#define BF16K_OVERFLOW 1
#define BF16K_UNDERFLOW 2

#endif /* BF16_KERNELS_INTERNAL_H */
