"""The zarr v3 data type for bfloat16: store, reopen, fill values, codecs, raw chunk bytes."""
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from bfloat16_dtype import bfloat16, io

from conftest import TESTS_DIR

zarr = pytest.importorskip("zarr", reason="zarr not installed (pip install 'zarr>=3.1')")

ALL_BITS = np.arange(65536, dtype=np.uint32).astype(np.uint16)


@pytest.fixture(scope="module")
def zdtype():
    return io.register_zarr_dtype()


def test_store_and_reopen_all_bit_patterns(tmp_path, zdtype):
    x = ALL_BITS.view(bfloat16).reshape(256, 256)
    z = zarr.create_array(str(tmp_path / "a.zarr"), shape=x.shape, chunks=(64, 100), dtype=bfloat16)
    z[:] = x
    meta = json.loads((tmp_path / "a.zarr" / "zarr.json").read_text())
    assert meta["data_type"] == "bfloat16" and meta["zarr_format"] == 3
    r = zarr.open_array(str(tmp_path / "a.zarr"))
    assert r.dtype == np.dtype(bfloat16)
    np.testing.assert_array_equal(r[:].view(np.uint16), ALL_BITS.reshape(256, 256))
    np.testing.assert_array_equal(r[10:70, 90:110].view(np.uint16), ALL_BITS.reshape(256, 256)[10:70, 90:110])


def test_raw_chunk_is_little_endian_bits(tmp_path, zdtype):
    x = np.array([1.0, -2.0, 0.5, 3.0], dtype=bfloat16)
    z = zarr.create_array(str(tmp_path / "r.zarr"), shape=(4,), chunks=(4,), dtype=bfloat16,
                          compressors=None)
    z[:] = x
    raw = (tmp_path / "r.zarr" / "c" / "0").read_bytes()
    assert raw == np.array([0x3F80, 0xC000, 0x3F00, 0x4040], "<u2").tobytes()


def test_big_endian_codec(tmp_path, zdtype):
    from zarr.codecs import BytesCodec
    x = ALL_BITS[:1000].view(bfloat16)
    z = zarr.create_array(str(tmp_path / "b.zarr"), shape=x.shape, chunks=(300,), dtype=bfloat16,
                          serializer=BytesCodec(endian="big"), compressors=None)
    z[:] = x
    raw = (tmp_path / "b.zarr" / "c" / "0").read_bytes()
    assert raw == ALL_BITS[:300].astype(">u2").tobytes()
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "b.zarr"))[:].view(np.uint16), ALL_BITS[:1000])


@pytest.mark.parametrize("fill, json_value, bits", [
    (0.0, 0.0, 0x0000), (1.5, 1.5, 0x3FC0), (float("nan"), "NaN", 0x7FC0),
    (float("-inf"), "-Infinity", 0xFF80), (float("inf"), "Infinity", 0x7F80),
])
def test_fill_values(tmp_path, zdtype, fill, json_value, bits):
    z = zarr.create_array(str(tmp_path / "f.zarr"), shape=(5,), chunks=(2,), dtype=bfloat16,
                          fill_value=fill)
    meta = json.loads((tmp_path / "f.zarr" / "zarr.json").read_text())
    assert meta["fill_value"] == json_value
    r = zarr.open_array(str(tmp_path / "f.zarr"))[:]       # nothing written: all fill
    assert r.dtype == np.dtype(bfloat16) and r.view(np.uint16).tolist() == [bits] * 5
    del z


@pytest.mark.parametrize("order", ["=", ">"])
@pytest.mark.parametrize("fill, chunk", [(0.0, -0.0), (-0.0, 0.0), (float("nan"), 0xFFC1),
                                         (1.5, 1.5)])
def test_chunks_of_the_other_zero_or_another_nan_are_written(tmp_path, zdtype, fill, chunk, order):
    """zarr leaves out a chunk equal to the fill value: a chunk whose bits differ from the
    fill's (-0.0 under 0, a NaN of another payload) is written and reads back as it was;
    one with the fill's bits reads back the same either way. Big-endian arrays too (their
    -0.0 chunks were compared by value and left out)."""
    x = np.array([1.0, 2.0, 3.0, 4.0], np.float32).astype(bfloat16)
    if isinstance(chunk, int):
        x[2:] = np.array(chunk, np.uint16).view(bfloat16)
    else:
        x[2:] = chunk
    dt = np.dtype(bfloat16).newbyteorder(order)
    z = zarr.create_array(str(tmp_path / "z.zarr"), shape=(4,), chunks=(2,), dtype=dt,
                          fill_value=fill)
    z[:] = x.astype(dt)
    r = zarr.open_array(str(tmp_path / "z.zarr"))[:].astype(bfloat16)
    assert r.view(np.uint16).tolist() == x.view(np.uint16).tolist()
    written = sorted(p.name for p in (tmp_path / "z.zarr" / "c").iterdir())
    same = x[2:].view(np.uint16)[0] == np.array(fill, np.float32).astype(bfloat16).view(np.uint16)
    assert written == (["0"] if same else ["0", "1"])


