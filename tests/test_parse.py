"""Text -> bfloat16: one rounding from the exact decimal value, float()'s syntax for scalars and
string casts, NumPy float16's syntax for np.fromstring/np.fromfile (which call the parser with the
GIL released), and no crash on any of them. The reference is fractions.Fraction."""
from __future__ import annotations

import math
import os
import struct
import subprocess
import sys
import textwrap
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, example, given, settings, strategies as st

from bfloat16_dtype import bfloat16

from conftest import TESTS_DIR  # noqa: E402



def _numpy_raises_on_unmatched_data() -> bool:
    """NumPy 2.0 warns (DeprecationWarning) where later NumPy raises ValueError when fromstring
    meets text it cannot parse; the float16 comparisons below assume the raising behaviour."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            np.fromstring("1 x", dtype=np.float64, sep=" ")
        except ValueError:
            return True
    return False


needs_unmatched_raise = pytest.mark.skipif(
    not _numpy_raises_on_unmatched_data(),
    reason="this NumPy warns instead of raising on unmatched fromstring data (NumPy 2.0)")

TWO = Fraction(2)


def exact_bits(value: Fraction, negative: bool = False) -> int:
    """The bfloat16 bits nearest to `value` (ties to even), by exact rational arithmetic."""
    sign = 0x8000 if (value < 0 or (value == 0 and negative)) else 0
    a = abs(value)
    if a == 0:
        return sign
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if TWO ** e > a:
        e -= 1
    q = max(e - 7, -133)  # spacing of bfloat16 values around a (subnormal spacing below 2^-126)
    scaled = a / TWO ** q
    n = math.floor(scaled)
    rest = scaled - n
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and n % 2 == 1):
        n += 1
    rounded = n * TWO ** q
    if rounded >= TWO ** 128:
        return sign | 0x7F80
    return sign | (struct.unpack("<I", struct.pack("<f", float(rounded)))[0] >> 16)


def text_bits(text: str) -> int:
    """Reference for a finite decimal string (float() syntax)."""
    clean = text.strip().replace("_", "")
    return exact_bits(Fraction(clean), clean.startswith("-"))


def bits_of(x) -> int:
    return int(np.asarray(x, dtype=bfloat16).view(np.uint16))


def value_of(bits: int) -> Fraction:
    return Fraction(float(np.array([bits], np.uint16).view(bfloat16)[0]))


# ---- one rounding ---------------------------------------------------------------------

DOUBLE_ROUNDING = "1.00390625000000001"  # just above the midpoint 1 + 2^-8 of 1 and 1 + 2^-7


def test_double_rounding_example_every_path(tmp_path):
    """float64 would give exactly the midpoint 1 + 2^-8 (ties to even: 1.0); the decimal is
    above it, so the correctly rounded result is 1.0078125."""
    assert float(DOUBLE_ROUNDING) == 1 + 2 ** -8
    want = 1.0078125
    assert float(bfloat16(DOUBLE_ROUNDING)) == want
    assert float(bfloat16(DOUBLE_ROUNDING.encode())) == want
    assert np.array([DOUBLE_ROUNDING]).astype(bfloat16)[0] == want
    assert np.array([DOUBLE_ROUNDING.encode()]).astype(bfloat16)[0] == want
    assert np.fromstring(DOUBLE_ROUNDING + " 2", dtype=bfloat16, sep=" ")[0] == want
    path = tmp_path / "x.txt"
    path.write_text(DOUBLE_ROUNDING + "\n2\n")
    assert np.fromfile(path, dtype=bfloat16, sep="\n")[0] == want
    # just below the midpoint, and exactly on it (ties to even)
    assert float(bfloat16("1.00390624999999999")) == 1.0
    assert float(bfloat16("1.00390625")) == 1.0
    assert float(bfloat16("1.01171875")) == 1.015625  # midpoint with an odd lower neighbour


def midpoint_strings():
    """Decimal strings at, just below and just above bfloat16 midpoints, normal and subnormal,
    including the overflow threshold and half the smallest subnormal."""
    @st.composite
    def build(draw):
        lower = draw(st.integers(0, 0x7F7F))
        lo, hi = value_of(lower), (value_of(lower + 1) if lower < 0x7F7F else TWO ** 128)
        mid = (lo + hi) / 2
        offset = draw(st.sampled_from([0, 1, -1]))
        digits = draw(st.integers(1, 80))
        x = mid + offset * mid / Fraction(10) ** digits
        sig = draw(st.integers(20, 130))
        text = decimal_text(x, sig)
        if draw(st.booleans()):
            text = "-" + text
        return text
    return build()


def decimal_text(x: Fraction, significant: int) -> str:
    """x written with `significant` digits, truncated (exact when x has fewer digits)."""
    if x == 0:
        return "0"
    exp = len(str(x.numerator)) - len(str(x.denominator))
    scaled = x * Fraction(10) ** (significant - exp)
    mant = scaled.numerator // scaled.denominator
    return f"{mant}e{exp - significant}"


@settings(max_examples=400, deadline=None)
@given(midpoint_strings())
@example("4.5917748078995606e-41")   # just below half the smallest subnormal
@example("3.3961776e38")             # just below the overflow threshold
@example("3.39617752923046e38")
def test_scalar_rounds_decimal_once(text):
    assert bits_of(bfloat16(text)) == text_bits(text)


@settings(max_examples=60, deadline=None)
@given(st.lists(midpoint_strings(), min_size=1, max_size=8))
def test_string_casts_and_fromstring_round_once(texts):
    want = [text_bits(t) for t in texts]
    assert np.array(texts).astype(bfloat16).view(np.uint16).tolist() == want
    assert np.array([t.encode() for t in texts]).astype(bfloat16).view(np.uint16).tolist() == want
    got = np.fromstring(" ".join(texts), dtype=bfloat16, sep=" ")
    assert got.view(np.uint16).tolist() == want


@settings(max_examples=300, deadline=None)
@given(st.decimals(allow_nan=False, allow_infinity=False, places=None))
def test_random_decimals(d):
    text = str(d)
    assert bits_of(bfloat16(text)) == text_bits(text)


def test_long_inputs():
    """More than 800 significant digits: the digits past them still decide the rounding."""
    just_above = "1.00390625" + "0" * 2000 + "1"
    assert float(bfloat16(just_above)) == 1.0078125
    assert float(bfloat16("1.00390625" + "0" * 2000)) == 1.0
    assert float(bfloat16("0." + "0" * 5000 + "1e5000")) == 0.10009765625
    assert float(bfloat16("1" + "0" * 51 + "e-50")) == 10.0
    assert float(bfloat16("1e" + "9" * 30)) == math.inf
    assert float(bfloat16("1e-" + "9" * 30)) == 0.0
    assert bits_of(bfloat16("-0e999999")) == 0x8000


# ---- syntax: scalars and string casts follow float() -----------------------------------

SYNTAX = st.text(alphabet="0123456789._eE+-infatyINFAxp \t\n\x00\u00a0\u0661", max_size=14)


@settings(max_examples=1500, deadline=None)
@given(SYNTAX)
@example("0x1.8p3")
@example("1_000.5")
@example("1__0")
@example("_1")
@example("1_")
@example("1e1_0")
@example("\u0661\u0662")
@example("1\x002")
@example("nan(1)")
@example("-nan")
@example(" Infinity ")
@example("")
def test_scalar_syntax_is_floats(text):
    """bfloat16(text) succeeds exactly when float(text) does; the value is the exact rounding."""
    try:
        f = float(text)
    except ValueError:
        with pytest.raises(ValueError, match="could not convert string to bfloat16"):
            bfloat16(text)
        return
    got = bfloat16(text)
    if math.isnan(f):
        assert math.isnan(float(got)) and (got.bits >> 15) == (math.copysign(1, f) < 0)
    elif math.isinf(f):
        assert float(got) == f
    else:
        ascii_text = "".join(str(int(c)) if c.isdecimal() else c for c in text)
        ascii_text = ascii_text.replace("\u00a0", " ")
        assert got.bits == text_bits(ascii_text)


@settings(max_examples=300, deadline=None)
@given(st.lists(SYNTAX, min_size=1, max_size=5))
def test_string_casts_accept_what_float32_accepts(texts):
    arr_u = np.array(texts, dtype="U16")
    try:
        want = arr_u.astype(np.float32)
    except ValueError:
        with pytest.raises(ValueError):
            arr_u.astype(bfloat16)
    else:
        got = arr_u.astype(bfloat16).astype(np.float32)
        ok = np.isnan(want) == np.isnan(got)
        assert ok.all()


@pytest.mark.parametrize("dtype", ["U3", "S3"])
def test_nul_inside_fixed_width_text_is_invalid(dtype):
    """'1\\x002' is not a number (float32 raises); trailing NULs are only padding."""
    bad = np.array(["1\x002"], dtype)
    with pytest.raises(ValueError):
        bad.astype(np.float32)
    with pytest.raises(ValueError, match="could not convert"):
        bad.astype(bfloat16)
    assert np.array(["12"], dtype).astype(bfloat16)[0] == 12
    assert np.array(["1"], dtype).astype(bfloat16)[0] == 1


def test_hex_float_text_is_rejected_like_float():
    """README: hexadecimal text is refused, as by float() and np.float16."""
    with pytest.raises(ValueError):
        float("0x1.8p3")
    with pytest.raises(ValueError):
        np.float16("0x1.8p3")
    with pytest.raises(ValueError, match="0x1.8p3"):
        bfloat16("0x1.8p3")


# ---- np.fromstring / np.fromfile: NumPy's float16 syntax, no Python C API ---------------

FROMSTRING_CASES = [
    ("1 2 x", " "), ("", ","), ("", " "), ("1 2 3", " "), ("1,2,3", ","), ("1, 2 ,3", ","),
    (" 1e 2", " "), ("nan(abc) -nan inf infinity -Inf 1.5", " "), ("1_0 2", " "),
    (".5 1. +.5", " "), ("0x10 2", " "), ("1,2,,3", ","), ("1,2,", ","), (",1", ","),
    ("1e999 -1e999 1e-999", " "), ("nan( nan(x", " "), ("infinit 2", " "), ("+ 1", " "),
    ("1\x002", " "), ("\t1\n2  ", " "), ("1;2", ";"), ("3.25e+2 -4E-1", " "), (".", " "),
]


@needs_unmatched_raise
def test_trailing_blanks_raise_instead_of_inventing_minus_one():
    assert np.fromstring("1, ", dtype=np.float16, sep=",").tolist() == [1, -1]
    with pytest.raises(ValueError, match="unmatched data"):
        np.fromstring("1, ", dtype=bfloat16, sep=",")
    with pytest.raises(ValueError, match="unmatched data"):
        np.fromstring(" ", dtype=bfloat16, sep=",")


def outcome(text, sep, dtype):
    try:
        a = np.fromstring(text, dtype=dtype, sep=sep)
    except Exception as e:  # noqa: BLE001 - the exception itself is what is compared
        return type(e).__name__, str(e)
    return "ok", a


def float16_invents_value(text, f16, sep):
    """NumPy's float16 parser stores -1.0 for a run of whitespace that holds no number (its
    failed parse returns -1.0 and still moves past the blanks): np.fromstring("1, ", sep=",")
    gives [1, -1], np.fromstring(" ,0", sep=",") gives [-1, 0]. bfloat16 raises ValueError there
    instead of inventing a number."""
    blank_field = any(f and not f.strip() for f in text.split(sep)) if sep.strip() else False
    return (f16[0] == "ok" and len(f16[1]) > 0
            and ((f16[1][-1] == -1 and text != text.rstrip()) or (blank_field and -1 in f16[1])))


def same_values(got, want_f64):
    """bfloat16 values equal the float64 ones rounded once (NaN: positive quiet NaN, as numpy's
    parser gives for '-nan' too)."""
    want = want_f64.astype(bfloat16)
    return got.view(np.uint16).tolist() == want.view(np.uint16).tolist()


def test_fromstring_behaves_like_float16():
    """Each case in one child process (before the fix several crashed the interpreter): the
    same outcome as float16, and float64's values rounded once."""
    code = textwrap.dedent(f"""
        import numpy as np, sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from test_parse import FROMSTRING_CASES, outcome, same_values
        from bfloat16_dtype import bfloat16
        for i, (text, sep) in enumerate(FROMSTRING_CASES):
            got, f16, f64 = (outcome(text, sep, t) for t in (bfloat16, np.float16, np.float64))
            same = got[0] == f16[0] == f64[0]
            if same and got[0] == "ok":
                same = len(got[1]) == len(f16[1]) and same_values(got[1], f64[1])
            elif same:
                same = got[1] == f16[1]
            print(i, "same" if same else f"differs: {{got}} {{f16}}", flush=True)
    """)
    r = subprocess.run([sys.executable, "-c", code], cwd=TESTS_DIR, capture_output=True, text=True, timeout=300)
    lines = r.stdout.splitlines()
    for i, case in enumerate(FROMSTRING_CASES):
        assert i < len(lines), f"child died at {case!r}: {r.returncode} {r.stderr[-1500:]}"
        assert lines[i] == f"{i} same", (case, lines[i])
    assert r.returncode == 0, r.stderr[-1500:]


