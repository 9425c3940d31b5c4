/*
 * mldtypes_casts.c - casts between our bfloat16 and another library's bfloat16 dtype (ml_dtypes),
 * both ways. The two formats are the same 16 bits, so each cast is a bit copy and is 'safe'.
 *
 * NumPy remembers a missing cast the first time it is asked for it, so these must be registered
 * before any cast between the two dtypes is attempted: bfloat16_dtype.interop does it at import
 * when ml_dtypes is already loaded, or right after ml_dtypes finishes importing.
 */
#include "interop.h"

/* Legacy cast functions receive aligned, contiguous, native-byte-order buffers. */
static void
copy_bits(void *from, void *to, npy_intp n, void *NPY_UNUSED(fromarr), void *NPY_UNUSED(toarr))
{
    memmove(to, from, (size_t)n * 2);
    bf16_reduction_cast((const char *)from, 2, 1, (char *)to, 2, 1, n); /* (casts.c, NOTE_INTO) */
}

/* The other library's type number once registered; written once by _register_bit_casts and read
 * by bf16_is_other_bfloat16, both under the GIL. */
static int registered_type_num = -1;

int
bf16_is_other_bfloat16(PyArray_DTypeMeta *dtype)
{
    return registered_type_num >= 0 && dtype->type_num == registered_type_num;
}

/* _register_bit_casts(dtype): register safe bit-copy casts both ways with `dtype`, which must be
 * another user-defined 2-byte dtype. Calling it again for the same dtype does nothing. */
PyObject *
bf16_register_bit_casts(PyObject *NPY_UNUSED(self), PyObject *obj)
{
    if (!PyArray_DescrCheck(obj)) {
        PyErr_Format(PyExc_TypeError, "_register_bit_casts expects a numpy dtype, got %R", obj);
        return NULL;
    }
    PyArray_Descr *other = (PyArray_Descr *)obj;
    int num = other->type_num;
    if (num == registered_type_num) {
        Py_RETURN_NONE;
    }
    if (registered_type_num >= 0) {
        PyErr_Format(PyExc_RuntimeError,
                     "bit casts are already registered with type number %d; refusing %R",
                     registered_type_num, obj);
        return NULL;
    }
    if (!PyTypeNum_ISUSERDEF(num) || num == bf16_type_num || PyDataType_ELSIZE(other) != 2 ||
            PyDataType_ALIGNMENT(other) > 2) {
        PyErr_Format(PyExc_TypeError,
                     "_register_bit_casts needs another user-defined 2-byte dtype, got %R", obj);
        return NULL;
    }
    if (PyArray_RegisterCastFunc(bf16_descr, num, copy_bits) < 0 ||
            PyArray_RegisterCanCast(bf16_descr, num, NPY_NOSCALAR) < 0 ||
            PyArray_RegisterCastFunc(other, bf16_type_num, copy_bits) < 0 ||
            PyArray_RegisterCanCast(other, bf16_type_num, NPY_NOSCALAR) < 0) {
        return NULL;
    }
    registered_type_num = num;
    Py_RETURN_NONE;
}

/* The arguments (dtype, ufuncs) of _register_mixed_promoters and _register_output_loops: the
 * dtype must be the one passed to _register_bit_casts. Sets *theirs to its DType and returns the
 * ufuncs as a new fast sequence (or, when *done says the registration has already run, Py_None,
 * new reference); NULL with an exception set on bad arguments. */
static PyObject *
parse_registration(PyObject *args, const char *name, int done, PyArray_DTypeMeta **theirs)
{
    PyObject *obj, *ufuncs;
    if (!PyArg_UnpackTuple(args, name, 2, 2, &obj, &ufuncs)) {
        return NULL;
    }
    if (!PyArray_DescrCheck(obj) || ((PyArray_Descr *)obj)->type_num != registered_type_num) {
        PyErr_Format(PyExc_TypeError, "%s needs the dtype passed to _register_bit_casts, got %R",
                     name, obj);
        return NULL;
    }
    if (done) {
        Py_RETURN_NONE;
    }
    *theirs = NPY_DTYPE((PyArray_Descr *)obj);
    return PySequence_Fast(ufuncs, "expected a sequence of ufuncs");
}

