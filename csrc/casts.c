/*
 * casts.c - casts between bfloat16 and every numpy type, registered with their safety levels.
 *
 * Legacy cast functions work on aligned, contiguous, native-byte-order buffers.
 * Safety follows numpy's float16 where the issue does not say otherwise:
 *   bfloat16 -> float32/float64/longdouble/complex*: safe;  bool/int8/uint8 -> bfloat16: safe;
 *   float <-> bfloat16 and wider ints -> bfloat16: same_kind;  bfloat16 -> ints/bool: unsafe.
 */
#include "module.h"
#include "kernels.h"

static PyObject *complex_warning = NULL; /* numpy.exceptions.ComplexWarning, set once at init */

#define LOAD(T, p, i) ({ T v_; memcpy(&v_, (const char *)(p) + (i) * sizeof(T), sizeof(T)); v_; })
#define STORE(T, p, i, v) do { T v_ = (v); memcpy((char *)(p) + (i) * sizeof(T), &v_, sizeof(T)); } while (0)

/* ---- into bfloat16 ------------------------------------------------------------------- */

#define SIGNED_TO_BF16(NAME, T)                                                        \
    static void NAME##_to_bf16(void *from, void *to, npy_intp n, void *a, void *b)     \
    {                                                                                  \
        (void)a; (void)b;                                                              \
        for (npy_intp i = 0; i < n; i++)                                               \
            STORE(bf16_t, to, i, i64_to_bf16((int64_t)LOAD(T, from, i)));              \
    }
#define UNSIGNED_TO_BF16(NAME, T)                                                      \
    static void NAME##_to_bf16(void *from, void *to, npy_intp n, void *a, void *b)     \
    {                                                                                  \
        (void)a; (void)b;                                                              \
        for (npy_intp i = 0; i < n; i++)                                               \
            STORE(bf16_t, to, i, u64_to_bf16((uint64_t)LOAD(T, from, i)));             \
    }
SIGNED_TO_BF16(byte, npy_byte)
SIGNED_TO_BF16(short, npy_short)
SIGNED_TO_BF16(int, npy_int)
SIGNED_TO_BF16(long, npy_long)
SIGNED_TO_BF16(longlong, npy_longlong)
UNSIGNED_TO_BF16(ubyte, npy_ubyte)
UNSIGNED_TO_BF16(ushort, npy_ushort)
UNSIGNED_TO_BF16(uint, npy_uint)
UNSIGNED_TO_BF16(ulong, npy_ulong)
UNSIGNED_TO_BF16(ulonglong, npy_ulonglong)

static void
bool_to_bf16(void *from, void *to, npy_intp n, void *a, void *b)
{
    (void)a; (void)b;
    for (npy_intp i = 0; i < n; i++) {
        STORE(bf16_t, to, i, LOAD(npy_bool, from, i) ? 0x3f80 : 0);
    }
}

static void
half_to_bf16(void *from, void *to, npy_intp n, void *a, void *b)
{
    (void)a; (void)b;
    for (npy_intp i = 0; i < n; i++) {
        STORE(bf16_t, to, i, f32_to_bf16(f16_bits_to_f32(LOAD(npy_half, from, i))));
    }
}

static void
float_to_bf16(void *from, void *to, npy_intp n, void *a, void *b)
{
    (void)a; (void)b;
    int overflow = 0;
    bf16_from_f32_array(from, 4, to, 2, (ptrdiff_t)n, &overflow);
    if (overflow) {
        bf16_raise_overflow();
    }
}

/*
 * 0 after issuing numpy's ComplexWarning, -1 when the warning was turned into an error (or an
 * earlier chunk of the same cast already failed): the cast then stops. NumPy runs legacy casts
 * between non-object types without the GIL and does not check for a Python error afterwards,
 * so that error still surfaces as a SystemError (tests/test_errors.py documents it).
 */
static int
warn_complex(void)
{
    PyGILState_STATE st = PyGILState_Ensure();
    int r = PyErr_Occurred() ? -1 :
            PyErr_WarnEx(complex_warning,
                         "Casting complex values to real discards the imaginary part", 1);
    PyGILState_Release(st);
    return r;
}

/*
 * Wider floats and complex numbers round once to bfloat16 and report overflow of a finite
 * value to inf. STEP 2 reads the real part of a complex pair (numpy's ComplexWarning first).
 */
#define WIDE_TO_BF16(NAME, T, STEP, ROUND, IS_COMPLEX)                                 \
    static void NAME##_to_bf16(void *from, void *to, npy_intp n, void *a, void *b)     \
    {                                                                                  \
        (void)a; (void)b;                                                              \
        if (IS_COMPLEX && warn_complex() < 0) return; /* error set: numpy checks it */ \
        int overflow = 0;                                                              \
        for (npy_intp i = 0; i < n; i++) {                                             \
            T v = LOAD(T, from, (STEP) * i);                                           \
            bf16_t h = ROUND(v);                                                       \
            overflow |= bf16_isinf(h) && isfinite(v);                                  \
            STORE(bf16_t, to, i, h);                                                   \
        }                                                                              \
        if (overflow) bf16_raise_overflow();                                           \
    }
