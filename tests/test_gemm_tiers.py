"""Every GEMM/GEMV kernel tier this CPU supports runs the kernel tests.

The main test run uses the tier in force (the highest the CPU supports, unless
``BFLOAT16_DTYPE_ISA`` caps it). Here test_gemm_kernel.py runs again in a subprocess for each lower
tier, forced through ``BFLOAT16_DTYPE_ISA``; a tier the CPU lacks is skipped with the reason.
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

import bfloat16_dtype as bd

TIERS = ("baseline", "avx2", "avx512", "avx512bf16")
HERE = pathlib.Path(__file__).resolve().parent


@pytest.mark.parametrize("tier", TIERS)
def test_kernel_tests_pass_under_tier(tier):
    info = bd.config()
    if TIERS.index(tier) > TIERS.index(info["detected"]):
        pytest.skip(f"CPU lacks the {tier} tier ({info['reason']})")
    if tier == info["tier"]:
        pytest.skip(f"{tier} is the tier in force: the main run covers it (test_gemm_kernel.py)")
    if TIERS.index(tier) > TIERS.index(info["tier"]):
        pytest.skip(f"BFLOAT16_DTYPE_ISA caps this run at {info['tier']}")
    env = dict(os.environ, BFLOAT16_DTYPE_ISA=tier)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        str(HERE / "test_gemm_kernel.py")],
                       cwd=HERE, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert " passed" in r.stdout and "failed" not in r.stdout, r.stdout[-2000:]
