"""The dtype's repr tells this package's bfloat16 from ml_dtypes' once both are loaded (README
"Interop"): ``dtype(bfloat16)`` while ours is the only one, ``dtype(bfloat16_dtype.bfloat16)``
from the moment ml_dtypes is imported, in either order. Each case runs in a fresh interpreter,
since the state only ever changes one way within a process."""
import importlib.util
import subprocess
import sys
import textwrap

import pytest

from conftest import TESTS_DIR

# Not imported here: importing ml_dtypes changes the repr (and the name) in this process.
needs_ml_dtypes = pytest.mark.skipif(importlib.util.find_spec("ml_dtypes") is None,
                                     reason="ml_dtypes not installed (pip install ml_dtypes)")

OURS = "dtype(bfloat16_dtype.bfloat16)"


def _run(code: str) -> list[str]:
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=TESTS_DIR,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip().splitlines()


# What must not change in any order: str, name, array repr, and ml_dtypes' own repr.
UNCHANGED = """
    import numpy as np, ml_dtypes, bfloat16_dtype
    ours = np.dtype(bfloat16_dtype.bfloat16)
    assert str(ours) == "bfloat16" and ours.name == "bfloat16", (str(ours), ours.name)
    assert repr(np.array([1.5, 2.0], ours)) == "array([1.5, 2. ], dtype=bfloat16)"
    assert repr(np.dtype(ml_dtypes.bfloat16)) == "dtype(bfloat16)"
    print(repr(ours))
"""


@needs_ml_dtypes
def test_ours_first_then_ml_dtypes():
    out = _run(textwrap.dedent("""
        import numpy as np, bfloat16_dtype
        print(repr(bfloat16_dtype.dtype))
        import ml_dtypes                      # the import hook switches the repr here
    """) + textwrap.dedent(UNCHANGED))
    assert out == ["dtype(bfloat16)", OURS]


@needs_ml_dtypes
def test_ml_dtypes_first():
    out = _run("import ml_dtypes\n" + textwrap.dedent(UNCHANGED))
    assert out == [OURS]


def test_unchanged_without_ml_dtypes():
    out = _run("""
        import sys, numpy as np
        sys.modules["ml_dtypes"] = None       # as if not installed
        import bfloat16_dtype
        from bfloat16_dtype import interop
        assert interop.register_ml_dtypes() is False
        print(repr(bfloat16_dtype.dtype))
        print(repr(np.array([1.0], bfloat16_dtype.bfloat16)))
    """)
    assert out == ["dtype(bfloat16)", "array([1.], dtype=bfloat16)"]


@needs_ml_dtypes
def test_numpy_error_messages_name_both_types():
    # NumPy builds these messages itself from the two dtypes' reprs.
    out = _run("""
        import numpy as np, bfloat16_dtype, ml_dtypes
        from bfloat16_dtype import bfloat16
        x = np.ones(2, bfloat16)
        y = np.ones(2, ml_dtypes.bfloat16)
        for f in (lambda: y.astype(bfloat16, casting="no"),
                  lambda: x.astype(ml_dtypes.bfloat16, casting="equiv"),
                  lambda: np.add(x, y, out=np.empty(2, ml_dtypes.float8_e4m3fn), casting="safe")):
            try:
                f()
            except TypeError as e:
                print(e)
            else:
                print("no error")
    """)
    assert out == [
        "Cannot cast array data from dtype(bfloat16) to dtype(bfloat16_dtype.bfloat16) "
        "according to the rule 'no'",
        "Cannot cast array data from dtype(bfloat16_dtype.bfloat16) to dtype(bfloat16) "
        "according to the rule 'equiv'",
        "Cannot cast ufunc 'add' output from dtype(bfloat16_dtype.bfloat16) to "
        "dtype(float8_e4m3fn) with casting rule 'safe'",
    ]


def test_byte_swapped_dtype_repr_names_its_order():
    """A byte-swapped descriptor's repr says so, as float16's dtype('>f2') does (it read
    dtype(bfloat16), like the native one); the native repr and str, and the name, are unchanged, also
    once ml_dtypes is loaded (where it is)."""
    out = _run("""
        import importlib.util, numpy as np, bfloat16_dtype
        d = np.dtype(bfloat16_dtype.bfloat16)
        swapped = ">" if np.little_endian else "<"
        s = d.newbyteorder(swapped)
        print(repr(d)); print(repr(s)); print(repr(s.newbyteorder()))
        assert str(d) == "bfloat16" and s.name == "bfloat16" and s != d
        if importlib.util.find_spec("ml_dtypes") is not None:
            import ml_dtypes
            print(repr(s))
    """)
    swapped = ">" if sys.byteorder == "little" else "<"
    assert out[:3] == ["dtype(bfloat16)", f"dtype(bfloat16).newbyteorder('{swapped}')",
                       "dtype(bfloat16)"]
    if len(out) > 3:
        assert out[3] == f"{OURS}.newbyteorder('{swapped}')"
