/*
 * umath/loops.h - functor -> strided inner loop adapters.
 *
 * Each adapter (binary_loop<Op>, unary_loop<Op>, ...) handles any strides; contiguous calls go
 * to a vector twin of the functor when the tier in force has one (loops_<tier>.cpp), else to
 * the portable loops below. A twin exists for (tier, functor) exactly when the functor is in
 * that tier's list here: adding one is a vector functor in the tier file and one list entry.
 */
#ifndef BF16_UMATH_LOOPS_H
#define BF16_UMATH_LOOPS_H

#include "module.h"
#include "cpu.h"
#include "umath/ops.h"
#include "umath/unary_table.h"

#include <type_traits>

namespace umath {
using namespace bf16ops;

/* The tier the ufunc loops use: bf16_cpu_tier() at import, read-only afterwards. */
extern bf16_tier loop_tier;

static inline bf16_t ld(const char *p) { bf16_t h; memcpy(&h, p, 2); return h; }
static inline void st(char *p, bf16_t h) { memcpy(p, &h, 2); }

/* Round once and note a finite float32 that became inf (numpy raises "overflow"). */
static inline bf16_t round_checked(float r, int *ovf)
{
    uint32_t u = f32_bits(r);
    bf16_t h = bf16_round_bits_rne(u);
    *ovf |= ((h & 0x7fffu) == 0x7f80u) & ((u & 0x7f800000u) != 0x7f800000u);
    return h;
}

static inline void store_rounded(char *o, float r, int *ovf) { st(o, round_checked(r, ovf)); }

static inline void report_overflow(int ovf)
{
    if (ovf) {
        bf16_raise_overflow();
    }
}

/* The vector loops read a whole block before writing it: exact aliasing (a += b) is fine,
 * partial overlap of the output with an input is not. */
static inline bool straddles(const char *o, const char *in, npy_intp n)
{
    return o != in && o < in + 2 * n && in < o + 2 * n;
}

/* ---- portable contiguous loops (the baseline tier, and every twin's tail) --------------- */

/* The portable float loops stay scalar, but for the arithmetic blocks below: GCC 12's
 * auto-vectorised forms raised spurious IEEE flags (SSE compares that signal on quiet NaNs in
 * maximum(NaN, 0), "invalid" from inf * 2 on four or more elements; tests/umath_tier_checks.py,
 * test_binary_warnings_same_..., baseline tier). The tiers' hand-written twins cover the rest of
 * the arithmetic that needs the speed. */
#if defined(__GNUC__) && !defined(__clang__)
#define BF16_NO_AUTOVECTORIZE __attribute__((optimize("no-tree-vectorize")))
#else
#define BF16_NO_AUTOVECTORIZE
#endif
#if defined(__GNUC__)
#define BF16_NOINLINE __attribute__((noinline))
#else
#define BF16_NOINLINE
#endif

/*
 * Add, subtract, multiply and divide are the exception: their portable loops run in blocks of
 * 16 that the compiler may vectorise (SSE2 on any x86-64, NEON on arm64), because each lane
 * then does exactly the scalar work: one float32 operation on exact inputs (no compare, no
 * select evaluating both sides, no padding lane) followed by integer-only rounding, so results
 * and IEEE flags are the scalar loop's (tests/umath_tier_checks.py at the baseline tier:
 * exhaustive operands and test_binary_warnings_same_in_vector_and_scalar_loops).
 */
template <class Op> struct BlockArith : std::false_type {};
template <> struct BlockArith<Add> : std::true_type {};
template <> struct BlockArith<Subtract> : std::true_type {};
template <> struct BlockArith<Multiply> : std::true_type {};
template <> struct BlockArith<Divide> : std::true_type {};

const int ARITH_BLOCK = 16;

/* r (float32 results) -> h (rounded); returns whether a finite result rounded to inf */
static inline unsigned round_arith_block(const float *r, bf16_t *h)
{
    unsigned ovf = 0;
    for (int j = 0; j < ARITH_BLOCK; j++) {
        uint32_t u = f32_bits(r[j]);
        h[j] = bf16_round_bits_rne(u);
        ovf |= (unsigned)(((h[j] & 0x7fffu) == 0x7f80u) & ((u & 0x7f800000u) != 0x7f800000u));
    }
    return ovf;
}

/* Blocks of the array-array loop; returns the elements done (a multiple of ARITH_BLOCK). Out of
 * line: inlined into a BF16_NO_AUTOVECTORIZE caller it would not be vectorised. */
template <class Op>
BF16_NOINLINE static npy_intp arith_blocks(const char *a, const char *b, char *o, npy_intp n, int *ovf)
{
    npy_intp i = 0;
    unsigned any = 0;
    for (; i + ARITH_BLOCK <= n; i += ARITH_BLOCK) {
        bf16_t x[ARITH_BLOCK], y[ARITH_BLOCK], h[ARITH_BLOCK];
        float r[ARITH_BLOCK];
        memcpy(x, a + 2 * i, sizeof x);
        memcpy(y, b + 2 * i, sizeof y);
        for (int j = 0; j < ARITH_BLOCK; j++) r[j] = Op::f(bf16_to_f32(x[j]), bf16_to_f32(y[j]));
        any |= round_arith_block(r, h);
        memcpy(o + 2 * i, h, sizeof h);
    }
    *ovf |= (int)(any != 0);
    return i;
}

/* Blocks of the array-scalar loop, the scalar on side 0 (ScalarFirst) or 1. */
template <class Op, bool ScalarFirst>
BF16_NOINLINE static npy_intp arith_scalar_blocks(const char *arr, float s, char *o, npy_intp n, int *ovf)
{
    npy_intp i = 0;
    unsigned any = 0;
    for (; i + ARITH_BLOCK <= n; i += ARITH_BLOCK) {
        bf16_t x[ARITH_BLOCK], h[ARITH_BLOCK];
        float r[ARITH_BLOCK];
        memcpy(x, arr + 2 * i, sizeof x);
        for (int j = 0; j < ARITH_BLOCK; j++) {
            r[j] = ScalarFirst ? Op::f(s, bf16_to_f32(x[j])) : Op::f(bf16_to_f32(x[j]), s);
        }
        any |= round_arith_block(r, h);
        memcpy(o + 2 * i, h, sizeof h);
    }
    *ovf |= (int)(any != 0);
    return i;
}

template <class Op>
BF16_NO_AUTOVECTORIZE static int binary_contig(const char *a, const char *b, char *o, npy_intp n)
{
    int ovf = 0;
    /* Partial overlap is an accumulation's chain (NumPy passes in1 = out - 1 element): the
     * blocks would read outputs not yet written, so it takes the element loop
     * (tests/test_ufuncs.py::test_accumulate_of_every_binary_ufunc_follows_the_chain). */
    if constexpr (BlockArith<Op>::value) {
        npy_intp done = straddles(o, a, n) || straddles(o, b, n) ? 0 : arith_blocks<Op>(a, b, o, n, &ovf);
        a += 2 * done;
        b += 2 * done;
        o += 2 * done;
        n -= done;
    }
    for (npy_intp i = 0; i < n; i++) {
        float r = Op::f(bf16_to_f32(ld(a + 2 * i)), bf16_to_f32(ld(b + 2 * i)));
        st(o + 2 * i, round_checked(r, &ovf));
    }
    return ovf;
}

/* one operand a scalar (stride 0), e.g. x * 0.5; `scalar_first` says which side it is on */
template <class Op>
BF16_NO_AUTOVECTORIZE static int binary_scalar_contig(const char *arr, bf16_t scalar,
                                                      bool scalar_first, char *o, npy_intp n)
{
    int ovf = 0;
    float s = bf16_to_f32(scalar);
    if constexpr (BlockArith<Op>::value) {
        npy_intp done = straddles(o, arr, n)  ? 0
                        : scalar_first        ? arith_scalar_blocks<Op, true>(arr, s, o, n, &ovf)
                                              : arith_scalar_blocks<Op, false>(arr, s, o, n, &ovf);
        arr += 2 * done;
        o += 2 * done;
        n -= done;
    }
    for (npy_intp i = 0; i < n; i++) {
        float x = bf16_to_f32(ld(arr + 2 * i));
        st(o + 2 * i, round_checked(scalar_first ? Op::f(s, x) : Op::f(x, s), &ovf));
    }
    return ovf;
}

template <class Op>
BF16_NO_AUTOVECTORIZE static int unary_contig(const char *a, char *o, npy_intp n)
{
    int ovf = 0;
    for (npy_intp i = 0; i < n; i++) {
        st(o + 2 * i, round_checked(Op::f(bf16_to_f32(ld(a + 2 * i))), &ovf));
    }
    return ovf;
}

template <class Op>
BF16_NO_AUTOVECTORIZE static void compare_contig(const char *a, const char *b, npy_bool *o,
                                                 npy_intp n)
{
    for (npy_intp i = 0; i < n; i++) {
        o[i] = Op::f(bf16_to_f32(ld(a + 2 * i)), bf16_to_f32(ld(b + 2 * i)));
    }
}

/* One slice of an outer-axis reduction, out == in1 contiguous, against its float32 shadow v:
 * the shadow value stands in for the stored bfloat16 while that is still its rounding. */
template <class Op>
BF16_NO_AUTOVECTORIZE static int shadow_row_contig(char *o, const char *b, float *v, npy_intp n)
{
    int ovf = 0;
    for (npy_intp i = 0; i < n; i++) {
        bf16_t stored = ld(o + 2 * i);
        float sv = v[i];
        float cur = (bf16_round_bits_rne(f32_bits(sv)) == stored) ? sv : bf16_to_f32(stored);
        float r = Op::f(cur, bf16_to_f32(ld(b + 2 * i)));
        st(o + 2 * i, round_checked(r, &ovf));
        v[i] = r;
    }
    return ovf;
}

template <class Op>
static void unary_bits_contig(const char *a, char *o, npy_intp n)
{
    for (npy_intp i = 0; i < n; i++) {
        st(o + 2 * i, Op::bits(ld(a + 2 * i)));
    }
}

/* ---- vector twins, per tier ------------------------------------------------------------- */

/* Facts about the functors that every tier's twins use (loops_avx2.cpp, loops_avx512.cpp). */

/* Float32 arithmetic on widened bfloat16, whose NaNs are the hardware's: quiet (an operand's
 * NaN comes out with its quiet bit set), with zero low bits, which the rounding add leaves as
 * they are, so the twins skip the NaN test. A functor that returns its NaN operand as it is
 * (sign) keeps the narrowing's NaN test, which quiets it, as maximum/minimum quiet theirs
 * (order_scan.h; README "Differences from float16"). */
template <class Op> struct HardwareNaNs : std::false_type {};
template <> struct HardwareNaNs<Add> : std::true_type {};
template <> struct HardwareNaNs<Subtract> : std::true_type {};
template <> struct HardwareNaNs<Multiply> : std::true_type {};
template <> struct HardwareNaNs<Divide> : std::true_type {};
template <> struct HardwareNaNs<Sqrt> : std::true_type {};
template <> struct HardwareNaNs<Square> : std::true_type {};
template <> struct HardwareNaNs<Cube> : std::true_type {};
template <> struct HardwareNaNs<Reciprocal> : std::true_type {};

/* Integer roundings: the result of a bfloat16 is a bfloat16 (or its NaN, quieted by the
 * rounding instruction), so the upper halves of the float32 results are the results. */
template <class Op> struct ExactInBf16 : std::false_type {};
template <> struct ExactInBf16<Floor> : std::true_type {};
template <> struct ExactInBf16<Ceil> : std::true_type {};
template <> struct ExactInBf16<Trunc> : std::true_type {};
template <> struct ExactInBf16<Rint> : std::true_type {};

/*
 * A finite float32 rounds to the bfloat16 infinity when its magnitude is at least 0x7F7F8000
 * (2^128 - 2^119). That magnitude plus this offset reaches 2^128 - 2^103, where float32
 * addition rounds to infinity, and anything smaller stays finite; an inf or NaN lane raises
 * nothing. So adding it to the magnitudes raises the float32 overflow flag exactly for the
 * results that round to infinity, and NumPy reads that flag after the loop as it reads the
 * arithmetic's own: no mask test or branch per block (flag_rounding_overflow in the tier
 * files; tests/umath_tier_checks.py::test_overflow_flag_exact_at_the_rounding_boundary).
 */
constexpr float rounds_to_inf_offset = 0x1p119f - 0x1p103f;

struct TierAvx2 {};
struct TierAvx512 {};

/* Defined in loops_<tier>.cpp, instantiated there for the functors in the tier's lists. Each
 * returns (the int ones) whether a finite result rounded to inf. */
template <class Tier, class Op> int twin_binary(const char *a, const char *b, char *o, npy_intp n);
template <class Tier, class Op>
int twin_binary_scalar(const char *arr, bf16_t scalar, bool scalar_first, char *o, npy_intp n);
template <class Tier, class Op> int twin_shadow_row(char *o, const char *b, float *v, npy_intp n);
template <class Tier, class Op> int twin_unary(const char *a, char *o, npy_intp n);
template <class Tier, class Op>
void twin_compare(const char *a, const char *b, npy_bool *o, npy_intp n);
/* a contiguous run against one value (`scalar_first`: the value is the left operand) */
template <class Tier, class Op>
void twin_compare_scalar(const char *arr, bf16_t scalar, bool scalar_first, npy_bool *o, npy_intp n);

template <class Tier, class Op> struct HasBinaryTwin : std::false_type {};
template <class Tier, class Op> struct HasUnaryTwin : std::false_type {};
template <class Tier, class Op> struct HasCompareTwin : std::false_type {};

/* The lists: X(Tier, Op) for each functor a tier has a twin of. */
/* (maximum/minimum/fmax/fmin work on the bits: minmax_pairs) */
#define BF16_AVX2_BINARY_TWINS(X, T) X(T, Add) X(T, Subtract) X(T, Multiply) X(T, Divide)
#define BF16_AVX2_UNARY_TWINS(X, T)                                                            \
    X(T, Sqrt) X(T, Square) X(T, Cube) X(T, Reciprocal) X(T, Exp) X(T, Log) X(T, Tanh)           \
    X(T, Floor) X(T, Ceil) X(T, Trunc) X(T, Rint) X(T, Sign)
#define BF16_AVX2_COMPARE_TWINS(X, T)                                                          \
    X(T, Equal) X(T, NotEqual) X(T, Less) X(T, LessEqual) X(T, Greater) X(T, GreaterEqual)
#define BF16_AVX512_BINARY_TWINS(X, T) BF16_AVX2_BINARY_TWINS(X, T)
#define BF16_AVX512_UNARY_TWINS(X, T)                                                          \
    X(T, Sqrt) X(T, Square) X(T, Cube) X(T, Reciprocal) X(T, Exp) X(T, Exp2) X(T, Expm1)        \
    X(T, Log) X(T, Log2) X(T, Log10) X(T, Log1p) X(T, Sinh) X(T, Cosh) X(T, Arctan) X(T, Cbrt) \
    X(T, Tanh) X(T, Sin) X(T, Cos) X(T, Tan) X(T, Floor) X(T, Ceil) X(T, Trunc) X(T, Rint)      \
    X(T, Sign)
#define BF16_AVX512_COMPARE_TWINS(X, T) BF16_AVX2_COMPARE_TWINS(X, T)

#define BF16_TWIN_TRAIT_(Trait, T, Op) template <> struct Trait<T, Op> : std::true_type {};
#define BF16_HAS_BINARY_(T, Op) BF16_TWIN_TRAIT_(HasBinaryTwin, T, Op)
#define BF16_HAS_UNARY_(T, Op) BF16_TWIN_TRAIT_(HasUnaryTwin, T, Op)
#define BF16_HAS_COMPARE_(T, Op) BF16_TWIN_TRAIT_(HasCompareTwin, T, Op)
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
BF16_AVX2_BINARY_TWINS(BF16_HAS_BINARY_, TierAvx2)
BF16_AVX2_UNARY_TWINS(BF16_HAS_UNARY_, TierAvx2)
BF16_AVX2_COMPARE_TWINS(BF16_HAS_COMPARE_, TierAvx2)
BF16_AVX512_BINARY_TWINS(BF16_HAS_BINARY_, TierAvx512)
BF16_AVX512_UNARY_TWINS(BF16_HAS_UNARY_, TierAvx512)
BF16_AVX512_COMPARE_TWINS(BF16_HAS_COMPARE_, TierAvx512)
/* arctan2's, power's and hypot's twins have no float32 block form: twin_binary and
 * twin_binary_scalar only */
BF16_HAS_BINARY_(TierAvx2, Arctan2)
BF16_HAS_BINARY_(TierAvx2, Power)
BF16_HAS_BINARY_(TierAvx2, Hypot)
BF16_HAS_BINARY_(TierAvx512, Arctan2)
BF16_HAS_BINARY_(TierAvx512, Power)
BF16_HAS_BINARY_(TierAvx512, Hypot)
#endif

/* Return the twin of the highest tier in force that has one (falls through when none). */
#define BF16_TRY_TWINS(Trait, fn, ...)                                                         \
    do {                                                                                       \
        if constexpr (Trait<TierAvx512, Op>::value) {                                          \
            if (loop_tier >= BF16_TIER_AVX512) return fn<TierAvx512, Op>(__VA_ARGS__);         \
        }                                                                                      \
        if constexpr (Trait<TierAvx2, Op>::value) {                                            \
            if (loop_tier >= BF16_TIER_AVX2) return fn<TierAvx2, Op>(__VA_ARGS__);             \
        }                                                                                      \
    } while (0)

/* The unary twin of the tier in force, if there is one: true and *ovf set, else false. */
template <class Op>
static bool unary_twin(const char *a, char *o, npy_intp n, int *ovf)
{
    if constexpr (HasUnaryTwin<TierAvx512, Op>::value) {
        if (loop_tier >= BF16_TIER_AVX512) {
            *ovf = twin_unary<TierAvx512, Op>(a, o, n);
            return true;
        }
    }
    if constexpr (HasUnaryTwin<TierAvx2, Op>::value) {
        if (loop_tier >= BF16_TIER_AVX2) {
            *ovf = twin_unary<TierAvx2, Op>(a, o, n);
            return true;
        }
    }
    return false;
}

/* ---- contiguous dispatch ----------------------------------------------------------------- */

template <class Op>
static int contiguous_binary(const char *a, const char *b, char *o, npy_intp n)
{
    if (!straddles(o, a, n) && !straddles(o, b, n)) {
        BF16_TRY_TWINS(HasBinaryTwin, twin_binary, a, b, o, n);
    }
    return binary_contig<Op>(a, b, o, n);
}

template <class Op>
static int contiguous_binary_scalar(const char *arr, bf16_t scalar, bool scalar_first, char *o,
                                    npy_intp n)
{
    if (!straddles(o, arr, n)) {
        BF16_TRY_TWINS(HasBinaryTwin, twin_binary_scalar, arr, scalar, scalar_first, o, n);
    }
    return binary_scalar_contig<Op>(arr, scalar, scalar_first, o, n);
}

template <class Op>
static void contiguous_compare(const char *a, const char *b, npy_bool *o, npy_intp n)
{
    BF16_TRY_TWINS(HasCompareTwin, twin_compare, a, b, o, n);
    compare_contig<Op>(a, b, o, n);
}

template <class Op>
static int contiguous_shadow_row(char *o, const char *b, float *v, npy_intp n)
{
    BF16_TRY_TWINS(HasBinaryTwin, twin_shadow_row, o, b, v, n);
    return shadow_row_contig<Op>(o, b, v, n);
}

/* ---- order kernels: integer-only, so the compiler may vectorise them ---------------------- */

/*
 * A bfloat16's order key: its bits as a signed 16-bit integer with the magnitude bits flipped
 * for negative values, so keys order as the values do (-0 just below +0, NaNs beyond +-inf).
 * Integer work raises no IEEE flag, so these loops vectorise freely; they raise "invalid" for a
 * signalling NaN themselves, as the float comparisons of the functors do. Checked against the
 * strided (functor) loops, float16 and float32 by tests/umath_tier_checks.py at every tier.
 */
static inline int16_t order_key(bf16_t h)
{
    return (int16_t)(uint16_t)(h ^ ((uint16_t)(0u - (unsigned)(h >> 15)) & 0x7fffu));
}
static inline bf16_t from_order_key(int16_t k) { return (bf16_t)order_key((bf16_t)k); }
/* 0xffff for a NaN, else 0 (written as masks: the compiler vectorises these loops only so) */
static inline uint16_t nan_mask(bf16_t h) { return (uint16_t)(0u - (unsigned)((h & 0x7fffu) > 0x7f80u)); }
/* the key with -0 taken as +0 (the two compare equal) */
static inline int16_t value_key(bf16_t h) { return order_key(h == 0x8000u ? (bf16_t)0 : h); }
static inline bool is_nan_bits(bf16_t h) { return (h & 0x7fffu) > 0x7f80u; }
static inline bool is_snan_bits(bf16_t h) { return is_nan_bits(h) && (h & 0x0040u) == 0; }

template <class Op> struct MinMax : std::false_type {};
template <> struct MinMax<Maximum> : std::true_type {
    static constexpr bool is_max = true, propagates_nan = true;
};
template <> struct MinMax<Minimum> : std::true_type {
    static constexpr bool is_max = false, propagates_nan = true;
};
template <> struct MinMax<Fmax> : std::true_type {
    static constexpr bool is_max = true, propagates_nan = false;
};
template <> struct MinMax<Fmin> : std::true_type {
    static constexpr bool is_max = false, propagates_nan = false;
};

template <class Op> struct Ordering : std::false_type {};
#define BF16_ORDERING_(Op, expr)                                                               \
    template <> struct Ordering<Op> : std::true_type {                                        \
        static bool f(int16_t a, int16_t b) { return expr; }                                   \
    };
BF16_ORDERING_(Equal, a == b)
BF16_ORDERING_(NotEqual, a != b)
BF16_ORDERING_(Less, a < b)
BF16_ORDERING_(LessEqual, a <= b)
BF16_ORDERING_(Greater, a > b)
BF16_ORDERING_(GreaterEqual, a >= b)
#undef BF16_ORDERING_

/* logical_and/or/xor on "is nonzero" (NaN is nonzero), as 0/1 integers */
template <class Op> struct LogicalBits : std::false_type {};
#define BF16_LOGICAL_(Op, expr)                                                                \
    template <> struct LogicalBits<Op> : std::true_type {                                     \
        static uint16_t f(uint16_t x, uint16_t y) { return expr; }                             \
    };
BF16_LOGICAL_(LogicalAnd, x & y)
BF16_LOGICAL_(LogicalOr, x | y)
BF16_LOGICAL_(LogicalXor, x ^ y)
#undef BF16_LOGICAL_

/* The scans of minmax_reduce and clip: umath/order_scan.h, compiled once per tier
 * (loops_<tier>.cpp includes it through order_twins.h, under its target options) and portably
 * here, where compare_scalar_contig uses its compare_keys at the baseline tier. */
namespace portable_order {
#include "umath/order_scan.h"
}

template <class Tier, bool IsMax>
void twin_minmax_scan(const char *in, npy_intp n, int16_t *best, uint16_t *any_nan,
                      uint16_t *any_snan);
template <class Tier> void twin_clip_keys(const char *x, bf16_t lo, bf16_t hi, char *o, npy_intp n);
template <class Tier>
void twin_clip_keys_runs(const char *x, const char *lo, const char *hi, char *o, npy_intp n);
template <class Tier, bool IsMax, bool Propagates, int Scalar>
uint16_t twin_minmax_pairs(const char *a, const char *b, char *o, npy_intp n);
template <class Tier, class Op> void twin_predicate(const char *in, npy_bool *o, npy_intp n);
template <class Tier> void twin_copysign(const char *a, const char *b, char *o, npy_intp n);
template <class Tier> uint16_t twin_heaviside(const char *a, const char *b, char *o, npy_intp n);
template <class Tier, class Op>
uint16_t twin_logical(const char *a, const char *b, npy_bool *o, npy_intp n);
#define BF16_LOGICALS(X) X(LogicalAnd) X(LogicalOr) X(LogicalXor)
/* the functors of predicate_loop, each with a twin in every tier */
#define BF16_PREDICATES(X) X(Isnan) X(Isinf) X(Isfinite) X(Signbit) X(LogicalNot)

/* Return twin<Tier MORE>(args) for the tier in force, else portable(args); `more` is a
 * parenthesised tail of template arguments, e.g. (, IsMax), or (). */
#define BF16_UNPAREN_(...) __VA_ARGS__
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define BF16_ORDER_DISPATCH(twin, more, portable, ...)                                         \
    do {                                                                                       \
        if (loop_tier >= BF16_TIER_AVX512) return twin<TierAvx512 BF16_UNPAREN_ more>(__VA_ARGS__); \
        if (loop_tier >= BF16_TIER_AVX2) return twin<TierAvx2 BF16_UNPAREN_ more>(__VA_ARGS__); \
        return portable(__VA_ARGS__);                                                          \
    } while (0)
#else
#define BF16_ORDER_DISPATCH(twin, more, portable, ...) return portable(__VA_ARGS__)
#endif

template <bool IsMax>
static void minmax_scan(const char *in, npy_intp n, int16_t *best, uint16_t *any_nan,
                        uint16_t *any_snan)
{
    BF16_ORDER_DISPATCH(twin_minmax_scan, (, IsMax), portable_order::minmax_scan<IsMax>, in, n,
                        best, any_nan, any_snan);
}

template <class Op, int Scalar>
static uint16_t minmax_pairs(const char *a, const char *b, char *o, npy_intp n)
{
    constexpr bool is_max = MinMax<Op>::is_max, propagates = MinMax<Op>::propagates_nan;
    BF16_ORDER_DISPATCH(twin_minmax_pairs, (, is_max, propagates, Scalar),
                        (portable_order::minmax_pairs<is_max, propagates, Scalar>), a, b, o, n);
}

static inline void clip_keys(const char *x, bf16_t lo, bf16_t hi, char *o, npy_intp n)
{
    BF16_ORDER_DISPATCH(twin_clip_keys, (), portable_order::clip_keys, x, lo, hi, o, n);
}

static inline void clip_keys_runs(const char *x, const char *lo, const char *hi, char *o, npy_intp n)
{
    BF16_ORDER_DISPATCH(twin_clip_keys_runs, (), portable_order::clip_keys_runs, x, lo, hi, o, n);
}

template <class Op>
static void predicate_contig(const char *in, npy_bool *o, npy_intp n)
{
    BF16_ORDER_DISPATCH(twin_predicate, (, Op), portable_order::predicate_scan<Op>, in, o, n);
}

static inline void copysign_contig(const char *a, const char *b, char *o, npy_intp n)
{
    BF16_ORDER_DISPATCH(twin_copysign, (), portable_order::copysign_scan, a, b, o, n);
}

static inline uint16_t heaviside_scan(const char *a, const char *b, char *o, npy_intp n)
{
    BF16_ORDER_DISPATCH(twin_heaviside, (), portable_order::heaviside_scan, a, b, o, n);
}

/* heaviside of contiguous runs, integer-only: the float functor's branches mispredicted half
 * the time on random signs (README, "Speed: how the loops are built") */
static inline void heaviside_contig(const char *a, const char *b, char *o, npy_intp n)
{
    if (heaviside_scan(a, b, o, n)) {
        std::feraiseexcept(FE_INVALID);
    }
}

template <class Op>
static uint16_t logical_scan(const char *a, const char *b, npy_bool *o, npy_intp n)
{
    BF16_ORDER_DISPATCH(twin_logical, (, Op), portable_order::logical_scan<Op>, a, b, o, n);
}

/* logical_and/or/xor of contiguous runs: the functors' results, and their "invalid" for a
 * signalling NaN in either operand (their float compares with zero raise it for both) */
template <class Op>
static void logical_contig(const char *a, const char *b, npy_bool *o, npy_intp n)
{
    if (logical_scan<Op>(a, b, o, n)) {
        bf16_raise_invalid();
    }
}

/*
 * `*io = Op(...Op(Op(*io, in[0]), in[1])..., in[n-1])` for maximum/minimum/fmax/fmin over a
 * contiguous run (the inner loop of a reduction), with the sequential loop's result bits: the
 * functors keep the accumulated value on ties, so the result is the first element equal to the
 * extreme (which decides the sign of a zero); maximum/minimum stop at the first NaN, fmax/fmin
 * skip NaNs; a NaN result is quiet, as the rounded store makes it.
 */
template <class Op>
static void minmax_reduce(char *io, const char *in, npy_intp n)
{
    constexpr bool is_max = MinMax<Op>::is_max, propagates = MinMax<Op>::propagates_nan;
    constexpr int16_t none = is_max ? INT16_MIN : INT16_MAX; /* no bfloat16 number has it */
    if (n <= 0) {
        return;
    }
    int16_t best;
    uint16_t any_nan, any_snan;
    minmax_scan<is_max>(in, n, &best, &any_nan, &any_snan);
    bf16_t h0 = ld(io);
    if (any_snan || is_snan_bits(h0)) {
        bf16_raise_invalid();
    }
    bf16_t r = h0;
    if (propagates && is_nan_bits(h0)) {
        r = h0;
    }
    else if (propagates && any_nan) {
        npy_intp i = 0;
        while (!is_nan_bits(ld(in + 2 * i))) i++;
        r = ld(in + 2 * i);
    }
    else if (best != none) {
        /* the accumulated value stays on a tie; else the first element equal to the extreme */
        bool keep = !is_nan_bits(h0) &&
                    (is_max ? value_key(h0) >= value_key(from_order_key(best))
                            : value_key(h0) <= value_key(from_order_key(best)));
        if (!keep) {
            r = from_order_key(best);
            if ((r & 0x7fffu) == 0) { /* +-0: the first zero decides the sign */
                npy_intp i = 0;
                while ((ld(in + 2 * i) & 0x7fffu) != 0) i++;
                r = ld(in + 2 * i);
            }
        }
    }
    st(io, is_nan_bits(r) ? (bf16_t)(r | 0x0040u) : r);
}


/* A comparison of a contiguous run with one bfloat16 (`scalar_first`: the scalar is the left
 * operand). A NaN on either side compares unordered: false, true for !=. */
template <class Op>
static void compare_scalar_contig(const char *arr, bf16_t scalar, bool scalar_first, npy_bool *o,
                                  npy_intp n)
{
    BF16_TRY_TWINS(HasCompareTwin, twin_compare_scalar, arr, scalar, scalar_first, o, n);
    constexpr bool unordered = std::is_same<Op, NotEqual>::value; /* what a NaN operand gives */
    uint16_t any_snan = 0;
    if (is_nan_bits(scalar)) {
        for (npy_intp i = 0; i < n; i++) {
            bf16_t h;
            memcpy(&h, arr + 2 * i, 2);
            any_snan |= (unsigned)is_snan_bits(h);
            o[i] = unordered;
        }
        any_snan |= (unsigned)(is_snan_bits(scalar) && n > 0);
    }
    else {
        /* (the tiers' float32 compares return above) */
        any_snan = portable_order::compare_keys<Op>(arr, value_key(scalar), scalar_first, o, n);
    }
    if (any_snan) {
        bf16_raise_invalid();
    }
}

/* ---- strided adapters (legacy inner-loop signature) -------------------------------------- */

/*
 * Strided calls of the functors whose contiguous loops are fast at every tier (arithmetic,
 * maximum/minimum/fmax/fmin, comparisons, logical_and/or/xor) run on blocks gathered into
 * contiguous buffers, then the contiguous loop, then a scatter of the results: a[::2] + b[::2]
 * took 1.9 ns per element in the scalar loop, 7x float32 (AMD EPYC Zen 5; benchmarks/
 * bench_elementwise.py, "stride 2" rows). A block reads all its inputs before it writes, so an
 * input may share memory with the output only element for element (the same address and
 * stride, as a reduction over an outer axis passes it); otherwise (the inner loop of a
 * reduction or accumulate) the scalar loop runs. Checked against that loop in every layout by
 * tests/umath_tier_checks.py::test_strided_binary_loops_match_the_scalar_loop.
 */
const npy_intp STRIDED_BLOCK = 512;

template <class Op> struct Buffered
    : std::integral_constant<bool, BlockArith<Op>::value || MinMax<Op>::value ||
                                       Ordering<Op>::value || LogicalBits<Op>::value> {};

/* whether the loop may read a block of `in` before writing the block of `o` */
static inline bool blockwise_safe(const char *o, npy_intp so, npy_intp osize, const char *in,
                                  npy_intp si, npy_intp n)
{
    if (so == 0) {
        return false; /* one output element, written n times */
    }
    uintptr_t op = (uintptr_t)o, ip = (uintptr_t)in;
    if (op == ip && so == si) {
        return true;
    }
    uintptr_t olo = so > 0 ? op : op + (uintptr_t)((n - 1) * so);
    uintptr_t ohi = (so > 0 ? op + (uintptr_t)((n - 1) * so) : op) + (uintptr_t)osize;
    uintptr_t ilo = si >= 0 ? ip : ip + (uintptr_t)((n - 1) * si);
    uintptr_t ihi = (si >= 0 ? ip + (uintptr_t)((n - 1) * si) : ip) + 2;
    return ohi <= ilo || ihi <= olo;
}

static inline void gather16(bf16_t *dst, const char *src, npy_intp stride, npy_intp m)
{
    if (stride == 4) {
        /* every other element (a[::2], x[:, 0] of n x 2), read in place: the compiler vectorises
         * it. A copy into a stack buffer first made a[::2] + b[::2] take 7.5-24 ms for 2^24
         * elements depending on the process (the buffer's offset from the source modulo 4 KiB,
         * which stack randomisation sets) and 33-43 us for 10^5; now 5.0-5.4 ms and 24.5 us
         * (float32 11 ms, 33 us; AMD EPYC Zen 5) */
        for (npy_intp i = 0; i < m; i++) memcpy(dst + i, src + 4 * i, 2);
        return;
    }
    for (npy_intp i = 0; i < m; i++) memcpy(dst + i, src + i * stride, 2);
}

template <class Out> static inline void scatter(char *dst, npy_intp stride, const Out *src, npy_intp m)
{
    for (npy_intp i = 0; i < m; i++) memcpy(dst + i * stride, src + i, sizeof(Out));
}

/* The blocks of a strided binary_loop/compare_loop call (Out: bf16_t or npy_bool); returns
 * whether a finite result rounded to inf. One operand may have stride 0 (a broadcast value). */
template <class Op, class Out>
static int strided_blocks(const char *a, npy_intp sa, const char *b, npy_intp sb, char *o,
                          npy_intp so, npy_intp n)
{
    bf16_t xa[STRIDED_BLOCK], xb[STRIDED_BLOCK];
    Out xo[STRIDED_BLOCK];
    int ovf = 0;
    uint16_t snan = 0;
    for (npy_intp i0 = 0; i0 < n; i0 += STRIDED_BLOCK) {
        npy_intp m = n - i0 < STRIDED_BLOCK ? n - i0 : STRIDED_BLOCK;
        if (sa != 0) gather16(xa, a + i0 * sa, sa, m);
        if (sb != 0) gather16(xb, b + i0 * sb, sb, m);
        const char *pa = (const char *)xa, *pb = (const char *)xb;
        bool direct = so == (npy_intp)sizeof(Out); /* contiguous output: no scatter */
        char *po = direct ? o + i0 * so : (char *)xo;
        if constexpr (MinMax<Op>::value) {
            snan |= sa == 0   ? minmax_pairs<Op, 1>(a, pb, po, m)
                    : sb == 0 ? minmax_pairs<Op, 2>(pa, b, po, m)
                              : minmax_pairs<Op, 0>(pa, pb, po, m);
        }
        else if constexpr (LogicalBits<Op>::value) {
            bf16_t k[STRIDED_BLOCK]; /* the broadcast value, repeated */
            if (sa == 0 || sb == 0) {
                bf16_t v = ld(sa == 0 ? a : b);
                for (npy_intp i = 0; i < m; i++) k[i] = v;
            }
            logical_contig<Op>(sa == 0 ? (const char *)k : pa, sb == 0 ? (const char *)k : pb,
                               (npy_bool *)po, m);
        }
        else if constexpr (Ordering<Op>::value) {
            if (sa == 0 || sb == 0) {
                compare_scalar_contig<Op>(sa == 0 ? pb : pa, ld(sa == 0 ? a : b), sa == 0,
                                          (npy_bool *)po, m);
            }
            else {
                contiguous_compare<Op>(pa, pb, (npy_bool *)po, m);
            }
        }
        else if (sa == 0 || sb == 0) {
            ovf |= contiguous_binary_scalar<Op>(sa == 0 ? pb : pa, ld(sa == 0 ? a : b), sa == 0,
                                                po, m);
        }
        else {
            ovf |= contiguous_binary<Op>(pa, pb, po, m);
        }
        if (!direct) scatter(o + i0 * so, so, xo, m);
    }
    if (snan) {
        bf16_raise_invalid();
    }
    return ovf;
}

/* true when a strided call of Op went through strided_blocks (*ovf set) */
template <class Op, class Out>
static bool try_strided_blocks(const char *a, npy_intp sa, const char *b, npy_intp sb, char *o,
                               npy_intp so, npy_intp n, int *ovf)
{
    if constexpr (Buffered<Op>::value) {
        if (n >= 16 && !(sa == 0 && sb == 0) &&
            blockwise_safe(o, so, sizeof(Out), a, sa, n) && blockwise_safe(o, so, sizeof(Out), b, sb, n)) {
            *ovf = strided_blocks<Op, Out>(a, sa, b, sb, o, so, n);
            return true;
        }
    }
    return false;
}

/* ---- the binary twins' shared steps (arctan2, power: loops_avx2.cpp, loops_avx512.cpp) ----- */

/* One block's results (`lanes` bfloat16 in `res`), the lanes in `redo` recomputed by the
 * functor first, then stored: after the functor has read the inputs, as the output may be one of
 * them. `a_bcast`/`b_bcast`: that operand is one value. Returns the overflow flag. */
template <class Op>
static inline int twin_store_block(char *res, int lanes, unsigned redo, const char *a, bool a_bcast,
                                   const char *b, bool b_bcast, npy_intp i, char *o)
{
    int ovf = 0;
    for (; redo != 0; redo &= redo - 1) {
        int lane = __builtin_ctz(redo);
        npy_intp j = i + lane;
        store_rounded(res + 2 * lane, Op::f(bf16_to_f32(ld(a + (a_bcast ? 0 : 2 * j))),
                                            bf16_to_f32(ld(b + (b_bcast ? 0 : 2 * j)))), &ovf);
    }
    memcpy(o + 2 * i, res, 2 * (size_t)lanes);
    return ovf;
}

/* A twin's run (`run(a, a_bcast, b, b_bcast, o, n)`) with one operand a single value. */
template <class Run>
static inline int twin_run_scalar(Run run, const char *arr, bf16_t scalar, bool scalar_first,
                                  char *o, npy_intp n)
{
    char s[2];
    memcpy(s, &scalar, 2);
    return scalar_first ? run(s, true, arr, false, o, n) : run(arr, false, s, true, o, n);
}

/* The elements from `i` on, by the portable loops. */
template <class Op>
static inline int twin_tail(const char *a, bool a_bcast, const char *b, bool b_bcast, char *o,
                            npy_intp i, npy_intp n)
{
    if (i == n) return 0;
    if (a_bcast) return binary_scalar_contig<Op>(b + 2 * i, ld(a), true, o + 2 * i, n - i);
    if (b_bcast) return binary_scalar_contig<Op>(a + 2 * i, ld(b), false, o + 2 * i, n - i);
    return binary_contig<Op>(a + 2 * i, b + 2 * i, o + 2 * i, n - i);
}

template <class Op> static void unary_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *);

