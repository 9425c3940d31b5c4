"""numerics helpers' arguments as NumPy's reductions take them: axis values and out= arrays
(the accuracy tests are in test_reductions.py). References: np.sum/np.mean/np.var/np.std on
float64 copies of exactly representable data, and NumPy's own refusals."""
import warnings

import numpy as np
import pytest

from bfloat16_dtype import bfloat16, numerics

from conftest import exact_f32

BF16 = np.dtype(bfloat16)
# every sum, mean, variance and deviation along any axis is exact in bfloat16
DATA = np.array([[1.0, 1.0, 3.0, 3.0], [3.0, 3.0, 1.0, 1.0]])
PAIRS = ((numerics.sum, np.sum), (numerics.mean, np.mean), (numerics.var, np.var),
         (numerics.std, np.std))


def values(a) -> np.ndarray:
    """bfloat16 result -> float64, by the independent bit widening."""
    return exact_f32(np.asarray(a).view(np.uint16)).astype(np.float64)


@pytest.fixture
def ml_dtypes():
    """ml_dtypes, with NumPy's names for bfloat16 given back afterwards (importing it takes the
    name "bfloat16")."""
    names = ("bfloat16", BF16.char)
    before = {k: np.sctypeDict.get(k) for k in names}
    try:
        yield pytest.importorskip("ml_dtypes", reason="ml_dtypes not installed")
    finally:
        np.sctypeDict.update(before)


class Index:
    def __index__(self):
        return 1


@pytest.mark.filterwarnings("ignore:In future, it will be an error for 'np.bool':DeprecationWarning")
def test_axis_as_numpy_takes_it():
    """Anything with __index__ (a 0-d integer array, np.int64) is an axis, as for np.sum: a 0-d
    array was refused. Text, bools and floats raise TypeError as in NumPy: bytes were read as
    the axes of their byte values (b"abc" -> AxisError "axis 97", b"" summed nothing). NumPy
    2.0's np.mean warns about np.True_ before refusing it."""
    x = DATA.astype(BF16)
    for axis in (np.array(1), np.int64(1), Index(), np.array(-2), (np.array(0),), (np.int32(1),)):
        for ours, theirs in PAIRS:
            np.testing.assert_array_equal(values(ours(x, axis=axis)), theirs(DATA, axis=axis),
                                          err_msg=f"{ours.__name__} axis={axis!r}")
    for bad in (b"abc", b"", "0", "", 1.0, np.float64(1), np.array(1.0), True, np.True_, (True,),
                (0, b"1"), ((0,),), {1: "x"}, {1}, np.array([0, 1])):
        for ours, theirs in PAIRS:
            with pytest.raises(TypeError):
                theirs(DATA, axis=bad)
            with pytest.raises(TypeError, match="axis must be None, an int or a tuple of ints"):
                ours(x, axis=bad)


def check_out(make):
    """Every helper writes into out=make(shape) and returns it; the caller's array holds the
    values NumPy computes in float64 (exact in bfloat16 here)."""
    x = DATA.astype(BF16)
    for ours, theirs in PAIRS:
        for axis in (None, 0):
            want = theirs(DATA, axis=axis)
            out = make(np.shape(want))
            assert ours(x, axis=axis, out=out) is out
            np.testing.assert_array_equal(out.astype(np.float64), want)
    out = make(3)
    assert numerics.round(np.float32([1.26, -2.5, 0.04]), 1, out=out) is out
    assert out.astype(np.float32).tolist() == [1.296875, -2.5, 0.0]   # 1.3 in bfloat16


def test_out_byte_swapped():
    """A byte-swapped bfloat16 out= is written, as np.sum's out= takes one (it was refused)."""
    check_out(lambda shape: np.zeros(shape, BF16.newbyteorder()))


def test_out_of_ml_dtypes(ml_dtypes):
    """ml_dtypes' bfloat16 out= is written through a view of ours (it was refused as "got
    ndarray with dtype bfloat16"); other dtypes are refused, named with their module."""
    check_out(lambda shape: np.zeros(shape, ml_dtypes.bfloat16))
    for bad, text in ((np.zeros((), np.float32), "got dtype float32"),
                      (np.zeros((), ml_dtypes.float8_e5m2), "got dtype float8_e5m2"),
                      ([0.0], "got list")):
        with pytest.raises(TypeError, match=f"out must be a bfloat16 ndarray, {text}"):
            numerics.sum(DATA.astype(BF16), out=bad)


def _sum_cases():
    """(array, options) pairs: layouts NumPy passes to a reduction loop differently (contiguous
    rows, the running row of an outer axis, strided, reversed, transposed, unaligned) and
    every np.sum option."""
    rng = np.random.default_rng(5)
    base = (rng.standard_normal((6, 7, 40)) * 50).astype(np.float32).astype(BF16)
    raw = np.frombuffer(b"\0" + base.tobytes(), np.uint8)[1:]           # one byte off
    unaligned = raw.view(BF16).reshape(base.shape)
    mask = rng.random((7, 40)) < 0.6
    yield base, {}
    for axis in (0, 1, 2, -1, (0, 2), (1, 2), (0, 1, 2)):
        yield base, {"axis": axis}
        yield base, {"axis": axis, "keepdims": True}
    yield base.transpose(2, 0, 1), {"axis": 1}
    yield base[:, ::2, ::-3], {"axis": 2}
    yield base[:, ::2, ::-3], {"axis": 0}
    yield unaligned, {"axis": 2}
    yield unaligned, {"axis": 0}
    yield base, {"axis": 2, "where": mask}
    yield base, {"axis": 0, "where": mask}
    yield base, {"axis": 0, "initial": 5.5}
    yield base, {"initial": -1e6, "where": mask}
    yield base.reshape(-1), {}
    yield np.empty((0, 4), BF16), {"axis": 0}
    yield np.empty((0, 4), BF16), {"axis": 1}
    yield np.empty((0, 4), BF16), {}
    yield np.array(2.5, BF16), {}


