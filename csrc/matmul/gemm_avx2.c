/*
 * gemm_avx2.c - AVX2/FMA kernels: the 6x16 micro-kernel, bf16->f32 widening packers and the GEMV
 * kernels. Compiled for the baseline target like every other file; each function carries
 * target("avx2,fma") and is only called after runtime dispatch found both features.
 */
#include "kernel.h"

#ifdef BG_HAVE_X86
#include "simd_x86.h"

#define BG_TARGET __attribute__((target("avx2,fma")))
#define BG_INLINE static inline __attribute__((always_inline, target("avx2,fma")))
#define BG_MR 6
#define BG_KC 256 /* k per packed panel (the descriptor's kc) */
#define BG_NR 16

/* ------------------------------------------------------------------------------------------------
 * Micro-kernel: 6 rows x 16 columns, 12 accumulators, one broadcast of A and two loads of B per k.
 * ---------------------------------------------------------------------------------------------- */

/* Four k of the 6x16 block: A advances 96 bytes, B 256. */
#define BG_AVX2_K4 \
        "prefetcht0 384(%[a])\n\t" \
        "vmovaps 0(%[b]), %%ymm12\n\t" \
        "vmovaps 32(%[b]), %%ymm13\n\t" \
        "vbroadcastss 0(%[a]), %%ymm14\n\t" \
        "vfmadd231ps %%ymm12, %%ymm14, %%ymm0\n\t" \
        "vfmadd231ps %%ymm13, %%ymm14, %%ymm1\n\t" \
        "vbroadcastss 4(%[a]), %%ymm15\n\t" \
        "vfmadd231ps %%ymm12, %%ymm15, %%ymm2\n\t" \
        "vfmadd231ps %%ymm13, %%ymm15, %%ymm3\n\t" \
        "vbroadcastss 8(%[a]), %%ymm14\n\t" \
        "vfmadd231ps %%ymm12, %%ymm14, %%ymm4\n\t" \
        "vfmadd231ps %%ymm13, %%ymm14, %%ymm5\n\t" \
        "vbroadcastss 12(%[a]), %%ymm15\n\t" \
        "vfmadd231ps %%ymm12, %%ymm15, %%ymm6\n\t" \
        "vfmadd231ps %%ymm13, %%ymm15, %%ymm7\n\t" \
        "vbroadcastss 16(%[a]), %%ymm14\n\t" \
        "vfmadd231ps %%ymm12, %%ymm14, %%ymm8\n\t" \
        "vfmadd231ps %%ymm13, %%ymm14, %%ymm9\n\t" \
        "vbroadcastss 20(%[a]), %%ymm15\n\t" \
        "vfmadd231ps %%ymm12, %%ymm15, %%ymm10\n\t" \
        "vfmadd231ps %%ymm13, %%ymm15, %%ymm11\n\t" \
        "vmovaps 64(%[b]), %%ymm12\n\t" \
        "vmovaps 96(%[b]), %%ymm13\n\t" \
        "vbroadcastss 24(%[a]), %%ymm14\n\t" \
        "vfmadd231ps %%ymm12, %%ymm14, %%ymm0\n\t" \
        "vfmadd231ps %%ymm13, %%ymm14, %%ymm1\n\t" \
        "vbroadcastss 28(%[a]), %%ymm15\n\t" \
        "vfmadd231ps %%ymm12, %%ymm15, %%ymm2\n\t" \
        "vfmadd231ps %%ymm13, %%ymm15, %%ymm3\n\t" \
        "vbroadcastss 32(%[a]), %%ymm14\n\t" \
        "vfmadd231ps %%ymm12, %%ymm14, %%ymm4\n\t" \
        "vfmadd231ps %%ymm13, %%ymm14, %%ymm5\n\t" \
        "vbroadcastss 36(%[a]), %%ymm15\n\t" \
        "vfmadd231ps %%ymm12, %%ymm15, %%ymm6\n\t" \
        "vfmadd231ps %%ymm13, %%ymm15, %%ymm7\n\t" \
        "vbroadcastss 40(%[a]), %%ymm14\n\t" \
        "vfmadd231ps %%ymm12, %%ymm14, %%ymm8\n\t" \
        "vfmadd231ps %%ymm13, %%ymm14, %%ymm9\n\t" \
        "vbroadcastss 44(%[a]), %%ymm15\n\t" \
        "vfmadd231ps %%ymm12, %%ymm15, %%ymm10\n\t" \
        "vfmadd231ps %%ymm13, %%ymm15, %%ymm11\n\t" \
        "vmovaps 128(%[b]), %%ymm12\n\t" \
        "vmovaps 160(%[b]), %%ymm13\n\t" \
        "vbroadcastss 48(%[a]), %%ymm14\n\t" \
        "vfmadd231ps %%ymm12, %%ymm14, %%ymm0\n\t" \
        "vfmadd231ps %%ymm13, %%ymm14, %%ymm1\n\t" \
        "vbroadcastss 52(%[a]), %%ymm15\n\t" \
        "vfmadd231ps %%ymm12, %%ymm15, %%ymm2\n\t" \
        "vfmadd231ps %%ymm13, %%ymm15, %%ymm3\n\t" \
        "vbroadcastss 56(%[a]), %%ymm14\n\t" \
        "vfmadd231ps %%ymm12, %%ymm14, %%ymm4\n\t" \
        "vfmadd231ps %%ymm13, %%ymm14, %%ymm5\n\t" \
        "vbroadcastss 60(%[a]), %%ymm15\n\t" \
        "vfmadd231ps %%ymm12, %%ymm15, %%ymm6\n\t" \
        "vfmadd231ps %%ymm13, %%ymm15, %%ymm7\n\t" \
        "vbroadcastss 64(%[a]), %%ymm14\n\t" \
        "vfmadd231ps %%ymm12, %%ymm14, %%ymm8\n\t" \
        "vfmadd231ps %%ymm13, %%ymm14, %%ymm9\n\t" \
        "vbroadcastss 68(%[a]), %%ymm15\n\t" \
        "vfmadd231ps %%ymm12, %%ymm15, %%ymm10\n\t" \
        "vfmadd231ps %%ymm13, %%ymm15, %%ymm11\n\t" \
        "vmovaps 192(%[b]), %%ymm12\n\t" \
        "vmovaps 224(%[b]), %%ymm13\n\t" \
        "vbroadcastss 72(%[a]), %%ymm14\n\t" \
        "vfmadd231ps %%ymm12, %%ymm14, %%ymm0\n\t" \
        "vfmadd231ps %%ymm13, %%ymm14, %%ymm1\n\t" \
        "vbroadcastss 76(%[a]), %%ymm15\n\t" \
        "vfmadd231ps %%ymm12, %%ymm15, %%ymm2\n\t" \
        "vfmadd231ps %%ymm13, %%ymm15, %%ymm3\n\t" \
        "vbroadcastss 80(%[a]), %%ymm14\n\t" \
        "vfmadd231ps %%ymm12, %%ymm14, %%ymm4\n\t" \
        "vfmadd231ps %%ymm13, %%ymm14, %%ymm5\n\t" \
        "vbroadcastss 84(%[a]), %%ymm15\n\t" \
        "vfmadd231ps %%ymm12, %%ymm15, %%ymm6\n\t" \
        "vfmadd231ps %%ymm13, %%ymm15, %%ymm7\n\t" \
        "vbroadcastss 88(%[a]), %%ymm14\n\t" \
        "vfmadd231ps %%ymm12, %%ymm14, %%ymm8\n\t" \
        "vfmadd231ps %%ymm13, %%ymm14, %%ymm9\n\t" \
        "vbroadcastss 92(%[a]), %%ymm15\n\t" \
        "vfmadd231ps %%ymm12, %%ymm15, %%ymm10\n\t" \
        "vfmadd231ps %%ymm13, %%ymm15, %%ymm11\n\t" \
        "add $96, %[a]\n\t" \
        "add $256, %[b]\n\t"

