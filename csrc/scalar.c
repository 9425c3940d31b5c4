/*
 * scalar.c - the bfloat16 scalar type: a subclass of np.floating holding 16 bits.
 * Arithmetic between scalars is inherited from np.generic (it goes through the registered
 * ufunc loops and promoters, so scalars and arrays follow one promotion table).
 */
#include "module.h"
#include "number/parse.h"
#include "interop/interop.h"
#include <stdio.h>
#include <strings.h>
#include <string.h>
#include <ctype.h>
#include <fenv.h>
#include <stdlib.h>
#include <errno.h>

PyObject *
bf16_scalar_from_bits(bf16_t bits)
{
    PyBFloat16Object *obj =
            (PyBFloat16Object *)PyBFloat16_Type.tp_alloc(&PyBFloat16_Type, 0);
    if (obj == NULL) {
        return NULL;
    }
    obj->value = bits;
    return (PyObject *)obj;
}

/*
 * Parse a numeric string the way float() does (same syntax: whitespace, underscores, Unicode
 * decimal digits) but round the decimal value once, directly to bfloat16 (csrc/number/parse.c;
 * "1.00390625000000001" gives 1.0078125 where going through float64 gives 1.0).
 */
static int
bf16_from_string(PyObject *str, bf16_t *out)
{
    int r;
    if (PyBytes_Check(str)) {
        r = bf16_parse_text(PyBytes_AS_STRING(str), (size_t)PyBytes_GET_SIZE(str), out);
    }
    else if (PyUnicode_IS_ASCII(str)) {
        Py_ssize_t len;
        const char *text = PyUnicode_AsUTF8AndSize(str, &len);
        if (text == NULL) {
            return -1;
        }
        r = bf16_parse_text(text, (size_t)len, out);
    }
    else {
        /* Like float(): Unicode whitespace reads as a space, any decimal digit as its ASCII
         * digit; any other non-ASCII character makes the text invalid. */
        Py_ssize_t len = PyUnicode_GET_LENGTH(str);
        char *text = PyMem_Malloc((size_t)len + 1);
        if (text == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        int kind = PyUnicode_KIND(str);
        const void *data = PyUnicode_DATA(str);
        for (Py_ssize_t i = 0; i < len; i++) {
            Py_UCS4 ch = PyUnicode_READ(kind, data, i);
            int digit = Py_UNICODE_TODECIMAL(ch);
            if (ch < 128) {
                text[i] = (char)ch;
            }
            else if (Py_UNICODE_ISSPACE(ch)) {
                text[i] = ' ';
            }
            else if (digit >= 0) {
                text[i] = (char)('0' + digit);
            }
            else {
                text[i] = '?';
            }
        }
        r = bf16_parse_text(text, (size_t)len, out);
        PyMem_Free(text);
    }
    if (r < 0) {
        PyErr_Format(PyExc_ValueError, "could not convert string to bfloat16: %R", str);
        return -1;
    }
    return 0;
}

/* Integers round once, exactly, however wide they are. */
static int
bf16_from_pylong(PyObject *obj, bf16_t *out)
{
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (!overflow) {
        *out = i64_to_bf16((int64_t)v);
        return 0;
    }
    unsigned long long u = PyLong_AsUnsignedLongLong(obj);
    if (!(u == (unsigned long long)-1 && PyErr_Occurred())) {
        *out = u64_to_bf16((uint64_t)u);
        return 0;
    }
    PyErr_Clear();
    /* Wider than 64 bits: keep the top 64 bits plus a sticky bit, then round once. */
    int neg = overflow < 0;
    /* |obj| through int's own slot: an exact int, so the shifts and the comparison below are
     * int's, never an int subclass's operators (those gave wrong values, a ValueError and a
     * crash: tests/test_conversions.py::test_int_subclasses_convert_by_their_value) */
    PyObject *mag = PyLong_Type.tp_as_number->nb_absolute(obj);
    if (mag == NULL) {
        return -1;
    }
    int64_t nbits = (int64_t)_PyLong_NumBits(mag);
    if (nbits < 0) {
        Py_DECREF(mag);
        return -1;
    }
    if (nbits > 129) { /* beyond 2^129 every bfloat16 rounding is inf */
        /* past float's range: OverflowError, as np.float16 and np.float32 raise */
        double d = PyLong_AsDouble(mag);
        Py_DECREF(mag);
        if (d == -1.0 && PyErr_Occurred()) {
            return -1;
        }
        *out = neg ? BF16_NINF : BF16_INF;
        return 0;
    }
    PyObject *shift = PyLong_FromLongLong(nbits - 64);
    PyObject *top = shift ? PyNumber_Rshift(mag, shift) : NULL;
    PyObject *back = top ? PyNumber_Lshift(top, shift) : NULL;
    int sticky = back ? PyObject_RichCompareBool(back, mag, Py_NE) : -1;
    unsigned long long t = top ? PyLong_AsUnsignedLongLong(top) : 0;
    Py_XDECREF(shift);
    Py_XDECREF(top);
    Py_XDECREF(back);
    Py_DECREF(mag);
    if (sticky < 0 || PyErr_Occurred()) {
        return -1;
    }
    double d = ldexp(u64_to_f64_round_odd(t | (uint64_t)(sticky ? 1 : 0)), (int)(nbits - 64));
    bf16_t h = f64_to_bf16(d);
    *out = neg ? (bf16_t)(h | BF16_SIGN) : h;
    return 0;
}

/* Objects with __index__ (numpy integers, ...) convert exactly through a Python int. */
static int
bf16_from_index(PyObject *obj, bf16_t *out)
{
    PyObject *as_int = PyNumber_Index(obj);
    if (as_int == NULL) {
        return -1;
    }
    int r = bf16_from_pylong(as_int, out);
    Py_DECREF(as_int);
    return r;
}

/* `*src_inf` is set to whether the value read was infinite where that took a call into the
 * object (__float__, __index__), so the caller need not call it again; left alone elsewhere. */
static int
convert_object(PyObject *obj, bf16_t *out, int *src_inf)
{
    /* first, the elements of np.array(list_of_floats); other float subclasses may convert
     * themselves: their __float__, below, as float16 */
    if (PyFloat_CheckExact(obj) || PyArray_IsScalar(obj, Double)) {
        *out = f64_to_bf16(PyFloat_AS_DOUBLE(obj));
        return 0;
    }
    if (PyBFloat16_Check(obj)) {
        *out = ((PyBFloat16Object *)obj)->value;
        return 0;
    }
    /* A 0-d array of a subclass that converts itself (a masked element: NaN with NumPy's
     * warning) is read through its __float__ below, as float16 reads it
     * (tests/test_dropin.py::test_masked_constant_stored_is_nan_with_numpys_warning). */
    int own_float = PyArray_Check(obj) && !PyArray_CheckExact(obj) &&
                    Py_TYPE(obj)->tp_as_number != NULL && Py_TYPE(obj)->tp_as_number->nb_float != NULL &&
                    Py_TYPE(obj)->tp_as_number->nb_float != PyArray_Type.tp_as_number->nb_float;
    if (PyArray_Check(obj) && !own_float && PyArray_NDIM((PyArrayObject *)obj) == 0 &&
            PyArray_DESCR((PyArrayObject *)obj)->type_num == bf16_type_num) {
        /* a 0-d bfloat16 array gives its bits, NaN payload included (getitem gives a float) */
        PyArrayObject *arr = (PyArrayObject *)obj;
        PyObject *scalar = PyArray_ToScalar(PyArray_DATA(arr), arr);
        if (scalar == NULL) {
            return -1;
        }
        *out = ((PyBFloat16Object *)scalar)->value;
        Py_DECREF(scalar);
        return 0;
    }
    if (PyBool_Check(obj)) {
        *out = (obj == Py_True) ? 0x3f80 : 0;
        return 0;
    }
    if (PyLong_Check(obj)) {
        return bf16_from_pylong(obj, out);
    }
    if (PyUnicode_Check(obj) || PyBytes_Check(obj)) {
        return bf16_from_string(obj, out);
    }
    if (PyArray_IsScalar(obj, Bool)) {
        *out = PyObject_IsTrue(obj) ? 0x3f80 : 0;
        return 0;
    }
    if (PyArray_IsScalar(obj, Half)) {
        /* float16 -> float32 exactly, then one rounding */
        *out = f32_to_bf16(f16_bits_to_f32(((PyHalfScalarObject *)obj)->obval));
        return 0;
    }
    if (PyArray_IsScalar(obj, Float)) {
        *out = f32_to_bf16(((PyFloatScalarObject *)obj)->obval);
        return 0;
    }
    if (PyArray_IsScalar(obj, LongDouble)) {
        *out = ld_to_bf16(((PyLongDoubleScalarObject *)obj)->obval);
        return 0;
    }
    /* datetime64/timedelta64 (checked before Integer: timedelta64 is one) give their count of
     * units, as np.float16/np.float32 do (NaT is the int64 minimum) */
    if (PyArray_IsScalar(obj, Datetime)) {
        *out = i64_to_bf16((int64_t)((PyDatetimeScalarObject *)obj)->obval);
        return 0;
    }
    if (PyArray_IsScalar(obj, Timedelta)) {
        *out = i64_to_bf16((int64_t)((PyTimedeltaScalarObject *)obj)->obval);
        return 0;
    }
    if (PyArray_IsScalar(obj, Integer)) {
        /* the stored value, as np.float16 reads it, never a subclass's own __index__
         * (tests/test_scalar.py::test_numpy_integer_subclasses_give_their_stored_value):
         * NumPy's own cast to the 64-bit integer of the scalar's signedness, which is exact */
        int is_signed = PyArray_IsScalar(obj, SignedInteger);
        PyArray_Descr *wide = PyArray_DescrFromType(is_signed ? NPY_INT64 : NPY_UINT64);
        npy_int64 sv = 0;
        npy_uint64 uv = 0;
        int r = wide == NULL ? -1 : PyArray_CastScalarToCtype(obj, is_signed ? (void *)&sv : (void *)&uv, wide);
        Py_XDECREF(wide);
        if (r < 0) {
            if (!PyErr_Occurred()) {
                PyErr_Format(PyExc_TypeError, "cannot read the integer scalar %R", obj);
            }
            return -1;
        }
        *out = is_signed ? i64_to_bf16((int64_t)sv) : u64_to_bf16((uint64_t)uv);
        return 0;
    }
    if (obj == Py_None) { /* NaN, as np.float16(None) and float16 arrays store it */
        *out = BF16_QNAN;
        return 0;
    }
    if (PyArray_IsScalar(obj, Generic)) {
        PyArray_Descr *d = PyArray_DescrFromScalar(obj);
        if (d == NULL) {
            return -1;
        }
        int theirs = bf16_is_other_bfloat16(NPY_DTYPE(d));
        Py_DECREF(d);
        if (theirs) {
            /* the other library's bfloat16: its bits, as the array cast copies them (a
             * signalling NaN stays one; tests/test_interop_mldtypes.py::
             * test_scalars_of_theirs_keep_their_bits) */
            PyObject *arr = PyArray_FromScalar(obj, NULL);
            if (arr == NULL) {
                return -1;
            }
            memcpy(out, PyArray_DATA((PyArrayObject *)arr), 2);
            Py_DECREF(arr);
            return 0;
        }
    }
    if (PyArray_IsScalar(obj, Floating)) { /* float64 and other floating scalars */
        double d = PyFloat_AsDouble(obj);
        if (d == -1.0 && PyErr_Occurred()) {
            return -1;
        }
        *out = f64_to_bf16(d);
        return 0;
    }
    if (PyArray_IsScalar(obj, ComplexFloating)) {
        /* As np.float16 and ml_dtypes' bfloat16: NumPy's ComplexWarning, then the real part
         * rounded once (tests/test_scalar.py::test_numpy_complex_scalar_like_float16). */
        if (PyErr_WarnEx(bf16_complex_warning,
                         "Casting complex values to real discards the imaginary part", 1) < 0) {
            return -1;
        }
        if (PyArray_IsScalar(obj, CFloat)) {
            *out = f32_to_bf16(npy_crealf(((PyCFloatScalarObject *)obj)->obval));
        }
        else if (PyArray_IsScalar(obj, CDouble)) {
            *out = f64_to_bf16(npy_creal(((PyCDoubleScalarObject *)obj)->obval));
        }
        else {
            *out = ld_to_bf16(npy_creall(((PyCLongDoubleScalarObject *)obj)->obval));
        }
        return 0;
    }
    if (PyComplex_Check(obj)) { /* a Python complex is refused, as by np.float16 */
        PyErr_Format(PyExc_TypeError,
                     "cannot convert complex value %R to bfloat16; take .real first", obj);
        return -1;
    }
    if (PyArray_Check(obj)) {
        PyArrayObject *arr = (PyArrayObject *)obj;
        if (PyArray_NDIM(arr) != 0) {
            PyObject *shape = PyObject_GetAttrString(obj, "shape");
            if (shape == NULL) {
                return -1;
            }
            PyErr_Format(PyExc_ValueError,
                         "setting an array element with a sequence: a bfloat16 element takes "
                         "one number, not an array of shape %R", shape);
            Py_DECREF(shape);
            return -1;
        }
        if (own_float) {
            goto by_float;
        }
        PyObject *item = PyArray_GETITEM(arr, PyArray_DATA(arr));
        if (item == NULL) {
            return -1;
        }
        int r = PyArray_Check(item) ? -1 : bf16_from_object(item, out);
        if (r < 0 && !PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "could not convert 0-d array to bfloat16");
        }
        Py_DECREF(item);
        return r;
    }
    PyNumberMethods *nb_of_obj = Py_TYPE(obj)->tp_as_number;
    if (PyObject_CheckBuffer(obj) && !PyArray_IsScalar(obj, Generic) &&
            (nb_of_obj == NULL || (nb_of_obj->nb_float == NULL && nb_of_obj->nb_index == NULL))) {
        /* float() reads the bytes of a bytearray, memoryview, array.array('b') or any other
         * buffer without __float__/__index__ as text, and so do float16's item assignment,
         * fill and object casts: bytearray(b"1.5") gives 1.5, rounded once
         * (tests/test_conversions.py::test_buffers_of_text_convert_like_float16). Bytes that
         * are no number leave a sequence to the error below, a buffer that is no sequence to
         * float(). */
        Py_buffer view;
        if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) == 0) {
            int r = bf16_parse_text((const char *)view.buf, (size_t)view.len, out);
            PyBuffer_Release(&view);
            if (r == 0) {
                return 0;
            }
        }
        else if (PyErr_ExceptionMatches(PyExc_BufferError) ||
                 PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear(); /* a non-contiguous memoryview: no text, as for float() */
        }
        else {
            return -1;
        }
    }
    if (PySequence_Check(obj)) {
        /* float16's error, in item assignment, fill and object casts alike
         * (tests/test_scalar.py::test_sequence_as_one_element_is_a_value_error_like_float16) */
        PyErr_Format(PyExc_ValueError,
                     "setting an array element with a sequence: a bfloat16 element takes one "
                     "number, not a %.100s", Py_TYPE(obj)->tp_name);
        return -1;
    }
    /* Anything with __float__ / __index__ (e.g. fractions.Fraction, decimal.Decimal):
     * __float__ first, as float() and np.float16 take it (a float tensor's __index__ raises);
     * __index__ alone converts exactly (tests/test_scalar.py::test_float_before_index) */
