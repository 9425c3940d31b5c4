/*
 * dtype.c - registration of the bfloat16 dtype with NumPy's user-dtype API: the descriptor
 * and its ArrFuncs (getitem/setitem, copyswap, compare, argmax/argmin, dot, fill, sort, ...).
 */
#include "module.h"
#include "kernels.h"
#include "number/parse.h"
#include "interop/interop.h"
#include <stdio.h>
#include <stdlib.h>

int bf16_type_num = -1;
PyArray_Descr *bf16_descr = NULL;

static inline bf16_t
load_bits(const void *p)
{
    bf16_t h;
    memcpy(&h, p, 2);
    return h;
}

static inline void
store_bits(void *p, bf16_t h)
{
    memcpy(p, &h, 2);
}

static inline bf16_t
swap_bits(bf16_t h)
{
    return (bf16_t)((h >> 8) | (h << 8));
}

/* numpy may pass NULL or a stack "fake array" (only descr/flags set, no ob_type) here, so
 * like numpy's own getitem/setitem, read the descriptor without a PyArray_Check. */
static int
arr_is_swapped(void *arr)
{
    return arr != NULL && PyArray_DESCR((PyArrayObject *)arr) != NULL &&
           !PyArray_ISNOTSWAPPED((PyArrayObject *)arr);
}

/* x.item() and x.tolist() give Python floats, as for float16; x[0] is a bfloat16 scalar,
 * which NumPy builds from the bits itself (the proto does not set NPY_USE_GETITEM). */
static PyObject *
bf16_getitem(void *data, void *arr)
{
    bf16_t h = load_bits(data);
    if (arr_is_swapped(arr)) {
        h = swap_bits(h);
    }
    return PyFloat_FromDouble(bf16_to_f64(h));
}

static int
bf16_setitem(PyObject *item, void *data, void *arr)
{
    bf16_t h;
    if (bf16_from_object_reporting(item, &h) < 0) {
        return -1;
    }
    if (arr_is_swapped(arr)) {
        h = swap_bits(h);
    }
    store_bits(data, h);
    return 0;
}

static void
bf16_copyswapn(void *dst, npy_intp dstride, void *src, npy_intp sstride, npy_intp n, int swap,
               void *NPY_UNUSED(arr))
{
    char *d = (char *)dst;
    const char *s = (const char *)src;
    if (src != NULL) {
        if (dstride == 2 && sstride == 2) {
            memmove(d, s, (size_t)n * 2);
        }
        else {
            for (npy_intp i = 0; i < n; i++) {
                memmove(d + i * dstride, s + i * sstride, 2);
            }
        }
    }
    if (swap) {
        for (npy_intp i = 0; i < n; i++) {
            store_bits(d + i * dstride, swap_bits(load_bits(d + i * dstride)));
        }
    }
}

static void
bf16_copyswap(void *dst, void *src, int swap, void *NPY_UNUSED(arr))
{
    if (src != NULL) {
        memmove(dst, src, 2);
    }
    if (swap) {
        store_bits(dst, swap_bits(load_bits(dst)));
    }
}

/* numpy's float ordering for sorting: NaNs compare equal to each other and after all else. */
static int
bf16_compare(const void *a, const void *b, void *NPY_UNUSED(arr))
{
    float x = bf16_to_f32(load_bits(a)), y = bf16_to_f32(load_bits(b));
    if (x < y) return -1;
    if (x > y) return 1;
    if (x == y) return 0;
    int xn = isnan(x), yn = isnan(y);
    return xn - yn; /* one NaN: it goes last */
}

static int
arrfunc_argmax(void *data, npy_intp n, npy_intp *max_ind, void *NPY_UNUSED(arr))
{
    *max_ind = (npy_intp)bf16_argmax(data, (ptrdiff_t)n);
    return 0;
}

static int
arrfunc_argmin(void *data, npy_intp n, npy_intp *min_ind, void *NPY_UNUSED(arr))
{
    *min_ind = (npy_intp)bf16_argmin(data, (ptrdiff_t)n);
    return 0;
}

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>

