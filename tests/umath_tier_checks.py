"""Checks of the ufunc loops of one instruction-set tier, run by test_umath_tiers.py in a
fresh process with BFLOAT16_DTYPE_ISA set (the tier is chosen once, at import).

Every check compares with an independent reference: numpy's float32 arithmetic on the exact
widened inputs rounded by `reference_round` (integer arithmetic), or float64 math rounded by
`f64_to_bf16_bits`; and the vector (contiguous) loops with the scalar (strided) ones for the
IEEE warnings. Run it alone with
`BFLOAT16_DTYPE_ISA=avx2 EXPECT_UFUNC_TIER=avx2 pytest tests/umath_tier_checks.py`.
"""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import bfloat16_dtype
from bfloat16_dtype import bfloat16
from conftest import X86_64, exact_f32, reference_round
from test_ufuncs import (_COUNTED_TABLE, CORRECTLY_ROUNDED_UNARY, TRANSCENDENTAL_UNARY,
                         assert_same_bits, f64_to_bf16_bits, widen64)

BF16 = np.dtype(bfloat16)
ALL_BITS = np.arange(65536, dtype=np.uint32).astype(np.uint16)
ALL_VALUES = ALL_BITS.view(BF16)
# lengths that end in every kind of tail of 8-, 16- and 32-lane loops
LENGTHS = [1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 100, 127, 128, 129, 200,
           1000, 4099]


def bits(a):
    return np.ascontiguousarray(a).view(np.uint16)


def test_the_tier_in_force_is_the_one_asked_for():
    want = os.environ["EXPECT_UFUNC_TIER"]
    assert bfloat16_dtype._ext._simd == want
    assert bfloat16_dtype.config()["components"]["ufunc loops"] == want


def unary_reference(name):
    f = getattr(np, name)
    with np.errstate(all="ignore"):
        if name in CORRECTLY_ROUNDED_UNARY:
            return reference_round(f(exact_f32(ALL_BITS)))
        return f64_to_bf16_bits(f(widen64(ALL_BITS)))


@pytest.mark.parametrize("name", CORRECTLY_ROUNDED_UNARY + TRANSCENDENTAL_UNARY)
def test_unary_exhaustive_every_layout(name):
    """All 65,536 inputs equal the reference bit for bit (transcendentals: correctly rounded
    float64 results), in pieces shorter than the table threshold (first, so no table exists
    yet), in one call (which builds the table), strided, and in place."""
    f = getattr(np, name)
    want = unary_reference(name)
    nan_sign = name in ("negative", "absolute", "fabs", "positive")
    with np.errstate(all="ignore"):
        pieces = np.empty(65536, BF16)
        start = 0
        for length in LENGTHS * 4:
            stop = min(65536, start + length)
            pieces[start:stop] = f(ALL_VALUES[start:stop])
            start = stop
        pieces[start:] = f(ALL_VALUES[start:])
        whole = f(ALL_VALUES)
        spread = np.zeros(2 * 65536, BF16)
        spread[::2] = ALL_VALUES
        strided = f(spread[::2])
        inplace = ALL_VALUES.copy()
        f(inplace, out=inplace)
    for layout, got in (("pieces", pieces), ("whole", whole), ("strided", strided),
                        ("in place", inplace)):
        assert_same_bits(bits(got), want, f"{name} {layout}", nan_sign=nan_sign)


SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, np.inf, -np.inf, np.nan, 100.0, -100.0, 88.5, 89.0,
            -87.0, -88.0, -104.0, 3e38, -3e38, 1e-30, -1e-30, 1e-39, -1e-39, 1e-45,
            65536.0, -66048.0, 2.0**-40, -(2.0**-41), 1e-20,  # sin/cos: ends of the vector range
            -np.nan, 2.0**-126, 1.4921875 * 2.0**127, 1.5 * 2.0**127]  # log: ends of its clamp


def is_snan_bits(b):
    b = np.asarray(b, np.uint16)
    return ((b & 0x7FFF) > 0x7F80) & ((b & 0x0040) == 0)


def warning_kinds(f, x):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with np.errstate(all="warn"):
            f(x)
    return sorted({str(w.message).split(" encountered")[0] for w in caught})


@pytest.mark.parametrize("name", ["sqrt", "square", "reciprocal", "exp", "log", "tanh",
                                  "exp2", "log2", "sin", "cos", "tan", "expm1", "log1p",
                                  "sinh", "cosh", "arctan", "cbrt"])
def test_unary_warnings_same_in_vector_and_scalar_loops(name):
    """Each special input, alone and inside a 40-element block of ordinary values, raises the
    same IEEE warnings through the contiguous (vector) loop as through the strided one."""
    f = getattr(np, name)
    for v in SPECIALS:
        block = np.full(40, 0.25, BF16)
        block[13] = v
        spread = np.zeros(80, BF16)
        spread[::2] = block
        want = warning_kinds(f, spread[::2])
        assert warning_kinds(f, block) == want, (name, v)
        assert warning_kinds(f, np.array([v], BF16)) == warning_kinds(
            f, np.array([v, v], BF16)[::2]), (name, v)


@pytest.mark.parametrize("name", ["exp", "log", "tanh", "sin", "cos"])
def test_vector_calls_then_table_same_bits_and_warnings(name):
    """Calls of 1,024 contiguous elements run the tier's vector loop; at the avx2 tier, once the
    elements they computed reach 2^18 (UNARY_TABLE_BUILD_AFTER) the function's table serves the
    calls instead (loops_avx2.cpp, approximate_unary). In a fresh process with this tier, every
    round over all 65,536 inputs gives the same bits and warnings, chunk by chunk. (sin and cos
    have vector loops at the avx512 tier only; elsewhere they check the strided loops' rule,
    which the vector loops' counting shares.)"""
    r = subprocess.run([sys.executable, "-c", _COUNTED_TABLE, name], capture_output=True,
                       text=True, timeout=300, cwd=os.path.dirname(os.path.abspath(__file__)))
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


BINARY_F32 = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "fmax", "fmin"]
COMPARISONS = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]


def operand_pairs():
    """Every bit pattern against four shuffles of every bit pattern, plus special crosses."""
    rng = np.random.default_rng(20261122)
    a = np.concatenate([ALL_BITS] * 4)
    b = np.concatenate([rng.permutation(ALL_BITS) for _ in range(4)])
    special = np.array([0x0000, 0x8000, 0x3F80, 0xBF80, 0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x7F81,
                        0x7F7F, 0xFF7F, 0x0001, 0x8001, 0x0080], np.uint16)
    sa, sb = np.meshgrid(special, special)
    return np.concatenate([a, sa.ravel()]), np.concatenate([b, sb.ravel()])


A_BITS, B_BITS = operand_pairs()


def quiet(b):
    snan = ((b & 0x7FFF) > 0x7F80) & ((b & 0x7FFF) < 0x7FC0)
    return np.where(snan, b | 0x40, b).astype(np.uint16)


def binary_reference(name, a_bits, b_bits):
    f = getattr(np, name)
    with np.errstate(all="ignore"):
        r = f(exact_f32(a_bits), exact_f32(b_bits))
    if name in COMPARISONS:
        return r
    r = reference_round(r)
    if name in ("maximum", "minimum", "fmax", "fmin"):
        # of two zeros, float16 (the behavioural reference) returns the first; float32's
        # vector loops do not say which
        zeros = ((a_bits & 0x7FFF) == 0) & ((b_bits & 0x7FFF) == 0)
        r = np.where(zeros, a_bits, r).astype(np.uint16)
    return r


