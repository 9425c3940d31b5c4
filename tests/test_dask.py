"""bfloat16 on dask.array: float32 partials across blocks, rounded once; run on a LocalCluster
with two worker processes, checked against float64 references."""
import numpy as np
import pytest

from bfloat16_dtype import bfloat16

from conftest import exact_f32, reference_round

da = pytest.importorskip("dask.array", reason="dask not installed (pip install 'dask[array]')")
bfd = pytest.importorskip("bfloat16_dtype.dask", reason="dask not installed")

ALL_BITS = np.arange(65536, dtype=np.uint32).astype(np.uint16)


def round_once(x64: np.ndarray) -> np.ndarray:
    """float64 -> bfloat16 bits, rounding once (the float64 values here are exact in float32)."""
    x32 = np.asarray(x64, np.float32)
    assert np.array_equal(x32.astype(np.float64), x64)
    return reference_round(x32)


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed", reason="distributed not installed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, memory_limit="1GiB")
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def test_workers_round_trip_every_bit_pattern(client):
    x = da.from_array(ALL_BITS.view(bfloat16), chunks=5000)
    # map_blocks runs on the workers; the blocks travel pickled both ways
    y = x.map_blocks(lambda b: b[::-1][::-1].copy(), dtype=bfloat16).compute()
    assert y.dtype == np.dtype(bfloat16)
    np.testing.assert_array_equal(y.view(np.uint16), ALL_BITS)
    assert client.submit(lambda b: b.dtype.name, ALL_BITS[:4].view(bfloat16)).result() == "bfloat16"


def test_sum_rounds_once_where_per_chunk_rounding_does_not(client):
    # each chunk of 257 ones sums to 257, which bfloat16 rounds to 256
    x = da.ones(12 * 257, dtype=bfloat16, chunks=257)
    got = bfd.sum(x).compute()
    assert got.dtype == np.dtype(bfloat16)
    assert np.asarray(got).view(np.uint16) == round_once(np.float64(12 * 257))  # 3084 -> 3088
    assert float(bfd.sum(x, out_dtype=np.float32).compute()) == 3084.0


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
def test_sum_and_mean_against_float64(client, axis):
    rng = np.random.default_rng(3)
    bits = reference_round(rng.uniform(0, 4, (300, 230)).astype(np.float32))
    xs = bits.view(bfloat16)
    x = da.from_array(xs, chunks=(70, 60))
    ref = exact_f32(bits).astype(np.float64)
    s = bfd.sum(x, axis=axis).compute()
    m = bfd.mean(x, axis=axis, keepdims=True).compute()
    s64 = ref.sum(axis=axis)
    m64 = ref.mean(axis=axis, keepdims=True)
    assert np.asarray(s).dtype == np.dtype(bfloat16) and np.shape(m) == np.shape(m64)
    # float32 partials: at most one bfloat16 step from float64 rounded once
    for got, want in ((np.asarray(s, dtype=np.float64), s64), (np.asarray(m, dtype=np.float64), m64)):
        step = 2.0 ** (np.floor(np.log2(np.abs(want))) - 7)
        assert np.all(np.abs(got - want) <= step), np.max(np.abs(got - want) / step)
    s32 = bfd.sum(x, axis=axis, out_dtype=np.float32).compute()
    np.testing.assert_allclose(s32, s64, rtol=1e-5)


@pytest.mark.parametrize("axis, keepdims", [(0, False), (None, False), ((0, 1), True), (1, False)])
def test_mean_with_unknown_chunk_sizes(axis, keepdims):
    """Rows picked by a dask boolean mask have unknown sizes (nan in the shape): the count comes
    from the data, as dask's own mean does (it was nan, so every mean was NaN). An empty
    selection gives NaN."""
    rng = np.random.default_rng(11)
    bits = reference_round(rng.uniform(0, 4, (40, 6)).astype(np.float32))
    keep = rng.random(40) < 0.6
    x = da.from_array(bits.view(bfloat16), chunks=(7, 6))
    y = x[da.from_array(keep, chunks=7)]
    assert np.isnan(y.shape[0])
    got = bfd.mean(y, axis=axis, keepdims=keepdims).compute()
    want = round_once(exact_f32(bits[keep]).astype(np.float64).mean(axis=axis, keepdims=keepdims)
                      .astype(np.float32).astype(np.float64))
    assert np.shape(got) == np.shape(want)
    # a NumPy scalar when 0-d, as with known chunk sizes and dask's own mean (it was a 0-d array)
    own = y.astype(np.float32).mean(axis=axis, keepdims=keepdims).compute()
    assert type(bfd.mean(y, axis=axis, keepdims=keepdims, out_dtype=np.float32).compute()) \
        is type(own)
    assert isinstance(got, np.ndarray) == isinstance(own, np.ndarray)
    # float32 sum and division: at most one bfloat16 step from the float64 mean
    diff = np.abs(np.asarray(got, np.float64) - exact_f32(want).astype(np.float64))
    assert np.all(diff <= 2.0 ** (np.floor(np.log2(exact_f32(want).astype(np.float64))) - 7))
    with np.errstate(invalid="ignore", divide="ignore"):
        none = bfd.mean(x[da.from_array(np.zeros(40, bool), chunks=7)], axis=0).compute()
    assert np.isnan(np.asarray(none, np.float32)).all()