@pytest.mark.parametrize("fill, chunk", [(0.0, 0x8000), (-0.0, 0x0000), (float("nan"), 0xFFC1),
                                         (0.0, 0x7F81)])
@pytest.mark.parametrize("chunks", [4, 2])
def test_chunks_from_ml_dtypes_arrays_keep_their_bits(tmp_path, zdtype, fill, chunk, chunks):
    """zarr hands a JAX/ml_dtypes bfloat16 array's chunks on uncast (the dtype names match): a
    -0.0 chunk under a 0.0 fill compared equal by value and was left out (read back +0.0); a
    signalling NaN warned "invalid value". Such chunks compare by their bits too."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bits = np.full(4, chunk, np.uint16)
    z = zarr.create_array(str(tmp_path / "m.zarr"), shape=(4,), chunks=(chunks,), dtype=bfloat16,
                          fill_value=fill)
    with np.errstate(all="raise"):
        z[:] = bits.view(ml_dtypes.bfloat16)
    r = zarr.open_array(str(tmp_path / "m.zarr"))[:]
    assert r.view(np.uint16).tolist() == bits.tolist()
    assert len(list((tmp_path / "m.zarr" / "c").iterdir())) == 4 // chunks


_UNPICKLE_SCRIPT = r"""
import pickle, sys
import numpy as np
z = pickle.loads(sys.stdin.buffer.read())      # bfloat16_dtype and zarr not yet imported
print(z.dtype, z[:].view(np.uint16).tolist())
"""


def test_zarr_arrays_pickle_into_another_process(tmp_path, zdtype):
    """A zarr array of bfloat16 pickles with its data type by name (dask's process scheduler and
    distributed workers receive it so; the class was local to a function and failed there), and
    unpickles in a fresh interpreter that has imported neither package."""
    import pickle
    z = zarr.create_array(str(tmp_path / "p.zarr"), shape=(3,), chunks=(2,), dtype=bfloat16)
    z[:] = np.array([1.5, -0.0, 3.0], np.float32).astype(bfloat16)
    blob = pickle.dumps(z)
    assert pickle.loads(blob).metadata.data_type is not None
    proc = subprocess.run([sys.executable, "-c", _UNPICKLE_SCRIPT], input=blob,
                          capture_output=True, timeout=120, cwd=TESTS_DIR)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert proc.stdout.decode().split() == ["bfloat16", "[16320,", "32768,", "16448]"]


def test_nan_payload_fill_value_json(zdtype):
    d = zdtype()
    nan = np.array(0x7FC1, np.uint16).view(bfloat16)[()]
    assert d.to_json_scalar(nan, zarr_format=3) == "0x7fc1"
    back = d.from_json_scalar("0x7fc1", zarr_format=3)
    assert np.array(back, bfloat16).view(np.uint16) == 0x7FC1
    with pytest.raises(TypeError, match="fill value"):
        d.from_json_scalar("banana", zarr_format=3)


def test_zarr_v2_is_refused(tmp_path, zdtype):
    with pytest.raises(ValueError, match="zarr_format=3"):
        zarr.create_array(str(tmp_path / "v2.zarr"), shape=(2,), dtype=bfloat16, zarr_format=2)


# Registration without calling register_zarr_dtype, in fresh interpreters (README "Interop").
AUTO = textwrap.dedent("""
    import sys, tempfile, os
    {first}
    {second}
    import numpy as np
    from bfloat16_dtype import bfloat16, interop
    assert "zarr" not in interop._pending
    d = tempfile.mkdtemp()
    z = zarr.create_array(os.path.join(d, "a.zarr"), shape=(3,), chunks=(2,), dtype=bfloat16)
    z[:] = np.array([1.5, -2.0, 3.0], bfloat16)
    r = zarr.open_array(os.path.join(d, "a.zarr"))[:]
    assert r.dtype == np.dtype(bfloat16), r.dtype
    assert r.view(np.uint16).tolist() == [0x3FC0, 0xC000, 0x4040], r.view(np.uint16)
    from bfloat16_dtype import io
    from zarr.core.dtype import data_type_registry
    assert io.register_zarr_dtype() is data_type_registry.get("bfloat16")   # explicit call: same class
    print("ok")
""")


def _run(code):
    res = subprocess.run([sys.executable, "-c", code], cwd=TESTS_DIR, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


@pytest.mark.parametrize("first, second", [
    ("import bfloat16_dtype", "import zarr"),      # the import hook registers after zarr loads
    ("import zarr", "import bfloat16_dtype"),      # registered at our import
])
def test_registered_automatically_in_either_order(first, second):
    assert _run(AUTO.format(first=first, second=second)) == "ok"


def test_importing_the_package_does_not_import_zarr():
    assert _run("import sys, bfloat16_dtype; print('zarr' in sys.modules)") == "False"
