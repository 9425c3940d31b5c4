/*
 * umath/loops_avx2.cpp - AVX2/FMA twins of the arithmetic functors (the lists in loops.h).
 * Compiled with a target attribute, called only when the tier in force is avx2 or higher.
 * Same rounding rule as bf16_round_bits_rne, spelled in 8-lane integer ops.
 */
#include "umath/loops.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <immintrin.h>
#include <cfenv>
#include <cstring>

#ifdef __clang__ /* clang ignores GCC's target pragma: the same target on every function */
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif

namespace umath {
namespace {

inline __m256 widen8h(__m128i h)
{
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
inline __m256 widen8(const char *p) { return widen8h(_mm_loadu_si128((const __m128i *)p)); }

/* Before a tail in loops.h's scalar rules: those opt out of vectorising, which compiles them
 * without VEX, and as a tail call they would return to NumPy's code with the upper halves of
 * the ymm registers still in use. The shadow row's (twin_shadow_row below) ran 6x slower so:
 * sum(axis=0) of 2^15 x 8, AMD EPYC Zen 3: 4.9 ms, 0.78 ms with the upper halves cleared. */
inline void before_scalar_tail() { _mm256_zeroupper(); }

/* float32 -> its bfloat16 rounded (to nearest, ties to even) in the upper half of each lane;
 * a NaN keeps its upper half only if its lower one is zero (the hardware's NaNs) */
inline __m256i rounded_upper8(__m256 f)
{
    __m256i u = _mm256_castps_si256(f);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    return _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb);
}

/* bf16_round_bits_rne of 8 lanes (a NaN keeps its upper half, quiet), in the low 16 bits of each
 * 32-bit lane; *ovf collects the lanes where a finite value rounded to infinity */
inline __m256i rne_lanes8(__m256 f, __m256i *ovf)
{
    const __m256i absmask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    __m256i u = _mm256_castps_si256(f);
    __m256i absu = _mm256_and_si256(u, absmask);
    __m256i r = _mm256_srli_epi32(rounded_upper8(f), 16);
    __m256i quiet_nan = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    r = _mm256_blendv_epi8(r, quiet_nan, _mm256_cmpgt_epi32(absu, inf));
    __m256i became_inf = _mm256_cmpeq_epi32(_mm256_and_si256(r, _mm256_set1_epi32(0x7fff)),
                                            _mm256_set1_epi32(0x7f80));
    *ovf = _mm256_or_si256(*ovf, _mm256_and_si256(became_inf, _mm256_cmpgt_epi32(inf, absu)));
    return r;
}

inline __m128i narrow8(__m256 f, __m256i *ovf)
{
    __m256i r = rne_lanes8(f, ovf);
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0xD8));
}

/*
 * + - * / on 16 elements at once, as the AVX-512 loops do it: the even elements widen with a
 * shift, the odd ones with a mask, the two rounded halves recombine with one 16-bit blend, and
 * the NaN test is left out (a NaN the float32 hardware returns for widened bfloat16 has zero
 * low bits, which the rounding add leaves as they are). A finite result that rounds to
 * infinity raises the float32 overflow flag (flag_rounding_overflow8). About half the
 * instructions of narrow8 and its 8-lane widening (tests/umath_tier_checks.py at the avx2 tier:
 * every operand pair exhaustively, and the overflow boundary).
 */
inline __m256 even8(__m256i v) { return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)); }
inline __m256 odd8(__m256i v)
{
    return _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32((int)0xffff0000u)));
}
/* the float32 overflow flag where a finite lane rounds to the bfloat16 infinity (loops.h,
 * rounds_to_inf_offset; both halves added, as AVX2 has no vrangeps to take their larger) */
inline void flag_rounding_overflow8(__m256 fe, __m256 fo)
{
    const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 c = _mm256_set1_ps(rounds_to_inf_offset);
    __m256 ge = _mm256_add_ps(_mm256_and_ps(fe, magnitude), c);
    __m256 go = _mm256_add_ps(_mm256_and_ps(fo, magnitude), c);
    __asm__ volatile("" : : "x"(ge), "x"(go)); /* the flag is the result */
}
/* even and odd float32 results (NaNs the hardware's) -> 16 bfloat16 in element order */
inline __m256i combine16(__m256 fe, __m256 fo)
{
    return _mm256_blend_epi16(_mm256_srli_epi32(rounded_upper8(fe), 16), rounded_upper8(fo), 0xAA);
}
template <class Op> struct V;
template <class Op> inline __m256i arith16(__m256i x, __m256i y)
{
    __m256 fe = V<Op>::f(even8(x), even8(y)), fo = V<Op>::f(odd8(x), odd8(y));
    flag_rounding_overflow8(fe, fo);
    return combine16(fe, fo);
}

/*
 * Large outputs (>= 4 MiB, 16-byte aligned) are written with non-temporal stores: they skip
 * the read-for-ownership of each output line, a third of the traffic of a + b.
 */
inline bool streaming_output(const char *o, npy_intp n)
{
    return n >= ((npy_intp)1 << 21) && ((uintptr_t)o & 15) == 0;
}

/* Streaming loops prefetch their inputs this far ahead, as the AVX-512 ones do (see there). */
inline void prefetch_ahead(const char *p) { _mm_prefetch(p + 4096, _MM_HINT_T0); }

/* The vector form of each functor with a twin. */
template <class Op> struct V;
/* Add and Multiply with `a` as the first source, as in loops_avx512.cpp (two NaN operands give
 * the first one's). */
template <> struct V<Add> {
    static __m256 f(__m256 a, __m256 b)
    {
        __m256 r;
        __asm__("vaddps %2, %1, %0" : "=x"(r) : "x"(a), "x"(b));
        return r;
    }
};
template <> struct V<Subtract> {
    static __m256 f(__m256 a, __m256 b) { return _mm256_sub_ps(a, b); }
};
template <> struct V<Multiply> {
    static __m256 f(__m256 a, __m256 b)
    {
        __m256 r;
        __asm__("vmulps %2, %1, %0" : "=x"(r) : "x"(a), "x"(b));
        return r;
    }
};
template <> struct V<Divide> {
    static __m256 f(__m256 a, __m256 b) { return _mm256_div_ps(a, b); }
};

