/*
 * dtype.c - registration of the bfloat16 dtype with NumPy's user-dtype API: the descriptor
 * and its ArrFuncs (getitem/setitem, copyswap, compare, argmax/argmin, dot, fill, sort, ...).
 */
#include "module.h"
#include "kernels.h"
#include "number/parse.h"
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

static PyObject *
bf16_getitem(void *data, void *arr)
{
    bf16_t h = load_bits(data);
    if (arr_is_swapped(arr)) {
        h = swap_bits(h);
    }
    return bf16_scalar_from_bits(h);
}

static int
bf16_setitem(PyObject *item, void *data, void *arr)
{
    bf16_t h;
    if (bf16_from_object(item, &h) < 0) {
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

/* Dot product: exact products, float32 accumulation in 8 lanes, one rounding at the end. */
static float
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

static void
bf16_dot(char *ip1, npy_intp is1, char *ip2, npy_intp is2, char *op, npy_intp n,
         void *NPY_UNUSED(ignore))
{
    float acc = dot_f32(ip1, is1, ip2, is2, n);
    store_bits(op, f32_to_bf16(acc));
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

/* arange: the first two elements are set; continue the progression computed in float64. */
static int
bf16_fill(void *buffer, npy_intp length, void *NPY_UNUSED(arr))
{
    char *b = (char *)buffer;
    double start = bf16_to_f64(load_bits(b));
    double delta = bf16_to_f64(load_bits(b + 2)) - start;
    for (npy_intp i = 2; i < length; i++) {
        store_bits(b + 2 * i, f64_to_bf16(start + (double)i * delta));
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
 * (csrc/number/parse.c), no Python C API. tests/test_parse.py runs them beside other threads. */
static int
bf16_fromstr(char *str, void *ip, char **endptr, PyArray_Descr *NPY_UNUSED(descr))
{
    const char *end;
    bf16_t h;
    int r = bf16_parse_prefix(str, &end, &h);
    if (endptr != NULL) {
        *endptr = (char *)end;
    }
    if (r == 0) {
        store_bits(ip, h);
    }
    return r;
}

static int
bf16_scanfunc(FILE *fp, void *dptr, char *NPY_UNUSED(ignore), PyArray_Descr *NPY_UNUSED(d))
{
    bf16_t h;
    int r = bf16_scan_stream(fp, &h);
    if (r == 1) {
        store_bits(dptr, h);
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

static int
bf16_argsort(void *vv, npy_intp *tosort, npy_intp n, void *NPY_UNUSED(arr))
{
    if (bf16_argsort_stable(vv, (int64_t *)tosort, (ptrdiff_t)n) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static PyArray_ArrFuncs bf16_arrfuncs;

static PyArray_DescrProto bf16_proto = {
    PyObject_HEAD_INIT(NULL)
    .typeobj = &PyBFloat16_Type,
    .kind = 'V',      /* not 'f': the dtype string must not claim to be an IEEE float16 */
    .type = 'E',
    .byteorder = '=',
    .flags = NPY_USE_GETITEM | NPY_USE_SETITEM,
    .type_num = 0,
    .elsize = 2,
    .alignment = 2,
    .subarray = NULL,
    .fields = NULL,
    .names = NULL,
    .f = &bf16_arrfuncs,
};

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
    int num = PyArray_RegisterDataType(&bf16_proto);
    if (num < 0) {
        return -1;
    }
    bf16_type_num = num;
    bf16_descr = PyArray_DescrFromType(num);
    if (bf16_descr == NULL) {
        return -1;
    }
    Py_INCREF(bf16_descr);
    if (PyModule_AddObject(module, "_dtype", (PyObject *)bf16_descr) < 0) {
        Py_DECREF(bf16_descr);
        return -1;
    }
    return PyModule_AddIntConstant(module, "_type_num", num);
}
