/*
 * interop.c - the module functions of csrc/interop/, added to bfloat16_dtype._ext at import.
 * bfloat16_dtype/interop.py is the public side.
 */
#include "interop.h"

static PyMethodDef interop_methods[] = {
    {"_register_bit_casts", bf16_register_bit_casts, METH_O,
     "Register safe bit-copy casts both ways with another library's bfloat16 dtype."},
    {"_register_mixed_promoters", bf16_register_mixed_promoters, METH_VARARGS,
     "Make binary ufuncs mixing the two bfloat16 dtypes run in ours."},
    {"_dlpack_export", (PyCFunction)(void (*)(void))bf16_dlpack_export, METH_VARARGS | METH_KEYWORDS,
     "Export a bfloat16 array as a DLPack capsule (versioned or not)."},
    {"_dlpack_import", bf16_dlpack_import, METH_O,
     "Wrap a DLPack capsule holding a CPU bfloat16 tensor as an ndarray, without copying."},
    {NULL, NULL, 0, NULL},
};

int
init_interop(PyObject *module)
{
    return PyModule_AddFunctions(module, interop_methods);
}