template <int P> struct Cmp {
    static __m256 f(__m256 a, __m256 b) { return _mm256_cmp_ps(a, b, P); }
};
template <> struct V<Equal> : Cmp<_CMP_EQ_OQ> {};
template <> struct V<NotEqual> : Cmp<_CMP_NEQ_UQ> {};
template <> struct V<Less> : Cmp<_CMP_LT_OQ> {};
template <> struct V<LessEqual> : Cmp<_CMP_LE_OQ> {};
template <> struct V<Greater> : Cmp<_CMP_GT_OQ> {};
template <> struct V<GreaterEqual> : Cmp<_CMP_GE_OQ> {};
template <> struct V<Sqrt> { static __m256 f(__m256 a) { return _mm256_sqrt_ps(a); } };
template <> struct V<Square> { static __m256 f(__m256 a) { return _mm256_mul_ps(a, a); } };
template <> struct V<Cube> {
    static __m256 f(__m256 a) { return _mm256_mul_ps(_mm256_mul_ps(a, a), a); }
};
template <> struct V<Reciprocal> {
    static __m256 f(__m256 a) { return _mm256_div_ps(_mm256_set1_ps(1.0f), a); }
};
/* Rounding to an integer is exact in bfloat16; like the libm calls, it raises "invalid" only
 * for a signalling NaN ("inexact" is suppressed: numpy ignores it anyway). */
template <int Mode> struct RoundTo {
    static __m256 f(__m256 a) { return _mm256_round_ps(a, Mode | _MM_FROUND_NO_EXC); }
};
template <> struct V<Floor> : RoundTo<_MM_FROUND_TO_NEG_INF> {};
template <> struct V<Ceil> : RoundTo<_MM_FROUND_TO_POS_INF> {};
template <> struct V<Trunc> : RoundTo<_MM_FROUND_TO_ZERO> {};
template <> struct V<Rint> : RoundTo<_MM_FROUND_CUR_DIRECTION> {}; /* nearbyint */
template <> struct V<Sign> {
    /* the functor's quiet comparisons: 0 for +-0, +-1, and a NaN passes through */
    static __m256 f(__m256 a)
    {
        const __m256 zero = _mm256_setzero_ps();
        __m256 r = _mm256_blendv_ps(a, _mm256_set1_ps(1.0f), _mm256_cmp_ps(a, zero, _CMP_GT_OQ));
        r = _mm256_blendv_ps(r, _mm256_set1_ps(-1.0f), _mm256_cmp_ps(a, zero, _CMP_LT_OQ));
        return _mm256_blendv_ps(r, zero, _mm256_cmp_ps(a, zero, _CMP_EQ_OQ));
    }
};

/*
 * exp, log, tanh: float32 polynomials rounded once, as in loops_avx512.cpp (which explains
 * the NEAR window and the fallback to the scalar function or its table); without scalef and
 * getmant/getexp the scaling and the exponent split are integer operations, and subnormal
 * inputs of log are not clean. Verified over all 65,536 inputs in tests/umath_tier_checks.py.
 */
const int NEAR = 16;

inline __m256 c(float v) { return _mm256_set1_ps(v); }
inline __m256 fmadd(__m256 a, __m256 b, __m256 d) { return _mm256_fmadd_ps(a, b, d); }
/* The polynomial with coefficients k0 (highest degree) ... kn in x, by Horner's rule: the FMA
 * chain the approximations are written (and verified) with. */
template <class... K>
inline __m256 horner(__m256 x, float k0, K... ks)
{
    __m256 p = c(k0);
    ((p = fmadd(p, x, c(ks))), ...);
    return p;
}

inline __m256 between(__m256 x, float lo, float hi)
{
    return _mm256_and_ps(_mm256_cmp_ps(x, c(lo), _CMP_GE_OQ), _mm256_cmp_ps(x, c(hi), _CMP_LE_OQ));
}

/* 2^n for integral n in [-126, 128], as the product of two normal powers of two */
inline __m256 pow2_split(__m256 x, __m256 n)
{
    __m256i ni = _mm256_cvtps_epi32(n);
    __m256i n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(x, s1), s2);
}

/* e^x for x in [-87, 88.5] (same reduction and polynomial as the AVX-512 one) */
inline __m256 exp_core(__m256 x)
{
    const __m256 shift = c(12582912.0f);
    __m256 n = _mm256_sub_ps(fmadd(x, c(1.44269504088896341f), shift), shift);
    __m256 r = fmadd(n, c(-0.693359375f), x);
    r = fmadd(n, c(2.12194440e-4f), r);
    __m256 p = horner(r, 0.008375135250389576f, 0.04191756621003151f, 0.16666415333747864f,
                      0.4999886751174927f, 1.0f, 1.0000001192092896f);
    return pow2_split(p, n);
}

template <> struct V<Exp> {
    static constexpr bool approximate = true;
    static __m256 f(__m256 x, __m256 *clean)
    {
        *clean = between(x, -87.0f, 88.5f);
        return exp_core(_mm256_and_ps(*clean, x));
    }
};

/* log x = e ln2 + f g(f), 1 + f in [0.75, 1.5); clean for normal positive finite x */
template <> struct V<Log> {
    static constexpr bool approximate = true;
    static __m256 f(__m256 x, __m256 *clean)
    {
        *clean = between(x, 1.17549435e-38f, 3.40282347e38f);
        x = _mm256_blendv_ps(c(1.0f), x, *clean);
        __m256i u = _mm256_castps_si256(x);
        __m256i e = _mm256_sub_epi32(_mm256_srli_epi32(u, 23), _mm256_set1_epi32(127));
        __m256 m = _mm256_castsi256_ps(_mm256_or_si256(
                _mm256_and_si256(u, _mm256_set1_epi32(0x7fffff)), _mm256_set1_epi32(0x3f800000)));
        __m256 big = _mm256_cmp_ps(m, c(1.5f), _CMP_GE_OQ);
        m = _mm256_blendv_ps(m, _mm256_mul_ps(m, c(0.5f)), big);
        __m256 ef = _mm256_add_ps(_mm256_cvtepi32_ps(e), _mm256_and_ps(big, c(1.0f)));
        __m256 fr = _mm256_sub_ps(m, c(1.0f));
        __m256 g = horner(fr, 0.05425942689180374f, -0.12091521173715591f, 0.14996832609176636f,
                          -0.1682281345129013f, 0.19975553452968597f, -0.24993263185024261f,
                          0.3333360254764557f, -0.5000006556510925f, 1.0f);
        __m256 lo = fmadd(ef, c(-2.12194440e-4f), _mm256_mul_ps(fr, g));
        return fmadd(ef, c(0.693359375f), lo);
    }
};

