"""The NumPy forward pass of the tiny Llama-architecture models that
make_tiny_llama.py, make_tiny_llama_quant.py, make_tokenizer_cases.py and
make_tiny_qwen2.py and make_tiny_llama_scaled.py write, and the reference they save for tests/llama.rs:
float64, causal, grouped-query attention, rotary embeddings in ggml's
normal (interleaved) layout or, for Qwen2, NeoX's halves, SwiGLU; biases
on q, k and v where the weights have them, a head size apart from the
width where `dims` gives HEAD, the embeddings as the output matrix
where there is none, and rotary frequencies divided as llama.cpp divides
them where `dims` gives FREQ_DIVISOR.
"""

import gguf
import numpy as np
from gguf import GGMLQuantizationType as T


def add_hparams(w, layers, dim, ffn, heads, kv_heads, eps, theta, vocab, head=None):
    """The hyperparameters llama.cpp reads of a Llama-architecture file,
    in the order every tiny model writes them (`head`: key and value
    lengths where they are not the width over the heads)."""
    w.add_block_count(layers)
    w.add_context_length(64)
    w.add_embedding_length(dim)
    w.add_feed_forward_length(ffn)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    if head is not None:
        w.add_key_length(head)
        w.add_value_length(head)
    w.add_rope_freq_base(theta)
    w.add_layer_norm_rms_eps(eps)
    w.add_vocab_size(vocab)


class RandomTensors:
    """Random tensors written into a GGUFWriter `w` from `rng`, and their
    values as the file stores them in float64 (`weights`; quantized ones as
    gguf-py decodes them), the reference's input."""

    def __init__(self, w, rng):
        self.w, self.rng, self.weights = w, rng, {}

    def put(self, name, shape, kind=None, scale=None):
        """Normal values of `scale` (1 / sqrt(the last extent) by default),
        stored as f32, f16 ("f16") or Q8_0/Q4_0 blocks (`kind`)."""
        scale = scale if scale is not None else 1.0 / np.sqrt(shape[-1])
        array = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        if kind in (T.Q8_0, T.Q4_0):
            blocks = gguf.quants.quantize(array, kind)
            self.w.add_tensor(name, blocks, raw_dtype=kind)
            self.weights[name] = gguf.quants.dequantize(blocks, kind).astype(np.float64)
        elif kind == "f16":
            self.w.add_tensor(name, array.astype(np.float16))
            self.weights[name] = array.astype(np.float16).astype(np.float64)
        else:
            self.w.add_tensor(name, array)
            self.weights[name] = array.astype(np.float64)

    def norm(self, name, dim):
        """A norm's weight: 1 plus a tenth of normal values."""
        array = (1.0 + 0.1 * self.rng.standard_normal(dim)).astype(np.float32)
        self.w.add_tensor(name, array)
        self.weights[name] = array.astype(np.float64)