@pytest.fixture(params=["panels", "partial products"])
def matmul_path(request, monkeypatch):
    """bfd.matmul's two paths: one task per output block over all of k (the default for panels
    up to bfd._PANEL_BYTES), and float32 partial products added across k blocks (forced here
    by a panel limit of zero)."""
    if request.param == "partial products":
        monkeypatch.setattr(bfd, "_PANEL_BYTES", 0)
    return request.param


@pytest.mark.parametrize("chunks_a,chunks_b", [((50, 257), (300, 40)), ((96, 1000), (1000, 80)),
                                               ((32, 33), (33, 40)), ((96, 400), (250, 80))])
def test_matmul_panels_are_the_single_machine_product(client, chunks_a, chunks_b):
    """The panel path gives bfloat16_dtype.matmul's bits on the whole arrays (bfloat16 and
    float32 results) however k is chunked, where every output block is large enough for the
    GEMM path (its sums run in increasing k whatever the shape; a block of a few columns takes
    the GEMV, whose lane sums may differ in the last float32 bit)."""
    import bfloat16_dtype as bd
    rng = np.random.default_rng(9)
    A = rng.standard_normal((96, 1000)).astype(np.float32).astype(bfloat16)
    B = rng.standard_normal((1000, 80)).astype(np.float32).astype(bfloat16)
    a, b = da.from_array(A, chunks=chunks_a), da.from_array(B, chunks=chunks_b)
    got = bfd.matmul(a, b).compute()
    assert np.array_equal(got.view(np.uint16), bd.matmul(A, B).view(np.uint16))
    got32 = bfd.matmul(a, b, out_dtype=np.float32).compute()
    assert got32.dtype == np.float32
    assert np.array_equal(got32.view(np.uint32), bd.matmul(A, B, out_dtype=np.float32).view(np.uint32))


def test_matmul_against_float64(client, matmul_path):
    rng = np.random.default_rng(4)
    abits = reference_round(rng.uniform(0, 1, (96, 1000)).astype(np.float32))
    bbits = reference_round(rng.uniform(0, 1, (1000, 80)).astype(np.float32))
    a = da.from_array(abits.view(bfloat16), chunks=(50, 257))
    b = da.from_array(bbits.view(bfloat16), chunks=(300, 40))     # rechunked along k to match a
    c = bfd.matmul(a, b)
    assert c.dtype == np.dtype(bfloat16) and c.shape == (96, 80)
    got = c.compute()
    ref = exact_f32(abits).astype(np.float64) @ exact_f32(bbits).astype(np.float64)
    step = 2.0 ** (np.floor(np.log2(ref)) - 7)
    err = np.abs(got.astype(np.float64) - ref)
    assert np.all(err <= step / 2 + 1e-3 * step)      # float32 sums: correctly rounded or a hair off
    c32 = bfd.matmul(a, b, out_dtype=np.float32).compute()
    assert c32.dtype == np.float32
    np.testing.assert_allclose(c32, ref, rtol=1e-5)


def test_matmul_rounds_once_across_k_blocks(client, matmul_path):
    a = da.ones((4, 12 * 257), dtype=bfloat16, chunks=(4, 257))
    got = bfd.matmul(a, a.T).compute()
    np.testing.assert_array_equal(got.view(np.uint16), np.full((4, 4), round_once(np.float64(3084))))
    split = bfd.matmul(a, a.T, split_every=3).compute()     # a tree of partial products
    np.testing.assert_array_equal(split.view(np.uint16), got.view(np.uint16))


