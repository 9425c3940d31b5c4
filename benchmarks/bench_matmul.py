"""Matrix products: GEMM at several sizes (GFLOP/s) and GEMV on LLM-sized weights (GB/s).

Our package is measured twice: ``bfloat16_dtype.matmul(a, b)`` (the mixed-precision kernel)
and the ``a @ b`` operator on bfloat16 arrays. float32 ``@`` is numpy's BLAS (sgemm/sgemv).
Contenders whose estimated time per call exceeds the run's limit are skipped with the estimate.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np

from _harness import OURS, Cell, Column, Context, Row, Section, Skip, measure, run_cell

FULL_SQUARE = [256, 512, 1024, 2048]
FULL_EXTRA = [(4096, 1024, 4096)]  # (m, k, n): 4096×1024 @ 1024×4096
QUICK_SQUARE = [64, 128]
FULL_MATVEC = [(8192, 8192), (16384, 4096)]
QUICK_MATVEC = [(512, 512), (1024, 256)]


@dataclasses.dataclass
class Variant:
    """One column of the matmul tables: a contender and the call that multiplies."""

    key: str
    label: str
    contender: Any
    call: Callable[[Any, Any], Any]


def variants(ctx: Context) -> list[Variant]:
    out = []
    for c in ctx.contenders:
        if c.key == OURS:
            out.append(Variant(OURS, "bfloat16_dtype.matmul", c, lambda a, b, c=c: c.package_matmul(a, b)))
            out.append(Variant("ours_operator", "bfloat16_dtype a @ b", c, c.matmul))
        elif c.key == "float32":
            out.append(Variant(c.key, "float32 (BLAS)", c, c.matmul))
        else:
            out.append(Variant(c.key, c.label, c, c.matmul))
    return out


def _columns(vs: list[Variant]) -> list[Column]:
    return [Column(v.key, v.label) for v in vs]


def _ratio_columns(vs: list[Variant]) -> list[Column]:
    return [Column(v.key, v.label) for v in vs if v.key in ("float32", "ml_dtypes")]


class _RateMemory:
    """Remembers each column's last rate to predict (and skip) calls that would take too long."""

    def __init__(self, limit: float):
        self.limit, self.rates = limit, {}

    def check(self, key: str, work: float) -> None:
        rate = self.rates.get(key)
        if rate:
            estimate = work / rate
            if estimate > self.limit:
                raise Skip(f"too slow: ~{estimate:.0f} s per call" if estimate >= 1 else "too slow")

    def record(self, key: str, work: float, seconds: float) -> None:
        self.rates[key] = work / seconds


def _row(
    ctx: Context,
    section: Section,
    vs: list[Variant],
    operation: str,
    size: str,
    make_inputs: Callable[[Any], tuple[Any, Any]],
    work_of: Callable[[Variant], float],
    rate_work_of: Callable[[Variant], float],
    memory: _RateMemory,
) -> Row:
    cells: dict[str, Cell] = {}
    for v in vs:
        c = v.contender
        if not c.available:
            cells[v.key] = Cell.missing(c.status)
            continue

        def one(v: Variant = v, c: Any = c) -> Cell:
            memory.check(v.key, work_of(v))
            a, b = make_inputs(c)
            t = measure(lambda: v.call(a, b), ctx.settings)
            memory.record(v.key, work_of(v), t.seconds)
            return Cell.timing(t, rate_work_of(v) / t.seconds / 1e9, section.rate_unit)

        cells[v.key] = run_cell(one)
    row = Row(operation, size, cells)
    section.fill_speedups(row)
    return row


def _result_dtype_row(ctx: Context, vs: list[Variant], shape_b: tuple[int, ...]) -> Row:
    """Which dtype each call returns (e.g. ml_dtypes' `@` computes and returns float32)."""
    cells: dict[str, Cell] = {}
    x = ctx.rng(7).standard_normal((8, 8)).astype(np.float32)
    y = ctx.rng(8).standard_normal(shape_b).astype(np.float32)
    for v in vs:
        c = v.contender
        if not c.available:
            cells[v.key] = Cell.missing(c.status)
            continue
        cells[v.key] = run_cell(
            lambda v=v, c=c: Cell(c.result_dtype(v.call(c.from_f32(x), c.from_f32(y))), status="ok")
        )
    return Row("result dtype", "—", cells)