/* The largest magnitude among n bfloat16 at p (byte stride sp), as bits: 0x7F80 is inf, above
 * it a NaN. Signed 16-bit lanes, which SSE2 compares: the contiguous loop vectorises. */
static inline int16_t largest_magnitude_bits(const char *p, npy_intp sp, npy_intp n)
{
    int16_t top = 0;
    if (sp == 2) {
        for (npy_intp i = 0; i < n; i++) {
            int16_t m = (int16_t)(ld(p + 2 * i) & 0x7fff);
            top = m > top ? m : top;
        }
        return top;
    }
    for (npy_intp i = 0; i < n; i++) {
        int16_t m = (int16_t)(ld(p + i * sp) & 0x7fff);
        top = m > top ? m : top;
    }
    return top;
}

/*
 * x ** 2.0, x ** -1.0 and x ** 0.5 with one exponent for the whole call: NumPy turns these into
 * square, reciprocal and sqrt for its own floats (fast_scalar_power), not for a user dtype, and
 * powf took 6 ns an element where the unary loops take a few tenths. x * x and 1 / x in float32
 * round to bfloat16 as powf's result does, sqrt too but at -0 and -inf (pow gives +0 and +inf);
 * x ** 3.0 (GELU's cube) as x * x * x, exact in float32 but where it over- or underflows, and
 * there too the bits and flags of powf's result (10^5 elements 184 -> 11.5 us, NumPy's float32
 * power 115; AMD EPYC Zen 5);
 * a call with those or a NaN (whose sign and payload are powf's choice) keeps powf; bits and
 * IEEE flags are checked against the strided powf loop for every bfloat16
 * (tests/test_ufuncs.py::test_power_by_two_half_and_minus_one_like_powf).
 */
