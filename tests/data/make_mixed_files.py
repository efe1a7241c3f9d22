"""Writes numpy_mixed.npz and mixed_f8.safetensors for tests/io.rs: files
holding arrays webtensor reads beside ones it cannot hold (strings,
complex128, datetimes, nine axes; a float8 tensor), kept in git. Run from tests/data
with `python3 make_mixed_files.py` (NumPy 2.4, ml_dtypes 0.7 and
safetensors 0.8 wrote the committed ones)."""
import ml_dtypes
import numpy as np
import json
import struct

from safetensors.numpy import save_file

np.savez(
    "numpy_mixed.npz",
    weights=np.array([[0.5, -1.0], [2.0, 4.25]], dtype=np.float32),
    labels=np.array(["cat", "dog"]),
    spectrum=np.array([1 + 2j, -3j]),
    stamps=np.array(["2026-12-06"], dtype="datetime64[D]"),
    steps=np.array([3, -7], dtype=np.int64),
    means=np.array([0.25, -8.5], dtype=np.float64),
    deep=np.zeros((1,) * 9, dtype=np.float32),
)
with np.load("numpy_mixed.npz") as f:
    assert f.files == ["weights", "labels", "spectrum", "stamps", "steps", "means", "deep"], f.files
    assert f["labels"].dtype.str == "<U3" and f["spectrum"].dtype == np.complex128

save_file(
    {
        "bias": np.array([1.5, -2.0], dtype=np.float32),
        "scales": np.array([0.5, 1.0, -2.0], dtype=ml_dtypes.float8_e4m3fn),
        "table": np.arange(6, dtype=np.int32).reshape(2, 3),
    },
    "mixed_f8.safetensors",
)
# (safetensors' own numpy loader fails on float8: its header is checked.)
data = open("mixed_f8.safetensors", "rb").read()
header = json.loads(data[8 : 8 + struct.unpack("<Q", data[:8])[0]])
assert header["scales"]["dtype"] == "F8_E4M3", header

# Members written by hand (zipfile writes none of these), each as np.load
# reads it: "a.npy" (an array) beside "a" (bytes, which np.load's f["a"]
# gives; the array is f["a.npy"]), "s.npy" deflated with a sync flush and
# no final block, "e.npy" deflated to nothing (bytes b""), a name holding
# a NUL ("n\0junk.npy": zipfile cuts it to "n") and a plain "k.npy".
import io
import zlib


def npy(x):
    f = io.BytesIO()
    np.save(f, x)
    return f.getvalue()


def synced(data):
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush(zlib.Z_SYNC_FLUSH)


def archive(members):
    out, central = b"", b""
    for name, data, method, payload in members:
        crc = zlib.crc32(data)
        fields = (method, 0, 0x21, crc, len(payload), len(data), len(name))
        local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, *fields, 0)
        central += struct.pack(
            "<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, *fields, 0, 0, 0, 0, 0, len(out)
        ) + name
        out += local + name + payload
    n = len(members)
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n, n, len(central), len(out), 0)
    return out + central + end


a = np.arange(4, dtype=np.float32)
s = np.array([[1, -2], [3, 4]], dtype=np.int32)
k = np.array([True, False])
with open("numpy_hand_made.npz", "wb") as f:
    f.write(
        archive(
            [
                (b"a.npy", npy(a), 0, npy(a)),
                (b"a", b"hello", 0, b"hello"),
                (b"s.npy", npy(s), 8, synced(npy(s))),
                (b"e.npy", b"", 8, b""),
                (b"n\0junk.npy", npy(a * 2), 0, npy(a * 2)),
                (b"k.npy", npy(k), 0, npy(k)),
            ]
        )
    )
with np.load("numpy_hand_made.npz") as f:
    assert f.files == ["a", "a", "s", "e", "n", "k"], f.files
    assert f["a"] == b"hello" and f["a.npy"].tolist() == a.tolist()
    assert f["s"].tolist() == s.tolist() and f["e"] == b""
    assert f["n"].tolist() == (a * 2).tolist() and f["k"].tolist() == k.tolist()
