"""Training helpers against independent references: float64 optimizer arithmetic, a plain
state-machine model of the loss scaler, np.isfinite on float64 copies, and statistics."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bfloat16_dtype import bfloat16
from bfloat16_dtype.training import SGD, Adam, AdamW, LossScaler, MasterWeights, all_finite

from conftest import exact_f32, reference_round

ROOT = Path(__file__).resolve().parent.parent
BF16 = np.dtype(bfloat16)


# ---- all_finite --------------------------------------------------------------------------------


def test_all_finite_on_every_bfloat16_and_float16_pattern(all_bits):
    """Each bit pattern alone, placed after 70,000 finite values (so past the first chunk)."""
    expected_bf16 = np.isfinite(exact_f32(all_bits))
    expected_f16 = np.isfinite(all_bits.view(np.float16).astype(np.float64))
    # one big array per class of pattern is enough to decide; check each pattern in blocks
    for dtype, expected in ((BF16, expected_bf16), (np.dtype(np.float16), expected_f16)):
        base = np.ones(70_000, np.uint16).view(np.uint16)
        base[:] = 0x3F80 if dtype == BF16 else 0x3C00  # 1.0
        for bits in np.flatnonzero(~expected)[::97].tolist() + np.flatnonzero(expected)[::997].tolist():
            arr = base.copy()
            arr[-1] = bits
            assert all_finite([arr.view(dtype)]) == bool(expected[bits]), (dtype, hex(bits))
    assert all_finite([all_bits[expected_bf16].view(bfloat16)])
    assert not all_finite([all_bits.view(bfloat16)])


@pytest.mark.parametrize("dtype", [bfloat16, np.float16, np.float32, np.float64])
def test_all_finite_against_isfinite_with_injected_specials(dtype):
    rng = np.random.default_rng(0)
    for trial in range(30):
        arrays = [rng.standard_normal(rng.integers(0, 200_000)).astype(dtype) for _ in range(3)]
        if trial % 3:
            which = rng.integers(0, 3)
            if arrays[which].size:
                arrays[which][rng.integers(0, arrays[which].size)] = [np.inf, -np.inf, np.nan][trial % 3]
        expected = all(np.isfinite(a.astype(np.float64)).all() for a in arrays)
        assert all_finite(arrays) == expected
        strided = [a[::3] for a in arrays]  # non-contiguous views take the isfinite path
        assert all_finite(strided) == all(np.isfinite(a.astype(np.float64)).all() for a in strided)


def test_all_finite_shapes_and_errors():
    assert all_finite([])
    assert all_finite([np.zeros((0, 3), bfloat16), np.arange(5), np.ones((2, 3, 4), bfloat16)])
    a = np.ones((4, 5), bfloat16)
    a[3, 4] = np.nan
    assert not all_finite([a]) and not all_finite(iter([a]))
    assert not all_finite([a.T])
    assert not all_finite([np.array([1 + 1j, complex(np.inf, 0)])])
    with pytest.raises(TypeError, match="not one array"):
        all_finite(np.ones(3))
    with pytest.raises(TypeError, match=r"arrays\[1\] must be a numpy array"):
        all_finite([np.ones(3), [1.0, 2.0]])


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_matrices():
    """np.matrix gradients and parameters, which stay 2-D when reshaped to 1-D: all_finite and
    unscale once failed with an internal broadcast error. Compared with np.isfinite and with the
    same steps on plain arrays."""
    for dtype in (BF16, np.float16, np.float32, np.float64):
        for values in ([[1.0, 2.0]], [[1.0, np.inf]], [[np.nan], [1.0]]):
            m = np.matrix(np.array(values).astype(dtype))
            assert all_finite([m]) == bool(np.isfinite(m.astype(np.float64)).all()), (dtype, values)
    got = LossScaler(4.0).unscale([np.matrix([[1.0, 6.0]], np.float32)])
    np.testing.assert_array_equal(got[0], [[0.25, 1.5]])
    assert LossScaler(4.0).unscale([np.matrix([[1.0, np.nan]], BF16)]) is None
    g = np.arange(6, dtype=np.float32).reshape(2, 3) / 7
    for dtype in (np.float32, BF16):
        for make in (lambda p: SGD(p, lr=0.1, momentum=0.9, weight_decay=0.1),
                     lambda p: Adam(p, lr=0.1, weight_decay=0.1), lambda p: AdamW(p, lr=0.1)):
            m, plain = np.matrix(np.ones((2, 3), dtype)), np.ones((2, 3), dtype)
            opt_m, opt_plain = make([m]), make([plain])
            for _ in range(3):
                opt_m.step([np.matrix(g)])
                opt_plain.step([g])
            assert np.asarray(m).tobytes() == plain.tobytes(), (dtype, opt_m)


# ---- LossScaler ----------------------------------------------------------------------------------


class ReferenceScaler:
    """The specification as a plain model: halve (not below min) and skip on a non-finite step,
    double (not above max) after `interval` clean steps in a row."""

    def __init__(self, scale, interval, lo, hi, dynamic=True):
        self.scale, self.interval, self.lo, self.hi, self.dynamic = scale, interval, lo, hi, dynamic
        self.run = 0

    def step(self, finite):
        if not finite:
            self.run = 0
            if self.dynamic:
                self.scale = max(self.scale / 2, self.lo)
            return False
        if self.dynamic:
            self.run += 1
            if self.run == self.interval:
                self.scale, self.run = min(self.scale * 2, self.hi), 0
        return True


def test_all_finite_other_float_types_and_byte_orders():
    """Byte-swapped bfloat16 and other libraries' float types are tested for inf/NaN too (they
    once counted as always finite, like integers); text and objects are refused."""
    ours = np.array([1.0, np.nan], bfloat16)
    assert not all_finite([ours.astype(ours.dtype.newbyteorder())])
    assert all_finite([np.ones(2, bfloat16).astype(ours.dtype.newbyteorder())])
    assert not all_finite([np.array([1.0, np.inf], ">f4")])
    for bad in (np.array(["8"]), np.array([np.nan], object)):
        with pytest.raises(TypeError, match="cannot test values of dtype"):
            all_finite([bad])
    scaler = LossScaler(4.0)
    assert scaler.unscale([ours.astype(ours.dtype.newbyteorder())]) is None and scaler.scale == 2.0
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes not installed")
    for t in (ml_dtypes.bfloat16, ml_dtypes.float8_e5m2):
        assert not all_finite([np.array([1.0, np.inf], t)]), t
        assert all_finite([np.array([1.0, 2.0], t)]), t


@pytest.mark.parametrize("dynamic", [True, False])
def test_loss_scaler_state_machine_against_a_reference_model(dynamic):
    rng = np.random.default_rng(1)
    scaler = LossScaler(256.0, dynamic=dynamic, growth_interval=5, min_scale=2.0, max_scale=2.0**12)
    ref = ReferenceScaler(256.0, 5, 2.0, 2.0**12, dynamic)
    skipped = 0
    # long clean runs (growth up to the max), bursts of overflow (down to the min), mixtures
    pattern = [True] * 60 + [False] * 12 + list(rng.random(400) < 0.85) + [True] * 40
    for finite in pattern:
        g = np.full(3, 1.0, np.float16)
        if not finite:
            g[1] = np.inf if rng.random() < 0.5 else np.nan
        used = scaler.scale
        out = scaler.unscale([g, np.ones(2, bfloat16)])
        applied = ref.step(finite)
        skipped += not applied
        assert (out is not None) == applied
        assert scaler.scale == ref.scale
        if out is not None:
            assert out[0].dtype == np.float32
            np.testing.assert_array_equal(out[0], np.float64(1.0) / used)
    assert scaler.skipped_steps == skipped
    if dynamic:
        assert ref.scale == 2.0**12  # the pattern reached both bounds
    else:
        assert scaler.scale == 256.0


def test_loss_scaler_growth_and_backoff_exact_steps():
    s = LossScaler(8.0, growth_interval=3)
    ok = [np.ones(2, np.float32)]
    bad = [np.array([1.0, np.nan], np.float32)]
    assert [s.update(True) for _ in range(2)] == [True, True] and s.scale == 8.0
    s.update(True)
    assert s.scale == 16.0 and s.clean_steps == 0
    s.update(True)
    s.update(True)
    assert s.unscale(bad) is None and s.scale == 8.0 and s.clean_steps == 0  # the run restarts
    s.unscale(ok), s.unscale(ok)
    assert s.scale == 8.0
    s.unscale(ok)
    assert s.scale == 16.0
    small = LossScaler(1.0, min_scale=1.0)
    assert small.unscale(bad) is None and small.scale == 1.0


def test_loss_scaler_unscale_against_float64():
    rng = np.random.default_rng(2)
    s = LossScaler(2.0**10)
    g = [rng.standard_normal(100).astype(np.float16), rng.standard_normal((4, 5)).astype(bfloat16)]
    out = s.unscale(g)
    for o, gi in zip(out, g):
        assert o.dtype == np.float32 and o.shape == gi.shape
        np.testing.assert_array_equal(o, (gi.astype(np.float64) / 2.0**10).astype(np.float32))


def test_unscale_skips_overflow_it_makes():
    """A finite gradient that becomes inf on its way to float32 (a float64 1e39) or when divided
    by a scale below 1 skips the step and lowers the scale, as an inf in the gradient does (they
    had come back as inf float32 gradients, counted as a clean step)."""
    import warnings
    for scaler, grads in ((LossScaler(init_scale=1.0, min_scale=2.0**-10), [np.array([1e39, 1.0])]),
                          (LossScaler(init_scale=0.5, min_scale=0.25), [np.array([3e38], np.float32)])):
        before = scaler.scale
        with warnings.catch_warnings():
            warnings.simplefilter("error")           # no overflow warning on the way either
            assert scaler.unscale(grads) is None
        assert scaler.skipped_steps == 1 and scaler.scale < before
    ok = LossScaler(init_scale=0.5, min_scale=0.25)
    got = ok.unscale([np.array([1e38], np.float32)])
    assert got is not None and got[0].tolist() == [np.float32(2e38)] and ok.skipped_steps == 0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(init_scale=0.0), "init_scale"),
        (dict(init_scale=float("inf")), "init_scale"),
        (dict(init_scale="8"), "init_scale"),
        (dict(growth_interval=0), "growth_interval"),
        (dict(growth_interval=2.5), "growth_interval"),
        (dict(growth_factor=0.5), "growth_factor"),
        (dict(backoff_factor=2.0), "backoff_factor"),
        (dict(min_scale=8.0, max_scale=4.0, init_scale=4.0), "min_scale"),
        (dict(init_scale=2.0**30), "init_scale must lie"),
        (dict(dynamic="yes"), "dynamic"),
    ],
)
def test_loss_scaler_bad_arguments(kwargs, match):
    with pytest.raises((TypeError, ValueError), match=match):
        LossScaler(**kwargs)


def test_static_scale_ignores_the_bounds():
    """A static scale never grows or backs off, so [min_scale, max_scale] does not bound it
    (torch's GradScaler takes any static scale); it keeps its scale through skipped steps."""
    for init in (2.0**30, 0.5):
        scaler = LossScaler(init_scale=init, dynamic=False)
        g = np.array([init * 3.0], np.float32)
        assert scaler.unscale([g])[0].tolist() == [3.0]
        assert scaler.unscale([np.array([np.inf], np.float32)]) is None and scaler.scale == init
    with pytest.raises(ValueError, match="init_scale must lie"):
        LossScaler(init_scale=0.5)                    # dynamic: the bounds hold


def test_unscale_takes_torch_tensors():
    """unscale takes CPU torch tensors of any float dtype, as the optimizers' step does
    (it raised "all_finite: arrays[0] must be a numpy array")."""
    torch = pytest.importorskip("torch", reason="torch not installed")
    scaler = LossScaler(init_scale=4.0, dynamic=False)
    for dt in (torch.float32, torch.bfloat16, torch.float16):
        out = scaler.unscale([torch.tensor([8.0, -2.0], dtype=dt)])
        assert out[0].dtype == np.float32 and out[0].tolist() == [2.0, -0.5]
    assert scaler.unscale([torch.tensor([1.0, float("inf")], dtype=torch.bfloat16)]) is None


def test_loss_scaler_scales_within_float32():
    """unscale multiplies by the scale's float32 reciprocal: a scale of 1e-40 once turned a
    zero gradient into NaN, 1e40 unscaled with a 0.3 % error (a subnormal reciprocal). Such
    scales are refused; at the bounds, and while growth and backoff clamp to them, unscale
    agrees with float64 division."""
    for kwargs, name in ((dict(init_scale=1e-40, min_scale=1e-40), "init_scale"),
                         (dict(min_scale=2.0**-127), "min_scale"),
                         (dict(max_scale=1e40), "max_scale"),
                         (dict(init_scale=2.0**127, max_scale=2.0**127), "init_scale")):
        with pytest.raises(ValueError, match=rf"{name} must lie in \[2\*\*-126, 2\*\*126\]"):
            LossScaler(**kwargs)
    for lo, hi in ((2.0**-126, 1.0), (1.0, 2.0**126)):
        # (3e38 divided by a scale below 1 overflows: such a step is skipped,
        # test_unscale_skips_overflow_it_makes)
        g = np.float32([0.0, 2.0**-100, 3e38 if lo == 1.0 else 1e-3, -1e-30])
        s = LossScaler(1.0, min_scale=lo, max_scale=hi, backoff_factor=2.0**-100,
                       growth_factor=2.0**100, growth_interval=1)
        seen = set()
        for finite in [False] * 3 + [True] * 4:
            used = s.scale
            with np.errstate(over="ignore"):
                out = s.unscale([g if finite else np.float32([np.inf])])
                want = (g.astype(np.float64) / used).astype(np.float32)
            seen.add(s.scale)
            if out is not None:
                np.testing.assert_array_equal(out[0], want)
        assert min(seen) == lo and max(seen) == hi


# ---- MasterWeights ------------------------------------------------------------------------------


def test_master_weights_copy_round_and_refresh():
    rng = np.random.default_rng(3)
    w = rng.standard_normal((30, 7)).astype(np.float32)
    b = rng.standard_normal(7)  # float64 input becomes a float32 master
    mw = MasterWeights([w, b])
    assert [m.dtype for m in mw.masters] == [np.float32, np.float32]
    assert not np.shares_memory(mw.masters[0], w)
    np.testing.assert_array_equal(mw.working[0].view(np.uint16), reference_round(w))
    np.testing.assert_array_equal(mw.masters[1], b.astype(np.float32))
    mw.masters[0] += np.float32(1e-3)
    before = mw.working[0].copy()
    mw.refresh()
    np.testing.assert_array_equal(mw.working[0].view(np.uint16), reference_round(mw.masters[0]))
    assert (mw.working[0].view(np.uint16) != before.view(np.uint16)).any()
    assert mw.nbytes == (30 * 7 + 7) * (4 + 2)
    f16 = MasterWeights([w], dtype=np.float16)
    np.testing.assert_array_equal(f16.working[0], w.astype(np.float16))


def test_master_weights_errors():
    with pytest.raises(TypeError, match="dtype must be bfloat16, float16 or float32"):
        MasterWeights([np.ones(2)], dtype=np.float64)
    with pytest.raises(TypeError, match="dtype must be a numpy dtype"):
        MasterWeights([np.ones(2)], dtype="nonsense")
    with pytest.raises(TypeError, match=r"params\[1\] must be a float array"):
        MasterWeights([np.ones(2), np.arange(3)])
    with pytest.raises(TypeError, match="not one array"):
        MasterWeights(np.ones(3))


# ---- optimizers against float64 ------------------------------------------------------------------


def problem(seed, shapes=((6, 5), (5,))):
    rng = np.random.default_rng(seed)
    params = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [[rng.standard_normal(s).astype(bfloat16) for s in shapes] for _ in range(4)]
    return params, grads


def test_sgd_momentum_weight_decay_against_float64():
    params, grads = problem(4)
    ref = [p.astype(np.float64) for p in params]
    bufs = [np.zeros_like(r) for r in ref]
    lr, mu, wd = 0.05, 0.9, 0.01
    opt = SGD(params, lr=lr, momentum=mu, weight_decay=wd)
    for step in grads:
        opt.step(step)
        for i, g in enumerate(step):
            g64 = g.astype(np.float64) + wd * ref[i]
            bufs[i] = mu * bufs[i] + g64
            ref[i] = ref[i] - lr * bufs[i]
    for p, r in zip(params, ref):
        assert p.dtype == np.float32
        np.testing.assert_allclose(p, r, rtol=2e-6, atol=2e-6)
    plain = [np.float32([1.0, 2.0])]
    SGD(plain, lr=0.5).step([np.float32([1.0, -1.0])])
    np.testing.assert_array_equal(plain[0], [0.5, 2.5])


@pytest.mark.parametrize("decoupled", [False, True])
def test_adam_and_adamw_against_float64(decoupled):
    params, grads = problem(5)
    ref = [p.astype(np.float64) for p in params]
    m = [np.zeros_like(r) for r in ref]
    v = [np.zeros_like(r) for r in ref]
    lr, b1, b2, eps, wd = 0.01, 0.9, 0.999, 1e-8, 0.1
    opt = AdamW(params, lr=lr, weight_decay=wd) if decoupled else Adam(params, lr=lr, weight_decay=wd)
    for t, step in enumerate(grads, start=1):
        opt.step(step)
        for i, g in enumerate(step):
            g64 = g.astype(np.float64)
            if not decoupled:
                g64 = g64 + wd * ref[i]
            m[i] = b1 * m[i] + (1 - b1) * g64
            v[i] = b2 * v[i] + (1 - b2) * g64 * g64
            if decoupled:
                ref[i] = ref[i] - lr * wd * ref[i]
            mhat, vhat = m[i] / (1 - b1**t), v[i] / (1 - b2**t)
            ref[i] = ref[i] - lr * mhat / (np.sqrt(vhat) + eps)
    for p, r in zip(params, ref):
        np.testing.assert_allclose(p, r, rtol=1e-5, atol=1e-6)
    assert opt.steps == 4 and opt.state_nbytes == 2 * 4 * (30 + 5)


@pytest.mark.parametrize("beta2", [0.999, 0.9999, 0.99999])
@pytest.mark.parametrize("cls", [Adam, AdamW])
def test_adam_first_steps_match_torch_for_betas_near_one(cls, beta2):
    """1 - beta2 was taken from float32(beta2): 1 - float32(0.999) is 0.00099998713, and the
    first steps were off by a relative 6e-6 (0.999) to 7e-4 (0.99999) against the float64
    formula (torch.optim.Adam gives -0.99999994 here, as now)."""
    w = np.zeros(1, np.float32)
    opt = cls([w], lr=1.0, betas=(0.9, beta2), weight_decay=0.0)
    for t in (1, 2, 3):
        opt.step([np.array([3.0], np.float32)])
        m = (1 - 0.9**t) * 3.0
        v = (1 - beta2**t) * 9.0
        expected = -t * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - beta2**t)) + 1e-8)
        np.testing.assert_allclose(w[0], expected, rtol=3e-7)


