"""Files for bfloat16 arrays: safetensors (without torch), .npy that keeps the dtype, zarr v3.

>>> import numpy as np
>>> from bfloat16_dtype import bfloat16, io
>>> io.save_safetensors({"w": np.ones((2, 3), bfloat16)}, "model.safetensors")
>>> io.load_safetensors("model.safetensors")["w"].dtype
dtype(bfloat16)
>>> io.save("x.npy", np.arange(3, dtype=bfloat16))   # plain np.load gives the uint16 bits
>>> io.load("x.npy")
array([0., 1., 2.], dtype=bfloat16)
"""
from __future__ import annotations

import io as _pyio
import json
import math
import os
import secrets
import stat
import threading
import zipfile
from typing import IO, Any, Mapping

import numpy as np

from ._ext import bfloat16

__all__ = ["save_safetensors", "load_safetensors", "save", "savez", "load", "register_zarr_dtype"]

_DTYPE = np.dtype(bfloat16)

# ---- safetensors ---------------------------------------------------------------------------
# Format: 8-byte little-endian header length N, N bytes of UTF-8 JSON
#   {"name": {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]}, ..., "__metadata__": {str: str}}
# then the data buffer; offsets count from the buffer's start. Like the reference implementation,
# the tensors must tile the buffer exactly: no gaps, no overlaps, nothing left over.

_MAX_HEADER = 100_000_000
_ST_NUMPY = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "U64": "<u8", "I32": "<i4",
             "U32": "<u4", "I16": "<i2", "U16": "<u2", "I8": "i1", "U8": "u1", "BOOL": "?",
             "C64": "<c8"}
_ST_ML_DTYPES = {"F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2", "F8_E8M0": "float8_e8m0fnu",
                 "F8_E4M3FNUZ": "float8_e4m3fnuz", "F8_E5M2FNUZ": "float8_e5m2fnuz"}
_ST_SIZES = {**{k: np.dtype(v).itemsize for k, v in _ST_NUMPY.items()}, "BF16": 2,
             **{code: 1 for code in _ST_ML_DTYPES}}


def _is_bfloat16(dt: np.dtype) -> bool:
    """Ours or ml_dtypes' bfloat16 (the same bits)."""
    return dt == _DTYPE or (dt.names is None and dt.kind == "V" and dt.itemsize == 2
                            and dt.type.__name__ == "bfloat16")


def _le_bits(arr: np.ndarray) -> np.ndarray:
    """The bfloat16 array's bits as C-ordered little-endian uint16, whatever its byte order."""
    order = arr.dtype.byteorder if arr.dtype.byteorder in "<>" else "="
    return np.asarray(arr, order="C").view(np.dtype(np.uint16).newbyteorder(order)).astype("<u2", copy=False)


def _st_code(dt: np.dtype) -> str:
    if _is_bfloat16(dt):
        return "BF16"
    for code, name in _ST_NUMPY.items():
        if dt.newbyteorder("<") == np.dtype(name):
            return code
    for code, name in _ST_ML_DTYPES.items():
        if dt.type.__name__ == name and dt.type.__module__.startswith("ml_dtypes"):
            return code
    raise TypeError(f"safetensors has no code for dtype {dt!r}")


