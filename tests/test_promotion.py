"""Result types of ufuncs mixing bfloat16 with every numpy type and with Python scalars."""
from __future__ import annotations

import numpy as np
import pytest
from numpy.lib import NumpyVersion

from bfloat16_dtype import bfloat16
from conftest import exact_f32

BF = np.dtype(bfloat16)

# other operand -> result dtype of an arithmetic ufunc (the table of issue 2 / the README)
PROMOTION = {
    bfloat16: BF,
    np.bool_: BF, np.int8: BF, np.uint8: BF,
    np.float16: np.dtype(np.float32), np.int16: np.dtype(np.float32),
    np.uint16: np.dtype(np.float32), np.float32: np.dtype(np.float32),
    np.int32: np.dtype(np.float64), np.uint32: np.dtype(np.float64),
    np.int64: np.dtype(np.float64), np.uint64: np.dtype(np.float64),
    np.float64: np.dtype(np.float64),
    np.longdouble: np.dtype(np.longdouble),
    np.complex64: np.dtype(np.complex64), np.complex128: np.dtype(np.complex128),
}
PYTHON_SCALARS = {2: BF, 0.5: BF, True: BF, 1j: np.dtype(np.complex64)}

BINARY = ["add", "subtract", "multiply", "divide", "power", "floor_divide", "remainder", "fmod",
          "maximum", "minimum", "fmax", "fmin", "arctan2", "hypot", "copysign", "nextafter",
          "logaddexp", "logaddexp2", "heaviside"]
BOOL_RESULT = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
               "logical_and", "logical_or", "logical_xor"]


def _expected(ufunc, common):
    """What numpy itself does for two operands already of the common dtype (None: no loop)."""
    a = np.ones(2, common)
    try:
        with np.errstate(all="ignore"):
            r = ufunc(a, a)
    except TypeError:
        return None
    return tuple(x.dtype for x in r) if isinstance(r, tuple) else (r.dtype,)


def _operands(t):
    x = np.array([1.5, 2.0], bfloat16)
    other = np.array([1, 1], dtype=t) if t is not bfloat16 else x.copy()
    return x, other, other[0]


@pytest.mark.parametrize("name", BINARY + BOOL_RESULT + ["divmod"])
def test_ufunc_promotion_table(name):
    ufunc = getattr(np, name)
    for t, common in PROMOTION.items():
        expected = _expected(ufunc, common)
        x, other, other_scalar = _operands(t)
        for a, b in ((x, other), (other, x), (x, other_scalar), (other_scalar, x),
                     (x[0], other_scalar), (other_scalar, x[0])):
            where = f"{name}({type(a).__name__}/{getattr(a, 'dtype', '')}, " \
                    f"{type(b).__name__}/{getattr(b, 'dtype', '')})"
            if expected is None:
                with pytest.raises(TypeError):
                    ufunc(a, b)
                continue
            with np.errstate(all="ignore"):
                r = ufunc(a, b)
            got = tuple(np.asarray(v).dtype for v in r) if isinstance(r, tuple) else (
                np.asarray(r).dtype,)
            assert got == expected, where


@pytest.mark.parametrize("name", BINARY + BOOL_RESULT + ["divmod"])
@pytest.mark.parametrize("py", list(PYTHON_SCALARS), ids=repr)
def test_python_scalars_are_weak(name, py):
    ufunc = getattr(np, name)
    expected = _expected(ufunc, PYTHON_SCALARS[py])
    x = np.array([1.5, 2.0], bfloat16)
    for a, b in ((x, py), (py, x), (x[0], py), (py, x[0])):
        if expected is None:
            with pytest.raises(TypeError):
                ufunc(a, b)
            continue
        with np.errstate(all="ignore"):
            r = ufunc(a, b)
        got = tuple(np.asarray(v).dtype for v in r) if isinstance(r, tuple) else (
            np.asarray(r).dtype,)
        assert got == expected, (name, py)


def test_operators_follow_the_table():
    x = np.array([1.5, 2.0], bfloat16)
    for t, common in PROMOTION.items():
        _, other, s = _operands(t)
        for r in (x + other, other + x, x * s, s * x, x - s, s - x):
            assert r.dtype == common, t
    assert (x + 1).dtype == BF and (1.5 * x).dtype == BF and (x / 3).dtype == BF
    assert (x + 1j).dtype == np.complex64
    assert (x < 1).dtype == bool


