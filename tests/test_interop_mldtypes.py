"""ml_dtypes side by side: bit-copy casts both ways, mixed ufuncs, and what np.dtype("bfloat16")
means in each import order (fresh interpreters)."""
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import bfloat16_dtype
from bfloat16_dtype import bfloat16, interop

from conftest import exact_f32, reference_round

from conftest import TESTS_DIR  # noqa: E402

# Importing ml_dtypes hands it the name "bfloat16" (the documented rule). This import happens
# while pytest collects, before other modules' tests run: give them the name back, and let the
# fixture below apply the rule only while this module's tests run.
# The type character ("E", which np.vectorize looks up) follows the same rule.
_NAMES = ("bfloat16", bfloat16_dtype.dtype.char)
_NAMES_BEFORE = {k: np.sctypeDict.get(k) for k in _NAMES}
ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes not installed (pip install ml_dtypes)")
np.sctypeDict.update(_NAMES_BEFORE)

ALL_BITS = np.arange(65536, dtype=np.uint32).astype(np.uint16)


@pytest.fixture(autouse=True, scope="module")
def keep_dtype_name():
    before = {k: np.sctypeDict.get(k) for k in _NAMES}
    np.sctypeDict["bfloat16"] = ml_dtypes.bfloat16
    if np.dtype(ml_dtypes.bfloat16).char == bfloat16_dtype.dtype.char:
        np.sctypeDict[bfloat16_dtype.dtype.char] = ml_dtypes.bfloat16
    yield
    np.sctypeDict.update(before)


def test_registered_after_import():
    assert interop.ml_dtypes_registered()
    assert interop.register_ml_dtypes() is True  # idempotent


def test_casts_are_bit_copies_both_ways_all_patterns():
    ours = ALL_BITS.view(bfloat16)
    theirs = ours.astype(ml_dtypes.bfloat16)
    assert theirs.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(theirs.view(np.uint16), ALL_BITS)
    back = np.asarray(theirs, dtype=bfloat16)
    assert back.dtype == np.dtype(bfloat16)
    np.testing.assert_array_equal(back.view(np.uint16), ALL_BITS)
    # non-contiguous and byte-swapped inputs go through numpy's buffering around the bit copy
    np.testing.assert_array_equal(ours[::3].astype(ml_dtypes.bfloat16).view(np.uint16), ALL_BITS[::3])
    swapped = ours.astype(ours.dtype.newbyteorder(">"))
    np.testing.assert_array_equal(swapped.astype(ml_dtypes.bfloat16).view(np.uint16), ALL_BITS)


def test_casts_are_safe_and_the_types_stay_distinct():
    ours, theirs = np.dtype(bfloat16), np.dtype(ml_dtypes.bfloat16)
    assert ours != theirs
    assert np.can_cast(ours, theirs, "safe") and np.can_cast(theirs, ours, "safe")
    assert not np.can_cast(ours, theirs, "equiv")
    x = np.ones(3, bfloat16)
    assert x.astype(ml_dtypes.bfloat16, casting="safe").dtype == theirs


