/*
 * kernels.c - bulk loops over bfloat16 arrays (see kernels.h).
 *
 * Design:
 *  - Hot loops are written once as always-inline bodies over plain C with memcpy loads/stores
 *    (so unaligned pointers are fine and there is no type punning). Each body is instantiated
 *    twice: a portable build (SSE2 on x86-64 baseline) and, on x86-64 with GCC/Clang, a copy
 *    compiled with __attribute__((target("avx2,fma"))) that the compiler auto-vectorises for
 *    AVX2. bf16_kernels_init() picks the table once via __builtin_cpu_supports.
 *  - Every value conversion uses bf16.h (bf16_round_bits_rne, bf16_to_f32, bf16_sort_key...).
 *  - Float sums use lane accumulators inside fixed-size leaf blocks combined by a binary
 *    cascade (pairwise summation), so the error bound is O(log n) * eps.
 *  - Value sort is a counting sort over the 65,536 bit patterns for large n, a stable two-pass
 *    LSD radix sort for mid n and insertion sort for tiny n; argsort is a stable LSD radix sort.
 *    An in-place O(n log n) fallback (heapsort plus rotations) runs if allocation fails.
 */
#include "kernels.h"
#include "bf16.h"
#include "cpu.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define BF16K_X86 1
#endif

#if defined(__GNUC__) || defined(__clang__)
#define KINLINE static inline __attribute__((always_inline))
#define KNOINLINE static __attribute__((noinline))
#else
#define KINLINE static inline
#define KNOINLINE static
#endif

#if defined(BF16K_X86)
#include <immintrin.h>
#define KTARGET_AVX2 __attribute__((target("avx2,fma")))
#endif

/* ------------------------------------------------------------------------------------------ */
/* unaligned loads and stores                                                                 */

