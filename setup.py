"""Build script: one C/C++ extension, bfloat16_dtype._ext, compiled against NumPy 2's C API."""
import glob
import os

import numpy as np
from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))


def sources():
    found = []
    for pattern in ("csrc/**/*.c", "csrc/**/*.cpp"):
        found += sorted(glob.glob(os.path.join(HERE, pattern), recursive=True))
    return [os.path.relpath(p, HERE) for p in found]


ext = Extension(
    "bfloat16_dtype._ext",
    sources=sources(),
    include_dirs=[np.get_include(), "csrc"],
    # -O3 lets the compiler vectorise the contiguous loops; SIMD beyond the baseline is
    # chosen at run time inside the code, so no -march flag is needed or wanted.
    extra_compile_args=["-O3", "-fno-math-errno"],
    extra_link_args=["-pthread"],
    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_2_0_API_VERSION")],
)

setup(ext_modules=[ext])