/*
 * Mixed calls (ours, theirs) and (theirs, ours) of a binary ufunc: both inputs become our
 * bfloat16 (the cast is a bit copy) and our loop runs, whichever library was imported first.
 * Without this NumPy's legacy resolver picks the loop of the first operand's library.
 */
static int
mixed_promoter(PyObject *ufunc, PyArray_DTypeMeta *const op_dtypes[],
               PyArray_DTypeMeta *const signature[], PyArray_DTypeMeta *new_op_dtypes[])
{
    (void)op_dtypes;
    int nargs = ((PyUFuncObject *)ufunc)->nargs;
    int nin = ((PyUFuncObject *)ufunc)->nin;
    PyArray_DTypeMeta *ours = NPY_DTYPE(bf16_descr);
    for (int i = 0; i < nargs; i++) {
        PyArray_DTypeMeta *d = signature[i] ? signature[i] : (i < nin ? ours : NULL);
        Py_XINCREF(d);
        new_op_dtypes[i] = d;
    }
    return 0;
}

/* The promoter for the inputs' DTypes ins[0..nin) (the outputs: any). */
static int
add_mixed_promoter(PyObject *ufunc, PyArray_DTypeMeta *const ins[])
{
    int nargs = ((PyUFuncObject *)ufunc)->nargs;
    int nin = ((PyUFuncObject *)ufunc)->nin;
    PyObject *tuple = PyTuple_New(nargs);
    if (tuple == NULL) {
        return -1;
    }
    for (int i = 0; i < nargs; i++) {
        PyObject *item = i < nin ? (PyObject *)ins[i] : Py_None;
        Py_INCREF(item);
        PyTuple_SET_ITEM(tuple, i, item);
    }
    PyObject *capsule = PyCapsule_New((void *)mixed_promoter, "numpy._ufunc_promoter", NULL);
    if (capsule == NULL) {
        Py_DECREF(tuple);
        return -1;
    }
    int r = PyUFunc_AddPromoter(ufunc, tuple, capsule);
    Py_DECREF(tuple);
    Py_DECREF(capsule);
    return r;
}

/* Whether _register_mixed_promoters has run to the end: a second call does nothing, so the
 * Python side may lose its own record (a reload of bfloat16_dtype.interop, an interrupt between
 * its steps) and register again (tests/test_interop_mldtypes.py::
 * test_registration_survives_a_reload_of_interop). Written once under the GIL. */
static int mixed_promoters_done = 0;

/* _register_mixed_promoters(dtype, ufuncs): for each ufunc of two or three inputs (np.clip),
 * run every call mixing the two bfloat16s in ours. */
PyObject *
bf16_register_mixed_promoters(PyObject *NPY_UNUSED(self), PyObject *args)
{
    PyArray_DTypeMeta *theirs = NULL;
    PyObject *seq = parse_registration(args, "_register_mixed_promoters", mixed_promoters_done,
                                       &theirs);
    if (seq == NULL || seq == Py_None) {
        return seq;
    }
    PyArray_DTypeMeta *ours = NPY_DTYPE(bf16_descr);
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *u = PySequence_Fast_GET_ITEM(seq, i);
        int nin = PyObject_TypeCheck(u, &PyUFunc_Type) ? ((PyUFuncObject *)u)->nin : 0;
        if (nin != 2 && nin != 3) {
            PyErr_Format(PyExc_TypeError, "expected a ufunc of two or three inputs, got %R", u);
            Py_DECREF(seq);
            return NULL;
        }
        /* every assignment of ours/theirs to the inputs but the two unmixed ones */
        for (int mask = 1; mask < (1 << nin) - 1; mask++) {
            PyArray_DTypeMeta *ins[3];
            for (int k = 0; k < nin; k++) {
                ins[k] = (mask >> k) & 1 ? theirs : ours;
            }
            if (add_mixed_promoter(u, ins) < 0) {
                Py_DECREF(seq);
                return NULL;
            }
        }
        /* np.clip with one bound a Python number: ours, theirs and the number in any order
         * (the number is weak, as beside two of ours; it gave float32;
         * tests/test_interop_mldtypes.py::test_clip_mixing_both_bfloat16s_and_a_python_number) */
        PyArray_DTypeMeta *numbers[2] = {&PyArray_PyLongDType, &PyArray_PyFloatDType};
        for (int k = 0; nin == 3 && k < 2; k++) {
            for (int p_ours = 0; p_ours < 3; p_ours++) {
                for (int p_theirs = 0; p_theirs < 3; p_theirs++) {
                    if (p_theirs == p_ours) {
                        continue;
                    }
                    PyArray_DTypeMeta *ins[3] = {numbers[k], numbers[k], numbers[k]};
                    ins[p_ours] = ours;
                    ins[p_theirs] = theirs;
                    if (add_mixed_promoter(u, ins) < 0) {
                        Py_DECREF(seq);
                        return NULL;
                    }
                }
            }
        }
    }
    Py_DECREF(seq);
    mixed_promoters_done = 1;
    Py_RETURN_NONE;
}