@pytest.mark.parametrize("case", range(len(list(_sum_cases()))))
def test_sum_as_float32_like_numpy(case):
    """The float32 sum that numerics.sum/mean and the dask helpers use (the private _sum_f32
    ufunc) takes np.sum's layouts and options: the shape and dtype of np.sum(a,
    dtype=np.float32, ...), and values within float32's summation bound of the float64 sum.
    The values are exact in float64 (50 * normal bfloat16 values, at most 1680 of them)."""
    a, kw = list(_sum_cases())[case]
    got = numerics._sum_as_float32(a, **kw)
    like = np.sum(a, dtype=np.float32, **kw)
    assert type(got) is type(like) and np.shape(got) == np.shape(like)
    assert np.asarray(got).dtype == np.float32
    wide = a.astype(np.float64)
    ref = np.sum(wide, **kw)
    scale = np.sum(np.abs(wide), **{k: v for k, v in kw.items() if k != "initial"})
    scale = scale + abs(kw.get("initial", 0))
    np.testing.assert_array_less(np.abs(np.asarray(got, np.float64) - ref), 2.0**-19 * scale + 1e-30)


def test_sum_as_float32_warns_as_float32_does():
    """Overflow and inf - inf warn as NumPy's float32 sum of the same values does, and an empty
    sum is +0 as there (np.sum([-0.0]) is 0.0 too)."""
    for vals, flag in (([3e38, 3e38], "overflow"), ([np.inf, -np.inf, 1.0], "invalid")):
        a = np.array(vals, np.float32)
        for x in (a, np.tile(a, 50)):
            with pytest.warns(RuntimeWarning, match=flag):
                ref = np.sum(x)
            with pytest.warns(RuntimeWarning, match=flag):
                got = numerics._sum_as_float32(x.astype(BF16))
            assert np.array_equal(got, ref, equal_nan=True)
    for x in (np.array([-0.0], BF16), np.empty(0, BF16)):
        got = numerics._sum_as_float32(x)
        assert got == 0 and not np.signbit(got)


def test_sum_as_float32_refuses_what_np_sum_refuses():
    x = np.ones((3, 4), BF16)
    with pytest.raises(np.exceptions.AxisError):
        numerics._sum_as_float32(x, 2)
    with pytest.raises(ValueError, match="duplicate"):
        numerics._sum_as_float32(x, (0, 0))
    with pytest.raises(ValueError):
        numerics._sum_as_float32(x, 0, where=np.ones(5, bool))


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_mean_of_values_near_the_largest_does_not_overflow(axis):
    """float32 has bfloat16's range, so a float32 sum of values near the largest overflows: the
    mean was inf (with "overflow") where the float64 mean is finite. Such sums are redone in
    float64; infinite inputs still give inf / NaN, and a finite mean warns nothing."""
    big = np.full((4, 3), 2e38, np.float32).astype(BF16)
    big[:, 1] = np.float32(-3e38)
    ref = np.mean(big.astype(np.float64), axis=axis).astype(np.float32).astype(BF16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = numerics.mean(big, axis)
    np.testing.assert_array_equal(np.asarray(got).view(np.uint16), np.asarray(ref).view(np.uint16))
    assert np.isfinite(values(got)).all()
    with_inf = big.copy()
    with_inf[0, 0] = np.inf
    assert values(numerics.mean(with_inf)) == np.inf
    with_inf[1, 0] = -np.inf
    with np.errstate(invalid="ignore"):
        assert np.isnan(values(numerics.mean(with_inf)))


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
def test_mean_like_numpy_float32(axis):
    """numerics.mean divides the float32 sum by the count in float32, as np.mean(a,
    dtype=np.float32) does, and rounds once: the bfloat16 rounding of the float64 mean, or a
    neighbour where the float32 steps land within a float32 ulp of a rounding midpoint. An
    empty selection gives NaN with np.mean's warning."""
    rng = np.random.default_rng(8)
    a = (rng.standard_normal((300, 70)) * 3 + 1).astype(np.float32).astype(BF16)
    got = values(numerics.mean(a, axis))
    ref = np.mean(a.astype(np.float64), axis=axis)
    ulp = np.spacing(np.abs(ref).astype(np.float32).astype(BF16).astype(np.float32)) * 2.0**16
    np.testing.assert_array_less(np.abs(got - ref), ulp * 0.5 + 2.0**-20 * np.abs(ref))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        empty = numerics.mean(np.empty((3, 0), BF16), axis=1)
    assert any("Mean of empty slice" in str(w.message) for w in caught)
    assert np.isnan(values(empty)).all() and empty.shape == (3,)
