"""DLPack both ways: our export read back by hand-built readers and torch, and import of
hand-built capsules (strides, byte offsets, read-only, devices, dtypes, deleters) and torch."""
import ctypes
import gc
import subprocess
import sys
import threading
import time
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bfloat16_dtype import bfloat16, interop

from conftest import TESTS_DIR

ALL_BITS = np.arange(65536, dtype=np.uint32).astype(np.uint16)


@pytest.fixture(autouse=True, scope="module")
def keep_dtype_name():
    """jax imports ml_dtypes, which takes the name "bfloat16"; restore it for later modules."""
    before = np.sctypeDict.get("bfloat16")
    yield
    np.sctypeDict["bfloat16"] = before


# ---- the DLPack ABI, written out from the dlpack.h specification -------------------------

class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", DELETER), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


PyCapsule_New = ctypes.pythonapi.PyCapsule_New
PyCapsule_New.restype = ctypes.py_object
PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
PyCapsule_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
PyCapsule_GetPointer.restype = ctypes.c_void_p
PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
PyCapsule_GetName = ctypes.pythonapi.PyCapsule_GetName
PyCapsule_GetName.restype = ctypes.c_char_p
PyCapsule_GetName.argtypes = [ctypes.py_object]


class Producer:
    """A hand-built DLPack tensor over `buf` (a numpy array that owns the memory)."""

    def __init__(self, buf, shape, strides=None, byte_offset=0, code=4, bits=16, lanes=1,
                 device=(1, 0), versioned=True, read_only=False, version=(1, 0)):
        self.buf = buf
        self.deleted = 0
        nd = len(shape)
        self.shape = (ctypes.c_int64 * max(nd, 1))(*shape)
        self.strides = None if strides is None else (ctypes.c_int64 * max(nd, 1))(*strides)
        self.deleter = DELETER(self._delete)
        t = DLTensor(ctypes.c_void_p(buf.ctypes.data), DLDevice(*device), nd,
                     DLDataType(code, bits, lanes), self.shape, self.strides, byte_offset)
        if versioned:
            self.managed = DLManagedTensorVersioned(DLPackVersion(*version), None, self.deleter,
                                                    1 if read_only else 0, t)
            self.name = b"dltensor_versioned"
        else:
            self.managed = DLManagedTensor(t, None, self.deleter)
            self.name = b"dltensor"

    def _delete(self, ptr):
        # called from C: count only calls that pass our own struct
        self.deleted += 1 if ptr == ctypes.addressof(self.managed) else 1000

    def capsule(self):
        # no capsule destructor: an unconsumed capsule is the test's to clean up
        return PyCapsule_New(ctypes.addressof(self.managed), self.name, None)


def read_back(capsule):
    """An independent reader of our export: walk the DLTensor with ctypes, copy the elements."""
    name = PyCapsule_GetName(capsule)
    ptr = PyCapsule_GetPointer(capsule, name)
    if name == b"dltensor_versioned":
        m = DLManagedTensorVersioned.from_address(ptr)
        flags, t = m.flags, m.dl_tensor
        assert (m.version.major, m.version.minor) == (1, 0)
    else:
        assert name == b"dltensor"
        flags, t = None, DLManagedTensor.from_address(ptr).dl_tensor
    assert (t.device.device_type, t.device.device_id) == (1, 0)
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (4, 16, 1)
    shape = [t.shape[i] for i in range(t.ndim)]
    strides = [t.strides[i] for i in range(t.ndim)]
    n = int(np.prod(shape)) if shape else 1
    out = np.empty(n, np.uint16)
    for flat in range(n):
        off, rem = t.byte_offset, flat
        for ax in range(t.ndim - 1, -1, -1):
            off += (rem % shape[ax]) * strides[ax] * 2
            rem //= shape[ax]
        out[flat] = ctypes.c_uint16.from_address(t.data + off).value
    return out.reshape(shape), flags, t.data


