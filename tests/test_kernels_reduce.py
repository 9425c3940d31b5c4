"""sum and argmax/argmin kernels under every tier this CPU has (forced in a subprocess).

References: the exact sum of the widened values (math.fsum is exact for float64 inputs that
are bfloat16 values, which are exact in float64) with the float32 pairwise error bound, and
numpy's own float32 argmax/argmin of the widened values.
"""
from __future__ import annotations

import math
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from conftest import exact_f32, reference_round
from kernel_tiers import run_tier, tier_params

RNG = np.random.default_rng(9)
SIZES = [1, 2, 15, 16, 17, 31, 32, 33, 511, 512, 513, 4095, 4096, 4097, 100_003, 1 << 20]


def bf16_bits(x) -> np.ndarray:
    return reference_round(np.asarray(x, np.float32))


def inputs() -> dict[str, np.ndarray]:
    d = {}
    for n in SIZES:
        d[f"red:uniform{n}"] = bf16_bits(RNG.random(n, dtype=np.float32))
        d[f"red:normal{n}"] = bf16_bits(RNG.standard_normal(n).astype(np.float32) * 100)
    for n in (1, 33, 4097, 5000):  # all negative: lanes past the end must not count as 0.0
        d[f"red:negative{n}"] = bf16_bits(-1 - RNG.random(n, dtype=np.float32))
    # ties everywhere: argmax/argmin must return the first occurrence
    d["red:ties"] = bf16_bits(RNG.integers(-3, 4, 20_000).astype(np.float32))
    # one maximum and one minimum (then a tie of each) in every lane of a 16-lane search and
    # its scalar tail
    for p in range(0, 49, 3):
        x = np.zeros(49, np.float32)
        x[p], x[48 - p] = 2.0, -2.0
        d[f"red:onehot{p}"] = bf16_bits(x)
        x[min(p + 1, 47):] = np.where(x[min(p + 1, 47):] == -2.0, -2.0, 2.0)
        d[f"red:tie{p}"] = bf16_bits(x)
    d["red:zeros"] = np.array([0x8000, 0x0000] * 3000, np.uint16)  # -0.0 == +0.0: index 0
    d["red:infs"] = bf16_bits(np.r_[RNG.random(9000), np.inf, -np.inf, np.inf, -np.inf].astype(np.float32))
    # NaNs: the first one wins for both argmax and argmin, in any block and lane
    for pos in (0, 17, 4095, 4096, 9999):
        x = bf16_bits(RNG.standard_normal(10_000).astype(np.float32))
        x[pos] = 0xFFC1 if pos % 2 else 0x7FC0
        x[pos + 1:][::997] = 0x7F81
        d[f"red:nan{pos}"] = x
    # every pattern once, shuffled: NaNs, infinities, subnormals, both zeros
    d["red:allbits"] = RNG.permutation(np.arange(65536, dtype=np.uint32).astype(np.uint16))
    d["red:allbits_nonan"] = d["red:allbits"][(d["red:allbits"] & 0x7FFF) <= 0x7F80]
    for n in (1, 15, 16, 17, 1000, 100_003):
        d[f"prod:{n}"] = bf16_bits(RNG.uniform(0.98, 1.02, n).astype(np.float32))
    # several NaN payloads, quiet and signalling, of both signs, in any lane
    for n in (2, 3, 17, 32, 1000, 5000):
        for seed in range(3):
            x = bf16_bits(RNG.uniform(0.98, 1.02, n).astype(np.float32))
            pos = RNG.choice(n, size=min(n, 4), replace=False)
            x[pos] = RNG.choice([0x7FC1, 0xFFC2, 0x7F81, 0xFF85, 0x7FC0, 0xFFC0], size=pos.size)
            d[f"prod:nans{n}_{seed}"] = x
            d[f"red:nans{n}_{seed}"] = x.copy()
    return d


INPUTS = inputs()
PROD_KEYS = [k for k in INPUTS if k.startswith("prod:") and "nans" not in k]
FINITE_SUM_KEYS = [k for k in INPUTS if k.startswith(("red:uniform", "red:normal", "red:ties", "red:zeros"))]


@pytest.fixture(scope="module", params=tier_params())
def out(request, tmp_path_factory):
    return run_tier(request.param, INPUTS, tmp_path_factory.mktemp("reduce"))


