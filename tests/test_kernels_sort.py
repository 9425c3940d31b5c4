"""np.sort / np.argsort of bfloat16 under every tier this CPU has (forced in a subprocess),
against numpy's float32 sort of the widened values: NaNs last, -0.0 == +0.0, and for the
stable kinds (and argsort, which is always stable) exactly numpy's stable float32 order.

The sizes cover each path's bounds in csrc/kernels/sort.c: insertion sort (<= 48 at the baseline
tier, and below 5), the AVX2 network (<= 16, 32, 64, 128, 256 keys in 1-16 ymm registers), the
AVX-512 network (<= 16, 32, 64, 128, 256 keys) and bitonic merge
(<= 1024, or <= 16384 filling 3/4 of a power of two, on the stack up to 8192), the order-key
radix sort (<= 16384), the counting sort (>= 8192 for rows whose zeros or NaNs could reorder, > 16384 otherwise), argsort's
network (AVX-512: <= 16, 32, 64, 128, 256; AVX2: <= 8, 16, 32, 64, 128), insertion (<= 32, baseline) and
radix paths (stack buffer up to 2048).
2-D inputs sort each row (C order) or each strided row of a Fortran-ordered array (numpy
copies it to a buffer first, as for axis=0)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import exact_f32, reference_round
from kernel_tiers import run_tier, tier_params

RNG = np.random.default_rng(5)
# value-row tails of 1, 3, 5, 8, 12 and 20 lanes end the network's stores in each piece size
SIZES = [2, 4, 5, 7, 8, 16, 17, 32, 33, 35, 40, 44, 48, 49, 52, 64, 65, 128, 129, 256, 257, 300,
         511, 512, 513, 1000, 1024, 1025, 2048, 2049, 3071, 3072, 4097, 6143, 6144, 8191, 8192,
         8193, 12287, 12288, 16384, 16385, 65535, 65536, 100_000, 1 << 20]
# (rows, n): every path of the row sorts, with many rows per call
ROW_SHAPES = [(5000, 3), (4000, 5), (400, 9), (3000, 16), (2000, 21), (1000, 40), (600, 64),
              (300, 100), (150, 255), (300, 200),
              (100, 256), (60, 700), (20, 2048), (6, 4096), (3, 8192), (2, 12000), (2, 16384)]
SPECIALS = np.array([0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x7F81, 0xFFFF, 0x0001,
                     0x8001], np.uint16)
NAN_PATTERNS = np.array([h for h in range(65536) if (h & 0x7FFF) > 0x7F80], np.uint16)


def normal_bits(shape) -> np.ndarray:
    return reference_round(RNG.standard_normal(shape).astype(np.float32))


def sprinkle(x: np.ndarray, pool: np.ndarray, frac: float = 0.2) -> np.ndarray:
    """x with about frac of its elements replaced by patterns drawn from pool."""
    x = x.copy()
    flat = x.reshape(-1)
    k = max(1, int(flat.size * frac))
    flat[RNG.integers(0, flat.size, k)] = pool[RNG.integers(0, len(pool), k)]
    return x


def special_mix(shape) -> np.ndarray:
    """Ordinary values with both zeros, infinities and NaNs of several signs and payloads: rows
    whose equal-comparing patterns must keep their input order in the stable sort."""
    return sprinkle(normal_bits(shape), SPECIALS)


def one_of_each(shape, zero: int, nan: int) -> np.ndarray:
    """Specials that cannot reorder: one zero sign, one NaN payload, infinities, subnormals."""
    pool = np.array([zero, nan, 0x7F80, 0xFF80, 0x0001, 0x8001, 0x7F7F, 0xFF7F], np.uint16)
    return sprinkle(normal_bits(shape), pool)


def skewed(shape) -> np.ndarray:
    """Few distinct values with long runs of duplicates."""
    return RNG.choice(np.array([0x3F80, 0xBF80, 0x4000, 0x3F81, 0x0000], np.uint16), shape)


def all_patterns_without(drop) -> np.ndarray:
    """Every bit pattern except those in drop, shuffled."""
    keep = np.setdiff1d(np.arange(65536, dtype=np.uint32), np.asarray(drop, np.uint32))
    return RNG.permutation(keep.astype(np.uint16))


def inputs() -> dict[str, np.ndarray]:
    d = {}
    for n in SIZES:
        d[f"sort:uniform{n}"] = reference_round(RNG.random(n, dtype=np.float32))
        d[f"sort:special{n}"] = special_mix(n)
        if n <= 65536:
            d[f"sort:plainspecial{n}"] = one_of_each(n, 0x8000 if n % 2 else 0x0000,
                                                     int(NAN_PATTERNS[n % len(NAN_PATTERNS)]))
    for rows, n in ROW_SHAPES:
        d[f"sort:rows{rows}x{n}"] = normal_bits((rows, n))
        d[f"sort:rowsspecial{rows}x{n}"] = special_mix((rows, n))
        d[f"sort:rowsplain{rows}x{n}"] = one_of_each((rows, n), 0x0000, 0xFFC0)
        d[f"sort:rowsskewed{rows}x{n}"] = skewed((rows, n))
        d[f"sort:rowsF{rows}x{n}"] = np.asfortranarray(special_mix((rows, n)))
    # all 65,536 patterns: in one row (radix / counting sort) and in rows of every path
    allbits = all_patterns_without([])
    d["sort:allbits"] = allbits
    d["sort:allbits65535"] = allbits[1:]
    for n in (16, 32, 64, 256, 512, 4096, 8192, 16384):
        d[f"sort:allbitsrows{n}"] = allbits.reshape(-1, n)
    # every pattern in rows that hold one zero sign and one NaN payload (the key sort's rows)
    nans = NAN_PATTERNS.astype(np.uint32)
    for zero, nan in ((0x0000, 0x7FC0), (0x8000, 0xFFFF)):
        plain = all_patterns_without(np.concatenate([[0x8000 ^ zero], nans[nans != nan]]))
        for n in (256, 1024, 4096):
            cut = plain.size // n * n
            d[f"sort:plainbits{zero:x}_{n}"] = plain[:cut].reshape(-1, n)
    # one row per NaN payload, each also holding both kinds of ordinary values
    for n in (40, 200, 1000):
        rows = sprinkle(normal_bits((len(NAN_PATTERNS), n)), np.array([0x7F80, 0xFF80], np.uint16))
        rows[:, ::7] = NAN_PATTERNS[:, None]
        d[f"sort:nanrows{n}"] = rows
    d["sort:zeros_only"] = RNG.choice(np.array([0x0000, 0x8000], np.uint16), 20_000)
    d["sort:nans_only"] = RNG.choice(np.array([0x7FC0, 0xFFC0, 0x7F81], np.uint16), 20_000)
    d["sort:one_value"] = np.full(10_000, 0x3F80, np.uint16)
    return d


INPUTS = inputs()


def stable_order(bits: np.ndarray) -> np.ndarray:
    return np.argsort(exact_f32(bits), axis=-1, kind="stable")


def unstable_reference(bits: np.ndarray) -> np.ndarray:
    """What the default sort has always given: the stable order for rows shorter than 8192;
    from 8192 on, the zeros grouped -0.0 first and the NaNs grouped by ascending bit pattern."""
    if bits.shape[-1] < 8192:
        return np.take_along_axis(bits, stable_order(bits), axis=-1)
    f = exact_f32(bits)
    tie = np.where(np.isnan(f), bits.astype(np.int64),
                   np.where(f == 0, (bits >> 15 == 0).astype(np.int64), 0))
    order = np.lexsort((tie, f)) if bits.ndim == 1 else np.array(
        [np.lexsort((t, r)) for t, r in zip(tie, f)])
    return np.take_along_axis(bits, order, axis=-1)


@pytest.fixture(scope="module", params=tier_params())
def out(request, tmp_path_factory):
    return run_tier(request.param, INPUTS, tmp_path_factory.mktemp("sort"))


@pytest.mark.parametrize("key", list(INPUTS))
def test_sort_matches_numpy_float32(out, key):
    bits = INPUTS[key]
    widened = exact_f32(bits)
    # any kind: the same values as numpy's float32 sort (NaN == NaN, -0.0 == +0.0) ...
    np.testing.assert_array_equal(exact_f32(out[key + ":sort"]), np.sort(widened, axis=-1))
    # ... and the same multiset of bit patterns (NaN payloads and zero signs kept)
    np.testing.assert_array_equal(np.sort(out[key + ":sort"], axis=-1), np.sort(bits, axis=-1))
    # stable: exactly numpy's stable float32 order, bit for bit
    np.testing.assert_array_equal(out[key + ":sort_stable"],
                                  np.take_along_axis(bits, stable_order(bits), axis=-1))


@pytest.mark.parametrize("key", list(INPUTS))
def test_default_sort_order_of_zeros_and_nans(out, key):
    np.testing.assert_array_equal(out[key + ":sort"], unstable_reference(INPUTS[key]))


@pytest.mark.parametrize("key", list(INPUTS))
def test_argsort_is_numpy_stable_float32_argsort(out, key):
    stable = stable_order(INPUTS[key])
    np.testing.assert_array_equal(out[key + ":argsort"], stable)
    np.testing.assert_array_equal(out[key + ":argsort_stable"], stable)


@pytest.mark.parametrize("key", [k for k in INPUTS if INPUTS[k].shape[-1] <= 4096])
def test_lexsort_is_numpy_float32_lexsort(out, key):
    """np.lexsort sorts by the last key, handing the argsort the order the first key gave
    (positions other than 0 .. n-1): numpy's float32 lexsort of the widened values (the
    network's word path for such positions, csrc/kernels/sort.c arg_net_n)."""
    f = exact_f32(INPUTS[key])
    np.testing.assert_array_equal(out[key + ":lexsort"], np.lexsort((f, f[..., ::-1])))


def test_argsort_out_of_memory_raises_memory_error():
    """NumPy runs the dtype's argsort without the GIL; when its work buffer (12 bytes an
    element) cannot be allocated it returns the failure and NumPy raises MemoryError, as for
    float16 (it set the exception itself there and crashed the interpreter)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("uses /proc and RLIMIT_AS")
    code = textwrap.dedent("""
        import resource, numpy as np, bfloat16_dtype as bd
        n = 4_000_000
        a = np.linspace(-1, 1, n, dtype=np.float32).astype(bd.bfloat16)
        vm = [int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmSize")][0]
        # room for NumPy's index array (8 bytes an element) and a little more, not for the sort's
        resource.setrlimit(resource.RLIMIT_AS, (vm + 8 * n + (16 << 20), resource.RLIM_INFINITY))
        for kind in ("stable", "quicksort"):
            try:
                np.argsort(a, kind=kind)
                print(kind, "no error")
            except MemoryError:
                print(kind, "MemoryError")
        resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        print("after", np.array_equal(np.argsort(a[:1000], kind="stable"), np.arange(1000)))
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       cwd=os.path.dirname(os.path.abspath(__file__)))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["stable", "MemoryError", "quicksort", "MemoryError", "after", "True"], r.stdout
