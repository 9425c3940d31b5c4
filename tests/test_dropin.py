"""bfloat16 as a drop-in for float32: numpy functions on bfloat16 arrays against the same
function on the float32 widening (exact), compared with bfloat16 tolerance."""
import numpy as np
import pytest
from numpy.lib import NumpyVersion

from bfloat16_dtype import bfloat16

BF16 = np.dtype(bfloat16)
EPS = 2.0**-7

rng = np.random.default_rng(11)
X = (rng.standard_normal(257).astype(np.float32) * 4).astype(bfloat16)
X[[5, 40]] = np.nan
XF = X.astype(np.float32)
CLEAN = np.nan_to_num(X)
CF = CLEAN.astype(np.float32)
M = (rng.standard_normal((17, 9)).astype(np.float32)).astype(bfloat16)
MF = M.astype(np.float32)


def close(got, want, rtol=2 * EPS, atol=2 * EPS, dtype_bf16=True):
    got = np.asarray(got)
    if dtype_bf16:
        assert got.dtype == BF16, got.dtype
    np.testing.assert_allclose(got.astype(np.float64), np.asarray(want, np.float64),
                               rtol=rtol, atol=atol, equal_nan=True)


def same(got, want):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("kind", ["quicksort", "mergesort", "heapsort", "stable"])
def test_sort_argsort(kind):
    s = np.sort(X, kind=kind)
    assert s.dtype == BF16
    same(s.astype(np.float32), np.sort(XF, kind=kind))
    assert np.isnan(s[-2:].astype(np.float32)).all()
    idx = np.argsort(X, kind=kind)
    same(X[idx].astype(np.float32), np.sort(XF))
    if kind in ("stable", "mergesort"):
        same(idx, np.argsort(XF, kind="stable"))
    m = np.sort(M, axis=0, kind=kind)
    same(m.astype(np.float32), np.sort(MF, axis=0))


def test_partition_searchsorted_unique():
    k = 100
    p = np.partition(CLEAN, k)
    assert p.dtype == BF16 and float(p[k]) == np.sort(CF)[k]
    assert (p[:k].astype(np.float32) <= float(p[k])).all()
    ap = np.argpartition(CLEAN, k)
    assert float(CLEAN[ap[k]]) == np.sort(CF)[k]
    s = np.sort(CLEAN)
    q = np.array([-1.0, 0.0, 0.5, 3.0], BF16)
    for side in ("left", "right"):
        same(np.searchsorted(s, q, side=side), np.searchsorted(s.astype(np.float32),
                                                               q.astype(np.float32), side=side))
    u, c = np.unique(np.round(CLEAN), return_counts=True)
    uf, cf = np.unique(np.round(CF).astype(bfloat16).astype(np.float32), return_counts=True)
    same(u.astype(np.float32), uf)
    same(c, cf)


def test_arg_extrema_and_extrema():
    assert np.argmax(X) == 5 and np.argmin(X) == 5  # first NaN wins
    assert np.nanargmax(X) == np.nanargmax(XF) and np.nanargmin(X) == np.nanargmin(XF)
    assert np.argmax(CLEAN) == np.argmax(CF) and np.argmin(CLEAN) == np.argmin(CF)
    same(np.argmax(M, axis=0), np.argmax(MF, axis=0))
    same(np.argmin(M, axis=1), np.argmin(MF, axis=1))
    assert np.isnan(float(np.max(X))) and np.isnan(float(np.min(X)))
    close(np.max(CLEAN), CF.max(), 0, 0)
    close(np.min(M, axis=0), MF.min(axis=0), 0, 0)
    close(np.ptp(CLEAN), np.ptp(CF))
    close(np.nanmax(X), np.nanmax(XF), 0, 0)


def test_the_dtype_class_makes_the_dtype():
    """type(np.dtype(bfloat16))() gives the dtype, as np.dtypes.Float16DType() gives float16's
    (NumPy before 2.5 raised a SystemError for it), with float16's TypeError for arguments."""
    cls = type(np.dtype(bfloat16))
    assert cls() == np.dtype(bfloat16) and cls() is np.dtype(bfloat16)
    for args, kwargs in (((">",), {}), ((), {"a": 1})):
        with pytest.raises(TypeError):
            np.dtypes.Float16DType(*args, **kwargs)
        with pytest.raises(TypeError):
            cls(*args, **kwargs)


def test_nonzero_count_nonzero_fill_arange_linspace():
    z = np.array([0, -0.0, 1, np.nan, 2, 0], BF16)
    same(np.nonzero(z)[0], [2, 3, 4])
    assert np.count_nonzero(z) == 3
    a = np.empty(5, BF16)
    a.fill(2.5)
    same(a.astype(np.float32), np.full(5, 2.5))
    close(np.arange(0, 10, 0.5, dtype=bfloat16), np.arange(0, 10, 0.5), 0, 0)
    close(np.linspace(0, 1, 11, dtype=bfloat16), np.linspace(0, 1, 11))
    close(np.full((2, 2), 3, bfloat16), np.full((2, 2), 3))


