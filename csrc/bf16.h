/*
 * bf16.h - the bfloat16 number: bit-exact conversions, rounding modes, classification.
 *
 * Pure C (no Python, no NumPy). A bfloat16 is carried as its raw 16 bits (bf16_t), the top half
 * of an IEEE float32. Every other file converts through these functions, so there is exactly one
 * definition of how a value rounds.
 */
#ifndef BF16_H
#define BF16_H

#include <stdint.h>
#include <string.h>
#include <math.h>
#include <fenv.h>

typedef uint16_t bf16_t;

#define BF16_SIGN 0x8000u
#define BF16_ABS 0x7fffu
#define BF16_INF 0x7f80u
#define BF16_NINF 0xff80u
#define BF16_QNAN 0x7fc0u
#define BF16_MAX 0x7f7fu

static inline uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float f32_from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint64_t f64_bits(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static inline double f64_from_bits(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }

/* bfloat16 -> float32 is exact: the 16 bits become the high half. */
static inline float bf16_to_f32(bf16_t h) { return f32_from_bits((uint32_t)h << 16); }
static inline double bf16_to_f64(bf16_t h) { return (double)bf16_to_f32(h); }

static inline int bf16_isnan(bf16_t h) { return (h & BF16_ABS) > BF16_INF; }
static inline int bf16_isinf(bf16_t h) { return (h & BF16_ABS) == BF16_INF; }
static inline int bf16_isfinite(bf16_t h) { return (h & BF16_ABS) < BF16_INF; }
static inline int bf16_iszero(bf16_t h) { return (h & BF16_ABS) == 0; }
static inline int bf16_signbit(bf16_t h) { return (h & BF16_SIGN) != 0; }

/* Rounding modes of the conversions into bfloat16 (numbers shared with bfloat16_dtype.rounding). */
enum bf16_rounding {
    BF16_ROUND_NEAREST_EVEN = 0, /* IEEE default, what every cast of the package does */
    BF16_ROUND_TOWARD_ZERO = 1,  /* truncation: what naive code does */
    BF16_ROUND_STOCHASTIC = 2,   /* away from zero with probability (dropped part) / ulp */
};

/*
 * float32 bits -> bfloat16 in a rounding mode: the one definition every conversion uses.
 * Branch-free so loops vectorise; called with a constant mode, the compiler keeps one branch.
 * A bfloat16 is the high half of a float32, so rounding is an addition to the 16 dropped bits:
 *  - nearest-even adds 0x7fff plus the lowest kept bit: it carries into the kept half exactly
 *    when the dropped half is above one half, or equal to it with an odd kept half;
 *  - toward zero adds nothing;
 *  - stochastic adds 16 uniformly random bits: it carries with probability (dropped) / 2^16,
 *    so the expected result is the input exactly (unbiased), for subnormals too.
 * The addition acts on the magnitude, so negative values round symmetrically. Finite values
 * that carry past the largest finite bfloat16 become inf (IEEE overflow for nearest-even; for
 * stochastic, inf stands for 2^128). inf + random bits stays inf. NaN keeps its sign and is
 * forced quiet, so no payload can truncate to inf.
 */
static inline bf16_t bf16_round_bits(uint32_t u, enum bf16_rounding mode, uint16_t random16)
{
    uint32_t add = mode == BF16_ROUND_NEAREST_EVEN ? 0x7fffu + ((u >> 16) & 1u)
                   : mode == BF16_ROUND_STOCHASTIC ? (uint32_t)random16
                                                   : 0u;
    uint32_t rounded = (u + add) >> 16;
    uint32_t quiet_nan = (u >> 16) | 0x0040u;
    return (bf16_t)(((u & 0x7fffffffu) > 0x7f800000u) ? quiet_nan : rounded);
}
static inline bf16_t bf16_round_bits_rne(uint32_t u)
{
    return bf16_round_bits(u, BF16_ROUND_NEAREST_EVEN, 0);
}
static inline bf16_t f32_to_bf16(float f) { return bf16_round_bits_rne(f32_bits(f)); }

/* Flush bfloat16 subnormals to zero of the same sign (the TPU conversion mode). */
static inline bf16_t bf16_flush_subnormal(bf16_t h)
{
    return ((h & 0x7f80u) == 0) ? (bf16_t)(h & BF16_SIGN) : h;
}

/*
 * float64 -> bfloat16 with a single rounding. First narrow to float32 with round-to-odd
 * (truncate, then set the lowest bit if anything was lost): float32 keeps 24 bits >= 8 + 2, so
 * a following round-to-nearest-even to bfloat16 gives the correctly rounded result, including
 * subnormals and overflow.
 */
static inline float f64_to_f32_round_odd(double d)
{
    float f = (float)d;
    if (isnan(d)) return f;
    double fd = (double)f;
    if (fd == d) return f;
    uint32_t u = f32_bits(f);
    if (fabs(fd) > fabs(d)) u -= 1; /* rounded away from zero: step back toward zero */
    u |= 1u;                         /* inexact: make it odd */
    return f32_from_bits(u);
}
/* A float64 NaN as a quiet bfloat16 NaN with its sign and the top 7 bits of its payload, the
 * bits the float64 -> float32 -> bfloat16 conversions keep (tests/test_casts.py::
 * test_float64_nan_payloads_like_float32_path). */
static inline bf16_t f64_nan_to_bf16(uint64_t b)
{
    return (bf16_t)(((b >> 48) & BF16_SIGN) | BF16_QNAN | ((b >> 45) & 0x7fu));
}
static inline bf16_t f64_to_bf16(double d)
{
    /* NaN tested on the bits: a float compare would raise "invalid" for signalling NaNs,
     * which numpy's float16 casts do not. */
    uint64_t b = f64_bits(d);
    if ((b & 0x7fffffffffffffffull) > 0x7ff0000000000000ull) {
        return f64_nan_to_bf16(b);
    }
    return f32_to_bf16(f64_to_f32_round_odd(d));
}

/* float64 -> float32 rounded toward zero (finite inputs; NaN is the caller's business). */
static inline float f64_to_f32_toward_zero(double d)
{
    float f = (float)d;
    if (fabs((double)f) > fabs(d)) return f32_from_bits(f32_bits(f) - 1u); /* one step back */
    return f;
}

/*
 * float64 -> bfloat16 in a rounding mode, rounding once from the float64 value.
 * Toward zero: truncating to float32 and then to bfloat16 truncates once (the float32 grid
 * contains the bfloat16 grid); finite values never become inf.
 * Stochastic: with lo the truncated magnitude and ulp the bfloat16 spacing above it,
 * frac = (|d| - lo) / ulp is exact in float64 (the dropped bits, scaled by a power of two), and
 * the result is lo + ulp when random64 < ceil(frac * 2^64). The probability is exactly frac
 * whenever frac has at most 64 fraction bits, which holds for every |d| >= 2^-145 (16 times
 * below the smallest bfloat16 subnormal); below that it exceeds frac by less than 2^-64.
 * Magnitudes of 2^128 and more (float32 has no such finite values) give inf.
 */
static inline bf16_t f64_to_bf16_mode(double d, enum bf16_rounding mode, uint64_t random64)
{
    uint64_t b = f64_bits(d);
    bf16_t sign = (bf16_t)((b >> 48) & BF16_SIGN);
    if ((b & 0x7fffffffffffffffull) > 0x7ff0000000000000ull) return f64_nan_to_bf16(b);
    if (mode == BF16_ROUND_NEAREST_EVEN) return f64_to_bf16(d);
    uint64_t abs_bits = b & 0x7fffffffffffffffull, e64 = abs_bits >> 52;
    if (e64 >= 1023 - 126 && e64 < 1023 + 128) {
        /* bfloat16's normal range: the kept bits and the 45 dropped mantissa bits are fields of
         * the float64; the same result as below (threshold = dropped * 2^19), integers only. */
        bf16_t kept = (bf16_t)(((e64 - 1023 + 127) << 7) | ((abs_bits >> 45) & 0x7f));
        if (mode == BF16_ROUND_TOWARD_ZERO) return (bf16_t)(sign | kept);
        uint64_t dropped = abs_bits & ((1ull << 45) - 1);
        return (bf16_t)(sign | (kept + ((random64 >> 19) < dropped)));
    }
    double a = fabs(d);
    bf16_t lo = bf16_round_bits(f32_bits(f64_to_f32_toward_zero(a)), BF16_ROUND_TOWARD_ZERO, 0);
    if (mode == BF16_ROUND_TOWARD_ZERO) return (bf16_t)(sign | lo);
    if (a >= 340282366920938463463374607431768211456.0 /* 2^128 */) return (bf16_t)(sign | BF16_INF);
    double dropped = a - bf16_to_f64(lo);
    if (dropped == 0.0) return (bf16_t)(sign | lo);
    int biased = (lo >> 7) & 0xff; /* 0 for subnormals, whose spacing is that of exponent 1 */
    double frac = ldexp(dropped, 127 + 7 - (biased ? biased : 1));
    uint64_t threshold = (uint64_t)ceil(ldexp(frac, 64)); /* frac <= 1 - 2^-53: fits */
    return (bf16_t)(sign | (lo + (random64 < threshold)));
}

/* long double -> double with round-to-odd (x87's 64-bit mantissa >= 53 + 2), for one rounding. */
static inline double ld_to_f64_round_odd(long double v)
{
    double d = (double)v;
    if (isfinite(d) && (long double)d != v) {
        uint64_t bits = f64_bits(d);
        if (fabsl((long double)d) > fabsl(v)) bits -= 1;
        d = f64_from_bits(bits | 1u);
    }
    return d;
}
static inline bf16_t ld_to_bf16(long double v) { return f64_to_bf16(ld_to_f64_round_odd(v)); }

/* Unsigned 64-bit integer -> double with round-to-odd, so the final rounding happens once. */
static inline double u64_to_f64_round_odd(uint64_t m)
{
    if (m < (1ull << 53)) return (double)(int64_t)m; /* exact */
    int shift = 64 - 53 - __builtin_clzll(m); /* bits below the 53 we keep */
    uint64_t kept = m >> shift;
    if (m & ((1ull << shift) - 1)) kept |= 1u;
    return (double)(int64_t)kept * (double)(1ull << shift); /* exact: kept < 2^53, shift <= 11 */
}
static inline bf16_t u64_to_bf16(uint64_t m) { return f64_to_bf16(u64_to_f64_round_odd(m)); }
static inline double i64_to_f64_round_odd(int64_t v)
{
    if ((uint64_t)v + (1ull << 53) <= (1ull << 54)) return (double)v; /* |v| <= 2^53: exact */
    double d = u64_to_f64_round_odd(v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
    return v < 0 ? -d : d;
}
static inline bf16_t i64_to_bf16(int64_t v) { return f64_to_bf16(i64_to_f64_round_odd(v)); }

/* True when rounding the finite float32 `f` to bfloat16 produced an infinity (an overflow). */
static inline int bf16_overflowed(float f, bf16_t h)
{
    return bf16_isinf(h) && isfinite(f);
}

/* Raise IEEE flags so NumPy's errstate machinery reports them like for float16. */
static inline void bf16_raise_overflow(void) { feraiseexcept(FE_OVERFLOW); }
static inline void bf16_raise_invalid(void) { feraiseexcept(FE_INVALID); }


/* ---- IEEE float16 (numpy's half), for the casts between the two 16-bit formats ---------- */

/* float16 bits -> float32, exact. */
static inline float f16_bits_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return f32_from_bits(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        float v = (float)m * 5.9604644775390625e-08f; /* m * 2^-24, exact */
        return sign ? -v : v;
    }
    return f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
}

/* float32 -> float16 bits, round to nearest even; *overflow set when a finite value became inf,
 * *underflow when a value below float16's normals was not exact. */
static inline uint16_t f32_to_f16_bits(float f, int *overflow, int *underflow)
{
    uint32_t u = f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a == 0x7f800000u) return (uint16_t)(sign | 0x7c00u);
    if (a >= 0x477ff000u) { *overflow = 1; return (uint16_t)(sign | 0x7c00u); } /* >= 65520 */
    if (a >= 0x38800000u) {                                                   /* normal */
        uint32_t b = a - (112u << 23);
        return (uint16_t)(sign | ((b + 0xfffu + ((b >> 13) & 1u)) >> 13));
    }
    /* below float16's normals, inexact: underflow, as NumPy's float32 -> float16 cast says */
    if (a <= 0x33000000u) {                                                   /* <= 2^-25 */
        if (a != 0) *underflow = 1;
        return sign;
    }
    uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - (a >> 23);
    uint32_t r = mant >> shift, rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem != 0) *underflow = 1;
    if (rem > half || (rem == half && (r & 1u))) r++;
    return (uint16_t)(sign | r);
}

/* Total order key used by sorting: NaNs last, -0.0 and +0.0 equal (numpy compares them equal). */
static inline uint16_t bf16_sort_key(bf16_t h)
{
    if (bf16_isnan(h)) return 0xffffu;
    if ((h & BF16_ABS) == 0) h = 0;
    return (h & BF16_SIGN) ? (uint16_t)(~h) : (uint16_t)(h | BF16_SIGN);
}

#endif /* BF16_H */
