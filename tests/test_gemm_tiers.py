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

TIERS = ("baseline", "avx2", "avx512", "avx512bf16", "amx")
HERE = pathlib.Path(__file__).resolve().parent


@pytest.mark.parametrize("tier", TIERS)
def test_kernel_tests_pass_under_tier(tier):
    info = bd.config()
    if TIERS.index(tier) > TIERS.index(info["detected"]):
        pytest.skip(f"CPU lacks the {tier} tier ({info['reason']})")
    if tier == info["tier"] and bd._ext._gemm_kernel.startswith(tier + ":"):
        pytest.skip(f"{tier} is the tier in force: the main run covers it (test_gemm_kernel.py)")
    if TIERS.index(tier) > TIERS.index(info["tier"]):
        pytest.skip(f"BFLOAT16_DTYPE_ISA caps this run at {info['tier']}")
    env = dict(os.environ, BFLOAT16_DTYPE_ISA=tier)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        str(HERE / "test_gemm_kernel.py")],
                       cwd=HERE, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert " passed" in r.stdout and "failed" not in r.stdout, r.stdout[-2000:]


_DIGEST = """
import hashlib, numpy as np, bfloat16_dtype as bd
rng = np.random.default_rng(11)
h = hashlib.sha256()
for sa, sb in [((70, 600), (600, 97)), ((300, 300), (300, 300)), ((1024, 700), (700,)),
               ((513, 300), (300, 16)), ((300,), (300, 900)), ((40, 100), (100, 3))]:
    a = rng.standard_normal(sa).astype(np.float32).astype(bd.bfloat16)
    b = rng.standard_normal(sb).astype(np.float32).astype(bd.bfloat16)
    h.update(bd.matmul(a, b, out_dtype=np.float32).tobytes())
    h.update(bd.matmul(a, b).tobytes())
print(bd._ext._gemm_kernel.split(":")[0], h.hexdigest())
"""


def test_avx2_and_baseline_kernels_give_the_same_bits():
    """The portable kernel adds in the avx2 kernel's order (same KC, same 8 GEMV lanes), and the
    products are exact, so the two tiers agree bit for bit on normal-range data."""
    if TIERS.index(bd.config()["detected"]) < TIERS.index("avx2"):
        pytest.skip(f"CPU lacks the avx2 tier ({bd.config()['reason']})")
    digests = {}
    for tier in ("baseline", "avx2"):
        r = subprocess.run([sys.executable, "-c", _DIGEST], cwd=HERE, capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, BFLOAT16_DTYPE_ISA=tier))
        assert r.returncode == 0, r.stderr
        name, digest = r.stdout.split()
        assert name == tier
        digests[tier] = digest
    assert digests["baseline"] == digests["avx2"]


@pytest.mark.parametrize("tier", TIERS)
def test_peak_loop_runs_at_every_tier(tier):
    """_ext._gemm_peak (the benchmarks' instruction-rate reference, bg_kernel.peak in
    csrc/matmul/kernel.h) runs the tier's micro-kernel instruction on 1 and 3 threads; the
    portable kernel has none and says so with False."""
    info = bd.config()
    if TIERS.index(tier) > TIERS.index(info["detected"]):
        pytest.skip(f"CPU lacks the {tier} tier ({info['reason']})")
    code = ("import bfloat16_dtype as bd\n"
            "with bd.num_threads(1): a = bd._ext._gemm_peak(1e7)\n"
            "with bd.num_threads(3): b = bd._ext._gemm_peak(2e7)\n"
            "print(bd._ext._gemm_kernel.split(':')[0], a, b)")
    r = subprocess.run([sys.executable, "-c", code], cwd=HERE, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, BFLOAT16_DTYPE_ISA=tier))
    assert r.returncode == 0, r.stderr
    expected = "False False" if tier == "baseline" else "True True"
    assert r.stdout.split() == [tier] + expected.split()


@pytest.mark.parametrize("flops", [0, -1.0, float("nan"), float("inf"), 1.0001e13])
def test_peak_loop_rejects_bad_work(flops):
    with pytest.raises(ValueError, match="flops must be in"):
        bd._ext._gemm_peak(flops)
    with pytest.raises(TypeError):
        bd._ext._gemm_peak("1e6")


_FUSED = r"""
import numpy as np, warnings
from bfloat16_dtype import bfloat16
warnings.simplefilter("ignore")
a = np.array([[2.0**-75, 2.0**-75, 217 * 2.0**-75]] * 8, bfloat16)
b = np.array([[2.0**-74], [2.0**-75], [151 * 2.0**-74]], bfloat16).repeat(8, axis=1)
tiny = int((a @ b).view(np.uint16)[0, 0])
a = np.array([[1.0, 3e38]] * 8, bfloat16)
b = np.array([[-np.inf], [3e38]], bfloat16).repeat(8, axis=1)
print(hex(tiny), float((a @ b)[0, 0]))
"""


@pytest.mark.parametrize("tier", ("baseline", "avx2", "avx512"))
def test_fused_and_unfused_kernels(tier, tmp_path):
    """The avx2 and avx512 GEMM kernels fuse each multiply into its add (the product is exact
    even below float32's normals or above its range); the portable one rounds each product to
    float32 first: a sum of products below 2**-126 and an overflowing product beside -inf
    differ between them (README, "Matmul")."""
    info = bd.config()
    if TIERS.index(tier) > TIERS.index(info["detected"]):
        pytest.skip(f"CPU lacks the {tier} tier ({info['reason']})")
    env = dict(os.environ, BFLOAT16_DTYPE_ISA=tier)
    r = subprocess.run([sys.executable, "-c", _FUSED], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    want = "0x0 nan" if tier == "baseline" else "0x1 -inf"
    assert r.stdout.split() == want.split(), r.stdout
