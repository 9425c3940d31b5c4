/*
 * kernels/convert.c - bulk conversions between bfloat16 and float32/float64 (see kernels.h).
 *
 * The portable loops are the scalar bf16.h functions applied per element; the AVX2 and AVX-512
 * versions are lane-wise transcriptions of the same formulas, and the AVX512_BF16 float32 ->
 * bfloat16 loop uses the instruction that rounds the same way (tests/test_kernels_convert.py
 * compares every tier with an independent reference). Large outputs use non-temporal stores:
 * the output is not re-read soon, and streaming saves the read-for-ownership traffic.
 */
#include "kernels.h"
#include "kernels/internal.h"
#include "bf16.h"

#include <fenv.h>

#if defined(BF16K_X86)
#include <immintrin.h>
#endif

#define NT_MIN_BYTES ((ptrdiff_t)1 << 22) /* stream outputs of at least 4 MiB */

/*
 * Streaming loops also prefetch their input this many bytes ahead: one core's read bandwidth is
 * their limit (on an Ice Lake Xeon, reading 64 MiB alone takes about 0.9x the time of a 64 MiB
 * float32 copy) and the hardware prefetcher alone keeps too few lines in flight; with it,
 * float32 -> bfloat16 of 2^24 elements went from 0.80x to 1.05x a float32 copy and back from
 * 1.33x to 1.50x (the conversion rows of benchmarks/bench_elementwise.py). A prefetch never
 * faults, so reaching past the end of the input is harmless.
 */
#ifndef PREFETCH_AHEAD
#define PREFETCH_AHEAD 4096
#endif
#define PREFETCH(p) _mm_prefetch((const char *)((uintptr_t)(p) + PREFETCH_AHEAD), _MM_HINT_T0)

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

KINLINE void to_f64_body(const char *s, ptrdiff_t ss, char *d, ptrdiff_t ds, ptrdiff_t n)
{
    for (ptrdiff_t i = 0; i < n; i++) {
        double v = (double)bf16_to_f32(ld16(s + i * ss));
        memcpy(d + i * ds, &v, 8);
    }
}

/* IEEE float16 <-> bfloat16 (the casts between the 16-bit formats): float16 widens exactly to
 * float32 and rounds once; bfloat16 widens exactly and rounds once to float16, overflow decided
 * on the bits (bf16.h, f32_to_f16_bits). */
KINLINE void from_f16_body(const char *s, char *d, ptrdiff_t n)
{
    for (ptrdiff_t i = 0; i < n; i++) st16(d + 2 * i, f32_to_bf16(f16_bits_to_f32(ld16(s + 2 * i))));
}

KINLINE int to_f16_body(const char *s, char *d, ptrdiff_t n)
{
    int ovf = 0, unf = 0;
    for (ptrdiff_t i = 0; i < n; i++)
        st16(d + 2 * i, f32_to_f16_bits(bf16_to_f32(ld16(s + 2 * i)), &ovf, &unf));
    return (ovf ? BF16K_OVERFLOW : 0) | (unf ? BF16K_UNDERFLOW : 0);
}

void bf16k_from_f16_baseline(const char *s, char *d, ptrdiff_t n) { from_f16_body(s, d, n); }
int bf16k_to_f16_baseline(const char *s, char *d, ptrdiff_t n) { return to_f16_body(s, d, n); }

int bf16k_from_f32_baseline(const char *s, char *d, ptrdiff_t n)
{
    return from_f32_body(s, 4, d, 2, n);
}

void bf16k_to_f32_baseline(const char *s, char *d, ptrdiff_t n) { to_f32_body(s, 2, d, 4, n); }
void bf16k_to_f64_baseline(const char *s, char *d, ptrdiff_t n) { to_f64_body(s, 2, d, 8, n); }

/*
 * Integers as float32 for the casts' blocks (casts.c): plain loops the compiler vectorises,
 * compiled per tier. A block of int64 took 21 us per 2^15 elements compiled for the baseline
 * (SSE2 has no 64-bit compare), 6 us at avx512 (AMD EPYC Zen 5). The same exact values at every
 * tier (tests/test_kernels_convert.py::test_integers_round_once).
 */
KINLINE int i64_as_f32_body(const char *s, ptrdiff_t ss, float *d, ptrdiff_t n)
{
    int small = 1;
    for (ptrdiff_t i = 0; i < n; i++) {
        int64_t v;
        memcpy(&v, s + ss * i, 8);
        small &= (uint64_t)v + ((uint64_t)1 << 24) <= ((uint64_t)1 << 25);
        d[i] = (float)(int32_t)v; /* exact when small; unused otherwise */
    }
    return small;
}

KINLINE int i32_as_f32_body(const char *s, ptrdiff_t ss, float *d, ptrdiff_t n)
{
    int small = 1;
    for (ptrdiff_t i = 0; i < n; i++) {
        int32_t v;
        memcpy(&v, s + ss * i, 4);
        small &= (uint32_t)v + (1u << 24) <= (1u << 25);
        d[i] = (float)v;
    }
    return small;
}

/* Contiguous and every-other-element sources (a[::2]) as constant strides, which the compiler
 * vectorises; any other stride element by element. */
