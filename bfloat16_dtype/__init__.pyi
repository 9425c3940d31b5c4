"""Type stubs for the public API of bfloat16_dtype."""
from typing import Any, ClassVar, Sequence, SupportsFloat, SupportsIndex, overload

import numpy as np

__version__: str
# the runtime list (__init__.py), spelled out: type checkers read `from bfloat16_dtype import *`
# from this literal (tests/test_stub.py checks that the two agree)
__all__ = ["bfloat16", "dtype", "finfo", "__version__", "numerics", "matmul", "dot", "matvec", "vecmat",
           "vdot", "inner", "get_num_threads", "set_num_threads", "num_threads", "config", "show_config",
           "rounding", "training", "interop"]

class bfloat16(np.floating[Any]):
    """A 16-bit brain floating point number (float32's sign and exponent, 7-bit mantissa)."""

    #: the registered dtype, a class attribute (``bfloat16.dtype == np.dtype(bfloat16)``), not
    #: numpy's per-instance property
    dtype: ClassVar[np.dtype[bfloat16]]

    # an array or a sequence (not str or bytes, which are text) gives an array
    @overload
    def __new__(cls, value: np.ndarray) -> np.ndarray[Any, np.dtype[bfloat16]]: ...  # type: ignore[misc, overload-overlap]
    @overload
    def __new__(
        cls, value: SupportsFloat | SupportsIndex | str | bytes | None = ...,
    ) -> bfloat16: ...
    @overload
    def __new__(  # type: ignore[misc]  # the scalar type's call on an array, as np.float16's
        cls, value: Sequence[Any] | bytearray | memoryview,
    ) -> np.ndarray[Any, np.dtype[bfloat16]]: ...
    @property
    def bits(self) -> int:
        """The raw 16-bit pattern."""
    def is_integer(self) -> bool: ...
    def as_integer_ratio(self) -> tuple[int, int]: ...
    def item(self, *args: Any) -> float: ...
    def __float__(self) -> float: ...
    def __int__(self) -> int: ...
    def __bool__(self) -> bool: ...
    def __hash__(self) -> int: ...
    def __format__(self, format_spec: str, /) -> str: ...
    def __reduce__(self) -> tuple[Any, tuple[int]]: ...

#: The registered numpy dtype, ``np.dtype(bfloat16)``.
dtype: np.dtype[bfloat16]

class _BFloat16Finfo(np.finfo[Any]):
    def __call__(self, dtype: Any, /) -> np.finfo[Any]: ...

#: ``np.finfo(bfloat16)``; also callable like ``np.finfo`` (``finfo(bfloat16).eps``).
finfo: _BFloat16Finfo

from contextlib import AbstractContextManager

from numpy.typing import ArrayLike, DTypeLike

from . import linalg as linalg
from . import numerics as numerics
from . import rounding as rounding, training as training
from . import interop as interop
from typing import TextIO

def config() -> dict[str, Any]: ...
def show_config(file: TextIO | None = ...) -> None: ...

def matmul(a: ArrayLike, b: ArrayLike, *, out: np.ndarray | None = ...,
           out_dtype: DTypeLike | None = ...) -> np.ndarray: ...
def dot(a: ArrayLike, b: ArrayLike, *, out: np.ndarray | None = ...,
        out_dtype: DTypeLike | None = ...) -> np.ndarray: ...
def matvec(a: ArrayLike, v: ArrayLike, *, out: np.ndarray | None = ...,
           out_dtype: DTypeLike | None = ...) -> np.ndarray: ...
def vecmat(v: ArrayLike, a: ArrayLike, *, out: np.ndarray | None = ...,
           out_dtype: DTypeLike | None = ...) -> np.ndarray: ...
def inner(a: ArrayLike, b: ArrayLike, *, out_dtype: DTypeLike | None = ...) -> np.ndarray: ...
def vdot(a: ArrayLike, b: ArrayLike, *, out_dtype: DTypeLike | None = ...) -> Any: ...
def get_num_threads() -> int: ...
def set_num_threads(n: int) -> None: ...
def num_threads(n: int) -> AbstractContextManager[None]: ...
