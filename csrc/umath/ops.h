/*
 * umath/ops.h - one small functor per ufunc. Each computes in float32 on exact widenings of
 * its bfloat16 inputs; the loop adapter rounds the result once. Functors that work on the
 * bits themselves (nextafter, spacing, copysign, ...) say so with `bits` in their signature.
 */
#ifndef BF16_UMATH_OPS_H
#define BF16_UMATH_OPS_H

#include "bf16.h"
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace bf16ops {

/*
 * fmod of two widened bfloat16, exact: a - trunc(a / b) * b in float64 while the quotient is
 * below 2**24. With 8-bit significands a / b is an integer or at least 2**-16 from one, far
 * beyond the float64 quotient's error (2**-29 there), so trunc is right; q * b has at most 32
 * bits and the difference is exact, and the remainder fits float32 (it is a multiple of the
 * finer operand's ulp below |b|). Infinite, NaN or zero operands and larger quotients go to
 * std::fmod, which raises the flags (np.fmod of 10^5 normal values 2.4 ms -> 0.6-1.1 ms, AMD
 * EPYC Zen 3; tests/test_ufuncs.py::test_fmod_family_exact_around_the_quotient_limit).
 */
static inline float exact_fmod(float a, float b)
{
    if (std::isfinite(a) && std::isfinite(b) && b != 0.0f) {
        double x = a, y = b, q = std::trunc(x / y);
        if (std::fabs(q) < 0x1p24) {
            return std::copysign((float)(x - q * y), a); /* a zero keeps a's sign */
        }
    }
    return std::fmod(a, b);
}

static inline float py_fmod_div(float a, float b, float *mod_out)
{
    /* floor division and Python-style remainder, as numpy's npy_divmodf does it */
    float mod = exact_fmod(a, b);
    if (b == 0.0f) {
        *mod_out = mod;
        return a / b;
    }
    float div = (a - mod) / b;
    /* quiet comparisons: a NaN operand must not raise "invalid" (numpy raises nothing) */
    if (mod != 0.0f) {
        if (std::isless(b, 0.0f) != std::isless(mod, 0.0f)) {
            mod += b;
            div -= 1.0f;
        }
    }
    else {
        mod = std::copysign(0.0f, b);
    }
    float floordiv;
    if (div != 0.0f) {
        floordiv = std::floor(div);
        /* an overflowed quotient is already integral; inf - inf would raise "invalid" */
        if (std::isfinite(div) && std::isgreater(div - floordiv, 0.5f)) floordiv += 1.0f;
    }
    else {
        floordiv = std::copysign(0.0f, a / b);
    }
    *mod_out = mod;
    return floordiv;
}

/* ---- binary, float32 semantics ---- */
/* With NaN on both sides, the result is the first operand's NaN (quieted), as x86's and ARM's
 * instructions give it for their first source: but a compiler may swap the operands of the
 * commutative + and * (clang does), so a NaN first operand is returned explicitly (tested on
 * its bits: no flag beyond the operation's own). The vector twins pin the order in asm
 * (umath_tier_checks.py::test_two_nans_give_the_first_operands_every_layout). */
static inline float first_nan_wins(float r, float a)
{
    uint32_t ua, ur;
    std::memcpy(&ua, &a, 4);
    std::memcpy(&ur, &r, 4);
    /* on the bits, branch-free, so that the compiler's vector loops stay vector loops */
    uint32_t a_is_nan = 0u - (uint32_t)((ua & 0x7fffffffu) > 0x7f800000u);
    ur = (ur & ~a_is_nan) | ((ua | 0x00400000u) & a_is_nan);
    std::memcpy(&r, &ur, 4);
    return r;
}
struct Add { static float f(float a, float b) { return first_nan_wins(a + b, a); } };
struct Subtract { static float f(float a, float b) { return a - b; } };
struct Multiply { static float f(float a, float b) { return first_nan_wins(a * b, a); } };
struct Divide { static float f(float a, float b) { return a / b; } };
struct Power { static float f(float a, float b) { return std::pow(a, b); } };
struct FloorDivide {
    static float f(float a, float b)
    {
        /* x // 0 is x / 0 with only its flags: the remainder (fmod(x, 0) raises "invalid")
         * is not computed (tests/test_umath_regressions.py) */
        if (b == 0.0f) return a / b;
        float m;
        return py_fmod_div(a, b, &m);
    }
};
/* The remainder alone: its quotient could raise "divide by zero" or "overflow" of its own
 * (tests/test_umath_regressions.py, test_binary_warnings_match_float16 in builds without -O3) */
struct Remainder {
    static float f(float a, float b)
    {
        float mod = exact_fmod(a, b);
        if (b == 0.0f) return mod;
        if (mod != 0.0f) {
            if (std::isless(b, 0.0f) != std::isless(mod, 0.0f)) mod += b;
        }
        else {
            mod = std::copysign(0.0f, b);
        }
        return mod;
    }
};
struct Fmod { static float f(float a, float b) { return exact_fmod(a, b); } };
/* std::isgreaterequal & co. are the quiet IEEE comparisons: NaN operands raise no "invalid" */
struct Maximum {
    static float f(float a, float b) { return (std::isgreaterequal(a, b) || a != a) ? a : b; }
};
struct Minimum {
    static float f(float a, float b) { return (std::islessequal(a, b) || a != a) ? a : b; }
};
struct Fmax {
    static float f(float a, float b) { return (std::isgreaterequal(a, b) || b != b) ? a : b; }
};
struct Fmin {
    static float f(float a, float b) { return (std::islessequal(a, b) || b != b) ? a : b; }
};
/*
 * atan2 in float64, rounded to odd into float32 so that the adapter's rounding to bfloat16 is
 * the correct rounding of the float64 value, and 2-3x faster than libm's atan2f was
 * (README, "Speed": 1e5 random pairs 6.1 -> 1.9-2.4 ms on the AMD EPYC Zen 5; the avx512 and
 * avx2 tiers run the same steps eight and four lanes at a time: atan2_run, atan2_run4). The angle of the smaller
 * magnitude over the larger, t in [0, 1] (no 0/0 or inf/inf is ever divided), shifted by pi/4
 * above tan(pi/8); a degree-8 polynomial in t^2 (least squares on Chebyshev nodes, relative error
 * 4e-15) gives atan there; then the octant and the sign. A result below 2^-126 raises underflow,
 * as atan2f does. Checked against numpy's float64 arctan2 rounded once
 * (tests/test_ufuncs.py::test_arctan2_correctly_rounded, the IEEE special cases included).
 */
/* Coefficients shared by the scalar functors and the tiers' twins (loops_avx2.cpp,
 * loops_avx512.cpp), lowest degree first. */
/* atan t = t + t u P(u), u = t^2, |t| <= tan(pi/8): least squares on Chebyshev nodes, 4e-15 */
static constexpr double atan_poly[9] = {
    -0.3333333333333101, 0.19999999997787019, -0.1428571393793156, 0.11111089999487664,
    -0.09090263937897107, 0.07681144128845276, -0.06551586630537518, 0.05171265079678373,
    -0.027268213415821713};
/* log2(1 + i / 128) for i = 0 .. 127, the significands of bfloat16 (the power twins' logarithm:
 * loops_avx2.cpp, loops_avx512.cpp): 2 atanh(s) / ln 2 with s = i / (256 + i) <= 1/3, the series
 * summed at compile time, 30 terms ((1/9)^30 < 2^-95): within 2^-50.8 (relative) of Python's
 * math.log2 in a one-off check */
struct Log2Significands {
    alignas(64) double v[128];
};
constexpr Log2Significands make_log2_significands()
{
    Log2Significands t{};
    for (int i = 0; i < 128; i++) {
        double s = (double)i / (double)(256 + i), s2 = s * s, term = s, sum = 0.0;
        for (int k = 0; k < 30; k++) {
            sum += term / (double)(2 * k + 1);
            term *= s2;
        }
        t.v[i] = sum * 2.8853900817779268; /* 2 / ln 2 */
    }
    return t;
}
static constexpr Log2Significands log2_significands = make_log2_significands();
/* 2^f, |f| <= 1/2: Taylor, (ln 2)^j / j!; degree 8 (the avx2 twin, float64) leaves 2^-31.7
 * (relative), degree 7 (the avx512 twin, float32) 2^-27 */
static constexpr double exp2_taylor[9] = {
    1.0, 0.6931471805599453, 0.2402265069591007, 0.055504108664821576, 0.009618129107628477,
    0.0013333558146428441, 0.00015403530393381606, 1.5252733804059838e-05,
    1.3215486790144305e-06};

/* The NaN a two-operand function returns: the first NaN operand's, quieted, whatever the
 * compiler does with operand order; the sum raises "invalid" for a signalling operand. */
static inline float first_nan(float a, float b)
{
    volatile float flags = a + b;
    (void)flags;
    return f32_from_bits(f32_bits(a != a ? a : b) | 0x00400000u);
}

struct Arctan2 {
    static float f(float a, float b)
    {
        if (a != a || b != b) return first_nan(a, b);
        /* one division, selects rather than branches (random signs and magnitudes mispredict)
         * and Estrin's scheme: the latency of one element is what this loop waits on */
        double ay = std::fabs((double)a), ax = std::fabs((double)b);
        bool steep = ay > ax;
        double hi = steep ? ay : ax, lo = steep ? ax : ay;
        const double tan_pi_8 = 0.41421356237309504880, pi_4 = 0.78539816339744830962;
        /* t = lo / hi; above tan(pi/8), atan t = pi/4 + atan((t - 1) / (t + 1)), the quotient
         * taken as (lo - hi) / (lo + hi); inf / inf is t = 1, x / inf and 0 / 0 are t = 0 */
        bool hi_inf = std::isinf(hi), both_inf = hi_inf && std::isinf(lo);
        bool shifted = both_inf || (!hi_inf && lo > tan_pi_8 * hi);
        double num = hi_inf ? 0.0 : (shifted ? lo - hi : lo);
        double den = hi_inf || hi == 0.0 ? 1.0 : (shifted ? lo + hi : hi);
        double t = num / den;
        /* below 2^-60, t^2 changes nothing, and its powers would underflow (raising a flag
         * atan2 does not: arctan2(1e30, 1e-30)) */
        double u = t * t < 0x1p-60 ? 0.0 : t * t, u2 = u * u, u4 = u2 * u2;
        const double *c = atan_poly;
        double p01 = c[0] + c[1] * u, p23 = c[2] + c[3] * u, p45 = c[4] + c[5] * u,
               p67 = c[6] + c[7] * u;
        double p = (p01 + u2 * p23) + u4 * ((p45 + u2 * p67) + u4 * c[8]);
        double r = (shifted ? pi_4 : 0.0) + (t + t * u * p);
        r = steep ? 1.57079632679489661923 - r : r;
        r = std::signbit(b) ? 3.14159265358979323846 - r : r;
        if (r != 0.0 && r < 0x1p-126) std::feraiseexcept(FE_UNDERFLOW);
        return f64_to_f32_round_odd(std::signbit(a) ? -r : r);
    }
};

/* sqrt(a^2 + b^2) in float64 (the squares of bfloat16 values are exact there), rounded to
 * float32: what glibc's hypotf computes, and numpy's float32 hypot rounded to bfloat16
 * (tests/test_ufuncs.py::test_hypot_is_float32_hypot_rounded); written out so that the tiers'
 * twins (hypot_run in loops_avx512.cpp, hypot_run8 in loops_avx2.cpp) give its bits under any
 * libm. An inf or NaN operand: hypotf (hypot(inf, NaN) is inf). */
struct Hypot {
    static float f(float a, float b)
    {
        if (!std::isfinite(a) || !std::isfinite(b)) return std::hypot(a, b);
        return (float)std::sqrt((double)a * a + (double)b * b);
    }
};
/* 0 below zero, 1 above, h0 at either zero (quiet if a NaN), x (quiet) for a NaN x, which
 * raises "invalid" if signalling, as a float comparison x != x does; exact, so on the bits
 * (heaviside_scan in order_scan.h is the contiguous form) */
struct Heaviside {
    static bf16_t bits(bf16_t x, bf16_t h0)
    {
        if (bf16_isnan(x)) {
            if (!(x & 0x0040u)) std::feraiseexcept(FE_INVALID);
            return (bf16_t)(x | 0x0040u);
        }
        if (!(x & BF16_ABS)) return bf16_isnan(h0) ? (bf16_t)(h0 | 0x0040u) : h0;
        return (x & BF16_SIGN) ? (bf16_t)0 : (bf16_t)0x3f80u;
    }
};
/* In float64: a - b cannot overflow (max - (-max) would in float32) and the result is
 * within one bfloat16 ulp even for near-cancelling inputs. */
struct Logaddexp {
    static float f(float a, float b)
    {
        double x = a, y = b;
        if (x == y) return (float)(x + 0.693147180559945309); /* also right for +-inf */
        double d = x - y;
        if (d > 0) return (float)(x + std::log1p(std::exp(-d)));
        if (d <= 0) return (float)(y + std::log1p(std::exp(d)));
        return (float)d; /* nan */
    }
};
struct Logaddexp2 {
    static float f(float a, float b)
    {
        const double inv_ln2 = 1.44269504088896340736;
        double x = a, y = b;
        if (x == y) return (float)(x + 1.0);
        double d = x - y;
        if (d > 0) return (float)(x + std::log1p(std::exp2(-d)) * inv_ln2);
        if (d <= 0) return (float)(y + std::log1p(std::exp2(d)) * inv_ln2);
        return (float)d;
    }
};

/* ---- binary on bits ---- */
struct Copysign {
    static bf16_t bits(bf16_t a, bf16_t b) { return (bf16_t)((a & BF16_ABS) | (b & BF16_SIGN)); }
};
struct Nextafter {
    static bf16_t bits(bf16_t a, bf16_t b)
    {
        if (bf16_isnan(a) || bf16_isnan(b)) return BF16_QNAN;
        float x = bf16_to_f32(a), y = bf16_to_f32(b);
        if (x == y) return b;
        if (x == 0.0f) return (bf16_t)((b & BF16_SIGN) | 1u);
        bf16_t r = ((x < y) == (x > 0.0f)) ? (bf16_t)(a + 1u) : (bf16_t)(a - 1u);
        if (bf16_isinf(r) && !bf16_isinf(a)) bf16_raise_overflow(); /* as float16/float32 */
        return r;
    }
};

/* ---- comparisons and logic: bfloat16 x bfloat16 -> bool ---- */
/* quiet comparisons: comparing with NaN is False without raising "invalid", as in numpy */
struct Equal { static bool f(float a, float b) { return a == b; } };
struct NotEqual { static bool f(float a, float b) { return a != b; } };
struct Less { static bool f(float a, float b) { return std::isless(a, b); } };
struct LessEqual { static bool f(float a, float b) { return std::islessequal(a, b); } };
struct Greater { static bool f(float a, float b) { return std::isgreater(a, b); } };
struct GreaterEqual { static bool f(float a, float b) { return std::isgreaterequal(a, b); } };
/* both sides compared, not short-circuited, as the vector loops compare them (a signalling NaN
 * on either side raises "invalid" in every loop): umath_tier_checks.py::test_logical_every_layout.
 * `&`/`|` alone are not enough: clang, and GCC for aarch64, skip the second compare when the
 * first decides, so each result passes through an empty asm the compiler cannot see through. */
static inline bool compared_nonzero(float v)
{
    bool r = v != 0.0f;
#if defined(__GNUC__) || defined(__clang__)
    __asm__ volatile("" : "+r"(r));
#endif
    return r;
}
struct LogicalAnd { static bool f(float a, float b) { return compared_nonzero(a) & compared_nonzero(b); } };
struct LogicalOr { static bool f(float a, float b) { return compared_nonzero(a) | compared_nonzero(b); } };
struct LogicalXor { static bool f(float a, float b) { return compared_nonzero(a) != compared_nonzero(b); } };

/* ---- unary, float32 semantics ---- */
struct Reciprocal { static float f(float a) { return 1.0f / a; } };
struct Square { static float f(float a) { return a * a; } };
/* x ** 3 (loops.h power_by_unary): exact in float32 where no step over- or underflows */
struct Cube { static float f(float a) { return a * a * a; } };
struct Sqrt { static float f(float a) { return std::sqrt(a); } };
struct Cbrt { static float f(float a) { return std::cbrt(a); } };
struct Exp { static float f(float a) { return std::exp(a); } };
struct Exp2 { static float f(float a) { return std::exp2(a); } };
struct Expm1 { static float f(float a) { return std::expm1(a); } };
struct Log { static float f(float a) { return std::log(a); } };
struct Log2 { static float f(float a) { return std::log2(a); } };
struct Log10 { static float f(float a) { return std::log10(a); } };
struct Log1p { static float f(float a) { return std::log1p(a); } };
struct Sin { static float f(float a) { return std::sin(a); } };
struct Cos { static float f(float a) { return std::cos(a); } };
struct Tan { static float f(float a) { return std::tan(a); } };
struct Arcsin { static float f(float a) { return std::asin(a); } };
struct Arccos { static float f(float a) { return std::acos(a); } };
struct Arctan { static float f(float a) { return std::atan(a); } };
struct Sinh { static float f(float a) { return std::sinh(a); } };
struct Cosh { static float f(float a) { return std::cosh(a); } };
struct Tanh { static float f(float a) { return std::tanh(a); } };
struct Arcsinh { static float f(float a) { return std::asinh(a); } };
struct Arccosh { static float f(float a) { return std::acosh(a); } };
struct Arctanh { static float f(float a) { return std::atanh(a); } };
/* float64 for the angle conversions: one rounding from the exact product's neighbourhood */
struct Deg2rad {
    static float f(float a) { return (float)((double)a * 0.017453292519943295); }
};
struct Rad2deg {
    static float f(float a) { return (float)((double)a * 57.295779513082323); }
};
struct Floor { static float f(float a) { return std::floor(a); } };
struct Ceil { static float f(float a) { return std::ceil(a); } };
struct Trunc { static float f(float a) { return std::trunc(a); } };
struct Rint { static float f(float a) { return std::nearbyint(a); } };
struct Sign {
    static float f(float a)
    {
        /* numpy: sign(-0.0) is +0.0, sign(NaN) is NaN */
        if (a == 0.0f) return 0.0f;
        return std::isgreater(a, 0.0f) ? 1.0f : (std::isless(a, 0.0f) ? -1.0f : a);
    }
};

/* ---- unary on bits ---- */
struct Negative { static bf16_t bits(bf16_t a) { return (bf16_t)(a ^ BF16_SIGN); } };
struct Positive { static bf16_t bits(bf16_t a) { return a; } };
struct Absolute { static bf16_t bits(bf16_t a) { return (bf16_t)(a & BF16_ABS); } };
struct Spacing {
    static bf16_t bits(bf16_t a)
    {
        /* flags as numpy's float16 spacing: inf/NaN -> NaN "invalid", +-max -> inf "overflow" */
        if (!bf16_isfinite(a)) {
            bf16_raise_invalid();
            return BF16_QNAN;
        }
        if ((a & BF16_ABS) == BF16_MAX) bf16_raise_overflow();
        if (bf16_iszero(a)) return 1u; /* +-0: the smallest subnormal, positive as for float32 */
        /* distance to the next value away from zero, with the sign of x (float32 convention) */
        float x = bf16_to_f32(a), next = bf16_to_f32((bf16_t)(a + 1u));
        return f32_to_bf16(next - x);
    }
};

/* ---- unary predicates: bfloat16 -> bool ---- */
struct Isnan { static bool f(bf16_t a) { return bf16_isnan(a); } };
struct Isinf { static bool f(bf16_t a) { return bf16_isinf(a); } };
struct Isfinite { static bool f(bf16_t a) { return bf16_isfinite(a); } };
struct Signbit { static bool f(bf16_t a) { return bf16_signbit(a); } };
struct LogicalNot { static bool f(bf16_t a) { return bf16_iszero(a); } };

} /* namespace bf16ops */

#endif
