"""A tiny Llama-architecture GGUF model whose products' weights are
quantized blocks of every type webtensor's products take, written by
gguf-py, and its forward pass in NumPy, for tests/llama.rs (`pip install
gguf numpy`):

    python3 tests/data/make_tiny_llama_quant.py

The model: 2 blocks, 256 features (whole k-quant blocks), 4 query heads of
64 and 2 key/value heads, a SwiGLU feed-forward of 512, a vocabulary of 50,
RMS norms, rotary embeddings in ggml's normal (interleaved) layout. The
embedding and the norms are f32; the fourteen block products and the output
are Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 (gguf-py's quantizer) and Q2_K to
Q6_K (random blocks with moderate scales: gguf-py decodes k-quants but does
not make them). The NumPy pass (float64, from the weights as gguf-py
dequantizes them) gives the logits of a prompt and a greedy continuation:
tiny_llama_quant_reference.npz.
"""

import pathlib

import gguf
import numpy as np
from gguf import GGMLQuantizationType as T

HERE = pathlib.Path(__file__).parent
rng = np.random.default_rng(16)

DIM, LAYERS, HEADS, KV_HEADS, FFN, VOCAB = 256, 2, 4, 2, 512, 50
HEAD = DIM // HEADS
EPS, THETA = 1e-5, 10000.0
PROMPT = [3, 17, 42, 8, 8, 29, 1]
STEPS = 6

# Where each k-quant block keeps its f16 scales, and a scale that gives its
# values a spread of about 1 / sqrt(256).
K_SCALES = {
    T.Q2_K: ([80, 82], 0.005),
    T.Q3_K: ([108], 0.002),
    T.Q4_K: ([0, 2], 0.00025),
    T.Q5_K: ([0, 2], 0.00012),
    T.Q6_K: ([208], 0.00006),
}


def weight(*shape, scale=None):
    scale = scale if scale is not None else 1.0 / np.sqrt(shape[-1])
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def k_blocks(kind, rows, cols):
    """Random blocks of a k-quant type for a (rows, cols) weight."""
    size, width = gguf.GGML_QUANT_SIZES[kind]
    blocks = rng.integers(0, 256, (rows, cols // size, width), dtype=np.uint8)
    at, scale = K_SCALES[kind]
    for a in at:
        d = (scale * (0.5 + rng.random((rows, cols // size)))).astype(np.float16)
        blocks[:, :, a : a + 2] = d.view(np.uint8).reshape(rows, cols // size, 2)
    return blocks.reshape(rows, cols // size * width)


w = gguf.GGUFWriter(HERE / "tiny_llama_quant.gguf", "llama")
w.add_block_count(LAYERS)
w.add_context_length(64)
w.add_embedding_length(DIM)
w.add_feed_forward_length(FFN)
w.add_head_count(HEADS)
w.add_head_count_kv(KV_HEADS)
w.add_rope_freq_base(THETA)
w.add_layer_norm_rms_eps(EPS)
w.add_vocab_size(VOCAB)

weights = {}  # name -> float64 as gguf-py decodes the file's tensor


def put(name, shape, kind=None):
    if kind is None:
        # A norm's gains.
        array = (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
        w.add_tensor(name, array)
        weights[name] = array.astype(np.float64)
        return
    if kind in K_SCALES:
        blocks = k_blocks(kind, *shape)
    else:
        blocks = gguf.quants.quantize(weight(*shape), kind)
    w.add_tensor(name, blocks, raw_dtype=kind)
    weights[name] = gguf.quants.dequantize(blocks, kind).astype(np.float64).reshape(shape)


TYPES = [
    [T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.Q2_K, T.Q3_K],
    [T.Q4_K, T.Q5_K, T.Q6_K, T.Q4_K, T.Q5_K, T.Q6_K, T.Q4_0],
]
embd = weight(VOCAB, DIM, scale=1.0)
w.add_tensor("token_embd.weight", embd)
weights["token_embd.weight"] = embd.astype(np.float64)
for i in range(LAYERS):
    b = f"blk.{i}."
    q, k, v, o, gate, up, down = TYPES[i]
    put(b + "attn_norm.weight", (DIM,))
    put(b + "attn_q.weight", (DIM, DIM), q)
    put(b + "attn_k.weight", (KV_HEADS * HEAD, DIM), k)
    put(b + "attn_v.weight", (KV_HEADS * HEAD, DIM), v)
    put(b + "attn_output.weight", (DIM, DIM), o)
    put(b + "ffn_norm.weight", (DIM,))
    put(b + "ffn_gate.weight", (FFN, DIM), gate)
    put(b + "ffn_up.weight", (FFN, DIM), up)
    put(b + "ffn_down.weight", (DIM, FFN), down)
put("output_norm.weight", (DIM,))
put("output.weight", (VOCAB, DIM), T.Q6_K)
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
    HERE / "tiny_llama_quant_reference.npz",
    prompt=np.array(PROMPT, dtype=np.int32),
    logits=logits.astype(np.float32),
    greedy=np.array(tokens[len(PROMPT):], dtype=np.int32),
)
