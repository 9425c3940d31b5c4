/*
 * casts.c - casts between bfloat16 and every numpy type, registered with their safety levels.
 *
 * The casts given to the DType spec are strided ArrayMethods: the copy, every numeric cast
 * (bool, integers, floats, complex), to text and object. Only object and fixed-width text into
 * bfloat16 remain legacy cast functions (aligned, contiguous, native-byte-order buffers).
 * Safety follows numpy's float16 where the issue does not say otherwise:
 *   bfloat16 -> float32/float64/longdouble/complex*: safe;  bool/int8/uint8 -> bfloat16: safe;
 *   float <-> bfloat16 and wider ints -> bfloat16: same_kind;  bfloat16 -> ints/bool and
 *   complex -> bfloat16: unsafe (tests/test_casts.py, test_can_cast_table and
 *   test_complex_cast_safety_like_float16).
 */
#include "module.h"
#include "kernels.h"
#include "cpu.h"

PyObject *bf16_complex_warning = NULL; /* numpy.exceptions.ComplexWarning, set once at init */

#define LOAD(T, p, i) ({ T v_; memcpy(&v_, (const char *)(p) + (i) * sizeof(T), sizeof(T)); v_; })
#define STORE(T, p, i, v) do { T v_ = (v); memcpy((char *)(p) + (i) * sizeof(T), &v_, sizeof(T)); } while (0)
/* Every cast that reads or writes bfloat16 tells a reduction in flight on its thread what it
 * copied (umath/reduce_acc.cpp, bf16_reduction_cast): NumPy reduces into a buffer through
 * these casts when the output needs one. */
#define NOTE_INTO(from, fsize, to, n) \
    bf16_reduction_cast((const char *)(from), (fsize), 0, (char *)(to), 2, 1, (n))

/* ---- into bfloat16 ------------------------------------------------------------------- */

/*
 * The numeric casts into and out of bfloat16 (integers, bool, float16, long double, complex)
 * are strided ArrayMethods (numeric_cast_specs below): each kernel here takes byte strides,
 * keeps a constant-stride branch for contiguous data (the loop the compiler vectorises) and
 * reads and writes through memcpy, so any alignment will do. NumPy swaps non-native data on
 * the way in or out. Each returns the IEEE conditions it found (CAST_INVALID, ...); the loop
 * raises them once (tests/test_casts_strided.py, the *_every_layout tests).
 */
#define CAST_INVALID 1
#define CAST_OVERFLOW 2
#define CAST_UNDERFLOW 4

static void
raise_cast_flags(int flags)
{
    if (flags & CAST_INVALID) {
        bf16_raise_invalid();
    }
    if (flags & CAST_OVERFLOW) {
        bf16_raise_overflow();
    }
    if (flags & CAST_UNDERFLOW) {
        feraiseexcept(FE_UNDERFLOW);
    }
}

/* A loop over n elements at byte strides ss and ds, written once and compiled twice: with the
 * element sizes as constant strides when both sides are contiguous, and with the given ones. */
#define AT_STRIDES(ss, ds, SSIZE, DSIZE, ...) /* ...: the body, which may hold commas */ \
    do {                                                                               \
        if ((ss) == (SSIZE) && (ds) == (DSIZE)) {                                      \
            const npy_intp ss_ = (SSIZE), ds_ = (DSIZE);                               \
            __VA_ARGS__                                                                \
        }                                                                              \
        else {                                                                         \
            const npy_intp ss_ = (ss), ds_ = (ds);                                     \
            __VA_ARGS__                                                                \
        }                                                                              \
    } while (0)
#define LOAD_AT(T, p, stride, i) ({ T v_; memcpy(&v_, (const char *)(p) + (i) * (stride), sizeof(T)); v_; })
#define STORE_AT(T, p, stride, i, v) \
    do { T v_ = (v); memcpy((char *)(p) + (i) * (stride), &v_, sizeof(T)); } while (0)

/*
 * Integers round once, in blocks through the bulk kernels: a block whose magnitudes are at most
 * 2^24 is exact in float32 and rounds in the float32 -> bfloat16 kernel; any other becomes
 * float64 (exact below 2^53, rounded to odd above: 53 bits keep all that bfloat16's 8 need to
 * round once) and rounds in the float64 one (tests/test_conversions.py::
 * test_int64_matches_exact_rounding, ::test_small_ints_exhaustive,
 * ::test_int32_random_match_exact_rounding, tests/test_kernels_convert.py::test_integers_round_once,
 * tests/test_casts.py::test_ints_to_bf16 and, in every layout, tests/test_casts_strided.py::
 * test_int_edges_to_bf16_every_layout). No integer reaches bfloat16's overflow threshold, so
 * these raise no IEEE flag.
 */
#define INT_BLOCK 512
#define INT_TO_BF16(NAME, T, UT, IS_SIGNED)                                             \
    /* the block's values as float32 (exact when it returns 1: every |value| <= 2^24) */   \
    static inline __attribute__((always_inline)) int                                   \
    NAME##_block_as_f32(const char *in, npy_intp ss, npy_intp m, float *f)             \
    {                                                                                  \
        int small = 1;                                                                 \
        for (npy_intp i = 0; i < m; i++) {                                             \
            T v = LOAD_AT(T, in, ss, i);                                               \
            small &= sizeof(T) <= 2 || (IS_SIGNED ? (UT)((UT)v + (1u << 24)) <= (1u << 25) \
                                                  : (UT)v <= (1u << 24));              \
            f[i] = (float)(int32_t)v;                                                  \
        }                                                                              \
        return small;                                                                  \
    }                                                                                  \
    static int NAME##_to_bf16(const char *from, npy_intp ss, char *to, npy_intp ds,     \
                               npy_intp n)                                             \
    {                                                                                  \
        /* every 8-bit integer is a bfloat16: the float32's top half, no rounding (twice the \
         * speed of the blocks below; tests/test_conversions.py::test_small_ints_exhaustive) */ \
        if (sizeof(T) == 1) {                                                          \
            AT_STRIDES(ss, ds, 1, 2, {                                                 \
                for (npy_intp i = 0; i < n; i++) {                                     \
                    float f = (float)LOAD_AT(T, from, ss_, i);                         \
                    STORE_AT(bf16_t, to, ds_, i, (bf16_t)(f32_bits(f) >> 16));         \
                }                                                                      \
            });                                                                        \
            return 0;                                                                  \
        }                                                                              \
        union { float f[INT_BLOCK]; double d[INT_BLOCK]; } buf;                        \
        for (npy_intp i0 = 0; i0 < n; i0 += INT_BLOCK) {                               \
            npy_intp m = n - i0 < INT_BLOCK ? n - i0 : INT_BLOCK;                      \
            const char *in = from + ss * i0;                                           \
            /* int64/int32: the kernel of the CPU's tier (int64[::2] 14.3 -> 9.8 ms for 2^24 \
             * elements, float32's cast 12; AMD EPYC Zen 5) */                              \
            int small = IS_SIGNED && sizeof(T) == 8 ? bf16_i64_as_f32(in, ss, buf.f, m)    \
                        : IS_SIGNED && sizeof(T) == 4 ? bf16_i32_as_f32(in, ss, buf.f, m)  \
                        : ss != (npy_intp)sizeof(T) ? NAME##_block_as_f32(in, ss, m, buf.f) \
                        : NAME##_block_as_f32(in, sizeof(T), m, buf.f); /* vectorises */   \
            if (small) {                                                               \
                bf16_from_f32_array(buf.f, 4, to + ds * i0, ds, m, NULL);              \
            }                                                                          \
            else {                                                                     \
                for (npy_intp i = 0; i < m; i++)                                       \
                    buf.d[i] = IS_SIGNED ? i64_to_f64_round_odd((int64_t)LOAD_AT(T, in, ss, i)) \
                                         : u64_to_f64_round_odd((uint64_t)LOAD_AT(T, in, ss, i)); \
                bf16_from_f64_array(buf.d, 8, to + ds * i0, ds, m, NULL, NULL);        \
            }                                                                          \
        }                                                                              \
        return 0;                                                                      \
    }
INT_TO_BF16(byte, npy_byte, npy_uint32, 1)
INT_TO_BF16(short, npy_short, npy_uint32, 1)
INT_TO_BF16(ubyte, npy_ubyte, npy_uint32, 0)
INT_TO_BF16(ushort, npy_ushort, npy_uint32, 0)
INT_TO_BF16(int, npy_int, npy_uint, 1)
INT_TO_BF16(uint, npy_uint, npy_uint, 0)
INT_TO_BF16(long, npy_long, npy_ulong, 1)
INT_TO_BF16(longlong, npy_longlong, npy_ulonglong, 1)
INT_TO_BF16(ulong, npy_ulong, npy_ulong, 0)
INT_TO_BF16(ulonglong, npy_ulonglong, npy_ulonglong, 0)

