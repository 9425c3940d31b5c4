/*
 * kernels/dispatch.c - one kernel table per instruction-set tier; bf16_kernels_init() picks the
 * table for bf16_cpu_tier() (csrc/cpu.h). A new tier is its kernels plus one table here.
 */
#include "kernels.h"
#include "kernels/internal.h"
#include "cpu.h"

static const bf16k_table table_baseline = {
    "baseline",
    bf16k_from_f32_baseline, bf16k_to_f32_baseline, bf16k_from_f64_baseline, bf16k_to_f64_baseline,
    bf16k_from_f16_baseline, bf16k_to_f16_baseline,
    bf16k_sum32_baseline, bf16k_sum64_baseline, bf16k_prod32_baseline, bf16k_cnz_baseline,
    bf16k_argmax_baseline, bf16k_argmin_baseline,
    bf16k_i64_as_f32_baseline, bf16k_i32_as_f32_baseline,
    bf16k_add_to_f32_baseline,
};

#if defined(BF16K_X86)
static const bf16k_table table_avx2 = {
    "avx2",
    bf16k_from_f32_avx2, bf16k_to_f32_avx2, bf16k_from_f64_avx2, bf16k_to_f64_avx2,
    bf16k_from_f16_avx2, bf16k_to_f16_avx2,
    bf16k_sum32_avx2, bf16k_sum64_avx2, bf16k_prod32_avx2, bf16k_cnz_avx2,
    bf16k_argmax_avx2, bf16k_argmin_avx2,
    bf16k_i64_as_f32_avx2, bf16k_i32_as_f32_avx2,
    bf16k_add_to_f32_avx2,
};

/* the AVX-512 tiers take the avx2 kernels where they have none of their own (F16C and the
 * float64 widening: 256-bit code the AVX-512 CPUs run as well) */
static const bf16k_table table_avx512 = {
    "avx512",
    bf16k_from_f32_avx512, bf16k_to_f32_avx512, bf16k_from_f64_avx512, bf16k_to_f64_avx2,
    bf16k_from_f16_avx2, bf16k_to_f16_avx2,
    bf16k_sum32_avx512, bf16k_sum64_avx512, bf16k_prod32_avx512, bf16k_cnz_avx512,
    bf16k_argmax_avx512, bf16k_argmin_avx512,
    bf16k_i64_as_f32_avx512, bf16k_i32_as_f32_avx512,
    bf16k_add_to_f32_avx512,
};
#endif

#if defined(BF16K_AVX512BF16)
/* the avx512 table with the float32 -> bfloat16 conversion of AVX512_BF16; the other kernels of
 * this tier are the avx512 ones */
static const bf16k_table table_avx512bf16 = {
    "avx512bf16",
    bf16k_from_f32_avx512bf16, bf16k_to_f32_avx512, bf16k_from_f64_avx512, bf16k_to_f64_avx2,
    bf16k_from_f16_avx2, bf16k_to_f16_avx2,
    bf16k_sum32_avx512, bf16k_sum64_avx512, bf16k_prod32_avx512, bf16k_cnz_avx512,
    bf16k_argmax_avx512, bf16k_argmin_avx512,
    bf16k_i64_as_f32_avx512, bf16k_i32_as_f32_avx512,
    bf16k_add_to_f32_avx512,
};
#endif

static const bf16k_table *g_table = &table_baseline;

const bf16k_table *bf16k_table_get(void)
{
#if defined(__GNUC__) || defined(__clang__)
    return __atomic_load_n(&g_table, __ATOMIC_ACQUIRE);
#else
    return g_table;
#endif
}

void bf16_kernels_init(void)
{
    const bf16k_table *t = &table_baseline;
#if defined(BF16K_X86)
    bf16_tier tier = bf16_cpu_tier();
#if defined(BF16K_AVX512BF16)
    if (tier >= BF16_TIER_AVX512BF16) t = &table_avx512bf16;
    else
#endif
    if (tier >= BF16_TIER_AVX512) t = &table_avx512;
    else if (tier >= BF16_TIER_AVX2) t = &table_avx2;
#endif
#if defined(__GNUC__) || defined(__clang__)
    __atomic_store_n(&g_table, t, __ATOMIC_RELEASE);
#else
    g_table = t;
#endif
}

const char *bf16_kernels_isa(void) { return bf16k_table_get()->name; }
