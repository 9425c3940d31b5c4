/*
 * interop.h - functions that connect bfloat16 arrays to other libraries: casts to and from
 * ml_dtypes' bfloat16 (mldtypes_casts.c) and DLPack export/import (dlpack.c).
 */
#ifndef BF16_INTEROP_H
#define BF16_INTEROP_H

#include "module.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Adds _register_bit_casts, _register_mixed_promoters, _register_output_loops,
 * _register_float32_casts,
 * _qualify_dtype_repr, _dlpack_export and _dlpack_import to the module. 0, or -1 with an error set. */
int init_interop(PyObject *module);

/* 1 once another library's bfloat16 is loaded (the dtype's repr then names the package), else 0. */
int bf16_dtype_repr_qualified(void);

/* 1 if `dtype` is the other library's bfloat16 DType that the bit casts are registered with. */
int bf16_is_other_bfloat16(PyArray_DTypeMeta *dtype);

PyObject *bf16_register_bit_casts(PyObject *self, PyObject *other_dtype);
PyObject *bf16_register_mixed_promoters(PyObject *self, PyObject *args);
PyObject *bf16_register_output_loops(PyObject *self, PyObject *args);
PyObject *bf16_register_float32_casts(PyObject *self, PyObject *other_dtype);
PyObject *bf16_dlpack_export(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *bf16_dlpack_import(PyObject *self, PyObject *args);

#ifdef __cplusplus
}
#endif

#endif