def test_argument_errors():
    x = da.ones((3, 4), dtype=bfloat16, chunks=2)
    with pytest.raises(TypeError, match="bfloat16"):
        bfd.sum(da.ones(3, dtype=np.float32))
    with pytest.raises(ValueError, match="do not align"):
        bfd.matmul(x, x)
    with pytest.raises(ValueError, match="2-D"):
        bfd.matmul(da.ones(3, dtype=bfloat16), x)
    with pytest.raises(TypeError, match="out_dtype"):
        bfd.sum(x, out_dtype=np.float64)
    with pytest.raises(np.exceptions.AxisError):
        bfd.mean(x, axis=2)
    for bad in ("0", True, 1.0, (0, "1"), b"\x01", np.array(1.0)):   # as NumPy's reductions
        with pytest.raises(TypeError, match="axis must be"):
            bfd.sum(x, axis=bad)
    assert np.isnan(float(bfd.mean(da.ones((0, 3), dtype=bfloat16, chunks=2)).compute()))


def test_masked_arrays_are_refused():
    """A masked dask array (da.ma) is refused, as numerics.sum/mean refuse np.ma arrays: the
    chunks' masks were dropped and the masked values summed (55 for 15)."""
    x = da.from_array(np.arange(1, 11, dtype=np.float32).astype(bfloat16), chunks=4)
    masked = da.ma.masked_greater(x, 5)
    for call in (bfd.sum, bfd.mean, lambda m: bfd.matmul(m[None, :], m[:, None])):
        with pytest.raises(TypeError, match="masked dask array"):
            call(masked)
    assert float(masked.sum().compute()) == 15.0


def test_float32_results_have_their_own_dimensions():
    """out_dtype=np.float32 sums carry metadata of the result's dimensions (they had the
    input's, and da.stack of two such sums raised IndexError)."""
    x = da.ones((4, 6), dtype=bfloat16, chunks=(3, 4))
    for axis, keepdims in ((None, False), (0, False), ((0, 1), True), (1, True)):
        for f in (bfd.sum, bfd.mean):
            s = f(x, axis=axis, keepdims=keepdims, out_dtype=np.float32)
            assert s._meta.ndim == s.ndim and s.dtype == np.float32
            stacked = da.stack([s, s]).compute()
            assert stacked.shape == (2,) + s.shape and stacked.dtype == np.float32


def test_matmul_of_unknown_k():
    """Operands picked by one boolean mask have an unknown k (nan): the product runs as dask's
    own does (it was refused: "do not align (k=nan vs nan)"), float32 sums rounded once."""
    bits = reference_round(np.arange(24, dtype=np.float32).reshape(6, 4))
    x = da.from_array(bits.view(bfloat16), chunks=(4, 3))
    picked = x[x[:, 0].astype(np.float32) > 5]
    assert np.isnan(picked.shape[0])
    rows = exact_f32(bits)[exact_f32(bits)[:, 0] > 5].astype(np.float64)
    for split_every in (None, 2):
        got = bfd.matmul(picked.T, picked, split_every=split_every).compute()
        assert np.array_equal(got.view(np.uint16), round_once(rows.T @ rows))


def test_npy_stack_chunks_come_back_as_v2_and_view_back(tmp_path):
    """da.to_npy_stack saves chunks with np.save (|V2 for this dtype, README "Files"):
    da.from_npy_stack's chunks are |V2 under a bfloat16 dtype; a view per chunk restores them."""
    bits = np.arange(0x3F00, 0x3F0A, dtype=np.uint16)
    da.to_npy_stack(str(tmp_path / "s"), da.from_array(bits.view(bfloat16), chunks=4))
    back = da.from_npy_stack(str(tmp_path / "s"))
    assert back.dtype == np.dtype(bfloat16) and back.compute().dtype == np.dtype("V2")
    fixed = back.map_blocks(lambda b: b.view(bfloat16), dtype=bfloat16).compute()
    assert fixed.dtype == np.dtype(bfloat16) and fixed.view(np.uint16).tolist() == bits.tolist()
    assert (tmp_path / "s" / "0.npy").exists()


def test_axis_takes_what_has_index():
    """A 0-d integer array or np.int64 is an axis, as for np.sum (a 0-d array was refused)."""
    bits = reference_round(np.arange(12, dtype=np.float32).reshape(3, 4))
    x = da.from_array(bits.view(bfloat16), chunks=2)
    ref = exact_f32(bits).astype(np.float64)
    for axis in (np.array(1), np.int64(-1), (np.array(0), np.int32(1))):
        got = bfd.sum(x, axis=axis).compute()
        np.testing.assert_array_equal(np.asarray(got, np.float64), ref.sum(axis=axis))
        got = bfd.mean(x, axis=axis, out_dtype=np.float32).compute()
        np.testing.assert_allclose(got, ref.mean(axis=axis), rtol=1e-7)


