/*
 * umath/loops_avx512.cpp - AVX-512 (F/BW/VL/DQ) twins of the functors in loops.h's
 * BF16_AVX512_* lists, called only when the tier in force is avx512 or higher.
 *
 * 32 bfloat16 are one 64-byte load; the even elements widen with a shift, the odd ones with
 * a mask, so no shuffle is needed and the two rounded halves recombine in place with one
 * ternary-logic op. Rounding is bf16_round_bits_rne in 16 lanes; a finite result rounding to
 * infinity raises the float32 overflow flag (flag_rounding_overflow). Tails use masked loads
 * and stores, so small arrays need no scalar loop.
 * Checked against float32 and float64 references at every tier by tests/umath_tier_checks.py.
 */
#include "umath/loops.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <immintrin.h>
#include <cfenv>
#include <cstring>

#ifdef __clang__ /* clang ignores GCC's target pragma: the same target on every function */
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")
#endif
/* GCC 12 warns about the deliberately undefined source register inside its own intrinsics */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace umath {
namespace {

const int BLOCK = 32; /* bfloat16 elements per 64-byte vector */

/* 16 (8) bfloat16 in natural order widened to float32 */
inline __m512 widen16(__m256i h)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
inline __m256 widen8x(__m128i h)
{
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
inline __m512 even_f32(__m512i v) { return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)); }
inline __m512 odd_f32(__m512i v)
{
    return _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32((int)0xffff0000u)));
}

/* vpermt2w indices that interleave the even (first operand) and odd (second) lanes' upper or
 * lower 16-bit halves back into element order */
static const struct WordPicks {
    alignas(64) uint16_t highs[BLOCK], lows[BLOCK];
    constexpr WordPicks() : highs(), lows()
    {
        for (int p = 0; p < BLOCK; p++) {
            lows[p] = (uint16_t)(p % 2 == 0 ? p : BLOCK + p - 1);
            highs[p] = (uint16_t)(lows[p] + 1);
        }
    }
} word_picks;

/* float32 -> the rounded bfloat16 in the upper half of each lane (lower half: garbage). */
inline __m512i round_upper(__m512 f)
{
    __m512i u = _mm512_castps_si512(f);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i t = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb);
    __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                            _mm512_set1_epi32(0x7f800000));
    return _mm512_mask_or_epi32(t, nan, u, _mm512_set1_epi32(0x00400000)); /* quiet NaN */
}

/* Even and odd float32 results -> 32 bfloat16 in their original order. */
inline __m512i combine(__m512 fe, __m512 fo)
{
    __m512i lo = _mm512_srli_epi32(round_upper(fe), 16);
    /* lo | (round_upper(fo) & 0xffff0000) */
    return _mm512_ternarylogic_epi32(lo, round_upper(fo), _mm512_set1_epi32((int)0xffff0000u),
                                     0xF8);
}

/*
 * combine() for results whose NaNs come from the float32 hardware alone (arithmetic on widened
 * bfloat16): such a NaN is quiet with its lower 16 bits zero (the quieted first NaN operand, or
 * the default NaN), and the rounding add leaves it unchanged, so the NaN test is not needed.
 * Checked by the exhaustive and NaN-crossing operand pairs of tests/umath_tier_checks.py.
 */
inline __m512i plain_upper(__m512 f)
{
    /* u + 0x7fff, plus 1 where bit 16 (the bfloat16's last bit) is set: a test and a masked
     * add, two ops fewer than extracting the bit (AMD Zen 5: 2.9 -> 2.5 cycles a block) */
    __m512i u = _mm512_castps_si512(f);
    __m512i t = _mm512_add_epi32(u, _mm512_set1_epi32(0x7fff));
    return _mm512_mask_add_epi32(t, _mm512_test_epi32_mask(u, _mm512_set1_epi32(0x10000)), t,
                                 _mm512_set1_epi32(1));
}
inline __m512i combine_hardware_nans(__m512 fe, __m512 fo)
{
    return _mm512_ternarylogic_epi32(_mm512_srli_epi32(plain_upper(fe), 16), plain_upper(fo),
                                     _mm512_set1_epi32((int)0xffff0000u), 0xF8);
}

inline __mmask32 tail_mask(npy_intp left) { return (__mmask32)((1ull << left) - 1); }

/* 32 bfloat16 from p; with a mask, the missing lanes read as a quiet NaN, which raises no
 * flag in any of these operations whatever the other operand (1.0 would: 1 / 0) */
inline __m512i load_block(const char *p) { return _mm512_loadu_si512(p); }
inline __m512i load_tail(const char *p, __mmask32 k)
{
    return _mm512_mask_loadu_epi16(_mm512_set1_epi16(0x7fc0), k, p);
}

/*
 * Outputs of at least 4 MiB are written with non-temporal stores once the pointer is 64-byte
 * aligned: they skip the read-for-ownership of each output line, a third of the traffic of
 * a + b. Smaller outputs stay in cache for whatever reads them next.
 */
inline bool streaming_output(const char *o, npy_intp n)
{
    return n >= ((npy_intp)1 << 21) && ((uintptr_t)o & 1) == 0;
}

/* Elements to handle before o is 64-byte aligned (o is 2-byte aligned). */
inline npy_intp to_alignment(const char *o)
{
    return (npy_intp)((64 - ((uintptr_t)o & 63)) & 63) / 2;
}

/* The vector form of each functor with a twin. */
template <class Op> struct V;
/* Add and Multiply in asm with `a` as the instruction's first source: with two NaN operands
 * the first source's NaN is the result (float32's, and the strided loop's), and a compiler may
 * swap the operands of the intrinsics of these commutative operations
 * (umath_tier_checks.py::test_two_nans_give_the_first_operands_every_layout). The binary ones
 * take 16 lanes, and 8 for the last step of twin_shadow_row. */
template <class Vec> inline Vec add_first(Vec a, Vec b)
{
    Vec r;
    __asm__("vaddps %2, %1, %0" : "=v"(r) : "v"(a), "v"(b));
    return r;
}
template <class Vec> inline Vec mul_first(Vec a, Vec b)
{
    Vec r;
    __asm__("vmulps %2, %1, %0" : "=v"(r) : "v"(a), "v"(b));
    return r;
}
template <> struct V<Add> {
    static __m512 f(__m512 a, __m512 b) { return add_first(a, b); }
    static __m256 f(__m256 a, __m256 b) { return add_first(a, b); }
};
template <> struct V<Subtract> {
    static __m512 f(__m512 a, __m512 b) { return _mm512_sub_ps(a, b); }
    static __m256 f(__m256 a, __m256 b) { return _mm256_sub_ps(a, b); }
};
template <> struct V<Multiply> {
    static __m512 f(__m512 a, __m512 b) { return mul_first(a, b); }
    static __m256 f(__m256 a, __m256 b) { return mul_first(a, b); }
};
template <> struct V<Divide> {
    static __m512 f(__m512 a, __m512 b) { return _mm512_div_ps(a, b); }
    static __m256 f(__m256 a, __m256 b) { return _mm256_div_ps(a, b); }
};
template <> struct V<Sqrt> { static __m512 f(__m512 a) { return _mm512_sqrt_ps(a); } };
template <> struct V<Square> { static __m512 f(__m512 a) { return _mm512_mul_ps(a, a); } };
template <> struct V<Cube> {
    static __m512 f(__m512 a) { return _mm512_mul_ps(_mm512_mul_ps(a, a), a); }
};
template <> struct V<Reciprocal> {
    static __m512 f(__m512 a) { return _mm512_div_ps(_mm512_set1_ps(1.0f), a); }
};
/* Rounding to an integer is exact in bfloat16; like the libm calls, it raises "invalid" only
 * for a signalling NaN (and "inexact" is suppressed, as numpy ignores it anyway). */
template <int Mode> struct RoundTo {
    static __m512 f(__m512 a) { return _mm512_roundscale_ps(a, Mode | _MM_FROUND_NO_EXC); }
};
template <> struct V<Floor> : RoundTo<_MM_FROUND_TO_NEG_INF> {};
template <> struct V<Ceil> : RoundTo<_MM_FROUND_TO_POS_INF> {};
template <> struct V<Trunc> : RoundTo<_MM_FROUND_TO_ZERO> {};
template <> struct V<Rint> : RoundTo<_MM_FROUND_CUR_DIRECTION> {}; /* nearbyint */
template <> struct V<Sign> {
    /* the functor's quiet comparisons: 0 for +-0, +-1, and a NaN passes through */
    static __m512 f(__m512 a)
    {
        const __m512 zero = _mm512_setzero_ps();
        __m512 r = _mm512_mask_mov_ps(a, _mm512_cmp_ps_mask(a, zero, _CMP_GT_OQ), _mm512_set1_ps(1.0f));
        r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(a, zero, _CMP_LT_OQ), _mm512_set1_ps(-1.0f));
        return _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(a, zero, _CMP_EQ_OQ), zero);
    }
};

/*
 * Transcendentals: a float32 polynomial, rounded once to bfloat16. A lane is taken from the
 * scalar functor instead (through its unary table for calls of 32,768 elements or more, or
 * once the table exists: the same computation as the direct loop, IEEE flags included) when
 * its input is outside the range where the polynomial raises no flag but "inexact", or when
 * the float32 result lies within NEAR float32 ulps of a bfloat16 rounding midpoint: the
 * polynomials are accurate to a few ulps, so every other lane rounds as the exact value does
 * (and ties cannot occur, so adding half an ulp and truncating is the rounding). Verified over
 * all 65,536 inputs, against float64 math, in tests/umath_tier_checks.py.
 */
const int NEAR = 16;

inline __m512 fmadd(__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); }
inline __m512 c(float v) { return _mm512_set1_ps(v); }
/* The polynomial with coefficients k0 (highest degree) ... kn in x, by Horner's rule: the FMA
 * chain the approximations are written (and verified) with. */
template <class... K>
inline __m512 horner(__m512 x, float k0, K... ks)
{
    __m512 p = c(k0);
    ((p = fmadd(p, x, c(ks))), ...);
    return p;
}

/* e^(s r) for |s r| <= ln2/2: a degree-5 fit of e^t (Chebyshev nodes, relative error
 * 1.7e-7) with t = s r folded into the coefficients, so no product of a tiny r is formed
 * (it would raise "underflow"). */
template <int S>
inline __m512 exp_poly(__m512 r)
{
    constexpr double s = S == 1 ? 1.0 : 0.693147180559945309; /* e^r, or 2^r */
    __m512 p = c((float)(0.008375135250389576 * s * s * s * s * s));
    p = fmadd(p, r, c((float)(0.04191756621003151 * s * s * s * s)));
    p = fmadd(p, r, c((float)(0.16666415333747864 * s * s * s)));
    p = fmadd(p, r, c((float)(0.4999886751174927 * s * s)));
    p = fmadd(p, r, c((float)(1.0 * s)));
    return fmadd(p, r, c(1.0000001192092896f));
}

/* x = n ln2 + r with n = round(x / ln2) and |r| <= ln2/2 (ln2 in two parts): returns r. */
inline __m512 exp_reduce(__m512 x, __m512 *n)
{
    const __m512 shift = c(12582912.0f); /* 1.5 * 2^23: adding it rounds to an integer */
    *n = _mm512_sub_ps(fmadd(x, c(1.44269504088896341f), shift), shift);
    __m512 r = fmadd(*n, c(-0.693359375f), x);
    return fmadd(*n, c(2.12194440e-4f), r);
}

/* e^x for x in [-87, 88.5]: x = n ln2 + r, |r| <= ln2/2, e^r, then scalef by 2^n. */
inline __m512 exp_core(__m512 x)
{
    __m512 n, r = exp_reduce(x, &n);
    return _mm512_scalef_ps(exp_poly<1>(r), n);
}

/*
 * The approximate ops (`clamps_inputs`, all of them) find their clean lanes from the bfloat16
 * bits, 32 lanes in two to four 16-bit integer ops: clamp maps every input (NaN and infinities
 * included) into the clean range, where f raises no flag but "inexact", and the lanes it
 * changed are redone. (Float compares and mask operations in each half cost expm1 and log1p a
 * third of their time, sin and cos a quarter, exp2 a third: AMD EPYC Zen 5.)
 */
inline __m512i clamp_signed(__m512i v, bf16_t lo, bf16_t hi)
{
    return _mm512_max_epi16(_mm512_min_epi16(v, _mm512_set1_epi16((short)hi)),
                            _mm512_set1_epi16((short)lo));
}

