"""Rotary embeddings and scaled dot-product attention as NumPy computes
them, in f32, for tests/attention.rs (`pip install numpy`):

    python3 tests/data/make_attention_cases.py

Rotary tables as Hugging Face's Llama makes them (`inv_freq = 1 / theta **
(arange(0, d, 2) / d)`, angles = positions x inv_freq, all f32); rotations in
the half-split layout (GPT-NeoX, Hugging Face's `rotate_half`) and the
interleaved one (GPT-J, ggml's normal mode), each `x1 cos - x2 sin`,
`x2 cos + x1 sin` rounded as written. Attention as PyTorch's reference code
for `scaled_dot_product_attention` writes it (`q @ k^T * scale`, a bias of
-inf where masked, softmax (a row of -inf scores alone: weights of 0, as
PyTorch's safe softmax since 2.5), `@ v`), with grouped-query heads (k and v heads
repeated), the float64 result rounded to f32; and (`NAME_out_f16`,
`NAME_out_bf16`, `pip install ml_dtypes`) from operands rounded to f16 and
bf16, the result rounded once to each. Scaled rotary frequencies ("llama3",
"linear", ggml's rope_freqs factors) as Hugging Face computes them in f32,
and rotations by them.
"""

import math
import pathlib

import ml_dtypes
import numpy as np

HERE = pathlib.Path(__file__).parent
rng = np.random.default_rng(20261129)
f32 = np.float32
cases = {}


def tables(start, length, dim, theta):
    inv = f32(1.0) / (f32(theta) ** (np.arange(0, dim, 2, dtype=f32) / f32(dim)))
    t = np.arange(start, start + length, dtype=f32)
    angles = np.outer(t, inv).astype(f32)
    return np.cos(angles).astype(f32), np.sin(angles).astype(f32)


def rotate(x, cos, sin, style):
    h = x.shape[-1] // 2
    if style == "half":
        x1, x2 = x[..., :h], x[..., h:]
    else:
        x1, x2 = x[..., 0::2], x[..., 1::2]
    a = x1 * cos - x2 * sin
    b = x2 * cos + x1 * sin
    out = np.empty_like(x)
    if style == "half":
        out[..., :h], out[..., h:] = a, b
    else:
        out[..., 0::2], out[..., 1::2] = a, b
    return out


for k, (start, length, dim, theta) in enumerate(
    [(0, 5, 8, 10000.0), (37, 3, 64, 10000.0), (1000, 1, 128, 500000.0), (0, 17, 6, 100.0)]
):
    cos, sin = tables(start, length, dim, theta)
    x = rng.standard_normal((2, 3, length, dim)).astype(f32)
    cases[f"rope{k}_x"] = x
    cases[f"rope{k}_cos"] = cos
    cases[f"rope{k}_sin"] = sin
    cases[f"rope{k}_args"] = np.array([start, length, dim, theta], dtype=np.float64)
    for style in ["half", "interleaved"]:
        cases[f"rope{k}_{style}"] = rotate(x, cos, sin, style)


