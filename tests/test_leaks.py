"""Leak checks: bounded loops over the public API, error paths included. Python-level
allocations are counted with tracemalloc (an object leaked per call shows as growth
proportional to the loop count); C-level buffers (matmul workspace, sort scratch, parsing)
through the resident set size with a generous bound."""
from __future__ import annotations

import gc
import pickle
import sys
import tracemalloc
import warnings

import numpy as np
import pytest

import bfloat16_dtype as bd
from bfloat16_dtype import bfloat16

ARR = np.linspace(-3, 3, 64).astype(bfloat16)
MAT = np.ones((8, 8), bfloat16)


def swallow(fn, *exc):
    try:
        fn()
    except exc:
        pass


CASES = {
    "scalar_ok": lambda: (bfloat16(1.5), bfloat16("2.5"), bfloat16(b"-3"), bfloat16(2 ** 80),
                          bfloat16(np.float32(1)), bfloat16(np.array(2.0)), bfloat16(bfloat16(3))),
    "scalar_errors": lambda: (
        swallow(lambda: bfloat16(np.zeros(3)), TypeError),
        swallow(lambda: bfloat16("x"), ValueError),
        swallow(lambda: bfloat16("\u0661x"), ValueError),
        swallow(lambda: bfloat16(None), TypeError),
        swallow(lambda: bfloat16(1j), TypeError),
        swallow(lambda: bfloat16([1]), TypeError),
        swallow(lambda: bfloat16(object()), TypeError)),
    "scalar_methods": lambda: (repr(bfloat16(0.1)), str(bfloat16(1e10)), hash(bfloat16(2)),
                               float(bfloat16(3)), int(bfloat16(4)), format(bfloat16(1), ".3f"),
                               bfloat16(1).as_integer_ratio(), pickle.loads(pickle.dumps(bfloat16(5))),
                               bfloat16(1) + 1.5, bfloat16(2) * bfloat16(3), bfloat16(1) < 2),
    "ufuncs": lambda: (ARR + ARR, np.exp(ARR), np.maximum(ARR, 0.5), ARR.sum(), ARR.mean(),
                       np.argmax(ARR), np.sort(ARR), np.argsort(ARR), ARR > 0),
    "casts": lambda: (ARR.astype(np.float32), ARR.astype(np.int16), ARR.astype(object),
                      np.arange(10).astype(bfloat16), np.array(["1.5", "2"]).astype(bfloat16),
                      np.array([b"1"]).astype(bfloat16), np.array([1, 2.5], object).astype(bfloat16)),
    "cast_errors": lambda: (
        swallow(lambda: np.array(["x"]).astype(bfloat16), ValueError),
        swallow(lambda: np.array([b"1\x002"]).astype(bfloat16), ValueError),
        swallow(lambda: np.array([object()], object).astype(bfloat16), TypeError)),
    "parse": lambda: (np.fromstring("1 2 3", dtype=bfloat16, sep=" "),
                      swallow(lambda: np.fromstring("1 x", dtype=bfloat16, sep=" "), ValueError)),
    "matmul": lambda: (MAT @ MAT, bd.matmul(MAT, MAT, out_dtype=np.float32), MAT @ ARR[:8],
                       swallow(lambda: MAT @ ARR, ValueError)),
    "printing": lambda: (repr(ARR[:4]), str(ARR[:3]), np.finfo(bfloat16).eps),
}


@pytest.mark.parametrize("name", list(CASES))
def test_no_python_level_growth(name):
    """Three windows of 2,000 calls (500 for printing, which is slow) after a warm-up; the
    smallest growth must stay under 16 bytes per call. A leak of even one 16-byte block per call
    grows every window by that much,
    while CPython's free lists (2,000 tuples of each size, floats, frames: filled in bursts
    when the cyclic collector frees exceptions' tracebacks) and caches stop growing."""
    fn = CASES[name]
    calls = 500 if name == "printing" else 2000
    growth = []
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for _ in range(calls):
            fn()
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for _ in range(3):
                for _ in range(calls):
                    fn()
                # CPython's type attribute cache keeps up to 4096 looked-up name strings; with
                # PYTHONMALLOC=malloc (the sanitizer run) new addresses fill new slots
                sys._clear_type_cache()
                gc.collect()
                now = tracemalloc.get_traced_memory()[0]
                growth.append(now - before)
                before = now
        finally:
            tracemalloc.stop()
    assert min(growth) < 16 * calls, f"{name}: grew {growth} bytes per {calls} calls"


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/statm"), reason="needs /proc")
def test_no_c_level_growth():
    """Native buffers: a 1 MiB matmul workspace, sort scratch, parser buffers. 200 rounds;
    leaking any of them per call would add well over 100 MiB."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((512, 512)).astype(bfloat16)
    v = rng.standard_normal(300_000).astype(bfloat16)
    text = " ".join(["1.5"] * 20000)

    def round_():
        a @ a
        np.argsort(v)
        np.sort(v)
        np.fromstring(text, dtype=bfloat16, sep=" ")
        v.astype(np.float32).astype(bfloat16)

    for _ in range(20):
        round_()
    gc.collect()
    before = rss_bytes()
    for _ in range(200):
        round_()
    gc.collect()
    grown = rss_bytes() - before
    assert grown < 64 * 2 ** 20, f"resident set grew by {grown / 2 ** 20:.1f} MiB"
