/*
 * ufuncs.cpp - bfloat16 loops for numpy's float ufuncs, the promoters that give mixed
 * operands and Python scalars their result type, and float32-accumulating add/multiply.
 *
 * Every ufunc is a functor in ufunc_ops.h; one adapter per loop shape turns a functor into a
 * strided inner loop, and the registration table below says which ufunc gets which functor.
 */
#include "module.h"
#include "kernels.h"
#include "ufunc_ops.h"
#include "cpu.h"

#include <algorithm>
#include <atomic>
#include <type_traits>
#include <cfenv>
#include <cstdlib>
#include <vector>

using namespace bf16ops;

/* ---- contiguous kernels, compiled for the baseline ISA and for AVX2 -------------------- */
namespace kbase {
#include "ufunc_kernels.inc"
}
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define BF16_HAVE_AVX2_BUILD 1
#include <immintrin.h>
#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace kavx2 {
#include "ufunc_kernels.inc"

/*
 * Hand-vectorised loop for the arithmetic that dominates elementwise work (+ - * /): the
 * compiler's version of the generic loop runs at ~1.4 G elements/s, below memory speed.
 * Same rounding rule as bf16_round_bits_rne, spelled in 8-lane integer ops.
 */
static inline __m256 widen8(const char *p)
{
    __m128i h = _mm_loadu_si128((const __m128i *)p);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

static inline __m128i narrow8(__m256 f, __m256i *ovf)
{
    const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7fff);
    const __m256i absmask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    const __m256i quiet = _mm256_set1_epi32(0x40), hinf = _mm256_set1_epi32(0x7f80);
    const __m256i habs = _mm256_set1_epi32(0x7fff);
    __m256i u = _mm256_castps_si256(f);
    __m256i hi = _mm256_srli_epi32(u, 16);
    __m256i r = _mm256_srli_epi32(
            _mm256_add_epi32(_mm256_add_epi32(u, bias), _mm256_and_si256(hi, one)), 16);
    __m256i absu = _mm256_and_si256(u, absmask);
    __m256i is_nan = _mm256_cmpgt_epi32(absu, inf);
    r = _mm256_blendv_epi8(r, _mm256_or_si256(hi, quiet), is_nan);
    __m256i became_inf = _mm256_cmpeq_epi32(_mm256_and_si256(r, habs), hinf);
    __m256i was_finite = _mm256_cmpgt_epi32(inf, absu);
    *ovf = _mm256_or_si256(*ovf, _mm256_and_si256(became_inf, was_finite));
    __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0xD8);
    return _mm256_castsi256_si128(packed);
}

/*
 * Large outputs (>= 4 MiB, 16-byte aligned) are written with non-temporal stores: they skip
 * the read-for-ownership of each output line, a third of the traffic of a + b.
 */
static inline bool streaming_output(const char *o, npy_intp n)
{
    return n >= ((npy_intp)1 << 21) && ((uintptr_t)o & 15) == 0;
}

struct VAdd { static __m256 v(__m256 a, __m256 b) { return _mm256_add_ps(a, b); } };
struct VSub { static __m256 v(__m256 a, __m256 b) { return _mm256_sub_ps(a, b); } };
struct VMul { static __m256 v(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); } };
struct VDiv { static __m256 v(__m256 a, __m256 b) { return _mm256_div_ps(a, b); } };

template <class V, class Op>
static int binary_simd(const char *a, const char *b, char *o, npy_intp n)
{
    __m256i ovf = _mm256_setzero_si256();
    npy_intp i = 0;
    if (streaming_output(o, n)) {
        for (; i + 16 <= n; i += 16) {
            __m128i r0 = narrow8(V::v(widen8(a + 2 * i), widen8(b + 2 * i)), &ovf);
            __m128i r1 = narrow8(V::v(widen8(a + 2 * i + 16), widen8(b + 2 * i + 16)), &ovf);
            _mm_stream_si128((__m128i *)(o + 2 * i), r0);
            _mm_stream_si128((__m128i *)(o + 2 * i + 16), r1);
        }
        _mm_sfence();
    }
    for (; i + 16 <= n; i += 16) {
        __m128i r0 = narrow8(V::v(widen8(a + 2 * i), widen8(b + 2 * i)), &ovf);
        __m128i r1 = narrow8(V::v(widen8(a + 2 * i + 16), widen8(b + 2 * i + 16)), &ovf);
        _mm_storeu_si128((__m128i *)(o + 2 * i), r0);
        _mm_storeu_si128((__m128i *)(o + 2 * i + 16), r1);
    }
    int tail = binary_contig<Op>(a + 2 * i, b + 2 * i, o + 2 * i, n - i);
    return tail | !_mm256_testz_si256(ovf, ovf);
}

/* one operand is a scalar (x * 0.5): `scalar_first` says which side it is on */
template <class V, class Op>
static int binary_simd_scalar(const char *arr, bf16_t scalar, bool scalar_first, char *o,
                              npy_intp n)
{
    __m256 s = _mm256_set1_ps(bf16_to_f32(scalar));
    __m256i ovf = _mm256_setzero_si256();
    npy_intp i = 0;
    bool stream = streaming_output(o, n);
    for (; i + 16 <= n; i += 16) {
        __m256 x0 = widen8(arr + 2 * i), x1 = widen8(arr + 2 * i + 16);
        __m128i r0 = narrow8(scalar_first ? V::v(s, x0) : V::v(x0, s), &ovf);
        __m128i r1 = narrow8(scalar_first ? V::v(s, x1) : V::v(x1, s), &ovf);
        if (stream) {
            _mm_stream_si128((__m128i *)(o + 2 * i), r0);
            _mm_stream_si128((__m128i *)(o + 2 * i + 16), r1);
        }
        else {
            _mm_storeu_si128((__m128i *)(o + 2 * i), r0);
            _mm_storeu_si128((__m128i *)(o + 2 * i + 16), r1);
        }
    }
    if (stream) {
        _mm_sfence();
    }
    int tail = scalar_first ? binary_contig_scalar1<Op>(scalar, arr + 2 * i, o + 2 * i, n - i)
                            : binary_contig_scalar2<Op>(arr + 2 * i, scalar, o + 2 * i, n - i);
    return tail | !_mm256_testz_si256(ovf, ovf);
}

