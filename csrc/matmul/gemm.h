/*
 * gemm.h - mixed-precision matrix multiplication for bfloat16 operands.
 *
 * Pure C (no Python, no NumPy). Inputs are bfloat16 bit patterns, products and sums are float32,
 * the output is float32 or bfloat16 rounded once. See README.md in this folder for the design.
 */
#ifndef BF16_GEMM_H
#define BF16_GEMM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BF16_GEMM_ENOMEM (-1)
#define BF16_GEMM_ETOOBIG (-2)
#define BF16_GEMM_MAX_DIM (INT64_C(1) << 40)

/* C[M,N] = A[M,K] @ B[K,N]. A and B hold bfloat16 bits (uint16_t). All strides are in BYTES and may be
 * negative or zero (zero = broadcast) or not multiples of 2 (unaligned data: read with memcpy or unaligned loads).
 * Products are exact in float32, sums accumulate in float32. The output is written (overwritten, not added):
 * if c_is_bf16, each element is the float32 accumulator rounded once to bfloat16 (round-nearest-even via f32_to_bf16);
 * otherwise the float32 accumulator itself. K == 0 writes zeros. M == 0 or N == 0 does nothing.
 * nthreads <= 0 means "use bf16_gemm_get_num_threads()". Returns 0; BF16_GEMM_ENOMEM (-1) if the workspace
 * (bf16_gemm_workspace_bytes) could not be allocated; BF16_GEMM_ETOOBIG (-2) if M, N or K exceeds
 * BF16_GEMM_MAX_DIM (no real array is that large; only broadcast views can ask for it). Nothing else can
 * fail, and on failure nothing has been written to C. Must not touch Python; the caller releases the GIL around it. Thread-safe: may be
 * called concurrently from several threads with identical results (results must not depend on thread count
 * either — partition so each output element's summation order is the same whatever the thread count).
 * C must not overlap A or B. */
int bf16_gemm(int64_t M, int64_t N, int64_t K,
              const void *A, int64_t a_rs, int64_t a_cs,
              const void *B, int64_t b_rs, int64_t b_cs,
              void *C, int64_t c_rs, int64_t c_cs, int c_is_bf16, int nthreads);

/* count products C_i = A_i @ B_i (A_i at A + i*a_bs, and so on), as bf16_gemm would compute each;
 * when each product is too small for threads of its own, nthreads threads share the products. */
int bf16_gemm_batch(int64_t count, int64_t M, int64_t N, int64_t K,
                    const void *A, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                    const void *B, int64_t b_bs, int64_t b_rs, int64_t b_cs,
                    void *C, int64_t c_bs, int64_t c_rs, int64_t c_cs, int c_is_bf16, int nthreads);

/* default: env BFLOAT16_DTYPE_NUM_THREADS if set and valid, else number of online CPUs */
int bf16_gemm_get_num_threads(void);
/* n >= 1 (smaller values are ignored); stored atomically */
#define BF16_GEMM_MAX_THREADS 1024 /* the public set_num_threads' limit too */
void bf16_gemm_set_num_threads(int n);
/* upper bound of the extra (heap) memory one call with these arguments allocates, in bytes (the
 * last block, if at most 64 MiB, is kept for the next call) */
int64_t bf16_gemm_workspace_bytes(int64_t M, int64_t N, int64_t K, int nthreads);
/* Run `flops` floating-point operations of the chosen kernel's arithmetic instruction alone (in
 * registers, no memory traffic) on nthreads threads (<= 0: bf16_gemm_get_num_threads()), through
 * the same thread pool as a product: the rate a GEMM of that many flops could reach at most.
 * Returns 0; 1 when the kernel has no such loop (the portable one) or flops is not in (0, 1e13]
 * (1e13 flops take about 20 s on one core); BF16_GEMM_ENOMEM when the thread bookkeeping could not
 * be allocated. Must not touch Python; the caller releases the GIL around it. */
int bf16_gemm_peak(double flops, int nthreads);
/* which kernel runtime dispatch chose, starting with its tier: "avx512: ...", "avx2: ...", "baseline: ..." */
const char *bf16_gemm_kernel_name(void);
/* The kernel the same choice makes for tier `tier` capped at `cap` (bf16_tier values) on an Intel
 * CPU or not, whatever this CPU is (tests). */
const char *bf16_gemm_kernel_name_for(int tier, int intel, int cap);

#ifdef __cplusplus
}
#endif

#endif /* BF16_GEMM_H */