/* tanh as the AVX-512 one: series below 0.4, 1 - 2 / (e^2|x| + 1) above */
template <> struct V<Tanh> {
    static constexpr bool approximate = true;
    static __m256 f(__m256 x, __m256 *clean)
    {
        __m256 sign = _mm256_and_ps(x, c(-0.0f));
        __m256 ax = _mm256_andnot_ps(c(-0.0f), x);
        __m256 zero = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_EQ_OQ);
        *clean = _mm256_or_ps(between(ax, 0x1p-40f, 3.0e38f), zero);
        ax = _mm256_and_ps(*clean, ax);
        __m256 as = _mm256_min_ps(ax, c(0.5f));
        __m256 z = _mm256_mul_ps(as, as);
        __m256 p = horner(z, -929569.0f / 638512875, 21844.0f / 6081075, -1382.0f / 155925,
                          62.0f / 2835, -17.0f / 315, 2.0f / 15, -1.0f / 3);
        __m256 small = fmadd(_mm256_mul_ps(p, z), as, as);
        /* capped before doubling: 2|x| overflows (and raised "overflow") from 2^127 on */
        __m256 ac = _mm256_min_ps(ax, c(20.0f));
        __m256 e2 = exp_core(_mm256_add_ps(ac, ac));
        __m256 big = _mm256_sub_ps(c(1.0f), _mm256_div_ps(c(2.0f), _mm256_add_ps(e2, c(1.0f))));
        __m256 r = _mm256_blendv_ps(big, small, _mm256_cmp_ps(ax, c(0.4f), _CMP_LT_OQ));
        return _mm256_or_ps(r, sign);
    }
};

} /* namespace */

