"""safetensors without torch: round trips, strict header checks (hand-made and fuzzed), and
files exchanged with the real safetensors library and torch."""
import json
import os
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bfloat16_dtype import bfloat16, io

ALL_BITS = np.arange(65536, dtype=np.uint32).astype(np.uint16)


def make_file(header: dict, data: bytes, pad_to=8) -> bytes:
    text = json.dumps(header).encode()
    text += b" " * (-(8 + len(text)) % pad_to)
    return struct.pack("<Q", len(text)) + text + data


def write(tmp_path, blob: bytes, name="f.safetensors"):
    p = tmp_path / name
    p.write_bytes(blob)
    return p


def test_round_trip_all_bit_patterns_and_other_dtypes(tmp_path):
    tensors = {
        "bf16": ALL_BITS.view(bfloat16).reshape(256, 256),
        "f32": np.linspace(-1, 1, 7, dtype=np.float32),
        "i64": np.arange(-3, 3, dtype=np.int64).reshape(2, 3),
        "bool": np.array([True, False]),
        "f16": np.array([1.5, -0.0], np.float16),
        "empty": np.zeros((0, 4), bfloat16),
        "scalar": np.array(2.5, dtype=bfloat16),
        "strided": ALL_BITS.view(bfloat16)[::7][:100],
        "big_endian": np.arange(4, dtype=">i4"),
        "bf16_big_endian": ALL_BITS[:50].view(bfloat16).astype(np.dtype(bfloat16).newbyteorder(">")),
    }
    p = tmp_path / "t.safetensors"
    io.save_safetensors(tensors, p, metadata={"format": "np"})
    out, meta = io.load_safetensors(p, with_metadata=True)
    assert meta == {"format": "np"}
    assert set(out) == set(tensors)
    for k, v in tensors.items():
        assert out[k].shape == v.shape, k
        if v.dtype.type is bfloat16:
            assert out[k].dtype == np.dtype(bfloat16)
            np.testing.assert_array_equal(out[k].view(np.uint16), v.astype(bfloat16).view(np.uint16))
        else:
            assert out[k].dtype == v.dtype.newbyteorder("<")
            np.testing.assert_array_equal(out[k], v)
    mm = io.load_safetensors(p, mmap=True)
    np.testing.assert_array_equal(mm["bf16"].view(np.uint16), tensors["bf16"].view(np.uint16))
    assert not mm["bf16"].flags.writeable


def test_layout_is_the_documented_format(tmp_path):
    """Read our file with an independent parser written from the format description."""
    p = tmp_path / "t.safetensors"
    io.save_safetensors({"a": np.array([1.0, -2.0], bfloat16)}, p)
    blob = p.read_bytes()
    n = struct.unpack("<Q", blob[:8])[0]
    assert (8 + n) % 8 == 0
    header = json.loads(blob[8:8 + n])
    assert header == {"a": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}}
    assert blob[8 + n:] == struct.pack("<HH", 0x3F80, 0xC000)


GOOD = {"a": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]},
        "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}}


