"""Interop with other bfloat16 libraries: ml_dtypes, DLPack, torch and JAX.

ml_dtypes (imported by JAX, TensorFlow, onnx) has its own ``bfloat16`` dtype with the same bits.
When both are loaded, casts between the two are bit copies and ``safe``, and binary ufuncs mixing
them run in this package's bfloat16:

>>> import numpy as np, ml_dtypes
>>> from bfloat16_dtype import bfloat16
>>> x = np.array([1.5, -2.0], dtype=bfloat16)
>>> y = x.astype(ml_dtypes.bfloat16)            # bit copy
>>> np.asarray(y, dtype=bfloat16).dtype == x.dtype
True
>>> (x + y).dtype.type is bfloat16
True

The casts are registered when ``bfloat16_dtype`` is imported if ml_dtypes is already loaded,
and otherwise right after ml_dtypes is first imported (an import hook that removes itself once
it has seen ml_dtypes, zarr and numpy.ma; zarr gets the bfloat16 data type of
:func:`bfloat16_dtype.io.register_zarr_dtype` the same way, and numpy.ma float16's fill values).

``np.dtype("bfloat16")`` is ml_dtypes' bfloat16 whenever ml_dtypes has been imported (in either
order), and this package's otherwise; the ecosystem that imports ml_dtypes (JAX, onnx) relies on
the name. Write ``bfloat16_dtype.bfloat16`` where you mean this package's type.

The repr of this package's dtype is ``dtype(bfloat16)`` while it is the only bfloat16 in the
process and ``dtype(bfloat16_dtype.bfloat16)`` from the moment ml_dtypes is loaded (either
order), so NumPy's messages that mention both types tell them apart; ml_dtypes' stays
``dtype(bfloat16)``. ``str(dtype)``, ``dtype.name`` and array reprs (``dtype=bfloat16``) do not
change.

DLPack: :func:`to_dlpack` wraps an array in an object with ``__dlpack__``/``__dlpack_device__``
(DLPack bfloat16: type code 4, 16 bits, 1 lane); :func:`from_dlpack` imports any CPU producer's
bfloat16 tensor without copying. :func:`to_torch`, :func:`from_torch`, :func:`to_jax`,
:func:`from_jax` build on them.
"""
from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import sys
import threading
import warnings
from typing import Any

import numpy as np

from . import _ext
from ._ext import bfloat16

__all__ = ["register_ml_dtypes", "ml_dtypes_registered", "to_dlpack", "from_dlpack",
           "to_torch", "from_torch", "to_jax", "from_jax"]

_DTYPE = np.dtype(bfloat16)
_lock = threading.Lock()
_ml_dtype: np.dtype | None = None   # ml_dtypes' bfloat16 dtype once the casts are registered

# DLPack device types whose memory the CPU can read (as NumPy accepts them): CPU, CUDA host,
# ROCm host, CUDA managed.
_HOST_DEVICES = frozenset({1, 3, 11, 13})
_DEVICE_NAMES = {2: "CUDA", 4: "OpenCL", 7: "Vulkan", 8: "Metal", 9: "VPI", 10: "ROCm",
                 12: "ext_dev", 14: "oneAPI", 15: "WebGPU", 16: "Hexagon", 17: "MAIA"}


def _numpy_ufuncs() -> list[np.ufunc]:
    """NumPy's public ufuncs, each once (np.abs and np.absolute are one)."""
    found = (getattr(np, name) for name in dir(np))
    return list(dict.fromkeys(u for u in found if isinstance(u, np.ufunc)))


def _ufuncs_to_mix(ufuncs: list[np.ufunc]) -> list[np.ufunc]:
    """The binary ufuncs with our loops, and np.clip (three inputs)."""
    out = []
    for u in ufuncs:
        if u.nin != 2:
            continue
        if u.signature is not None:      # gufuncs: matmul, vecdot, matvec, vecmat
            try:
                u(np.zeros((1, 1), _DTYPE), np.zeros((1, 1), _DTYPE))
            except TypeError:
                continue
            out.append(u)
            continue
        try:
            u.resolve_dtypes((_DTYPE, _DTYPE, None) + (None,) * (u.nout - 1))
        except TypeError:
            continue
        out.append(u)
    out.append(np._core.umath.clip)
    return out