@pytest.mark.parametrize("name", BINARY_F32 + COMPARISONS)
def test_binary_every_layout(name):
    """Contiguous, array-scalar (both sides), strided, in place and short tails against
    numpy's float32 result on the exact inputs, rounded once."""
    f = getattr(np, name)
    a_bits, b_bits = A_BITS, B_BITS
    if name in ("maximum", "minimum", "fmax", "fmin"):
        # what a signalling NaN operand gives is unspecified (test_ufuncs does the same)
        a_bits, b_bits = quiet(a_bits), quiet(b_bits)
    a, b = a_bits.view(BF16), b_bits.view(BF16)
    compare = name in COMPARISONS

    def check(got, a_bits, b_bits, layout):
        want = binary_reference(name, a_bits, b_bits)
        if compare:
            assert np.array_equal(got, want), f"{name} {layout}"
        else:
            assert_same_bits(bits(got), want, f"{name} {layout}")

    with np.errstate(all="ignore"):
        check(f(a, b), a_bits, b_bits, "contiguous")
        for s in (0, 2, 3, 4, 6, 9, 11):  # +0, 1, -1, inf, NaN, max, smallest subnormal
            scalar = b[len(ALL_BITS) * 4 + s * 15: len(ALL_BITS) * 4 + s * 15 + 1]
            sb = np.broadcast_to(b_bits[len(ALL_BITS) * 4 + s * 15], a_bits.shape)
            check(f(a, scalar), a_bits, sb, "array-scalar")
            check(f(scalar, a), sb, a_bits, "scalar-array")
        check(f(a[::3], b[::3]), a_bits[::3], b_bits[::3], "strided")
        for n in LENGTHS:
            check(f(a[5:5 + n], b[7:7 + n]), a_bits[5:5 + n], b_bits[7:7 + n], f"length {n}")
        if not compare:
            x = a.copy()
            f(x, b, out=x)
            check(x, a_bits, b_bits, "in place")


LOGICAL = ["logical_and", "logical_or", "logical_xor"]


def scalar_loop(f, *args, out_dtype):
    """f(*args) by the scalar (functor) loop: strided calls of 8 elements (strided calls of 16
    or more run on gathered blocks, loops.h try_strided_blocks). 0-d args are broadcast."""
    n = max(np.size(a) for a in args)
    spread = []
    for a in args:
        if np.ndim(a) == 0:
            spread.append(a)
        else:
            wide = np.zeros(2 * n, a.dtype)
            wide[::2] = a
            spread.append(wide[::2])
    out = np.zeros(n, out_dtype)
    for i in range(0, n, 8):
        out[i:i + 8] = f(*[a if np.ndim(a) == 0 else a[i:i + 8] for a in spread])
    return out


@pytest.mark.parametrize("name", BINARY_F32 + COMPARISONS + LOGICAL)
def test_strided_binary_loops_match_the_scalar_loop(name):
    """Strided calls (gathered into blocks for the contiguous loops) give the scalar loop's
    bits, in every layout that reaches them: strides of 2, 3 and -1 elements, a broadcast value
    on either side, a strided output, lengths around the 512-element block, the exact in-place
    alias (x[::2] += y[::2], and a reduction over an outer axis); and the overlapping calls that
    must stay element by element (accumulate) do."""
    f = getattr(np, name)
    rng = np.random.default_rng(11)
    n = 3000
    a_bits = rng.choice(A_BITS, n)
    b_bits = rng.choice(B_BITS, n)
    if name in ("maximum", "minimum", "fmax", "fmin"):
        a_bits, b_bits = quiet(a_bits), quiet(b_bits)
    a, b = a_bits.view(BF16), b_bits.view(BF16)
    out_dtype = np.bool_ if name in COMPARISONS + LOGICAL else BF16

    def same(got, want, what):
        got, want = np.ascontiguousarray(got), np.ascontiguousarray(want)
        if out_dtype is BF16:
            assert_same_bits(got.view(np.uint16), want.view(np.uint16), f"{name} {what}")
        else:
            assert np.array_equal(got, want), f"{name} {what}"

    with np.errstate(all="ignore"):
        wide_a, wide_b = np.zeros(3 * n, BF16), np.zeros(3 * n, BF16)
        wide_a[::3], wide_b[::3] = a, b
        ref = scalar_loop(f, a, b, out_dtype=out_dtype)
        if out_dtype is BF16:  # the scalar loop itself against float32's rounded result
            want = binary_reference(name, a_bits, b_bits)
            assert_same_bits(ref.view(np.uint16), want, f"{name} scalar loop")
        for m in (16, 17, 511, 512, 513, 1500, n):
            same(f(wide_a[:3 * m:3], wide_b[:3 * m:3]), ref[:m], f"stride 3, {m}")
        doubled = np.zeros(2 * n, BF16)
        doubled[::2] = a
        same(f(doubled[::2], b), ref, "stride 2 and contiguous")
        for m in (1, 2, 17, 513):  # the last element at the end of its buffer
            odd = np.zeros(2 * m - 1, BF16)
            odd[::2] = a[:m]
            same(f(odd[::2], b[:m]), ref[:m], f"stride 2, {m}")
        same(f(a[::-1], b[::-1]), ref[::-1], "reversed")
        out = np.zeros(4 * n, out_dtype)
        f(wide_a[::3], wide_b[::3], out=out[::4])
        same(out[::4], ref, "strided output")
        for s_bits in (0x3F80, 0x0000, 0x7FC0, 0xFF80, 0x0001):
            s = np.array(s_bits, np.uint16).view(BF16)[()]
            same(f(wide_a[::3], s), scalar_loop(f, a, s, out_dtype=out_dtype), f"scalar {s_bits:#x}")
            same(f(s, wide_b[::3]), scalar_loop(f, s, b, out_dtype=out_dtype), f"{s_bits:#x} array")
        if out_dtype is BF16:
            x = wide_a.copy()
            f(x[::3], wide_b[::3], out=x[::3])  # the same address and stride
            same(x[::3], ref, "in place")
            rows = np.zeros((6, 2 * n), BF16)
            rows[:, ::2] = rng.choice(quiet(A_BITS), (6, n)).view(BF16)
            acc = rows[0, ::2].copy()
            for r in rows[1:, ::2]:
                acc = scalar_loop(f, acc, r, out_dtype=BF16)
            if name in ("maximum", "minimum", "fmax", "fmin"):  # (add: a float32 shadow)
                same(f.reduce(rows[:, ::2], axis=0), acc, "outer-axis reduction")
            # accumulate: each output is the next call's input, one element at a time
            seq = np.empty(40, BF16)
            seq[0] = wide_a[0]
            for i in range(1, 40):
                seq[i:i + 1] = scalar_loop(f, seq[i - 1:i], wide_a[3 * i:3 * i + 1], out_dtype=BF16)
            same(f.accumulate(wide_a[:120:3]), seq, "accumulate")


