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


@pytest.mark.xfail(strict=True, raises=SystemError, reason=(
    "NumPy runs a legacy user-dtype cast between two non-object types without the GIL and does "
    "not look for a Python error afterwards, so a ComplexWarning turned into an error cannot "
    "propagate from the cast loop; it needs the cast registered through NumPy's DType API, "
    "whose get_loop can warn with the GIL held."))
def test_complex_cast_with_warnings_as_errors_raises_the_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(np.exceptions.ComplexWarning):
            np.array([1 + 2j]).astype(bfloat16)


def test_complex_cast_error_chain_names_the_warning():
    """Until then the SystemError carries the ComplexWarning as its cause, and the interpreter
    stays usable (the cast stops at the first chunk)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(SystemError) as info:
            np.array([1 + 2j] * 20000).astype(bfloat16)
    assert isinstance(info.value.__cause__, np.exceptions.ComplexWarning)
    assert np.array([1.5]).astype(bfloat16)[0] == 1.5
