"""Array printing of bfloat16 follows numpy's float16 printing, with bfloat16's own digits."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from numpy.lib import NumpyVersion

from bfloat16_dtype import bfloat16
from numpy._core import arrayprint


def bf(values):
    return np.array(values, dtype=bfloat16)


def f16(values):
    return np.array(values, dtype=np.float16)


# Values exactly representable in both formats with the same shortest digits, below the
# float16/bfloat16 positional cutoffs: the text must be float16's with the dtype name swapped.
SHARED = [[1.5, 2, 3.140625], [0.5, 0.25, -1.0], [np.nan, np.inf, -np.inf, 1.0], [1.0],
          [0.0, -0.0], [], [[1.5, 2.0], [3.0, 4.0]], [0.001, 1.0], [2.0**-4, 1.0]]


@pytest.mark.parametrize("values", SHARED, ids=str)
def test_repr_and_str_like_float16(values):
    assert repr(bf(values)) == repr(f16(values)).replace("float16", "bfloat16")
    assert str(bf(values)) == str(f16(values))
    assert np.array2string(bf(values)) == np.array2string(f16(values))


def test_readme_example():
    assert repr(bf([1.5, 2, 3.14159])) == "array([1.5 , 2.  , 3.14], dtype=bfloat16)"


def test_shortest_digits_not_float64_digits():
    # 0.1 is stored as 0.10009765625; 3.14159 as 3.140625
    assert str(bf([0.1, 0.2, 0.3])) == "[0.1 0.2 0.3]"
    assert "3.140625" not in repr(bf([3.14159]))


@pytest.mark.parametrize("kwargs", [dict(precision=2), dict(precision=3, floatmode="fixed"),
                                    dict(floatmode="fixed"), dict(floatmode="unique"),
                                    dict(floatmode="maxprec_equal", precision=4),
                                    dict(sign="+"), dict(legacy="1.13"), dict(legacy="1.25"),
                                    dict(suppress=True)], ids=str)
def test_printoptions_like_float16(kwargs):
    """On values that are equal in both formats, every print option gives float16's text."""
    values = [1.5, 0.25, 3.140625, -2.0]
    with np.printoptions(**kwargs):
        assert str(bf(values)) == str(f16(values))
        assert repr(bf(values)) == repr(f16(values)).replace("float16", "bfloat16")
    kw = {("suppress_small" if k == "suppress" else k): v for k, v in kwargs.items()
          if k != "legacy"}
    assert np.array2string(bf(values), **kw) == np.array2string(f16(values), **kw)


@pytest.mark.parametrize("mode", ["1.13", "1.21", "1.25", "2.1", "2.2", False])
def test_scalar_repr_under_every_legacy_mode(mode):
    """Scalars print bare under the 1.x legacy modes and as bfloat16(...) otherwise, as float16's
    do (np.float16(1.5)); a mode this NumPy does not know is skipped."""
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)   # NumPy 2.0: "can only be '1.13', ..."
            with np.printoptions(legacy=mode):
                want = repr(np.float16(1.5)).replace("np.float16", "bfloat16")
                assert repr(bfloat16(1.5)) == want
    except (ValueError, UserWarning) as e:
        pytest.skip(f"NumPy {np.__version__} has no legacy={mode!r}: {e}")


def test_scalar_digits_under_legacy_1_13():
    """legacy="1.13" prints scalars as NumPy 1.13 printed float16: "%.8g" of the value for repr,
    "%.6g" for str, ".0" after a bare integer (3.140625 and 3.14062, where the shortest digits
    are 3.14); every bit pattern against that rule in Python's own formatting, and the values
    both types hold against float16's text."""
    import re
    bits = np.arange(65536, dtype=np.uint32)
    values = (bits << 16).view(np.float32)
    scalars = np.arange(65536, dtype=np.uint16).view(bfloat16)

    def legacy(v, digits):
        text = f"%.{digits}g" % v
        return text + ".0" if re.fullmatch(r"-?[0-9]+", text) else text

    with np.printoptions(legacy="1.13"):
        for k in range(0, 65536, 7):                          # every 7th pattern: all kinds
            v = float(values[k])
            assert repr(scalars[k]) == legacy(v, 8), hex(k)
            assert str(scalars[k]) == legacy(v, 6), hex(k)
        for v in (1.5, 100.0, 3.140625, -0.0, 0.30078125, np.inf, -np.inf, np.nan, 2.0**-14):
            assert repr(bfloat16(v)) == repr(np.float16(v)) and str(bfloat16(v)) == str(np.float16(v))
    assert str(bfloat16(3.140625)) == "3.14"                    # the shortest digits again