def test_mixed_values_are_computed_in_the_wider_type():
    """bfloat16 widens exactly, so mixed results equal numpy's on the exact float32 values."""
    bits = np.arange(0, 65536, 37, dtype=np.uint32).astype(np.uint16)
    x = bits.view(bfloat16)
    xf = exact_f32(bits)
    y32 = np.random.default_rng(0).standard_normal(len(bits)).astype(np.float32)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(np.add(x, y32), np.add(xf, y32))
        np.testing.assert_array_equal(np.multiply(y32.astype(np.float64), x),
                                      np.multiply(y32.astype(np.float64), xf.astype(np.float64)))
        np.testing.assert_array_equal(np.arctan2(x, np.int16(3)), np.arctan2(xf, np.float32(3)))


def test_casting_same_kind_and_unsafe():
    x = np.array([1.5, 2.0], bfloat16)
    assert np.add(x, 0.5).dtype == BF
    assert np.add(x, np.int8(1), casting="safe").dtype == BF
    assert np.add(x, np.float32(1), casting="safe").dtype == np.float32
    with pytest.raises(TypeError, match="bfloat16"):
        np.add(x, np.float32(1), out=np.empty(2, bfloat16), casting="safe")
    r = np.add(x, np.float32(1), out=np.empty(2, bfloat16), casting="same_kind")
    assert r.dtype == BF and r.tolist() == [2.5, 3.0]


@pytest.mark.xfail(NumpyVersion(np.__version__) >= "2.4.0", strict=True,
                   reason="NumPy >= 2.4 (measured: 2.4.6, 2.5.5; 2.0.2 passes): "
                   "PyUFunc_ValidateCasting -> PyArray_CanCastArrayTo -> "
                   "can_cast_pyscalar_scalar_to (convert_datatype.c) takes the Python float's "
                   "descriptor from npy_find_descr_for_scalar (abstractdtypes.c), i.e. from "
                   "float_common_dtype, which for a user DType with a legacy type number "
                   "returns its common type with float16 (float32), and float32 -> bfloat16 "
                   "is not a safe cast")
@pytest.mark.parametrize("casting", ["safe", "no"])
def test_add_python_float_casting_safe_like_float16(casting):
    assert np.add(np.array([1.0], np.float16), 0.5, casting=casting).dtype == np.float16
    x = np.array([1.5, 2.0], bfloat16)
    assert np.add(x, 0.5, casting=casting).dtype == BF


def test_out_and_where():
    x = np.array([1.5, 2.0, 3.0, 4.0], bfloat16)
    out = np.full(4, -1.0, bfloat16)
    r = np.add(x, 1, out=out, where=np.array([True, False, True, False]))
    assert r is out
    assert out.tolist() == [2.5, -1.0, 4.0, -1.0]
    out32 = np.zeros(4, np.float32)
    np.multiply(x, np.float32(0.5), out=out32)
    assert out32.tolist() == [0.75, 1.0, 1.5, 2.0]
    outb = np.zeros(4, bool)
    np.less(x, 2.5, out=outb, where=[True, True, True, False])
    assert outb.tolist() == [True, True, False, False]
    q, rem = np.zeros(4, bfloat16), np.zeros(4, bfloat16)
    np.divmod(x, 2, out=(q, rem))
    assert q.tolist() == [0.0, 1.0, 1.0, 2.0] and rem.tolist() == [1.5, 0.0, 1.0, 0.0]


def _float16_rule(t):
    """Independent reference: NumPy's own promotion of float16 with `t`, with bfloat16 in
    float16's place (the two 2-byte floats do not hold each other: they give float32)."""
    if t is bfloat16 or t is np.float16:
        return BF if t is bfloat16 else np.dtype(np.float32)
    r = np.result_type(np.float16, t)
    return BF if r == np.float16 else r


def test_promotion_table_matches_float16_rules():
    for t, common in PROMOTION.items():
        assert _float16_rule(t) == common, t


@pytest.mark.parametrize("t", list(PROMOTION), ids=lambda t: np.dtype(t).name)
def test_result_type_and_array_functions_follow_the_table(t):
    """np.result_type, np.promote_types, np.concatenate, np.stack, np.where: the ufunc table."""
    x = np.array([1.5, 2.0], bfloat16)
    other = np.ones(2, t)
    want = PROMOTION[t]
    assert np.result_type(BF, t) == want == np.result_type(t, BF)
    assert np.promote_types(BF, t) == want == np.promote_types(t, BF)
    assert np.result_type(x, other) == want == np.result_type(other, x)
    assert np.concatenate([x, other]).dtype == want == np.concatenate([other, x]).dtype
    assert np.stack([x, other]).dtype == want == np.vstack([other, x]).dtype
    assert np.where([True, False], x, other).dtype == want
    assert np.where([True, False], other, x).dtype == want
    assert np.add(x, other).dtype == want
    both = np.concatenate([x, other])
    np.testing.assert_array_equal(both.astype(np.float64), [1.5, 2.0, 1.0, 1.0])


