"""Sorting: np.sort and np.argsort of uniform random values, one long array and many rows."""

from __future__ import annotations

from _harness import ONE_THREAD_NOTE, Context, Section, format_count, speed_row
from bench_reductions import kernel_tier

FULL_SIZES = [2**24]
QUICK_SIZES = [2**16]
# many rows sorted independently: row lengths, at this many elements in all
FULL_ROW_LENGTHS = [16, 256, 2048, 8192]
QUICK_ROW_LENGTHS = [16, 2048]
FULL_ROW_TOTAL = 2**22
QUICK_ROW_TOTAL = 2**14


def build_sort(ctx: Context) -> Section:
    section = Section(
        key="sort",
        title="Sorting",
        note=(
            "Time per call of `np.sort(a)` and `np.argsort(a)` (torch: `torch.sort(a)`, which also "
            "returns the indices, and `torch.argsort(a)`) on uniform random values. Calls slower "
            "than a second are timed once after the warm-up. "
            "Rows: a (rows, n) array sorted along its last axis (`np.sort(a, axis=-1)`), and "
            "columns: along the first axis of an (n, rows) array (`np.sort(a.T)`, which NumPy "
            "sorts by copying each column to a buffer). "
            f"Our kernels ran the `{kernel_tier()}` tier (value sorts of up to 8192 elements have "
            "an AVX-512 path). "
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
    if ctx.settings.sizes:  # --sizes names array sizes: the row tables have their own shapes
        return section
    row_total = FULL_ROW_TOTAL if not ctx.settings.quick else QUICK_ROW_TOTAL
    for n in ctx.settings.pick_sizes(FULL_ROW_LENGTHS, QUICK_ROW_LENGTHS):
        rows = row_total // n
        for layout in ("rows", "columns"):
            size = f"{format_count(rows)}x{format_count(n)}"
            for name in ("sort", "argsort"):

                def setup(c, n=n, rows=rows, name=name, layout=layout):
                    op = getattr(c, name)
                    x = ctx.uniform_f32(rows * n, salt=1)
                    if layout == "rows":
                        a = c.from_f32(x.reshape(rows, n))
                        return lambda: op(a)
                    a = c.from_f32(x.reshape(n, rows))
                    return lambda: op(a.T)

                section.add(
                    f"{name} {layout} {size}",
                    lambda name=name, setup=setup, size=size, layout=layout, n=n, rows=rows: speed_row(
                        ctx, section, f"{name} {layout}", size, setup, work=rows * n
                    ),
                )
    return section


AREAS = {"sort": build_sort}
