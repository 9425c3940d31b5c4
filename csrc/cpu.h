/*
 * cpu.h - the one CPU probe of the extension. Every kernel family (ufunc loops, conversions,
 * reductions, sort, GEMM/GEMV) asks bf16_cpu_tier() which instruction-set tier it may use.
 *
 * The tier is the highest one the CPU and the operating system support, capped by the
 * environment variable BFLOAT16_DTYPE_ISA=baseline|avx2|avx512|avx512bf16|amx (read once, at import).
 * Pure C, no Python: safe to call from loops that run without the GIL.
 */
#ifndef BF16_CPU_H
#define BF16_CPU_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    BF16_TIER_BASELINE = 0,   /* portable C, whatever the compiler's baseline allows (SSE2 on x86-64) */
    BF16_TIER_AVX2 = 1,       /* AVX2 + FMA (+ F16C) */
    BF16_TIER_AVX512 = 2,     /* AVX-512 F, BW, VL, DQ */
    BF16_TIER_AVX512BF16 = 3, /* AVX-512 tier plus AVX512_BF16 (vdpbf16ps, vcvtne2ps2bf16) */
    BF16_TIER_AMX = 4,        /* avx512bf16 tier plus AMX-TILE and AMX-BF16 (tdpbf16ps), granted by the OS */
    BF16_TIER_COUNT
} bf16_tier;

/* Probe once (idempotent; called from module init while the GIL is held). Returns 0, or -1
 * when BFLOAT16_DTYPE_ISA holds an unknown name (nothing is set in Python: the caller raises,
 * with bf16_cpu_env_value() naming the bad value). */
int bf16_cpu_init(void);

/* The tier in force: min(detected, cap). Baseline until bf16_cpu_init() has run. */
bf16_tier bf16_cpu_tier(void);
/* The highest tier this CPU and OS support, ignoring the cap. */
bf16_tier bf16_cpu_detected(void);
/* The cap from BFLOAT16_DTYPE_ISA, or BF16_TIER_COUNT - 1 when it is unset. */
bf16_tier bf16_cpu_cap(void);
/* The raw BFLOAT16_DTYPE_ISA value seen at init ("" when unset). */
const char *bf16_cpu_env_value(void);
/* "baseline", "avx2", "avx512", "avx512bf16", "amx". */
const char *bf16_tier_name(bf16_tier t);
/* The tier of that name, or -1 when none has it. */
int bf16_tier_from_name(const char *name);
/* Why the detected tier stops where it does, e.g. "CPU lacks avx512_bf16". */
const char *bf16_cpu_detect_reason(void);
/* Whether the CPU has AVX512_VBMI (byte permutes) besides a usable avx512 tier: the ufunc loops
 * run their avx512bf16 tier only with it (umath/registry.cpp). */
int bf16_cpu_has_vbmi(void);
/* Whether CPUID names the vendor GenuineIntel (the matmul's kernel choice, csrc/matmul/gemm.c). */
int bf16_cpu_is_intel(void);
/* The level-1 data cache's associativity from CPUID (0: not reported): W @ V's rows per tile at
 * the avx512bf16 tier (csrc/matmul/gemm_avx512bf16.c). */
int bf16_cpu_l1d_ways(void);
/* Replace it (tests: both tile heights on one CPU); returns the previous value. */
int bf16_cpu_set_l1d_ways(int ways);

#ifdef __cplusplus
}
#endif

#endif
