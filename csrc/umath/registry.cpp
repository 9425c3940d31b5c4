/*
 * umath/registry.cpp - the single table of bfloat16 ufunc loops: which ufunc gets which
 * functor through which loop shape, and which binary ufuncs get bfloat16 promoters.
 * add and multiply are registered by reduce_acc.cpp (they accumulate in float32).
 * Adding a ufunc: a functor in ops.h and one row here.
 */
#include "umath/loops.h"
#include "umath/umath.h"

#include <cstring>

namespace umath {

bf16_tier loop_tier = BF16_TIER_BASELINE;

struct LoopDef {
    const char *ufunc;
    PyUFuncGenericFunction func;
    int nargs;
    int types[4]; /* -1 stands for bfloat16 */
    PyArrayMethod_StridedLoop *method; /* the same loop as an ArrayMethod's, or NULL */
    PyArrayMethod_StridedLoop *indexed; /* its ufunc.at form (binary, bfloat16 only), or NULL */
};

/* A legacy inner loop as an ArrayMethod strided loop */
template <PyUFuncGenericFunction F>
static int
method_loop(PyArrayMethod_Context *, char *const data[], npy_intp const dims[], npy_intp const strides[],
            NpyAuxData *)
{
    F((char **)data, dims, strides, NULL);
    return 0;
}

/*
 * ufunc.at on a 1-d, aligned, native bfloat16 target with a bfloat16 operand and one integer
 * index array: NumPy calls a loop's indexed form once for all indices instead of its strided
 * loop once per index through its iterator. This one makes the strided loop's one-element call
 * for each index, the same call NumPy's iterator path makes (same bits and IEEE flags), without
 * the iterator's step between elements (tests/test_reductions.py::
 * test_ufunc_at_indexed_loop_like_a_float32_reference; README "Reductions"). Only the ufuncs
 * whose float16 loops NumPy gives an indexed form get one (BINAT below): NumPy's indexed
 * path reads a 1-d operand straight through even where it broadcasts against an n-d index
 * (past its end), so power.at(a, zeros((n, 2)), ones(2)) would crash where float16 takes the
 * safe path (::test_ufunc_at_nd_index_with_broadcast_values_like_float16).
 */
template <PyUFuncGenericFunction F>
static int
indexed_loop(PyArrayMethod_Context *, char *const *args, npy_intp const *dims, npy_intp const *steps,
             NpyAuxData *)
{
    char *base = args[0], *idx = args[1], *v = args[2];
    npy_intp one = 1, zero[3] = {0, 0, 0};
    for (npy_intp i = 0; i < dims[0]; i++, idx += steps[1], v += steps[2]) {
        npy_intp k;
        memcpy(&k, idx, sizeof k);
        char *q = base + (k < 0 ? k + steps[3] : k) * steps[0]; /* NumPy has checked the bounds */
        char *data[3] = {q, v, q};
        F(data, &one, zero, nullptr);
    }
    return 0;
}

#define BF -1
#define LOOP(name, f, n, ...) {name, f, n, __VA_ARGS__, method_loop<f>, NULL}
#define BIN(name, Op) LOOP(name, binary_loop<Op>, 3, {BF, BF, BF})
/* with an indexed loop: the ufuncs NumPy gives one for float16 (add and multiply: reduce_acc.cpp) */
#define BINAT(name, Op) {name, binary_loop<Op>, 3, {BF, BF, BF}, method_loop<binary_loop<Op>>, \
                         indexed_loop<binary_loop<Op>>}
#define BINBITS(name, Op) LOOP(name, binary_bits_loop<Op>, 3, {BF, BF, BF})
#define CMP(name, Op) LOOP(name, compare_loop<Op>, 3, {BF, BF, NPY_BOOL})
#define UN(name, Op) LOOP(name, unary_loop<Op>, 2, {BF, BF})
#define UNBITS(name, Op) LOOP(name, unary_bits_loop<Op>, 2, {BF, BF})
#define PRED(name, Op) LOOP(name, predicate_loop<Op>, 2, {BF, NPY_BOOL})