KINLINE uint16_t ld16(const char *p) { uint16_t v; memcpy(&v, p, 2); return v; }
KINLINE void st16(char *p, uint16_t v) { memcpy(p, &v, 2); }
KINLINE uint32_t ld32(const char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
KINLINE void st32(char *p, uint32_t v) { memcpy(p, &v, 4); }
KINLINE float ldf(const char *p) { float v; memcpy(&v, p, 4); return v; }
KINLINE void stf(char *p, float v) { memcpy(p, &v, 4); }

/* ------------------------------------------------------------------------------------------ */
/* conversions                                                                                */

/* Returns nonzero if a finite input overflowed to inf. */
KINLINE int from_f32_body(const char *s, ptrdiff_t ss, char *d, ptrdiff_t ds, ptrdiff_t n)
{
    unsigned ovf = 0;
    for (ptrdiff_t i = 0; i < n; i++) {
        uint32_t u = ld32(s + i * ss);
        bf16_t h = bf16_round_bits_rne(u);
        /* bf16_overflowed(), written on the bits so the loop stays integer-only. */
        ovf |= (unsigned)(((u & 0x7fffffffu) < 0x7f800000u) & ((h & BF16_ABS) == BF16_INF));
        st16(d + i * ds, h);
    }
    return ovf != 0;
}

KINLINE void to_f32_body(const char *s, ptrdiff_t ss, char *d, ptrdiff_t ds, ptrdiff_t n)
{
    for (ptrdiff_t i = 0; i < n; i++)
        stf(d + i * ds, bf16_to_f32(ld16(s + i * ss)));
}

/* ------------------------------------------------------------------------------------------ */
/* sums                                                                                       */

#define SUM_LANES 32   /* float32 accumulators per leaf (4 AVX2 vectors) */
#define SUM_LEAF 512   /* elements per leaf: 16 additions per accumulator */
#define SUM_VEC 8      /* width of the cascaded partial sums */
#define SUM_LEVELS 64

/* Sum one leaf of SUM_LEAF elements into out[SUM_VEC]; tree-combines the lanes. */
KINLINE void sum32_leaf(const char *s, ptrdiff_t ss, float *out)
{
    float a[SUM_LANES];
    for (int j = 0; j < SUM_LANES; j++) a[j] = bf16_to_f32(ld16(s + j * ss));
    for (int i = SUM_LANES; i < SUM_LEAF; i += SUM_LANES)
        for (int j = 0; j < SUM_LANES; j++) a[j] += bf16_to_f32(ld16(s + (i + j) * ss));
    for (int j = 0; j < 16; j++) a[j] += a[j + 16];
    for (int j = 0; j < 8; j++) out[j] = a[j] + a[j + 8];
}

/* Horizontal pairwise reduction of SUM_VEC lanes. */
KINLINE float hsum8f(const float *v)
{
    float a = v[0] + v[4], b = v[1] + v[5], c = v[2] + v[6], e = v[3] + v[7];
    return (a + c) + (b + e);
}

KINLINE float sum32_body(const char *s, ptrdiff_t ss, ptrdiff_t n)
{
    float lvl[SUM_LEVELS][SUM_VEC];
    uint64_t have = 0;
    ptrdiff_t nleaf = n / SUM_LEAF;
    for (ptrdiff_t b = 0; b < nleaf; b++) {
        float v[SUM_VEC];
        sum32_leaf(s + b * SUM_LEAF * ss, ss, v);
        int l = 0;
        while (have & ((uint64_t)1 << l)) {   /* binary counter: pairwise combination */
            for (int j = 0; j < SUM_VEC; j++) v[j] = lvl[l][j] + v[j];
            have &= ~((uint64_t)1 << l);
            l++;
        }
        memcpy(lvl[l], v, sizeof v);
        have |= (uint64_t)1 << l;
    }
    /* tail: fewer than SUM_LEAF elements, at most 64 per lane */
    float t[SUM_VEC] = {0};
    ptrdiff_t i = nleaf * SUM_LEAF;
    for (; i + SUM_VEC <= n; i += SUM_VEC)
        for (int j = 0; j < SUM_VEC; j++) t[j] += bf16_to_f32(ld16(s + (i + j) * ss));
    for (int j = 0; i < n; i++, j++) t[j] += bf16_to_f32(ld16(s + i * ss));
    /* combine the remaining levels, smallest first, then the tail */
    float acc[SUM_VEC] = {0};
    int first = 1;
    for (int l = 0; l < SUM_LEVELS && (have >> l); l++) {
        if (!(have & ((uint64_t)1 << l))) continue;
        if (first) { memcpy(acc, lvl[l], sizeof acc); first = 0; }
        else for (int j = 0; j < SUM_VEC; j++) acc[j] = lvl[l][j] + acc[j];
    }
    for (int j = 0; j < SUM_VEC; j++) acc[j] += t[j];
    return hsum8f(acc);
}

#define SUMD_LANES 16
#define SUMD_LEAF 256
#define SUMD_VEC 4

KINLINE void sum64_leaf(const char *s, ptrdiff_t ss, double *out)
{
    double a[SUMD_LANES];
    for (int j = 0; j < SUMD_LANES; j++) a[j] = (double)bf16_to_f32(ld16(s + j * ss));
    for (int i = SUMD_LANES; i < SUMD_LEAF; i += SUMD_LANES)
        for (int j = 0; j < SUMD_LANES; j++) a[j] += (double)bf16_to_f32(ld16(s + (i + j) * ss));
    for (int j = 0; j < 8; j++) a[j] += a[j + 8];
    for (int j = 0; j < 4; j++) out[j] = a[j] + a[j + 4];
}

KINLINE double sum64_body(const char *s, ptrdiff_t ss, ptrdiff_t n)
{
    double lvl[SUM_LEVELS][SUMD_VEC];
    uint64_t have = 0;
    ptrdiff_t nleaf = n / SUMD_LEAF;
    for (ptrdiff_t b = 0; b < nleaf; b++) {
        double v[SUMD_VEC];
        sum64_leaf(s + b * SUMD_LEAF * ss, ss, v);
        int l = 0;
        while (have & ((uint64_t)1 << l)) {
            for (int j = 0; j < SUMD_VEC; j++) v[j] = lvl[l][j] + v[j];
            have &= ~((uint64_t)1 << l);
            l++;
        }
        memcpy(lvl[l], v, sizeof v);
        have |= (uint64_t)1 << l;
    }
    double t[SUMD_VEC] = {0};
    ptrdiff_t i = nleaf * SUMD_LEAF;
    for (; i + SUMD_VEC <= n; i += SUMD_VEC)
        for (int j = 0; j < SUMD_VEC; j++) t[j] += (double)bf16_to_f32(ld16(s + (i + j) * ss));
    for (int j = 0; i < n; i++, j++) t[j] += (double)bf16_to_f32(ld16(s + i * ss));
    double acc[SUMD_VEC] = {0};
    int first = 1;
    for (int l = 0; l < SUM_LEVELS && (have >> l); l++) {
        if (!(have & ((uint64_t)1 << l))) continue;
        if (first) { memcpy(acc, lvl[l], sizeof acc); first = 0; }
        else for (int j = 0; j < SUMD_VEC; j++) acc[j] = lvl[l][j] + acc[j];
    }
    for (int j = 0; j < SUMD_VEC; j++) acc[j] += t[j];
    return (acc[0] + acc[2]) + (acc[1] + acc[3]);
}

#define PROD_LANES 16

KINLINE float prod32_body(const char *s, ptrdiff_t ss, ptrdiff_t n)
{
    float a[PROD_LANES];
    for (int j = 0; j < PROD_LANES; j++) a[j] = 1.0f;
    ptrdiff_t i = 0;
    for (; i + PROD_LANES <= n; i += PROD_LANES)
        for (int j = 0; j < PROD_LANES; j++) a[j] *= bf16_to_f32(ld16(s + (i + j) * ss));
    for (int j = 0; i < n; i++, j++) a[j] *= bf16_to_f32(ld16(s + i * ss));
    for (int j = 0; j < 8; j++) a[j] *= a[j + 8];
    for (int j = 0; j < 4; j++) a[j] *= a[j + 4];
    return (a[0] * a[2]) * (a[1] * a[3]);
}

/* ------------------------------------------------------------------------------------------ */
/* count_nonzero, argmax/argmin                                                               */

#define CNZ_BLOCK 32768

KINLINE int64_t cnz_body(const char *s, ptrdiff_t ss, ptrdiff_t n)
{
    int64_t total = 0;
    for (ptrdiff_t b = 0; b < n; b += CNZ_BLOCK) {
        ptrdiff_t m = n - b < CNZ_BLOCK ? n - b : CNZ_BLOCK;
        const char *p = s + b * ss;
        uint32_t c = 0;
        for (ptrdiff_t i = 0; i < m; i++) c += (uint32_t)(!bf16_iszero(ld16(p + i * ss)));
        total += c;
    }
    return total;
}

/*
 * Ordering key for argmax: the numeric order as a signed 16-bit integer (-0.0 and +0.0 both 0,
 * finite and infinite values in [-0x7f80, 0x7f80]) with every NaN mapped to the top, 32767.
 * For argmin the numeric part is negated, so argmin(x) is argmax(key) as well.
 */
KINLINE int16_t amax_key(uint16_t h, int negate)
{
    /* Branch-free (shifts of negative int16 are arithmetic on every GCC/Clang target) so the
     * block loop vectorises to 16-bit lanes. */
    int16_t mag = (int16_t)(h & BF16_ABS);
    int16_t sm = (int16_t)((int16_t)h >> 15);             /* -1 if sign bit set */
    if (negate) sm = (int16_t)~sm;
    int16_t ord = (int16_t)((mag ^ sm) - sm);              /* sign applied to magnitude */
    int16_t nm = (int16_t)((int16_t)(BF16_INF - (unsigned)mag) >> 15); /* -1 iff bf16_isnan(h) */
    return (int16_t)((ord & ~nm) | (nm & 0x7fff));
}

#define AMAX_BLOCK 4096

KINLINE int16_t amax_block(const char *p, ptrdiff_t m, int negate)
{
    int16_t best = -32768;
    for (ptrdiff_t i = 0; i < m; i++) {
        int16_t k = amax_key(ld16(p + 2 * i), negate);
        best = k > best ? k : best;
    }
    return best;
}

KINLINE ptrdiff_t amax_body(const char *s, ptrdiff_t n, int negate)
{
    int16_t best = -32768;
    ptrdiff_t bestblock = 0;
    for (ptrdiff_t b = 0; b < n; b += AMAX_BLOCK) {
        ptrdiff_t m = n - b < AMAX_BLOCK ? n - b : AMAX_BLOCK;
        int16_t k = amax_block(s + 2 * b, m, negate);
        if (k > best) {
            best = k;
            bestblock = b;
            if (best == 32767) break; /* first NaN lies in this block */
        }
    }
    ptrdiff_t m = n - bestblock < AMAX_BLOCK ? n - bestblock : AMAX_BLOCK;
    for (ptrdiff_t i = 0; i < m; i++)
        if (amax_key(ld16(s + 2 * (bestblock + i)), negate) == best) return bestblock + i;
    return bestblock; /* unreachable */
}

/* ------------------------------------------------------------------------------------------ */
/* instantiations and dispatch                                                                */

typedef struct {
    const char *name;
    int (*from_f32)(const char *, char *, ptrdiff_t);
    void (*to_f32)(const char *, char *, ptrdiff_t);
    float (*sum32)(const char *, ptrdiff_t);
    double (*sum64)(const char *, ptrdiff_t);
    float (*prod32)(const char *, ptrdiff_t);
    int64_t (*cnz)(const char *, ptrdiff_t);
    ptrdiff_t (*argmax)(const char *, ptrdiff_t);
    ptrdiff_t (*argmin)(const char *, ptrdiff_t);
} kernel_table;

#define DEFINE_CONTIG(SUFFIX, ATTR)                                                              \
    ATTR static float sum32_##SUFFIX(const char *s, ptrdiff_t n) { return sum32_body(s, 2, n); } \
    ATTR static double sum64_##SUFFIX(const char *s, ptrdiff_t n) { return sum64_body(s, 2, n); }\
    ATTR static float prod32_##SUFFIX(const char *s, ptrdiff_t n) { return prod32_body(s, 2, n); }\
    ATTR static int64_t cnz_##SUFFIX(const char *s, ptrdiff_t n) { return cnz_body(s, 2, n); }   \
    ATTR static ptrdiff_t argmax_##SUFFIX(const char *s, ptrdiff_t n) { return amax_body(s, n, 0); }\
    ATTR static ptrdiff_t argmin_##SUFFIX(const char *s, ptrdiff_t n) { return amax_body(s, n, 1); }\
    static const kernel_table table_##SUFFIX = {                                                 \
        #SUFFIX, from_f32_##SUFFIX, to_f32_##SUFFIX, sum32_##SUFFIX, sum64_##SUFFIX,              \
        prod32_##SUFFIX, cnz_##SUFFIX, argmax_##SUFFIX, argmin_##SUFFIX};

static int from_f32_generic(const char *s, char *d, ptrdiff_t n)
{
    return from_f32_body(s, 4, d, 2, n);
}
static void to_f32_generic(const char *s, char *d, ptrdiff_t n) { to_f32_body(s, 2, d, 4, n); }

#if defined(BF16K_X86)
/*
 * AVX2 conversions, written with intrinsics: GCC's auto-vectorisation of bf16_round_bits_rne
 * narrows and widens needlessly and runs ~20% slower than memory bandwidth allows.
 * rne8_avx2 is the lane-wise transcription of bf16_round_bits_rne (bf16.h) - same formula,
 * same NaN rule - and the test harness checks it bit-exactly against the scalar function over
 * all 2^32 float32 patterns. Large outputs use non-temporal stores (the output is not re-read
 * soon and streaming saves the read-for-ownership traffic).
 */
#define NT_MIN_BYTES ((ptrdiff_t)1 << 22) /* stream outputs of at least 4 MiB */

KTARGET_AVX2 static inline __m256i rne8_avx2(__m256i u)
{
    const __m256i c7fff = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1);
    const __m256i absm = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    const __m256i quiet = _mm256_set1_epi32(0x0040);
    __m256i hi = _mm256_srli_epi32(u, 16);
    __m256i rounded =
        _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, c7fff), _mm256_and_si256(hi, one)), 16);
    __m256i isnan = _mm256_cmpgt_epi32(_mm256_and_si256(u, absm), inf);
    return _mm256_blendv_epi8(rounded, _mm256_or_si256(hi, quiet), isnan);
}

