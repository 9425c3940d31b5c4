"""The one CPU probe (csrc/cpu.c), the BFLOAT16_DTYPE_ISA cap and show_config()."""
import io
import json
import os
import subprocess
import sys

import pytest

import bfloat16_dtype
from bfloat16_dtype._config import TIERS

from conftest import TESTS_DIR  # noqa: E402


def cpu_flags():
    """The CPU's feature flags read independently from /proc/cpuinfo (Linux only)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


def expected_tier(flags):
    if not {"avx", "avx2", "fma", "f16c"} <= flags:
        return "baseline"
    if not {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        return "avx2"
    if "avx512_bf16" not in flags:
        return "avx512"
    if not {"amx_tile", "amx_bf16"} <= flags:
        return "avx512bf16"
    return "amx"


def run_with_isa(value, code):
    env = dict(os.environ)
    if value is None:
        env.pop("BFLOAT16_DTYPE_ISA", None)
    else:
        env["BFLOAT16_DTYPE_ISA"] = value
    return subprocess.run([sys.executable, "-c", code], cwd=TESTS_DIR, env=env, capture_output=True, text=True,
                          timeout=120)


# the highest tier each component has code of its own for (the ufunc loops' avx512bf16 tier needs
# AVX512_VBMI besides, else they stop at avx512; the conversions table of that tier converts
# float32 -> bfloat16 with vcvtne2ps2bf16; only the GEMM has AMX code)
def highest(info):
    return {"ufunc loops": "avx512bf16" if info["vbmi"] else "avx512",
            "conversions, reductions, sort": "avx512bf16", "matmul (GEMM/GEMV)": "amx"}

INFO = "import json, bfloat16_dtype as b; print(json.dumps(b.config()))"


def test_detected_tier_matches_proc_cpuinfo():
    flags = cpu_flags()
    if flags is None:
        pytest.skip("no /proc/cpuinfo flags on this system")
    out = run_with_isa(None, INFO)
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    want = expected_tier(flags)
    if want == "amx" and info["detected"] == "avx512bf16":
        # the one case /proc/cpuinfo cannot tell: Linux before 5.16 (or a sandbox) refusing the
        # process the AMX tile data; the probe must then say so
        assert "refused" in info["reason"], info
    else:
        assert info["detected"] == want, info
    assert info["tier"] == info["detected"]
    # AVX512_VBMI counts only where the avx512 tier is usable
    assert info["vbmi"] == ("avx512vbmi" in flags and want in ("avx512", "avx512bf16", "amx")), info


@pytest.mark.parametrize("tier", TIERS)
def test_cap_lowers_the_tier(tier):
    out = run_with_isa(tier, INFO)
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["cap"] == tier and info["env"] == tier
    want = min(TIERS.index(tier), TIERS.index(info["detected"]))
    assert info["tier"] == TIERS[want]
    # every component runs (and names) the tier in force, or its own highest tier below it: none
    # ignores the cap, none stops short of it
    for name, kernel in info["components"].items():
        want = TIERS[min(TIERS.index(info["tier"]), TIERS.index(highest(info)[name]))]
        assert kernel.split(":")[0] == want, (name, kernel)


def test_unknown_tier_is_a_clear_error():
    out = run_with_isa("avx1024", "import bfloat16_dtype")
    assert out.returncode != 0
    assert "ValueError" in out.stderr and "'avx1024'" in out.stderr and "BFLOAT16_DTYPE_ISA" in out.stderr


def test_show_config_prints_every_component():
    buf = io.StringIO()
    bfloat16_dtype.show_config(file=buf)
    text = buf.getvalue()
    info = bfloat16_dtype.config()
    assert f"tier in force: {info['tier']}" in text
    for name, kernel in info["components"].items():
        assert name in text and kernel in text