static const LoopDef loop_table[] = {
    BINAT("subtract", Subtract), BINAT("divide", Divide), BIN("power", Power),
    BINAT("floor_divide", FloorDivide), BIN("remainder", Remainder), BIN("fmod", Fmod),
    BINAT("maximum", Maximum), BINAT("minimum", Minimum), BINAT("fmax", Fmax),
    BINAT("fmin", Fmin),
    BIN("arctan2", Arctan2), BIN("hypot", Hypot), BINBITS("heaviside", Heaviside),
    BIN("logaddexp", Logaddexp), BIN("logaddexp2", Logaddexp2),
    BINBITS("copysign", Copysign), BINBITS("nextafter", Nextafter),
    CMP("equal", Equal), CMP("not_equal", NotEqual), CMP("less", Less),
    CMP("less_equal", LessEqual), CMP("greater", Greater), CMP("greater_equal", GreaterEqual),
    CMP("logical_and", LogicalAnd), CMP("logical_or", LogicalOr),
    CMP("logical_xor", LogicalXor),
    UN("reciprocal", Reciprocal), UN("square", Square), UN("sqrt", Sqrt), UN("cbrt", Cbrt),
    UN("exp", Exp), UN("exp2", Exp2), UN("expm1", Expm1), UN("log", Log), UN("log2", Log2),
    UN("log10", Log10), UN("log1p", Log1p), UN("sin", Sin), UN("cos", Cos), UN("tan", Tan),
    UN("arcsin", Arcsin), UN("arccos", Arccos), UN("arctan", Arctan), UN("sinh", Sinh),
    UN("cosh", Cosh), UN("tanh", Tanh), UN("arcsinh", Arcsinh), UN("arccosh", Arccosh),
    UN("arctanh", Arctanh), UN("deg2rad", Deg2rad), UN("radians", Deg2rad),
    UN("rad2deg", Rad2deg), UN("degrees", Rad2deg), UN("floor", Floor), UN("ceil", Ceil),
    UN("trunc", Trunc), UN("rint", Rint), UN("sign", Sign),
    UNBITS("negative", Negative), UNBITS("positive", Positive), UNBITS("absolute", Absolute),
    UNBITS("fabs", Absolute), UNBITS("conjugate", Positive), UNBITS("spacing", Spacing),
    PRED("isnan", Isnan), PRED("isinf", Isinf), PRED("isfinite", Isfinite),
    PRED("signbit", Signbit), PRED("logical_not", LogicalNot),
    LOOP("divmod", divmod_loop, 4, {BF, BF, BF, BF}),
    LOOP("modf", modf_loop, 3, {BF, BF, BF}),
    LOOP("clip", clip_loop, 4, {BF, BF, BF, BF}),
    /* integer operands: legacy loops (NumPy's legacy type resolution casts an integer of another
     * width to them: ldexp(x, np.int16(3)); not tried as ArrayMethods). ldexp has float16's int
     * and int64 loops; int64 is NPY_LONG where long has 64 bits, as np.int64 is (a second loop
     * of the same width would replace the first in NumPy's list). With dtype= or signature=,
     * NumPy takes the first user loop of its list (the int one) and refuses a uint32 exponent
     * it cannot cast (README, "Differences from float16"; tests/test_ufuncs.py::
     * test_ldexp_exponent_types_like_float16) */
    {"frexp", frexp_loop, 3, {BF, BF, NPY_INT}, NULL, NULL},
    {"ldexp", ldexp_int_loop, 3, {BF, NPY_INT, BF}, NULL, NULL},
    {"ldexp", ldexp_int64_loop, 3, {BF, NPY_SIZEOF_LONG == 8 ? NPY_LONG : NPY_LONGLONG, BF}, NULL,
     NULL},
};