/* Clean for x in [-87, 88.5]: the signed minimum caps positive x (and +inf, positive NaNs) at
 * 88.5 (0x42B1), then the unsigned minimum caps negative x (sign bit set) at -87 (0xC2AE). */
template <> struct V<Exp> {
    static constexpr bool approximate = true, clamps_inputs = true;
    static __m512i clamp(__m512i v)
    {
        return _mm512_min_epu16(_mm512_min_epi16(v, _mm512_set1_epi16(0x42B1)),
                                _mm512_set1_epi16((short)0xC2AE));
    }
    static __m512 f(__m512 x) { return exp_core(x); }
};

/* 2^x for x in [-126, 127.5]: x = n + r exactly (|r| <= 1/2), 2^r by exp's polynomial, then
 * scalef by 2^n. The clamp is exp's with the bounds 127.5 (0x42FF) and -126 (0xC2FC). */
template <> struct V<Exp2> {
    static constexpr bool approximate = true, clamps_inputs = true;
    static __m512i clamp(__m512i v)
    {
        return _mm512_min_epu16(_mm512_min_epi16(v, _mm512_set1_epi16(0x42FF)),
                                _mm512_set1_epi16((short)0xC2FC));
    }
    static __m512 f(__m512 x)
    {
        __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        return _mm512_scalef_ps(exp_poly<2>(_mm512_sub_ps(x, n)), n);
    }
};

/* For a float32 x = 2^e (1 + f), 1 + f in [0.75, 1.5) (getmant/getexp, subnormals included): e,
 * and f g(f) ~ log1p(f), g a degree-8 fit of log1p(f) / f (Chebyshev nodes); x must be positive
 * and finite (log1p's u = 1 + x, which has more bits than a bfloat16). */
inline void log_parts(__m512 x, __m512 *e, __m512 *log1p_f)
{
    __m512 m = _mm512_getmant_ps(x, _MM_MANT_NORM_p75_1p5, _MM_MANT_SIGN_zero);
    __m512 ex = _mm512_getexp_ps(x);
    *e = _mm512_mask_add_ps(ex, _mm512_cmp_ps_mask(m, c(1.0f), _CMP_LT_OQ), ex, c(1.0f));
    __m512 fr = _mm512_sub_ps(m, c(1.0f));
    __m512 g = horner(fr, 0.05425942689180374f, -0.12091521173715591f, 0.14996832609176636f,
                      -0.1682281345129013f, 0.19975553452968597f, -0.24993263185024261f,
                      0.3333360254764557f, -0.5000006556510925f, 1.0f);
    *log1p_f = _mm512_mul_ps(fr, g);
}

/* A 128-entry float32 table indexed by the 7 mantissa bits of 32 bfloat16 lanes at once: the
 * upper and lower 16-bit halves of the entries apart (two vpermt2w and a blend each), then split
 * into the float32 values of the even and odd elements (log_b and cbrt of the mantissa). */
struct Table128 {
    alignas(64) uint16_t hi[128], lo[128];
};
template <class F> inline Table128 make_table128(F value_of_j)
{
    Table128 b{};
    for (int j = 0; j < 128; j++) {
        float v = (float)value_of_j(j);
        uint32_t w;
        memcpy(&w, &v, 4);
        b.hi[j] = (uint16_t)(w >> 16);
        b.lo[j] = (uint16_t)w;
    }
    return b;
}
/* The table's registers and constants, loaded once per call and opaque to the compiler (which
 * would otherwise form the constants anew in every block). */
struct Table128Regs {
    __m512i hi[4], lo[4], bit6, low16;
};
inline Table128Regs table128_regs(const Table128 &t)
{
    Table128Regs r;
    for (int j = 0; j < 4; j++) {
        r.hi[j] = _mm512_load_si512(t.hi + 32 * j);
        r.lo[j] = _mm512_load_si512(t.lo + 32 * j);
    }
    r.bit6 = _mm512_set1_epi16(0x40);
    r.low16 = _mm512_set1_epi32(0xffff);
    __asm__("" : "+v"(r.bit6), "+v"(r.low16));
    return r;
}
inline void table128_lookup(__m512i u, const Table128Regs &c, __m512 *fe, __m512 *fo)
{
    __mmask32 upper_j = _mm512_test_epi16_mask(u, c.bit6); /* j >= 64 */
    __m512i h = _mm512_mask_blend_epi16(upper_j, _mm512_permutex2var_epi16(c.hi[0], u, c.hi[1]),
                                        _mm512_permutex2var_epi16(c.hi[2], u, c.hi[3]));
    __m512i l = _mm512_mask_blend_epi16(upper_j, _mm512_permutex2var_epi16(c.lo[0], u, c.lo[1]),
                                        _mm512_permutex2var_epi16(c.lo[2], u, c.lo[3]));
    /* even elements: (h << 16) | (l & 0xffff); odd: (h & ~0xffff) | (l >> 16) */
    *fe = _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_slli_epi32(h, 16), l, c.low16, 0xF8));
    *fo = _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_srli_epi32(l, 16), h, c.low16, 0xF4));
}

/*
 * log x, log2 x and log10 x for a bfloat16 x = 2^e (1 + j/128): with m = 1 + j/128 for j < 64
 * and m = (1 + j/128) / 2 (and e + 1) for j >= 64, m lies in [0.75, 1.5) and
 * log_b x = e log_b(2) + log_b(m), where log_b(m) takes only 128 values: a table of float32,
 * looked up in 32 lanes at once (its upper and lower 16-bit halves apart, two vpermt2w each) and
 * split into the even and odd elements, then one FMA (for base 2 an exact product: one
 * rounding, as an addition). Where the two terms have opposite signs, the result is at least
 * log_b(2) - log_b(1.5) = 0.415 log_b(2) in magnitude, |log_b(m)| < 0.585 log_b(2): the binade of
 * |log_b(m)| or above, so the error stays below 1.5 float32 ulps of the result (log_b(m) and the
 * FMA each round once; log_b(2) rounded to float32 is at most 2^-24 off relative), well inside
 * NEAR; every result is checked against float64 math by test_unary_exhaustive_every_layout in
 * tests/umath_tier_checks.py. Clean for normal x from 2^-126 to the largest finite bfloat16;
 * subnormal x, x <= 0, inf and NaN are redone. (log2 by a polynomial in m, as log_parts,
 * measured 0.7x numpy's float32 log2 on 10^4-10^5 elements; from the table, 1.4-1.6x.)
 */
enum class LogBase { E, Two, Ten };
template <LogBase B> struct LogByTable {
    static constexpr bool approximate = true, clamps_inputs = true, pairs_halves = true;
    static double log_b(double x)
    {
        return B == LogBase::E ? std::log(x) : B == LogBase::Two ? std::log2(x) : std::log10(x);
    }
    /* 0x0080 ... 0x7f7f in signed 16-bit order: negative x, NaNs with the sign bit, zeros and
     * subnormals go to 0x0080, +inf and positive NaNs to 0x7f7f */
    static __m512i clamp(__m512i v) { return clamp_signed(v, 0x0080, 0x7f7f); }
    static const Table128 &table()
    {
        static const Table128 t = make_table128([](int j) { return log_b(j < 64 ? 1.0 + j / 128.0 : 0.5 + j / 256.0); });
        return t;
    }
    struct Regs {
        Table128Regs t;
        __m512 bit22, one, log_b2;
    };
    static Regs regs()
    {
        Regs r;
        r.t = table128_regs(table());
        r.bit22 = _mm512_castsi512_ps(_mm512_set1_epi32(1 << 22));
        r.one = c(1.0f);
        r.log_b2 = c((float)log_b(2.0));
        __asm__("" : "+v"(r.bit22), "+v"(r.one), "+v"(r.log_b2));
        return r;
    }
    /* e log_b(2) + log_b(m) of one half (x: the widened elements, l: their log_b(m)) */
    static __m512 half(__m512 x, __m512 l, const Regs &c)
    {
        __mmask16 upper_m = _mm512_test_epi32_mask(_mm512_castps_si512(x),
                                                   _mm512_castps_si512(c.bit22));
        __m512 e = _mm512_getexp_ps(x);
        return fmadd(_mm512_mask_add_ps(e, upper_m, e, c.one), c.log_b2, l);
    }
    /* 32 clamped inputs u -> the float32 results of the even (*fe) and odd (*fo) elements */
    static void f2(__m512i u, __m512 xe, __m512 xo, const Regs &c, __m512 *fe, __m512 *fo)
    {
        __m512 le, lo;
        table128_lookup(u, c.t, &le, &lo);
        *fe = half(xe, le, c);
        *fo = half(xo, lo, c);
    }
};
template <> struct V<Log> : LogByTable<LogBase::E> {};
template <> struct V<Log2> : LogByTable<LogBase::Two> {};
template <> struct V<Log10> : LogByTable<LogBase::Ten> {};

/*
 * expm1, log1p, sinh and arctan clamp magnitudes to [2^-40, a bound] (a smaller nonzero one
 * would make a square underflow), zeros kept, the lanes changed redone. expm1, sinh and arctan
 * carry the input's sign, so setting it (with_sign_of) keeps -0.0 (r + r^2 q would make it
 * +0.0) without a compare; every input is checked against float64 math by
 * test_unary_exhaustive_every_layout in tests/umath_tier_checks.py.
 */
inline __m512i clamp_magnitude(__m512i v, bf16_t hi)
{
    __m512i sign = _mm512_set1_epi16((short)0x8000);
    __m512i m = _mm512_andnot_si512(sign, v);
    /* nonzero magnitudes below 2^-40 lifted to it, zeros kept: nz is 0xffff where m != 0 (the
     * saturating add reaches bit 15, the arithmetic shift spreads it). Not max(m - 1, ...) + 1,
     * whose all-ones constant GCC forms inside the loop with a vpternlogd that waits for the
     * register's last value on AMD Zen 5 (a chain through every block: expm1 3.5x slower), nor
     * a masked max (log1p 10^5: 22.4 us against 21.6) */
    __m512i nz = _mm512_srai_epi16(_mm512_adds_epu16(m, _mm512_set1_epi16(0x7fff)), 15);
    m = _mm512_min_epu16(_mm512_max_epu16(m, _mm512_set1_epi16(0x2B80)), nz);
    m = _mm512_min_epu16(m, _mm512_set1_epi16((short)hi));
    return _mm512_ternarylogic_epi32(m, v, sign, 0xF8); /* m | (v & sign) */
}
inline __m512 with_sign_of(__m512 r, __m512 x)
{
    /* (r & ~sign) | (x & sign) */
    return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(
            _mm512_castps_si512(r), _mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u), 0xD8));
}

/* expm1 t for |t| <= 60: t = n ln2 + r, expm1(r) = r + r^2 q(r) (q a degree-4 fit, Chebyshev
 * nodes), and 2^n (expm1(r) + 1) - 1 = p expm1(r) + (p - 1) with p = 2^n in one FMA (p - 1 is
 * exact for |n| <= 24, and rounds by less than the result's ulp beyond; n = 0 gives expm1(r)). */
template <> struct V<Expm1> {
    static constexpr bool approximate = true, clamps_inputs = true;
    static __m512i clamp(__m512i v) { return clamp_magnitude(v, 0x4270); /* 60 */ }
    static __m512 f(__m512 t)
    {
        __m512 n, r = exp_reduce(t, &n);
        __m512 q = horner(r, 0.0013933650916442275f, 0.008363179862499237f, 0.04166646674275398f,
                          0.16666576266288757f, 0.5f);
        __m512 em = fmadd(_mm512_mul_ps(r, r), q, r);
        __m512 p = _mm512_scalef_ps(c(1.0f), n);
        return with_sign_of(fmadd(p, em, _mm512_sub_ps(p, c(1.0f))), t);
    }
};

/* arctan x for 2^-40 <= |x| <= 2^40 (zeros kept; 1/x of a larger x could underflow) as Cephes'
 * atanf: |x| above tan(3 pi/8) becomes pi/2 + arctan(-1/|x|), above tan(pi/8) pi/4 +
 * arctan((|x| - 1)/(|x| + 1)) (one division with the blended numerator and denominator), then
 * an odd polynomial on |t| <= tan(pi/8); the result takes x's sign. */