def reference(path, weights, dims, prompt, steps):
    """Saves the logits of `prompt` and `steps` greedy tokens after it.

    `weights` maps tensor names to float64 arrays as the file stores them
    (quantized ones as gguf-py decodes them); `dims` holds DIM, LAYERS,
    HEADS, KV_HEADS, EPS and THETA, and optionally HEAD, NEOX,
    FREQ_DIVISOR (what the rotary frequencies are divided by) and
    ATTN_FACTOR (what the rotated q and k are multiplied by).
    """
    DIM, LAYERS, HEADS, KV_HEADS = (dims[k] for k in ("DIM", "LAYERS", "HEADS", "KV_HEADS"))
    EPS, THETA = dims["EPS"], dims["THETA"]
    HEAD = dims.get("HEAD", DIM // HEADS)
    NEOX = dims.get("NEOX", False)
    # Scaled frequencies: each divided by this (a number, or one a pair).
    FREQ_DIVISOR = dims.get("FREQ_DIVISOR", 1.0)
    # rope.scaling.attn_factor: llama.cpp multiplies the rotary tables by
    # it, so q and k grow by it.
    ATTN_FACTOR = dims.get("ATTN_FACTOR", 1.0)

    def rms_norm(x, g):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS) * g

    def rope(x, start):
        # x: (heads, seq, HEAD); ggml's normal mode: pairs (2i, 2i + 1).
        seq = x.shape[-2]
        inv = 1.0 / THETA ** (np.arange(0, HEAD, 2) / HEAD) / FREQ_DIVISOR
        angles = np.outer(np.arange(start, start + seq), inv)
        cos, sin = np.cos(angles), np.sin(angles)
        if NEOX:
            # Feature i with feature i + HEAD / 2.
            x1, x2 = x[..., : HEAD // 2], x[..., HEAD // 2 :]
            return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)
        x1, x2 = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = x1 * cos - x2 * sin
        out[..., 1::2] = x2 * cos + x1 * sin
        return out

    def linear(h, name):
        y = h @ weights[name + ".weight"].T
        bias = weights.get(name + ".bias")
        return y if bias is None else y + bias

    def forward(tokens):
        """Logits of every position of `tokens`, all at once (causal)."""
        x = weights["token_embd.weight"][tokens]
        seq = len(tokens)
        for i in range(LAYERS):
            b = f"blk.{i}."
            h = rms_norm(x, weights[b + "attn_norm.weight"])
            q = linear(h, b + "attn_q").reshape(seq, HEADS, HEAD).transpose(1, 0, 2)
            k = linear(h, b + "attn_k").reshape(seq, KV_HEADS, HEAD).transpose(1, 0, 2)
            v = linear(h, b + "attn_v").reshape(seq, KV_HEADS, HEAD).transpose(1, 0, 2)
            q, k = rope(q, 0) * ATTN_FACTOR, rope(k, 0) * ATTN_FACTOR
            k = np.repeat(k, HEADS // KV_HEADS, axis=0)
            v = np.repeat(v, HEADS // KV_HEADS, axis=0)
            s = q @ k.transpose(0, 2, 1) / np.sqrt(HEAD)
            s[:, ~np.tril(np.ones((seq, seq), dtype=bool))] = -np.inf
            s = np.exp(s - s.max(axis=-1, keepdims=True))
            s /= s.sum(axis=-1, keepdims=True)
            att = (s @ v).transpose(1, 0, 2).reshape(seq, HEADS * HEAD)
            x = x + att @ weights[b + "attn_output.weight"].T
            h = rms_norm(x, weights[b + "ffn_norm.weight"])
            gate = h @ weights[b + "ffn_gate.weight"].T
            up = h @ weights[b + "ffn_up.weight"].T
            x = x + (gate / (1.0 + np.exp(-gate)) * up) @ weights[b + "ffn_down.weight"].T
        x = rms_norm(x, weights["output_norm.weight"])
        logits = x @ weights.get("output.weight", weights["token_embd.weight"]).T
        return logits + weights.get("output.bias", 0.0)

    logits = forward(prompt)
    tokens = list(prompt)
    for _ in range(steps):
        tokens.append(int(np.argmax(forward(tokens)[-1])))
    # Greedy picks are only a test when no two logits nearly tie.
    margins = [np.sort(forward(tokens[: len(prompt) + s])[-1])[-2:] for s in range(steps)]
    assert min(b - a for a, b in margins) > 1e-3, margins
    # Each decoding step's logits: the whole sequence's rows at the
    # positions of the tokens fed one at a time (the last prompt token's
    # row is the prompt's; the last greedy token is never fed).
    decode = forward(tokens[:-1])[len(prompt):]
    np.savez(
        path,
        prompt=np.array(prompt, dtype=np.int32),
        logits=logits.astype(np.float32),
        greedy=np.array(tokens[len(prompt):], dtype=np.int32),
        decode_logits=decode.astype(np.float32),
    )