@pytest.mark.parametrize("blob, msg", [
    (b"", "too short"),
    (b"\x05\x00\x00", "too short"),
    (struct.pack("<Q", 10**9), "exceeds the limit"),
    (struct.pack("<Q", 50) + b"{}", "runs past the end"),
    (struct.pack("<Q", 2) + b"[]", r"start with '\{'"),
    (struct.pack("<Q", 4) + b"{\xff\xfe}", "not UTF-8"),
    (struct.pack("<Q", 5) + b"{'a'}", "not valid JSON"),
    (struct.pack("<Q", 13) + b'{"a":1,"a":1}', "duplicate key"),
    (make_file(GOOD, b"\0" * 11), r"cover 12 bytes .* holds 11 \(truncated"),
    (make_file(GOOD, b"\0" * 13), "cover 12 bytes but the data section holds 13"),
    (make_file({"a": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 4]}}, b"\0" * 4), "needs 6"),
    (make_file({"a": {"dtype": "XX", "shape": [1], "data_offsets": [0, 2]}}, b"\0" * 2), "unknown"),
    (make_file({"a": {"dtype": "BF16", "shape": [-1], "data_offsets": [0, 2]}}, b"\0" * 2), "non-negative"),
    (make_file({"a": {"dtype": "BF16", "shape": [1.0], "data_offsets": [0, 2]}}, b"\0" * 2), "non-negative"),
    (make_file({"a": {"dtype": "BF16", "shape": [1], "data_offsets": [2, 0]}}, b"\0" * 2), "end before"),
    (make_file({"a": {"dtype": "BF16", "shape": [1], "data_offsets": [0]}}, b"\0" * 2), "two non-negative"),
    (make_file({"a": {"dtype": "BF16", "shape": [1]}}, b"\0" * 2), "must have dtype, shape and data_offsets"),
    (make_file({"a": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]},
                "b": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}}, b"\0" * 2), "overlaps"),
    (make_file({"a": {"dtype": "BF16", "shape": [1], "data_offsets": [2, 4]}}, b"\0" * 4), "gap at byte 0"),
    (make_file({"a": {"dtype": "BF16", "shape": [2**62, 2**62], "data_offsets": [0, 2]}}, b"\0" * 2), "more elements"),
    (make_file({"a": {"dtype": "BF16", "shape": [2**62, 2**62, 0], "data_offsets": [0, 0]}}, b""), "more elements"),
    (make_file({"a": {"dtype": "BF16", "shape": [2**64, 0], "data_offsets": [0, 0]}}, b""), "more elements"),
    (make_file({"\ud800": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}}, b"\0" * 2), "not valid Unicode"),
    (make_file({"__metadata__": {"k": 1}}, b""), "__metadata__"),
    (make_file({"a": {"dtype": ["BF16"], "shape": [1], "data_offsets": [0, 2]}}, b"\0" * 2), "unknown"),
    (make_file({"a": {"dtype": {}, "shape": [1], "data_offsets": [0, 2]}}, b"\0" * 2), "unknown"),
    (struct.pack("<Q", 200_002) + b"[" * 100_001 + b"]" * 100_001, r"start with '\{'"),
    (struct.pack("<Q", 200_006) + b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nests too deeply"),
])
def test_bad_files_raise_clear_errors(tmp_path, blob, msg):
    p = write(tmp_path, blob)
    with pytest.raises(ValueError, match=msg) as info:
        io.load_safetensors(p)
    assert "not a valid safetensors file" in str(info.value)


def test_save_rejects_bad_input(tmp_path):
    with pytest.raises(TypeError, match="numpy array"):
        io.save_safetensors({"a": [1, 2]}, tmp_path / "x")
    with pytest.raises(TypeError, match="no code"):
        io.save_safetensors({"a": np.array(["x"])}, tmp_path / "x")
    with pytest.raises(ValueError, match="__metadata__"):
        io.save_safetensors({"__metadata__": np.ones(1, bfloat16)}, tmp_path / "x")
    with pytest.raises(TypeError, match="str to str"):
        io.save_safetensors({}, tmp_path / "x", metadata={"a": 1})
    for meta in (["a"], "ab"):
        with pytest.raises(TypeError, match="str to str"):
            io.save_safetensors({}, tmp_path / "x", metadata=meta)


def test_refused_tensor_leaves_the_file(tmp_path):
    """Every tensor is checked before the file is opened: a refused one leaves an existing file
    as it was (it was written up to the bad tensor, truncating the old one)."""
    p = tmp_path / "good.safetensors"
    io.save_safetensors({"w": np.ones(3, bfloat16)}, p)
    before = p.read_bytes()
    with pytest.raises(TypeError, match="no code"):
        io.save_safetensors({"w": np.ones(3, bfloat16), "s": np.array(["x"])}, p)
    assert p.read_bytes() == before


def test_errors_name_the_callers_path(tmp_path):
    """A file that cannot be created reports the path given, not the hidden temporary file the
    save writes before renaming it."""
    path = tmp_path / "missing" / "model.safetensors"
    with pytest.raises(FileNotFoundError) as info:
        io.save_safetensors({"w": np.ones(2, bfloat16)}, path)
    assert info.value.filename == str(path) and ".tmp" not in str(info.value)
    assert not (tmp_path / "missing").exists()


def test_save_back_to_a_mapped_file(tmp_path):
    """Arrays that map a file (mmap=True) saved back to it, the file growing and shrinking:
    the new file holds their values (a write in place once truncated the file under them)."""
    p = tmp_path / "m.safetensors"
    io.save_safetensors({"a": np.arange(1000, dtype=bfloat16), "b": np.arange(3, dtype=bfloat16)}, p)
    p.chmod(0o640)
    for extra in (np.ones(5000, bfloat16), np.ones(1, bfloat16)):
        t = io.load_safetensors(p, mmap=True)
        want = {k: v.copy() for k, v in t.items()}
        t["c"] = extra
        io.save_safetensors(t, p)
        back = io.load_safetensors(p)
        for k in ("a", "b"):
            np.testing.assert_array_equal(back[k].view(np.uint16), want[k].view(np.uint16))
        np.testing.assert_array_equal(back["c"].view(np.uint16), extra.view(np.uint16))
        del t
    assert p.stat().st_mode & 0o777 == 0o640          # an existing file keeps its mode
    assert sorted(x.name for x in tmp_path.iterdir()) == ["m.safetensors"]  # no temporary left