@needs_unmatched_raise
@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="0123456789.eE+-naif() ,\t", max_size=20), st.sampled_from([" ", ","]))
def test_fromstring_random_text_like_float16(text, sep):
    got, f16, f64 = (outcome(text, sep, t) for t in (bfloat16, np.float16, np.float64))
    if got[0] != f16[0] and float16_invents_value(text, f16, sep):
        assert got == ("ValueError", "string or file could not be read to its end due to "
                       "unmatched data")
        return
    assert got[0] == f16[0]
    if got[0] == "ok":
        assert len(got[1]) == len(f16[1]) and same_values(got[1], f64[1])


@pytest.mark.parametrize("text", [
    "1 2 3", "1\n2\n3\n", "  -inf nan(q) 2.5e1 ", "1 x 2", "", "   ", "1e 5", ".5 .", "1" * 130,
    "+.e1", "infinity Infx nanx", "1,2",
])
def test_fromfile_behaves_like_float16(tmp_path, text):
    path = tmp_path / "data.txt"
    path.write_text(text)
    res = {}
    for t in (bfloat16, np.float16, np.float64):
        try:
            res[t] = ("ok", np.fromfile(path, dtype=t, sep=" "))
        except Exception as e:  # noqa: BLE001
            res[t] = (type(e).__name__, str(e))
    assert res[bfloat16][0] == res[np.float16][0]
    if res[bfloat16][0] == "ok":
        assert len(res[bfloat16][1]) == len(res[np.float16][1])
        assert same_values(res[bfloat16][1], res[np.float64][1])
    else:
        assert res[bfloat16][1] == res[np.float16][1]


