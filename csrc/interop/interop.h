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

/* Adds _register_bit_casts, _dlpack_export and _dlpack_import to the module. 0, or -1 with an error set. */
int init_interop(PyObject *module);

PyObject *bf16_register_bit_casts(PyObject *self, PyObject *other_dtype);
PyObject *bf16_register_mixed_promoters(PyObject *self, PyObject *args);
PyObject *bf16_dlpack_export(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *bf16_dlpack_import(PyObject *self, PyObject *capsule);

#ifdef __cplusplus
}
#endif

#endif
