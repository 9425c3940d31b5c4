"""Which instruction-set tier each kernel family runs, and why (``bfloat16_dtype.show_config``)."""
from __future__ import annotations

import sys
from typing import Any, TextIO

from . import _ext

TIERS = ("baseline", "avx2", "avx512", "avx512bf16", "amx")


def config() -> dict[str, Any]:
    """The CPU tier chosen at import and the kernel each component uses, as a dict.

    >>> from bfloat16_dtype import config
    >>> config()["tier"] in ("baseline", "avx2", "avx512", "avx512bf16", "amx")
    True
    """
    info = dict(_ext._cpu_info())
    matmul = _ext._gemm_kernel
    if info["tier"] == "avx512bf16" and not matmul.startswith("avx512bf16"):
        matmul += " (an Intel CPU without usable AMX: faster there than vdpbf16ps)"
    info["components"] = {
        "ufunc loops": _ext._simd,
        "conversions, reductions, sort": _ext._kernels_isa,
        "matmul (GEMM/GEMV)": matmul,
    }
    return info


def show_config(file: TextIO | None = None) -> None:
    """Print the tier in force, what the CPU supports, the BFLOAT16_DTYPE_ISA cap and the
    kernel of each component.

    >>> import bfloat16_dtype
    >>> bfloat16_dtype.show_config()   # doctest: +SKIP
    tier in force: avx512  (detected: avx512, CPU lacks avx512_bf16; BFLOAT16_DTYPE_ISA unset)
    ...
    """
    out = sys.stdout if file is None else file
    info = config()
    env = f"BFLOAT16_DTYPE_ISA={info['env']}" if info["env"] else "BFLOAT16_DTYPE_ISA unset"
    print(f"tier in force: {info['tier']}  (detected: {info['detected']}, {info['reason']}; {env})",
          file=out)
    for name, kernel in info["components"].items():
        print(f"  {name:32s} {kernel}", file=out)
