/*
 * cpu.c - CPUID/XGETBV probe for the tiers in cpu.h, and the BFLOAT16_DTYPE_ISA cap.
 *
 * A tier needs both the instructions (CPUID) and the operating system saving their registers
 * (XCR0 via XGETBV): a CPU with AVX-512 under an OS that does not save ZMM state must not use it.
 */
#include "cpu.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
#define BF16_CPU_X86 1
#include <cpuid.h>
#endif
#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#define BF16_ARCH_REQ_XCOMP_PERM 0x1023 /* asm/prctl.h */
#define BF16_XFEATURE_XTILEDATA 18
#endif

static bf16_tier g_detected = BF16_TIER_BASELINE;
static bf16_tier g_cap = (bf16_tier)(BF16_TIER_COUNT - 1);
static bf16_tier g_tier = BF16_TIER_BASELINE;
static const char *g_reason = "not probed";
static char g_env[128] = "";
static int g_vbmi = 0;
static int g_intel = 0;
static int g_l1d_ways = 0;

static const char *const tier_names[BF16_TIER_COUNT] = {"baseline", "avx2", "avx512", "avx512bf16", "amx"};

const char *bf16_tier_name(bf16_tier t)
{
    return (t >= 0 && t < BF16_TIER_COUNT) ? tier_names[t] : "unknown";
}

int bf16_tier_from_name(const char *name)
{
    for (int t = 0; t < BF16_TIER_COUNT; t++)
        if (strcmp(name, tier_names[t]) == 0) return t;
    return -1;
}

#ifdef BF16_CPU_X86
static unsigned long long read_xcr0(void)
{
    unsigned int lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

/* CPUID leaf 0's vendor string: "GenuineIntel" in EBX, EDX, ECX. */
static int probe_intel(void)
{
    unsigned int a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return 0;
    char v[12];
    memcpy(v, &b, 4);
    memcpy(v + 4, &d, 4);
    memcpy(v + 8, &c, 4);
    return memcmp(v, "GenuineIntel", 12) == 0;
}

/* The level-1 data cache's associativity, 0 when CPUID does not say: the deterministic cache
 * parameters (leaf 4 on Intel, 0x8000001D on AMD with topology extensions; ways = EBX[31:22] + 1),
 * else AMD's leaf 0x80000005 (ECX[23:16]; 0xFF: fully associative). */
static int probe_l1d_ways(int intel)
{
    unsigned int a, b, c, d;
    unsigned int leaf = 4;
    if (!intel) {
        leaf = 0;
        if (__get_cpuid(0x80000001u, &a, &b, &c, &d) && ((c >> 22) & 1) &&
                (unsigned int)__get_cpuid_max(0x80000000u, NULL) >= 0x8000001Du)
            leaf = 0x8000001Du;
    } else if (__get_cpuid_max(0, NULL) < 4) {
        leaf = 0;
    }
    for (unsigned int i = 0; leaf != 0 && i < 16; i++) {
        __cpuid_count(leaf, i, a, b, c, d);
        const unsigned int type = a & 0x1f, level = (a >> 5) & 7;
        if (type == 0) break;
        if (level == 1 && type == 1) return (int)(b >> 22) + 1;
    }
    if (!intel && (unsigned int)__get_cpuid_max(0x80000000u, NULL) >= 0x80000005u &&
            __get_cpuid(0x80000005u, &a, &b, &c, &d)) {
        const unsigned int ways = (c >> 16) & 0xff;
        return ways == 0xff ? 64 : (int)ways;
    }
    return 0;
}

static bf16_tier probe(const char **reason)
{
    unsigned int a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) {
        *reason = "CPUID leaf 1 unavailable";
        return BF16_TIER_BASELINE;
    }
    const int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, fma = (c >> 12) & 1, f16c = (c >> 29) & 1;
    if (!osxsave || !avx) {
        *reason = "CPU or OS lacks AVX";
        return BF16_TIER_BASELINE;
    }
    const unsigned long long xcr0 = read_xcr0();
    if ((xcr0 & 0x6) != 0x6) {
        *reason = "OS does not save YMM registers";
        return BF16_TIER_BASELINE;
    }
    if (__get_cpuid_max(0, NULL) < 7) {
        *reason = "CPUID leaf 7 unavailable";
        return BF16_TIER_BASELINE;
    }
    __cpuid_count(7, 0, a, b, c, d);
    const int avx2 = (b >> 5) & 1;
    g_vbmi = (c >> 1) & 1; /* AVX512_VBMI: counted only where the avx512 tier is usable */
    if (!avx2 || !fma || !f16c) {
        *reason = "CPU lacks avx2/fma/f16c";
        return BF16_TIER_BASELINE;
    }
    const int avx512f = (b >> 16) & 1, avx512dq = (b >> 17) & 1, avx512bw = (b >> 30) & 1,
              avx512vl = (b >> 31) & 1;
    if (!(avx512f && avx512dq && avx512bw && avx512vl)) {
        *reason = "CPU lacks avx512f/bw/vl/dq";
        return BF16_TIER_AVX2;
    }
    if ((xcr0 & 0xE0) != 0xE0) {
        *reason = "OS does not save ZMM/opmask registers";
        return BF16_TIER_AVX2;
    }
    unsigned int a1, b1, c1, d1;
    __cpuid_count(7, 1, a1, b1, c1, d1);
    if (!((a1 >> 5) & 1)) {
        *reason = "CPU lacks avx512_bf16";
        return BF16_TIER_AVX512;
    }
#ifdef BG_AMX_EMULATE
    /* a test build whose AMX kernel runs on a C model of the tiles (csrc/matmul/gemm_amx.c) */
    *reason = "CPU has every tier (AMX emulated: test build)";
    return BF16_TIER_AMX;
#else
    /* AMX: CPUID.(7,0):EDX bit 24 (AMX-TILE) and 22 (AMX-BF16), XCR0 bits 17-18 (tile
     * configuration and data saved by the OS), and on Linux the process's permission to use
     * the tile data (arch_prctl ARCH_REQ_XCOMP_PERM; refused by kernels before 5.16) */
    if (!((d >> 24) & 1) || !((d >> 22) & 1)) {
        *reason = "CPU lacks amx_tile/amx_bf16";
        return BF16_TIER_AVX512BF16;
    }
    if ((xcr0 & 0x60000) != 0x60000) {
        *reason = "OS does not save AMX tile registers";
        return BF16_TIER_AVX512BF16;
    }
#if defined(BF16_ARCH_REQ_XCOMP_PERM)
    if (syscall(SYS_arch_prctl, BF16_ARCH_REQ_XCOMP_PERM, BF16_XFEATURE_XTILEDATA) != 0) {
        *reason = "OS refused AMX tile data to this process (arch_prctl)";
        return BF16_TIER_AVX512BF16;
    }
    *reason = "CPU has every tier";
    return BF16_TIER_AMX;
#else
    *reason = "AMX use is only requested from Linux";
    return BF16_TIER_AVX512BF16;
#endif
#endif
}
#else
static int probe_intel(void) { return 0; }
static int probe_l1d_ways(int intel) { (void)intel; return 0; }