def _ufuncs_with_our_outputs(ufuncs: list[np.ufunc]) -> list[np.ufunc]:
    """The ufuncs (not gufuncs) whose loop on this package's bfloat16 gives only bfloat16, each
    resolved once here, which puts that loop into the ufunc's list for the wrapping loops of
    _ext._register_output_loops."""
    out = []
    for u in ufuncs:
        if u.signature is not None:
            continue
        try:
            dtypes = u.resolve_dtypes((_DTYPE,) * u.nin + (None,) * u.nout)
        except TypeError:
            continue
        if all(d == _DTYPE for d in dtypes):
            out.append(u)
    return out


def register_ml_dtypes() -> bool:
    """Register the casts (both ways) and mixed-ufunc promoters with ml_dtypes' bfloat16.

    Imports ml_dtypes if needed; returns False when it is not installed. Idempotent. Called
    automatically, so users need it only to make sure ml_dtypes is loaded.

    >>> import bfloat16_dtype.interop as interop
    >>> interop.register_ml_dtypes()
    True
    """
    global _ml_dtype
    try:
        # Outside the lock: a first import runs the import hook, which calls this function.
        import ml_dtypes
    except ImportError:
        return False
    with _lock:
        if _ml_dtype is not None:
            return True
        # From here on two bfloat16 types exist: our dtype's repr names the package so that
        # NumPy's messages mixing the two tell them apart (tests/test_interop_repr.py).
        _ext._qualify_dtype_repr()
        theirs = np.dtype(ml_dtypes.bfloat16)
        _ext._register_bit_casts(theirs)
        ufuncs = _numpy_ufuncs()
        _ext._register_mixed_promoters(theirs, _ufuncs_to_mix(ufuncs))
        # dtype="bfloat16" (theirs, from here on) for our arrays runs our loops
        _ext._register_output_loops(theirs, _ufuncs_with_our_outputs(ufuncs))
        for name in _ML_NARROW_TYPES:     # float8 & co.: casts through float32, both ways
            narrow = getattr(ml_dtypes, name, None)
            if narrow is not None:
                _ext._register_float32_casts(np.dtype(narrow))
        _ml_dtype = theirs
        # The name follows ml_dtypes once it is loaded (see the module docstring).
        np.sctypeDict["bfloat16"] = ml_dtypes.bfloat16
        if theirs.char == np.dtype(_ext.bfloat16).char:  # the type character likewise
            np.sctypeDict[theirs.char] = ml_dtypes.bfloat16
        return True


#: ml_dtypes' narrow types that get casts with this package's bfloat16 (those the installed
#: ml_dtypes lacks are passed over).
_ML_NARROW_TYPES = ("float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn",
                    "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
                    "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn",
                    "int1", "int2", "int4", "uint1", "uint2", "uint4", "complex32", "bcomplex32")


def ml_dtypes_registered() -> bool:
    """True once the casts with ml_dtypes' bfloat16 are registered."""
    return _ml_dtype is not None


def _register_zarr() -> None:
    from . import io

    io.register_zarr_dtype()