# ---- export ------------------------------------------------------------------------------

@pytest.mark.parametrize("versioned", [False, True])
def test_export_describes_the_array_zero_copy(versioned):
    base = np.arange(4 * 6, dtype=np.uint16).reshape(4, 6).view(bfloat16)
    for x in (base, base[1:, ::2], base.T, base[::-1]):
        cap = interop.to_dlpack(x).__dlpack__(max_version=(1, 0) if versioned else None)
        bits, flags, data = read_back(cap)
        np.testing.assert_array_equal(bits, x.view(np.uint16))
        assert data == x.ctypes.data
        if versioned:
            assert flags == 0


def test_export_all_bit_patterns_round_trip():
    x = ALL_BITS.view(bfloat16)
    for mv in (None, (1, 0)):
        y = interop.from_dlpack(interop.to_dlpack(x).__dlpack__(max_version=mv))
        assert y.ctypes.data == x.ctypes.data and y.dtype == x.dtype
        np.testing.assert_array_equal(y.view(np.uint16), ALL_BITS)


def test_read_only_array_is_flagged_and_refused_unversioned():
    x = np.ones(3, bfloat16)
    x.flags.writeable = False
    _, flags, _ = read_back(interop.to_dlpack(x).__dlpack__(max_version=(1, 1)))
    assert flags & 1
    with pytest.raises(BufferError, match="read-only"):
        interop.to_dlpack(x).__dlpack__()
    y = interop.from_dlpack(interop.to_dlpack(x))
    assert not y.flags.writeable


def test_export_keeps_the_array_alive_and_unconsumed_capsule_releases_it():
    x = np.arange(8, dtype=np.uint16).view(bfloat16)
    ref = weakref.ref(x)
    cap = interop.to_dlpack(x).__dlpack__(max_version=(1, 0))
    del x
    gc.collect()
    assert ref() is not None
    del cap          # never consumed: the capsule's destructor calls the deleter
    gc.collect()
    assert ref() is None

    x = np.arange(8, dtype=np.uint16).view(bfloat16)
    ref = weakref.ref(x)
    y = interop.from_dlpack(interop.to_dlpack(x))
    del x
    gc.collect()
    assert ref() is not None and y.view(np.uint16).tolist() == list(range(8))
    del y
    gc.collect()
    assert ref() is None


PyCapsule_SetName = ctypes.pythonapi.PyCapsule_SetName
PyCapsule_SetName.restype = ctypes.c_int
PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]


@pytest.mark.parametrize("versioned", [False, True])
def test_deleter_called_without_the_gil_releases_the_array_later(versioned):
    """A consumer may call the deleter from a thread that does not hold the GIL (JAX's copy
    worker): the deleter must not wait for the GIL there (see the exit test below); the array
    is released on the main thread soon after, and is alive until then."""
    x = np.arange(8, dtype=np.uint16).view(bfloat16)
    ref = weakref.ref(x)
    cap = interop.to_dlpack(x).__dlpack__(max_version=(1, 0) if versioned else None)
    name = PyCapsule_GetName(cap)
    ptr = PyCapsule_GetPointer(cap, name)
    cls = DLManagedTensorVersioned if versioned else DLManagedTensor
    deleter = cls.from_address(ptr).deleter      # a CFUNCTYPE: ctypes releases the GIL to call it
    assert PyCapsule_SetName(cap, b"used_" + name) == 0   # consumed: its destructor does nothing
    del x
    gc.collect()
    assert ref() is not None
    worker = threading.Thread(target=deleter, args=(ptr,))
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive()
    for _ in range(1000):                         # the main thread runs the pending release
        if ref() is None:
            break
        time.sleep(0.001)
    assert ref() is None
    del cap


_EXIT_WITH_A_JAX_EXPORT = """
import numpy as np
from bfloat16_dtype import bfloat16, interop
x = np.random.default_rng(0).standard_normal((1024, 1024)).astype(bfloat16)
j = interop.to_jax(x)   # JAX copies unaligned data on a worker, which calls our deleter
"""


