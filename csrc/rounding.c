/*
 * rounding.c - float32/float64 -> bfloat16 in a chosen rounding mode (nearest-even, toward
 * zero, stochastic), optionally flushing subnormal results to zero: the kernel behind
 * bfloat16_dtype.rounding.to_bfloat16. Every value goes through bf16.h (bf16_round_bits,
 * f64_to_bf16_mode, bf16_flush_subnormal); this file only loops and checks arguments.
 *
 * The random bits come from the caller (numpy.random.Generator draws them in Python), so the
 * randomness is reproducible and no generator state lives here.
 */
#include "module.h"
#include "cpu.h"

#include <stddef.h>

#if defined(__GNUC__) || defined(__clang__)
#define RINLINE static inline __attribute__((always_inline))
#else
#define RINLINE static inline
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ROUND_X86 1
#define RTARGET_AVX2 __attribute__((target("avx2,fma")))
#endif

/* Returns nonzero when a finite input became +-inf (an overflow, reported like a cast's). */
RINLINE unsigned from_f32_body(const char *src, char *dst, const char *rnd, ptrdiff_t n,
                               enum bf16_rounding mode, int flush)
{
    unsigned ovf = 0;
    for (ptrdiff_t i = 0; i < n; i++) {
        uint32_t u;
        uint16_t r = 0;
        memcpy(&u, src + 4 * i, 4);
        if (mode == BF16_ROUND_STOCHASTIC) memcpy(&r, rnd + 2 * i, 2);
        bf16_t h = bf16_round_bits(u, mode, r);
        if (flush) h = bf16_flush_subnormal(h);
        ovf |= (unsigned)(((u & 0x7fffffffu) < 0x7f800000u) & ((h & BF16_ABS) == BF16_INF));
        memcpy(dst + 2 * i, &h, 2);
    }
    return ovf;
}

RINLINE unsigned from_f64_body(const char *src, char *dst, const char *rnd, ptrdiff_t n,
                               enum bf16_rounding mode, int flush)
{
    unsigned ovf = 0;
    for (ptrdiff_t i = 0; i < n; i++) {
        double d;
        uint64_t r = 0;
        memcpy(&d, src + 8 * i, 8);
        if (mode == BF16_ROUND_STOCHASTIC) memcpy(&r, rnd + 8 * i, 8);
        bf16_t h = f64_to_bf16_mode(d, mode, r);
        if (flush) h = bf16_flush_subnormal(h);
        ovf |= (unsigned)(isfinite(d) && bf16_isinf(h));
        memcpy(dst + 2 * i, &h, 2);
    }
    return ovf;
}

/* One function per (source, target ISA); the switch hands the body constant mode and flush. */
#define ROUND_DISPATCH(NAME, ATTR, BODY)                                                        \
    ATTR static unsigned NAME(const char *s, char *d, const char *r, ptrdiff_t n, int mode,    \
                              int flush)                                                        \
    {                                                                                           \
        switch (mode * 2 + (flush != 0)) {                                                      \
        case 0: return BODY(s, d, r, n, BF16_ROUND_NEAREST_EVEN, 0);                            \
        case 1: return BODY(s, d, r, n, BF16_ROUND_NEAREST_EVEN, 1);                            \
        case 2: return BODY(s, d, r, n, BF16_ROUND_TOWARD_ZERO, 0);                             \
        case 3: return BODY(s, d, r, n, BF16_ROUND_TOWARD_ZERO, 1);                             \
        case 4: return BODY(s, d, r, n, BF16_ROUND_STOCHASTIC, 0);                              \
        default: return BODY(s, d, r, n, BF16_ROUND_STOCHASTIC, 1);                             \
        }                                                                                       \
    }

ROUND_DISPATCH(from_f32_baseline, , from_f32_body)
ROUND_DISPATCH(from_f64_baseline, , from_f64_body)
#if defined(ROUND_X86)
ROUND_DISPATCH(from_f32_avx2, RTARGET_AVX2, from_f32_body)
#endif

static int
check_array(PyObject *obj, const char *name, int type_num, int writeable)
{
    if (!PyArray_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "_round_to_bf16: %s must be a numpy array, got %R", name,
                     (PyObject *)Py_TYPE(obj));
        return -1;
    }
    PyArrayObject *arr = (PyArrayObject *)obj;
    if (type_num >= 0 && PyArray_TYPE(arr) != type_num) {
        PyErr_Format(PyExc_TypeError, "_round_to_bf16: %s has dtype %R, expected type number %d",
                     name, (PyObject *)PyArray_DESCR(arr), type_num);
        return -1;
    }
    if (!PyArray_ISNOTSWAPPED(arr)) { /* the loops read and write native bits */
        PyErr_Format(PyExc_ValueError, "_round_to_bf16: %s must be in native byte order, got %R",
                     name, (PyObject *)PyArray_DESCR(arr));
        return -1;
    }
    if (!PyArray_IS_C_CONTIGUOUS(arr)) {
        PyErr_Format(PyExc_ValueError, "_round_to_bf16: %s must be C-contiguous", name);
        return -1;
    }
    if (writeable && !PyArray_ISWRITEABLE(arr)) {
        PyErr_Format(PyExc_ValueError, "_round_to_bf16: %s must be writeable", name);
        return -1;
    }
    return 0;
}