/*
 * dtype= (or signature=) naming the other library's bfloat16 for a ufunc of our arrays: what
 * "bfloat16" names once ml_dtypes is loaded (x.sum(dtype="bfloat16")). NumPy wants a loop whose
 * outputs are of that DType, and found none ("No loop matching the specified signature"). Each
 * such loop here wraps ours: the other type's operands enter as our descriptor (the same bits)
 * and the outputs leave as theirs, so the values, the float32 accumulation of sums and the IEEE
 * flags are our loop's (tests/test_interop_mldtypes.py::test_dtype_of_theirs_runs_our_loops).
 */
static PyArray_DTypeMeta *wrapped_theirs = NULL; /* set once, under the GIL, before any loop */

static int
theirs_to_ours(int nin, int nout, PyArray_DTypeMeta *const NPY_UNUSED(wrapped_dtypes[]),
               PyArray_Descr *const given_descrs[], PyArray_Descr *new_descrs[])
{
    for (int i = 0; i < nin + nout; i++) {
        PyArray_Descr *d = given_descrs[i];
        if (d != NULL && NPY_DTYPE(d) == wrapped_theirs) {
            /* our descriptor in the same byte order: a swapped operand stays swapped */
            d = PyArray_ISNBO(d->byteorder) ? bf16_descr : PyArray_DescrNewByteorder(bf16_descr, NPY_SWAP);
            if (d == NULL) {
                for (int j = 0; j < i; j++) {
                    Py_CLEAR(new_descrs[j]);
                }
                return -1;
            }
            if (d == bf16_descr) {
                Py_INCREF(d);
            }
        }
        else {
            Py_XINCREF(d);
        }
        new_descrs[i] = d;
    }
    return 0;
}

static int
ours_to_theirs(int nin, int nout, PyArray_DTypeMeta *const new_dtypes[],
               PyArray_Descr *const NPY_UNUSED(given_descrs[]), PyArray_Descr *original_descrs[],
               PyArray_Descr *loop_descrs[])
{
    for (int i = 0; i < nin + nout; i++) {
        PyArray_Descr *d = original_descrs[i];
        if (new_dtypes[i] == wrapped_theirs) {
            PyArray_Descr *native = PyArray_DescrFromType(registered_type_num);
            if (native == NULL) {
                for (int j = 0; j < i; j++) {
                    Py_CLEAR(loop_descrs[j]);
                }
                return -1;
            }
            if (PyArray_ISNBO(d->byteorder)) {
                d = native;
            }
            else {
                d = PyArray_DescrNewByteorder(native, NPY_SWAP);
                Py_DECREF(native);
                if (d == NULL) {
                    for (int j = 0; j < i; j++) {
                        Py_CLEAR(loop_descrs[j]);
                    }
                    return -1;
                }
            }
        }
        else {
            Py_INCREF(d);
        }
        loop_descrs[i] = d;
    }
    return 0;
}

static int output_loops_done = 0; /* as mixed_promoters_done */

/* _register_output_loops(dtype, ufuncs): for each ufunc whose loop on our bfloat16 gives our
 * bfloat16 only, loops with the outputs in the other bfloat16 (and, for two inputs and one
 * output, the reduction's (theirs, ours, theirs)), wrapping ours. Call after a resolve_dtypes of
 * each (which puts the wrapped loop into the ufunc's list). */