/* One slice of an outer-axis reduction (out == in1, contiguous) against its float32 shadow v:
 * the shadow value is used where the stored bfloat16 is still its rounding. */
template <class V, class Op>
static int shadow_row_simd(char *o, const char *b, float *v, npy_intp n)
{
    __m256i ovf = _mm256_setzero_si256(), ignored = _mm256_setzero_si256();
    npy_intp i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i stored = _mm_loadu_si128((const __m128i *)(o + 2 * i));
        __m256 sv = _mm256_loadu_ps(v + i);
        __m128i same = _mm_cmpeq_epi16(narrow8(sv, &ignored), stored);
        __m256 keep = _mm256_castsi256_ps(_mm256_cvtepi16_epi32(same));
        __m256 cur = _mm256_blendv_ps(widen8(o + 2 * i), sv, keep);
        __m256 r = V::v(cur, widen8(b + 2 * i));
        _mm_storeu_si128((__m128i *)(o + 2 * i), narrow8(r, &ovf));
        _mm256_storeu_ps(v + i, r);
    }
    int tail = shadow_row_contig<Op>(o + 2 * i, b + 2 * i, v + i, n - i);
    return tail | !_mm256_testz_si256(ovf, ovf);
}

struct VSqrt { static __m256 v(__m256 a) { return _mm256_sqrt_ps(a); } };
struct VSquare { static __m256 v(__m256 a) { return _mm256_mul_ps(a, a); } };

template <class V, class Op>
static int unary_simd(const char *a, char *o, npy_intp n)
{
    __m256i ovf = _mm256_setzero_si256();
    npy_intp i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm_storeu_si128((__m128i *)(o + 2 * i), narrow8(V::v(widen8(a + 2 * i)), &ovf));
    }
    int tail = unary_contig<Op>(a + 2 * i, o + 2 * i, n - i);
    return tail | !_mm256_testz_si256(ovf, ovf);
}
}
#pragma GCC pop_options
#endif

static bool use_avx2 = false; /* decided once at import, read-only afterwards */

#ifdef BF16_HAVE_AVX2_BUILD
#define DISPATCH(call) (use_avx2 ? kavx2::call : kbase::call)
#else
#define DISPATCH(call) (kbase::call)
#endif

static inline bf16_t ld(const char *p) { bf16_t h; memcpy(&h, p, 2); return h; }
static inline void st(char *p, bf16_t h) { memcpy(p, &h, 2); }

/* Strided paths: round once and note a finite value that became inf. */
static inline void
store_rounded(char *o, float r, int *ovf)
{
    bf16_t h = f32_to_bf16(r);
    *ovf |= bf16_overflowed(r, h);
    st(o, h);
}

static inline void
report_overflow(int ovf)
{
    if (ovf) {
        bf16_raise_overflow();
    }
}

/* ---- loop adapters (legacy inner-loop signature) --------------------------------------- */

/*
 * Which scalar functors have a hand-vectorised AVX2 twin (VecTwin<Op>::type), NoVec for the
 * rest. One trait serves the array, scalar-operand and reduction-slice loops alike.
 */
struct NoVec {};
template <class Op> struct VecTwin { using type = NoVec; };
template <class Op> struct UnaryVecTwin { using type = NoVec; };
#ifdef BF16_HAVE_AVX2_BUILD
template <> struct VecTwin<Add> { using type = kavx2::VAdd; };
template <> struct VecTwin<Subtract> { using type = kavx2::VSub; };
template <> struct VecTwin<Multiply> { using type = kavx2::VMul; };
template <> struct VecTwin<Divide> { using type = kavx2::VDiv; };
template <> struct UnaryVecTwin<Sqrt> { using type = kavx2::VSqrt; };
template <> struct UnaryVecTwin<Square> { using type = kavx2::VSquare; };
#endif
template <class Op>
static constexpr bool has_vec_twin = !std::is_same<typename VecTwin<Op>::type, NoVec>::value;
template <class Op>
static constexpr bool has_unary_vec_twin =
        !std::is_same<typename UnaryVecTwin<Op>::type, NoVec>::value;

/* The vector loops read a whole block before writing it: exact aliasing (a += b) is fine,
 * partial overlap of the output with an input is not. */
static inline bool
straddles(const char *o, const char *in, npy_intp n)
{
    return o != in && o < in + 2 * n && in < o + 2 * n;
}

template <class Op>
static int
contiguous_binary(const char *a, const char *b, char *o, npy_intp n)
{
#ifdef BF16_HAVE_AVX2_BUILD
    if constexpr (has_vec_twin<Op>) {
        if (use_avx2 && !straddles(o, a, n) && !straddles(o, b, n)) {
            return kavx2::binary_simd<typename VecTwin<Op>::type, Op>(a, b, o, n);
        }
    }
#endif
    return DISPATCH(binary_contig<Op>(a, b, o, n));
}

template <class Op>
static int
contiguous_binary_scalar(const char *arr, bf16_t scalar, bool scalar_first, char *o, npy_intp n)
{
#ifdef BF16_HAVE_AVX2_BUILD
    if constexpr (has_vec_twin<Op>) {
        if (use_avx2 && !straddles(o, arr, n)) {
            return kavx2::binary_simd_scalar<typename VecTwin<Op>::type, Op>(arr, scalar,
                                                                             scalar_first, o, n);
        }
    }
#endif
    return scalar_first ? DISPATCH(binary_contig_scalar1<Op>(scalar, arr, o, n))
                        : DISPATCH(binary_contig_scalar2<Op>(arr, scalar, o, n));
}

template <class Op>
static int
contiguous_unary(const char *a, char *o, npy_intp n)
{
#ifdef BF16_HAVE_AVX2_BUILD
    if constexpr (has_unary_vec_twin<Op>) {
        if (use_avx2 && !straddles(o, a, n)) {
            return kavx2::unary_simd<typename UnaryVecTwin<Op>::type, Op>(a, o, n);
        }
    }
#endif
    return DISPATCH(unary_contig<Op>(a, o, n));
}