/* Binary ufuncs whose mixed-type calls promote by the README table. */
static const char *const binary_promoted[] = {
    "add", "subtract", "multiply", "divide", "power", "floor_divide", "remainder", "fmod",
    "maximum", "minimum", "fmax", "fmin", "arctan2", "hypot", "heaviside", "logaddexp",
    "logaddexp2", "copysign", "nextafter", "equal", "not_equal", "less", "less_equal",
    "greater", "greater_equal", "logical_and", "logical_or", "logical_xor", "divmod",
    "matmul", "vecdot", "matvec", "vecmat"};

PyObject *
get_ufunc(PyObject *numpy, const char *name)
{
    PyObject *u = NULL;
    if (strcmp(name, "clip") != 0) {
        u = PyObject_GetAttrString(numpy, name);
    }
    else {
        PyObject *core = PyObject_GetAttrString(numpy, "_core");
        PyObject *um = core ? PyObject_GetAttrString(core, "umath") : NULL;
        Py_XDECREF(core);
        u = um ? PyObject_GetAttrString(um, "clip") : NULL;
        Py_XDECREF(um);
    }
    if (u != NULL && !PyObject_TypeCheck(u, &PyUFunc_Type)) {
        Py_DECREF(u);
        PyErr_Format(PyExc_RuntimeError, "numpy.%s is not a ufunc", name);
        return NULL;
    }
    return u;
}

} /* namespace umath */

using namespace umath;

/*
 * The value a reduction starts from: the ufunc's identity (hypot 0, logaddexp -inf), as NumPy
 * gives float16's loops, for empty and non-empty reductions alike, so hypot.reduce([-4]) is 4
 * (tests/test_reductions.py::test_hypot_and_logaddexp_reduce_from_their_identity).
 */
static int
identity_initial(PyArrayMethod_Context *context, npy_bool, void *initial)
{
    if (context->caller == NULL) {
        return 0;
    }
    PyObject *id = PyObject_GetAttrString(context->caller, "identity");
    if (id == NULL) {
        return -1;
    }
    if (id == Py_None) {
        Py_DECREF(id);
        return 0;
    }
    double v = PyFloat_AsDouble(id);
    Py_DECREF(id);
    if (v == -1.0 && PyErr_Occurred()) {
        return -1;
    }
    bf16_t bits = f64_to_bf16(v);
    memcpy(initial, &bits, sizeof bits);
    return 1;
}

/* Register def's loop as an ArrayMethod (bfloat16 and bool operands only): NumPy then calls it
 * without the legacy loop selector's per-call lookup (15-35 ns of a small call, README). */
static int
add_method_loop(PyUFuncObject *ufunc, const LoopDef &def, const int *types)
{
    PyArray_DTypeMeta *dtypes[4];
    for (int i = 0; i < def.nargs; i++) {
        PyArray_Descr *d = def.types[i] == BF ? bf16_descr : PyArray_DescrFromType(types[i]);
        if (d == NULL) {
            return -1;
        }
        dtypes[i] = NPY_DTYPE(d);
        if (def.types[i] != BF) {
            Py_DECREF(d); /* a builtin descriptor (and its DType) lives as long as NumPy */
        }
    }
    bool has_identity = ufunc->identity != PyUFunc_None && ufunc->identity != PyUFunc_ReorderableNone;
    bool reducible = def.nargs == 3 && def.types[0] == BF && def.types[1] == BF && def.types[2] == BF;
    PyType_Slot slots[] = {{NPY_METH_strided_loop, (void *)def.method},
                           {NPY_METH_unaligned_strided_loop, (void *)def.method},
                           {has_identity && reducible ? NPY_METH_get_reduction_initial : 0,
                            has_identity && reducible ? (void *)identity_initial : NULL},
                           {0, NULL},
                           {0, NULL}};
    if (def.indexed != NULL) {
        slots[has_identity && reducible ? 3 : 2] = {NPY_METH_contiguous_indexed_loop,
                                                    (void *)def.indexed};
    }
    PyArrayMethod_Spec spec = {};
    spec.name = def.ufunc;
    spec.nin = ufunc->nin;
    spec.nout = ufunc->nout;
    spec.casting = NPY_NO_CASTING;
    /* as NumPy marks its own loops: a ufunc with an identity, or with a "reorderable None" one
     * (maximum, fmin, ...), may reduce over several axes at once */
    spec.flags = ufunc->identity != PyUFunc_None
                     ? (NPY_ARRAYMETHOD_FLAGS)(NPY_METH_SUPPORTS_UNALIGNED | NPY_METH_IS_REORDERABLE)
                     : NPY_METH_SUPPORTS_UNALIGNED;
    spec.dtypes = dtypes;
    spec.slots = slots;
    if (spec.nin + spec.nout != def.nargs) {
        PyErr_Format(PyExc_RuntimeError, "numpy.%s takes %d operands, the loop table says %d", def.ufunc,
                     spec.nin + spec.nout, def.nargs);
        return -1;
    }
    return PyUFunc_AddLoopFromSpec((PyObject *)ufunc, &spec);
}

