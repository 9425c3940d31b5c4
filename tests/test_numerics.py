"""numerics helpers' arguments as NumPy's reductions take them: axis values and out= arrays
(the accuracy tests are in test_reductions.py). References: np.sum/np.mean/np.var/np.std on
float64 copies of exactly representable data, and NumPy's own refusals."""
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
