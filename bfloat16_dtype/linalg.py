"""Mixed-precision linear algebra: multiply bfloat16, accumulate float32, round once.

The same kernel serves ``a @ b``/``np.matmul``/``np.vecdot``/``np.matvec``/``np.vecmat`` on
bfloat16 arrays and the functions here, which add what numpy's entry points cannot express:
``out_dtype=np.float32`` returns the float32 accumulator unrounded (the TPU matrix-unit
contract), and operands of other types are converted to bfloat16 first.

>>> import numpy as np
>>> from bfloat16_dtype import bfloat16, matmul
>>> a = np.ones((2, 300), bfloat16); b = np.ones((300, 2), bfloat16)
>>> c = matmul(a, b)    # each element sums 300 ones in float32 and rounds once: exactly 300
>>> c.dtype == bfloat16, c.tolist()
(True, [[300.0, 300.0], [300.0, 300.0]])
>>> matmul(a, b, out_dtype=np.float32).dtype
dtype('float32')
"""
from __future__ import annotations

import contextlib
import math
from typing import Iterator, Optional

import numpy as np

from . import _ext
from ._ext import bfloat16
from .interop import _is_ml_bfloat16 as _ml_bf16, _view_ml_bfloat16

__all__ = ["matmul", "dot", "matvec", "vecmat", "vdot", "inner", "get_num_threads",
           "set_num_threads", "num_threads"]

_BF16 = np.dtype(bfloat16)
_ndarray, _np_matmul = np.ndarray, np.matmul
_OUT_DTYPES = (np.dtype(bfloat16), np.dtype(np.float32))


_MAX_THREADS = 1024   # the kernel's own limit (csrc/matmul/gemm.c, default_num_threads)


def _check_thread_env() -> None:
    """An unusable BFLOAT16_DTYPE_NUM_THREADS is ignored by the kernel (it uses every CPU): say
    so once, at import, rather than silently."""
    import os
    import warnings
    import re
    raw = os.environ.get("BFLOAT16_DTYPE_NUM_THREADS", "")
    text = raw.strip()
    if not text:
        return
    # the kernel reads it with C's strtol: ASCII digits only (no "1_0", no other scripts'
    # digits), blanks before, spaces, tabs or newlines after
    # (tests/test_linalg.py::test_unusable_thread_environment_warns)
    # (leading zeros too: strtol reads "0000000003" as 3)
    m = re.fullmatch(r"[ \t\n\v\f\r]*([+-]?)0*([0-9]{1,9})[ \t\n]*", raw, re.ASCII)
    ok = m is not None and 1 <= int(m.group(1) + m.group(2)) <= _MAX_THREADS
    if not ok:
        warnings.warn(f"BFLOAT16_DTYPE_NUM_THREADS={text!r} is not an integer in "
                      f"[1, {_MAX_THREADS}]; the matmul uses every CPU instead",
                      RuntimeWarning, stacklevel=2)


_check_thread_env()


def get_num_threads() -> int:
    """Threads the matmul kernel uses (default: ``BFLOAT16_DTYPE_NUM_THREADS`` or all CPUs)."""
    return _ext.get_num_threads()