template <class Op>
static void
binary_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *)
{
    npy_intp n = dims[0];
    char *a = args[0], *b = args[1], *o = args[2];
    npy_intp sa = steps[0], sb = steps[1], so = steps[2];
    int ovf = 0;
    if (so == 2 && sa == 2 && sb == 2) {
        ovf = contiguous_binary<Op>(a, b, o, n);
    }
    else if (so == 2 && sa == 2 && sb == 0) {
        ovf = contiguous_binary_scalar<Op>(a, ld(b), false, o, n);
    }
    else if (so == 2 && sa == 0 && sb == 2) {
        ovf = contiguous_binary_scalar<Op>(b, ld(a), true, o, n);
    }
    else {
        for (npy_intp i = 0; i < n; i++, a += sa, b += sb, o += so) {
            store_rounded(o, Op::f(bf16_to_f32(ld(a)), bf16_to_f32(ld(b))), &ovf);
        }
    }
    report_overflow(ovf);
}

template <class Op>
static void
binary_bits_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *)
{
    char *a = args[0], *b = args[1], *o = args[2];
    for (npy_intp i = 0; i < dims[0]; i++, a += steps[0], b += steps[1], o += steps[2]) {
        st(o, Op::bits(ld(a), ld(b)));
    }
}

template <class Op>
static void
compare_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *)
{
    npy_intp n = dims[0];
    char *a = args[0], *b = args[1], *o = args[2];
    if (steps[0] == 2 && steps[1] == 2 && steps[2] == 1) {
        DISPATCH(compare_contig<Op>(a, b, (npy_bool *)o, n));
        return;
    }
    for (npy_intp i = 0; i < n; i++, a += steps[0], b += steps[1], o += steps[2]) {
        *(npy_bool *)o = Op::f(bf16_to_f32(ld(a)), bf16_to_f32(ld(b)));
    }
}

/*
 * Unary functions of one bfloat16 have only 65,536 possible inputs. For large arrays the
 * result of each input is taken from a table of all of them, built on first use with the very
 * computation the direct loop does (so results are identical) together with the IEEE flags
 * each input raises, which the loop raises again so np.errstate sees the same warnings.
 */
struct UnaryTable {
    bf16_t out[65536];
    uint8_t flags[65536];
};

enum { FLAG_OVERFLOW = 1, FLAG_INVALID = 2, FLAG_DIVBYZERO = 4, FLAG_UNDERFLOW = 8 };

template <class Op>
static std::atomic<UnaryTable *> unary_table_slot{nullptr}; /* published once, never freed */

template <class Op>
static UnaryTable *
unary_table(bool build)
{
    UnaryTable *t = unary_table_slot<Op>.load(std::memory_order_acquire);
    if (t != nullptr || !build) {
        return t;
    }
    UnaryTable *fresh = (UnaryTable *)malloc(sizeof(UnaryTable));
    if (fresh == nullptr) {
        return nullptr;
    }
    fenv_t saved;
    feholdexcept(&saved); /* the caller's pending flags are restored below */
    for (uint32_t i = 0; i < 65536; i++) {
        feclearexcept(FE_ALL_EXCEPT);
        volatile float r = Op::f(bf16_to_f32((bf16_t)i)); /* volatile: computed before the test */
        int raised = fetestexcept(FE_OVERFLOW | FE_INVALID | FE_DIVBYZERO | FE_UNDERFLOW);
        float rv = r;
        bf16_t h = f32_to_bf16(rv);
        uint8_t fl = (uint8_t)(((raised & FE_OVERFLOW) || bf16_overflowed(rv, h) ? FLAG_OVERFLOW : 0) |
                               ((raised & FE_INVALID) ? FLAG_INVALID : 0) |
                               ((raised & FE_DIVBYZERO) ? FLAG_DIVBYZERO : 0) |
                               ((raised & FE_UNDERFLOW) ? FLAG_UNDERFLOW : 0));
        fresh->out[i] = h;
        fresh->flags[i] = fl;
    }
    fesetenv(&saved);
    UnaryTable *expected = nullptr;
    if (!unary_table_slot<Op>.compare_exchange_strong(expected, fresh,
                                                      std::memory_order_acq_rel)) {
        free(fresh); /* another thread published first */
        return expected;
    }
    return fresh;
}

static void
raise_table_flags(unsigned fl)
{
    int ex = ((fl & FLAG_OVERFLOW) ? FE_OVERFLOW : 0) | ((fl & FLAG_INVALID) ? FE_INVALID : 0) |
             ((fl & FLAG_DIVBYZERO) ? FE_DIVBYZERO : 0) |
             ((fl & FLAG_UNDERFLOW) ? FE_UNDERFLOW : 0);
    if (ex) {
        feraiseexcept(ex);
    }
}

template <class Op>
static void
unary_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *)
{
    npy_intp n = dims[0];
    char *a = args[0], *o = args[1];
    int ovf = 0;
    UnaryTable *table = (!has_unary_vec_twin<Op> && n >= 64)
                                ? unary_table<Op>(n >= 32768) : nullptr;
    if (table != nullptr) {
        unsigned fl = 0;
        for (npy_intp i = 0; i < n; i++, a += steps[0], o += steps[1]) {
            bf16_t x = ld(a);
            fl |= table->flags[x];
            st(o, table->out[x]);
        }
        raise_table_flags(fl);
        return;
    }
    if (steps[0] == 2 && steps[1] == 2) {
        ovf = contiguous_unary<Op>(a, o, n);
    }
    else {
        for (npy_intp i = 0; i < n; i++, a += steps[0], o += steps[1]) {
            store_rounded(o, Op::f(bf16_to_f32(ld(a))), &ovf);
        }
    }
    report_overflow(ovf);
}

template <class Op>
static void
unary_bits_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *)
{
    char *a = args[0], *o = args[1];
    if (steps[0] == 2 && steps[1] == 2) {
        DISPATCH(unary_bits_contig<Op>(a, o, dims[0]));
        return;
    }
    for (npy_intp i = 0; i < dims[0]; i++, a += steps[0], o += steps[1]) {
        st(o, Op::bits(ld(a)));
    }
}

template <class Op>
static void
predicate_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *)
{
    char *a = args[0], *o = args[1];
    for (npy_intp i = 0; i < dims[0]; i++, a += steps[0], o += steps[1]) {
        *(npy_bool *)o = Op::f(ld(a));
    }
}

/* ---- loops with two outputs or mixed operand types -------------------------------------- */

