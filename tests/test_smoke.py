"""The README's first example works end to end."""
import subprocess
import sys

import numpy as np

import bfloat16_dtype
from bfloat16_dtype import bfloat16
from conftest import TESTS_DIR


def test_readme_example():
    x = np.array([1.5, 2, 3.14159], dtype=bfloat16)
    assert x.dtype == np.dtype(bfloat16)
    # the name "bfloat16" is ours until ml_dtypes is imported (README, "Interop with ml_dtypes"):
    # checked in a fresh interpreter, since another test (or torch) may have imported ml_dtypes here
    code = "import numpy as np, bfloat16_dtype as b; print(np.dtype('bfloat16') == np.dtype(b.bfloat16))"
    r = subprocess.run([sys.executable, "-c", code], cwd=TESTS_DIR, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "True", r.stdout + r.stderr
    assert repr(x) == "array([1.5 , 2.  , 3.14], dtype=bfloat16)"
    assert str(x) == "[1.5  2.   3.14]"
    for y in (x * 0.5, x + 1, 2.0 - x):
        assert y.dtype == bfloat16
    assert np.finfo(bfloat16).eps == 2.0**-7
    assert np.finfo(bfloat16) is bfloat16_dtype.finfo
    assert np.issubdtype(x.dtype, np.floating)
    assert float(np.ones(100000, bfloat16).sum()) == 99840.0