def test_process_exits_while_jax_holds_an_export():
    """JAX's copy worker called the deleter while the interpreter finalized; it waited for the
    GIL, was ended there, and JAX's thread pool waited for it for ever: the process never
    exited (8 runs in 8). The deleter never waits for the GIL off the GIL now."""
    pytest.importorskip("jax", reason="jax not installed")
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", _EXIT_WITH_A_JAX_EXPORT], cwd=TESTS_DIR,
                           capture_output=True, text=True, timeout=240)
        assert r.returncode == 0, r.stderr[-2000:]


def test_odd_stride_of_a_length_one_axis_exports():
    """A length-1 axis is never stepped along, so its stride does not matter (NumPy's own
    __dlpack__ checks the others only); an odd one was refused with a BufferError."""
    s = np.zeros(1, dtype=[("a", "u1"), ("b", bfloat16), ("f", np.float16)])
    s["b"] = bfloat16(1.5)
    got, _, data = read_back(interop.to_dlpack(s["b"]).__dlpack__(max_version=(1, 0)))
    assert got.view(bfloat16).tolist() == [1.5] and data == s["b"].ctypes.data
    with pytest.raises(BufferError, match="stride 5 bytes"):
        interop.to_dlpack(np.zeros(2, dtype=s.dtype)["b"]).__dlpack__(max_version=(1, 0))


def test_export_checks_arguments():
    d = interop.to_dlpack(np.ones(2, bfloat16))
    assert d.__dlpack_device__() == (1, 0)
    with pytest.raises(BufferError, match="stream"):
        d.__dlpack__(stream=1)
    with pytest.raises(BufferError, match="CPU"):
        d.__dlpack__(dl_device=(2, 0))
    with pytest.raises(TypeError, match="float32"):
        interop.to_dlpack(np.ones(2, np.float32))
    odd = np.lib.stride_tricks.as_strided(np.zeros(8, np.uint16).view(bfloat16), (3,), (3,))
    with pytest.raises(BufferError, match="stride"):
        interop.to_dlpack(odd).__dlpack__()
    copied = d.__dlpack__(copy=True)
    assert read_back(copied)[2] != d._array.ctypes.data


def test_from_dlpack_of_an_array_is_a_new_view():
    """np.from_dlpack(float32_array) is a new array over the same memory; so is ours."""
    x = np.arange(4, dtype=np.uint16).view(bfloat16)
    y = interop.from_dlpack(x)
    assert y is not x and y.ctypes.data == x.ctypes.data and y.dtype == x.dtype
    y[0] = 5.0
    assert x[0] == 5.0


def test_dlpack_keywords_are_checked():
    """Bad max_version/dl_device/copy values raise TypeError naming the keyword (max_version=1
    raised "'int' object is not subscriptable", copy="no" made a copy)."""
    d = interop.to_dlpack(np.arange(4, dtype=np.float32).astype(bfloat16))
    for kw in (dict(max_version=1), dict(max_version=()), dict(max_version=(1,)),
               dict(max_version=("a", 0)), dict(dl_device=1), dict(dl_device=(1,)),
               dict(copy="no"), dict(copy=0)):
        name = next(iter(kw))
        with pytest.raises(TypeError, match=name):
            d.__dlpack__(**kw)
    bits, flags, _ = read_back(d.__dlpack__(max_version=np.array([1, 0]), dl_device=(np.int32(1), 0)))
    assert bits.tolist() == [0, 0x3F80, 0x4000, 0x4040] and flags == 0