static void
divmod_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *)
{
    char *a = args[0], *b = args[1], *q = args[2], *r = args[3];
    for (npy_intp i = 0; i < dims[0];
         i++, a += steps[0], b += steps[1], q += steps[2], r += steps[3]) {
        float mod;
        float div = py_fmod_div(bf16_to_f32(ld(a)), bf16_to_f32(ld(b)), &mod);
        st(q, f32_to_bf16(div));
        st(r, f32_to_bf16(mod));
    }
}

static void
modf_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *)
{
    char *a = args[0], *fr = args[1], *in = args[2];
    for (npy_intp i = 0; i < dims[0]; i++, a += steps[0], fr += steps[1], in += steps[2]) {
        float ip;
        float f = std::modf(bf16_to_f32(ld(a)), &ip);
        st(fr, f32_to_bf16(f));
        st(in, f32_to_bf16(ip));
    }
}

static void
frexp_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *)
{
    char *a = args[0], *m = args[1], *e = args[2];
    for (npy_intp i = 0; i < dims[0]; i++, a += steps[0], m += steps[1], e += steps[2]) {
        int ex = 0;
        float mant = std::frexp(bf16_to_f32(ld(a)), &ex);
        st(m, f32_to_bf16(mant));
        npy_int ei = (npy_int)ex;
        memcpy(e, &ei, sizeof ei);
    }
}

template <class IntT>
static void
ldexp_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *)
{
    char *a = args[0], *e = args[1], *o = args[2];
    int ovf = 0;
    for (npy_intp i = 0; i < dims[0]; i++, a += steps[0], e += steps[1], o += steps[2]) {
        IntT ex;
        memcpy(&ex, e, sizeof ex);
        long long clamped = (long long)ex;
        if (clamped > 400) clamped = 400;
        if (clamped < -400) clamped = -400;
        double d = std::ldexp((double)bf16_to_f32(ld(a)), (int)clamped); /* exact in double */
        bf16_t h = f64_to_bf16(d);
        ovf |= bf16_isinf(h) && !bf16_isinf(ld(a));
        st(o, h);
    }
    report_overflow(ovf);
}

static void
clip_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *)
{
    char *x = args[0], *lo = args[1], *hi = args[2], *o = args[3];
    for (npy_intp i = 0; i < dims[0];
         i++, x += steps[0], lo += steps[1], hi += steps[2], o += steps[3]) {
        bf16_t hx = ld(x), hl = ld(lo), hh = ld(hi);
        /* numpy: minimum(maximum(x, lo), hi), NaN in any operand propagates */
        float v = bf16_to_f32(hx), l = bf16_to_f32(hl), h = bf16_to_f32(hh);
        bf16_t r = hx;
        if (bf16_isnan(hx)) r = hx;
        else if (bf16_isnan(hl)) r = hl;
        else if (bf16_isnan(hh)) r = hh;
        else {
            if (v < l) { r = hl; v = l; }
            if (v > h) { r = hh; }
        }
        st(o, r);
    }
}

/* ---- add and multiply: float32 accumulation in reductions ------------------------------ */
/*
 * numpy runs reductions through the ordinary binary loop, and how it calls it depends on the
 * axis. For full and last-axis reductions it passes the whole row with `out` aliasing `in1`
 * at stride 0: we sum the row in float32 (pairwise) and round once. For axis-0 (and other
 * outer-axis) reductions it calls the loop once per slice, adding a slice into the running
 * result, which would round to bfloat16 after every slice. For those calls we keep a float32
 * shadow of the output elements and keep adding into it; a shadow value is trusted only while
 * the stored bfloat16 still equals its rounding, so anything else writing the output is
 * noticed. The shadow is a dense window over the output's address range, owned by the loop's
 * auxdata: it lives for one ufunc call. It is switched on when numpy asked this ArrayMethod
 * for the reduction's initial value just before asking for the loop (same context), or, for
 * reductions given `initial=` (numpy then skips that question), as soon as a call writes an
 * output range an earlier call of the same ufunc call already wrote. Elementwise in-place
 * operations (a += b) write each element once, so they never allocate a window.
 * Accumulations (cumsum) that numpy passes as one chain (out[i] = out[i-1] + in[i]) keep
 * the running sum in float32 as well.
 */

struct Shadow {
    NpyAuxData base;
    bool active = false;
    char *lo = nullptr;          /* window covers [lo, lo + 2 * value.size()) */
    std::vector<float> value;    /* one float32 per 2-byte slot of the window */
    char *seen_lo = nullptr, *seen_hi = nullptr; /* output bytes written while inactive */
};

/* At most 2^26 float32 slots (256 MiB): outputs spanning more than 128 MiB reduce in bfloat16. */
static const size_t shadow_max_slots = (size_t)1 << 26;

static void
shadow_free(NpyAuxData *aux)
{
    delete reinterpret_cast<Shadow *>(aux);
}

static NpyAuxData *
shadow_clone(NpyAuxData *aux)
{
    Shadow *copy = new (std::nothrow) Shadow(*reinterpret_cast<Shadow *>(aux));
    return reinterpret_cast<NpyAuxData *>(copy);
}

static Shadow *
shadow_new(bool active)
{
    Shadow *m = new (std::nothrow) Shadow();
    if (m == nullptr) {
        return nullptr;
    }
    memset(&m->base, 0, sizeof m->base);
    m->base.free = shadow_free;
    m->base.clone = shadow_clone;
    m->active = active;
    return m;
}

/* Make the window cover bytes [first, last] (both ends included). false: too large or no
 * memory, and the shadow is switched off (results then accumulate in bfloat16). */
static bool
shadow_cover(Shadow *m, char *first_p, char *last_p)
{
    /* address arithmetic in integers: the window may extend past the output's memory */
    uintptr_t first = (uintptr_t)first_p, last = (uintptr_t)last_p;
    if (first > last) std::swap(first, last);
    uintptr_t lo = (uintptr_t)m->lo, hi = lo + 2 * m->value.size();
    if (!m->value.empty() && first >= lo && last + 2 <= hi) {
        return true;
    }
    uintptr_t new_lo = m->value.empty() ? first : std::min(first, lo);
    uintptr_t new_hi = m->value.empty() ? last + 2 : std::max(last + 2, hi);
    size_t want = (size_t)(new_hi - new_lo + 1) / 2;
    if (!m->value.empty() && new_lo == lo) {
        want = std::max(want, 2 * m->value.size()); /* amortise slices visited upward */
    }
    if (want > shadow_max_slots) {
        m->active = false;
        m->value.clear();
        return false;
    }
    try {
        std::vector<float> grown(want, 0.0f);
        if (!m->value.empty()) {
            std::copy(m->value.begin(), m->value.end(), grown.begin() + (lo - new_lo) / 2);
        }
        m->value.swap(grown);
        m->lo = (char *)new_lo;
    }
    catch (...) {
        m->active = false;
        m->value.clear();
        return false;
    }
    return true;
}

