"""The contenders: one object per number format/library, all driven through the same methods.

- ``ours``      bfloat16_dtype: numpy operations on ``bfloat16_dtype.bfloat16`` arrays
                (plus ``bfloat16_dtype.matmul``);
- ``float32``   numpy float32 (BLAS sgemm/sgemv for matmul) -- the baseline;
- ``float16``   numpy float16;
- ``ml_dtypes`` numpy operations on ``ml_dtypes.bfloat16`` arrays (optional);
- ``torch``     torch operations on CPU ``torch.bfloat16`` tensors (optional).

A contender that cannot be imported carries a ``status`` ("not installed" or "error: ...")
instead of failing; every table then shows that status in its column.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import numpy as np


class OperationCrashed(RuntimeError):
    """An operation of ours that was disabled because it killed a test process."""


class Contender:
    key: str
    label: str
    status: str | None = None  # None when usable
    bf16 = False  # a bfloat16 implementation (as opposed to a baseline format)

    @property
    def available(self) -> bool:
        return self.status is None

    def describe(self) -> str:
        raise NotImplementedError


class NumpyContender(Contender):
    """Any numpy dtype: all operations are the plain numpy functions."""

    def __init__(self, key: str, label: str, dtype: Any, version: str = "", bf16: bool = False):
        self.key, self.label, self.dtype = key, label, np.dtype(dtype)
        self.version = version
        self.bf16 = bf16

    def describe(self) -> str:
        if self.status:
            return self.status
        prefix = f"{self.version}, " if self.version else ""
        return f"{prefix}numpy dtype {self.dtype.name!r} ({self.dtype.itemsize} bytes per element)"

    # construction and conversion
    def from_f32(self, x: np.ndarray) -> np.ndarray:
        return x.astype(self.dtype)

    def from_f64(self, x: np.ndarray) -> np.ndarray:
        return x.astype(self.dtype)

    def scalar(self, value: float) -> Any:
        return np.array(value, dtype=np.float64).astype(self.dtype)

    def to_f64(self, a: Any) -> np.ndarray:
        return np.asarray(a).astype(np.float64)

    def empty(self, shape: Any) -> np.ndarray:
        return np.empty(shape, dtype=self.dtype)

    def empty_f32(self, shape: Any) -> np.ndarray:
        return np.empty(shape, dtype=np.float32)

    def empty_f64(self, shape: Any) -> np.ndarray:
        return np.empty(shape, dtype=np.float64)

    def source_f32(self, x: np.ndarray) -> np.ndarray:
        return x

    def itemsize(self) -> int:
        return np.empty(4, dtype=self.dtype).nbytes // 4

    # operations
    def cast_into(self, dst: Any, src: Any) -> None:
        np.copyto(dst, src, casting="unsafe")

    def add(self, a, b, out):
        return np.add(a, b, out=out)

    def multiply(self, a, b, out):
        return np.multiply(a, b, out=out)

    def exp(self, a, out):
        return np.exp(a, out=out)

    def log(self, a, out):
        return np.log(a, out=out)

    def tanh(self, a, out):
        return np.tanh(a, out=out)

    def arctan2(self, a, b, out):
        return np.arctan2(a, b, out=out)

    def hypot(self, a, b, out):
        return np.hypot(a, b, out=out)

    def power(self, a, b, out):
        return np.power(a, b, out=out)

    def exp_value(self, a):
        return np.exp(a)

    def sum(self, a):
        return np.sum(a)

    def sum_axis(self, a, axis):
        return np.sum(a, axis=axis)

    def mean(self, a):
        return np.mean(a)

    def std(self, a):
        return np.std(a)

    def sort(self, a):
        return np.sort(a)

    def index(self, idx: np.ndarray) -> np.ndarray:
        return idx

    def add_at(self, target, idx, values):
        np.add.at(target, idx, values)

    def add_at_2d(self, target, rows, cols, values):
        np.add.at(target, (rows, cols), values)

    def argsort(self, a):
        return np.argsort(a)

    def dot(self, a, b):
        return np.dot(a, b)

    def matmul(self, a, b):
        return a @ b

    def result_dtype(self, r: Any) -> str:
        return str(np.asarray(r).dtype)


class OursContender(NumpyContender):
    """bfloat16_dtype; also exposes the package's own ``matmul`` (bf16 multiply, f32 accumulate)."""

    def __init__(self, threads: int | None = None) -> None:
        self.key, self.label, self.bf16 = "ours", "bfloat16_dtype", True
        self.module = None
        try:
            import bfloat16_dtype
            from bfloat16_dtype import bfloat16
        except Exception as exc:  # noqa: BLE001 -- an import failure is reported, not raised
            self.status = f"error: {type(exc).__name__}: {exc}"
            self.dtype, self.version = np.dtype(np.float32), ""
            return
        self.module = bfloat16_dtype
        self.dtype = np.dtype(bfloat16)
        self.version = f"bfloat16_dtype {getattr(bfloat16_dtype, '__version__', '(no __version__)')}"
        if threads and hasattr(bfloat16_dtype, "set_num_threads"):
            bfloat16_dtype.set_num_threads(threads)

    def describe(self) -> str:
        text = super().describe()
        get_threads = getattr(self.module, "get_num_threads", None)
        if get_threads is not None:
            try:
                text += f", matmul kernel threads: {get_threads()}"
            except Exception as exc:  # noqa: BLE001
                text += f", matmul kernel threads: error: {exc}"
        ext = getattr(self.module, "_ext", None)
        if ext is not None and hasattr(ext, "_gemm_kernel"):
            text += f", GEMM/GEMV kernel: {ext._gemm_kernel}"
        return text

    def disable(self, op: str, reason: str) -> None:
        """Make ``op`` raise instead of running (used for operations that crash the process)."""

        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise OperationCrashed(reason)

        setattr(self, op, refuse)

    def package_matmul(self, a, b, out=None, out_dtype=None):
        # Looked up per call so that a missing function shows as an error cell, not a crash.
        fn = getattr(self.module, "matmul")
        kwargs = {}
        if out is not None:
            kwargs["out"] = out
        if out_dtype is not None:
            kwargs["out_dtype"] = out_dtype
        return fn(a, b, **kwargs)