/* _round_to_bf16(src, dst, mode, flush, random) -> None; random is None unless stochastic. */
static PyObject *
round_to_bf16_py(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *src_obj, *dst_obj, *rnd_obj;
    int mode, flush;
    if (!PyArg_ParseTuple(args, "OOipO", &src_obj, &dst_obj, &mode, &flush, &rnd_obj)) {
        return NULL;
    }
    if (mode < BF16_ROUND_NEAREST_EVEN || mode > BF16_ROUND_STOCHASTIC) {
        PyErr_Format(PyExc_ValueError, "_round_to_bf16: mode must be 0, 1 or 2, got %d", mode);
        return NULL;
    }
    if (check_array(src_obj, "src", -1, 0) < 0 || check_array(dst_obj, "dst", bf16_type_num, 1) < 0) {
        return NULL;
    }
    PyArrayObject *src = (PyArrayObject *)src_obj, *dst = (PyArrayObject *)dst_obj;
    int src_type = PyArray_TYPE(src);
    if (src_type != NPY_FLOAT32 && src_type != NPY_FLOAT64) {
        PyErr_Format(PyExc_TypeError, "_round_to_bf16: src must be float32 or float64, got %R",
                     (PyObject *)PyArray_DESCR(src));
        return NULL;
    }
    npy_intp n = PyArray_SIZE(src);
    if (PyArray_SIZE(dst) != n) {
        PyErr_Format(PyExc_ValueError, "_round_to_bf16: dst has %zd elements, src has %zd",
                     (Py_ssize_t)PyArray_SIZE(dst), (Py_ssize_t)n);
        return NULL;
    }
    const char *rnd = NULL;
    if (mode == BF16_ROUND_STOCHASTIC) {
        int rnd_type = src_type == NPY_FLOAT32 ? NPY_UINT16 : NPY_UINT64;
        if (rnd_obj == Py_None) {
            PyErr_SetString(PyExc_ValueError, "_round_to_bf16: stochastic rounding needs random bits");
            return NULL;
        }
        if (check_array(rnd_obj, "random", rnd_type, 0) < 0) {
            return NULL;
        }
        if (PyArray_SIZE((PyArrayObject *)rnd_obj) != n) {
            PyErr_Format(PyExc_ValueError, "_round_to_bf16: random has %zd elements, src has %zd",
                         (Py_ssize_t)PyArray_SIZE((PyArrayObject *)rnd_obj), (Py_ssize_t)n);
            return NULL;
        }
        rnd = PyArray_BYTES((PyArrayObject *)rnd_obj);
    }
    else if (rnd_obj != Py_None) {
        PyErr_SetString(PyExc_ValueError, "_round_to_bf16: random bits are for stochastic mode only");
        return NULL;
    }

    const char *s = PyArray_BYTES(src);
    char *d = PyArray_BYTES(dst);
    unsigned ovf;
    NPY_BEGIN_THREADS_DEF;
    NPY_BEGIN_THREADS;
    if (src_type == NPY_FLOAT64) {
        ovf = from_f64_baseline(s, d, rnd, n, mode, flush);
    }
#if defined(ROUND_X86)
    else if (bf16_cpu_tier() >= BF16_TIER_AVX2) {
        ovf = from_f32_avx2(s, d, rnd, n, mode, flush);
    }
#endif
    else {
        ovf = from_f32_baseline(s, d, rnd, n, mode, flush);
    }
    NPY_END_THREADS;
    /* Report overflow through numpy's errstate, like a cast: a warning by default. */
    if (ovf && PyUFunc_GiveFloatingpointErrors("cast", NPY_FPE_OVERFLOW) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef rounding_methods[] = {
    {"_round_to_bf16", round_to_bf16_py, METH_VARARGS,
     "_round_to_bf16(src, dst, mode, flush, random): float32/float64 -> bfloat16 in a rounding "
     "mode (0 nearest-even, 1 toward zero, 2 stochastic with uint16/uint64 random bits)."},
    {NULL, NULL, 0, NULL},
};

int
init_rounding(PyObject *module)
{
    return PyModule_AddFunctions(module, rounding_methods);
}
