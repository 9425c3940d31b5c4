import numpy as np, timeit, sys
from bfloat16_dtype import bfloat16
rng = np.random.default_rng(0)
N = 200_000
base = rng.standard_normal(N)
M = 256
mb = rng.standard_normal((M, M))
tests = {
 "sort": "np.sort(x)", "sort_stable": "np.sort(x, kind='stable')", "argsort": "np.argsort(x)",
 "partition": "np.partition(x, N//2)", "argpartition": "np.argpartition(x, N//2)",
 "searchsorted": "np.searchsorted(s, x[:10000])", "unique": "np.unique(x)",
 "median": "np.median(x)", "percentile": "np.percentile(x, [10, 90])", "nanmedian": "np.nanmedian(x)",
 "histogram": "np.histogram(x, bins=50)", "clip": "np.clip(x, -1, 1)", "where": "np.where(x > 0, x, 0)",
 "cumsum": "np.cumsum(x)", "diff": "np.diff(x)", "interp": "np.interp(x[:20000], s[::100], s[::100])",
 "convolve": "np.convolve(x[:20000], x[:50])", "isclose": "np.isclose(x, x)", "nan_to_num": "np.nan_to_num(x)",
 "pad": "np.pad(x, 10, mode='reflect')", "concat": "np.concatenate([x, x])", "take": "np.take(x, idx)",
 "mean": "np.mean(x)", "var": "np.var(x)", "std": "np.std(x)", "nanmean": "np.nanmean(x)", "nansum": "np.nansum(x)",
 "nanmax": "np.nanmax(x)", "argmax": "np.argmax(x)", "max": "np.max(x)", "nanargmax": "np.nanargmax(x)",
 "allclose": "np.allclose(x, x)", "array_equal": "np.array_equal(x, x, equal_nan=True)",
 "round": "np.round(x, 2)", "isfinite": "np.isfinite(x)", "sum_axis0": "np.sum(m, axis=0)",
 "dot_mm": "np.dot(m, m)", "matmul": "m @ m", "einsum_opt": "np.einsum('ij,jk->ik', m, m, optimize=True)",
 "tensordot": "np.tensordot(m, m, 1)", "inner": "np.inner(m, m)", "norm": "np.linalg.norm(x)",
 "fft": "np.fft.fft(x[:65536])", "gradient": "np.gradient(x)", "trapezoid": "np.trapezoid(x)",
 "astype_f32": "x.astype(np.float32)", "astype_str": "x[:20000].astype('U32')", "tolist": "x[:20000].tolist()",
 "repr": "repr(x)", "copy": "x.copy()", "fancy": "x[idx]", "bool_mask": "x[x > 0]", "nonzero": "np.nonzero(x)",
 "lexsort": "np.lexsort((x, x))", "bincount_w": "np.bincount(idx % 100, weights=x)", "digitize": "np.digitize(x, s[::1000])",
 "nanpercentile": "np.nanpercentile(x, 30)", "cov": "np.cov(m)", "ptp": "np.ptp(x)", "count_nonzero": "np.count_nonzero(x)",
 "any": "np.any(x)", "tobytes": "x.tobytes()", "frombuffer_copy": "np.frombuffer(x.tobytes(), x.dtype).copy()",
 "savetxt": "np.savetxt(io.StringIO(), x[:5000])", "loadtxt": "np.loadtxt(io.StringIO(txt), dtype=x.dtype)",
 "vectorize": "np.vectorize(lambda a: a)(x[:5000])", "fill": "y.fill(1.5)", "full": "np.full(N, 1.5, dtype=x.dtype)",
 "arange": "np.arange(N, dtype=x.dtype)", "linspace": "np.linspace(0, 1, N, dtype=x.dtype)",
}
import io
only = sys.argv[1:] or list(tests)
print(f"{'test':16s} {'bf16 ms':>10s} {'f32 ms':>10s} {'f16 ms':>10s} {'bf16/f32':>9s}")
for name in only:
    code = tests[name]
    res = {}
    for t in [bfloat16, np.float32, np.float16]:
        x = base.astype(t); s = np.sort(x); m = mb.astype(t); y = np.empty_like(x)
        idx = rng.integers(0, N, N)
        txt = "\n".join(map(str, base[:2000].astype(np.float32)))
        g = dict(np=np, x=x, s=s, m=m, y=y, idx=idx, N=N, io=io, txt=txt)
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                tm = timeit.Timer(code, globals=g)
                n, tt = tm.autorange()
                n = max(1, n // 2)
                res[t] = min(tm.repeat(3, n)) / n * 1e3
            except Exception as e:
                res[t] = float("nan")
    ratio = res[bfloat16] / res[np.float32]
    flag = "  <-- >10x" if ratio > 10 else ("  <-- >3x" if ratio > 3 else "")
    print(f"{name:16s} {res[bfloat16]:10.3f} {res[np.float32]:10.3f} {res[np.float16]:10.3f} {ratio:9.1f}{flag}", flush=True)