static bf16_tier probe(const char **reason)
{
    *reason = "not an x86-64 CPU: only the portable kernels are built";
    return BF16_TIER_BASELINE;
}
#endif

int bf16_cpu_init(void)
{
    g_vbmi = 0;
    g_intel = probe_intel();
    g_l1d_ways = probe_l1d_ways(g_intel);
    g_detected = probe(&g_reason);
    if (g_detected < BF16_TIER_AVX512) {
        g_vbmi = 0;
    }
    g_cap = (bf16_tier)(BF16_TIER_COUNT - 1);
    g_env[0] = '\0';
    const char *env = getenv("BFLOAT16_DTYPE_ISA");
    int ok = 1;
    if (env != NULL && env[0] != '\0') {
        /* as given, or its start and "..." when longer than the buffer (a name is short) */
        size_t n = strlen(env);
        if (n < sizeof g_env) {
            memcpy(g_env, env, n + 1);
        } else {
            memcpy(g_env, env, sizeof g_env - 4);
            memcpy(g_env + sizeof g_env - 4, "...", 4);
        }
        int t = bf16_tier_from_name(env);
        ok = t >= 0;
        if (ok) g_cap = (bf16_tier)t;
    }
    g_tier = g_detected < g_cap ? g_detected : g_cap;
    return ok ? 0 : -1;
}

bf16_tier bf16_cpu_tier(void) { return g_tier; }
bf16_tier bf16_cpu_detected(void) { return g_detected; }
bf16_tier bf16_cpu_cap(void) { return g_cap; }
const char *bf16_cpu_env_value(void) { return g_env; }
const char *bf16_cpu_detect_reason(void) { return g_reason; }
int bf16_cpu_has_vbmi(void) { return g_vbmi; }
int bf16_cpu_is_intel(void) { return g_intel; }
int bf16_cpu_l1d_ways(void) { return __atomic_load_n(&g_l1d_ways, __ATOMIC_RELAXED); }
int bf16_cpu_set_l1d_ways(int ways)
{
    return __atomic_exchange_n(&g_l1d_ways, ways, __ATOMIC_RELAXED);
}