def _register_numpy_ma() -> None:
    """Give bfloat16 float16's fill values in ``numpy.ma`` (README, "Differences from float16").

    numpy.ma builds its extremum fill values from ``np.sctypeDict`` when it is imported, with
    ``finfo``'s largest finite values for every float type but its own (those get +-inf): a
    masked ``max`` of -inf values would return -3.39e38 and ``argmax`` point at a masked
    element, and where numpy.ma loads first bfloat16 had no entry at all ("Unsuitable type").
    Its default fill value is chosen by dtype kind, and kind ``'V'`` gives ``b'???'``, which no
    bfloat16 result can hold (``a.max(axis=0)`` raised): bfloat16 gets float16's (1e20), in
    either byte order (tests/test_dropin.py::test_masked_extrema_and_fill_values_like_float16).

    ``MaskedArray.mean`` with a mask set sums in the array's dtype unless it is float16, so a
    bfloat16 mean (and var, std, anom, average, which call it) came from a sum rounded to
    bfloat16: the mean of 5000 ones was 0.9984. The sum now runs in float32 for bfloat16, and
    the mean is float64 as before (tests/test_dropin.py::test_masked_mean_and_var_accumulate_in_float32)."""
    core = sys.modules["numpy.ma.core"]
    core.max_filler[_ext.bfloat16] = -np.inf
    core.min_filler[_ext.bfloat16] = np.inf
    numpy_default = core.default_fill_value
    if getattr(numpy_default, "_bfloat16_dtype", False):
        return
    half = np.dtype(np.float16)
    recurse = getattr(core, "_recursive_fill_value", None)

    def is_ours(d: np.dtype) -> bool:
        return d.type is _ext.bfloat16

    def default_fill_value(obj):
        dtype = obj if isinstance(obj, np.dtype) else getattr(obj, "dtype", None)
        if dtype is None:
            dtype = np.asanyarray(obj).dtype
        if not isinstance(dtype, np.dtype):  # a scalar type: NumPy's answer (or error)
            return numpy_default(obj)
        if is_ours(dtype):
            return numpy_default(half)
        if recurse is not None and (dtype.names is not None or dtype.subdtype is not None):
            return recurse(dtype, lambda d: numpy_default(half if is_ours(d) else d))
        return numpy_default(obj)

    numpy_mean = core.MaskedArray.mean

    @functools.wraps(numpy_mean)
    def mean(self, axis=None, dtype=None, out=None, keepdims=np._NoValue):
        if dtype is None and is_ours(self.dtype) and self._mask is not core.nomask:
            dtype = np.float32
        return numpy_mean(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims)

    core.MaskedArray.mean = mean

    default_fill_value.__doc__ = numpy_default.__doc__
    default_fill_value._bfloat16_dtype = True
    core.default_fill_value = default_fill_value
    ma = sys.modules.get("numpy.ma")
    if ma is not None and getattr(ma, "default_fill_value", None) is numpy_default:
        ma.default_fill_value = default_fill_value


def _normalize_dtype_token(dt: np.dtype) -> tuple[str, str]:
    return ("bfloat16_dtype.bfloat16", dt.str)


def _register_dask_tokenize() -> None:
    """Give this package's dtype its own dask token.

    dask tokenizes a dtype by ``dtype.str``, which is ``'<V2'`` for this bfloat16 and for
    ml_dtypes' alike: ``da.ones(n, dtype=bfloat16)`` and ``da.ones(n, dtype=ml_dtypes.bfloat16)``
    (and ``x.astype`` of either) got the same key, so a graph holding both computed one of them
    for the other, whose dtype then differed from the collection's
    (tests/test_dask.py::test_dask_keys_tell_the_two_bfloat16s_apart)."""
    from dask.base import normalize_token

    normalize_token.register(type(_DTYPE))(_normalize_dtype_token)


# What to run right after each optional library is loaded, by module name.
_AFTER_IMPORT = {"ml_dtypes": register_ml_dtypes, "zarr": _register_zarr,
                 "numpy.ma.core": _register_numpy_ma, "dask.base": _register_dask_tokenize}
_pending: set[str] = set()          # names whose callback has not run yet (changed under _hook_lock)
_hook_lock = threading.Lock()


class _LoaderThenRegister(importlib.abc.Loader):
    """Runs the library's own loader, then this package's registration for it, before the
    import statement returns (NumPy caches a missing cast at the first request)."""

    def __init__(self, inner: Any, name: str) -> None:
        self._inner = inner
        self._name = name

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module) -> None:
        self._inner.exec_module(module)
        _run_after_import(self._name, stacklevel=3)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _AfterImportHook(importlib.abc.MetaPathFinder):
    def __init__(self) -> None:
        self._busy = threading.local()   # a finder below that asks sys.meta_path again

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _pending or getattr(self._busy, "name", None) == fullname:
            return None
        # Ask the other finders (path entries, editable installs) for the real spec.
        self._busy.name = fullname
        try:
            for finder in list(sys.meta_path):
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
            else:
                return None
        finally:
            self._busy.name = None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        spec.loader = _LoaderThenRegister(spec.loader, fullname)
        return spec


_hook = _AfterImportHook()


def _run_after_import(name: str, stacklevel: int = 2) -> None:
    with _hook_lock:
        if name not in _pending:
            return
        _pending.discard(name)
        if not _pending:
            try:
                sys.meta_path.remove(_hook)
            except ValueError:
                pass
    try:
        _AFTER_IMPORT[name]()
    except Exception as exc:  # never break the other library's import itself
        warnings.warn(f"bfloat16_dtype could not register its bfloat16 with {name}: {exc!r}",
                      RuntimeWarning, stacklevel=stacklevel + 1)


