"""Mixed-precision training helpers for plain NumPy arrays.

The practice the format was made for: compute the forward and backward passes in a 16-bit type,
keep float32 master weights that the optimizer updates, copy them back to 16 bits after each
step, and scale the loss when the 16-bit type's range is too small (float16; bfloat16 has
float32's range and normally needs no scaling).

>>> import numpy as np
>>> from bfloat16_dtype import bfloat16
>>> from bfloat16_dtype.training import MasterWeights, AdamW
>>> master = MasterWeights([np.full((2, 2), 0.5, np.float32)])
>>> opt = AdamW(master.masters, lr=1e-3, weight_decay=0.0)
>>> grads = [np.ones((2, 2), bfloat16)]      # from a backward pass in bfloat16
>>> opt.step(grads); master.refresh()
>>> print(master.masters[0][0, 0], master.working[0][0, 0], master.working[0].dtype)
0.499 0.498 bfloat16

Without masters, round each update with stochastic rounding (:class:`SGD` or :class:`Adam`
on bfloat16 parameters with ``rounding="stochastic"``): updates far below the spacing of the
weights then survive in expectation instead of vanishing.
"""
from __future__ import annotations

import math
from typing import Iterable, List, Optional, Sequence, Tuple

import numpy as np

from ._ext import bfloat16
from .interop import _asarray, _dtype_text, _read_as_ours, _view_ml_bfloat16
from .rounding import RngLike, _generator, to_bfloat16

__all__ = ["all_finite", "LossScaler", "MasterWeights", "SGD", "Adam", "AdamW"]

_BF16 = np.dtype(bfloat16)
_F32 = np.dtype(np.float32)
_WORKING = (_BF16, np.dtype(np.float16), _F32)
_CHUNK = 1 << 16  # elements per pass of all_finite: the mask stays in L2 cache

# exponent field of each float type, viewed as an unsigned integer of the same width
_EXPONENT = {
    _BF16: (np.uint16, 0x7F80),
    np.dtype(np.float16): (np.uint16, 0x7C00),
    _F32: (np.uint32, 0x7F800000),
    np.dtype(np.float64): (np.uint64, 0x7FF0000000000000),
}


def _finite_one(a: np.ndarray) -> bool:
    spec = _EXPONENT.get(a.dtype)
    if spec is None or not a.flags.c_contiguous:
        if a.dtype.kind in "biu":
            return True  # integers and booleans are always finite
        try:  # other floats: byte-swapped, ml_dtypes' bfloat16 and float8, complex, ...
            return bool(np.isfinite(a).all())
        except TypeError:
            raise TypeError(f"all_finite: cannot test values of dtype {a.dtype!r} for inf "
                            "and NaN") from None
    uint, mask = spec
    # np.asarray: a matrix stays 2-D under reshape(-1) (tests/test_training.py::test_matrices)
    flat = np.asarray(a).reshape(-1).view(uint)
    buf = np.empty(min(flat.size, _CHUNK), uint)
    for start in range(0, flat.size, _CHUNK):
        part = flat[start:start + _CHUNK]
        tmp = buf[:part.size]
        np.bitwise_and(part, uint(mask), out=tmp)
        if tmp.max() == mask:  # exponent all ones: inf or NaN
            return False
    return True


def all_finite(arrays: Iterable[np.ndarray]) -> bool:
    """True when no element of any array is inf or NaN.

    Contiguous bfloat16, float16, float32 and float64 arrays are tested on their bits (an
    all-ones exponent field), chunk by chunk, without widening bfloat16 to float32.

    >>> import numpy as np
    >>> from bfloat16_dtype import bfloat16
    >>> all_finite([np.ones(3, bfloat16), np.zeros(2, np.float32)])
    True
    >>> all_finite([np.ones(3, bfloat16), np.array([1, np.nan], np.float32)])
    False
    """
    if isinstance(arrays, np.ndarray):
        raise TypeError("all_finite: arrays must be an iterable of arrays, not one array "
                        "(wrap it in a list)")
    for i, a in enumerate(arrays):
        if not isinstance(a, np.ndarray):
            raise TypeError(f"all_finite: arrays[{i}] must be a numpy array, got {type(a).__name__}")
        if a.size and not _finite_one(a):
            return False
    return True


