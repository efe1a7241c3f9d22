"""Two tiny Llama-architecture GGUF models whose rotary frequencies are
scaled, written by gguf-py, and their NumPy forward passes, for
tests/llama.rs (`pip install gguf numpy`):

    python3 tests/data/make_tiny_llama_scaled.py

- tiny_llama31.gguf: Llama 3.1's "llama3" scaling as llama.cpp's
  converter (convert_hf_to_gguf.py) stores it, a `rope_freqs` tensor of
  per-frequency divisors, computed per element from the f32 frequencies
  (in float64 here, where the converter's tensors are f32: a last bit may
  differ; the reference divides by the stored ones):
  1 for wavelengths below the trained context over high_freq_factor, the
  factor above it over low_freq_factor, and the blend's divisor between.
  The trained context is 32 positions, so that the 8 frequencies of a
  16-feature head fall in all three bands.
- tiny_llama_linear.gguf: `rope.scaling.type` "linear" with
  `rope.scaling.factor` 4 (every frequency divided by 4), and
  `rope.scaling.attn_factor` 1.5 (llama.cpp multiplies the rotary tables
  by it: q and k by 1.5, each score by 2.25).

Both: 1 block, 32 features, 2 query heads of 16 and 1 key/value head, a
SwiGLU of 48, a vocabulary of 40, a Q8_0 gate. The NumPy pass divides the
float64 frequencies as llama.cpp does; tiny_llama31_reference.npz and
tiny_llama_linear_reference.npz hold the logits of a prompt and a greedy
continuation.
"""

import math
import pathlib

import gguf
import numpy as np
from gguf import GGMLQuantizationType as T
from tiny_llama_forward import RandomTensors, add_hparams, reference

HERE = pathlib.Path(__file__).parent

DIM, LAYERS, HEADS, KV_HEADS, FFN, VOCAB = 32, 1, 2, 1, 48, 40
HEAD = DIM // HEADS
EPS, THETA = 1e-5, 10000.0
PROMPT = [3, 17, 22, 8, 8, 29, 1, 36, 12]
STEPS = 6


def llama3_factors(factor=8.0, low=1.0, high=4.0, old=32):
    """convert_hf_to_gguf.py's rope_freqs for a "llama3" scaling (in
    float64)."""
    freqs = 1.0 / (np.float32(THETA) ** (np.arange(0, HEAD, 2, dtype=np.float32) / np.float32(HEAD)))
    low_wavelen, high_wavelen = old / low, old / high
    out = []
    for freq in freqs:
        wavelen = 2 * math.pi / float(freq)
        if wavelen < high_wavelen:
            out.append(1.0)
        elif wavelen > low_wavelen:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def model(name, seed, scaling):
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(HERE / f"{name}.gguf", "llama")
    add_hparams(w, LAYERS, DIM, FFN, HEADS, KV_HEADS, EPS, THETA, VOCAB)
    tensors = RandomTensors(w, rng)
    put = tensors.put
    if scaling == "llama3":
        factors = llama3_factors()
        assert len(set(factors.tolist())) > 2, factors
        w.add_tensor("rope_freqs.weight", factors)
        divisor = factors.astype(np.float64)
    else:
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(4.0)
        w.add_rope_scaling_attn_factors(1.5)
        divisor = 4.0
    put("token_embd.weight", (VOCAB, DIM), scale=1.0)
    for i in range(LAYERS):
        b = f"blk.{i}."
        tensors.norm(b + "attn_norm.weight", DIM)
        put(b + "attn_q.weight", (HEADS * HEAD, DIM))
        put(b + "attn_k.weight", (KV_HEADS * HEAD, DIM))
        put(b + "attn_v.weight", (KV_HEADS * HEAD, DIM))
        put(b + "attn_output.weight", (DIM, HEADS * HEAD))
        tensors.norm(b + "ffn_norm.weight", DIM)
        put(b + "ffn_gate.weight", (FFN, DIM), T.Q8_0)
        put(b + "ffn_up.weight", (FFN, DIM))
        put(b + "ffn_down.weight", (DIM, FFN))
    tensors.norm("output_norm.weight", DIM)
    put("output.weight", (VOCAB, DIM))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    reference(
        HERE / f"{name}_reference.npz",
        tensors.weights,
        dict(DIM=DIM, LAYERS=LAYERS, HEADS=HEADS, KV_HEADS=KV_HEADS, EPS=EPS, THETA=THETA,
             FREQ_DIVISOR=divisor, ATTN_FACTOR=1.0 if scaling == "llama3" else 1.5),
        PROMPT,
        STEPS,
    )


model("tiny_llama31", 31, "llama3")
model("tiny_llama_linear", 41, "linear")