def set_num_threads(n: int) -> None:
    """Set the threads the matmul kernel uses for later calls (``n >= 1``)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"set_num_threads: n must be an int, got {n!r}")
    if not 1 <= int(n) <= _MAX_THREADS:
        raise ValueError(f"set_num_threads: n must be in [1, {_MAX_THREADS}], got {n!r}")
    _ext.set_num_threads(int(n))


@contextlib.contextmanager
def num_threads(n: int) -> Iterator[None]:
    """Context manager: use ``n`` matmul threads inside the block. The setting is the
    process's (as threadpoolctl's limits are): blocks in several Python threads at once set
    the same count; leave each in the order entered."""
    old = get_num_threads()
    set_num_threads(n)
    try:
        yield
    finally:
        set_num_threads(old)


def _converts(dtype: np.dtype) -> bool:
    """Real numbers NumPy can cast to bfloat16: builtin ints, bools and floats, and other
    libraries' types with such a cast (ml_dtypes' bfloat16, float8, ...)."""
    return dtype.kind in "biuf" or (dtype.kind == "V" and dtype.fields is None and
                                    dtype.type is not np.void and
                                    np.can_cast(dtype, _BF16, "unsafe"))


def _operands(fn: str, *xs) -> list:
    """The operands as arrays; a masked array is refused: the product would use its masked
    values and drop the mask (tests/test_linalg.py::test_masked_operands_are_refused)."""
    for x in xs:
        if isinstance(x, np.ma.MaskedArray):
            raise TypeError(f"{fn}: masked arrays are not supported (the mask would be "
                            f"ignored); use the @ operator, or pass .filled(0)")
    return [np.asarray(x) for x in xs]


def _as_bf16(x, name: str, fn: str = "matmul") -> np.ndarray:
    arr = _view_ml_bfloat16(np.asarray(x))
    if arr.dtype == _BF16:
        return arr
    if not _converts(arr.dtype):
        raise TypeError(f"{fn}: {name} must be a real numeric array, got {arr.dtype!r}")
    # a value beyond bfloat16's range becomes inf with the cast's "overflow" warning
    # (tests/test_linalg.py::test_operands_beyond_bfloat16_range_warn)
    return arr.astype(_BF16)


def _check_target(dt: np.dtype, what: str, fn: str = "matmul") -> np.dtype:
    """A result dtype the product can be written in: bfloat16 (ours of either byte order, or
    ml_dtypes') or a NumPy float/complex (as np.matmul's same_kind output rule allows for a
    bfloat16 result)."""
    if dt.type is not _BF16.type and dt.kind not in "fc" and not _ml_bf16(dt):
        raise TypeError(f"{fn}: {what} must be bfloat16 or a floating-point dtype, got {dt!r}")
    return dt


def _same_target(out_dt: np.dtype, out_dtype: np.dtype) -> bool:
    """out= and out_dtype= name the same result type: equal, or both bfloat16 in any form (ours
    of either byte order, ml_dtypes'), as np.matmul(out=, dtype=) takes them
    (tests/test_linalg.py::test_ml_dtypes_targets_and_matrix_outputs)."""
    def bf16(dt):
        return dt.type is _BF16.type or _ml_bf16(dt)
    return out_dt == out_dtype or (bf16(out_dt) and bf16(out_dtype))


def _result_dtype(a: np.ndarray, b: np.ndarray) -> np.dtype:
    """Result dtype for out_dtype=None: bfloat16 @ bfloat16 stays bfloat16, mixed inputs follow
    the package's promotion table (bfloat16 @ float32 -> float32, ...)."""
    # np.result_type cannot promote bfloat16 with most types; the ufunc promoters can
    try:
        dt = a.dtype if a.dtype == b.dtype else (np.empty(0, a.dtype) + np.empty(0, b.dtype)).dtype
    except TypeError:   # two other libraries' types (ml_dtypes' float8 with a float8, ...)
        return _BF16
    if dt.kind in "biu" or not (dt == _BF16 or dt.kind in "fc"):
        return _BF16    # integers and other types convert to bfloat16 like everything else
    return dt


def _resolve_out_dtype(out_dtype, a, b, fn: str = "matmul") -> np.dtype:
    if out_dtype is None:
        return _result_dtype(a, b)
    try:
        dt = np.dtype(out_dtype)
    except TypeError as exc:
        raise TypeError(f"{fn}: out_dtype must be a dtype, got {out_dtype!r}") from exc
    return _check_target(dt, "out_dtype", fn)


def matmul(a, b, *, out: Optional[np.ndarray] = None, out_dtype=None) -> np.ndarray:
    """Matrix product with numpy ``matmul`` semantics, computed in mixed precision.

    Operands are converted to bfloat16 (if they are not already); each product is exact in
    float32 and sums accumulate in float32. ``out_dtype=None`` gives bfloat16 for bfloat16
    inputs (each element rounded once) and the promoted type for mixed inputs;
    ``out_dtype=np.float32`` returns the float32 accumulator itself. ``out`` may be a
    preallocated bfloat16 or float32 array of the result's shape.

    >>> import numpy as np
    >>> from bfloat16_dtype import bfloat16, matmul
    >>> matmul(np.eye(2, dtype=bfloat16), np.array([1.5, 2], bfloat16))
    array([1.5, 2. ], dtype=bfloat16)
    """
    if out is None and out_dtype is None and type(a) is _ndarray and type(b) is _ndarray:
        # the common case: numpy's gufunc machinery runs our kernel (the dtype test by identity
        # first: n = 16 products 1.59 -> 1.50 us, AMD EPYC Zen 5)
        da, db = a.dtype, b.dtype
        if (da is _BF16 or da == _BF16) and (db is _BF16 or db == _BF16) and a.ndim and b.ndim:
            return _np_matmul(a, b)
    return _matmul(a, b, out, out_dtype, "matmul")


def _matmul(a, b, out, out_dtype, fn: str):
    """matmul, its messages naming `fn` (the public function called). An ml_dtypes bfloat16
    out= receives the bits through a view, and out_dtype=ml_dtypes.bfloat16 gives such an
    array (tests/test_linalg.py::test_ml_dtypes_targets_and_matrix_outputs)."""
    a_arr, b_arr = _operands(fn, a, b)
    if a_arr.ndim == 0 or b_arr.ndim == 0:
        raise ValueError(f"{fn}: Input operand %d does not have enough dimensions "
                         "(has 0, gufunc core with signature (n?,k),(k,m?)->(n?,m?) requires 1)"
                         % (0 if a_arr.ndim == 0 else 1))
    A, B = _as_bf16(a_arr, "a", fn), _as_bf16(b_arr, "b", fn)
    target = _resolve_out_dtype(out_dtype, a_arr, b_arr, fn)
    given_out = out
    if out is not None:
        _check_out(out, fn)
        if out_dtype is not None and not _same_target(out.dtype, target):
            raise TypeError(f"{fn}: out has dtype {out.dtype} but out_dtype is {target}")
        out = _view_ml_bfloat16(np.asarray(out))   # np.matrix: a plain view of its memory
        target = out.dtype
    elif _ml_bf16(target):
        return _matmul(a, b, None, _BF16, fn).view(target)

    # numpy's 1-D promotion: prepend/append a unit dimension, removed again at the end
    squeeze_a, squeeze_b = A.ndim == 1, B.ndim == 1
    if squeeze_a:
        A = A[np.newaxis, :]
    if squeeze_b:
        B = B[:, np.newaxis]
    M, K = A.shape[-2:]
    K2, N = B.shape[-2:]
    if K != K2:
        raise ValueError(
            f"{fn}: Input operand 1 has a mismatch in its core dimension 0, with gufunc "
            f"signature (n?,k),(k,m?)->(n?,m?) (size {K2} is different from {K})")
    try:
        batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    except ValueError:
        def remapped(shape, core):
            return "(" + ",".join([str(d) for d in shape[:-core]] + ["newaxis"] * core) + ")"

        def plain(shape):
            return "(" + ",".join(str(d) for d in shape) + ")"
        raise ValueError(
            "operands could not be broadcast together with remapped shapes "
            f"[original->remapped]: {plain(a_arr.shape)}->{remapped(a_arr.shape, a_arr.ndim and min(a_arr.ndim, 2))} "
            f"{plain(b_arr.shape)}->{remapped(b_arr.shape, min(b_arr.ndim, 2))}  "
            f"and requested shape ({M},{N})") from None
    result_shape = batch + ((M,) if not squeeze_a else ()) + ((N,) if not squeeze_b else ())
    if out is not None and out.shape != result_shape:
        raise ValueError(f"{fn}: out has shape {out.shape}, expected {result_shape}")
    kernel_dtype = target if target in _OUT_DTYPES else np.dtype(np.float32)

    # Inputs that overlap the output are copied first, so the result is as if computed apart.
    if out is not None:
        if np.may_share_memory(out, A):
            A = A.copy()
        if np.may_share_memory(out, B):
            B = B.copy()

    nbatch = math.prod(batch)
    Ab = np.broadcast_to(A, batch + (M, K))
    Bb = np.broadcast_to(B, batch + (K, N))
    # Write straight into `out` when it is a C-contiguous array of a dtype the kernel writes.
    direct = (out is not None and out.dtype == kernel_dtype and out.dtype.isnative and
              out.flags.c_contiguous and out.flags.writeable)
    R3 = out.reshape((nbatch, M, N)) if direct else np.empty((nbatch, M, N), kernel_dtype)
    if R3.size and K:
        A3, B3 = _view_as(Ab, (nbatch, M, K)), _view_as(Bb, (nbatch, K, N))
        if A3 is not None and B3 is not None:
            _ext._gemm(A3, B3, R3)
        else:
            # batch dimensions that do not merge into one stride (broadcast in several of them):
            # one call per leading index, on views, rather than copying the operands
            # (tests/test_linalg.py::test_broadcast_batches_are_not_copied)
            Rb = R3.reshape(batch + (M, N))
            for idx in np.ndindex(*batch[:-1]):
                _ext._gemm(Ab[idx], Bb[idx], Rb[idx])
    elif R3.size:
        R3[...] = 0
    if direct:
        return given_out
    result = R3.reshape(result_shape)
    if result.dtype != target:
        result = result.astype(target)
    if out is not None:
        out[...] = result
        return given_out
    return result[()] if result.ndim == 0 else result   # 1-D @ 1-D: a scalar, as np.matmul


def _check_out(out, fn: str = "matmul") -> None:
    if not isinstance(out, np.ndarray):
        raise TypeError(f"{fn}: out must be a numpy array, got {type(out).__name__}")
    _check_target(out.dtype, "out", fn)


def _out_target(out, out_dtype, fn: str):
    """The dtype to compute in when the result is copied into `out` afterwards: out's own, so a
    float32 out receives the float32 accumulator, not a bfloat16 rounding of it."""
    if out is None:
        return out_dtype
    _check_out(out, fn)
    if out_dtype is not None and not _same_target(out.dtype, np.dtype(out_dtype)):
        raise TypeError(f"{fn}: out has dtype {out.dtype} but out_dtype is {np.dtype(out_dtype)}")
    return out.dtype


def _need_ndim(x, n: int, which: int, name: str, signature: str) -> np.ndarray:
    (arr,) = _operands(name, x)
    if arr.ndim < n:
        raise ValueError(f"{name}: Input operand {which} does not have enough dimensions (has "
                         f"{arr.ndim}, gufunc core with signature {signature} requires {n})")
    return arr


def _view_as(x: np.ndarray, shape: tuple) -> Optional[np.ndarray]:
    """`x` (batch..., rows, cols) with its batch dimensions merged into one, as a view, or None
    where their strides do not line up (a reshape would copy)."""
    lead = [(n, st) for n, st in zip(x.shape[:-2], x.strides[:-2]) if n != 1]
    if any(st0 != st1 * n1 for (_, st0), (n1, st1) in zip(lead, lead[1:])):
        return None
    return x.reshape(shape)    # NumPy merges such dimensions without copying


def matvec(a, v, *, out=None, out_dtype=None) -> np.ndarray:
    """Matrix-vector product over the last axes: ``(..., m, n) x (..., n) -> (..., m)``.
    Memory-bound: the bfloat16 matrix is streamed once and widened on the fly."""
    a = _need_ndim(a, 2, 0, "matvec", "(m,n),(n)->(m)")
    v = _need_ndim(v, 1, 1, "matvec", "(m,n),(n)->(m)")
    _core_match("matvec", "(m,n),(n)->(m)", a.shape[-1], v.shape[-1])
    res = _matmul(a, v[..., np.newaxis], None, _out_target(out, out_dtype, "matvec"), "matvec")[..., 0]
    return res if out is None else _copy_into(out, res, "matvec")


def vecmat(v, a, *, out=None, out_dtype=None) -> np.ndarray:
    """Vector-matrix product over the last axes: ``(..., n) x (..., n, m) -> (..., m)``."""
    v = _need_ndim(v, 1, 0, "vecmat", "(n),(n,m)->(m)")
    a = _need_ndim(a, 2, 1, "vecmat", "(n),(n,m)->(m)")
    _core_match("vecmat", "(n),(n,m)->(m)", v.shape[-1], a.shape[-2])
    res = _matmul(v[..., np.newaxis, :], a, None, _out_target(out, out_dtype, "vecmat"), "vecmat")[..., 0, :]
    return res if out is None else _copy_into(out, res, "vecmat")


def _core_match(fn: str, signature: str, k: int, k2: int) -> None:
    """numpy's gufunc message for operand 1's contracted size differing from operand 0's."""
    if k != k2:
        raise ValueError(f"{fn}: Input operand 1 has a mismatch in its core dimension 0, with "
                         f"gufunc signature {signature} (size {k2} is different from {k})")


def _not_aligned(A: np.ndarray, B: np.ndarray, da: int, db: int) -> None:
    """np.dot's and np.inner's message when A's axis da and B's axis db differ in size."""
    if A.shape[da] != B.shape[db]:
        def text(shape):
            return "(" + ",".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
        raise ValueError(f"shapes {text(A.shape)} and {text(B.shape)} not aligned: "
                         f"{A.shape[da]} (dim {da % A.ndim}) != {B.shape[db]} (dim {db % B.ndim})")


def _copy_into(out: np.ndarray, res: np.ndarray, fn: str) -> np.ndarray:
    if out.shape != res.shape:
        raise ValueError(f"{fn}: out has shape {out.shape}, expected {res.shape}")
    _view_ml_bfloat16(np.asarray(out))[...] = _view_ml_bfloat16(np.asarray(res))
    return out


def dot(a, b, *, out=None, out_dtype=None) -> np.ndarray:
    """``np.dot`` semantics (sum over the last axis of ``a`` and the second-to-last of ``b``)
    with the mixed-precision kernel."""
    A, B = _operands("dot", a, b)
    if A.ndim == 0 or B.ndim == 0:
        # the result dtype np.dot gives: the promotion table, as for arrays
        # (tests/test_linalg.py::test_dot_with_a_zero_d_operand_promotes_like_np_dot)
        target = _out_target(out, out_dtype, "dot")
        target = (_result_dtype(A, B) if target is None
                  else _check_target(np.dtype(target), "out_dtype", "dot"))
        A16, B16 = _as_bf16(A, "a", "dot"), _as_bf16(B, "b", "dot")
        if target == _BF16 or _ml_bf16(target):
            res = np.multiply(A16, B16).view(target)    # one rounding of the exact product
        else:                                 # the product of two bfloat16 is exact in float32
            res = np.multiply(A16.astype(np.float32), B16.astype(np.float32)).astype(target)
        return res if out is None else _copy_into(out, res, "dot")
    if B.ndim <= 2:
        _not_aligned(A, B, -1, 0 if B.ndim == 1 else -2)
        return _matmul(A, B, out, out_dtype, "dot")
    # dot(a, b)[i, j, k, m] = sum(a[i, j, :] * b[k, :, m])
    _not_aligned(A, B, -1, -2)
    Bm = np.moveaxis(B, -2, 0)  # (K, ..., N)
    K = Bm.shape[0]
    res = _matmul(A.reshape(math.prod(A.shape[:-1]), K), Bm.reshape(K, math.prod(Bm.shape[1:])),
                  None, _out_target(out, out_dtype, "dot"), "dot")
    res = res.reshape(A.shape[:-1] + Bm.shape[1:])
    return res if out is None else _copy_into(out, res, "dot")


def inner(a, b, *, out_dtype=None) -> np.ndarray:
    """``np.inner``: sum over the last axes of both operands."""
    A, B = _operands("inner", a, b)
    if A.ndim == 0 or B.ndim == 0:
        return dot(A, B, out_dtype=out_dtype)
    # numpy's message names b with its last axis moved to the second-to-last place
    _not_aligned(A, B if B.ndim == 1 else np.moveaxis(B, -1, -2), -1, 0 if B.ndim == 1 else -2)
    K = A.shape[-1]
    res = _matmul(A.reshape(math.prod(A.shape[:-1]), K), B.reshape(math.prod(B.shape[:-1]), K).T,
                  None, out_dtype, "inner")
    res = res.reshape(A.shape[:-1] + B.shape[:-1])
    return res[()] if res.ndim == 0 else res     # a scalar, as np.inner gives


def vdot(a, b, *, out_dtype=None):
    """``np.vdot`` for real data: the flattened dot product, float32-accumulated."""
    A, B = (x.reshape(-1) for x in _operands("vdot", a, b))
    if A.size != B.size:
        raise ValueError(f"vdot: vectors have different sizes {A.size} and {B.size}")
    return _matmul(A, B, None, out_dtype, "vdot")[()]
