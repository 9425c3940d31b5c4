"""Libraries that decide by dtype kind read bfloat16's 'V' as raw bytes (as they do ml_dtypes'
bfloat16): what they do, and the float32 conversion at the boundary that works (README,
"Differences from float16 that remain"). Each library is skipped where it is not installed."""
import numpy as np
import pytest

from bfloat16_dtype import bfloat16

X = np.array([[0.25, 0.5], [0.75, 1.0]], bfloat16)


def test_scikit_learn_check_array_refuses_kind_v():
    validation = pytest.importorskip("sklearn.utils.validation", reason="scikit-learn not installed")
    with pytest.raises(ValueError, match="numeric"):
        validation.check_array(X)
    got = validation.check_array(X.astype(np.float32))
    assert got.dtype == np.float32 and got.tolist() == [[0.25, 0.5], [0.75, 1.0]]


def test_matplotlib_colormap_reads_values_as_indices():
    pytest.importorskip("matplotlib", reason="matplotlib not installed")
    from matplotlib import colormaps
    cmap = colormaps["viridis"]
    v = np.array([0.0, 0.5, 0.99], bfloat16)
    assert (cmap(v) == cmap(0)).all()                      # every value read as index 0
    want = cmap(np.array([0.0, 0.5, 0.99], np.float32))
    assert np.array_equal(cmap(v.astype(np.float32)), want) and not (want == cmap(0)).all()


def test_pandas_infers_float16_from_a_list_of_scalars():
    pd = pytest.importorskip("pandas", reason="pandas not installed")
    x = np.array([1.5, 1e5], bfloat16)
    s = pd.Series(list(x))
    if int(pd.__version__.split(".")[0]) >= 3:             # it keeps a NumPy float's width
        assert s.dtype == np.float16 and np.isinf(s.to_numpy()[1])
    with pytest.raises(NotImplementedError):
        pd.Series(x) * 2                                   # "compound dtypes are not implemented"
    assert pd.Series(x.astype(np.float32)).tolist() == [1.5, 99840.0]


def test_scipy_functions_that_call_isdtype():
    stats = pytest.importorskip("scipy.stats", reason="scipy not installed")
    x = np.array([1.0, 2.0, 4.0], bfloat16)
    with pytest.raises(TypeError):
        stats.describe(x)
    assert stats.describe(x.astype(np.float32)).mean == pytest.approx(7 / 3)


def test_pandas_silent_losses_with_kind_v():
    """pandas takes a kind-'V' column for its all-missing placeholder when concatenating with
    another dtype, drops it from numeric_only reductions, and leaves it alone in round():
    silent, where float16 works (README, "Differences from float16 that remain"). A float32
    column behaves."""
    pd = pytest.importorskip("pandas", reason="pandas not installed")
    a = pd.DataFrame({"x": np.array([1.5, 2.5], bfloat16)})
    b = pd.DataFrame({"x": np.array([3.0, 4.0])})
    try:
        joined = pd.concat([a, b], ignore_index=True)["x"].astype(np.float64).tolist()
    except (NotImplementedError, TypeError):   # other pandas versions refuse instead
        joined = None
    assert joined is None or joined[2:] == [3.0, 4.0]
    assert joined is None or not joined[:2] == [1.5, 2.5]     # the bfloat16 values are lost
    assert "x" not in a.mean(numeric_only=True).index
    r = pd.Series(np.array([1.25, 2.75], bfloat16)).round(1)
    assert np.asarray(r.to_numpy(), np.float32).tolist() == [1.25, 2.75]   # unchanged
    f = a.astype({"x": np.float32})
    assert pd.concat([f, b], ignore_index=True)["x"].tolist() == [1.5, 2.5, 3.0, 4.0]
    assert f.mean(numeric_only=True)["x"] == 2.0


def test_matplotlib_imshow_downsampled_reads_values_as_indices():
    """An image with fewer than about 3 screen pixels per data pixel goes through the colormap
    as values; kind 'V' makes them indices: one flat colour (float16 and float32 draw the ramp)."""
    matplotlib = pytest.importorskip("matplotlib", reason="matplotlib not installed")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    img = np.add.outer(np.arange(256.0), np.arange(256.0)) / 512

    def colours(data):
        fig, ax = plt.subplots(figsize=(4, 3), dpi=100)
        ax.imshow(data)
        fig.canvas.draw()
        px = np.asarray(fig.canvas.buffer_rgba())[100:200, 150:250, :3].reshape(-1, 3)
        plt.close(fig)
        return len(np.unique(px, axis=0))

    assert colours(img.astype(bfloat16)) == 1
    assert colours(img.astype(bfloat16).astype(np.float32)) > 20


def test_einsum_of_other_libraries_needs_numpys_optimize_path():
    """opt_einsum (and dask's einsum, which calls it) hand contractions they do not route to a
    BLAS call to NumPy's C einsum, which has no user-dtype support: TypeError, where float16
    works; the float32 operands work (README, "Differences from float16 that remain")."""
    oe = pytest.importorskip("opt_einsum", reason="opt_einsum not installed")
    a, b = np.ones((3, 5, 6), bfloat16), np.ones((3, 6, 2), bfloat16)
    with pytest.raises(TypeError, match="einsum"):
        oe.contract("bij,bjk->bik", a, b)
    assert oe.contract("bij,bjk->bik", a.astype(np.float16), b.astype(np.float16)).shape == (3, 5, 2)
    got = oe.contract("bij,bjk->bik", a.astype(np.float32), b.astype(np.float32))
    assert got.dtype == np.float32 and np.all(got == 6)