def test_torch_bfloat16_tensors_are_read():
    """NumPy cannot read a torch.bfloat16 tensor (torch's TypeError named neither the helper nor
    the argument): the optimizers' gradients, MasterWeights' params and the numerics helpers
    read one through DLPack, as the same bfloat16 array."""
    torch = pytest.importorskip("torch")
    from bfloat16_dtype import numerics
    values = np.array([1.5, -2.0, 0.1, 3.0], np.float32).astype(bfloat16)
    tensor = torch.tensor(values.astype(np.float32), dtype=torch.bfloat16)
    for grads in ([tensor], [values]):
        w = np.ones(4, np.float32)
        SGD([w], lr=0.5).step(grads)
        if grads[0] is tensor:
            from_torch = w.copy()
    np.testing.assert_array_equal(from_torch, w)
    masters = MasterWeights([tensor.clone()]).masters
    np.testing.assert_array_equal(masters[0], values.astype(np.float32))
    assert numerics.sum(tensor).view(np.uint16) == numerics.sum(values).view(np.uint16)


def test_byte_swapped_params():
    """Byte-swapped float32 and bfloat16 parameters are updated in place, as np.copyto writes
    them (they were refused). References: the documented update in float32 arithmetic, rounded
    to bfloat16 bits by conftest's reference_round."""
    rng = np.random.default_rng(9)
    w0 = rng.standard_normal(500).astype(np.float32)
    g = rng.standard_normal(500).astype(np.float32)
    lr = np.float32(0.01)
    w = w0.astype(">f4")
    SGD([w], lr=0.01).step([g.astype(">f4")])
    assert w.dtype == np.dtype(">f4")
    np.testing.assert_array_equal(w, w0 - lr * g)
    wb0 = exact_f32(reference_round(w0))
    wb = wb0.astype(BF16.newbyteorder())
    SGD([wb], lr=0.01).step([g])
    np.testing.assert_array_equal(wb.astype(BF16).view(np.uint16), reference_round(wb0 - lr * g))
    ws = np.ones(4, BF16.newbyteorder())
    SGD([ws], lr=0.5, rounding="stochastic", rng=1).step([np.ones(4, np.float32)])
    assert ws.astype(np.float32).tolist() == [0.5] * 4   # exact in bfloat16: no draw moves it