#define DEFINE_INT_AS_F32(TIER, ATTR)                                                          \
    ATTR int bf16k_i64_as_f32_##TIER(const char *s, ptrdiff_t ss, float *d, ptrdiff_t n)       \
    {                                                                                          \
        return ss == 8    ? i64_as_f32_body(s, 8, d, n)                                        \
               : ss == 16 ? i64_as_f32_body(s, 16, d, n)                                       \
                          : i64_as_f32_body(s, ss, d, n);                                      \
    }                                                                                          \
    ATTR int bf16k_i32_as_f32_##TIER(const char *s, ptrdiff_t ss, float *d, ptrdiff_t n)       \
    {                                                                                          \
        return ss == 4   ? i32_as_f32_body(s, 4, d, n)                                         \
               : ss == 8 ? i32_as_f32_body(s, 8, d, n)                                         \
                         : i32_as_f32_body(s, ss, d, n);                                       \
    }
DEFINE_INT_AS_F32(baseline, )
#if defined(BF16K_X86)
DEFINE_INT_AS_F32(avx2, KTARGET_AVX2)
DEFINE_INT_AS_F32(avx512, KTARGET_AVX512)
#endif

/*
 * float64 -> bfloat16 flags, decided on the bits so that every tier reports the same ones:
 * overflow when a finite input became inf; underflow (numpy's float16 rule: tiny before
 * rounding) when 0 < |d| < 2^-126 and the result is inexact.
 */
#define F64_ABS 0x7fffffffffffffffull
#define F64_INF 0x7ff0000000000000ull
#define F64_MIN_NORMAL_BF16 0x3810000000000000ull /* 2^-126 */

KINLINE int from_f64_body(const char *s, ptrdiff_t ss, char *d, ptrdiff_t ds, ptrdiff_t n)
{
    int flags = 0;
    for (ptrdiff_t i = 0; i < n; i++) {
        double v;
        memcpy(&v, s + i * ss, 8);
        uint64_t a = f64_bits(v) & F64_ABS;
        bf16_t h = f64_to_bf16(v);
        if ((h & BF16_ABS) == BF16_INF && a < F64_INF) flags |= BF16K_OVERFLOW;
        if (a != 0 && a < F64_MIN_NORMAL_BF16 && f64_bits(bf16_to_f64(h)) != f64_bits(v))
            flags |= BF16K_UNDERFLOW;
        st16(d + i * ds, h);
    }
    return flags;
}

/*
 * The IEEE flags a conversion's FPU steps raise are discarded, so that only the flags computed
 * on the bits, the same for every tier, reach the caller: kf_mark notes which were set before,
 * kf_discard clears those raised since. Inexact, which NumPy never reports, is left as it is:
 * then the common call reads the status twice and writes nothing (fegetexceptflag and
 * fesetexceptflag cost more than a one-element call's work: np.add.at of a float64 loop on
 * bfloat16, see README; tests/test_kernels_convert.py::test_conversions_leave_no_flags_of_their_own).
 */
static inline int kf_mark(void) { return fetestexcept(FE_ALL_EXCEPT & ~FE_INEXACT); }
static inline void kf_discard(int before)
{
    int raised = fetestexcept(FE_ALL_EXCEPT & ~FE_INEXACT) & ~before;
    if (raised) feclearexcept(raised);
}

/* f64_to_bf16 narrows through the FPU, which raises its own flags (inexact, and underflow or
 * overflow of the float32 step): discarded (kf_mark). */
int bf16k_from_f64_baseline(const char *s, char *d, ptrdiff_t n)
{
    int before = kf_mark();
    int flags = from_f64_body(s, 8, d, 2, n);
    kf_discard(before);
    return flags;
}

#if defined(BF16K_X86)
/*
 * AVX2 conversions, written with intrinsics: GCC's auto-vectorisation of bf16_round_bits_rne
 * narrows and widens needlessly and runs ~20% slower than memory bandwidth allows.
 * rne8_avx2 is the lane-wise transcription of bf16_round_bits_rne (bf16.h) - same formula,
 * same NaN rule.
 */
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

/*
 * float64 -> bfloat16 on the bits, 4 lanes per vector. Where the result is a normal bfloat16
 * or inf by overflow (2^-126 <= |d| < 2^128) it is the float64's sign, exponent rebiased and top
 * 7 mantissa bits rounded to nearest even at bit 45: one rounding from the float64, as
 * f64_to_bf16 (bf16.h) rounds. Zeros keep their sign. A block of 16 with any other lane (tiny,
 * inf, NaN, beyond 2^128) runs the scalar loop, which decides those lanes' flags; the FPU flags
 * that loop raises are put back. (tests/test_kernels_convert.py::
 * test_narrow_float64_matches_exact_rounding and ::test_narrow_float64_flags at this tier.)
 */
KTARGET_AVX2 static inline __m256i f64_bits4_avx2(const char *s, __m256i *ok)
{
    const __m256i absm = _mm256_set1_epi64x(0x7fffffffffffffffll);
    const __m256i sign = _mm256_set1_epi64x((long long)0x8000000000000000ull);
    __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)s);
    __m256i a = _mm256_and_si256(v, absm);
    /* 2^-126 <= a < 2^128: a - 2^-126 below 254 binades, compared unsigned (sign flipped) */
    __m256i q = _mm256_xor_si256(_mm256_sub_epi64(a, _mm256_set1_epi64x(0x3810000000000000ll)), sign);
    __m256i normal = _mm256_cmpgt_epi64(_mm256_set1_epi64x((long long)(0x0fe0000000000000ull ^ 0x8000000000000000ull)), q);
    __m256i zero = _mm256_cmpeq_epi64(a, _mm256_setzero_si256());
    *ok = _mm256_and_si256(*ok, _mm256_or_si256(normal, zero));
    /* exponent rebiased from 1023 to 127, then rounded to nearest even at bit 45 */
    __m256i r = _mm256_sub_epi64(a, _mm256_set1_epi64x(0x3800000000000000ll));
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi64(r, 45), _mm256_set1_epi64x(1));
    __m256i h = _mm256_srli_epi64(_mm256_add_epi64(_mm256_add_epi64(r, _mm256_set1_epi64x(0xfffffffffffll)), lsb), 45);
    h = _mm256_andnot_si256(zero, h);
    return _mm256_or_si256(h, _mm256_and_si256(_mm256_srli_epi64(v, 48), _mm256_set1_epi64x(0x8000)));
}