by_float:;
    PyNumberMethods *nb = Py_TYPE(obj)->tp_as_number;
    if (PyIndex_Check(obj) && (nb == NULL || nb->nb_float == NULL)) {
        *src_inf = 0; /* an integer */
        return bf16_from_index(obj, out);
    }
    PyObject *f = PyNumber_Float(obj);
    if (f == NULL) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError,
                         "bfloat16() argument must be a real number or a numeric string, "
                         "not %.100s: %R", Py_TYPE(obj)->tp_name, obj);
        }
        return -1;
    }
    *out = f64_to_bf16(PyFloat_AS_DOUBLE(f));
    *src_inf = isinf(PyFloat_AS_DOUBLE(f));
    Py_DECREF(f);
    return 0;
}

/* Whether the source already was infinite, so that reaching inf is no overflow. Text (also in a
 * bytearray or other buffer) counts as infinite when float() reads it as inf: "inf",
 * "-Infinity", and decimals past float64's range such as "1e400", which float16's constructor
 * (through a Python float) takes silently
 * (tests/test_scalar.py::test_overflow_to_inf_warns_like_float16). */
static int
denotes_infinity(PyObject *obj)
{
    if (PyUnicode_Check(obj) || PyBytes_Check(obj) ||
            (PyObject_CheckBuffer(obj) && !PyArray_Check(obj) && !PyArray_IsScalar(obj, Generic))) {
        PyObject *f = PyFloat_FromString(obj);
        if (f == NULL) {
            PyErr_Clear();
            return 0;
        }
        int inf = isinf(PyFloat_AS_DOUBLE(f));
        Py_DECREF(f);
        return inf;
    }
    if (PyLong_Check(obj) || PyArray_IsScalar(obj, Integer)) {
        return 0;
    }
    /* long double and complex values in their own precision: 1e4000 is finite there, and
     * reading a complex through float() would warn a second time
     * (tests/test_scalar.py::test_overflow_from_long_double_and_complex_warns) */
    if (PyArray_IsScalar(obj, LongDouble)) {
        return isinf(((PyLongDoubleScalarObject *)obj)->obval);
    }
    if (PyArray_IsScalar(obj, CFloat)) {
        return isinf(npy_crealf(((PyCFloatScalarObject *)obj)->obval));
    }
    if (PyArray_IsScalar(obj, CDouble)) {
        return isinf(npy_creal(((PyCDoubleScalarObject *)obj)->obval));
    }
    if (PyArray_IsScalar(obj, CLongDouble)) {
        return isinf(npy_creall(((PyCLongDoubleScalarObject *)obj)->obval));
    }
    if (PyArray_Check(obj) && PyArray_NDIM((PyArrayObject *)obj) == 0) {
        PyObject *item = PyArray_ToScalar(PyArray_DATA((PyArrayObject *)obj), (PyArrayObject *)obj);
        if (item == NULL) {
            PyErr_Clear();
            return 0;
        }
        int inf = PyArray_IsScalar(item, Generic) && denotes_infinity(item);
        Py_DECREF(item);
        return inf;
    }
    double d = PyFloat_AsDouble(obj); /* floats, numpy scalars, __float__ */
    if (d == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return isinf(d);
}

/*
 * A finite value that rounds to infinity raises the FPU overflow flag, as float16's conversions
 * do: a cast loop leaves it to NumPy's check after the loop; item assignment and the
 * constructor report it themselves (bf16_from_object_reporting).
 */
static int
from_object_checked(PyObject *obj, bf16_t *out, int *overflow)
{
    /* NumPy may hand a borrowed element of an object array, which __float__ can free by
     * assigning into that array: hold it while it is read
     * (tests/test_scalar.py::test_conversion_holds_the_object_it_reads). */
    Py_INCREF(obj);
    int src_inf = -1;
    int r = convert_object(obj, out, &src_inf);
    *overflow = r == 0 && bf16_isinf(*out) && !PyBFloat16_Check(obj) &&
                !(src_inf >= 0 ? src_inf : denotes_infinity(obj));
    Py_DECREF(obj);
    return r;
}

int
bf16_from_object(PyObject *obj, bf16_t *out)
{
    int overflow;
    int r = from_object_checked(obj, out, &overflow);
    if (overflow) {
        bf16_raise_overflow();
    }
    return r;
}

/* bf16_from_object, then NumPy's "overflow encountered in cast" under np.errstate, as
 * float16's item assignment and constructor give it
 * (tests/test_scalar.py::test_overflow_to_inf_warns_like_float16). Overflow is the value's,
 * not the FP status word's: clearing and testing that word cost more than the conversion of
 * a Python float (np.array of 10^4 floats 1.36 -> 0.19 ms). */
int
bf16_from_object_reporting(PyObject *obj, bf16_t *out)
{
    int overflow;
    if (from_object_checked(obj, out, &overflow) < 0) {
        return -1;
    }
    if (overflow && PyUFunc_GiveFloatingpointErrors("cast", NPY_FPE_OVERFLOW) < 0) {
        return -1;
    }
    return 0;
}

/* ---- printing ------------------------------------------------------------------------- */

/*
 * Fewest significant digits (1..9) whose decimal value rounds back to `bits`. At each length
 * the nearest decimal is tried first: snprintf's, correctly rounded with exact ties to the even
 * digit, the choice float16's Dragon4 makes (0.9375 prints "0.938":
 * tests/test_scalar.py::test_str_shortest_round_trip_all_patterns). At a power of two the
 * rounding interval is lopsided, so the decimals one unit below and above are tried next
 * (2^-119 is "1.51e-36", whose nearest 3-digit decimal 1.50e-36 lies outside the interval); at
 * most one of them can round back when the nearest does not, the interval being one piece.
 * Only the digits and exponent of snprintf's text are read, and strtod reads no decimal point,
 * so the C locale's decimal point changes nothing here.
 */
static int
bf16_shortest_digits(bf16_t bits, double *value)
{
    double exact = bf16_to_f64(bits);
    char buf[64];
    for (int p = 1; p <= 9; p++) {
        snprintf(buf, sizeof buf, "%.*e", p - 1, exact);
        char *e = strchr(buf, 'e');
        if (e == NULL) {
            break;
        }
        int exp10 = atoi(e + 1) - (p - 1);
        long long mant = 0;
        for (char *c = buf; c < e; c++) {
            if (*c >= '0' && *c <= '9') {
                mant = mant * 10 + (*c - '0');
            }
        }
        const long long tries[3] = {mant, mant - 1, mant + 1};
        for (int t = 0; t < 3; t++) {
            if (tries[t] < 0) {
                continue;
            }
            snprintf(buf, sizeof buf, "%s%llde%d", exact < 0 ? "-" : "", tries[t], exp10);
            double back = strtod(buf, NULL);
            if (f64_to_bf16(back) == bits) {
                *value = back;
                return p;
            }
        }
    }
    *value = exact;
    return 9;
}

/*
 * bf16_shortest_digits' answers, by bit pattern, filled as patterns are first printed: the
 * search costs about 2.5 us (snprintf and strtod at each length), and astype(str) of 10^5
 * values took 258 ms (float16 56), astype(StringDType) 422 ms (float16 28), a 1000-element
 * repr 19.8 ms (float16 5.4; AMD EPYC Zen 4). A pattern's digit count is stored after its value
 * (release) and read before it (acquire): 0, not yet found. Threads that find the same pattern
 * at once store the same answer (tests/test_casts.py::test_stringdtype_casts_like_float16
 * checks every pattern; tests/test_scalar.py::test_str_from_threads_agrees).
 */
static double shortest_value[65536];
static unsigned char shortest_count[65536];

static int
bf16_shortest_cached(bf16_t bits, double *value)
{
    int digits = __atomic_load_n(&shortest_count[bits], __ATOMIC_ACQUIRE);
    if (digits != 0) {
        __atomic_load(&shortest_value[bits], value, __ATOMIC_RELAXED);
        return digits;
    }
    digits = bf16_shortest_digits(bits, value);
    __atomic_store(&shortest_value[bits], value, __ATOMIC_RELAXED);
    __atomic_store_n(&shortest_count[bits], (unsigned char)digits, __ATOMIC_RELEASE);
    return digits;
}

PyObject *
bf16_shortest_str(bf16_t bits)
{
    if (bf16_isnan(bits)) {
        return PyUnicode_FromString("nan");
    }
    if (bf16_isinf(bits)) {
        return PyUnicode_FromString(bf16_signbit(bits) ? "-inf" : "inf");
    }
    double value;
    int digits = bf16_shortest_cached(bits, &value);
    double mag = fabs(value);
    /* Like numpy's float16 scalars: positional in [1e-4, 1e3), scientific outside. */
    if (mag == 0.0 || (mag >= 1e-4 && mag < 1e3)) {
        PyObject *f = PyFloat_FromDouble(value);
        if (f == NULL) {
            return NULL;
        }
        PyObject *s = PyObject_Repr(f);
        Py_DECREF(f);
        return s;
    }
    /* Python's own formatter: '.' whatever LC_NUMERIC says, where snprintf would write the
     * locale's decimal point (tests/test_printing.py::test_text_ignores_the_c_locale). */
    char *text = PyOS_double_to_string(value, 'e', digits - 1, 0, NULL);
    if (text == NULL) {
        return NULL;
    }
    PyObject *s = PyUnicode_FromString(text);
    PyMem_Free(text);
    return s;
}

/* NumPy's print options as the scalar's str and repr read them, found once at import: the
 * ContextVar holding the options dict (NumPy >= 2.1) or the module's dict (NumPy 2.0); both NULL:
 * ask np.get_printoptions(), which costs about 1.7 us a call (array printing calls str for every
 * element: 1000 elements 20.6 -> 27.4 ms that way). */
static PyObject *print_options_var = NULL, *print_options_dict = NULL;

/* module.name (a new reference), or NULL with no exception set. */
static PyObject *
module_attribute(const char *module, const char *name)
{
    PyObject *m = PyImport_ImportModule(module);
    PyObject *v = m == NULL ? NULL : PyObject_GetAttrString(m, name);
    Py_XDECREF(m);
    PyErr_Clear();
    return v;
}

static void
find_print_options(void)
{
    print_options_var = module_attribute("numpy._core.printoptions", "format_options");
    if (print_options_var != NULL && !PyContextVar_CheckExact(print_options_var)) {
        Py_CLEAR(print_options_var);
    }
    if (print_options_var == NULL) {
        print_options_dict = module_attribute("numpy._core.arrayprint", "_format_options");
        if (print_options_dict != NULL && !PyDict_Check(print_options_dict)) {
            Py_CLEAR(print_options_dict);
        }
    }
}

/* The options dict in force (a new reference), or NULL without an exception. */
static PyObject *
current_print_options(void)
{
    PyObject *opts = NULL;
    if (print_options_var != NULL) {
        if (PyContextVar_Get(print_options_var, NULL, &opts) < 0) {
            opts = NULL;
        }
    }
    else if (print_options_dict != NULL) {
        opts = print_options_dict;
        Py_INCREF(opts);
    }
    else {
        PyObject *np = PyImport_ImportModule("numpy");
        if (np != NULL) {
            opts = PyObject_CallMethod(np, "get_printoptions", NULL);
            Py_DECREF(np);
        }
    }
    if (opts != NULL && !PyDict_Check(opts)) {
        Py_CLEAR(opts);
    }
    PyErr_Clear();
    return opts;
}

/* The printoptions' legacy mode as it bears on scalars: 0 (NumPy 2's repr, bfloat16(1.5)),
 * 1 ("1.21", "1.25": the bare value) or 113 ("1.13": the bare value with the digits NumPy
 * 1.13 printed float16 with, below). NumPy keeps the mode as an integer (113, 121, 125, 201,
 * 202, sys.maxsize for False); get_printoptions() gives it as text. */
static int
legacy_print_mode(void)
{
    PyObject *opts = current_print_options();
    if (opts == NULL) {
        return 0;
    }
    PyObject *legacy = PyDict_GetItemString(opts, "legacy"); /* borrowed */
    int mode = 0;
    if (legacy != NULL && PyLong_Check(legacy) && !PyBool_Check(legacy)) {
        long v = PyLong_AsLong(legacy);
        mode = v == 113 ? 113 : v >= 0 && v <= 125 ? 1 : 0;
        PyErr_Clear();
    }
    else if (legacy != NULL && PyUnicode_Check(legacy)) {
        /* "1.13", "1.21", "1.25" print the bare value; "2.1", "2.2" keep NumPy 2's repr
         * (tests/test_printing.py::test_scalar_repr_under_every_legacy_mode) */
        const char *v = PyUnicode_AsUTF8(legacy);
        mode = v == NULL || v[0] != '1' || v[1] != '.' ? 0 : strcmp(v, "1.13") == 0 ? 113 : 1;
        PyErr_Clear();
    }
    Py_DECREF(opts);
    return mode;
}

/* Under legacy="1.13": "%.{digits}g" of the value, with ".0" after a bare integer, as NumPy
 * 1.13 printed float16 scalars (8 digits for repr, 6 for str: 3.140625 and 3.14062;
 * tests/test_printing.py::test_scalar_digits_under_legacy_1_13). */
static PyObject *
bf16_legacy_113_str(bf16_t bits, int digits)
{
    char *text = PyOS_double_to_string(bf16_to_f64(bits), 'g', digits, 0, NULL);
    if (text == NULL) {
        return NULL;
    }
    size_t k = text[0] == '-' ? 1 : 0;
    while (text[k] >= '0' && text[k] <= '9') {
        k++;
    }
    PyObject *s = text[k] == '\0' ? PyUnicode_FromFormat("%s.0", text)
                                   : PyUnicode_FromString(text);
    PyMem_Free(text);
    return s;
}

static PyObject *
bf16_scalar_str(PyObject *self)
{
    bf16_t bits = ((PyBFloat16Object *)self)->value;
    return legacy_print_mode() == 113 ? bf16_legacy_113_str(bits, 6) : bf16_shortest_str(bits);
}

static PyObject *
bf16_scalar_repr(PyObject *self)
{
    int mode = legacy_print_mode();
    bf16_t bits = ((PyBFloat16Object *)self)->value;
    if (mode == 113) {
        return bf16_legacy_113_str(bits, 8);
    }
    PyObject *s = bf16_shortest_str(bits);
    if (s == NULL || mode != 0) {
        return s;
    }
    PyObject *r = PyUnicode_FromFormat("bfloat16(%U)", s);
    Py_DECREF(s);
    return r;
}

/* ---- construction and number protocol -------------------------------------------------- */

/* Whether the exception in flight may be set aside for another way to read the object: an
 * ordinary error, not an interrupt, an exit, a MemoryError or a RecursionError, which always
 * propagate (tests/test_scalar.py::test_interrupts_from_array_likes_propagate). */
static int
error_may_be_set_aside(void)
{
    return PyErr_ExceptionMatches(PyExc_Exception) && !PyErr_ExceptionMatches(PyExc_MemoryError) &&
           !PyErr_ExceptionMatches(PyExc_RecursionError);
}

static PyObject *
bf16_scalar_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"value", NULL};
    PyObject *value = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:bfloat16", kwlist, &value)) {
        return NULL;
    }
    /* Like np.float16(...): an array (not 0-d) or any sequence other than str and bytes (list,
     * tuple, range, bytearray, memoryview, deque) gives a bfloat16 array, a 0-d one a scalar
     * (tests/test_scalar.py::test_constructor_takes_sequences_like_float16); so does an object
     * NumPy reads as an array (__array__, __array_interface__, __array_struct__: a torch
     * tensor), a 0-d one giving a scalar (::test_constructor_takes_array_likes_like_float16). */
    if (value != NULL && !PyUnicode_Check(value) && !PyBytes_Check(value) &&
            !PyArray_IsScalar(value, Generic) && !PyFloat_Check(value) && !PyLong_Check(value) &&
            (PyArray_Check(value) || PySequence_Check(value) || PyMemoryView_Check(value))) {
        /* arrays of any shape (a 0-d one gives its stored value, as for np.float16: a complex
         * one its real part with NumPy's ComplexWarning, a masked element its data) */
        Py_INCREF(bf16_descr);
        return PyArray_Return((PyArrayObject *)PyArray_FromAny(value, bf16_descr, 0, 0,
                                                               NPY_ARRAY_FORCECAST, NULL));
    }
    if (value != NULL && !PyArray_IsScalar(value, Generic) &&
            (PyObject_HasAttrString(value, "__array__") ||
             PyObject_HasAttrString(value, "__array_interface__") ||
             PyObject_HasAttrString(value, "__array_struct__"))) {
        /* an array-like; where NumPy cannot read it and it converts itself (a torch bfloat16
         * tensor, one that requires grad), its __float__ as before */
        Py_INCREF(bf16_descr);
        PyObject *arr = PyArray_FromAny(value, bf16_descr, 0, 0, NPY_ARRAY_FORCECAST, NULL);
        if (arr != NULL) {
            return PyArray_Return((PyArrayObject *)arr);
        }
        PyNumberMethods *nb = Py_TYPE(value)->tp_as_number;
        if (nb == NULL || nb->nb_float == NULL || !error_may_be_set_aside()) {
            return NULL;
        }
        PyErr_Clear();
    }
    bf16_t bits = 0;
    if (value != NULL && bf16_from_object_reporting(value, &bits) < 0) {
        return NULL;
    }
    if (type == &PyBFloat16_Type) {
        return bf16_scalar_from_bits(bits);
    }
    PyObject *obj = type->tp_alloc(type, 0);
    if (obj != NULL) {
        ((PyBFloat16Object *)obj)->value = bits;
    }
    return obj;
}