/* Eight elements, a stride apart, in one vector: one 16-bit insert each (SSE2's pinsrw). */
static inline __m128i
load8_strided(const char *p, npy_intp s)
{
    __m128i v = _mm_cvtsi32_si128(load_bits(p));
    v = _mm_insert_epi16(v, load_bits(p + s), 1);
    v = _mm_insert_epi16(v, load_bits(p + 2 * s), 2);
    v = _mm_insert_epi16(v, load_bits(p + 3 * s), 3);
    v = _mm_insert_epi16(v, load_bits(p + 4 * s), 4);
    v = _mm_insert_epi16(v, load_bits(p + 5 * s), 5);
    v = _mm_insert_epi16(v, load_bits(p + 6 * s), 6);
    v = _mm_insert_epi16(v, load_bits(p + 7 * s), 7);
    return v;
}

static inline __m128i
load8(const char *p, npy_intp s)
{
    return s == 2 ? _mm_loadu_si128((const __m128i *)p) : load8_strided(p, s);
}

/* Dot product (the dtype's dot function, np.dot's inner loop): exact products, float32
 * accumulation in 8 lanes, one rounding at the end; here in two 4-lane SSE2 vectors (x86-64's
 * baseline; the compiler kept the portable 8-lane accumulator of dot_f32 below in memory,
 * which put a store and a load on each addition's path). Lane j of lo is accumulator j, lane j
 * of hi accumulator j + 4, so the additions and their order are dot_f32's, and the bits are
 * the same for contiguous and strided operands
 * (tests/test_linalg.py::test_dot_contiguous_and_strided_same_bits). Products of two bfloat16
 * are exact in float32; they are not fused into the additions (an overflowing product must
 * give inf before it is added, as in dot_f32). */
static float
dot_f32_sse2(const char *a, npy_intp sa, const char *b, npy_intp sb, npy_intp n)
{
    const __m128i zero = _mm_setzero_si128();
    __m128 lo = _mm_setzero_ps(), hi = _mm_setzero_ps();
    npy_intp i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i x = load8(a + i * sa, sa);
        __m128i y = load8(b + i * sb, sb);
        /* interleaving zeros below each element widens it exactly */
        lo = _mm_add_ps(lo, _mm_mul_ps(_mm_castsi128_ps(_mm_unpacklo_epi16(zero, x)),
                                       _mm_castsi128_ps(_mm_unpacklo_epi16(zero, y))));
        hi = _mm_add_ps(hi, _mm_mul_ps(_mm_castsi128_ps(_mm_unpackhi_epi16(zero, x)),
                                       _mm_castsi128_ps(_mm_unpackhi_epi16(zero, y))));
    }
    float tail = 0.0f;
    for (; i < n; i++) {
        tail += bf16_to_f32(load_bits(a + i * sa)) * bf16_to_f32(load_bits(b + i * sb));
    }
    float l[4], h[4];
    _mm_storeu_ps(l, lo);
    _mm_storeu_ps(h, hi);
    return ((l[0] + h[0]) + (l[1] + h[1])) + ((l[2] + h[2]) + (l[3] + h[3])) + tail;
}
#define DOT_F32 dot_f32_sse2
#else
/* The portable dot product: the same lanes and order as dot_f32_sse2. */
static inline float
dot_f32(const char *a, npy_intp sa, const char *b, npy_intp sb, npy_intp n)
{
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    npy_intp i = 0;
    for (; i + 8 <= n; i += 8) {
        for (int j = 0; j < 8; j++) {
            acc[j] += bf16_to_f32(load_bits(a + (i + j) * sa)) *
                      bf16_to_f32(load_bits(b + (i + j) * sb));
        }
    }
    float tail = 0.0f;
    for (; i < n; i++) {
        tail += bf16_to_f32(load_bits(a + i * sa)) * bf16_to_f32(load_bits(b + i * sb));
    }
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
}