static int
bool_to_bf16(const char *from, npy_intp ss, char *to, npy_intp ds, npy_intp n)
{
    AT_STRIDES(ss, ds, 1, 2, {
        for (npy_intp i = 0; i < n; i++) {
            /* no branch: random booleans would mispredict one */
            STORE_AT(bf16_t, to, ds_, i, (bf16_t)((LOAD_AT(npy_bool, from, ss_, i) != 0) * 0x3f80u));
        }
    });
    return 0;
}

/*
 * float16 <-> bfloat16 run in the contiguous SIMD kernels (bf16_from_f16_array,
 * bf16_to_f16_array); strided data goes through them in blocks gathered into, and scattered
 * from, two small buffers.
 */
#define HALF_BLOCK 512
static int
half_to_bf16(const char *from, npy_intp ss, char *to, npy_intp ds, npy_intp n)
{
    if (ss == 2 && ds == 2) {
        bf16_from_f16_array(from, to, n);
        return 0;
    }
    uint16_t in[HALF_BLOCK], out[HALF_BLOCK];
    for (npy_intp i0 = 0; i0 < n; i0 += HALF_BLOCK) {
        npy_intp m = n - i0 < HALF_BLOCK ? n - i0 : HALF_BLOCK;
        for (npy_intp i = 0; i < m; i++) {
            memcpy(&in[i], from + (i0 + i) * ss, 2);
        }
        bf16_from_f16_array(in, out, m);
        for (npy_intp i = 0; i < m; i++) {
            memcpy(to + (i0 + i) * ds, &out[i], 2);
        }
    }
    return 0;
}

/* long double rounds once to bfloat16 and reports overflow of a finite value to inf. */
static int
longdouble_to_bf16(const char *from, npy_intp ss, char *to, npy_intp ds, npy_intp n)
{
    int overflow = 0;
    AT_STRIDES(ss, ds, (npy_intp)sizeof(long double), 2, {
        for (npy_intp i = 0; i < n; i++) {
            long double v = LOAD_AT(long double, from, ss_, i);
            bf16_t h = ld_to_bf16(v);
            overflow |= bf16_isinf(h) && isfinite(v);
            STORE_AT(bf16_t, to, ds_, i, h);
        }
    });
    return overflow ? CAST_OVERFLOW : 0;
}

static void
object_to_bf16(void *from, void *to, npy_intp n, void *a, void *b)
{
    (void)a; (void)b;
    for (npy_intp i = 0; i < n; i++) {
        PyObject *obj = LOAD(PyObject *, from, i);
        bf16_t h = 0;
        if (obj == NULL) {
            obj = Py_None;
        }
        if (bf16_from_object(obj, &h) < 0) {
            return; /* error set; numpy checks after the loop */
        }
        STORE(bf16_t, to, i, h);
    }
    NOTE_INTO(from, sizeof(PyObject *), to, n);
}

/*
 * Fixed-width str/bytes -> bfloat16, parsed like float() and rounded once; errors name the
 * text. Only trailing NULs are padding: a NUL inside the text makes it invalid, as for float32.
 */
static void
string_to_bf16(void *from, void *to, npy_intp n, void *fromarr, void *b)
{
    (void)b;
    npy_intp width = PyArray_ITEMSIZE((PyArrayObject *)fromarr);
    for (npy_intp i = 0; i < n; i++) {
        const char *p = (const char *)from + i * width;
        Py_ssize_t len = width;
        while (len > 0 && p[len - 1] == '\0') len--;
        PyObject *s = PyBytes_FromStringAndSize(p, len);
        if (s == NULL) {
            return;
        }
        bf16_t h;
        int r = bf16_from_object(s, &h);
        Py_DECREF(s);
        if (r < 0) {
            return;
        }
        STORE(bf16_t, to, i, h);
    }
    NOTE_INTO(from, width, to, n);
}

static void
unicode_to_bf16(void *from, void *to, npy_intp n, void *fromarr, void *b)
{
    (void)b;
    npy_intp width = PyArray_ITEMSIZE((PyArrayObject *)fromarr) / 4;
    for (npy_intp i = 0; i < n; i++) {
        const char *p = (const char *)from + i * width * 4;
        Py_ssize_t len = width;
        while (len > 0 && LOAD(Py_UCS4, p, len - 1) == 0) len--;
        PyObject *s = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, p, len);
        if (s == NULL) {
            return;
        }
        bf16_t h;
        int r = bf16_from_object(s, &h);
        Py_DECREF(s);
        if (r < 0) {
            return;
        }
        STORE(bf16_t, to, i, h);
    }
    NOTE_INTO(from, width * 4, to, n);
}

/* ---- out of bfloat16 ------------------------------------------------------------------- */

/* bfloat16 -> unstructured void ('V2', 'V'): the two bytes as they lie in memory, cut or padded
 * with zeros to the void's size, as float16's. NumPy's cast into void resolves the size and
 * calls this legacy function on native, aligned buffers
 * (tests/test_casts.py::test_to_void_gives_the_bytes_like_float16). */
static void
bf16_to_void(void *from, void *to, npy_intp n, void *NPY_UNUSED(fromarr), void *toarr)
{
    npy_intp width = PyArray_ITEMSIZE((PyArrayObject *)toarr);
    npy_intp keep = width < 2 ? width : 2;
    for (npy_intp i = 0; i < n; i++) {
        char *d = (char *)to + i * width;
        memcpy(d, (const char *)from + 2 * i, (size_t)keep);
        memset(d + keep, 0, (size_t)(width - keep));
    }
}

/* float -> integer the way numpy's float16 does it on x86: in-range values truncate; NaN,
 * inf and values outside the conversion's range raise the invalid flag (RuntimeWarning under
 * errstate) and give its minimum. Targets narrower than 32 bits and int32 convert through
 * int32 (so NaN gives INT32_MIN, 0 after truncation to 8 or 16 bits), the others through
 * int64 (tests/test_casts.py::test_nan_inf_and_out_of_range_to_int_like_float16). */
#define BF16_TO_INT_ELEMENT(NAME, T)                                                   \
    static inline T bf16_to_##NAME##_element(bf16_t h, int *invalid)                   \
    {                                                                                  \
        float f = bf16_to_f32(h);                                                      \
        if (sizeof(T) < 4 || (sizeof(T) == 4 && (T)-1 < (T)0)) {                       \
            int32_t v32 = INT32_MIN;                                                   \
            if (f >= -2147483648.0f && f < 2147483648.0f) {                            \
                v32 = (int32_t)f;                                                      \
            }                                                                          \
            else {                                                                     \
                *invalid = 1;                                                          \
            }                                                                          \
            return (T)v32;                                                             \
        }                                                                              \
        int64_t v = 0;                                                                 \
        if (f >= -9.2233720368547758e18f && f < 9.2233720368547758e18f) {              \
            v = (int64_t)f;                                                            \
        }                                                                              \
        else if (sizeof(T) == 8 && (T)-1 > (T)0 && f >= 0.0f &&                       \
                 f < 1.8446744073709552e19f) {                                         \
            return (T)(uint64_t)f; /* uint64 alone holds [2^63, 2^64) */               \
        }                                                                              \
        else {                                                                         \
            *invalid = 1;                                                              \
            /* uint64 from 2^63 up subtracts 2^63 first: +inf and beyond give 0; the    \
             * others take INT64_MIN's low bits, as float32's casts do */              \
            v = (f > 0.0f && sizeof(T) == 8 && (T)-1 > (T)0) ? 0 : INT64_MIN;          \
        }                                                                              \
        return (T)v;                                                                   \
    }

/*
 * The bulk of a cast to an integer: a value with |x| < 2^31 (or -2^31 itself, 0xcf00) truncates
 * to the same int32 whatever the target, so blocks of those convert through int32 with no
 * branch (the contiguous loop vectorises; other lanes convert 0, so no conversion raises a flag
 * the element function would not). A block holding anything else (|x| >= 2^31, inf, NaN) is
 * redone by the element function above, which sets its values and the invalid flag.
 * Compared with float32's casts over all 65,536 inputs at every tier by
 * tests/test_casts.py::test_bf16_to_int_casts_exhaustive_every_tier.
 */
static inline int32_t
bf16_trunc_i32(bf16_t h, uint32_t *outside)
{
    uint32_t inside = (uint32_t)((h & 0x7fffu) < 0x4f00u) | (uint32_t)(h == 0xcf00u);
    *outside |= inside ^ 1u;
    uint32_t u = (uint32_t)h << 16 & (0u - inside);
    float f;
    memcpy(&f, &u, 4);
    return (int32_t)f;
}

#define BF16_INT_BLOCK 256

/* Strided data is gathered into (and scattered from) a block buffer, so that the conversion
 * always runs the contiguous loop, which vectorises. */