def test_overflow_warns_in_vector_loops_only_when_a_finite_result_rounds_to_inf():
    big = np.full(100, 3e38, BF16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(over="raise"):
            with pytest.raises(FloatingPointError):
                np.add(big, big)
            with pytest.raises(FloatingPointError):
                np.multiply(big, np.array(2.0, BF16))
            inf = np.full(100, np.inf, BF16)
            assert np.isinf(np.add(inf, big).astype(np.float32)).all()  # inf in: no overflow
            assert np.isinf(np.multiply(inf, np.array(2.0, BF16)).astype(np.float32)).all()


def boundary_pairs(name):
    """Operand bit patterns whose float32 result (numpy's float32 op on the exact widened
    values) lies within 2^16 ulps of 0x7F7F8000, the least float32 that rounds to the bfloat16
    infinity, on either side and with either sign, and whether each must raise "overflow": its
    float32 result is infinite or rounds (integer reference) to an infinity."""
    near = np.arange(0x7F00, 0x7F80, dtype=np.uint32).astype(np.uint16)  # 2^127 ... max
    small = np.arange(0x3F80, 0x4000, dtype=np.uint32).astype(np.uint16)  # 1 ... 2
    if name in ("add", "subtract"):
        small = np.arange(0x7A00, 0x7B80, dtype=np.uint32).astype(np.uint16)  # 2^117 ... 2^120
    if name == "divide":
        small = np.arange(0x3F60, 0x3F80, dtype=np.uint32).astype(np.uint16)  # 0.875 ... 1
    a, b = (m.ravel() for m in np.meshgrid(near, small))
    if name == "subtract":
        b = b | 0x8000  # a - (-b): a sum of magnitudes
    with np.errstate(all="ignore"):
        f = getattr(np, name)(exact_f32(a), exact_f32(b))
    mag = f.view(np.uint32) & 0x7FFFFFFF
    keep = (mag >= 0x7F7F8000 - 0x10000) & (mag <= 0x7F800000)
    a, b, mag = a[keep], b[keep], mag[keep]
    # the other sign too: negate the result by flipping a (and b for sums)
    flip = (np.arange(a.size) % 2 == 1).astype(np.uint16) << 15
    a = a ^ flip
    if name in ("add", "subtract"):
        b = b ^ flip
    overflows = reference_round(mag.view(np.float32)) == 0x7F80
    return a, b, overflows


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide"])
def test_overflow_flag_exact_at_the_rounding_boundary(name):
    """Each operand pair whose float32 result is near the largest value that still rounds to
    a finite bfloat16, inside a 40-element block of ordinary values (the vector loop) and
    alone in a strided call (the scalar loop): "overflow" exactly when the result rounds to
    an infinity. Both sides of the boundary are present."""
    a, b, overflows = boundary_pairs(name)
    assert overflows.any() and not overflows.all(), name
    f = getattr(np, name)
    for av, bv, want in zip(a, b, overflows):
        block_a = np.full(40, 1.0, BF16)
        block_b = np.full(40, 1.0, BF16)
        block_a.view(np.uint16)[13] = av
        block_b.view(np.uint16)[13] = bv
        expected = ["overflow"] if want else []
        assert warning_kinds(lambda x: f(x, block_b), block_a) == expected, (name, hex(av), hex(bv))
        spread = np.zeros(2, BF16)
        spread.view(np.uint16)[0] = av
        assert warning_kinds(lambda x: f(x, block_b[13:14]), spread[::2]) == expected, (
            name, hex(av), hex(bv))


def test_square_overflow_flag_exact_at_the_rounding_boundary():
    """Every input below 2^65 whose float32 square is 2^127 or more, both signs: "overflow"
    exactly when the square rounds (integer reference) to an infinity, in the vector loop and
    in the strided one."""
    with np.errstate(all="ignore"):
        sq = exact_f32(ALL_BITS) * exact_f32(ALL_BITS)
    mag = sq.view(np.uint32) & 0x7FFFFFFF
    keep = (mag >= 0x7F000000) & ((ALL_BITS & 0x7FFF) < 0x6000)  # |x| < 2^65
    xs, overflows = ALL_BITS[keep], reference_round(sq[keep]) & 0x7FFF == 0x7F80
    assert overflows.any() and not overflows.all()
    for xv, want in zip(xs, overflows):
        block = np.full(40, 1.0, BF16)
        block.view(np.uint16)[13] = xv
        spread = np.zeros(2, BF16)
        spread.view(np.uint16)[0] = xv
        expected = ["overflow"] if want else []
        assert warning_kinds(np.square, block) == expected, hex(xv)
        assert warning_kinds(np.square, spread[::2]) == expected, hex(xv)


def test_reciprocal_warnings_per_input():
    """np.reciprocal raises, for each input inside a 40-element vector block, the warnings the
    strided loop raises for it alone: the inputs that can raise anything (zeros, subnormals,
    |x| >= 2^125, infinities and NaNs) one at a time, and all the others in one call that must
    raise nothing. Its float32 result never rounds a finite value to infinity (unary_block)."""
    mag = ALL_BITS & 0x7FFF
    risky = (mag < 0x0080) | (mag >= 0x7E00)
    for xv in ALL_BITS[risky]:
        block = np.full(40, 1.0, BF16)
        block.view(np.uint16)[13] = xv
        spread = np.zeros(2, BF16)
        spread.view(np.uint16)[0] = xv
        assert warning_kinds(np.reciprocal, block) == warning_kinds(np.reciprocal, spread[::2]), hex(xv)
    rest = ALL_BITS[~risky].view(BF16)
    assert warning_kinds(np.reciprocal, rest) == []
    assert warning_kinds(np.reciprocal, np.repeat(rest, 2)[::2]) == []


@pytest.mark.parametrize("name", BINARY_F32 + COMPARISONS)
def test_binary_warnings_same_in_vector_and_scalar_loops(name):
    """Array-scalar and array-array calls of every tail length, contiguous and strided (blocks
    gathered for the contiguous loop), raise the warnings of one element in the scalar loop (a
    strided call of one element): the lanes past the end of a short vector must not raise any
    (1 / 0)."""
    f = getattr(np, name)
    for fill in (0.0, np.inf, np.nan, 1.0):
        for other in (0.0, -0.0, np.inf, 2.0):
            s = np.array(other, BF16)
            one = np.array([fill, 0], BF16)[::2]
            want_xs = warning_kinds(lambda a: f(*a), (one, s))
            want_sx = warning_kinds(lambda a: f(*a), (s, one))
            assert warning_kinds(lambda a: f(*a), (one, np.array([other, 0], BF16)[::2])) == want_xs
            for n in LENGTHS[:12]:
                x = np.full(n, fill, BF16)
                spread = np.zeros(2 * n, BF16)
                spread[::2] = x
                y = np.full(n, other, BF16)
                for args, want in (((x, s), want_xs), ((s, x), want_sx), ((x, y), want_xs),
                                   ((spread[::2], s), want_xs), ((s, spread[::2]), want_sx),
                                   ((spread[::2], y), want_xs)):
                    assert warning_kinds(lambda a: f(*a), args) == want, (name, fill, other, n)


@pytest.mark.parametrize("name", BINARY_F32 + COMPARISONS)
def test_signalling_nan_warns_in_every_lane(name):
    """A signalling NaN (0x7F81) in any lane of a 70-element array-array or array-scalar
    call, contiguous or strided, as either operand, raises what the scalar loop raises for it
    alone ("invalid": IEEE comparisons and arithmetic signal on it); a quiet NaN (0x7FC0) in
    the same lane raises nothing."""
    f = getattr(np, name)
    for nan_bits in (0x7F81, 0x7FC0):
        for pos in range(70):
            x = np.full(70, 1.5, BF16)
            x.view(np.uint16)[pos] = nan_bits
            y = np.full(70, 0.75, BF16)
            s = np.array(0.75, BF16)
            spread = np.zeros(140, BF16)
            spread[::2] = x
            alone = spread[2 * pos:2 * pos + 2:2]  # the scalar loop: a strided call of one
            want = warning_kinds(lambda a: f(*a), (alone, s))
            assert want == (["invalid value"] if nan_bits == 0x7F81 else []), name
            assert warning_kinds(lambda a: f(*a), (s, alone)) == want, name
            for args in ((x, y), (spread[::2], y), (y, x), (y, spread[::2]), (x, s),
                         (spread[::2], s), (s, x), (s, spread[::2])):
                assert warning_kinds(lambda a: f(*a), args) == want, (name, hex(nan_bits), pos)


def test_outer_axis_sum_accumulates_in_float32():
    """np.sum(axis=0) adds row after row into a float32 shadow (the reduction-slice loop):
    equal to numpy's float32 row-by-row sum of the exact values, rounded once."""
    rng = np.random.default_rng(7)
    x32 = rng.standard_normal((300, 77)).astype(np.float32)
    x = x32.astype(BF16)
    want = reference_round(np.add.reduce(x.astype(np.float32), axis=0))
    assert_same_bits(bits(np.sum(x, axis=0)), want, "sum axis 0")


@pytest.mark.parametrize("cols", [1, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 40, 47, 48,
                                  56, 63, 64, 65, 100])
@pytest.mark.parametrize("ufunc", ["add", "multiply"])
def test_outer_axis_reductions_every_width(ufunc, cols):
    """The shadow row at widths around its 32-, 16- and 8-element steps (tails one by one),
    with NaN, inf, zeros of both signs, a column that overflows float32 and one that overflows
    bfloat16 only when rounded (the float32 flag the step raises for it), in one block of 16
    columns at a time: the bits of numpy's float32 reduction rounded once, and "overflow"
    exactly when a column's float32 result is finite but rounds to inf or float32 itself
    overflowed."""
    rng = np.random.default_rng(cols)
    rows = 40 if ufunc == "add" else 12
    f = getattr(np, ufunc)
    for c in range(0, cols - 6, 16) if cols >= 7 else [None]:
        x32 = rng.uniform(0.5, 1.5, (rows, cols)).astype(np.float32)
        if c is not None:
            x32[3, c + 1], x32[5, c + 2], x32[0, c + 3], x32[:, c + 4] = np.nan, np.inf, -0.0, -0.0
            # rounds (or runs) past the top
            x32[:, c + 5] = 3.3e38 / rows if ufunc == "add" else 2.0 ** 11
            # a finite float32 result above bfloat16's largest rounding: 3.3995525e38, 3.402616e38
            x32[:, c + 6] = 0.0 if ufunc == "add" else 1.0
            x32[:2, c + 6] = [3.3895314e38, 1e36] if ufunc == "add" else [3.3762391e38, 1.0078125]
        x = x32.astype(BF16)
        with np.errstate(all="ignore"):
            ref32 = f.reduce(x.astype(np.float32), axis=0)
        want = reference_round(ref32)
        with warnings.catch_warnings(record=True) as caught, np.errstate(all="warn"):
            warnings.simplefilter("always")
            got = f.reduce(x, axis=0)
        assert_same_bits(bits(got), want, f"{ufunc} axis 0, {cols} columns, block at {c}")
        finite = np.isfinite(x.astype(np.float32)).all(axis=0)
        overflowed = bool((finite & ~np.isfinite(exact_f32(want))).any())
        said = any("overflow" in str(w.message) for w in caught)
        assert said == overflowed, (ufunc, cols, c, [str(w.message) for w in caught])


def test_inplace_add_of_size_one_keeps_negative_zero():
    x = np.array([-0.0], BF16)
    x += x
    assert np.signbit(x.astype(np.float32)).tolist() == [True]


# Outputs of 2^21 elements or more take the streaming loops (input prefetch; non-temporal
# stores after a masked head up to a 64-byte boundary where the tier has one).
STREAM_MIN = 1 << 21


def aligned_out(n, offset):
    """An empty bfloat16 array of n elements starting `offset` elements past a 64-byte
    boundary."""
    buf = np.empty(n + 64, BF16)
    skip = (-buf.ctypes.data % 64) // 2
    return buf[skip + offset: skip + offset + n]


@pytest.mark.parametrize("name", CORRECTLY_ROUNDED_UNARY + TRANSCENDENTAL_UNARY)
def test_unary_streaming_outputs(name):
    """33 copies of all 65,536 inputs (2.16 M elements) into outputs at three alignments and
    in place equal the exhaustive reference bit for bit."""
    f = getattr(np, name)
    copies = STREAM_MIN // 65536 + 1
    want = np.tile(unary_reference(name), copies)
    x = np.tile(ALL_VALUES, copies)
    nan_sign = name in ("negative", "absolute", "fabs", "positive")
    with np.errstate(all="ignore"):
        for offset in (0, 1, 31):
            out = aligned_out(x.size, offset)
            f(x, out=out)
            assert_same_bits(bits(out), want, f"{name} output offset {offset}",
                             nan_sign=nan_sign)
        inplace = x.copy()
        f(inplace, out=inplace)
    assert_same_bits(bits(inplace), want, f"{name} in place", nan_sign=nan_sign)


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "maximum"])
def test_binary_streaming_outputs(name):
    """Array-array, array-scalar and in-place calls with outputs over 2^21 elements (every
    bit pattern against shuffles of every bit pattern, 9 times over) against the float32
    reference."""
    f = getattr(np, name)
    copies = STREAM_MIN // A_BITS.size + 1
    a_bits, b_bits = quiet(np.tile(A_BITS, copies)), quiet(np.tile(B_BITS, copies))
    a, b = a_bits.view(BF16), b_bits.view(BF16)
    scalar = np.array(1.5, BF16)
    s_bits = np.broadcast_to(np.array(1.5, BF16).view(np.uint16), a_bits.shape)
    with np.errstate(all="ignore"):
        for offset in (0, 1, 31):
            out = aligned_out(a.size, offset)
            f(a, b, out=out)
            assert_same_bits(bits(out), binary_reference(name, a_bits, b_bits),
                             f"{name} offset {offset}")
        out = aligned_out(a.size, 7)
        f(scalar, a, out=out)
        assert_same_bits(bits(out), binary_reference(name, s_bits, a_bits), f"{name} scalar-array")
        f(a, scalar, out=out)
        assert_same_bits(bits(out), binary_reference(name, a_bits, s_bits), f"{name} array-scalar")
        x = a.copy()
        f(x, b, out=x)
    assert_same_bits(bits(x), binary_reference(name, a_bits, b_bits), f"{name} in place")


