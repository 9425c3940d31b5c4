/*
 * kernels/argext.c - numpy argmax/argmin over contiguous bfloat16 (see kernels.h).
 *
 * Each value maps to a 16-bit integer key whose order is numpy's (NaN above everything), so the
 * search is an integer max per block, which vectorises (the AVX-512 tier is written with
 * intrinsics), followed by a scan of the one block that holds the winner for its first
 * occurrence. tests/test_kernels_reduce.py compares every tier with numpy's float32 argmax.
 */
#include "kernels.h"
#include "kernels/internal.h"
#include "bf16.h"

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

#define DEFINE_ARGEXT(TIER, ATTR)                                                              \
    ATTR ptrdiff_t bf16k_argmax_##TIER(const char *s, ptrdiff_t n) { return amax_body(s, n, 0); } \
    ATTR ptrdiff_t bf16k_argmin_##TIER(const char *s, ptrdiff_t n) { return amax_body(s, n, 1); }

DEFINE_ARGEXT(baseline, )
#if defined(BF16K_X86)
#include <immintrin.h>

/* amax_key on 16 lanes; flip is all ones for argmin (the `negate` of amax_key), else zero */
KTARGET_AVX2 static inline __m256i amax_key16(__m256i h, __m256i flip)
{
    __m256i mag = _mm256_and_si256(h, _mm256_set1_epi16(0x7fff));
    __m256i sm = _mm256_xor_si256(_mm256_srai_epi16(h, 15), flip);
    __m256i ord = _mm256_sub_epi16(_mm256_xor_si256(mag, sm), sm);
    __m256i nm = _mm256_srai_epi16(_mm256_sub_epi16(_mm256_set1_epi16((short)BF16_INF), mag), 15);
    return _mm256_blendv_epi8(ord, _mm256_set1_epi16(0x7fff), nm); /* nm ? NaN key : ord */
}

/* amax_body with AVX2: block maxima 16 lanes wide and the search for the first winner 16
 * lanes a compare (the compiler left that search scalar: it was most of a 300-element row's
 * time, x.argmax(axis=1) on 316 x 316 62 -> 20 us); tails of under 16 elements scalar. */
KTARGET_AVX2 static ptrdiff_t amax_avx2(const char *s, ptrdiff_t n, int negate)
{
    const __m256i flip = negate ? _mm256_set1_epi16(-1) : _mm256_setzero_si256();
    int16_t best = -32768;
    ptrdiff_t bestblock = 0;
    for (ptrdiff_t b = 0; b < n; b += AMAX_BLOCK) {
        ptrdiff_t m = n - b < AMAX_BLOCK ? n - b : AMAX_BLOCK;
        const char *p = s + 2 * b;
        __m256i v0 = _mm256_set1_epi16(-32768), v1 = v0;
        ptrdiff_t i = 0;
        for (; i + 32 <= m; i += 32) {
            v0 = _mm256_max_epi16(v0, amax_key16(_mm256_loadu_si256((const __m256i *)(p + 2 * i)), flip));
            v1 = _mm256_max_epi16(v1, amax_key16(_mm256_loadu_si256((const __m256i *)(p + 2 * i + 32)), flip));
        }
        for (; i + 16 <= m; i += 16) {
            v0 = _mm256_max_epi16(v0, amax_key16(_mm256_loadu_si256((const __m256i *)(p + 2 * i)), flip));
        }
        v0 = _mm256_max_epi16(v0, v1);
        int16_t lanes[16];
        _mm256_storeu_si256((__m256i *)lanes, v0);
        int16_t k = lanes[0];
        for (int j = 1; j < 16; j++) k = lanes[j] > k ? lanes[j] : k;
        for (; i < m; i++) {
            int16_t t = amax_key(ld16(p + 2 * i), negate);
            k = t > k ? t : k;
        }
        if (k > best) {
            best = k;
            bestblock = b;
            if (best == 32767) break; /* first NaN lies in this block */
        }
    }
    ptrdiff_t m = n - bestblock < AMAX_BLOCK ? n - bestblock : AMAX_BLOCK;
    const char *p = s + 2 * bestblock;
    const __m256i target = _mm256_set1_epi16(best);
    ptrdiff_t i = 0;
    for (; i + 16 <= m; i += 16) {
        __m256i key = amax_key16(_mm256_loadu_si256((const __m256i *)(p + 2 * i)), flip);
        unsigned eq = (unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi16(key, target));
        if (eq) return bestblock + i + __builtin_ctz(eq) / 2; /* two mask bits a lane */
    }
    for (; i < m; i++)
        if (amax_key(ld16(p + 2 * i), negate) == best) return bestblock + i;
    return bestblock; /* unreachable */
}