def test_load_refuses_file_descriptors(tmp_path):
    """An int is not a path: np.load and save_safetensors refuse it, and load_safetensors once
    read through the caller's descriptor and closed it (0 blocked on stdin). A bytes path
    works."""
    p = tmp_path / "w.safetensors"
    io.save_safetensors({"w": np.arange(3, dtype=bfloat16)}, p)
    fd = os.open(p, os.O_RDONLY)
    try:
        with pytest.raises(TypeError) as ours:
            io.load_safetensors(fd)
        with pytest.raises(TypeError) as numpys:
            np.load(fd)
        assert str(ours.value) == str(numpys.value)
        os.fstat(fd)                                   # still open
    finally:
        os.close(fd)
    got = io.load_safetensors(os.fsencode(p))["w"]
    assert got.dtype == bfloat16 and got.astype(np.float32).tolist() == [0.0, 1.0, 2.0]


def test_lone_surrogates_are_refused(tmp_path):
    """A name or metadata that UTF-8 cannot encode would make a file no reader opens."""
    p = tmp_path / "s.safetensors"
    with pytest.raises(ValueError, match="lone surrogate"):
        io.save_safetensors({"\ud800": np.ones(1, bfloat16)}, p)
    with pytest.raises(ValueError, match="lone surrogate"):
        io.save_safetensors({"a": np.ones(1, bfloat16)}, p, metadata={"k": "\udfff"})
    with pytest.raises(ValueError, match="lone surrogate"):
        io.save_safetensors({"a": np.ones(1, bfloat16)}, p, metadata={"\udfff": "v"})
    assert not p.exists()


def test_float8_tensors_of_ml_dtypes(tmp_path):
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes not installed")
    x = np.array([1.5, -448, 0.0], ml_dtypes.float8_e4m3fn)
    y = np.array([[2.0, -0.5]], ml_dtypes.float8_e5m2)
    p = tmp_path / "f8.safetensors"
    io.save_safetensors({"x": x, "y": y, "w": np.ones(2, bfloat16)}, p)
    out = io.load_safetensors(p)
    assert out["x"].dtype == x.dtype and out["x"].tobytes() == x.tobytes()
    assert out["y"].dtype == y.dtype and out["y"].shape == (1, 2) and out["y"].tobytes() == y.tobytes()
    header = json.loads(p.read_bytes()[8:8 + struct.unpack("<Q", p.read_bytes()[:8])[0]])
    assert header["x"]["dtype"] == "F8_E4M3" and header["y"]["dtype"] == "F8_E5M2"


@pytest.mark.parametrize("header", [
    b'  {"a":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]}}',                 # leading blanks
    b'{"a":{"dtype":"BF16","shape":[1],"data_offsets":[0,2],"extra":[1]}}',      # an extra key
])
def test_lenient_where_the_library_is(tmp_path, header):
    """What the safetensors library itself accepts (serde's JSON: leading whitespace, unknown
    keys in an entry ignored), read the same way; compared with the library where installed."""
    header += b" " * (-(8 + len(header)) % 8)
    blob = struct.pack("<Q", len(header)) + header + b"\x80\x3f"
    out = io.load_safetensors(write(tmp_path, blob))
    assert out["a"].astype(np.float32).tolist() == [1.0]
    try:
        import safetensors
    except ImportError:
        return
    assert set(safetensors.deserialize(blob)[0][1]) >= {"dtype", "shape", "data"}


# ---- fuzzing ------------------------------------------------------------------------------

def _load_bytes(tmp_path, blob):
    p = write(tmp_path, blob, "fuzz.safetensors")
    try:
        return io.load_safetensors(p)
    except ValueError as exc:
        assert "not a valid safetensors file" in str(exc)
        return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=200))
def test_fuzz_random_bytes_never_crash(tmp_path, blob):
    out = _load_bytes(tmp_path, blob)
    if out is not None:   # accepted: the arrays tile the data section exactly
        n = struct.unpack("<Q", blob[:8])[0]
        assert sum(a.nbytes for a in out.values()) == len(blob) - 8 - n


entry = st.fixed_dictionaries({
    "dtype": st.sampled_from(["BF16", "F32", "U8", "I16", "F64", "BOOL"]),
    "shape": st.lists(st.integers(0, 4), max_size=3),
    "data_offsets": st.lists(st.integers(0, 80), min_size=2, max_size=2),
})


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.text("abc", min_size=1, max_size=3), entry, max_size=4),
       st.integers(0, 80))