/* 16 float64 -> 16 bfloat16 in element order; *ok keeps all ones while every lane was fast */
KTARGET_AVX2 static inline __m256i f64_to_bf16_16_avx2(const char *s, __m256i *ok)
{
    __m256i h0 = f64_bits4_avx2(s, ok), h1 = f64_bits4_avx2(s + 32, ok);
    __m256i h2 = f64_bits4_avx2(s + 64, ok), h3 = f64_bits4_avx2(s + 96, ok);
    /* each 64-bit lane holds one value below 2^16: two packs gather them per 128-bit half
     * (lanes 0-1 of each input low, 2-3 high), the permute puts each input's four together */
    __m256i p = _mm256_packus_epi32(_mm256_packus_epi32(h0, h1), _mm256_packus_epi32(h2, h3));
    return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

KTARGET_AVX2 int bf16k_from_f64_avx2(const char *s, char *d, ptrdiff_t n)
{
    int before = -1, flags = 0; /* -1: kf_mark not called yet */
    const __m256i ones = _mm256_set1_epi32(-1);
    const __m256i habs = _mm256_set1_epi16(0x7fff), hinf = _mm256_set1_epi16(0x7f80);
    __m256i ov = _mm256_setzero_si256();
    ptrdiff_t i = 0;
    int stream = n >= NT_MIN_BYTES / 2 && ((uintptr_t)d & 1u) == 0;
    if (stream) {
        ptrdiff_t head = (ptrdiff_t)(((32u - ((uintptr_t)d & 31u)) & 31u) / 2u);
        before = kf_mark();
        flags = from_f64_body(s, 8, d, 2, head);
        i = head;
    }
    for (; i + 16 <= n; i += 16) {
        if (stream) {
            PREFETCH(s + 8 * i);
            PREFETCH(s + 8 * i + 64);
        }
        __m256i ok = ones;
        __m256i p = f64_to_bf16_16_avx2(s + 8 * i, &ok);
        if (!_mm256_testc_si256(ok, ones)) {
            /* a lane outside the fast range: this block lane by lane */
            if (before < 0) before = kf_mark();
            flags |= from_f64_body(s + 8 * i, 8, d + 2 * i, 2, 16);
            continue;
        }
        /* in fast lanes, inf comes only from rounding a finite value up: an overflow */
        ov = _mm256_or_si256(ov, _mm256_cmpeq_epi16(_mm256_and_si256(p, habs), hinf));
        if (stream) _mm256_stream_si256((__m256i *)(void *)(d + 2 * i), p);
        else _mm256_storeu_si256((__m256i *)(void *)(d + 2 * i), p);
    }
    if (stream) _mm_sfence();
    if (i < n) {
        if (before < 0) before = kf_mark();
        flags |= from_f64_body(s + 8 * i, 8, d + 2 * i, 2, n - i);
    }
    if (!_mm256_testz_si256(ov, ov)) flags |= BF16K_OVERFLOW;
    if (before >= 0) kf_discard(before);
    return flags;
}

/*
 * float16 <-> bfloat16 with F16C (part of the avx2 tier): vcvtph2ps widens exactly, rne8_avx2
 * rounds once; vcvtps2ph rounds the exact float32 once to nearest even (its immediate, not
 * MXCSR). NaNs come out quiet with their sign and top payload bits, as in the scalar bodies;
 * the flags the instructions raise (invalid for a signalling NaN, precision, underflow) are put
 * back, and overflow and underflow are decided on the bits as in f32_to_f16_bits: finite and at
 * least 65520; nonzero, below 2^-14 and not given back by widening the result
 * (tests/test_kernels_convert.py::test_float16_casts_every_pattern at every tier).
 */
#define KTARGET_AVX2_F16C __attribute__((target("avx2,fma,f16c"))) /* the tier requires f16c */

KTARGET_AVX2_F16C void bf16k_from_f16_avx2(const char *s, char *d, ptrdiff_t n)
{
    int before = kf_mark();
    ptrdiff_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i a = _mm256_castps_si256(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(s + 2 * i))));
        __m256i b = _mm256_castps_si256(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(s + 2 * i + 16))));
        __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(rne8_avx2(a), rne8_avx2(b)), 0xd8);
        _mm256_storeu_si256((__m256i *)(void *)(d + 2 * i), p);
    }
    from_f16_body(s + 2 * i, d + 2 * i, n - i);
    kf_discard(before);
}

