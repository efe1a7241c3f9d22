"""Writes the files NumPy made for tests/io.rs (kept in git, so the test
needs no NumPy). Run from tests/data with `python3 make_numpy_files.py`
(NumPy 2.4 wrote the committed ones)."""
import numpy as np

arrays = dict(
    c_f32=np.arange(6, dtype=np.float32).reshape(2, 3) / np.float32(4),
    fortran_f64=np.asfortranarray(np.arange(12, dtype=np.float64).reshape(3, 4) - 5.5),
    default_int=np.array([[-3, 0, 7], [2**31 - 1, -2**31, 1]]),  # int64
    flags=np.array([True, False, True]),
    waves=np.array([1 + 2j, -0.5 - 1.25j, 3j], dtype=np.complex64),
    big_endian=np.arange(4, dtype=">f4") - 1.5,
    halves=np.array([0.1, -2.5, 65504], dtype=np.float16),
    scalar_u8=np.array(200, dtype=np.uint8),
    small_ints=np.array([-128, 5, 127], dtype=np.int8),
    shorts=np.array([0, 65535], dtype=np.uint16),
    empty=np.zeros((0, 3), dtype=np.float32),
)
np.savez("numpy_arrays.npz", **arrays)
np.savez_compressed("numpy_compressed.npz", **arrays)
np.save("numpy_fortran.npy", arrays["fortran_f64"])
np.save("numpy_too_wide.npy", np.array([1, 2**40]))
np.save("numpy_complex128.npy", np.array([1.0], dtype=np.complex128))

# Members beside the arrays, which np.load hands back as bytes: a JSON file
# and a folder.
import io
import zipfile

np.savez("numpy_with_extras.npz", w=np.array([1.5, -2], dtype=np.float32))
with zipfile.ZipFile("numpy_with_extras.npz", "a") as z:
    z.writestr("meta.json", '{"epoch": 3}')
    z.writestr("notes/", "")

# Names given twice, as appending to an archive makes them: np.load's
# f["w"] is the last "w.npy" ([9]), and f["v"] the member named exactly "v"
# ([7]) over "v.npy"; a bzip2 member beside them (not an array) is handed
# back as bytes and the arrays still load.
np.savez("numpy_duplicates.npz", w=np.array([1, 2], dtype=np.float32))
with zipfile.ZipFile("numpy_duplicates.npz", "a") as z:
    for name, value in [("w.npy", 9), ("v", 7), ("v.npy", 8)]:
        member = io.BytesIO()
        np.save(member, np.array([value], dtype=np.float32))
        z.writestr(name, member.getvalue())
    z.writestr("meta.json", '{"epoch": 3}', compress_type=zipfile.ZIP_BZIP2)
with np.load("numpy_duplicates.npz") as f:
    assert f["w"].tolist() == [9] and f["v"].tolist() == [7], (f["w"], f["v"])