def _install() -> None:
    """At import: register with each library that is already loaded; for the others, a finder
    at the front of ``sys.meta_path`` registers right after they load, then removes itself."""
    with _hook_lock:
        _pending.update(_AFTER_IMPORT)
        if _hook not in sys.meta_path:
            sys.meta_path.insert(0, _hook)
    for name in _AFTER_IMPORT:
        if name in sys.modules:
            _run_after_import(name)


# ---- DLPack -------------------------------------------------------------------------------

def _int_pair(value: Any, keyword: str, names: str) -> tuple[int, int]:
    """A __dlpack__ keyword that takes two ints, else TypeError naming it."""
    try:
        first, second = (int(v) for v in value)
    except (TypeError, ValueError):
        raise TypeError(f"__dlpack__: {keyword} must be None or a {names} tuple of ints, "
                        f"got {value!r}") from None
    return first, second


class DLPackTensor:
    """A bfloat16 array seen through the DLPack protocol (what :func:`to_dlpack` returns).

    Any DLPack consumer accepts it: ``torch.from_dlpack``, ``jax.dlpack.from_dlpack``, ...
    The memory is shared with the array and kept alive by the consumer.
    """

    __slots__ = ("_array",)

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None):
        if stream is not None:
            raise BufferError(f"bfloat16 arrays live in host memory: stream must be None, got {stream!r}")
        if copy is not None and not isinstance(copy, (bool, np.bool_)):
            raise TypeError(f"__dlpack__: copy must be True, False or None, got {copy!r}")
        major = 0 if max_version is None else _int_pair(max_version, "max_version", "(major, minor)")[0]
        if dl_device is not None and _int_pair(dl_device, "dl_device", "(device_type, device_id)") != (1, 0):
            raise BufferError(f"bfloat16 arrays can only be exported to the CPU (1, 0), not {dl_device!r}")
        arr = self._array.copy() if copy else self._array
        # a versioned capsule of a copy says so (IS_COPIED), as NumPy's does
        return _ext._dlpack_export(arr, major >= 1, bool(copy))

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)

    def __repr__(self) -> str:
        return f"DLPackTensor(shape={self._array.shape}, dtype=bfloat16_dtype.bfloat16)"


def _view_ml_bfloat16(x: np.ndarray) -> np.ndarray:
    """ml_dtypes' bfloat16 array as ours (the same bits: a free view); any other array as it is.
    The numerics, rounding and training helpers take JAX's and ml_dtypes' arrays through it
    (tests/test_interop_mldtypes.py::test_helpers_take_ml_dtypes_arrays)."""
    if x.dtype == _DTYPE or "ml_dtypes" not in sys.modules:
        return x
    if _ml_dtype is None:
        register_ml_dtypes()
    if _ml_dtype is None:
        return x
    if x.dtype == _ml_dtype:
        return x.view(_DTYPE)
    # the other byte order: ours in that order, which every helper takes as it takes ours
    # (tests/test_interop_dlpack.py::test_byte_swapped_ml_dtypes_arrays_are_read)
    if x.dtype == _ml_dtype.newbyteorder():
        return x.view(_DTYPE.newbyteorder())
    return x


def _is_ml_bfloat16(dt: np.dtype) -> bool:
    """ml_dtypes' bfloat16 dtype (the same bits as ours), which linalg and dask take as a
    target or an input."""
    return dt != _DTYPE and _view_ml_bfloat16(np.empty(0, dt)).dtype == _DTYPE


def _asarray(x) -> np.ndarray:
    """np.asarray(x), and a CPU torch.bfloat16 tensor (which NumPy cannot read: torch raises a
    TypeError) shared through DLPack (tests/test_training.py::test_torch_bfloat16_tensors_are_read)."""
    try:
        return np.asarray(x)
    except TypeError:
        if type(x).__module__.split(".")[0] == "torch" and str(getattr(x, "dtype", "")) == "torch.bfloat16":
            return from_torch(x.detach())
        raise


