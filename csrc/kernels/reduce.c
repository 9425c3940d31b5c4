/*
 * kernels/reduce.c - float32/float64-accumulating sums and products, count_nonzero (kernels.h).
 *
 * Float sums use lane accumulators inside fixed-size leaf blocks combined by a binary cascade
 * (pairwise summation), so the error bound is O(log n) * eps. The bodies are written once over
 * plain C and instantiated per tier under a target attribute, which the compiler vectorises;
 * the AVX-512 float32 sum leaf is written with intrinsics. Every tier performs the same float32
 * additions in the same order, so sums agree bit for bit across tiers
 * (tests/test_kernels_reduce.py::test_sums_agree_across_tiers).
 */
#include "kernels.h"
#include "kernels/internal.h"
#include "bf16.h"

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

/*
 * Contiguous sums prefetch the leaf `ahead` bytes beyond the one being summed: one core keeps
 * too few lines in flight with the hardware prefetcher alone (as in convert.c). 4 KiB at the
 * baseline and avx2 tiers; the avx512 tiers read faster and need more lines in flight: 12 KiB
 * there (np.sum of 2^24 elements from memory 0.94-0.95 -> 0.84-0.87 ms, torch.sum 0.92-0.96
 * ms; 8-16 KiB alike within the noise, sizes that fit in cache unchanged; AMD EPYC Zen 5).
 * Reaching past the end is harmless: a prefetch never faults.
 */
#define SUM_PREFETCH_AHEAD 4096
#define SUM_PREFETCH_AHEAD_AVX512 12288

KINLINE void prefetch_leaf(const char *leaf, ptrdiff_t ss, ptrdiff_t bytes, ptrdiff_t ahead)
{
    if (ss != 2) return;
    for (ptrdiff_t j = 0; j < bytes; j += 64) __builtin_prefetch(leaf + ahead + j);
}

typedef void (*sum32_leaf_fn)(const char *s, ptrdiff_t ss, float *out);
/* t[j] += element j, for the SUM_VEC elements at s (the cascade's tail) */
typedef void (*sum32_step_fn)(const char *s, ptrdiff_t ss, float *t);

KINLINE void sum32_step(const char *s, ptrdiff_t ss, float *t)
{
    for (int j = 0; j < SUM_VEC; j++) t[j] += bf16_to_f32(ld16(s + j * ss));
}

/* The cascade over leaves; `leaf` and `step` are constants at every call, so they are inlined. */
KINLINE float sum32_cascade(const char *s, ptrdiff_t ss, ptrdiff_t n, sum32_leaf_fn leaf,
                            sum32_step_fn step, ptrdiff_t ahead)
{
    float lvl[SUM_LEVELS][SUM_VEC];
    uint64_t have = 0;
    ptrdiff_t nleaf = n / SUM_LEAF;
    for (ptrdiff_t b = 0; b < nleaf; b++) {
        float v[SUM_VEC];
        prefetch_leaf(s + b * SUM_LEAF * ss, ss, SUM_LEAF * 2, ahead);
        leaf(s + b * SUM_LEAF * ss, ss, v);
        int l = 0;
        while (have & ((uint64_t)1 << l)) {   /* binary counter: pairwise combination */
            for (int j = 0; j < SUM_VEC; j++) v[j] = lvl[l][j] + v[j];
            have &= ~((uint64_t)1 << l);
            l++;
        }
        memcpy(lvl[l], v, sizeof v);
        have |= (uint64_t)1 << l;
    }
    /* tail: fewer than SUM_LEAF elements, at most 64 per lane. Partial sums start at -0, the
     * identity of IEEE addition (+0 would turn a sum of -0s into +0). */
    float t[SUM_VEC];
    for (int j = 0; j < SUM_VEC; j++) t[j] = -0.0f;
    ptrdiff_t i = nleaf * SUM_LEAF;
    for (; i + SUM_VEC <= n; i += SUM_VEC) step(s + i * ss, ss, t);
    for (int j = 0; i < n; i++, j++) t[j] += bf16_to_f32(ld16(s + i * ss));
    /* combine the remaining levels, smallest first, then the tail */
    float acc[SUM_VEC];
    for (int j = 0; j < SUM_VEC; j++) acc[j] = -0.0f;
    int first = 1;
    for (int l = 0; l < SUM_LEVELS && (have >> l); l++) {
        if (!(have & ((uint64_t)1 << l))) continue;
        if (first) { memcpy(acc, lvl[l], sizeof acc); first = 0; }
        else for (int j = 0; j < SUM_VEC; j++) acc[j] = lvl[l][j] + acc[j];
    }
    for (int j = 0; j < SUM_VEC; j++) acc[j] += t[j];
    return hsum8f(acc);
}

