/*
 * matmul_py.c - numpy's matmul entry points for bfloat16 (the gufunc loop) and the Python
 * functions behind bfloat16_dtype.matmul. The kernel itself lives in matmul/.
 */
#include "module.h"

int
init_matmul(PyObject *NPY_UNUSED(module))
{
    return 0;
}
