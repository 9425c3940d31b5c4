"""Helpers for the per-tier kernel tests: which tiers this CPU runs, and a runner that forces
each one in a subprocess (the tier is fixed at import, so it cannot change in this process)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bfloat16_dtype import _ext

# the tiers with kernels of their own here (conversions, reductions, sort: at the amx tier, which
# only the GEMM has code for, the avx512bf16 ones run)
TIERS = ("baseline", "avx2", "avx512", "avx512bf16")
WORKER = Path(__file__).with_name("kernel_worker.py")


def tier_params():
    """One pytest param per tier; a tier above what this CPU supports is skipped with the
    probe's reason (e.g. 'CPU lacks avx512_bf16')."""
    info = _ext._cpu_info()
    detected = TIERS.index(info["detected"]) if info["detected"] in TIERS else len(TIERS) - 1
    params = []
    for i, t in enumerate(TIERS):
        marks = []
        if i > detected:
            marks.append(pytest.mark.skip(reason=f"tier {t} not testable here: {info['reason']}"))
        params.append(pytest.param(t, marks=marks, id=t))
    return params


def run_tier(tier: str, inputs: dict[str, np.ndarray], workdir: Path) -> dict[str, np.ndarray]:
    """Run kernel_worker.py with BFLOAT16_DTYPE_ISA=tier on inputs; return its outputs."""
    src, dst = workdir / f"in_{tier}.npz", workdir / f"out_{tier}.npz"
    np.savez(src, **inputs)
    env = dict(os.environ, BFLOAT16_DTYPE_ISA=tier)
    proc = subprocess.run([sys.executable, str(WORKER), str(src), str(dst)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    with np.load(dst) as f:
        out = {k: f[k] for k in f.files}
    # the avx512bf16 table has its own float32 -> bfloat16 conversion (its other kernels are
    # the avx512 ones)
    assert str(out["isa"]) == tier, f"forced {tier}, kernels ran {out['isa']}"
    return out