def test_pure_bfloat16_nearest_even_rounds_the_float32_update():
    rng = np.random.default_rng(6)
    w = rng.standard_normal(2000).astype(bfloat16)
    g = rng.standard_normal(2000).astype(np.float32)
    w64 = w.astype(np.float64)
    SGD([w], lr=0.01).step([g])
    exact = w64 - 0.01 * g.astype(np.float64)
    # within half a bfloat16 spacing of the exact update (float32 arithmetic adds ~2^-24)
    spacing = np.spacing(np.abs(exact).astype(np.float32)) * 2.0**16
    assert np.all(np.abs(w.astype(np.float64) - exact) <= spacing / 2 * (1 + 2**-10))


def test_swamping_nearest_loses_small_updates_stochastic_keeps_them_on_average():
    """An update of 2^-10 to weights of 1.0 (spacing 2^-7): nearest-even never moves; stochastic
    rounding moves each weight up by 2^-7 with probability 1/8, so the mean moves by 2^-10."""
    n = 20_000
    w_rne = np.ones(n, bfloat16)
    w_sr = np.ones(n, bfloat16)
    g = np.full(n, -(2.0**-10), np.float32)
    SGD([w_rne], lr=1.0).step([g])
    SGD([w_sr], lr=1.0, rounding="stochastic", rng=7).step([g])
    assert (w_rne.astype(np.float32) == 1.0).all()
    values = w_sr.astype(np.float64)
    assert set(np.unique(values)) <= {1.0, 1.0 + 2.0**-7}
    ups = np.count_nonzero(values > 1)
    p = 1 / 8
    assert abs(ups - n * p) <= 7 * np.sqrt(n * p * (1 - p))
    # and with masters the update accumulates exactly
    mw = MasterWeights([np.ones(4, np.float32)])
    opt = SGD(mw.masters, lr=1.0)
    for _ in range(8):
        opt.step([np.full(4, -(2.0**-10), bfloat16)])
        mw.refresh()
    assert (mw.working[0].astype(np.float32) == 1.0 + 2.0**-7).all()


