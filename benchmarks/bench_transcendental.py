"""Transcendental ufuncs on arrays that fit in cache: bfloat16 against numpy's float32.

One thread, ``np.<fn>(a, out=c)``, interleaved A/B in one process, min of many repeats.
Usage: python benchmarks/bench_transcendental.py [--sizes 10000,2^20] [--ops exp,log,tanh]
       [--repeats 15]
"""
import argparse
import time

import numpy as np

import bfloat16_dtype  # noqa: F401  (registers the dtype)
from bfloat16_dtype import bfloat16
from run import parse_sizes  # the report's size syntax: 10000, 2^20, 1e6, 64k

INPUTS = {
    "exp": (-10.0, 10.0), "exp2": (-10.0, 10.0), "expm1": (-10.0, 10.0),
    "log": (0.01, 100.0), "log2": (0.01, 100.0), "log10": (0.01, 100.0), "log1p": (-0.5, 100.0),
    "tanh": (-5.0, 5.0), "sin": (-10.0, 10.0), "cos": (-10.0, 10.0),
}


def aligned(like, offset):
    """An array shaped like `like` (with its values) at `offset` bytes past a 4 KiB boundary."""
    raw = np.empty(like.nbytes + 8192, np.uint8)
    start = (-raw.ctypes.data) % 4096 + offset
    out = raw[start:start + like.nbytes].view(like.dtype)
    out[...] = like
    return out


def best(fn, a, c, inner):
    t0 = time.perf_counter()
    for _ in range(inner):
        fn(a, out=c)
    return (time.perf_counter() - t0) / inner


def parse_ops(text):
    ops = [op.strip() for op in text.split(",") if op.strip()]
    unknown = [op for op in ops if op not in INPUTS]
    if unknown or not ops:
        raise argparse.ArgumentTypeError(
            f"unknown op(s) {', '.join(unknown) or repr(text)}; choose from {', '.join(INPUTS)}")
    return ops


def parse_repeats(text):
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=parse_sizes, default="10000,100000")
    p.add_argument("--ops", type=parse_ops, default="exp,log,tanh")
    p.add_argument("--repeats", type=parse_repeats, default=15)
    args = p.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'op':6} {'n':>7} {'bf16 us':>9} {'f32 us':>9} {'f32/bf16':>9}")
    for name in args.ops:
        fn = getattr(np, name)
        lo, hi = INPUTS[name]
        for n in args.sizes:
            x = rng.uniform(lo, hi, n).astype(np.float32)
            inner = max(1, 2_000_000 // n)
            tb, tf = [], []
            for r in range(args.repeats):
                # a new output placement each repeat: how the output lies against the input
                # (4 KiB aliasing, cache-line splits) changes either dtype's time by up to 40 %
                offset = 64 * 17 * r % 4096
                ab, af = aligned(x.astype(bfloat16), 0), aligned(x, 0)
                cb, cf = aligned(ab, offset), aligned(af, offset)
                tb.append(best(fn, ab, cb, inner))
                tf.append(best(fn, af, cf, inner))
            b, f = min(tb) * 1e6, min(tf) * 1e6
            print(f"{name:6} {n:>7} {b:9.2f} {f:9.2f} {f / b:9.2f}x", flush=True)


if __name__ == "__main__":
    main()
