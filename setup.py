"""Build script: one C/C++ extension, bfloat16_dtype._ext, compiled against NumPy 2's C API."""
import glob
import os

import numpy as np
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


def sources():
    found = []
    for pattern in ("csrc/**/*.c", "csrc/**/*.cpp"):
        found += sorted(glob.glob(os.path.join(HERE, pattern), recursive=True))
    return [os.path.relpath(p, HERE) for p in found]


ext = Extension(
    "bfloat16_dtype._ext",
    sources=sources(),
    # a change to a header rebuilds the extension too (setuptools tracks only what is listed)
    depends=sorted(os.path.relpath(p, HERE) for p in glob.glob(os.path.join(HERE, "csrc", "**", "*.h"),
                                                                recursive=True)),
    include_dirs=[np.get_include(), "csrc"],
    # -O3 lets the compiler vectorise the contiguous loops; SIMD beyond the baseline is
    # chosen at run time inside the code, so no -march flag is needed or wanted. The IEEE flags
    # are results here (numpy turns them into warnings): -ftrapping-math, GCC's default, keeps
    # clang (whose default is -fno-trapping-math) from moving or dropping the operations that
    # raise them, as NumPy's own build does.
    extra_compile_args=["-O3", "-fno-math-errno", "-ftrapping-math"],
    extra_link_args=["-pthread"],
    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_2_0_API_VERSION")],
)


class BuildExt(build_ext):
    """C++ sources get -std=c++17 (the C ones are C11): GCC 12 defaults to C++17, clang 14 to
    C++14, and the flag is an error for C files under clang."""

    def build_extensions(self):
        compile_one = self.compiler._compile

        def _compile(obj, src, ext, cc_args, extra_postargs, pp_opts):
            if src.endswith(".cpp"):
                extra_postargs = [*extra_postargs, "-std=c++17"]
            compile_one(obj, src, ext, cc_args, extra_postargs, pp_opts)

        self.compiler._compile = _compile
        super().build_extensions()


setup(ext_modules=[ext], cmdclass={"build_ext": BuildExt})