# ---- order kernels: maximum/minimum/fmax/fmin reductions, comparisons with a scalar ----------

def fold_reference(name, start_bits, bits):
    """The reduction as the functors define it, one element at a time in Python floats:
    maximum/minimum keep the accumulated value unless the new one is strictly beyond it or it
    is a NaN (so the first NaN wins); fmax/fmin never take a NaN over a number. A NaN result
    is quiet."""
    with np.errstate(invalid="ignore"):
        vals = exact_f32(np.asarray(bits, np.uint16)).astype(np.float64).tolist()
    acc_bits = int(start_bits)
    acc = float(exact_f32(np.array([acc_bits], np.uint16))[0])
    for b, v in zip(np.asarray(bits).tolist(), vals):
        if name == "maximum":
            keep = acc >= v or acc != acc
        elif name == "minimum":
            keep = acc <= v or acc != acc
        elif name == "fmax":
            keep = acc >= v or v != v
        else:
            keep = acc <= v or v != v
        if not keep:
            acc, acc_bits = v, int(b)
    if (acc_bits & 0x7FFF) > 0x7F80:
        acc_bits |= 0x40
    return acc_bits


def minmax_cases():
    rng = np.random.default_rng(20261123)
    pos_zero, neg_zero, qnan, snan = 0x0000, 0x8000, 0x7FC0, 0x7F81
    shuffled = rng.permutation(ALL_BITS)
    ordinary = rng.permutation(ALL_BITS[(ALL_BITS & 0x7FFF) <= 0x7F80])  # no NaN
    negatives = np.array([0xC000, 0xBF80, neg_zero, 0xC040, pos_zero, neg_zero, 0xBF00], np.uint16)
    zeros = np.array([neg_zero, pos_zero, neg_zero, 0x8001, pos_zero], np.uint16)
    with_nans = np.array([0x3F80, 0x4000, qnan, 0x4040, 0xFFC1, 0x4080], np.uint16)
    all_nan = np.array([qnan, 0xFFC0, snan], np.uint16)
    return {"shuffled": shuffled, "ordinary": ordinary, "negatives": negatives, "zeros": zeros,
            "with nans": with_nans, "all nan": all_nan, "snan": np.array([0x3F80, snan, 0x4000], np.uint16),
            # NaN-free blocks of 8192 around one with a signalling NaN (the scan's blocks)
            "late nan": np.concatenate([ordinary[:20000], [snan], ordinary[20000:40000]]).astype(np.uint16),
            "one": np.array([0x4000], np.uint16)}