class MlDtypesContender(NumpyContender):
    def __init__(self) -> None:
        self.key, self.label, self.bf16 = "ml_dtypes", "ml_dtypes bf16", True
        try:
            import ml_dtypes
        except ImportError:
            self.status = "not installed"
            self.dtype, self.version = np.dtype(np.float32), ""
            return
        except Exception as exc:  # noqa: BLE001
            self.status = f"error: {type(exc).__name__}: {exc}"
            self.dtype, self.version = np.dtype(np.float32), ""
            return
        self.dtype = np.dtype(ml_dtypes.bfloat16)
        self.version = f"ml_dtypes {ml_dtypes.__version__}"


class TorchContender(Contender):
    """torch CPU bfloat16 tensors; operations are the torch equivalents of the numpy calls."""

    def __init__(self, threads: int | None) -> None:
        self.key, self.label, self.bf16 = "torch", "torch bf16", True
        self.torch = None
        try:
            import torch
        except ImportError:
            self.status = "not installed"
            return
        except Exception as exc:  # noqa: BLE001
            self.status = f"error: {type(exc).__name__}: {exc}"
            return
        self.torch = torch
        if threads:
            torch.set_num_threads(threads)
        self.dtype = torch.bfloat16

    def describe(self) -> str:
        if self.status:
            return self.status
        torch = self.torch
        try:
            capability = torch.backends.cpu.get_cpu_capability()
        except Exception:  # noqa: BLE001 -- older torch
            capability = "?"
        return (
            f"torch {torch.__version__}, CPU tensors of torch.bfloat16, "
            f"{torch.get_num_threads()} intra-op threads, CPU capability {capability}"
        )

    def from_f32(self, x: np.ndarray):
        return self.torch.from_numpy(np.ascontiguousarray(x)).to(self.dtype)

    def from_f64(self, x: np.ndarray):
        return self.torch.from_numpy(np.ascontiguousarray(x)).to(self.dtype)

    def scalar(self, value: float):
        return self.torch.tensor(value, dtype=self.torch.float64).to(self.dtype)

    def to_f64(self, a) -> np.ndarray:
        if isinstance(a, tuple):  # torch.sort returns (values, indices)
            a = a[0]
        return a.to(self.torch.float64).numpy()

    def empty(self, shape):
        return self.torch.empty(shape, dtype=self.dtype)

    def empty_f32(self, shape):
        return self.torch.empty(shape, dtype=self.torch.float32)

    def empty_f64(self, shape):
        return self.torch.empty(shape, dtype=self.torch.float64)

    def source_f32(self, x: np.ndarray):
        return self.torch.from_numpy(x)  # shares memory: conversion cost only

    def itemsize(self) -> int:
        return self.torch.empty(4, dtype=self.dtype).element_size()

    def cast_into(self, dst, src) -> None:
        dst.copy_(src)

    def add(self, a, b, out):
        return self.torch.add(a, b, out=out)

    def multiply(self, a, b, out):
        return self.torch.mul(a, b, out=out)

    def exp(self, a, out):
        return self.torch.exp(a, out=out)

    def log(self, a, out):
        return self.torch.log(a, out=out)

    def tanh(self, a, out):
        return self.torch.tanh(a, out=out)

    def arctan2(self, a, b, out):
        return self.torch.atan2(a, b, out=out)

    def hypot(self, a, b, out):
        return self.torch.hypot(a, b, out=out)

    def power(self, a, b, out):
        return self.torch.pow(a, b, out=out)

    def exp_value(self, a):
        return self.torch.exp(a)

    def sum(self, a):
        return self.torch.sum(a)

    def sum_axis(self, a, axis):
        return self.torch.sum(a, dim=axis)

    def mean(self, a):
        return self.torch.mean(a)

    def std(self, a):
        return self.torch.std(a, correction=0)

    def sort(self, a):
        return self.torch.sort(a)

    def index(self, idx: np.ndarray):
        return self.torch.from_numpy(idx)

    def add_at(self, target, idx, values):
        target.index_add_(0, idx, values)

    def add_at_2d(self, target, rows, cols, values):
        target.index_put_((rows, cols), values, accumulate=True)

    def argsort(self, a):
        return self.torch.argsort(a)

    def dot(self, a, b):
        return self.torch.dot(a, b)

    def matmul(self, a, b):
        return self.torch.matmul(a, b)

    def result_dtype(self, r) -> str:
        return str(r.dtype)


@contextlib.contextmanager
def one_thread(contenders: list[Contender]) -> Iterator[None]:
    """Run the contenders that would use several threads for a call (torch's intra-op pool) on
    one, as numpy's own loops and ours run, for the tables marked ``Section.one_thread``."""
    restore = []
    for c in contenders:
        torch = getattr(c, "torch", None)
        if torch is not None:
            restore.append((torch, torch.get_num_threads()))
            torch.set_num_threads(1)
    try:
        yield
    finally:
        for torch, n in restore:
            torch.set_num_threads(n)


def load_contenders(threads: int | None) -> list[Contender]:
    """All contenders in column order: ours first, then the baselines, then the other bf16s."""
    return [
        OursContender(threads),
        NumpyContender("float32", "float32", np.float32),
        NumpyContender("float16", "float16", np.float16),
        MlDtypesContender(),
        TorchContender(threads),
    ]