#define BF16_TO_INT_TIER(NAME, T, TIER, ATTR)                                          \
    ATTR static int bf16_to_##NAME##_##TIER(const char *from, npy_intp ss, char *to,   \
                                             npy_intp ds, npy_intp n)                  \
    {                                                                                  \
        int invalid = 0;                                                               \
        bf16_t in[BF16_INT_BLOCK];                                                     \
        T out[BF16_INT_BLOCK];                                                         \
        for (npy_intp i0 = 0; i0 < n; i0 += BF16_INT_BLOCK) {                          \
            npy_intp len = n - i0 < BF16_INT_BLOCK ? n - i0 : BF16_INT_BLOCK;           \
            const char *f = from + ss * i0;                                            \
            char *t = to + ds * i0;                                                    \
            if (ss != 2) {                                                             \
                for (npy_intp i = 0; i < len; i++) {                                   \
                    memcpy(&in[i], f + i * ss, 2);                                     \
                }                                                                      \
                f = (const char *)in;                                                  \
            }                                                                          \
            char *o = ds == (npy_intp)sizeof(T) ? t : (char *)out;                     \
            uint32_t outside = 0;                                                      \
            for (npy_intp i = 0; i < len; i++) {                                       \
                STORE(T, o, i, (T)bf16_trunc_i32(LOAD(bf16_t, f, i), &outside));      \
            }                                                                          \
            if (outside) {                                                             \
                for (npy_intp i = 0; i < len; i++) {                                   \
                    STORE(T, o, i, bf16_to_##NAME##_element(LOAD(bf16_t, f, i), &invalid)); \
                }                                                                      \
            }                                                                          \
            if (o != t) {                                                              \
                for (npy_intp i = 0; i < len; i++) {                                   \
                    memcpy(t + i * ds, &out[i], sizeof(T));                            \
                }                                                                      \
            }                                                                          \
        }                                                                              \
        return invalid;                                                                \
    }

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define BF16_TO_INT_X86_(NAME, T)                                                      \
    BF16_TO_INT_TIER(NAME, T, avx512,                                                  \
                     __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2")))) \
    BF16_TO_INT_TIER(NAME, T, avx2, __attribute__((target("avx2"))))
#define BF16_TO_INT_PICK_(NAME)                                                        \
    bf16_cpu_tier() >= BF16_TIER_AVX512 ? bf16_to_##NAME##_avx512(from, ss, to, ds, n) \
    : bf16_cpu_tier() >= BF16_TIER_AVX2 ? bf16_to_##NAME##_avx2(from, ss, to, ds, n)   \
                                        : bf16_to_##NAME##_baseline(from, ss, to, ds, n)
#else
#define BF16_TO_INT_X86_(NAME, T)
#define BF16_TO_INT_PICK_(NAME) bf16_to_##NAME##_baseline(from, ss, to, ds, n)
#endif

#define BF16_TO_INT(NAME, T)                                                           \
    BF16_TO_INT_ELEMENT(NAME, T)                                                       \
    BF16_TO_INT_TIER(NAME, T, baseline, )                                              \
    BF16_TO_INT_X86_(NAME, T)                                                          \
    static int bf16_to_##NAME(const char *from, npy_intp ss, char *to, npy_intp ds,    \
                              npy_intp n)                                              \
    {                                                                                  \
        return (BF16_TO_INT_PICK_(NAME)) ? CAST_INVALID : 0;                           \
    }
BF16_TO_INT(byte, npy_byte)
BF16_TO_INT(ubyte, npy_ubyte)
BF16_TO_INT(short, npy_short)
BF16_TO_INT(ushort, npy_ushort)
BF16_TO_INT(int, npy_int)
BF16_TO_INT(uint, npy_uint)
BF16_TO_INT(long, npy_long)
BF16_TO_INT(ulong, npy_ulong)
BF16_TO_INT(longlong, npy_longlong)
BF16_TO_INT(ulonglong, npy_ulonglong)

static int
bf16_to_bool(const char *from, npy_intp ss, char *to, npy_intp ds, npy_intp n)
{
    AT_STRIDES(ss, ds, 2, 1, {
        for (npy_intp i = 0; i < n; i++) {
            STORE_AT(npy_bool, to, ds_, i, !bf16_iszero(LOAD_AT(bf16_t, from, ss_, i)));
        }
    });
    return 0;
}

static int
bf16_to_half(const char *from, npy_intp ss, char *to, npy_intp ds, npy_intp n)
{
    int overflow = 0, underflow = 0;
    if (ss == 2 && ds == 2) {
        bf16_to_f16_array(from, to, n, &overflow, &underflow);
    }
    else {
        uint16_t in[HALF_BLOCK], out[HALF_BLOCK];
        for (npy_intp i0 = 0; i0 < n; i0 += HALF_BLOCK) {
            npy_intp m = n - i0 < HALF_BLOCK ? n - i0 : HALF_BLOCK;
            for (npy_intp i = 0; i < m; i++) {
                memcpy(&in[i], from + (i0 + i) * ss, 2);
            }
            bf16_to_f16_array(in, out, m, &overflow, &underflow);
            for (npy_intp i = 0; i < m; i++) {
                memcpy(to + (i0 + i) * ds, &out[i], 2);
            }
        }
    }
    return (overflow ? CAST_OVERFLOW : 0) | (underflow ? CAST_UNDERFLOW : 0);
}

/* bfloat16 -> long double and complex: exact; the widening of a signalling NaN beyond float32
 * raises "invalid" as numpy's float32 -> float64 does. */
static int
bf16_to_longdouble(const char *from, npy_intp ss, char *to, npy_intp ds, npy_intp n)
{
    AT_STRIDES(ss, ds, 2, (npy_intp)sizeof(long double), {
        for (npy_intp i = 0; i < n; i++) {
            STORE_AT(long double, to, ds_, i, (long double)bf16_to_f32(LOAD_AT(bf16_t, from, ss_, i)));
        }
    });
    return 0;
}

#define BF16_TO_COMPLEX(NAME, T)                                                       \
    static int bf16_to_##NAME(const char *from, npy_intp ss, char *to, npy_intp ds,    \
                               npy_intp n)                                             \
    {                                                                                  \
        AT_STRIDES(ss, ds, 2, (npy_intp)(2 * sizeof(T)), {                             \
            for (npy_intp i = 0; i < n; i++) {                                         \
                STORE_AT(T, to + i * ds_, sizeof(T), 0,                                \
                         (T)bf16_to_f32(LOAD_AT(bf16_t, from, ss_, i)));               \
                STORE_AT(T, to + i * ds_, sizeof(T), 1, (T)0);                         \
            }                                                                          \
        });                                                                            \
        return 0;                                                                      \
    }
BF16_TO_COMPLEX(cfloat, float)
BF16_TO_COMPLEX(cdouble, double)
BF16_TO_COMPLEX(clongdouble, long double)

/* ---- casts given to the DType spec (dtype.c) ------------------------------------------ */

/*
 * casting="same_value" (NumPy >= 2.4): the float32/float64 casts and the bfloat16 copy declare
 * it, and the casts into bfloat16 check that every value survives (NaN counts as surviving, as
 * in NumPy's own float casts) (tests/test_casts.py::test_same_value_casts). NumPy passes the
 * request in the loop context's `flags`, a field the 2.0 API this module builds against does
 * not declare: it sits after `descriptors` and a reserved pointer in NumPy's context from 2.4 on.
 */
#define BF16_NPY_2_4_RUNTIME 0x00000015
#define BF16_SAME_VALUE_CASTING_FLAG 64 /* NPY_SAME_VALUE_CASTING_FLAG */

static int
same_value_supported(void)
{
    return PyArray_RUNTIME_VERSION >= BF16_NPY_2_4_RUNTIME;
}

/* the flag the casts that support same_value add to their casting level (0 before NumPy 2.4) */
static int
same_value_flag(void)
{
    return same_value_supported() ? BF16_SAME_VALUE_CASTING_FLAG : 0;
}

static int
same_value_requested(const PyArrayMethod_Context *context)
{
    if (!same_value_supported()) {
        return 0;
    }
    uint64_t flags;
    memcpy(&flags, (const char *)context + 4 * sizeof(void *), sizeof(flags));
    return (flags & 1) != 0; /* NPY_SAME_VALUE_CONTEXT_FLAG */
}

/* The loops run without the GIL: take it to report the value that did not survive. */
static int
same_value_error(const char *from)
{
    PyGILState_STATE st = PyGILState_Ensure();
    PyErr_Format(PyExc_ValueError, "could not cast 'same_value' %s to bfloat16", from);
    PyGILState_Release(st);
    return -1;
}

/* whether each float32 (`f64`: float64) source equals the bfloat16 it was cast to, or is NaN */
static int
values_survive(const char *src, npy_intp ss, int f64, const char *dst, npy_intp ds, npy_intp n)
{
    for (npy_intp i = 0; i < n; i++) {
        double v;
        if (f64) {
            memcpy(&v, src + i * ss, sizeof(v));
        }
        else {
            float f;
            memcpy(&f, src + i * ss, sizeof(f));
            v = f;
        }
        bf16_t h;
        memcpy(&h, dst + i * ds, sizeof(h));
        if (!isnan(v) && (double)bf16_to_f32(h) != v) {
            return 0;
        }
    }
    return 1;
}

