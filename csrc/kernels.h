/*
 * kernels.h - bulk loops over bfloat16 arrays: conversions, float32-accumulating reductions,
 * sorting, argmax/argmin, count_nonzero.
 *
 * Pure C (no Python, no NumPy). Lengths are element counts; strides are in BYTES and may be
 * negative; data pointers may be unaligned (every access goes through memcpy-style loads).
 * Source and destination buffers must not overlap unless the function says otherwise.
 *
 * Implemented in csrc/kernels/ (convert.c, reduce.c, argext.c, sort.c; dispatch.c holds one
 * table per tier). Every value conversion follows bf16.h, so rounding has a single definition.
 * SIMD code is picked at run time from bf16_cpu_tier(): call bf16_kernels_init() once (the
 * module does it at import) before the first use; without it the portable code runs.
 * All functions are thread-safe: they keep no mutable state besides the dispatch table written
 * by bf16_kernels_init().
 */
#ifndef BF16_KERNELS_H
#define BF16_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Choose the SIMD implementations for this CPU. Idempotent; call once before threads start. */
void bf16_kernels_init(void);

/* Name of the tier in use ("baseline", "avx2", ...), for diagnostics and tests. */
const char *bf16_kernels_isa(void);

/* Memory for a large work buffer, released with free(): from 4 MiB on 2 MiB-aligned and advised
 * to use transparent huge pages (Linux; as NumPy does for its large arrays), which spares a page
 * fault per 4 KiB of fresh memory (the sort's radix buffers, the reductions' float32 windows:
 * kernels/sort.c, umath/reduce_acc.cpp). NULL without memory. */
void *bf16_alloc_huge(size_t bytes);

/*
 * float32 -> bfloat16, round to nearest even, NaN kept quiet with its sign. Sets *overflow to 1
 * when some finite float32 rounded to +-inf; otherwise leaves it alone (overflow may be NULL).
 */
void bf16_from_f32_array(const void *src, ptrdiff_t src_stride, void *dst, ptrdiff_t dst_stride,
                         ptrdiff_t n, int *overflow);

/*
 * float64 -> bfloat16 with a single rounding (nearest even; NaN -> quiet NaN with its sign).
 * Raises no FPU flag itself: sets *overflow to 1 when some finite value rounded to +-inf and
 * *underflow to 1 when some 0 < |value| < 2^-126 did not convert exactly (numpy's float16
 * rule); leaves them alone otherwise (either may be NULL).
 */
void bf16_from_f64_array(const void *src, ptrdiff_t src_stride, void *dst, ptrdiff_t dst_stride,
                         ptrdiff_t n, int *overflow, int *underflow);

/* int64 (int32) values at a byte stride as float32, for the integer casts' blocks: returns 1
 * when every |value| <= 2^24, where the float32 are exact (else the float32 are unspecified). */
int bf16_i64_as_f32(const void *src, ptrdiff_t stride, float *dst, ptrdiff_t n);
int bf16_i32_as_f32(const void *src, ptrdiff_t stride, float *dst, ptrdiff_t n);

/* bfloat16 -> float32 (exact). */
void bf16_to_f32_array(const void *src, ptrdiff_t src_stride, void *dst, ptrdiff_t dst_stride,
                       ptrdiff_t n);

/* IEEE float16 bits -> bfloat16, rounded once (float16 widens exactly); contiguous. */
void bf16_from_f16_array(const void *src, void *dst, ptrdiff_t n);

/* bfloat16 -> IEEE float16 bits, rounded once; sets *overflow to 1 when a finite value became
 * inf, *underflow to 1 when a value below float16's normals was inexact (either may be NULL);
 * contiguous. */
void bf16_to_f16_array(const void *src, void *dst, ptrdiff_t n, int *overflow, int *underflow);

/* bfloat16 -> float64 (exact). */
void bf16_to_f64_array(const void *src, ptrdiff_t src_stride, void *dst, ptrdiff_t dst_stride,
                       ptrdiff_t n);

/*
 * Sum of n bfloat16 values accumulated in float32 with pairwise (cascade) summation: the error
 * bound grows like O(log n) * eps_f32, as for numpy's float32 sum. n <= 0 gives 0.0f.
 */
float bf16_sum_f32(const void *src, ptrdiff_t stride, ptrdiff_t n);

/* out[i] = a[i] + b[i] in float32: a and out contiguous float32 (out may be a, or must not
 * overlap it), b contiguous bfloat16. */
void bf16_add_to_f32(const void *a, const void *b, void *out, ptrdiff_t n);

/* Same, accumulated in float64. */
double bf16_sum_f64(const void *src, ptrdiff_t stride, ptrdiff_t n);

/* Product accumulated in float32 (several interleaved partial products). n <= 0 gives 1.0f. */
float bf16_prod_f32(const void *src, ptrdiff_t stride, ptrdiff_t n);

/*
 * In-place ascending sort of n contiguous bfloat16 values, numpy order: NaNs last, -0.0 and
 * +0.0 compare equal. The multiset of bit patterns is preserved (NaN payloads included).
 * bf16_sort_values may put -0.0 before +0.0 regardless of input order.
 * bf16_sort_values_stable additionally keeps the input order of equal-comparing but
 * distinguishable patterns: the zeros (-0.0/+0.0) and the NaNs (sign/payload).
 * Both fall back to an in-place O(n log n) sort if a work buffer cannot be allocated.
 */
void bf16_sort_values(void *data, ptrdiff_t n);
void bf16_sort_values_stable(void *data, ptrdiff_t n);

/*
 * Stable argsort: reorders idx[0..n) so that data[idx[i]] is ascending in numpy order (NaNs
 * last and equal to one another, -0.0 == +0.0); entries with equal keys keep their order in idx.
 * data is contiguous; idx entries must index into it. Returns 0, or -1 if a work buffer could
 * not be allocated (idx is then left unchanged).
 */
int bf16_argsort_stable(const void *data, int64_t *idx, ptrdiff_t n);

/*
 * numpy argmax/argmin over n >= 1 contiguous values: the index of the first NaN if there is
 * one, else the first occurrence of the maximum (minimum); -0.0 and +0.0 are equal.
 * n <= 0 returns -1.
 */
ptrdiff_t bf16_argmax(const void *data, ptrdiff_t n);
ptrdiff_t bf16_argmin(const void *data, ptrdiff_t n);

/* Number of elements that are not +-0.0 (NaN counts as nonzero). */
int64_t bf16_count_nonzero(const void *data, ptrdiff_t stride, ptrdiff_t n);

#ifdef __cplusplus
}
#endif

#endif /* BF16_KERNELS_H */