namespace {

/* ---- arctan2: ops.h's Arctan2 four lanes at a time, in float64 (the steps of the functor,
 * with blends for masks; the scalar loop's bits and warnings:
 * tests/umath_tier_checks.py::test_arctan2_twin_matches_the_scalar_loop) ------------------- */

inline __m256d pd4(double v) { return _mm256_set1_pd(v); }

/* four bfloat16 (`bcast`: one, repeated), NaNs replaced by 1.0, as float64; the NaN lanes */
inline __m256d atan2_operand4(const char *p, bool bcast, int *nan)
{
    __m128i h = bcast ? _mm_set1_epi16((short)ld(p)) : _mm_loadl_epi64((const __m128i *)p);
    __m128i is_nan = _mm_cmpgt_epi16(_mm_and_si128(h, _mm_set1_epi16(0x7fff)), _mm_set1_epi16(0x7f80));
    is_nan = _mm_cvtepi16_epi32(is_nan);
    *nan |= _mm_movemask_ps(_mm_castsi128_ps(is_nan));
    __m128i w = _mm_slli_epi32(_mm_cvtepu16_epi32(h), 16);
    w = _mm_blendv_epi8(w, _mm_set1_epi32(0x3f800000), is_nan);
    return _mm256_cvtps_pd(_mm_castsi128_ps(w));
}

/* a 4 x 64-bit lane mask as 4 x 32-bit lanes */
inline __m128i narrow_mask(__m256d m)
{
    __m256i picked = _mm256_permutevar8x32_epi32(_mm256_castpd_si256(m),
                                                 _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
    return _mm256_castsi256_si128(picked);
}

/* U blocks of four lanes, each step taken for every block before the next (as loops_avx512.cpp's
 * power_blocks16): one block's steps are a chain of dependent operations (10^5 pairs at this
 * tier: 416 us a block at a time, 328 / 285 us four / eight blocks a step, AMD EPYC Zen 5).
 * *tiny_any: a result below 2^-126 (the functor's underflow warning). */
template <int U>
inline void atan2_blocks4(const char *a, bool a_bcast, const char *b, bool b_bcast, npy_intp i,
                          char *o, bool *tiny_any)
{
    const __m256d zero = _mm256_setzero_pd(), one = pd4(1.0), inf = pd4(INFINITY);
    const __m256d sign = pd4(-0.0);
    __m256d y[U], x[U], steep[U], shifted[U], t[U], u1[U], p[U], r[U];
    int nan[U];
#define EACH for (int k = 0; k < U; k++)
    EACH {
        npy_intp j = i + 4 * k;
        nan[k] = 0;
        y[k] = atan2_operand4(a + (a_bcast ? 0 : 2 * j), a_bcast, &nan[k]);
        x[k] = atan2_operand4(b + (b_bcast ? 0 : 2 * j), b_bcast, &nan[k]);
    }
    EACH {
        __m256d ay = _mm256_andnot_pd(sign, y[k]), ax = _mm256_andnot_pd(sign, x[k]);
        steep[k] = _mm256_cmp_pd(ay, ax, _CMP_GT_OQ);
        __m256d hi = _mm256_blendv_pd(ax, ay, steep[k]), lo = _mm256_blendv_pd(ay, ax, steep[k]);
        __m256d hi_inf = _mm256_cmp_pd(hi, inf, _CMP_EQ_OQ);
        __m256d both_inf = _mm256_and_pd(hi_inf, _mm256_cmp_pd(lo, inf, _CMP_EQ_OQ));
        __m256d special = _mm256_or_pd(hi_inf, _mm256_cmp_pd(hi, zero, _CMP_EQ_OQ));
        hi = _mm256_blendv_pd(hi, one, special);
        lo = _mm256_blendv_pd(_mm256_blendv_pd(lo, zero, special), one, both_inf);
        shifted[k] = _mm256_cmp_pd(lo, _mm256_mul_pd(pd4(0.41421356237309504880), hi), _CMP_GT_OQ);
        t[k] = _mm256_div_pd(_mm256_blendv_pd(lo, _mm256_sub_pd(lo, hi), shifted[k]),
                             _mm256_blendv_pd(hi, _mm256_add_pd(lo, hi), shifted[k]));
    }
    EACH {
        __m256d u = _mm256_mul_pd(t[k], t[k]);
        u1[k] = _mm256_and_pd(_mm256_cmp_pd(u, pd4(0x1p-60), _CMP_GE_OQ), u); /* as in ops.h */
    }
    EACH {
        __m256d u = u1[k];
        __m256d u2 = _mm256_mul_pd(u, u), u4 = _mm256_mul_pd(u2, u2);
        const double *c = atan_poly;
        __m256d p01 = _mm256_add_pd(pd4(c[0]), _mm256_mul_pd(pd4(c[1]), u));
        __m256d p23 = _mm256_add_pd(pd4(c[2]), _mm256_mul_pd(pd4(c[3]), u));
        __m256d p45 = _mm256_add_pd(pd4(c[4]), _mm256_mul_pd(pd4(c[5]), u));
        __m256d p67 = _mm256_add_pd(pd4(c[6]), _mm256_mul_pd(pd4(c[7]), u));
        p[k] = _mm256_add_pd(
                _mm256_add_pd(p01, _mm256_mul_pd(u2, p23)),
                _mm256_mul_pd(u4, _mm256_add_pd(_mm256_add_pd(p45, _mm256_mul_pd(u2, p67)),
                                                _mm256_mul_pd(u4, pd4(c[8])))));
    }
    EACH {
        __m256d base = _mm256_and_pd(shifted[k], pd4(0.78539816339744830962));
        r[k] = _mm256_add_pd(base, _mm256_add_pd(t[k], _mm256_mul_pd(_mm256_mul_pd(t[k], u1[k]), p[k])));
        r[k] = _mm256_blendv_pd(r[k], _mm256_sub_pd(pd4(1.57079632679489661923), r[k]), steep[k]);
        r[k] = _mm256_blendv_pd(r[k], _mm256_sub_pd(pd4(3.14159265358979323846), r[k]), x[k]); /* x's sign */
    }
    EACH {
        __m256d tiny = _mm256_and_pd(_mm256_cmp_pd(r[k], pd4(0x1p-126), _CMP_LT_OQ),
                                     _mm256_cmp_pd(r[k], zero, _CMP_NEQ_OQ));
        *tiny_any |= (_mm256_movemask_pd(tiny) & ~nan[k]) != 0;
        __m256d rr = _mm256_xor_pd(r[k], _mm256_and_pd(y[k], sign));
        /* NaN lanes (their results are the scalar loop's) hold 0, whose conversion raises no
         * flag: the 1/x of a huge x there underflowed in float32 (tests/test_umath_regressions.py::
         * test_arctan2_nan_lanes_raise_no_underflow) */
        const __m256i lane = _mm256_setr_epi64x(1, 2, 4, 8);
        __m256i nan_lane = _mm256_cmpeq_epi64(_mm256_and_si256(_mm256_set1_epi64x(nan[k]), lane), lane);
        rr = _mm256_andnot_pd(_mm256_castsi256_pd(nan_lane), rr);
        /* round to odd: to nearest, a step back toward zero where that went away from zero,
         * and the last bit set where anything was dropped */
        __m128 f = _mm256_cvtpd_ps(rr);
        __m256d back = _mm256_cvtps_pd(f);
        __m128i inexact = narrow_mask(_mm256_cmp_pd(back, rr, _CMP_NEQ_UQ));
        __m128i away = narrow_mask(_mm256_cmp_pd(_mm256_andnot_pd(sign, back),
                                                 _mm256_andnot_pd(sign, rr), _CMP_GT_OQ));
        __m128i fb = _mm_add_epi32(_mm_castps_si128(f), away); /* away lanes are -1 */
        fb = _mm_or_si128(fb, _mm_and_si128(inexact, _mm_set1_epi32(1)));
        __m128i lsb = _mm_and_si128(_mm_srli_epi32(fb, 16), _mm_set1_epi32(1));
        __m128i rounded = _mm_srli_epi32(_mm_add_epi32(_mm_add_epi32(fb, _mm_set1_epi32(0x7fff)), lsb), 16);
        alignas(16) char res[16];
        _mm_store_si128((__m128i *)res, _mm_packus_epi32(rounded, rounded));
        twin_store_block<Arctan2>(res, 4, (unsigned)nan[k], a, a_bcast, b, b_bcast, i + 4 * k, o);
    }
#undef EACH
}

int atan2_run4(const char *a, bool a_bcast, const char *b, bool b_bcast, char *o, npy_intp n)
{
    constexpr int U = 8;
    bool tiny_any = false;
    npy_intp i = 0;
    for (; i + 4 * U <= n; i += 4 * U) atan2_blocks4<U>(a, a_bcast, b, b_bcast, i, o, &tiny_any);
    for (; i + 4 <= n; i += 4) atan2_blocks4<1>(a, a_bcast, b, b_bcast, i, o, &tiny_any);
    if (tiny_any) {
        std::feraiseexcept(FE_UNDERFLOW);
    }
    before_scalar_tail();
    return twin_tail<Arctan2>(a, a_bcast, b, b_bcast, o, i, n);
}

/* ---- power: x ** y four lanes at a time in float64, powf's bits ---------------------------
 * For x > 0 finite and y finite: t = y log2 x with log2 x = e + log2(1 + i / 128) (e and i the
 * exponent and the top seven significand bits of x in float64, the logarithm from ops.h's
 * log2_significands), 2^t = 2^k 2^f (|f| <= 1/2, a degree-8 Taylor polynomial, 2^k built in the
 * float64 bits): relative error below 2^-31. Where |t| <= 125 and the result lies farther than
 * 2^-20 (relative) from a bfloat16 rounding midpoint, powf's result, within 2^-23 of the exact
 * value, rounds to the same bfloat16; every other lane (x zero, inf or NaN, x negative with y
 * not an integer, y inf or NaN, overflow, underflow, near a midpoint) takes powf itself, and a
 * negative base with an integer exponent is |x| ** y with the sign of an odd y. So the loop
 * gives the scalar loop's bits and warnings (tests/umath_tier_checks.py::
 * test_power_twin_matches_the_scalar_loop; all 2^32 pairs in a one-off run). The table in place
 * of a division and a degree-17 series: 10^5 random pairs 278 -> 250 us on the AMD EPYC Zen 5
 * at this tier (not measured on an AVX2-only CPU). */

/* four bfloat16's bits (`bcast`: one, repeated) */
inline __m128i load4(const char *p, bool bcast)
{
    return bcast ? _mm_set1_epi16((short)ld(p)) : _mm_loadl_epi64((const __m128i *)p);
}

inline __m256d widen4(__m128i h)
{
    return _mm256_cvtps_pd(_mm_castsi128_ps(_mm_slli_epi32(_mm_cvtepu16_epi32(h), 16)));
}

/* U blocks of four lanes, step by step for every block (as atan2_blocks4; 10^5 elements 649 ->
 * 397 us eight blocks a step, AMD EPYC Zen 5). Returns the overflow flag. */
template <int U>
inline int power_blocks4(const char *a, bool a_bcast, const char *b, bool b_bcast, npy_intp i,
                         char *o)
{
    __m256d y[U], t[U], k[U], f[U], p[U], r[U];
    __m128i flip[U];
    int scalar[U];
    int ovf = 0;
#define EACH for (int v = 0; v < U; v++)
    EACH {
        npy_intp j = i + 4 * v;
        __m128i hx = load4(a + (a_bcast ? 0 : 2 * j), a_bcast);
        __m128i hy = load4(b + (b_bcast ? 0 : 2 * j), b_bcast);
        /* A finite negative x with an integer y is |x|^y, negated for an odd y (x**3 of data of
         * both signs stays in the vector lanes). y is an integer where rounding keeps it (every
         * bfloat16 of magnitude 256 or more is an even integer). Blocks without a negative x
         * skip the tests (10^5 positive bases 397 -> 278 us, AMD EPYC Zen 5). */
        flip[v] = _mm_setzero_si128();
        __m128i neg = _mm_cmplt_epi16(hx, _mm_setzero_si128());
        if ((_mm_movemask_epi8(neg) & 0xff) != 0) {
            __m256d y0 = widen4(hy);
            __m256d yint = _mm256_cmp_pd(_mm256_round_pd(y0, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                                         y0, _CMP_EQ_OQ);
            __m256d half = _mm256_mul_pd(y0, pd4(0.5));
            __m256d yodd = _mm256_and_pd(yint, _mm256_cmp_pd(_mm256_round_pd(half, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                                                             half, _CMP_NEQ_UQ));
            __m128i xmag = _mm_and_si128(hx, _mm_set1_epi16(0x7fff));
            __m128i negx = _mm_andnot_si128(
                    _mm_cmpgt_epi16(_mm_sub_epi16(xmag, _mm_set1_epi16(1)), _mm_set1_epi16(0x7f7e)),
                    neg); /* negative, nonzero, finite */
            __m128i yint16 = narrow_mask(yint);
            negx = _mm_and_si128(negx, _mm_packs_epi32(yint16, yint16));
            flip[v] = _mm_and_si128(narrow_mask(_mm256_and_pd(yodd, _mm256_castsi256_pd(_mm256_cvtepi16_epi64(negx)))),
                                    _mm_set1_epi32(0x8000));
            hx = _mm_blendv_epi8(hx, xmag, negx);
        }
        /* powf's lanes: x negative (but the lanes above), zero, inf or NaN (x - 1 >= 0x7f7f
         * unsigned, as signed: outside 0 .. 0x7f7e); y inf or NaN */
        __m128i xm1 = _mm_sub_epi16(hx, _mm_set1_epi16(1));
        __m128i bad = _mm_or_si128(
                _mm_or_si128(_mm_cmplt_epi16(xm1, _mm_setzero_si128()),
                             _mm_cmpgt_epi16(xm1, _mm_set1_epi16(0x7f7e))),
                _mm_cmpgt_epi16(_mm_and_si128(hy, _mm_set1_epi16(0x7fff)), _mm_set1_epi16(0x7f7f)));
        hx = _mm_blendv_epi8(hx, _mm_set1_epi16(0x3f80), bad);
        hy = _mm_blendv_epi8(hy, _mm_set1_epi16(0x3f80), bad);
        scalar[v] = _mm_movemask_ps(_mm_castsi128_ps(_mm_cvtepi16_epi32(bad)));
        __m256d x = widen4(hx);
        y[v] = widen4(hy);
        __m256i xb = _mm256_castpd_si256(x);
        /* log2 x = e + log2(1 + i / 128), e and i the exponent and the top seven bits of the
         * significand of x in float64 (every widened bfloat16 is a normal double): all a
         * bfloat16 has */
        __m128i e32 = _mm_sub_epi32(narrow_mask(_mm256_castsi256_pd(_mm256_srli_epi64(xb, 52))),
                                    _mm_set1_epi32(1023));
        __m256i idx = _mm256_and_si256(_mm256_srli_epi64(xb, 45), _mm256_set1_epi64x(127));
        t[v] = _mm256_mul_pd(y[v], _mm256_add_pd(_mm256_cvtepi32_pd(e32),
                                                 _mm256_i64gather_pd(log2_significands.v, idx, 8)));
    }
    EACH {
        __m256d out = _mm256_cmp_pd(_mm256_andnot_pd(pd4(-0.0), t[v]), pd4(125.0), _CMP_GT_OQ);
        scalar[v] |= _mm256_movemask_pd(out);
        t[v] = _mm256_andnot_pd(out, t[v]);
        k[v] = _mm256_round_pd(t[v], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        f[v] = _mm256_sub_pd(t[v], k[v]);
    }
    EACH p[v] = pd4(exp2_taylor[8]);
    for (int j = 7; j >= 0; j--) EACH p[v] = _mm256_fmadd_pd(p[v], f[v], pd4(exp2_taylor[j]));
    EACH {
        /* 2^k for |k| <= 125 as a double's exponent bits */
        __m256i kk = _mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(k[v]));
        __m256d scale = _mm256_castsi256_pd(
                _mm256_slli_epi64(_mm256_add_epi64(kk, _mm256_set1_epi64x(1023)), 52));
        r[v] = _mm256_mul_pd(p[v], scale);
    }
    EACH {
        __m256i rb = _mm256_and_si256(_mm256_castpd_si256(r[v]), _mm256_set1_epi64x((1ll << 45) - 1));
        __m256i off = _mm256_sub_epi64(rb, _mm256_set1_epi64x(1ll << 44));
        __m256i near = _mm256_and_si256(_mm256_cmpgt_epi64(off, _mm256_set1_epi64x(-(1ll << 32))),
                                        _mm256_cmpgt_epi64(_mm256_set1_epi64x(1ll << 32), off));
        scalar[v] |= _mm256_movemask_pd(_mm256_castsi256_pd(near));
        __m128i u = _mm_castps_si128(_mm256_cvtpd_ps(r[v])); /* normal float32: only "inexact" */
        __m128i lsb = _mm_and_si128(_mm_srli_epi32(u, 16), _mm_set1_epi32(1));
        __m128i rounded = _mm_srli_epi32(_mm_add_epi32(_mm_add_epi32(u, _mm_set1_epi32(0x7fff)), lsb), 16);
        rounded = _mm_xor_si128(rounded, flip[v]);
        alignas(16) char res[16];
        _mm_store_si128((__m128i *)res, _mm_packus_epi32(rounded, rounded));
        ovf |= twin_store_block<Power>(res, 4, (unsigned)scalar[v], a, a_bcast, b, b_bcast, i + 4 * v, o);
    }
#undef EACH
    return ovf;
}

int power_run4(const char *a, bool a_bcast, const char *b, bool b_bcast, char *o, npy_intp n)
{
    constexpr int U = 8;
    npy_intp i = 0;
    int ovf = 0;
    for (; i + 4 * U <= n; i += 4 * U) ovf |= power_blocks4<U>(a, a_bcast, b, b_bcast, i, o);
    for (; i + 4 <= n; i += 4) ovf |= power_blocks4<1>(a, a_bcast, b, b_bcast, i, o);
    before_scalar_tail();
    return ovf | twin_tail<Power>(a, a_bcast, b, b_bcast, o, i, n);
}

/* ---- hypot: loops_avx512.cpp's hypot_run eight lanes a step (two float64 halves); the
 * scalar loop's bits and warnings (tests/umath_tier_checks.py::
 * test_hypot_twin_matches_the_scalar_loop) ----------------------------------------------- */

/* eight bfloat16's bits (`bcast`: one, repeated) */
inline __m128i load8(const char *p, bool bcast)
{
    return bcast ? _mm_set1_epi16((short)ld(p)) : _mm_loadu_si128((const __m128i *)p);
}

int hypot_run8(const char *a, bool a_bcast, const char *b, bool b_bcast, char *o, npy_intp n)
{
    npy_intp i = 0;
    int ovf = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i ha = load8(a + (a_bcast ? 0 : 2 * i), a_bcast);
        __m128i hb = load8(b + (b_bcast ? 0 : 2 * i), b_bcast);
        /* inf or NaN in either operand: the functor's lanes, 1.0 here */
        const __m128i mag = _mm_set1_epi16(0x7fff), big16 = _mm_set1_epi16(0x7f7f);
        __m128i special = _mm_or_si128(_mm_cmpgt_epi16(_mm_and_si128(ha, mag), big16),
                                       _mm_cmpgt_epi16(_mm_and_si128(hb, mag), big16));
        ha = _mm_blendv_epi8(ha, _mm_set1_epi16(0x3f80), special);
        hb = _mm_blendv_epi8(hb, _mm_set1_epi16(0x3f80), special);
        __m256 fa = widen8h(ha), fb = widen8h(hb);
        __m256d a0 = _mm256_cvtps_pd(_mm256_castps256_ps128(fa));
        __m256d a1 = _mm256_cvtps_pd(_mm256_extractf128_ps(fa, 1));
        __m256d b0 = _mm256_cvtps_pd(_mm256_castps256_ps128(fb));
        __m256d b1 = _mm256_cvtps_pd(_mm256_extractf128_ps(fb, 1));
        __m256d s0 = _mm256_sqrt_pd(_mm256_fmadd_pd(a0, a0, _mm256_mul_pd(b0, b0)));
        __m256d s1 = _mm256_sqrt_pd(_mm256_fmadd_pd(a1, a1, _mm256_mul_pd(b1, b1)));
        __m256i rb = _mm256_castps_si256(
                _mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_cvtpd_ps(s0)), _mm256_cvtpd_ps(s1), 1));
        /* a positive float32 that rounds to inf (0x7f7f8000 on; inf is 0x7f800000) */
        __m256i redo = _mm256_cmpgt_epi32(rb, _mm256_set1_epi32(0x7f7f7fff));
        unsigned lanes = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(redo)) |
                         (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cvtepi16_epi32(special)));
        __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(rb, 16), _mm256_set1_epi32(1));
        rb = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(rb, _mm256_set1_epi32(0x7fff)), lsb), 16);
        alignas(16) char res[16];
        _mm_store_si128((__m128i *)res, _mm_packus_epi32(_mm256_castsi256_si128(rb),
                                                         _mm256_extracti128_si256(rb, 1)));
        ovf |= twin_store_block<Hypot>(res, 8, lanes, a, a_bcast, b, b_bcast, i, o);
    }
    before_scalar_tail();
    return ovf | twin_tail<Hypot>(a, a_bcast, b, b_bcast, o, i, n);
}

} /* namespace */

