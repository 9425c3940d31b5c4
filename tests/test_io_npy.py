"""save/load: .npy files that bring bfloat16 back, and stay plain uint16 .npy files for np.load."""
import io as pyio
import os

import numpy as np
import pytest

from bfloat16_dtype import bfloat16, io

ALL_BITS = np.arange(65536, dtype=np.uint32).astype(np.uint16)


def test_round_trip_all_bit_patterns(tmp_path):
    x = ALL_BITS.view(bfloat16).reshape(256, 256)
    p = tmp_path / "x.npy"
    io.save(p, x)
    y = io.load(p)
    assert y.dtype == np.dtype(bfloat16) and y.shape == x.shape
    np.testing.assert_array_equal(y.view(np.uint16), ALL_BITS.reshape(256, 256))
    # plain np.load sees an ordinary little-endian uint16 file: the documented .view route
    plain = np.load(p)
    assert plain.dtype == np.dtype("<u2")
    np.testing.assert_array_equal(plain.view(bfloat16).view(np.uint16), ALL_BITS.reshape(256, 256))
    m = io.load(p, mmap_mode="r")
    assert m.dtype == np.dtype(bfloat16) and not m.flags.writeable
    np.testing.assert_array_equal(m.view(np.uint16), ALL_BITS.reshape(256, 256))


def test_non_contiguous_big_endian_scalar_and_file_objects():
    x = ALL_BITS.view(bfloat16).reshape(256, 256).T[::3, 1::2]
    for arr in (x, np.array(1.5, bfloat16), np.zeros((0, 3), bfloat16),
                x.astype(x.dtype.newbyteorder(">"))):
        f = pyio.BytesIO()
        io.save(f, arr)
        f.seek(0)
        y = io.load(f)
        assert y.dtype == np.dtype(bfloat16) and y.shape == arr.shape
        np.testing.assert_array_equal(y.astype(np.float32), arr.astype(np.float32))


@pytest.mark.parametrize("shape", [(3, 5), (2, 3, 4), (1, 4), (4,)])
def test_fortran_order_is_kept_like_np_save(tmp_path, shape):
    """np.save writes a Fortran-ordered array in its order and np.load gives one back; io.save
    copied it to C order. The same bits and shape either way, and the order np.save gives."""
    bits = np.arange(np.prod(shape), dtype=np.uint16).reshape(shape) * 97 + 0x3F00
    x = np.asfortranarray(bits).view(bfloat16)
    io.save(tmp_path / "f.npy", x)
    np.save(tmp_path / "ref.npy", np.asfortranarray(bits))
    ref = np.load(tmp_path / "ref.npy")
    for mmap_mode in (None, "r"):
        r = io.load(tmp_path / "f.npy", mmap_mode=mmap_mode)
        assert r.dtype == np.dtype(bfloat16) and r.shape == shape
        assert r.flags.f_contiguous == ref.flags.f_contiguous
        assert r.flags.c_contiguous == ref.flags.c_contiguous
        np.testing.assert_array_equal(r.view(np.uint16), bits)
    # the raw data after the header is in Fortran order, as np.save's
    raw, ref_raw = (tmp_path / "f.npy").read_bytes(), (tmp_path / "ref.npy").read_bytes()
    assert raw[-bits.nbytes:] == ref_raw[-bits.nbytes:]


def test_other_arrays_pass_through_and_unmarked_files_load_as_numpy(tmp_path):
    p = tmp_path / "f.npy"
    io.save(p, np.arange(3.0))
    assert io.load(p).dtype == np.float64
    np.save(p, np.arange(3, dtype=np.uint16))
    assert io.load(p).dtype == np.uint16            # no marker: not reinterpreted
    with pytest.raises(ValueError):
        io.save(p, np.array([object()]))            # np.save without pickles refuses objects