template <> struct V<Arctan> {
    static constexpr bool approximate = true, clamps_inputs = true;
    static __m512i clamp(__m512i v) { return clamp_magnitude(v, 0x5380); }
    static __m512 f(__m512 x)
    {
        __m512 ax = _mm512_abs_ps(x);
        __mmask16 far = _mm512_cmp_ps_mask(ax, c(2.414213562373095f), _CMP_GT_OQ);
        __mmask16 mid = _mm512_cmp_ps_mask(ax, c(0.4142135623730950f), _CMP_GT_OQ);
        /* t = -1/|x|, (|x| - 1)/(|x| + 1) or |x|, with base pi/2, pi/4 or 0 */
        __m512 num = _mm512_mask_blend_ps(far, _mm512_mask_sub_ps(ax, mid, ax, c(1.0f)), c(-1.0f));
        __m512 den = _mm512_mask_blend_ps(far, _mm512_mask_add_ps(c(1.0f), mid, ax, c(1.0f)), ax);
        __m512 base = _mm512_mask_blend_ps(far, _mm512_maskz_mov_ps(mid, c(0.7853981633974483f)),
                                           c(1.5707963267948966f));
        __m512 t = _mm512_mask_div_ps(ax, mid, num, den);
        __m512 z = _mm512_mul_ps(t, t);
        __m512 p = horner(z, 8.05374449538e-2f, -1.38776856032e-1f, 1.99777106478e-1f,
                          -3.33329491539e-1f);
        return with_sign_of(_mm512_add_ps(base, fmadd(_mm512_mul_ps(p, z), t, t)), x);
    }
};

/* cosh x = (E + 1/E) / 2 with E = e^|x|, for |x| <= 87 (0x42AE: 1/E stays normal), zeros and
 * subnormals included (E rounds to 1, raising nothing); about 2 float32 ulps. */
template <> struct V<Cosh> {
    static constexpr bool approximate = true, clamps_inputs = true;
    static __m512i clamp(__m512i v)
    {
        __m512i sign = _mm512_set1_epi16((short)0x8000);
        return _mm512_ternarylogic_epi32(
                _mm512_min_epu16(_mm512_andnot_si512(sign, v), _mm512_set1_epi16(0x42AE)), v, sign,
                0xF8); /* min(|v|, 87) | (v & sign) */
    }
    static __m512 f(__m512 x)
    {
        __m512 e = exp_core(_mm512_abs_ps(x));
        return _mm512_mul_ps(_mm512_add_ps(e, _mm512_div_ps(c(1.0f), e)), c(0.5f));
    }
};

/* sinh x for 2^-40 <= |x| <= 87 (zeros kept): below 1/2 the odd Taylor polynomial to x^9
 * (truncation 2^-35 relative), from 1/2 on (E - 1/E) / 2 with E = e^|x|, whose cancellation
 * at most doubles the float32 errors; the result takes x's sign. */
template <> struct V<Sinh> {
    static constexpr bool approximate = true, clamps_inputs = true;
    static __m512i clamp(__m512i v) { return clamp_magnitude(v, 0x42AE); }
    static __m512 f(__m512 x)
    {
        __m512 ax = _mm512_abs_ps(x), z = _mm512_mul_ps(x, x);
        __m512 p = horner(z, (float)(1.0 / 362880), (float)(1.0 / 5040), (float)(1.0 / 120),
                          (float)(1.0 / 6));
        __m512 small = fmadd(_mm512_mul_ps(ax, z), p, ax);
        __m512 e = exp_core(ax);
        __m512 big = _mm512_mul_ps(_mm512_sub_ps(e, _mm512_div_ps(c(1.0f), e)), c(0.5f));
        __m512 r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(ax, c(0.5f), _CMP_LT_OQ), big, small);
        return with_sign_of(r, x);
    }
};

/* cbrt x for 2^-40 <= |x| <= the largest finite bfloat16 (zeros kept; smaller magnitudes, inf
 * and NaN clamped, so redone): |x| = m 2^(E - 129) with m = 1 + j/128 (j its 7 mantissa bits)
 * and E its biased exponent + 2, in [89, 256]; E = 3Q + R with Q = E * 21846 >> 16 (exactly
 * floor(E / 3) there), so cbrt |x| = cbrt(m) 2^(R/3) 2^(Q - 43). cbrt(m) comes from a 128-entry
 * table (as log's), 2^(R/3) from a permute; their product lies in [1, 2) (under 1.5 float32 ulps
 * off: three roundings), and Q - 43 goes into its exponent field by an integer add. A zero lane's
 * product is masked to 0 and its exponent add to 0: +-0 with x's sign. (A degree-7 polynomial
 * for cbrt(m) with getexp/getmant/scalef ran at 0.68x NumPy's float32, 25 us per 10^5.) */
template <> struct V<Cbrt> {
    static constexpr bool approximate = true, clamps_inputs = true, pairs_halves = true;
    static __m512i clamp(__m512i v) { return clamp_magnitude(v, 0x7F7F); }
    static const Table128 &table()
    {
        static const Table128 t = make_table128([](int j) { return std::cbrt(1.0 + j / 128.0); });
        return t;
    }
    struct Regs {
        Table128Regs t;
        __m512i two, third, three, bias;
        __m512 k;
    };
    static Regs regs()
    {
        Regs r;
        r.t = table128_regs(table());
        r.two = _mm512_set1_epi16(2);
        r.third = _mm512_set1_epi16(21846);
        r.three = _mm512_set1_epi16(3);
        r.bias = _mm512_set1_epi16(43);
        r.k = _mm512_setr_ps(1.0f, 1.2599210498948732f, 1.5874010519681994f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
        __asm__("" : "+v"(r.two), "+v"(r.third), "+v"(r.three), "+v"(r.bias), "+v"(r.k));
        return r;
    }
    static void f2(__m512i u, __m512 xe, __m512 xo, const Regs &c, __m512 *fe, __m512 *fo)
    {
        __m512 me, mo;
        table128_lookup(u, c.t, &me, &mo);
        const __m512i sign = _mm512_set1_epi16((short)0x8000);
        __m512i a = _mm512_andnot_si512(sign, u);
        __mmask32 nz = _mm512_test_epi16_mask(a, a);
        __m512i e = _mm512_add_epi16(_mm512_srli_epi16(a, 7), c.two);
        __m512i q = _mm512_mulhi_epu16(e, c.third);
        __m512i r = _mm512_sub_epi16(e, _mm512_mullo_epi16(q, c.three));
        /* (Q - 43) << 7 (0 in zero lanes) plus the sign bit, in the upper half of each result:
         * one 32-bit add scales the product and gives it x's sign (modulo 2^32) */
        __m512i sh = _mm512_add_epi16(_mm512_maskz_slli_epi16(nz, _mm512_sub_epi16(q, c.bias), 7),
                                      _mm512_and_si512(u, sign));
        __m512 ke = _mm512_permutexvar_ps(r, c.k), ko = _mm512_permutexvar_ps(_mm512_srli_epi32(r, 16), c.k);
        __m512 pe = _mm512_maskz_mul_ps(_mm512_cmp_ps_mask(xe, _mm512_setzero_ps(), _CMP_NEQ_UQ), me, ke);
        __m512 po = _mm512_maskz_mul_ps(_mm512_cmp_ps_mask(xo, _mm512_setzero_ps(), _CMP_NEQ_UQ), mo, ko);
        *fe = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(pe), _mm512_slli_epi32(sh, 16)));
        *fo = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(po),
                                                   _mm512_and_si512(sh, _mm512_set1_epi32((int)0xffff0000u))));
    }
};

/* log1p x = log u with u = 1 + x, for x from -0.99609375 (the bfloat16 above -1) to the
 * largest finite one. For 2^-16 <= |x| < 2^24 a bfloat16 x (8 significant bits) and 1 fit in
 * float32's 24, so u is exact; beyond 2^24 its rounding moves log u by under 2^-24 / 16
 * relative; below 2^-8 log1p x rounds to x itself (every such bfloat16, against float64), so x
 * is the result there (zeros keep their sign; nonzero magnitudes below 2^-40 are redone, as
 * the functor raises "underflow" for subnormal x). The signed minimum caps positive x (+inf,
 * positive NaNs) at 0x7F7F, the unsigned one caps negative x at 0xBF7F. */
template <> struct V<Log1p> {
    static constexpr bool approximate = true, clamps_inputs = true;
    static __m512i clamp(__m512i v)
    {
        __m512i w = clamp_magnitude(v, 0x7fff);
        return _mm512_min_epu16(_mm512_min_epi16(w, _mm512_set1_epi16(0x7F7F)),
                                _mm512_set1_epi16((short)0xBF7F));
    }
    static __m512 f(__m512 x)
    {
        __m512 e, l;
        log_parts(_mm512_add_ps(x, c(1.0f)), &e, &l);
        __m512 r = fmadd(e, c(0.693359375f), fmadd(e, c(-2.12194440e-4f), l));
        return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(_mm512_abs_ps(x), c(0x1p-8f), _CMP_LT_OQ),
                                    r, x);
    }
};

/*
 * tanh by lookup, 32 lanes in 16-bit integer ops (no float32 evaluation). tanh x rounds to x
 * for |x| < 2^-4 and to +-1 for |x| >= 3.5 (and inf), so only the 737 magnitudes from 2^-4 to
 * 3.5 (bit patterns 0x3D80 ... 0x4060) need a table. There tanh |x| lies 0 to 224 bfloat16
 * steps below |x|, as bit patterns: that distance d fits a byte, two to a 16-bit word, so the
 * whole table is six 64-word vpermt2w tables. Every magnitude is clamped to 0x3D80 ... 0x4060
 * (where d is 0 and 224), and the result is |x| - d with x's sign. NaN and subnormal x are
 * redone by the scalar functor (its flags). The table is the scalar functor's results, so the
 * two paths agree; every input is checked against float64 tanh by
 * test_unary_exhaustive_every_layout in tests/umath_tier_checks.py.
 */
template <> struct V<Tanh> {
    static constexpr bool looks_up = true;
    static constexpr int LO = 0x3D80, HI = 0x4060, WORDS = 6 * 64;
    struct Table {
        alignas(64) uint16_t w[WORDS];
    };
    /* Built on first use (a thread-safe local static: no Python, no GIL needed). */
    static const Table &table()
    {
        static const Table t = [] {
            Table b{};
            for (int k = 0; k <= HI - LO; k++) {
                bf16_t m = (bf16_t)(LO + k);
                int d = m - f32_to_bf16(Tanh::f(bf16_to_f32(m)));
                b.w[k / 2] = (uint16_t)(b.w[k / 2] | (d << (8 * (k & 1))));
            }
            return b;
        }();
        return t;
    }
    /* The 12 table registers and the constants of f, loaded once per call. Each is made
     * opaque to the compiler, which would otherwise form the constants anew in every block
     * (a general register move and a broadcast each) around the out-of-line redo call. */
    struct Regs {
        __m512i t[12], magnitude, bit7, bit8, bit9, one, hi, lo, nan_above;
    };
    static Regs regs()
    {
        Regs r;
        for (int j = 0; j < 12; j++) {
            r.t[j] = _mm512_load_si512(table().w + 32 * j);
        }
        r.magnitude = _mm512_set1_epi16(0x7fff);
        r.bit7 = _mm512_set1_epi16(0x80);
        r.bit8 = _mm512_set1_epi16(0x100);
        r.bit9 = _mm512_set1_epi16(0x200);
        r.one = _mm512_set1_epi16(1);
        r.hi = _mm512_set1_epi16(HI);
        r.lo = _mm512_set1_epi16(LO);
        r.nan_above = _mm512_set1_epi16(0x7f80);
        __asm__("" : "+v"(r.magnitude), "+v"(r.bit7), "+v"(r.bit8), "+v"(r.bit9), "+v"(r.one),
                "+v"(r.hi), "+v"(r.lo), "+v"(r.nan_above));
        return r;
    }
    /* 32 results; `redo`: the lanes holding a NaN or a subnormal */
    static __m512i f(__m512i v, const Regs &c, __mmask32 *redo)
    {
        const __m512i *t = c.t;
        __m512i m = _mm512_and_si512(v, c.magnitude);
        __m512i mc = _mm512_min_epu16(m, c.hi);
        __m512i k = _mm512_subs_epu16(mc, c.lo); /* 0 ... 736 */
        __m512i w = _mm512_srli_epi16(k, 1);
        __m512i r0 = _mm512_permutex2var_epi16(t[0], w, t[1]);
        __m512i r1 = _mm512_permutex2var_epi16(t[2], w, t[3]);
        __m512i r2 = _mm512_permutex2var_epi16(t[4], w, t[5]);
        __m512i r3 = _mm512_permutex2var_epi16(t[6], w, t[7]);
        __m512i r4 = _mm512_permutex2var_epi16(t[8], w, t[9]);
        __m512i r5 = _mm512_permutex2var_epi16(t[10], w, t[11]);
        /* the table of word w = k / 2 is k / 128: bits 7, 8 and 9 of k choose */
        __mmask32 b7 = _mm512_test_epi16_mask(k, c.bit7);
        __mmask32 b8 = _mm512_test_epi16_mask(k, c.bit8);
        __mmask32 b9 = _mm512_test_epi16_mask(k, c.bit9);
        __m512i r01 = _mm512_mask_blend_epi16(b7, r0, r1);
        __m512i r23 = _mm512_mask_blend_epi16(b7, r2, r3);
        __m512i r45 = _mm512_mask_blend_epi16(b7, r4, r5);
        __m512i r = _mm512_mask_blend_epi16(b9, _mm512_mask_blend_epi16(b8, r01, r23), r45);
        /* d: the lower byte for even k (shifted up first), the upper one for odd k */
        r = _mm512_mask_slli_epi16(r, _mm512_testn_epi16_mask(k, c.one), r, 8);
        __m512i d = _mm512_srli_epi16(r, 8);
        *redo = redo_lanes_of(v, m, c);
        return result(v, mc, d, c);
    }
    /* the lanes to redo: NaN (m > 0x7f80) and subnormal (0 < m < 0x80); m = |v| */
    static __mmask32 redo_lanes_of(__m512i v, __m512i m, const Regs &c)
    {
        return _mm512_cmpgt_epu16_mask(m, c.nan_above) |
               _mm512_mask_cmplt_epu16_mask(_mm512_test_epi16_mask(v, c.magnitude), m, c.bit7);
    }
    /* (mc - d) | (v & ~0x7fff): the clamped magnitude less the distance, with v's sign */
    static __m512i result(__m512i v, __m512i mc, __m512i d, const Regs &c)
    {
        return _mm512_ternarylogic_epi32(_mm512_sub_epi16(mc, d), v, c.magnitude, 0xF4);
    }
};

