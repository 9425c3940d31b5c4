"""bfloat16_dtype/__init__.pyi, read as a type checker reads it (with ``ast``, not by importing)."""
import ast
import pathlib

import numpy as np

import bfloat16_dtype

STUB = pathlib.Path(bfloat16_dtype.__file__).with_name("__init__.pyi")


def _stub_module() -> ast.Module:
    return ast.parse(STUB.read_text(encoding="utf-8"))


def _stub_all(tree: ast.Module) -> list[str] | None:
    """The literal value the stub gives ``__all__`` (None where it only annotates the name)."""
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign):
            targets, value = [node.target], node.value
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return None if value is None else ast.literal_eval(value)
    return None


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.ImportFrom, ast.Import)):
            names.update(a.asname or a.name for a in node.names)
    return names


def test_stub_all_is_the_runtime_list():
    """Type checkers take `from bfloat16_dtype import *` from the stub's ``__all__`` literal: a bare
    ``__all__: list[str]`` exported nothing to them."""
    tree = _stub_module()
    declared = _stub_all(tree)
    assert declared is not None, "__init__.pyi must give __all__ a literal list"
    assert declared == list(bfloat16_dtype.__all__)
    assert len(set(declared)) == len(declared)


def test_every_name_in_stub_all_is_defined_in_the_stub():
    tree = _stub_module()
    declared = _stub_all(tree) or []
    assert declared, "__init__.pyi must give __all__ a literal list"
    assert set(declared) - _top_level_names(tree) == set()


def test_stub_types_the_scalar_class_dtype_as_a_dtype():
    """``bfloat16.dtype`` is a class attribute holding the dtype at run time; the stub declares
    it on the class, not as numpy's per-instance property."""
    assert bfloat16_dtype.bfloat16.dtype == np.dtype(bfloat16_dtype.bfloat16)
    assert bfloat16_dtype.bfloat16(1.5).dtype == np.dtype(bfloat16_dtype.bfloat16)
    cls = next(n for n in _stub_module().body if isinstance(n, ast.ClassDef) and n.name == "bfloat16")
    annotations = {n.target.id: ast.unparse(n.annotation) for n in cls.body
                   if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    assert annotations.get("dtype") == "ClassVar[np.dtype[bfloat16]]"