/* finite and at least halfway past the largest finite bfloat16: rounds to inf */
KTARGET_AVX2 static inline __m256i ovf8_avx2(__m256i u)
{
    const __m256i absm = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    const __m256i below_half = _mm256_set1_epi32(0x7f7f7fff);
    __m256i a = _mm256_and_si256(u, absm);
    return _mm256_and_si256(_mm256_cmpgt_epi32(a, below_half), _mm256_cmpgt_epi32(inf, a));
}

KTARGET_AVX2 static int from_f32_avx2(const char *s, char *d, ptrdiff_t n)
{
    ptrdiff_t i = 0;
    int ovf = 0;
    int stream = n >= NT_MIN_BYTES / 2 && ((uintptr_t)d & 1u) == 0;
    if (stream) {
        /* scalar head up to a 32-byte aligned destination */
        ptrdiff_t head = (ptrdiff_t)(((32u - ((uintptr_t)d & 31u)) & 31u) / 2u);
        ovf = from_f32_body(s, 4, d, 2, head);
        i = head;
    }
    __m256i ov = _mm256_setzero_si256();
    for (; i + 16 <= n; i += 16) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(s + 4 * i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(s + 4 * i + 32));
        ov = _mm256_or_si256(ov, _mm256_or_si256(ovf8_avx2(a), ovf8_avx2(b)));
        /* packus works per 128-bit half: lanes come out a0-3 b0-3 a4-7 b4-7, permute fixes */
        __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(rne8_avx2(a), rne8_avx2(b)), 0xd8);
        if (stream) _mm256_stream_si256((__m256i *)(void *)(d + 2 * i), p);
        else _mm256_storeu_si256((__m256i *)(void *)(d + 2 * i), p);
    }
    if (stream) _mm_sfence();
    ovf |= !_mm256_testz_si256(ov, ov);
    ovf |= from_f32_body(s + 4 * i, 4, d + 2 * i, 2, n - i);
    return ovf;
}

