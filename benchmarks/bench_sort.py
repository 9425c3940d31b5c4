"""Sorting: np.sort and np.argsort of uniform random values."""

from __future__ import annotations

from _harness import ONE_THREAD_NOTE, Context, Section, format_count, speed_row
from bench_reductions import kernel_tier

FULL_SIZES = [2**24]
QUICK_SIZES = [2**16]


def build_sort(ctx: Context) -> Section:
    section = Section(
        key="sort",
        title="Sorting",
        note=(
            "Time per call of `np.sort(a)` and `np.argsort(a)` (torch: `torch.sort(a)`, which also "
            "returns the indices, and `torch.argsort(a)`) on uniform random values. Calls slower "
            "than a second are timed once after the warm-up. "
            f"Our kernels ran the `{kernel_tier()}` tier (the sorts themselves have no per-tier code). "
            + ONE_THREAD_NOTE
        ),
        columns=ctx.columns(),
        ratio_columns=ctx.ratio_columns(),
        rate_unit="Gelem/s",
        show_rate=False,
        one_thread=True,
    )
    for n in ctx.settings.pick_sizes(FULL_SIZES, QUICK_SIZES):
        size = format_count(n)
        for name in ("sort", "argsort"):

            def setup(c, n=n, name=name):
                op = getattr(c, name)
                a = c.from_f32(ctx.uniform_f32(n))
                return lambda: op(a)

            section.add(
                f"{name} {size}",
                lambda name=name, setup=setup, size=size, n=n: speed_row(
                    ctx, section, name, size, setup, work=n
                ),
            )
    return section


AREAS = {"sort": build_sort}