static inline bool power_by_unary(const char *a, bf16_t e, char *o, npy_intp n)
{
    char *args[2] = {const_cast<char *>(a), o};
    npy_intp steps[2] = {2, 2};
    if (e != 0x4000 && e != 0xBF80 && e != 0x3F00 && e != 0x4040) { /* 2.0, -1.0, 0.5, 3.0 */
        return false;
    }
    /* a NaN (powf's NaN is not the unary loops' one) or, for 0.5, -0 or -inf: powf. Passes
     * without branches, which the compiler vectorises (an early exit made it 8x the square) */
    int16_t top = largest_magnitude_bits(a, 2, n); /* above 0x7f80: a NaN */
    uint16_t negative_edge = 0;
    for (npy_intp i = 0; e == 0x3F00 && i < n; i++) {
        bf16_t x = ld(a + 2 * i);
        negative_edge |= (uint16_t)((x == 0x8000) | (x == 0xFF80));
    }
    if (top > 0x7f80 || negative_edge) {
        return false;
    }
    if (e == 0x4000) {
        unary_loop<bf16ops::Square>(args, &n, steps, nullptr);
    }
    else if (e == 0xBF80) {
        unary_loop<bf16ops::Reciprocal>(args, &n, steps, nullptr);
    }
    else if (e == 0x4040) {
        unary_loop<bf16ops::Cube>(args, &n, steps, nullptr);
    }
    else {
        unary_loop<bf16ops::Sqrt>(args, &n, steps, nullptr);
    }
    return true;
}