/*
 * sin, cos and tan for 2^-40 <= |x| <= 2^16: x = n pi/2 + r with n = round(2x/pi) and
 * pi/2 in three float32 parts (the first product is exact in the FMA, so r keeps its relative
 * accuracy also when x is close to a multiple of pi/2), then sin r or cos r on |r| <= pi/4 by
 * the odd / even minimax polynomials of Cephes' sinf / cosf, the quadrant n mod 4 choosing which
 * and the sign (tan: sin r / cos r, or -cos r / sin r for odd n). The lower bound keeps r^3 and
 * r^2 above float32's normal range (no "underflow").
 * Measured on an Ice Lake Xeon, 10^5 elements: about 2x the speed of the 65,536-entry table (an
 * AVX2 transcription only tied with the table there, so the avx2 tier keeps the table).
 */
/* sin r and cos r of the reduced argument, and the quadrant n (+ quadrant_offset) in the low
 * bits of *q */
inline void sincos_parts(__m512 x, int quadrant_offset, __m512 *sin_r, __m512 *cos_r, __m512i *q)
{
    const __m512 shift = c(12582912.0f); /* 1.5 * 2^23: adding it rounds to an integer */
    __m512 ns = fmadd(x, c(0.636619772367581343f), shift);
    *q = _mm512_add_epi32(_mm512_castps_si512(ns), _mm512_set1_epi32(quadrant_offset));
    __m512 n = _mm512_sub_ps(ns, shift);
    __m512 r = _mm512_fnmadd_ps(n, c(1.5707963705062866f), x);
    r = _mm512_fnmadd_ps(n, c(-4.371138828673793e-08f), r);
    r = _mm512_fnmadd_ps(n, c(-1.7151245100058819e-15f), r);
    __m512 z = _mm512_mul_ps(r, r);
    __m512 ps = fmadd(c(-1.9515295891e-4f), z, c(8.3321608736e-3f));
    ps = fmadd(ps, z, c(-1.6666654611e-1f));
    *sin_r = fmadd(_mm512_mul_ps(ps, z), r, r);
    __m512 pc = fmadd(c(2.443315711809948e-5f), z, c(-1.388731625493765e-3f));
    pc = fmadd(pc, z, c(4.166664568298827e-2f));
    *cos_r = fmadd(_mm512_mul_ps(pc, z), z, fmadd(z, c(-0.5f), c(1.0f)));
}

inline __m512 sincos_core(__m512 x, int quadrant_offset)
{
    __m512 sn, cs;
    __m512i q;
    sincos_parts(x, quadrant_offset, &sn, &cs, &q);
    /* quadrant bit 0: cos r instead of sin r; bit 1: negate */
    __mmask16 odd = _mm512_test_epi32_mask(q, _mm512_set1_epi32(1));
    __m512 v = _mm512_mask_blend_ps(odd, sn, cs);
    __m512i sign = _mm512_slli_epi32(_mm512_and_si512(q, _mm512_set1_epi32(2)), 30);
    return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), sign));
}

/* Clean for magnitudes from 2^-40 to 65536 (0x4780): the clamp moves the others (zeros too,
 * whose sign the polynomial of sin would lose) into that range and they are redone. */
inline __m512i clamp_sincos(__m512i v)
{
    __m512i sign = _mm512_set1_epi16((short)0x8000);
    __m512i m = _mm512_min_epu16(_mm512_max_epu16(_mm512_andnot_si512(sign, v),
                                                  _mm512_set1_epi16(0x2B80)),
                                 _mm512_set1_epi16(0x4780));
    return _mm512_ternarylogic_epi32(m, v, sign, 0xF8); /* m | (v & sign) */
}

template <> struct V<Sin> {
    static constexpr bool approximate = true, clamps_inputs = true;
    static __m512i clamp(__m512i v) { return clamp_sincos(v); }
    static __m512 f(__m512 x) { return sincos_core(x, 0); }
};

template <> struct V<Cos> {
    static constexpr bool approximate = true, clamps_inputs = true;
    static __m512i clamp(__m512i v) { return clamp_sincos(v); }
    static __m512 f(__m512 x) { return sincos_core(x, 1); }
};

template <> struct V<Tan> {
    static constexpr bool approximate = true, clamps_inputs = true;
    static __m512i clamp(__m512i v) { return clamp_sincos(v); }
    static __m512 f(__m512 x)
    {
        __m512 sn, cs;
        __m512i q;
        sincos_parts(x, 0, &sn, &cs, &q);
        __mmask16 odd = _mm512_test_epi32_mask(q, _mm512_set1_epi32(1));
        __m512 t = _mm512_div_ps(_mm512_mask_blend_ps(odd, sn, cs), _mm512_mask_blend_ps(odd, cs, sn));
        return _mm512_mask_sub_ps(t, odd, _mm512_setzero_ps(), t);
    }
};

/* bit i of a 16-bit mask -> bit 2i (even/odd lanes back to element order) */
inline uint32_t spread_bits(uint32_t m)
{
    m = (m | (m << 8)) & 0x00ff00ffu;
    m = (m | (m << 4)) & 0x0f0f0f0fu;
    m = (m | (m << 2)) & 0x33333333u;
    return (m | (m << 1)) & 0x55555555u;
}

/* float32 results + (half an ulp + NEAR): the upper half is the rounded bfloat16 wherever the
 * lower half is not within [0x8000 - NEAR, 0x8000 + NEAR) before the add. */
inline __m512i half_ulp_near() { return _mm512_set1_epi32(0x8000 + NEAR); }
inline __m512i add_half_ulp(__m512 r, __m512i half = half_ulp_near())
{
    return _mm512_add_epi32(_mm512_castps_si512(r), half);
}
inline __m512i near_bits() { return _mm512_set1_epi32(0xffff & ~(2 * NEAR - 1)); }
inline __m512i near_bits16() { return _mm512_set1_epi16((short)(0xffff & ~(2 * NEAR - 1))); }
inline __mmask16 near_midpoint(__m512i w, __m512i bits = near_bits())
{
    return _mm512_testn_epi32_mask(w, bits);
}

template <int P> struct Cmp {
    static __mmask16 f(__m512 a, __m512 b) { return _mm512_cmp_ps_mask(a, b, P); }
};
template <> struct V<Equal> : Cmp<_CMP_EQ_OQ> {};
template <> struct V<NotEqual> : Cmp<_CMP_NEQ_UQ> {};
template <> struct V<Less> : Cmp<_CMP_LT_OQ> {};
template <> struct V<LessEqual> : Cmp<_CMP_LE_OQ> {};
template <> struct V<Greater> : Cmp<_CMP_GT_OQ> {};
template <> struct V<GreaterEqual> : Cmp<_CMP_GE_OQ> {};

template <class Op>
inline __m512i combine_results(__m512 fe, __m512 fo)
{
    if constexpr (ExactInBf16<Op>::value) {
        return _mm512_ternarylogic_epi32(_mm512_srli_epi32(_mm512_castps_si512(fe), 16),
                                         _mm512_castps_si512(fo),
                                         _mm512_set1_epi32((int)0xffff0000u), 0xF8);
    }
    else if constexpr (HardwareNaNs<Op>::value) {
        return combine_hardware_nans(fe, fo);
    }
    else {
        return combine(fe, fo);
    }
}

/* The float32 overflow flag where a finite lane of fe or fo rounds to the bfloat16 infinity
 * (loops.h, rounds_to_inf_offset): the larger magnitude of each lane pair (vrangeps, sign
 * cleared) plus the offset. Two float ops, where testing the results for infinities cost a
 * quarter of the loop (AMD Zen 5). */
inline void flag_rounding_overflow(__m512 fe, __m512 fo)
{
    __m512 g = _mm512_add_ps(_mm512_range_ps(fe, fo, 0xB), _mm512_set1_ps(rounds_to_inf_offset));
    __asm__ volatile("" : : "v"(g)); /* the flag is the result */
}

/* One block of a binary op: inputs x, y (32 bfloat16 each) -> 32 rounded results (the
 * arithmetic ops of BF16_AVX512_BINARY_TWINS, whose NaNs are the hardware's). */
template <class Op>
inline __m512i binary_block(__m512i x, __m512i y)
{
    static_assert(HardwareNaNs<Op>::value, "binary twins are float32 arithmetic");
    __m512 fe = V<Op>::f(even_f32(x), even_f32(y));
    __m512 fo = V<Op>::f(odd_f32(x), odd_f32(y));
    flag_rounding_overflow(fe, fo);
    return combine_hardware_nans(fe, fo);
}

/* One block of a unary op evaluated in float32. None of these rounds a finite float32 result
 * to infinity: a square root, an integer rounding or a sign of a bfloat16 is at most its
 * magnitude (or NaN), and no square of a bfloat16 m 2^e lies from 0x7F7F8000 (the least
 * float32 that rounds to the bfloat16 infinity) to the largest float32 — that takes e = 63 and
 * m^2 >= 3.992, above 1.9921875^2 — so a square that rounds to infinity has overflowed in
 * float32, which raises the flag itself
 * (tests/umath_tier_checks.py::test_square_overflow_flag_exact_at_the_rounding_boundary).
 * A reciprocal is finite in float32 only for |x| above 2^-128, the least such bfloat16 being
 * 2^-128 (1 + 2^-5), whose reciprocal 1.94 2^127 lies below 0x7F7F8000
 * (test_reciprocal_warnings_per_input). */
template <class Op>
inline __m512i unary_block(__m512i x)
{
    __m512 fe = V<Op>::f(even_f32(x)), fo = V<Op>::f(odd_f32(x));
    return combine_results<Op>(fe, fo);
}

/*
 * Streaming loops also prefetch their inputs this many bytes ahead: one core keeps too few
 * lines in flight with the hardware prefetcher alone (the same measure as the conversions in
 * kernels/convert.c). A prefetch never faults, so reaching past the end is harmless.
 */
const npy_intp PREFETCH_AHEAD = 4096;

inline void prefetch_ahead(const char *p)
{
    if (p != nullptr) {
        _mm_prefetch(p + PREFETCH_AHEAD, _MM_HINT_T0);
    }
}

/* Run block(i, load) over n elements into o: a masked head up to 64-byte alignment when
 * streaming, full blocks, and a masked tail. `block(x_index, mask)` returns the results;
 * x and y (y may be null) are the contiguous inputs it reads, prefetched when streaming. */
template <class Block>
inline void run_blocks(char *o, npy_intp n, const char *x, const char *y, Block block)
{
    npy_intp i = 0;
    if (streaming_output(o, n)) {
        npy_intp head = to_alignment(o);
        if (head) {
            __mmask32 k = tail_mask(head);
            _mm512_mask_storeu_epi16(o, k, block(0, k));
            i = head;
        }
        for (; i + BLOCK <= n; i += BLOCK) {
            prefetch_ahead(x + 2 * i);
            prefetch_ahead(y == nullptr ? nullptr : y + 2 * i);
            _mm512_stream_si512((__m512i *)(o + 2 * i), block(i, (__mmask32)~0u));
        }
        _mm_sfence();
    }
    for (; i + BLOCK <= n; i += BLOCK) {
        _mm512_storeu_si512(o + 2 * i, block(i, (__mmask32)~0u));
    }
    if (i < n) {
        __mmask32 k = tail_mask(n - i);
        _mm512_mask_storeu_epi16(o + 2 * i, k, block(i, k));
    }
}