static inline float &
shadow_slot(Shadow *m, const char *p)
{
    return m->value[((uintptr_t)p - (uintptr_t)m->lo) / 2];
}

/* The float32 standing behind the bfloat16 stored at p (p inside the window). */
static inline float
shadow_get(Shadow *m, const char *p)
{
    float v = shadow_slot(m, p);
    bf16_t stored = ld(p);
    return f32_to_bf16(v) == stored ? v : bf16_to_f32(stored);
}

struct AddAcc {
    static float f(float a, float b) { return a + b; }
    static float reduce(const char *p, npy_intp stride, npy_intp n)
    {
        return bf16_sum_f32(p, (ptrdiff_t)stride, (ptrdiff_t)n);
    }
    static constexpr float identity = 0.0f;
};
struct MulAcc {
    static float f(float a, float b) { return a * b; }
    static float reduce(const char *p, npy_intp stride, npy_intp n)
    {
        return bf16_prod_f32(p, (ptrdiff_t)stride, (ptrdiff_t)n);
    }
    static constexpr float identity = 1.0f;
};

#ifdef BF16_HAVE_AVX2_BUILD
template <> struct VecTwin<AddAcc> { using type = kavx2::VAdd; };
template <> struct VecTwin<MulAcc> { using type = kavx2::VMul; };
#endif

static thread_local const void *pending_reduction = nullptr;

template <class Acc>
static int
acc_initial(PyArrayMethod_Context *context, npy_bool reduction_is_empty, void *initial)
{
    /* numpy asks this right before it asks for the reduction's loop: remember the context */
    pending_reduction = context;
    (void)reduction_is_empty;
    st((char *)initial, f32_to_bf16(Acc::identity));
    return 1;
}

/* Switch the shadow on when this call writes output another call already wrote. */
static void
shadow_note_writes(Shadow *m, char *o, npy_intp so, npy_intp n)
{
    char *first = o, *last = o + (n - 1) * so;
    if (first > last) std::swap(first, last);
    if (m->seen_lo != nullptr && first <= m->seen_hi && last >= m->seen_lo) {
        m->active = true;
    }
    m->seen_lo = (m->seen_lo == nullptr || first < m->seen_lo) ? first : m->seen_lo;
    m->seen_hi = (m->seen_hi == nullptr || last > m->seen_hi) ? last : m->seen_hi;
}

template <class Acc>
static int
acc_loop(PyArrayMethod_Context *, char *const data[], npy_intp const dims[],
         npy_intp const strides[], NpyAuxData *auxdata)
{
    npy_intp n = dims[0];
    char *a = data[0], *b = data[1], *o = data[2];
    npy_intp sa = strides[0], sb = strides[1], so = strides[2];
    Shadow *shadow = reinterpret_cast<Shadow *>(auxdata);
    int ovf = 0;
    if (n <= 0) {
        return 0;
    }
    if (shadow != nullptr && !shadow->active && a == o && sa == so) {
        shadow_note_writes(shadow, o, so, n);
    }
    bool use_shadow = shadow != nullptr && shadow->active &&
                      shadow_cover(shadow, a, a + (n - 1) * sa) &&
                      shadow_cover(shadow, o, o + (n - 1) * so);
    if (a == o && sa == 0 && so == 0) {
        /* reduce form: the whole row folds into one output element */
        float start = use_shadow ? shadow_get(shadow, o) : bf16_to_f32(ld(o));
        float r = Acc::f(start, Acc::reduce(b, sb, n));
        bf16_t h = f32_to_bf16(r);
        ovf |= bf16_overflowed(r, h);
        st(o, h);
        if (use_shadow) {
            shadow_slot(shadow, o) = r;
        }
    }
    else if (use_shadow && a == o && sa == 2 && so == 2 && sb == 2) {
        float *v = &shadow_slot(shadow, o);
#ifdef BF16_HAVE_AVX2_BUILD
        if (use_avx2) {
            ovf = kavx2::shadow_row_simd<typename VecTwin<Acc>::type, Acc>(o, b, v, n);
        }
        else
#endif
        {
            ovf = kbase::shadow_row_contig<Acc>(o, b, v, n);
        }
    }
    else if (use_shadow) {
        for (npy_intp i = 0; i < n; i++, a += sa, b += sb, o += so) {
            float r = Acc::f(shadow_get(shadow, a), bf16_to_f32(ld(b)));
            bf16_t h = f32_to_bf16(r);
            ovf |= bf16_overflowed(r, h);
            st(o, h);
            shadow_slot(shadow, o) = r;
        }
    }
    else if (sa == so && a + sa == o && sa != 0) {
        /* accumulate chain: out[i] = out[i-1] + in[i] */
        float run = bf16_to_f32(ld(a));
        for (npy_intp i = 0; i < n; i++, b += sb, o += so) {
            run = Acc::f(run, bf16_to_f32(ld(b)));
            bf16_t h = f32_to_bf16(run);
            ovf |= bf16_overflowed(run, h);
            st(o, h);
        }
    }
    else {
        char *args[3] = {a, b, o};
        npy_intp steps[3] = {sa, sb, so};
        binary_loop<Acc>(args, dims, steps, nullptr);
    }
    report_overflow(ovf);
    return 0;
}

template <class Acc>
static int
acc_get_loop(PyArrayMethod_Context *context, int, int, const npy_intp *,
             PyArrayMethod_StridedLoop **out_loop, NpyAuxData **out_transferdata,
             NPY_ARRAYMETHOD_FLAGS *flags)
{
    *out_loop = acc_loop<Acc>;
    *flags = (NPY_ARRAYMETHOD_FLAGS)0; /* no GIL needed; check float errors */
    bool reduction = pending_reduction == (const void *)context;
    pending_reduction = nullptr;
    Shadow *m = shadow_new(reduction);
    if (m == nullptr) {
        PyErr_NoMemory();
        return -1;
    }
    *out_transferdata = reinterpret_cast<NpyAuxData *>(m);
    return 0;
}

