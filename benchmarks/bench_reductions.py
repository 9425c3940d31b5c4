"""Reductions: np.sum over a large array (the accuracy of the same sums is in bench_accuracy)."""

from __future__ import annotations

from _harness import Context, Section, format_count, speed_row

FULL_SIZES = [2**24]
QUICK_SIZES = [2**16]


def build_reductions(ctx: Context) -> Section:
    section = Section(
        key="reductions",
        title="Reductions",
        note=(
            "Time per call of `np.sum(a)` and `np.mean(a)` (torch: `torch.sum/mean`) over the whole "
            "array, and GB/s of input read. "
            "Speedup = their time ÷ our time; above 1 means bfloat16_dtype is faster."
        ),
        columns=ctx.columns(),
        ratio_columns=ctx.ratio_columns(),
        rate_unit="GB/s",
    )
    for n in ctx.settings.pick_sizes(FULL_SIZES, QUICK_SIZES):
        size = format_count(n)
        for name in ("sum", "mean"):

            def setup(c, n=n, name=name):
                op = getattr(c, name)
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
    return section


AREAS = {"reductions": build_reductions}