PyObject *
bf16_register_output_loops(PyObject *NPY_UNUSED(self), PyObject *args)
{
    PyArray_DTypeMeta *theirs = NULL;
    PyObject *seq = parse_registration(args, "_register_output_loops", output_loops_done, &theirs);
    if (seq == NULL || seq == Py_None) {
        return seq;
    }
    PyArray_DTypeMeta *ours = NPY_DTYPE(bf16_descr);
    wrapped_theirs = theirs;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *u = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyObject_TypeCheck(u, &PyUFunc_Type) || ((PyUFuncObject *)u)->nargs > 4) {
            PyErr_Format(PyExc_TypeError, "expected a ufunc of at most four operands, got %R", u);
            Py_DECREF(seq);
            return NULL;
        }
        int nin = ((PyUFuncObject *)u)->nin, nargs = ((PyUFuncObject *)u)->nargs;
        PyArray_DTypeMeta *wrapped[4], *outs[4], *reduce[4];
        for (int k = 0; k < nargs; k++) {
            wrapped[k] = ours;
            outs[k] = k < nin ? ours : theirs;
            reduce[k] = k == 1 ? ours : theirs;
        }
        if (PyUFunc_AddWrappingLoop(u, outs, wrapped, theirs_to_ours, ours_to_theirs) < 0 ||
                (nin == 2 && nargs == 3 &&
                 PyUFunc_AddWrappingLoop(u, reduce, wrapped, theirs_to_ours, ours_to_theirs) < 0)) {
            Py_DECREF(seq);
            return NULL;
        }
    }
    Py_DECREF(seq);
    output_loops_done = 1;
    Py_RETURN_NONE;
}

/*
 * Casts with the other library's narrow formats (ml_dtypes' float8/float6/float4 and small
 * integers), both ways through float32: bfloat16 -> float32 is exact and the library's own
 * float32 -> T cast rounds once; T -> float32 is the library's (exact for every such format)
 * and float32 -> bfloat16 rounds once. So the bits are those of the library's own bfloat16 -> T
 * and T -> bfloat16 casts (tests/test_interop_mldtypes.py::test_narrow_formats_cast_through_float32).
 * The library's two float32 casts are looked up once, here, under the GIL; the loops find them
 * by the other array's type number (NumPy hands legacy casts arrays carrying the descriptors).
 */
#define VIA_F32_MAX 32
#define VIA_F32_CHUNK 256

typedef struct {
    int type_num;
    npy_intp elsize;
    PyArray_VectorUnaryFunc *from_f32; /* float32 -> T, the library's */
    PyArray_VectorUnaryFunc *to_f32;   /* T -> float32, the library's */
    int registered;                    /* both casts registered with NumPy */
} via_f32_entry;

/* Filled under the GIL before the casts that read an entry are registered with NumPy. */
static via_f32_entry via_f32[VIA_F32_MAX];
static int via_f32_count;

static const via_f32_entry *
via_f32_find(void *arr)
{
    int num = arr != NULL ? PyArray_DESCR((PyArrayObject *)arr)->type_num : -1;
    for (int k = 0; k < via_f32_count; k++) {
        if (via_f32[k].type_num == num) return &via_f32[k];
    }
    return NULL;
}

static void
bf16_to_narrow(void *from, void *to, npy_intp n, void *NPY_UNUSED(fromarr), void *toarr)
{
    const via_f32_entry *e = via_f32_find(toarr);
    if (e == NULL) return; /* unreachable: registered with its entry */
    float buf[VIA_F32_CHUNK];
    for (npy_intp i0 = 0; i0 < n; i0 += VIA_F32_CHUNK) {
        npy_intp m = n - i0 < VIA_F32_CHUNK ? n - i0 : VIA_F32_CHUNK;
        for (npy_intp i = 0; i < m; i++) {
            bf16_t h;
            memcpy(&h, (const char *)from + 2 * (i0 + i), 2);
            buf[i] = bf16_to_f32(h);
        }
        e->from_f32(buf, (char *)to + i0 * e->elsize, m, NULL, toarr);
    }
    bf16_reduction_cast((const char *)from, 2, 1, (char *)to, e->elsize, 0, n);
}