def test_result_type_python_scalars_are_weak():
    """Python int/float/bool stay bfloat16 (NEP 50, as `x + 1.0`), complex gives complex64."""
    x = np.array([1.5], bfloat16)
    for py, want in PYTHON_SCALARS.items():
        assert np.result_type(BF, py) == want == np.result_type(py, BF), py
        assert np.result_type(x, py) == want, py
        assert np.where([True], x, py).dtype == want, py
    for py in (2, True, 1j):
        assert np.result_type(py, x) == PYTHON_SCALARS[py], py
    assert np.result_type(np.float16, 1.0) == np.float16  # the float16 behaviour mirrored


@pytest.mark.xfail(strict=True, reason="NumPy's float_common_dtype (abstractdtypes.c), "
                   "asked first, answers for a user DType with a legacy type number with that "
                   "DType's common type with float16 (float32 by the table) instead of "
                   "deferring; the call is the same one np.promote_types(bfloat16, float16) "
                   "makes, so no answer of ours can change one without the other")
def test_result_type_python_float_first_with_array():
    x = np.array([1.5], bfloat16)
    assert np.result_type(0.5, x) == BF


@pytest.mark.xfail(strict=True, reason="NumPy's PyArray_PromoteDTypeSequence (common_dtype.c) "
                   "pairs the operands and asks the Python scalar's DType first; its "
                   "float_common_dtype (abstractdtypes.c) answers for a legacy user DType with "
                   "float32 and for int8/bool with float64, so that DType leads the reduction")
@pytest.mark.parametrize("args", [(1.0, np.int8), (1, np.bool_), (1.0, np.uint8),
                                  (1.0, np.int16), (1.0, np.uint16)],
                         ids=["float-int8", "int-bool", "float-uint8", "float-int16",
                              "float-uint16"])
def test_result_type_python_scalar_and_small_ints_three_operands(args):
    x = np.array([1.5], bfloat16)
    want = np.result_type(np.array([1.5], np.float16), *args)    # the reference
    assert want in (np.float16, np.float32)
    assert np.result_type(x, *args) == (BF if want == np.float16 else want)


def test_linspace_with_a_bfloat16_stop_needs_dtype():
    """np.linspace(0, stop) asks np.result_type(0, stop, float(num)): the quirk above gives
    float32 for a bfloat16 stop; dtype= (or bfloat16 start and stop) gives bfloat16."""
    stop = bfloat16(2.0)
    assert np.linspace(0, stop, 5).dtype == np.float32
    assert np.linspace(0, stop, 5, dtype=bfloat16).dtype == BF
    assert np.linspace(bfloat16(0), stop, 5).dtype == BF
    assert np.linspace(0, stop, 5, dtype=bfloat16).astype(np.float32).tolist() == [0, 0.5, 1, 1.5, 2]
    x = np.array([1.0, 2.0], bfloat16)
    assert np.select([x > 1.5], [0.25], default=x).dtype == np.float32     # result_type(0.25, x)
    assert np.select([x > 1.5], [bfloat16(0.25)], default=x).dtype == BF


@pytest.mark.parametrize("small, wide, scalar", [(np.bool_, np.float32, 0.0), (np.int8, np.float32, 0.5),
                                                 (np.bool_, np.float64, 1)])
def test_python_scalar_with_bool_bfloat16_and_a_wider_float_raises(small, wide, scalar):
    """The quirk above with bool or int8 beside a wider float: NumPy's reduction over the DTypes
    makes the Python scalar's DType the leader and then finds no common type with float32 or
    float64: DTypePromotionError (float16 gives the wider float). A bfloat16 or NumPy scalar in
    the Python scalar's place, or no scalar, gives the table's answer (README, Promotion)."""
    want = np.result_type(small, np.float16, wide, scalar)
    assert want == wide
    with pytest.raises(np.exceptions.DTypePromotionError):
        np.result_type(small, BF, wide, scalar)
    assert np.result_type(small, BF, wide, bfloat16(scalar)) == wide
    assert np.result_type(small, BF, wide, wide(scalar)) == wide
    assert np.result_type(small, BF, wide) == wide
    parts = [np.ones(2, small), np.ones(2, bfloat16), np.ones(2, wide)]
    assert np.concatenate(parts).dtype == wide
    assert np.r_[parts[0], parts[1], parts[2], bfloat16(scalar)].dtype == wide


