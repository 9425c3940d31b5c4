/*
 * module.c - the extension module bfloat16_dtype._ext: imports numpy's C API and calls each
 * part's init in order (scalar type, dtype, casts, ufuncs, matmul).
 */
#define BF16_IMPORT_ARRAY
#include "module.h"
#include "kernels.h"
#include "cpu.h"
#include "interop/interop.h"

/* _ext._cpu_info() -> dict: detected tier, cap, tier in force, why detection stopped, and
 * whether the CPU has AVX512_VBMI (the ufunc loops' avx512bf16 tier needs it) and is an Intel one
 * (the matmul's kernel at the avx512bf16 tier, csrc/matmul/gemm.c), and the L1 data cache's
 * associativity (W @ V's tiles, csrc/matmul/gemm_avx512bf16.c). */
static PyObject *cpu_info(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return Py_BuildValue("{s:s,s:s,s:s,s:s,s:s,s:O,s:O,s:i}", "tier", bf16_tier_name(bf16_cpu_tier()),
                         "detected", bf16_tier_name(bf16_cpu_detected()), "cap",
                         bf16_tier_name(bf16_cpu_cap()), "env", bf16_cpu_env_value(), "reason",
                         bf16_cpu_detect_reason(), "vbmi", bf16_cpu_has_vbmi() ? Py_True : Py_False,
                         "intel", bf16_cpu_is_intel() ? Py_True : Py_False, "l1d_ways",
                         bf16_cpu_l1d_ways());
}

/* _ext._set_l1d_ways(n) -> the previous value: the L1 associativity the kernels assume (tests run
 * W @ V's tiles for 8-way and 12-way caches on one CPU with it). */
static PyObject *set_l1d_ways(PyObject *self, PyObject *arg)
{
    (void)self;
    long ways = PyLong_AsLong(arg);
    if (ways == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (ways < 0 || ways > 1024) {
        PyErr_Format(PyExc_ValueError, "L1 ways must lie in [0, 1024], got %ld", ways);
        return NULL;
    }
    return PyLong_FromLong(bf16_cpu_set_l1d_ways((int)ways));
}

static PyMethodDef ext_methods[] = {
    {"_cpu_info", cpu_info, METH_NOARGS, "The instruction-set tier chosen at import, and why."},
    {"_set_l1d_ways", set_l1d_ways, METH_O, "Set the L1 associativity the kernels assume; returns the previous one."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef ext_module = {
    PyModuleDef_HEAD_INIT,
    .m_methods = ext_methods,
    .m_name = "bfloat16_dtype._ext",
    .m_doc = "C core of bfloat16_dtype: the bfloat16 scalar, dtype, casts, ufunc loops, matmul.",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__ext(void)
{
    import_array();
    import_umath();
    if (bf16_cpu_init() < 0) {
        PyErr_Format(PyExc_ValueError,
                     "BFLOAT16_DTYPE_ISA='%s' is not a tier: use baseline, avx2, avx512, avx512bf16 or amx",
                     bf16_cpu_env_value());
        return NULL;
    }
    bf16_kernels_init();

    PyObject *m = PyModule_Create(&ext_module);
    if (m == NULL) {
        return NULL;
    }
    if (init_scalar(m) < 0 || init_dtype(m) < 0 || init_casts(m) < 0 || init_ufuncs(m) < 0 ||
            init_matmul(m) < 0 || init_interop(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    if (init_rounding(m) < 0) { Py_DECREF(m); return NULL; }
    if (PyModule_AddStringConstant(m, "_kernels_isa", bf16_kernels_isa()) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
