/*
 * matmul_py.c - numpy's matmul-family gufuncs on bfloat16 (np.matmul / @, np.vecdot,
 * np.matvec, np.vecmat) and the C entry behind bfloat16_dtype.matmul. All of them call the
 * one mixed-precision kernel in matmul/gemm.c: exact bfloat16 products, float32 sums,
 * one rounding of each output element.
 */
#include <fenv.h>

#include "module.h"
#include "matmul/gemm.h"
#include "cpu.h"

/*
 * Sets the Python exception for a failed bf16_gemm call (rc < 0). Takes the GIL itself: numpy
 * may run the gufunc loops below with the GIL released.
 */
static void
set_gemm_error(int rc, npy_intp M, npy_intp N, npy_intp K, int nthreads)
{
    PyGILState_STATE st = PyGILState_Ensure();
    if (rc == BF16_GEMM_ETOOBIG) {
        PyErr_Format(PyExc_ValueError,
                     "bfloat16 matmul: (M, N, K) = (%zd, %zd, %zd) exceeds the kernel's limit of "
                     "2**40 per dimension", (Py_ssize_t)M, (Py_ssize_t)N, (Py_ssize_t)K);
    } else {
        PyErr_Format(PyExc_MemoryError,
                     "bfloat16 matmul: could not allocate the kernel's workspace (up to %lld bytes) "
                     "for (M, N, K) = (%zd, %zd, %zd)",
                     (long long)bf16_gemm_workspace_bytes(M, N, K, nthreads),
                     (Py_ssize_t)M, (Py_ssize_t)N, (Py_ssize_t)K);
    }
    PyGILState_Release(st);
}

/* (m,n),(n,p)->(m,p); numpy passes outer-loop steps then the core strides */
static void
matmul_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *NPY_UNUSED(data))
{
    npy_intp m = dims[1], n = dims[2], p = dims[3];
    int rc = bf16_gemm_batch(dims[0], m, p, n, args[0], steps[0], steps[3], steps[4],
                             args[1], steps[1], steps[5], steps[6],
                             args[2], steps[2], steps[7], steps[8], 1, 0);
    if (rc < 0) {
        set_gemm_error(rc, m, p, n, 0);
    }
}

/* (n),(n)->(): a 1 x n row times an n x 1 column */
static void
vecdot_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *NPY_UNUSED(data))
{
    npy_intp n = dims[1];
    int rc = bf16_gemm_batch(dims[0], 1, 1, n, args[0], steps[0], 0, steps[3],
                             args[1], steps[1], steps[4], 0, args[2], steps[2], 0, 0, 1, 0);
    if (rc < 0) {
        set_gemm_error(rc, 1, 1, n, 0);
    }
}

/* matvec (m,n),(n)->(m) */
static void
matvec_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *NPY_UNUSED(data))
{
    npy_intp m = dims[1], n = dims[2];
    int rc = bf16_gemm_batch(dims[0], m, 1, n, args[0], steps[0], steps[3], steps[4],
                             args[1], steps[1], steps[5], 0, args[2], steps[2], steps[6], 0, 1, 0);
    if (rc < 0) {
        set_gemm_error(rc, m, 1, n, 0);
    }
}

/* vecmat (n),(n,m)->(m) */
static void
vecmat_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *NPY_UNUSED(data))
{
    npy_intp n = dims[1], m = dims[2];
    int rc = bf16_gemm_batch(dims[0], 1, m, n, args[0], steps[0], 0, steps[3],
                             args[1], steps[1], steps[4], steps[5], args[2], steps[2], 0, steps[6], 1, 0);
    if (rc < 0) {
        set_gemm_error(rc, 1, m, n, 0);
    }
}

/*
 * _gemm(a, b, out, nthreads): a (batch, M, K) and b (batch, K, N) bfloat16 arrays (any
 * strides, stride 0 for broadcast batches), out (batch, M, N) bfloat16 or float32, not
 * overlapping the inputs. The shim in linalg.py does shapes, broadcasting and conversions.
 */