inline __m512i load_at(const char *p, npy_intp i, __mmask32 k)
{
    return k == (__mmask32)~0u ? load_block(p + 2 * i) : load_tail(p + 2 * i, k);
}

} /* namespace */

namespace {

/* ---- arctan2: ops.h's Arctan2 sixteen lanes at a time, in float32 ------------------------- */

inline __m512d pd(double v) { return _mm512_set1_pd(v); }

/* A block of results of a binary twin (8 or 16 bfloat16 in `res`) into o at element i; the
 * lanes in `redo` from the functor (twin_store_block). Most blocks have none and are stored
 * from the register: a store of the vpmovdw's memory form, read back at once, had made each
 * block wait for it (power of 10^5 elements 311 -> 288 us, AMD EPYC Zen 5). */
template <class Op, class Vec>
inline int store_block(Vec res, unsigned redo, const char *a, bool a_bcast, const char *b,
                       bool b_bcast, npy_intp i, char *o)
{
    if (__builtin_expect(redo == 0, 1)) {
        memcpy(o + 2 * i, &res, sizeof res);
        return 0;
    }
    alignas(sizeof(Vec)) char buf[sizeof(Vec)];
    memcpy(buf, &res, sizeof res);
    return twin_store_block<Op>(buf, (int)(sizeof(Vec) / 2), redo, a, a_bcast, b, b_bcast, i, o);
}

/* Sixteen bfloat16's bits (`bcast`: one, repeated) */
inline __m256i bits16(const char *p, bool bcast)
{
    return bcast ? _mm256_set1_epi16((short)ld(p)) : _mm256_loadu_si256((const __m256i *)p);
}

/* Sixteen bfloat16 (`bcast`: one, repeated) as float32 */
inline __m512 operand16(const char *p, bool bcast) { return widen16(bits16(p, bcast)); }

/* float32 arithmetic rounding to nearest with exceptions suppressed ({rn-sae}): the lanes
 * raise nothing; the flags come from the lanes redone by the functor */
constexpr int RN_SAE = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
inline __m512 add_q(__m512 a, __m512 b) { return _mm512_add_round_ps(a, b, RN_SAE); }
inline __m512 sub_q(__m512 a, __m512 b) { return _mm512_sub_round_ps(a, b, RN_SAE); }
inline __m512 mul_q(__m512 a, __m512 b) { return _mm512_mul_round_ps(a, b, RN_SAE); }
inline __m512 fma_q(__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_round_ps(a, b, c, RN_SAE); }
template <int Pred> inline __mmask16 cmp_q(__m512 a, __m512 b)
{
    return _mm512_cmp_round_ps_mask(a, b, Pred, _MM_FROUND_NO_EXC);
}

/* atan(t) = t + t^3 P(t^2) on |t| <= tan(pi/8): P fitted for relative error 2^-30 */
constexpr float atan_f32_poly[5] = {-0.33333316445350647f, 0.19998489320278168f,
                                    -0.14243842661380768f, 0.10595964640378952f,
                                    -0.060833677649497986f};

/*
 * Arctan2 in float32, U blocks of sixteen lanes, each step taken for every block before the next
 * (as power_blocks16): the quotient of the smaller magnitude by the larger (0 / 0 as 0), the
 * pi/4 shift above tan(pi/8) (lo - hi and lo + hi exact), the polynomial, the octant with pi/4,
 * pi/2 and pi in two parts. Over 2^27 pairs of bfloat16 a float32 model of these steps (NumPy,
 * without the FMA) lay within 1.5 float32 ulp of the exact result, so where it lies more than
 * NEAR (16) ulp from a bfloat16 rounding midpoint it rounds as the exact value does, and as the
 * functor's float64 value (4e-15) rounded to odd then to bfloat16 does. The other lanes go to
 * *redo for the functor: NaN or infinite operands, a larger magnitude above 2^126 (where
 * lo + hi could overflow), results near a midpoint, and results below 2^-125 (bfloat16
 * subnormals and the functor's underflow warning) from a nonzero y. Every operation and
 * comparison suppresses exceptions: the flags come from the redone lanes.
 */
template <int U>
inline void atan2_blocks16(const __m512 y[U], const __m512 x[U], __mmask16 redo[U], __m256i res[U])
{
    const __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.0f);
    __m512 ay[U], hi[U], lo[U], t[U], u2[U], p[U], r[U];
    __mmask16 steep[U], shifted[U];
#define EACH for (int u = 0; u < U; u++)
    EACH {
        ay[u] = _mm512_abs_ps(y[u]);
        __m512 ax = _mm512_abs_ps(x[u]);
        steep[u] = cmp_q<_CMP_GT_OQ>(ay[u], ax);
        hi[u] = _mm512_mask_blend_ps(steep[u], ax, ay[u]);
        lo[u] = _mm512_mask_blend_ps(steep[u], ay[u], ax);
        /* NaN, inf, or above 2^126 (where lo + hi could overflow): the functor's lanes */
        redo[u] = cmp_q<_CMP_UNORD_Q>(ay[u], ax) |
                  cmp_q<_CMP_GT_OQ>(hi[u], _mm512_set1_ps(0x1p126f));
        hi[u] = _mm512_mask_mov_ps(hi[u], cmp_q<_CMP_EQ_OQ>(hi[u], zero), one); /* 0 / 0 as 0 */
        shifted[u] = cmp_q<_CMP_GT_OQ>(lo[u], mul_q(_mm512_set1_ps(0.41421356f), hi[u]));
    }
    EACH t[u] = _mm512_div_round_ps(_mm512_mask_sub_round_ps(lo[u], shifted[u], lo[u], hi[u], RN_SAE),
                                    _mm512_mask_add_round_ps(hi[u], shifted[u], lo[u], hi[u], RN_SAE), RN_SAE);
    EACH u2[u] = mul_q(t[u], t[u]);
    const float *c = atan_f32_poly;
    EACH p[u] = fma_q(_mm512_set1_ps(c[4]), u2[u], _mm512_set1_ps(c[3]));
    for (int j = 2; j >= 0; j--) EACH p[u] = fma_q(p[u], u2[u], _mm512_set1_ps(c[j]));
    EACH r[u] = fma_q(mul_q(t[u], u2[u]), p[u], t[u]);
    EACH {
        /* + pi/4, pi/2 - r, pi - r: the constant's float32 part last, its remainder first */
        r[u] = _mm512_mask_mov_ps(r[u], shifted[u], add_q(add_q(r[u], _mm512_set1_ps(-2.18556941e-08f)),
                                                          _mm512_set1_ps(0.785398185f)));
        r[u] = _mm512_mask_mov_ps(r[u], steep[u], add_q(sub_q(_mm512_set1_ps(1.57079637f), r[u]),
                                                        _mm512_set1_ps(-4.37113883e-08f)));
        r[u] = _mm512_mask_mov_ps(r[u], _mm512_movepi32_mask(_mm512_castps_si512(x[u])),
                                  add_q(sub_q(_mm512_set1_ps(3.14159274f), r[u]),
                                        _mm512_set1_ps(-8.74227766e-08f)));
    }
    EACH {
        __m512i rb = _mm512_castps_si512(r[u]);
        __mmask16 tiny = cmp_q<_CMP_LT_OQ>(r[u], _mm512_set1_ps(0x1p-125f)) &
                         cmp_q<_CMP_NEQ_OQ>(ay[u], zero);
        /* the sign of y (r is finite and nonnegative here), then the rounding add */
        __m512i w = _mm512_add_epi32(
                _mm512_or_si512(rb, _mm512_and_si512(_mm512_castps_si512(y[u]),
                                                     _mm512_set1_epi32((int)0x80000000u))),
                half_ulp_near());
        redo[u] |= tiny | near_midpoint(w);
        res[u] = _mm512_cvtepi32_epi16(_mm512_srli_epi32(w, 16));
    }
#undef EACH
}

/* arctan2, 16 lanes a block, U blocks a step (as power_blocks16), the tail through the portable
 * loop: the scalar loop's bits and warnings (tests/umath_tier_checks.py::
 * test_arctan2_twin_matches_the_scalar_loop). 10^5 random pairs: 272 us in float64, eight
 * lanes a step; 115 us in float32 a block at a time; 106 / 92 / 86 us two / four / eight
 * blocks a step (AMD EPYC Zen 5; NumPy's float32 60 us); 66 us with NaN, inf and huge operands
 * left to the functor rather than blended and scaled in every block (68 / 75 us six / four
 * blocks a step), 61 us with the unary twins' rounding add and midpoint test (NumPy's float32
 * 65-72 us in the same runs). All 2^32 pairs gave the baseline tier's bits in a one-off run of
 * this loop. */
constexpr int ATAN2_U = 8;

template <int U>
inline npy_intp atan2_steps(const char *a, bool a_bcast, const char *b, bool b_bcast, char *o,
                            npy_intp i, npy_intp n)
{
    for (; i + 16 * U <= n; i += 16 * U) {
        __m512 y[U], x[U];
        __mmask16 redo[U];
        __m256i res[U];
        for (int u = 0; u < U; u++) {
            npy_intp j = i + 16 * u;
            y[u] = operand16(a + (a_bcast ? 0 : 2 * j), a_bcast);
            x[u] = operand16(b + (b_bcast ? 0 : 2 * j), b_bcast);
        }
        atan2_blocks16<U>(y, x, redo, res);
        for (int u = 0; u < U; u++) {
            store_block<Arctan2>(res[u], redo[u], a, a_bcast, b, b_bcast, i + 16 * u, o);
        }
    }
    return i;
}

int atan2_run(const char *a, bool a_bcast, const char *b, bool b_bcast, char *o, npy_intp n)
{
    npy_intp i = atan2_steps<ATAN2_U>(a, a_bcast, b, b_bcast, o, 0, n);
    i = atan2_steps<1>(a, a_bcast, b, b_bcast, o, i, n);
    return twin_tail<Arctan2>(a, a_bcast, b, b_bcast, o, i, n);
}

/* ---- power: x ** y sixteen lanes at a time in float32, powf's bits ------------------------
 * For x >= 2^-126 finite and y finite: t = y log2 x with log2 x = e + log2(1 + i / 128) (e and
 * i the exponent and the seven significand bits of x), the logarithm a pair hi + lo of float32
 * (log2_pairs, from ops.h's log2_significands), so that t = y e + y hi + y lo: y e is exact
 * (eight significant bits each), y hi is a product and the FMA's exact remainder; then
 * 2^t = 2^k 2^f with k = round(t) and f = ((y e - k) + y hi) + the remainders, y e - k exact
 * wherever k is not 0 (|y| >= 2^-8 there). By this analysis f is within about 2^-23.5 of the
 * exact one and a degree-7 Taylor polynomial for 2^f in float32 adds a few units of float32's
 * last place: the result lies within about 5 units (2^-21 relative) of x ** y. Where it lies
 * farther than NEAR (16) units from a bfloat16 rounding midpoint, powf's result (within one
 * unit of the exact value) rounds to the same bfloat16; every other lane (x zero, subnormal, inf or
 * NaN, x negative with y not an integer, y inf or NaN, |t| > 125 (overflow, underflow), near a
 * midpoint) takes powf itself, and a negative base with an integer exponent is |x| ** y with
 * the sign of an odd y. Every operation suppresses exceptions ({sae}): the flags come from the
 * lanes powf redoes. So the loop gives the scalar loop's bits and warnings
 * (tests/umath_tier_checks.py::test_power_twin_matches_the_scalar_loop; all 2^32 pairs gave the
 * baseline tier's bits in a one-off run). 10^5 random pairs: 179 us in float64 eight lanes at a
 * time, 69 us now (x ** 1.5: 157 -> 75 us; AMD EPYC Zen 5; NumPy's float32 68-70 and 114 us). */
struct Log2Pairs {
    alignas(64) float hi[128];
    alignas(64) float lo[128];
};
/* ops.h's log2_significands as pairs of float32 */
constexpr Log2Pairs make_log2_pairs()
{
    Log2Pairs t{};
    for (int i = 0; i < 128; i++) {
        double v = log2_significands.v[i];
        t.hi[i] = (float)v;
        t.lo[i] = (float)(v - (double)t.hi[i]);
    }
    return t;
}