def _finite_pair(seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(4096).astype(np.float32) * 100
    b = rng.standard_normal(4096).astype(np.float32)
    return reference_round(a), reference_round(b)


@pytest.mark.parametrize("op", [np.add, np.subtract, np.multiply, np.divide, np.maximum])
def test_mixed_ufuncs_run_in_ours_in_both_orders(op):
    abits, bbits = _finite_pair(1)
    x = abits.view(bfloat16)
    y = bbits.view(bfloat16).astype(ml_dtypes.bfloat16)
    for r, (p, q) in ((op(x, y), (abits, bbits)), (op(y, x), (bbits, abits))):
        assert r.dtype.type is bfloat16
        np.testing.assert_array_equal(r.view(np.uint16), reference_round(op(exact_f32(p), exact_f32(q))))


def test_mixed_clip_runs_in_ours():
    """np.clip (a ufunc of three inputs) mixing the two bfloat16s in any position gives ours,
    the bits of the all-ours call."""
    abits, bbits = _finite_pair(3)
    x, lo, hi = abits.view(bfloat16), bbits.view(bfloat16), bbits.view(bfloat16) + 50
    want = np.clip(x, lo, hi).view(np.uint16)
    assert np.array_equal(want, reference_round(np.clip(exact_f32(abits), exact_f32(bbits),
                                                        exact_f32(bbits) + np.float32(50))))
    theirs = ml_dtypes.bfloat16
    for mask in range(1, 7):
        args = [a.astype(theirs) if (mask >> k) & 1 else a for k, a in enumerate((x, lo, hi))]
        r = np.clip(*args)
        assert r.dtype.type is bfloat16, mask
        assert np.array_equal(r.view(np.uint16), want), mask
    r = np.clip(x, theirs(-1), theirs(1))                 # scalar bounds of theirs
    assert r.dtype.type is bfloat16 and r.astype(np.float32).max() <= 1


def test_dtype_of_theirs_runs_our_loops():
    """dtype= ml_dtypes' bfloat16 (what "bfloat16" names once ml_dtypes is loaded) for ufuncs
    and reductions of our arrays: our loops run (the bits of the call without dtype=, sums
    accumulated in float32, the overflow warning) and the result is theirs; it was NumPy's
    "No loop matching" TypeError. accumulate and reduceat with it stay a TypeError."""
    theirs = ml_dtypes.bfloat16
    abits, bbits = _finite_pair(5)
    x, y = abits.view(bfloat16), bbits.view(bfloat16)
    for op in (np.add, np.subtract, np.multiply, np.divide, np.maximum, np.power, np.arctan2):
        with np.errstate(all="ignore"):
            want = op(x, y).view(np.uint16)
            for a, b in ((x, y), (x.astype(theirs), y), (x, y.astype(theirs))):
                r = op(a, b, dtype=theirs)
                assert r.dtype == np.dtype(theirs), op
                assert np.array_equal(r.view(np.uint16), want), op
    for op in (np.sqrt, np.exp, np.negative, np.tanh):
        with np.errstate(all="ignore"):
            r = op(x, dtype=theirs)
        assert r.dtype == np.dtype(theirs) and np.array_equal(r.view(np.uint16),
                                                              op(x).view(np.uint16))
    q, m = np.divmod(x, y, dtype=theirs)
    assert q.dtype == m.dtype == np.dtype(theirs)
    assert np.array_equal(m.view(np.uint16), np.remainder(x, y).view(np.uint16))
    ones = np.ones(3000, bfloat16)     # float32 accumulation: 3000, where theirs stalls at 256
    for total in (ones.sum(dtype="bfloat16"), np.add.reduce(ones, dtype=theirs)):
        assert type(total) is theirs and float(total) == 3008.0
    assert float(np.ones(3000, theirs).sum()) == 256.0
    assert type(ones.mean(dtype=theirs)) is theirs and float(ones.mean(dtype=theirs)) == 1.0
    rows = x.reshape(64, 64)
    got = rows.sum(axis=1, dtype=theirs)
    assert got.dtype == np.dtype(theirs) and np.array_equal(got.view(np.uint16),
                                                            rows.sum(axis=1).view(np.uint16))
    big = np.full(2, 3e38, np.float32).astype(bfloat16)
    with pytest.warns(RuntimeWarning, match="overflow"):
        np.add(big, big, dtype=theirs)
    for call in (lambda: np.add.accumulate(x, dtype=theirs),
                 lambda: np.add.reduceat(x, [0, 5], dtype=theirs)):
        with pytest.raises(TypeError):
            call()
    # without dtype= every ufunc of ours still gives ours (the loops into theirs match an
    # unspecified output too; NumPy keeps ours)
    for name in dir(np):
        f = getattr(np, name)
        if not isinstance(f, np.ufunc) or f.signature is not None:
            continue
        outs = []
        with np.errstate(all="ignore"):
            try:
                r = f(*([x[:8]] * f.nin))
                outs += list(r) if isinstance(r, tuple) else [r]
                if f.nin == 2 and f.nout == 1:
                    outs.append(f.reduce(x[:8]))
            except (TypeError, ValueError):    # no loop, or no reduction (not reorderable)
                pass
        for out in outs:
            assert type(out) is not theirs and out.dtype != np.dtype(theirs), name


def test_clip_mixing_both_bfloat16s_and_a_python_number():
    """np.clip with ours, theirs (array or scalar) and a Python int or float as a bound gives
    ours with the all-ours call's bits (the number weak, as beside two of ours); it gave
    float32. (A number as the clipped array becomes a float64 array first, as for float16.)"""
    abits, bbits = _finite_pair(4)
    x, bound = abits.view(bfloat16), bbits.view(bfloat16)
    theirs = ml_dtypes.bfloat16
    for number in (1.5, -3, 0.1):
        for p_ours, p_theirs in ((0, 1), (0, 2), (1, 0), (2, 0)):
            args = [number] * 3
            args[p_ours], args[p_theirs] = x, bound
            want = np.clip(*args)
            assert want.dtype.type is bfloat16
            for other in (bound.astype(theirs), theirs(bound[0])):
                mixed = list(args)
                mixed[p_theirs] = other
                r = np.clip(*mixed)
                assert r.dtype.type is bfloat16, (number, p_ours, p_theirs)
                ref = list(args)
                ref[p_theirs] = bound if other.ndim else bound[0]
                assert np.array_equal(r.view(np.uint16), np.clip(*ref).view(np.uint16))


def test_scalars_of_theirs_keep_their_bits():
    """bfloat16(s), item assignment and np.array([s]) of ml_dtypes' scalars copy the bits, as the
    array cast does: signalling NaNs and payloads included (every pattern)."""
    theirs = ALL_BITS.view(ml_dtypes.bfloat16)
    got = np.array([bfloat16(s).bits for s in theirs], np.uint16)
    assert np.array_equal(got, ALL_BITS)
    z = np.zeros(3, bfloat16)
    for b in (0x7F81, 0xFFC5, 0x8000):
        z[1] = np.array(b, np.uint16).view(ml_dtypes.bfloat16)[()]
        assert z.view(np.uint16)[1] == b
        assert np.array([np.array(b, np.uint16).view(ml_dtypes.bfloat16)[()]], bfloat16).view(np.uint16)[0] == b


def test_mixed_comparison_and_matmul():
    abits, bbits = _finite_pair(2)
    x = abits.view(bfloat16)
    y = bbits.view(bfloat16).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(np.less(x, y), exact_f32(abits) < exact_f32(bbits))
    np.testing.assert_array_equal(np.less(y, x), exact_f32(bbits) < exact_f32(abits))
    m = (x[:64 * 64].reshape(64, 64) @ y[:64 * 64].reshape(64, 64))
    assert m.dtype.type is bfloat16
    ref = exact_f32(abits[:4096]).reshape(64, 64).astype(np.float64) @ \
        exact_f32(bbits[:4096]).reshape(64, 64).astype(np.float64)
    np.testing.assert_allclose(m.astype(np.float64), ref, rtol=2**-7, atol=1e-2 * np.abs(ref).max())


def test_helpers_accept_ml_dtypes_arrays_and_name_the_type_in_errors():
    y = np.arange(4, dtype=np.float32).astype(ml_dtypes.bfloat16)
    d = interop.to_dlpack(y)
    back = interop.from_dlpack(d)
    assert back.dtype == np.dtype(bfloat16)
    np.testing.assert_array_equal(back.view(np.uint16), y.view(np.uint16))
    with pytest.raises(TypeError, match=r"float16 \(type numpy.float16\)|numpy.float16"):
        interop.to_dlpack(np.zeros(2, np.float16))


SCRIPT = textwrap.dedent("""
    import sys, numpy as np
    {imports}
    import ml_dtypes, bfloat16_dtype
    from bfloat16_dtype import bfloat16, interop
    assert interop.ml_dtypes_registered()
    assert "ml_dtypes" not in interop._pending    # the import hook is done with it
    assert np.dtype("bfloat16") == np.dtype(ml_dtypes.bfloat16), np.dtype("bfloat16").type
    mine = np.dtype(bfloat16).char
    assert np.dtype(mine).type is (ml_dtypes.bfloat16 if np.dtype(ml_dtypes.bfloat16).char == mine
                                   else bfloat16)
    x = np.array([1.5, -2.0], dtype=bfloat16)
    y = x.astype(ml_dtypes.bfloat16)
    assert (x + y).dtype.type is bfloat16 and (y + x).dtype.type is bfloat16
    assert np.asarray(y, dtype=bfloat16).view(np.uint16).tolist() == [0x3FC0, 0xC000]
    print(np.result_type(x, y).type.__module__, np.result_type(y, x).type.__module__,
          np.concatenate([y, x]).dtype.type.__module__)
""")


def _run(code):
    res = subprocess.run([sys.executable, "-c", code], cwd=TESTS_DIR, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


@pytest.mark.parametrize("first", [
    "import bfloat16_dtype",   # ours first: the import hook registers
    "import ml_dtypes",         # ml_dtypes first: registered at our import
])
def test_import_orders(first):
    # np.result_type / np.concatenate of the two give ours in either order, like the ufuncs.
    assert _run(SCRIPT.format(imports=first)) == "bfloat16_dtype bfloat16_dtype bfloat16_dtype"


def test_name_is_ours_without_ml_dtypes():
    code = textwrap.dedent("""
        import sys, numpy as np
        sys.modules["ml_dtypes"] = None          # as if not installed
        import bfloat16_dtype
        from bfloat16_dtype import interop
        assert np.dtype("bfloat16") == bfloat16_dtype.dtype
        assert np.dtype(bfloat16_dtype.dtype.char) == bfloat16_dtype.dtype
        assert interop.register_ml_dtypes() is False and not interop.ml_dtypes_registered()
        print("ok")
    """)
    assert _run(code) == "ok"


def test_explicit_registration_before_ml_dtypes_is_imported():
    # register_ml_dtypes imports ml_dtypes itself: the import hook runs inside that call
    code = textwrap.dedent("""
        import sys, numpy as np
        import bfloat16_dtype
        from bfloat16_dtype import interop
        assert "ml_dtypes" not in sys.modules
        assert interop.register_ml_dtypes() is True and interop.ml_dtypes_registered()
        import ml_dtypes
        x = np.array([1.5], bfloat16_dtype.bfloat16)
        assert x.astype(ml_dtypes.bfloat16).view(np.uint16).tolist() == [0x3FC0]
        print(repr(bfloat16_dtype.dtype))
    """)
    assert _run(code) == "dtype(bfloat16_dtype.bfloat16)"


def test_structured_dtype_reprs_do_not_tell_the_two_types_apart():
    # NumPy prints dtype.type.__name__ for a user dtype's field (README, Differences from float16);
    # NumPy 2.0-2.2 printed ours as '<V2'
    ours = np.dtype([("a", bfloat16)])
    theirs = np.dtype([("a", ml_dtypes.bfloat16)])
    assert ours != theirs
    if np.lib.NumpyVersion(np.__version__) < "2.3.0":
        assert repr(ours) == "dtype([('a', '<V2')])"
    else:
        assert repr(ours) == repr(theirs)
    assert repr(np.dtype(bfloat16)) != repr(np.dtype(ml_dtypes.bfloat16))


def test_registration_survives_a_reload_of_interop():
    # the Python record of the registration is lost (a reload, as IPython's autoreload does, or
    # an interrupt between the registration's steps): registering again must not fail on what
    # NumPy already holds, and the casts and mixed ufuncs keep working
    code = textwrap.dedent("""
        import importlib, numpy as np, ml_dtypes
        import bfloat16_dtype
        from bfloat16_dtype import interop
        assert interop.ml_dtypes_registered()
        interop = importlib.reload(interop)
        assert not interop.ml_dtypes_registered()
        assert interop.register_ml_dtypes() is True and interop.ml_dtypes_registered()
        x = np.array([1.5, -2.0], bfloat16_dtype.bfloat16)
        y = x.astype(ml_dtypes.bfloat16)
        assert (x + y).dtype == bfloat16_dtype.dtype and (y * x).dtype == bfloat16_dtype.dtype
        assert x.astype(ml_dtypes.float8_e5m2).astype(np.float32).tolist() == [1.5, -2.0]
        print("ok")
    """)
    assert _run(code) == "ok"


def test_import_hook_with_a_finder_that_asks_sys_meta_path_again():
    # a finder further down that calls importlib.util.find_spec for the same name must not
    # send the import hook into a loop
    code = textwrap.dedent("""
        import importlib.abc, importlib.util, sys
        calls = []
        class Asking(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "ml_dtypes" and not calls:
                    calls.append(name)
                    return importlib.util.find_spec(name)
                return None
        sys.meta_path.insert(0, Asking())
        import bfloat16_dtype
        from bfloat16_dtype import interop
        import ml_dtypes
        assert calls == ["ml_dtypes"] and interop.ml_dtypes_registered()
        print("ok")
    """)
    assert _run(code) == "ok"


# Every scalar type the installed ml_dtypes exports besides bfloat16, read from the module itself
# (not from interop's list, so a type missing there fails here).
ML_OTHER_TYPES = sorted(name for name in dir(ml_dtypes)
                        if isinstance(getattr(ml_dtypes, name), type)
                        and issubclass(getattr(ml_dtypes, name), np.generic) and name != "bfloat16")


def test_every_other_ml_dtypes_type_is_listed():
    assert set(ML_OTHER_TYPES) <= set(interop._ML_NARROW_TYPES)


@pytest.mark.parametrize("name", ML_OTHER_TYPES)
def test_narrow_formats_cast_through_float32(name):
    """ml_dtypes' float8/float6/float4, small integers and 2 x 16-bit complex types cast with our
    bfloat16 both ways, bit for bit as with ml_dtypes' own bfloat16 (every bfloat16 pattern out,
    every byte pattern (or a sample of them) in), with the same casting levels and warnings."""
    t = np.dtype(getattr(ml_dtypes, name))
    with np.errstate(all="ignore"), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ours = ALL_BITS.view(bfloat16).astype(t)
        theirs = ALL_BITS.view(ml_dtypes.bfloat16).astype(t)
        np.testing.assert_array_equal(ours.view(np.uint8), theirs.view(np.uint8))
        if t.itemsize == 1:
            narrow = np.arange(256, dtype=np.uint16).astype(np.uint8).view(t)
        else:  # complex32/bcomplex32: every 16-bit real part, random imaginary parts
            raw = np.random.default_rng(0).integers(0, 65536, 2 * 65536).astype(np.uint16)
            raw[::2] = ALL_BITS
            narrow = raw.view(t)
        got = narrow.astype(bfloat16).view(np.uint16)
        want = narrow.astype(ml_dtypes.bfloat16).view(np.uint16)
        if t.itemsize > 1:
            # NaN real parts keep their payload (as from complex64); ml_dtypes gives the quiet
            # NaN of the same sign
            nan = (want & 0x7FFF) > 0x7F80
            assert np.array_equal(nan, (got & 0x7FFF) > 0x7F80) and nan.any()
            assert np.array_equal(got[nan] >> 15, want[nan] >> 15)
            got, want = got[~nan], want[~nan]
        np.testing.assert_array_equal(got, want)
        strided = ALL_BITS[::3].view(bfloat16)[::-1].astype(t)             # any layout
        np.testing.assert_array_equal(strided.view(np.uint8),
                                      np.ascontiguousarray(theirs[::3][::-1]).view(np.uint8))
    kinds = lambda ws: sorted({w.category.__name__ for w in ws})
    with warnings.catch_warnings(record=True) as ours_w:
        warnings.simplefilter("always")
        np.ones(2, t).astype(bfloat16)
    with warnings.catch_warnings(record=True) as theirs_w:
        warnings.simplefilter("always")
        np.ones(2, t).astype(ml_dtypes.bfloat16)
    assert kinds(ours_w) == kinds(theirs_w)  # ComplexWarning from the complex types
    for level in ("safe", "same_kind", "unsafe"):
        assert np.can_cast(bfloat16, t, level) == np.can_cast(ml_dtypes.bfloat16, t, level), level
        assert np.can_cast(t, bfloat16, level) == np.can_cast(t, ml_dtypes.bfloat16, level), level


@pytest.mark.parametrize("first", ["import bfloat16_dtype", "import ml_dtypes"])
def test_narrow_casts_in_either_import_order(first):
    code = textwrap.dedent(f"""
        {first}
        import numpy as np, ml_dtypes
        from bfloat16_dtype import bfloat16
        x = np.array([1.5, -448, 1e-3, 600], bfloat16)
        y = x.astype(ml_dtypes.float8_e4m3fn)
        print(y.view(np.uint8).tolist() == x.astype(np.float32).astype(ml_dtypes.float8_e4m3fn).view(np.uint8).tolist(),
              y.astype(bfloat16).astype(np.float32).tolist())
    """)
    assert _run(code) == "True [1.5, -448.0, 0.001953125, nan]"   # 2**-9: e4m3fn's least


def test_helpers_take_ml_dtypes_arrays():
    """JAX's and ml_dtypes' arrays (the same bits) go into numerics, rounding's out=, and
    training's params, grads and MasterWeights dtype as views of ours; refusals name the
    type with its module rather than printing "bfloat16" for both."""
    from bfloat16_dtype import numerics, rounding, training
    m = np.array([1.0, 100.0], ml_dtypes.bfloat16)
    assert float(numerics.mean(m)) == 50.5 and float(numerics.sum(m)) == 101.0
    out = np.empty(2, ml_dtypes.bfloat16)
    rounding.to_bfloat16(np.array([1.5, 2.0**-130], np.float32), out=out)
    assert out.view(np.uint16).tolist() == [0x3FC0, 0x0008]   # 2**-130: subnormal
    p = np.ones(2, ml_dtypes.bfloat16)
    training.SGD([p], lr=0.5).step([np.ones(2, ml_dtypes.bfloat16)])
    assert p.dtype == np.dtype(ml_dtypes.bfloat16) and p.astype(np.float32).tolist() == [0.5, 0.5]
    mw = training.MasterWeights([m], dtype="bfloat16")    # the name is ml_dtypes' here
    assert mw.working[0].dtype == np.dtype(bfloat16)
    swapped = np.empty(2, np.dtype(bfloat16).newbyteorder())
    with pytest.raises(TypeError, match="bfloat16_dtype.bfloat16 byte-swapped"):
        rounding.to_bfloat16(np.ones(2, np.float32), out=swapped)
    with pytest.raises(TypeError, match="got dtype float8_e4m3fn"):
        numerics.mean(np.ones(2, ml_dtypes.float8_e4m3fn))


@pytest.mark.skipif(np.lib.NumpyVersion(np.__version__) < "2.4.0", reason="same_value: NumPy >= 2.4")
def test_same_value_is_not_declared_between_the_two_bfloat16s():
    """The bit-copy casts between the two types are legacy cast functions, which cannot declare
    casting="same_value": a TypeError naming the rule (README "Differences from float16")."""
    x = np.array([1.5, -2.0], bfloat16)
    theirs = x.astype(ml_dtypes.bfloat16)
    for src, to in ((x, ml_dtypes.bfloat16), (theirs, bfloat16)):
        with pytest.raises(TypeError, match="same_value"):
            src.astype(to, casting="same_value")
    assert theirs.astype(bfloat16, casting="safe").view(np.uint16).tolist() == x.view(np.uint16).tolist()