def test_ml_dtypes_input(client):
    """ml_dtypes' bfloat16 dask arrays are read as ours (the same bits; they were refused as
    "got dtype(bfloat16)"), on the workers too, and out_dtype=ml_dtypes.bfloat16 gives such an
    array, as linalg.matmul does; other dtypes are refused."""
    names = ("bfloat16", np.dtype(bfloat16).char)
    before = {k: np.sctypeDict.get(k) for k in names}   # importing ml_dtypes takes the name
    try:
        ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes not installed")
        bits = reference_round(np.random.default_rng(8).uniform(0, 4, (60, 50)).astype(np.float32))
        x = da.from_array(bits.view(ml_dtypes.bfloat16), chunks=(25, 20))
        ref = exact_f32(bits).astype(np.float64)
        got = bfd.sum(x, axis=0).compute()
        assert got.dtype == np.dtype(bfloat16)
        np.testing.assert_array_equal(got.view(np.uint16), round_once(ref.sum(axis=0)))
        np.testing.assert_allclose(bfd.mean(x, out_dtype=np.float32).compute(), ref.mean(), rtol=1e-6)
        prod = bfd.matmul(x, x.T, out_dtype=np.float32).compute()
        np.testing.assert_allclose(prod, ref @ ref.T, rtol=1e-6)
        for fn in (bfd.sum, bfd.mean):
            for axis in (0, None, (0, 1)):     # 0-d results too (dask's .view refuses them)
                ml = fn(x, axis=axis, out_dtype=ml_dtypes.bfloat16)
                assert ml.dtype == np.dtype(ml_dtypes.bfloat16)
                got = ml.compute()
                assert got.dtype == np.dtype(ml_dtypes.bfloat16)
                want = getattr(ref, fn.__name__)(axis=axis)
                np.testing.assert_allclose(np.asarray(got).astype(np.float64), want, rtol=2.0**-8)
        assert bfd.matmul(x, x.T, out_dtype=ml_dtypes.bfloat16).compute().dtype == \
            np.dtype(ml_dtypes.bfloat16)
        with pytest.raises(TypeError, match="out_dtype must be bfloat16 or float32, got "
                                            "float8_e5m2"):
            bfd.sum(x, out_dtype=ml_dtypes.float8_e5m2)
    finally:
        np.sctypeDict.update(before)


def test_dask_own_paths_round_per_block():
    """The motivation, kept honest: dask's own bfloat16 matmul and sum round each block."""
    a = da.ones((4, 12 * 257), dtype=bfloat16, chunks=(4, 257))
    assert float((a @ a.T)[0, 0].compute()) == 3072.0
    assert float(a[0].sum().compute()) == 3072.0


@pytest.mark.parametrize("first", ["import dask.array", "import bfloat16_dtype"])
def test_dask_keys_tell_the_two_bfloat16s_apart(first):
    # dask tokenizes a dtype by dtype.str, '<V2' for both bfloat16s: da.ones of each had one key,
    # so a graph holding both computed ml_dtypes' array in place of ours
    import subprocess
    import sys
    import textwrap

    from conftest import TESTS_DIR

    pytest.importorskip("ml_dtypes")
    code = textwrap.dedent(f"""
        {first}
        import numpy as np, dask, dask.array as da, ml_dtypes
        from dask.base import tokenize
        from bfloat16_dtype import bfloat16
        ours, theirs = np.dtype(bfloat16), np.dtype(ml_dtypes.bfloat16)
        assert tokenize(ours) != tokenize(theirs)
        assert tokenize(ours) != tokenize(ours.newbyteorder())
        assert tokenize(ours) == tokenize(np.dtype(bfloat16))      # still deterministic
        a = da.ones(4, dtype=bfloat16, chunks=2); b = da.ones(4, dtype=theirs, chunks=2)
        assert a.name != b.name
        f = da.arange(4, dtype=np.float32, chunks=2)
        assert f.astype(bfloat16).name != f.astype(theirs).name
        with dask.config.set(scheduler="synchronous"):
            s = (a + b).compute(); c = da.concatenate([a, b]).compute()
            ab = da.stack([f.astype(bfloat16), f.astype(theirs)]).compute()
        assert s.dtype == ours and c.dtype == ours and ab.dtype == ours, (s.dtype, c.dtype, ab.dtype)
    """)
    res = subprocess.run([sys.executable, "-c", code], cwd=TESTS_DIR, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