def test_scipy_distance_and_linalg_with_kind_v():
    """scipy.spatial.distance's C metrics refuse the dtype by kind, scipy.linalg.expm reaches a
    compiled routine without a bfloat16 version, and the LAPACK wrappers compute in float64
    (float16: float32) (README, "Differences from float16 that remain")."""
    distance = pytest.importorskip("scipy.spatial.distance", reason="scipy not installed")
    import scipy.linalg as sl
    x = np.array([[1.0, 2.0], [3.0, 4.5]], bfloat16)
    with pytest.raises(ValueError, match="bfloat16"):
        distance.cdist(x, x)
    assert distance.cdist(x.astype(np.float32), x.astype(np.float32))[0, 1] == pytest.approx(10.25 ** 0.5)
    with pytest.raises(Exception, match="signature|of type float32"):   # scipy 1.17 | 1.18
        sl.expm(x)
    assert sl.inv(x).dtype == np.float64 and sl.inv(x.astype(np.float16)).dtype == np.float32


def test_numcodecs_text_codecs_cannot_decode_kind_v():
    """numcodecs' JSON and MsgPack codecs encode a bfloat16 array with dtype.str '<V2' and fail
    to decode it (TypeError): write succeeds, read fails. float32 round-trips (README,
    "Differences from float16 that remain")."""
    numcodecs = pytest.importorskip("numcodecs", reason="numcodecs not installed")
    x = np.array([1.5, -2.0], bfloat16)
    for codec in (numcodecs.JSON(), numcodecs.MsgPack()):
        with pytest.raises(TypeError):
            codec.decode(codec.encode(x))
        back = codec.decode(codec.encode(x.astype(np.float32)))
        assert np.asarray(back, np.float32).tolist() == [1.5, -2.0]


def test_pandas_3_refuses_bfloat16_in_more_places():
    """pandas refuses a float assigned into a bfloat16 Series, a Series constructed with
    dtype=bfloat16, and concat of frames holding a bfloat16 and an object column
    (NotImplementedError without a message), where float16 works (README, "Differences from
    float16 that remain")."""
    pd = pytest.importorskip("pandas", reason="pandas not installed")
    if int(pd.__version__.split(".")[0]) < 3:
        pytest.skip("checked with pandas 3")
    s = pd.Series(np.array([1.5, 2.5], bfloat16))
    with pytest.raises(TypeError):
        s[0] = 9.5
    with pytest.raises(NotImplementedError):
        pd.Series([1.5], dtype=bfloat16)
    df = pd.DataFrame({"x": np.array([1.5, 2.5], bfloat16), "o": ["a", "b"]})
    with pytest.raises(NotImplementedError):
        pd.concat([df, df])
    f = df.astype({"x": np.float32})
    assert pd.concat([f, f])["x"].tolist() == [1.5, 2.5, 1.5, 2.5]


def test_pandas_map_apply_transpose_concat_and_groupby_std():
    """pandas 3 infers float16 from the values map()/apply() return (inf above 65504, silently),
    and refuses a bfloat16 column in df.T, in concat of two frames holding only that column and
    in groupby std (README, "Differences from float16 that remain"). float32 behaves."""
    pd = pytest.importorskip("pandas", reason="pandas not installed")
    if int(pd.__version__.split(".")[0]) < 3:
        pytest.skip("checked with pandas 3")
    s = pd.Series(np.array([45056.0, 74752.0], bfloat16))
    for got in (s.map(lambda v: v), s.apply(lambda v: v)):
        assert got.dtype == np.float16 and got.tolist()[0] == 45056.0 and np.isinf(got.tolist()[1])
    df = pd.DataFrame({"x": np.array([1.5, 2.5], bfloat16)})
    with pytest.raises(NotImplementedError):
        df.T
    with pytest.raises(NotImplementedError):
        pd.concat([df, df])
    with pytest.raises(TypeError, match="std"):
        df.groupby([0, 0])["x"].std()
    f = df.astype({"x": np.float32})
    assert f.T.shape == (1, 2) and pd.concat([f, f])["x"].tolist() == [1.5, 2.5, 1.5, 2.5]
    assert pd.Series(s.to_numpy().astype(np.float32)).map(lambda v: v).tolist() == [45056.0, 74752.0]


def test_scikit_learn_fits_then_refuses_to_predict():
    """A scikit-learn estimator that asks check_array for float64/float32 converts the
    bfloat16 training data and fits; predict() then runs the plain 'numeric' check and
    refuses the same array (README). Convert once at the boundary."""
    linear = pytest.importorskip("sklearn.linear_model", reason="scikit-learn not installed")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 2)).astype(bfloat16)
    y = (x.astype(np.float32)[:, 0] > 0).astype(int)
    model = linear.LogisticRegression().fit(x, y)
    with pytest.raises(ValueError, match="numeric"):
        model.predict(x)
    assert (model.predict(x.astype(np.float32)) == y).mean() > 0.9