def test_ml_dtypes_arrays_are_saved_as_bfloat16(tmp_path):
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes not installed")
    names = ("bfloat16", np.dtype(bfloat16).char)  # the rule hands both to ml_dtypes
    before = {k: np.sctypeDict.get(k) for k in names}
    try:
        y = np.array([1.5, -2.0], dtype=ml_dtypes.bfloat16)
        io.save(tmp_path / "m.npy", y)
        z = io.load(tmp_path / "m.npy")
        assert z.dtype == np.dtype(bfloat16) and z.view(np.uint16).tolist() == [0x3FC0, 0xC000]
    finally:
        np.sctypeDict.update(before)


def test_savez_mixed_arrays(tmp_path):
    p = tmp_path / "m.npz"
    w = ALL_BITS.view(bfloat16).reshape(16, 4096)
    io.savez(p, w=w, b=np.arange(3.0), s=np.array(1.5, bfloat16))
    out = io.load(p)
    assert set(out) == {"w", "b", "s"}
    assert out["w"].dtype == np.dtype(bfloat16)
    np.testing.assert_array_equal(out["w"].view(np.uint16), ALL_BITS.reshape(16, 4096))
    assert out["b"].dtype == np.float64 and out["b"].tolist() == [0.0, 1.0, 2.0]
    assert out["s"].shape == () and float(out["s"]) == 1.5
    with np.load(p) as plain:                  # plain NumPy reads it: the bits as uint16
        np.testing.assert_array_equal(plain["w"], ALL_BITS.reshape(16, 4096))
    # arrays by position: arr_0, arr_1, ... as np.savez names them
    x = np.array([1.5, -2.0], bfloat16)
    io.savez(tmp_path / "pos.npz", x, np.arange(2.0), k=x)
    np.savez(tmp_path / "ref.npz", x.astype(np.float32), np.arange(2.0), k=x.astype(np.float32))
    got, ref = io.load(tmp_path / "pos.npz"), np.load(tmp_path / "ref.npz")
    assert sorted(got) == sorted(ref.files) == ["arr_0", "arr_1", "k"]
    assert got["arr_0"].dtype == np.dtype(bfloat16) and got["arr_0"].tolist() == [1.5, -2.0]
    assert got["arr_1"].tolist() == [0.0, 1.0]
    with pytest.raises(ValueError, match="arr_0"):
        io.savez(tmp_path / "clash.npz", x, arr_0=x)
    io.savez(tmp_path / "empty.npz")               # no arrays: an empty zip, read as {}
    empty = io.load(tmp_path / "empty.npz")
    assert type(empty) is dict and empty == {} and len(np.load(tmp_path / "empty.npz").files) == 0


def test_save_adds_the_extension_and_load_refuses_w_plus(tmp_path):
    """As np.save/np.savez: a path without .npy/.npz gets it; mmap_mode='w+' would truncate the
    file NumPy is asked to read, so load refuses it."""
    x = np.array([1.5, -2.0], bfloat16)
    io.save(tmp_path / "a", x)
    io.savez(str(tmp_path / "b"), x=x)
    np.save(tmp_path / "c", np.ones(2))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npy", "b.npz", "c.npy"]
    assert io.load(tmp_path / "a.npy").tobytes() == x.tobytes()
    assert io.load(tmp_path / "b.npz")["x"].tobytes() == x.tobytes()
    with pytest.raises(ValueError, match="mmap_mode"):
        io.load(tmp_path / "a.npy", mmap_mode="w+")
    assert io.load(tmp_path / "a.npy").tobytes() == x.tobytes()        # still there
    assert io.load(tmp_path / "a.npy", mmap_mode="r").tobytes() == x.tobytes()