/* bfloat16 -> bfloat16: a copy, or a byte swap between byte orders. */
static NPY_CASTING
copy_resolve_descriptors(struct PyArrayMethodObject_tag *NPY_UNUSED(method),
                         PyArray_DTypeMeta *const *NPY_UNUSED(dtypes),
                         PyArray_Descr *const *given, PyArray_Descr **loop,
                         npy_intp *view_offset)
{
    Py_INCREF(given[0]);
    loop[0] = given[0];
    if (given[1] == NULL) {
        Py_INCREF(given[0]);
        loop[1] = given[0];
    }
    else {
        Py_INCREF(given[1]);
        loop[1] = given[1];
    }
    int flag = same_value_flag();
    if (PyArray_ISNBO(loop[0]->byteorder) == PyArray_ISNBO(loop[1]->byteorder)) {
        *view_offset = 0;
        return (NPY_CASTING)(NPY_NO_CASTING | flag);
    }
    return (NPY_CASTING)(NPY_EQUIV_CASTING | flag);
}

static int
copy_body(PyArrayMethod_Context *context, char *const *data, const npy_intp *dimensions,
          const npy_intp *strides)
{
    PyArray_Descr *const *d = context->descriptors;
    int swap = PyArray_ISNBO(d[0]->byteorder) != PyArray_ISNBO(d[1]->byteorder);
    const char *in = data[0];
    char *out = data[1];
    npy_intp n = dimensions[0], si = strides[0], so = strides[1];
    if (!swap && si == 2 && so == 2) {
        memmove(out, in, (size_t)n * 2); /* NumPy's copies (buffers, .copy(), concatenate) */
        return 0;
    }
    if (!swap && si == 0 && n > 0) { /* one value broadcast: fill, full, zeros_like, a[...] = x
                                       * (an empty array's data may be a 1-byte block) */
        bf16_t h;
        memcpy(&h, in, 2);
        if (so == 2) {
            for (npy_intp i = 0; i < n; i++) {
                memcpy(out + 2 * i, &h, 2); /* a loop the compiler vectorises */
            }
        }
        else {
            for (npy_intp i = 0; i < n; i++) {
                memcpy(out + i * so, &h, 2);
            }
        }
        return 0;
    }
    /* constant strides, which the compiler vectorises: every other element (a[::2]) and
     * reversal (a[::-1]) */
    if (!swap && so == 2 && si == 4) {
        for (npy_intp i = 0; i < n; i++) {
            memcpy(out + 2 * i, in + 4 * i, 2);
        }
        return 0;
    }
    if (!swap && so == 2 && si == -2) {
        for (npy_intp i = 0; i < n; i++) {
            memcpy(out + 2 * i, in - 2 * i, 2);
        }
        return 0;
    }
    if (!swap) {
        for (npy_intp i = 0; i < n; i++) {
            memcpy(out + i * so, in + i * si, 2);
        }
        return 0;
    }
    for (npy_intp i = 0; i < n; i++) {
        bf16_t h;
        memcpy(&h, in + i * si, 2);
        h = (bf16_t)((h >> 8) | (h << 8));
        memcpy(out + i * so, &h, 2);
    }
    return 0;
}

static int
copy_loop(PyArrayMethod_Context *context, char *const *data, const npy_intp *dimensions,
          const npy_intp *strides, NpyAuxData *NPY_UNUSED(auxdata))
{
    int r = copy_body(context, data, dimensions, strides);
    bf16_reduction_cast(data[0], strides[0], 1, data[1], strides[1], 1, dimensions[0]);
    return r;
}

/*
 * bfloat16 -> str/bytes: the shortest digits that round back (str(bfloat16)). Without a
 * given width the result is 32 characters wide, as NumPy sizes float16's; a narrower given
 * width truncates the text and makes the cast same_kind rather than safe, as for float16.
 */
#define TEXT_WIDTH 32

/* `given` in native byte order: itself (a new reference), or a swapped copy. -1 on error. */
static int
native_descr(PyArray_Descr *given, PyArray_Descr **out)
{
    if (PyArray_ISNBO(given->byteorder)) {
        Py_INCREF(given);
        *out = given;
        return 0;
    }
    *out = PyArray_DescrNewByteorder(given, NPY_NATIVE);
    return *out == NULL ? -1 : 0;
}

static NPY_CASTING
text_resolve_descriptors(struct PyArrayMethodObject_tag *NPY_UNUSED(method),
                         PyArray_DTypeMeta *const *dtypes, PyArray_Descr *const *given,
                         PyArray_Descr **loop, npy_intp *NPY_UNUSED(view_offset))
{
    int unicode = dtypes[1]->type_num == NPY_UNICODE;
    npy_intp needed = unicode ? 4 * TEXT_WIDTH : TEXT_WIDTH;
    if (given[1] == NULL) {
        loop[1] = PyArray_DescrNewFromType(unicode ? NPY_UNICODE : NPY_STRING);
        if (loop[1] == NULL) {
            return (NPY_CASTING)-1;
        }
        loop[1]->elsize = (int)needed;
    }
    else if (native_descr(given[1], &loop[1]) < 0) {
        return (NPY_CASTING)-1;
    }
    if (native_descr(given[0], &loop[0]) < 0) {
        Py_DECREF(loop[1]);
        return (NPY_CASTING)-1;
    }
    return loop[1]->elsize >= needed ? NPY_SAFE_CASTING : NPY_SAME_KIND_CASTING;
}

static int
to_text_loop(PyArrayMethod_Context *context, char *const *data, const npy_intp *dimensions,
             const npy_intp *strides, NpyAuxData *NPY_UNUSED(auxdata))
{
    PyArray_Descr *out_descr = context->descriptors[1];
    int unicode = out_descr->type_num == NPY_UNICODE;
    npy_intp width = unicode ? out_descr->elsize / 4 : out_descr->elsize;
    for (npy_intp i = 0; i < dimensions[0]; i++) {
        bf16_t h;
        memcpy(&h, data[0] + i * strides[0], 2);
        char *out = data[1] + i * strides[1];
        PyObject *text = bf16_shortest_str(h); /* ASCII digits, sign, '.', 'e', "nan", "inf" */
        if (text == NULL) {
            return -1;
        }
        npy_intp len = PyUnicode_GET_LENGTH(text);
        for (npy_intp k = 0; k < width; k++) {
            Py_UCS4 c = k < len ? PyUnicode_READ_CHAR(text, k) : 0;
            if (unicode) {
                memcpy(out + 4 * k, &c, 4);
            }
            else {
                out[k] = (char)c;
            }
        }
        Py_DECREF(text);
    }
    return 0;
}

/*
 * bfloat16 <-> NumPy's variable-width StringDType, as float16 has them: out, each value's
 * shortest round-trip digits (str(v), as astype(str)), a safe cast; in, the text parsed as the
 * constructor parses it and rounded once, an unsafe cast, where a missing value (the dtype's
 * na_object) raises NumPy's ValueError. tests/test_casts.py::test_stringdtype_casts_like_float16
 */
static NPY_CASTING
to_vstring_resolve_descriptors(struct PyArrayMethodObject_tag *NPY_UNUSED(method),
                               PyArray_DTypeMeta *const *dtypes, PyArray_Descr *const *given,
                               PyArray_Descr **loop, npy_intp *NPY_UNUSED(view_offset))
{
    if (native_descr(given[0], &loop[0]) < 0) {
        return (NPY_CASTING)-1;
    }
    if (given[1] != NULL) {
        Py_INCREF(given[1]);
        loop[1] = given[1];
    }
    else {
        loop[1] = (PyArray_Descr *)PyObject_CallNoArgs((PyObject *)dtypes[1]);
        if (loop[1] == NULL) {
            Py_DECREF(loop[0]);
            return (NPY_CASTING)-1;
        }
    }
    return NPY_SAFE_CASTING;
}

static int
to_vstring_loop(PyArrayMethod_Context *context, char *const *data, const npy_intp *dimensions,
                const npy_intp *strides, NpyAuxData *NPY_UNUSED(auxdata))
{
    npy_string_allocator *allocator =
        NpyString_acquire_allocator((PyArray_StringDTypeObject *)context->descriptors[1]);
    int r = 0;
    for (npy_intp i = 0; i < dimensions[0] && r == 0; i++) {
        bf16_t h;
        memcpy(&h, data[0] + i * strides[0], 2);
        PyObject *text = bf16_shortest_str(h);
        Py_ssize_t len;
        const char *utf8 = text ? PyUnicode_AsUTF8AndSize(text, &len) : NULL;
        if (utf8 == NULL) {
            r = -1;
        }
        else if (NpyString_pack(allocator, (npy_packed_static_string *)(data[1] + i * strides[1]),
                                utf8, (size_t)len) < 0) {
            PyErr_SetString(PyExc_MemoryError, "bfloat16 to StringDType: could not store a string");
            r = -1;
        }
        Py_XDECREF(text);
    }
    NpyString_release_allocator(allocator);
    return r;
}

