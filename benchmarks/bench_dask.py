"""bfloat16 on dask: n×n matmul and sums on a 2-worker LocalCluster (worker processes, one thread
each), beside float32 on the same cluster and dask's own bfloat16 path (per-block rounding).

    python benchmarks/bench_dask.py              # full size: n = 16384 (512 MiB per bfloat16 matrix)
    python benchmarks/bench_dask.py --quick      # n = 2048, seconds
    python benchmarks/bench_dask.py --n 8192 --out dask.md

``python benchmarks/run.py --dask`` runs the full size and appends the table to the report
(``run.py --quick --dask``: n = 2048; ``--dask-n N`` picks another size). Memory grows as n²
(at n = 8192 the largest worker peak was 0.77 GiB, so about 3 GiB per worker at the full size,
under 8 GiB in all); time is dominated by the three matmuls (2n³ flops each).

How each number is measured:

* All cases run on one ``LocalCluster(n_workers=2, threads_per_worker=1, processes=True)``.
  The inputs are uniform random float32 (``a`` in [0, 1), ``b`` in [-0.5, 0.5)), generated and
  held (``persist``) on the workers: first rounded to bfloat16 for the bfloat16 cases, then
  (after those are released) as float32 for the float32 cases. Each result is released, and the
  scheduler has forgotten it, before the next run.
* time: median of ``--repeats`` runs of ``persist`` + ``wait`` of the result (default 1 for
  matmul at n >= 8192, where one run takes tens of seconds, else 3).
* peak RSS per worker: each worker's peak resident set size during the operation (Linux: the
  peak is reset once the inputs are held, via /proc/self/clear_refs, and read from VmHWM; where
  that is not possible, ru_maxrss since the worker started), the larger of the two workers;
  "held before" is the RSS at the reset (the worker's share of the inputs plus the runtime).
* error vs float64: the reference is computed in float64 from the very input values of the
  case (the bfloat16 or float32 numbers themselves), so the error is that of accumulation and
  output rounding only; each element's error is divided by the sum of the magnitudes of its
  terms (|a| @ |b| for matmul). matmul is checked on a sample: ``--sample`` rows and 8 × that
  many columns drawn at random (seeded); those rows of ``a`` and columns of ``b`` are fetched
  and multiplied with NumPy in float64 on the client, and compared with the same elements of
  the result. The sums are checked in full against NumPy's float64 sums of ``a`` (per chunk on
  the workers, then added in float64).

Workers get ``BFLOAT16_DTYPE_NUM_THREADS=1`` beside distributed's own ``OMP_NUM_THREADS=1`` /
``OPENBLAS_NUM_THREADS=1``, so each worker's GEMM (ours or OpenBLAS's sgemm) runs on one core.
``OPENBLAS_CORETYPE``/``OPENBLAS_L2_SIZE`` are removed for the workers (as run.py does) unless
``--keep-blas-env``. Needs ``dask[array,distributed]``.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
BLAS_FORCING = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
MIB = 1024.0 * 1024.0


# ---- run inside the workers (client.run) ----------------------------------------------------

def _status_kib(field: str) -> float | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return float(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak_rss() -> tuple[float, bool]:
    """(current RSS in MiB, whether the peak could be reset to it)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        reset = True
    except OSError:
        reset = False
    rss = _status_kib("VmRSS")
    if rss is None:
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 1024.0, reset


def _peak_rss_mib() -> float:
    hwm = _status_kib("VmHWM")
    if hwm is None:
        hwm = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return hwm / 1024.0


# ---- the benchmark -----------------------------------------------------------------------------

def _keys(x) -> list:
    from distributed.client import futures_of
    return [f.key for f in futures_of(x)]


def _forgotten(client, keys: list) -> None:
    """Wait until the scheduler has forgotten ``keys`` (after the caller dropped its last
    reference): a repeat would otherwise reuse them, and the next peak would include them."""
    deadline = time.monotonic() + 120
    while True:
        left = client.run_on_scheduler(lambda dask_scheduler: sum(k in dask_scheduler.tasks for k in keys))
        if not left:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"bench_dask: the scheduler still holds {left} keys after 120 s")
        time.sleep(0.05)


def _timed(client, make, repeats: int):
    from distributed import wait
    times = []
    for i in range(repeats):
        t0 = time.perf_counter()
        result = make().persist()
        wait(result)
        times.append(time.perf_counter() - t0)
        if i < repeats - 1:
            keys, result = _keys(result), None
            _forgotten(client, keys)
    return statistics.median(times), result