#define DOT_F32 dot_f32
#endif

static void
bf16_dot(void *ip1, npy_intp is1, void *ip2, npy_intp is2, void *op, npy_intp n,
         void *NPY_UNUSED(ignore))
{
    float r = DOT_F32((const char *)ip1, is1, (const char *)ip2, is2, n);
    bf16_t h = f32_to_bf16(r);
    if (bf16_overflowed(r, h)) { /* a finite sum rounded to inf: "overflow", as float16's dot says
                                    (tests/test_linalg.py::test_rounding_overflow_to_inf_warns_like_float16) */
        bf16_raise_overflow();
    }
    store_bits(op, h);
}

static npy_bool
bf16_nonzero(void *data, void *arr)
{
    bf16_t h = load_bits(data);
    if (arr_is_swapped(arr)) {
        h = swap_bits(h);
    }
    return !bf16_iszero(h);
}

/* arange: the first two elements are set; continue the progression computed in float64, in
 * blocks rounded by the bulk float64 conversion (one rounding each, as f64_to_bf16;
 * tests/test_dropin.py::test_arange_rounds_the_float64_progression_once). */
static int
bf16_fill(void *buffer, npy_intp length, void *NPY_UNUSED(arr))
{
    char *b = (char *)buffer;
    double start = bf16_to_f64(load_bits(b));
    double delta = bf16_to_f64(load_bits(b + 2)) - start;
    double block[256], ramp[256]; /* ramp: 0, 1, 2, ... so the loop below needs no int64
                                    * conversion, which x86-64's baseline cannot vectorise */
    for (int j = 0; j < 256; j++) {
        ramp[j] = (double)j;
    }
    for (npy_intp i0 = 2; i0 < length; i0 += 256) {
        npy_intp n = length - i0 < 256 ? length - i0 : 256;
        double base = (double)i0; /* base + ramp[j] is the integer i0 + j exactly */
        for (npy_intp j = 0; j < n; j++) {
            block[j] = start + (base + ramp[j]) * delta;
        }
        bf16_from_f64_array(block, 8, b + 2 * i0, 2, (ptrdiff_t)n, NULL, NULL);
    }
    return 0;
}

static int
bf16_fillwithscalar(void *buffer, npy_intp length, void *value, void *NPY_UNUSED(arr))
{
    bf16_t h = load_bits(value);
    char *b = (char *)buffer;
    for (npy_intp i = 0; i < length; i++) {
        store_bits(b + 2 * i, h);
    }
    return 0;
}

/* np.fromstring/np.fromfile with `sep` call these two with the GIL released: pure C only
 * (csrc/number/parse.c), no Python C API. tests/test_parse.py runs them beside other threads.
 * Each value is stored in the descriptor's byte order (NumPy's own float16 and float32 store
 * native bits into a '>' array there: tests/test_parse.py::test_text_readers_keep_a_swapped_dtypes_order). */
static int
bf16_fromstr(char *str, void *ip, char **endptr, PyArray_Descr *descr)
{
    const char *end;
    bf16_t h;
    int r = bf16_parse_prefix(str, &end, &h);
    if (endptr != NULL) {
        *endptr = (char *)end;
    }
    if (r == 0) {
        store_bits(ip, PyArray_ISNBO(descr->byteorder) ? h : swap_bits(h));
    }
    return r;
}

static int
bf16_scanfunc(FILE *fp, void *dptr, char *NPY_UNUSED(ignore), PyArray_Descr *d)
{
    bf16_t h;
    int r = bf16_scan_stream(fp, &h);
    if (r == 1) {
        store_bits(dptr, PyArray_ISNBO(d->byteorder) ? h : swap_bits(h));
    }
    return r;
}

static int
bf16_sort_quick(void *start, npy_intp num, void *NPY_UNUSED(arr))
{
    bf16_sort_values(start, (ptrdiff_t)num);
    return 0;
}