KTARGET_AVX2 ptrdiff_t bf16k_argmax_avx2(const char *s, ptrdiff_t n) { return amax_avx2(s, n, 0); }
KTARGET_AVX2 ptrdiff_t bf16k_argmin_avx2(const char *s, ptrdiff_t n) { return amax_avx2(s, n, 1); }

/* amax_key on 32 lanes; flip is all ones for argmin (the `negate` of amax_key), else zero */
KTARGET_AVX512 static inline __m512i amax_key32(__m512i h, __m512i flip)
{
    __m512i mag = _mm512_and_si512(h, _mm512_set1_epi16(0x7fff));
    __m512i sm = _mm512_xor_si512(_mm512_srai_epi16(h, 15), flip);
    __m512i ord = _mm512_sub_epi16(_mm512_xor_si512(mag, sm), sm);
    __m512i nm = _mm512_srai_epi16(_mm512_sub_epi16(_mm512_set1_epi16((short)BF16_INF), mag), 15);
    return _mm512_ternarylogic_epi32(nm, _mm512_set1_epi16(0x7fff), ord, 0xca); /* nm ? NaN key : ord */
}

KTARGET_AVX512 static inline __mmask32 first_lanes32(ptrdiff_t m) /* m in 0..32 */
{
    return m >= 32 ? (__mmask32)0xffffffffu : (__mmask32)((1u << m) - 1u);
}

/* amax_body with AVX-512BW: the block maxima and the final search both run 32 lanes wide;
 * masked loads for partial vectors, whose masked-out lanes take no part. */
KTARGET_AVX512 static ptrdiff_t amax_avx512(const char *s, ptrdiff_t n, int negate)
{
    const __m512i flip = negate ? _mm512_set1_epi16(-1) : _mm512_setzero_si512();
    int16_t best = -32768;
    ptrdiff_t bestblock = 0;
    for (ptrdiff_t b = 0; b < n; b += AMAX_BLOCK) {
        ptrdiff_t m = n - b < AMAX_BLOCK ? n - b : AMAX_BLOCK;
        const char *p = s + 2 * b;
        __m512i v0 = _mm512_set1_epi16(-32768), v1 = v0;
        ptrdiff_t i = 0;
        for (; i + 64 <= m; i += 64) {
            v0 = _mm512_max_epi16(v0, amax_key32(_mm512_loadu_si512(p + 2 * i), flip));
            v1 = _mm512_max_epi16(v1, amax_key32(_mm512_loadu_si512(p + 2 * i + 64), flip));
        }
        for (; i < m; i += 32) {
            __mmask32 k = first_lanes32(m - i);
            __m512i key = amax_key32(_mm512_maskz_loadu_epi16(k, p + 2 * i), flip);
            v0 = _mm512_mask_max_epi16(v0, k, v0, key);
        }
        v0 = _mm512_max_epi16(v0, v1);
        int16_t lanes[32];
        _mm512_storeu_si512(lanes, v0);
        int16_t k = lanes[0];
        for (int j = 1; j < 32; j++) k = lanes[j] > k ? lanes[j] : k;
        if (k > best) {
            best = k;
            bestblock = b;
            if (best == 32767) break; /* first NaN lies in this block */
        }
    }
    ptrdiff_t m = n - bestblock < AMAX_BLOCK ? n - bestblock : AMAX_BLOCK;
    const char *p = s + 2 * bestblock;
    const __m512i target = _mm512_set1_epi16(best);
    for (ptrdiff_t i = 0; i < m; i += 32) {
        __mmask32 k = first_lanes32(m - i);
        __m512i key = amax_key32(_mm512_maskz_loadu_epi16(k, p + 2 * i), flip);
        __mmask32 eq = _mm512_mask_cmpeq_epi16_mask(k, key, target);
        if (eq) return bestblock + i + __builtin_ctz(eq);
    }
    return bestblock; /* unreachable */
}

KTARGET_AVX512 ptrdiff_t bf16k_argmax_avx512(const char *s, ptrdiff_t n) { return amax_avx512(s, n, 0); }
KTARGET_AVX512 ptrdiff_t bf16k_argmin_avx512(const char *s, ptrdiff_t n) { return amax_avx512(s, n, 1); }
#endif

ptrdiff_t bf16_argmax(const void *data, ptrdiff_t n)
{
    if (n <= 0) return -1;
    return bf16k_table_get()->argmax((const char *)data, n);
}

ptrdiff_t bf16_argmin(const void *data, ptrdiff_t n)
{
    if (n <= 0) return -1;
    return bf16k_table_get()->argmin((const char *)data, n);
}
