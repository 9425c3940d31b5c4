"""Matrix products: GEMM at several sizes (GFLOP/s) and GEMV on LLM-sized weights (GB/s).

Our package is measured twice: ``bfloat16_dtype.matmul(a, b)`` (the mixed-precision kernel)
and the ``a @ b`` operator on bfloat16 arrays. float32 ``@`` is numpy's BLAS (sgemm/sgemv).
Contenders whose estimated time per call exceeds the run's limit are skipped with the estimate.

Besides the size sweeps, the ``matmul`` area times GEMM at one and two threads and measures the
extra memory one call needs (in a child process: ``python bench_matmul.py --memory-child N``
prints the figures as JSON); the ``matvec`` area adds W @ V with a few columns in V (batched
decoding).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, ContextManager

import numpy as np

from _harness import (OURS, Cell, Column, Context, Row, Section, Skip, Timing, best_round_cells,
                      format_bytes, measure, run_cell)

HERE = Path(__file__).resolve().parent

FULL_SQUARE = [16, 64, 256, 512, 1024, 2048, 4096]  # n = 16 and 64 measure the cost of a call
FULL_EXTRA = [(4096, 1024, 4096)]  # (m, k, n): 4096×1024 @ 1024×4096
# stacks of products, (batch, m, k, n): many small matrices, and attention scores (96 heads of
# 128 tokens × 64 dimensions, Q @ K.T)
FULL_STACKED = [(1000, 16, 16, 16), (96, 128, 64, 128)]
QUICK_SQUARE = [16, 64, 128]
FULL_MATVEC = [(8192, 8192), (16384, 4096)]
QUICK_MATVEC = [(512, 512), (1024, 256)]
FULL_THREADED = [1024, 2048, 4096]  # n of the n×n GEMMs timed at each thread count
FULL_TIER_GEMM = [1024, 2048]  # the same in the per-tier table (the baseline tier: ~28 s at 4096)
QUICK_THREADED = [128]
THREAD_COUNTS = (1, 2)
FULL_BATCHED = (8192, 8192)  # W of W @ V
QUICK_BATCHED = (1024, 1024)
BATCH_COLUMNS = [1, 2, 4, 8, 16]  # columns of V: sequences decoded together
FULL_MEMORY = 8192  # n of the n×n operands whose matmul's extra memory is measured
QUICK_MEMORY = 1024
MEMORY_SLACK = 16 * 2**20  # allocator and page granularity on top of the kernel's stated bound


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
    limit: Callable[[Variant], ContextManager[Any]] = lambda v: contextlib.nullcontext(),
) -> Row:
    cells: dict[str, Cell] = {}
    available = {}
    for v in vs:
        if not v.contender.available:
            cells[v.key] = Cell.missing(v.contender.status)
        else:
            available[v.key] = v
    settings = ctx.settings.per_round()

    def one(key: str) -> Cell:
        v = available[key]

        def timed() -> Cell:
            memory.check(v.key, work_of(v))
            a, b = make_inputs(v.contender)
            with limit(v):  # around warm-up and repeats: entering it can cost more than a call
                t = measure(lambda: v.call(a, b), settings)
            memory.record(v.key, work_of(v), t.seconds)
            return Cell.timing(t, rate_work_of(v) / t.seconds / 1e9, section.rate_unit)

        return run_cell(timed)

    cells.update(best_round_cells(list(available), one, ctx.settings.rounds))
    cells = {v.key: cells[v.key] for v in vs}
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


def _start_our_pool(ctx: Context, seconds: float = 0.1) -> None:
    """Run our threaded GEMM for a moment right before the first matmul row, so the rows time the
    steady state for every contender (OpenBLAS's and torch's pools already run by then). Our pool's
    workers start with the first multithreaded call of a process, and on the 2-core VMs here the OS
    took up to about 20 ms to run a new worker on the idle core: n = 256, the first threaded size,
    then timed at one thread's speed (README, "Matmul"). An operation of ours the preflight found
    crashing raises here, and nothing is warmed."""
    ours = next((c for c in ctx.contenders if c.key == OURS and c.available), None)
    if ours is None:
        return
    try:
        a = ours.from_f32(np.ones((512, 512), np.float32))
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            ours.package_matmul(a, a)
    except Exception:  # noqa: BLE001 -- the rows report what is broken
        return


def build_matmul(ctx: Context) -> Section:
    vs = variants(ctx)
    section = Section(
        key="matmul",
        title="Matrix multiplication (GEMM)",
        note=(
            "Time per call and GFLOP/s (2·m·k·n / time). Ours: `bfloat16_dtype.matmul(a, b)` on "
            "bfloat16 arrays (bfloat16 products, float32 accumulation) and the `a @ b` operator; "
            "float32 is numpy's BLAS sgemm; float16 and ml_dtypes use numpy's `@` on their dtype; "
            "torch uses `torch.matmul` on CPU bfloat16 tensors. The n = 16 and n = 64 rows show "
            "the fixed cost of a call more than arithmetic speed; the `B × (...)` rows multiply "
            "stacks of B matrices in one call. Our thread pool is started (0.1 s of 512² products) "
            "before the first row, as the other libraries' pools are by then. "
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
    warmed: list[bool] = []
    shapes = [((), n, n, n) for n in ctx.settings.pick_sizes(FULL_SQUARE, QUICK_SQUARE)]
    if not ctx.settings.quick and not ctx.settings.sizes:
        shapes += [((), m, k, n) for m, k, n in FULL_EXTRA]
        shapes += [((batch,), m, k, n) for batch, m, k, n in FULL_STACKED]
    for stack, m, k, n in shapes:
        size = f"n={n}" if m == k == n and not stack else f"{m}×{k} @ {k}×{n}"
        if stack:
            size = f"{stack[0]} × ({size})"
        flops = 2.0 * m * k * n * int(np.prod(stack))

        def inputs(c, m=m, k=k, n=n, stack=stack):
            a = ctx.rng(1, m, k).standard_normal(stack + (m, k), dtype=np.float32)
            b = ctx.rng(2, k, n).standard_normal(stack + (k, n), dtype=np.float32)
            return c.from_f32(a), c.from_f32(b)

        def run(size=size, inputs=inputs, flops=flops):
            if flops >= 3e6 and not warmed:  # the first size our kernel runs on threads
                _start_our_pool(ctx)
                warmed.append(True)
            return _row(ctx, section, vs, "a @ b", size, inputs, lambda v: flops, lambda v: flops, memory)

        section.add(f"matmul {size}", run)
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


# --------------------------------------------------------------------------------------------
# GEMM at a fixed thread count
# --------------------------------------------------------------------------------------------


class _Unavailable:
    """Stands in for a contender whose column cannot be measured in a section."""

    available = False

    def __init__(self, key: str, status: str):
        self.key, self.status = key, status


def _threadpoolctl() -> Any:
    try:
        import threadpoolctl
    except ImportError:
        return None
    return threadpoolctl


@contextlib.contextmanager
def _threads(v: Variant, n: int):
    """Run the enclosed calls of column ``v`` on ``n`` threads (ours, BLAS, torch)."""
    c = v.contender
    if c.key == OURS:
        with c.module.num_threads(n):
            yield
    elif c.key == "float32":
        with _threadpoolctl().threadpool_limits(limits=n, user_api="blas"):
            yield
    elif c.key == "torch":
        before = c.torch.get_num_threads()
        c.torch.set_num_threads(n)
        try:
            yield
        finally:
            c.torch.set_num_threads(before)
    else:
        raise ValueError(f"no thread control for {c.key}")


PEAK = "peak"  # column of the kernel's instruction alone (build_matmul_threads)


def _peak_variant(ctx: Context) -> Variant | None:
    """Our kernel's arithmetic instruction alone (``_ext._gemm_peak``: tdpbf16ps at the amx tier,
    vdpbf16ps at avx512bf16, the FMA below), in registers, for the row's flops on the row's threads through the same
    thread pool as a product: the time no GEMM of that size can beat on this machine, measured in
    the same run as the product. Its column reads *no SIMD kernel* at the baseline tier."""
    ours = next((c for c in ctx.contenders if c.key == OURS), None)
    if ours is None:
        return None
    label = "our kernel's instruction alone"

    def unavailable(status: str) -> Variant:
        return Variant(PEAK, label, _Unavailable(PEAK, status), lambda a, b: None)

    if not ours.available:
        return unavailable(ours.status)
    peak = getattr(getattr(ours.module, "_ext", None), "_gemm_peak", None)
    if peak is None:
        return unavailable("not in this build of bfloat16_dtype")
    try:
        has_loop = peak(1.0)
    except Exception as exc:  # noqa: BLE001 -- reported in the column, as any contender's error
        return unavailable(f"error: {type(exc).__name__}: {exc}")
    if not has_loop:
        return unavailable("no SIMD kernel (baseline tier)")
    return Variant(PEAK, label, ours, lambda a, b: peak(2.0 * a.shape[0] * a.shape[1] * b.shape[1]))


def build_matmul_threads(ctx: Context) -> Section:
    vs = [v for v in variants(ctx) if v.key in (OURS, "ours_operator", "float32", "torch")]
    peak = _peak_variant(ctx)
    if peak is not None:
        vs.append(peak)
    if _threadpoolctl() is None:
        vs = [
            dataclasses.replace(v, contender=_Unavailable(v.key, "threadpoolctl not installed"))
            if v.key == "float32"
            else v
            for v in vs
        ]
    section = Section(
        key="matmul_threads",
        title="Matrix multiplication by thread count",
        note=(
            "Square GEMM with every library held to the same number of threads: ours through "
            "`bfloat16_dtype.num_threads(n)`, numpy's BLAS through `threadpoolctl.threadpool_limits(n)` "
            "(the float32 column reads *threadpoolctl not installed* without it), torch through "
            "`torch.set_num_threads(n)`. Time per call and GFLOP/s (2·n³ / time); speedup is at the "
            "same thread count. float16 (numpy's own loop) and ml_dtypes are left out: see the "
            "GEMM table for them at the default thread count. *our kernel's instruction alone*: "
            "the micro-kernel's arithmetic instruction (tdpbf16ps on four tiles at the amx tier, "
            "vdpbf16ps at avx512bf16, the float32 FMA at avx512/avx2) issued from registers only, as many flops as the row's "
            "product, on the same threads and through the same thread pool (`_ext._gemm_peak`): "
            "the fastest any GEMM of that size can be here, measured in this run, so its speedup "
            "column is the fraction of that limit our product reaches."
        ),
        columns=_columns(vs),
        ratio_columns=[Column(v.key, v.label) for v in vs if v.key in ("float32", "torch", PEAK)],
        rate_unit="GFLOP/s",
    )
    sizes = ctx.settings.pick_sizes(FULL_THREADED, QUICK_THREADED)
    memories = {t: _RateMemory(ctx.settings.max_call) for t in THREAD_COUNTS}
    for n in sizes:
        flops = 2.0 * n**3

        def inputs(c, n=n):
            a = ctx.rng(1, n, n).standard_normal((n, n), dtype=np.float32)
            b = ctx.rng(2, n, n).standard_normal((n, n), dtype=np.float32)
            return c.from_f32(a), c.from_f32(b)

        for t in THREAD_COUNTS:
            operation = f"a @ b, {t} thread{'s' if t > 1 else ''}"
            section.add(
                f"{operation} n={n}",
                lambda n=n, t=t, operation=operation, inputs=inputs, flops=flops: _row(
                    ctx,
                    section,
                    vs,
                    operation,
                    f"n={n}",
                    inputs,
                    lambda v: flops,
                    lambda v: flops,
                    memories[t],
                    limit=lambda v, t=t: _threads(v, t),
                ),
            )
    return section


# --------------------------------------------------------------------------------------------
# Batched GEMV: W @ V with a few columns in V
# --------------------------------------------------------------------------------------------


class _Weights:
    """One weight matrix in each contender's format, kept across a section's rows (it is big)."""

    def __init__(self, ctx: Context, m: int, k: int):
        self.ctx, self.shape = ctx, (m, k)
        self.source: np.ndarray | None = None
        self.converted: dict[str, Any] = {}

    def get(self, c: Any) -> Any:
        if c.key not in self.converted:
            if self.source is None:
                self.source = self.ctx.rng(3, *self.shape).standard_normal(self.shape, dtype=np.float32)
            self.converted[c.key] = c.from_f32(self.source)
        return self.converted[c.key]

    def release(self) -> None:
        self.source, self.converted = None, {}


def build_matvec_batched(ctx: Context) -> Section:
    vs = variants(ctx)
    section = Section(
        key="matvec_batched",
        title="Batched matrix-vector products (W @ V, several decode streams)",
        note=(
            "Time per call of W @ V with W of shape m×k and V of shape k×c in the contender's dtype: "
            "decoding c sequences together reads the weights once for all of them. GB/s counts the "
            "weight traffic (W.nbytes / time). float32 is numpy's BLAS. Speedup compares "
            "`bfloat16_dtype.matmul`: their time ÷ our time. A contender is skipped where its "
            "previous rate predicts a call slower than the run's limit."
        ),
        columns=_columns(vs),
        ratio_columns=[Column(v.key, v.label) for v in vs if v.key in ("float32", "ml_dtypes", "torch")],
        rate_unit="GB/s",
    )
    if ctx.settings.sizes:
        shapes = [(s, s) for s in ctx.settings.sizes]
    else:
        shapes = [QUICK_BATCHED if ctx.settings.quick else FULL_BATCHED]
    for m, k in shapes:
        weights = _Weights(ctx, m, k)
        memory = _RateMemory(ctx.settings.max_call)  # rates in flop/s: time grows with c
        for cols in BATCH_COLUMNS:
            size = f"{m}×{k} @ {k}×{cols}"

            def inputs(c, k=k, cols=cols, weights=weights):
                v = ctx.rng(4, k, cols).standard_normal((k, cols), dtype=np.float32)
                return weights.get(c), c.from_f32(v)

            def weight_bytes(v, m=m, k=k):
                return m * k * v.contender.itemsize()

            def flops(v, m=m, k=k, cols=cols):
                return 2.0 * m * k * cols

            def row(size=size, inputs=inputs, flops=flops, weight_bytes=weight_bytes, weights=weights,
                    last=cols == BATCH_COLUMNS[-1]):
                try:
                    return _row(ctx, section, vs, "W @ V", size, inputs, flops, weight_bytes, memory)
                finally:
                    if last:  # the big matrices are not needed after the last row
                        weights.release()

            section.add(f"W @ V {size}", row)
    return section


# --------------------------------------------------------------------------------------------
# Extra memory of one call
# --------------------------------------------------------------------------------------------

MEMORY_COLUMNS = [
    Column("inputs", "inputs"),
    Column("output", "output"),
    Column("measured", "measured extra peak"),
    Column("bound", "kernel's stated bound"),
    Column("widened", "float32 copies of operands"),
    Column("check", "check"),
]
MEMORY_CALLS = ("W @ x", "a @ b")  # in the order the child measures them


def _filled(shape: tuple[int, ...], dtype: np.dtype, salt: int) -> np.ndarray:
    """A random array of ``dtype`` built 64 kB at a time, so no large temporary raises the peak."""
    out = np.empty(shape, dtype=dtype)
    flat = out.reshape(-1)
    rng = np.random.default_rng(salt)
    step = 16384
    for i in range(0, flat.size, step):
        flat[i : i + step] = rng.standard_normal(min(step, flat.size - i), dtype=np.float32)
    return out


def _status_bytes(field: str) -> int:
    """A memory figure of this process from /proc/self/status (VmRSS: resident now, VmHWM: peak)."""
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024  # reported in kB
    raise OSError(f"no {field} in /proc/self/status")


def _memory_child(n: int) -> list[dict[str, Any]]:
    """Build bfloat16 operands, then for W @ x and then a @ b: resident memory before the call,
    the peak after it, the output's size, the kernel's bound and numpy's traced peak.

    The peak is VmHWM, the high-water mark of this process's own address space, which starts
    afresh at exec. (``getrusage`` ru_maxrss would not do: it keeps the parent's peak across
    fork + exec, so a child of a big benchmark process starts with the parent's figure.) The
    mark cannot be reset, so the GEMV goes first: its small peak leaves the mark where the GEMM
    starts."""
    import tracemalloc

    import bfloat16_dtype

    bf16 = np.dtype(bfloat16_dtype.bfloat16)
    a, b, x = _filled((n, n), bf16, 1), _filled((n, n), bf16, 2), _filled((n,), bf16, 3)
    small = _filled((64, 64), bf16, 4)
    bfloat16_dtype.matmul(small, small)  # start the threads before anything is measured
    bfloat16_dtype.matmul(small, small[0])
    results = []
    for name, rhs, (m_, n_, k_) in zip(MEMORY_CALLS, (x, b), ((n, 1, n), (n, n, n))):
        gc.collect()
        tracemalloc.start()
        traced_before = tracemalloc.get_traced_memory()[0]
        rss_before, peak_before = _status_bytes("VmRSS"), _status_bytes("VmHWM")
        start = time.perf_counter()
        result = bfloat16_dtype.matmul(a, rhs)
        seconds = time.perf_counter() - start
        peak_after = _status_bytes("VmHWM")
        traced_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        results.append(
            {
                "call": name,
                "m": m_,
                "n": n_,
                "k": k_,
                "inputs": a.nbytes + rhs.nbytes,
                "output": result.nbytes,
                "output_dtype": str(result.dtype),
                "rss_before": rss_before,
                "peak_before": peak_before,
                "peak_after": peak_after,
                "traced_extra": traced_peak - traced_before - result.nbytes,
                "bound": int(bfloat16_dtype._ext._workspace_bytes(m_, n_, k_)),
                "threads": bfloat16_dtype.get_num_threads(),
                "seconds": seconds,
            }
        )
        del result
    return results


def _run_memory_child(n: int, timeout: float) -> list[dict[str, Any]]:
    from _preflight import _describe_exit

    try:
        proc = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--memory-child", str(n)],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=HERE,
        )
    except subprocess.TimeoutExpired:
        raise Skip(f"did not finish within {timeout:.0f} s") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [""])[-1]
        detail = f": {last}" if last else ""
        raise RuntimeError(f"child process {_describe_exit(proc.returncode)}{detail}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _memory_labels(call: str, n: int) -> tuple[str, str]:
    """(operation, size) of a memory row: W @ x multiplies n×n by a vector, a @ b two n×n."""
    if call == "W @ x":
        return "bfloat16_dtype.matmul(W, x)", f"{n}×{n} @ {n}"
    return "bfloat16_dtype.matmul(a, b)", f"{n}×{n} @ {n}×{n}"


def _memory_row(figures: dict[str, Any]) -> Row:
    m, n, k = figures["m"], figures["n"], figures["k"]
    operation, size = _memory_labels(figures["call"], m)
    extra = max(0, figures["peak_after"] - figures["rss_before"] - figures["output"])
    widened = 4 * (m * k + k * n)  # what converting both operands to float32 first would hold
    bound = figures["bound"]
    problems = []
    if extra >= widened:
        problems.append(f"{format_bytes(extra)} is not below the float32 copies ({format_bytes(widened)})")
    if extra > bound + MEMORY_SLACK:
        limit = format_bytes(bound + MEMORY_SLACK)
        problems.append(f"{format_bytes(extra)} exceeds the stated bound + 16 MiB ({limit})")
    check = Cell("passed", status="ok") if not problems else Cell(
        "FAILED: " + "; ".join(problems), status="error", message="; ".join(problems)
    )
    cells = {
        "inputs": Cell.number(figures["inputs"], format_bytes(figures["inputs"])),
        "output": Cell.number(
            figures["output"], f"{format_bytes(figures['output'])} ({figures['output_dtype']})"
        ),
        "measured": Cell.number(extra, format_bytes(extra)),
        "bound": Cell.number(bound, format_bytes(bound)),
        "widened": Cell.number(widened, format_bytes(widened)),
        "check": check,
    }
    stale = figures["peak_before"] - figures["rss_before"]
    note = (
        f"{figures['threads']} kernel thread(s), {figures['seconds']:.3g} s for the call; numpy/Python "
        f"allocations besides the output (tracemalloc): {format_bytes(max(0, figures['traced_extra']))}"
    )
    if stale > 0:
        note += f"; the peak was already {format_bytes(stale)} above resident memory before the call"
    return Row(operation, size, cells, note=note)


def build_matmul_memory(ctx: Context) -> Section:
    section = Section(
        key="matmul_memory",
        title="Extra memory of one matmul call",
        note=(
            "What one `bfloat16_dtype.matmul` call needs beyond its inputs and output, measured in a "
            "fresh child process on bfloat16 operands: the process's peak resident memory after the "
            "call (VmHWM) minus its resident memory before it (VmRSS) minus the output's size (an "
            "upper bound: it counts anything else the process touched). Beside it: the kernel's own "
            "bound (`bfloat16_dtype._ext._workspace_bytes(M, N, K)` at this thread count) and what "
            "float32 copies of both operands take, the least a widen-then-sgemm implementation "
            "holds. The check requires the measured extra below the float32 copies and within the "
            "bound plus 16 MiB for allocator and page granularity."
        ),
        columns=MEMORY_COLUMNS,
    )
    ours = ctx.contender(OURS)
    sizes = ctx.settings.pick_sizes([FULL_MEMORY], [QUICK_MEMORY])
    timeout = 30.0 if ctx.settings.quick else 180.0
    for n in sizes:
        rows: list[Row] = []  # one child measures both calls; the two tasks take its rows in turn

        def unmeasured(call: str, cell: Cell, n: int = n) -> Row:
            """The arithmetic columns, with ``cell`` where the measurement would be."""
            cols = 1 if call == "W @ x" else n
            inputs, output, widened = 2 * (n * n + n * cols), 2 * n * cols, 4 * (n * n + n * cols)
            cells = {
                "inputs": Cell.number(inputs, format_bytes(inputs)),
                "output": Cell.number(output, format_bytes(output)),
                "measured": cell,
                "bound": cell,
                "widened": Cell.number(widened, format_bytes(widened)),
                "check": cell,
            }
            return Row(*_memory_labels(call, n), cells)

        # every name of this size is bound as a default: the tasks run after the loop has moved
        # on, and a free ``unmeasured`` would be the last size's (its rows labelled with that n)
        def measured(index: int, n: int = n, rows: list[Row] = rows,
                     unmeasured: Callable[[str, Cell], Row] = unmeasured) -> Row:
            if not rows:
                if not ours.available:
                    rows.extend(unmeasured(call, Cell.missing(ours.status)) for call in MEMORY_CALLS)
                elif not sys.platform.startswith("linux"):
                    skipped = Cell.skipped("needs Linux: /proc/self/status")
                    rows.extend(unmeasured(call, skipped) for call in MEMORY_CALLS)
                else:
                    try:
                        rows.extend(_memory_row(f) for f in _run_memory_child(n, timeout))
                    except Skip as exc:
                        rows.extend(unmeasured(call, Cell.skipped(str(exc))) for call in MEMORY_CALLS)
                    except Exception as exc:  # noqa: BLE001 -- reported in the rows, not raised
                        rows.extend(unmeasured(call, Cell.error(exc)) for call in MEMORY_CALLS)
            return rows[index]

        for index, call in enumerate(MEMORY_CALLS):
            section.add(f"extra memory {call}, n={n}", lambda i=index, measured=measured: measured(i))
    return section


# --------------------------------------------------------------------------------------------
# Kernels measured in child processes: the float32 BLAS under the environment's
# OPENBLAS_CORETYPE, and our kernel under each ISA tier (both are fixed when the library loads)
# --------------------------------------------------------------------------------------------

TIERS = ("baseline", "avx2", "avx512", "avx512bf16", "amx")


def _kernel_cases(quick: bool) -> list[tuple]:
    """(kind, sizes..., threads): the GEMM/GEMV figures the child processes time."""
    if quick:
        return [("gemm", 128, 1), ("gemm", 128, 2), ("gemv", 1024, 1024, 1), ("wv", 1024, 1024, 16, 1)]
    cases: list[tuple] = [("gemm", n, t) for n in FULL_TIER_GEMM for t in THREAD_COUNTS]
    return cases + [("gemv", 8192, 8192, 1), ("gemv", 8192, 8192, 2), ("wv", 8192, 8192, 16, 2)]


def _case_label(case: tuple) -> tuple[str, str, float, str]:
    """operation, size, work (flops or weight bytes at 2 bytes/element), rate unit"""
    kind, *dims, t = case
    th = f"{t} thread{'s' if t > 1 else ''}"
    if kind == "gemm":
        n = dims[0]
        return f"a @ b, {th}", f"n={n}", 2.0 * n**3, "GFLOP/s"
    if kind == "gemv":
        m, k = dims
        return f"W @ x, {th}", f"{m}×{k}", 2.0 * m * k, "GFLOP/s"
    m, k, cols = dims
    return f"W @ V ({cols} columns), {th}", f"{m}×{k}", 2.0 * m * k * cols, "GFLOP/s"


def _child_timings(what: str, cases: list[tuple], quick: bool) -> dict[str, Any]:
    """Run in a child: time ``what`` ("ours" or "float32") on each case; JSON-able dict."""
    from _harness import Settings

    settings = Settings.for_mode(quick)
    tpc = _threadpoolctl()
    out: dict[str, Any] = {"times": []}
    if what == "ours":
        import bfloat16_dtype as bd

        out["kernel"] = bd._ext._gemm_kernel
        dtype = np.dtype(bd.bfloat16)
    else:
        dtype = np.dtype(np.float32)
        if tpc is not None:
            out["kernel"] = "; ".join(f"{p.get('internal_api')} {p.get('architecture')}"
                                      for p in tpc.threadpool_info() if p.get("user_api") == "blas")
    for case in cases:
        kind, *dims, t = case
        rng = np.random.default_rng(7)
        if kind == "gemm":
            a = rng.standard_normal((dims[0], dims[0]), dtype=np.float32).astype(dtype)
            b = rng.standard_normal((dims[0], dims[0]), dtype=np.float32).astype(dtype)
        elif kind == "gemv":
            a = rng.standard_normal((dims[0], dims[1]), dtype=np.float32).astype(dtype)
            b = rng.standard_normal(dims[1], dtype=np.float32).astype(dtype)
        else:
            a = rng.standard_normal((dims[0], dims[1]), dtype=np.float32).astype(dtype)
            b = rng.standard_normal((dims[1], dims[2]), dtype=np.float32).astype(dtype)
        if what == "ours":
            limit: ContextManager[Any] = bd.num_threads(t)
            call = lambda a=a, b=b: bd.matmul(a, b)  # noqa: E731
        else:
            limit = tpc.threadpool_limits(limits=t, user_api="blas") if tpc else contextlib.nullcontext()
            call = lambda a=a, b=b: a @ b  # noqa: E731
        with limit:
            timing = measure(call, settings)
        out["times"].append([timing.seconds, timing.repeats, timing.spread])
        del a, b
    return out


def _run_child(what: str, env: dict[str, str], quick: bool) -> dict[str, Any]:
    cases = _kernel_cases(quick)
    proc = subprocess.run(
        [sys.executable, str(HERE / "bench_matmul.py"), "--kernel-child", what, "quick" if quick else "full"],
        capture_output=True, text=True, timeout=600, env=env, cwd=HERE,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"child process failed: {(proc.stderr or proc.stdout).strip()[-300:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if len(result["times"]) != len(cases):
        raise RuntimeError("child process returned the wrong number of timings")
    return result


class _ChildColumn:
    """One column of a child-measured table: runs its child once, at the first row that needs it."""

    available = True
    status = "ok"

    def __init__(self, key: str, what: str, env: dict[str, str], quick: bool):
        self.key, self.what, self.env, self.quick = key, what, env, quick
        self.result: dict[str, Any] | None = None
        self.failure: str | None = None

    def cell(self, index: int, work: float, unit: str) -> Cell:
        if self.result is None and self.failure is None:
            try:
                self.result = _run_child(self.what, self.env, self.quick)
            except Exception as exc:  # noqa: BLE001 -- shown as an error cell
                self.failure = f"{type(exc).__name__}: {exc}"
        if self.failure is not None:
            return Cell.error(self.failure)
        seconds, repeats, spread = self.result["times"][index]
        return Cell.timing(Timing(seconds, repeats, spread), work / seconds / 1e9, unit)


def _kernel_section(ctx: Context, key: str, title: str, note: str,
                    columns: list[tuple[Column, _ChildColumn]], ratio_keys: list[str]) -> Section:
    section = Section(
        key=key, title=title, note=note,
        columns=[c for c, _ in columns],
        ratio_columns=[c for c, _ in columns if c.key in ratio_keys],
        rate_unit="GFLOP/s",
    )
    for index, case in enumerate(_kernel_cases(ctx.settings.quick)):
        operation, size, work, unit = _case_label(case)

        def row(index=index, operation=operation, size=size, work=work, unit=unit) -> Row:
            cells = {col.key: child.cell(index, work, unit) for col, child in columns}
            r = Row(operation, size, cells)
            section.fill_speedups(r)
            return r

        section.add(f"{operation} {size}", row)
    return section


def blas_forcing_env() -> dict[str, str]:
    """The OpenBLAS variables run.py removed for this run (they fix its kernel to a core type)."""
    raw = os.environ.get("BFLOAT16_BENCH_REMOVED_BLAS_ENV")
    return json.loads(raw) if raw else {}


def build_blas_env_comparison(ctx: Context) -> list[Section]:
    """float32 BLAS on its own best kernel (this process) and under the environment's forced core
    type (a child with the variables restored): only when run.py removed them."""
    removed = blas_forcing_env()
    if not removed:
        return []
    plain = {k: v for k, v in os.environ.items() if k != "BFLOAT16_BENCH_REMOVED_BLAS_ENV"}
    forced = dict(plain, **removed)
    shown = ", ".join(f"{k}={v}" for k, v in removed.items())
    columns = [
        (Column(OURS, "bfloat16_dtype.matmul"), _ChildColumn(OURS, "ours", plain, ctx.settings.quick)),
        (Column("float32", "float32 BLAS, best kernel"), _ChildColumn("float32", "float32", plain, ctx.settings.quick)),
        (Column("float32_forced", f"float32 BLAS, {shown}"),
         _ChildColumn("float32_forced", "float32", forced, ctx.settings.quick)),
    ]
    note = (
        f"The environment set {shown}, which fixes OpenBLAS's kernel to that core type; the rest of this report "
        "runs with them removed, so float32 uses OpenBLAS's best kernel for this CPU. This table shows "
        "both: each column is timed in a child process (the core type is fixed when OpenBLAS loads). "
        "GFLOP/s = 2·m·k·n / time."
    )
    return [_kernel_section(ctx, "matmul_blas_env", "float32 BLAS with and without the forced core type",
                            note, columns, ["float32", "float32_forced"])]


def build_matmul_isa(ctx: Context) -> list[Section]:
    """--isa: our GEMM/GEMV under every tier this CPU supports, side by side (child processes)."""
    try:
        import bfloat16_dtype as bd

        info = bd.config()
    except Exception as exc:  # noqa: BLE001
        return [Section(key="matmul_isa", title="Matrix multiplication by ISA tier",
                        note=f"unavailable: {type(exc).__name__}: {exc}", columns=[])]
    top = TIERS.index(info["detected"])
    plain = {k: v for k, v in os.environ.items() if k != "BFLOAT16_BENCH_REMOVED_BLAS_ENV"}
    columns = []
    for tier in TIERS[: top + 1]:
        env = dict(plain, BFLOAT16_DTYPE_ISA=tier)
        key = OURS if tier == info["detected"] else f"tier_{tier}"
        columns.append((Column(key, f"ours, tier {tier}"), _ChildColumn(key, "ours", env, ctx.settings.quick)))
    columns.append((Column("float32", "float32 BLAS"), _ChildColumn("float32", "float32", plain, ctx.settings.quick)))
    lacking = [t for t in TIERS[top + 1:]]
    note = (
        "Our kernel under each instruction-set tier this CPU supports, forced with "
        "`BFLOAT16_DTYPE_ISA` in a child process per column (the tier is fixed at import); the GEMM "
        "kernel of each tier is named in the README. Speedup compares the highest tier. "
        + (f"Not measured: {', '.join(lacking)} ({info['reason']}). " if lacking else "")
        + "GFLOP/s = 2·m·k·n / time."
    )
    return [_kernel_section(ctx, "matmul_isa", "Matrix multiplication by ISA tier", note, columns,
                            [c.key for c, _ in columns if c.key != OURS])]


def build_matmul_area(ctx: Context) -> list[Section]:
    sections = [build_matmul(ctx), build_matmul_threads(ctx), build_matmul_memory(ctx)]
    sections += build_blas_env_comparison(ctx)
    if getattr(ctx, "isa", False):
        sections += build_matmul_isa(ctx)
    return sections


def build_matvec_area(ctx: Context) -> list[Section]:
    return [build_matvec(ctx), build_matvec_batched(ctx)]


AREAS = {"matmul": build_matmul_area, "matvec": build_matvec_area}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--memory-child"] and len(sys.argv) == 3:
        print(json.dumps(_memory_child(int(sys.argv[2]))))
    elif sys.argv[1:2] == ["--kernel-child"] and len(sys.argv) == 4:
        quick = sys.argv[3] == "quick"
        print(json.dumps(_child_timings(sys.argv[2], _kernel_cases(quick), quick)))
    else:
        sys.exit("usage: python bench_matmul.py --memory-child N | --kernel-child ours|float32 quick|full")
