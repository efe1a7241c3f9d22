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
w.add_block_count(LAYERS)
w.add_context_length(64)
w.add_embedding_length(DIM)
w.add_feed_forward_length(FFN)
w.add_head_count(HEADS)
w.add_head_count_kv(KV_HEADS)
w.add_rope_freq_base(THETA)
w.add_layer_norm_rms_eps(EPS)
w.add_vocab_size(VOCAB)

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


def rms_norm(x, g):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS) * g


def rope(x, start):
    # x: (heads, seq, HEAD); ggml's normal mode: pairs (2i, 2i + 1).
    seq = x.shape[-2]
    inv = 1.0 / THETA ** (np.arange(0, HEAD, 2) / HEAD)
    angles = np.outer(np.arange(start, start + seq), inv)
    cos, sin = np.cos(angles), np.sin(angles)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = x1 * cos - x2 * sin
    out[..., 1::2] = x2 * cos + x1 * sin
    return out


def forward(tokens):
    """Logits of every position of `tokens`, all at once (causal)."""
    x = weights["token_embd.weight"][tokens]
    seq = len(tokens)
    for i in range(LAYERS):
        b = f"blk.{i}."
        h = rms_norm(x, weights[b + "attn_norm.weight"])
        q = (h @ weights[b + "attn_q.weight"].T).reshape(seq, HEADS, HEAD).transpose(1, 0, 2)
        k = (h @ weights[b + "attn_k.weight"].T).reshape(seq, KV_HEADS, HEAD).transpose(1, 0, 2)
        v = (h @ weights[b + "attn_v.weight"].T).reshape(seq, KV_HEADS, HEAD).transpose(1, 0, 2)
        q, k = rope(q, 0), rope(k, 0)
        k = np.repeat(k, HEADS // KV_HEADS, axis=0)
        v = np.repeat(v, HEADS // KV_HEADS, axis=0)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(HEAD)
        s[:, ~np.tril(np.ones((seq, seq), dtype=bool))] = -np.inf
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        s /= s.sum(axis=-1, keepdims=True)
        att = (s @ v).transpose(1, 0, 2).reshape(seq, DIM)
        x = x + att @ weights[b + "attn_output.weight"].T
        h = rms_norm(x, weights[b + "ffn_norm.weight"])
        gate = h @ weights[b + "ffn_gate.weight"].T
        up = h @ weights[b + "ffn_up.weight"].T
        x = x + (gate / (1.0 + np.exp(-gate)) * up) @ weights[b + "ffn_down.weight"].T
    x = rms_norm(x, weights["output_norm.weight"])
    return x @ weights["output.weight"].T


logits = forward(PROMPT)
tokens = list(PROMPT)
for _ in range(STEPS):
    tokens.append(int(np.argmax(forward(tokens)[-1])))
# Greedy picks are only a test when no two logits nearly tie.
margins = [np.sort(forward(tokens[: len(PROMPT) + s])[-1])[-2:] for s in range(STEPS)]
assert min(b - a for a, b in margins) > 1e-3, margins
np.savez(
    HERE / "tiny_llama_reference.npz",
    prompt=np.array(PROMPT, dtype=np.int32),
    logits=logits.astype(np.float32),
    greedy=np.array(tokens[len(PROMPT):], dtype=np.int32),
)