#define BG_C_LEAD 8 /* steps of four k between the prefetch of C into L1 and its loads */
/* one row of the C block into L1 (both lines, should the row be unaligned), then the next row */
#define BG_AVX2_PREFETCH_C_ROW \
        "prefetcht0 (%[t])\n\t" \
        "prefetcht0 60(%[t])\n\t" \
        "add %[ldc], %[t]\n\t"

#if defined(__x86_64__)
/* x86-64: the loop is written in assembly so that the 12 accumulators, 2 B vectors and 2 A
 * broadcasts stay in the 16 ymm registers (compilers tend to spill here). */
BG_TARGET static void ukernel_avx2(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                                   int accumulate)
{
    /* C into L2 now, into L1 BG_C_LEAD steps before the end (matmul/README.md, "GEMM") */
    for (int i = 0; i < BG_MR; i++) _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T1);
    uint64_t k4 = (uint64_t)kc / 4, kr = (uint64_t)kc % 4;
    uint64_t k4b = k4 < BG_C_LEAD ? k4 : BG_C_LEAD; /* the last k4b steps run after C's prefetch */
    k4 -= k4b;
    const float *t;
    int64_t ldc_bytes = ldc * 4;
    uint64_t acc = accumulate != 0;
    __asm__ volatile(
        "vxorps %%ymm0, %%ymm0, %%ymm0\n\t"
        "vxorps %%ymm1, %%ymm1, %%ymm1\n\t"
        "vxorps %%ymm2, %%ymm2, %%ymm2\n\t"
        "vxorps %%ymm3, %%ymm3, %%ymm3\n\t"
        "vxorps %%ymm4, %%ymm4, %%ymm4\n\t"
        "vxorps %%ymm5, %%ymm5, %%ymm5\n\t"
        "vxorps %%ymm6, %%ymm6, %%ymm6\n\t"
        "vxorps %%ymm7, %%ymm7, %%ymm7\n\t"
        "vxorps %%ymm8, %%ymm8, %%ymm8\n\t"
        "vxorps %%ymm9, %%ymm9, %%ymm9\n\t"
        "vxorps %%ymm10, %%ymm10, %%ymm10\n\t"
        "vxorps %%ymm11, %%ymm11, %%ymm11\n\t"
        "test %[k4], %[k4]\n\t"
        "jz 8f\n\t"
        ".p2align 5\n"
        "1:\n\t"
        BG_AVX2_K4
        "dec %[k4]\n\t"
        "jnz 1b\n"
        "8:\n\t"
        /* the C block into L1 now, 32 k before its loads: a prefetch at the start is often
         * evicted again while A and B stream through (C rows 4 KiB apart share an L1 set) */
        "mov %[c], %[t]\n\t"
        BG_AVX2_PREFETCH_C_ROW BG_AVX2_PREFETCH_C_ROW BG_AVX2_PREFETCH_C_ROW
        BG_AVX2_PREFETCH_C_ROW BG_AVX2_PREFETCH_C_ROW BG_AVX2_PREFETCH_C_ROW
        "test %[k4b], %[k4b]\n\t"
        "jz 2f\n\t"
        ".p2align 5\n"
        "7:\n\t"
        BG_AVX2_K4
        "dec %[k4b]\n\t"
        "jnz 7b\n"
        "2:\n\t"
        "test %[kr], %[kr]\n\t"
        "jz 4f\n"
        "3:\n\t"
        "vmovaps 0(%[b]), %%ymm12\n\t"
        "vmovaps 32(%[b]), %%ymm13\n\t"
        "vbroadcastss 0(%[a]), %%ymm14\n\t"
        "vfmadd231ps %%ymm12, %%ymm14, %%ymm0\n\t"
        "vfmadd231ps %%ymm13, %%ymm14, %%ymm1\n\t"
        "vbroadcastss 4(%[a]), %%ymm15\n\t"
        "vfmadd231ps %%ymm12, %%ymm15, %%ymm2\n\t"
        "vfmadd231ps %%ymm13, %%ymm15, %%ymm3\n\t"
        "vbroadcastss 8(%[a]), %%ymm14\n\t"
        "vfmadd231ps %%ymm12, %%ymm14, %%ymm4\n\t"
        "vfmadd231ps %%ymm13, %%ymm14, %%ymm5\n\t"
        "vbroadcastss 12(%[a]), %%ymm15\n\t"
        "vfmadd231ps %%ymm12, %%ymm15, %%ymm6\n\t"
        "vfmadd231ps %%ymm13, %%ymm15, %%ymm7\n\t"
        "vbroadcastss 16(%[a]), %%ymm14\n\t"
        "vfmadd231ps %%ymm12, %%ymm14, %%ymm8\n\t"
        "vfmadd231ps %%ymm13, %%ymm14, %%ymm9\n\t"
        "vbroadcastss 20(%[a]), %%ymm15\n\t"
        "vfmadd231ps %%ymm12, %%ymm15, %%ymm10\n\t"
        "vfmadd231ps %%ymm13, %%ymm15, %%ymm11\n\t"
        "add $24, %[a]\n\t"
        "add $64, %[b]\n\t"
        "dec %[kr]\n\t"
        "jnz 3b\n"
        "4:\n\t"
        "test %[acc], %[acc]\n\t"
        "jz 5f\n\t"
        "vaddps (%[c]), %%ymm0, %%ymm0\n\t"
        "vaddps 32(%[c]), %%ymm1, %%ymm1\n\t"
        "vmovups %%ymm0, (%[c])\n\t"
        "vmovups %%ymm1, 32(%[c])\n\t"
        "add %[ldc], %[c]\n\t"
        "vaddps (%[c]), %%ymm2, %%ymm2\n\t"
        "vaddps 32(%[c]), %%ymm3, %%ymm3\n\t"
        "vmovups %%ymm2, (%[c])\n\t"
        "vmovups %%ymm3, 32(%[c])\n\t"
        "add %[ldc], %[c]\n\t"
        "vaddps (%[c]), %%ymm4, %%ymm4\n\t"
        "vaddps 32(%[c]), %%ymm5, %%ymm5\n\t"
        "vmovups %%ymm4, (%[c])\n\t"
        "vmovups %%ymm5, 32(%[c])\n\t"
        "add %[ldc], %[c]\n\t"
        "vaddps (%[c]), %%ymm6, %%ymm6\n\t"
        "vaddps 32(%[c]), %%ymm7, %%ymm7\n\t"
        "vmovups %%ymm6, (%[c])\n\t"
        "vmovups %%ymm7, 32(%[c])\n\t"
        "add %[ldc], %[c]\n\t"
        "vaddps (%[c]), %%ymm8, %%ymm8\n\t"
        "vaddps 32(%[c]), %%ymm9, %%ymm9\n\t"
        "vmovups %%ymm8, (%[c])\n\t"
        "vmovups %%ymm9, 32(%[c])\n\t"
        "add %[ldc], %[c]\n\t"
        "vaddps (%[c]), %%ymm10, %%ymm10\n\t"
        "vaddps 32(%[c]), %%ymm11, %%ymm11\n\t"
        "vmovups %%ymm10, (%[c])\n\t"
        "vmovups %%ymm11, 32(%[c])\n\t"
        "jmp 6f\n"
        "5:\n\t"
        "vmovups %%ymm0, (%[c])\n\t"
        "vmovups %%ymm1, 32(%[c])\n\t"
        "add %[ldc], %[c]\n\t"
        "vmovups %%ymm2, (%[c])\n\t"
        "vmovups %%ymm3, 32(%[c])\n\t"
        "add %[ldc], %[c]\n\t"
        "vmovups %%ymm4, (%[c])\n\t"
        "vmovups %%ymm5, 32(%[c])\n\t"
        "add %[ldc], %[c]\n\t"
        "vmovups %%ymm6, (%[c])\n\t"
        "vmovups %%ymm7, 32(%[c])\n\t"
        "add %[ldc], %[c]\n\t"
        "vmovups %%ymm8, (%[c])\n\t"
        "vmovups %%ymm9, 32(%[c])\n\t"
        "add %[ldc], %[c]\n\t"
        "vmovups %%ymm10, (%[c])\n\t"
        "vmovups %%ymm11, 32(%[c])\n\t"
        "6:\n\t"
        "vzeroupper\n\t"
        : [a] "+r"(a), [b] "+r"(b), [c] "+r"(c), [k4] "+r"(k4), [k4b] "+r"(k4b), [kr] "+r"(kr), [t] "=&r"(t)
        : [ldc] "r"(ldc_bytes), [acc] "r"(acc)
        : "cc", "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
          "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
}
#else
/* 32-bit x86 has 8 ymm registers only: an intrinsics version (the compiler allocates). */
BG_TARGET static void ukernel_avx2(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                                   int accumulate)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
    __m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
    __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
    __m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
    __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
    __m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
    for (int i = 0; i < BG_MR; i++) _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);