def _read_as_ours(x: np.ndarray) -> np.ndarray:
    """An input the helpers only read: ml_dtypes' bfloat16 as ours (a view), and a byte-swapped
    bfloat16 as a native copy, as NumPy's own functions take it
    (tests/test_reductions.py::test_helpers_read_byte_swapped_bfloat16)."""
    x = _view_ml_bfloat16(x)
    if x.dtype.type is _ext.bfloat16 and not x.dtype.isnative:
        return x.astype(_DTYPE)
    return x


def _dtype_text(dt: np.dtype) -> str:
    """A dtype for an error message, with its type's module where the name alone is ambiguous
    (ml_dtypes' bfloat16 prints as "bfloat16" too)."""
    if dt.type is not _ext.bfloat16 and dt.name != "bfloat16":
        return str(dt)
    order = " byte-swapped" if not dt.isnative else ""
    return f"{dt.type.__module__}.{dt.type.__name__}{order}"


def _as_ours(x: np.ndarray, what: str) -> np.ndarray:
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{what} expects a numpy array, got {type(x).__name__}")
    ours = _read_as_ours(x)   # byte-swapped: a native copy, as DLPack has native order only
    if ours.dtype == _DTYPE:
        return ours
    raise TypeError(f"{what} expects a bfloat16 array, got dtype {x.dtype!r} "
                    f"(type {x.dtype.type.__module__}.{x.dtype.type.__name__})")


def to_dlpack(x: np.ndarray) -> DLPackTensor:
    """Wrap a bfloat16 array (ours or ml_dtypes') for DLPack consumers, without copying (a
    byte-swapped array is copied to native order first: DLPack has no byte order).

    >>> import numpy as np, torch
    >>> t = torch.from_dlpack(to_dlpack(np.ones(3, bfloat16)))
    >>> t.dtype
    torch.bfloat16
    """
    if not isinstance(x, np.ndarray):
        raise TypeError(f"to_dlpack expects a numpy array, got {type(x).__name__}")
    return DLPackTensor(_as_ours(x, "to_dlpack"))


def _refuse_negated_view(x: Any, fn: str) -> None:
    """A torch tensor whose negative bit is set is a lazily negated view: its memory holds the
    values before negation, and its __dlpack__ exports that memory as it is. Refused, as
    ``t.numpy()`` refuses it (tests/test_interop_dlpack.py::test_negated_torch_views_are_refused)."""
    is_neg = getattr(x, "is_neg", None)
    if callable(is_neg) and is_neg():
        raise BufferError(f"{fn}: the tensor is a negated view (its negative bit is set); call "
                          ".resolve_neg() first")


def from_dlpack(x: Any, *, copy: bool | None = None) -> np.ndarray:
    """Import a bfloat16 tensor from any DLPack producer (torch, JAX, a capsule) as a
    bfloat16 array sharing its memory (``copy=True`` copies).

    The producer's strides, byte offset and read-only flag are kept; a producer that answers
    with an unversioned capsule (JAX), which has no such flag, gives a read-only array, as
    ``np.from_dlpack`` does (a capsule passed in directly keeps its memory writable). A tensor
    that is not in host memory (CUDA) or is not bfloat16 raises a clear error.

    >>> import torch
    >>> from_dlpack(torch.ones(2, dtype=torch.bfloat16))
    array([1., 1.], dtype=bfloat16)
    """
    if copy is not None and not isinstance(copy, (bool, np.bool_)):
        raise TypeError(f"from_dlpack: copy must be True, False or None, got {copy!r}")
    out = _import_dlpack(x, unversioned_read_only=True)
    if copy:
        return out.copy()
    # a new array object over the same memory, as np.from_dlpack gives for an ndarray
    # (tests/test_interop_dlpack.py::test_from_dlpack_of_an_array_is_a_new_view)
    return out.view() if out is x else out