static PyObject *
gemm_py(PyObject *NPY_UNUSED(self), PyObject *args)
{
    PyArrayObject *a, *b, *out;
    int nthreads = 0;
    if (!PyArg_ParseTuple(args, "O!O!O!|i:_gemm", &PyArray_Type, &a, &PyArray_Type, &b,
                          &PyArray_Type, &out, &nthreads)) {
        return NULL;
    }
    if (PyArray_TYPE(a) != bf16_type_num || PyArray_TYPE(b) != bf16_type_num) {
        PyErr_SetString(PyExc_TypeError, "_gemm: a and b must be bfloat16 arrays");
        return NULL;
    }
    int out_bf16 = PyArray_TYPE(out) == bf16_type_num;
    if (!out_bf16 && PyArray_TYPE(out) != NPY_FLOAT) {
        PyErr_SetString(PyExc_TypeError, "_gemm: out must be a bfloat16 or float32 array");
        return NULL;
    }
    if (PyArray_NDIM(a) != 3 || PyArray_NDIM(b) != 3 || PyArray_NDIM(out) != 3) {
        PyErr_SetString(PyExc_ValueError, "_gemm: a, b and out must be 3-D (batch, rows, cols)");
        return NULL;
    }
    npy_intp *sa = PyArray_DIMS(a), *sb = PyArray_DIMS(b), *so = PyArray_DIMS(out);
    npy_intp batch = so[0], M = sa[1], K = sa[2], N = sb[2];
    if (sb[1] != K || so[1] != M || so[2] != N || sa[0] != batch || sb[0] != batch) {
        PyErr_SetString(PyExc_ValueError, "_gemm: shapes do not line up");
        return NULL;
    }
    if (!PyArray_ISWRITEABLE(out)) {
        PyErr_SetString(PyExc_ValueError, "_gemm: out is read-only");
        return NULL;
    }
    if (!PyArray_ISNOTSWAPPED(a) || !PyArray_ISNOTSWAPPED(b) || !PyArray_ISNOTSWAPPED(out)) {
        PyErr_SetString(PyExc_ValueError, "_gemm: arrays must be in native byte order");
        return NULL;
    }
    npy_intp *ta = PyArray_STRIDES(a), *tb = PyArray_STRIDES(b), *to = PyArray_STRIDES(out);
    char *pa = PyArray_BYTES(a), *pb = PyArray_BYTES(b), *po = PyArray_BYTES(out);
    int rc;
    /* The kernel raises its result's IEEE flags on this thread, as in the gufunc loops above;
     * here no ufunc machinery reads them, so they become NumPy's warnings (or errors, under
     * np.errstate) below (tests/test_linalg.py::test_fp_warnings_from_every_entry_point). */
    feclearexcept(FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID);
    Py_BEGIN_ALLOW_THREADS
    rc = bf16_gemm_batch(batch, M, N, K, pa, ta[0], ta[1], ta[2], pb, tb[0], tb[1], tb[2],
                         po, to[0], to[1], to[2], out_bf16, nthreads);
    Py_END_ALLOW_THREADS
    int fe = fetestexcept(FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID);
    feclearexcept(FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID);
    if (rc < 0) {
        set_gemm_error(rc, M, N, K, nthreads);
        return NULL;
    }
    int npy_fe = ((fe & FE_DIVBYZERO) ? NPY_FPE_DIVIDEBYZERO : 0) |
                 ((fe & FE_OVERFLOW) ? NPY_FPE_OVERFLOW : 0) |
                 ((fe & FE_UNDERFLOW) ? NPY_FPE_UNDERFLOW : 0) |
                 ((fe & FE_INVALID) ? NPY_FPE_INVALID : 0);
    if (npy_fe && PyUFunc_GiveFloatingpointErrors("matmul", npy_fe) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
get_num_threads_py(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    return PyLong_FromLong(bf16_gemm_get_num_threads());
}

static PyObject *
set_num_threads_py(PyObject *NPY_UNUSED(self), PyObject *arg)
{
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (n < 1 || n > BF16_GEMM_MAX_THREADS) {
        PyErr_Format(PyExc_ValueError, "number of threads must be in [1, %d], got %ld",
                     BF16_GEMM_MAX_THREADS, n);
        return NULL;
    }
    bf16_gemm_set_num_threads((int)n);
    Py_RETURN_NONE;
}

static PyObject *
workspace_bytes_py(PyObject *NPY_UNUSED(self), PyObject *args)
{
    long long M, N, K;
    int nthreads = 0;
    if (!PyArg_ParseTuple(args, "LLL|i", &M, &N, &K, &nthreads)) {
        return NULL;
    }
    return PyLong_FromLongLong(bf16_gemm_workspace_bytes(M, N, K, nthreads));
}

static PyObject *
gemm_peak_py(PyObject *NPY_UNUSED(self), PyObject *arg)
{
    double flops = PyFloat_AsDouble(arg);
    if (flops == -1.0 && PyErr_Occurred()) {
        return NULL;
    }
    if (!(flops > 0.0 && flops <= 1e13)) {
        PyErr_Format(PyExc_ValueError, "_gemm_peak: flops must be in (0, 1e13], got %R", arg);
        return NULL;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = bf16_gemm_peak(flops, 0);
    Py_END_ALLOW_THREADS
    if (rc == BF16_GEMM_ENOMEM) {
        return PyErr_NoMemory();
    }
    if (rc != 0) { /* the portable kernel: no single instruction to time */
        Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

/* A tier name as its bf16_tier value, or -1 with ValueError set. */
static int
tier_from_name(const char *name)
{
    int t = bf16_tier_from_name(name);
    if (t < 0) {
        PyErr_Format(PyExc_ValueError, "unknown tier '%s': expected baseline, avx2, avx512, avx512bf16 or amx", name);
    }
    return t;
}

static PyObject *
gemm_kernel_for_py(PyObject *NPY_UNUSED(self), PyObject *args)
{
    const char *tier, *cap;
    int intel;
    if (!PyArg_ParseTuple(args, "sps", &tier, &intel, &cap)) {
        return NULL;
    }
    int t = tier_from_name(tier);
    int c = t < 0 ? -1 : tier_from_name(cap);
    if (c < 0) {
        return NULL;
    }
    return PyUnicode_FromString(bf16_gemm_kernel_name_for(t, intel, c));
}

static PyMethodDef matmul_methods[] = {
    {"_gemm", gemm_py, METH_VARARGS, "Batched bfloat16 GEMM into a bfloat16/float32 out."},
    {"get_num_threads", get_num_threads_py, METH_NOARGS, "Threads the matmul kernel uses."},
    {"set_num_threads", set_num_threads_py, METH_O, "Set the threads the matmul kernel uses."},
    {"_gemm_peak", gemm_peak_py, METH_O,
     "Run this many flops of the matmul kernel's arithmetic instruction alone, in registers, on "
     "get_num_threads() threads (benchmarks: the rate a GEMM could reach). False when the kernel "
     "(baseline tier) has no such loop."},
    {"_gemm_kernel_for", gemm_kernel_for_py, METH_VARARGS,
     "_gemm_kernel_for(tier, intel, cap): the kernel the matmul would run at that tier, capped at "
     "cap, on an Intel CPU or not."},
    {"_workspace_bytes", workspace_bytes_py, METH_VARARGS,
     "Upper bound of the extra memory one matmul of (M, N, K) allocates."},
    {NULL, NULL, 0, NULL}};

static int
register_gufunc_loop(PyObject *numpy, const char *name, PyUFuncGenericFunction fn)
{
    PyObject *ufunc = PyObject_GetAttrString(numpy, name);
    if (ufunc == NULL) {
        /* matvec/vecmat arrived in numpy 2.2, vecdot in 2.0 */
        PyErr_Clear();
        return 0;
    }
    int types[3] = {bf16_type_num, bf16_type_num, bf16_type_num};
    int r = PyUFunc_RegisterLoopForType((PyUFuncObject *)ufunc, bf16_type_num, fn, types, NULL);
    Py_DECREF(ufunc);
    return r;
}

int
init_matmul(PyObject *module)
{
    if (PyModule_AddFunctions(module, matmul_methods) < 0 ||
            PyModule_AddStringConstant(module, "_gemm_kernel", bf16_gemm_kernel_name()) < 0) {
        return -1;
    }
    PyObject *numpy = PyImport_ImportModule("numpy");
    if (numpy == NULL) {
        return -1;
    }
    int r = register_gufunc_loop(numpy, "matmul", matmul_loop);
    if (r == 0) r = register_gufunc_loop(numpy, "vecdot", vecdot_loop);
    if (r == 0) r = register_gufunc_loop(numpy, "matvec", matvec_loop);
    if (r == 0) r = register_gufunc_loop(numpy, "vecmat", vecmat_loop);
    Py_DECREF(numpy);
    return r;
}