def build_matmul(ctx: Context) -> Section:
    vs = variants(ctx)
    section = Section(
        key="matmul",
        title="Matrix multiplication (GEMM)",
        note=(
            "Time per call and GFLOP/s (2·m·k·n / time). Ours: `bfloat16_dtype.matmul(a, b)` on "
            "bfloat16 arrays (bfloat16 products, float32 accumulation) and the `a @ b` operator; "
            "float32 is numpy's BLAS sgemm; float16 and ml_dtypes use numpy's `@` on their dtype; "
            "torch uses `torch.matmul` on CPU bfloat16 tensors. "
            "Speedup compares `bfloat16_dtype.matmul`: their time ÷ our time; above 1 means "
            "bfloat16_dtype is faster. A contender is skipped at a size where its previous rate "
            "predicts a call slower than the run's limit."
        ),
        columns=_columns(vs),
        ratio_columns=_ratio_columns(vs),
        rate_unit="GFLOP/s",
    )
    memory = _RateMemory(ctx.settings.max_call)
    section.add("result dtype", lambda: _result_dtype_row(ctx, vs, (8, 8)))
    shapes = [(n, n, n) for n in ctx.settings.pick_sizes(FULL_SQUARE, QUICK_SQUARE)]
    if not ctx.settings.quick and not ctx.settings.sizes:
        shapes += FULL_EXTRA
    for m, k, n in shapes:
        size = f"n={n}" if m == k == n else f"{m}×{k} @ {k}×{n}"
        flops = 2.0 * m * k * n

        def inputs(c, m=m, k=k, n=n):
            a = ctx.rng(1, m, k).standard_normal((m, k), dtype=np.float32)
            b = ctx.rng(2, k, n).standard_normal((k, n), dtype=np.float32)
            return c.from_f32(a), c.from_f32(b)

        section.add(
            f"matmul {size}",
            lambda size=size, inputs=inputs, flops=flops: _row(
                ctx, section, vs, "a @ b", size, inputs, lambda v: flops, lambda v: flops, memory
            ),
        )
    return section


def build_matvec(ctx: Context) -> Section:
    vs = variants(ctx)
    section = Section(
        key="matvec",
        title="Matrix-vector products (GEMV, LLM decode shapes)",
        note=(
            "Time per call of W @ x with W of shape m×k in the contender's dtype and x of length k, "
            "and GB/s of weight traffic (W.nbytes / time): decoding one token is bound by reading "
            "the weights, so 16-bit weights can at best double float32's speed. float32 is numpy's "
            "BLAS sgemv. Speedup compares `bfloat16_dtype.matmul`: their time ÷ our time; above 1 "
            "means bfloat16_dtype is faster."
        ),
        columns=_columns(vs),
        ratio_columns=_ratio_columns(vs),
        rate_unit="GB/s",
    )
    memory = _RateMemory(ctx.settings.max_call)
    if ctx.settings.sizes:
        shapes = [(s, s) for s in ctx.settings.sizes]
    else:
        shapes = QUICK_MATVEC if ctx.settings.quick else FULL_MATVEC
    for m, k in shapes:
        size = f"{m}×{k}"

        def inputs(c, m=m, k=k):
            w = ctx.rng(3, m, k).standard_normal((m, k), dtype=np.float32)
            x = ctx.rng(4, k).standard_normal(k, dtype=np.float32)
            return c.from_f32(w), c.from_f32(x)

        def weight_bytes(v, m=m, k=k):
            return m * k * v.contender.itemsize()

        section.add(
            f"matvec {size}",
            lambda size=size, inputs=inputs, weight_bytes=weight_bytes: _row(
                ctx, section, vs, "W @ x", size, inputs, weight_bytes, weight_bytes, memory
            ),
        )
    return section


AREAS = {"matmul": build_matmul, "matvec": build_matvec}