template <class Op>
static void binary_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *)
{
    npy_intp n = dims[0];
    char *a = args[0], *b = args[1], *o = args[2];
    npy_intp sa = steps[0], sb = steps[1], so = steps[2];
    int ovf = 0;
    if constexpr (MinMax<Op>::value) {
        /* contiguous runs, or a run and a scalar: on the bits (minmax_pairs), no float32 */
        if (so == 2 && (sa == 2 || sa == 0) && (sb == 2 || sb == 0) && !(sa == 0 && sb == 0) &&
            !straddles(o, a, sa ? n : 1) && !straddles(o, b, sb ? n : 1)) {
            uint16_t snan = sa == 0   ? minmax_pairs<Op, 1>(a, b, o, n)
                            : sb == 0 ? minmax_pairs<Op, 2>(a, b, o, n)
                                      : minmax_pairs<Op, 0>(a, b, o, n);
            if (snan) {
                bf16_raise_invalid();
            }
            return;
        }
    }
    if constexpr (std::is_same<Op, bf16ops::Power>::value) {
        if (so == 2 && sa == 2 && sb == 0 && !straddles(o, a, n) && power_by_unary(a, ld(b), o, n)) {
            return;
        }
    }
    if (so == 2 && sa == 2 && sb == 2) {
        ovf = contiguous_binary<Op>(a, b, o, n);
    }
    else if (so == 2 && sa == 2 && sb == 0) {
        ovf = contiguous_binary_scalar<Op>(a, ld(b), false, o, n);
    }
    else if (so == 2 && sa == 0 && sb == 2) {
        ovf = contiguous_binary_scalar<Op>(b, ld(a), true, o, n);
    }
    else if constexpr (MinMax<Op>::value) {
        if (sa == 0 && so == 0 && a == o && sb == 2) { /* the inner loop of a reduction */
            minmax_reduce<Op>(o, b, n);
            return;
        }
        if (try_strided_blocks<Op, bf16_t>(a, sa, b, sb, o, so, n, &ovf)) {
            return; /* (minmax_pairs round nothing) */
        }
        for (npy_intp i = 0; i < n; i++, a += sa, b += sb, o += so) {
            store_rounded(o, Op::f(bf16_to_f32(ld(a)), bf16_to_f32(ld(b))), &ovf);
        }
    }
    else if (!try_strided_blocks<Op, bf16_t>(a, sa, b, sb, o, so, n, &ovf)) {
        for (npy_intp i = 0; i < n; i++, a += sa, b += sb, o += so) {
            store_rounded(o, Op::f(bf16_to_f32(ld(a)), bf16_to_f32(ld(b))), &ovf);
        }
    }
    report_overflow(ovf);
}