def test_indexing_and_selection():
    idx = np.array([3, 0, 7])
    close(np.take(CLEAN, idx), CF[idx], 0, 0)
    y = CLEAN.copy()
    np.put(y, idx, [1, 2, 3])
    close(y[idx], [1, 2, 3], 0, 0)
    close(np.where(CLEAN > 0, CLEAN, bfloat16(0)), np.where(CF > 0, CF, 0), 0, 0)
    close(np.select([CLEAN < 0, CLEAN > 1], [CLEAN, CLEAN * bfloat16(2)], default=bfloat16(0)),
          np.select([CF < 0, CF > 1], [CF, CF * 2], default=0))
    choice = np.array([0, 1, 0])
    close(np.choose(choice, [CLEAN[:3], CLEAN[3:6]]), np.choose(choice, [CF[:3], CF[3:6]]), 0, 0)
    close(np.concatenate([CLEAN, CLEAN]), np.concatenate([CF, CF]), 0, 0)
    close(np.stack([M, M]), np.stack([MF, MF]), 0, 0)
    close(np.tile(M, 2), np.tile(MF, 2), 0, 0)
    close(np.repeat(CLEAN, 2), np.repeat(CF, 2), 0, 0)
    close(np.flip(M), np.flip(MF), 0, 0)
    close(np.roll(CLEAN, 3), np.roll(CF, 3), 0, 0)
    gx, gy = np.meshgrid(CLEAN[:3], CLEAN[:4])
    close(gx, np.meshgrid(CF[:3], CF[:4])[0], 0, 0)


def test_comparisons_of_arrays():
    assert np.allclose(CLEAN, CF)
    same(np.isclose(X, XF, equal_nan=True), np.ones(X.shape, bool))
    assert np.array_equal(X, X, equal_nan=True)
    assert np.array_equal(CLEAN, CLEAN.copy())
    np.testing.assert_allclose(CLEAN, CF, rtol=0)
    np.testing.assert_array_equal(CLEAN, CLEAN.copy())


def test_histogram_bincount_digitize_interp():
    h, edges = np.histogram(CLEAN, bins=10)
    # like float16, the edges take the data's dtype (np.result_type); the counts are those
    # of the float32 data against the same edges
    assert edges.dtype == BF16
    assert np.histogram(CF.astype(np.float16), bins=10)[1].dtype == np.float16
    same(h, np.histogram(CF, bins=edges.astype(np.float32))[0])
    w = np.abs(CLEAN[:50])
    close(np.bincount(np.arange(50) % 7, weights=w),
          np.bincount(np.arange(50) % 7, weights=w.astype(np.float32)), dtype_bf16=False)
    bins = np.array([-2, 0, 2], BF16)
    same(np.digitize(CLEAN, bins), np.digitize(CF, bins.astype(np.float32)))
    xp = np.array([0, 1, 2], BF16)
    fp = np.array([0, 10, 5], BF16)
    close(np.interp(CLEAN, xp, fp), np.interp(CF, [0, 1, 2], [0, 10, 5]), dtype_bf16=False)


@pytest.mark.parametrize("fn", ["median", "percentile", "quantile"])
def test_order_statistics(fn):
    f = getattr(np, fn)
    args = {"median": (), "percentile": (30,), "quantile": (0.3,)}[fn]
    # NumPy < 2.4 keeps a Python-float q in the data's dtype only for kind 'f' (float16): for
    # bfloat16 (kind 'V', see README "Casting rules") percentile/quantile return float64 there
    bf16_result = fn == "median" or NumpyVersion(np.__version__) >= "2.4.0"
    close(f(CLEAN, *args), f(CF, *args), dtype_bf16=bf16_result)
    close(f(M, *args, axis=0), f(MF, *args, axis=0), dtype_bf16=bf16_result)
    if not bf16_result:
        assert f(CLEAN, *args).dtype == np.float64


def test_calculus_and_polynomials():
    close(np.gradient(CLEAN), np.gradient(CF), atol=8 * EPS, rtol=4 * EPS)
    close(np.diff(CLEAN), np.diff(CF))
    close(np.diff(M, axis=0), np.diff(MF, axis=0))
    close(np.convolve(CLEAN[:20], CLEAN[:5]), np.convolve(CF[:20], CF[:5]),
          atol=16 * EPS, rtol=4 * EPS)
    a, b = M[:4, :3], M[4:8, :3]
    close(np.cross(a, b), np.cross(a.astype(np.float32), b.astype(np.float32)), atol=8 * EPS)
    p = np.array([1, -2, 0.5], BF16)
    close(np.polyval(p, CLEAN[:30]), np.polyval(p.astype(np.float32), CF[:30]),
          atol=8 * EPS, rtol=4 * EPS)
    close(np.trapezoid(CLEAN), np.trapezoid(CF), atol=1, rtol=4 * EPS)


def test_misc_numerics():
    close(np.nan_to_num(X), np.nan_to_num(XF), 0, 0)
    close(np.linalg.norm(CLEAN), np.linalg.norm(CF))
    close(np.cumsum(CLEAN), np.cumsum(CF), atol=4 * EPS * np.abs(CF).sum())
    close(np.clip(CLEAN, -1, 1), np.clip(CF, -1, 1), 0, 0)
    close(np.around(CLEAN, 1), np.around(CF, 1), atol=0.1)


@pytest.mark.xfail(strict=True, raises=TypeError, reason=(
    "numpy's einsum (without optimize) only has sum-of-products kernels for builtin types: "
    "TypeError: invalid data type for einsum"))