def _cases():
    from bfloat16_dtype import bfloat16
    from bfloat16_dtype import dask as bfd
    bf = np.dtype(bfloat16)
    f32 = np.dtype(np.float32)
    # grouped by input dtype: one set of inputs per group
    return [
        ("matmul", "bfloat16 (bfloat16_dtype.dask.matmul)", bf, lambda a, b: bfd.matmul(a, b)),
        ("matmul", "bfloat16 (dask's a @ b)", bf, lambda a, b: a @ b),
        ("sum", "bfloat16 (bfloat16_dtype.dask.sum)", bf, lambda a, b: bfd.sum(a)),
        ("sum", "bfloat16 (dask's a.sum())", bf, lambda a, b: a.sum()),
        ("sum(axis=0)", "bfloat16 (bfloat16_dtype.dask.sum)", bf, lambda a, b: bfd.sum(a, axis=0)),
        ("sum(axis=0)", "bfloat16 (dask's a.sum(axis=0))", bf, lambda a, b: a.sum(axis=0)),
        ("matmul", "float32 (dask's a @ b)", f32, lambda a, b: a @ b),
        ("sum", "float32 (dask's a.sum())", f32, lambda a, b: a.sum()),
        ("sum(axis=0)", "float32 (dask's a.sum(axis=0))", f32, lambda a, b: a.sum(axis=0)),
    ]


OPS = ("matmul", "sum", "sum(axis=0)")


def run(n: int, chunk: int, repeats: int | None, sample: int, log=print) -> tuple[list[dict], dict]:
    import dask
    import dask.array as da
    from distributed import Client, LocalCluster, wait

    rng_np = np.random.default_rng(1)
    rows = np.sort(rng_np.choice(n, size=min(sample, n), replace=False))
    cols = np.sort(rng_np.choice(n, size=min(8 * sample, n), replace=False))
    environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}))
    environ["BFLOAT16_DTYPE_NUM_THREADS"] = 1

    def inputs(client, dtype):
        # the same float32 values for every group; the bfloat16 group rounds them
        rng = da.random.default_rng(0)
        a = rng.random((n, n), dtype=np.float32, chunks=chunk).astype(dtype)
        b = (rng.random((n, n), dtype=np.float32, chunks=chunk) - np.float32(0.5)).astype(dtype)
        a, b = client.persist([a, b])
        wait([a, b])
        return a, b

    out, info = [], {"peak_reset": True}
    with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                         dashboard_address=None) as cluster, Client(cluster) as client:
        a = b = None
        for op, label, dtype, fn in _cases():
            if a is None or a.dtype != dtype:
                if a is not None:
                    keys, a, b = _keys([a, b]), None, None
                    _forgotten(client, keys)
                log(f"bench_dask: n={n}: {dtype} inputs ...")
                a, b = inputs(client, dtype)
            reps = repeats or (1 if op == "matmul" and n >= 8192 else 3)
            log(f"bench_dask: n={n} {op}: {label} ({reps} run{'s' if reps > 1 else ''}) ...")
            before = client.run(_reset_peak_rss)
            info["peak_reset"] &= all(ok for _, ok in before.values())
            seconds, result = _timed(client, lambda: fn(a, b), reps)
            peak = max(client.run(_peak_rss_mib).values())
            held = max(rss for rss, _ in before.values())
            if op == "matmul":
                got = result[rows][:, cols].compute().astype(np.float64)
                a_s = a[rows].compute().astype(np.float64)
                b_s = b[:, cols].compute().astype(np.float64)
                want = a_s @ b_s
                scale = np.abs(a_s) @ np.abs(b_s)
                speed = f"{2.0 * n ** 3 / seconds / 1e9:.1f} GFLOP/s"
            else:
                axis = 0 if op == "sum(axis=0)" else None
                a64 = a.astype(np.float64)
                want, scale = da.compute(a64.sum(axis=axis), abs(a64).sum(axis=axis))
                a64 = None      # its graph holds on to the inputs
                got = np.asarray(result.compute(), dtype=np.float64)
                speed = f"{n * n * a.dtype.itemsize / seconds / 1e9:.2f} GB/s"
            keys, result = _keys(result), None
            _forgotten(client, keys)
            err = np.abs(got - want) / np.maximum(scale, 1e-300)
            out.append({"op": op, "label": label, "seconds": seconds, "repeats": reps,
                        "speed": speed, "peak_rss_mib": peak, "held_mib": held,
                        "max_rel_err": float(np.max(err)), "mean_rel_err": float(np.mean(err))})
            log(f"bench_dask:   {seconds:.2f} s, peak RSS {peak:.0f} MiB per worker "
                f"({held:.0f} held before), max error {float(np.max(err)):.2e}")
    out.sort(key=lambda r: OPS.index(r["op"]))   # stable: bfloat16 rows, then float32, per op
    info.update(rows=len(rows), cols=len(cols))
    return out, info