def test_fixed_mode_prints_the_exact_value():
    """floatmode='fixed' prints the stored value: bfloat16(0.3) is 0.30078125."""
    assert np.array2string(bf([0.1, 0.3]), floatmode="fixed", precision=3) == "[0.100 0.301]"
    with np.printoptions(floatmode="fixed", precision=8):
        assert str(bf([0.1])) == "[0.10009766]"


def test_set_printoptions_global():
    old = np.get_printoptions()
    try:
        np.set_printoptions(precision=1)
        assert str(bf([3.140625, 1.5])) == str(f16([3.140625, 1.5]))
    finally:
        np.set_printoptions(**old)


def test_large_and_small_values_scientific():
    assert str(bf([1e30, 3e38])) == "[1.e+30 3.e+38]"
    assert str(bf([1e-30, 1e-40])) == "[1.e-30 9.e-41]"
    assert repr(bf([1e-5, 1, 100])) == "array([1.e-05, 1.e+00, 1.e+02], dtype=bfloat16)"


def test_scientific_cutoff_follows_numpy_precision_rule():
    """NumPy >= 2.3 switches arrays to scientific at 10**min(8, finfo.precision): 100 for
    bfloat16 (precision 2), 1000 for float16 (precision 3). Before 2.3 NumPy used 1e8 for
    every float type, float16 included, and bfloat16 arrays follow that NumPy's rule."""
    if NumpyVersion(np.__version__) < "2.3.0":
        assert str(bf([1000.0, 200.0])) == str(f16([1000.0, 200.0])) == "[1000.  200.]"
        assert "e+" in str(bf([1e8, 1e6]))
        return
    cutoff = 10.0 ** min(8, np.finfo(bfloat16).precision)
    assert cutoff == 100.0
    assert "e+" not in str(f16([999.0, 1.0])) and "e+" in str(f16([1000.0, 1.0]))
    assert "e+" not in str(bf([99.0, 1.0]))
    assert "e+" in str(bf([100.0, 1.0]))


def test_zero_d_and_empty():
    assert repr(np.array(1.5, bfloat16)) == "array(1.5, dtype=bfloat16)"
    assert str(np.array(0.1, bfloat16)) == "0.1"
    assert repr(np.array([], bfloat16)) == "array([], dtype=bfloat16)"
    assert repr(np.zeros((2, 0), bfloat16)) == "array([], shape=(2, 0), dtype=bfloat16)"


def test_other_float_types_unaffected():
    """The Dragon4 wrapper passes non-bfloat16 values through untouched."""
    for name in ("dragon4_positional", "dragon4_scientific"):
        wrapped = getattr(arrayprint, name)
        original = wrapped.__bfloat16_wrapped__
        for t in (np.float16, np.float32, np.float64, np.longdouble):
            for x in (t(0.1), t(3.14159), t(-1e-3), t(1 / 3)):
                assert wrapped(x, precision=5) == original(x, precision=5)
                assert wrapped(x, unique=False, precision=10) == \
                    original(x, unique=False, precision=10)
    assert repr(np.array([0.1, 3.14159], np.float32)) == \
        "array([0.1    , 3.14159], dtype=float32)"
    assert repr(np.array([0.1, 3.14159])) == "array([0.1    , 3.14159])"
    assert str(np.array([1 / 3], np.float64)) == "[0.33333333]"


def test_format_function_hook_only_changes_bfloat16():
    """The _get_format_function wrapper gives bfloat16 NumPy's float formatter and leaves
    every other dtype to NumPy (NumPy >= 2.5 would format bfloat16 elements with str())."""
    wrapped = arrayprint._get_format_function
    original = wrapped.__bfloat16_wrapped__
    options = dict(precision=8, floatmode="maxprec", suppress=False, sign="-",
                   legacy=sys.maxsize, formatter=None)
    for values in (np.array([1.5, 0.1], np.float16), np.array([1, 2]), np.array(["a"]),
                   np.array([1 + 2j])):
        f_new = wrapped(values, **options)
        f_old = original(values, **options)
        assert type(f_new) is type(f_old)
        assert [f_new(v) for v in values] == [f_old(v) for v in values]
    assert type(wrapped(bf([1.5]), **options)).__name__ == "FloatingFormat"


# Dragon4 options where the stored value's digits matter (precision cuts the shortest digits,
# min_digits asks for more): every combination, checked on float16 (see below).
_DRAGON4_OPTIONS = [
    dict(precision=p, min_digits=m, trim=t)
    for p in (-1, 0, 1, 2, 3, 5) for m in (-1, 0, 1, 2, 4, 6) for t in ("k", ".", "0", "-")
    if p <= 0 or m <= p]   # NumPy allows any min_digits with precision 0