template <class Op>
static void binary_bits_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *)
{
    char *a = args[0], *b = args[1], *o = args[2];
    npy_intp n = dims[0];
    if constexpr (std::is_same<Op, Copysign>::value) {
        if (steps[0] == 2 && steps[1] == 2 && steps[2] == 2) {
            copysign_contig(a, b, o, n);
            return;
        }
    }
    if constexpr (std::is_same<Op, Heaviside>::value) {
        if (steps[0] == 2 && steps[1] == 2 && steps[2] == 2) {
            heaviside_contig(a, b, o, n);
            return;
        }
        if (steps[0] == 2 && steps[1] == 0 && steps[2] == 2) { /* np.heaviside(x, 0.5) */
            bf16_t h0[512];
            bf16_t v = ld(b);
            for (int j = 0; j < 512; j++) h0[j] = v;
            for (npy_intp i = 0; i < n; i += 512) {
                heaviside_contig(a + 2 * i, (const char *)h0, o + 2 * i, n - i < 512 ? n - i : 512);
            }
            return;
        }
    }
    for (npy_intp i = 0; i < n; i++, a += steps[0], b += steps[1], o += steps[2]) {
        st(o, Op::bits(ld(a), ld(b)));
    }
}

template <class Op>
static void compare_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *)
{
    npy_intp n = dims[0];
    char *a = args[0], *b = args[1], *o = args[2];
    if (steps[0] == 2 && steps[1] == 2 && steps[2] == 1) {
        if constexpr (LogicalBits<Op>::value) {
            logical_contig<Op>(a, b, (npy_bool *)o, n);
        }
        else {
            contiguous_compare<Op>(a, b, (npy_bool *)o, n);
        }
        return;
    }
    if constexpr (Ordering<Op>::value) {
        if (steps[2] == 1 && ((steps[0] == 2 && steps[1] == 0) || (steps[0] == 0 && steps[1] == 2))) {
            bool scalar_first = steps[0] == 0;
            compare_scalar_contig<Op>(scalar_first ? b : a, ld(scalar_first ? a : b), scalar_first,
                                      (npy_bool *)o, n);
            return;
        }
    }
    int unused;
    if (try_strided_blocks<Op, npy_bool>(a, steps[0], b, steps[1], o, steps[2], n, &unused)) {
        return;
    }
    for (npy_intp i = 0; i < n; i++, a += steps[0], b += steps[1], o += steps[2]) {
        *(npy_bool *)o = Op::f(bf16_to_f32(ld(a)), bf16_to_f32(ld(b)));
    }
}