def _mib(x: float) -> str:
    return f"{x / 1024:.2f} GiB" if x >= 1024 else f"{x:.0f} MiB"


def render(rows: list[dict], n: int, chunk: int, info: dict, blas_env: str) -> str:
    lines = [
        f"## dask on a 2-worker LocalCluster: n = {n}, chunks {chunk}×{chunk}", "",
        "Worker processes with one thread each, one cluster for all rows, the inputs of the "
        "row's dtype already held by the workers. *error*: |result − float64 reference| divided by the sum "
        f"of the magnitudes of the terms; matmul on a random sample of {info['rows']} rows × "
        f"{info['cols']} columns of the product (reference: NumPy float64 on the client), sums "
        "on every element (reference: float64 sums of the same inputs). *peak RSS*: the larger "
        "of the two workers' peaks during the operation"
        + ("" if info["peak_reset"] else " (ru_maxrss since the worker started: the peak could not be reset)")
        + f"; *held before*: their RSS with the inputs loaded. {blas_env}", "",
        "| operation | dtype / path | time | speed | peak RSS per worker | held before | max error vs float64 | mean error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    base = {r["op"]: r["seconds"] for r in rows if r["label"].startswith("float32")}
    for r in rows:
        ratio = f" ({base[r['op']] / r['seconds']:.2f}× float32)" if r["op"] in base else ""
        runs = "" if r["repeats"] == 1 else f", median of {r['repeats']}"
        lines.append(f"| {r['op']} | {r['label']} | {r['seconds']:.3f} s{ratio}{runs} | {r['speed']} | "
                     f"{_mib(r['peak_rss_mib'])} | {_mib(r['held_mib'])} | {r['max_rel_err']:.2e} | "
                     f"{r['mean_rel_err']:.2e} |")
    return "\n".join(lines) + "\n"


def _positive_int(text: str) -> int:
    """argparse type: a whole number >= 1 (0 must not stand for "the default", as it once did)."""
    try:
        value = int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def main(argv: list[str] | None = None, log=None, echo: bool = True) -> str | None:
    """Run and print the table (``echo``); returns its Markdown (None when dask is missing)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="n = 2048 with 1024-chunks")
    p.add_argument("--n", type=_positive_int, default=None,
                   help="matrix size (default 16384; 2048 with --quick)")
    p.add_argument("--chunk", type=_positive_int, default=None,
                   help="chunk edge (default n/4; n/2 with --quick)")
    p.add_argument("--repeats", type=_positive_int, default=None,
                   help="timed runs per case (default 3; 1 for matmul at n >= 8192)")
    p.add_argument("--sample", type=_positive_int, default=64,
                   help="rows of the product checked against float64 (and 8× as many columns)")
    p.add_argument("--keep-blas-env", action="store_true",
                   help="leave OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE set for the workers")
    p.add_argument("--out", type=Path, help="also write the Markdown table here")
    args = p.parse_args(argv)
    n = args.n if args.n is not None else (2048 if args.quick else 16384)
    chunk = args.chunk if args.chunk is not None else max(n // (2 if args.quick else 4), 1)
    if args.out is not None and args.out.is_dir():  # refused before the run, not after it
        p.error(f"--out: {str(args.out)!r} is a directory")
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    try:
        import dask.array  # noqa: F401
        import distributed  # noqa: F401
    except ImportError as exc:
        print(f"bench_dask: skipped, {exc.name} is not installed (pip install 'dask[array,distributed]')")
        return None
    removed = {k: os.environ.pop(k) for k in BLAS_FORCING if k in os.environ and not args.keep_blas_env}
    try:
        forced = [k for k in BLAS_FORCING if k in os.environ]
        blas_env = (f"Workers ran with {', '.join(forced)} set." if forced else
                    "OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE unset for the workers.")
        started = time.perf_counter()
        rows, info = run(n, chunk, args.repeats, args.sample, log)
        elapsed = time.perf_counter() - started
    finally:
        os.environ.update(removed)
    text = render(rows, n, chunk, info, blas_env)
    text += (f"\n(whole dask run {elapsed:.0f} s; {os.cpu_count()} logical cores; "
             f"Python {sys.version.split()[0]}, NumPy {np.__version__}, "
             f"dask {sys.modules['dask'].__version__})\n")
    if echo:
        print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return text


if __name__ == "__main__":
    main()
    sys.exit(0)