@pytest.mark.parametrize("make", [
    lambda w: SGD([w], lr=1.0, rounding="stochastic", rng=0),
    lambda w: Adam([w], lr=2.0**-26, rounding="stochastic", rng=0),
], ids=["SGD", "Adam"])
def test_stochastic_keeps_updates_below_float32_spacing(make):
    """An update of 2^-26 to weights of 1.0: below half of float32's spacing under 1 (2^-25),
    so 1 - 2^-26 computed in float32 is 1.0 and the update vanished before the random rounding.
    Rounded from the exact value, each weight drops to 1 - 2^-8 with probability 2^-18."""
    n = 1 << 22
    w = np.ones(n, bfloat16)
    make(w).step([np.full(n, 2.0**-26, np.float32)])
    values = w.astype(np.float64)
    assert set(np.unique(values)) <= {1.0 - 2.0**-8, 1.0}
    downs = np.count_nonzero(values < 1)
    assert 2 <= downs <= 40   # binomial(2^22, 2^-18): mean 16, sd 4


def test_stochastic_keeps_a_decoupled_decay_below_float32_spacing():
    """AdamW's decay of weights of 1.0 by lr * weight_decay = 2^-26 (no gradient): rounded once
    from the exact value with the step, as the update above; float32 weights keep torch's order
    (the decay, then the step: tests against torch above)."""
    n = 1 << 22
    w = np.ones(n, bfloat16)
    AdamW([w], lr=2.0**-13, weight_decay=2.0**-13, rounding="stochastic", rng=0).step(
        [np.zeros(n, np.float32)])
    values = w.astype(np.float64)
    assert set(np.unique(values)) <= {1.0 - 2.0**-8, 1.0}
    assert 2 <= np.count_nonzero(values < 1) <= 40   # binomial(2^22, 2^-18)


