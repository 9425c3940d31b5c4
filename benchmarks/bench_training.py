"""Training with bfloat16: a plain-NumPy MLP on scikit-learn's digits, in six precisions.

    python benchmarks/bench_training.py            # 200 epochs per run, writes training_loss.png
    python benchmarks/bench_training.py --quick    # 15 epochs (CI)

Also the ``training`` area of ``benchmarks/run.py``.

The setup is scikit-learn's ``MLPClassifier`` defaults, taken as they are so that no variant
is favoured by tuning: one hidden layer of 100 ReLU units, Glorot-uniform initialisation,
Adam (lr 1e-3, betas 0.9/0.999, eps 1e-8), L2 penalty 1e-4 (here Adam's coupled weight decay),
minibatches of 200, reshuffled every epoch, 200 epochs (``max_iter``). Data: the 1,797 8×8
digit images bundled with scikit-learn (no download), pixels / 16, a stratified 75/25 split.
Every run uses the same initial weights, batch order and schedule. The loss is the mean
cross-entropy over the batch, computed in float32 from the 16-bit forward pass.

In the 16-bit runs the inputs, weights, activations and gradients are 16-bit arrays; each
matrix product multiplies 16-bit values and accumulates in float32 (``bfloat16_dtype.matmul``
with ``out_dtype=float32`` for bfloat16; float16 products are exact in float32, so float32
matmul of the float16 values is the same contract), then rounds to 16 bits. Softmax and the
loss run in float32.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from _harness import Cell, Column, Context, Row, Section, Settings, render_section

HERE = Path(__file__).resolve().parent

HIDDEN = 100
BATCH = 200
LR = 1e-3
L2 = 1e-4
SEED = 0
EPOCHS_FULL = 200
EPOCHS_QUICK = 15
VARIANTS = [
    ("float32", "float32"),
    ("bf16_mixed", "bfloat16 mixed (fp32 masters, no loss scaling)"),
    ("bf16_pure_rne", "pure bfloat16, nearest-even updates"),
    ("bf16_pure_sr", "pure bfloat16, stochastic-rounding updates"),
    ("fp16_mixed", "float16 mixed (fp32 masters), no loss scaling"),
    ("fp16_scaled", "float16 mixed, dynamic loss scaling"),
]


def load_digits_split():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    return train_test_split(x, y, test_size=0.25, random_state=SEED, stratify=y)


def glorot(rng: np.random.Generator, fan_in: int, fan_out: int) -> tuple[np.ndarray, np.ndarray]:
    bound = np.sqrt(6.0 / (fan_in + fan_out))  # scikit-learn's MLP initialisation
    w = rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32)
    b = rng.uniform(-bound, bound, fan_out).astype(np.float32)
    return w, b


class Precision:
    """How one run rounds: the 16-bit storage type and its float32-accumulating matmul."""

    def __init__(self, dtype):
        import bfloat16_dtype

        self.dtype = np.dtype(dtype)
        self.is_bf16 = self.dtype == np.dtype(bfloat16_dtype.bfloat16)
        self._matmul = bfloat16_dtype.matmul

    def q(self, a: np.ndarray) -> np.ndarray:
        """float32 -> storage type, nearest-even (overflow becomes inf, as in hardware)."""
        if self.dtype == np.float32:
            return a
        with np.errstate(over="ignore"):
            return a.astype(self.dtype)

    def mm(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """16-bit a @ b with float32 accumulation, float32 result."""
        if self.is_bf16:
            return self._matmul(a, b, out_dtype=np.float32)
        return np.matmul(a.astype(np.float32), b.astype(np.float32))


def forward_backward(p: Precision, params: list[np.ndarray], x: np.ndarray, y: np.ndarray,
                     grad_scale: float = 1.0):
    """Loss (float32) and gradients (storage type) of the mean cross-entropy; the gradient of
    the loss is multiplied by grad_scale before it is rounded to 16 bits (loss scaling)."""
    w1, b1, w2, b2 = params
    z1 = p.mm(x, w1) + b1.astype(np.float32)
    h = p.q(np.maximum(z1, 0))
    logits = p.mm(h, w2) + b2.astype(np.float32)
    logits -= logits.max(axis=1, keepdims=True)
    e = np.exp(logits)
    prob = e / e.sum(axis=1, keepdims=True)
    n = x.shape[0]
    loss = float(-np.mean(np.log(np.maximum(prob[np.arange(n), y], 1e-30))))
    d = prob
    d[np.arange(n), y] -= 1.0
    with np.errstate(over="ignore"):
        dlogits = p.q(d * np.float32(grad_scale / n))
    dw2 = p.q(p.mm(h.T, dlogits))
    db2 = p.q(dlogits.astype(np.float32).sum(axis=0))
    dz1 = p.q(p.mm(dlogits, w2.T) * (z1 > 0))
    dw1 = p.q(p.mm(x.T, dz1))
    db1 = p.q(dz1.astype(np.float32).sum(axis=0))
    return loss, [dw1, db1, dw2, db2], {"dlogits": d * np.float32(1.0 / n), "dz1": dz1}


def predict(p: Precision, params: list[np.ndarray], x: np.ndarray) -> np.ndarray:
    w1, b1, w2, b2 = params
    h = p.q(np.maximum(p.mm(x, w1) + b1.astype(np.float32), 0))
    return np.argmax(p.mm(h, w2) + b2.astype(np.float32), axis=1)


@dataclass
class RunResult:
    key: str
    label: str
    accuracy: float
    final_loss: float
    losses: list[float]
    accuracies: list[float]
    seconds_per_epoch: float
    bytes_per_parameter: float
    bytes_breakdown: str
    skipped_steps: int
    final_scale: float | None = None
    checkpoints: list[dict] = field(default_factory=list)


def train(key: str, epochs: int, checkpoint_epochs: tuple[int, ...] = ()) -> RunResult:
    """Train one variant; float32 also records (weights, update, gradients) at checkpoints."""
    import bfloat16_dtype
    from bfloat16_dtype.training import Adam, LossScaler, MasterWeights

    bf16, f16 = bfloat16_dtype.bfloat16, np.float16
    x_train, x_test, y_train, y_test = load_digits_split()
    rng = np.random.default_rng(SEED)
    w1, b1 = glorot(rng, x_train.shape[1], HIDDEN)
    w2, b2 = glorot(rng, HIDDEN, 10)
    init = [w1, b1, w2, b2]
    n_params = sum(a.size for a in init)
    order_rng = np.random.default_rng(SEED + 1)  # the same batch order for every run

    masters = None
    scaler = None
    if key == "float32":
        prec = Precision(np.float32)
        params = [a.copy() for a in init]
        opt = Adam(params, lr=LR, weight_decay=L2)
    elif key in ("bf16_mixed", "fp16_mixed", "fp16_scaled"):
        prec = Precision(bf16 if key == "bf16_mixed" else f16)
        masters = MasterWeights(init, dtype=prec.dtype)
        params = masters.working
        opt = Adam(masters.masters, lr=LR, weight_decay=L2)
        if key == "fp16_scaled":
            scaler = LossScaler()  # the common defaults: 2^16, x2 after 2000 clean steps
    else:
        prec = Precision(bf16)
        params = [a.astype(bf16) for a in init]
        rounding = "stochastic" if key == "bf16_pure_sr" else "nearest_even"
        opt = Adam(params, lr=LR, weight_decay=L2, rounding=rounding,
                   rng=SEED + 2 if rounding == "stochastic" else None)
    x_tr, x_te = prec.q(x_train), prec.q(x_test)

    losses, accuracies, epoch_times, checkpoints = [], [], [], []
    grads = None
    for epoch in range(1, epochs + 1):
        perm = order_rng.permutation(len(x_tr))
        batch_losses = []
        started = time.perf_counter()
        for start in range(0, len(perm), BATCH):
            idx = perm[start:start + BATCH]
            scale = scaler.scale if scaler else 1.0
            loss, grads, extra = forward_backward(prec, params, x_tr[idx], y_train[idx], scale)
            batch_losses.append(loss)
            if scaler is not None:
                unscaled = scaler.unscale(grads)
                if unscaled is None:
                    continue  # inf/NaN in the gradients: skip the step (the scale was halved)
                grads_for_step = unscaled
            else:
                grads_for_step = grads
            record = key == "float32" and epoch in checkpoint_epochs and start == 0
            before = [a.copy() for a in params] if record else None
            opt.step(grads_for_step)
            if masters is not None:
                masters.refresh()
            if record:
                checkpoints.append({
                    "epoch": epoch,
                    "weights": before,
                    "updates": [a - b for a, b in zip(params, before)],
                    "grads": list(grads) + [extra["dlogits"], extra["dz1"]],
                })
        epoch_times.append(time.perf_counter() - started)
        losses.append(float(np.mean(batch_losses)))
        accuracies.append(float(np.mean(predict(prec, params, x_te) == y_test)))

    held = [("weights", sum(a.nbytes for a in params))]
    if masters is not None:
        held.append(("fp32 masters", sum(a.nbytes for a in masters.masters)))
    held.append(("grads", sum(g.nbytes for g in grads)))
    held.append(("Adam m, v", opt.state_nbytes))
    per_param = [(what, nbytes / n_params) for what, nbytes in held]
    total = sum(b for _, b in per_param)
    breakdown = " + ".join(f"{b:g} {what}" for what, b in per_param)
    return RunResult(
        key=key,
        label=dict(VARIANTS)[key],
        accuracy=accuracies[-1],
        final_loss=losses[-1],
        losses=losses,
        accuracies=accuracies,
        seconds_per_epoch=float(np.median(epoch_times)),
        bytes_per_parameter=total,
        bytes_breakdown=breakdown,
        skipped_steps=scaler.skipped_steps if scaler else 0,
        final_scale=scaler.scale if scaler else None,
        checkpoints=checkpoints,
    )


@contextlib.contextmanager
def single_thread():
    """One thread for OpenBLAS (float32/float16 runs) and for bfloat16_dtype's matmul: this
    model's products are far too small for threads to pay, and both sides get the same."""
    import bfloat16_dtype

    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        limits = contextlib.nullcontext()
    else:
        limits = threadpool_limits(1)
    with limits, bfloat16_dtype.num_threads(1):
        yield


