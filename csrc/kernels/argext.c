/*
 * kernels/argext.c - numpy argmax/argmin over contiguous bfloat16 (see kernels.h).
 *
 * Each value maps to a 16-bit integer key whose order is numpy's (NaN above everything), so the
 * search is an integer max per block, which vectorises, followed by a scan of the one block that
 * holds the winner for its first occurrence.
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
DEFINE_ARGEXT(avx2, KTARGET_AVX2)
DEFINE_ARGEXT(avx512, KTARGET_AVX512)
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