constexpr Log2Pairs log2_pairs = make_log2_pairs();

/* table[idx] for 128 floats, idx in 0..127: four 32-entry permutes, then bits 5 and 6 choose
 * (a gather of sixteen floats took 4x as long on the AMD EPYC Zen 5) */
inline __m512 lookup128(__m512i idx, __mmask16 bit5, __mmask16 bit6, const float *table)
{
    __m512 t[4];
    for (int q = 0; q < 4; q++) {
        t[q] = _mm512_permutex2var_ps(_mm512_load_ps(table + 32 * q), idx,
                                      _mm512_load_ps(table + 32 * q + 16));
    }
    return _mm512_mask_blend_ps(bit6, _mm512_mask_blend_ps(bit5, t[0], t[1]),
                                _mm512_mask_blend_ps(bit5, t[2], t[3]));
}

/* U blocks of sixteen lanes, each step taken for every block before the next (as
 * atan2_blocks16). The results and `scalar` lanes of block u: res[u], scalar[u]. */
template <int U>
inline void power_blocks16(const char *a, bool a_bcast, const char *b, bool b_bcast, npy_intp i,
                           __m256i res[U], __mmask16 scalar[U])
{
    constexpr int SAE = _MM_FROUND_NO_EXC;
    __m512 y[U], ye[U], hi[U], lo[U], k[U], f[U], p[U];
    __mmask16 flip[U];
#define EACH for (int u = 0; u < U; u++)
    EACH {
        npy_intp j = i + 16 * u;
        __m256i hx = bits16(a + (a_bcast ? 0 : 2 * j), a_bcast);
        __m256i hy = bits16(b + (b_bcast ? 0 : 2 * j), b_bcast);
        /* A finite negative x with an integer y is |x|^y, negated for an odd y (as at the avx2
         * tier: x**3 of data of both signs stays in the vector lanes). y is an integer where
         * rounding keeps it (every bfloat16 of magnitude 256 or more is an even integer). Blocks
         * without a negative x skip the tests. */
        flip[u] = 0;
        __mmask16 neg = _mm256_cmplt_epi16_mask(hx, _mm256_setzero_si256());
        if (neg) {
            __m512 yw = widen16(hy);
            __m512 half = _mm512_mul_round_ps(yw, c(0.5f), RN_SAE);
            __mmask16 yint = _mm512_cmp_round_ps_mask(_mm512_roundscale_round_ps(yw, 0, SAE), yw,
                                                      _CMP_EQ_OQ, SAE);
            __mmask16 yodd = yint & _mm512_cmp_round_ps_mask(
                                            _mm512_roundscale_round_ps(half, 0, SAE), half,
                                            _CMP_NEQ_UQ, SAE);
            __m256i xmag = _mm256_and_si256(hx, _mm256_set1_epi16(0x7fff));
            __m256i xm = _mm256_sub_epi16(xmag, _mm256_set1_epi16(0x80));
            __mmask16 negx = neg & yint & /* normal */
                             _mm256_cmplt_epu16_mask(xm, _mm256_set1_epi16(0x7f00));
            flip[u] = negx & yodd;
            hx = _mm256_mask_mov_epi16(hx, negx, xmag);
        }
        /* lanes for powf: x negative (but the lanes above), below 2^-126, inf or NaN; y inf or
         * NaN (the 16-bit patterns) */
        scalar[u] = _mm256_cmpge_epu16_mask(_mm256_sub_epi16(hx, _mm256_set1_epi16(0x80)),
                                            _mm256_set1_epi16(0x7f00)) |
                    _mm256_cmpge_epu16_mask(_mm256_and_si256(hy, _mm256_set1_epi16(0x7fff)),
                                            _mm256_set1_epi16(0x7f80));
        hx = _mm256_mask_blend_epi16(scalar[u], hx, _mm256_set1_epi16(0x3f80));
        hy = _mm256_mask_blend_epi16(scalar[u], hy, _mm256_set1_epi16(0x3f80));
        __m512i xi = _mm512_cvtepu16_epi32(hx);
        __m512 x = _mm512_castsi512_ps(_mm512_slli_epi32(xi, 16));
        __m512i idx = _mm512_and_si512(xi, _mm512_set1_epi32(0x7f));
        y[u] = widen16(hy);
        ye[u] = _mm512_mul_round_ps(y[u], _mm512_getexp_round_ps(x, SAE), RN_SAE);
        __mmask16 bit5 = _mm512_test_epi32_mask(idx, _mm512_set1_epi32(32));
        __mmask16 bit6 = _mm512_test_epi32_mask(idx, _mm512_set1_epi32(64));
        hi[u] = lookup128(idx, bit5, bit6, log2_pairs.hi);
        lo[u] = lookup128(idx, bit5, bit6, log2_pairs.lo);
    }
    EACH {
        __m512 yhi = mul_q(y[u], hi[u]);
        lo[u] = fma_q(y[u], lo[u], _mm512_fmsub_round_ps(y[u], hi[u], yhi, RN_SAE));
        hi[u] = yhi;
        __m512 t = add_q(ye[u], yhi);
        /* |t| > 125 or NaN (inf - inf): powf, which reports overflow and underflow */
        scalar[u] |= _mm512_cmp_round_ps_mask(_mm512_abs_ps(t), c(125.0f), _CMP_NLE_UQ, SAE);
        k[u] = _mm512_roundscale_round_ps(t, _MM_FROUND_TO_NEAREST_INT, SAE);
    }
    EACH f[u] = add_q(add_q(sub_q(ye[u], k[u]), hi[u]), lo[u]);
    EACH p[u] = c((float)exp2_taylor[7]);
    for (int j = 6; j >= 0; j--) EACH p[u] = fma_q(p[u], f[u], c((float)exp2_taylor[j]));
    EACH {
        __m512i w = add_half_ulp(_mm512_scalef_round_ps(p[u], k[u], RN_SAE));
        scalar[u] |= near_midpoint(w);
        __m256i sign = _mm256_maskz_mov_epi16(flip[u], _mm256_set1_epi16((short)0x8000));
        res[u] = _mm256_xor_si256(_mm512_cvtepi32_epi16(_mm512_srli_epi32(w, 16)), sign);
    }
#undef EACH
}

/* 10^5 pairs: 99 / 83 / 74 us two / four / eight blocks a step (AMD EPYC Zen 5, before the
 * rounding shared with the unary twins) */
constexpr int POWER_U = 8;

template <int U>
inline npy_intp power_steps(const char *a, bool a_bcast, const char *b, bool b_bcast, char *o,
                            npy_intp i, npy_intp n, int *ovf)
{
    for (; i + 16 * U <= n; i += 16 * U) {
        __m256i res[U];
        __mmask16 scalar[U];
        power_blocks16<U>(a, a_bcast, b, b_bcast, i, res, scalar);
        for (int u = 0; u < U; u++) {
            *ovf |= store_block<Power>(res[u], scalar[u], a, a_bcast, b, b_bcast, i + 16 * u, o);
        }
    }
    return i;
}

int power_run(const char *a, bool a_bcast, const char *b, bool b_bcast, char *o, npy_intp n)
{
    int ovf = 0;
    npy_intp i = power_steps<POWER_U>(a, a_bcast, b, b_bcast, o, 0, n, &ovf);
    i = power_steps<1>(a, a_bcast, b, b_bcast, o, i, n, &ovf);
    return ovf | twin_tail<Power>(a, a_bcast, b, b_bcast, o, i, n);
}

/* ---- hypot: ops.h's Hypot sixteen lanes a step, in float64 ------------------------------
 * The functor's operations on the widened operands, the same conversion to float32 raising the
 * same overflow and underflow; the lanes with an inf or NaN operand (replaced by 1.0 here, so
 * that a signalling NaN raises nothing in the vector) and those whose float32 rounds to a
 * bfloat16 inf come from the functor itself. So the loop gives the scalar loop's bits and
 * warnings (tests/umath_tier_checks.py::test_hypot_twin_matches_the_scalar_loop). */
/* Sixteen bfloat16's bits (`bcast`: one, repeated); the lanes holding an inf or a NaN added to
 * *special. */
inline __m256i hypot_operand16(const char *p, bool bcast, __mmask16 *special)
{
    __m256i h = bits16(p, bcast);
    *special |= _mm256_cmpge_epu16_mask(_mm256_and_si256(h, _mm256_set1_epi16(0x7fff)),
                                        _mm256_set1_epi16(0x7f80));
    return h;
}

int hypot_run(const char *a, bool a_bcast, const char *b, bool b_bcast, char *o, npy_intp n)
{
    npy_intp i = 0;
    int ovf = 0;
    for (; i + 16 <= n; i += 16) {
        __mmask16 redo = 0;
        __m256i ha = hypot_operand16(a + (a_bcast ? 0 : 2 * i), a_bcast, &redo);
        __m256i hb = hypot_operand16(b + (b_bcast ? 0 : 2 * i), b_bcast, &redo);
        /* an inf or NaN in either operand: 1.0 in both */
        ha = _mm256_mask_blend_epi16(redo, ha, _mm256_set1_epi16(0x3f80));
        hb = _mm256_mask_blend_epi16(redo, hb, _mm256_set1_epi16(0x3f80));
        __m512 fa = widen16(ha), fb = widen16(hb);
        __m512d a0 = _mm512_cvtps_pd(_mm512_castps512_ps256(fa));
        __m512d a1 = _mm512_cvtps_pd(_mm512_extractf32x8_ps(fa, 1));
        __m512d b0 = _mm512_cvtps_pd(_mm512_castps512_ps256(fb));
        __m512d b1 = _mm512_cvtps_pd(_mm512_extractf32x8_ps(fb, 1));
        __m512d s0 = _mm512_sqrt_pd(_mm512_fmadd_pd(a0, a0, _mm512_mul_pd(b0, b0)));
        __m512d s1 = _mm512_sqrt_pd(_mm512_fmadd_pd(a1, a1, _mm512_mul_pd(b1, b1)));
        __m512i rb = _mm512_castps_si512(_mm512_insertf32x8(
                _mm512_castps256_ps512(_mm512_cvtpd_ps(s0)), _mm512_cvtpd_ps(s1), 1));
        /* a positive float32 that rounds to inf: the functor's lane, for the overflow warning
         * (the conversion itself raised it where the float32 overflowed) */
        redo |= _mm512_cmpge_epu32_mask(rb, _mm512_set1_epi32(0x7f7f8000));
        __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(rb, 16), _mm512_set1_epi32(1));
        rb = _mm512_add_epi32(_mm512_add_epi32(rb, _mm512_set1_epi32(0x7fff)), lsb);
        ovf |= store_block<Hypot>(_mm512_cvtepi32_epi16(_mm512_srli_epi32(rb, 16)), redo, a,
                                  a_bcast, b, b_bcast, i, o);
    }
    return ovf | twin_tail<Hypot>(a, a_bcast, b, b_bcast, o, i, n);
}

} /* namespace */

/* (overflow is reported through the float32 flag: flag_rounding_overflow) */
template <class Tier, class Op>
int twin_binary(const char *a, const char *b, char *o, npy_intp n)
{
    if constexpr (std::is_same<Op, Arctan2>::value) {
        return atan2_run(a, false, b, false, o, n);
    }
    else if constexpr (std::is_same<Op, Power>::value) {
        return power_run(a, false, b, false, o, n);
    }
    else if constexpr (std::is_same<Op, Hypot>::value) {
        return hypot_run(a, false, b, false, o, n);
    }
    else {
        run_blocks(o, n, a, b, [&](npy_intp i, __mmask32 k) {
            return binary_block<Op>(load_at(a, i, k), load_at(b, i, k));
        });
        return 0;
    }
}

template <class Tier, class Op>
int twin_binary_scalar(const char *arr, bf16_t scalar, bool scalar_first, char *o, npy_intp n)
{
    if constexpr (std::is_same<Op, Arctan2>::value) {
        return twin_run_scalar(atan2_run, arr, scalar, scalar_first, o, n);
    }
    else if constexpr (std::is_same<Op, Power>::value) {
        return twin_run_scalar(power_run, arr, scalar, scalar_first, o, n);
    }
    else if constexpr (std::is_same<Op, Hypot>::value) {
        return twin_run_scalar(hypot_run, arr, scalar, scalar_first, o, n);
    }
    else {
        __m512i s = _mm512_set1_epi16((short)scalar);
        if (scalar_first) {
            run_blocks(o, n, arr, nullptr, [&](npy_intp i, __mmask32 k) {
                return binary_block<Op>(s, load_at(arr, i, k));
            });
        }
        else {
            run_blocks(o, n, arr, nullptr, [&](npy_intp i, __mmask32 k) {
                return binary_block<Op>(load_at(arr, i, k), s);
            });
        }
        return 0;
    }
}