#define BG_STEP(k)                                                                                  \
    do {                                                                                            \
        __m256 b0 = _mm256_load_ps(b + (k) * 16), b1 = _mm256_load_ps(b + (k) * 16 + 8);         \
        __m256 av = _mm256_broadcast_ss(a + (k) * 6 + 0);                                          \
        c00 = _mm256_fmadd_ps(av, b0, c00), c01 = _mm256_fmadd_ps(av, b1, c01);                   \
        av = _mm256_broadcast_ss(a + (k) * 6 + 1);                                                 \
        c10 = _mm256_fmadd_ps(av, b0, c10), c11 = _mm256_fmadd_ps(av, b1, c11);                   \
        av = _mm256_broadcast_ss(a + (k) * 6 + 2);                                                 \
        c20 = _mm256_fmadd_ps(av, b0, c20), c21 = _mm256_fmadd_ps(av, b1, c21);                   \
        av = _mm256_broadcast_ss(a + (k) * 6 + 3);                                                 \
        c30 = _mm256_fmadd_ps(av, b0, c30), c31 = _mm256_fmadd_ps(av, b1, c31);                   \
        av = _mm256_broadcast_ss(a + (k) * 6 + 4);                                                 \
        c40 = _mm256_fmadd_ps(av, b0, c40), c41 = _mm256_fmadd_ps(av, b1, c41);                   \
        av = _mm256_broadcast_ss(a + (k) * 6 + 5);                                                 \
        c50 = _mm256_fmadd_ps(av, b0, c50), c51 = _mm256_fmadd_ps(av, b1, c51);                   \
    } while (0)

    int64_t k = 0;
    for (; k + 4 <= kc; k += 4) {
        _mm_prefetch((const char *)(a + 6 * 32), _MM_HINT_T0);
        BG_STEP(0);
        BG_STEP(1);
        BG_STEP(2);
        BG_STEP(3);
        a += 4 * 6;
        b += 4 * 16;
    }
    for (; k < kc; k++) {
        BG_STEP(0);
        a += 6;
        b += 16;
    }