@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax", "fmin"])
def test_minmax_reductions_match_the_sequential_definition(name):
    """ufunc.reduce over contiguous data (the vectorised scan) gives the bits of the functors'
    one-at-a-time fold: the first of equal extremes (the sign of a zero), the first NaN for
    maximum/minimum, NaNs skipped by fmax/fmin; also with initial= (a NaN or a zero), along an
    axis, and with the same IEEE warnings as a strided reduction."""
    uf = getattr(np, name)
    for label, bits in minmax_cases().items():
        x = bits.view(BF16)
        with np.errstate(all="ignore"):
            got = int(np.asarray(uf.reduce(x)).view(np.uint16))
        assert got == fold_reference(name, bits[0], bits[1:]), (name, label)
        for init in (0x8000, 0x0000, 0x7FC0, 0xFF80, 0x7F80, 0x3F80):
            with np.errstate(all="ignore"):
                got = int(np.asarray(uf.reduce(x, initial=np.array(init, np.uint16).view(BF16)[()]))
                          .view(np.uint16))
            assert got == fold_reference(name, init, bits), (name, label, hex(init))
        spread = np.zeros(2 * bits.size, np.uint16)
        spread[::2] = bits
        assert warning_kinds(uf.reduce, x) == warning_kinds(uf.reduce, spread[::2].view(BF16)), \
            (name, label)
    rows = minmax_cases()["shuffled"].reshape(256, 256)
    with np.errstate(all="ignore"):
        got = uf.reduce(rows.view(BF16), axis=1).view(np.uint16)
    want = [fold_reference(name, r[0], r[1:]) for r in rows]
    assert got.tolist() == want, name


@pytest.mark.parametrize("name", COMPARISONS)
def test_comparisons_with_a_scalar(name):
    """Every bit pattern against special and ordinary scalars, on either side, equal numpy's
    float32 comparison of the exact values; "invalid" warnings exactly when a signalling NaN
    is an operand, contiguous and strided."""
    f = getattr(np, name)
    arr = ALL_VALUES
    f32 = exact_f32(ALL_BITS)
    spread = np.zeros(2 * 65536, BF16)
    spread[::2] = ALL_VALUES
    quiet = ALL_VALUES[~is_snan_bits(ALL_BITS)]
    quiet_spread = np.zeros(2 * quiet.size, BF16)
    quiet_spread[::2] = quiet
    for s_bits in (0x0000, 0x8000, 0x3F80, 0xBF80, 0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x7F81,
                   0x7F7F, 0x0001, 0x8001, 0x4049):
        s = np.array(s_bits, np.uint16).view(BF16)[()]
        s32 = exact_f32(np.array([s_bits], np.uint16))[0]
        with np.errstate(all="ignore"):
            assert np.array_equal(f(arr, s), f(f32, s32)), (name, hex(s_bits), "array-scalar")
            assert np.array_equal(f(s, arr), f(s32, f32)), (name, hex(s_bits), "scalar-array")
            for n in LENGTHS[:10]:
                assert np.array_equal(f(arr[3:3 + n], s), f(f32[3:3 + n], s32)), (name, n)
        # IEEE comparisons signal "invalid" for a signalling NaN operand only
        # (test_signalling_nan_warns_in_every_lane checks the rule element by element)
        s_snan = is_snan_bits(s_bits)
        for values in (arr, spread[::2], quiet, quiet_spread[::2]):
            want = ["invalid value"] if s_snan or is_snan_bits(values.view(np.uint16)).any() else []
            assert warning_kinds(lambda a: f(a, s), values) == want, (name, hex(s_bits))
            assert warning_kinds(lambda a: f(s, a), values) == want, (name, hex(s_bits))


def test_clip_with_scalar_bounds():
    """np.clip of every bit pattern with scalar bounds (the vectorised path) equals, bit for
    bit, the strided element-at-a-time loop, and numpy's float32 clip of the exact values as
    numbers (NaN where it is NaN); lo > hi gives hi, as NumPy's minimum(maximum(x, lo), hi)."""
    spread = np.zeros(2 * 65536, BF16)
    spread[::2] = ALL_VALUES
    f32 = exact_f32(ALL_BITS)
    for lo_bits, hi_bits in ((0xBF80, 0x3F80), (0x8000, 0x0000), (0x0000, 0x8000), (0xFF80, 0x7F80),
                             (0x4000, 0x3F80), (0x0001, 0x7F7F), (0xC2C8, 0xC2C7)):
        lo = np.array(lo_bits, np.uint16).view(BF16)[()]
        hi = np.array(hi_bits, np.uint16).view(BF16)[()]
        got = np.clip(ALL_VALUES, lo, hi)
        strided = np.clip(spread[::2], lo, hi)
        assert np.array_equal(bits(got), bits(strided)), (hex(lo_bits), hex(hi_bits))
        with np.errstate(invalid="ignore"):
            want = np.clip(f32, exact_f32(np.array([lo_bits], np.uint16))[0],
                           exact_f32(np.array([hi_bits], np.uint16))[0])
        got32 = got.astype(np.float32)
        assert np.array_equal(got32, want, equal_nan=True), (hex(lo_bits), hex(hi_bits))
        inplace = ALL_VALUES.copy()
        np.clip(inplace, lo, hi, out=inplace)
        assert np.array_equal(bits(inplace), bits(strided)), "clip in place"


def test_clip_with_array_bounds():
    """np.clip with a bound per element (three contiguous runs: the vectorised path), over every
    bit pattern as x against shuffled patterns as bounds (NaNs of any payload, both zeros,
    infinities, lo > hi), equals bit for bit the strided element-at-a-time loop, which picks a
    NaN x first, then a NaN lo, then a NaN hi; as numbers it equals numpy's float32 clip."""
    rng = np.random.default_rng(5)
    edges = np.array([0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0xFF81, 0x3F80, 0xBF80], np.uint16)
    for trial in range(3):
        lo_bits = rng.permutation(ALL_BITS)
        hi_bits = rng.permutation(ALL_BITS)
        if trial == 1:  # few NaNs, ordered bounds: most elements clipped or kept by value
            lo_bits = np.minimum(lo_bits, hi_bits)
            lo_bits[(lo_bits & 0x7FFF) > 0x7F80] = 0xBF80
            hi_bits = np.where((hi_bits & 0x7FFF) > 0x7F80, 0x3F80, hi_bits).astype(np.uint16)
        if trial == 2:  # bounds and x from the edge values only: every tie of zeros and signs
            lo_bits = rng.choice(edges, 65536)
            hi_bits = rng.choice(edges, 65536)
        x = ALL_VALUES if trial < 2 else rng.choice(edges, 65536).view(BF16)
        lo, hi = lo_bits.view(BF16), hi_bits.view(BF16)
        spread = np.zeros((3, 2 * 65536), BF16)
        spread[0, ::2], spread[1, ::2], spread[2, ::2] = x, lo, hi
        strided = np.clip(spread[0, ::2], spread[1, ::2], spread[2, ::2])
        for n in LENGTHS + [65536]:
            got = np.clip(x[:n], lo[:n], hi[:n])
            assert np.array_equal(bits(got), bits(strided[:n])), (trial, n)
        with np.errstate(invalid="ignore"):
            want = np.clip(x.astype(np.float32), lo.astype(np.float32), hi.astype(np.float32))
        assert np.array_equal(strided.astype(np.float32), want, equal_nan=True), trial
        inplace = x.copy()
        np.clip(inplace, lo, hi, out=inplace)
        assert np.array_equal(bits(inplace), bits(strided)), "clip in place"