static int
bf16_sort_stable(void *start, npy_intp num, void *NPY_UNUSED(arr))
{
    bf16_sort_values_stable(start, (ptrdiff_t)num);
    return 0;
}

/* NumPy calls this without the GIL: on a failed allocation it returns -1 with no exception
 * set, and NumPy raises MemoryError once it holds the GIL again (a PyErr_NoMemory here crashed;
 * tests/test_kernels_sort.py::test_argsort_out_of_memory_raises_memory_error) */
static int
bf16_argsort(void *vv, npy_intp *tosort, npy_intp n, void *NPY_UNUSED(arr))
{
    return bf16_argsort_stable(vv, (int64_t *)tosort, (ptrdiff_t)n) < 0 ? -1 : 0;
}

static PyArray_ArrFuncs bf16_arrfuncs;

static PyArray_DescrProto bf16_proto = {
    PyObject_HEAD_INIT(NULL)
    .typeobj = &PyBFloat16_Type,
    .kind = 'V',      /* not 'f': the dtype string must not claim to be an IEEE float16 */
    .type = 'E',
    .byteorder = '=',
    .flags = NPY_USE_SETITEM,
    .type_num = 0,
    .elsize = 2,
    .alignment = 2,
    .subarray = NULL,
    /* None, as NumPy's builtins have: np.dtype(bfloat16, False, True), which unpickling calls
     * before __setstate__, then copies instead of returning (and changing) the one descriptor
     * (tests/test_dropin.py::test_unpickling_a_swapped_dtype_leaves_the_native_one_alone) */
    .fields = Py_None,
    .names = NULL,
    .f = &bf16_arrfuncs,
};

/* ---- the DType class: built from a spec, keeping a legacy type number -------------------
 *
 * NumPy >= 2.5 creates such a DType itself (slot NPY_DT_legacy_descriptor_proto, numpy
 * gh-31302). On 2.0-2.4 the same result is assembled here in three steps, as NumPy's own
 * header backport does: take a type number through the legacy API, initialise our class from
 * the spec, then make the legacy descriptor the class's singleton. Either way the dtype keeps
 * its type number, ArrFuncs, legacy casts and ufunc loops, and gains the spec's common_dtype
 * (np.result_type, np.concatenate, ...) and the string casts of casts.c. */

#ifndef NPY_DT_legacy_descriptor_proto
#define NPY_DT_legacy_descriptor_proto ((1 << 11) - 1) /* the slot id of NumPy 2.5's API */
#endif
#define BF16_NPY_2_5_API_VERSION 0x00000016
#define BF16_DT_LEGACY_FLAG 1 /* NumPy's NPY_DT_LEGACY bit (private in its headers) */

/* NumPy's own entry point, not the header's inline backport where the headers have one. */
#ifdef _PyArrayInitDTypeMeta_FromSpec
#define bf16_numpy_init_from_spec _PyArrayInitDTypeMeta_FromSpec
#else
#define bf16_numpy_init_from_spec PyArrayInitDTypeMeta_FromSpec
#endif

/*
 * repr(dtype) is "dtype(bfloat16)" on every NumPy (2.0-2.3 would print "dtype('void16')",
 * also inside error messages), or "dtype(bfloat16_dtype.bfloat16)" once ml_dtypes is loaded.
 * The slots are set after PyType_Ready, so Python-level lookups still find np.dtype.__repr__
 * and arrayprint keeps printing "dtype=bfloat16"; NumPy before 2.5 also insists that a
 * spec-built class has its own repr and str.
 */
static PyObject *
bf16_dtype_repr(PyObject *self)
{
    /* Qualified once ml_dtypes' bfloat16 is loaded too, so that NumPy's messages that name both
     * types tell them apart (README "Interop"; tests/test_interop_repr.py); a byte-swapped
     * descriptor says so, as float16's dtype('>f2') does
     * (tests/test_interop_repr.py::test_byte_swapped_dtype_repr_names_its_order). */
    const char *name = bf16_dtype_repr_qualified() ? "dtype(bfloat16_dtype.bfloat16)"
                                                   : "dtype(bfloat16)";
    char order = ((PyArray_Descr *)self)->byteorder;
    if (PyArray_ISNBO(order)) {
        return PyUnicode_FromString(name);
    }
    return PyUnicode_FromFormat("%s.newbyteorder('%c')", name, order);
}