def _check_positive(name: str, value: float, owner: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{owner}: {name} must be a number, got {value!r}")
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{owner}: {name} must be positive and finite, got {value!r}")
    return value


def _check_scale(name: str, value: float, owner: str) -> float:
    """A loss scale whose float32 reciprocal, by which unscale multiplies, is a normal number:
    beyond [2**-126, 2**126] it overflowed (NaN and inf gradients) or lost bits as a subnormal
    (tests/test_training.py::test_loss_scaler_scales_within_float32)."""
    value = _check_positive(name, value, owner)
    if not 2.0**-126 <= value <= 2.0**126:
        raise ValueError(f"{owner}: {name} must lie in [2**-126, 2**126], where its float32 "
                         f"reciprocal is a normal number, got {value!r}")
    return value


class LossScaler:
    """Loss scaling for 16-bit gradients, static or dynamic.

    Multiply the loss (or the gradient of the loss) by :attr:`scale` before the backward pass,
    then call :meth:`unscale` on the gradients: it returns float32 gradients divided by the
    scale, or ``None`` when some gradient is inf/NaN, in which case the caller skips the step.

    Dynamic scaling (the default) halves the scale (``backoff_factor``) on every step with a
    non-finite gradient and doubles it (``growth_factor``) after ``growth_interval`` clean steps
    in a row, staying within ``[min_scale, max_scale]``. Scales must lie in ``[2**-126, 2**126]``,
    where their float32 reciprocals are normal numbers. A static scaler (``dynamic=False``)
    keeps its scale but still reports non-finite gradients, so the step is skipped.

    >>> import numpy as np
    >>> scaler = LossScaler(init_scale=1024.0, growth_interval=2)
    >>> g = [np.full(3, 2048.0, np.float16)]         # gradients of loss * 1024
    >>> scaler.unscale(g)[0]
    array([2., 2., 2.], dtype=float32)
    >>> scaler.unscale([np.array([np.inf], np.float16)]) is None, scaler.scale
    (True, 512.0)
    """

    def __init__(
        self,
        init_scale: float = 2.0**16,
        *,
        dynamic: bool = True,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        min_scale: float = 1.0,
        max_scale: float = 2.0**24,
    ) -> None:
        owner = "LossScaler"
        init_scale = _check_scale("init_scale", init_scale, owner)
        self.growth_factor = _check_positive("growth_factor", growth_factor, owner)
        self.backoff_factor = _check_positive("backoff_factor", backoff_factor, owner)
        self.min_scale = _check_scale("min_scale", min_scale, owner)
        self.max_scale = _check_scale("max_scale", max_scale, owner)
        if self.growth_factor < 1:
            raise ValueError(f"{owner}: growth_factor must be >= 1, got {growth_factor!r}")
        if self.backoff_factor > 1:
            raise ValueError(f"{owner}: backoff_factor must be <= 1, got {backoff_factor!r}")
        if self.min_scale > self.max_scale:
            raise ValueError(f"{owner}: min_scale ({min_scale!r}) exceeds max_scale ({max_scale!r})")
        if not isinstance(dynamic, (bool, np.bool_)):
            raise TypeError(f"{owner}: dynamic must be a bool, got {dynamic!r}")
        # a static scale never moves, so the bounds do not apply to it, as torch's GradScaler
        # takes any static scale (tests/test_training.py::test_static_scale_ignores_the_bounds)
        if dynamic and not self.min_scale <= init_scale <= self.max_scale:
            raise ValueError(
                f"{owner}: init_scale must lie in [min_scale, max_scale] = "
                f"[{self.min_scale!r}, {self.max_scale!r}], got {init_scale!r}"
            )
        if isinstance(growth_interval, bool) or not isinstance(growth_interval, (int, np.integer)) \
                or growth_interval < 1:
            raise ValueError(f"{owner}: growth_interval must be an int >= 1, got {growth_interval!r}")
        self.dynamic = bool(dynamic)
        self.growth_interval = int(growth_interval)
        self.scale = init_scale
        #: clean steps since the scale last changed
        self.clean_steps = 0
        #: steps skipped because of inf/NaN gradients, in total
        self.skipped_steps = 0

    def update(self, found_finite: bool) -> bool:
        """Advance the state machine by one step; returns whether to apply the step."""
        if not isinstance(found_finite, (bool, np.bool_)):
            raise TypeError(f"LossScaler.update: found_finite must be a bool, got {found_finite!r}")
        if not found_finite:
            self.skipped_steps += 1
            self.clean_steps = 0
            if self.dynamic:
                self.scale = max(self.scale * self.backoff_factor, self.min_scale)
            return False
        if self.dynamic:
            self.clean_steps += 1
            if self.clean_steps >= self.growth_interval:
                self.scale = min(self.scale * self.growth_factor, self.max_scale)
                self.clean_steps = 0
        return True

    def unscale(self, grads: Sequence[np.ndarray]) -> Optional[List[np.ndarray]]:
        """Check ``grads`` (computed from the scaled loss), update the scale, and return float32
        gradients divided by the scale used for them, or ``None`` if the step must be skipped."""
        if isinstance(grads, np.ndarray):
            raise TypeError("LossScaler.unscale: grads must be a sequence of arrays, not one array")
        # torch tensors (CPU, any float dtype) as the optimizers take them
        # (tests/test_training.py::test_unscale_takes_torch_tensors)
        grads = [_asarray(g) for g in grads]
        finite = all_finite(grads)
        used = self.scale
        out = None
        if finite:
            # a gradient that overflows on its way to float32 or when divided by a scale below
            # 1 skips the step too (tests/test_training.py::test_unscale_skips_overflow_it_makes)
            inv = np.float32(1.0 / used)
            with np.errstate(over="ignore"):
                out = [np.multiply(np.asarray(g, dtype=np.float32), inv) for g in grads]
            finite = all_finite(out)
        if not self.update(finite):
            return None
        return out

    def __repr__(self) -> str:
        kind = "dynamic" if self.dynamic else "static"
        return f"LossScaler(scale={self.scale!r}, {kind}, clean_steps={self.clean_steps})"


class MasterWeights:
    """float32 master weights with 16-bit working copies for the forward/backward pass.

    ``masters`` are float32 copies the optimizer updates; ``working`` are their bfloat16 (or
    ``dtype``) copies, rounded to nearest, that :meth:`refresh` rewrites after each step.

    >>> import numpy as np
    >>> mw = MasterWeights([np.float32([1.0, 2.0])])
    >>> mw.masters[0] += 1e-3        # an update far below bfloat16's spacing at 1.0 (2**-7)
    >>> mw.refresh(); mw.working[0]
    array([1., 2.], dtype=bfloat16)
    >>> mw.masters[0]                # ... survives in the master, and accumulates there
    array([1.001, 2.001], dtype=float32)
    """

    def __init__(self, params: Sequence[np.ndarray], dtype=bfloat16) -> None:
        try:
            working_dtype = np.dtype(dtype)
        except TypeError:
            raise TypeError(f"MasterWeights: dtype must be a numpy dtype, got {dtype!r}") from None
        working_dtype = _view_ml_bfloat16(np.empty(0, working_dtype)).dtype
        if working_dtype not in _WORKING:
            raise TypeError(f"MasterWeights: dtype must be bfloat16, float16 or float32, got "
                            f"{_dtype_text(working_dtype)}")
        if isinstance(params, np.ndarray):
            raise TypeError("MasterWeights: params must be a sequence of arrays, not one array")
        self.dtype = working_dtype
        self.masters: List[np.ndarray] = []
        params = list(params)
        if not params:
            raise ValueError("MasterWeights: params is empty")  # as the optimizers say
        for i, p in enumerate(params):
            arr = _read_as_ours(_asarray(p))
            if arr.dtype.kind != "f" and arr.dtype != _BF16:
                raise TypeError(f"MasterWeights: params[{i}] must be a float array, got dtype "
                                f"{_dtype_text(arr.dtype)}")
            self.masters.append(np.array(arr, dtype=np.float32, order="C"))
        self.working: List[np.ndarray] = [np.empty(m.shape, working_dtype) for m in self.masters]
        self.refresh()

    def refresh(self) -> None:
        """Round every master to its working copy (nearest-even), in place."""
        with np.errstate(over="ignore"):  # a diverged weight becomes inf, as it would in 16 bits
            for m, w in zip(self.masters, self.working):
                np.copyto(w, m, casting="unsafe")

    @property
    def nbytes(self) -> int:
        """Bytes held: masters plus working copies."""
        return sum(m.nbytes + w.nbytes for m, w in zip(self.masters, self.working))


def _params_list(params: Sequence[np.ndarray], owner: str) -> List[np.ndarray]:
    if isinstance(params, np.ndarray):
        raise TypeError(f"{owner}: params must be a sequence of arrays, not one array")
    out = list(params)
    if not out:
        raise ValueError(f"{owner}: params is empty")
    for i, p in enumerate(out):
        if not isinstance(p, np.ndarray):
            raise TypeError(f"{owner}: params[{i}] must be a numpy array, got {type(p).__name__}")
        p = out[i] = _view_ml_bfloat16(p)   # updates go to the caller's memory all the same
        # either byte order: _write stores through NumPy's casts, as np.copyto does
        # (tests/test_training.py::test_byte_swapped_params)
        if p.dtype.newbyteorder("=") not in (_F32, _BF16):
            raise TypeError(
                f"{owner}: params[{i}] must be float32 (master weights) or bfloat16 (pure "
                f"bfloat16 training), got dtype {_dtype_text(p.dtype)}"
            )
        if not p.flags.writeable:
            raise ValueError(f"{owner}: params[{i}] is read-only")
    return out


def _check_rate(name: str, value: float, owner: str, upper: Optional[float] = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{owner}: {name} must be a number, got {value!r}")
    value = float(value)
    if not (math.isfinite(value) and value >= 0 and (upper is None or value < upper)):
        bound = f"in [0, {upper})" if upper is not None else ">= 0 and finite"
        raise ValueError(f"{owner}: {name} must be {bound}, got {value!r}")
    return value


class _Optimizer:
    """Shared parts: parameter checks, gradient conversion, and the rounded write-back of
    bfloat16 parameters (``rounding`` mode) when there is no float32 master."""

    _name = "optimizer"

    def __init__(self, params: Sequence[np.ndarray], rounding: str, rng: RngLike) -> None:
        self.params = _params_list(params, self._name)
        has_bf16 = any(p.dtype.type is bfloat16 for p in self.params)
        if rounding not in ("nearest_even", "stochastic"):
            raise ValueError(
                f"{self._name}: rounding must be 'nearest_even' or 'stochastic', got {rounding!r}"
            )
        if rounding == "stochastic" and not has_bf16:
            raise ValueError(f"{self._name}: rounding='stochastic' needs bfloat16 params "
                             "(float32 params are updated exactly)")
        if rng is not None and rounding != "stochastic":
            raise ValueError(f"{self._name}: rng is only used with rounding='stochastic'")
        self.rounding = rounding
        self._rng = _generator(rng, self._name) if rounding == "stochastic" else None
        self.steps = 0

    def _grads(self, grads: Sequence[np.ndarray]) -> List[np.ndarray]:
        if isinstance(grads, np.ndarray):
            raise TypeError(f"{self._name}.step: grads must be a sequence of arrays, not one array")
        if isinstance(grads, (str, bytes)):   # else each character counted as a gradient
            raise TypeError(f"{self._name}.step: grads must be a sequence of arrays, got "
                            f"{type(grads).__name__}")
        grads = list(grads)
        if len(grads) != len(self.params):
            raise ValueError(f"{self._name}.step: got {len(grads)} gradients for {len(self.params)} params")
        out = []
        for i, (g, p) in enumerate(zip(grads, self.params)):
            if g is None:
                raise TypeError(f"{self._name}.step: grads[{i}] is None")
            g = _read_as_ours(_asarray(g))
            if g.dtype.kind != "f" and g.dtype != _BF16:
                raise TypeError(f"{self._name}.step: grads[{i}] must be a float array, got dtype "
                                f"{_dtype_text(g.dtype)}")
            if g.shape != p.shape:
                raise ValueError(f"{self._name}.step: grads[{i}] has shape {g.shape}, params[{i}] has {p.shape}")
            out.append(g.astype(np.float32))  # always a copy: the update may work in place
        return out

    def _write(self, p: np.ndarray, w: np.ndarray, delta: np.ndarray) -> None:
        """Store ``w - delta`` (float32 operands) in ``p``. float32 params take the float32
        difference; nearest-even rounds that difference to bfloat16; stochastic rounding
        subtracts in float64 (to 2^-53 of w) and rounds from there, since in float32 an update
        below half of w's float32 spacing would vanish before the random rounding and larger
        ones would be biased (tests/test_training.py::test_stochastic_keeps_updates_below_float32_spacing)."""
        if p.dtype.type is np.float32:
            p[...] = w - delta
        elif self.rounding == "stochastic":
            new = w.astype(np.float64)
            new -= delta
            with np.errstate(over="ignore"):
                if p.dtype.isnative:
                    to_bfloat16(new, "stochastic", rng=self._rng, out=p)
                else:   # to_bfloat16 writes native order only
                    p[...] = to_bfloat16(new, "stochastic", rng=self._rng)
        else:
            with np.errstate(over="ignore"):
                np.copyto(p, w - delta, casting="unsafe")


class SGD(_Optimizer):
    """Stochastic gradient descent with momentum and (coupled, L2) weight decay.

    For each parameter ``w`` with gradient ``g`` (any float dtype, used as float32)::

        g = g + weight_decay * w
        buf = momentum * buf + g            (buf starts at 0; skipped when momentum == 0)
        w = w - lr * buf

    float32 ``params`` (master weights) are updated exactly in float32. bfloat16 ``params``
    (pure bfloat16 training) compute the same update in float32 and round the new weight with
    ``rounding``: ``"nearest_even"`` loses updates below half the weight's spacing,
    ``"stochastic"`` keeps them in expectation (random bits from ``rng``).

    >>> import numpy as np
    >>> w = np.float32([1.0, -2.0])
    >>> opt = SGD([w], lr=0.1, momentum=0.9)
    >>> opt.step([np.float32([1.0, 1.0])]); w
    array([ 0.9, -2.1], dtype=float32)
    >>> opt.step([np.float32([1.0, 1.0])]); w   # buf = 0.9 * 1 + 1 = 1.9
    array([ 0.71, -2.29], dtype=float32)
    """

    _name = "SGD"

    def __init__(
        self,
        params: Sequence[np.ndarray],
        lr: float,
        momentum: float = 0.0,
        weight_decay: float = 0.0,
        *,
        rounding: str = "nearest_even",
        rng: RngLike = None,
    ) -> None:
        super().__init__(params, rounding, rng)
        self.lr = _check_rate("lr", lr, "SGD")
        self.momentum = _check_rate("momentum", momentum, "SGD", upper=1.0)
        self.weight_decay = _check_rate("weight_decay", weight_decay, "SGD")
        self.buffers: List[Optional[np.ndarray]] = [
            np.zeros(p.shape, np.float32) if self.momentum else None for p in self.params
        ]

    def step(self, grads: Sequence[np.ndarray]) -> None:
        """Apply one update from ``grads`` (one array per parameter, same shapes)."""
        grads = self._grads(grads)
        lr, mu, wd = np.float32(self.lr), np.float32(self.momentum), np.float32(self.weight_decay)
        for p, g, buf in zip(self.params, grads, self.buffers):
            w = p.astype(np.float32)
            if wd:
                g += wd * w
            if buf is not None:
                buf *= mu
                buf += g
                g = buf
            self._write(p, w, lr * g)
        self.steps += 1

    @property
    def state_nbytes(self) -> int:
        """Bytes of optimizer state (momentum buffers)."""
        return sum(b.nbytes for b in self.buffers if b is not None)


class Adam(_Optimizer):
    """Adam, with coupled L2 weight decay or, with ``decoupled=True``, AdamW's decay.

    For each parameter ``w`` with gradient ``g`` at step ``t`` (1-based), all in float32::

        g = g + weight_decay * w                    (Adam; skipped when decoupled)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        w = w - lr * weight_decay * w               (AdamW, decoupled=True)
        w = w - lr * (m / (1 - beta1**t)) / (sqrt(v / (1 - beta2**t)) + eps)

    Parameters may be float32 masters or bfloat16 weights rounded with ``rounding``, as for
    :class:`SGD`. The moments ``m`` and ``v`` are float32 either way.

    >>> import numpy as np
    >>> w = np.float32([1.0])
    >>> opt = Adam([w], lr=0.01)
    >>> opt.step([np.float32([5.0])]); w.round(6)   # the first step moves every weight by ~lr
    array([0.99], dtype=float32)
    """

    _name = "Adam"
    _decoupled_default = False

    def __init__(
        self,
        params: Sequence[np.ndarray],
        lr: float = 1e-3,
        betas: Tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        *,
        decoupled: Optional[bool] = None,
        rounding: str = "nearest_even",
        rng: RngLike = None,
    ) -> None:
        super().__init__(params, rounding, rng)
        name = self._name
        self.lr = _check_rate("lr", lr, name)
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise TypeError(f"{name}: betas must be a pair (beta1, beta2), got {betas!r}")
        self.beta1 = _check_rate("betas[0]", betas[0], name, upper=1.0)
        self.beta2 = _check_rate("betas[1]", betas[1], name, upper=1.0)
        self.eps = _check_rate("eps", eps, name)
        self.weight_decay = _check_rate("weight_decay", weight_decay, name)
        if decoupled is not None and not isinstance(decoupled, (bool, np.bool_)):
            raise TypeError(f"{name}: decoupled must be True, False or None, got {decoupled!r}")
        self.decoupled = self._decoupled_default if decoupled is None else bool(decoupled)
        self.m = [np.zeros(p.shape, np.float32) for p in self.params]
        self.v = [np.zeros(p.shape, np.float32) for p in self.params]

    def step(self, grads: Sequence[np.ndarray]) -> None:
        """Apply one update from ``grads`` (one array per parameter, same shapes)."""
        grads = self._grads(grads)
        self.steps += 1
        t = self.steps
        b1, b2 = np.float32(self.beta1), np.float32(self.beta2)
        # 1 - beta in float64, then rounded, as torch takes it: 1 - float32(0.999) would be
        # 0.00099998713 and skew early steps (tests/test_training.py::
        # test_adam_first_steps_match_torch_for_betas_near_one)
        a1, a2 = np.float32(1.0 - self.beta1), np.float32(1.0 - self.beta2)
        lr, wd, eps = np.float32(self.lr), np.float32(self.weight_decay), np.float32(self.eps)
        c1 = np.float32(1.0 - self.beta1**t)
        c2 = np.float32(1.0 - self.beta2**t)
        for p, g, m, v in zip(self.params, grads, self.m, self.v):
            w = p.astype(np.float32)
            if wd and not self.decoupled:
                g += wd * w
            m *= b1
            m += a1 * g
            v *= b2
            v += a2 * (g * g)
            delta = lr * ((m / c1) / (np.sqrt(v / c2) + eps))
            if wd and self.decoupled:
                if p.dtype.type is np.float32:   # torch's order: the decay, then the step
                    w -= lr * wd * w
                else:                            # a bfloat16 weight: one difference, rounded once
                    delta += (lr * wd) * w
            self._write(p, w, delta)

    @property
    def state_nbytes(self) -> int:
        """Bytes of optimizer state (the two moments)."""
        return sum(a.nbytes + b.nbytes for a, b in zip(self.m, self.v))


class AdamW(Adam):
    """Adam with decoupled weight decay (default 0.01): ``w -= lr * weight_decay * w`` apart
    from the gradient. Same arguments and bfloat16 handling as :class:`Adam`.

    >>> import numpy as np
    >>> w = np.float32([1.0])
    >>> AdamW([w], lr=0.1, weight_decay=0.5).step([np.float32([0.0])]); w   # decay only
    array([0.95], dtype=float32)
    """

    _name = "AdamW"
    _decoupled_default = True

    def __init__(
        self,
        params: Sequence[np.ndarray],
        lr: float = 1e-3,
        betas: Tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.01,
        *,
        rounding: str = "nearest_even",
        rng: RngLike = None,
    ) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, decoupled=True, rounding=rounding, rng=rng)
