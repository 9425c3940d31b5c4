/*
 * module.c - the extension module bfloat16_dtype._ext: imports numpy's C API and calls each
 * part's init in order (scalar type, dtype, casts, ufuncs, matmul).
 */
#define BF16_IMPORT_ARRAY
#include "module.h"
#include "kernels.h"

static struct PyModuleDef ext_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "bfloat16_dtype._ext",
    .m_doc = "C core of bfloat16_dtype: the bfloat16 scalar, dtype, casts, ufunc loops, matmul.",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__ext(void)
{
    import_array();
    import_umath();
    bf16_kernels_init();

    PyObject *m = PyModule_Create(&ext_module);
    if (m == NULL) {
        return NULL;
    }
    if (init_scalar(m) < 0 || init_dtype(m) < 0 || init_casts(m) < 0 || init_ufuncs(m) < 0 ||
            init_matmul(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddStringConstant(m, "_kernels_isa", bf16_kernels_isa()) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