def _import_dlpack(x: Any, unversioned_read_only: bool) -> np.ndarray:
    if isinstance(x, np.ndarray):
        out = _as_ours(x, "from_dlpack")
    elif type(x).__name__ == "PyCapsule":
        out = _ext._dlpack_import(x)
    else:
        if not hasattr(x, "__dlpack__"):
            raise TypeError(f"from_dlpack expects an object with __dlpack__ or a DLPack capsule, "
                            f"got {type(x).__name__}")
        is_deleted = getattr(x, "is_deleted", None)   # a JAX array after .delete()
        if callable(is_deleted) and is_deleted() is True:
            raise RuntimeError(f"from_dlpack: the {type(x).__name__} has been deleted")
        if hasattr(x, "__dlpack_device__"):
            dev = tuple(x.__dlpack_device__())
            if int(dev[0]) not in _HOST_DEVICES:
                name = _DEVICE_NAMES.get(int(dev[0]), f"device type {dev[0]}")
                raise BufferError(f"from_dlpack: the tensor is on {name} (device {dev}), not in "
                                  f"host memory; move it to the CPU first (e.g. tensor.cpu())")
        _refuse_negated_view(x, "from_dlpack")
        try:
            capsule = x.__dlpack__(max_version=(1, 0))
        except TypeError:          # a producer from before DLPack 1.0 takes no max_version
            capsule = x.__dlpack__()
        # an unversioned capsule (JAX's) cannot say its memory is read-only: as NumPy's
        # from_dlpack, such an import is read-only unless the producer is known to be
        # writable (a torch tensor) (tests/test_interop_dlpack.py::
        # test_unversioned_producers_import_read_only)
        out = _ext._dlpack_import(capsule, unversioned_read_only)
    return out


def to_torch(x: np.ndarray):
    """A ``torch.bfloat16`` tensor sharing the array's memory.

    A read-only array is copied (torch tensors are always writable), and so is an array with a
    negative stride (torch has none; ``torch.from_dlpack`` refuses one, or aborted the process on
    one with torch 2.13) or a stride that is no whole number of elements (a field of a packed
    structured array; DLPack counts strides in elements).

    >>> to_torch(np.ones(2, bfloat16))
    tensor([1., 1.], dtype=torch.bfloat16)
    """
    import torch

    x = _as_ours(x, "to_torch")
    if not x.flags.writeable or any(s < 0 or s % x.itemsize for s in x.strides):
        x = x.copy()
    return torch.from_dlpack(DLPackTensor(x))


def from_torch(t) -> np.ndarray:
    """A bfloat16 array sharing a CPU ``torch.bfloat16`` tensor's memory.

    >>> import torch
    >>> from_torch(torch.tensor([1.5, 2.0], dtype=torch.bfloat16))
    array([1.5, 2. ], dtype=bfloat16)
    """
    import torch

    if not isinstance(t, torch.Tensor):
        raise TypeError(f"from_torch expects a torch.Tensor, got {type(t).__name__}")
    if t.dtype != torch.bfloat16:
        raise TypeError(f"from_torch expects a torch.bfloat16 tensor, got {t.dtype}")
    if t.device.type != "cpu":
        raise BufferError(f"from_torch: the tensor is on {t.device}, not the CPU; call .cpu() first")
    _refuse_negated_view(t, "from_torch")
    # torch tensors are writable: so is the array, also from a torch whose capsules are
    # unversioned
    return _import_dlpack(t.detach() if t.requires_grad else t, unversioned_read_only=False)


def to_jax(x: np.ndarray):
    """A JAX array of dtype bfloat16 from a bfloat16 array (through DLPack; JAX copies unless
    the data meets its alignment). ``jnp.asarray(x)`` itself refuses this package's dtype;
    ``jnp.asarray(x.astype(ml_dtypes.bfloat16))`` is the other route (a bit copy). A read-only
    array, and one neither C- nor Fortran-contiguous (JAX reads compact buffers only), is copied
    first."""
    import jax.numpy as jnp

    x = _as_ours(x, "to_jax")
    if not x.flags.writeable or not (x.flags.c_contiguous or x.flags.f_contiguous):
        x = np.array(x, order="C")
    return jnp.from_dlpack(DLPackTensor(x))


def from_jax(a) -> np.ndarray:
    """A bfloat16 array sharing a CPU JAX bfloat16 array's memory, read-only (JAX arrays are
    immutable; JAX's export does not flag that itself). ``np.asarray(a, dtype=bfloat16)``
    also works (a bit-copy cast from ml_dtypes' bfloat16)."""
    out = from_dlpack(a)
    if isinstance(a, np.ndarray):
        out = out.view()          # a view: a NumPy array passed in stays writable
    # Else the imported array itself, whose base (the DLPack capsule) offers no writable
    # buffer: NumPy then refuses to make it, or a view of it, writable again
    # (tests/test_interop_dlpack.py::test_from_jax_stays_read_only).
    out.flags.writeable = False
    return out