def save_safetensors(tensors: Mapping[str, np.ndarray], path: "str | os.PathLike[str]",
                     metadata: Mapping[str, str] | None = None) -> None:
    """Write arrays to a safetensors file: bfloat16 (ours or ml_dtypes') as ``BF16``, numpy's
    numeric types under their codes. ``metadata`` is an optional str -> str mapping.

    Readable by ``safetensors.torch.load_file`` and every other safetensors reader. The file
    is written under a temporary name beside ``path`` and then renamed over it, so arrays that
    still map the old file (``load_safetensors(path, mmap=True)``) can be saved back to it, and
    a failed write leaves the old file as it was.
    """
    if not isinstance(tensors, Mapping):
        raise TypeError(f"tensors must be a mapping of names to arrays, got {type(tensors).__name__}")
    header: dict[str, Any] = {}
    if metadata is not None:
        if not isinstance(metadata, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise TypeError("metadata must map str to str")
        for text_ in (*metadata.keys(), *metadata.values()):
            _check_unicode(text_, "metadata")
        header["__metadata__"] = dict(metadata)
    blobs = []
    offset = 0
    for name, arr in tensors.items():
        if not isinstance(name, str) or name == "__metadata__":
            raise ValueError(f"invalid tensor name {name!r}")
        _check_unicode(name, "tensor name")
        if not isinstance(arr, np.ndarray):
            raise TypeError(f"tensor {name!r} is a {type(arr).__name__}, not a numpy array")
        code = _st_code(arr.dtype)
        if code == "BF16":
            data = _le_bits(arr)
        else:
            data = np.ascontiguousarray(arr.astype(arr.dtype.newbyteorder("<"), copy=False))
        header[name] = {"dtype": code, "shape": list(arr.shape),
                        "data_offsets": [offset, offset + data.nbytes]}
        offset += data.nbytes
        blobs.append(data.reshape(-1).view(np.uint8))   # bytes of any dtype (ml_dtypes' F8 too)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-(8 + len(text)) % 8)     # the data starts 8-byte aligned
    # everything is checked and laid out before a file is opened: a refused tensor leaves an
    # existing file as it was (tests/test_io_safetensors.py::test_refused_tensor_leaves_the_file);
    # the blobs may be views of the file being replaced, which the rename leaves intact
    # (::test_save_back_to_a_mapped_file)
    target = os.path.realpath(os.fsdecode(os.fspath(path)))
    try:
        st = os.stat(target)
    except OSError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):     # a device or pipe: written in place
        with open(target, "wb") as f:
            _write_safetensors(f, text, blobs)
        return
    tmp = os.path.join(os.path.dirname(target),
                       f".{os.path.basename(target)}.{secrets.token_hex(8)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    except OSError as e:
        # name the caller's path, not the hidden file written first
        # (tests/test_io_safetensors.py::test_errors_name_the_callers_path)
        raise type(e)(e.errno, e.strerror, os.fspath(path)) from None
    try:
        with os.fdopen(fd, "wb") as f:
            _write_safetensors(f, text, blobs)
        if st is not None:
            os.chmod(tmp, stat.S_IMODE(st.st_mode))     # an existing file keeps its mode
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise


def _write_safetensors(f, text: bytes, blobs) -> None:
    f.write(len(text).to_bytes(8, "little"))
    f.write(text)
    for data in blobs:
        f.write(data)


def _check_unicode(text: str, what: str) -> None:
    """Names and metadata must be UTF-8 encodable: a lone surrogate writes a file that no
    safetensors reader opens (tests/test_io_safetensors.py::test_lone_surrogates_are_refused)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{what} {text!r} is not valid Unicode (lone surrogate)") from None


def _bad(path, msg: str) -> ValueError:
    return ValueError(f"{os.fspath(path)!s}: not a valid safetensors file: {msg}")


def _no_duplicates(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r} in the header")
        out[k] = v
    return out


def _parse_header(raw: bytes, buffer_len: int, path) -> tuple[dict, list]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _bad(path, f"header is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    if not text.lstrip(" \t\n\r").startswith("{"):   # JSON's whitespace, as the library reads it
        raise _bad(path, "header does not start with '{'")
    try:
        header = json.loads(text, object_pairs_hook=_no_duplicates)
    except ValueError as exc:   # json.JSONDecodeError is a ValueError; so is a duplicate key
        raise _bad(path, f"header is not valid JSON ({exc})") from None
    except RecursionError:
        raise _bad(path, "header nests too deeply") from None
    if not isinstance(header, dict):
        raise _bad(path, "header is not a JSON object")
    metadata = header.pop("__metadata__", None)
    if metadata is not None and not (isinstance(metadata, dict) and all(
            isinstance(v, str) for v in metadata.values())):
        raise _bad(path, "__metadata__ must map strings to strings")
    entries = []
    for key, value in [*header.items(), *(metadata or {}).items()]:
        for text_ in (key, value) if isinstance(value, str) else (key,):
            try:
                text_.encode("utf-8")
            except UnicodeEncodeError:     # a lone surrogate escape: not a string in Rust
                raise _bad(path, f"{text_!r} is not valid Unicode") from None
    for name, info in header.items():
        if not isinstance(info, dict) or not {"dtype", "shape", "data_offsets"} <= set(info):
            raise _bad(path, f"tensor {name!r}: entry must have dtype, shape and data_offsets")
        code, shape, offs = info["dtype"], info["shape"], info["data_offsets"]
        if not isinstance(code, str) or code not in _ST_SIZES:
            raise _bad(path, f"tensor {name!r}: unknown or unsupported dtype {code!r}")
        if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
            raise _bad(path, f"tensor {name!r}: shape must be a list of non-negative integers, got {shape!r}")
        if any(d > 2**63 - 1 for d in shape) or math.prod(d for d in shape if d) > 2**63 - 1:
            raise _bad(path, f"tensor {name!r}: shape {shape} has more elements than an array can")
        if len(shape) > 64:
            raise _bad(path, f"tensor {name!r}: {len(shape)} dimensions (at most 64)")
        if not (isinstance(offs, list) and len(offs) == 2 and all(type(o) is int and o >= 0 for o in offs)):
            raise _bad(path, f"tensor {name!r}: data_offsets must be two non-negative integers, got {offs!r}")
        begin, end = offs
        if end < begin:
            raise _bad(path, f"tensor {name!r}: data_offsets {offs} end before they begin")
        nbytes = _ST_SIZES[code]
        for d in shape:
            nbytes *= d
        if end - begin != nbytes:
            raise _bad(path, f"tensor {name!r}: data_offsets {offs} span {end - begin} bytes, but "
                             f"{code} of shape {tuple(shape)} needs {nbytes}")
        entries.append((begin, end, name, code, tuple(shape)))
    entries.sort()
    pos = 0
    for begin, end, name, _, _ in entries:
        if begin != pos:
            what = "overlaps the previous tensor" if begin < pos else f"leaves a gap at byte {pos}"
            raise _bad(path, f"tensor {name!r}: data_offsets start at {begin} and {what}")
        pos = end
    if pos != buffer_len:
        raise _bad(path, f"the tensors cover {pos} bytes but the data section holds {buffer_len}"
                         f"{' (truncated file?)' if pos > buffer_len else ''}")
    return (metadata or {}), entries


def _st_dtype(code: str) -> np.dtype:
    if code == "BF16":
        return _DTYPE
    if code in _ST_NUMPY:
        return np.dtype(_ST_NUMPY[code])
    try:
        import ml_dtypes
    except ImportError:
        raise TypeError(f"safetensors dtype {code} needs ml_dtypes (pip install ml_dtypes)") from None
    return np.dtype(getattr(ml_dtypes, _ST_ML_DTYPES[code]))


def load_safetensors(path: "str | os.PathLike[str]", *, mmap: bool = False,
                     with_metadata: bool = False):
    """Read a safetensors file: ``BF16`` tensors come back as bfloat16, the others as numpy
    arrays (F8 types as ml_dtypes arrays when it is installed).

    The header is checked strictly before any data is read: a truncated file, bad JSON,
    unknown dtypes, sizes that do not match the shape, offsets that overlap, leave gaps or
    point past the end raise ``ValueError`` naming the problem. ``mmap=True`` maps the file
    read-only instead of reading it. ``with_metadata=True`` returns ``(tensors, metadata)``.
    """
    # an int would be opened as a file descriptor, read through and closed; 0 blocks on stdin
    # (tests/test_io_safetensors.py::test_load_refuses_file_descriptors)
    path = os.fspath(path)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(8)
        if len(head) < 8:
            raise _bad(path, f"{size} bytes, too short for the 8-byte header length")
        n = int.from_bytes(head, "little")
        if n > _MAX_HEADER:
            raise _bad(path, f"header length {n} exceeds the limit of {_MAX_HEADER} bytes")
        if 8 + n > size:
            raise _bad(path, f"header length {n} runs past the end of the {size}-byte file")
        raw = f.read(n)
        if len(raw) != n:
            raise _bad(path, "file shrank while reading the header")
        metadata, entries = _parse_header(raw, size - 8 - n, path)
        if mmap and size - 8 - n > 0:
            buf = np.memmap(f, dtype=np.uint8, mode="r", offset=8 + n, shape=(size - 8 - n,))
        else:
            buf = np.frombuffer(bytearray(f.read()), dtype=np.uint8)
            if buf.size != size - 8 - n:
                raise _bad(path, "file changed size while reading")
    out = {}
    for begin, end, name, code, shape in sorted(entries, key=lambda e: e[2]):
        dt = _st_dtype(code)
        piece = buf[begin:end]
        if code == "BF16":
            arr = piece.view("<u2").view(_DTYPE) if piece.size else np.empty(0, _DTYPE)
        else:
            arr = piece.view(dt) if piece.size else np.empty(0, dt)
        try:
            out[name] = arr.reshape(shape)
        except ValueError as exc:      # a shape NumPy cannot make (dimension limits)
            raise _bad(path, f"tensor {name!r}: shape {list(shape)}: {exc}") from None
    return (out, metadata) if with_metadata else out


# ---- .npy that remembers bfloat16 ----------------------------------------------------------
# np.save writes a bfloat16 array as '|V2'. save() writes an ordinary .npy of the uint16 bits
# ('<u2'), and marks it with a comment after the header dict, which np.load's literal parser
# ignores: plain np.load gives the bits (then .view(bfloat16)), load() gives bfloat16 back.

_NPY_MARK = "# bfloat16_dtype: bfloat16"
_MAGIC = b"\x93NUMPY"


_PATH_TYPES = (str, bytes, os.PathLike)


def _file_arg(file, needs: str, what: str):
    """A path as a str (zipfile and np.save take a bytes path for a file object), a file object
    with the method `needs` as given, else a TypeError that names it
    (tests/test_io_npy.py::test_bad_file_arguments_raise_type_error, ::test_bytes_paths)."""
    if isinstance(file, _PATH_TYPES):
        return os.fsdecode(file)
    if not hasattr(file, needs):
        raise TypeError(f"{what}: file must be a path or a file object with .{needs}(), got "
                        f"{type(file).__name__}")
    return file


def _with_suffix(file, suffix: str):
    """A path without `suffix` gets it, as np.save/np.savez do; open files pass through."""
    if not isinstance(file, str):
        return file
    return file if file.endswith(suffix) else file + suffix


def save(file: "str | os.PathLike[str] | IO[bytes]", arr: np.ndarray) -> None:
    """Save an array to .npy; a bfloat16 array (ours or ml_dtypes') is stored as its uint16
    bits with a marker that :func:`load` reads. Other arrays are passed to ``np.save``."""
    arr = np.asanyarray(arr)
    file = _file_arg(file, "write", "save")
    if not _is_bfloat16(arr.dtype):
        np.save(file, arr, allow_pickle=False)
        return
    file = _with_suffix(file, ".npy")
    # a Fortran-ordered array is written in its own order, as np.save writes it, and loads as
    # one (tests/test_io_npy.py::test_fortran_order_is_kept_like_np_save)
    fortran = arr.flags.f_contiguous and not arr.flags.c_contiguous
    bits = _le_bits(arr.T if fortran else arr)
    d = (f"{{'descr': '<u2', 'fortran_order': {fortran}, 'shape': {tuple(arr.shape)!r}, }} "
         f"{_NPY_MARK}")
    version, lenbytes = (1, 0), 2
    if len(d) + 12 > 65535:
        version, lenbytes = (2, 0), 4
    pad = -(len(_MAGIC) + 2 + lenbytes + len(d) + 1) % 64
    header = (d + " " * pad + "\n").encode("latin1")
    own = isinstance(file, str)
    f = open(file, "wb") if own else file
    try:
        f.write(_MAGIC + bytes(version) + len(header).to_bytes(lenbytes, "little") + header)
        f.write(memoryview(bits.reshape(-1)).cast("B"))
    finally:
        if own:
            f.close()


def savez(file: "str | os.PathLike[str] | IO[bytes]", *args: np.ndarray, **arrays: np.ndarray) -> None:
    """Save several arrays to an uncompressed .npz (``np.load`` reads it); each bfloat16 array
    is stored as by :func:`save`, so :func:`load` gives them back as bfloat16. Arrays given
    by position are named ``arr_0``, ``arr_1``, ..., as ``np.savez`` names them."""
    for i, arr in enumerate(args):
        name = f"arr_{i}"
        if name in arrays:
            raise ValueError(f"savez: cannot use un-named arrays and the keyword {name}")
        arrays[name] = arr
    file = _with_suffix(_file_arg(file, "write", "savez"), ".npz")
    with zipfile.ZipFile(file, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, arr in arrays.items():
            with zf.open(f"{name}.npy", "w", force_zip64=True) as member:
                save(member, arr)


def load(file: "str | os.PathLike[str] | IO[bytes]", mmap_mode: str | None = None):
    """Load a .npy file, or an .npz as a dict of arrays; arrays written by :func:`save` /
    :func:`savez` from bfloat16 come back as bfloat16, others as ``np.load`` returns them
    (pickles refused). ``mmap_mode`` applies to .npy files (``"r"``, ``"r+"``, ``"c"``: ``"w+"``,
    which would truncate the file, is refused)."""
    if mmap_mode not in (None, "r", "r+", "c", "readonly", "readwrite", "copyonwrite"):
        raise ValueError(f"load: mmap_mode must be None, 'r', 'r+' or 'c', got {mmap_mode!r}")
    file = _file_arg(file, "read", "load")
    own = isinstance(file, str)
    f = open(file, "rb") if own else file
    try:
        start = f.tell()
        head = f.read(10)
        f.seek(start)
        if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):   # a zip, or an empty one (savez())
            with zipfile.ZipFile(f) as zf:
                return {name[:-4] if name.endswith(".npy") else name:
                        _load_npy(_pyio.BytesIO(zf.read(name)), None) for name in zf.namelist()}
        return _load_npy(file if own else f, mmap_mode)
    finally:
        if own:
            f.close()


def _load_npy(file, mmap_mode):
    own = isinstance(file, str)
    f = open(file, "rb") if own else file
    try:
        start = f.tell()
        head = f.read(10)
        marked = False
        if head[:6] == _MAGIC and len(head) == 10:
            major = head[6]
            n = int.from_bytes(head[8:10], "little") if major == 1 else \
                int.from_bytes(head[8:10] + f.read(2), "little")
            marked = _NPY_MARK.encode() in f.read(min(n, 1 << 20))
        f.seek(start)
        arr = np.load(file if own else f, mmap_mode=mmap_mode, allow_pickle=False)
    finally:
        if own:
            f.close()
    if marked:
        if arr.dtype != np.dtype("<u2"):
            raise ValueError("file carries the bfloat16 marker but does not hold '<u2' data")
        arr = arr.view(_DTYPE)
    return arr


# ---- zarr v3 data type ---------------------------------------------------------------------

_zarr_cls = None
_zarr_lock = threading.Lock()


def register_zarr_dtype():
    """Register a zarr (v3) data type named ``"bfloat16"`` for this package's bfloat16 and
    return its class. Afterwards ``zarr.create_array(..., dtype=bfloat16)`` stores bfloat16
    and opening the array gives bfloat16 back. Needs zarr >= 3.1 (its data type registry).

    Fill values are JSON numbers, ``"NaN"``, ``"Infinity"``, ``"-Infinity"``, or the bits as
    ``"0x7fc1"`` for any other NaN (the zarr v3 float convention). Zarr v2 metadata cannot
    name bfloat16 and is refused.

    Called automatically: when ``bfloat16_dtype`` is imported with zarr already loaded, or
    right after zarr is first imported (zarr 3.1 does not load data types from entry points).
    Calling it again is harmless and returns the same class.
    """
    # Outside the lock: a first import of zarr runs bfloat16_dtype's import hook, which calls
    # this function.
    import zarr  # noqa: F401

    with _zarr_lock:
        if _zarr_cls is None:
            _define_zarr_dtype()
        return _zarr_cls


def _define_zarr_dtype() -> None:
    global _zarr_cls
    from dataclasses import dataclass

    from zarr.core.dtype import data_type_registry
    try:
        from zarr.errors import DataTypeValidationError     # zarr >= 3.4
    except ImportError:
        from zarr.core.dtype.common import DataTypeValidationError
    from zarr.core.dtype.npy.common import endianness_to_numpy_str
    from zarr.core.dtype.npy.float import BaseFloat

    @dataclass(frozen=True, kw_only=True)
    class BFloat16(BaseFloat):
        """bfloat16_dtype's bfloat16 as a zarr v3 data type."""

        dtype_cls = type(_DTYPE)
        _zarr_v3_name = "bfloat16"
        _zarr_v2_names = ()

        @property
        def item_size(self) -> int:
            return 2

        @classmethod
        def _from_json_v2(cls, data):
            raise DataTypeValidationError("zarr v2 metadata has no name for bfloat16; use zarr_format=3")

        def to_json(self, zarr_format):
            if zarr_format != 3:
                raise ValueError("bfloat16 needs zarr_format=3 (v2 metadata cannot name it)")
            return self._zarr_v3_name

        def to_native_dtype(self):
            # zarr's default calls the DType class, which NumPy before 2.5 refuses for this dtype
            return _DTYPE.newbyteorder(endianness_to_numpy_str(self.endianness))

        def _cast_scalar_unchecked(self, data):
            return bfloat16(data)

        def from_json_scalar(self, data, *, zarr_format):
            if isinstance(data, str):
                special = {"NaN": 0x7FC0, "Infinity": 0x7F80, "-Infinity": 0xFF80}
                if data in special:
                    return np.array(special[data], np.uint16).view(_DTYPE)[()]
                if data.startswith("0x") and len(data) == 6:
                    return np.array(int(data, 16), np.uint16).view(_DTYPE)[()]
                raise TypeError(f"invalid bfloat16 fill value {data!r}")
            if isinstance(data, (int, float)) and not isinstance(data, bool):
                return bfloat16(data)
            raise TypeError(f"invalid bfloat16 fill value {data!r}")

        def to_json_scalar(self, data, *, zarr_format):
            bits = int(np.array(self.cast_scalar(data), _DTYPE).view(np.uint16))
            if bits & 0x7F80 == 0x7F80:
                if bits & 0x7F:
                    return "NaN" if bits == 0x7FC0 else f"0x{bits:04x}"
                return "-Infinity" if bits & 0x8000 else "Infinity"
            return float(np.array(bits, np.uint16).view(_DTYPE).astype(np.float64))

    # Importable as bfloat16_dtype.io._ZarrBFloat16 (the module's __getattr__ below), so that
    # pickle refers to it by name: a zarr array of bfloat16 goes to dask's process workers and
    # distributed clusters (tests/test_io_zarr.py::test_zarr_arrays_pickle_into_another_process)
    BFloat16.__qualname__ = BFloat16.__name__ = "_ZarrBFloat16"
    BFloat16.__module__ = __name__
    data_type_registry.register(BFloat16._zarr_v3_name, BFloat16)
    _compare_bfloat16_chunks_by_bits()
    _zarr_cls = BFloat16


def __getattr__(name: str):
    if name == "_ZarrBFloat16":     # the zarr data type, defined once zarr is needed
        return register_zarr_dtype()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _compare_bfloat16_chunks_by_bits() -> None:
    """zarr leaves out a chunk equal to the fill value. It compares float chunks with a zero
    fill by their bits (so a chunk of -0.0 is written), but any dtype of kind 'V' by value, so
    a bfloat16 chunk of -0.0 under the fill 0 was never written and read back as +0.0. A
    bfloat16 chunk is compared by its bits: left out only when its bits are the fill value's
    (tests/test_io_zarr.py::test_chunks_of_the_other_zero_or_another_nan_are_written, in
    either byte order). Every
    buffer class that defines its own all_equal gets the comparison (zarr 3.4's CPU buffer
    overrides the base class's)."""
    from zarr.core.buffer.core import NDBuffer

    try:
        import zarr.core.buffer.cpu  # noqa: F401  (the class zarr writes CPU chunks with)
    except ImportError:
        pass
    seen, todo = set(), [NDBuffer]
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        todo.extend(cls.__subclasses__())
        by_value = cls.__dict__.get("all_equal")
        if by_value is None or getattr(by_value, "_bfloat16_by_bits", False):
            continue
        cls.all_equal = _bits_all_equal(by_value)


def _bits_all_equal(by_value):
    def all_equal(self, other, equal_nan=True):
        data = self._data
        # ours or ml_dtypes' (zarr takes a JAX array's chunks as they are: the same name)
        if other is not None and isinstance(data, np.ndarray) and _is_bfloat16(data.dtype):
            fill = np.asarray(other, _DTYPE).view(np.uint16)
            return bool((_le_bits(data) == fill).all())  # byte-swapped chunks too
        return by_value(self, other, equal_nan)

    all_equal._bfloat16_by_bits = True
    all_equal.__doc__ = by_value.__doc__
    return all_equal