static PyObject *
bf16_scalar_float(PyObject *self)
{
    return PyFloat_FromDouble(bf16_to_f64(((PyBFloat16Object *)self)->value));
}

static PyObject *
bf16_scalar_int(PyObject *self)
{
    PyObject *f = bf16_scalar_float(self);
    if (f == NULL) {
        return NULL;
    }
    PyObject *i = PyNumber_Long(f); /* raises ValueError/OverflowError for nan/inf, like float */
    Py_DECREF(f);
    return i;
}

static int
bf16_scalar_bool(PyObject *self)
{
    return !bf16_iszero(((PyBFloat16Object *)self)->value);
}

static Py_hash_t
bf16_scalar_hash(PyObject *self)
{
    /* equal to hash(float(x)), so bfloat16(1.5) and 1.5 are one dict key */
    return _Py_HashDouble(self, bf16_to_f64(((PyBFloat16Object *)self)->value));
}

static PyObject *
bf16_scalar_is_integer(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    double d = bf16_to_f64(((PyBFloat16Object *)self)->value);
    return PyBool_FromLong(isfinite(d) && floor(d) == d);
}

/* A method of the value as a Python float (exact), called without arguments. */
static PyObject *
float_method(PyObject *self, const char *name)
{
    PyObject *f = bf16_scalar_float(self);
    if (f == NULL) {
        return NULL;
    }
    PyObject *r = PyObject_CallMethod(f, name, NULL);
    Py_DECREF(f);
    return r;
}

