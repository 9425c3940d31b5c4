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