def test_bad_file_arguments_raise_type_error(tmp_path):
    """Neither a path nor a file object: a TypeError naming the argument (not an
    AttributeError from inside); a bytes path works as for np.save."""
    x = np.ones(3, bfloat16)
    for call in (lambda: io.load(None), lambda: io.load(3), lambda: io.save(None, x),
                 lambda: io.savez(1.5, a=x)):
        with pytest.raises(TypeError, match="file must be a path or a file object"):
            call()
    path = os.fsencode(tmp_path / "b")
    io.save(path, x)
    got = io.load(path + b".npy")
    assert got.dtype == bfloat16 and got.tolist() == [1.0, 1.0, 1.0]


def test_bytes_paths(tmp_path):
    """Every writer and reader takes a bytes path, as np.save and np.load do: savez once handed
    it to zipfile, which took it for a file object (AttributeError), and save passed it to
    np.save with other arrays, whose suffix check fails on bytes. The files are read back with
    plain NumPy."""
    x = np.array([1.5, -2.0], bfloat16)
    io.savez(os.fsencode(tmp_path / "z"), x=x, f=np.arange(3.0))
    with np.load(tmp_path / "z.npz") as plain:
        assert plain["x"].tolist() == [0x3FC0, 0xC000] and plain["f"].tolist() == [0.0, 1.0, 2.0]
    out = io.load(os.fsencode(tmp_path / "z.npz"))
    assert out["x"].dtype == bfloat16 and out["x"].tobytes() == x.tobytes()
    io.save(os.fsencode(tmp_path / "f"), np.arange(3.0))
    assert np.load(tmp_path / "f.npy").tolist() == [0.0, 1.0, 2.0]
    assert io.load(os.fsencode(tmp_path / "f.npy")).tolist() == [0.0, 1.0, 2.0]


def test_structured_arrays_pass_through_with_v2_fields(tmp_path):
    """io.save hands a structured array to np.save as it is (only plain bfloat16 arrays get the
    marked <u2 form), so a bfloat16 field comes back as V2; viewing with the dtype restores it
    (README, Files)."""
    sd = np.dtype([("a", bfloat16), ("b", np.int32)])
    x = np.array([(1.5, 2), (-0.1, 3)], sd)
    io.save(tmp_path / "s.npy", x)
    y = io.load(tmp_path / "s.npy")
    assert y.dtype["a"] == np.dtype("V2")
    back = y.view(sd)
    assert back["a"].view(np.uint16).tolist() == x["a"].view(np.uint16).tolist()
    assert back["b"].tolist() == [2, 3]


def test_buffer_readers_refuse_bfloat16_and_fromfile_reads_it(tmp_path):
    """NumPy gives a user dtype no buffer format: memoryview(x) and np.rec.fromfile (which reads
    into such a buffer) raise ValueError; np.fromfile(...).view(np.recarray) reads the records
    (README, Differences from float16)."""
    sd = np.dtype([("a", bfloat16), ("b", np.int32)])
    x = np.array([(1.5, 2), (2.5, 3)], sd)
    x.tofile(tmp_path / "r.bin")
    with pytest.raises(ValueError):
        memoryview(np.ones(2, bfloat16))
    with pytest.raises(ValueError, match="buffer"):
        np.rec.fromfile(tmp_path / "r.bin", dtype=sd)
    r = np.fromfile(tmp_path / "r.bin", dtype=sd).view(np.recarray)
    assert r.a.astype(np.float32).tolist() == [1.5, 2.5] and r.b.tolist() == [2, 3]
    # the type character takes no byte-order prefix (NumPy looks the whole string up)
    with pytest.raises(TypeError):
        np.dtype(">E")
    assert np.dtype(bfloat16).newbyteorder(">").byteorder == ">"
    # a structured dtype's repr names the field's type only: the byte order does not show
    # (NumPy 2.0 printed such a field as '<V2' / '>V2' instead)
    swapped = np.dtype([("a", np.dtype(bfloat16).newbyteorder(">"))])
    native = repr(np.dtype([("a", bfloat16)]))
    if "bfloat16" in native:
        assert repr(swapped) == native
    else:
        assert native == "dtype([('a', '<V2')])" and repr(swapped) == "dtype([('a', '>V2')])"
