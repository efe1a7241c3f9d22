"""A tiny Llama-architecture GGUF model with random weights, written by
gguf-py, and its forward pass in NumPy, for tests/llama.rs (`pip install
gguf numpy`):

    python3 tests/data/make_tiny_llama.py

The model: 2 blocks, 64 features, 4 query heads of 16 and 2 key/value heads
(grouped-query), a SwiGLU feed-forward of 96, a vocabulary of 50, RMS norms,
rotary embeddings in ggml's normal (interleaved) layout, untied output.
Weights are f32 except two blocks' `ffn_down` (Q8_0) and `attn_v` (F16), so
that the forward pass reads every kind of tensor a GGUF file holds. The
NumPy pass (float64, from the weights as the file stores them, quantized
ones dequantized by gguf-py) gives the logits of a prompt and a greedy
continuation: tiny_llama_reference.npz.
"""

import pathlib

import gguf
import numpy as np
from gguf import GGMLQuantizationType as T
from tiny_llama_forward import add_hparams, reference

HERE = pathlib.Path(__file__).parent
rng = np.random.default_rng(7)

DIM, LAYERS, HEADS, KV_HEADS, FFN, VOCAB = 64, 2, 4, 2, 96, 50
HEAD = DIM // HEADS
EPS, THETA = 1e-5, 10000.0
PROMPT = [3, 17, 42, 8, 8, 29, 1]
STEPS = 6


def weight(*shape, scale=None):
    scale = scale if scale is not None else 1.0 / np.sqrt(shape[-1])
    return (rng.standard_normal(shape) * scale).astype(np.float32)


w = gguf.GGUFWriter(HERE / "tiny_llama.gguf", "llama")
add_hparams(w, LAYERS, DIM, FFN, HEADS, KV_HEADS, EPS, THETA, VOCAB)

weights = {}  # name -> float64 as the file stores it


def put(name, array, kind=None):
    if kind == "q8_0":
        blocks = gguf.quants.quantize(array, T.Q8_0)
        w.add_tensor(name, blocks, raw_dtype=T.Q8_0)
        weights[name] = gguf.quants.dequantize(blocks, T.Q8_0).astype(np.float64)
    elif kind == "f16":
        half = array.astype(np.float16)
        w.add_tensor(name, half)
        weights[name] = half.astype(np.float64)
    else:
        w.add_tensor(name, array)
        weights[name] = array.astype(np.float64)


put("token_embd.weight", weight(VOCAB, DIM, scale=1.0))
for i in range(LAYERS):
    b = f"blk.{i}."
    put(b + "attn_norm.weight", (1.0 + 0.1 * rng.standard_normal(DIM)).astype(np.float32))
    put(b + "attn_q.weight", weight(DIM, DIM))
    put(b + "attn_k.weight", weight(KV_HEADS * HEAD, DIM))
    put(b + "attn_v.weight", weight(KV_HEADS * HEAD, DIM), "f16" if i == 1 else None)
    put(b + "attn_output.weight", weight(DIM, DIM))
    put(b + "ffn_norm.weight", (1.0 + 0.1 * rng.standard_normal(DIM)).astype(np.float32))
    put(b + "ffn_gate.weight", weight(FFN, DIM))
    put(b + "ffn_up.weight", weight(FFN, DIM))
    put(b + "ffn_down.weight", weight(DIM, FFN), "q8_0" if i == 0 else None)
put("output_norm.weight", (1.0 + 0.1 * rng.standard_normal(DIM)).astype(np.float32))
put("output.weight", weight(VOCAB, DIM))
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()


reference(
    HERE / "tiny_llama_reference.npz",
    weights,
    dict(DIM=DIM, LAYERS=LAYERS, HEADS=HEADS, KV_HEADS=KV_HEADS, EPS=EPS, THETA=THETA),
    PROMPT,
    STEPS,
)