# ---- integer-rounding twins, predicates and copysign ------------------------------------

ROUNDING_UNARY = ["floor", "ceil", "trunc", "rint", "sign"]
SIGNALLING = [0x7F81, 0xFF81, 0x7FBF]


@pytest.mark.parametrize("name", ROUNDING_UNARY)
def test_rounding_twins_same_bits_as_scalar_loop_nan_payloads_included(name):
    """floor/ceil/trunc/rint/sign through the contiguous (vector) loop give the strided
    (functor) loop's bits for all 65,536 inputs, NaN payloads and signs included, at every
    tail length and in place; and the same warnings for signalling NaNs inside a block."""
    f = getattr(np, name)
    spread = np.zeros(2 * 65536, BF16)
    spread[::2] = ALL_VALUES
    with np.errstate(all="ignore"):
        want = bits(f(spread[::2]))
        assert np.array_equal(bits(f(ALL_VALUES)), want), name
        start = 0
        for length in LENGTHS * 4:
            stop = min(65536, start + length)
            assert np.array_equal(bits(f(ALL_VALUES[start:stop])), want[start:stop]), (name, length)
            start = stop
        inplace = ALL_VALUES.copy()
        f(inplace, out=inplace)
        assert np.array_equal(bits(inplace), want), name
    for s in SIGNALLING + [0x7FC0, 0x7F80, 0x3F80]:
        block = np.full(40, 0.25, BF16)
        block.view(np.uint16)[13] = s
        spread40 = np.zeros(80, BF16)
        spread40[::2] = block
        assert warning_kinds(f, block) == warning_kinds(f, spread40[::2]), (name, hex(s))


@pytest.mark.parametrize("name", ["isnan", "isinf", "isfinite", "signbit", "logical_not"])
def test_predicates_every_layout(name):
    """All 65,536 inputs against numpy's float32 predicate of the exact widening: contiguous,
    every tail length, strided, unaligned, into a strided output; no warning, even for
    signalling NaNs."""
    f = getattr(np, name)
    with np.errstate(all="ignore"):  # float32's logical_not compares, so a signalling NaN raises
        want = f(exact_f32(ALL_BITS))
    with np.errstate(all="raise"):  # no flag may be raised
        assert np.array_equal(f(ALL_VALUES), want), name
        start = 0
        for length in LENGTHS * 4:
            stop = min(65536, start + length)
            assert np.array_equal(f(ALL_VALUES[start:stop]), want[start:stop]), (name, length)
            start = stop
        spread = np.zeros(3 * 65536, BF16)
        spread[::3] = ALL_VALUES
        assert np.array_equal(f(spread[::3]), want), name
        raw = np.zeros(2 * 65536 + 2, np.uint8)
        unaligned = raw[1:-1].view(BF16)
        unaligned[:] = ALL_VALUES
        assert np.array_equal(f(unaligned), want), name
        out = np.zeros(2 * 65536, bool)
        f(ALL_VALUES, out=out[::2])
        assert np.array_equal(out[::2], want) and not out[1::2].any(), name


def test_copysign_every_layout():
    """copysign of every bit pattern against shuffles of every bit pattern equals float32's
    copysign of the exact widenings (a bit operation: NaN payloads and signs included), for
    contiguous, tail-length, strided, in-place and overlapping operands."""
    want = (np.copysign(exact_f32(A_BITS), exact_f32(B_BITS)).view(np.uint32) >> 16).astype(np.uint16)
    a, b = A_BITS.view(BF16), B_BITS.view(BF16)
    with np.errstate(all="raise"):
        assert np.array_equal(bits(np.copysign(a, b)), want)
        for n in LENGTHS:
            got = bits(np.copysign(a[5:5 + n], b[7:7 + n]))
            ref = (np.copysign(exact_f32(A_BITS[5:5 + n]), exact_f32(B_BITS[7:7 + n]))
                   .view(np.uint32) >> 16).astype(np.uint16)
            assert np.array_equal(got, ref), n
        assert np.array_equal(bits(np.copysign(a[::3], b[::3])), want[::3])
        x = a.copy()
        np.copysign(x, b, out=x)
        assert np.array_equal(bits(x), want)
        y = b.copy()
        np.copysign(a, y, out=y)
        assert np.array_equal(bits(y), want)
        # the output one element ahead of the first input: numpy resolves the overlap
        buf = np.zeros(a.size + 1, BF16)
        buf[:-1] = a
        np.copysign(buf[:-1], b, out=buf[1:])
        assert np.array_equal(bits(buf[1:]), want)


def test_heaviside_every_layout():
    """heaviside of every bit pattern against shuffles of every bit pattern, and against one
    value (np.heaviside(x, 0.5)), equals float32's heaviside of the exact widenings, with x
    itself (quiet) for a NaN x and a NaN h0 made quiet; "invalid" exactly for a signalling NaN
    x; for contiguous, tail-length, strided, in-place and overlapping operands."""
    def want_of(xb, hb):
        with np.errstate(all="ignore"):
            r = np.heaviside(exact_f32(xb), exact_f32(hb))
        r = (r.view(np.uint32) >> 16).astype(np.uint16)
        r = quiet(np.where((xb & 0x7FFF) == 0, hb, r))
        return np.where((xb & 0x7FFF) > 0x7F80, quiet(xb), r).astype(np.uint16)

    a, b = A_BITS.view(BF16), B_BITS.view(BF16)
    want = want_of(A_BITS, B_BITS)
    finite = ~is_snan_bits(A_BITS)
    with np.errstate(all="raise"):
        assert np.array_equal(bits(np.heaviside(a[finite], b[finite])), want[finite])
        for n in LENGTHS:
            sel = np.flatnonzero(finite)[3:3 + n]
            got = bits(np.heaviside(a[sel], b[sel]))
            assert np.array_equal(got, want[sel]), n
        for h in (0.5, -0.0, np.nan, np.inf):
            hb = np.full(A_BITS.size, np.array(h, np.float32).astype(BF16).view(np.uint16))
            got = bits(np.heaviside(a[finite], bfloat16(h)))
            assert np.array_equal(got, want_of(A_BITS, hb)[finite]), h
        x = a[finite].copy()
        np.heaviside(x, b[finite], out=x)
        assert np.array_equal(bits(x), want[finite])
    assert np.array_equal(bits(np.heaviside(a[::3], b[::3])), want[::3])
    buf = np.zeros(a.size + 1, BF16)
    buf[:-1] = a
    with np.errstate(invalid="ignore"):
        np.heaviside(buf[:-1], b, out=buf[1:])
    assert np.array_equal(bits(buf[1:]), want)
    snan = A_BITS[is_snan_bits(A_BITS)][:40].view(BF16)
    for f in (lambda v: np.heaviside(v, bfloat16(0.5)), lambda v: np.heaviside(v, v),
              lambda v: np.heaviside(v[::2], bfloat16(0.5))):
        assert warning_kinds(f, snan) == ["invalid value"]
        assert warning_kinds(f, a[finite][:4000]) == []


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
def test_logical_every_layout(name):
    """logical_and/or/xor of every bit pattern against shuffles of every bit pattern equal
    float32's on the exact widenings (NaN counts as true) in every layout, and a signalling
    NaN on either side, inside a block, warns as the strided (functor) loop does."""
    f = getattr(np, name)
    a, b = A_BITS.view(BF16), B_BITS.view(BF16)
    with np.errstate(all="ignore"):
        want = f(exact_f32(A_BITS), exact_f32(B_BITS))
        assert np.array_equal(f(a, b), want), name
        assert np.array_equal(f(a[::3], b[::3]), want[::3]), name
        for n in LENGTHS:
            assert np.array_equal(f(a[5:5 + n], b[7:7 + n]),
                                  f(exact_f32(A_BITS[5:5 + n]), exact_f32(B_BITS[7:7 + n]))), n
    for s in SIGNALLING + [0x7FC0]:
        for other in (0x0000, 0x8000, 0x3F80, 0x7FC0, 0x7F81):
            for left in (True, False):
                x, y = np.full(40, 0.0, BF16), np.full(40, 1.0, BF16)
                (x if left else y).view(np.uint16)[13] = s
                (y if left else x).view(np.uint16)[13] = other
                sx, sy = np.zeros(80, BF16), np.zeros(80, BF16)
                sx[::2], sy[::2] = x, y
                # the scalar loop on the one special element (a strided call of one element)
                want = warning_kinds(lambda _: f(sx[26:28:2], sy[26:28:2]), None)
                assert warning_kinds(lambda _: f(x, y), None) == want, (name, s, other)
                assert warning_kinds(lambda _: f(sx[::2], sy[::2]), None) == want, (name, s, other)


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide"])
def test_two_nans_give_the_first_operands_every_layout(name):
    """With NaN on both sides the result is the first operand's NaN, quieted, sign and payload
    kept (float32's rule, and the strided loop's); with one NaN, that NaN: in every layout and
    length (the vector loops once returned the second operand's for add and multiply)."""
    f = getattr(np, name)
    rng = np.random.default_rng(7)
    n = max(LENGTHS) + 8
    # x86 returns the first source's NaN whether it is signalling or quiet; ARM prefers a
    # signalling one wherever it is, so elsewhere the NaNs here are quiet
    low = 0x7F81 if X86_64 else 0x7FC0
    nan_a = (low + rng.integers(0, 0x7FFF - low, n)) | (rng.integers(0, 2, n) << 15)
    nan_b = (low + rng.integers(0, 0x7FFF - low, n)) | (rng.integers(0, 2, n) << 15)
    one = np.full(n, 0x3F80)
    a = nan_a.astype(np.uint16)
    cases = [(a, nan_b.astype(np.uint16), a | 0x40),                  # both NaN: the first's
             (one.astype(np.uint16), nan_b.astype(np.uint16), nan_b.astype(np.uint16) | 0x40)]
    with np.errstate(all="ignore"):
        for xa, xb, want in cases:
            x, y = xa.view(BF16), xb.view(BF16)
            assert np.array_equal(bits(f(x, y)), want), name
            assert np.array_equal(bits(f(x[::3], y[::3])), want[::3]), name
            for m in LENGTHS:
                assert np.array_equal(bits(f(x[5:5 + m], y[7:7 + m])),
                                      (xa[5:5 + m] | 0x40) if xa is a else (xb[7:7 + m] | 0x40)), (name, m)
            z = x.copy()
            f(z, y, out=z)
            assert np.array_equal(bits(z), want), name