inline __m256i load16(const char *p) { return _mm256_loadu_si256((const __m256i *)p); }

template <class Tier, class Op>
int twin_binary(const char *a, const char *b, char *o, npy_intp n)
{
    if constexpr (std::is_same<Op, Arctan2>::value) {
        return atan2_run4(a, false, b, false, o, n);
    }
    else if constexpr (std::is_same<Op, Power>::value) {
        return power_run4(a, false, b, false, o, n);
    }
    else if constexpr (std::is_same<Op, Hypot>::value) {
        return hypot_run8(a, false, b, false, o, n);
    }
    else {
    npy_intp i = 0;
    if (streaming_output(o, n)) {
        for (; i + 16 <= n; i += 16) {
            if ((i & 31) == 0) {
                prefetch_ahead(a + 2 * i);
                prefetch_ahead(b + 2 * i);
            }
            __m256i r = arith16<Op>(load16(a + 2 * i), load16(b + 2 * i));
            _mm_stream_si128((__m128i *)(o + 2 * i), _mm256_castsi256_si128(r));
            _mm_stream_si128((__m128i *)(o + 2 * i + 16), _mm256_extracti128_si256(r, 1));
        }
        _mm_sfence();
    }
    for (; i + 16 <= n; i += 16) {
        _mm256_storeu_si256((__m256i *)(o + 2 * i), arith16<Op>(load16(a + 2 * i), load16(b + 2 * i)));
    }
    before_scalar_tail();
    return binary_contig<Op>(a + 2 * i, b + 2 * i, o + 2 * i, n - i);
    }
}