def check_sum(got_bits: int, bits: np.ndarray) -> None:
    """The float32 pairwise sum is within B = (ceil(log2 n) + 2) * 2**-24 * sum|x| of the exact
    sum; rounding that float32 once to bfloat16 (monotonic) lands between the roundings of
    exact - B and exact + B."""
    v = exact_f32(bits).astype(np.float64)
    exact = math.fsum(v)
    bound = (math.ceil(math.log2(max(len(v), 2))) + 2) * 2.0**-24 * math.fsum(np.abs(v))
    lo_bits, hi_bits = bf16_bits([np.float32(exact - bound)])[0], bf16_bits([np.float32(exact + bound)])[0]
    lo, hi = exact_f32(np.array([lo_bits, hi_bits], np.uint16)).astype(np.float64)
    got = float(exact_f32(np.array([got_bits], np.uint16))[0])
    # float32(exact +- bound) may itself round inward by half a float32 ulp: widen by one
    # float32 ulp, far below a bfloat16 ulp
    slack = 2.0**-23 * max(abs(lo), abs(hi), 2.0**-126)
    assert lo - slack <= got <= hi + slack, (got, exact, bound)


@pytest.mark.parametrize("key", FINITE_SUM_KEYS)
def test_sum_within_float32_pairwise_bound(out, key):
    bits = INPUTS[key]
    check_sum(int(out[key + ":sum"][0]), bits)
    check_sum(int(out[key + ":sum_stride2"][0]), bits[::2])


@pytest.mark.parametrize("key", FINITE_SUM_KEYS)
def test_float32_sums_within_the_pairwise_bound(out, key):
    """numerics' float32 sum (the _sum_f32 ufunc's reduce) of the same data: the float32 value
    itself within (ceil(log2 n) + 2) * 2**-24 * sum|x| of the exact sum."""
    v = exact_f32(INPUTS[key]).astype(np.float64)
    exact = math.fsum(v)
    bound = (math.ceil(math.log2(max(len(v), 2))) + 2) * 2.0**-24 * math.fsum(np.abs(v))
    got = float(out[key + ":sum_f32"][0])
    assert out[key + ":sum_f32"].dtype == np.float32
    assert abs(got - exact) <= bound, (got, exact, bound)
    assert not out[key + ":sum_f32_flags"].any()


@pytest.mark.parametrize("key", [k for k in INPUTS if k.startswith("red:")
                                 and INPUTS[k].size >= 2 * 37])
def test_float32_column_sums_match_numpy_float32(out, key):
    """Down the columns, the float32 sum adds one row at a time, as NumPy's float32 reduction
    of the widened values does: the same bits (NaN where it gives NaN, payload aside) and the
    same warnings, at every tier (kernels/reduce.c, add_to_f32)."""
    wide = exact_f32(INPUTS[key])
    for m in (37, 100):
        if wide.size < 2 * m:
            continue
        rows = wide[: wide.size - wide.size % m].reshape(-1, m)
        with warnings.catch_warnings(record=True) as caught, np.errstate(all="warn"):
            warnings.simplefilter("always")
            ref = rows.sum(axis=0)
        text = " ".join(str(w.message) for w in caught)
        flags = np.array(["overflow" in text, "underflow" in text, "invalid" in text])
        got = out[key + f":sum_f32_cols{m}"]
        nan = np.isnan(ref)
        np.testing.assert_array_equal(np.isnan(got), nan)
        np.testing.assert_array_equal(got[~nan].view(np.uint32), ref[~nan].view(np.uint32))
        np.testing.assert_array_equal(out[key + f":sum_f32_cols{m}_flags"], flags)


@pytest.mark.parametrize("key", PROD_KEYS)
def test_prod_within_float32_bound(out, key):
    """The float32 product (16 interleaved partial products, then a tree) has relative error
    at most (n + 5) * 2**-24; the float64 product of these values is far more accurate
    (relative error <= n * 2**-53), and the bfloat16 result is a rounding of the float32 one."""
    v = exact_f32(INPUTS[key]).astype(np.float64)
    exact = float(np.prod(v))
    rel = (len(v) + 5) * 2.0**-24 + len(v) * 2.0**-52
    lo_bits, hi_bits = bf16_bits([np.float32(exact * (1 - rel)), np.float32(exact * (1 + rel))])
    lo, hi = exact_f32(np.array([lo_bits, hi_bits], np.uint16)).astype(np.float64)
    got = float(exact_f32(out[key])[0])
    slack = 2.0**-23 * hi
    assert lo - slack <= got <= hi + slack, (got, exact)