/* The block's results with the `redo` lanes recomputed from the table (when it exists) or the
 * scalar functor; out of line, as few blocks need it. */
template <class Op>
__attribute__((noinline)) __m512i redo_lanes(__m512i v, __m512i out, uint32_t redo,
                                             const UnaryTable *table, unsigned *flags, int *ovf)
{
    alignas(64) bf16_t in[BLOCK], res[BLOCK];
    _mm512_store_si512(in, v);
    _mm512_store_si512(res, out);
    while (redo) {
        int j = __builtin_ctz(redo);
        redo &= redo - 1;
        if (table != nullptr) {
            *flags |= table->flags[in[j]];
            res[j] = table->out[in[j]];
        }
        else {
            res[j] = round_checked(Op::f(bf16_to_f32(in[j])), ovf);
        }
    }
    return _mm512_load_si512(res);
}

/*
 * tanh at the avx512bf16 loop tier (CPUs with AVX512-VBMI): V<Tanh>'s table read as bytes, 64
 * elements a step. Byte k of V<Tanh>'s word table is the distance d of index k, so the low
 * bytes of two blocks' indices (one vpermt2b) index it directly: six vpermt2b cover the 768
 * bytes for 64 elements where V<Tanh>::f needs six vpermt2w for 32. The table register is
 * chosen by bits 7-9 of k (bit 7 of the low byte, bits 0-1 of the high one), and d widens back
 * to words with vpmovzxbw. The rest (clamp, sign, redone NaN and subnormal lanes) is
 * V<Tanh>::f's. Every input is checked against float64 tanh at this tier and at avx512 (the
 * word version) by test_unary_exhaustive_every_layout in tests/umath_tier_checks.py.
 */
#define BF16_VBMI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,avx512vbmi")))

/* vpermt2b indices of the low (even) and high (odd) bytes of two blocks of 32 words */
struct BytePicks {
    alignas(64) uint8_t even[64], odd[64];
};
constexpr BytePicks make_byte_picks()
{
    BytePicks p{};
    for (int j = 0; j < 64; j++) {
        p.even[j] = (uint8_t)(2 * j);
        p.odd[j] = (uint8_t)(2 * j + 1);
    }
    return p;
}
constexpr BytePicks byte_picks = make_byte_picks();

struct TanhBytes {
    V<Tanh>::Regs c;
    __m512i even, odd, bit0, bit1;
};

BF16_VBMI_TARGET static inline __attribute__((always_inline)) void
tanh_bytes_step(const TanhBytes &t, __m512i v0, __m512i v1, __m512i *out0, __m512i *out1,
                __mmask32 *redo0, __mmask32 *redo1)
{
    const V<Tanh>::Regs &c = t.c;
    __m512i m0 = _mm512_and_si512(v0, c.magnitude), m1 = _mm512_and_si512(v1, c.magnitude);
    __m512i mc0 = _mm512_min_epu16(m0, c.hi), mc1 = _mm512_min_epu16(m1, c.hi);
    __m512i k0 = _mm512_subs_epu16(mc0, c.lo), k1 = _mm512_subs_epu16(mc1, c.lo); /* 0 ... 736 */
    __m512i kl = _mm512_permutex2var_epi8(k0, t.even, k1); /* low bytes, element order */
    __m512i kh = _mm512_permutex2var_epi8(k0, t.odd, k1);  /* high bytes: 0 ... 2 */
    __mmask64 b7 = _mm512_movepi8_mask(kl);
    __mmask64 b8 = _mm512_test_epi8_mask(kh, t.bit0);
    __mmask64 b9 = _mm512_test_epi8_mask(kh, t.bit1);
    const __m512i *w = c.t;
    __m512i r01 = _mm512_mask_blend_epi8(b7, _mm512_permutex2var_epi8(w[0], kl, w[1]),
                                         _mm512_permutex2var_epi8(w[2], kl, w[3]));
    __m512i r23 = _mm512_mask_blend_epi8(b7, _mm512_permutex2var_epi8(w[4], kl, w[5]),
                                         _mm512_permutex2var_epi8(w[6], kl, w[7]));
    __m512i r45 = _mm512_mask_blend_epi8(b7, _mm512_permutex2var_epi8(w[8], kl, w[9]),
                                         _mm512_permutex2var_epi8(w[10], kl, w[11]));
    __m512i d = _mm512_mask_blend_epi8(b9, _mm512_mask_blend_epi8(b8, r01, r23), r45);
    __m512i d0 = _mm512_cvtepu8_epi16(_mm512_castsi512_si256(d));
    __m512i d1 = _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(d, 1));
    *redo0 = V<Tanh>::redo_lanes_of(v0, m0, c);
    *redo1 = V<Tanh>::redo_lanes_of(v1, m1, c);
    *out0 = V<Tanh>::result(v0, mc0, d0, c);
    *out1 = V<Tanh>::result(v1, mc1, d1, c);
}

/* 64 (or, with masks, fewer) elements from a + 2 i: results in *o0, *o1 */
BF16_VBMI_TARGET static inline __attribute__((always_inline)) void
tanh_bytes_block(const TanhBytes &t, const char *a, npy_intp i, __mmask32 k0, __mmask32 k1,
                 const UnaryTable *table, unsigned *flags, int *ovf, __m512i *o0, __m512i *o1)
{
    __m512i v0 = load_at(a, i, k0), v1 = load_at(a, i + BLOCK, k1);
    __mmask32 redo0, redo1;
    tanh_bytes_step(t, v0, v1, o0, o1, &redo0, &redo1);
    redo0 &= k0;
    redo1 &= k1;
    if (__builtin_expect((redo0 | redo1) != 0, 0)) {
        if (redo0) *o0 = redo_lanes<Tanh>(v0, *o0, redo0, table, flags, ovf);
        if (redo1) *o1 = redo_lanes<Tanh>(v1, *o1, redo1, table, flags, ovf);
    }
}

BF16_VBMI_TARGET static int
tanh_bytes(const char *a, char *o, npy_intp n)
{
    TanhBytes t;
    t.c = V<Tanh>::regs();
    t.even = _mm512_load_si512(byte_picks.even);
    t.odd = _mm512_load_si512(byte_picks.odd);
    t.bit0 = _mm512_set1_epi8(1);
    t.bit1 = _mm512_set1_epi8(2);
    __asm__("" : "+v"(t.even), "+v"(t.odd), "+v"(t.bit0), "+v"(t.bit1));
    const UnaryTable *table = unary_table_get(unary_table_slot<Tanh>, Tanh::f, false);
    unsigned flags = 0;
    int ovf = 0;
    const __mmask32 all = (__mmask32)~0u;
    __m512i r0, r1;
    npy_intp i = 0;
    if (streaming_output(o, n)) {
        npy_intp head = to_alignment(o);
        if (head) {
            tanh_bytes_block(t, a, 0, tail_mask(head), 0, table, &flags, &ovf, &r0, &r1);
            _mm512_mask_storeu_epi16(o, tail_mask(head), r0);
            i = head;
        }
        for (; i + 2 * BLOCK <= n; i += 2 * BLOCK) {
            prefetch_ahead(a + 2 * i);
            tanh_bytes_block(t, a, i, all, all, table, &flags, &ovf, &r0, &r1);
            _mm512_stream_si512((__m512i *)(o + 2 * i), r0);
            _mm512_stream_si512((__m512i *)(o + 2 * i + 64), r1);
        }
        _mm_sfence();
    }
    for (; i + 2 * BLOCK <= n; i += 2 * BLOCK) {
        tanh_bytes_block(t, a, i, all, all, table, &flags, &ovf, &r0, &r1);
        _mm512_storeu_si512(o + 2 * i, r0);
        _mm512_storeu_si512(o + 2 * i + 64, r1);
    }
    if (i < n) {
        npy_intp left = n - i;
        __mmask32 k0 = left >= BLOCK ? all : tail_mask(left);
        __mmask32 k1 = left > BLOCK ? tail_mask(left - BLOCK) : 0;
        tanh_bytes_block(t, a, i, k0, k1, table, &flags, &ovf, &r0, &r1);
        _mm512_mask_storeu_epi16(o + 2 * i, k0, r0);
        _mm512_mask_storeu_epi16(o + 2 * i + 64, k1, r1);
    }
    unary_table_raise(flags);
    return ovf;
}

/* redo_lanes for the lanes of k that the clamp changed (u against v) or that lie near a
 * midpoint (we, wo: even and odd elements); the masks are formed here, out of line, so the
 * loop itself only tests whether there is any */
template <class Op>
__attribute__((noinline)) __m512i redo_masked_lanes(__m512i v, __m512i u, __m512i out,
                                                    __m512i we, __m512i wo, __mmask32 k,
                                                    const UnaryTable *table, unsigned *flags,
                                                    int *ovf)
{
    uint32_t redo_e = (uint16_t)near_midpoint(we), redo_o = (uint16_t)near_midpoint(wo);
    uint32_t redo = ((uint32_t)_mm512_cmpneq_epi16_mask(u, v) | spread_bits(redo_e) |
                     (spread_bits(redo_o) << 1)) &
                    (uint32_t)k;
    return redo ? redo_lanes<Op>(v, out, redo, table, flags, ovf) : out;
}

template <class Op, class = void> struct IsApproximate : std::false_type {};
template <class Op>
struct IsApproximate<Op, std::void_t<decltype(V<Op>::approximate)>> : std::true_type {};

template <class Op, class = void> struct ClampsInputs : std::false_type {};
template <class Op>
struct ClampsInputs<Op, std::void_t<decltype(V<Op>::clamps_inputs)>> : std::true_type {};

/* Ops (with clamps_inputs) that evaluate both halves of a block together (f2, with registers
 * from regs()) */
template <class Op, class = void> struct PairsHalves : std::false_type {};
template <class Op> struct PairsHalves<Op, std::void_t<decltype(V<Op>::pairs_halves)>> : std::true_type {};
struct NoRegs {};
template <class Op> inline auto regs_of()
{
    if constexpr (PairsHalves<Op>::value) {
        return V<Op>::regs();
    }
    else {
        return NoRegs{};
    }
}

template <class Op, class = void> struct LooksUp : std::false_type {};
template <class Op> struct LooksUp<Op, std::void_t<decltype(V<Op>::looks_up)>> : std::true_type {};

template <class Tier, class Op>
int twin_unary(const char *a, char *o, npy_intp n)
{
    int ovf = 0;
    if constexpr (std::is_same<Op, Tanh>::value) {
        if (loop_tier >= BF16_TIER_AVX512BF16) {
            return tanh_bytes(a, o, n);
        }
    }
    if constexpr (LooksUp<Op>::value) {
        const typename V<Op>::Regs regs = V<Op>::regs();
        /* redone lanes come from the unary table when it exists, else the functor */
        const UnaryTable *table = unary_table_get(unary_table_slot<Op>, Op::f, false);
        unsigned flags = 0;
        run_blocks(o, n, a, nullptr, [&](npy_intp i, __mmask32 k) {
            __m512i v = load_at(a, i, k);
            __mmask32 redo;
            __m512i out = V<Op>::f(v, regs, &redo);
            redo &= k;
            if (__builtin_expect(redo != 0, 0)) {
                out = redo_lanes<Op>(v, out, redo, table, &flags, &ovf);
            }
            return out;
        });
        unary_table_raise(flags);
    }
    else if constexpr (!IsApproximate<Op>::value) {
        run_blocks(o, n, a, nullptr, [&](npy_intp i, __mmask32 k) {
            return unary_block<Op>(load_at(a, i, k));
        });
    }
    else {
        /* 32 lanes a block, even and odd elements apart; lanes the clamp changed or near a
         * midpoint are redone from the table (when it exists) or the functor */
        static_assert(ClampsInputs<Op>::value, "the approximate twins clamp their inputs");
        const UnaryTable *table = unary_table_get(unary_table_slot<Op>, Op::f, n >= 32768);
        unsigned flags = 0;
        /* opaque, so the compiler keeps them in registers instead of forming them anew in
         * every block (a general register move and a broadcast each) */
        __m512i half = half_ulp_near(), upper = _mm512_set1_epi32((int)0xffff0000u),
                nb16 = near_bits16();
        __m512i pick_highs = _mm512_load_si512(word_picks.highs),
                pick_lows = _mm512_load_si512(word_picks.lows);
        __asm__("" : "+v"(half), "+v"(upper), "+v"(nb16), "+v"(pick_highs), "+v"(pick_lows));
        auto odd = [&](__m512i x) { return _mm512_castsi512_ps(_mm512_and_si512(x, upper)); };
        const auto regs = regs_of<Op>();
        run_blocks(o, n, a, nullptr, [&](npy_intp i, __mmask32 k) {
            __m512i v = load_at(a, i, k), u = V<Op>::clamp(v);
            __mmask32 clamped = _mm512_cmpneq_epi16_mask(u, v);
            __m512 fe, fo;
            if constexpr (PairsHalves<Op>::value) {
                V<Op>::f2(u, even_f32(u), odd(u), regs, &fe, &fo);
            }
            else {
                fe = V<Op>::f(even_f32(u));
                fo = V<Op>::f(odd(u));
            }
            __m512i we = add_half_ulp(fe, half), wo = add_half_ulp(fo, half);
            /* the upper halves are the results, in element order; the lower halves, in the
             * same order, say which lanes lie near a midpoint (one 32-lane test) */
            __m512i out = _mm512_permutex2var_epi16(we, pick_highs, wo);
            __mmask32 near =
                    _mm512_testn_epi16_mask(_mm512_permutex2var_epi16(we, pick_lows, wo), nb16);
            if (__builtin_expect(!_kortestz_mask32_u8(clamped, near), 0)) {
                out = redo_masked_lanes<Op>(v, u, out, we, wo, k, table, &flags, &ovf);
            }
            return out;
        });
        unary_table_raise(flags);
    }
    return ovf;
}

