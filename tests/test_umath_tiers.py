"""The ufunc loops of every instruction-set tier this CPU has, each checked in a fresh process
with BFLOAT16_DTYPE_ISA set (tests/umath_tier_checks.py holds the checks: exhaustive unary
functions, binary operations and comparisons in every layout, warnings, reductions). A tier
the CPU lacks is reported as skipped, with the reason."""
import os
import subprocess
import sys

import pytest

from bfloat16_dtype import _ext

TIERS = ["baseline", "avx2", "avx512", "avx512bf16", "amx"]
HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.parametrize("tier", TIERS)
def test_ufunc_loops_at_tier(tier):
    info = _ext._cpu_info()
    if TIERS.index(tier) > TIERS.index(info["detected"]):
        pytest.skip(f"this CPU lacks the {tier} tier ({info['reason']})")
    if tier == "amx":
        pytest.skip("the ufunc loops have no amx code of their own (they run the avx512bf16 "
                    "loops, checked above)")
    if tier == "avx512bf16" and not info["vbmi"]:
        pytest.skip("this CPU lacks avx512_vbmi, which the ufunc loops' avx512bf16 tier needs "
                    "(they run the avx512 loops, checked above)")
    env = dict(os.environ, BFLOAT16_DTYPE_ISA=tier, EXPECT_UFUNC_TIER=tier)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
         os.path.join(HERE, "umath_tier_checks.py")],
        cwd=HERE, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"tier {tier}:\n{proc.stdout[-6000:]}\n{proc.stderr[-2000:]}"