static int
acc_strided_loop_add(PyArrayMethod_Context *c, char *const d[], npy_intp const n[],
                     npy_intp const s[], NpyAuxData *aux)
{
    return acc_loop<AddAcc>(c, d, n, s, aux);
}

static int
acc_strided_loop_mul(PyArrayMethod_Context *c, char *const d[], npy_intp const n[],
                     npy_intp const s[], NpyAuxData *aux)
{
    return acc_loop<MulAcc>(c, d, n, s, aux);
}

template <class Acc>
static int
add_accumulating_loop(PyObject *numpy, const char *name, PyArrayMethod_StridedLoop *plain)
{
    PyObject *ufunc = PyObject_GetAttrString(numpy, name);
    if (ufunc == NULL) {
        return -1;
    }
    PyArray_DTypeMeta *bf = NPY_DTYPE(bf16_descr);
    PyArray_DTypeMeta *dtypes[3] = {bf, bf, bf};
    PyType_Slot slots[] = {
        {NPY_METH_get_loop, (void *)acc_get_loop<Acc>},
        {NPY_METH_strided_loop, (void *)plain},
        {NPY_METH_get_reduction_initial, (void *)acc_initial<Acc>},
        {0, NULL}};
    PyArrayMethod_Spec spec = {};
    spec.name = name;
    spec.nin = 2;
    spec.nout = 1;
    spec.casting = NPY_NO_CASTING;
    spec.flags = (NPY_ARRAYMETHOD_FLAGS)(NPY_METH_IS_REORDERABLE | NPY_METH_SUPPORTS_UNALIGNED);
    spec.dtypes = dtypes;
    spec.slots = slots;
    int r = PyUFunc_AddLoopFromSpec(ufunc, &spec);
    Py_DECREF(ufunc);
    return r;
}

/* ---- the table ------------------------------------------------------------------------- */

struct LoopDef {
    const char *ufunc;
    PyUFuncGenericFunction func;
    int nargs;
    int types[4]; /* -1 stands for bfloat16 */
};

#define BF -1
#define BIN(name, Op) {name, binary_loop<Op>, 3, {BF, BF, BF}}
#define BINBITS(name, Op) {name, binary_bits_loop<Op>, 3, {BF, BF, BF}}
#define CMP(name, Op) {name, compare_loop<Op>, 3, {BF, BF, NPY_BOOL}}
#define UN(name, Op) {name, unary_loop<Op>, 2, {BF, BF}}
#define UNBITS(name, Op) {name, unary_bits_loop<Op>, 2, {BF, BF}}
#define PRED(name, Op) {name, predicate_loop<Op>, 2, {BF, NPY_BOOL}}

static const LoopDef loop_table[] = {
    BIN("subtract", Subtract), BIN("divide", Divide), BIN("power", Power),
    BIN("floor_divide", FloorDivide), BIN("remainder", Remainder), BIN("fmod", Fmod),
    BIN("maximum", Maximum), BIN("minimum", Minimum), BIN("fmax", Fmax), BIN("fmin", Fmin),
    BIN("arctan2", Arctan2), BIN("hypot", Hypot), BIN("heaviside", Heaviside),
    BIN("logaddexp", Logaddexp), BIN("logaddexp2", Logaddexp2),
    BINBITS("copysign", Copysign), BINBITS("nextafter", Nextafter),
    CMP("equal", Equal), CMP("not_equal", NotEqual), CMP("less", Less),
    CMP("less_equal", LessEqual), CMP("greater", Greater), CMP("greater_equal", GreaterEqual),
    CMP("logical_and", LogicalAnd), CMP("logical_or", LogicalOr),
    CMP("logical_xor", LogicalXor),
    UN("reciprocal", Reciprocal), UN("square", Square), UN("sqrt", Sqrt), UN("cbrt", Cbrt),
    UN("exp", Exp), UN("exp2", Exp2), UN("expm1", Expm1), UN("log", Log), UN("log2", Log2),
    UN("log10", Log10), UN("log1p", Log1p), UN("sin", Sin), UN("cos", Cos), UN("tan", Tan),
    UN("arcsin", Arcsin), UN("arccos", Arccos), UN("arctan", Arctan), UN("sinh", Sinh),
    UN("cosh", Cosh), UN("tanh", Tanh), UN("arcsinh", Arcsinh), UN("arccosh", Arccosh),
    UN("arctanh", Arctanh), UN("deg2rad", Deg2rad), UN("radians", Deg2rad),
    UN("rad2deg", Rad2deg), UN("degrees", Rad2deg), UN("floor", Floor), UN("ceil", Ceil),
    UN("trunc", Trunc), UN("rint", Rint), UN("sign", Sign),
    UNBITS("negative", Negative), UNBITS("positive", Positive), UNBITS("absolute", Absolute),
    UNBITS("fabs", Absolute), UNBITS("conjugate", Positive), UNBITS("spacing", Spacing),
    PRED("isnan", Isnan), PRED("isinf", Isinf), PRED("isfinite", Isfinite),
    PRED("signbit", Signbit), PRED("logical_not", LogicalNot),
    {"divmod", divmod_loop, 4, {BF, BF, BF, BF}},
    {"modf", modf_loop, 3, {BF, BF, BF}},
    {"frexp", frexp_loop, 3, {BF, BF, NPY_INT}},
    {"ldexp", ldexp_loop<npy_int>, 3, {BF, NPY_INT, BF}},
    {"ldexp", ldexp_loop<npy_longlong>, 3, {BF, NPY_LONGLONG, BF}},
    {"clip", clip_loop, 4, {BF, BF, BF, BF}},
};

/* ---- promotion ------------------------------------------------------------------------- */
/*
 * The result type of bfloat16 with another operand, as a rank on the float ladder
 * (0 bfloat16, 1 float32, 2 float64, 3 longdouble) and whether it is complex.
 */
struct Rank {
    int rank;
    bool complex;
};

