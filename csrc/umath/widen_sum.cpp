/*
 * umath/widen_sum.cpp - the private ufunc behind numerics.sum/mean and the dask helpers' chunk
 * sums: float32 + bfloat16 -> float32, whose reduce sums bfloat16 into a float32 result.
 *
 * np.sum(x, dtype=np.float32) on bfloat16 runs NumPy's float32 loop on buffered casts: five
 * times the time of np.sum(x) (README, "Reductions accumulate in float32"). NumPy cannot be
 * given a (float32, bfloat16) -> float32 loop on np.add itself: add.accumulate (np.cumsum with
 * dtype=float32) resolves the same loop and rejects one whose operands differ. A ufunc of our
 * own has no accumulate users: its reduce is np.sum(x, dtype=np.float32) with every option
 * (axis, keepdims, where, initial, out) and the loop reads the bfloat16 operand directly.
 *
 * The loop: a reduction into one element (NumPy passes the output at stride 0, aliasing the
 * first operand) adds the pairwise float32 sum of the bfloat16 operand (bf16_sum_f32, the
 * kernel of np.sum; tests/test_kernels_reduce.py::test_float32_sums_within_the_pairwise_bound);
 * any other call adds elementwise in float32, as NumPy's float32 loop does for outer-axis
 * reductions (the same bits, a NaN's payload aside: where two NaNs meet, the compiler's
 * operand order picks one, so a column of a +NaN then a -NaN may end -NaN where NumPy's gives
 * the first; ::test_float32_column_sums_match_numpy_float32). Options and
 * layouts: tests/test_numerics.py::test_sum_as_float32_like_numpy.
 */
#include "kernels.h"
#include "umath/umath.h"

#include <cstring>

namespace umath {

static int
widen_add_loop(PyArrayMethod_Context *, char *const data[], npy_intp const dims[],
               npy_intp const steps[], NpyAuxData *)
{
    char *a = data[0], *b = data[1], *o = data[2];
    npy_intp n = dims[0];
    if (a == o && steps[0] == 0 && steps[2] == 0) {
        float acc;
        memcpy(&acc, a, sizeof acc);
        acc += bf16_sum_f32(b, (ptrdiff_t)steps[1], (ptrdiff_t)n);
        memcpy(o, &acc, sizeof acc);
        return 0;
    }
    if (steps[0] == sizeof(float) && steps[1] == sizeof(bf16_t) && steps[2] == sizeof(float)) {
        bf16_add_to_f32(a, b, o, (ptrdiff_t)n); /* outer-axis reductions of C-order arrays */
        return 0;
    }
    enum { CHUNK = 512 };
    float wide[CHUNK];
    while (n > 0) {
        npy_intp m = n < CHUNK ? n : CHUNK;
        bf16_to_f32_array(b, (ptrdiff_t)steps[1], wide, (ptrdiff_t)sizeof(float), (ptrdiff_t)m);
        for (npy_intp i = 0; i < m; i++, a += steps[0], o += steps[2]) {
            float x;
            memcpy(&x, a, sizeof x);
            x += wide[i];
            memcpy(o, &x, sizeof x);
        }
        b += m * steps[1];
        n -= m;
    }
    return 0;
}

/* A reduction starts from +0, as NumPy's float32 add.reduce does (np.sum([-0.0]) is 0.0). */
static int
widen_add_initial(PyArrayMethod_Context *, npy_bool, void *initial)
{
    const float zero = 0.0f;
    memcpy(initial, &zero, sizeof zero);
    return 1;
}

int
register_widening_sum(PyObject *module)
{
    PyObject *ufunc = PyUFunc_FromFuncAndData(NULL, NULL, NULL, 0, 2, 1, PyUFunc_Zero,
                                              "_sum_f32",
                                              "float32 + bfloat16 -> float32 (reduce: the float32 "
                                              "sum of bfloat16 values)",
                                              0);
    if (ufunc == NULL) {
        return -1;
    }
    PyArray_Descr *f32 = PyArray_DescrFromType(NPY_FLOAT32);
    if (f32 == NULL) {
        Py_DECREF(ufunc);
        return -1;
    }
    PyArray_DTypeMeta *dtypes[3] = {NPY_DTYPE(f32), NPY_DTYPE(bf16_descr), NPY_DTYPE(f32)};
    Py_DECREF(f32); /* a builtin descriptor (and its DType) lives as long as NumPy */
    PyType_Slot slots[] = {{NPY_METH_strided_loop, (void *)widen_add_loop},
                           {NPY_METH_unaligned_strided_loop, (void *)widen_add_loop},
                           {NPY_METH_get_reduction_initial, (void *)widen_add_initial},
                           {0, NULL}};
    if (add_reducing_binary_loop(ufunc, "_sum_f32", dtypes, slots) < 0) {
        Py_DECREF(ufunc);
        return -1;
    }
    int r = PyModule_AddObjectRef(module, "_sum_f32", ufunc);
    Py_DECREF(ufunc);
    return r;
}

} /* namespace umath */