def test_copy_true_sets_the_is_copied_flag():
    """DLPack 1.0's IS_COPIED bit (1 << 1) tells a consumer the memory is its alone; set with
    copy=True only, beside the read-only bit of a read-only array."""
    x = np.ones(3, bfloat16)
    d = interop.to_dlpack(x)
    assert read_back(d.__dlpack__(max_version=(1, 0), copy=True))[1] == 2
    assert read_back(d.__dlpack__(max_version=(1, 0), copy=False))[1] == 0
    assert read_back(d.__dlpack__(max_version=(1, 0)))[1] == 0
    x.flags.writeable = False
    bits, flags, data = read_back(d.__dlpack__(max_version=(1, 0), copy=True))
    assert data != x.ctypes.data and flags == 2      # the copy is writable
    assert read_back(d.__dlpack__(max_version=(1, 0)))[1] == 1


# ---- import of hand-built capsules -------------------------------------------------------

def test_import_strides_offset_and_deleter():
    buf = np.arange(32, dtype=np.uint16)
    p = Producer(buf, shape=(3, 4), strides=(8, 2), byte_offset=4)  # from element 2, rows 8 apart
    y = interop.from_dlpack(p.capsule())
    want = buf[2:].reshape(-1)[: 3 * 8].reshape(3, 8)[:, ::2]
    np.testing.assert_array_equal(y.view(np.uint16), want)
    assert y.dtype == np.dtype(bfloat16) and y.flags.writeable
    assert y.ctypes.data == buf.ctypes.data + 4
    y[0, 0] = 7.0
    assert buf[2] == 0x40E0
    assert p.deleted == 0
    del y
    gc.collect()
    assert p.deleted == 1


@pytest.mark.parametrize("versioned", [False, True])
def test_import_contiguous_without_strides(versioned):
    buf = np.arange(6, dtype=np.uint16)
    p = Producer(buf, shape=(2, 3), versioned=versioned)
    cap = p.capsule()
    y = interop.from_dlpack(cap)
    np.testing.assert_array_equal(y.view(np.uint16), buf.reshape(2, 3))
    assert PyCapsule_GetName(cap) == (b"used_dltensor_versioned" if versioned else b"used_dltensor")
    with pytest.raises(ValueError, match="already consumed"):
        interop.from_dlpack(cap)
    del y
    gc.collect()
    assert p.deleted == 1


def test_import_of_a_capsule_of_another_kind_names_it():
    """A capsule that is not a DLPack tensor's is named in the error, not taken for a used one."""
    box = ctypes.c_int(0)
    other = PyCapsule_New(ctypes.addressof(box), b"foo", None)
    with pytest.raises(ValueError, match=r"named 'foo'$"):
        interop.from_dlpack(other)


def test_import_read_only_flag_and_scalar():
    buf = np.array([0x4020], dtype=np.uint16)
    y = interop.from_dlpack(Producer(buf, shape=(), read_only=True).capsule())
    assert y.shape == () and not y.flags.writeable and float(y) == 2.5


@pytest.mark.parametrize("kwargs, exc, msg", [
    (dict(device=(2, 0)), BufferError, "CUDA"),
    (dict(code=2, bits=16), TypeError, "float16"),
    (dict(code=1, bits=16), TypeError, "uint16"),
    (dict(lanes=2), TypeError, "2 lanes"),
    (dict(code=200), TypeError, r"an unknown type \(type code 200, 16 bits, 1 lane\)"),
    (dict(version=(2, 0)), BufferError, "version 2.0"),
    # strides each within the limit whose reach from the first element overflows an address
    (dict(shape=(3,), strides=(2**61,)), ValueError, "addressable"),
    (dict(shape=(3, 3), strides=(2**60, -(2**60))), ValueError, "addressable"),
])
def test_import_rejects_with_a_clear_error_and_leaves_the_tensor_to_its_owner(kwargs, exc, msg):
    kwargs.setdefault("shape", (4,))
    p = Producer(np.zeros(4, np.uint16), **kwargs)
    cap = p.capsule()
    with pytest.raises(exc, match=msg):
        interop.from_dlpack(cap)
    assert PyCapsule_GetName(cap) == p.name   # not consumed
    assert p.deleted == 0