def test_pure_bfloat16_adam_stochastic_is_reproducible():
    rng = np.random.default_rng(8)
    w0 = rng.standard_normal(500).astype(bfloat16)
    g = rng.standard_normal(500).astype(bfloat16)
    a, b = w0.copy(), w0.copy()
    Adam([a], lr=1e-4, rounding="stochastic", rng=3).step([g])
    Adam([b], lr=1e-4, rounding="stochastic", rng=np.random.default_rng(3)).step([g])
    np.testing.assert_array_equal(a.view(np.uint16), b.view(np.uint16))
    assert (a.view(np.uint16) != w0.view(np.uint16)).any()


def test_optimizer_errors_name_the_argument():
    w = [np.ones(3, np.float32)]
    with pytest.raises(TypeError, match=r"params\[0\] must be float32 .* or bfloat16"):
        SGD([np.ones(3)], lr=0.1)
    with pytest.raises(TypeError, match="not one array"):
        Adam(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="params is empty"):
        SGD([], lr=0.1)
    with pytest.raises(ValueError, match="params is empty"):
        MasterWeights([])
    with pytest.raises(TypeError, match="found_finite must be a bool"):
        LossScaler().update("x")
    assert LossScaler().update(np.bool_(True)) is True
    ro = np.ones(3, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        SGD([ro], lr=0.1)
    with pytest.raises(ValueError, match="lr"):
        SGD(w, lr=-1.0)
    with pytest.raises(TypeError, match="lr"):
        SGD(w, lr="0.1")
    with pytest.raises(ValueError, match="momentum"):
        SGD(w, lr=0.1, momentum=1.0)
    with pytest.raises(ValueError, match=r"betas\[1\]"):
        Adam(w, betas=(0.9, 1.5))
    with pytest.raises(TypeError, match="betas must be a pair"):
        Adam(w, betas=0.9)
    with pytest.raises(TypeError, match="decoupled must be True, False or None"):
        Adam(w, decoupled="yes")
    with pytest.raises(ValueError, match="rounding must be"):
        SGD([np.ones(3, bfloat16)], lr=0.1, rounding="toward_zero")
    with pytest.raises(ValueError, match="needs bfloat16 params"):
        SGD(w, lr=0.1, rounding="stochastic")
    with pytest.raises(ValueError, match="rng is only used"):
        SGD([np.ones(3, bfloat16)], lr=0.1, rng=1)
    with pytest.raises(TypeError, match="SGD: rng must be"):
        SGD([np.ones(3, bfloat16)], lr=0.1, rounding="stochastic", rng="x")
    opt = SGD(w, lr=0.1)
    # the dtype is checked before the shape, and text is not a list of gradients (an object
    # once got "has shape ()", a str of length 3 "got 3 gradients")
    with pytest.raises(TypeError, match=r"grads\[0\] must be a float array, got dtype object"):
        opt.step([object()])
    for text in ("abc", b"abc"):
        with pytest.raises(TypeError, match="grads must be a sequence of arrays, got"):
            opt.step(text)
    with pytest.raises(ValueError, match="got 2 gradients for 1 params"):
        opt.step([np.ones(3), np.ones(3)])
    with pytest.raises(ValueError, match=r"grads\[0\] has shape \(4,\)"):
        opt.step([np.ones(4)])
    with pytest.raises(TypeError, match=r"grads\[0\] must be a float array"):
        opt.step([np.ones(3, np.int64)])
    np.testing.assert_array_equal(w[0], 1.0)  # nothing changed by the failed steps


# ---- the benchmark section -----------------------------------------------------------------------


@pytest.mark.skipif(importlib.util.find_spec("sklearn") is None,
                    reason="scikit-learn is not installed (pip install scikit-learn)")
def test_quick_training_benchmark_runs_and_bfloat16_trains(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_training.py"), "--quick",
         "--out-dir", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    for title in ("## Training an MLP on digits", "## Gradients that underflow in float16",
                  "## Weight updates lost to swamping"):
        assert title in out
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in out.splitlines() if line.startswith("| ") and "%" in line}
    f32 = float(rows["float32"][1].rstrip(" %"))
    mixed = float(rows["bfloat16 mixed (fp32 masters, no loss scaling)"][1].rstrip(" %"))
    assert f32 > 80 and abs(mixed - f32) < 5  # a 10-class problem: chance is 10 %
    assert rows["bfloat16 mixed (fp32 masters, no loss scaling)"][4].startswith("16 = 2 weights")
    toy = next(line for line in out.splitlines() if line.startswith("| 1.0 + 1e-3"))
    assert "result 1 " in toy and "result 2.0000" in toy
    if importlib.util.find_spec("matplotlib") is not None:
        assert (tmp_path / "training_loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