@pytest.mark.parametrize("spec", ["ij->j", "ij,ij->i"])
def test_einsum(spec):
    ops = (M,) * spec.count(",") + (M,)
    close(np.einsum(spec, *ops), np.einsum(spec, *(o.astype(np.float32) for o in ops)))


def test_einsum_via_float32_works():
    close(np.einsum("ij,ij->i", M, M, dtype=np.float32, casting="unsafe"),
          np.einsum("ij,ij->i", MF, MF), dtype_bf16=False)


def test_einsum_single_operand_reductions_need_dtype():
    """optimize=True runs products through tensordot/matmul, but a single operand summed over an
    index goes to NumPy's C einsum, which has no bfloat16 kernel, with or without optimize;
    dtype=np.float32 (or np.sum/np.trace) works. Permutations and diagonals are views."""
    S = np.arange(9.0).reshape(3, 3).astype(bfloat16)
    for spec, want in (("ij->", 15.0 + 21.0), ("ii", 12.0), ("ij->j", [9.0, 12.0, 15.0])):
        with pytest.raises(TypeError, match="einsum"):
            np.einsum(spec, S, optimize=True)
        got = np.einsum(spec, S, dtype=np.float32, optimize=True)
        assert got.dtype == np.float32 and np.asarray(got).tolist() == want
    assert np.einsum("ii->i", S, optimize=True).tolist() == [0.0, 4.0, 8.0]
    assert np.einsum("ij->ji", S, optimize=True).dtype == BF16