static PyArray_DTypeMeta *
dtype_of(int type_num)
{
    PyArray_Descr *d = PyArray_DescrFromType(type_num);
    if (d == NULL) {
        return NULL;
    }
    PyArray_DTypeMeta *m = NPY_DTYPE(d);
    Py_DECREF(d); /* builtin descriptors and their DTypes are immortal in practice */
    return m;
}

static bool
rank_of(PyArray_DTypeMeta *d, Rank *r)
{
    if (d == NPY_DTYPE(bf16_descr) || d == &PyArray_PyFloatDType || d == &PyArray_PyLongDType) {
        *r = {0, false};
        return true;
    }
    if (d == &PyArray_PyComplexDType) {
        *r = {1, true};
        return true;
    }
    static const struct { int type_num; Rank rank; } table[] = {
        {NPY_BOOL, {0, false}},     {NPY_BYTE, {0, false}},     {NPY_UBYTE, {0, false}},
        {NPY_SHORT, {1, false}},    {NPY_USHORT, {1, false}},   {NPY_HALF, {1, false}},
        {NPY_FLOAT, {1, false}},    {NPY_INT, {2, false}},      {NPY_UINT, {2, false}},
        {NPY_LONG, {2, false}},     {NPY_ULONG, {2, false}},    {NPY_LONGLONG, {2, false}},
        {NPY_ULONGLONG, {2, false}}, {NPY_DOUBLE, {2, false}},  {NPY_LONGDOUBLE, {3, false}},
        {NPY_CFLOAT, {1, true}},    {NPY_CDOUBLE, {2, true}},   {NPY_CLONGDOUBLE, {3, true}},
    };
    for (const auto &e : table) {
        if (d == dtype_of(e.type_num)) {
            *r = e.rank;
            return true;
        }
    }
    return false;
}

static PyArray_DTypeMeta *
dtype_for_rank(Rank r)
{
    static const int real[] = {-1, NPY_FLOAT, NPY_DOUBLE, NPY_LONGDOUBLE};
    static const int cplx[] = {NPY_CFLOAT, NPY_CFLOAT, NPY_CDOUBLE, NPY_CLONGDOUBLE};
    if (r.complex) {
        return dtype_of(cplx[r.rank]);
    }
    return r.rank == 0 ? NPY_DTYPE(bf16_descr) : dtype_of(real[r.rank]);
}

/* Inputs promote along the table in the README; outputs keep what the signature fixed. */
static int
bf16_promoter(PyObject *ufunc, PyArray_DTypeMeta *const op_dtypes[],
              PyArray_DTypeMeta *const signature[], PyArray_DTypeMeta *new_op_dtypes[])
{
    int nin = ((PyUFuncObject *)ufunc)->nin, nargs = nin + ((PyUFuncObject *)ufunc)->nout;
    Rank acc = {0, false};
    for (int i = 0; i < nin; i++) {
        PyArray_DTypeMeta *d = signature[i] ? signature[i] : op_dtypes[i];
        Rank r;
        if (d == NULL || !rank_of(d, &r)) {
            PyErr_SetString(PyExc_TypeError, "bfloat16 promoter called with an unknown dtype");
            return -1;
        }
        acc.rank = r.rank > acc.rank ? r.rank : acc.rank;
        acc.complex = acc.complex || r.complex;
    }
    PyArray_DTypeMeta *common = dtype_for_rank(acc);
    for (int i = 0; i < nargs; i++) {
        PyArray_DTypeMeta *d = (i < nin) ? (signature[i] ? signature[i] : common) : signature[i];
        Py_XINCREF(d);
        new_op_dtypes[i] = d;
    }
    return 0;
}

/* float_power computes in float64 (or complex128) whatever the inputs, as numpy does. */
static int
float_power_promoter(PyObject *, PyArray_DTypeMeta *const op_dtypes[],
                     PyArray_DTypeMeta *const signature[], PyArray_DTypeMeta *new_op_dtypes[])
{
    bool cplx = false;
    for (int i = 0; i < 2; i++) {
        Rank r;
        if (op_dtypes[i] && rank_of(op_dtypes[i], &r) && r.complex) cplx = true;
    }
    PyArray_DTypeMeta *d = dtype_of(cplx ? NPY_CDOUBLE : NPY_DOUBLE);
    for (int i = 0; i < 3; i++) {
        PyArray_DTypeMeta *x = signature[i] ? signature[i] : d;
        Py_INCREF(x);
        new_op_dtypes[i] = x;
    }
    return 0;
}

static int
add_promoter(PyObject *ufunc, PyArray_DTypeMeta *const *dtypes, int nargs,
             PyArrayMethod_PromoterFunction *fn)
{
    PyObject *tuple = PyTuple_New(nargs);
    if (tuple == NULL) {
        return -1;
    }
    for (int i = 0; i < nargs; i++) {
        PyObject *item = dtypes[i] ? (PyObject *)dtypes[i] : Py_None;
        Py_INCREF(item);
        PyTuple_SET_ITEM(tuple, i, item);
    }
    PyObject *capsule = PyCapsule_New((void *)fn, "numpy._ufunc_promoter", NULL);
    if (capsule == NULL) {
        Py_DECREF(tuple);
        return -1;
    }
    int r = PyUFunc_AddPromoter(ufunc, tuple, capsule);
    Py_DECREF(tuple);
    Py_DECREF(capsule);
    return r;
}

/* Every operand type bfloat16 meets in a binary ufunc, Python scalars first. */
static int
other_operand_dtypes(std::vector<PyArray_DTypeMeta *> &out)
{
    out = {&PyArray_PyLongDType, &PyArray_PyFloatDType, &PyArray_PyComplexDType};
    static const int nums[] = {NPY_BOOL, NPY_BYTE, NPY_UBYTE, NPY_SHORT, NPY_USHORT, NPY_INT,
                               NPY_UINT, NPY_LONG, NPY_ULONG, NPY_LONGLONG, NPY_ULONGLONG,
                               NPY_HALF, NPY_FLOAT, NPY_DOUBLE, NPY_LONGDOUBLE, NPY_CFLOAT,
                               NPY_CDOUBLE, NPY_CLONGDOUBLE};
    for (int t : nums) {
        PyArray_DTypeMeta *d = dtype_of(t);
        if (d == NULL) {
            return -1;
        }
        bool seen = false; /* long and longlong may be one DType */
        for (PyArray_DTypeMeta *x : out) seen = seen || x == d;
        if (!seen) out.push_back(d);
    }
    return 0;
}

