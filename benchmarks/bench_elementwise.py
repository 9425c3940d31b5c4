"""Conversions to and from float32, and elementwise ufuncs into preallocated outputs.

Large arrays are memory-bound, so the rate shown is GB/s of traffic (bytes read + bytes
written), comparable with the machine's copy bandwidth printed at the top of the report.
The elementwise table also times arrays that fit in cache, and names the ufunc loops' tier.
"""

from __future__ import annotations

from _harness import ONE_THREAD_NOTE, Context, Section, format_count, speed_row
from bench_reductions import kernel_tier

FULL_SIZES = [2**24]
QUICK_SIZES = [2**16]
# Elementwise: arrays that stay in cache (10^4, 10^5: the sizes everyday code works at, where
# per-call overhead and the loop's instruction count decide) and one that streams from memory.
ELEMENTWISE_FULL_SIZES = [10**4, 10**5, 2**24]
ELEMENTWISE_QUICK_SIZES = [10**4, 2**16]


def ufunc_tier() -> str:
    """The instruction-set tier of the bfloat16 ufunc loops in this process ("unavailable"
    when the package does not import: its cells then report the error)."""
    try:
        import bfloat16_dtype

        return bfloat16_dtype.config()["components"]["ufunc loops"]
    except Exception:  # noqa: BLE001 -- the contender's cells say what went wrong
        return "unavailable"


def build_convert(ctx: Context) -> Section:
    section = Section(
        key="convert",
        title="Conversion to and from float32 (and float64, int64)",
        note=(
            "Time per call of `np.copyto(dst, src, casting='unsafe')` into a preallocated array "
            "(torch: `dst.copy_(src)`), and GB/s of traffic (bytes read + bytes written). "
            f"Our conversion kernels ran the `{kernel_tier()}` tier. "
            "The float32 column is a plain float32 → float32 copy, i.e. the machine's copy "
            f"bandwidth (measured at start-up: {ctx.copy_gbs:.1f} GB/s); in the float64 and int64 "
            "rows it is numpy's cast between that type and float32. "
            + ONE_THREAD_NOTE
        ),
        columns=ctx.columns(),
        ratio_columns=ctx.ratio_columns(),
        rate_unit="GB/s",
        one_thread=True,
    )
    for n in ctx.settings.pick_sizes(FULL_SIZES, QUICK_SIZES):
        size = format_count(n)

        def to_dtype(c, n=n):
            src = c.source_f32(ctx.uniform_f32(n))
            dst = c.empty(n)
            return lambda: c.cast_into(dst, src)

        def to_f32(c, n=n):
            src = c.from_f32(ctx.uniform_f32(n))
            dst = c.empty_f32(n)
            return lambda: c.cast_into(dst, src)

        def from_f64(c, n=n):
            src = c.source_f32(ctx.uniform_f32(n).astype("float64"))  # numpy array or tensor
            dst = c.empty(n)
            return lambda: c.cast_into(dst, src)

        def to_f64(c, n=n):
            src = c.from_f32(ctx.uniform_f32(n))
            dst = c.empty_f64(n)
            return lambda: c.cast_into(dst, src)

        def from_i64(c, n=n):  # integers up to 2^20: numpy's default integer type
            src = c.source_f32((ctx.uniform_f32(n) * 2.0**20).astype("int64"))
            dst = c.empty(n)
            return lambda: c.cast_into(dst, src)

        def traffic(c, n=n):
            return n * (4 + c.itemsize())

        def traffic64(c, n=n):
            return n * (8 + c.itemsize())

        def to_f32_strided(c, n=n):  # every other element: a[::2]
            src = c.from_f32(ctx.uniform_f32(2 * n))[::2]
            dst = c.empty_f32(n)
            return lambda: c.cast_into(dst, src)

        def from_i64_strided(c, n=n):  # every other element of an integer array: a[::2]
            src = c.source_f32((ctx.uniform_f32(2 * n) * 2.0**20).astype("int64"))[::2]
            dst = c.empty(n)
            return lambda: c.cast_into(dst, src)

        for op, setup, work in (("float32 → dtype", to_dtype, traffic), ("dtype → float32", to_f32, traffic),
                                ("float64 → dtype", from_f64, traffic64),
                                ("dtype → float64", to_f64, traffic64),
                                ("int64 → dtype", from_i64, traffic64),
                                ("dtype[::2] → float32", to_f32_strided, traffic),
                                ("int64[::2] → dtype", from_i64_strided, traffic64)):
            section.add(
                f"{op} {size}",
                lambda op=op, setup=setup, size=size, traffic=work: speed_row(
                    ctx, section, op, size, setup, work=traffic
                ),
            )
    return section


def build_elementwise(ctx: Context) -> Section:
    section = Section(
        key="elementwise",
        title="Elementwise ufuncs (into preallocated out=)",
        note=(
            "Time per call of `np.add(a, b, out=c)`, `np.multiply(a, b, out=c)`, "
            "`np.exp/log/tanh(a, out=c)`, `np.arctan2/hypot/power(a, b, out=c)`, and "
            "`np.add(a[::2], b[::2], out=c)` (\"stride 2\") "
            "(torch: `torch.add/mul/exp/log/tanh/atan2/hypot/pow(..., out=c)`) on arrays of the "
            "contender's dtype (values uniform in [0, 1)), and GB/s "
            "of traffic (inputs + output). "
            f"bfloat16_dtype's ufunc loops ran at the `{ufunc_tier()}` tier "
            "(`BFLOAT16_DTYPE_ISA` caps it). "
            + ONE_THREAD_NOTE
        ),
        columns=ctx.columns(),
        ratio_columns=ctx.ratio_columns(),
        rate_unit="GB/s",
        one_thread=True,
    )
    for n in ctx.settings.pick_sizes(ELEMENTWISE_FULL_SIZES, ELEMENTWISE_QUICK_SIZES):
        size = format_count(n)
        for name, arity in (("add", 2), ("multiply", 2), ("exp", 1), ("log", 1), ("tanh", 1),
                            ("arctan2", 2), ("hypot", 2), ("power", 2)):

            def setup(c, n=n, name=name, arity=arity):
                op = getattr(c, name)
                a = c.from_f32(ctx.uniform_f32(n, 0))
                out = c.empty(n)
                if arity == 2:
                    b = c.from_f32(ctx.uniform_f32(n, 1))
                    return lambda: op(a, b, out)
                return lambda: op(a, out)

            def traffic(c, n=n, arity=arity):
                return n * c.itemsize() * (arity + 1)

            section.add(
                f"{name} {size}",
                lambda name=name, setup=setup, size=size, traffic=traffic: speed_row(
                    ctx, section, name, size, setup, work=traffic
                ),
            )

        def strided(c, n=n):  # a[::2] + b[::2]: every other element of each input
            a = c.from_f32(ctx.uniform_f32(2 * n, 0))[::2]
            b = c.from_f32(ctx.uniform_f32(2 * n, 1))[::2]
            out = c.empty(n)
            return lambda: c.add(a, b, out)

        def strided_traffic(c, n=n):
            return n * c.itemsize() * 3

        section.add(
            f"add, stride 2 {size}",
            lambda setup=strided, size=size, traffic=strided_traffic: speed_row(
                ctx, section, "add, stride 2", size, setup, work=traffic
            ),
        )
    return section


AREAS = {"convert": build_convert, "elementwise": build_elementwise}