/* Contiguous calls go to the tier's twin where it has one; other calls of 64 elements or more
 * read their results from the function's 65,536-entry table once it exists. It is built by the
 * first call of at least 32,768 elements, or by the call that brings the elements computed
 * directly (in calls of 64 or more) to UNARY_TABLE_BUILD_AFTER (unary_table.h). */
template <class Op>
static void unary_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *)
{
    npy_intp n = dims[0];
    char *a = args[0], *o = args[1];
    int ovf = 0;
    bool contiguous = steps[0] == 2 && steps[1] == 2;
    if (contiguous && !straddles(o, a, n) && unary_twin<Op>(a, o, n, &ovf)) {
        report_overflow(ovf);
        return;
    }
    const UnaryTable *table = n >= 64 ? unary_table_for_call<Op>(n) : nullptr;
    if (table != nullptr) {
        unary_table_apply(table, a, steps[0], o, steps[1], n);
        return;
    }
    if (contiguous) {
        ovf = unary_contig<Op>(a, o, n);
    }
    else {
        for (npy_intp i = 0; i < n; i++, a += steps[0], o += steps[1]) {
            store_rounded(o, Op::f(bf16_to_f32(ld(a))), &ovf);
        }
    }
    report_overflow(ovf);
}

template <class Op>
static void unary_bits_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *)
{
    char *a = args[0], *o = args[1];
    if (steps[0] == 2 && steps[1] == 2) {
        unary_bits_contig<Op>(a, o, dims[0]);
        return;
    }
    for (npy_intp i = 0; i < dims[0]; i++, a += steps[0], o += steps[1]) {
        st(o, Op::bits(ld(a)));
    }
}

template <class Op>
static void predicate_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *)
{
    char *a = args[0], *o = args[1];
    npy_intp n = dims[0]; /* read once: the stores could alias dims[0] for the compiler */
    if (steps[0] == 2 && steps[1] == 1) {
        predicate_contig<Op>(a, (npy_bool *)o, n);
        return;
    }
    for (npy_intp i = 0; i < n; i++, a += steps[0], o += steps[1]) {
        *(npy_bool *)o = Op::f(ld(a));
    }
}

} /* namespace umath */

#endif