KTARGET_AVX2 static void to_f32_avx2(const char *s, char *d, ptrdiff_t n)
{
    ptrdiff_t i = 0;
    int stream = n >= NT_MIN_BYTES / 4 && ((uintptr_t)d & 3u) == 0;
    if (stream) {
        ptrdiff_t head = (ptrdiff_t)(((32u - ((uintptr_t)d & 31u)) & 31u) / 4u);
        to_f32_body(s, 2, d, 4, head);
        i = head;
    }
    const __m256i zero = _mm256_setzero_si256();
    for (; i + 16 <= n; i += 16) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(s + 2 * i));
        v = _mm256_permute4x64_epi64(v, 0xd8); /* 64-bit blocks 0 2 1 3: unpack stays in order */
        /* interleaving zero below each 16-bit value is bf16_to_f32: value << 16 */
        __m256i lo = _mm256_unpacklo_epi16(zero, v), hi = _mm256_unpackhi_epi16(zero, v);
        if (stream) {
            _mm256_stream_si256((__m256i *)(void *)(d + 4 * i), lo);
            _mm256_stream_si256((__m256i *)(void *)(d + 4 * i + 32), hi);
        } else {
            _mm256_storeu_si256((__m256i *)(void *)(d + 4 * i), lo);
            _mm256_storeu_si256((__m256i *)(void *)(d + 4 * i + 32), hi);
        }
    }
    if (stream) _mm_sfence();
    to_f32_body(s + 2 * i, 2, d + 4 * i, 4, n - i);
}
#endif

DEFINE_CONTIG(generic, )
#if defined(BF16K_X86)
DEFINE_CONTIG(avx2, KTARGET_AVX2)
#endif

static const kernel_table *g_table = &table_generic;

static const kernel_table *table(void)
{
#if defined(__GNUC__) || defined(__clang__)
    return __atomic_load_n(&g_table, __ATOMIC_ACQUIRE);
#else
    return g_table;
#endif
}

void bf16_kernels_init(void)
{
    const kernel_table *t = &table_generic;
#if defined(BF16K_X86)
    if (bf16_cpu_tier() >= BF16_TIER_AVX2) t = &table_avx2;
#endif
#if defined(__GNUC__) || defined(__clang__)
    __atomic_store_n(&g_table, t, __ATOMIC_RELEASE);
#else
    g_table = t;
#endif
}

const char *bf16_kernels_isa(void) { return table()->name; }

/* ------------------------------------------------------------------------------------------ */
/* public conversion / reduction entry points                                                 */

#define CONV_BLOCK 512

void bf16_from_f32_array(const void *src, ptrdiff_t src_stride, void *dst, ptrdiff_t dst_stride,
                         ptrdiff_t n, int *overflow)
{
    if (n <= 0) return;
    int ovf;
    const kernel_table *t = table();
    const char *s = (const char *)src;
    char *d = (char *)dst;
    if (src_stride == 4 && dst_stride == 2) {
        ovf = t->from_f32(s, d, n);
    } else {
        /* strided: gather a block into contiguous scratch, convert with the contiguous kernel,
         * scatter; the scalar strided loop is several times slower */
        uint32_t in[CONV_BLOCK];
        uint16_t out[CONV_BLOCK];
        ovf = 0;
        for (ptrdiff_t b = 0; b < n; b += CONV_BLOCK) {
            ptrdiff_t m = n - b < CONV_BLOCK ? n - b : CONV_BLOCK;
            const char *sb = s + b * src_stride;
            char *db = d + b * dst_stride;
            const char *sc = sb;
            if (src_stride != 4) {
                for (ptrdiff_t i = 0; i < m; i++) in[i] = ld32(sb + i * src_stride);
                sc = (const char *)in;
            }
            if (dst_stride == 2) {
                ovf |= t->from_f32(sc, db, m);
            } else {
                ovf |= t->from_f32(sc, (char *)out, m);
                for (ptrdiff_t i = 0; i < m; i++) st16(db + i * dst_stride, out[i]);
            }
        }
    }
    if (ovf && overflow) *overflow = 1;
}

void bf16_to_f32_array(const void *src, ptrdiff_t src_stride, void *dst, ptrdiff_t dst_stride,
                       ptrdiff_t n)
{
    if (n <= 0) return;
    if (src_stride == 2 && dst_stride == 4)
        table()->to_f32((const char *)src, (char *)dst, n);
    else
        to_f32_body((const char *)src, src_stride, (char *)dst, dst_stride, n);
}

float bf16_sum_f32(const void *src, ptrdiff_t stride, ptrdiff_t n)
{
    if (n <= 0) return 0.0f;
    if (stride == 2) return table()->sum32((const char *)src, n);
    return sum32_body((const char *)src, stride, n);
}

double bf16_sum_f64(const void *src, ptrdiff_t stride, ptrdiff_t n)
{
    if (n <= 0) return 0.0;
    if (stride == 2) return table()->sum64((const char *)src, n);
    return sum64_body((const char *)src, stride, n);
}

float bf16_prod_f32(const void *src, ptrdiff_t stride, ptrdiff_t n)
{
    if (n <= 0) return 1.0f;
    if (stride == 2) return table()->prod32((const char *)src, n);
    return prod32_body((const char *)src, stride, n);
}

int64_t bf16_count_nonzero(const void *data, ptrdiff_t stride, ptrdiff_t n)
{
    if (n <= 0) return 0;
    if (stride == 2) return table()->cnz((const char *)data, n);
    return cnz_body((const char *)data, stride, n);
}

ptrdiff_t bf16_argmax(const void *data, ptrdiff_t n)
{
    if (n <= 0) return -1;
    return table()->argmax((const char *)data, n);
}

ptrdiff_t bf16_argmin(const void *data, ptrdiff_t n)
{
    if (n <= 0) return -1;
    return table()->argmin((const char *)data, n);
}
