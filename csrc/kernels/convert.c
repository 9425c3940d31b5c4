/*
 * kernels/convert.c - bulk conversions between bfloat16 and float32 (see kernels.h).
 *
 * The portable loops are the scalar bf16.h functions applied per element; the AVX2 versions are
 * lane-wise transcriptions of the same formulas. Large outputs use non-temporal stores: the
 * output is not re-read soon, and streaming saves the read-for-ownership traffic.
 */
#include "kernels.h"
#include "kernels/internal.h"
#include "bf16.h"

#if defined(BF16K_X86)
#include <immintrin.h>
#endif

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

int bf16k_from_f32_baseline(const char *s, char *d, ptrdiff_t n)
{
    return from_f32_body(s, 4, d, 2, n);
}

void bf16k_to_f32_baseline(const char *s, char *d, ptrdiff_t n) { to_f32_body(s, 2, d, 4, n); }

#if defined(BF16K_X86)
/*
 * AVX2 conversions, written with intrinsics: GCC's auto-vectorisation of bf16_round_bits_rne
 * narrows and widens needlessly and runs ~20% slower than memory bandwidth allows.
 * rne8_avx2 is the lane-wise transcription of bf16_round_bits_rne (bf16.h) - same formula,
 * same NaN rule.
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

KTARGET_AVX2 int bf16k_from_f32_avx2(const char *s, char *d, ptrdiff_t n)
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

KTARGET_AVX2 void bf16k_to_f32_avx2(const char *s, char *d, ptrdiff_t n)
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

/* ------------------------------------------------------------------------------------------ */
/* public entry points                                                                        */

#define CONV_BLOCK 512

void bf16_from_f32_array(const void *src, ptrdiff_t src_stride, void *dst, ptrdiff_t dst_stride,
                         ptrdiff_t n, int *overflow)
{
    if (n <= 0) return;
    int ovf;
    const bf16k_table *t = bf16k_table_get();
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
        bf16k_table_get()->to_f32((const char *)src, (char *)dst, n);
    else
        to_f32_body((const char *)src, src_stride, (char *)dst, dst_stride, n);
}