static NPY_CASTING
from_vstring_resolve_descriptors(struct PyArrayMethodObject_tag *NPY_UNUSED(method),
                                 PyArray_DTypeMeta *const *NPY_UNUSED(dtypes),
                                 PyArray_Descr *const *given, PyArray_Descr **loop,
                                 npy_intp *NPY_UNUSED(view_offset))
{
    Py_INCREF(given[0]);
    loop[0] = given[0];
    if (native_descr(given[1] != NULL ? given[1] : bf16_descr, &loop[1]) < 0) {
        Py_DECREF(loop[0]);
        return (NPY_CASTING)-1;
    }
    return NPY_UNSAFE_CASTING;
}

static int
from_vstring_loop(PyArrayMethod_Context *context, char *const *data, const npy_intp *dimensions,
                  const npy_intp *strides, NpyAuxData *NPY_UNUSED(auxdata))
{
    npy_string_allocator *allocator =
        NpyString_acquire_allocator((PyArray_StringDTypeObject *)context->descriptors[0]);
    int r = 0;
    for (npy_intp i = 0; i < dimensions[0] && r == 0; i++) {
        npy_static_string text = {0, NULL};
        int is_null = NpyString_load(
            allocator, (const npy_packed_static_string *)(data[0] + i * strides[0]), &text);
        if (is_null < 0) {
            PyErr_SetString(PyExc_MemoryError, "StringDType to bfloat16: could not read a string");
            r = -1;
            break;
        }
        if (is_null) {
            PyErr_SetString(PyExc_ValueError,
                            "Arrays with missing data cannot be converted to a non-nullable type");
            r = -1;
            break;
        }
        PyObject *s = PyUnicode_DecodeUTF8(text.buf, (Py_ssize_t)text.size, "strict");
        bf16_t h;
        if (s == NULL || bf16_from_object(s, &h) < 0) {
            r = -1;
        }
        else {
            memcpy(data[1] + i * strides[1], &h, 2);
        }
        Py_XDECREF(s);
    }
    NpyString_release_allocator(allocator);
    bf16_reduction_cast(data[0], strides[0], 0, data[1], strides[1], 1, dimensions[0]);
    return r;
}

/* bfloat16 -> object: bfloat16 scalars (NumPy's generic cast would store the Python floats
 * that x.item() gives). Output slots may hold references already (np.copyto). */
static int
to_object_loop(PyArrayMethod_Context *NPY_UNUSED(context), char *const *data,
               const npy_intp *dimensions, const npy_intp *strides,
               NpyAuxData *NPY_UNUSED(auxdata))
{
    for (npy_intp i = 0; i < dimensions[0]; i++) {
        bf16_t h;
        memcpy(&h, data[0] + i * strides[0], 2);
        PyObject *obj = bf16_scalar_from_bits(h);
        if (obj == NULL) {
            return -1;
        }
        char *out = data[1] + i * strides[1];
        PyObject *old;
        memcpy(&old, out, sizeof(old));
        memcpy(out, &obj, sizeof(obj));
        Py_XDECREF(old);
    }
    return 0;
}

/*
 * complex -> bfloat16: the real part, rounded once, after numpy's ComplexWarning. The warning
 * is issued in get_loop, where NumPy holds the GIL and checks the result, so warnings turned
 * into errors raise ComplexWarning (tests/test_errors.py); the loops themselves run without
 * the GIL and touch no Python object.
 */
static NPY_CASTING
from_complex_resolve_descriptors(struct PyArrayMethodObject_tag *NPY_UNUSED(method),
                                 PyArray_DTypeMeta *const *NPY_UNUSED(dtypes),
                                 PyArray_Descr *const *given, PyArray_Descr **loop,
                                 npy_intp *NPY_UNUSED(view_offset))
{
    /* native byte order on both sides: NumPy swaps non-native data on the way in or out */
    loop[0] = PyArray_ISNBO(given[0]->byteorder)
                  ? (Py_INCREF(given[0]), given[0])
                  : PyArray_DescrNewByteorder(given[0], NPY_NATIVE);
    if (loop[0] == NULL) {
        return (NPY_CASTING)-1;
    }
    if (given[1] == NULL || !PyArray_ISNBO(given[1]->byteorder)) {
        Py_INCREF(bf16_descr);
        loop[1] = bf16_descr;
    }
    else {
        Py_INCREF(given[1]);
        loop[1] = given[1];
    }
    return NPY_UNSAFE_CASTING; /* as complex -> float16 */
}

/* float32 -> bfloat16 and float64 -> bfloat16 at any strides: the casts from float32/float64
 * (float_cast_specs) and from complex64/complex128, whose real part is the first float at each
 * element. bf16_from_f32_array/bf16_from_f64_array gather strided runs into blocks for the
 * contiguous kernels. */
static int
f32_at_stride_to_bf16_loop(PyArrayMethod_Context *context, char *const *data,
                    const npy_intp *dimensions, const npy_intp *strides,
                    NpyAuxData *NPY_UNUSED(auxdata))
{
    int overflow = 0;
    bf16_from_f32_array(data[0], strides[0], data[1], strides[1], dimensions[0], &overflow);
    if (same_value_requested(context) &&
            !values_survive(data[0], strides[0], 0, data[1], strides[1], dimensions[0])) {
        return same_value_error("float");
    }
    bf16_reduction_cast(data[0], strides[0], 0, data[1], strides[1], 1, dimensions[0]);
    if (overflow) {
        bf16_raise_overflow();
    }
    return 0;
}

static int
f64_at_stride_to_bf16_loop(PyArrayMethod_Context *context, char *const *data,
                     const npy_intp *dimensions, const npy_intp *strides,
                     NpyAuxData *NPY_UNUSED(auxdata))
{
    int overflow = 0, underflow = 0;
    bf16_from_f64_array(data[0], strides[0], data[1], strides[1], dimensions[0], &overflow,
                        &underflow);
    if (same_value_requested(context) &&
            !values_survive(data[0], strides[0], 1, data[1], strides[1], dimensions[0])) {
        return same_value_error("double");
    }
    bf16_reduction_cast(data[0], strides[0], 0, data[1], strides[1], 1, dimensions[0]);
    if (overflow) {
        bf16_raise_overflow();
    }
    if (underflow) {
        feraiseexcept(FE_UNDERFLOW);
    }
    return 0;
}

static int
clongdouble_to_bf16_loop(PyArrayMethod_Context *NPY_UNUSED(context), char *const *data,
                         const npy_intp *dimensions, const npy_intp *strides,
                         NpyAuxData *NPY_UNUSED(auxdata))
{
    int overflow = 0;
    for (npy_intp i = 0; i < dimensions[0]; i++) {
        long double v;
        memcpy(&v, data[0] + i * strides[0], sizeof(v)); /* the real part comes first */
        bf16_t h = ld_to_bf16(v);
        overflow |= bf16_isinf(h) && isfinite(v);
        memcpy(data[1] + i * strides[1], &h, sizeof(h));
    }
    bf16_reduction_cast(data[0], strides[0], 0, data[1], strides[1], 1, dimensions[0]);
    if (overflow) {
        bf16_raise_overflow();
    }
    return 0;
}

static int
from_complex_get_loop(PyArrayMethod_Context *context, int NPY_UNUSED(aligned),
                      int NPY_UNUSED(move_references), const npy_intp *NPY_UNUSED(strides),
                      PyArrayMethod_StridedLoop **out_loop, NpyAuxData **out_transferdata,
                      NPY_ARRAYMETHOD_FLAGS *flags)
{
    switch (context->descriptors[0]->type_num) {
        case NPY_CFLOAT: *out_loop = f32_at_stride_to_bf16_loop; break;
        case NPY_CDOUBLE: *out_loop = f64_at_stride_to_bf16_loop; break;
        case NPY_CLONGDOUBLE: *out_loop = clongdouble_to_bf16_loop; break;
        default:
            PyErr_Format(PyExc_RuntimeError,
                         "bfloat16: no complex cast loop for type number %d",
                         context->descriptors[0]->type_num);
            return -1;
    }
    if (PyErr_WarnEx(bf16_complex_warning,
                     "Casting complex values to real discards the imaginary part", 1) < 0) {
        return -1;
    }
    *out_transferdata = NULL;
    *flags = 0; /* no GIL needed; NumPy reports the loops' overflow/underflow flags */
    return 0;
}

static PyArrayMethod_Spec from_complex_specs[3];
static PyArray_DTypeMeta *from_complex_dtypes[3][2];