def test_sum_specials(out):
    assert out["red:infs:sum"][0] & 0x7FFF > 0x7F80  # inf + -inf: NaN
    assert out["red:nan17:sum"][0] & 0x7FFF > 0x7F80
    assert out["red:allbits:sum"][0] & 0x7FFF > 0x7F80


@pytest.mark.parametrize("key", [k for k in INPUTS if k.startswith("red:")])
def first_nan_quietened(bits: np.ndarray) -> int:
    nans = bits[(bits & 0x7FFF) > 0x7F80]
    return int(nans[0]) | 0x0040


@pytest.mark.parametrize("key", [k for k in INPUTS
                                 if k.startswith(("red:nan", "prod:nans", "red:allbits"))
                                 and k != "red:allbits_nonan"])
def test_nan_results_agree_across_tiers(out, key):
    """With NaNs in the data, sum and prod return the first one, quietened, at every tier (C
    leaves the payload of a NaN + NaN open: the compiler may swap the operands per tier)."""
    bits = INPUTS[key]
    if key.startswith("prod:"):
        assert int(out[key][0]) == first_nan_quietened(bits)
        return
    assert int(out[key + ":sum"][0]) == first_nan_quietened(bits)
    if ((bits[::2] & 0x7FFF) > 0x7F80).any():
        assert int(out[key + ":sum_stride2"][0]) == first_nan_quietened(bits[::2])


@pytest.mark.parametrize("key", [k for k in INPUTS if k.startswith("red:")])
def test_argmax_argmin_match_numpy_float32(out, key):
    widened = exact_f32(INPUTS[key])
    with np.errstate(invalid="ignore"):
        assert int(out[key + ":argmax"]) == int(np.argmax(widened))
        assert int(out[key + ":argmin"]) == int(np.argmin(widened))


def test_sums_agree_across_tiers(tmp_path_factory):
    """Every tier performs the same float32 additions in the same order (kernels/reduce.c)."""
    keys = {k: INPUTS[k] for k in FINITE_SUM_KEYS}
    runs = []
    for p in tier_params():
        if p.marks:
            continue
        runs.append(run_tier(p.values[0], keys, tmp_path_factory.mktemp("tiers")))
    for k in keys:
        for r in runs[1:]:
            assert r[k + ":sum"][0] == runs[0][k + ":sum"][0], k
            assert r[k + ":sum_stride2"][0] == runs[0][k + ":sum_stride2"][0], k


_SHORT_TAIL_SCRIPT = r"""
import numpy as np
from bfloat16_dtype import bfloat16
bad = []
for n in range(1, 40):
    for pos in range(n):
        for step in (1, 2, 3):
            for v in (np.inf, -np.inf):
                y = np.ones(n * step, bfloat16)
                y[pos * step] = v
                rows = np.ones((2, n * step), bfloat16)
                rows[1, pos * step] = v
                with np.errstate(all="raise"):
                    try:
                        p = y[::step].prod()
                        s = y[::step].sum()
                        r = rows[:, ::step].prod(axis=1)
                    except FloatingPointError as e:
                        bad.append((n, pos, step, v, str(e)))
                        continue
                if float(p) != v or float(s) != v or list(map(float, r)) != [1.0, v]:
                    bad.append((n, pos, step, v, float(p), float(s)))
print(len(bad), bad[:5])
"""