static int
register_binary_promoters(PyObject *ufunc, int nout, PyArrayMethod_PromoterFunction *fn,
                          const std::vector<PyArray_DTypeMeta *> &others)
{
    PyArray_DTypeMeta *bf = NPY_DTYPE(bf16_descr);
    for (PyArray_DTypeMeta *o : others) {
        PyArray_DTypeMeta *t1[4] = {bf, o, NULL, NULL};
        PyArray_DTypeMeta *t2[4] = {o, bf, NULL, NULL};
        if (add_promoter(ufunc, t1, 2 + nout, fn) < 0 ||
                add_promoter(ufunc, t2, 2 + nout, fn) < 0) {
            return -1;
        }
    }
    return 0;
}

static const char *const binary_promoted[] = {
    "add", "subtract", "multiply", "divide", "power", "floor_divide", "remainder", "fmod",
    "maximum", "minimum", "fmax", "fmin", "arctan2", "hypot", "heaviside", "logaddexp",
    "logaddexp2", "copysign", "nextafter", "equal", "not_equal", "less", "less_equal",
    "greater", "greater_equal", "logical_and", "logical_or", "logical_xor", "divmod",
    "matmul", "vecdot", "matvec", "vecmat"};

static int
register_clip_promoters(PyObject *numpy)
{
    PyObject *clip = PyObject_GetAttrString(numpy, "_core");
    PyObject *umath = clip ? PyObject_GetAttrString(clip, "umath") : NULL;
    Py_XDECREF(clip);
    PyObject *ufunc = umath ? PyObject_GetAttrString(umath, "clip") : NULL;
    Py_XDECREF(umath);
    if (ufunc == NULL) {
        return -1;
    }
    PyArray_DTypeMeta *bf = NPY_DTYPE(bf16_descr);
    PyArray_DTypeMeta *bounds[] = {bf, &PyArray_PyLongDType, &PyArray_PyFloatDType,
                                   dtype_of(NPY_FLOAT), dtype_of(NPY_DOUBLE),
                                   dtype_of(NPY_LONG)};
    int r = 0;
    for (PyArray_DTypeMeta *lo : bounds) {
        for (PyArray_DTypeMeta *hi : bounds) {
            if (lo == bf && hi == bf) continue;
            PyArray_DTypeMeta *t[4] = {bf, lo, hi, NULL};
            if ((r = add_promoter(ufunc, t, 4, bf16_promoter)) < 0) break;
        }
        if (r < 0) break;
    }
    Py_DECREF(ufunc);
    return r;
}

static PyObject *
get_ufunc(PyObject *numpy, const char *name)
{
    PyObject *u = NULL;
    if (strcmp(name, "clip") != 0) {
        u = PyObject_GetAttrString(numpy, name);
    }
    else {
        PyObject *core = PyObject_GetAttrString(numpy, "_core");
        PyObject *umath = core ? PyObject_GetAttrString(core, "umath") : NULL;
        Py_XDECREF(core);
        u = umath ? PyObject_GetAttrString(umath, "clip") : NULL;
        Py_XDECREF(umath);
    }
    if (u != NULL && !PyObject_TypeCheck(u, &PyUFunc_Type)) {
        Py_DECREF(u);
        PyErr_Format(PyExc_RuntimeError, "numpy.%s is not a ufunc", name);
        return NULL;
    }
    return u;
}

extern "C" int
init_ufuncs(PyObject *module)
{
#ifdef BF16_HAVE_AVX2_BUILD
    use_avx2 = bf16_cpu_tier() >= BF16_TIER_AVX2;
#endif
    if (PyModule_AddStringConstant(module, "_simd", use_avx2 ? "avx2" : "baseline") < 0) {
        return -1;
    }
    PyObject *numpy = PyImport_ImportModule("numpy");
    if (numpy == NULL) {
        return -1;
    }
    int r = 0;
    for (const LoopDef &def : loop_table) {
        PyObject *ufunc = get_ufunc(numpy, def.ufunc);
        if (ufunc == NULL) {
            r = -1;
            break;
        }
        int types[4];
        for (int i = 0; i < def.nargs; i++) {
            types[i] = def.types[i] == BF ? bf16_type_num : def.types[i];
        }
        r = PyUFunc_RegisterLoopForType((PyUFuncObject *)ufunc, bf16_type_num, def.func, types,
                                        NULL);
        Py_DECREF(ufunc);
        if (r < 0) {
            break;
        }
    }
    if (r == 0) {
        r = add_accumulating_loop<AddAcc>(numpy, "add", acc_strided_loop_add);
    }
    if (r == 0) {
        r = add_accumulating_loop<MulAcc>(numpy, "multiply", acc_strided_loop_mul);
    }
    /* Promoters go in before any ufunc runs on bfloat16: dispatch results are cached. */
    std::vector<PyArray_DTypeMeta *> others;
    if (r == 0) {
        r = other_operand_dtypes(others);
    }
    for (const char *name : binary_promoted) {
        if (r < 0) break;
        PyObject *ufunc = get_ufunc(numpy, name);
        if (ufunc == NULL) {
            if (strncmp(name, "vec", 3) == 0 || strcmp(name, "matvec") == 0) {
                /* vecdot arrived in numpy 2.0, matvec/vecmat in 2.2 */
                PyErr_Clear();
                continue;
            }
            r = -1;
            break;
        }
        r = register_binary_promoters(ufunc, ((PyUFuncObject *)ufunc)->nout, bf16_promoter,
                                      others);
        Py_DECREF(ufunc);
    }
    if (r == 0) {
        PyObject *fp = get_ufunc(numpy, "float_power");
        PyArray_DTypeMeta *bf = NPY_DTYPE(bf16_descr);
        r = fp ? 0 : -1;
        if (r == 0) {
            PyArray_DTypeMeta *t0[3] = {bf, bf, NULL};
            r = add_promoter(fp, t0, 3, float_power_promoter);
        }
        if (r == 0) {
            r = register_binary_promoters(fp, 1, float_power_promoter, others);
        }
        Py_XDECREF(fp);
    }
    if (r == 0) {
        r = register_clip_promoters(numpy);
    }
    Py_DECREF(numpy);
    return r;
}