KTARGET_AVX2_F16C int bf16k_to_f16_avx2(const char *s, char *d, ptrdiff_t n)
{
    int before = kf_mark();
    const __m256i absm = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    const __m256i big = _mm256_set1_epi32(0x477fefff); /* 65520 = 0x477ff000: rounds to inf */
    const __m256i tiny = _mm256_set1_epi32(0x38800000); /* 2^-14, float16's least normal */
    __m256i ov = _mm256_setzero_si256(), un = _mm256_setzero_si256();
    ptrdiff_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(s + 2 * i));
        __m256i u = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
        __m256i a = _mm256_and_si256(u, absm);
        ov = _mm256_or_si256(ov, _mm256_and_si256(_mm256_cmpgt_epi32(a, big), _mm256_cmpgt_epi32(inf, a)));
        __m128i r = _mm256_cvtps_ph(_mm256_castsi256_ps(u), _MM_FROUND_TO_NEAREST_INT);
        __m256i lost = _mm256_andnot_si256(_mm256_cmpeq_epi32(_mm256_castps_si256(_mm256_cvtph_ps(r)), u),
                                           _mm256_cmpgt_epi32(tiny, a));
        un = _mm256_or_si256(un, lost); /* a zero is given back exactly */
        _mm_storeu_si128((__m128i *)(void *)(d + 2 * i), r);
    }
    int flags = to_f16_body(s + 2 * i, d + 2 * i, n - i);
    if (!_mm256_testz_si256(ov, ov)) flags |= BF16K_OVERFLOW;
    if (!_mm256_testz_si256(un, un)) flags |= BF16K_UNDERFLOW;
    kf_discard(before);
    return flags;
}

/* bfloat16 -> float64: widened to float32 (exact) and converted 4 lanes at a time (exact; a
 * signalling NaN raises "invalid" and comes out quiet, as the scalar conversion does). */
KTARGET_AVX2 void bf16k_to_f64_avx2(const char *s, char *d, ptrdiff_t n)
{
    ptrdiff_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(s + 2 * i));
        __m256 f = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
        _mm256_storeu_pd((double *)(void *)(d + 8 * i), _mm256_cvtps_pd(_mm256_castps256_ps128(f)));
        _mm256_storeu_pd((double *)(void *)(d + 8 * i + 32), _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1)));
    }
    to_f64_body(s + 2 * i, 2, d + 8 * i, 8, n - i);
}

/*
 * AVX-512 (F/BW/VL/DQ) conversions. Tails use masked loads and stores (masked-out lanes are
 * neither read nor written), so there is no scalar remainder loop.
 */

/*
 * bf16_round_bits_rne on 16 lanes, result in the low 16 bits of each 32-bit lane. Written with
 * plain vector arithmetic (sign bits as masks) rather than compare-into-mask instructions,
 * which all compete for one execution port. Accumulates overflow lanes in the sign bits of
 * *ovf: finite and at least halfway past the largest finite bfloat16, so rounding to inf.
 */
KTARGET_AVX512 static inline __m512i rne16_avx512(__m512i u, __m512i *ovf)
{
    const __m512i inf = _mm512_set1_epi32(0x7f800000);
    __m512i a = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
    /* sign of (0x7f7f7fff - a): a past the halfway point; sign of (a - inf): a finite */
    __m512i past_half = _mm512_sub_epi32(_mm512_set1_epi32(0x7f7f7fff), a);
    __m512i finite = _mm512_sub_epi32(a, inf);
    *ovf = _mm512_ternarylogic_epi32(*ovf, past_half, finite, 0xf8); /* ovf | (past & fin) */
    __m512i isnan = _mm512_srai_epi32(_mm512_sub_epi32(inf, a), 31); /* all ones iff NaN */
    __m512i hi = _mm512_srli_epi32(u, 16);
    __m512i bump = _mm512_add_epi32(_mm512_set1_epi32(0x7fff),
                                    _mm512_and_si512(hi, _mm512_set1_epi32(1)));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, bump), 16);
    __m512i quiet = _mm512_or_si512(hi, _mm512_set1_epi32(0x0040));
    return _mm512_ternarylogic_epi32(isnan, quiet, r, 0xca); /* isnan ? quiet : r */
}

/* 16 lanes -> 16 bfloat16 (for heads and tails) */
KTARGET_AVX512 static inline __m256i rne16_narrow_avx512(__m512i u, __m512i *ovf)
{
    return _mm512_cvtepi32_epi16(rne16_avx512(u, ovf));
}

KTARGET_AVX512 int bf16k_from_f32_avx512(const char *s, char *d, ptrdiff_t n)
{
    ptrdiff_t i = 0;
    __m512i ovf = _mm512_setzero_si512();
    int stream = n >= NT_MIN_BYTES / 2 && ((uintptr_t)d & 1u) == 0;
    if (stream) {
        /* masked head up to a 64-byte aligned destination (at most 31 elements) */
        ptrdiff_t head = (ptrdiff_t)(((64u - ((uintptr_t)d & 63u)) & 63u) / 2u);
        for (; i < head; i += 16) {
            ptrdiff_t m = head - i < 16 ? head - i : 16;
            __mmask16 k = (__mmask16)((1u << m) - 1u);
            __m256i h = rne16_narrow_avx512(_mm512_maskz_loadu_epi32(k, s + 4 * i), &ovf);
            _mm256_mask_storeu_epi16(d + 2 * i, k, h);
        }
        i = head;
    }
    /* packus interleaves the two inputs per 128-bit block; the permute restores the order */
    const __m512i order = _mm512_set_epi64(7, 5, 3, 1, 6, 4, 2, 0);
    if (stream) {
        for (; i + 32 <= n; i += 32) {
            PREFETCH(s + 4 * i);
            PREFETCH(s + 4 * i + 64);
            __m512i a = rne16_avx512(_mm512_loadu_si512(s + 4 * i), &ovf);
            __m512i b = rne16_avx512(_mm512_loadu_si512(s + 4 * i + 64), &ovf);
            _mm512_stream_si512((void *)(d + 2 * i),
                                _mm512_permutexvar_epi64(order, _mm512_packus_epi32(a, b)));
        }
        _mm_sfence();
    }
    for (; i + 32 <= n; i += 32) {
        __m512i a = rne16_avx512(_mm512_loadu_si512(s + 4 * i), &ovf);
        __m512i b = rne16_avx512(_mm512_loadu_si512(s + 4 * i + 64), &ovf);
        _mm512_storeu_si512(d + 2 * i, _mm512_permutexvar_epi64(order, _mm512_packus_epi32(a, b)));
    }
    for (; i < n; i += 16) {
        ptrdiff_t m = n - i < 16 ? n - i : 16;
        __mmask16 k = (__mmask16)((1u << m) - 1u);
        __m256i h = rne16_narrow_avx512(_mm512_maskz_loadu_epi32(k, s + 4 * i), &ovf);
        _mm256_mask_storeu_epi16(d + 2 * i, k, h);
    }
    return _mm512_movepi32_mask(ovf) != 0;
}

/* bf16_to_f32 on 16 lanes: zero-extend to 32 bits, shift into the high half */
KTARGET_AVX512 static inline __m512i widen16_avx512(__m256i h)
{
    return _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16);
}

KTARGET_AVX512 void bf16k_to_f32_avx512(const char *s, char *d, ptrdiff_t n)
{
    ptrdiff_t i = 0;
    int stream = n >= NT_MIN_BYTES / 4 && ((uintptr_t)d & 3u) == 0;
    if (stream) {
        ptrdiff_t head = (ptrdiff_t)(((64u - ((uintptr_t)d & 63u)) & 63u) / 4u); /* < 16 */
        __mmask16 k = (__mmask16)((1u << head) - 1u);
        _mm512_mask_storeu_epi32(d, k, widen16_avx512(_mm256_maskz_loadu_epi16(k, s)));
        i = head;
    }
    if (stream) {
        for (; i + 32 <= n; i += 32) {
            PREFETCH(s + 2 * i);
            _mm512_stream_si512((void *)(d + 4 * i),
                                widen16_avx512(_mm256_loadu_si256((const void *)(s + 2 * i))));
            _mm512_stream_si512((void *)(d + 4 * i + 64),
                                widen16_avx512(_mm256_loadu_si256((const void *)(s + 2 * i + 32))));
        }
        _mm_sfence();
    }
    for (; i + 32 <= n; i += 32) {
        _mm512_storeu_si512(d + 4 * i, widen16_avx512(_mm256_loadu_si256((const void *)(s + 2 * i))));
        _mm512_storeu_si512(d + 4 * i + 64,
                            widen16_avx512(_mm256_loadu_si256((const void *)(s + 2 * i + 32))));
    }
    for (; i < n; i += 16) {
        ptrdiff_t m = n - i < 16 ? n - i : 16;
        __mmask16 k = (__mmask16)((1u << m) - 1u);
        _mm512_mask_storeu_epi32(d + 4 * i, k,
                                 widen16_avx512(_mm256_maskz_loadu_epi16(k, s + 2 * i)));
    }
}

/*
 * float64 -> bfloat16 on 16 lanes with one rounding, as f64_to_bf16 (bf16.h): narrow to float32
 * toward zero and make the result odd when inexact (round to odd), then round to nearest even.
 * The conversions suppress exceptions ({sae}) and the comparisons are on the bits, so no FPU
 * flag is raised. Overflow and underflow (as in from_f64_body) are accumulated in the sign bits
 * of *ovf and *unf with plain vector arithmetic.
 */
KTARGET_AVX512 static inline __m256i f64_round_odd_8_avx512(__m512d x)
{
    __m256 f = _mm512_cvt_roundpd_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m512d back = _mm512_cvt_roundps_pd(f, _MM_FROUND_NO_EXC);
    __mmask8 inexact = _mm512_cmpneq_epi64_mask(_mm512_castpd_si512(back), _mm512_castpd_si512(x));
    __m256i u = _mm256_castps_si256(f);
    return _mm256_mask_or_epi32(u, inexact, u, _mm256_set1_epi32(1));
}

KTARGET_AVX512 static inline __m256i f64_to_bf16_16_avx512(__m512d x0, __m512d x1, __m512i *ovf,
                                                          __m512i *unf)
{
    /* u: the float32 round-to-odd images; a NaN input gives a quiet float32 NaN, same sign and
     * the top bits of its payload */
    __m512i u = _mm512_inserti64x4(_mm512_castsi256_si512(f64_round_odd_8_avx512(x0)),
                                   f64_round_odd_8_avx512(x1), 1);
    const __m512i inf = _mm512_set1_epi32(0x7f800000);
    __m512i a = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
    __m512i hi = _mm512_srli_epi32(u, 16);
    __m512i bump = _mm512_add_epi32(_mm512_set1_epi32(0x7fff),
                                    _mm512_and_si512(hi, _mm512_set1_epi32(1)));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, bump), 16);
    __m512i isnan = _mm512_srai_epi32(_mm512_sub_epi32(inf, a), 31); /* all ones iff NaN */
    /* a NaN keeps its sign and the top 7 bits of its payload, quiet (f64_nan_to_bf16) */
    __m512i qnan = _mm512_or_si512(hi, _mm512_set1_epi32(BF16_QNAN));
    r = _mm512_ternarylogic_epi32(isnan, qnan, r, 0xca); /* isnan ? qnan : r */
    /* overflow: the float32 image is finite and at least halfway past the largest finite
     * bfloat16 (a finite double beyond float32's range truncates to FLT_MAX, odd) */
    __m512i past_half = _mm512_sub_epi32(_mm512_set1_epi32(0x7f7f7fff), a);
    __m512i finite = _mm512_sub_epi32(a, inf);
    *ovf = _mm512_ternarylogic_epi32(*ovf, past_half, finite, 0xf8); /* ovf | (past & fin) */
    /* underflow: |x| < 2^-126 (so is its image) and bits are lost (the image's low half is
     * nonzero, the odd bit marking a loss in the first step) */
    __m512i tiny = _mm512_sub_epi32(a, _mm512_set1_epi32(0x00800000));
    __m512i lost = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_and_si512(u, _mm512_set1_epi32(0xffff)));
    *unf = _mm512_ternarylogic_epi32(*unf, tiny, lost, 0xf8);
    return _mm512_cvtepi32_epi16(r);
}

/*
 * The usual block: every |x| in [2^-126, the midpoint above the largest finite bfloat16), where
 * rounding the double's bits to nearest even at bfloat16's last place, exponent rebiased, is
 * f64_to_bf16's result and raises nothing. A block with any other lane (zero, tiny, huge, inf,
 * NaN) goes through f64_to_bf16_16_avx512. Its two float conversions per 8 lanes had made the
 * loop compute-bound: 2^15 elements from the cache 12.7 -> 8.0 us, 2^24 6.5 -> 4.4 ms (AMD EPYC
 * Zen 5; NumPy's float64 -> float32 3.9 us and 5.9 ms). tests/test_kernels_convert.py::
 * test_narrow_float64_range_edges_alone_in_a_block (one edge value in a block of ones) and
 * ::test_narrow_float64_matches_exact_rounding.
 */
KTARGET_AVX512 static inline __m128i f64_to_bf16_8_plain(__m512d x, __mmask8 *other)
{
    const int64_t lo = 0x3810000000000000ll, hi = 0x47eff00000000000ll; /* 2^-126, midpoint */
    __m512i u = _mm512_castpd_si512(x);
    __m512i a = _mm512_and_si512(u, _mm512_set1_epi64(0x7fffffffffffffffll));
    *other |= _mm512_cmpge_epu64_mask(_mm512_sub_epi64(a, _mm512_set1_epi64(lo)),
                                      _mm512_set1_epi64(hi - lo));
    /* a - (1023 - 127) << 52 rebiases the exponent; the carry of the rounding may run into it */
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi64(a, 45), _mm512_set1_epi64(1));
    __m512i t = _mm512_add_epi64(a, _mm512_set1_epi64(((1ll << 44) - 1) - (896ll << 52)));
    __m512i r = _mm512_srli_epi64(_mm512_add_epi64(t, lsb), 45);
    r = _mm512_ternarylogic_epi64(r, _mm512_srli_epi64(u, 48), _mm512_set1_epi64(0x8000), 0xf8);
    return _mm512_cvtepi64_epi16(r);
}

KTARGET_AVX512 static inline __m256i f64_block16_avx512(const char *s, __m512i *ovf, __m512i *unf)
{
    __m512d x0 = _mm512_loadu_pd(s), x1 = _mm512_loadu_pd(s + 64);
    __mmask8 other = 0;
    __m128i r0 = f64_to_bf16_8_plain(x0, &other), r1 = f64_to_bf16_8_plain(x1, &other);
    if (__builtin_expect(other != 0, 0)) return f64_to_bf16_16_avx512(x0, x1, ovf, unf);
    return _mm256_inserti128_si256(_mm256_castsi128_si256(r0), r1, 1);
}

KTARGET_AVX512 static inline void f64_tail_avx512(const char *s, char *d, ptrdiff_t m, __m512i *ovf,
                                                  __m512i *unf)
{
    __mmask16 k = (__mmask16)((1u << m) - 1u); /* m in 1..15 */
    __m512d x0 = _mm512_maskz_loadu_pd((__mmask8)(k & 0xff), s);
    __m512d x1 = _mm512_maskz_loadu_pd((__mmask8)(k >> 8), s + 64);
    _mm256_mask_storeu_epi16(d, k, f64_to_bf16_16_avx512(x0, x1, ovf, unf));
}

KTARGET_AVX512 int bf16k_from_f64_avx512(const char *s, char *d, ptrdiff_t n)
{
    __m512i ovf = _mm512_setzero_si512(), unf = _mm512_setzero_si512();
    ptrdiff_t i = 0;
    int stream = n >= NT_MIN_BYTES / 2 && ((uintptr_t)d & 1u) == 0;
    if (stream) {
        /* masked head up to a 32-byte aligned destination (at most 15 elements) */
        i = (ptrdiff_t)(((32u - ((uintptr_t)d & 31u)) & 31u) / 2u);
        if (i) f64_tail_avx512(s, d, i, &ovf, &unf);
    }
    if (stream) {
        for (; i + 16 <= n; i += 16) {
            PREFETCH(s + 8 * i);
            PREFETCH(s + 8 * i + 64);
            _mm256_stream_si256((void *)(d + 2 * i), f64_block16_avx512(s + 8 * i, &ovf, &unf));
        }
        _mm_sfence();
    }
    for (; i + 16 <= n; i += 16) {
        _mm256_storeu_si256((void *)(d + 2 * i), f64_block16_avx512(s + 8 * i, &ovf, &unf));
    }
    if (i < n) f64_tail_avx512(s + 8 * i, d + 2 * i, n - i, &ovf, &unf);
    return (_mm512_movepi32_mask(ovf) ? BF16K_OVERFLOW : 0) |
           (_mm512_movepi32_mask(unf) ? BF16K_UNDERFLOW : 0);
}
#endif

#if defined(BF16K_AVX512BF16)
/*
 * float32 -> bfloat16 with AVX512_BF16's vcvtne2ps2bf16. The instruction rounds to nearest
 * even and makes a NaN quiet with its sign and top payload bits (the bits of
 * bf16_round_bits_rne); by its definition it neither reads MXCSR nor raises a flag. But it
 * reads float32 subnormals as zero: those lanes (exponent field 0, zeros included) get the
 * exponent field 1 first (bits + 2^23, so the rounding acts on the same low 16 bits with the
 * same parity and carries at most into exponent 2) and 0x0080 taken off their results.
 * Overflow lanes are the finite |bits| in [0x7f7f8000, 0x7f7fffff], those with
 * (bits & 0x7fff8000) == 0x7f7f8000: *ovf keeps the lane-wise minimum of
 * (bits & 0x7fff8000) ^ 0x7f7f8000, zero once a lane overflowed.
 * tests/test_kernels_convert.py checks this tier bit for bit against the integer reference
 * (test_narrow_float32_matches_integer_reference: float32 around every bfloat16 pattern, random
 * subnormals) and the flag (test_narrow_float32_overflow_flag: both ends of the range, the
 * streaming loop, near misses).
 */
KTARGET_AVX512BF16 static inline __m512i ovf_key_avx512bf16(__m512i u)
{
    return _mm512_ternarylogic_epi32(u, _mm512_set1_epi32(0x7fff8000),
                                     _mm512_set1_epi32(0x7f7f8000), 0x6a); /* (u & b) ^ c */
}

KTARGET_AVX512BF16 static inline __m512i ovf_min2_avx512bf16(__m512i acc, __m512i a, __m512i b)
{
    return _mm512_min_epu32(acc, _mm512_min_epu32(ovf_key_avx512bf16(a), ovf_key_avx512bf16(b)));
}

/* the exponent field 1 for lanes whose field is 0 (*z: those lanes) */
KTARGET_AVX512BF16 static inline __m512i subnormal_fix_avx512bf16(__m512i u, __mmask16 *z)
{
    *z = _mm512_testn_epi32_mask(u, _mm512_set1_epi32(0x7f800000));
    return _mm512_mask_or_epi32(u, *z, u, _mm512_set1_epi32(0x00800000));
}

/* 32 lanes (a: elements 0-15, b: 16-31) -> 32 bfloat16; the caller accumulates the overflow */
KTARGET_AVX512BF16 static inline __m512i cvt32_avx512bf16(__m512i a, __m512i b)
{
    __mmask16 za, zb;
    a = subnormal_fix_avx512bf16(a, &za);
    b = subnormal_fix_avx512bf16(b, &zb);
    /* the second operand fills the low half */
    __m512i h = (__m512i)_mm512_cvtne2ps_pbh(_mm512_castsi512_ps(b), _mm512_castsi512_ps(a));
    return _mm512_mask_sub_epi16(h, _mm512_kunpackw(zb, za), h, _mm512_set1_epi16(0x0080));
}

/* 16 lanes -> 16 bfloat16, overflow accumulated in *ovf (for heads and tails) */
KTARGET_AVX512BF16 static inline __m256i cvt16_avx512bf16(__m512i u, __m512i *ovf)
{
    __mmask16 z;
    *ovf = _mm512_min_epu32(*ovf, ovf_key_avx512bf16(u));
    u = subnormal_fix_avx512bf16(u, &z);
    __m256i h = (__m256i)_mm512_cvtneps_pbh(_mm512_castsi512_ps(u));
    return _mm256_mask_sub_epi16(h, z, h, _mm256_set1_epi16(0x0080));
}

/*
 * 64 elements a step, with two overflow accumulators: 32 a step with one, the chain of minimums
 * held the loop back (the kernel alone on 10^5 elements in cache, AMD EPYC Zen 5: 3.3 us against
 * 2.85 us).
 */