def random_pairs_with_specials(rng, specials, n=20000):
    """n random pairs of bfloat16 bit patterns (uint16), the first len(specials)**2 of them
    every pair of the 16-bit patterns in `specials`."""
    a = rng.integers(0, 65536, n).astype(np.uint16)
    b = rng.integers(0, 65536, n).astype(np.uint16)
    k = specials.size
    a[:k * k] = np.repeat(specials, k)
    b[:k * k] = np.tile(specials, k)
    return a, b


def assert_twin_matches_scalar_loop(ufunc, a, b, scalars, offsets=(0,)):
    """ufunc's contiguous loop on the bfloat16 arrays a and b equals the scalar loop bit for bit
    (NaN payloads included): from each of `offsets`, every length of LENGTHS and the rest of
    the arrays; in place, either input being the output; each of `scalars` broadcast as either
    operand."""
    with np.errstate(all="ignore"):
        want = scalar_loop(ufunc, a, b, out_dtype=BF16)
        for off in offsets:
            for n in LENGTHS + [a.size - off]:
                assert np.array_equal(bits(ufunc(a[off:off + n], b[off:off + n])),
                                      bits(want[off:off + n])), (off, n)
        for which in (0, 1):
            ops = [a.copy(), b.copy()]
            ufunc(*ops, out=ops[which])
            assert np.array_equal(bits(ops[which]), bits(want)), which
        for s in scalars:
            assert np.array_equal(bits(ufunc(a, s)), bits(scalar_loop(ufunc, a, s, out_dtype=BF16))), s
            assert np.array_equal(bits(ufunc(s, b)), bits(scalar_loop(ufunc, s, b, out_dtype=BF16))), s


def assert_block_warnings_match(ufunc, pairs, lane):
    """Each pair of operand bits at `lane` of 40-element arrays of 1.5, and at elements 100
    and 270 of 300-element ones (a later block of a step of several blocks, a step of one
    block): the contiguous call raises the warnings of the scalar loop."""
    for p, q in pairs:
        for size, at in ((40, lane), (300, 100), (300, 270)):
            pa, qa = np.full(size, 1.5, BF16), np.full(size, 1.5, BF16)
            pa[at] = np.uint16(p).view(BF16)
            qa[at] = np.uint16(q).view(BF16)
            vector = warning_kinds(lambda v: ufunc(v, qa), pa)
            scalar = warning_kinds(lambda v: scalar_loop(ufunc, v, qa, out_dtype=BF16), pa)
            assert vector == scalar, (ufunc.__name__, hex(p), hex(q), at, vector, scalar)


def test_arctan2_twin_matches_the_scalar_loop():
    """arctan2's contiguous loop (sixteen float32 lanes, lanes near a rounding midpoint redone,
    at the avx512 tiers: loops_avx512.cpp atan2_run; four float64 lanes at avx2) equals the
    scalar loop bit for bit, with one operand
    broadcast too, at every length (tails included), and raises the same warnings: underflow
    for a result below 2^-126, invalid for a signalling NaN in any lane, nothing for quiet
    NaNs, zeros and infinities of either sign."""
    rng = np.random.default_rng(11)
    specials = np.array([0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x7F81, 0x0001,
                         0x8001, 0x0080, 0x3F80, 0xBF80, 0x7F7F, 0xFF7F, 0x1000, 0x6000],
                        np.uint16)
    a, b = random_pairs_with_specials(rng, specials)
    assert_twin_matches_scalar_loop(np.arctan2, a.view(BF16), b.view(BF16), specials[::3].view(BF16))
    assert_block_warnings_match(np.arctan2, [
        (0x1000, 0x7000), (0x7F81, 0x3F80), (0x3F80, 0xFF81), (0x7FC0, 0x3F80),
        (0x8000, 0x8000), (0x7F80, 0xFF80), (0x0001, 0x3F80), (0x3F80, 0x0000)], lane=17)
    for size in (40, 300):
        assert warning_kinds(lambda v: np.arctan2(v, np.full(size, 2.0**60, BF16)),
                             np.full(size, 2.0**-100, BF16)) == ["underflow"]
    # a result near +-pi/2 or +-pi from a tiny ratio raises nothing (as float32 and atan2f)
    for y, x in [(1e30, 1e-30), (3e38, 1.0), (1.0, -3e38), (2.0**-133, -1.0), (3e38, np.nan)]:
        ys, xs = np.full(40, y, BF16), np.full(40, x, BF16)
        assert warning_kinds(lambda v: np.arctan2(v, xs), ys) == [], (y, x)
        assert warning_kinds(lambda v: scalar_loop(np.arctan2, v, xs, out_dtype=BF16), ys) == []


