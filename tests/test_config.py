"""The one CPU probe (csrc/cpu.c), the BFLOAT16_DTYPE_ISA cap and show_config()."""
import io
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

import bfloat16_dtype
from bfloat16_dtype._config import TIERS

from conftest import TESTS_DIR, X86_64  # noqa: E402


def cpu_flags():
    """The CPU's x86 feature flags read independently from /proc/cpuinfo (Linux only; none on
    other CPUs, which may still see an x86 host's file under an emulator)."""
    if not X86_64:
        return None
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
    with open("/proc/cpuinfo") as f:
        vendor = next((line.split(":", 1)[1].strip() for line in f if line.startswith("vendor_id")), None)
    assert info["intel"] == (vendor == "GenuineIntel"), (vendor, info)


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
        if name.startswith("matmul") and want == "avx512bf16" and info["intel"] and tier != "avx512bf16":
            want = "avx512"  # an Intel core without usable AMX: the FMA kernel (csrc/matmul/gemm.c)
        assert kernel.split(":")[0] == want, (name, kernel)


def test_unknown_tier_is_a_clear_error():
    out = run_with_isa("avx1024", "import bfloat16_dtype")
    assert out.returncode != 0
    assert "ValueError" in out.stderr and "'avx1024'" in out.stderr and "BFLOAT16_DTYPE_ISA" in out.stderr
    # a long value is named in full up to 124 characters, then "..." (once cut at 31)
    long = "x" * 100
    out = run_with_isa(long, "import bfloat16_dtype")
    assert out.returncode != 0 and repr(long) in out.stderr
    out = run_with_isa("y" * 300, "import bfloat16_dtype")
    assert out.returncode != 0 and repr("y" * 124 + "...") in out.stderr


def test_show_config_prints_every_component():
    buf = io.StringIO()
    bfloat16_dtype.show_config(file=buf)
    text = buf.getvalue()
    info = bfloat16_dtype.config()
    assert f"tier in force: {info['tier']}" in text
    for name, kernel in info["components"].items():
        assert name in text and kernel in text


# ---- the tiers' machine code stays apart ------------------------------------------------------

_FUNC = re.compile(r"^[0-9a-f]+ <(.+)>:$")
_INSN = re.compile(r"^\s+[0-9a-f]+:\s+(\S+)\s*(.*)$")
_TARGET = re.compile(r"^[0-9a-f]+ <(.*?)(?:@plt)?(?:\+0x[0-9a-f]+)?>$")
# an AVX-512 register, mask register or EVEX decoration ({k}, {z}, {1toN}, rounding)
_AVX512 = re.compile(r"%zmm\d|%[xy]mm(?:1[6-9]|2\d|3[01])\b|%k[0-7]\b|\{")


def _functions_of_extension():
    """{function name: [(mnemonic, operands)]} of the compiled extension, by objdump."""
    objdump = shutil.which("objdump")
    if objdump is None:
        pytest.skip("objdump (binutils) is not installed")
    path = bfloat16_dtype._ext.__file__
    text = subprocess.run([objdump, "-d", "--no-show-raw-insn", "-C", path], capture_output=True,
                          text=True, timeout=300, check=True).stdout
    funcs, current = {}, None
    for line in text.splitlines():
        m = _FUNC.match(line)
        if m:
            current = m.group(1)
            funcs.setdefault(current, [])
            continue
        m = _INSN.match(line)
        if m and current is not None:
            funcs[current].append((m.group(1), m.group(2)))
    return funcs


def _reached_with(funcs, roots, uses):
    """The functions reachable from `roots` by direct calls and jumps (through the PLT to the
    definition in the extension) with an instruction for which uses(mnemonic, operands)."""
    seen, todo, hits = set(), list(roots), set()
    while todo:
        name = todo.pop()
        if name in seen or name not in funcs:
            continue
        seen.add(name)
        for mnemonic, operands in funcs[name]:
            if uses(mnemonic, operands):
                hits.add(name)
            if mnemonic.startswith(("call", "jmp")) or mnemonic[0] == "j":
                t = _TARGET.search(operands)
                if t and t.group(1) != name:
                    todo.append(t.group(1))
    return hits


@pytest.mark.skipif(sys.platform != "linux" or not X86_64,
                    reason="disassembles an x86-64 ELF extension")
