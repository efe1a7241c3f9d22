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