def test_hypot_twin_matches_the_scalar_loop():
    """hypot's contiguous loop (float64 lanes: loops_avx512.cpp hypot_run, loops_avx2.cpp
    hypot_run8; the functor at the baseline tier) equals the scalar loop bit for bit: random bit
    patterns, the IEEE special values against each other, results at the edges of bfloat16's
    range (rounding to inf, below 2^-126, subnormal operands), one operand broadcast, in place,
    every tail length; and raises the same warnings (overflow, underflow, invalid for a
    signalling NaN; nothing for hypot(inf, NaN))."""
    rng = np.random.default_rng(13)
    specials = np.array([0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x7F81, 0x0001,
                         0x8001, 0x0080, 0x3F80, 0xBF80, 0x7F7F, 0xFF7F, 0x7F3F, 0x00FF],
                        np.uint16)
    a, b = random_pairs_with_specials(rng, specials)
    # near the top: a sum of squares whose root rounds to inf or stays finite
    a[256:2256] = rng.integers(0x7F00, 0x7F80, 2000) | (rng.integers(0, 2, 2000) << 15)
    b[256:2256] = rng.integers(0x7E00, 0x7F80, 2000)
    # near the bottom: roots below 2^-126 and around it
    a[2256:4256] = rng.integers(0x0000, 0x0180, 2000)
    b[2256:4256] = rng.integers(0x0000, 0x0180, 2000) | (rng.integers(0, 2, 2000) << 15)
    assert_twin_matches_scalar_loop(np.hypot, a.view(BF16), b.view(BF16), specials[::3].view(BF16),
                                    offsets=(0, 4256))
    # 0x7F7F with 0x7D80: a finite float32 that rounds to inf; 0x7F70 twice: inf in float32
    assert_block_warnings_match(np.hypot, [
        (0x7F7F, 0x7D80), (0x7F70, 0x7F70), (0x7F7F, 0x0000), (0x0001, 0x0001), (0x0080, 0x0000),
        (0x7F81, 0x3F80), (0x3F80, 0xFF81), (0x7F80, 0x7FC0), (0x7FC0, 0x3F80)], lane=11)


def test_power_twin_matches_the_scalar_loop():
    """power's contiguous loop (float32 lanes at avx512: loops_avx512.cpp power_run; float64
    lanes at avx2: loops_avx2.cpp power_run4; powf at the baseline tier) equals the scalar (powf)
    loop bit for bit: random bit patterns, positive bases with moderate exponents, bases next to 1
    with large exponents, exact results on a rounding midpoint
    (17 ** 2 = 289), every small integer base and exponent, negative bases with integer and
    other exponents, results near overflow and underflow, one operand broadcast, every tail
    length; and raises the same warnings."""
    rng = np.random.default_rng(12)
    n = 40000
    a = rng.integers(0, 65536, n).astype(np.uint16)
    b = rng.integers(0, 65536, n).astype(np.uint16)
    a[:n // 2] = rng.integers(0x3C00, 0x4300, n // 2)            # 2^-7 .. 128
    b[:n // 2] = rng.integers(0, 0x4200, n // 2) | (rng.integers(0, 2, n // 2) << 15)
    # bases next to 1 with exponents up to 2^15: log2 x small, y log2 x up to and past 125
    a[n // 2:n // 2 + 4000] = rng.integers(0x3F70, 0x3F90, 4000)
    b[n // 2:n // 2 + 4000] = rng.integers(0x4200, 0x4700, 4000) | (rng.integers(0, 2, 4000) << 15)
    ints = np.arange(1, 65, dtype=np.float32)
    ia, ib = np.meshgrid(ints, np.arange(-8, 9, dtype=np.float32))
    exact_a = ia.ravel().astype(BF16).view(np.uint16)
    exact_b = ib.ravel().astype(BF16).view(np.uint16)
    edge_a = np.full(64, 0x4000, np.uint16)                   # 2 ** (±126.., ±128..)
    edge_b = (np.float32([120, 125, 126, 127, 128, 129, -125, -126, -127, -133, -134, -140]
                         * 6)[:64]).astype(BF16).view(np.uint16)
    # negative bases: integer exponents (odd and even, small, 255..258 and beyond) give the
    # vector lanes |x| ** y with the sign of an odd y; others NaN through powf
    neg_a = (rng.integers(0x3C00, 0x4300, 8000) | 0x8000).astype(np.uint16)
    neg_a[:64] = [0xFF80, 0x8000, 0xFF81, 0x8001] * 16               # -inf, -0, NaN, subnormal
    int_b = np.float32(rng.choice([-9, -3, -2, -1, 0, 1, 2, 3, 5, 8, 9, 17, 255, 256, 257, 258,
                                   1e10, 0.5, -1.5, 2.5], 8000)).astype(BF16).view(np.uint16)
    a = np.concatenate([a, exact_a, (exact_a | 0x8000).astype(np.uint16), edge_a, neg_a]).view(BF16)
    b = np.concatenate([b, exact_b, exact_b, edge_b, int_b]).view(BF16)
    with np.errstate(all="ignore"):
        want = scalar_loop(np.power, a, b, out_dtype=BF16)
        for m in LENGTHS + [a.size]:              # bits, NaN payloads included
            assert np.array_equal(bits(np.power(a[:m], b[:m])), bits(want[:m])), m
        for which in (0, 1):                  # in place: the output is one of the inputs
            ops = [a.copy(), b.copy()]
            np.power(*ops, out=ops[which])
            assert np.array_equal(bits(ops[which]), bits(want)), which
        for e in np.float32([1.5, -2.5, 3.0, 0.25, 7.0, 1e-3]).astype(BF16):
            assert np.array_equal(bits(np.power(a, e)),
                                  bits(scalar_loop(np.power, a, e, out_dtype=BF16))), f"x ** {e}"
            assert np.array_equal(bits(np.power(e, b)),
                                  bits(scalar_loop(np.power, e, b, out_dtype=BF16))), f"{e} ** x"
    assert float(np.power(np.full(16, 17.0, BF16), np.full(16, 2.0, BF16))[3]) == 288.0
    assert_block_warnings_match(np.power, [
        (0x4000, 0x4300), (0x4000, 0xC300), (0x8000, 0xBF80), (0xBF80, 0x3F00),
        (0x7F81, 0x3F80), (0x3F80, 0x7F81), (0x0001, 0x4000), (0x7F80, 0xBF80)], lane=9)


@pytest.mark.parametrize("name", ["add", "multiply"])
def test_rounding_overflow_flag_next_to_a_nan_or_inf(name):
    """A finite float32 result that rounds to the bfloat16 infinity raises "overflow" even when
    its neighbour (the other half of its even/odd lane pair, whose magnitudes the avx512 tier
    combines with vrangeps before the flag add) is a NaN or an infinity: at every position of
    a 32-lane block and of its tails, in place too."""
    # 0x7f7f + 2^119 and 1.4140625 2^63 * 1.4140625 2^64 are finite in float32, inf in bfloat16
    av, bv = (0x7F7F, 0x7B00) if name == "add" else (0x5F35, 0x5FB5)
    f = getattr(np, name)
    assert warning_kinds(lambda x: f(x, np.array([bv], np.uint16).view(BF16)),
                         np.array([av], np.uint16).view(BF16)) == ["overflow"]
    for n in (2, 3, 17, 33, 64, 65):
        for p in range(n):
            for q in {p ^ 1, p - 1, p + 1} & set(range(n)) - {p}:
                for special in (0x7FC0, 0xFF80, 0x7F80):
                    a = np.full(n, 1.0, BF16)
                    b = np.full(n, 1.0, BF16)
                    a.view(np.uint16)[p], b.view(np.uint16)[p] = av, bv
                    a.view(np.uint16)[q] = special
                    assert warning_kinds(lambda x: f(x, b), a) == ["overflow"], (n, p, q, special)
                    x = a.copy()
                    assert warning_kinds(lambda y: f(y, b, out=y), x) == ["overflow"], (n, p, q)