KINLINE float sum32_body(const char *s, ptrdiff_t ss, ptrdiff_t n)
{
    return sum32_cascade(s, ss, n, sum32_leaf, sum32_step, SUM_PREFETCH_AHEAD);
}

#if defined(BF16K_X86)
#include <immintrin.h>

KTARGET_AVX512 static inline __m512 widen16_ps_avx512(const char *p)
{
    __m256i h = _mm256_loadu_si256((const void *)p);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* sum32_leaf for contiguous input: the same additions in the same order, a[0..15] and
 * a[16..31] being the two vectors, so results are bit-identical to the portable leaf. */
KTARGET_AVX512 static inline void sum32_leaf_avx512(const char *s, ptrdiff_t ss, float *out)
{
    (void)ss; /* always 2 */
    __m512 a0 = widen16_ps_avx512(s), a1 = widen16_ps_avx512(s + 32);
    for (int i = SUM_LANES; i < SUM_LEAF; i += SUM_LANES) {
        a0 = _mm512_add_ps(a0, widen16_ps_avx512(s + 2 * i));
        a1 = _mm512_add_ps(a1, widen16_ps_avx512(s + 2 * i + 32));
    }
    a0 = _mm512_add_ps(a0, a1);
    _mm256_storeu_ps(out, _mm256_add_ps(_mm512_castps512_ps256(a0), _mm512_extractf32x8_ps(a0, 1)));
}

/* sum32_step for contiguous input. GCC compiled the portable step for this target into 8
 * scalar loads and adds: a sum of 1000 elements (a leaf and a tail of 488) took 1.31 us, 1.14
 * at the avx2 tier, and sum(axis=1) of 1000 x 1000 230 us (avx2: 112; AMD EPYC Zen 5). */
KTARGET_AVX512 static inline void sum32_step_avx512(const char *s, ptrdiff_t ss, float *t)
{
    (void)ss; /* always 2 */
    __m128i h = _mm_loadu_si128((const void *)s);
    __m256 x = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    _mm256_storeu_ps(t, _mm256_add_ps(_mm256_loadu_ps(t), x));
}

KTARGET_AVX512 float bf16k_sum32_avx512(const char *s, ptrdiff_t n)
{
    return sum32_cascade(s, 2, n, sum32_leaf_avx512, sum32_step_avx512, SUM_PREFETCH_AHEAD_AVX512);
}
#endif

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
        prefetch_leaf(s + b * SUMD_LEAF * ss, ss, SUMD_LEAF * 2, SUM_PREFETCH_AHEAD);
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
    double t[SUMD_VEC];
    for (int j = 0; j < SUMD_VEC; j++) t[j] = -0.0;
    ptrdiff_t i = nleaf * SUMD_LEAF;
    for (; i + SUMD_VEC <= n; i += SUMD_VEC)
        for (int j = 0; j < SUMD_VEC; j++) t[j] += (double)bf16_to_f32(ld16(s + (i + j) * ss));
    for (int j = 0; i < n; i++, j++) t[j] += (double)bf16_to_f32(ld16(s + i * ss));
    double acc[SUMD_VEC];
    for (int j = 0; j < SUMD_VEC; j++) acc[j] = -0.0;
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
#define PROD_RENORM 64 /* factors in [1, 2) per lane between renormalisations: < 2^64 */

/* The plain product in 16 interleaved float32 lanes: what IEEE arithmetic gives for data holding
 * NaN, or both a zero and an infinity (the invalid 0 * inf, a NaN's own flags). */
KINLINE float prod32_plain(const char *s, ptrdiff_t ss, ptrdiff_t n)
{
    float a[PROD_LANES];
    for (int j = 0; j < PROD_LANES; j++) a[j] = 1.0f;
    ptrdiff_t i = 0;
    for (; i + PROD_LANES <= n; i += PROD_LANES)
        for (int j = 0; j < PROD_LANES; j++) a[j] *= bf16_to_f32(ld16(s + (i + j) * ss));
    /* the tail through a full block padded with ones (exact factors): GCC vectorised the
     * partial loop with lanes past the data, whose 0 * inf raised a spurious "invalid"
     * (tests/test_kernels_reduce.py::test_products_of_short_tails_raise_no_invalid) */
    float tail[PROD_LANES];
    for (int j = 0; j < PROD_LANES; j++) tail[j] = 1.0f;
    for (int j = 0; i < n; i++, j++) tail[j] = bf16_to_f32(ld16(s + i * ss));
    for (int j = 0; j < PROD_LANES; j++) a[j] *= tail[j];
    for (int j = 0; j < 8; j++) a[j] *= a[j + 8];
    for (int j = 0; j < 4; j++) a[j] *= a[j + 4];
    return (a[0] * a[2]) * (a[1] * a[3]);
}

/* One factor: its significand in [1, 2) multiplies m, its unbiased exponent adds to ex;
 * zeros, infinities and NaNs count as the neutral 1 * 2^0 and are noted in sp instead (1 zero,
 * 2 infinity, 4 NaN). Subnormals are scaled by 2^64 first (exact). Plain values, no pointers,
 * so the lanes vectorise. */
#define PROD_FACTOR(h, m, ex, sp, sg)                                                           \
    do {                                                                                       \
        uint32_t mag_ = (h) & 0x7fffu, field_ = mag_ >> 7;                                      \
        uint32_t fin_ = (uint32_t)(field_ != 0xffu) & (uint32_t)(mag_ != 0u);                   \
        (sp) |= (uint32_t)(mag_ == 0u) | ((uint32_t)(field_ == 0xffu) << 1) |                   \
                ((uint32_t)(mag_ > 0x7f80u) << 2);                                             \
        float f_ = f32_from_bits((fin_ ? mag_ : 0x3f80u) << 16) *                               \
                   (field_ == 0u ? 0x1p64f : 1.0f);                                            \
        uint32_t b_ = f32_bits(f_);                                                            \
        (m) *= f32_from_bits((b_ & 0x007fffffu) | 0x3f800000u);                                 \
        (ex) += (int32_t)(b_ >> 23) - 127 - (field_ == 0u ? 64 : 0);                            \
        (sg) ^= (h);                                                                           \
    } while (0)

KINLINE void prod_renorm(float *m, int64_t *e)
{
    uint32_t b = f32_bits(*m);
    *e += (int32_t)(b >> 23) - 127;
    *m = f32_from_bits((b & 0x007fffffu) | 0x3f800000u);
}

/*
 * The product of float32 factors with an unbounded exponent: each lane multiplies significands
 * in [1, 2) in float32 (the same roundings as multiplying the values, which powers of two do not
 * change) and adds the exponents as integers, so no partial product overflows or underflows on
 * the way, whatever the order of the data: [1e9, 1e-9] * 64 is 1, not inf * 0 = NaN; the 16
 * lanes with interleaved data made that order matter (tests/test_kernels_reduce.py::
 * test_products_do_not_overflow_on_the_way). The one rounding to float32 at the end raises
 * "overflow"/"underflow" as a float32 product ending there would. Data with a NaN, or with both
 * a zero and an infinity, take the plain IEEE product (NaN, with its flags); else a zero gives
 * a signed zero and an infinity a signed infinity.
 */
/* count (a multiple of PROD_LANES) factors into the lane accumulators, element i to lane
 * i % PROD_LANES */
typedef void (*prod_lanes_fn)(const char *s, ptrdiff_t ss, ptrdiff_t count, float *m, int32_t *ex,
                              uint32_t *sp, uint32_t *sg);

KINLINE void prod_lanes(const char *s, ptrdiff_t ss, ptrdiff_t count, float *m, int32_t *ex,
                        uint32_t *sp, uint32_t *sg)
{
    for (ptrdiff_t k = 0; k < count; k += PROD_LANES)
        for (int j = 0; j < PROD_LANES; j++) {
            uint32_t h = ld16(s + (k + j) * ss);
            PROD_FACTOR(h, m[j], ex[j], sp[j], sg[j]);
        }
}

KINLINE float prod32_cascade(const char *s, ptrdiff_t ss, ptrdiff_t n, prod_lanes_fn lanes)
{
    float m[PROD_LANES];
    int64_t e[PROD_LANES];
    uint32_t sign[PROD_LANES], special[PROD_LANES];
    for (int j = 0; j < PROD_LANES; j++) { m[j] = 1.0f; e[j] = 0; sign[j] = 0; special[j] = 0; }
    ptrdiff_t i = 0;
    while (i < n) {
        ptrdiff_t block = n - i < PROD_LANES * PROD_RENORM ? n - i : PROD_LANES * PROD_RENORM;
        ptrdiff_t full = block / PROD_LANES * PROD_LANES;
        int32_t ex[PROD_LANES];
        for (int j = 0; j < PROD_LANES; j++) ex[j] = 0;
        if (ss == 2) {
            lanes(s + i * ss, 2, full, m, ex, special, sign);
        }
        else { /* strided: the block gathered, so every layout runs the tier's lanes */
            uint16_t buf[PROD_LANES * PROD_RENORM];
            for (ptrdiff_t k = 0; k < full; k++) buf[k] = ld16(s + (i + k) * ss);
            lanes((const char *)buf, 2, full, m, ex, special, sign);
        }
        for (ptrdiff_t k = full, j = 0; k < block; k++, j++) {
            uint32_t h = ld16(s + (i + k) * ss);
            PROD_FACTOR(h, m[j], ex[j], special[j], sign[j]);
        }
        for (int j = 0; j < PROD_LANES; j++) {
            e[j] += ex[j];
            prod_renorm(&m[j], &e[j]);
        }
        i += block;
    }
    uint32_t any = 0, neg = 0;
    for (int j = 0; j < PROD_LANES; j++) { any |= special[j]; neg ^= sign[j]; }
    if ((any & 4u) || (any & 3u) == 3u) return prod32_plain(s, ss, n);
    float zero_or_inf = (any & 1u) ? 0.0f : __builtin_inff();
    if (any) return (neg & 0x8000u) ? -zero_or_inf : zero_or_inf;
    /* significands in [1, 2): the tree's partial products stay below 2^16 */
    for (int j = 0; j < 8; j++) { m[j] *= m[j + 8]; e[j] += e[j + 8]; }
    for (int j = 0; j < 4; j++) { m[j] *= m[j + 4]; e[j] += e[j + 4]; }
    float mant = (m[0] * m[2]) * (m[1] * m[3]);
    int64_t expo = (e[0] + e[2]) + (e[1] + e[3]);
    expo = expo < -2000 ? -2000 : expo > 2000 ? 2000 : expo;
    float r = (float)ldexp((double)mant, (int)expo); /* exact in float64; one float32 rounding */
    return (neg & 0x8000u) ? -r : r;
}

#if defined(BF16K_X86)
/* prod_lanes for contiguous data in AVX2 intrinsics (GCC left the portable form scalar): the
 * same operations per lane, so the same bits as every other tier */
KTARGET_AVX2 static inline void prod_half_avx2(__m256i h, __m256 *m, __m256i *ex, __m256i *sp,
                                               __m256i *sg)
{
    const __m256i mag = _mm256_and_si256(h, _mm256_set1_epi32(0x7fff));
    const __m256i field = _mm256_srli_epi32(mag, 7);
    const __m256i zero = _mm256_cmpeq_epi32(mag, _mm256_setzero_si256());
    const __m256i ff = _mm256_cmpeq_epi32(field, _mm256_set1_epi32(0xff));
    const __m256i nan = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7f80));
    const __m256i sub = _mm256_cmpeq_epi32(field, _mm256_setzero_si256());
    *sp = _mm256_or_si256(*sp, _mm256_or_si256(_mm256_and_si256(zero, _mm256_set1_epi32(1)),
                          _mm256_or_si256(_mm256_and_si256(ff, _mm256_set1_epi32(2)),
                                          _mm256_and_si256(nan, _mm256_set1_epi32(4)))));
    __m256i src = _mm256_blendv_epi8(mag, _mm256_set1_epi32(0x3f80), _mm256_or_si256(zero, ff));
    __m256 f = _mm256_mul_ps(_mm256_castsi256_ps(_mm256_slli_epi32(src, 16)),
                             _mm256_blendv_ps(_mm256_set1_ps(1.0f), _mm256_set1_ps(0x1p64f),
                                              _mm256_castsi256_ps(sub)));
    __m256i b = _mm256_castps_si256(f);
    __m256i sig = _mm256_or_si256(_mm256_and_si256(b, _mm256_set1_epi32(0x007fffff)),
                                  _mm256_set1_epi32(0x3f800000));
    *m = _mm256_mul_ps(*m, _mm256_castsi256_ps(sig));
    __m256i e = _mm256_sub_epi32(_mm256_srli_epi32(b, 23), _mm256_set1_epi32(127));
    *ex = _mm256_add_epi32(*ex, _mm256_sub_epi32(e, _mm256_and_si256(sub, _mm256_set1_epi32(64))));
    *sg = _mm256_xor_si256(*sg, h);
}