@pytest.mark.parametrize("versioned, read_only", [(False, False), (True, False), (True, True)])
def test_unversioned_producers_import_read_only(versioned, read_only):
    """From an object's __dlpack__: an unversioned capsule, which cannot carry the read-only
    flag, gives a read-only array, as np.from_dlpack does (JAX's arrays, immutable, came back
    writable and a write changed the JAX array); a versioned one keeps its flag. A capsule
    passed in directly stays writable (test_import_strides_offset_and_deleter)."""
    buf = np.array([0x3FC0, 0x4000], np.uint16)
    p = Producer(buf, shape=(2,), versioned=versioned, read_only=read_only)

    class Holder:
        def __dlpack_device__(self):
            return (1, 0)

        def __dlpack__(self, max_version=None, **kw):
            return p.capsule()

    y = interop.from_dlpack(Holder())
    assert y.tolist() == [1.5, 2.0]
    assert y.flags.writeable == (versioned and not read_only)
    assert y.ctypes.data == buf.ctypes.data
    del y
    gc.collect()
    assert p.deleted == 1
    jnp = pytest.importorskip("jax.numpy", reason="jax not installed (pip install jax)")
    j = jnp.arange(3, dtype=jnp.float32).astype(jnp.bfloat16)
    y = interop.from_dlpack(j)
    assert not y.flags.writeable and y.tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="read-only"):
        y[0] = 100


def test_import_device_check_before_export():
    class OnGPU:
        def __dlpack_device__(self):
            return (2, 0)

        def __dlpack__(self, **kw):
            raise AssertionError("must not be called")

    with pytest.raises(BufferError, match="CUDA"):
        interop.from_dlpack(OnGPU())
    with pytest.raises(TypeError, match="__dlpack__"):
        interop.from_dlpack([1, 2])


def test_numpy_as_producer_of_a_wrong_dtype():
    a = np.arange(3, dtype=np.float32)

    class Wrapped:
        __dlpack__ = a.__dlpack__
        __dlpack_device__ = a.__dlpack_device__

    with pytest.raises(TypeError, match="float32"):
        interop.from_dlpack(Wrapped())


# ---- torch -------------------------------------------------------------------------------