def test_fuzz_headers_agree_with_an_independent_validator(tmp_path, header, data_len):
    """Random (mostly inconsistent) headers: accepted exactly when the tensors tile the data
    section; when the real safetensors library is installed it must agree."""
    blob = make_file(header, bytes(range(256))[:data_len] if data_len <= 256 else b"")
    out = _load_bytes(tmp_path, blob)
    sizes = {"BF16": 2, "F32": 4, "U8": 1, "I16": 2, "F64": 8, "BOOL": 1}
    spans = sorted((e["data_offsets"][0], e["data_offsets"][1],
                    sizes[e["dtype"]] * int(np.prod(e["shape"], dtype=np.int64)))
                   for e in header.values())
    pos, ok = 0, True
    for b, e, need in spans:
        ok &= b == pos and e - b == need
        pos = e
    ok &= pos == data_len
    assert (out is not None) == ok
    if out is not None:
        for name, e in header.items():
            b, end = e["data_offsets"]
            assert out[name].tobytes() == blob[len(blob) - data_len + b:len(blob) - data_len + end]
    try:
        import safetensors
    except ImportError:
        return
    try:
        safetensors.deserialize(blob)
        theirs = True
    except Exception:
        theirs = False
    assert theirs == ok


# ---- the real library ---------------------------------------------------------------------

def test_reads_a_checkpoint_written_by_torch(tmp_path):
    torch = pytest.importorskip("torch", reason="torch not installed (pip install torch==2.13.0)")
    st_torch = pytest.importorskip("safetensors.torch", reason="safetensors not installed")
    g = torch.Generator().manual_seed(0)
    tensors = {"layer.weight": torch.randn(8, 16, generator=g).to(torch.bfloat16),
               "layer.bias": torch.randn(16, generator=g),
               "all": torch.from_numpy(ALL_BITS.view(np.int16).copy()).view(torch.bfloat16),
               "steps": torch.tensor([3], dtype=torch.int64)}
    p = tmp_path / "ckpt.safetensors"
    st_torch.save_file(tensors, str(p), metadata={"format": "pt"})
    out, meta = io.load_safetensors(p, with_metadata=True)
    assert meta == {"format": "pt"}
    assert out["layer.weight"].dtype == np.dtype(bfloat16)
    for k, t in tensors.items():
        if t.dtype == torch.bfloat16:
            np.testing.assert_array_equal(out[k].view(np.uint16), t.view(torch.int16).numpy().view(np.uint16))
        else:
            np.testing.assert_array_equal(out[k], t.numpy())

    # and our file read by torch's loader
    q = tmp_path / "ours.safetensors"
    io.save_safetensors(out, q)
    back = st_torch.load_file(str(q))
    for k, t in tensors.items():
        assert back[k].dtype == t.dtype and torch.equal(back[k].view(torch.int16) if t.dtype == torch.bfloat16 else back[k],
                                                        t.view(torch.int16) if t.dtype == torch.bfloat16 else t)


def test_every_float8_code_torch_writes():
    """torch writes float8_e8m0fnu, float8_e4m3fnuz and float8_e5m2fnuz as F8_E8M0, F8_E4M3FNUZ
    and F8_E5M2FNUZ: read as ml_dtypes' types with the same bytes, and written back under the
    same codes for torch's loader."""
    torch = pytest.importorskip("torch", reason="torch not installed (pip install torch==2.13.0)")
    st_torch = pytest.importorskip("safetensors.torch", reason="safetensors not installed")
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes not installed")
    import tempfile
    from pathlib import Path
    names = ("float8_e8m0fnu", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e4m3fn", "float8_e5m2")
    tensors = {n: torch.tensor([0.5, 1.0, 2.0, 4.0]).to(getattr(torch, n))
               for n in names if hasattr(torch, n) and hasattr(ml_dtypes, n)}
    with tempfile.TemporaryDirectory() as d:
        p, q = Path(d) / "t.safetensors", Path(d) / "back.safetensors"
        st_torch.save_file(tensors, str(p))
        out = io.load_safetensors(p)
        for n, t in tensors.items():
            assert out[n].dtype == np.dtype(getattr(ml_dtypes, n))
            assert out[n].tobytes() == t.view(torch.uint8).numpy().tobytes()
            assert out[n].astype(np.float32).tolist() == [0.5, 1.0, 2.0, 4.0]
        io.save_safetensors(out, q)
        back = st_torch.load_file(str(q))
        for n, t in tensors.items():
            assert back[n].dtype == t.dtype and torch.equal(back[n].view(torch.uint8), t.view(torch.uint8))