WIDE_TO_BF16(double, double, 1, f64_to_bf16, 0)
WIDE_TO_BF16(longdouble, long double, 1, ld_to_bf16, 0)
WIDE_TO_BF16(cfloat, float, 2, f32_to_bf16, 1)
WIDE_TO_BF16(cdouble, double, 2, f64_to_bf16, 1)
WIDE_TO_BF16(clongdouble, long double, 2, ld_to_bf16, 1)

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
}

/* ---- out of bfloat16 ------------------------------------------------------------------- */

/* float -> integer the way numpy's float16 does it: in-range values truncate, NaN/inf and
 * values outside int64 raise the invalid flag (RuntimeWarning under errstate). */
#define BF16_TO_INT(NAME, T)                                                           \
    static void bf16_to_##NAME(void *from, void *to, npy_intp n, void *a, void *b)     \
    {                                                                                  \
        (void)a; (void)b;                                                              \
        int invalid = 0;                                                               \
        for (npy_intp i = 0; i < n; i++) {                                             \
            float f = bf16_to_f32(LOAD(bf16_t, from, i));                              \
            int64_t v = 0;                                                             \
            if (f >= -9.2233720368547758e18f && f < 9.2233720368547758e18f) {          \
                v = (int64_t)f;                                                        \
            }                                                                          \
            else if (!(f >= 0.0f && f < 1.8446744073709552e19f)) {                     \
                invalid = 1;                                                           \
                v = INT64_MIN;                                                         \
            }                                                                          \
            else {                                                                     \
                STORE(T, to, i, (T)(uint64_t)f);                                       \
                continue;                                                              \
            }                                                                          \
            STORE(T, to, i, (T)v);                                                     \
        }                                                                              \
        if (invalid) bf16_raise_invalid();                                             \
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

static void
bf16_to_bool(void *from, void *to, npy_intp n, void *a, void *b)
{
    (void)a; (void)b;
    for (npy_intp i = 0; i < n; i++) {
        STORE(npy_bool, to, i, !bf16_iszero(LOAD(bf16_t, from, i)));
    }
}

static void
bf16_to_half(void *from, void *to, npy_intp n, void *a, void *b)
{
    (void)a; (void)b;
    int overflow = 0;
    for (npy_intp i = 0; i < n; i++) {
        STORE(npy_half, to, i, f32_to_f16_bits(bf16_to_f32(LOAD(bf16_t, from, i)), &overflow));
    }
    if (overflow) {
        bf16_raise_overflow();
    }
}

static void
bf16_to_float(void *from, void *to, npy_intp n, void *a, void *b)
{
    (void)a; (void)b;
    bf16_to_f32_array(from, 2, to, 4, (ptrdiff_t)n);
}

#define BF16_TO_WIDE(NAME, T)                                                          \
    static void bf16_to_##NAME(void *from, void *to, npy_intp n, void *a, void *b)     \
    {                                                                                  \
        (void)a; (void)b;                                                              \
        for (npy_intp i = 0; i < n; i++)                                               \
            STORE(T, to, i, (T)bf16_to_f32(LOAD(bf16_t, from, i)));                    \
    }
BF16_TO_WIDE(double, double)
BF16_TO_WIDE(longdouble, long double)

#define BF16_TO_COMPLEX(NAME, T)                                                       \
    static void bf16_to_##NAME(void *from, void *to, npy_intp n, void *a, void *b)     \
    {                                                                                  \
        (void)a; (void)b;                                                              \
        for (npy_intp i = 0; i < n; i++) {                                             \
            STORE(T, to, 2 * i, (T)bf16_to_f32(LOAD(bf16_t, from, i)));                \
            STORE(T, to, 2 * i + 1, (T)0);                                             \
        }                                                                              \
    }
BF16_TO_COMPLEX(cfloat, float)
BF16_TO_COMPLEX(cdouble, double)
BF16_TO_COMPLEX(clongdouble, long double)

static void
bf16_to_object(void *from, void *to, npy_intp n, void *a, void *b)
{
    (void)a; (void)b;
    for (npy_intp i = 0; i < n; i++) {
        PyObject *obj = bf16_scalar_from_bits(LOAD(bf16_t, from, i));
        if (obj == NULL) {
            return;
        }
        PyObject *old = LOAD(PyObject *, to, i);
        STORE(PyObject *, to, i, obj);
        Py_XDECREF(old);
    }
}

/* ---- registration ---------------------------------------------------------------------- */

typedef struct {
    int type_num;
    PyArray_VectorUnaryFunc *into_bf16; /* NULL: no cast */
    PyArray_VectorUnaryFunc *from_bf16; /* NULL: no cast */
    int into_safe, from_safe;
} cast_entry;

static const cast_entry cast_table[] = {
    {NPY_BOOL, bool_to_bf16, bf16_to_bool, 1, 0},
    {NPY_BYTE, byte_to_bf16, bf16_to_byte, 1, 0},
    {NPY_UBYTE, ubyte_to_bf16, bf16_to_ubyte, 1, 0},
    {NPY_SHORT, short_to_bf16, bf16_to_short, 0, 0},
    {NPY_USHORT, ushort_to_bf16, bf16_to_ushort, 0, 0},
    {NPY_INT, int_to_bf16, bf16_to_int, 0, 0},
    {NPY_UINT, uint_to_bf16, bf16_to_uint, 0, 0},
    {NPY_LONG, long_to_bf16, bf16_to_long, 0, 0},
    {NPY_ULONG, ulong_to_bf16, bf16_to_ulong, 0, 0},
    {NPY_LONGLONG, longlong_to_bf16, bf16_to_longlong, 0, 0},
    {NPY_ULONGLONG, ulonglong_to_bf16, bf16_to_ulonglong, 0, 0},
    {NPY_HALF, half_to_bf16, bf16_to_half, 0, 0},
    {NPY_FLOAT, float_to_bf16, bf16_to_float, 0, 1},
    {NPY_DOUBLE, double_to_bf16, bf16_to_double, 0, 1},
    {NPY_LONGDOUBLE, longdouble_to_bf16, bf16_to_longdouble, 0, 1},
    {NPY_CFLOAT, cfloat_to_bf16, bf16_to_cfloat, 0, 1},
    {NPY_CDOUBLE, cdouble_to_bf16, bf16_to_cdouble, 0, 1},
    {NPY_CLONGDOUBLE, clongdouble_to_bf16, bf16_to_clongdouble, 0, 1},
    {NPY_OBJECT, object_to_bf16, bf16_to_object, 0, 0},
    {NPY_STRING, string_to_bf16, NULL, 0, 0},
    {NPY_UNICODE, unicode_to_bf16, NULL, 0, 0},
};

int
init_casts(PyObject *NPY_UNUSED(module))
{
    PyObject *exc = PyImport_ImportModule("numpy.exceptions");
    if (exc == NULL) {
        return -1;
    }
    complex_warning = PyObject_GetAttrString(exc, "ComplexWarning");
    Py_DECREF(exc);
    if (complex_warning == NULL) {
        return -1;
    }

    size_t count = sizeof(cast_table) / sizeof(cast_table[0]);
    for (size_t i = 0; i < count; i++) {
        const cast_entry *e = &cast_table[i];
        PyArray_Descr *other = PyArray_DescrFromType(e->type_num);
        if (other == NULL) {
            return -1;
        }
        int r = 0;
        if (e->into_bf16 != NULL) {
            r = PyArray_RegisterCastFunc(other, bf16_type_num, e->into_bf16);
            if (r == 0 && e->into_safe) {
                r = PyArray_RegisterCanCast(other, bf16_type_num, NPY_NOSCALAR);
            }
        }
        if (r == 0 && e->from_bf16 != NULL) {
            r = PyArray_RegisterCastFunc(bf16_descr, e->type_num, e->from_bf16);
            if (r == 0 && e->from_safe) {
                r = PyArray_RegisterCanCast(bf16_descr, e->type_num, NPY_NOSCALAR);
            }
        }
        Py_DECREF(other);
        if (r < 0) {
            return -1;
        }
    }

    /*
     * NumPy wraps legacy casts into ArrayMethods lazily, deriving "same_kind" from the
     * descriptor's kind. With kind 'V' every cast into bfloat16 would be "unsafe" and every
     * cast out of it "same_kind" (even to int). So each cast is classified here, once, while
     * the descriptor briefly reports the kind that yields numpy's rule for it, and kind 'V' is
     * restored afterwards (see README, "Casting rules"):
     *   'f' for every non-float16 pair: float16's own rules;
     *   'c' for float16 -> bfloat16 and 'i' for bfloat16 -> float16: both same_kind, neither
     *   safe ('f' would make the two 2-byte floats look equivalent).
     */
    int failed = 0;
    for (size_t i = 0; i < count && !failed; i++) {
        const cast_entry *e = &cast_table[i];
        PyArray_Descr *other = PyArray_DescrFromType(e->type_num);
        if (other == NULL) {
            failed = 1;
            break;
        }
        int is_half = e->type_num == NPY_HALF;
        if (e->into_bf16 != NULL) {
            bf16_descr->kind = is_half ? 'c' : 'f';
            (void)PyArray_CanCastTypeTo(other, bf16_descr, NPY_SAFE_CASTING);
        }
        if (e->from_bf16 != NULL) {
            bf16_descr->kind = is_half ? 'i' : 'f';
            (void)PyArray_CanCastTypeTo(bf16_descr, other, NPY_SAFE_CASTING);
        }
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