template <class Tier, class Op>
int twin_binary_scalar(const char *arr, bf16_t scalar, bool scalar_first, char *o, npy_intp n)
{
    if constexpr (std::is_same<Op, Arctan2>::value) {
        return twin_run_scalar(atan2_run4, arr, scalar, scalar_first, o, n);
    }
    else if constexpr (std::is_same<Op, Power>::value) {
        return twin_run_scalar(power_run4, arr, scalar, scalar_first, o, n);
    }
    else if constexpr (std::is_same<Op, Hypot>::value) {
        return twin_run_scalar(hypot_run8, arr, scalar, scalar_first, o, n);
    }
    else {
    __m256i s = _mm256_set1_epi16((short)scalar);
    npy_intp i = 0;
    bool stream = streaming_output(o, n);
    for (; i + 16 <= n; i += 16) {
        __m256i x = load16(arr + 2 * i);
        __m256i r = scalar_first ? arith16<Op>(s, x) : arith16<Op>(x, s);
        if (stream) {
            if ((i & 31) == 0) {
                prefetch_ahead(arr + 2 * i);
            }
            _mm_stream_si128((__m128i *)(o + 2 * i), _mm256_castsi256_si128(r));
            _mm_stream_si128((__m128i *)(o + 2 * i + 16), _mm256_extracti128_si256(r, 1));
        }
        else {
            _mm256_storeu_si256((__m256i *)(o + 2 * i), r);
        }
    }
    if (stream) {
        _mm_sfence();
    }
    before_scalar_tail();
    return binary_scalar_contig<Op>(arr + 2 * i, scalar, scalar_first, o + 2 * i, n - i);
    }
}

/* 16 float32 whose NaNs are the hardware's or widened bfloat16 (zero low bits) -> 16 bfloat16
 * in element order, rounded as rne_lanes8 rounds them (the NaN blend changes nothing there) */
inline __m256i pack_rounded16(__m256 f0, __m256 f1)
{
    __m256i r0 = _mm256_srli_epi32(rounded_upper8(f0), 16), r1 = _mm256_srli_epi32(rounded_upper8(f1), 16);
    return _mm256_permute4x64_epi64(_mm256_packus_epi32(r0, r1), 0xD8);
}