def test_dragon4_emulation_matches_float16():
    """The printing wrapper (_printing._dragon4_args) turns a scalar and Dragon4's options into
    the float64 and options that print it; applied to float16 scalars it must reproduce NumPy's
    own float16 output, option for option (every 37th finite float16 here; all of them agree).
    One combination is left out: fractional=False with both precision and min_digits, where
    float16 pads the zeros after a rounding carry for normal values (4.97 -> "5.0", as the
    wrapper does) but not for its subnormals (3.95e-05 -> "0.00004")."""
    from numpy._core import multiarray as ma
    from bfloat16_dtype import _printing

    h = np.arange(0, 65536, 37, dtype=np.uint16).view(np.float16)
    h = h[np.isfinite(h)]
    for scientific, fn in ((True, ma.dragon4_scientific), (False, ma.dragon4_positional)):
        for opts in _DRAGON4_OPTIONS:
            for fractional in ((None,) if scientific else (True, False)):
                kw = dict(opts, unique=True)
                if fractional is not None:
                    kw["fractional"] = fractional
                    if not fractional and kw["precision"] >= 0 and kw["min_digits"] >= 0:
                        continue
                for v in h:
                    x, kw2 = _printing._dragon4_args(v, scientific, dict(kw))
                    assert fn(x, **kw2) == fn(v, **kw), (float(v), kw)


ALL_FINITE = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(bfloat16)
ALL_FINITE = ALL_FINITE[np.isfinite(ALL_FINITE.astype(np.float32))]


def test_extra_digits_are_the_stored_values():
    """min_digits and the array printer's padding give the stored value's digits, rounded once
    (Python's correctly rounded '%.*e' of the exact value is the reference): bfloat16(0.3) is
    0.30078125 and pads to 3.008e-01, not 3.000e-01. All finite bfloat16 values."""
    for m in (3, 4, 5):
        for x in ALL_FINITE[::7]:
            if len(str(x).split("e")[0].replace("-", "").replace(".", "").lstrip("0")) > m + 1:
                continue   # the shortest digits alone are longer than m + 1
            got = np.format_float_scientific(x, precision=m, min_digits=m)
            assert got == f"{float(x):.{m}e}", (float(x), m)
    # scientific on every NumPy (2.0-2.2 switch at a ratio of 1000, 2.3+ at 100 for bfloat16)
    want = "array([3.008e-01, 1.235e+02, 9.982e+08], dtype=bfloat16)"
    assert repr(bf([0.3, 123.4, 1e9])) == want
    assert np.format_float_positional(bfloat16(0.1), min_digits=6) == "0.100098"
    with np.printoptions(floatmode="maxprec_equal"):
        assert str(bf([0.1, 0.0001234])) == "[0.100098 0.000123]"


def test_precision_cut_rounds_the_stored_value_once():
    """A precision shorter than the shortest digits rounds the stored value once: the printed
    number equals Python's correctly rounded formatting of it (bfloat16(0.15) is 0.150390625:
    '0.2' at precision 1, where rounding the shortest digits '0.15' gave '0.1')."""
    from decimal import Decimal

    for x in ALL_FINITE[::5]:
        shortest = Decimal(str(x)).normalize().as_tuple()   # str: test_scalar.py's round trip
        for p in (0, 1, 2, 3):
            if len(shortest.digits) - 1 > p:    # a cut in scientific notation
                got = np.format_float_scientific(x, precision=p)
                assert float(got) == float(f"{float(x):.{p}e}"), (float(x), p, got)
            if -shortest.exponent > p:          # a cut after the point
                got = np.format_float_positional(x, precision=p)
                assert float(got) == float(f"{float(x):.{p}f}"), (float(x), p, got)
    with np.printoptions(precision=1):
        assert str(bf([0.15, 1.0])) == "[0.2 1. ]"
    # precision=0 rounds to one digit, then min_digits pads with zeros: float32 holding the
    # same value (19998441472) is the reference, float16 for the others
    x = bfloat16(2e10)
    assert (np.format_float_scientific(x, precision=0, min_digits=4)
            == np.format_float_scientific(np.float32(float(x)), precision=0, min_digits=4))
    for v, kw in ((1.07, dict(precision=0, min_digits=1)),
                  (4.97, dict(precision=2, min_digits=2, fractional=False))):
        assert (np.format_float_positional(bfloat16(v), **kw)
                == np.format_float_positional(np.float16(v), **kw)), (v, kw)
    assert (np.format_float_scientific(bfloat16(0.33), precision=0, min_digits=2)
            == np.format_float_scientific(np.float16(0.33), precision=0, min_digits=2))