def attention(q, k, v, mask=None, causal=False, scale=None, out=f32):
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    hq, hk = q.shape[-3], k.shape[-3]
    if hq != hk:
        k = np.repeat(k, hq // hk, axis=-3)
        v = np.repeat(v, hq // hk, axis=-3)
    length, source = q.shape[-2], k.shape[-2]
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    bias = np.zeros((length, source))
    if causal:
        bias[~np.tril(np.ones((length, source), dtype=bool))] = -np.inf
    if mask is not None:
        bias = np.where(mask, 0.0, -np.inf) if mask.dtype == bool else bias + mask
    w = q @ np.swapaxes(k, -1, -2) * scale + bias
    # PyTorch's safe softmax (since 2.5): a row of -inf scores alone has
    # weights of 0, not NaN.
    nothing = np.all(w == -np.inf, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        w = np.exp(w - w.max(axis=-1, keepdims=True))
        w = w / w.sum(axis=-1, keepdims=True)
    w = np.where(nothing, 0.0, w)
    return (w @ v).astype(out)


attn = [
    # name, q shape, k shape, v's last extent, mask kind, causal, scale
    ("plain", (2, 4, 5, 8), (2, 4, 7, 8), 8, None, False, None),
    ("causal", (1, 2, 9, 16), (1, 2, 9, 16), 16, None, True, None),
    ("causal_wide", (1, 2, 3, 16), (1, 2, 11, 16), 12, None, True, 0.3),
    ("gqa", (2, 8, 6, 32), (2, 2, 10, 32), 32, None, False, None),
    ("gqa_causal", (1, 6, 7, 8), (1, 3, 7, 8), 4, None, True, None),
    ("bool_mask", (2, 3, 4, 8), (2, 3, 6, 8), 8, "bool", False, None),
    ("float_mask", (3, 5, 8), (3, 6, 8), 5, "float", False, None),
    ("decode", (1, 4, 1, 64), (1, 2, 130, 64), 64, None, False, None),
    # Across the flash kernel's tiles (16 queries, 32/16/8 keys), head and
    # value quads, and splits of the keys (partial results merged).
    ("tiles", (1, 3, 37, 24), (1, 3, 70, 24), 20, None, False, None),
    ("tiles_causal", (2, 2, 50, 64), (2, 2, 50, 64), 64, None, True, None),
    ("wide_head", (1, 1, 20, 256), (1, 1, 40, 256), 256, None, False, 0.05),
    ("odd_heads", (2, 17, 3), (2, 33, 3), 5, "bool", False, None),
    ("float_mask_rows", (1, 2, 18, 8), (1, 2, 35, 8), 8, "float_inf", False, None),
    ("head_mask", (1, 4, 5, 16), (1, 2, 33, 16), 16, "bool_heads", False, None),
]
for name, qs, ks, ev, mask_kind, causal, scale in attn:
    q = rng.standard_normal(qs).astype(f32)
    k = rng.standard_normal(ks).astype(f32)
    v = rng.standard_normal(ks[:-1] + (ev,)).astype(f32)
    mask = None
    if mask_kind == "bool":
        mask = rng.random((qs[-2], ks[-2])) < 0.7
        mask[:, 0] = True  # every row attends somewhere
    elif mask_kind == "float":
        mask = rng.standard_normal((qs[-2], ks[-2])).astype(f32)
    elif mask_kind == "float_inf":
        # -inf biases, and a row masked whole (zeros, as PyTorch's safe
        # softmax gives it).
        mask = rng.standard_normal((qs[-2], ks[-2])).astype(f32)
        mask[rng.random(mask.shape) < 0.3] = -np.inf
        mask[5] = -np.inf
    elif mask_kind == "bool_heads":
        # One mask a head, broadcast over the queries.
        mask = rng.random((qs[-3], 1, ks[-2])) < 0.6
        mask[..., 0] = True
    for part, value in [("q", q), ("k", k), ("v", v)]:
        cases[f"{name}_{part}"] = value
    if mask is not None:
        cases[f"{name}_mask"] = mask
    cases[f"{name}_scale"] = np.array([np.nan if scale is None else scale])
    cases[f"{name}_causal"] = np.array([causal])
    cases[f"{name}_out"] = attention(q, k, v, mask, causal, scale)
    # The same from operands (and a float mask) rounded to f16 and bf16,
    # the float64 result rounded once to each, held as f32.
    for half, dtype in [("f16", np.float16), ("bf16", ml_dtypes.bfloat16)]:
        r = lambda a: a.astype(dtype).astype(np.float64)
        m = mask if mask is None or mask.dtype == bool else r(mask)
        y = attention(r(q), r(k), r(v), m, causal, scale, out=dtype)
        cases[f"{name}_out_{half}"] = y.astype(f32)



def scaled_frequencies(dim, theta, kind, factor=1.0, low=1.0, high=4.0, old=8192, factors=None):
    """The frequencies of a scaled rotary embedding as Hugging Face's
    `ROPE_INIT_FUNCTIONS` compute them in f32 tensors ("linear": divided
    by the factor; "llama3": `_compute_llama3_parameters`, its Python
    scalars rounded to f32 and `scalar / tensor` as the tensor's
    reciprocal times the scalar, as torch computes them), or divided by
    ggml's per-frequency factors ("factors", a GGUF file's rope_freqs)."""
    inv = f32(1.0) / (f32(theta) ** (np.arange(0, dim, 2, dtype=f32) / f32(dim)))
    if kind == "linear":
        return inv / f32(factor)
    if kind == "factors":
        return inv / factors
    assert kind == "llama3"
    long_wl, short_wl = f32(old / low), f32(old / high)
    wavelen = (f32(1.0) / inv) * f32(2 * math.pi)
    llama = np.where(wavelen > long_wl, inv / f32(factor), inv)
    smooth = ((f32(1.0) / wavelen) * f32(old) - f32(low)) / f32(high - low)
    smoothed = (f32(1.0) - smooth) * llama / f32(factor) + smooth * llama
    medium = ~(wavelen < short_wl) & ~(wavelen > long_wl)
    return np.where(medium, smoothed, llama).astype(f32)


# Scaled rotary frequencies: Llama 3.1's own settings, a llama3 scaling
# whose three bands fall in 8 frequencies, linear interpolation, and
# ggml's factors. `rs{k}_kind`: [kind (0 llama3, 1 linear, 2 factors),
# factor, low, high, old].
scaling_rng = np.random.default_rng(20261130)
KINDS = {"llama3": 0, "linear": 1, "factors": 2}
for k, (start, length, dim, theta, kind, kw) in enumerate(
    [
        (8000, 3, 128, 500000.0, "llama3", dict(factor=8.0, low=1.0, high=4.0, old=8192)),
        (20, 5, 16, 10000.0, "llama3", dict(factor=8.0, low=1.0, high=4.0, old=32)),
        (100, 4, 64, 10000.0, "linear", dict(factor=4.0)),
        (30, 5, 16, 10000.0, "factors", dict(factors=scaling_rng.uniform(1, 8, 8).astype(f32))),
    ]
):
    freqs = scaled_frequencies(dim, theta, kind, **kw)
    angles = np.outer(np.arange(start, start + length, dtype=f32), freqs).astype(f32)
    cos, sin = np.cos(angles).astype(f32), np.sin(angles).astype(f32)
    x = scaling_rng.standard_normal((2, length, dim)).astype(f32)
    cases[f"rs{k}_freqs"] = freqs
    cases[f"rs{k}_x"] = x
    cases[f"rs{k}_args"] = np.array([start, length, dim, theta], dtype=np.float64)
    cases[f"rs{k}_kind"] = np.array(
        [KINDS[kind], kw.get("factor", 1.0), kw.get("low", 1.0), kw.get("high", 4.0), kw.get("old", 0)],
        dtype=np.float64,
    )
    if kind == "factors":
        cases[f"rs{k}_factors"] = kw["factors"]
    for style in ["half", "interleaved"]:
        cases[f"rs{k}_{style}"] = rotate(x, cos, sin, style)

np.savez(HERE / "attention_cases.npz", **cases)