/* one step of twin_shadow_row below: 16 elements of the output, its input row and its shadow.
 * Every shadow value is a float32 result of the hardware or a widened bfloat16
 * (umath/reduce_acc.cpp), so pack_rounded16 rounds it; a finite result that rounds to
 * infinity raises the float32 overflow flag (flag_rounding_overflow8). */
template <class Op>
inline void shadow_step16(char *o, const char *b, float *v)
{
    __m256i stored = load16(o);
    __m256 s0 = _mm256_loadu_ps(v), s1 = _mm256_loadu_ps(v + 8);
    __m256i same = _mm256_cmpeq_epi16(pack_rounded16(s0, s1), stored);
    if (!_mm256_testc_si256(same, _mm256_set1_epi32(-1))) {
        /* per lane: the shadow where it still holds, else the stored value widened */
        __m256i keep0 = _mm256_cvtepi16_epi32(_mm256_castsi256_si128(same));
        __m256i keep1 = _mm256_cvtepi16_epi32(_mm256_extracti128_si256(same, 1));
        s0 = _mm256_blendv_ps(widen8(o), s0, _mm256_castsi256_ps(keep0));
        s1 = _mm256_blendv_ps(widen8(o + 16), s1, _mm256_castsi256_ps(keep1));
    }
    __m256 r0 = V<Op>::f(s0, widen8(b)), r1 = V<Op>::f(s1, widen8(b + 16));
    flag_rounding_overflow8(r0, r1);
    _mm256_storeu_si256((__m256i *)o, pack_rounded16(r0, r1));
    _mm256_storeu_ps(v, r0);
    _mm256_storeu_ps(v + 8, r1);
}

/* shadow_step16's half: 8 elements */
template <class Op>
inline void shadow_step8(char *o, const char *b, float *v)
{
    const __m128i stored = _mm_loadu_si128((const __m128i *)o);
    __m256 sv = _mm256_loadu_ps(v);
    /* pack_rounded16 of a vector with itself: its low half holds the 8 roundings */
    __m128i same = _mm_cmpeq_epi16(_mm256_castsi256_si128(pack_rounded16(sv, sv)), stored);
    if (_mm_movemask_epi8(same) != 0xffff) {
        __m256i keep = _mm256_cvtepi16_epi32(same);
        sv = _mm256_blendv_ps(widen8(o), sv, _mm256_castsi256_ps(keep));
    }
    __m256 r = V<Op>::f(sv, widen8(b));
    flag_rounding_overflow8(r, r);
    _mm_storeu_si128((__m128i *)o, _mm256_castsi256_si128(pack_rounded16(r, r)));
    _mm256_storeu_ps(v, r);
}

/*
 * The float32-shadow row of an outer-axis reduction (umath/reduce_acc.cpp), 16 elements a step,
 * then 8, then one by one: the stored bfloat16 still equal to its shadow's rounding (the usual
 * case, one test for all 16) continues from the shadow, any other from the stored value:
 * shadow_row_contig's rule and bits (loops.h; tests/umath_tier_checks.py::
 * test_outer_axis_reductions_every_width at every tier).
 * x.sum(axis=0), AMD EPYC Zen 3: 316 x 316 134 -> 55 us (16 a step, padded tail) -> 43-53 us
 * (pack_rounded16 and the flag in place of the NaN blend and the overflow mask), 1000 x 1000
 * 770 -> 447 -> 303 us, 16 x 10000 84 -> 49 us; 2^17 x 2 5.2 -> 3.4 ms, 2^15 x 8 1.17 -> 0.78 ms
 * (8 a step and the last few one by one, in place of a tail padded to 16 through copies)
 * (README, "Reductions accumulate in float32").
 */
template <class Tier, class Op>
int twin_shadow_row(char *o, const char *b, float *v, npy_intp n)
{
    npy_intp i = 0;
    for (; i + 16 <= n; i += 16) {
        shadow_step16<Op>(o + 2 * i, b + 2 * i, v + i);
    }
    if (i + 8 <= n) {
        shadow_step8<Op>(o + 2 * i, b + 2 * i, v + i);
        i += 8;
    }
    /* the vector steps' overflow went to the float32 flag */
    before_scalar_tail();
    return shadow_row_contig<Op>(o + 2 * i, b + 2 * i, v + i, n - i);
}

namespace { /* loops_avx512.cpp has its own IsApproximate, of its own V */
template <class Op, class = void> struct IsApproximate : std::false_type {};
template <class Op>
struct IsApproximate<Op, std::void_t<decltype(V<Op>::approximate)>> : std::true_type {};
} /* namespace */

/* Once the function's table exists (unary_table_for_call: the policy of the strided loops, these
 * elements counted as computed directly) it serves the whole call: a lookup an element beats
 * these 8-lane evaluations (AMD EPYC Zen 5 at the avx2 tier, 10^5 elements: tanh 78 -> 32 us,
 * log 52 -> 32, exp 43 -> 32). */
template <class Op>
int approximate_unary(const char *a, char *o, npy_intp n)
{
    const UnaryTable *table = unary_table_for_call<Op>(n);
    if (table != nullptr) {
        unary_table_apply(table, a, 2, o, 2, n);
        return 0;
    }
    int ovf = 0;
    npy_intp i = 0;
    const __m256i half = _mm256_set1_epi32(0x8000 + NEAR);
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(a + 2 * i));
        __m256 x = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
        __m256 clean;
        __m256i w = _mm256_add_epi32(_mm256_castps_si256(V<Op>::f(x, &clean)), half);
        __m256i near = _mm256_cmpeq_epi32(
                _mm256_and_si256(w, _mm256_set1_epi32(0xffff & ~(2 * NEAR - 1))),
                _mm256_setzero_si256());
        __m256i r = _mm256_srli_epi32(w, 16);
        __m128i out = _mm256_castsi256_si128(
                _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0xD8));
        unsigned redo = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(near)) |
                        ((unsigned)_mm256_movemask_ps(clean) ^ 0xffu);
        _mm_storeu_si128((__m128i *)(o + 2 * i), out);
        while (redo) { /* h holds the inputs: o may be a */
            int j = __builtin_ctz(redo);
            redo &= redo - 1;
            alignas(16) bf16_t in[8];
            _mm_store_si128((__m128i *)in, h);
            store_rounded(o + 2 * (i + j), Op::f(bf16_to_f32(in[j])), &ovf);
        }
    }
    before_scalar_tail();
    return ovf | unary_contig<Op>(a + 2 * i, o + 2 * i, n - i);
}