KTARGET_AVX512BF16 int bf16k_from_f32_avx512bf16(const char *s, char *d, ptrdiff_t n)
{
    ptrdiff_t i = 0;
    __m512i ovf = _mm512_set1_epi32(-1), ovf2 = ovf;
    int stream = n >= NT_MIN_BYTES / 2 && ((uintptr_t)d & 1u) == 0;
    if (stream) {
        /* masked head up to a 64-byte aligned destination (at most 31 elements) */
        ptrdiff_t head = (ptrdiff_t)(((64u - ((uintptr_t)d & 63u)) & 63u) / 2u);
        for (; i < head; i += 16) {
            ptrdiff_t m = head - i < 16 ? head - i : 16;
            __mmask16 k = (__mmask16)((1u << m) - 1u);
            __m512i u = _mm512_maskz_loadu_epi32(k, s + 4 * i);
            _mm256_mask_storeu_epi16(d + 2 * i, k, cvt16_avx512bf16(u, &ovf));
        }
        i = head;
        for (; i + 64 <= n; i += 64) {
            PREFETCH(s + 4 * i);
            PREFETCH(s + 4 * i + 64);
            PREFETCH(s + 4 * i + 128);
            PREFETCH(s + 4 * i + 192);
            __m512i a = _mm512_loadu_si512(s + 4 * i), b = _mm512_loadu_si512(s + 4 * i + 64);
            __m512i c = _mm512_loadu_si512(s + 4 * i + 128);
            __m512i e = _mm512_loadu_si512(s + 4 * i + 192);
            ovf = ovf_min2_avx512bf16(ovf, a, b);
            ovf2 = ovf_min2_avx512bf16(ovf2, c, e);
            _mm512_stream_si512((void *)(d + 2 * i), cvt32_avx512bf16(a, b));
            _mm512_stream_si512((void *)(d + 2 * i + 64), cvt32_avx512bf16(c, e));
        }
        _mm_sfence();
    }
    for (; i + 64 <= n; i += 64) {
        __m512i a = _mm512_loadu_si512(s + 4 * i), b = _mm512_loadu_si512(s + 4 * i + 64);
        __m512i c = _mm512_loadu_si512(s + 4 * i + 128), e = _mm512_loadu_si512(s + 4 * i + 192);
        ovf = ovf_min2_avx512bf16(ovf, a, b);
        ovf2 = ovf_min2_avx512bf16(ovf2, c, e);
        _mm512_storeu_si512(d + 2 * i, cvt32_avx512bf16(a, b));
        _mm512_storeu_si512(d + 2 * i + 64, cvt32_avx512bf16(c, e));
    }
    if (i + 32 <= n) {
        __m512i a = _mm512_loadu_si512(s + 4 * i), b = _mm512_loadu_si512(s + 4 * i + 64);
        ovf = ovf_min2_avx512bf16(ovf, a, b);
        _mm512_storeu_si512(d + 2 * i, cvt32_avx512bf16(a, b));
        i += 32;
    }
    for (; i < n; i += 16) {
        ptrdiff_t m = n - i < 16 ? n - i : 16;
        __mmask16 k = (__mmask16)((1u << m) - 1u);
        _mm256_mask_storeu_epi16(d + 2 * i, k,
                                 cvt16_avx512bf16(_mm512_maskz_loadu_epi32(k, s + 4 * i), &ovf));
    }
    ovf = _mm512_min_epu32(ovf, ovf2);
    /* a lane is zero iff some input overflowed (masked-out lanes load as zero: no overflow) */
    return _mm512_testn_epi32_mask(ovf, ovf) != 0;
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

int bf16_i64_as_f32(const void *src, ptrdiff_t stride, float *dst, ptrdiff_t n)
{
    return bf16k_table_get()->i64_as_f32((const char *)src, stride, dst, n);
}

int bf16_i32_as_f32(const void *src, ptrdiff_t stride, float *dst, ptrdiff_t n)
{
    return bf16k_table_get()->i32_as_f32((const char *)src, stride, dst, n);
}

void bf16_from_f64_array(const void *src, ptrdiff_t src_stride, void *dst, ptrdiff_t dst_stride,
                         ptrdiff_t n, int *overflow, int *underflow)
{
    if (n <= 0) return;
    int flags;
    const char *s = (const char *)src;
    char *d = (char *)dst;
    if (src_stride == 8 && dst_stride == 2) {
        flags = bf16k_table_get()->from_f64(s, d, n);
    } else {
        int before = kf_mark();
        flags = from_f64_body(s, src_stride, d, dst_stride, n);
        kf_discard(before);
    }
    if ((flags & BF16K_OVERFLOW) && overflow) *overflow = 1;
    if ((flags & BF16K_UNDERFLOW) && underflow) *underflow = 1;
}

void bf16_to_f32_array(const void *src, ptrdiff_t src_stride, void *dst, ptrdiff_t dst_stride,
                       ptrdiff_t n)
{
    if (n <= 0) return;
    const char *s = (const char *)src;
    char *d = (char *)dst;
    if (src_stride == 2 && dst_stride == 4) {
        bf16k_table_get()->to_f32(s, d, n);
    }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    else if (src_stride == 4 && dst_stride == 4) {
        /* every other element (x[::2]) into float32: each one is the low half of a 32-bit
         * load, whose high half is the element skipped (so the last is read alone). A loop
         * the compiler vectorises: 2^24 elements 9.0 -> 3.8-4.3 ms (AMD EPYC Zen 5; NumPy's
         * float32 x[::2] copy 6.1; tests/test_casts.py::test_float_casts_every_layout, its
         * "every other" layout). */
        for (ptrdiff_t i = 0; i + 1 < n; i++) {
            uint32_t w;
            memcpy(&w, s + 4 * i, 4);
            w <<= 16;
            memcpy(d + 4 * i, &w, 4);
        }
        to_f32_body(s + 4 * (n - 1), 4, d + 4 * (n - 1), 4, 1);
    }
#endif
    else {
        to_f32_body(s, src_stride, d, dst_stride, n);
    }
}

void bf16_to_f64_array(const void *src, ptrdiff_t src_stride, void *dst, ptrdiff_t dst_stride,
                       ptrdiff_t n)
{
    if (n <= 0) return;
    if (src_stride == 2 && dst_stride == 8)
        bf16k_table_get()->to_f64((const char *)src, (char *)dst, n);
    else
        to_f64_body((const char *)src, src_stride, (char *)dst, dst_stride, n);
}

void bf16_from_f16_array(const void *src, void *dst, ptrdiff_t n)
{
    if (n > 0) bf16k_table_get()->from_f16((const char *)src, (char *)dst, n);
}

void bf16_to_f16_array(const void *src, void *dst, ptrdiff_t n, int *overflow, int *underflow)
{
    int flags = n > 0 ? bf16k_table_get()->to_f16((const char *)src, (char *)dst, n) : 0;
    if ((flags & BF16K_OVERFLOW) && overflow) *overflow = 1;
    if ((flags & BF16K_UNDERFLOW) && underflow) *underflow = 1;
}