#undef BG_STEP

#define BG_OUT(r, x0, x1)                                                                           \
    do {                                                                                            \
        float *cr = c + (r) * ldc;                                                                  \
        if (accumulate) {                                                                           \
            x0 = _mm256_add_ps(_mm256_loadu_ps(cr), x0);                                            \
            x1 = _mm256_add_ps(_mm256_loadu_ps(cr + 8), x1);                                        \
        }                                                                                           \
        _mm256_storeu_ps(cr, x0);                                                                   \
        _mm256_storeu_ps(cr + 8, x1);                                                               \
    } while (0)
    BG_OUT(0, c00, c01);
    BG_OUT(1, c10, c11);
    BG_OUT(2, c20, c21);
    BG_OUT(3, c30, c31);
    BG_OUT(4, c40, c41);
    BG_OUT(5, c50, c51);
#undef BG_OUT
}
#endif /* __x86_64__ */

/* 8 float32 -> 8 bfloat16, round to nearest even, NaN kept quiet: the same bit formula as
 * bf16_round_bits_rne in bf16.h, eight lanes at a time. */
BG_INLINE __m128i round8_bf16(__m256 x)
{
    __m256i u = _mm256_castps_si256(x);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
    __m256i qnan = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    __m256i isnan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                       _mm256_set1_epi32(0x7f800000));
    r = _mm256_blendv_epi8(r, qnan, isnan);
    /* every lane is in [0, 0xffff]: unsigned saturation keeps it; fix the lane interleave */
    __m256i pk = _mm256_packus_epi32(r, r);
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(pk, 0x08));
}

/*
 * A finite float32 sum of at least BG_F32_ROUNDS_TO_INF (kernel.h) becomes inf when rounded to
 * bfloat16, silently in every
 * rounding here: FE_OVERFLOW for it, as float16's a @ b reports (an inf of the float32 sums
 * raised its flag where it was computed, and an inf operand's inf none). The kernels whose
 * bfloat16 output passes only through here and their own flagged stores then have
 * rounding_flags (kernel.h), and the driver makes no pass over C (gemm.c,
 * flag_rounding_overflow; tests/test_linalg.py::test_rounding_overflow_to_inf_warns_like_float16).
 */
BG_TARGET static void flag_rounding_to_inf(const float *t, int64_t ld, int64_t mr, int64_t nr)
{
    uint32_t over = 0;
    for (int64_t i = 0; i < mr; i++)
        for (int64_t j = 0; j < nr; j++) {
            uint32_t u;
            memcpy(&u, t + i * ld + j, 4);
            u &= 0x7fffffffu;
            over |= (uint32_t)(u - BG_F32_ROUNDS_TO_INF < 0x7f800000u - BG_F32_ROUNDS_TO_INF);
        }
    if (over) feraiseexcept(FE_OVERFLOW);
}

BG_TARGET void bg_write_block_avx2(const bg_out *c, int64_t i0, int64_t j0, const float *t, int64_t ld,
                                       int64_t mr, int64_t nr)
{
    if (c->bf16) flag_rounding_to_inf(t, ld, mr, nr);
    if (c->bf16 && c->cs == 2) {
        for (int64_t i = 0; i < mr; i++) {
            unsigned char *q = c->p + (i0 + i) * c->rs + j0 * 2;
            const float *ti = t + i * ld;
            int64_t j = 0;
            for (; j + 8 <= nr; j += 8) _mm_storeu_si128((__m128i *)(void *)(q + j * 2), round8_bf16(_mm256_loadu_ps(ti + j)));
            for (; j < nr; j++) {
                uint16_t h = f32_to_bf16(ti[j]);
                memcpy(q + j * 2, &h, 2);
            }
        }
    } else if (!c->bf16 && c->cs == 4) {
        for (int64_t i = 0; i < mr; i++) memcpy(c->p + (i0 + i) * c->rs + j0 * 4, t + i * ld, (size_t)nr * 4);
    } else {
        bg_write_block_generic(c, i0, j0, t, ld, mr, nr);
    }
}

/* ------------------------------------------------------------------------------------------------
 * Packing with widening
 * ---------------------------------------------------------------------------------------------- */

/* The complete ku-k blocks (k0 + ku <= K) of the GEMV V packing (kernel.h, bg_gemv_rows_fn), for
 * the columns [0, n8) (n8 a multiple of 8) of a V whose rows are contiguous (cs == 2): eight rows
 * of the same parity are widened and transposed at a time, giving eight consecutive slots of
 * eight columns. The caller packs the other columns and the partial last block element by
 * element; both give the same floats (test_matmul_gemv.py::test_v_packing_layouts_same_bits). */
BG_TARGET void bg_pack_v_rows_avx2(const bg_view *b, int64_t nblocks, int64_t n, int64_t n8, int ku, float *v)
{
    const int half = ku / 2;
    for (int64_t t = 0; t < nblocks; t++) {
        float *d = v + t * n * ku;
        for (int64_t j = 0; j < n8; j += 8)
            for (int l0 = 0; l0 < ku; l0 += 8) { /* slots l0..l0+7 of columns j..j+7 */
                int64_t k = t * ku + (l0 < half ? 2 * l0 : 2 * (l0 - half) + 1);
                __m256 r[8];
                for (int q = 0; q < 8; q++) r[q] = widen8(b->p + (k + 2 * q) * b->rs + j * 2);
                transpose8(r);
                for (int q = 0; q < 8; q++) _mm256_storeu_ps(d + (j + q) * ku + l0, r[q]);
            }
    }
}