template <class Tier, class Op>
int twin_unary(const char *a, char *o, npy_intp n)
{
    if constexpr (IsApproximate<Op>::value) {
        return approximate_unary<Op>(a, o, n);
    }
    else if constexpr (HardwareNaNs<Op>::value || ExactInBf16<Op>::value) {
        /* 16 elements a step as arith16 (loops.h's traits). None of sqrt, square and
         * reciprocal rounds a finite result to infinity (loops_avx512.cpp's unary_block); sign
         * passes a NaN through unquieted, so it stays with narrow8. */
        npy_intp i = 0;
        for (; i + 16 <= n; i += 16) {
            __m256i x = load16(a + 2 * i);
            __m256 fe = V<Op>::f(even8(x)), fo = V<Op>::f(odd8(x));
            __m256i r = ExactInBf16<Op>::value
                                ? _mm256_blend_epi16(_mm256_srli_epi32(_mm256_castps_si256(fe), 16),
                                                     _mm256_castps_si256(fo), 0xAA)
                                : combine16(fe, fo);
            _mm256_storeu_si256((__m256i *)(o + 2 * i), r);
        }
        before_scalar_tail();
        return unary_contig<Op>(a + 2 * i, o + 2 * i, n - i);
    }
    else {
        __m256i ovf = _mm256_setzero_si256();
        npy_intp i = 0;
        for (; i + 8 <= n; i += 8) {
            __m128i r = narrow8(V<Op>::f(widen8(a + 2 * i)), &ovf);
            _mm_storeu_si128((__m128i *)(o + 2 * i), r);
        }
        int any = !_mm256_testz_si256(ovf, ovf);
        before_scalar_tail();
        return any | unary_contig<Op>(a + 2 * i, o + 2 * i, n - i);
    }
}

/* The comparison helpers have internal linkage, as the other tier file has its own of the same
 * names (a shared weak symbol would let one tier run the other's code). */
namespace {

/* 16 comparisons: each element's all-ones or zero result in its own 16-bit word */
template <class Op> inline __m256i compare_words(__m256i x, __m256i y)
{
    __m256 re = V<Op>::f(even8(x), even8(y)), ro = V<Op>::f(odd8(x), odd8(y));
    return _mm256_blend_epi16(_mm256_castps_si256(re), _mm256_castps_si256(ro), 0xAA);
}

/* 16 elements at i of p, or its one value in every lane */
inline __m256i compare_block(const char *p, bool one, npy_intp i)
{
    return one ? _mm256_set1_epi16((short)ld(p)) : load16(p + 2 * i);
}
/* 8 elements at i of p widened, or its one value in every lane */
inline __m256 compare_eight(const char *p, bool one, npy_intp i)
{
    return one ? _mm256_castsi256_ps(_mm256_set1_epi32((int)((uint32_t)ld(p) << 16)))
               : widen8(p + 2 * i);
}

/* the last elements one at a time (not vectorised: GCC's compares would raise spurious flags) */
template <class Op, int Scalar>
BF16_NO_AUTOVECTORIZE void compare_tail(const char *a, const char *b, npy_bool *o, npy_intp i,
                                        npy_intp n)
{
    for (; i < n; i++) {
        float x = bf16_to_f32(ld(Scalar == 1 ? a : a + 2 * i));
        float y = bf16_to_f32(ld(Scalar == 2 ? b : b + 2 * i));
        o[i] = Op::f(x, y);
    }
}

/* 32 elements a step: even and odd elements compare as float32 (vcmpps: a signalling NaN
 * raises "invalid" as the functors do), one 16-bit blend puts each element's all-ones or zero
 * result in its own word, a saturating pack makes the words bytes and a cross-lane permute puts
 * the two blocks' halves back in order. Scalar 1: a is one value, 2: b is. */
template <class Op, int Scalar>
void compare_run(const char *a, const char *b, npy_bool *o, npy_intp n)
{
    npy_intp i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256i w0 = compare_words<Op>(compare_block(a, Scalar == 1, i),
                                       compare_block(b, Scalar == 2, i));
        __m256i w1 = compare_words<Op>(compare_block(a, Scalar == 1, i + 16),
                                       compare_block(b, Scalar == 2, i + 16));
        __m256i bytes = _mm256_permute4x64_epi64(_mm256_packs_epi16(w0, w1), 0xD8);
        _mm256_storeu_si256((__m256i *)(o + i), _mm256_and_si256(bytes, _mm256_set1_epi8(1)));
    }
    for (; i + 8 <= n; i += 8) {
        __m256i m = _mm256_castps_si256(
                V<Op>::f(compare_eight(a, Scalar == 1, i), compare_eight(b, Scalar == 2, i)));
        __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
        __m128i bytes = _mm_and_si128(_mm_packs_epi16(w, w), _mm_set1_epi8(1));
        _mm_storel_epi64((__m128i *)(o + i), bytes);
    }
    compare_tail<Op, Scalar>(a, b, o, i, n);
}

} /* namespace */

#define BF16_ORDER_TIER TierAvx2
#include "umath/order_twins.h"
#undef BF16_ORDER_TIER

#define INSTANTIATE_BINARY_(T, Op)                                                             \
    template int twin_binary<T, Op>(const char *, const char *, char *, npy_intp);             \
    template int twin_binary_scalar<T, Op>(const char *, bf16_t, bool, char *, npy_intp);      \
    template int twin_shadow_row<T, Op>(char *, const char *, float *, npy_intp);
#define INSTANTIATE_UNARY_(T, Op) template int twin_unary<T, Op>(const char *, char *, npy_intp);
#define INSTANTIATE_COMPARE_(T, Op)                                                            \
    template void twin_compare<T, Op>(const char *, const char *, npy_bool *, npy_intp);         \
    template void twin_compare_scalar<T, Op>(const char *, bf16_t, bool, npy_bool *, npy_intp);
BF16_AVX2_BINARY_TWINS(INSTANTIATE_BINARY_, TierAvx2)
template int twin_binary<TierAvx2, Arctan2>(const char *, const char *, char *, npy_intp);
template int twin_binary_scalar<TierAvx2, Arctan2>(const char *, bf16_t, bool, char *, npy_intp);
template int twin_binary<TierAvx2, Power>(const char *, const char *, char *, npy_intp);
template int twin_binary_scalar<TierAvx2, Power>(const char *, bf16_t, bool, char *, npy_intp);
template int twin_binary<TierAvx2, Hypot>(const char *, const char *, char *, npy_intp);
template int twin_binary_scalar<TierAvx2, Hypot>(const char *, bf16_t, bool, char *, npy_intp);
BF16_AVX2_UNARY_TWINS(INSTANTIATE_UNARY_, TierAvx2)
BF16_AVX2_COMPARE_TWINS(INSTANTIATE_COMPARE_, TierAvx2)

} /* namespace umath */

#ifdef __clang__
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif
