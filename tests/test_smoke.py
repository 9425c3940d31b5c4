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


def test_stub_declares_every_public_name():
    """__init__.pyi (what type checkers read) declares every name in __all__, and the scalar's
    constructor takes `value` by keyword as at run time."""
    import ast
    import inspect
    import pathlib
    import bfloat16_dtype
    stub = pathlib.Path(bfloat16_dtype.__file__).with_name("__init__.pyi")
    names = set()
    for node in ast.walk(ast.parse(stub.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names)
    assert set(bfloat16_dtype.__all__) - names == set()
    assert float(bfloat16_dtype.bfloat16(value=1.5)) == 1.5
    for name in ("config", "show_config"):
        assert callable(getattr(bfloat16_dtype, name))
    assert list(inspect.signature(bfloat16_dtype.show_config).parameters) == ["file"]


def test_stub_types_the_array_constructor(tmp_path):
    """bfloat16(x) of a sequence or array returns an array (README, "The scalar"): the stub
    says so, and a scalar stays a scalar; checked with mypy where it is installed."""
    import pathlib
    import subprocess
    import sys
    pytest = __import__("pytest")
    pytest.importorskip("mypy", reason="mypy not installed")
    import bfloat16_dtype
    script = tmp_path / "use.py"
    script.write_text(
        "import numpy as np\nfrom bfloat16_dtype import bfloat16\n"
        "reveal_type(bfloat16(1.5))\nreveal_type(bfloat16([1, 2]))\n"
        "reveal_type(bfloat16(np.ones(2)))\nreveal_type(bfloat16('1.5'))\n")
    root = pathlib.Path(bfloat16_dtype.__file__).parent.parent
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent",
                           str(script)], capture_output=True, text=True, cwd=tmp_path,
                          env={**__import__("os").environ, "MYPYPATH": str(root)})
    notes = [line.split("Revealed type is ")[1] for line in proc.stdout.splitlines()
             if "Revealed type is" in line]
    assert len(notes) == 4, proc.stdout + proc.stderr
    assert "bfloat16" in notes[0] and "ndarray" not in notes[0]
    assert all("ndarray" in n for n in notes[1:3]), notes
    assert "ndarray" not in notes[3]
    assert isinstance(bfloat16_dtype.bfloat16([1, 2]), __import__("numpy").ndarray)


def test_a_checkout_without_the_built_extension_says_so(tmp_path):
    """Importing the package from a source tree whose extension is not built (`python -m pytest`
    in a checkout puts it first on sys.path) names the problem and the two ways out, instead of
    "cannot import name '_ext' from partially initialized module"."""
    import shutil
    from pathlib import Path

    source = Path(bfloat16_dtype.__file__).parent
    shutil.copytree(source, tmp_path / "bfloat16_dtype", ignore=shutil.ignore_patterns("_ext*", "__pycache__"))
    proc = subprocess.run([sys.executable, "-c", "import bfloat16_dtype"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: bfloat16_dtype's C extension is not built in"), proc.stderr
    assert "pip install ." in last and "build_ext --inplace" in last