extern "C" int
init_ufuncs(PyObject *module)
{
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
    /* The loops' highest tier is avx512bf16: the avx512 loops plus byte-table ones that need
     * AVX512_VBMI besides (tanh_bytes in loops_avx512.cpp); a CPU with AVX512_BF16 but not VBMI
     * (Cooper Lake) runs the avx512 loops. */
    bf16_tier t = bf16_cpu_tier();
    loop_tier = t >= BF16_TIER_AVX512BF16 && bf16_cpu_has_vbmi() ? BF16_TIER_AVX512BF16
                : t > BF16_TIER_AVX512                          ? BF16_TIER_AVX512
                                                                : t;
#else
    loop_tier = BF16_TIER_BASELINE;
#endif
    const char *simd = bf16_tier_name(loop_tier);
    if (PyModule_AddStringConstant(module, "_simd", simd) < 0) {
        return -1;
    }
    PyObject *numpy = PyImport_ImportModule("numpy");
    if (numpy == NULL) {
        return -1;
    }
    int r = 0;
    for (const LoopDef &def : loop_table) {
        PyObject *ufunc = get_ufunc(numpy, def.ufunc);
        if (ufunc == NULL) {
            r = -1;
            break;
        }
        int types[4];
        for (int i = 0; i < def.nargs; i++) {
            types[i] = def.types[i] == BF ? bf16_type_num : def.types[i];
        }
        if (def.method != NULL) {
            r = add_method_loop((PyUFuncObject *)ufunc, def, types);
        }
        else {
            r = PyUFunc_RegisterLoopForType((PyUFuncObject *)ufunc, bf16_type_num, def.func, types,
                                            NULL);
        }
        Py_DECREF(ufunc);
        if (r < 0) {
            break;
        }
    }
    if (r == 0) {
        r = register_accumulating_loops(numpy);
    }
    if (r == 0) {
        r = register_widening_sum(module);
    }
    if (r == 0) {
        r = register_promoters(numpy, binary_promoted,
                               sizeof binary_promoted / sizeof binary_promoted[0]);
    }
    if (r == 0) {
        /* the loops whose every operand is bfloat16, and add/multiply (reduce_acc.cpp) */
        const char *names[sizeof loop_table / sizeof loop_table[0] + 2] = {"add", "multiply"};
        size_t count = 2;
        for (const LoopDef &def : loop_table) {
            bool all_bf16 = true;
            for (int i = 0; i < def.nargs; i++) all_bf16 = all_bf16 && def.types[i] == BF;
            if (all_bf16) names[count++] = def.ufunc;
        }
        r = register_output_dtype_promoters(numpy, names, count);
    }
    Py_DECREF(numpy);
    return r;
}
