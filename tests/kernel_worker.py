"""Runs the bulk kernels in a fresh process whose tier is forced by BFLOAT16_DTYPE_ISA.

Used by tests/test_kernels_*.py: ``python kernel_worker.py inputs.npz outputs.npz``. It only
applies the public operations (casts, sum, argmax/argmin, sort, argsort) to the given inputs and
saves what came out, plus the kernel tier and the floating-point warnings raised; the tests
compare those outputs with independent references in the parent process.
"""
from __future__ import annotations

import sys
import warnings

import numpy as np

from bfloat16_dtype import _ext, bfloat16
from bfloat16_dtype.numerics import _sum_as_float32


def flags_of(fn):
    # ComplexWarning is not a floating-point flag: keep it out of the record
    """Run fn under errstate(all='warn'); return (result, names of the warnings raised)."""
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="warn"):
        warnings.simplefilter("always")
        out = fn()
    text = " ".join(str(w.message) for w in caught if issubclass(w.category, RuntimeWarning))
    return out, np.array(["overflow" in text, "underflow" in text, "invalid" in text])


def main(src: str, dst: str) -> None:
    inp = np.load(src)
    out: dict[str, np.ndarray] = {"isa": np.array(_ext._kernels_isa)}
    for key in inp.files:
        x = inp[key]
        kind, _, name = key.partition(":")
        if kind == "bf16":  # bfloat16 bits -> float32 and float64 (contiguous, misaligned start)
            b = x.view(bfloat16)
            out[key] = b.astype(np.float32)
            out[key + ":off1"] = b[1:].astype(np.float32)
            out[key + ":stride3"] = b[::3].astype(np.float32)
            shifted = np.empty(b.size + 1, np.float32)[1:]  # output start shifted by one element
            np.copyto(shifted, b, casting="unsafe")
            out[key + ":dst1"] = shifted
            out[key + ":f64"] = b.astype(np.float64)
            out[key + ":f64_off1"] = b[1:].astype(np.float64)
            out[key + ":f64_stride3"] = b[::3].astype(np.float64)
        elif kind == "f16":  # float16 bits -> bfloat16 bits, and bfloat16 bits -> float16 bits
            res, fl = flags_of(lambda: x.view(np.float16).astype(bfloat16))
            out[key + ":to_bf16"] = res.view(np.uint16)
            out[key + ":to_bf16_flags"] = fl
            res, fl = flags_of(lambda: x.view(bfloat16).astype(np.float16))
            out[key + ":to_f16"] = res.view(np.uint16)
            out[key + ":to_f16_flags"] = fl
        elif kind == "int":  # integers -> bfloat16 bits: whole, from an odd start, strided
            out[key] = x.astype(bfloat16).view(np.uint16)
            out[key + ":off1"] = x[1:].astype(bfloat16).view(np.uint16)
            out[key + ":stride2"] = x[::2].astype(bfloat16).view(np.uint16)
            out[key + ":stride3"] = x[::-3].astype(bfloat16).view(np.uint16)
        elif kind in ("f32", "f64"):  # -> bfloat16 bits, and the warnings the cast raised
            res, fl = flags_of(lambda: x.astype(bfloat16))
            out[key] = res.view(np.uint16)
            out[key + ":flags"] = fl
            res, _ = flags_of(lambda: x[1:].astype(bfloat16))
            out[key + ":off1"] = res.view(np.uint16)
            res, _ = flags_of(lambda: x[::3].astype(bfloat16))
            out[key + ":stride3"] = res.view(np.uint16)
            shifted = np.empty(x.size + 1, bfloat16)[1:]  # output start shifted by one element
            flags_of(lambda: np.copyto(shifted, x, casting="unsafe"))
            out[key + ":dst1"] = shifted.view(np.uint16)
            if kind == "f64":  # the real parts of complex128 take the strided float64 path
                c = np.empty(x.size, np.complex128)
                c.real, c.imag = x, 0.5  # not x + 0.5j, which turns -0.0 into +0.0
                res, fl = flags_of(lambda: c.astype(bfloat16))
                out[key + ":complex"] = res.view(np.uint16)
                out[key + ":complex_flags"] = fl
        elif kind == "prod":
            out[key] = np.atleast_1d(x.view(bfloat16).prod()).view(np.uint16)
        elif kind == "red":  # reductions over bfloat16 bits
            b = x.view(bfloat16)
            out[key + ":sum"] = np.atleast_1d(b.sum()).view(np.uint16)
            out[key + ":sum_stride2"] = np.atleast_1d(b[::2].sum()).view(np.uint16)
            # the float32 sums of the private _sum_f32 ufunc: whole, and down the columns of
            # rows of 37 and of 100 (its elementwise kernel), with the warnings raised
            res, fl = flags_of(lambda: _sum_as_float32(b))
            out[key + ":sum_f32"] = np.atleast_1d(res)
            out[key + ":sum_f32_flags"] = fl
            for m in (37, 100):
                if b.size >= 2 * m:
                    rows = b[: b.size - b.size % m].reshape(-1, m)
                    res, fl = flags_of(lambda: _sum_as_float32(rows, 0))
                    out[key + f":sum_f32_cols{m}"] = res
                    out[key + f":sum_f32_cols{m}_flags"] = fl
            out[key + ":argmax"] = np.array(b.argmax() if b.size else -1)
            out[key + ":argmin"] = np.array(b.argmin() if b.size else -1)
        elif kind == "sort":
            b = x.view(bfloat16)
            out[key + ":sort"] = np.sort(b).view(np.uint16)
            out[key + ":sort_stable"] = np.sort(b, kind="stable").view(np.uint16)
            out[key + ":argsort"] = np.argsort(b)
            out[key + ":argsort_stable"] = np.argsort(b, kind="stable")
            if b.shape[-1] <= 4096:  # numpy's lexsort hands argsort the previous key's order
                out[key + ":lexsort"] = np.lexsort((b, b[..., ::-1]))
        else:
            raise ValueError(f"unknown input kind {key!r}")
    np.savez(dst, **out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
