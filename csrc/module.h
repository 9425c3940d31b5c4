/*
 * module.h - what the parts of the extension share: the registered type number, the scalar
 * type, and each part's init function (each returns 0, or -1 with a Python error set).
 */
#ifndef BF16_MODULE_H
#define BF16_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#define NPY_TARGET_VERSION NPY_2_0_API_VERSION
#ifndef BF16_IMPORT_ARRAY
#define NO_IMPORT_ARRAY
#define NO_IMPORT_UFUNC
#endif
#define PY_ARRAY_UNIQUE_SYMBOL bfloat16_dtype_ARRAY_API
#define PY_UFUNC_UNIQUE_SYMBOL bfloat16_dtype_UFUNC_API
#include <numpy/arrayobject.h>
#include <numpy/arrayscalars.h>
#include <numpy/ufuncobject.h>
#include <numpy/dtype_api.h>

#include "bf16.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    PyObject_HEAD
    bf16_t value; /* numpy finds user scalar data right after the header, aligned to 2 */
} PyBFloat16Object;

extern PyTypeObject PyBFloat16_Type;
extern int bf16_type_num;          /* set by init_dtype */
extern PyArray_Descr *bf16_descr;  /* the registered descriptor (owned reference) */
extern PyObject *bf16_complex_warning; /* numpy.exceptions.ComplexWarning, set by init_casts */

#define PyBFloat16_Check(op) PyObject_TypeCheck(op, &PyBFloat16_Type)

PyObject *bf16_scalar_from_bits(bf16_t bits);
/* Convert any Python/numpy number or numeric string to bfloat16 bits. -1 with an error set. */
int bf16_from_object(PyObject *obj, bf16_t *out);
int bf16_from_object_reporting(PyObject *obj, bf16_t *out);
/* Shortest decimal digits that round back to the same bfloat16, as a Python str (like repr(float)). */
PyObject *bf16_shortest_str(bf16_t bits);

/* casts.c: the casts given to the DType spec (NULL-terminated), or NULL with an error set. */
PyArrayMethod_Spec **bf16_spec_casts(void);

int init_scalar(PyObject *module);
int init_dtype(PyObject *module);
int init_casts(PyObject *module);
int init_ufuncs(PyObject *module);
int init_matmul(PyObject *module);
int init_rounding(PyObject *module); /* rounding.c: conversions in a rounding mode */
/* umath/reduce_acc.cpp: a cast copied n elements src -> dst (either side bfloat16 or not);
 * tells the float32-accumulating reduction in flight on this thread. No GIL needed. */
void bf16_reduction_cast(const char *src, npy_intp ss, int src_bf16, char *dst, npy_intp ds,
                         int dst_bf16, npy_intp n);

#ifdef __cplusplus
}
#endif

#endif
