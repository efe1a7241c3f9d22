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
from tiny_llama_forward import add_hparams, reference

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
add_hparams(w, LAYERS, DIM, FFN, HEADS, KV_HEADS, EPS, THETA, VOCAB)

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


reference(
    HERE / "tiny_llama_quant_reference.npz",
    weights,
    dict(DIM=DIM, LAYERS=LAYERS, HEADS=HEADS, KV_HEADS=KV_HEADS, EPS=EPS, THETA=THETA),
    PROMPT,
    STEPS,
)
