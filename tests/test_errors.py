"""Error paths: each bad input raises a Python exception whose message names the problem."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from bfloat16_dtype import bfloat16


@pytest.mark.parametrize("call,exc,text", [
    (lambda: bfloat16([[1.0], [1.0, 2.0]]), ValueError, "inhomogeneous"),
    (lambda: bfloat16("1.5x"), ValueError, "1.5x"),
    (lambda: bfloat16(b"\xff"), ValueError, "could not convert"),
    (lambda: bfloat16(1 + 2j), TypeError, "complex"),
    (lambda: bfloat16({}), TypeError, "real number"),
    (lambda: bfloat16(object()), TypeError, "object"),
    (lambda: np.array(["1.5", "x"]).astype(bfloat16), ValueError, "'x'"),
    (lambda: np.array([b"1\x002"], "S3").astype(bfloat16), ValueError, "could not convert"),
    (lambda: np.array([object()], object).astype(bfloat16), TypeError, "object"),
])
def test_error_names_the_problem(call, exc, text):
    with pytest.raises(exc, match=text):
        call()


def test_fromstring_unmatched_data_like_float64():
    """NumPy decides what unmatched text does (a ValueError, or on NumPy 2.0 a
    DeprecationWarning and the values read so far): bfloat16 behaves as float64 does."""
    try:
        want = np.fromstring("1 2 x", dtype=np.float64, sep=" ")
    except ValueError:
        with pytest.raises(ValueError, match="unmatched data"):
            np.fromstring("1 2 x", dtype=bfloat16, sep=" ")
    else:
        with pytest.warns(DeprecationWarning, match="unmatched data"):
            got = np.fromstring("1 2 x", dtype=bfloat16, sep=" ")
        assert got.astype(np.float64).tolist() == want.tolist()


def test_complex_cast_warns():
    with pytest.warns(np.exceptions.ComplexWarning, match="imaginary"):
        assert np.array([1 + 2j]).astype(bfloat16)[0] == 1


@pytest.mark.parametrize("convert", [
    lambda x, T: x.astype(T),
    lambda x, T: np.array(x, T),
    lambda x, T: np.asarray(x.astype(np.complex64), T),
    lambda x, T: np.copyto(np.zeros(x.shape, T), x, casting="unsafe"),
    lambda x, T: np.zeros(1, T).__setitem__(0, x[0]),
], ids=["astype", "array", "asarray-complex64", "copyto", "setitem-scalar"])
def test_complex_cast_with_warnings_as_errors_raises_the_warning(convert):
    """As for float16: the ComplexWarning itself, not a SystemError, and the interpreter stays
    usable afterwards."""
    x = np.array([1 + 2j] * 20000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for T in (np.float16, bfloat16):
            with pytest.raises(np.exceptions.ComplexWarning, match="imaginary"):
                convert(x, T)
    assert np.array([1.5]).astype(bfloat16)[0] == 1.5


def test_complex_python_values_rejected_like_float16():
    """A Python complex in a list or as a scalar is a TypeError for float16 and for bfloat16."""
    for make in (lambda T: np.array([1 + 2j], T), lambda T: np.array(1 + 2j, T),
                 lambda T: T(1 + 2j)):
        with pytest.raises(TypeError):
            make(np.float16)
        with pytest.raises(TypeError, match="complex"):
            make(bfloat16)