static void
narrow_to_bf16(void *from, void *to, npy_intp n, void *fromarr, void *NPY_UNUSED(toarr))
{
    const via_f32_entry *e = via_f32_find(fromarr);
    if (e == NULL) return; /* unreachable: registered with its entry */
    float buf[VIA_F32_CHUNK];
    for (npy_intp i0 = 0; i0 < n; i0 += VIA_F32_CHUNK) {
        npy_intp m = n - i0 < VIA_F32_CHUNK ? n - i0 : VIA_F32_CHUNK;
        e->to_f32((char *)from + i0 * e->elsize, buf, m, fromarr, NULL);
        for (npy_intp i = 0; i < m; i++) {
            bf16_t h = f32_to_bf16(buf[i]);
            memcpy((char *)to + 2 * (i0 + i), &h, 2);
        }
    }
    bf16_reduction_cast((const char *)from, e->elsize, 0, (char *)to, 2, 1, n);
}

/* _register_float32_casts(dtype): casts both ways with another library's user-defined dtype
 * that has its own casts to and from float32. Calling it again for the same dtype does nothing. */
PyObject *
bf16_register_float32_casts(PyObject *NPY_UNUSED(self), PyObject *obj)
{
    if (!PyArray_DescrCheck(obj)) {
        PyErr_Format(PyExc_TypeError, "_register_float32_casts expects a numpy dtype, got %R", obj);
        return NULL;
    }
    PyArray_Descr *other = (PyArray_Descr *)obj;
    int num = other->type_num;
    if (!PyTypeNum_ISUSERDEF(num) || num == bf16_type_num || num == registered_type_num) {
        PyErr_Format(PyExc_TypeError,
                     "_register_float32_casts needs another library's user-defined dtype, got %R", obj);
        return NULL;
    }
    int slot = via_f32_count;
    for (int k = 0; k < via_f32_count; k++) {
        if (via_f32[k].type_num == num) {
            if (via_f32[k].registered) Py_RETURN_NONE;
            slot = k; /* an earlier call failed midway: register again over its entry */
        }
    }
    if (slot == VIA_F32_MAX) {
        PyErr_SetString(PyExc_RuntimeError, "_register_float32_casts: too many dtypes");
        return NULL;
    }
    PyArray_Descr *f32 = PyArray_DescrFromType(NPY_FLOAT);
    if (f32 == NULL) {
        return NULL;
    }
    /* float32 -> T sits in float32's cast dictionary (a user-defined target), T -> float32 in
     * T's own cast table */
    PyObject *castdict = PyDataType_GetArrFuncs(f32)->castdict;
    PyObject *key = PyLong_FromLong(num);
    PyObject *cap = (castdict != NULL && key != NULL) ? PyDict_GetItemWithError(castdict, key) : NULL;
    Py_XDECREF(key);
    Py_DECREF(f32);
    PyArray_VectorUnaryFunc *from_f32 = cap != NULL ? (PyArray_VectorUnaryFunc *)PyCapsule_GetPointer(cap, NULL) : NULL;
    PyArray_VectorUnaryFunc *to_f32 = PyDataType_GetArrFuncs(other)->cast[NPY_FLOAT];
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (from_f32 == NULL || to_f32 == NULL) {
        PyErr_Format(PyExc_TypeError, "%R has no casts of its own to and from float32", obj);
        return NULL;
    }
    /* the entry exists before either cast that reads it; it counts as done only once both are */
    via_f32[slot] = (via_f32_entry){num, PyDataType_ELSIZE(other), from_f32, to_f32, 0};
    if (slot == via_f32_count) {
        via_f32_count++;
    }
    if (PyArray_RegisterCastFunc(bf16_descr, num, bf16_to_narrow) < 0 ||
            PyArray_RegisterCastFunc(other, bf16_type_num, narrow_to_bf16) < 0) {
        return NULL;
    }
    via_f32[slot].registered = 1;
    Py_RETURN_NONE;
}