static PyObject *
bf16_scalar_as_integer_ratio(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    return float_method(self, "as_integer_ratio");
}

static PyObject *
bf16_scalar_item(PyObject *self, PyObject *args)
{
    if (PyTuple_GET_SIZE(args) == 0) {
        return bf16_scalar_float(self);
    }
    /* indices: numpy's rules for a size-1 array, as np.float16(x).item(-1) follows them
       (tests/test_scalar.py::test_item_takes_indices_like_float16) */
    PyObject *item = PyObject_GetAttrString((PyObject *)&PyGenericArrType_Type, "item");
    if (item == NULL) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    PyObject *call = PyTuple_New(n + 1);
    if (call == NULL) {
        Py_DECREF(item);
        return NULL;
    }
    Py_INCREF(self);
    PyTuple_SET_ITEM(call, 0, self);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = PyTuple_GET_ITEM(args, i);
        Py_INCREF(a);
        PyTuple_SET_ITEM(call, i + 1, a);
    }
    PyObject *r = PyObject_Call(item, call, NULL);
    Py_DECREF(call);
    Py_DECREF(item);
    return r;
}

static PyObject *
bf16_scalar_reduce(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    /* Rebuild from the exact bits so NaN payloads and -0.0 survive pickling. */
    PyObject *mod = PyImport_ImportModule("bfloat16_dtype._ext");
    if (mod == NULL) {
        return NULL;
    }
    PyObject *ctor = PyObject_GetAttrString(mod, "_scalar_from_bits");
    Py_DECREF(mod);
    if (ctor == NULL) {
        return NULL;
    }
    return Py_BuildValue("(N(i))", ctor, (int)((PyBFloat16Object *)self)->value);
}

