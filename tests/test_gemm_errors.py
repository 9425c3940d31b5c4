"""Failures of the matmul kernel reach Python as exceptions with a message, never as a result.

Issue 11 item 2: the vecdot/matvec/vecmat gufunc loops used to return the uninitialised output
buffer when the kernel failed, and matmul raised a MemoryError without a message. Broadcast views
make the sizes: no real memory is used.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import bfloat16_dtype as bd
from bfloat16_dtype import bfloat16

from conftest import TESTS_DIR  # noqa: E402

ONE = np.ones(1, bfloat16)
HUGE = 2 ** 41  # beyond the kernel's 2**40 per dimension


def _k_too_big_cases():
    v = np.broadcast_to(ONE, (HUGE,))
    return {
        "vecdot": lambda: np.vecdot(v, v),
        "matvec": lambda: np.matvec(np.broadcast_to(ONE, (3, HUGE)), v),
        "vecmat": lambda: np.vecmat(v, np.broadcast_to(ONE, (HUGE, 3))),
        "matmul": lambda: np.matmul(np.broadcast_to(ONE, (2, HUGE)), np.broadcast_to(ONE, (HUGE, 2))),
        "linalg.matmul": lambda: bd.matmul(np.broadcast_to(ONE, (2, HUGE)),
                                           np.broadcast_to(ONE, (HUGE, 2))),
    }


@pytest.mark.parametrize("name", list(_k_too_big_cases()))
def test_k_beyond_the_kernel_limit_raises(name):
    if name in ("matvec", "vecmat") and not hasattr(np, name):
        pytest.skip(f"np.{name} exists from NumPy 2.2")
    with pytest.raises(ValueError, match=r"2\*\*40.*|exceeds"):
        _k_too_big_cases()[name]()


def test_k_limit_message_names_the_sizes():
    with pytest.raises(ValueError) as e:
        _k_too_big_cases()["vecdot"]()
    assert str(HUGE) in str(e.value) and "exceeds" in str(e.value)


def test_workspace_allocation_failure_raises_memory_error():
    """Under an address-space limit the GEMV workspace (16 MiB) cannot be allocated: every entry
    point raises MemoryError naming the size instead of returning the output buffer."""
    code = textwrap.dedent("""
        import resource, numpy as np, bfloat16_dtype as bd
        v = np.ones(2**22, bd.bfloat16)
        a = np.broadcast_to(v, (17, 2**22))   # 17 rows, one real row of 8 MiB
        vm = [int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmSize")][0]
        resource.setrlimit(resource.RLIMIT_AS, (vm + (8 << 20), resource.RLIM_INFINITY))
        calls = {"matvec": lambda: np.matvec(a, v), "matmul": lambda: a @ v,
                 "vecmat": lambda: np.vecmat(v, a.T), "linalg": lambda: bd.matvec(a, v)}
        for name, f in calls.items():
            if name in ("matvec", "vecmat") and not hasattr(np, name):  # NumPy < 2.2
                continue
            try:
                f()
                print(name, "no error")
            except MemoryError as e:
                print(name, "MemoryError", e)
    """)
    if not sys.platform.startswith("linux"):
        pytest.skip("uses /proc and RLIMIT_AS")
    r = subprocess.run([sys.executable, "-c", code], cwd=TESTS_DIR, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, BFLOAT16_DTYPE_NUM_THREADS="1"))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 2 + hasattr(np, "matvec") + hasattr(np, "vecmat"), r.stdout
    for line in lines:
        assert "MemoryError" in line and "16777216 bytes" in line and "4194304" in line, line