@pytest.mark.parametrize("scalar", [1, 0.5])
def test_python_scalar_first_beside_a_float32_array_raises(scalar):
    """The same reduction with the Python scalar first and a float32 (or, for an int, an int8)
    array beside a bfloat16 one: DTypePromotionError where float16 gives the table's answer, and
    np.select with such a choice list raises its TypeError. The workaround: a NumPy or bfloat16
    scalar, or the bfloat16 operand first (README, Promotion)."""
    x, f = np.ones(2, bfloat16), np.ones(2, np.float32)
    assert np.result_type(scalar, f, np.ones(2, np.float16)) == np.float32
    with pytest.raises(np.exceptions.DTypePromotionError):
        np.result_type(scalar, f, x)
    if isinstance(scalar, int):
        with pytest.raises(np.exceptions.DTypePromotionError):
            np.result_type(scalar, np.ones(2, np.int8), x)
    with pytest.raises(TypeError, match="common dtype"):
        np.select([np.array([True, False]), np.array([False, True])], [scalar, f], default=x)
    assert np.result_type(x, scalar, f) == np.float32
    assert np.result_type(np.float32(scalar), f, x) == np.float32
    assert np.result_type(bfloat16(scalar), np.ones(2, np.int8), x) == BF


def test_strings_promote_as_for_float16():
    x = np.array([1.5], bfloat16)
    for t in ("U3", "S3", "U40"):
        want = np.result_type(np.float16, t)  # NumPy sizes float16 digits at 32 characters
        assert np.result_type(BF, t) == want == np.result_type(t, x)
    assert np.concatenate([x, np.array(["ab"])]).tolist() == ["1.5", "ab"]


def test_no_common_type_with_text_and_time():
    """What NumPy itself forbids for float16 is forbidden for bfloat16 too."""
    for t in ("M8[s]", "m8[s]", "V4"):
        with pytest.raises(TypeError):
            np.result_type(np.float16, t)
        with pytest.raises(np.exceptions.DTypePromotionError, match="bfloat16"):
            np.result_type(BF, t)
    assert np.result_type(BF, object) == np.dtype(object)


def test_where_with_the_python_float_first():
    """np.where asks np.result_type(scalar, x) with the Python float first, which the NumPy
    quirk above answers with float32; the bfloat16 scalar or the float second keeps bfloat16
    (README, "Promotion")."""
    x = np.array([1.5, np.nan, 3.0], bfloat16)
    m = np.isnan(x)
    assert np.where(m, 0.0, x).dtype == np.float32
    assert np.where(m, np.nan, x).dtype == np.float32
    assert np.where(m, bfloat16(0.0), x).dtype == BF
    kept = np.where(~m, x, 0.0)
    assert kept.dtype == BF and kept.astype(np.float32).tolist() == [1.5, 0.0, 3.0]
    f16 = x.astype(np.float16)
    assert np.where(np.isnan(f16), 0.0, f16).dtype == np.float16   # float16 is not affected


def test_histogram_with_a_float_range_gives_float32_edges():
    """np.histogram computes its edges' type as np.result_type(first_edge, last_edge, a): with a
    float range= the Python floats come first and the quirk above gives float32 edges (float16
    data keeps float16); an int range, bfloat16 ends or the default keep bfloat16 (README,
    "Promotion"). The counts are the same either way."""
    x = np.array([0.5, 1.5, 2.0, 0.25], bfloat16)
    f16 = x.astype(np.float16)
    counts, edges = np.histogram(x, bins=4, range=(0.0, 2.0))
    assert edges.dtype == np.float32
    assert np.histogram(f16, bins=4, range=(0.0, 2.0))[1].dtype == np.float16
    assert counts.tolist() == np.histogram(f16, bins=4, range=(0.0, 2.0))[0].tolist() == [1, 1, 0, 2]
    assert np.histogram_bin_edges(x, bins=3, range=(0, 0)).dtype == np.float32  # widened by 0.5
    assert np.histogram(x, bins=4, range=(0, 2))[1].dtype == BF
    assert np.histogram(x, bins=4, range=(bfloat16(0), bfloat16(2)))[1].dtype == BF
    assert np.histogram(x, bins=4)[1].dtype == BF
