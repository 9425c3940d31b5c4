/*
 * umath/promoters.cpp - the result type of bfloat16 with other operands (the README's
 * promotion table), registered for the binary ufuncs the registry names, float_power and clip.
 */
#include "umath/umath.h"

#include <cstring>
#include <vector>

namespace umath {

/*
 * The result type of bfloat16 with another operand, as a rank on the float ladder
 * (0 bfloat16, 1 float32, 2 float64, 3 longdouble) and whether it is complex.
 */
struct Rank {
    int rank;
    bool complex;
};

static PyArray_DTypeMeta *
dtype_of(int type_num)
{
    PyArray_Descr *d = PyArray_DescrFromType(type_num);
    if (d == NULL) {
        return NULL;
    }
    PyArray_DTypeMeta *m = NPY_DTYPE(d);
    Py_DECREF(d); /* builtin descriptors and their DTypes are immortal in practice */
    return m;
}

static bool
rank_of(PyArray_DTypeMeta *d, Rank *r)
{
    if (d == NPY_DTYPE(bf16_descr) || d == &PyArray_PyFloatDType || d == &PyArray_PyLongDType) {
        *r = {0, false};
        return true;
    }
    if (d == &PyArray_PyComplexDType) {
        *r = {1, true};
        return true;
    }
    static const struct { int type_num; Rank rank; } table[] = {
        {NPY_BOOL, {0, false}},     {NPY_BYTE, {0, false}},     {NPY_UBYTE, {0, false}},
        {NPY_SHORT, {1, false}},    {NPY_USHORT, {1, false}},   {NPY_HALF, {1, false}},
        {NPY_FLOAT, {1, false}},    {NPY_INT, {2, false}},      {NPY_UINT, {2, false}},
        {NPY_LONG, {2, false}},     {NPY_ULONG, {2, false}},    {NPY_LONGLONG, {2, false}},
        {NPY_ULONGLONG, {2, false}}, {NPY_DOUBLE, {2, false}},  {NPY_LONGDOUBLE, {3, false}},
        {NPY_CFLOAT, {1, true}},    {NPY_CDOUBLE, {2, true}},   {NPY_CLONGDOUBLE, {3, true}},
    };
    for (const auto &e : table) {
        if (d == dtype_of(e.type_num)) {
            *r = e.rank;
            return true;
        }
    }
    return false;
}

static PyArray_DTypeMeta *
dtype_for_rank(Rank r)
{
    static const int real[] = {-1, NPY_FLOAT, NPY_DOUBLE, NPY_LONGDOUBLE};
    static const int cplx[] = {NPY_CFLOAT, NPY_CFLOAT, NPY_CDOUBLE, NPY_CLONGDOUBLE};
    if (r.complex) {
        return dtype_of(cplx[r.rank]);
    }
    return r.rank == 0 ? NPY_DTYPE(bf16_descr) : dtype_of(real[r.rank]);
}

static bool
outputs_fixed_to_bf16(PyUFuncObject *ufunc, PyArray_DTypeMeta *const signature[])
{
    for (int i = ufunc->nin; i < ufunc->nargs; i++) {
        if (signature[i] != NPY_DTYPE(bf16_descr)) {
            return false;
        }
    }
    return true;
}

/*
 * `dtype=bfloat16` (every output fixed to bfloat16): the inputs not fixed by the signature are
 * cast to bfloat16 under the call's casting rule, as NumPy does for float16
 * (tests/test_ufuncs.py::test_dtype_keyword_casts_the_inputs_like_float16). NumPy matches an
 * output it was not given to any pattern, so this promoter also sees calls with no bfloat16 in
 * them (int32 + int64): it returns those unchanged, which sends NumPy on to its own legacy
 * resolution, and a reduction (no first operand) gets NumPy's own reduction promotion
 * (tests/test_ufuncs.py::test_output_promoter_leaves_other_calls_to_numpy).
 */
static int
output_dtype_promoter(PyObject *ufunc, PyArray_DTypeMeta *const op_dtypes[],
                      PyArray_DTypeMeta *const signature[], PyArray_DTypeMeta *new_op_dtypes[])
{
    PyUFuncObject *u = (PyUFuncObject *)ufunc;
    bool to_bf16 = outputs_fixed_to_bf16(u, signature);
    for (int i = 0; i < u->nargs; i++) {
        PyArray_DTypeMeta *d = op_dtypes[i];
        if (to_bf16) {
            d = signature[i] ? signature[i] : NPY_DTYPE(bf16_descr);
        }
        else if (i == 0 && d == NULL && u->nargs > 1) {
            d = op_dtypes[1]; /* a reduction: the operand's DType, as NumPy's own fallback */
        }
        Py_XINCREF(d);
        new_op_dtypes[i] = d;
    }
    return 0;
}

/* Inputs promote along the table in the README; outputs keep what the signature fixed. */
static int
bf16_promoter(PyObject *ufunc, PyArray_DTypeMeta *const op_dtypes[],
              PyArray_DTypeMeta *const signature[], PyArray_DTypeMeta *new_op_dtypes[])
{
    int nin = ((PyUFuncObject *)ufunc)->nin, nargs = nin + ((PyUFuncObject *)ufunc)->nout;
    if (outputs_fixed_to_bf16((PyUFuncObject *)ufunc, signature)) {
        return output_dtype_promoter(ufunc, op_dtypes, signature, new_op_dtypes);
    }
    Rank acc = {0, false};
    for (int i = 0; i < nin; i++) {
        PyArray_DTypeMeta *d = signature[i] ? signature[i] : op_dtypes[i];
        Rank r;
        if (d == NULL || !rank_of(d, &r)) {
            PyErr_SetString(PyExc_TypeError, "bfloat16 promoter called with an unknown dtype");
            return -1;
        }
        acc.rank = r.rank > acc.rank ? r.rank : acc.rank;
        acc.complex = acc.complex || r.complex;
    }
    PyArray_DTypeMeta *common = dtype_for_rank(acc);
    for (int i = 0; i < nargs; i++) {
        PyArray_DTypeMeta *d = (i < nin) ? (signature[i] ? signature[i] : common) : signature[i];
        Py_XINCREF(d);
        new_op_dtypes[i] = d;
    }
    return 0;
}

/* float_power computes in float64 (or complex128) at least, as numpy does; a longdouble (or
 * clongdouble) operand keeps its type, as float16's does
 * (tests/test_ufuncs.py::test_float_power_with_longdouble_keeps_longdouble). */
static int
float_power_promoter(PyObject *, PyArray_DTypeMeta *const op_dtypes[],
                     PyArray_DTypeMeta *const signature[], PyArray_DTypeMeta *new_op_dtypes[])
{
    bool cplx = false, longd = false;
    for (int i = 0; i < 2; i++) {
        Rank r;
        if (op_dtypes[i] && rank_of(op_dtypes[i], &r)) {
            cplx = cplx || r.complex;
            longd = longd || r.rank == 3;
        }
    }
    PyArray_DTypeMeta *d = dtype_of(longd ? (cplx ? NPY_CLONGDOUBLE : NPY_LONGDOUBLE)
                                          : (cplx ? NPY_CDOUBLE : NPY_DOUBLE));
    if (d == NULL) {
        return -1;
    }
    for (int i = 0; i < 3; i++) {
        PyArray_DTypeMeta *x = signature[i] ? signature[i] : d;
        Py_INCREF(x);
        new_op_dtypes[i] = x;
    }
    return 0;
}

/*
 * bfloat16 with a string, bytes, datetime64 or timedelta64 operand has no loop. NumPy's legacy
 * resolver would report that with a plain TypeError; float16 gets NumPy's no-loop error, which
 * `==`/`!=` turn into an all-False/all-True result (tests/test_dropin.py::
 * test_compare_with_unrelated_types_like_float16), so this raises that error.
 */
static int
no_loop_promoter(PyObject *ufunc, PyArray_DTypeMeta *const op_dtypes[],
                 PyArray_DTypeMeta *const *, PyArray_DTypeMeta *[])
{
    if (PyErr_Occurred()) {
        /* NumPy 2.0's scalar power path (x ** np.timedelta64) calls here with its own failed
         * float() still pending: that TypeError is the answer (importing the exception class
         * with it set was a SystemError; tests/test_dropin.py::test_timedelta_and_datetime_arrays) */
        return -1;
    }
    int nargs = ((PyUFuncObject *)ufunc)->nargs;
    PyObject *dtypes = PyTuple_New(nargs);
    if (dtypes == NULL) {
        return -1;
    }
    for (int i = 0; i < nargs; i++) {
        PyObject *d = op_dtypes[i] ? (PyObject *)op_dtypes[i] : Py_None;
        Py_INCREF(d);
        PyTuple_SET_ITEM(dtypes, i, d);
    }
    PyObject *mod = PyImport_ImportModule("numpy._core._exceptions");
    PyObject *cls = mod ? PyObject_GetAttrString(mod, "_UFuncNoLoopError") : NULL;
    Py_XDECREF(mod);
    PyObject *exc = cls ? PyObject_CallFunctionObjArgs(cls, ufunc, dtypes, NULL) : NULL;
    Py_DECREF(dtypes);
    if (exc != NULL) {
        PyErr_SetObject(cls, exc);
        Py_DECREF(exc);
    }
    Py_XDECREF(cls);
    return -1;
}

/*
 * logical_and/or/xor with any other operand type, and their reductions and accumulations (which
 * come with no first operand, or with the out= type in its place): as NumPy's own logical
 * promoter does for float16, they run the bool loop on the values cast to bool, so a float32
 * out= takes the result (tests/test_ufuncs.py::test_logical_reductions_into_any_output_like_float16),
 * and the object loop where an operand, the signature or the out= is object and no out= of
 * another type is given (::test_logical_ufuncs_with_object_and_other_libraries_dtypes).
 */
static int
logical_promoter(PyObject *, PyArray_DTypeMeta *const op_dtypes[],
                 PyArray_DTypeMeta *const signature[], PyArray_DTypeMeta *new_op_dtypes[])
{
    PyArray_DTypeMeta *b = dtype_of(NPY_BOOL), *o = dtype_of(NPY_OBJECT);
    if (b == NULL || o == NULL) {
        return -1;
    }
    bool object = false;
    for (int i = 0; i < 3; i++) {
        object = object || signature[i] == o || op_dtypes[i] == o;
    }
    if (op_dtypes[2] != NULL && op_dtypes[2] != o) {
        object = false; /* cast the inputs to bool rather than the result from object */
    }
    for (int i = 0; i < 3; i++) {
        PyArray_DTypeMeta *x = signature[i] ? signature[i] : object ? o : b;
        Py_INCREF(x);
        new_op_dtypes[i] = x;
    }
    return 0;
}

static int
add_promoter(PyObject *ufunc, PyArray_DTypeMeta *const *dtypes, int nargs,
             PyArrayMethod_PromoterFunction *fn)
{
    PyObject *tuple = PyTuple_New(nargs);
    if (tuple == NULL) {
        return -1;
    }
    for (int i = 0; i < nargs; i++) {
        PyObject *item = dtypes[i] ? (PyObject *)dtypes[i] : Py_None;
        Py_INCREF(item);
        PyTuple_SET_ITEM(tuple, i, item);
    }
    PyObject *capsule = PyCapsule_New((void *)fn, "numpy._ufunc_promoter", NULL);
    if (capsule == NULL) {
        Py_DECREF(tuple);
        return -1;
    }
    int r = PyUFunc_AddPromoter(ufunc, tuple, capsule);
    Py_DECREF(tuple);
    Py_DECREF(capsule);
    return r;
}

/* Every operand type bfloat16 meets in a binary ufunc, Python scalars first. */
static int
other_operand_dtypes(std::vector<PyArray_DTypeMeta *> &out)
{
    out = {&PyArray_PyLongDType, &PyArray_PyFloatDType, &PyArray_PyComplexDType};
    static const int nums[] = {NPY_BOOL, NPY_BYTE, NPY_UBYTE, NPY_SHORT, NPY_USHORT, NPY_INT,
                               NPY_UINT, NPY_LONG, NPY_ULONG, NPY_LONGLONG, NPY_ULONGLONG,
                               NPY_HALF, NPY_FLOAT, NPY_DOUBLE, NPY_LONGDOUBLE, NPY_CFLOAT,
                               NPY_CDOUBLE, NPY_CLONGDOUBLE};
    for (int t : nums) {
        PyArray_DTypeMeta *d = dtype_of(t);
        if (d == NULL) {
            return -1;
        }
        bool seen = false; /* long and longlong may be one DType */
        for (PyArray_DTypeMeta *x : out) seen = seen || x == d;
        if (!seen) out.push_back(d);
    }
    return 0;
}

static int
register_binary_promoters(PyObject *ufunc, int nout, PyArrayMethod_PromoterFunction *fn,
                          const std::vector<PyArray_DTypeMeta *> &others)
{
    PyArray_DTypeMeta *bf = NPY_DTYPE(bf16_descr);
    for (PyArray_DTypeMeta *o : others) {
        PyArray_DTypeMeta *t1[4] = {bf, o, NULL, NULL};
        PyArray_DTypeMeta *t2[4] = {o, bf, NULL, NULL};
        if (add_promoter(ufunc, t1, 2 + nout, fn) < 0 ||
                add_promoter(ufunc, t2, 2 + nout, fn) < 0) {
            return -1;
        }
    }
    return 0;
}

/* np.clip with a bfloat16 among its three inputs and the others of any type bfloat16 meets: a
 * bfloat16 array, or a bool/int8/uint8 array clipped by a bfloat16 bound (NumPy's legacy
 * lookup gave float32 there; wider types get the table's answer from
 * it already, and registering them too cost 40 ms of import; tests/test_ufuncs.py::
 * test_clip_bounds_of_every_type_promote_like_the_table, ::test_clip_of_other_arrays_by_bfloat16_bounds). */
static int
register_clip_promoters(PyObject *numpy, const std::vector<PyArray_DTypeMeta *> &others)
{
    PyObject *ufunc = get_ufunc(numpy, "clip");
    if (ufunc == NULL) {
        return -1;
    }
    PyArray_DTypeMeta *bf = NPY_DTYPE(bf16_descr);
    std::vector<PyArray_DTypeMeta *> bounds = {bf};
    bounds.insert(bounds.end(), others.begin(), others.end());
    int r = 0;
    /* the clipped array's types whose common type with bfloat16 is bfloat16 (np.clip makes a
     * Python number an array of its default type first) */
    std::vector<PyArray_DTypeMeta *> xs = {bf};
    for (int t : {NPY_BOOL, NPY_BYTE, NPY_UBYTE}) {
        PyArray_DTypeMeta *d = dtype_of(t);
        if (d == NULL) {
            Py_DECREF(ufunc);
            return -1;
        }
        xs.push_back(d);
    }
    for (PyArray_DTypeMeta *x : xs) {
        for (PyArray_DTypeMeta *lo : bounds) {
            for (PyArray_DTypeMeta *hi : bounds) {
                if ((x == bf && lo == bf && hi == bf) || (x != bf && lo != bf && hi != bf)) continue;
                PyArray_DTypeMeta *t[4] = {x, lo, hi, NULL};
                if ((r = add_promoter(ufunc, t, 4, bf16_promoter)) < 0) break;
            }
            if (r < 0) break;
        }
        if (r < 0) break;
    }
    Py_DECREF(ufunc);
    return r;
}

int
register_output_dtype_promoters(PyObject *numpy, const char *const *names, size_t count)
{
    for (size_t k = 0; k < count; k++) {
        PyObject *ufunc = get_ufunc(numpy, names[k]);
        if (ufunc == NULL) {
            return -1;
        }
        PyUFuncObject *u = (PyUFuncObject *)ufunc;
        PyArray_DTypeMeta *t[4] = {NULL, NULL, NULL, NULL};
        for (int i = u->nin; i < u->nargs && i < 4; i++) {
            t[i] = NPY_DTYPE(bf16_descr);
        }
        int r = u->nargs <= 4 ? add_promoter(ufunc, t, u->nargs, output_dtype_promoter) : 0;
        Py_DECREF(ufunc);
        if (r < 0) {
            return -1;
        }
    }
    return 0;
}

/*
 * The integer-only ufuncs (bitwise operators, shifts, gcd, lcm, bitwise_count) with a bfloat16
 * operand in any position. Left to NumPy's legacy resolution, an object out= chose the object
 * loop, which hands our scalars to their `&`; the scalar's `&` (NumPy's generic one) calls the
 * ufunc again, which NumPy had by then cached as the object loop for bfloat16 operands too:
 * unbounded recursion, a crash. Here, as float16 resolves: an object input runs the object loop
 * (the values as bfloat16 scalars, whose `&` then raises); an output type fixed by dtype= or
 * signature= (a reduction's dtype=bool) takes the inputs cast to it under the call's casting
 * rule; anything else is NumPy's no-loop error, whatever the out=
 * (tests/test_ufuncs.py::test_integer_only_ufuncs_with_bfloat16_like_float16).
 */
static int
integer_only_promoter(PyObject *ufunc, PyArray_DTypeMeta *const op_dtypes[],
                      PyArray_DTypeMeta *const signature[], PyArray_DTypeMeta *new_op_dtypes[])
{
    PyUFuncObject *u = (PyUFuncObject *)ufunc;
    PyArray_DTypeMeta *o = dtype_of(NPY_OBJECT);
    if (o == NULL) {
        return -1;
    }
    PyArray_DTypeMeta *fill = NULL;
    for (int i = 0; i < u->nin; i++) {
        if ((signature[i] ? signature[i] : op_dtypes[i]) == o) {
            fill = o;
        }
    }
    if (fill == NULL) {
        fill = signature[u->nin];
    }
    if (fill == NULL) {
        return no_loop_promoter(ufunc, op_dtypes, signature, new_op_dtypes);
    }
    for (int i = 0; i < u->nargs; i++) {
        PyArray_DTypeMeta *x = signature[i] ? signature[i] : fill;
        Py_INCREF(x);
        new_op_dtypes[i] = x;
    }
    return 0;
}

/* (bfloat16, bfloat16) goes in first, so that NumPy finds it better than either one-sided
 * pattern before it compares those two with each other (equally good: ambiguous). */
static int
register_integer_only_promoters(PyObject *numpy)
{
    static const char *const binary[] = {"bitwise_and", "bitwise_or", "bitwise_xor",
                                         "left_shift", "right_shift", "gcd", "lcm"};
    static const char *const unary[] = {"invert", "bitwise_count"};
    PyArray_DTypeMeta *bf = NPY_DTYPE(bf16_descr);
    for (const char *name : binary) {
        PyObject *ufunc = get_ufunc(numpy, name);
        if (ufunc == NULL) {
            return -1;
        }
        PyArray_DTypeMeta *both[3] = {bf, bf, NULL}, *first[3] = {bf, NULL, NULL},
                          *second[3] = {NULL, bf, NULL};
        int r = add_promoter(ufunc, both, 3, integer_only_promoter);
        if (r == 0) r = add_promoter(ufunc, first, 3, integer_only_promoter);
        if (r == 0) r = add_promoter(ufunc, second, 3, integer_only_promoter);
        Py_DECREF(ufunc);
        if (r < 0) {
            return -1;
        }
    }
    for (const char *name : unary) {
        PyObject *ufunc = get_ufunc(numpy, name);
        if (ufunc == NULL) {
            return -1;
        }
        PyArray_DTypeMeta *one[2] = {bf, NULL};
        int r = add_promoter(ufunc, one, 2, integer_only_promoter);
        Py_DECREF(ufunc);
        if (r < 0) {
            return -1;
        }
    }
    return 0;
}

int
register_promoters(PyObject *numpy, const char *const *binary_names, size_t count)
{
    /* Promoters go in before any ufunc runs on bfloat16: dispatch results are cached. */
    std::vector<PyArray_DTypeMeta *> others;
    if (other_operand_dtypes(others) < 0) {
        return -1;
    }
    std::vector<PyArray_DTypeMeta *> unrelated;
    for (int t : {NPY_UNICODE, NPY_STRING, NPY_DATETIME, NPY_TIMEDELTA}) {
        PyArray_DTypeMeta *d = dtype_of(t);
        if (d == NULL) {
            return -1;
        }
        unrelated.push_back(d);
    }
    for (size_t k = 0; k < count; k++) {
        const char *name = binary_names[k];
        PyObject *ufunc = get_ufunc(numpy, name);
        if (ufunc == NULL) {
            if (strncmp(name, "vec", 3) == 0 || strcmp(name, "matvec") == 0) {
                /* vecdot arrived in numpy 2.0, matvec/vecmat in 2.2 */
                PyErr_Clear();
                continue;
            }
            return -1;
        }
        int nout = ((PyUFuncObject *)ufunc)->nout;
        bool logical = strncmp(name, "logical_", 8) == 0;
        int r = register_binary_promoters(ufunc, nout, logical ? logical_promoter : bf16_promoter,
                                          others);
        if (r == 0) {
            /* the logical ufuncs take the truth of a string, date or void operand, as float16's
             * (tests/test_ufuncs.py::test_logical_ufuncs_with_strings_dates_and_void) */
            r = register_binary_promoters(ufunc, nout, logical ? logical_promoter : no_loop_promoter,
                                          unrelated);
        }
        if (r == 0 && logical) {
            PyArray_DTypeMeta *v = dtype_of(NPY_VOID);
            r = v == NULL ? -1 : register_binary_promoters(ufunc, nout, logical_promoter, {v});
        }
        if (r == 0 && logical) {
            /* any other first operand (object, another library's DType), then none (a reduction).
             * NumPy's own logical promoter matches every DType as abstract np.dtype: with only
             * (None, bfloat16) beside it each would be the better match in one position and
             * NumPy reports the two as ambiguous (a RuntimeError). (np.dtype, bfloat16) beats
             * both, and goes in first: NumPy compares the patterns in the order they came. */
            PyArray_DTypeMeta *any[3] = {(PyArray_DTypeMeta *)&PyArrayDescr_Type,
                                         NPY_DTYPE(bf16_descr), NULL};
            PyArray_DTypeMeta *none[3] = {NULL, NPY_DTYPE(bf16_descr), NULL};
            r = add_promoter(ufunc, any, 3, logical_promoter);
            if (r == 0) {
                r = add_promoter(ufunc, none, 3, logical_promoter);
            }
        }
        Py_DECREF(ufunc);
        if (r < 0) {
            return -1;
        }
    }
    if (register_integer_only_promoters(numpy) < 0) {
        return -1;
    }
    PyObject *fp = get_ufunc(numpy, "float_power");
    if (fp == NULL) {
        return -1;
    }
    PyArray_DTypeMeta *bf = NPY_DTYPE(bf16_descr);
    PyArray_DTypeMeta *t0[3] = {bf, bf, NULL};
    int r = add_promoter(fp, t0, 3, float_power_promoter);
    if (r == 0) {
        r = register_binary_promoters(fp, 1, float_power_promoter, others);
    }
    Py_DECREF(fp);
    if (r < 0) {
        return -1;
    }
    return register_clip_promoters(numpy, others);
}

} /* namespace umath */
