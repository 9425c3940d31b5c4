"""PNG plots of a finished run (matplotlib, Agg backend). Missing matplotlib is a note, not an error."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from _harness import Section

COLOURS = {
    "ours": "#d62728",
    "ours_operator": "#ff9896",
    "float32": "#1f77b4",
    "float16": "#7f7f7f",
    "ml_dtypes": "#2ca02c",
    "torch": "#9467bd",
}


def make_plots(
    sections: list[Section], out_dir: Path, copy_gbs: float
) -> tuple[list[tuple[str, str]], str | None]:
    """Write the plots; return ([(file name, caption)], note) where note explains any omission."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return [], "matplotlib is not installed: plots skipped (pip install matplotlib)."

    by_key = {s.key: s for s in sections}
    written: list[tuple[str, str]] = []
    if "matmul" in by_key:
        name = _plot_matmul(plt, by_key["matmul"], out_dir)
        if name:
            written.append((name, "GEMM throughput (GFLOP/s) against matrix size, per contender."))
    speed = [by_key[k] for k in ("convert", "elementwise", "reductions", "sort") if k in by_key]
    if speed:
        name = _plot_relative(plt, speed, out_dir)
        if name:
            caption = "Throughput of each operation relative to float32 (log scale; > 1 is faster)."
            written.append((name, caption))
    if "matvec" in by_key:
        name = _plot_matvec(plt, by_key["matvec"], out_dir, copy_gbs)
        if name:
            written.append((name, "GEMV weight bandwidth (GB/s) beside the measured np.copyto bandwidth."))
    return written, None


def _rate(row, key: str) -> float | None:
    cell = row.cells.get(key)
    return cell.rate if cell is not None and cell.status == "ok" and cell.rate else None


def _plot_matmul(plt: Any, section: Section, out_dir: Path) -> str | None:
    rows = [r for r in section.rows if any(_rate(r, c.key) for c in section.columns)]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(8, 5))
    xs = list(range(len(rows)))
    for col in section.columns:
        points = [(x, _rate(r, col.key)) for x, r in zip(xs, rows) if _rate(r, col.key)]
        if points:
            ax.plot(
                [p[0] for p in points],
                [p[1] for p in points],
                marker="o",
                label=col.label,
                color=COLOURS.get(col.key),
            )
    ax.set_xticks(xs)
    ax.set_xticklabels([r.size for r in rows], rotation=15, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("GFLOP/s (log scale)")
    ax.set_xlabel("matrix size")
    ax.set_title("Matrix multiplication throughput")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    name = "matmul_gflops.png"
    fig.savefig(out_dir / name, dpi=110)
    plt.close(fig)
    return name


def _plot_relative(plt: Any, sections: list[Section], out_dir: Path) -> str | None:
    labels, rows = [], []
    for s in sections:
        for r in s.rows:
            f32 = r.cells.get("float32")
            if f32 is not None and f32.seconds:
                labels.append(f"{r.operation}\n{r.size}")
                rows.append(r)
    if not rows:
        return None
    keys = [c for c in sections[0].columns if c.key != "float32"]
    fig, ax = plt.subplots(figsize=(max(8, 1.1 * len(rows)), 5))
    width = 0.8 / max(1, len(keys))
    for i, col in enumerate(keys):
        xs, ys = [], []
        for x, r in enumerate(rows):
            cell = r.cells.get(col.key)
            if cell is not None and cell.seconds:
                xs.append(x + (i - (len(keys) - 1) / 2) * width)
                ys.append(r.cells["float32"].seconds / cell.seconds)
        if xs:
            ax.bar(xs, ys, width=width, label=col.label, color=COLOURS.get(col.key))
    ax.axhline(1.0, color="black", linewidth=0.8, label="float32 = 1")
    ax.set_yscale("log")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel("throughput relative to float32 (log scale)")
    ax.set_title("Throughput per operation (higher is better)")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    name = "throughput.png"
    fig.savefig(out_dir / name, dpi=110)
    plt.close(fig)
    return name


def _plot_matvec(plt: Any, section: Section, out_dir: Path, copy_gbs: float) -> str | None:
    rows = section.rows
    cols = [c for c in section.columns if any(_rate(r, c.key) for r in rows)]
    if not rows or not cols:
        return None
    fig, ax = plt.subplots(figsize=(8, 5))
    width = 0.8 / len(cols)
    for i, col in enumerate(cols):
        xs = [x + (i - (len(cols) - 1) / 2) * width for x, r in enumerate(rows) if _rate(r, col.key)]
        ys = [_rate(r, col.key) for r in rows if _rate(r, col.key)]
        ax.bar(xs, ys, width=width, label=col.label, color=COLOURS.get(col.key))
    if copy_gbs and not math.isnan(copy_gbs):
        label = "np.copyto bandwidth (read + write)"
        ax.axhline(copy_gbs, color="black", linestyle="--", linewidth=0.8, label=label)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([r.size for r in rows])
    ax.set_ylabel("GB/s of weights read")
    ax.set_title("Matrix-vector product (weight bandwidth)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    name = "matvec_bandwidth.png"
    fig.savefig(out_dir / name, dpi=110)
    plt.close(fig)
    return name