static PyObject *
bf16_dtype_str(PyObject *self)
{
    return PyArrayDescr_Type.tp_str(self);
}

static PyArray_DTypeMeta BFloat16DType = {{{
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numpy.dtype[bfloat16]", /* the name NumPy gives a legacy user dtype's class */
    .tp_basicsize = sizeof(_PyArray_LegacyDescr),
    .tp_flags = Py_TPFLAGS_DEFAULT,
}}};

/*
 * The promotion table of README.md ("Promotion"), float16's rules with bfloat16 in its place:
 * bool/int8/uint8 and Python int/float give bfloat16; float16, int16, uint16 and float32 give
 * float32; wider integers and float64 give float64; complex follows the float result;
 * str/bytes give a string wide enough for the digits, as for float16.
 */
static PyArray_DTypeMeta *
bf16_common_dtype(PyArray_DTypeMeta *cls, PyArray_DTypeMeta *other)
{
    PyArray_DTypeMeta *res = NULL;
    if (other == cls || other == &PyArray_PyLongDType || other == &PyArray_PyFloatDType) {
        res = cls;
    }
    else if (other == &PyArray_PyComplexDType) {
        res = &PyArray_CFloatDType;
    }
    else if (bf16_is_other_bfloat16(other)) { /* ml_dtypes' bfloat16: ours, in either import order */
        res = cls;
    }
    else if (other->type_num >= 0 && other->type_num < NPY_NTYPES_LEGACY) { /* NumPy's own */
        switch (other->type_num) {
            case NPY_BOOL: case NPY_BYTE: case NPY_UBYTE:
                res = cls;
                break;
            case NPY_SHORT: case NPY_USHORT: case NPY_HALF: case NPY_FLOAT:
                res = &PyArray_FloatDType;
                break;
            case NPY_INT: case NPY_UINT: case NPY_LONG: case NPY_ULONG:
            case NPY_LONGLONG: case NPY_ULONGLONG: case NPY_DOUBLE:
                res = &PyArray_DoubleDType;
                break;
            case NPY_LONGDOUBLE: case NPY_CFLOAT: case NPY_CDOUBLE: case NPY_CLONGDOUBLE:
            case NPY_STRING: case NPY_UNICODE: /* as float16: the string cast sizes it */
                res = other;
                break;
            default: /* object decides for itself; datetimes and void have no common type */
                break;
        }
    }
    if (res == NULL) {
        Py_INCREF(Py_NotImplemented);
        return (PyArray_DTypeMeta *)Py_NotImplemented;
    }
    Py_INCREF(res);
    return res;
}

static PyArray_Descr *
bf16_default_descr(PyArray_DTypeMeta *cls)
{
    Py_INCREF(cls->singleton);
    return cls->singleton;
}

static PyArray_Descr *
bf16_discover_descr(PyArray_DTypeMeta *cls, PyObject *NPY_UNUSED(obj))
{
    return bf16_default_descr(cls);
}

/*
 * The scalar types an element is set from directly by setitem: Python's numbers and text (as
 * NumPy's default), and datetime64/timedelta64 scalars, which give their count of units as
 * they do for float16 (no cast between the array types exists:
 * tests/test_scalar.py::test_none_and_datetimes_like_float16).
 */
static int
bf16_is_known_scalar_type(PyArray_DTypeMeta *NPY_UNUSED(cls), PyTypeObject *type)
{
    return type == &PyFloat_Type || type == &PyLong_Type || type == &PyBool_Type ||
           type == &PyComplex_Type || type == &PyUnicode_Type || type == &PyBytes_Type ||
           type == &PyDatetimeArrType_Type || type == &PyTimedeltaArrType_Type;
}

