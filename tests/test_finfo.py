"""np.finfo(bfloat16): every field against the format definition."""
from __future__ import annotations

import numpy as np
import pytest

import bfloat16_dtype
from bfloat16_dtype import bfloat16
from bfloat16_dtype._finfo import FINFO_FROM_DTYPE

BF = np.dtype(bfloat16)
MAX = float.fromhex("0x1.fep127")  # 0x7F7F: (2 - 2**-7) * 2**127


def _bits(v) -> int:
    return np.asarray(v, dtype=bfloat16).view(np.uint16).item()


@pytest.mark.parametrize("key", [bfloat16, BF, np.array([1.0], bfloat16).dtype])
def test_finfo_values(key):
    fi = np.finfo(key)
    assert fi is bfloat16_dtype.finfo
    check_values(fi)


def check_values(fi):
    """Each value against the bit pattern or number of the spec (docs: format section)."""
    assert fi.dtype == BF
    assert fi.bits == 16
    assert float(fi.eps) == 2.0**-7 and _bits(fi.eps) == 0x3C00
    assert float(fi.epsneg) == 2.0**-8
    assert float(fi.max) == MAX and _bits(fi.max) == 0x7F7F
    assert float(fi.max) == float(np.float32(3.3895314e38))
    assert float(fi.min) == -MAX and _bits(fi.min) == 0xFF7F
    assert float(fi.tiny) == float(fi.smallest_normal) == 2.0**-126
    assert _bits(fi.smallest_normal) == 0x0080
    assert float(fi.smallest_subnormal) == 2.0**-133 and _bits(fi.smallest_subnormal) == 0x0001
    assert (fi.nmant, fi.nexp, fi.maxexp, fi.minexp) == (7, 8, 128, -126)
    assert (fi.machep, fi.negep, fi.iexp) == (-7, -8, 8)
    assert fi.precision == 2
    assert float(fi.resolution) == float(bfloat16(0.01)) and str(fi.resolution) == "0.01"
    for name in ("eps", "epsneg", "max", "min", "tiny", "smallest_subnormal", "resolution"):
        assert type(getattr(fi, name)) is bfloat16, name


def test_finfo_consistent_with_arithmetic():
    fi = np.finfo(bfloat16)
    one = np.array([1.0], bfloat16)
    assert (one + fi.eps)[0] > 1 and (one + fi.eps / 2)[0] == 1  # tie to even
    assert (one - fi.epsneg)[0] < 1
    with np.errstate(over="ignore"):
        assert np.isinf(np.array([fi.max], bfloat16) * 2)[0]
    assert np.nextafter(np.array([0.0], bfloat16), 1)[0] == fi.smallest_subnormal


def test_finfo_str_and_repr():
    fi = np.finfo(bfloat16)
    assert "bfloat16" in repr(fi) and "resolution=0.01" in repr(fi)
    assert "Machine parameters for bfloat16" in str(fi)


def test_finfo_cache_mechanism_is_what_we_rely_on():
    """bfloat16_dtype registers finfo through np.finfo._finfo_cache. If a NumPy release
    changes that mechanism, this fails loudly (and so would the package import)."""
    cache = getattr(np.finfo, "_finfo_cache", None)
    assert isinstance(cache, dict), "np.finfo._finfo_cache is gone: update _finfo.py"
    assert cache.get(BF) is bfloat16_dtype.finfo
    assert cache.get(bfloat16) is bfloat16_dtype.finfo
    # numpy still consults the cache first for dtypes and scalar types
    sentinel = object.__new__(np.finfo)
    key = np.dtype([("bfloat16_dtype_cache_probe", np.float32)])
    cache[key] = sentinel
    try:
        assert np.finfo(key) is sentinel
    finally:
        del cache[key]


def test_finfo_has_every_attribute_float16_has():
    """On every NumPy, each public attribute of np.finfo(np.float16) exists for bfloat16 and
    has the same type (bfloat16 scalars where float16's are float16 scalars)."""
    f16, fi = np.finfo(np.float16), np.finfo(bfloat16)
    names = [n for n in dir(f16) if not n.startswith("_")]
    assert {"epsneg", "resolution", "tiny", "machep", "negep", "iexp", "nexp"} <= set(names)
    for name in names:
        ref, ours = getattr(f16, name), getattr(fi, name)
        if isinstance(ref, np.float16):
            assert type(ours) is bfloat16, name
        elif not isinstance(ref, np.dtype) and not callable(ref):
            assert type(ours) is type(ref), name
    assert float(fi.tiny) == 2.0**-126
    assert (fi.iexp, fi.nexp) == (8, 8)


def test_finfo_is_callable_like_ml_dtypes_finfo():
    """ml_dtypes code calls finfo(bfloat16); bfloat16_dtype.finfo.eps keeps working."""
    assert bfloat16_dtype.finfo(bfloat16) is bfloat16_dtype.finfo
    assert bfloat16_dtype.finfo(BF) is np.finfo(bfloat16)
    assert bfloat16_dtype.finfo(np.float32) is np.finfo(np.float32)
    assert float(bfloat16_dtype.finfo(bfloat16).eps) == float(bfloat16_dtype.finfo.eps) == 2.0**-7
    assert isinstance(bfloat16_dtype.finfo, np.finfo)


@pytest.mark.skipif(not FINFO_FROM_DTYPE, reason="NumPy < 2.4 has no DType finfo hook")
def test_numpy_builds_finfo_from_the_dtype():
    """NumPy >= 2.4: without the cached object, np.finfo builds a plain finfo from the dtype's
    get_constant slot (csrc/dtype.c), and it holds the same values and every attribute
    float16's has."""
    cache = np.finfo._finfo_cache
    saved = {k: cache.pop(k) for k in (BF, bfloat16) if k in cache}
    try:
        fresh = np.finfo(BF)
        assert type(fresh) is np.finfo and fresh is not bfloat16_dtype.finfo
        check_values(fresh)
        f16 = np.finfo(np.float16)
        for name in (n for n in dir(f16) if not n.startswith("_")):
            assert type(getattr(fresh, name)) is type(getattr(bfloat16_dtype.finfo, name)), name
        assert str(fresh) == str(bfloat16_dtype.finfo)
        assert repr(fresh) == repr(bfloat16_dtype.finfo)
    finally:
        for k in (BF, bfloat16):
            cache.pop(k, None)
        cache.update(saved)
    assert np.finfo(bfloat16) is bfloat16_dtype.finfo


@pytest.mark.skipif(FINFO_FROM_DTYPE, reason="NumPy >= 2.4 asks the dtype")
def test_numpy_before_2_4_cannot_build_finfo_itself():
    """NumPy 2.0-2.3 know only their builtin floats: without the object _finfo.py places in
    the cache, np.finfo(bfloat16) has no bfloat16 values to give (why the fallback exists)."""
    cache = np.finfo._finfo_cache
    saved = {k: cache.pop(k) for k in (BF, bfloat16) if k in cache}
    try:
        try:
            fresh = np.finfo(BF)
        except Exception:  # noqa: BLE001  (any failure shows the same)
            return
        assert fresh is not bfloat16_dtype.finfo
        assert not (float(fresh.eps) == 2.0**-7 and fresh.dtype == BF and fresh.nmant == 7)
    finally:
        for k in (BF, bfloat16):
            cache.pop(k, None)
        cache.update(saved)
