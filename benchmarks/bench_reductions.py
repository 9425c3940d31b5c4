"""Reductions: np.sum, np.mean and argmax over a large array (the accuracy of the same sums is
in bench_accuracy)."""

from __future__ import annotations

import numpy as np
from _harness import ONE_THREAD_NOTE, Context, Section, format_count, speed_row


def kernel_tier() -> str:
    """The instruction-set tier of the bulk kernels in this process (BFLOAT16_DTYPE_ISA caps it);
    'unavailable' when the package does not import (its cells then report the error)."""
    try:
        import bfloat16_dtype
        return bfloat16_dtype.config()["components"]["conversions, reductions, sort"]
    except Exception:  # noqa: BLE001 - any import failure is reported by the contender itself
        return "unavailable"

FULL_SIZES = [2**24]
QUICK_SIZES = [2**16]


def build_reductions(ctx: Context) -> Section:
    section = Section(
        key="reductions",
        title="Reductions",
        note=(
            "Time per call of `np.sum(a)`, `np.mean(a)` and `a.argmax()` (torch: `torch.sum/mean`, "
            "`a.argmax()`) over the whole array, and GB/s of input read; `np.add.at(t, idx, v)` "
            "(torch: `t.index_add_(0, idx, v)`) with as many random indices into a target of "
            "4,096 elements, and GB/s of values and indices read; `np.add.at(t, (rows, cols), v)` "
            "(torch: `t.index_put_((rows, cols), v, accumulate=True)`) with at most 2^16 random "
            "index pairs into a 2048x2048 target (NumPy runs the loop once per index); "
            "`np.sum(a, axis=0 or 1)` (torch: `torch.sum(a, dim=...)`) of the same elements as "
            "rows of 8 (NumPy calls the loop once per row). "
            f"Our kernels ran the `{kernel_tier()}` tier. "
            + ONE_THREAD_NOTE
        ),
        columns=ctx.columns(),
        ratio_columns=ctx.ratio_columns(),
        rate_unit="GB/s",
        one_thread=True,
    )
    for n in ctx.settings.pick_sizes(FULL_SIZES, QUICK_SIZES):
        size = format_count(n)
        for name in ("sum", "mean", "argmax"):

            def setup(c, n=n, name=name):
                # arrays and tensors both have .argmax(); the contenders have no argmax of their own
                op = (lambda a: a.argmax()) if name == "argmax" else getattr(c, name)
                a = c.from_f32(ctx.uniform_f32(n))
                return lambda: op(a)

            def traffic(c, n=n):
                return n * c.itemsize()

            section.add(
                f"{name} {size}",
                lambda name=name, setup=setup, size=size, traffic=traffic: speed_row(
                    ctx, section, name, size, setup, work=traffic
                ),
            )

        for axis in (0, 1):
            # rows of 8: NumPy calls the add loop once per row (axis 1) or once per row of
            # 8 outputs (axis 0), so the cost of a call shows
            def rows_setup(c, n=n, axis=axis):
                a = c.from_f32(ctx.uniform_f32(n).reshape(-1, 8))
                return lambda: c.sum_axis(a, axis)

            section.add(
                f"sum axis={axis} rows of 8 {size}",
                lambda setup=rows_setup, size=size, traffic=traffic, axis=axis: speed_row(
                    ctx, section, f"sum axis={axis}, rows of 8", size, setup, work=traffic
                ),
            )

        def scatter(c, n=n):  # a scatter-add: repeated indices accumulate
            idx = c.index((ctx.uniform_f32(n, 2) * 4096).astype(np.int64) % 4096)
            values = c.from_f32(ctx.uniform_f32(n, 3))
            target = c.from_f32(np.zeros(4096, np.float32))
            return lambda: c.add_at(target, idx, values)

        def scatter_traffic(c, n=n):
            return n * (c.itemsize() + 8)

        section.add(
            f"add.at {size}",
            lambda setup=scatter, size=size, traffic=scatter_traffic: speed_row(
                ctx, section, "add.at", size, setup, work=traffic
            ),
        )
        def scatter_2d(c, n=min(n, 2**16)):
            rows, cols = ((ctx.uniform_f32(n, k) * 2048).astype(np.int64) % 2048 for k in (4, 5))
            values = c.from_f32(ctx.uniform_f32(n, 6))
            target = c.from_f32(np.zeros((2048, 2048), np.float32))
            rows, cols = c.index(rows), c.index(cols)
            return lambda: c.add_at_2d(target, rows, cols, values)

        def scatter_2d_traffic(c, n=min(n, 2**16)):
            return n * (c.itemsize() + 16)

        section.add(
            f"add.at 2-d {format_count(min(n, 2**16))}",
            lambda setup=scatter_2d, traffic=scatter_2d_traffic, n=n: speed_row(
                ctx, section, "add.at 2-d", format_count(min(n, 2**16)), setup, work=traffic
            ),
        )
    return section


AREAS = {"reductions": build_reductions}