class Runs:
    """Each variant trained once per report, on first use (rows and the plot share them)."""

    def __init__(self, quick: bool):
        self.epochs = EPOCHS_QUICK if quick else EPOCHS_FULL
        self.checkpoint_epochs = (1, max(2, self.epochs // 2), self.epochs)
        self.results: dict[str, RunResult] = {}

    def get(self, key: str) -> RunResult:
        if key not in self.results:
            with single_thread():
                checkpoints = self.checkpoint_epochs if key == "float32" else ()
                self.results[key] = train(key, self.epochs, checkpoints)
        return self.results[key]


def sklearn_status() -> str | None:
    try:
        import sklearn  # noqa: F401
    except ImportError:
        return "not installed"
    return None


_LAST_RUNS: list[Runs] = []  # the runs of the latest report, for write_plots


def build_training(ctx: Context) -> list[Section]:
    runs = Runs(ctx.settings.quick)
    _LAST_RUNS[:] = [runs]
    missing = sklearn_status()
    size = f"64-{HIDDEN}-10 MLP, {runs.epochs} epochs"

    results = Section(
        key="training",
        title="Training an MLP on digits: float32, bfloat16 and float16",
        note=(
            f"A plain-NumPy MLP (64-{HIDDEN}-10, ReLU) trained on scikit-learn's bundled digits "
            f"with scikit-learn MLPClassifier's defaults, untuned: Adam lr {LR:g}, L2 {L2:g}, "
            f"batch {BATCH}, {runs.epochs} epochs; same initial weights and batch order in every "
            "run. 16-bit runs store inputs, weights, activations and gradients in 16 bits and "
            "multiply with float32 accumulation. Dynamic loss scaling uses LossScaler's defaults "
            "(PyTorch GradScaler's: start at 2^16, halve and skip on inf/NaN, ×2 after 2000 clean "
            "steps). *bytes per parameter* counts what the run holds "
            "per parameter: weights, fp32 masters, one set of gradients and Adam's two float32 "
            "moments (activations come on top). Time per epoch is the median over epochs, one "
            "thread for both BLAS and bfloat16_dtype (this model's products are far too small for "
            "threads); the 16-bit runs pay NumPy-level conversions that such a small model cannot "
            "amortise."
        ),
        columns=[
            Column("accuracy", "test accuracy"),
            Column("loss", "final train loss"),
            Column("epoch_time", "time per epoch"),
            Column("bytes", "bytes per parameter"),
            Column("skipped", "skipped steps"),
        ],
    )

    def variant_row(key: str, label: str) -> Row:
        if missing:
            return Row(label, size, {c.key: Cell.missing("scikit-learn " + missing) for c in results.columns})
        r = runs.get(key)
        skipped = str(r.skipped_steps)
        if r.final_scale is not None:
            skipped += f" (final scale 2^{np.log2(r.final_scale):.0f})"
        cells = {
            "accuracy": Cell.number(r.accuracy, f"{100 * r.accuracy:.1f} %"),
            "loss": Cell.number(r.final_loss, f"{r.final_loss:.4f}"),
            "epoch_time": Cell(f"{1e3 * r.seconds_per_epoch:.1f} ms", seconds=r.seconds_per_epoch),
            "bytes": Cell.number(r.bytes_per_parameter, f"{r.bytes_per_parameter:g} = {r.bytes_breakdown}"),
            "skipped": Cell.number(r.skipped_steps, skipped),
        }
        return Row(label, size, cells)

    for key, label in VARIANTS:
        results.add(label, lambda key=key, label=label: variant_row(key, label))

    underflow = Section(
        key="training_underflow",
        title="Gradients that underflow in float16 but not in bfloat16",
        note=(
            "The float32 run's gradients (weights, biases, and the activation gradients dlogits "
            "and dz1) on the first batch of an epoch, rounded to each 16-bit type. Share of the "
            "nonzero float32 gradient entries that become 0, and that land in float16's "
            "subnormal range (below 2^-14, fewer than 11 significant bits). Scaling by 2^16 "
            "(the loss scaler's starting scale) lifts most of them back into float16's range."
        ),
        columns=[
            Column("nonzero", "nonzero entries"),
            Column("fp16_zero", "→ 0 in float16"),
            Column("fp16_zero_scaled", "→ 0 in float16 after ×2^16"),
            Column("bf16_zero", "→ 0 in bfloat16"),
            Column("fp16_subnormal", "float16 subnormal"),
            Column("smallest", "smallest |gradient|"),
        ],
    )

    def underflow_row(index: int) -> Row:
        if missing:
            return Row(f"checkpoint {index + 1}", "—",
                       {c.key: Cell.missing("scikit-learn " + missing) for c in underflow.columns})
        import bfloat16_dtype

        cp = runs.get("float32").checkpoints[index]
        g = np.concatenate([np.asarray(a, np.float32).ravel() for a in cp["grads"]])
        g = g[g != 0]
        with np.errstate(over="ignore", under="ignore"):
            f16 = g.astype(np.float16)
            f16_scaled = (g * np.float32(2.0**16)).astype(np.float16)
        b16 = g.astype(bfloat16_dtype.bfloat16)
        n = g.size

        def share(mask) -> Cell:
            k = int(np.count_nonzero(mask))
            return Cell.number(k / n, f"{100 * k / n:.2f} % ({k})")

        cells = {
            "nonzero": Cell.number(n, str(n)),
            "fp16_zero": share(f16 == 0),
            "fp16_zero_scaled": share(f16_scaled == 0),
            "bf16_zero": share(b16.astype(np.float32) == 0),
            "fp16_subnormal": share((f16 != 0) & (np.abs(f16) < np.float16(2.0**-14))),
            "smallest": Cell.number(float(np.abs(g).min()), f"{float(np.abs(g).min()):.3g}"),
        }
        return Row(f"float32 run, epoch {cp['epoch']}", "all gradients", cells)

    for i in range(3):
        underflow.add(f"underflow {i}", lambda i=i: underflow_row(i))

    swamping = Section(
        key="training_swamping",
        title="Weight updates lost to swamping, and kept by masters or stochastic rounding",
        note=(
            "Adam's updates Δ from the float32 run (first batch of an epoch) applied to the "
            "bfloat16-rounded weights w: *vanished* = share of nonzero Δ with round(w + Δ) = w. "
            "*kept* = mean over entries of E[new w − w] / Δ (1 = the update survives on average; "
            "stochastic rounding estimated from 64 draws). The last row adds 10^-3 to 1.0 a "
            "thousand times (exact answer 2.0)."
        ),
        columns=[
            Column("vanished_rne", "vanished, bf16 nearest-even"),
            Column("kept_rne", "kept, bf16 nearest-even"),
            Column("vanished_master", "vanished, fp32 master"),
            Column("kept_sr", "kept, bf16 stochastic"),
        ],
    )

    def swamping_row(index: int) -> Row:
        if missing:
            return Row(f"checkpoint {index + 1}", "—",
                       {c.key: Cell.missing("scikit-learn " + missing) for c in swamping.columns})
        import bfloat16_dtype
        from bfloat16_dtype.rounding import to_bfloat16

        bf16 = bfloat16_dtype.bfloat16
        cp = runs.get("float32").checkpoints[index]
        w32 = np.concatenate([a.ravel() for a in cp["weights"]])
        delta = np.concatenate([a.ravel() for a in cp["updates"]])
        keep = delta != 0
        w32, delta = w32[keep], delta[keep]
        w = w32.astype(bf16).astype(np.float32)  # the bfloat16 weights
        rne = (w + delta).astype(bf16).astype(np.float32)
        master = w32 + delta
        rng = np.random.default_rng(SEED + 3)
        draws = 64
        sr = np.zeros_like(w, dtype=np.float64)
        for _ in range(draws):
            sr += to_bfloat16(w.astype(np.float64) + delta, "stochastic", rng=rng).astype(np.float64)
        sr_mean = sr / draws
        n = delta.size

        def pct(x: float) -> Cell:
            return Cell.number(x, f"{100 * x:.1f} %")

        cells = {
            "vanished_rne": pct(np.count_nonzero(rne == w) / n),
            "kept_rne": Cell.number(float(np.mean((rne - w) / delta)), f"{np.mean((rne - w) / delta):.3f}"),
            "vanished_master": pct(np.count_nonzero(master == w32) / n),
            "kept_sr": Cell.number(float(np.mean((sr_mean - w) / delta)), f"{np.mean((sr_mean - w) / delta):.3f}"),
        }
        return Row(f"float32 run, epoch {cp['epoch']}", f"{n} updates", cells)

    def toy_row() -> Row:
        import bfloat16_dtype
        from bfloat16_dtype.rounding import to_bfloat16

        bf16 = bfloat16_dtype.bfloat16
        step = np.float32(1e-3)
        rne = np.ones(1, bf16)
        master = np.ones(1, np.float32)
        sr = np.ones(1000, bf16)  # 1000 independent copies: the mean shows the expectation
        rng = np.random.default_rng(SEED + 4)
        for _ in range(1000):
            rne = (rne.astype(np.float32) + step).astype(bf16)
            master += step
            sr = to_bfloat16(sr.astype(np.float32) + step, "stochastic", rng=rng)
        r, m = float(rne[0]), float(master[0])
        s = sr.astype(np.float64)
        cells = {
            "vanished_rne": Cell.number(r, f"result {r:g}"),
            "kept_rne": Cell.number(r - 1.0, f"{(r - 1.0):.3f}"),
            "vanished_master": Cell.number(m, f"result {m:.4f}"),
            "kept_sr": Cell.number(float(s.mean()) - 1.0,
                                   f"{s.mean() - 1.0:.3f} (mean of 1000 runs; one run {s[0]:g})"),
        }
        return Row("1.0 + 1e-3, 1000 times", "1 weight", cells)

    for i in range(3):
        swamping.add(f"swamping {i}", lambda i=i: swamping_row(i))
    swamping.add("toy accumulation", toy_row)
    return [results, underflow, swamping]


def write_plots(out_dir: Path) -> list[tuple[str, str]]:
    """Loss and accuracy curves of the latest report's runs -> training_loss.png."""
    if not _LAST_RUNS or not _LAST_RUNS[0].results:
        return []
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    runs = _LAST_RUNS[0]
    styles = {
        "float32": ("#1f77b4", "-"), "bf16_mixed": ("#d62728", "-"), "bf16_pure_rne": ("#ff7f0e", "--"),
        "bf16_pure_sr": ("#9467bd", "-."), "fp16_mixed": ("#7f7f7f", ":"), "fp16_scaled": ("#2ca02c", "--"),
    }
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(12, 4.5))
    for key, label in VARIANTS:
        r = runs.results.get(key)
        if r is None:
            continue
        colour, style = styles[key]
        epochs = np.arange(1, len(r.losses) + 1)
        ax_loss.plot(epochs, r.losses, style, color=colour, label=label)
        ax_acc.plot(epochs, np.array(r.accuracies) * 100, style, color=colour, label=label)
    ax_loss.set_yscale("log")
    ax_loss.set_xlabel("epoch")
    ax_loss.set_ylabel("training loss (mean cross-entropy)")
    ax_acc.set_xlabel("epoch")
    ax_acc.set_ylabel("test accuracy (%)")
    ax_acc.set_ylim(max(0, min(r.accuracy for r in runs.results.values()) * 100 - 10), 100)
    ax_loss.legend(fontsize=8)
    for ax in (ax_loss, ax_acc):
        ax.grid(alpha=0.3)
    fig.suptitle(f"MLP on digits, Adam, {runs.epochs} epochs: same seed and schedule per run")
    fig.tight_layout()
    out_dir.mkdir(parents=True, exist_ok=True)
    name = "training_loss.png"
    fig.savefig(out_dir / name, dpi=110)
    plt.close(fig)
    return [(name, "Training loss and test accuracy per epoch of the MLP on digits, per precision.")]


AREAS = {"training": build_training}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="bfloat16 training benchmark (MLP on digits).")
    parser.add_argument("--quick", action="store_true", help=f"{EPOCHS_QUICK} epochs instead of {EPOCHS_FULL}")
    parser.add_argument("--out-dir", type=Path, default=HERE / "results", help="where the plot goes")
    parser.add_argument("--no-plots", action="store_true", help="do not write training_loss.png")
    args = parser.parse_args(argv)
    ctx = Context(Settings.for_mode(args.quick), [])
    for section in build_training(ctx):
        for task in section.tasks:
            section.rows.append(task.run())
        print(render_section(section), end="\n\n")
    if not args.no_plots:
        for name, _ in write_plots(args.out_dir):
            print(f"wrote {args.out_dir / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