BG_TARGET static int pack_a_avx2(const bg_view *a, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float *dst)
{
    if (a->cs != 2) { /* K not contiguous: the generic packer (rows of A are read with stride) */
        bg_pack_a_generic(a, i0, mc, p0, kc, dst, BG_MR);
        return 0;
    }
    /* Rows contiguous in k: widen 8 k of each of 6 rows, transpose 8x8 (two rows unused), store
     * 6 floats per k. */
    /* rows past the end of a last, partial panel read zeros (kc <= BG_KC: the driver cuts k into
     * the kernel's kc blocks) */
    static const unsigned char zero_row[BG_KC * 2] __attribute__((aligned(64)));
    int64_t ir = 0;
    for (; ir < mc; ir += BG_MR) {
        const unsigned char *rp[BG_MR];
        for (int i = 0; i < BG_MR; i++) rp[i] = ir + i < mc ? a->p + (i0 + ir + i) * a->rs + p0 * 2 : zero_row;
        int64_t k = 0;
        for (; k + 8 <= kc; k += 8) {
            __m256 r[8];
            for (int i = 0; i < BG_MR; i++) r[i] = widen8(rp[i] + k * 2);
            r[6] = _mm256_setzero_ps();
            r[7] = _mm256_setzero_ps();
            transpose8(r);
            float *d = dst + k * BG_MR;
            for (int q = 0; q < 8; q++) {
                _mm_storeu_ps(d + q * BG_MR, _mm256_castps256_ps128(r[q]));
                _mm_storel_pi((__m64 *)(void *)(d + q * BG_MR + 4), _mm256_extractf128_ps(r[q], 1));
            }
        }
        for (; k < kc; k++)
            for (int i = 0; i < BG_MR; i++) dst[k * BG_MR + i] = bg_load(rp[i] + k * 2);
        dst += BG_MR * kc;
    }
    return 0;
}