def test_fromstring_beside_python_threads():
    """NumPy runs fromstr without the GIL; other threads running Python code at the same time
    crashed the interpreter when fromstr used the C API. Child process: a crash fails the test."""
    code = textwrap.dedent("""
        import threading, time
        import numpy as np
        from bfloat16_dtype import bfloat16
        text = " ".join(str(i * 0.37) for i in range(20000)) + " 1e 2 x"
        want = np.fromstring(text.rsplit(" ", 3)[0], dtype=np.float64, sep=" ").astype(bfloat16)
        stop = False
        def busy():
            n = 0
            while not stop:
                d = {str(i): [i] * 3 for i in range(200)}
                n += len(d)
        threads = [threading.Thread(target=busy) for _ in range(3)]
        for t in threads: t.start()
        t0 = time.time()
        try:
            while time.time() - t0 < 3:
                got = np.fromstring(text.rsplit(" ", 3)[0], dtype=bfloat16, sep=" ")
                assert (got.view(np.uint16) == want.view(np.uint16)).all()
                for bad in ("1 2 x", "", "1e 2 x"):
                    try:
                        np.fromstring(bad, dtype=bfloat16, sep=" ")
                    except ValueError:
                        pass
        finally:
            stop = True
            for t in threads: t.join()
        print("done")
    """)
    r = subprocess.run([sys.executable, "-c", code], cwd=TESTS_DIR, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "done" in r.stdout, (r.returncode, r.stderr[-2000:])


def test_text_readers_keep_a_swapped_dtypes_order(tmp_path):
    """np.fromstring/np.fromfile with sep= and a byte-swapped bfloat16 dtype store each value in
    that order: the array reads back the values written (NumPy's float16 and float32 store native
    bits there and read back other numbers; np.loadtxt is right for both)."""
    swapped = np.dtype(bfloat16).newbyteorder()
    text = "1.5 2.5 -0.0078125 inf nan 3.3895e38"
    want = np.array([0x3FC0, 0x4020, 0xBC00, 0x7F80, 0x7FC0, 0x7F7F], np.uint16).view(bfloat16)
    got = np.fromstring(text, dtype=swapped, sep=" ")
    assert got.dtype == swapped
    np.testing.assert_array_equal(got.astype(bfloat16).view(np.uint16), want.view(np.uint16))
    path = tmp_path / "values.txt"
    path.write_text(text.replace(" ", ", "))
    back = np.fromfile(path, dtype=swapped, sep=",")
    np.testing.assert_array_equal(back.astype(bfloat16).view(np.uint16), want.view(np.uint16))
    assert np.loadtxt(path, dtype=swapped, delimiter=",").astype(np.float32).tolist()[:2] == [1.5, 2.5]