static PyArray_Descr *
bf16_ensure_canonical(PyArray_Descr *descr)
{
    if (PyArray_ISNBO(descr->byteorder)) {
        Py_INCREF(descr);
        return descr;
    }
    return PyArray_DescrNewByteorder(descr, NPY_NATIVE);
}

static PyObject *
bf16_dt_getitem(PyArray_Descr *descr, char *data)
{
    bf16_t h = load_bits(data);
    return PyFloat_FromDouble(bf16_to_f64(PyArray_ISNBO(descr->byteorder) ? h : swap_bits(h)));
}

static int
bf16_dt_setitem(PyArray_Descr *descr, PyObject *item, char *data)
{
    bf16_t h;
    if (bf16_from_object_reporting(item, &h) < 0) {
        return -1;
    }
    store_bits(data, PyArray_ISNBO(descr->byteorder) ? h : swap_bits(h));
    return 0;
}

/*
 * NPY_DT_get_constant (NumPy >= 2.4): the format's constants, which np.finfo reads
 * (bfloat16_dtype/_finfo.py; tests/test_finfo.py checks each against the spec's bit patterns).
 * The ids are those of NumPy 2.4's dtype_api.h, defined here for builds against older headers.
 */
#define BF16_NPY_2_4_API_VERSION 0x00000015
#define BF16_DT_get_constant 12
#define BF16_CONSTANT_zero 1
#define BF16_CONSTANT_one 2
#define BF16_CONSTANT_maximum_finite 4
#define BF16_CONSTANT_minimum_finite 5
#define BF16_CONSTANT_inf 6
#define BF16_CONSTANT_ninf 7
#define BF16_CONSTANT_nan 8
#define BF16_CONSTANT_finfo_radix 9
#define BF16_CONSTANT_finfo_eps 10
#define BF16_CONSTANT_finfo_smallest_normal 11
#define BF16_CONSTANT_finfo_smallest_subnormal 12
#define BF16_CONSTANT_finfo_nmant ((1 << 16) + 0)
#define BF16_CONSTANT_finfo_min_exp ((1 << 16) + 1)
#define BF16_CONSTANT_finfo_max_exp ((1 << 16) + 2)
#define BF16_CONSTANT_finfo_decimal_digits ((1 << 16) + 3)

/* 1: written (a bfloat16 in the descriptor's byte order, or an npy_intp); 0: no such constant */
static int
bf16_get_constant(PyArray_Descr *descr, int constant_id, void *data)
{
    npy_intp count;
    bf16_t h;
    switch (constant_id) {
        case BF16_CONSTANT_zero: h = 0x0000; break;
        case BF16_CONSTANT_one: h = 0x3F80; break;
        case BF16_CONSTANT_maximum_finite: h = 0x7F7F; break; /* (2 - 2^-7) * 2^127 */
        case BF16_CONSTANT_minimum_finite: h = 0xFF7F; break;
        case BF16_CONSTANT_inf: h = 0x7F80; break;
        case BF16_CONSTANT_ninf: h = 0xFF80; break;
        case BF16_CONSTANT_nan: h = BF16_QNAN; break;
        case BF16_CONSTANT_finfo_radix: h = 0x4000; break;               /* 2 */
        case BF16_CONSTANT_finfo_eps: h = 0x3C00; break;                 /* 2^-7 */
        case BF16_CONSTANT_finfo_smallest_normal: h = 0x0080; break;     /* 2^-126 */
        case BF16_CONSTANT_finfo_smallest_subnormal: h = 0x0001; break;  /* 2^-133 */
        /* integers, as NumPy gives them for float16 (C's MANT_DIG - 1, MIN_EXP - 1, MAX_EXP, DIG) */
        case BF16_CONSTANT_finfo_nmant: count = 7; goto integer;
        case BF16_CONSTANT_finfo_min_exp: count = -126; goto integer;
        case BF16_CONSTANT_finfo_max_exp: count = 128; goto integer;
        case BF16_CONSTANT_finfo_decimal_digits: count = 2; goto integer; /* floor(7 log10 2) */
        default:
            return 0;
    }
    store_bits(data, PyArray_ISNBO(descr->byteorder) ? h : swap_bits(h));
    return 1;
integer:
    memcpy(data, &count, sizeof count);
    return 1;
}

