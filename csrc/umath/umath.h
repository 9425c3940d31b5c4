/*
 * umath/umath.h - what the files of the ufunc layer share: the loops that are not one functor
 * (special_loops.cpp), the float32-accumulating add/multiply (reduce_acc.cpp), the private
 * float32 sum ufunc (widen_sum.cpp) and the promoters (promoters.cpp), all registered by
 * init_ufuncs (registry.cpp). Each register_* returns 0, or -1 with a Python error set.
 */
#ifndef BF16_UMATH_UMATH_H
#define BF16_UMATH_UMATH_H

#include "module.h"

namespace umath {

/* numpy.<name> (numpy._core.umath.clip for "clip"), checked to be a ufunc. New reference. */
PyObject *get_ufunc(PyObject *numpy, const char *name);

/* The add and multiply loops (float32 accumulation in reductions). */
int register_accumulating_loops(PyObject *numpy);

/* A binary loop (the slots' functions on these operand DTypes) with no casting that may
 * reduce over several axes at once and runs on unaligned data (reduce_acc.cpp). */
int add_reducing_binary_loop(PyObject *ufunc, const char *name, PyArray_DTypeMeta **dtypes,
                             PyType_Slot *slots);

/* module._sum_f32: float32 + bfloat16 -> float32, a private ufunc (widen_sum.cpp). */
int register_widening_sum(PyObject *module);

/* Promoters for bfloat16 with every other numeric operand of the named binary ufuncs, for
 * float_power, and for clip's bounds. */
int register_promoters(PyObject *numpy, const char *const *binary_names, size_t count);

/* For each named ufunc whose bfloat16 loop has only bfloat16 operands: `dtype=bfloat16` casts
 * the inputs to bfloat16, whatever their type. */
int register_output_dtype_promoters(PyObject *numpy, const char *const *names, size_t count);

/* Legacy inner loops with two outputs or mixed operand types. */
void divmod_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *);
void modf_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *);
void frexp_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *);
void ldexp_int_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *);
void ldexp_int64_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *);
void clip_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *);

} /* namespace umath */

#endif