static PyObject *
bf16_scalar_format(PyObject *self, PyObject *spec)
{
    if (!PyUnicode_Check(spec)) {
        PyErr_SetString(PyExc_TypeError, "format spec must be a str");
        return NULL;
    }
    Py_ssize_t len = PyUnicode_GET_LENGTH(spec);
    if (len == 0) {
        return PyObject_Str(self);
    }
    /* With a type or a precision the stored value is formatted, as float16's is ("{:.3f}");
     * with neither ("{:>10}", "{:+}", "{:_}") float's repr style takes the shortest digits that
     * str() prints, padded and signed: "       0.1", not "0.10009765625"
     * (tests/test_scalar.py::test_format_without_a_type_keeps_the_shortest_digits). A fill
     * character is always followed by an alignment, so '.' then a digit is a precision. */
    int kind = PyUnicode_KIND(spec);
    const void *data = PyUnicode_DATA(spec);
    Py_UCS4 last = PyUnicode_READ(kind, data, len - 1);
    int shortest = (!Py_UNICODE_ISALPHA(last) || last == 'z') && last != '%'; /* z: a flag */
    for (Py_ssize_t i = 0; shortest && i + 1 < len; i++) {
        if (PyUnicode_READ(kind, data, i) == '.' &&
                Py_UNICODE_ISDIGIT(PyUnicode_READ(kind, data, i + 1))) {
            shortest = 0;
        }
    }
    bf16_t bits = ((PyBFloat16Object *)self)->value;
    PyObject *f;
    if (shortest && !bf16_isnan(bits) && !bf16_isinf(bits)) {
        double value;
        (void)bf16_shortest_cached(bits, &value);
        f = PyFloat_FromDouble(value);
    }
    else {
        f = bf16_scalar_float(self);
    }
    if (f == NULL) {
        return NULL;
    }
    PyObject *r = PyObject_Format(f, spec);
    Py_DECREF(f);
    return r;
}

