"""A tiny Qwen2-architecture GGUF model with random weights, written by
gguf-py, and its NumPy forward pass, for tests/llama.rs (`pip install gguf
numpy`):

    python3 tests/data/make_tiny_qwen2.py

What sets it apart from the tiny Llamas, as Qwen2's files are laid out:
rotary embeddings in NeoX's layout (feature i with i + head / 2), biases
on the q, k and v products, no output matrix (the embeddings are read back
as it) but an output bias (llama.cpp's qwen2 adds it either way), and heads whose size is not the width over the heads
(`qwen2.attention.key_length`: 4 heads of 24 over a width of 64). Weights
are f32 except Q8_0 and Q4_0 products and an f16 embedding table.
tiny_qwen2_reference.npz holds the logits of a prompt and a greedy
continuation.
"""

import pathlib

import gguf
import numpy as np
from gguf import GGMLQuantizationType as T
from tiny_llama_forward import RandomTensors, add_hparams, reference

HERE = pathlib.Path(__file__).parent
rng = np.random.default_rng(23)

DIM, LAYERS, HEADS, KV_HEADS, HEAD, FFN, VOCAB = 64, 2, 4, 2, 24, 96, 60
EPS, THETA = 1e-6, 1000000.0
PROMPT = [5, 41, 17, 2, 59, 33, 8]
STEPS = 6

w = gguf.GGUFWriter(HERE / "tiny_qwen2.gguf", "qwen2")
add_hparams(w, LAYERS, DIM, FFN, HEADS, KV_HEADS, EPS, THETA, VOCAB, head=HEAD)

tensors = RandomTensors(w, rng)
put = tensors.put


def norm(name):
    tensors.norm(name, DIM)


put("token_embd.weight", (VOCAB, DIM), "f16", scale=1.0)
for i in range(LAYERS):
    b = f"blk.{i}."
    norm(b + "attn_norm.weight")
    put(b + "attn_q.weight", (HEADS * HEAD, DIM), T.Q8_0 if i == 0 else None)
    put(b + "attn_q.bias", (HEADS * HEAD,), scale=0.5)
    put(b + "attn_k.weight", (KV_HEADS * HEAD, DIM))
    put(b + "attn_k.bias", (KV_HEADS * HEAD,), scale=0.5)
    put(b + "attn_v.weight", (KV_HEADS * HEAD, DIM), T.Q4_0 if i == 1 else None)
    put(b + "attn_v.bias", (KV_HEADS * HEAD,), scale=0.5)
    put(b + "attn_output.weight", (DIM, HEADS * HEAD))
    norm(b + "ffn_norm.weight")
    put(b + "ffn_gate.weight", (FFN, DIM), T.Q8_0)
    put(b + "ffn_up.weight", (FFN, DIM))
    put(b + "ffn_down.weight", (DIM, FFN), T.Q8_0 if i == 0 else None)
norm("output_norm.weight")
put("output.bias", (VOCAB,), scale=0.5)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()

reference(
    HERE / "tiny_qwen2_reference.npz",
    tensors.weights,
    dict(DIM=DIM, LAYERS=LAYERS, HEADS=HEADS, KV_HEADS=KV_HEADS, HEAD=HEAD, NEOX=True, EPS=EPS, THETA=THETA),
    PROMPT,
    STEPS,
)