/* NumPy 2.0-2.4 leave our class np.dtype's __new__, which refuses a subclass with a
 * SystemError: called with no arguments the class gives the dtype, as float16's does, and
 * float16's TypeError otherwise (tests/test_dropin.py::test_the_dtype_class_makes_the_dtype). */
static PyObject *
bf16_dtype_class_new(PyTypeObject *NPY_UNUSED(cls), PyObject *args, PyObject *kwds)
{
    if (PyTuple_GET_SIZE(args) != 0 || (kwds != NULL && PyDict_GET_SIZE(kwds) != 0)) {
        PyErr_SetString(PyExc_TypeError, "currently only the no-argument instantiation is "
                                         "supported; use `np.dtype` instead.");
        return NULL;
    }
    return (PyObject *)PyArray_DescrFromType(BFloat16DType.type_num);
}

/* NumPy 2.0-2.4: the three steps described above. */
static int
init_from_spec_before_2_5(PyArrayDTypeMeta_Spec *spec)
{
    /* 1. A type number from the legacy API. The placeholder scalar type (object) keeps NumPy
     *    from mapping bfloat16 scalars to the class it creates for the legacy descriptor. */
    static PyArray_DescrProto numbered;
    numbered = bf16_proto;
    numbered.typeobj = &PyBaseObject_Type;
    int num = PyArray_RegisterDataType(&numbered);
    if (num < 0) {
        return -1;
    }
    /* 2. Our class from the spec, without the slot these versions do not know. */
    PyArrayDTypeMeta_Spec rest = *spec;
    rest.slots = spec->slots + 1;
    if (bf16_numpy_init_from_spec(&BFloat16DType, &rest) < 0) {
        return -1;
    }
    /* 3. The legacy descriptor becomes an instance of our class and its singleton. */
    PyArray_Descr *descr = PyArray_DescrFromType(num); /* new reference, kept by the class */
    if (descr == NULL) {
        return -1;
    }
    PyObject *auto_class = (PyObject *)Py_TYPE(descr);
    Py_INCREF(&BFloat16DType);
    Py_SET_TYPE(descr, (PyTypeObject *)&BFloat16DType);
    Py_DECREF(auto_class);
    Py_INCREF(&PyBFloat16_Type);
    Py_XSETREF(descr->typeobj, &PyBFloat16_Type);
    BFloat16DType.type_num = num;
    BFloat16DType.singleton = descr;
    BFloat16DType.flags |= BF16_DT_LEGACY_FLAG;
    *PyDataType_GetArrFuncs(descr) = bf16_arrfuncs;
    ((PyTypeObject *)&BFloat16DType)->tp_new = bf16_dtype_class_new;
    return 0;
}

