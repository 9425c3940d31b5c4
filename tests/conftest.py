"""Shared fixtures: every bfloat16 bit pattern and its exact float64 value."""
import os
import platform

import numpy as np
import pytest

from bfloat16_dtype import bfloat16

# Child interpreters (subprocess tests) start here, so they import the installed package, not
# the source tree at the repository root.
TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
#: The x86-64 kernels (every tier above baseline) and the x86 rules for out-of-range conversions
#: exist only there; other CPUs build the portable kernels alone.
X86_64 = platform.machine().lower() in ("x86_64", "amd64")


@pytest.fixture(scope="session")
def all_bits() -> np.ndarray:
    """All 65,536 bfloat16 bit patterns as uint16."""
    return np.arange(65536, dtype=np.uint32).astype(np.uint16)


@pytest.fixture(scope="session")
def all_values(all_bits) -> np.ndarray:
    """All 65,536 bfloat16 values, as a bfloat16 array."""
    return all_bits.view(bfloat16)


def exact_f32(bits: np.ndarray) -> np.ndarray:
    """Independent reference widening: put the 16 bits on top of a float32 with integer ops."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def reference_round(values) -> np.ndarray:
    """Independent reference rounding float32 -> bfloat16 bits, by integer arithmetic only:
    round to nearest, ties to even; NaN -> quiet NaN with the same sign."""
    u = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    upper = u >> 16
    lower = u & 0xFFFF
    round_up = (lower > 0x8000) | ((lower == 0x8000) & ((upper & 1) == 1))
    out = (upper + round_up).astype(np.uint64)
    is_nan = (u & 0x7FFFFFFF) > 0x7F800000
    out = np.where(is_nan, upper | 0x40, out)
    return out.astype(np.uint16)
