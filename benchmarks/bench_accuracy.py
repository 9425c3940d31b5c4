"""Accuracy against float64, and the classic float16 failures next to bfloat16's behaviour.

Errors of reductions and products are relative to the float64 result computed from the *same
stored values* (each contender's inputs after rounding to its dtype), so they measure the
arithmetic, not the rounding of the inputs; the "storage" row shows that rounding separately.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from _harness import OURS, Cell, Column, Context, Row, Section, format_count, run_cell

FULL_VECTOR = 2**24
QUICK_VECTOR = 2**16
FULL_DOT = 2**20
QUICK_DOT = 2**12
FULL_MATMUL = 256
QUICK_MATMUL = 32


def relative_error(result: Any, truth: float) -> float:
    """|result - truth| / |truth|; inf for an overflowed result, nan for a nan result."""
    result = float(result)
    if math.isinf(result):
        return math.inf
    return abs(result - truth) / abs(truth)


def error_cell(err: float, result: Any = None) -> Cell:
    if math.isnan(err):
        return Cell("nan", value=err)
    if math.isinf(err):
        return Cell(f"inf (result {float(result):g})" if result is not None else "inf", value=err)
    return Cell(f"{err:.2e}", value=err)


def _value_row(ctx: Context, operation: str, size: str, measure: Callable[[Any], Cell], only=None) -> Row:
    cells = {}
    for c in ctx.contenders:
        if only is not None and c.key not in only:
            cells[c.key] = Cell.not_applicable()
        elif not c.available:
            cells[c.key] = Cell.missing(c.status)
        else:
            cells[c.key] = run_cell(lambda c=c: measure(c))
    return Row(operation, size, cells)


def build_accuracy(ctx: Context) -> list[Section]:
    quick = ctx.settings.quick
    sizes = ctx.settings.sizes
    n = sizes[0] if sizes else (QUICK_VECTOR if quick else FULL_VECTOR)
    n_dot = sizes[0] if sizes else (QUICK_DOT if quick else FULL_DOT)
    n_mm = QUICK_MATMUL if quick else FULL_MATMUL

    section = Section(
        key="accuracy",
        title="Accuracy against float64",
        note=(
            "Relative error |result − exact| / |exact| where *exact* is computed in float64 from the "
            "same stored values (the contender's inputs after rounding to its dtype); matmul uses the "
            "Frobenius norm. Results returned in a 16-bit dtype include the final rounding to that "
            "dtype (bfloat16: up to 2^-9 ≈ 2.0e-03). Inputs are uniform in [0, 1) "
            "(matmul: standard normal). Lower is better."
        ),
        columns=ctx.columns(),
    )
    size = format_count(n)

    def stored(c, n=n, salt=0):
        x64 = ctx.rng(10 + salt, n).random(n)
        return x64, c.from_f64(x64)

    def storage(c) -> Cell:
        x64, a = stored(c)
        back = c.to_f64(a)
        err = float(np.mean(np.abs(back - x64) / x64))
        return error_cell(err)

    section.add(
        "storage", lambda: _value_row(ctx, "storage: mean rounding error of float64 → dtype", size, storage)
    )

    for name in ("sum", "mean", "std"):

        def reduction(c, name=name) -> Cell:
            _, a = stored(c)
            exact = getattr(np, name)(c.to_f64(a))
            result = c.to_f64(getattr(c, name)(a)).reshape(-1)[0]
            return error_cell(relative_error(result, exact), result)

        section.add(name, lambda name=name, reduction=reduction: _value_row(ctx, name, size, reduction))

    def sum_of_ones(c) -> Cell:
        ones = c.from_f64(np.ones(n))
        result = float(c.to_f64(c.sum(ones)).reshape(-1)[0])
        return Cell.number(result)

    section.add(
        "sum of ones",
        lambda: _value_row(ctx, f"sum of ones (exact: {n})", size, sum_of_ones),
    )

    def dot(c) -> Cell:
        _, a = stored(c, n_dot, 0)
        _, b = stored(c, n_dot, 1)
        exact = float(np.dot(c.to_f64(a), c.to_f64(b)))
        result = c.to_f64(c.dot(a, b)).reshape(-1)[0]
        return error_cell(relative_error(result, exact), result)

    section.add("dot", lambda: _value_row(ctx, "dot(a, b)", format_count(n_dot), dot))

    def matmul_error(call: Callable[[Any, Any, Any], Any]) -> Callable[[Any], Cell]:
        def measure(c) -> Cell:
            rng = ctx.rng(20, n_mm)
            a = c.from_f64(rng.standard_normal((n_mm, n_mm)))
            b = c.from_f64(rng.standard_normal((n_mm, n_mm)))
            exact = c.to_f64(a) @ c.to_f64(b)
            raw = call(c, a, b)
            result = c.to_f64(raw)
            cell = error_cell(float(np.linalg.norm(result - exact) / np.linalg.norm(exact)))
            returned, given = c.result_dtype(raw), c.result_dtype(a)
            if returned != given:  # e.g. ml_dtypes computes and returns float32
                cell.text += f" (returns {returned})"
            return cell

        return measure

    mm_size = f"n={n_mm}"
    section.add(
        "matmul a @ b",
        lambda: _value_row(ctx, "a @ b", mm_size, matmul_error(lambda c, a, b: c.matmul(a, b))),
    )
    section.add(
        "bfloat16_dtype.matmul",
        lambda: _value_row(
            ctx,
            "bfloat16_dtype.matmul(a, b)",
            mm_size,
            matmul_error(lambda c, a, b: c.package_matmul(a, b)),
            only={OURS},
        ),
    )
    section.add(
        "bfloat16_dtype.matmul f32",
        lambda: _value_row(
            ctx,
            "bfloat16_dtype.matmul(a, b, out_dtype=float32)",
            mm_size,
            matmul_error(lambda c, a, b: c.package_matmul(a, b, out_dtype=np.float32)),
            only={OURS},
        ),
    )
    return [section, build_pitfalls(ctx)]


# Each case: label, exact float64 value, and how to compute it from the contender.
def _stored(value: float) -> Callable[[Any], Any]:
    return lambda c: c.from_f64(np.array([value]))


def _binary(x: float, y: float, op: str) -> Callable[[Any], Any]:
    def compute(c):
        a, b = c.from_f64(np.array([x])), c.from_f64(np.array([y]))
        out = c.empty(1)
        return getattr(c, op)(a, b, out)

    return compute


def _exp(x: float) -> Callable[[Any], Any]:
    return lambda c: c.exp_value(c.from_f64(np.array([x])))


PITFALLS = [
    ("65505 (float16 max is 65504)", 65505.0, _stored(65505.0)),
    ("70000 (float16 overflows ≥ 65520)", 70000.0, _stored(70000.0)),
    ("100000", 100000.0, _stored(100000.0)),
    ("exp(12)", math.exp(12.0), _exp(12.0)),
    ("2^-25 ≈ 2.98e-08 (float16 underflow < 2^-24)", 2.0**-25, _stored(2.0**-25)),
    ("1e-30 (a tiny gradient)", 1e-30, _stored(1e-30)),
    ("2.71875 + 0.0001", 2.71875 + 0.0001, _binary(2.71875, 0.0001, "add")),
    ("256 + 1", 257.0, _binary(256.0, 1.0, "add")),
    (
        "1 + 2^-8 + 2^-30 from float64 (single rounding)",
        1 + 2.0**-8 + 2.0**-30,
        _stored(1 + 2.0**-8 + 2.0**-30),
    ),
]


def build_pitfalls(ctx: Context) -> Section:
    section = Section(
        key="pitfalls",
        title="float16 failures next to bfloat16's behaviour",
        note=(
            "The value each format actually produces. bfloat16 keeps float32's exponent range "
            "(no overflow at 65504, no underflow below 2^-24) but has only 8 significant bits, so "
            "it loses small addends at least as badly as float16 does (2.71875 + 0.0001, 256 + 1). "
            "The last row checks that float64 → bfloat16 rounds once (expected 1.0078125)."
        ),
        columns=[Column("exact", "exact")] + ctx.columns(),
    )
    for label, exact, compute in PITFALLS:

        def run(label=label, exact=exact, compute=compute) -> Row:
            def one(c) -> Cell:
                value = float(c.to_f64(compute(c)).reshape(-1)[0])
                return Cell.number(value, f"{value:.10g}")

            row = _value_row(ctx, label, "scalar", one)
            row.cells = {"exact": Cell.number(exact, f"{exact:.10g}"), **row.cells}
            return row

        section.add(label, run)
    return section


AREAS = {"accuracy": build_accuracy}