def test_dragon4_wrappers_take_positional_arguments():
    """The wrapped arrayprint.dragon4_* take their options by position too, in the C
    functions' order (sign before trim), as float16's calls do."""
    for args in ((3, True, True, True, "k"), (3, True, True, True), (-1, True, False, False)):
        assert (arrayprint.dragon4_positional(bfloat16(1.5), *args)
                == arrayprint.dragon4_positional(np.float16(1.5), *args)), args
    for args in ((3, True, True, "k"), (2, True, False, "-", -1, 3)):
        assert (arrayprint.dragon4_scientific(bfloat16(1.5), *args)
                == arrayprint.dragon4_scientific(np.float16(1.5), *args)), args
    assert np.array2string(bf([0.895]), precision=2) == "[0.89]"


def test_text_ignores_the_c_locale(tmp_path):
    """str/repr/astype(str) and array printing write '.' whatever LC_NUMERIC says, as NumPy's
    own floats do (snprintf wrote '1,235e+04' under de_DE, which no parser reads back). The
    locale is compiled with localedef into tmp_path; without localedef the test is skipped."""
    import shutil
    import subprocess
    import sys

    if shutil.which("localedef") is None:
        pytest.skip("localedef not installed: no locale with a ',' decimal point to try")
    build = subprocess.run(["localedef", "-i", "de_DE", "-f", "UTF-8",
                            str(tmp_path / "de_DE.UTF-8")], capture_output=True, text=True)
    if not (tmp_path / "de_DE.UTF-8").exists():
        pytest.skip(f"localedef could not build de_DE.UTF-8: {build.stderr.strip()[:200]}")
    code = """if True:
        import locale
        import numpy as np
        locale.setlocale(locale.LC_ALL, "de_DE.UTF-8")
        assert locale.localeconv()["decimal_point"] == ","
        from bfloat16_dtype import bfloat16
        assert str(bfloat16(12345.0)) == "1.235e+04", str(bfloat16(12345.0))
        assert repr(bfloat16(1.5e-5)) == "bfloat16(1.5e-05)"
        assert np.array([12345.0], bfloat16).astype(str)[0] == "1.235e+04"
        text = repr(np.array([1.5, 12345.0], bfloat16))
        assert text == "array([1.500e+00, 1.235e+04], dtype=bfloat16)", text
        b = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(bfloat16)
        back = np.array([bfloat16(s) for s in b.astype(str)], dtype=bfloat16)
        same = (back.view(np.uint16) == b.view(np.uint16)) | (np.isnan(back.astype(np.float32))
                                                              & np.isnan(b.astype(np.float32)))
        assert same.all()
    """
    env = dict(os.environ, LOCPATH=str(tmp_path))
    # cwd: not the checkout, whose bfloat16_dtype/ (unbuilt) would shadow the installed one
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]


POSITIONAL_MODES = [False, "1.13", "1.21"] + (
    ["2.2"] if NumpyVersion(np.__version__) >= "2.3.0" else [])


@pytest.mark.parametrize("legacy", POSITIONAL_MODES)
def test_no_stray_space_before_values_below_a_power_of_ten(legacy):
    """9984, 99840 and 999424 have shortest digits 1e+04, 1e+05, 1e+06 (a power of ten bfloat16
    cannot hold): NumPy sized the column with those and printed the stored value, one digit
    narrower, so every element of the array gained a space ('array([ 99840.], ...)'). Printed
    positionally (NumPy before 2.3 by default, legacy <= "2.2" later) the text is float32's,
    which holds these values exactly, with the dtype name swapped."""
    cases = [[99840.0], [-700.0, 3088.0, 99840.0, 152.0], [9984.0, np.nan, -np.inf],
             [-9984.0, 16.0], [[99840.0, 200.0], [-300.0, 400.0]]]
    with np.printoptions(legacy=legacy):
        if "e+" in repr(bf([99840.0])):
            pytest.skip("this NumPy prints these values in scientific notation")
        for values in cases:
            want = repr(np.array(values, np.float32)).replace("float32", "bfloat16")
            assert repr(bf(values)) == want
            assert np.array2string(bf(values), separator="|") == \
                np.array2string(np.array(values, np.float32), separator="|")
        for kwargs in ({"sign": " "}, {"nanstr": "notanumber"}, {"floatmode": "fixed"}):
            with np.printoptions(**kwargs):
                values = [99840.0, np.nan, 160.0]
                assert str(bf(values)) == str(np.array(values, np.float32)), kwargs