@pytest.mark.parametrize("tier", tier_params())
def test_products_of_short_tails_raise_no_invalid(tier, tmp_path):
    """A product (and a sum) of ones and one infinity is that infinity with no flag, as float32
    and float16 give it, for every length and position of the tail, contiguous or strided, at
    every tier: lanes past the data must not compute 0 * inf (kernels/reduce.c, prod32_body)."""
    env = dict(os.environ, BFLOAT16_DTYPE_ISA=tier)
    proc = subprocess.run([sys.executable, "-c", _SHORT_TAIL_SCRIPT], env=env,
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == "0 []", (proc.stdout, proc.stderr[-2000:])


_NO_OVERFLOW_ON_THE_WAY = r"""
import math, warnings
import numpy as np
from bfloat16_dtype import bfloat16
rng = np.random.default_rng(5)
bad = []
def check(vals, label):
    x = np.asarray(vals, np.float64).astype(np.float32).astype(bfloat16)
    w = x.astype(np.float64)
    m, e = 1.0, 0                          # float64 significands, exponents apart: no overflow
    for v in w.tolist():
        f, k = math.frexp(v)
        m, e = m * f, e + k
        m, k = math.frexp(m)
        e += k
    ref = math.ldexp(m, e)                 # far below a bfloat16 ulp of error here
    for y, lay in ((x, "contiguous"), (np.repeat(x, 2)[::2], "strided"), (x[::-1], "reversed")):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = float(y.prod())
        want = float(np.float32(ref).astype(bfloat16))
        ulp = 2.0 ** (math.frexp(abs(want))[1] - 8) if want else 0.0
        if caught or not abs(got - want) <= ulp:
            bad.append((label, lay, len(vals), got, want, [str(c.message) for c in caught]))
for n in (2, 8, 16, 17, 64, 128, 1000, 1025, 3000):
    for big in (1e9, 1e19, 1e30, 2.0**100):
        check([big, 1.0 / big] * (n // 2), f"alternate {big:g}")
        check([big] * (n // 2) + [1.0 / big] * (n // 2), f"halves {big:g}")
        v = np.array([big, 1.0 / big] * (n // 2)); rng.shuffle(v)
        check(v, f"shuffled {big:g}")
    logs = rng.uniform(-80, 80, n)
    check(np.exp(logs - logs.mean()) * rng.choice([-1.0, 1.0], n), "random magnitudes")
# subnormal factors and results near both ends of the range
check([2.0**-133, 2.0**100, 2.0**40], "subnormal factor")
check([2.0**-126, 2.0**-7], "subnormal result")
check([2.0**127, 1.5, 0.75], "near the largest")
print(len(bad), bad[:4])
"""


@pytest.mark.parametrize("tier", tier_params())
def test_products_do_not_overflow_on_the_way(tier, tmp_path):
    """np.prod of data whose exact product is in range gives it (within an ulp, no warning)
    however large or small the partial products of its order or lanes would be: alternating,
    sorted and shuffled factors up to 2**±100, subnormal factors, contiguous, strided and
    reversed, at every tier (kernels/reduce.c, prod32_body; float64 reference)."""
    env = dict(os.environ, BFLOAT16_DTYPE_ISA=tier)
    proc = subprocess.run([sys.executable, "-c", _NO_OVERFLOW_ON_THE_WAY], env=env,
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == "0 []", (proc.stdout, proc.stderr[-2000:])


def _lane_order_sum(v: np.ndarray) -> np.float32:
    """The cascade's order for fewer than 512 elements, in numpy float32: element i goes into
    lane i mod 8 (each lane starting at -0.0), then lanes (0+4, 2+6) and (1+5, 3+7) pair up."""
    t = np.full(8, -0.0, np.float32)
    for i, x in enumerate(v):
        t[i % 8] = np.float32(t[i % 8] + x)
    a, b, c, e = t[0] + t[4], t[1] + t[5], t[2] + t[6], t[3] + t[7]
    return np.float32(np.float32(a + c) + np.float32(b + e))


def test_short_sums_add_in_the_cascades_order():
    """Rows of up to 8 elements skip the cascade's set-up (kernels/reduce.c, bf16_sum_f32) but
    add in its order, so a row's sum does not depend on its length's path: data with cancelling
    large pairs, where another order gives another result, summed as whole arrays and as rows
    of a 2-d array (one call per row), against the order computed in numpy float32."""
    from bfloat16_dtype import bfloat16

    rng = np.random.default_rng(23)
    for n in range(1, 41):
        rows = []
        for _ in range(60):
            v = rng.choice([-1.0, 1.0], n) * np.exp2(rng.integers(-6, 12, n))
            if n >= 2:
                i, j = rng.choice(n, 2, replace=False)
                v[i] = 2.0 ** rng.integers(20, 30)
                v[j] = -v[i]
            rows.append(v.astype(np.float32))
        x = np.array(rows).astype(bfloat16)
        want = reference_round(np.array([_lane_order_sum(r.astype(np.float32)) for r in x]))
        by_row = x.sum(axis=1).view(np.uint16)
        whole = np.array([r.sum() for r in x]).view(np.uint16)
        assert np.array_equal(by_row, want), n
        assert np.array_equal(whole, want), n