def test_avx2_tier_code_reaches_no_avx512_instruction():
    """Everything the avx2 tier's entry points (the umath twins of TierAvx2 and the *_avx2
    kernels) reach by direct calls is free of AVX-512 code: a helper of the same name in the
    avx2 and avx512 files once made the linker keep a single copy, so one tier ran the other's
    code, which on an AVX2-only CPU would be an illegal instruction. The same scan finds the
    AVX-512 code of the avx512 entry points, so it is not vacuous."""
    funcs = _functions_of_extension()
    avx2 = [f for f in funcs if ("<umath::TierAvx2," in f or re.search(r"_avx2(?:_\d+)?(?:\.|$)", f))
            and "@plt" not in f]
    avx512 = [f for f in funcs if "<umath::TierAvx512," in f and "@plt" not in f]
    assert len(avx2) > 40 and len(avx512) > 40

    def evex(mnemonic, operands):
        return _AVX512.search(operands) is not None

    assert _reached_with(funcs, avx2, evex) == set()
    assert len(_reached_with(funcs, avx512, evex)) > 40


@pytest.mark.skipif(sys.platform != "linux" or not X86_64,
                    reason="disassembles an x86-64 ELF extension")
def test_avx512_tier_code_reaches_no_bf16_instruction():
    """The same scan for CPUs with AVX-512 but not AVX512_BF16 (Skylake-X, Ice Lake): the avx512
    entry points (TierAvx512 twins, *_avx512 kernels) reach no vdpbf16ps / vcvtne*2bf16; the
    avx512bf16 kernels do."""
    funcs = _functions_of_extension()
    avx512 = [f for f in funcs if ("<umath::TierAvx512," in f or re.search(r"_avx512(?:_\d+)?(?:\.|$)", f))
              and "@plt" not in f]
    avx512bf16 = [f for f in funcs if re.search(r"_avx512bf16(?:_\d+)?(?:\.|$)", f) and "@plt" not in f]
    assert len(avx512) > 60 and avx512bf16

    def bf16(mnemonic, operands):
        return "bf16" in mnemonic

    assert _reached_with(funcs, avx512, bf16) == set()
    assert _reached_with(funcs, avx512bf16, bf16)


def _bytes_at(address, count):
    """`count` bytes of the extension's loaded image at virtual address `address`, by objdump -s."""
    path = bfloat16_dtype._ext.__file__
    text = subprocess.run([shutil.which("objdump"), "-s", f"--start-address={address:#x}",
                           f"--stop-address={address + count:#x}", path],
                          capture_output=True, text=True, timeout=60, check=True).stdout
    data, section = bytearray(), None
    for line in text.splitlines():
        if line.startswith("Contents of section "):
            section = line.split()[3].rstrip(":")
            continue
        m = re.match(r"^ ([0-9a-f]+) ((?:[0-9a-f]{2,8} ){1,4})", line + " ")
        if m and section is not None and not section.startswith(".debug"):  # debug sections start at 0
            at = int(m.group(1), 16)
            data[at - address:] = bytes.fromhex("".join(m.group(2).split()))
    return bytes(data[:count])


@pytest.mark.skipif(sys.platform != "linux" or not X86_64,
                    reason="disassembles an x86-64 ELF extension")
def test_tile_configuration_is_whole_in_the_binary():
    """Every ldtilecfg of the amx kernel reads the 64-byte tile configuration from a constant in
    the binary, and that constant is palette 1 with tiles 0-7 of 16 rows x 64 bytes, all else
    zero. Built with GCC 12, whose _tile_loadconfig declared a read of 8 bytes, the configuration
    on the stack lost its other stores and ldtilecfg faulted on an AMX Xeon; CPUs here lack AMX,
    so the machine code is checked instead."""
    funcs = _functions_of_extension()
    loads = [ops for body in funcs.values() for mnemonic, ops in body if mnemonic == "ldtilecfg"]
    if not loads:
        pytest.skip("the extension was built without the amx kernel (the compiler lacks AMX)")
    for ops in loads:
        m = re.match(r"^0x[0-9a-f]+\(%rip\)\s+#\s*([0-9a-f]+)", ops)
        assert m, f"ldtilecfg reads {ops!r}, not a constant of the binary"
        cfg = _bytes_at(int(m.group(1), 16), 64)
        assert len(cfg) == 64
        palette, start_row, reserved = cfg[0], cfg[1], cfg[2:16]
        colsb = [int.from_bytes(cfg[16 + 2 * t:18 + 2 * t], "little") for t in range(16)]
        rows = list(cfg[48:64])
        assert (palette, start_row, set(reserved)) == (1, 0, {0})
        assert colsb == [64] * 8 + [0] * 8 and rows == [16] * 8 + [0] * 8