/* Fills from_complex_specs (complex64, complex128, clongdouble -> bfloat16). */
static void
fill_from_complex_specs(void)
{
    static PyType_Slot slots[] = {
        {NPY_METH_resolve_descriptors, from_complex_resolve_descriptors},
        {NPY_METH_get_loop, from_complex_get_loop},
        {0, NULL},
    };
    static const char *const names[3] = {
        "complex64_to_bfloat16", "complex128_to_bfloat16", "clongdouble_to_bfloat16"};
    from_complex_dtypes[0][0] = &PyArray_CFloatDType;
    from_complex_dtypes[1][0] = &PyArray_CDoubleDType;
    from_complex_dtypes[2][0] = &PyArray_CLongDoubleDType;
    for (int i = 0; i < 3; i++) {
        from_complex_dtypes[i][1] = NULL; /* the DType being created */
        from_complex_specs[i] = (PyArrayMethod_Spec){
            .name = names[i], .nin = 1, .nout = 1, .casting = NPY_UNSAFE_CASTING,
            .flags = NPY_METH_SUPPORTS_UNALIGNED,
            .dtypes = from_complex_dtypes[i], .slots = slots,
        };
    }
}

/* ---- float32/float64 <-> bfloat16 as strided ArrayMethods ----------------------------------
 * NumPy runs a legacy cast function on strided data through its buffering (small copies in and
 * out around each call): a[:, ::2].astype(np.float32) took 3.4 ns per element on the AMD EPYC
 * Zen 5, 14x float32's own strided copy. These loops take the strides themselves, need no GIL,
 * and raise the IEEE flags of the legacy functions they replace (benchmarks/bench_elementwise.py,
 * "strided" rows; tests/test_casts.py::test_float_casts_every_layout). */

/* bfloat16 -> float64 (exact; (double) of a signalling NaN raises "invalid", as the scalar
 * conversion does). */
static int
bf16_to_f64_loop(PyArrayMethod_Context *NPY_UNUSED(context), char *const *data,
                 const npy_intp *dimensions, const npy_intp *strides,
                 NpyAuxData *NPY_UNUSED(auxdata))
{
    bf16_to_f64_array(data[0], strides[0], data[1], strides[1], dimensions[0]);
    bf16_reduction_cast(data[0], strides[0], 1, data[1], strides[1], 0, dimensions[0]);
    return 0;
}

static int
bf16_to_f32_loop(PyArrayMethod_Context *NPY_UNUSED(context), char *const *data,
                 const npy_intp *dimensions, const npy_intp *strides,
                 NpyAuxData *NPY_UNUSED(auxdata))
{
    bf16_to_f32_array(data[0], strides[0], data[1], strides[1], dimensions[0]);
    bf16_reduction_cast(data[0], strides[0], 1, data[1], strides[1], 0, dimensions[0]);
    return 0;
}

/* Native byte order on both sides (NumPy swaps other data on the way in or out), a given
 * datetime keeping its unit; the other side's default descriptor when it is not given (a
 * datetime's: generic units, as float16's). 0, or -1 with an exception set. */
static int
native_cast_descriptors(PyArray_DTypeMeta *const *dtypes, PyArray_Descr *const *given,
                        PyArray_Descr **loop)
{
    for (int i = 0; i < 2; i++) {
        if (given[i] != NULL && PyArray_ISNBO(given[i]->byteorder)) {
            Py_INCREF(given[i]);
            loop[i] = given[i];
        }
        else if (given[i] != NULL) { /* keeps a datetime's unit */
            loop[i] = PyArray_DescrNewByteorder(given[i], NPY_NATIVE);
        }
        else if (dtypes[i]->type_num == bf16_type_num) {
            Py_INCREF(bf16_descr);
            loop[i] = bf16_descr;
        }
        else {
            loop[i] = PyArray_DescrFromType(dtypes[i]->type_num);
        }
        if (loop[i] == NULL) {
            if (i == 1) {
                Py_DECREF(loop[0]);
            }
            return -1;
        }
    }
    return 0;
}

/* The level of each numeric cast spec (`other`: the other side's type number; `into`: into
 * bfloat16): float16's rules. float32/float64 -> bfloat16 same_kind, bfloat16 -> float32/float64
 * safe, both with same_value where NumPy has it; for the others see the numeric casts below. */
static NPY_CASTING
cast_level(int other, int into)
{
    if (other == NPY_FLOAT || other == NPY_DOUBLE) {
        return (NPY_CASTING)((into ? NPY_SAME_KIND_CASTING : NPY_SAFE_CASTING) | same_value_flag());
    }
    if (other == NPY_DATETIME || other == NPY_TIMEDELTA) {
        return NPY_UNSAFE_CASTING;
    }
    if (into) {
        return other == NPY_BOOL || other == NPY_BYTE || other == NPY_UBYTE
                   ? NPY_SAFE_CASTING : NPY_SAME_KIND_CASTING;
    }
    switch (other) {
        case NPY_HALF:
            return NPY_SAME_KIND_CASTING;
        case NPY_LONGDOUBLE: case NPY_CFLOAT: case NPY_CDOUBLE: case NPY_CLONGDOUBLE:
            return NPY_SAFE_CASTING;
        default:
            return NPY_UNSAFE_CASTING; /* bool and the integers */
    }
}

static NPY_CASTING
cast_resolve_descriptors(struct PyArrayMethodObject_tag *NPY_UNUSED(method),
                         PyArray_DTypeMeta *const *dtypes, PyArray_Descr *const *given,
                         PyArray_Descr **loop, npy_intp *NPY_UNUSED(view_offset))
{
    if (native_cast_descriptors(dtypes, given, loop) < 0) {
        return (NPY_CASTING)-1;
    }
    int into = dtypes[1]->type_num == bf16_type_num;
    return cast_level(dtypes[into ? 0 : 1]->type_num, into);
}

static PyArrayMethod_Spec float_cast_specs[4];
static PyArray_DTypeMeta *float_cast_dtypes[4][2];

/* Fills float_cast_specs: float32/float64 -> bfloat16 (same_kind, as into float16) and
 * bfloat16 -> float32/float64 (safe). */
static void
fill_float_cast_specs(void)
{
    static PyType_Slot into_f32[] = {
        {NPY_METH_resolve_descriptors, cast_resolve_descriptors},
        {NPY_METH_strided_loop, f32_at_stride_to_bf16_loop},
        {NPY_METH_unaligned_strided_loop, f32_at_stride_to_bf16_loop},
        {0, NULL},
    };
    static PyType_Slot into_f64[] = {
        {NPY_METH_resolve_descriptors, cast_resolve_descriptors},
        {NPY_METH_strided_loop, f64_at_stride_to_bf16_loop},
        {NPY_METH_unaligned_strided_loop, f64_at_stride_to_bf16_loop},
        {0, NULL},
    };
    static PyType_Slot from_f32[] = {
        {NPY_METH_resolve_descriptors, cast_resolve_descriptors},
        {NPY_METH_strided_loop, bf16_to_f32_loop},
        {NPY_METH_unaligned_strided_loop, bf16_to_f32_loop},
        {0, NULL},
    };
    static PyType_Slot from_f64[] = {
        {NPY_METH_resolve_descriptors, cast_resolve_descriptors},
        {NPY_METH_strided_loop, bf16_to_f64_loop},
        {NPY_METH_unaligned_strided_loop, bf16_to_f64_loop},
        {0, NULL},
    };
    static const char *const names[4] = {"float32_to_bfloat16", "float64_to_bfloat16",
                                         "bfloat16_to_float32", "bfloat16_to_float64"};
    static PyType_Slot *const slots[4] = {into_f32, into_f64, from_f32, from_f64};
    PyArray_DTypeMeta *const others[4] = {&PyArray_FloatDType, &PyArray_DoubleDType,
                                          &PyArray_FloatDType, &PyArray_DoubleDType};
    for (int i = 0; i < 4; i++) {
        int into = i < 2; /* NULL stands for the DType being created */
        float_cast_dtypes[i][0] = into ? others[i] : NULL;
        float_cast_dtypes[i][1] = into ? NULL : others[i];
        float_cast_specs[i] = (PyArrayMethod_Spec){
            .name = names[i], .nin = 1, .nout = 1,
            .casting = cast_level(others[i]->type_num, into),
            .flags = NPY_METH_SUPPORTS_UNALIGNED,
            .dtypes = float_cast_dtypes[i], .slots = slots[i],
        };
    }
}

/* ---- bfloat16 <-> bool, integers, float16, long double; bfloat16 -> complex -------------
 * Strided ArrayMethods for the same reason as the float casts above: as legacy cast functions,
 * a[::2].astype(np.int32) ran through NumPy's buffering at 20-200 times the contiguous cast's
 * time (benchmarks/bench_elementwise.py, "int64[::2] → dtype" row). The kernels are the ones above;
 * each loop raises their IEEE conditions and tells the reduction in flight what it copied.
 *
 * The levels are numpy's float16 rules (tests/test_casts_strided.py::
 * test_can_cast_every_level_like_float16): bool/int8/uint8 -> bfloat16 safe, the wider
 * integers and long double -> bfloat16 same_kind; bfloat16 -> bool/integers unsafe, to long
 * double and complex safe; bfloat16 <-> float16 same_kind both ways, neither safe (each loses
 * range or precision). None declares casting="same_value" (TypeError, as when they were legacy
 * casts: tests/test_casts.py::test_same_value_casts). cast_level above gives the levels. */

