/*
 * interop.c - the module functions of csrc/interop/, added to bfloat16_dtype._ext at import.
 * bfloat16_dtype/interop.py is the public side.
 */
#include "interop.h"

/*
 * Whether the dtype's repr names the package: 0 while ours is the only bfloat16 in the process,
 * 1 once ml_dtypes (with its own bfloat16) is loaded. Written only by _qualify_dtype_repr and read
 * only by bf16_dtype_repr, both Python-level calls that hold the GIL (the module does not declare
 * free-threading support, so the GIL is on); it only ever goes from 0 to 1.
 * tests/test_interop_repr.py checks both import orders.
 */
static int dtype_repr_qualified = 0;

int
bf16_dtype_repr_qualified(void)
{
    return dtype_repr_qualified;
}

static PyObject *
qualify_dtype_repr(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    dtype_repr_qualified = 1;
    Py_RETURN_NONE;
}

static PyMethodDef interop_methods[] = {
    {"_register_bit_casts", bf16_register_bit_casts, METH_O,
     "Register safe bit-copy casts both ways with another library's bfloat16 dtype."},
    {"_register_mixed_promoters", bf16_register_mixed_promoters, METH_VARARGS,
     "Make binary ufuncs mixing the two bfloat16 dtypes run in ours."},
    {"_register_output_loops", bf16_register_output_loops, METH_VARARGS,
     "Loops of our bfloat16 with outputs in the other library's bfloat16, wrapping ours."},
    {"_register_float32_casts", bf16_register_float32_casts, METH_O,
     "Register casts both ways with another library's narrow dtype, through float32."},
    {"_qualify_dtype_repr", qualify_dtype_repr, METH_NOARGS,
     "From now on the dtype's repr reads dtype(bfloat16_dtype.bfloat16) (another bfloat16 is loaded)."},
    {"_dlpack_export", (PyCFunction)(void (*)(void))bf16_dlpack_export, METH_VARARGS | METH_KEYWORDS,
     "Export a bfloat16 array as a DLPack capsule (versioned or not)."},
    {"_dlpack_import", bf16_dlpack_import, METH_VARARGS,
     "Wrap a DLPack capsule holding a CPU bfloat16 tensor as an ndarray, without copying."},
    {NULL, NULL, 0, NULL},
};

int
init_interop(PyObject *module)
{
    return PyModule_AddFunctions(module, interop_methods);
}
