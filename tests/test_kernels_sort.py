"""np.sort / np.argsort of bfloat16 under every tier this CPU has (forced in a subprocess),
against numpy's float32 sort of the widened values: NaNs last, -0.0 == +0.0, and for the
stable kinds (and argsort, which is always stable) exactly numpy's stable float32 order."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import exact_f32, reference_round
from kernel_tiers import run_tier, tier_params

RNG = np.random.default_rng(5)
# insertion sort (<= 48), radix sort (< 8192), counting sort (>= 8192)
SIZES = [2, 7, 48, 49, 1000, 8191, 8192, 100_000, 1 << 20]


def special_mix(n: int) -> np.ndarray:
    """Ordinary values with both zeros, infinities and NaNs of several signs and payloads."""
    x = reference_round(RNG.standard_normal(n).astype(np.float32))
    pool = np.array([0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x7F81, 0xFFFF, 0x0001, 0x8001],
                    np.uint16)
    k = max(1, n // 5)
    x[RNG.integers(0, n, k)] = pool[RNG.integers(0, len(pool), k)]
    return x


def inputs() -> dict[str, np.ndarray]:
    d = {}
    for n in SIZES:
        d[f"sort:uniform{n}"] = reference_round(RNG.random(n, dtype=np.float32))
        d[f"sort:special{n}"] = special_mix(n)
    d["sort:allbits"] = RNG.permutation(np.arange(65536, dtype=np.uint32).astype(np.uint16))
    d["sort:zeros_only"] = RNG.choice(np.array([0x0000, 0x8000], np.uint16), 20_000)
    d["sort:nans_only"] = RNG.choice(np.array([0x7FC0, 0xFFC0, 0x7F81], np.uint16), 20_000)
    d["sort:one_value"] = np.full(10_000, 0x3F80, np.uint16)
    return d


INPUTS = inputs()


@pytest.fixture(scope="module", params=tier_params())
def out(request, tmp_path_factory):
    return run_tier(request.param, INPUTS, tmp_path_factory.mktemp("sort"))


@pytest.mark.parametrize("key", list(INPUTS))
def test_sort_matches_numpy_float32(out, key):
    bits = INPUTS[key]
    widened = exact_f32(bits)
    # any kind: the same values as numpy's float32 sort (NaN == NaN, -0.0 == +0.0) ...
    np.testing.assert_array_equal(exact_f32(out[key + ":sort"]), np.sort(widened))
    # ... and the same multiset of bit patterns (NaN payloads and zero signs kept)
    np.testing.assert_array_equal(np.sort(out[key + ":sort"]), np.sort(bits))
    # stable: exactly numpy's stable float32 order, bit for bit
    stable = np.argsort(widened, kind="stable")
    np.testing.assert_array_equal(out[key + ":sort_stable"], bits[stable])


@pytest.mark.parametrize("key", list(INPUTS))
def test_argsort_is_numpy_stable_float32_argsort(out, key):
    stable = np.argsort(exact_f32(INPUTS[key]), kind="stable")
    np.testing.assert_array_equal(out[key + ":argsort"], stable)
    np.testing.assert_array_equal(out[key + ":argsort_stable"], stable)