def test_torch_both_ways_zero_copy():
    torch = pytest.importorskip("torch", reason="torch not installed (pip install torch==2.13.0)")
    x = ALL_BITS.view(bfloat16)
    t = interop.to_torch(x)
    assert t.dtype == torch.bfloat16 and t.data_ptr() == x.ctypes.data
    np.testing.assert_array_equal(t.view(torch.int16).numpy().view(np.uint16), ALL_BITS)
    # torch's own value of each pattern (finite ones) equals the exact float32 widening
    finite = ~np.isnan(t.float().numpy())
    widened = (ALL_BITS.astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_array_equal(t.float().numpy()[finite], widened[finite])

    tt = torch.arange(20, dtype=torch.float32).reshape(4, 5).to(torch.bfloat16)
    v = tt[1:, ::2]
    y = interop.from_torch(v)
    assert y.dtype == np.dtype(bfloat16) and y.shape == (3, 3)
    assert y.ctypes.data == v.data_ptr()
    np.testing.assert_array_equal(y.astype(np.float32), v.float().numpy())
    y[0, 0] = 99
    assert float(tt[1, 0]) == 99.0
    y2 = interop.from_dlpack(tt)        # the generic path reads torch's __dlpack__ too
    assert y2.ctypes.data == tt.data_ptr()


def test_torch_from_dlpack_and_errors():
    torch = pytest.importorskip("torch", reason="torch not installed (pip install torch==2.13.0)")
    x = np.array([[1.5, -2.0, 3.0]], dtype=bfloat16)
    t = torch.from_dlpack(interop.to_dlpack(x.T))
    assert t.stride() == (1, 3) and t.tolist() == [[1.5], [-2.0], [3.0]]
    with pytest.raises(TypeError, match="torch.float32"):
        interop.from_torch(torch.ones(2))
    with pytest.raises(TypeError, match="float32"):
        interop.from_dlpack(torch.ones(2))
    g = torch.ones(2, dtype=torch.bfloat16, requires_grad=True)
    assert interop.from_torch(g).tolist() == [1.0, 1.0]
    ro = np.ones(2, bfloat16)
    ro.flags.writeable = False
    t = interop.to_torch(ro)               # copied: torch tensors are writable
    assert t.data_ptr() != ro.ctypes.data and t.tolist() == [1.0, 1.0]


def test_negated_torch_views_are_refused():
    """torch's lazily negated view keeps the values before negation in memory, and its
    __dlpack__ exports that memory (np.from_dlpack of a float32 one reads [1, 1] for [-1, -1]):
    refused, as t.numpy() refuses it; the resolved tensor imports with its values."""
    torch = pytest.importorskip("torch", reason="torch not installed (pip install torch==2.13.0)")
    t = torch.tensor([1.5, -2.0], dtype=torch.bfloat16)._neg_view()
    assert t.is_neg() and t.tolist() == [-1.5, 2.0]
    for f in (interop.from_torch, interop.from_dlpack):
        with pytest.raises(BufferError, match="negated view"):
            f(t)
    assert interop.from_torch(t.resolve_neg()).astype(np.float32).tolist() == [-1.5, 2.0]
    for bad in ("x", 1, 0.0):
        with pytest.raises(TypeError, match="copy must be"):
            interop.from_dlpack(np.ones(2, bfloat16), copy=bad)
    assert interop.from_dlpack(np.ones(2, bfloat16), copy=np.True_).tolist() == [1.0, 1.0]


def test_to_torch_negative_strides_are_copied():
    """torch has no negative strides (its from_dlpack aborts the process on one): such views are
    copied, other strides shared."""
    torch = pytest.importorskip("torch", reason="torch not installed (pip install torch==2.13.0)")
    x = np.arange(24, dtype=np.float32).reshape(4, 6).astype(bfloat16)
    for v in (x[::-1], x[:, ::-2], x[::-1].T, x.ravel()[::-3], x[:0, ::-1]):
        t = interop.to_torch(v)
        assert t.data_ptr() != v.ctypes.data or v.size == 0
        assert t.shape == v.shape and t.float().numpy().tolist() == v.astype(np.float32).tolist()
    for v in (x[:, ::2], x.T, x[1:, 2:]):
        t = interop.to_torch(v)
        assert t.data_ptr() == v.ctypes.data and t.float().numpy().tolist() == v.astype(np.float32).tolist()


def test_to_torch_odd_byte_strides_are_copied():
    """A bfloat16 field of a packed structured array has a stride of 3 bytes, which DLPack
    (strides in elements) cannot say: to_torch refused it with a BufferError; it is copied now,
    as to_jax copies it."""
    torch = pytest.importorskip("torch", reason="torch not installed (pip install torch==2.13.0)")
    s = np.zeros(4, [("a", "u1"), ("b", bfloat16)])
    s["b"] = np.array([1.5, -2.0, 0.1, 3.0], np.float32).astype(bfloat16)
    t = interop.to_torch(s["b"])
    assert t.dtype == torch.bfloat16
    assert t.view(torch.int16).numpy().view(np.uint16).tolist() == s["b"].view(np.uint16).tolist()
    assert t.data_ptr() != s["b"].ctypes.data


def test_byte_swapped_arrays_and_non_arrays():
    """DLPack has native byte order only: a swapped bfloat16 array is exported as a native copy
    (it was refused as "not bfloat16"); a non-array is refused naming its type."""
    torch = pytest.importorskip("torch", reason="torch not installed (pip install torch==2.13.0)")
    x = np.array([1.5, -2.0, 0.1], bfloat16)
    swapped = x.astype(x.dtype.newbyteorder())
    assert interop.to_torch(swapped).view(torch.int16).numpy().view(np.uint16).tolist() == \
        x.view(np.uint16).tolist()
    with pytest.raises(TypeError, match="expects a numpy array, got list"):
        interop.to_torch([1.0, 2.0])


def test_byte_swapped_ml_dtypes_arrays_are_read():
    """ml_dtypes' bfloat16 in the other byte order is read as a native copy, as ours is (the
    helpers compared its dtype to the native one and refused it: "expects a bfloat16 array,
    got dtype dtype(bfloat16)")."""
    torch = pytest.importorskip("torch", reason="torch not installed (pip install torch==2.13.0)")
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes not installed")
    from bfloat16_dtype import numerics

    x = np.array([1.5, -2.0, 0.1], bfloat16)
    theirs = np.dtype(ml_dtypes.bfloat16)
    swapped = x.astype(theirs.newbyteorder())
    assert interop.to_torch(swapped).view(torch.int16).numpy().view(np.uint16).tolist() == \
        x.view(np.uint16).tolist()
    assert interop.from_dlpack(swapped).view(np.uint16).tolist() == x.view(np.uint16).tolist()
    assert interop.from_dlpack(interop.to_dlpack(swapped)).dtype == np.dtype(bfloat16)
    assert float(numerics.mean(swapped)) == float(numerics.mean(x))
    out = np.empty((), theirs.newbyteorder())                  # and written, as out=
    assert numerics.mean(x, out=out) is out
    assert out.astype(np.float32) == np.float32(numerics.mean(x))
    with pytest.raises(TypeError, match="expects a bfloat16 array"):
        interop.to_torch(np.ones(2, np.dtype(np.float16).newbyteorder()))


def test_to_jax_any_strides():
    """JAX reads compact (possibly transposed) buffers only: other views are copied first."""
    pytest.importorskip("jax", reason="jax not installed (pip install jax)")
    x = np.arange(24, dtype=np.float32).reshape(4, 6).astype(bfloat16)
    views = (x, x.T, x[::-1], x[:, ::-2], x[1:, ::2].T, x.ravel()[::-3], np.broadcast_to(x[:1], (3, 6)))
    for v in views:
        j = interop.to_jax(v)
        assert j.shape == v.shape
        assert np.asarray(j.astype("float32")).tolist() == v.astype(np.float32).tolist()


def test_jax_both_ways():
    jax = pytest.importorskip("jax", reason="jax not installed (pip install jax)")
    import jax.numpy as jnp
    x = np.array([1.5, -2.0, 3.0], dtype=bfloat16)
    j = interop.to_jax(x)
    assert j.dtype == jnp.bfloat16 and np.asarray(j.astype(jnp.float32)).tolist() == [1.5, -2.0, 3.0]
    with jax.default_device(jax.devices("cpu")[0]):  # (where jax has a GPU, arrays go there by default)
        a = jnp.arange(4, dtype=jnp.bfloat16)
    y = interop.from_jax(a)
    assert y.dtype == np.dtype(bfloat16) and y.astype(np.float32).tolist() == [0, 1, 2, 3]
    assert y.ctypes.data == a.unsafe_buffer_pointer() and not y.flags.writeable
    mine = np.ones(3, bfloat16)                     # a NumPy array handed over stays writable
    assert not interop.from_jax(mine).flags.writeable and mine.flags.writeable
    z = np.asarray(a, dtype=bfloat16)       # through ml_dtypes' bfloat16 and the bit-copy cast
    assert z.dtype == np.dtype(bfloat16) and z.astype(np.float32).tolist() == [0, 1, 2, 3]
    del jax


_NUMPY_DLPACK_SCRIPT = r"""
import numpy as np
from bfloat16_dtype import bfloat16
x = np.array([1.5, -2.0, np.nan], bfloat16)
try:
    np.from_dlpack(x)
    print("taken before registration")
except (BufferError, TypeError):
    pass
np.dtypes.register_dlpack_dtype((4, 16), np.dtype(bfloat16))
y = np.from_dlpack(x)
assert y.dtype == np.dtype(bfloat16) and np.shares_memory(x, y)
assert y.view(np.uint16).tolist() == x.view(np.uint16).tolist()
print("ok")
"""


def test_numpys_own_dlpack_takes_the_dtype_once_registered():
    """NumPy 2.5's np.dtypes.register_dlpack_dtype((4, 16), dtype) (which the package leaves to
    the user, README "DLPack"): before it NumPy refuses the dtype, after it np.from_dlpack shares
    the memory with the bits kept. In a process of its own (the registration is global)."""
    if not hasattr(np.dtypes, "register_dlpack_dtype"):
        pytest.skip("NumPy before 2.5 has no np.dtypes.register_dlpack_dtype")
    proc = subprocess.run([sys.executable, "-c", _NUMPY_DLPACK_SCRIPT], capture_output=True,
                          text=True, timeout=120, cwd=TESTS_DIR)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", (proc.stdout, proc.stderr[-2000:])


def test_from_jax_stays_read_only():
    """JAX arrays are immutable: neither the imported array, its base nor a view of it can be
    made writable again (NumPy's np.asarray of a float32 JAX array refuses likewise)."""
    jax = pytest.importorskip("jax", reason="jax not installed (pip install jax)")
    import jax.numpy as jnp
    with jax.default_device(jax.devices("cpu")[0]):
        a = jnp.arange(4, dtype=jnp.bfloat16)
    y = interop.from_jax(a)
    for v in (y, y[1:], y.view()):
        with pytest.raises(ValueError, match="WRITEABLE"):
            v.flags.writeable = True
    assert not isinstance(y.base, np.ndarray)
    assert np.asarray(a.astype(jnp.float32)).tolist() == [0, 1, 2, 3]


def test_from_jax_of_a_deleted_array_says_so():
    """A deleted JAX array: the error says it is deleted (JAX's __dlpack_device__ failed with a
    TypeError about None first); an array imported before the delete stays valid."""
    jax = pytest.importorskip("jax", reason="jax not installed (pip install jax)")
    import jax.numpy as jnp
    with jax.default_device(jax.devices("cpu")[0]):
        a = jnp.arange(4, dtype=jnp.bfloat16)
    kept = interop.from_jax(a)
    a.delete()
    with pytest.raises(RuntimeError, match="has been deleted"):
        interop.from_jax(a)
    with pytest.raises(RuntimeError, match="has been deleted"):
        interop.from_dlpack(a)
    assert kept.astype(np.float32).tolist() == [0, 1, 2, 3]


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_import_random_layouts_match_as_strided(data):
    """Any shape, element strides (negative and zero included) and byte offset inside a buffer:
    the imported array reads exactly the elements numpy's as_strided reads."""
    ndim = data.draw(st.integers(0, 3))
    shape = data.draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim))
    strides = data.draw(st.lists(st.integers(-6, 6), min_size=ndim, max_size=ndim))
    lo = sum(s * (n - 1) for s, n in zip(strides, shape) if s < 0 and n > 0)
    hi = sum(s * (n - 1) for s, n in zip(strides, shape) if s > 0 and n > 0)
    start = -lo + data.draw(st.integers(0, 3))            # first element, in elements
    buf = np.arange(start + hi + 4, dtype=np.uint16) * np.uint16(7)
    p = Producer(buf, shape=shape, strides=strides, byte_offset=2 * start)
    y = interop.from_dlpack(p.capsule())
    want = np.lib.stride_tricks.as_strided(buf[start:], shape=shape, strides=[2 * s for s in strides])
    assert y.shape == tuple(shape)
    np.testing.assert_array_equal(y.view(np.uint16), want)
    del y, want                       # the last reference: the deleter runs now
    assert p.deleted == 1