#define NUMERIC_LOOP(KERNEL, INTO)                                                     \
    static int KERNEL##_loop(PyArrayMethod_Context *NPY_UNUSED(context),               \
                             char *const *data, const npy_intp *dimensions,            \
                             const npy_intp *strides, NpyAuxData *NPY_UNUSED(auxdata)) \
    {                                                                                  \
        int flags = KERNEL(data[0], strides[0], data[1], strides[1], dimensions[0]);   \
        bf16_reduction_cast(data[0], strides[0], !(INTO), data[1], strides[1], (INTO), \
                            dimensions[0]);                                            \
        raise_cast_flags(flags);                                                       \
        return 0;                                                                      \
    }
#define NUMERIC_LOOPS(NAME) NUMERIC_LOOP(NAME##_to_bf16, 1) NUMERIC_LOOP(bf16_to_##NAME, 0)
NUMERIC_LOOPS(bool)
NUMERIC_LOOPS(byte)
NUMERIC_LOOPS(ubyte)
NUMERIC_LOOPS(short)
NUMERIC_LOOPS(ushort)
NUMERIC_LOOPS(int)
NUMERIC_LOOPS(uint)
NUMERIC_LOOPS(long)
NUMERIC_LOOPS(ulong)
NUMERIC_LOOPS(longlong)
NUMERIC_LOOPS(ulonglong)
NUMERIC_LOOPS(half)
NUMERIC_LOOPS(longdouble)
NUMERIC_LOOP(bf16_to_cfloat, 0)
NUMERIC_LOOP(bf16_to_cdouble, 0)
NUMERIC_LOOP(bf16_to_clongdouble, 0)

/* bfloat16 -> datetime64/timedelta64: the int64 cast, except that NaN becomes NaT without
 * "invalid", as NumPy's float casts to datetimes do (inf and out of range raise it: tests/
 * test_casts.py::test_bf16_to_datetimes_truncate_like_float16) */
static int
bf16_to_datetime(const char *from, npy_intp ss, char *to, npy_intp ds, npy_intp n)
{
    int invalid = 0;
    AT_STRIDES(ss, ds, 2, 8, {
        for (npy_intp i = 0; i < n; i++) {
            bf16_t h = LOAD_AT(bf16_t, from, ss_, i);
            npy_int64 v = bf16_isnan(h) ? NPY_MIN_INT64 : bf16_to_longlong_element(h, &invalid);
            STORE_AT(npy_int64, to, ds_, i, v);
        }
    });
    return invalid ? CAST_INVALID : 0;
}
NUMERIC_LOOP(bf16_to_datetime, 0)

typedef struct {
    const char *name;
    int other;   /* the other type's number */
    int into;    /* 1: other -> bfloat16; 0: bfloat16 -> other */
    PyArrayMethod_StridedLoop *loop;
    int no_fp_errors; /* the kernel raises no IEEE flag (no hardware conversion that can) */
} numeric_cast;

