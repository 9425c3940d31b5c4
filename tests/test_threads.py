"""Concurrency: Python threads running ufuncs, reductions, sorts, casts, parsing and matmul on
shared inputs (matmuls of several workspace sizes, which hand the kept workspace from call to
call) while the matmul thread count changes give the same bits as a single-threaded run; fork() after the matmul pool has started leaves a child that computes correctly."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import bfloat16_dtype as bd
from bfloat16_dtype import bfloat16

from conftest import TESTS_DIR  # noqa: E402

rng = np.random.default_rng(7)
A = rng.standard_normal((96, 200)).astype(bfloat16)
B = rng.standard_normal((200, 72)).astype(bfloat16)
V = rng.standard_normal(200).astype(bfloat16)
W = rng.standard_normal((256, 384)).astype(bfloat16)
WK = rng.standard_normal((48, 3000)).astype(bfloat16)   # GEMV with a heap workspace (packed V)
VK = rng.standard_normal((3000, 12)).astype(bfloat16)
X = rng.standard_normal(20000).astype(bfloat16)
Y = (rng.standard_normal(20000) * 3).astype(bfloat16)
TEXT = " ".join(f"{v:.6g}" for v in rng.standard_normal(3000))
F64 = rng.standard_normal(20000) * 1e3
S = rng.standard_normal((600, 16, 24)).astype(bfloat16)  # a stack of small products


def jobs():
    """name -> callable returning an array; each reads only the shared inputs."""
    return {
        "add": lambda: np.add(X, Y),
        "divide_strided": lambda: np.divide(X[::3], Y[1::3]),
        "exp": lambda: np.exp(X),
        "tanh": lambda: np.tanh(Y),  # the lookup tables of tanh and log (avx512 tier)
        "log": lambda: np.log(np.abs(X)),
        "sum": lambda: np.asarray(X.reshape(100, 200).sum(axis=1)),
        "max": lambda: np.asarray(np.maximum.reduce(Y.reshape(50, 400), axis=0)),
        "argmax": lambda: np.asarray(np.argmax(X)),
        "sort": lambda: np.sort(Y),
        "argsort": lambda: np.argsort(X, kind="stable"),
        "cast_in": lambda: F64.astype(bfloat16),
        "cast_out": lambda: X.astype(np.float32),
        "parse": lambda: np.fromstring(TEXT, dtype=bfloat16, sep=" "),
        "str_cast": lambda: np.array(TEXT.split()[:500]).astype(bfloat16),
        "matmul": lambda: A @ B,
        "matvec": lambda: A @ V,
        "matmul_f32": lambda: bd.matmul(A, B, out_dtype=np.float32),
        "big_matmul": lambda: W @ W.T,
        # another workspace size: calls of different sizes pass the kept workspace between them
        "tall_matmul": lambda: W.T @ W,
        "skinny": lambda: WK @ VK,
        # the products of a stack shared between the pool's threads (or this call's own)
        "stacked": lambda: S @ S.swapaxes(1, 2),
    }


def as_bits(r):
    r = np.asarray(r)
    return r.view(np.uint16) if r.dtype == bfloat16 else r


@pytest.fixture(scope="module")
def expected():
    with bd.num_threads(1):
        return {k: as_bits(f()).copy() for k, f in jobs().items()}


def test_threads_match_single_threaded_run(expected):
    work = jobs()
    names = list(work)
    errors: list[str] = []
    stop = threading.Event()

    def worker(seed):
        r = np.random.default_rng(seed)
        for _ in range(150):
            name = names[r.integers(len(names))]
            got = as_bits(work[name]())
            if not np.array_equal(got, expected[name]):
                errors.append(name)

    def changer():
        counts = [1, 2, 3, 5, 8, 2, 1, 4]
        i = 0
        while not stop.is_set():
            bd.set_num_threads(counts[i % len(counts)])
            i += 1
            stop.wait(0.002)

    old = bd.get_num_threads()
    threads = [threading.Thread(target=worker, args=(s,)) for s in range(6)]
    ch = threading.Thread(target=changer)
    ch.start()
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        stop.set()
        ch.join()
        bd.set_num_threads(old)
    assert not errors, sorted(set(errors))


def test_fork_after_pool_started():
    """The parent runs a multi-threaded matmul (pool started), forks; the child computes a
    matmul correctly with its own pool and exits. A child process that hangs fails by timeout."""
    if not hasattr(os, "fork"):
        pytest.skip("no fork on this platform")
    code = textwrap.dedent("""
        import os, sys
        import numpy as np
        import bfloat16_dtype as bd
        from bfloat16_dtype import bfloat16
        rng = np.random.default_rng(1)
        a = rng.standard_normal((300, 256)).astype(bfloat16)
        b = rng.standard_normal((256, 300)).astype(bfloat16)
        bd.set_num_threads(2)
        want = (a @ b).view(np.uint16).copy()
        pid = os.fork()
        if pid == 0:
            ok = np.array_equal((a @ b).view(np.uint16), want)
            bd.set_num_threads(3)
            ok = ok and np.array_equal((a @ b).view(np.uint16), want)
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        ok = np.array_equal((a @ b).view(np.uint16), want)
        print("child", os.waitstatus_to_exitcode(status), "parent", ok)
    """)
    r = subprocess.run([sys.executable, "-c", code], cwd=TESTS_DIR, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "child 0 parent True" in r.stdout, (r.stdout, r.stderr[-2000:])


def test_back_to_back_pool_jobs_run_every_task():
    """Hundreds of multi-threaded matmuls in a row (just above the size that uses threads, so
    workers often wake after the caller has claimed their task, or after the job ended): every
    output block is written, with the bits of a single-threaded run."""
    a = rng.standard_normal((128, 136)).astype(bfloat16)  # 2*128*128*136 flops: threaded
    b = rng.standard_normal((136, 128)).astype(bfloat16)
    with bd.num_threads(1):
        want = (a @ b).view(np.uint16).copy()
    for n in (2, 3, 8):
        with bd.num_threads(n):
            for _ in range(300):
                out = np.full((128, 128), np.nan, dtype=bfloat16)
                np.matmul(a, b, out=out)
                assert np.array_equal(out.view(np.uint16), want), n