KTARGET_AVX2 static void prod_lanes_avx2(const char *s, ptrdiff_t ss, ptrdiff_t count, float *m,
                                         int32_t *ex, uint32_t *sp, uint32_t *sg)
{
    (void)ss; /* always 2 */
    __m256 m0 = _mm256_loadu_ps(m), m1 = _mm256_loadu_ps(m + 8);
    __m256i e0 = _mm256_loadu_si256((const __m256i *)ex), e1 = _mm256_loadu_si256((const __m256i *)(ex + 8));
    __m256i p0 = _mm256_loadu_si256((const __m256i *)sp), p1 = _mm256_loadu_si256((const __m256i *)(sp + 8));
    __m256i g0 = _mm256_loadu_si256((const __m256i *)sg), g1 = _mm256_loadu_si256((const __m256i *)(sg + 8));
    for (ptrdiff_t k = 0; k < count; k += PROD_LANES) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(s + 2 * k));
        prod_half_avx2(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(v)), &m0, &e0, &p0, &g0);
        prod_half_avx2(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(v, 1)), &m1, &e1, &p1, &g1);
    }
    _mm256_storeu_ps(m, m0);
    _mm256_storeu_ps(m + 8, m1);
    _mm256_storeu_si256((__m256i *)ex, e0);
    _mm256_storeu_si256((__m256i *)(ex + 8), e1);
    _mm256_storeu_si256((__m256i *)sp, p0);
    _mm256_storeu_si256((__m256i *)(sp + 8), p1);
    _mm256_storeu_si256((__m256i *)sg, g0);
    _mm256_storeu_si256((__m256i *)(sg + 8), g1);
}
#endif

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
 * o[i] = a[i] + b[i] in float32, a and o float32, b bfloat16 (the private float32 sum ufunc's
 * outer-axis step, umath/widen_sum.cpp): plain loops the compiler vectorises, compiled per
 * tier; in place (o == a, a reduction's running row) as a loop of its own, which needs no
 * overlap check between o and a.
 */
KINLINE void add_to_f32_body(const char *a, const char *b, char *o, ptrdiff_t n)
{
    if (a == o) {
        for (ptrdiff_t i = 0; i < n; i++) {
            float x;
            memcpy(&x, o + 4 * i, 4);
            x += bf16_to_f32(ld16(b + 2 * i));
            memcpy(o + 4 * i, &x, 4);
        }
        return;
    }
    for (ptrdiff_t i = 0; i < n; i++) {
        float x;
        memcpy(&x, a + 4 * i, 4);
        x += bf16_to_f32(ld16(b + 2 * i));
        memcpy(o + 4 * i, &x, 4);
    }
}

/* contiguous instantiations, one set per tier */
#define DEFINE_SUM32(TIER, ATTR)                                                               \
    ATTR float bf16k_sum32_##TIER(const char *s, ptrdiff_t n) { return sum32_body(s, 2, n); }
#define DEFINE_REDUCE(TIER, ATTR)                                                              \
    ATTR double bf16k_sum64_##TIER(const char *s, ptrdiff_t n) { return sum64_body(s, 2, n); } \
    ATTR float bf16k_prod32_##TIER(const char *s, ptrdiff_t ss, ptrdiff_t n) { return PROD32_##TIER(s, ss, n); }\
    ATTR int64_t bf16k_cnz_##TIER(const char *s, ptrdiff_t n) { return cnz_body(s, 2, n); } \
    ATTR void bf16k_add_to_f32_##TIER(const char *a, const char *b, char *o, ptrdiff_t n)      \
    {                                                                                          \
        add_to_f32_body(a, b, o, n);                                                           \
    }

/* the avx512 tier runs the AVX2 lanes too (tested here; an AVX-512 form is left for a CPU that
 * can run its tests) */
#define PROD32_baseline(s, ss, n) prod32_cascade(s, ss, n, prod_lanes)
#define PROD32_avx2(s, ss, n) prod32_cascade(s, ss, n, prod_lanes_avx2)
#define PROD32_avx512(s, ss, n) prod32_cascade(s, ss, n, prod_lanes_avx2)
DEFINE_SUM32(baseline, )
DEFINE_REDUCE(baseline, )
#if defined(BF16K_X86)
DEFINE_SUM32(avx2, KTARGET_AVX2)
DEFINE_REDUCE(avx2, KTARGET_AVX2)
DEFINE_REDUCE(avx512, KTARGET_AVX512)
#endif

/* ------------------------------------------------------------------------------------------ */
/* public entry points                                                                        */

/*
 * Which NaN a sum or product returns when the data hold several is not fixed by C (a compiler
 * may swap the operands of an addition), so it could differ between tiers. The public entry
 * points return the first NaN of the data, quietened, as adding the elements one by one would
 * (tests/test_kernels_reduce.py::test_nan_results_agree_across_tiers); a NaN made by inf - inf
 * or 0 * inf, with no NaN in the data, is the CPU's default NaN at every tier.
 */
static double first_nan(const char *s, ptrdiff_t ss, ptrdiff_t n, double result)
{
    for (ptrdiff_t i = 0; i < n; i++) {
        bf16_t h = ld16(s + i * ss);
        if (bf16_isnan(h)) return (double)bf16_to_f32((bf16_t)(h | 0x0040));
    }
    return result;
}

/* out of line: its leaves' stack frame is not set up for the short sums */
__attribute__((noinline)) static float sum32_strided(const char *s, ptrdiff_t ss, ptrdiff_t n)
{
    return sum32_body(s, ss, n);
}

float bf16_sum_f32(const void *src, ptrdiff_t stride, ptrdiff_t n)
{
    if (n <= 0) return 0.0f;
    const char *s = (const char *)src;
    float r;
    if (n <= SUM_VEC) {
        /* what the cascade does with fewer than SUM_VEC elements (its tail lanes, started at
         * -0, then hsum8f), without its set-up: sums of short rows are calls of a few elements
         * (tests/test_kernels_reduce.py::test_short_sums_add_in_the_cascades_order) */
        float v[SUM_VEC];
        for (int j = 0; j < SUM_VEC; j++) v[j] = j < n ? bf16_to_f32(ld16(s + j * stride)) : -0.0f;
        r = hsum8f(v);
    }
    else {
        r = stride == 2 ? bf16k_table_get()->sum32(s, n) : sum32_strided(s, stride, n);
    }
    return r == r ? r : (float)first_nan(s, stride, n, r);
}

void bf16_add_to_f32(const void *a, const void *b, void *out, ptrdiff_t n)
{
    if (n > 0) bf16k_table_get()->add_to_f32((const char *)a, (const char *)b, (char *)out, n);
}

double bf16_sum_f64(const void *src, ptrdiff_t stride, ptrdiff_t n)
{
    if (n <= 0) return 0.0;
    const char *s = (const char *)src;
    double r = stride == 2 ? bf16k_table_get()->sum64(s, n) : sum64_body(s, stride, n);
    return r == r ? r : first_nan(s, stride, n, r);
}

float bf16_prod_f32(const void *src, ptrdiff_t stride, ptrdiff_t n)
{
    if (n <= 0) return 1.0f;
    const char *s = (const char *)src;
    float r = bf16k_table_get()->prod32(s, stride, n);
    return r == r ? r : (float)first_nan(s, stride, n, r);
}

int64_t bf16_count_nonzero(const void *data, ptrdiff_t stride, ptrdiff_t n)
{
    if (n <= 0) return 0;
    if (stride == 2) return bf16k_table_get()->cnz((const char *)data, n);
    return cnz_body((const char *)data, stride, n);
}