@pytest.mark.parametrize("spec, shapes", [
    ("ij,jk->ik", [(1, 3), (3, 4)]), ("ij,jk->ik", [(2, 3), (3, 1)]),
    ("bij,bjk->bik", [(1, 2, 3), (1, 3, 4)]), ("ij,ij->i", [(1, 4), (1, 4)]), ("i,i->", [(1,), (1,)]),
])
def test_einsum_products_with_a_size_one_index(spec, shapes):
    """NumPy >= 2.4's optimize=True first sums size-1 (and one-sided) indices out with its C
    einsum, which has no bfloat16 kernel, even with dtype=: a TypeError naming einsum, never a
    wrong value. The README's workaround, float32 operands, gives the float32 result."""
    ops = [np.arange(1, 1 + int(np.prod(s)), dtype=np.float32).reshape(s) for s in shapes]
    want = np.einsum(spec, *ops)
    for kw in ({}, {"dtype": np.float32}):
        try:
            got = np.einsum(spec, *(o.astype(bfloat16) for o in ops), optimize=True, **kw)
        except TypeError as exc:
            assert "einsum" in str(exc)
        else:  # NumPy before 2.4: tensordot, exact here
            assert np.asarray(got, np.float32).tolist() == want.tolist()
    got = np.einsum(spec, *(o.astype(bfloat16).astype(np.float32) for o in ops), optimize=True)
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize("spec, shapes", [
    ("i,j->ij", [(3,), (4,)]), ("ij,ij->ij", [(3, 4), (3, 4)]), ("ij,ij->i", [(3, 4), (3, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
])
def test_einsum_outer_elementwise_and_batched_products(spec, shapes):
    """optimize=True runs outer, elementwise and batched products on NumPy >= 2.4; NumPy 2.0
    hands those pairwise steps to its C einsum, which has no bfloat16 kernel: a TypeError
    naming einsum (README, "Accurate helpers"), never a wrong value."""
    ops = [np.arange(1, 1 + int(np.prod(s)), dtype=np.float32).reshape(s) / 8 for s in shapes]
    want = np.einsum(spec, *ops)
    try:
        got = np.einsum(spec, *(o.astype(bfloat16) for o in ops), optimize=True)
    except TypeError as exc:
        assert NumpyVersion(np.__version__) < "2.4.0" and "einsum" in str(exc)
    else:
        assert NumpyVersion(np.__version__) >= "2.1.0"
        ref = want.astype(bfloat16).astype(np.float32)   # exact products, one rounding
        assert np.asarray(got, np.float32).tolist() == ref.tolist()


# ---- the scalar type and dtype as drop-in replacements (float16 / ml_dtypes behaviour) ----

@pytest.mark.parametrize("value", [np.array([1.0, 2.5]), [1.0, 2.5], (1, 2.5),
                                   np.array([[1, 2], [3, 4]], np.int16)], ids=repr)
def test_scalar_type_called_on_array_gives_array(value):
    got = bfloat16(value)
    want = np.float16(value)
    assert isinstance(want, np.ndarray)  # the float16 behaviour mirrored
    assert isinstance(got, np.ndarray) and got.dtype == BF16 and got.shape == want.shape
    same(got.astype(np.float32), np.asarray(value, np.float32))
    assert type(bfloat16(np.array(1.5))) is bfloat16  # a 0-d array still gives a scalar


def test_tolist_and_item_give_python_floats_indexing_gives_scalars():
    x = np.array([[1.5, 0.1], [-2.0, np.inf]], bfloat16)
    f16 = np.array([[1.5, 0.1]], np.float16)
    assert type(f16.tolist()[0][0]) is float and type(f16[0, 0]) is np.float16  # reference
    assert x.tolist() == [[1.5, 0.10009765625], [-2.0, float("inf")]]
    assert all(type(v) is float for row in x.tolist() for v in row)
    assert type(x.item(1)) is float and x.item(1) == 0.10009765625
    assert type(x[0, 0]) is bfloat16 and type(x[1][0]) is bfloat16
    assert all(type(v) is bfloat16 for v in x[0])
    assert type(x.sum()) is bfloat16 and type(x.max()) is bfloat16
    swapped = x.astype(x.dtype.newbyteorder())
    assert swapped.tolist() == x.tolist() and type(swapped[0, 1]) is bfloat16
    assert float(swapped[0, 1]) == 0.10009765625
    import json
    assert json.loads(json.dumps(x[0].tolist())) == [1.5, 0.10009765625]
    obj = x.astype(object)  # object arrays keep the scalar type (as before)
    assert all(type(v) is bfloat16 for v in obj.ravel())


def test_ints_beyond_float_range_raise_overflow_like_float16():
    for big in (10**400, -(10**400), 2**1024):
        for t in (np.float16, np.float32, bfloat16):
            with pytest.raises(OverflowError):
                t(big)
        with pytest.raises(OverflowError):
            np.array([big], BF16)
    assert float(bfloat16(2**200)) == float("inf")  # in float's range: inf, as float16 does


def test_scalar_type_has_dtype_attribute():
    assert bfloat16.dtype == BF16 and bfloat16.dtype is np.dtype(bfloat16)
    assert bfloat16(1.5).dtype == BF16
    assert np.zeros(2, bfloat16.dtype).dtype == BF16


# ---- behaviour checked against float16's on the same values ----

@pytest.mark.parametrize("other", ["a", b"x", np.datetime64(1, "s"), np.timedelta64(2, "s"),
                                   np.array(["a", "b", "c"])], ids=repr)
def test_compare_with_unrelated_types_like_float16(other):
    for t in (np.float16, bfloat16):
        a = np.array([1.5, 2.0, 0.0], t)
        assert (a == other).tolist() == [False] * 3 and (a != other).tolist() == [True] * 3
        assert (t(1.5) == other) is not True
        with pytest.raises(TypeError, match="did not contain a loop"):
            np.equal(a, other)
        with pytest.raises(TypeError):
            a < other
    assert bfloat16(1.5) != "a" and bfloat16(1.5) in ["a", 1.5]


@pytest.mark.parametrize("ufunc", [np.logical_and, np.logical_or, np.logical_xor])
def test_logical_reductions_like_float16(ufunc):
    v = [[1.5, 0.0, -2.0], [0.0, 0.0, 3.0]]
    for kw in ({}, {"axis": 1}, {"axis": None}, {"keepdims": True, "axis": 0}):
        want = ufunc.reduce(np.array(v, np.float16), **kw)
        got = ufunc.reduce(np.array(v, BF16), **kw)
        assert np.asarray(got).dtype == np.bool_ and np.array_equal(got, want)
    same(ufunc.accumulate(np.array(v, BF16), axis=1),
         ufunc.accumulate(np.array(v, np.float16), axis=1))


def test_vectorize_and_type_character_like_float16():
    assert np.dtype(BF16.char) == BF16
    x = np.array([1.5, -2.0, 0.25], BF16)
    got = np.vectorize(lambda v: v * 2)(x)
    want = np.vectorize(lambda v: v * 2)(x.astype(np.float16))
    assert want.dtype == np.float16 and got.dtype == BF16
    same(got.astype(np.float32), want.astype(np.float32))


def test_testing_asserts_with_nan():
    """np.testing's array comparisons match NaN positions only for dtypes they recognise as
    numbers: NumPy 2.4.6 and later ask the DType (`_is_numeric`, true for bfloat16), older ones
    (2.0.2 measured) test the type character against the builtin ones, so for bfloat16 there a
    NaN counts as a mismatch (README "Differences from float16 that remain")."""
    import inspect
    x = np.array([1.5, np.nan], BF16)
    np.testing.assert_allclose(x, x)  # compares its own way: fine on every version
    np.testing.assert_array_equal(x.astype(np.float32), x.astype(np.float32))  # the workaround
    if "_is_numeric" in inspect.getsource(np.testing._private.utils.assert_array_compare):
        np.testing.assert_array_equal(x, x)
        np.testing.assert_equal(x, x)
    else:
        with pytest.raises(AssertionError, match="Mismatched"):
            np.testing.assert_array_equal(x, x)
        with pytest.raises(IndexError):   # an inf: README "Differences from float16 that remain"
            np.testing.assert_array_almost_equal(np.array([1, np.inf, 2], BF16),
                                                 np.array([1, np.inf, 3], BF16))


ALL_BITS = np.arange(65536, dtype=np.uint32).astype(np.uint16)
ALL_F32 = (ALL_BITS.astype(np.uint32) << 16).view(np.float32)  # exact widening, integer ops


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_exhaustive_like_float32(side):
    """np.searchsorted (numpy's binary search through the dtype's compare function) of every
    bfloat16 value in the sorted array of all 65,536: float32's positions for the exact
    widenings (-0 equals +0, NaNs equal to each other and last)."""
    order = np.argsort(ALL_F32, kind="stable")
    sorted_bf16 = ALL_BITS[order].view(BF16)
    want = np.searchsorted(ALL_F32[order], ALL_F32, side=side)
    assert np.array_equal(np.searchsorted(sorted_bf16, ALL_BITS.view(BF16), side=side), want)


@pytest.mark.parametrize("nbytes_swapped", [False, True])
def test_count_nonzero_and_nonzero_exhaustive(nbytes_swapped):
    """np.count_nonzero and np.nonzero (the dtype's nonzero function, element by element) of
    all 65,536 patterns, in native and swapped byte order: float32's answer for the exact
    widenings (only +-0 are zero; NaNs are not)."""
    x = ALL_BITS.view(BF16)
    if nbytes_swapped:
        x = x.byteswap().view(BF16.newbyteorder())
        assert not x.dtype.isnative
    assert np.count_nonzero(x) == np.count_nonzero(ALL_F32) == 65534
    assert np.array_equal(np.nonzero(x)[0], np.nonzero(ALL_F32)[0])


def test_partition_and_median_exhaustive_like_float32():
    """np.partition (a sort through the dtype's compare function) of all 65,536 values in a
    shuffled order puts float32's kth value in place, smaller-or-equal ones before it and
    greater-or-equal ones after; np.median of the finite values is float32's."""
    shuffled = np.random.default_rng(3).permutation(ALL_BITS)
    f32 = (shuffled.astype(np.uint32) << 16).view(np.float32)
    for k in (0, 1, 100, 32767, 32768, 65000, 65535):
        got = np.partition(shuffled.view(BF16), k).view(np.uint16)
        got_f = (got.astype(np.uint32) << 16).view(np.float32)
        want = np.partition(f32, k)
        assert (np.isnan(got_f[k]) and np.isnan(want[k])) or got_f[k] == want[k], k
        with np.errstate(invalid="ignore"):
            assert not (got_f[:k] > got_f[k]).any() and not (got_f[k + 1:] < got_f[k]).any(), k
    finite = shuffled[np.isfinite(f32)]
    assert float(np.median(finite.view(BF16))) == float(
        np.float32(np.median((finite.astype(np.uint32) << 16).view(np.float32))))


@pytest.mark.parametrize("start, stop, step", [
    (0, 70000, 1), (0.1, 300, 0.013), (-5, 5, 2.0**-12), (1e-38, 1e-36, 3e-39),
    (3e38, 3.4e38, 1e35), (-3.3e38, 3.3e38, 2e36), (2.0**-133, 2.0**-125, 2.0**-133),
    (1.0, 1.0 + 2.0**-5, 2.0**-13), (7, -9000, -2.5)])
def test_arange_rounds_the_float64_progression_once(start, stop, step):
    """np.arange with dtype=bfloat16 (the dtype's fill function: two elements set by numpy,
    the rest continued from them): element i is v0 + i * (v1 - v0) in float64, rounded once,
    for every i, with ties, subnormals, lengths beyond one block and overflow to inf."""
    from test_ufuncs import f64_to_bf16_bits
    with np.errstate(all="ignore"):
        got = np.arange(start, stop, step, dtype=bfloat16).view(np.uint16)
    assert got.size == np.arange(start, stop, step).size
    v = (got[:2].astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    assert got[0] == f64_to_bf16_bits(np.float64(start))
    if got.size > 1:
        assert got[1] == f64_to_bf16_bits(np.float64(start) + step)
        i = np.arange(got.size, dtype=np.float64)
        assert np.array_equal(got[2:], f64_to_bf16_bits(v[0] + i * (v[1] - v[0]))[2:])


# ---- NumPy limits for a user dtype (README, "Differences from float16 that remain") --------
# Each test states what NumPy does today for bfloat16 next to float16, and the workaround the
# README gives; it fails when NumPy changes, so the README can be updated.

NUMPY = NumpyVersion(np.__version__)


def test_python_float_where_numpy_casts_safely():
    """np.choose, np.copyto(..., casting="safe") (and np.true_divide(x, 2.0, casting="safe"), which np.ma.median uses on an
    even count on NumPy >= 2.4) casts a Python float to the common type with the 'safe' rule;
    NumPy decides that for its builtin floats only."""
    idx = np.array([0, 1, 0])
    assert np.choose(idx, [np.array([1, 2, 3], np.float16), 9.5]).dtype == np.float16
    with pytest.raises(TypeError, match="Cannot cast scalar from dtype.'float64'."):
        np.choose(idx, [np.array([1, 2, 3], BF16), 9.5])
    got = np.choose(idx, [np.array([1, 2, 3], BF16), bfloat16(9.5)])  # the workaround
    assert got.dtype == BF16 and got.astype(np.float32).tolist() == [1, 9.5, 3]
    even = np.ma.masked_invalid(np.array([1, np.nan, 2.5, -0.5, 4], np.float32))
    assert float(np.ma.median(even.astype(np.float16))) == 1.75
    if NUMPY >= "2.4.0":
        with pytest.raises(TypeError, match="Cannot cast ufunc 'divide' input 1"):
            np.ma.median(even.astype(bfloat16))
    elif NUMPY < "2.1.0":
        assert float(np.ma.median(even.astype(bfloat16))) == 1.75
    assert float(np.ma.median(even.astype(np.float32)).astype(bfloat16)) == 1.75
    dst, half = np.zeros(2, BF16), np.zeros(2, np.float16)
    np.copyto(half, 1.5, casting="safe")
    with pytest.raises(TypeError, match="Cannot cast scalar from dtype"):
        np.copyto(dst, 1.5, casting="safe")
    np.copyto(dst, bfloat16(1.5), casting="safe")          # the workaround
    assert dst.tolist() == half.tolist() == [1.5, 1.5]


def test_descending_sort_numpy_2_5():
    """NumPy 2.5's descending=True needs a dtype's new sort ArrayMethods; bfloat16 (like
    ml_dtypes' types) has the legacy ascending ones. x[np.argsort(-x, stable=True)] is the
    stable descending order, NaNs last, as NumPy gives for float32."""
    x = np.array([2.0, np.nan, 1.0, -0.0, 0.0, np.nan, 2.0, -1.0], BF16)
    if NUMPY >= "2.5.0":
        with pytest.raises(TypeError, match="no current sort function"):
            np.sort(x, descending=True)
        want = np.argsort(x.astype(np.float32), stable=True, descending=True)
        same(np.argsort(-x, stable=True), want)
    same(x[np.argsort(-x, stable=True)][:6].astype(np.float32), [2, 2, 1, -0.0, 0, -1])


def test_timedelta_and_datetime_arrays():
    """timedelta64 * float16 runs NumPy's timedelta-by-float loop; its type resolver accepts
    NumPy's own types only, so with bfloat16 the call has no loop. Array casts between
    bfloat16 and datetime64/timedelta64 are unsafe ones, as float16's (the values:
    tests/test_casts.py::test_datetimes_to_bf16_give_their_count_like_float16)."""
    td = np.array([3, 4], "m8[s]")
    assert (td * np.array([1.5, 2], np.float16)).dtype == td.dtype
    x = np.array([1.5, 2], BF16)
    for call in (lambda: td * x, lambda: x * td, lambda: td / x, lambda: td // x,
                 lambda: x ** np.timedelta64(3, "s"), lambda: x ** td):
        with pytest.raises(TypeError):   # (x ** timedelta64 was a SystemError on NumPy 2.0)
            call()
    same(td * x.astype(np.float64), td * np.array([1.5, 2]))  # the workaround
    for to in ("M8[s]", "m8[s]"):
        assert np.can_cast(np.float16, to, "unsafe") and np.can_cast(bfloat16, to, "unsafe")
        assert x.astype(to).astype(np.int64).tolist() == [1, 2]
        assert np.array([7, 9], to).astype(bfloat16).tolist() == [7.0, 9.0]
    a = np.zeros(2, BF16)
    a[0] = np.timedelta64(3, "s")
    assert float(a[0]) == 3.0


def test_raw_bytes_views_and_dtype_queries():
    """astype('V2') and view('V2') give the raw bytes; np.isdtype asks for NumPy's own
    dtypes; assert_array_almost_equal_nulp reports a mismatch through np.common_type, which
    knows the builtin floats only, so it raises TypeError rather than AssertionError."""
    x = np.array([1.5, -2.0], BF16)
    assert x.astype("V2").tobytes() == x.view("V2").tobytes() == x.tobytes()
    assert np.isdtype(np.dtype(np.float16), "real floating")
    with pytest.raises(TypeError, match="dtype argument must be a NumPy dtype"):
        np.isdtype(BF16, "real floating")
    np.testing.assert_array_almost_equal_nulp(x, x)  # equal arrays pass
    with pytest.raises(TypeError, match="common type"):
        np.testing.assert_array_almost_equal_nulp(x, -x)
    np.polynomial.Polynomial(x.astype(np.float16))            # float16 works
    with pytest.raises(ValueError, match="no common type"):
        np.polynomial.Polynomial(x)


def test_numpy_functions_that_compute_in_the_arrays_dtype():
    """README, "Accurate helpers" and "Differences": np.var subtracts a mean rounded to
    bfloat16; arithmetic on x.astype(object) rounds each step (bfloat16 scalars); np.histogram
    builds its edges with np.linspace in bfloat16, where 160 bins of normal samples collide;
    a masked mean is float64 once a mask is set. References: float32, float16, float64."""
    x = np.array([300.0] * 1500 + [302.0] * 1500, BF16)
    assert float(np.var(x.astype(np.float32))) == 1.0 and float(np.var(x)) == 2.0
    from bfloat16_dtype import numerics
    assert float(numerics.var(x)) == 1.0
    offset = (np.random.default_rng(7).standard_normal(100_000) + 100).astype(BF16)
    f64 = offset.astype(np.float64)
    assert float(np.mean(offset)) == 100.5 and abs(f64.mean() - 99.999) < 1e-3
    assert float(np.var(offset)) == 1.265625 and float(np.std(offset)) == 1.125
    assert abs(f64.var() - 1.0161) < 1e-4 and abs(f64.std() - 1.0080) < 1e-4
    assert abs(float(np.var(offset, dtype=np.float32)) - f64.var()) < 1e-5
    assert abs(float(numerics.var(offset)) - f64.var()) <= 2.0**-8
    assert np.ones(1000, np.float16).astype(object).sum() == 1000
    assert float(np.ones(1000, BF16).astype(object).sum()) == 256.0
    r = np.random.default_rng(0).standard_normal(100_000).astype(BF16)
    far = (np.random.default_rng(0).standard_normal(1000) + 100).astype(BF16)
    for data, bins in ((r, 160), (far, 20)):   # far from zero, a few bins collide already
        try:
            _, edges = np.histogram(data, bins=bins)
        except ValueError as err:         # NumPy 2.4.6 and 2.5 check the edges
            assert "Too many bins" in str(err)
        else:                             # 2.0.2 returns them, some equal
            assert np.unique(edges).size < edges.size
        assert np.histogram(data.astype(np.float16), bins=bins)[0].sum() == data.size
        counts, _ = np.histogram(data.astype(np.float32), bins=bins)   # the workaround
        assert counts.sum() == data.size
    assert np.ma.array(np.ones(3, BF16)).mean().dtype == BF16
    assert np.ma.array(np.ones(3, BF16), mask=[0, 1, 0]).mean().dtype == np.float64


def test_masked_array_lists_hold_bfloat16_scalars():
    """np.ma builds tolist() and the printed text from x.astype(object), which holds bfloat16
    scalars (float16's holds Python floats): pass fill_value to tolist for plain floats."""
    m = np.ma.array([1.5, 2], mask=[0, 1], dtype=BF16)
    assert type(np.ma.array([1.5, 2], mask=[0, 1], dtype=np.float16).tolist()[0]) is float
    assert type(m.tolist()[0]) is bfloat16 and m.tolist()[1] is None
    assert str(m) == "[bfloat16(1.5) --]"
    assert [type(v) for v in m.tolist(fill_value=0)] == [float, float]  # the workaround


_MASKED_CHILD = """
import json, sys, warnings
import numpy as np
{first}
from bfloat16_dtype import bfloat16
warnings.simplefilter("ignore")          # float16's 1e20 fill overflows (to inf) with a warning
out = {{}}
for t in (np.float16, bfloat16):
    m = np.ma.masked_array(np.array([-np.inf, 5, -np.inf], t), mask=[0, 1, 0])
    n = np.ma.masked_array(np.array([np.inf, -5], t), mask=[0, 1])
    a = np.ma.masked_invalid(np.array([[1.5, np.nan], [3, 4]], t))
    z = np.ma.masked_array(np.array([[1.5, 2], [3, 4]], t), mask=[[0, 1], [1, 1]], fill_value=0)
    out[np.dtype(t).name] = [
        float(m.max()), int(m.argmax()), float(n.min()), int(n.argmin()),
        float(np.ma.masked_array(np.array([1, 9, 3], t), mask=[0, 1, 0]).ptp()),
        np.asarray(a.max(axis=0), np.float64).tolist(), np.asarray(a.min(axis=1), np.float64).tolist(),
        np.asarray(a.ptp(axis=0), np.float64).tolist(), z.max(axis=0).mask.tolist(),
        float(np.ma.default_fill_value(np.dtype(t))), float(a.fill_value), a.filled().dtype.name,
        np.ma.fix_invalid(np.array([1, np.nan], t)).mask.tolist(),
        np.ma.apply_along_axis(np.sum, 1, a).astype(np.float64).tolist(),
        float(np.ma.maximum_fill_value(np.dtype(t))), float(np.ma.minimum_fill_value(np.dtype(t)))]
print(json.dumps(out))
"""


@pytest.mark.parametrize("first", ["", "import numpy.ma"], ids=["ours-first", "numpy.ma-first"])
def test_masked_extrema_and_fill_values_like_float16(first):
    """numpy.ma's extremum fill values for bfloat16 are +-inf as for float16 (its table built from
    np.sctypeDict would hold finfo's +-max: a masked max of -inf values came out -3.39e38 with
    argmax on a masked element; with numpy.ma loaded first there was no entry), and its default
    fill value is float16's 1e20 rather than kind 'V''s b'???' (a.max(axis=0) raised)."""
    import json
    import subprocess
    import sys

    from conftest import TESTS_DIR
    res = subprocess.run([sys.executable, "-c", _MASKED_CHILD.format(first=first)], cwd=TESTS_DIR,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout)
    half, ours = got["float16"], got["bfloat16"]
    assert ours[:5] == [-np.inf, 0, np.inf, 0, 2.0]
    assert ours[:9] == half[:9]
    assert ours[9] == ours[10] == 1e20                 # float16's 1e20 (stored as inf there)
    assert half[9] == 1e20 and ours[11] == "bfloat16" and half[11] == "float16"
    assert ours[12:] == half[12:] == [[False, True], [1.5, 7.0], -np.inf, np.inf]


def test_masked_mean_and_var_accumulate_in_float32():
    """A masked bfloat16 array with a mask set: mean (float64, as for float32) is the float32
    sum over the count, not a sum rounded to bfloat16 first; var, std, anom and average build
    on it. Reference: the same statistics of the float64 values."""
    rng = np.random.default_rng(3)
    ones = np.ma.masked_invalid(np.ones(5000, bfloat16))
    assert ones.mean() == 1.0 and np.ma.average(ones) == 1.0
    y = rng.standard_normal((1500, 300)).astype(bfloat16)
    mask = rng.random(y.shape) < 0.1
    m, m64 = np.ma.masked_array(y, mask), np.ma.masked_array(y.astype(np.float64), mask)
    assert m.mean().dtype == np.float64
    assert abs(m.mean() - m64.mean()) <= 1e-6 * np.abs(m64).mean()
    assert abs(m.var() / m64.var() - 1) < 1e-5 and abs(m.std() / m64.std() - 1) < 1e-5
    np.testing.assert_allclose(m.var(axis=0), m64.var(axis=0), rtol=1e-5)
    np.testing.assert_allclose(m.mean(axis=1), m64.mean(axis=1), rtol=1e-5, atol=1e-7)
    c = np.ma.masked_array(np.full(4, 1.0078125, bfloat16), [0, 1, 0, 0])
    assert c.mean() == 1.0078125 and c.std() == 0.0 and (c.anom() == 0).all()
    # an explicit dtype is the caller's
    assert np.ma.masked_invalid(np.ones(4, bfloat16)).mean(dtype=bfloat16).dtype == np.float64


def test_masked_arrays_of_either_byte_order_fill_like_float16():
    """Byte-swapped bfloat16 masked arrays get float16's fill value too (not kind 'V''s b'???'):
    filled(), sort and median work as for '>f2'."""
    for t in (np.dtype(bfloat16).newbyteorder(), np.dtype(bfloat16)):
        x = np.ma.masked_array(np.array([3.0, 1.0, 2.0, 5.0]).astype(t), mask=[0, 1, 0, 0])
        h = np.ma.masked_array(np.array([3.0, 1.0, 2.0, 5.0]).astype(np.dtype(">f2")), mask=[0, 1, 0, 0])
        # float16's fill value 1e20, which float16 itself stores as inf
        assert x.filled().astype(np.float64).tolist() == [3.0, float(bfloat16(1e20)), 2.0, 5.0]
        assert h.filled().astype(np.float64).tolist() == [3.0, np.inf, 2.0, 5.0]
        assert np.ma.sort(x).compressed().astype(np.float64).tolist() == [2.0, 3.0, 5.0]
        assert float(np.ma.median(x)) == float(np.ma.median(h)) == 3.0  # (an even count: README)
        assert np.ma.default_fill_value(t) == np.ma.default_fill_value(np.dtype(np.float16))
        sd = np.dtype([("a", t), ("b", np.int32)])
        assert np.ma.default_fill_value(sd)["a"] == np.ma.default_fill_value(np.dtype(np.float16))


def test_masked_constant_stored_is_nan_with_numpys_warning():
    """np.ma.masked (a 0-d masked float64) stored into a bfloat16 array becomes NaN with NumPy's
    "converting a masked element to nan" warning, as for float16; so does a masked 0-d bfloat16."""
    for t in (np.float16, bfloat16):
        with pytest.warns(UserWarning, match="masked element to nan"):
            a = np.array([1.0, np.ma.masked], dtype=t)
        assert np.isnan(a.astype(np.float32)[1]) and a.astype(np.float32)[0] == 1.0
        b = np.zeros(2, t)
        with pytest.warns(UserWarning, match="masked element to nan"):
            b[1] = np.ma.masked_array(np.array(1.5, t), mask=True)
        assert np.isnan(b.astype(np.float32)[1])
    # unmasked 0-d arrays and subclasses still give their value
    assert float(np.array([np.ma.masked_array(np.array(2.5, bfloat16))], bfloat16)[0]) == 2.5
    assert float(np.array([np.array(2.5)], bfloat16)[0]) == 2.5


def test_structured_field_saves_as_v2_and_views_back():
    """np.save keeps a bfloat16 field's bits as 'V2' (never float16); viewing the loaded array
    with the original dtype restores it, compared field by field with the values saved."""
    import io
    sd = np.dtype([("a", bfloat16), ("b", np.int32)])
    x = np.array([(1.5, 2), (-0.1, 3), (np.nan, 4)], sd)
    assert sd.descr == [("a", "<V2"), ("b", "<i4")]
    buf = io.BytesIO()
    np.save(buf, x)
    buf.seek(0)
    y = np.load(buf)
    assert y.dtype["a"] == np.dtype("V2") and y.dtype.itemsize == sd.itemsize
    back = y.view(sd)
    same(back["a"].view(np.uint16), x["a"].view(np.uint16))
    same(back["b"], [2, 3, 4])


def test_unpickling_a_swapped_dtype_leaves_the_native_one_alone():
    """np.dtype(bfloat16, copy=True), which dtype pickles are rebuilt with, copies (as for
    float16), so unpickling a '>' dtype or array cannot swap the byte order of every bfloat16
    array in the process."""
    import pickle
    x = np.array([1.5, 2.0, -3.0], bfloat16)
    assert np.dtype(bfloat16, False, True) is not BF16
    swapped = BF16.newbyteorder(">")
    for obj in (swapped, x.astype(swapped), np.zeros(2, [("a", swapped), ("b", "<f4")]), x):
        back = pickle.loads(pickle.dumps(obj))
        assert BF16.byteorder == "=" and np.dtype(bfloat16).byteorder == "="
        assert x.astype(np.float32).tolist() == [1.5, 2.0, -3.0] and float(x.sum()) == 0.5
    assert pickle.loads(pickle.dumps(swapped)).byteorder == ">"
    back = pickle.loads(pickle.dumps(x.astype(swapped)))
    assert back.astype(np.float32).tolist() == [1.5, 2.0, -3.0]
