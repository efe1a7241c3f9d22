"""Writes the GGUF files tests/gguf.rs reads, with gguf-py (llama.cpp's
Python package, `pip install gguf numpy`), and the arrays they hold as a
NumPy .npz: the reference is gguf-py's writer and NumPy, never webtensor.

    python3 tests/data/make_gguf_files.py

- gguf_small.gguf: metadata of every value type (arrays of numbers, of
  strings, of arrays, and a long one), and tensors of every plain type
  (F32, F16, BF16, F64, I8, I16, I32, I64, a 1-D and a 4-D one, an empty
  one) and three quantized ones (Q8_0 and Q4_0 made by gguf-py's
  quantizer, Q4_K of random bytes: the reader keeps blocks as they are).
- gguf_aligned.gguf: `general.alignment` 64 and tensors of sizes that are
  not multiples of it.
- gguf_arrays.npz: every tensor's values (quantized ones as their bytes).
"""

import pathlib

import gguf
import numpy as np
from gguf import GGMLQuantizationType as T

HERE = pathlib.Path(__file__).parent
rng = np.random.default_rng(20261129)


def bf16_bits(x):
    """float32 values rounded to bfloat16 (nearest, ties to even), as bits."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


arrays = {
    "f32": np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5,
    "f16": rng.standard_normal((3, 4)).astype(np.float16),
    "f64": np.array([[1e300, -2.5], [np.pi, 0.0]], dtype=np.float64),
    "i8": np.array([-128, -1, 0, 1, 127], dtype=np.int8),
    "i16": np.array([[-32768, 7, 32767], [1, 2, 3]], dtype=np.int16),
    "i32": np.array([-(2**31), 0, 5, 2**31 - 1], dtype=np.int32),
    "i64": np.array([-(2**62), 3, 2**62 + 1], dtype=np.int64),
    "blk.0.ffn_up.weight": rng.standard_normal((2, 3, 4, 5)).astype(np.float32),
    "empty": np.zeros((0, 3), dtype=np.float32),
}
bf16 = bf16_bits(rng.standard_normal((2, 5)).astype(np.float32))
q_source = rng.standard_normal((3, 64)).astype(np.float32)
q8_0 = gguf.quants.quantize(q_source, T.Q8_0)
q4_0 = gguf.quants.quantize(q_source, T.Q4_0)
q4_k = rng.integers(0, 256, size=(2, 144), dtype=np.uint8)

w = gguf.GGUFWriter(HERE / "gguf_small.gguf", "llama")
w.add_uint8("test.u8", 200)
w.add_int8("test.i8", -100)
w.add_uint16("test.u16", 60000)
w.add_int16("test.i16", -30000)
w.add_uint32("test.u32", 4000000000)
w.add_int32("test.i32", -2000000000)
w.add_float32("test.f32", 0.1)
w.add_bool("test.bool", True)
w.add_string("test.string", "héllo, GGUF")
w.add_uint64("test.u64", 2**63 + 5)
w.add_int64("test.i64", -(2**62))
w.add_float64("test.f64", 1e-300)
w.add_array("test.array_u32", [1, 2, 3])
w.add_array("test.array_str", ["a", "", "ü"])
w.add_array("test.array_nested", [[1, 2], [3]])
w.add_array("test.array_long", list(range(1000)))
w.add_context_length(2048)
for name, a in arrays.items():
    w.add_tensor(name, a)
w.add_tensor("bf16", bf16, raw_dtype=T.BF16)
w.add_tensor("q8_0", q8_0, raw_dtype=T.Q8_0)
w.add_tensor("q4_0", q4_0, raw_dtype=T.Q4_0)
w.add_tensor("q4_k", q4_k, raw_dtype=T.Q4_K)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()

a = gguf.GGUFWriter(HERE / "gguf_aligned.gguf", "llama")
a.add_custom_alignment(64)
a.add_tensor("odd", np.arange(7, dtype=np.float32))
a.add_tensor("three", np.arange(3, dtype=np.int16))
a.add_tensor("last", np.arange(5, dtype=np.float16))
a.write_header_to_file()
a.write_kv_data_to_file()
a.write_tensors_to_file()
a.close()

np.savez(
    HERE / "gguf_arrays.npz",
    **{k.replace(".", "_"): v for k, v in arrays.items()},
    bf16=bf16,
    q8_0=q8_0,
    q4_0=q4_0,
    q4_k=q4_k,
    q_source=q_source,
)

# Blocks of every type webtensor decodes (IQ4_NL's below), of random bytes with finite f16
# scales, and gguf-py's f32 values of them; f32 rows and gguf-py's blocks
# of the types webtensor encodes (zero blocks and ties included).
HALVES = {  # where each type's f16 scales are, in bytes
    "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q8_0": [0],
    "Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208],
}
cases = {}
for name, halves in HALVES.items():
    t = T[name]
    _, width = gguf.GGML_QUANT_SIZES[t]
    blocks = rng.integers(0, 256, size=(5, width), dtype=np.uint8)
    for at in halves:
        scale = (rng.standard_normal(5) * 0.1).astype(np.float16)
        scale[0] = 0.0
        blocks[:, at:at + 2] = scale.view(np.uint8).reshape(5, 2)
    cases[f"{name}_blocks"] = blocks
    cases[f"{name}_values"] = gguf.quants.dequantize(blocks, t).astype(np.float32)
source = rng.standard_normal((6, 64)).astype(np.float32)
source[1, :32] = 0.0                                   # a zero block
source[2, :32] = np.tile([1.0, -1.0], 16)              # ties for argmax
source[3, :] = np.round(source[3, :] * 4) / 4          # many halves
source[4, :32] = rng.standard_normal(32).astype(np.float32) * 1e-30
# Blocks whose x / d + 8.5 (16.5) is a step apart when its product and sum
# round in f32 (gguf-py 0.19, llama.cpp's source) and when they round once
# (gguf-py up to 0.17 in f64, a C build that fuses them): Q4_0's and Q5_0's.
cursed = np.zeros((1, 64), dtype=np.float32)
cursed[0, :2] = [0.55, -0.10312497]
cursed[0, 32:34] = [0.7, -0.59062493]
source = np.vstack([source, cursed])
cases["source"] = source
for name in ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0"]:
    cases[f"{name}_quantized"] = gguf.quants.quantize(source, T[name])
# (gguf-py 0.19.0 wrote the committed file.)
# IQ4_NL (4-bit indices into ggml's non-linear table), which llama.cpp
# puts in k-quant files for rows that are not whole blocks of 256: drawn
# last, from a generator of its own, so the cases above stay as they were.
iq_rng = np.random.default_rng(20261202)
blocks = iq_rng.integers(0, 256, size=(5, 18), dtype=np.uint8)
scale = (iq_rng.standard_normal(5) * 0.1).astype(np.float16)
scale[0] = 0.0
scale[1] = np.float16(3e-6)  # subnormal, as small models' scales are
blocks[:, 0:2] = scale.view(np.uint8).reshape(5, 2)
cases["IQ4_NL_blocks"] = blocks
cases["IQ4_NL_values"] = gguf.quants.dequantize(blocks, T.IQ4_NL).astype(np.float32)
# Blocks so small that their scale d is subnormal in f32 and 1 / d is
# inf: each x / d is inf or NaN, which NumPy's casts (on x86) make 0.
tiny = np.zeros((2, 64), dtype=np.float32)
tiny[0, :4] = [1e-38, -5e-39, 2e-39, 0.0]
tiny[0, 32:36] = [-3e-38, 1e-39, 0.0, 2.5e-38]
tiny[1, :32] = np.linspace(-4e-38, 4e-38, 32, dtype=np.float32)
tiny[1, 32:] = np.float32(1e-45)
cases["tiny_source"] = tiny
with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
    for name in ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0"]:
        cases[f"{name}_tiny_quantized"] = gguf.quants.quantize(tiny, T[name])
np.savez(HERE / "gguf_quant_cases.npz", **cases)
