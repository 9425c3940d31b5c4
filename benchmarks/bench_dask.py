"""bfloat16 on dask: n×n matmul and sums on a 2-worker LocalCluster, beside float32 on the same
cluster and dask's own bfloat16 path (per-block rounding).

    python benchmarks/bench_dask.py              # n = 16384 (two 512 MiB bfloat16 matrices)
    python benchmarks/bench_dask.py --quick      # n = 2048, seconds
    python benchmarks/bench_dask.py --n 8192 --chunk 2048 --out results/dask.md

Each case runs on a fresh cluster, so "peak RSS" is that case's own peak per worker
(ru_maxrss, the largest of the two workers). Times are the median of --repeats runs of
``persist`` + wait on inputs already held by the workers. "error vs float64" compares with the
float64 product/sum of the very same input values (the bfloat16 or float32 numbers themselves),
so it measures accumulation and output rounding only; the error of each element is divided by
the sum of the magnitudes of its terms (|a| @ |b| for matmul, checked on a sample of rows).
Needs ``dask[array,distributed]`` and ``psutil``.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def _peak_rss_mib() -> float:
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _timed(client, make, repeats: int):
    from distributed import wait
    times, result = [], None
    for _ in range(repeats):
        result = None
        t0 = time.perf_counter()
        result = make().persist()
        wait(result)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def run(n: int, chunk: int, repeats: int, sample_rows: int) -> list[dict]:
    import dask.array as da
    from distributed import Client, LocalCluster, wait

    from bfloat16_dtype import bfloat16
    from bfloat16_dtype import dask as bfd

    def inputs(client, dtype):
        rng = da.random.default_rng(0)
        a = rng.random((n, n), dtype=np.float32, chunks=chunk)
        b = rng.random((n, n), dtype=np.float32, chunks=chunk) - np.float32(0.5)
        if dtype is not np.float32:
            a, b = a.astype(bfloat16), b.astype(bfloat16)
        a, b = client.persist(a), client.persist(b)
        wait([a, b])
        return a, b

    cases = [
        ("matmul", "bfloat16 (bfloat16_dtype.dask.matmul)", bfloat16, lambda a, b: bfd.matmul(a, b)),
        ("matmul", "bfloat16 (dask's a @ b)", bfloat16, lambda a, b: a @ b),
        ("matmul", "float32 (dask's a @ b)", np.float32, lambda a, b: a @ b),
        ("sum", "bfloat16 (bfloat16_dtype.dask.sum)", bfloat16, lambda a, b: bfd.sum(a)),
        ("sum", "bfloat16 (dask's a.sum())", bfloat16, lambda a, b: a.sum()),
        ("sum", "float32 (dask's a.sum())", np.float32, lambda a, b: a.sum()),
    ]
    rows = []
    for op, label, dtype, fn in cases:
        # a fresh cluster per case: the peak RSS below is this case's own
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            a, b = inputs(client, dtype)
            seconds, result = _timed(client, lambda: fn(a, b), repeats)
            peak = max(client.run(_peak_rss_mib).values())
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            if op == "matmul":
                got = result[:sample_rows].astype(np.float64).compute()
                want = (a64[:sample_rows] @ b64).compute()
                scale = (abs(a64[:sample_rows]) @ abs(b64)).compute()
                speed = f"{2.0 * n ** 3 / seconds / 1e9:.1f} GFLOP/s"
            else:
                got = np.float64(result.astype(np.float64).compute())
                want = np.float64(a64.sum().compute())
                scale = abs(want)
                speed = f"{n * n * a.dtype.itemsize / seconds / 1e9:.2f} GB/s"
            rel = np.abs(np.asarray(got) - want) / np.maximum(scale, 1e-30)
            rows.append({"op": op, "label": label, "seconds": seconds, "speed": speed,
                         "peak_rss_mib": peak, "max_rel_err": float(np.max(rel)),
                         "mean_rel_err": float(np.mean(rel))})
            del a, b, result
    return rows


def render(rows: list[dict], n: int, chunk: int) -> str:
    lines = [f"## dask on a 2-worker LocalCluster: n = {n}, chunks {chunk}×{chunk}", "",
             "| operation | dtype / path | time | speed | peak RSS per worker | max error vs float64 | mean error |",
             "|---|---|---|---|---|---|---|"]
    base = {r["op"]: r["seconds"] for r in rows if r["label"].startswith("float32")}
    for r in rows:
        ratio = f" ({base[r['op']] / r['seconds']:.2f}× float32)" if r["op"] in base else ""
        lines.append(f"| {r['op']} | {r['label']} | {r['seconds']:.3f} s{ratio} | {r['speed']} | "
                     f"{r['peak_rss_mib']:.0f} MiB | {r['max_rel_err']:.2e} | {r['mean_rel_err']:.2e} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="n = 2048 with 1024-chunks, 1 repeat")
    p.add_argument("--n", type=int, default=None, help="matrix size (default 16384; 2048 with --quick)")
    p.add_argument("--chunk", type=int, default=None, help="chunk edge (default n/4)")
    p.add_argument("--repeats", type=int, default=None, help="timed runs per case (default 3; 1 with --quick)")
    p.add_argument("--sample-rows", type=int, default=64, help="rows of the product checked against float64")
    p.add_argument("--out", type=Path, help="also write the Markdown table here")
    args = p.parse_args(argv)
    n = args.n or (2048 if args.quick else 16384)
    chunk = args.chunk or max(n // (2 if args.quick else 4), 1)
    repeats = args.repeats or (1 if args.quick else 3)
    try:
        import dask.array  # noqa: F401
        import distributed  # noqa: F401
    except ImportError as exc:
        print(f"bench_dask: skipped, {exc.name} is not installed (pip install 'dask[array,distributed]')")
        return 0
    rows = run(n, chunk, repeats, min(args.sample_rows, n))
    text = render(rows, n, chunk)
    print(text)
    print(f"(CPU: {os.cpu_count()} logical cores; Python {sys.version.split()[0]})")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
