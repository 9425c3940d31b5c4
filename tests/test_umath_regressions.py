"""Regressions in the ufunc loops, each checked against numpy's float16 (the reference for
behaviour the issues do not spell out)."""
import warnings

import numpy as np
import pytest

from bfloat16_dtype import bfloat16


def _signbits(a):
    return np.signbit(np.asarray(a, np.float32)).tolist()


@pytest.mark.parametrize("dtype", [np.float16, bfloat16])
def test_inplace_add_of_size_one_keeps_negative_zero(dtype):
    """x += x on one element: all operands have stride 0, the shape numpy also uses for a
    reduction; -0.0 + -0.0 is -0.0 (the reduction's +0 start must not leak in)."""
    x = np.array([-0.0], dtype)
    x += x
    assert _signbits(x) == [True]
    y = np.array([-0.0], dtype)
    np.add(y, np.array([-0.0], dtype), out=y)
    assert _signbits(y) == [True]
    z = np.array([-0.0], dtype)
    z *= np.array([1.0], dtype)
    assert _signbits(z) == [True]


def test_size_one_add_matches_float16_for_signed_zeros():
    zeros = [0.0, -0.0]
    for a in zeros:
        for b in zeros:
            want = np.array([a], np.float16)
            want += np.array([b], np.float16)
            got = np.array([a], bfloat16)
            got += np.array([b], bfloat16)
            assert _signbits(got) == _signbits(want), (a, b)


@pytest.mark.parametrize("ufunc", [np.floor_divide, np.remainder, np.divmod])
@pytest.mark.parametrize("a", [1.0, -1.0, 0.0, np.nan, np.inf])
def test_division_by_zero_warns_as_float16(ufunc, a):
    """floor_divide(x, 0) is x / 0 with its flags only (no "invalid" from a remainder
    computed first), remainder(x, 0) is fmod's NaN with "invalid" only (no "divide by zero"
    from a quotient): seen in builds without -O3, where the unused half is not optimised out."""
    def messages(dtype):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = ufunc(np.array([a], dtype), np.array([0.0], dtype))
        return np.asarray(r, np.float32).ravel(), sorted(str(x.message) for x in w)

    want_r, want_w = messages(np.float16)
    got_r, got_w = messages(bfloat16)
    np.testing.assert_array_equal(got_r, want_r)
    assert got_w == want_w


@pytest.mark.parametrize("n", [1, 4, 5, 9, 33])
def test_arctan2_nan_lanes_raise_no_underflow(n):
    """arctan2 with y NaN beside a huge x: NaN, and no floating-point warning, as for float16
    and float32 (the vector loops' NaN lanes once underflowed in their float32 step)."""
    for dtype in (np.float32, np.float16, bfloat16):
        y = np.full(n, np.nan, dtype)
        x = np.full(n, 2e38 if dtype != np.float16 else 6e4, dtype)
        with np.errstate(all="raise"):
            for got in (np.arctan2(y, x), np.arctan2(y, x[0]), np.arctan2(y[0], x)):
                assert np.isnan(np.asarray(got, np.float32)).all(), dtype