static int
register_dtype(void)
{
    PyType_Slot slots[] = {
        {NPY_DT_legacy_descriptor_proto, &bf16_proto}, /* must come first */
        {NPY_DT_common_dtype, bf16_common_dtype},
        {NPY_DT_discover_descr_from_pyobject, bf16_discover_descr},
        {_NPY_DT_is_known_scalar_type, bf16_is_known_scalar_type}, /* same id in NumPy 2.0-2.5 */
        {NPY_DT_default_descr, bf16_default_descr},
        {NPY_DT_ensure_canonical, bf16_ensure_canonical},
        {NPY_DT_getitem, bf16_dt_getitem},
        {NPY_DT_setitem, bf16_dt_setitem},
        {BF16_DT_get_constant, bf16_get_constant}, /* NumPy >= 2.4: removed below before */
        {0, NULL},
    };
    if (PyArray_RUNTIME_VERSION < BF16_NPY_2_4_API_VERSION) {
        slots[sizeof slots / sizeof slots[0] - 2] = (PyType_Slot){0, NULL};
    }
    PyArrayMethod_Spec **casts = bf16_spec_casts();
    if (casts == NULL) {
        return -1;
    }
    PyArrayDTypeMeta_Spec spec = {
        .typeobj = &PyBFloat16_Type,
        .flags = NPY_DT_NUMERIC,
        .casts = casts,
        .slots = slots,
        .baseclass = NULL,
    };
    Py_SET_TYPE(&BFloat16DType, &PyArrayDTypeMeta_Type);
    ((PyTypeObject *)&BFloat16DType)->tp_base = &PyArrayDescr_Type;
    if (PyType_Ready((PyTypeObject *)&BFloat16DType) < 0) {
        return -1;
    }
    ((PyTypeObject *)&BFloat16DType)->tp_repr = bf16_dtype_repr;
    ((PyTypeObject *)&BFloat16DType)->tp_str = bf16_dtype_str;
    if (PyArray_RUNTIME_VERSION >= BF16_NPY_2_5_API_VERSION) {
        return bf16_numpy_init_from_spec(&BFloat16DType, &spec);
    }
    return init_from_spec_before_2_5(&spec);
}

int
init_dtype(PyObject *module)
{
    PyArray_InitArrFuncs(&bf16_arrfuncs);
    bf16_arrfuncs.getitem = bf16_getitem;
    bf16_arrfuncs.setitem = bf16_setitem;
    bf16_arrfuncs.copyswapn = bf16_copyswapn;
    bf16_arrfuncs.copyswap = bf16_copyswap;
    bf16_arrfuncs.compare = bf16_compare;
    bf16_arrfuncs.argmax = arrfunc_argmax;
    bf16_arrfuncs.argmin = arrfunc_argmin;
    bf16_arrfuncs.dotfunc = bf16_dot;
    bf16_arrfuncs.nonzero = bf16_nonzero;
    bf16_arrfuncs.fill = bf16_fill;
    bf16_arrfuncs.fillwithscalar = bf16_fillwithscalar;
    bf16_arrfuncs.fromstr = bf16_fromstr;
    bf16_arrfuncs.scanfunc = bf16_scanfunc;
    bf16_arrfuncs.sort[NPY_QUICKSORT] = bf16_sort_quick;
    bf16_arrfuncs.sort[NPY_HEAPSORT] = bf16_sort_quick;
    bf16_arrfuncs.sort[NPY_STABLESORT] = bf16_sort_stable;
    bf16_arrfuncs.argsort[NPY_QUICKSORT] = bf16_argsort;
    bf16_arrfuncs.argsort[NPY_HEAPSORT] = bf16_argsort;
    bf16_arrfuncs.argsort[NPY_STABLESORT] = bf16_argsort;

    Py_SET_TYPE(&bf16_proto, &PyArrayDescr_Type);
    if (register_dtype() < 0) {
        return -1;
    }
    bf16_type_num = BFloat16DType.type_num;
    bf16_descr = PyArray_DescrFromType(bf16_type_num);
    if (bf16_descr == NULL) {
        return -1;
    }
    /* bfloat16.dtype, as ml_dtypes' types have (instances already had it from np.generic) */
    if (PyDict_SetItemString(PyBFloat16_Type.tp_dict, "dtype", (PyObject *)bf16_descr) < 0) {
        return -1;
    }
    PyType_Modified(&PyBFloat16_Type);
    Py_INCREF(bf16_descr);
    if (PyModule_AddObject(module, "_dtype", (PyObject *)bf16_descr) < 0) {
        Py_DECREF(bf16_descr);
        return -1;
    }
    return PyModule_AddIntConstant(module, "_type_num", bf16_type_num);
}