/* round(x) is a Python int, as for float16; round(x, n) computes the decimal rounding in float64
 * and rounds it to bfloat16 once (numerics.round), where NumPy's scalar would scale by 10**n in
 * the scalar's own dtype first (tests/test_scalar.py::test_builtin_round_rounds_once). */
static PyObject *
bf16_scalar_round(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"ndigits", NULL};
    PyObject *ndigits = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:__round__", keywords, &ndigits)) {
        return NULL;
    }
    if (ndigits == Py_None) {
        return float_method(self, "__round__");
    }
    PyObject *mod = PyImport_ImportModule("bfloat16_dtype.numerics");
    if (mod == NULL) {
        return NULL;
    }
    PyObject *r = PyObject_CallMethod(mod, "round", "OO", self, ndigits);
    Py_DECREF(mod);
    return r;
}

static PyObject *
bf16_scalar_bits_get(PyObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromLong(((PyBFloat16Object *)self)->value);
}

static PyMethodDef bf16_scalar_methods[] = {
    /* "name($self, ...)\n--\n\n" heads give inspect.signature its answer
     * (tests/test_scalar.py::test_signatures_for_inspect) */
    {"is_integer", bf16_scalar_is_integer, METH_NOARGS,
     "is_integer($self, /)\n--\n\nTrue if the value is finite and integral."},
    {"as_integer_ratio", bf16_scalar_as_integer_ratio, METH_NOARGS,
     "as_integer_ratio($self, /)\n--\n\n"
     "The exact value as a ratio of two integers (like float.as_integer_ratio)."},
    {"item", bf16_scalar_item, METH_VARARGS,
     "item($self, /, *args)\n--\n\nThe value as a Python float (exact)."},
    {"__reduce__", bf16_scalar_reduce, METH_NOARGS,
     "__reduce__($self, /)\n--\n\nPickle support (exact bits)."},
    {"__format__", bf16_scalar_format, METH_O,
     "__format__($self, format_spec, /)\n--\n\nFormat like float, e.g. f'{x:.3f}'."},
    {"__round__", (PyCFunction)(void (*)(void))bf16_scalar_round, METH_VARARGS | METH_KEYWORDS,
     "__round__($self, ndigits=None, /)\n--\n\n"
     "round(x) as a Python int; round(x, n) to n decimals, rounded to bfloat16 once."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef bf16_scalar_getset[] = {
    {"bits", bf16_scalar_bits_get, NULL, "The raw 16-bit pattern as an int.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

/* ---- fast scalar arithmetic ------------------------------------------------------------- */
/*
 * np.generic's arithmetic builds 0-d arrays and runs a ufunc (~1.5 us). For the common cases,
 * bfloat16 with bfloat16 or with a Python int/float/bool (weak, NEP 50: converted to bfloat16
 * first), the result is computed here directly in float32 and rounded once — the same
 * arithmetic as the ufunc loops. Anything else, and any result that is not finite (so numpy's
 * overflow / invalid / divide warnings stay exactly as they are), goes the generic way.
 */
static PyNumberMethods generic_number; /* np.floating's methods, copied once at init */
static richcmpfunc generic_richcompare;

static int
fast_operand(PyObject *o, float *out)
{
    if (PyBFloat16_Check(o)) {
        *out = bf16_to_f32(((PyBFloat16Object *)o)->value);
        return 1;
    }
    if (PyFloat_CheckExact(o)) {
        double d = PyFloat_AS_DOUBLE(o);
        bf16_t h = f64_to_bf16(d);
        if (bf16_isinf(h) && isfinite(d)) {
            return 0; /* out of range: let numpy decide what to say */
        }
        *out = bf16_to_f32(h);
        return 1;
    }
    if (PyBool_Check(o)) {
        *out = (o == Py_True) ? 1.0f : 0.0f;
        return 1;
    }
    if (PyLong_CheckExact(o)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow || (v == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        *out = bf16_to_f32(i64_to_bf16((int64_t)v));
        return 1;
    }
    return 0;
}

static int
fast_pair(PyObject *a, PyObject *b, float *x, float *y)
{
    return (PyBFloat16_Check(a) || PyBFloat16_Check(b)) && fast_operand(a, x) &&
           fast_operand(b, y);
}

/*
 * 1 for an operand NumPy would make a 0-d object array, 0 for any other, -1 (an exception set)
 * when reading it raised an interrupt or the like (error_may_be_set_aside).
 * NumPy 2.0-2.2's scalar operators hand an operand NumPy does not know (None, object(), a
 * Decimal: anything that becomes a 0-d object array) to the object ufunc loop, which calls the
 * operator on our scalar again, endlessly, until the stack overflows. As NumPy >= 2.3 does, the
 * operation is retried on the Python float instead: `bfloat16(1) + None` raises TypeError, and
 * `== None` is False (tests/test_scalar.py::test_unknown_operands_do_not_recurse).
 */
static int
is_unknown_operand(PyObject *o)
{
    if (PyBFloat16_Check(o) || PyArray_IsScalar(o, Generic) || PyArray_Check(o) ||
            PyFloat_Check(o) || PyLong_Check(o) || PyComplex_Check(o) || PyUnicode_Check(o) ||
            PyBytes_Check(o)) {
        return 0;
    }
    if (PyObject_HasAttrString((PyObject *)Py_TYPE(o), "__array_ufunc__")) {
        return 0; /* NumPy's ufuncs defer to it */
    }
    /* Lists and tuples become arrays of at least one dimension, and an array-like's elements
     * meet this operator again one by one: neither is read here, so NumPy reads it once
     * (tests/test_scalar.py::test_array_likes_are_read_once_like_float16). */
    if (PyList_Check(o) || PyTuple_Check(o) || PyObject_HasAttrString(o, "__array__") ||
            PyObject_HasAttrString(o, "__array_interface__") ||
            PyObject_HasAttrString(o, "__array_struct__")) {
        return 0;
    }
    PyObject *arr = PyArray_FromAny(o, NULL, 0, 0, 0, NULL);
    if (arr == NULL) {
        if (!error_may_be_set_aside()) {
            return -1;
        }
        PyErr_Clear(); /* the generic path reports it */
        return 0;
    }
    int unknown = PyArray_NDIM((PyArrayObject *)arr) == 0 &&
                  PyArray_TYPE((PyArrayObject *)arr) == NPY_OBJECT;
    Py_DECREF(arr);
    return unknown;
}

/* The binary operator on our operand's Python float, if the other is unknown; else NULL
 * without an error (*done stays 0). */
static PyObject *
retry_on_float(PyObject *a, PyObject *b, binaryfunc op, int *done)
{
    PyObject *self = PyBFloat16_Check(a) ? a : b;
    PyObject *other = self == a ? b : a;
    *done = 0;
    int unknown = is_unknown_operand(other);
    if (unknown <= 0) {
        *done = unknown < 0; /* an interrupt or the like from the operand: raised */
        return NULL;
    }
    *done = 1;
    PyObject *f = PyFloat_FromDouble(bf16_to_f64(((PyBFloat16Object *)self)->value));
    if (f == NULL) {
        return NULL;
    }
    PyObject *r = self == a ? op(f, b) : op(a, f);
    Py_DECREF(f);
    return r;
}

#define GUARDED(NAME, PYFUNC)                                                          \
    static PyObject *bf16_guarded_##NAME(PyObject *a, PyObject *b)                     \
    {                                                                                  \
        int done;                                                                      \
        PyObject *r = retry_on_float(a, b, PYFUNC, &done);                             \
        if (done) {                                                                    \
            return r;                                                                  \
        }                                                                              \
        if (generic_number.nb_##NAME == NULL) {                                        \
            Py_RETURN_NOTIMPLEMENTED;                                                  \
        }                                                                              \
        return generic_number.nb_##NAME(a, b);                                         \
    }
GUARDED(add, PyNumber_Add)
GUARDED(subtract, PyNumber_Subtract)
GUARDED(multiply, PyNumber_Multiply)
GUARDED(true_divide, PyNumber_TrueDivide)
GUARDED(floor_divide, PyNumber_FloorDivide)
GUARDED(remainder, PyNumber_Remainder)
GUARDED(divmod, PyNumber_Divmod)
GUARDED(and, PyNumber_And)
GUARDED(or, PyNumber_Or)
GUARDED(xor, PyNumber_Xor)
GUARDED(lshift, PyNumber_Lshift)
GUARDED(rshift, PyNumber_Rshift)

static PyObject *
float_power(PyObject *a, PyObject *b)
{
    return PyNumber_Power(a, b, Py_None);
}

static PyObject *
bf16_guarded_power(PyObject *a, PyObject *b, PyObject *mod)
{
    if (mod == Py_None) {
        int done;
        PyObject *r = retry_on_float(a, b, float_power, &done);
        if (done) {
            return r;
        }
    }
    return generic_number.nb_power(a, b, mod);
}

#define FAST_BINOP(NAME, EXPR)                                                         \
    static PyObject *bf16_nb_##NAME(PyObject *a, PyObject *b)                          \
    {                                                                                  \
        float x, y;                                                                    \
        if (fast_pair(a, b, &x, &y)) {                                                 \
            float r = (EXPR);                                                          \
            bf16_t h = f32_to_bf16(r);                                                 \
            /* a normal result, or zero from a zero operand: no IEEE flag to report;    \
             * the rest (overflow, underflow, NaN) through the array loops              \
             * (tests/test_scalar.py::test_scalar_underflow_warns_like_the_array_loops) */ \
            int normal = (h & 0x7f80u) != 0 && (h & 0x7f80u) != 0x7f80u;               \
            if (normal || (r == 0.0f && (x == 0.0f || y == 0.0f))) {                   \
                return bf16_scalar_from_bits(h);                                       \
            }                                                                          \
        }                                                                              \
        return bf16_guarded_##NAME(a, b);                                              \
    }
FAST_BINOP(add, x + y)
FAST_BINOP(subtract, x - y)
FAST_BINOP(multiply, x * y)
FAST_BINOP(true_divide, x / y)

static PyObject *
bf16_nb_negative(PyObject *a)
{
    return bf16_scalar_from_bits((bf16_t)(((PyBFloat16Object *)a)->value ^ BF16_SIGN));
}

static PyObject *
bf16_nb_positive(PyObject *a)
{
    return bf16_scalar_from_bits(((PyBFloat16Object *)a)->value);
}

static PyObject *
bf16_nb_absolute(PyObject *a)
{
    return bf16_scalar_from_bits((bf16_t)(((PyBFloat16Object *)a)->value & BF16_ABS));
}

static PyObject *
bf16_richcompare(PyObject *a, PyObject *b, int op)
{
    float x, y;
    if (fast_pair(a, b, &x, &y)) {
        int r;
        switch (op) {
            case Py_LT: r = x < y; break;
            case Py_LE: r = x <= y; break;
            case Py_EQ: r = x == y; break;
            case Py_NE: r = x != y; break;
            case Py_GT: r = x > y; break;
            default: r = x >= y; break;
        }
        PyArrayScalar_RETURN_BOOL_FROM_LONG(r);
    }
    PyObject *self = PyBFloat16_Check(a) ? a : b;
    int unknown = is_unknown_operand(self == a ? b : a);
    if (unknown < 0) {
        return NULL;
    }
    if (unknown) { /* see is_unknown_operand */
        PyObject *f = PyFloat_FromDouble(bf16_to_f64(((PyBFloat16Object *)self)->value));
        if (f == NULL) {
            return NULL;
        }
        PyObject *r = self == a ? PyObject_RichCompare(f, b, op) : PyObject_RichCompare(a, f, op);
        Py_DECREF(f);
        return r;
    }
    return generic_richcompare(a, b, op);
}

static PyNumberMethods bf16_scalar_as_number;

PyTypeObject PyBFloat16_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bfloat16_dtype.bfloat16",
    .tp_basicsize = sizeof(PyBFloat16Object),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "bfloat16(value=0.0)\n--\n\nA 16-bit brain floating point number: float32's sign and 8-bit\n"
              "exponent with a 7-bit mantissa. Converting from any number rounds once, to\n"
              "nearest even.\n\n>>> bfloat16(0.1)\nbfloat16(0.1)\n>>> float(bfloat16(0.1))\n"
              "0.10009765625",
    .tp_new = bf16_scalar_new,
    .tp_repr = bf16_scalar_repr,
    .tp_str = bf16_scalar_str,
    .tp_hash = bf16_scalar_hash,
    .tp_methods = bf16_scalar_methods,
    .tp_getset = bf16_scalar_getset,
    .tp_as_number = &bf16_scalar_as_number,
};

static PyObject *
scalar_from_bits_py(PyObject *Py_UNUSED(mod), PyObject *arg)
{
    long v = PyLong_AsLong(arg);
    if (v == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (v < 0 || v > 0xffff) {
        PyErr_Format(PyExc_ValueError, "bfloat16 bit pattern must be in [0, 65535], got %ld", v);
        return NULL;
    }
    return bf16_scalar_from_bits((bf16_t)v);
}

/* A bfloat16 scalar's shortest digits whatever the print options (its str() follows
 * legacy="1.13"), any other object's str(): the array printing wrapper's digits
 * (bfloat16_dtype/_printing.py, which tests/test_printing.py also runs on float16 scalars). */
static PyObject *
shortest_str_py(PyObject *Py_UNUSED(mod), PyObject *arg)
{
    if (!PyObject_TypeCheck(arg, &PyBFloat16_Type)) {
        return PyObject_Str(arg);
    }
    return bf16_shortest_str(((PyBFloat16Object *)arg)->value);
}

static PyMethodDef scalar_module_methods[] = {
    {"_scalar_from_bits", scalar_from_bits_py, METH_O,
     "Build a bfloat16 scalar from its 16-bit pattern."},
    {"_shortest_str", shortest_str_py, METH_O,
     "The shortest digits that round back to a bfloat16 scalar, whatever the print options."},
    {NULL, NULL, 0, NULL}};

int
init_scalar(PyObject *module)
{
    /* Inherit np.generic's arithmetic (ufunc-based) and override the conversions. */
    generic_number = *PyFloatingArrType_Type.tp_as_number;
    generic_richcompare = PyGenericArrType_Type.tp_richcompare;
    bf16_scalar_as_number = generic_number;
    bf16_scalar_as_number.nb_add = bf16_nb_add;
    bf16_scalar_as_number.nb_subtract = bf16_nb_subtract;
    bf16_scalar_as_number.nb_multiply = bf16_nb_multiply;
    bf16_scalar_as_number.nb_true_divide = bf16_nb_true_divide;
    bf16_scalar_as_number.nb_floor_divide = bf16_guarded_floor_divide;
    bf16_scalar_as_number.nb_remainder = bf16_guarded_remainder;
    bf16_scalar_as_number.nb_divmod = bf16_guarded_divmod;
    bf16_scalar_as_number.nb_power = bf16_guarded_power;
    bf16_scalar_as_number.nb_and = bf16_guarded_and;
    bf16_scalar_as_number.nb_or = bf16_guarded_or;
    bf16_scalar_as_number.nb_xor = bf16_guarded_xor;
    bf16_scalar_as_number.nb_lshift = bf16_guarded_lshift;
    bf16_scalar_as_number.nb_rshift = bf16_guarded_rshift;
    bf16_scalar_as_number.nb_negative = bf16_nb_negative;
    bf16_scalar_as_number.nb_positive = bf16_nb_positive;
    bf16_scalar_as_number.nb_absolute = bf16_nb_absolute;
    bf16_scalar_as_number.nb_float = bf16_scalar_float;
    bf16_scalar_as_number.nb_int = bf16_scalar_int;
    bf16_scalar_as_number.nb_bool = bf16_scalar_bool;
    bf16_scalar_as_number.nb_index = NULL;
    PyBFloat16_Type.tp_base = &PyFloatingArrType_Type;
    /* defining tp_hash stops CPython inheriting tp_richcompare: ours falls back to np.generic's */
    PyBFloat16_Type.tp_richcompare = bf16_richcompare;
    if (PyType_Ready(&PyBFloat16_Type) < 0) {
        return -1;
    }
    find_print_options();
    Py_INCREF(&PyBFloat16_Type);
    if (PyModule_AddObject(module, "bfloat16", (PyObject *)&PyBFloat16_Type) < 0) {
        Py_DECREF(&PyBFloat16_Type);
        return -1;
    }
    return PyModule_AddFunctions(module, scalar_module_methods);
}