#define INT_CASTS(NUM, NAME)                                         \
    {#NAME "_to_bfloat16", NUM, 1, NAME##_to_bf16_loop, 1},          \
    {"bfloat16_to_" #NAME, NUM, 0, bf16_to_##NAME##_loop, 0}
static const numeric_cast numeric_casts[] = {
    {"bool_to_bfloat16", NPY_BOOL, 1, bool_to_bf16_loop, 1},
    {"bfloat16_to_bool", NPY_BOOL, 0, bf16_to_bool_loop, 1},
    INT_CASTS(NPY_BYTE, byte),
    INT_CASTS(NPY_UBYTE, ubyte),
    INT_CASTS(NPY_SHORT, short),
    INT_CASTS(NPY_USHORT, ushort),
    INT_CASTS(NPY_INT, int),
    INT_CASTS(NPY_UINT, uint),
    INT_CASTS(NPY_LONG, long),
    INT_CASTS(NPY_ULONG, ulong),
    INT_CASTS(NPY_LONGLONG, longlong),
    INT_CASTS(NPY_ULONGLONG, ulonglong),
    /* a signalling NaN raises "invalid" in the float16 kernels */
    {"float16_to_bfloat16", NPY_HALF, 1, half_to_bf16_loop, 0},
    {"bfloat16_to_float16", NPY_HALF, 0, bf16_to_half_loop, 0},
    {"longdouble_to_bfloat16", NPY_LONGDOUBLE, 1, longdouble_to_bf16_loop, 0},
    /* widening a signalling NaN beyond float32 raises "invalid" */
    {"bfloat16_to_longdouble", NPY_LONGDOUBLE, 0, bf16_to_longdouble_loop, 0},
    {"bfloat16_to_complex64", NPY_CFLOAT, 0, bf16_to_cfloat_loop, 1}, /* no conversion */
    {"bfloat16_to_complex128", NPY_CDOUBLE, 0, bf16_to_cdouble_loop, 0},
    {"bfloat16_to_clongdouble", NPY_CLONGDOUBLE, 0, bf16_to_clongdouble_loop, 0},
    /* datetime64/timedelta64 as their int64 count of units, both ways, as float16 casts them
     * (NaT is the int64 minimum; NaN becomes NaT, inf and out of range too with "invalid") */
    {"datetime64_to_bfloat16", NPY_DATETIME, 1, longlong_to_bf16_loop, 1},
    {"bfloat16_to_datetime64", NPY_DATETIME, 0, bf16_to_datetime_loop, 0},
    {"timedelta64_to_bfloat16", NPY_TIMEDELTA, 1, longlong_to_bf16_loop, 1},
    {"bfloat16_to_timedelta64", NPY_TIMEDELTA, 0, bf16_to_datetime_loop, 0},
};
#define N_NUMERIC_CASTS ((int)(sizeof(numeric_casts) / sizeof(numeric_casts[0])))

static PyArrayMethod_Spec numeric_cast_specs[N_NUMERIC_CASTS];
static PyArray_DTypeMeta *numeric_cast_dtypes[N_NUMERIC_CASTS][2];
static PyType_Slot numeric_cast_slots[N_NUMERIC_CASTS][4];

static PyArray_DTypeMeta *
builtin_dtype(int type_num)
{
    switch (type_num) {
        case NPY_BOOL: return &PyArray_BoolDType;
        case NPY_BYTE: return &PyArray_ByteDType;
        case NPY_UBYTE: return &PyArray_UByteDType;
        case NPY_SHORT: return &PyArray_ShortDType;
        case NPY_USHORT: return &PyArray_UShortDType;
        case NPY_INT: return &PyArray_IntDType;
        case NPY_UINT: return &PyArray_UIntDType;
        case NPY_LONG: return &PyArray_LongDType;
        case NPY_ULONG: return &PyArray_ULongDType;
        case NPY_LONGLONG: return &PyArray_LongLongDType;
        case NPY_ULONGLONG: return &PyArray_ULongLongDType;
        case NPY_HALF: return &PyArray_HalfDType;
        case NPY_LONGDOUBLE: return &PyArray_LongDoubleDType;
        case NPY_CFLOAT: return &PyArray_CFloatDType;
        case NPY_CDOUBLE: return &PyArray_CDoubleDType;
        case NPY_DATETIME: return &PyArray_DatetimeDType;
        case NPY_TIMEDELTA: return &PyArray_TimedeltaDType;
        default: return &PyArray_CLongDoubleDType; /* NPY_CLONGDOUBLE */
    }
}

/* Fills numeric_cast_specs from numeric_casts. */
static void
fill_numeric_cast_specs(void)
{
    for (int i = 0; i < N_NUMERIC_CASTS; i++) {
        const numeric_cast *c = &numeric_casts[i];
        PyArray_DTypeMeta *other = builtin_dtype(c->other);
        numeric_cast_slots[i][0] = (PyType_Slot){NPY_METH_resolve_descriptors,
                                                 cast_resolve_descriptors};
        numeric_cast_slots[i][1] = (PyType_Slot){NPY_METH_strided_loop, c->loop};
        numeric_cast_slots[i][2] = (PyType_Slot){NPY_METH_unaligned_strided_loop, c->loop};
        numeric_cast_slots[i][3] = (PyType_Slot){0, NULL};
        /* NULL stands for the DType being created */
        numeric_cast_dtypes[i][0] = c->into ? other : NULL;
        numeric_cast_dtypes[i][1] = c->into ? NULL : other;
        numeric_cast_specs[i] = (PyArrayMethod_Spec){
            .name = c->name, .nin = 1, .nout = 1,
            .casting = cast_level(c->other, c->into),
            .flags = NPY_METH_SUPPORTS_UNALIGNED |
                     (c->no_fp_errors ? NPY_METH_NO_FLOATINGPOINT_ERRORS : 0),
            .dtypes = numeric_cast_dtypes[i], .slots = numeric_cast_slots[i],
        };
    }
}

static PyArrayMethod_Spec copy_spec, to_unicode_spec, to_bytes_spec, to_object_spec,
        to_vstring_spec, from_vstring_spec;
static PyArray_DTypeMeta *copy_dtypes[2], *to_unicode_dtypes[2], *to_bytes_dtypes[2],
        *to_object_dtypes[2], *to_vstring_dtypes[2], *from_vstring_dtypes[2];
static PyArrayMethod_Spec *spec_casts[14 + N_NUMERIC_CASTS];

PyArrayMethod_Spec **
bf16_spec_casts(void)
{
    static PyType_Slot copy_slots[] = {
        {NPY_METH_resolve_descriptors, copy_resolve_descriptors},
        {NPY_METH_strided_loop, copy_loop},
        {NPY_METH_unaligned_strided_loop, copy_loop},
        {0, NULL},
    };
    static PyType_Slot text_slots[] = {
        {NPY_METH_resolve_descriptors, text_resolve_descriptors},
        {NPY_METH_strided_loop, to_text_loop},
        {NPY_METH_unaligned_strided_loop, to_text_loop},
        {0, NULL},
    };
    /* NULL in dtypes stands for the DType being created */
    copy_dtypes[0] = copy_dtypes[1] = NULL;
    copy_spec = (PyArrayMethod_Spec){
        .name = "bfloat16_copy", .nin = 1, .nout = 1,
        .casting = (NPY_CASTING)(NPY_EQUIV_CASTING |
                                 same_value_flag()),
        .flags = NPY_METH_SUPPORTS_UNALIGNED | NPY_METH_NO_FLOATINGPOINT_ERRORS,
        .dtypes = copy_dtypes, .slots = copy_slots,
    };
    to_unicode_dtypes[0] = NULL;
    to_unicode_dtypes[1] = &PyArray_UnicodeDType;
    to_unicode_spec = (PyArrayMethod_Spec){
        .name = "bfloat16_to_str", .nin = 1, .nout = 1, .casting = NPY_SAME_KIND_CASTING,
        /* the digit search probes out-of-range decimals: its FPU flags are not the cast's */
        .flags = NPY_METH_SUPPORTS_UNALIGNED | NPY_METH_REQUIRES_PYAPI |
                 NPY_METH_NO_FLOATINGPOINT_ERRORS,
        .dtypes = to_unicode_dtypes, .slots = text_slots,
    };
    to_bytes_dtypes[0] = NULL;
    to_bytes_dtypes[1] = &PyArray_BytesDType;
    to_bytes_spec = to_unicode_spec;
    to_bytes_spec.name = "bfloat16_to_bytes";
    to_bytes_spec.dtypes = to_bytes_dtypes;
    static PyType_Slot object_slots[] = {
        {NPY_METH_strided_loop, to_object_loop},
        {NPY_METH_unaligned_strided_loop, to_object_loop},
        {0, NULL},
    };
    to_object_dtypes[0] = NULL;
    to_object_dtypes[1] = &PyArray_ObjectDType;
    to_object_spec = (PyArrayMethod_Spec){
        .name = "bfloat16_to_object", .nin = 1, .nout = 1, .casting = NPY_SAFE_CASTING,
        .flags = NPY_METH_SUPPORTS_UNALIGNED | NPY_METH_REQUIRES_PYAPI |
                 NPY_METH_NO_FLOATINGPOINT_ERRORS,
        .dtypes = to_object_dtypes, .slots = object_slots,
    };
    static PyType_Slot to_vstring_slots[] = {
        {NPY_METH_resolve_descriptors, to_vstring_resolve_descriptors},
        {NPY_METH_strided_loop, to_vstring_loop},
        {NPY_METH_unaligned_strided_loop, to_vstring_loop},
        {0, NULL},
    };
    to_vstring_dtypes[0] = NULL;
    to_vstring_dtypes[1] = &PyArray_StringDType;
    to_vstring_spec = (PyArrayMethod_Spec){
        .name = "bfloat16_to_StringDType", .nin = 1, .nout = 1, .casting = NPY_SAFE_CASTING,
        .flags = NPY_METH_SUPPORTS_UNALIGNED | NPY_METH_REQUIRES_PYAPI |
                 NPY_METH_NO_FLOATINGPOINT_ERRORS,
        .dtypes = to_vstring_dtypes, .slots = to_vstring_slots,
    };
    static PyType_Slot from_vstring_slots[] = {
        {NPY_METH_resolve_descriptors, from_vstring_resolve_descriptors},
        {NPY_METH_strided_loop, from_vstring_loop},
        {NPY_METH_unaligned_strided_loop, from_vstring_loop},
        {0, NULL},
    };
    from_vstring_dtypes[0] = &PyArray_StringDType;
    from_vstring_dtypes[1] = NULL;
    from_vstring_spec = (PyArrayMethod_Spec){
        .name = "StringDType_to_bfloat16", .nin = 1, .nout = 1, .casting = NPY_UNSAFE_CASTING,
        .flags = NPY_METH_SUPPORTS_UNALIGNED | NPY_METH_REQUIRES_PYAPI,
        .dtypes = from_vstring_dtypes, .slots = from_vstring_slots,
    };
    spec_casts[0] = &copy_spec;
    spec_casts[1] = &to_unicode_spec;
    spec_casts[2] = &to_bytes_spec;
    spec_casts[3] = &to_object_spec;
    fill_from_complex_specs();
    spec_casts[4] = &from_complex_specs[0];
    spec_casts[5] = &from_complex_specs[1];
    spec_casts[6] = &from_complex_specs[2];
    spec_casts[7] = &to_vstring_spec;
    spec_casts[8] = &from_vstring_spec;
    fill_float_cast_specs();
    for (int i = 0; i < 4; i++) {
        spec_casts[9 + i] = &float_cast_specs[i];
    }
    fill_numeric_cast_specs();
    for (int i = 0; i < N_NUMERIC_CASTS; i++) {
        spec_casts[13 + i] = &numeric_cast_specs[i];
    }
    spec_casts[13 + N_NUMERIC_CASTS] = NULL;
    return spec_casts;
}

/* ---- registration ---------------------------------------------------------------------- */

/* Object and fixed-width text into bfloat16 stay legacy cast functions (they call into Python
 * element by element); every other cast is a spec cast above, never registered twice. */
typedef struct {
    int type_num;
    PyArray_VectorUnaryFunc *into_bf16;
} cast_entry;

static const cast_entry cast_table[] = {
    {NPY_OBJECT, object_to_bf16}, /* out: bfloat16_to_object above */
    {NPY_STRING, string_to_bf16}, /* out: bfloat16_to_bytes above */
    {NPY_UNICODE, unicode_to_bf16}, /* out: bfloat16_to_str above */
};

int
init_casts(PyObject *NPY_UNUSED(module))
{
    PyObject *exc = PyImport_ImportModule("numpy.exceptions");
    if (exc == NULL) {
        return -1;
    }
    bf16_complex_warning = PyObject_GetAttrString(exc, "ComplexWarning");
    Py_DECREF(exc);
    if (bf16_complex_warning == NULL) {
        return -1;
    }

    size_t count = sizeof(cast_table) / sizeof(cast_table[0]);
    for (size_t i = 0; i < count; i++) {
        PyArray_Descr *other = PyArray_DescrFromType(cast_table[i].type_num);
        if (other == NULL) {
            return -1;
        }
        int r = PyArray_RegisterCastFunc(other, bf16_type_num, cast_table[i].into_bf16);
        Py_DECREF(other);
        if (r < 0) {
            return -1;
        }
    }

    if (PyArray_RegisterCastFunc(bf16_descr, NPY_VOID, bf16_to_void) < 0) {
        return -1;
    }

    /*
     * NumPy wraps legacy casts into ArrayMethods lazily, deriving "same_kind" from the
     * descriptor's kind. With kind 'V' each cast would be classified as if bfloat16 were a
     * void type. So each is classified here, once, while the descriptor briefly reports kind
     * 'f' (float16's rules: object and text -> float are unsafe), and kind 'V' is restored
     * afterwards (see README, "Casting rules"; tests/test_casts.py::test_can_cast_table).
     */
    int failed = 0;
    for (size_t i = 0; i < count && !failed; i++) {
        PyArray_Descr *other = PyArray_DescrFromType(cast_table[i].type_num);
        if (other == NULL) {
            failed = 1;
            break;
        }
        bf16_descr->kind = 'f';
        (void)PyArray_CanCastTypeTo(other, bf16_descr, NPY_SAFE_CASTING);
        bf16_descr->kind = 'V';
        Py_DECREF(other);
        if (PyErr_Occurred()) {
            failed = 1;
        }
    }
    (void)PyArray_CanCastTypeTo(bf16_descr, bf16_descr, NPY_NO_CASTING);
    bf16_descr->kind = 'V';
    return failed || PyErr_Occurred() ? -1 : 0;
}