BG_TARGET static int pack_b_avx2(const bg_view *b, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float *dst)
{
    int64_t jr = 0;
    if (b->cs == 2) { /* rows contiguous in j: 16 bf16 per k, widen and store */
        for (; jr + BG_NR <= nc; jr += BG_NR) {
            const unsigned char *src = b->p + p0 * b->rs + (j0 + jr) * 2;
            for (int64_t k = 0; k < kc; k++) {
                const unsigned char *s = src + k * b->rs;
                _mm256_store_ps(dst + k * BG_NR, widen8(s));
                _mm256_store_ps(dst + k * BG_NR + 8, widen8(s + 16));
            }
            dst += BG_NR * kc;
        }
    } else if (b->rs == 2) { /* columns contiguous in k: widen 8 k of 8 columns, transpose */
        for (; jr + BG_NR <= nc; jr += BG_NR) {
            const unsigned char *src = b->p + p0 * 2 + (j0 + jr) * b->cs;
            int64_t k = 0;
            for (; k + 8 <= kc; k += 8) {
                for (int h = 0; h < 2; h++) {
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
 * Order (shared with the portable kernel): each output keeps 8 lane sums; lane l takes the k with
 * (k mod 16) >> 1 == l, in increasing k; then bg_hsum8. That is what one 32-byte load of 16
 * bfloat16 gives with two cheap widenings: x << 16 holds the even k, x & 0xffff0000 the odd k.
 * V is packed to match (see kernel.h, gemv_ku = 16): 16-k block t of column j is 16 floats at
 * v + (t*n + j)*16, even k first, then odd k.
 *
 * Register tile: R rows x C columns of 8-lane accumulators (R*C <= 12), R widened rows and one V
 * vector: at most 16 ymm. k is cut into chunks whose V block (KB x n floats) stays in L1 while a
 * panel of rows is multiplied with it; the accumulators of the panel live in a small buffer between
 * chunks. Every accumulator adds its products in increasing k whatever the blocking, so the result
 * does not depend on the chunking, the panel or the thread split.
 * ---------------------------------------------------------------------------------------------- */

#ifndef BG_ROWS_VBYTES
#define BG_ROWS_VBYTES (16 * 1024) /* V block per k chunk: half of L1 */
#endif
#ifndef BG_ROWS_L2VBYTES
#define BG_ROWS_L2VBYTES (128 * 1024) /* no k chunks when all of V is at most this (in L2) */
#endif
#ifndef BG_ROWS_MAXC
#define BG_ROWS_MAXC 5 /* columns per tile: c = 16 runs as 4 x 4, c = 8 as 2 x 4 (2 x 4 tiles) */
#endif
#ifndef BG_ROWS_VREG
#define BG_ROWS_VREG 1
#endif
#ifndef BG_ROWS_RC
#define BG_ROWS_RC 10 /* accumulators per tile */
#endif
#define BG_ROWS_PANEL 32           /* rows sharing one V block (accumulators: 32 x 16 x 32 B = 16 KB) */

BG_INLINE void rows_tile(const unsigned char *const *rows, int R, const float *v, int64_t vstep, int C,
                         int64_t nb, float *acc, int64_t ldacc, int pf)
{
    __m256 s[4][6];
    for (int r = 0; r < R; r++)
        for (int j = 0; j < C; j++) s[r][j] = _mm256_load_ps(acc + r * ldacc + j * 8);
    const __m256i hi = _mm256_set1_epi32((int)0xffff0000u);
    for (int64_t t = 0; t < nb; t++) {
        __m256i x[4];
        __m256 w[4];
        for (int r = 0; r < R; r++) {
            x[r] = _mm256_loadu_si256((const __m256i *)(const void *)(rows[r] + t * 32));
            w[r] = _mm256_castsi256_ps(_mm256_slli_epi32(x[r], 16));
        }
        if (pf) /* loop invariant, well predicted; one prefetch in two is a new line */
            for (int r = 0; r < R; r++) _mm_prefetch((const char *)(rows[r] + t * 32 + pf), _MM_HINT_T0);
        /* the empty asm keeps vv in a register: one load of V feeds R FMAs (GCC would otherwise
         * fold the load into each FMA, doubling the loads) */
        for (int j = 0; j < C; j++) {
            __m256 vv = _mm256_load_ps(v + j * 16);
            if (BG_ROWS_VREG && R > 1) __asm__("" : "+x"(vv));
            for (int r = 0; r < R; r++) s[r][j] = _mm256_fmadd_ps(w[r], vv, s[r][j]);
        }
        for (int r = 0; r < R; r++) w[r] = _mm256_castsi256_ps(_mm256_and_si256(x[r], hi));
        for (int j = 0; j < C; j++) {
            __m256 vv = _mm256_load_ps(v + j * 16 + 8);
            if (BG_ROWS_VREG && R > 1) __asm__("" : "+x"(vv));
            for (int r = 0; r < R; r++) s[r][j] = _mm256_fmadd_ps(w[r], vv, s[r][j]);
        }
        v += vstep;
    }
    for (int r = 0; r < R; r++)
        for (int j = 0; j < C; j++) _mm256_store_ps(acc + r * ldacc + j * 8, s[r][j]);
}

typedef void (*rows_tile_fn)(const unsigned char *const *, const float *, int64_t, int64_t, float *, int64_t, int);
#define BG_RT(R, C)                                                                                 \
    BG_TARGET static void rows_tile_##R##x##C(const unsigned char *const *rows, const float *v,     \
                                              int64_t vstep, int64_t nb, float *acc, int64_t ldacc, \
                                              int pf)                                               \
    {                                                                                               \
        rows_tile(rows, R, v, vstep, C, nb, acc, ldacc, pf);                                        \
    }
BG_RT(1, 1) BG_RT(1, 2) BG_RT(1, 3) BG_RT(1, 4) BG_RT(1, 5) BG_RT(1, 6)
BG_RT(2, 1) BG_RT(2, 2) BG_RT(2, 3) BG_RT(2, 4) BG_RT(2, 5) BG_RT(2, 6)
BG_RT(3, 1) BG_RT(3, 2) BG_RT(3, 3) BG_RT(3, 4)
BG_RT(4, 1) BG_RT(4, 2) BG_RT(4, 3)
#undef BG_RT
/* [R-1][C-1]; NULL where R*C would not fit the registers */
static const rows_tile_fn rows_tiles[4][6] = {
    {rows_tile_1x1, rows_tile_1x2, rows_tile_1x3, rows_tile_1x4, rows_tile_1x5, rows_tile_1x6},
    {rows_tile_2x1, rows_tile_2x2, rows_tile_2x3, rows_tile_2x4, rows_tile_2x5, rows_tile_2x6},
    {rows_tile_3x1, rows_tile_3x2, rows_tile_3x3, rows_tile_3x4, NULL, NULL},
    {rows_tile_4x1, rows_tile_4x2, rows_tile_4x3, NULL, NULL, NULL},
};


/* The lane sums of the cnt (<= 8) accumulators acc + 8 j: lane j of the result is bg_hsum8(acc + 8 j)
 * bit for bit, for 8 accumulators at once (the others read as zero): each level folds the upper
 * half of every accumulator's remaining lanes onto its lower half (8 -> 4 -> 2 -> 1), the pairs
 * bg_hsum8 adds (tests/test_gemm_kernel.py::test_gemv_sums_in_the_documented_lane_order). */
BG_INLINE __m256 hsum8_many(const float *acc, int cnt)
{
    __m256 v[8], w[4], x[2];
    for (int j = 0; j < 8; j++) v[j] = j < cnt ? _mm256_load_ps(acc + 8 * j) : _mm256_setzero_ps();
    for (int j = 0; j < 4; j++) /* 128-bit halves: 4 lanes of acc 2j, then of 2j + 1 */
        w[j] = _mm256_add_ps(_mm256_permute2f128_ps(v[2 * j], v[2 * j + 1], 0x20),
                             _mm256_permute2f128_ps(v[2 * j], v[2 * j + 1], 0x31));
    for (int j = 0; j < 2; j++) /* half h of x[j]: 2 lanes of acc 4j + h, then of 4j + 2 + h */
        x[j] = _mm256_add_ps(_mm256_shuffle_ps(w[2 * j], w[2 * j + 1], 0x44),
                             _mm256_shuffle_ps(w[2 * j], w[2 * j + 1], 0xEE));
    /* lane 4h + m: the sum of acc 2m + h; lane j takes it from 4 (j mod 2) + j / 2 */
    __m256 z = _mm256_add_ps(_mm256_shuffle_ps(x[0], x[1], 0x88), _mm256_shuffle_ps(x[0], x[1], 0xDD));
    return _mm256_permutevar8x32_ps(z, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

BG_TARGET static int gemv_rows_avx2(const bg_view *a, int64_t i0, int64_t i1, int64_t K, const float *vt,
                                     int64_t kpad, int64_t n, const bg_out *c)
{
    float accbuf[BG_ROWS_PANEL * 16 * 8] __attribute__((aligned(32)));
    unsigned char tail[4][32] __attribute__((aligned(32)));
    /* column groups: ceil(n / 6) groups of nearly equal width (<= 6); rows per tile: 12 / width */
    int ng = (int)((n + BG_ROWS_MAXC - 1) / BG_ROWS_MAXC);
    int cw = (int)((n + ng - 1) / ng);
    int R = BG_ROWS_RC / cw > 4 ? 4 : BG_ROWS_RC / cw;
    int64_t kb = (BG_ROWS_VBYTES / (4 * n)) / 16 * 16; /* k per chunk, multiple of 16 */
    if (kb < 64) kb = 64;
    /* a small V (few columns) is read from L2 for each tile of rows: the rows then stream whole */
    if (kb >= kpad || kpad * n * 4 <= BG_ROWS_L2VBYTES) kb = kpad;
    int64_t panel = kb >= kpad ? R : BG_ROWS_PANEL / R * R; /* one chunk: no reuse of V to arrange */
    const int64_t nfull = K / 16;                            /* complete 16-k blocks of every row */
    const int64_t ld = n * 8;
    for (int64_t p0 = i0; p0 < i1; p0 += panel) {
        int64_t pn = i1 - p0 < panel ? i1 - p0 : panel;
        memset(accbuf, 0, (size_t)(pn * ld) * sizeof(float));
        for (int64_t k0 = 0; k0 < kpad; k0 += kb) {
            int64_t t0 = k0 / 16, t1 = (k0 + kb < kpad ? k0 + kb : kpad) / 16;
            int64_t tf = t1 < nfull ? t1 : nfull; /* blocks [t0, tf) are read in place */
            int pf = (t1 < kpad / 16 && panel > R) ? (int)(kb * 2) : 0;
            for (int64_t r0 = 0; r0 < pn; r0 += R) {
                int rr = (int)(pn - r0 < R ? pn - r0 : R);
                const unsigned char *rows[4];
                for (int r = 0; r < rr; r++) rows[r] = a->p + (p0 + r0 + r) * a->rs + t0 * 32;
                for (int g = 0, j0 = 0; g < ng; g++) {
                    int cj = (int)(n - j0 < cw ? n - j0 : cw);
                    float *ap = accbuf + r0 * ld + j0 * 8;
                    const float *vp = vt + (t0 * n + j0) * 16;
                    if (tf > t0) rows_tiles[rr - 1][cj - 1](rows, vp, n * 16, tf - t0, ap, ld, pf);
                    if (tf < t1) { /* the last, partial block: zero padded copies of the rows */
                        const unsigned char *tr[4];
                        for (int r = 0; r < rr; r++) {
                            memset(tail[r], 0, 32);
                            memcpy(tail[r], a->p + (p0 + r0 + r) * a->rs + nfull * 32, (size_t)(K - nfull * 16) * 2);
                            tr[r] = tail[r];
                        }
                        rows_tiles[rr - 1][cj - 1](tr, vt + (nfull * n + j0) * 16, n * 16, 1, ap, ld, 0);
                    }
                    j0 += cj;
                }
            }
        }
        for (int64_t r = 0; r < pn; r++) {
            float sums[16] __attribute__((aligned(32)));
            for (int64_t j = 0; j < n; j += 8)
                _mm256_store_ps(sums + j, hsum8_many(accbuf + r * ld + j * 8, (int)(n - j < 8 ? n - j : 8)));
            bg_write_block_avx2(c, p0 + r, 0, sums, 16, 1, n);
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------------
 * GEMV, M contiguous: y[i, :] accumulates row k of A times V[k, :] for k = 0, 1, ... in order.
 * A chunk of y stays in L1 while four rows of A stream through it.
 * ---------------------------------------------------------------------------------------------- */

#define BG_COLS_CHUNK 4096 /* floats of y per pass (16 KB, half of L1) */

BG_TARGET void bg_gemv_cols_avx2(const bg_view *a, int64_t i0, int64_t i1, int64_t K, const float *v,
                                     int64_t n, const bg_out *c)
{
    float y[BG_COLS_CHUNK] __attribute__((aligned(32)));
    int64_t w = (BG_COLS_CHUNK / n) / 8 * 8; /* rows of y per pass, multiple of 8 */
    for (int64_t ib = i0; ib < i1; ib += w) {
        int64_t m = i1 - ib < w ? i1 - ib : w;
        int64_t mv = m / 8 * 8; /* vector part; the rest (< 8 rows) is scalar, same order */
        for (int64_t t = 0; t < w * n; t++) y[t] = 0.0f;
        const unsigned char *base = a->p + ib * 2;
        int64_t k = 0;
        for (; k + 4 <= K; k += 4) {
            const unsigned char *r0 = base + k * a->cs, *r1 = r0 + a->cs, *r2 = r1 + a->cs, *r3 = r2 + a->cs;
            const float *vk = v + k * n;
            for (int64_t j = 0; j < n; j++) {
                __m256 v0 = _mm256_broadcast_ss(vk + j), v1 = _mm256_broadcast_ss(vk + n + j);
                __m256 v2 = _mm256_broadcast_ss(vk + 2 * n + j), v3 = _mm256_broadcast_ss(vk + 3 * n + j);
                float *yj = y + j * w;
                for (int64_t i = 0; i < mv; i += 8) {
                    __m256 s = _mm256_load_ps(yj + i);
                    s = _mm256_fmadd_ps(widen8(r0 + i * 2), v0, s);
                    s = _mm256_fmadd_ps(widen8(r1 + i * 2), v1, s);
                    s = _mm256_fmadd_ps(widen8(r2 + i * 2), v2, s);
                    s = _mm256_fmadd_ps(widen8(r3 + i * 2), v3, s);
                    _mm256_store_ps(yj + i, s);
                }
                for (int64_t i = mv; i < m; i++) {
                    float s = yj[i];
                    s += bg_load(r0 + i * 2) * vk[j];
                    s += bg_load(r1 + i * 2) * vk[n + j];
                    s += bg_load(r2 + i * 2) * vk[2 * n + j];
                    s += bg_load(r3 + i * 2) * vk[3 * n + j];
                    yj[i] = s;
                }
            }
        }
        for (; k < K; k++) {
            const unsigned char *r0 = base + k * a->cs;
            const float *vk = v + k * n;
            for (int64_t j = 0; j < n; j++) {
                __m256 v0 = _mm256_broadcast_ss(vk + j);
                float *yj = y + j * w;
                for (int64_t i = 0; i < mv; i += 8)
                    _mm256_store_ps(yj + i, _mm256_fmadd_ps(widen8(r0 + i * 2), v0, _mm256_load_ps(yj + i)));
                for (int64_t i = mv; i < m; i++) yj[i] += bg_load(r0 + i * 2) * vk[j];
            }
        }
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < m; i++) bg_store(c, ib + i, j, y[j * w + i]);
    }
}

/* ------------------------------------------------------------------------------------------------
 * Small products (kernel.h, bg_small_fn): float32 copies on the stack, then R x NV register tiles
 * over the whole k range.
 * ---------------------------------------------------------------------------------------------- */

BG_TARGET void bg_small_widen_b_avx2(const bg_view *b, int64_t K, int64_t N, int64_t ld, float *dst)
{
    int64_t j = 0;
    if (b->cs == 2) { /* rows contiguous in j */
        for (int64_t k = 0; k < K; k++) {
            const unsigned char *s = b->p + k * b->rs;
            float *d = dst + k * ld;
            for (j = 0; j + 8 <= N; j += 8) _mm256_store_ps(d + j, widen8(s + j * 2));
            for (; j < N; j++) d[j] = bg_load(s + j * 2);
        }
        j = N;
    } else if (b->rs == 2) { /* columns contiguous in k: 8 columns x 8 k, transposed */
        for (; j + 8 <= N; j += 8) {
            const unsigned char *s = b->p + j * b->cs;
            int64_t k = 0;
            for (; k + 8 <= K; k += 8) {
                __m256 r[8];
                for (int q = 0; q < 8; q++) r[q] = widen8(s + q * b->cs + k * 2);
                transpose8(r);
                for (int q = 0; q < 8; q++) _mm256_store_ps(dst + (k + q) * ld + j, r[q]);
            }
            for (; k < K; k++)
                for (int q = 0; q < 8; q++) dst[k * ld + j + q] = bg_load(s + q * b->cs + k * 2);
        }
    }
    for (int64_t k = 0; k < K; k++)
        for (int64_t jj = j; jj < N; jj++) dst[k * ld + jj] = bg_load(b->p + k * b->rs + jj * b->cs);
    bg_pad_panel(dst, ld, K, N);
}

BG_TARGET void bg_small_widen_a_avx2(const bg_view *a, int64_t i0, int64_t rows, int64_t R, int64_t K, float *dst)
{
    for (int64_t r = 0; r < rows; r++) {
        const unsigned char *s = a->p + (i0 + r) * a->rs;
        float *d = dst + r * K;
        int64_t k = 0;
        if (a->cs == 2)
            for (; k + 8 <= K; k += 8) _mm256_storeu_ps(d + k, widen8(s + k * 2));
        for (; k < K; k++) d[k] = bg_load(s + k * a->cs);
    }
    for (int64_t r = rows; r < R; r++) memcpy(dst + r * K, dst + (rows - 1) * K, (size_t)K * sizeof(float));
}

/* R rows (A copies af, row stride K) x NV 8-column vectors (B copy bw, row stride ldb) into t (row
 * stride 32). The loops over rows and vectors are unrolled by pragma: GCC 12 otherwise keeps the
 * accumulator array in memory, a store per FMA. */
#define BG_SMALL_TILE(NV, R)                                                                        \
    BG_TARGET static void small_tile_avx2_##NV(int64_t K, const float *af, const float *bw, int64_t ldb, \
                                               float *t)                                            \
    {                                                                                               \
        __m256 s[R][NV];                                                                            \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                         \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) s[r][v] = _mm256_setzero_ps();     \
        for (int64_t k = 0; k < K; k++) {                                                           \
            __m256 bv[NV];                                                                          \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) bv[v] = _mm256_load_ps(bw + k * ldb + 8 * v); \
            _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                   \
                __m256 av = _mm256_set1_ps(af[r * K + k]);                                          \
                _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) s[r][v] = _mm256_fmadd_ps(av, bv[v], s[r][v]); \
            }                                                                                       \
        }                                                                                           \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                         \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) _mm256_store_ps(t + r * 32 + 8 * v, s[r][v]); \
    }
/* rows per tile for NV vectors: 12 accumulators at most (16 ymm registers) */
#define BG_SMALL_ROWS(NV) ((NV) == 1 ? 8 : (NV) == 2 ? 6 : (NV) == 3 ? 4 : 3)
BG_SMALL_TILE(1, 8) BG_SMALL_TILE(2, 6) BG_SMALL_TILE(3, 4) BG_SMALL_TILE(4, 3)
#undef BG_SMALL_TILE

BG_TARGET static int small_avx2(int64_t M, int64_t N, int64_t K, const bg_view *a, const bg_view *b,
                                 const bg_out *c)
{
    static void (*const tiles[4])(int64_t, const float *, const float *, int64_t, float *) = {
        small_tile_avx2_1, small_tile_avx2_2, small_tile_avx2_3, small_tile_avx2_4};
    float bw[BG_SMALL_MAXK * 32] __attribute__((aligned(64)));
    float af[8 * BG_SMALL_MAXK] __attribute__((aligned(64)));
    float t[8 * 32] __attribute__((aligned(64)));
    int nv = (int)((N + 7) / 8);
    int R = BG_SMALL_ROWS(nv);
    bg_small_widen_b_avx2(b, K, N, nv * 8, bw);
    for (int64_t i0 = 0; i0 < M; i0 += R) {
        int64_t rows = M - i0 < R ? M - i0 : R;
        bg_small_widen_a_avx2(a, i0, rows, R, K, af);
        tiles[nv - 1](K, af, bw, nv * 8, t);
        bg_write_block_avx2(c, i0, 0, t, 32, rows, N);
    }
    return 0;
}
#undef BG_SMALL_ROWS

#define BG_FMA8(s, x) _mm256_fmadd_ps(x, x, s)
BG_PEAK_LOOP(peak_avx2, BG_TARGET, __m256, _mm256_setzero_ps(), __m256, _mm256_setzero_ps(), BG_FMA8)
#undef BG_FMA8

const bg_kernel bg_kernel_avx2 = {
    .name = "avx2: AVX2+FMA float32 6x16 (bfloat16 widened while packing)",
    .tier = BF16_TIER_AVX2,
    .mr = BG_MR, .nr = BG_NR, .kc = BG_KC, .mc = 144, .nc = 4096,
    .pack = BG_PACK_F32,
    .gemv_ku = 16,
    .ukernel = ukernel_avx2,
    .rounding_flags = 1,
    .write_block = bg_write_block_avx2,
    .pack_a = pack_a_avx2,
    .pack_b = pack_b_avx2,
    .gemv_rows = gemv_rows_avx2,
    .gemv_cols = bg_gemv_cols_avx2,
    .pack_v_rows = bg_pack_v_rows_avx2,
    .small = small_avx2,
    .small_maxn = 32,
    .fallback = NULL,
    .peak = peak_avx2,
    .peak_flops = BG_PEAK_CHAINS * 16, /* 8 lanes x (multiply + add) per FMA */
};

#endif /* BG_HAVE_X86 */