/* vpermt2w indices that take the upper 16-bit halves of two vectors of 16 lanes, the first's
 * then the second's: 32 bfloat16 in element order */
static const struct UpperHalves {
    alignas(64) uint16_t picks[BLOCK];
    constexpr UpperHalves() : picks()
    {
        for (int p = 0; p < BLOCK; p++) {
            picks[p] = (uint16_t)(2 * p + 1);
        }
    }
} upper_halves;


/* plain_upper of 8 lanes, shifted down: the 8 bfloat16 (NaNs the hardware's) */
inline __m128i rounded8(__m256 f)
{
    __m256i u = _mm256_castps_si256(f);
    __m256i t = _mm256_add_epi32(u, _mm256_set1_epi32(0x7fff));
    t = _mm256_mask_add_epi32(t, _mm256_test_epi32_mask(u, _mm256_set1_epi32(0x10000)), t,
                              _mm256_set1_epi32(1));
    return _mm256_cvtepi32_epi16(_mm256_srli_epi32(t, 16));
}

/*
 * Steps of twin_shadow_row below: 32, 16 or 8 elements of the output o, the input row b and the
 * shadow v. A shadow value is a float32 result of the hardware or a widened bfloat16
 * (umath/reduce_acc.cpp), so plain_upper rounds it; where the stored bfloat16 is no longer its
 * rounding, the stored value is used, behind a branch that is almost never taken: the
 * comparison then stays off the chain from one row's call to the next (np.sum(x, axis=0), x of
 * 2^24 elements in rows of 8: 46 -> 42 ms, float32 32; AMD EPYC Zen 5). A finite result that
 * rounds to infinity raises the float32 overflow flag (flag_rounding_overflow).
 */
template <class Op>
inline void shadow_step32(char *o, const char *b, float *v, __m512i picks)
{
    __m512i stored = _mm512_loadu_si512(o);
    __m512 s0 = _mm512_loadu_ps(v), s1 = _mm512_loadu_ps(v + 16);
    __mmask32 same = _mm512_cmpeq_epi16_mask(
            _mm512_permutex2var_epi16(plain_upper(s0), picks, plain_upper(s1)), stored);
    if (__builtin_expect(same != 0xffffffffu, 0)) {
        s0 = _mm512_mask_blend_ps((__mmask16)same, widen16(_mm512_castsi512_si256(stored)), s0);
        s1 = _mm512_mask_blend_ps((__mmask16)(same >> 16),
                                  widen16(_mm512_extracti64x4_epi64(stored, 1)), s1);
    }
    __m512i y = _mm512_loadu_si512(b);
    __m512 r0 = V<Op>::f(s0, widen16(_mm512_castsi512_si256(y)));
    __m512 r1 = V<Op>::f(s1, widen16(_mm512_extracti64x4_epi64(y, 1)));
    flag_rounding_overflow(r0, r1);
    _mm512_storeu_si512(o, _mm512_permutex2var_epi16(plain_upper(r0), picks, plain_upper(r1)));
    _mm512_storeu_ps(v, r0);
    _mm512_storeu_ps(v + 16, r1);
}

template <class Op>
inline void shadow_step16(char *o, const char *b, float *v)
{
    __m256i stored = _mm256_loadu_si256((const __m256i *)o);
    __m512 sv = _mm512_loadu_ps(v);
    __m256i sv_rounded = _mm512_cvtepi32_epi16(_mm512_srli_epi32(plain_upper(sv), 16));
    __mmask16 same = _mm256_cmpeq_epi16_mask(sv_rounded, stored);
    if (__builtin_expect(same != 0xffff, 0)) {
        sv = _mm512_mask_blend_ps(same, widen16(stored), sv);
    }
    __m512 r = V<Op>::f(sv, widen16(_mm256_loadu_si256((const __m256i *)b)));
    flag_rounding_overflow(r, r);
    _mm256_storeu_si256((__m256i *)o, _mm512_cvtepi32_epi16(_mm512_srli_epi32(plain_upper(r), 16)));
    _mm512_storeu_ps(v, r);
}

template <class Op>
inline void shadow_step8(char *o, const char *b, float *v)
{
    __m128i stored = _mm_loadu_si128((const __m128i *)o);
    __m256 sv = _mm256_loadu_ps(v);
    __mmask8 same = _mm_cmpeq_epi16_mask(rounded8(sv), stored);
    if (__builtin_expect(same != 0xff, 0)) {
        sv = _mm256_mask_blend_ps(same, widen8x(stored), sv);
    }
    __m256 r = V<Op>::f(sv, widen8x(_mm_loadu_si128((const __m128i *)b)));
    __m256 g = _mm256_add_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), r),
                             _mm256_set1_ps(rounds_to_inf_offset));
    __asm__ volatile("" : : "v"(g)); /* the flag is the result */
    _mm_storeu_si128((__m128i *)o, rounded8(r));
    _mm256_storeu_ps(v, r);
}

/* One slice of an outer-axis reduction against its float32 shadow v: 32 elements a step, then
 * 16, then 8, then the scalar rule (shadow_row_contig, same rule and bits;
 * tests/umath_tier_checks.py::test_outer_axis_reductions_every_width). Plain loads and stores
 * only: the next row's call reads what this one wrote, and a masked store does not forward to
 * that load (a masked tail measured slower than the scalar rule for rows of 2). The scalar
 * rule is compiled without VEX (loops.h): the zmm upper halves are cleared first. */
template <class Tier, class Op>
int twin_shadow_row(char *o, const char *b, float *v, npy_intp n)
{
    npy_intp i = 0;
    if (n >= 32) {
        const __m512i picks = _mm512_load_si512(upper_halves.picks);
        for (; i + 32 <= n; i += 32) {
            shadow_step32<Op>(o + 2 * i, b + 2 * i, v + i, picks);
        }
    }
    if (i + 16 <= n) {
        shadow_step16<Op>(o + 2 * i, b + 2 * i, v + i);
        i += 16;
    }
    if (i + 8 <= n) {
        shadow_step8<Op>(o + 2 * i, b + 2 * i, v + i);
        i += 8;
    }
    _mm256_zeroupper();
    return shadow_row_contig<Op>(o + 2 * i, b + 2 * i, v + i, n - i);
}

/* The comparison helpers have internal linkage, as the other tier file has its own of the same
 * names (a shared weak symbol would let one tier run the other's code). */
namespace {

/* 32 elements at i of p, or its one value in every lane */
inline __m512i compare_block(const char *p, bool one, npy_intp i)
{
    return one ? _mm512_set1_epi16((short)ld(p)) : _mm512_loadu_si512(p + 2 * i);
}
/* 16 elements (those of k) at i of p widened, or its one value in every lane */
inline __m512 compare_half(const char *p, bool one, npy_intp i, __mmask16 k)
{
    return widen16(one ? _mm256_set1_epi16((short)ld(p)) : _mm256_maskz_loadu_epi16(k, p + 2 * i));
}

/* 32 elements a step: the even and odd elements compare as float32 (vcmpps, so a signalling
 * NaN raises "invalid" as the functors' comparisons do); each result mask selects 1 in byte 0
 * (even) or byte 1 (odd) of its 32-bit lanes, and truncating the lanes to 16 bits puts the 32
 * bytes in element order. The last < 32 elements go 16 at a time under a mask. Scalar 1: a is
 * one value, 2: b is (broadcast to every lane). */
template <class Op, int Scalar>
void compare_run(const char *a, const char *b, npy_bool *o, npy_intp n)
{
    npy_intp i = 0;
    const __m512i one_even = _mm512_set1_epi32(1), one_odd = _mm512_set1_epi32(0x100);
    for (; i + 32 <= n; i += 32) {
        __m512i x = compare_block(a, Scalar == 1, i), y = compare_block(b, Scalar == 2, i);
        __mmask16 re = V<Op>::f(even_f32(x), even_f32(y));
        __mmask16 ro = V<Op>::f(odd_f32(x), odd_f32(y));
        __m512i bytes = _mm512_or_si512(_mm512_maskz_mov_epi32(re, one_even),
                                        _mm512_maskz_mov_epi32(ro, one_odd));
        _mm256_storeu_si256((__m256i *)(o + i), _mm512_cvtepi32_epi16(bytes));
    }
    for (; i < n; i += 16) {
        __mmask16 k = (n - i >= 16) ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __mmask16 r = V<Op>::f(compare_half(a, Scalar == 1, i, k),
                               compare_half(b, Scalar == 2, i, k)) & k;
        _mm_mask_storeu_epi8(o + i, k, _mm_maskz_set1_epi8(r, 1));
    }
}

} /* namespace */

/* GCC vectorises the order scans (order_scan.h) with 256-bit vectors here: its 512-bit form of
 * the max/min reduction's scan ran 20 % slower than the avx2 tier's (x.max() of 10^6: 47 ->
 * 38 us, AMD EPYC Zen 5; the tier's other order loops unchanged within 10 %;
 * tests/umath_tier_checks.py at every tier). */
#ifndef __clang__
#pragma GCC push_options
#pragma GCC target("prefer-vector-width=256")
#endif
#define BF16_ORDER_TIER TierAvx512
#include "umath/order_twins.h"
#undef BF16_ORDER_TIER
#ifndef __clang__
#pragma GCC pop_options
#endif

#define INSTANTIATE_BINARY_(T, Op)                                                             \
    template int twin_binary<T, Op>(const char *, const char *, char *, npy_intp);             \
    template int twin_binary_scalar<T, Op>(const char *, bf16_t, bool, char *, npy_intp);      \
    template int twin_shadow_row<T, Op>(char *, const char *, float *, npy_intp);
#define INSTANTIATE_UNARY_(T, Op) template int twin_unary<T, Op>(const char *, char *, npy_intp);
#define INSTANTIATE_COMPARE_(T, Op)                                                            \
    template void twin_compare<T, Op>(const char *, const char *, npy_bool *, npy_intp);         \
    template void twin_compare_scalar<T, Op>(const char *, bf16_t, bool, npy_bool *, npy_intp);
BF16_AVX512_BINARY_TWINS(INSTANTIATE_BINARY_, TierAvx512)
template int twin_binary<TierAvx512, Arctan2>(const char *, const char *, char *, npy_intp);
template int twin_binary_scalar<TierAvx512, Arctan2>(const char *, bf16_t, bool, char *, npy_intp);
template int twin_binary<TierAvx512, Power>(const char *, const char *, char *, npy_intp);
template int twin_binary_scalar<TierAvx512, Power>(const char *, bf16_t, bool, char *, npy_intp);
template int twin_binary<TierAvx512, Hypot>(const char *, const char *, char *, npy_intp);
template int twin_binary_scalar<TierAvx512, Hypot>(const char *, bf16_t, bool, char *, npy_intp);
BF16_AVX512_UNARY_TWINS(INSTANTIATE_UNARY_, TierAvx512)
BF16_AVX512_COMPARE_TWINS(INSTANTIATE_COMPARE_, TierAvx512)

} /* namespace umath */

#pragma GCC diagnostic pop
#ifdef __clang__
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif
