"""Writes torch_axis_activation_cases.npz for tests/nn.rs: PyTorch's (CPU)
`logsumexp`, `softmin`, `glu` and `prelu`, the ops that read along an axis
or a channel, in f32, f16 and bf16 (and i32 for logsumexp, which gives
f32). Each case `{name}` holds `{name}_x` (the input, as f32, or as i32),
`{name}_spec` (f64: [dtype code 0 f32 / 1 f16 / 2 bf16 / 3 i32, keepdim,
axes...]; for prelu [dtype, 0, weight length]), `{name}_w` (prelu's
weight, f32) and `{name}_y` (the result as f32, which holds f16 and bf16
exactly). Lines hold -inf, +inf and NaN, values past exp's f32 range, and
an empty axis. Run from tests/data with `python3
make_axis_activation_cases.py` (PyTorch 2.15 wrote the committed file)."""
import numpy as np
import torch
import torch.nn.functional as F

rng = np.random.default_rng(7)
inf, nan = np.inf, np.nan
dtypes = [(torch.float32, 0), (torch.float16, 1), (torch.bfloat16, 2)]
cases = {}


def add(name, x, spec, y, w=None):
    cases[f"{name}_x"] = x
    cases[f"{name}_spec"] = np.array(spec, dtype=np.float64)
    cases[f"{name}_y"] = y.to(torch.float32).numpy() if y.dtype != torch.int32 else y.numpy()
    if w is not None:
        cases[f"{name}_w"] = w


# logsumexp: rows of noise, a row of -inf only, one with +inf, one with
# NaN, one with +inf and -inf, one near 1000 (exp overflows unshifted), and
# one near -1000 (underflows).
a = (rng.standard_normal((7, 37)) * 10).astype(np.float32)
a[1, :] = -inf
a[2, 5] = inf
a[3, 30] = nan
a[4, 0], a[4, 1] = inf, -inf
a[5] += 1000
a[6] -= 1000
b = (rng.standard_normal((3, 4, 50)) * 30).astype(np.float32)
for torch_dtype, code in dtypes:
    for name, x, axes, keep in [
        ("rows", a, (1,), False),
        ("rows_keep", a, (1,), True),
        ("cols", a, (0,), False),
        ("all", b, (0, 1, 2), False),
        ("outer", b, (0, 2), True),
        ("last", b, (-1,), False),
    ]:
        t = torch.from_numpy(x).to(torch_dtype)
        y = torch.logsumexp(t, axes, keepdim=keep)
        add(f"lse_{name}_{code}", x, [code, keep, *axes], y)
empty = np.zeros((0, 3), dtype=np.float32)
add("lse_empty_0", empty, [0, 0, 0], torch.logsumexp(torch.from_numpy(empty), 0))
ints = rng.integers(-50, 50, (4, 6)).astype(np.int32)
add("lse_ints_3", ints, [3, 0, 1], torch.logsumexp(torch.from_numpy(ints), 1))

# softmin: rows across a softmax's workgroup, with infinities.
s = (rng.standard_normal((5, 300)) * 5).astype(np.float32)
s[1, 3] = -inf
s[2, :] = inf
for torch_dtype, code in dtypes:
    for axis in (1, 0):
        t = torch.from_numpy(s).to(torch_dtype)
        add(f"softmin_{axis}_{code}", s, [code, 0, axis], F.softmin(t, axis))

# glu over the last axis and over the first.
g = (rng.standard_normal((6, 10)) * 4).astype(np.float32)
g[0, 7] = inf
g[1, 8] = -inf
g[2, 2] = nan
for torch_dtype, code in dtypes:
    for axis in (-1, 0):
        t = torch.from_numpy(g).to(torch_dtype)
        add(f"glu_{axis}_{code}", g, [code, 0, axis], F.glu(t, axis))

# prelu: a slope per channel and one for all, on rank 3 and rank 1.
p3 = (rng.standard_normal((2, 3, 5)) * 3).astype(np.float32)
p3[0, 0, 0], p3[1, 2, 4], p3[0, 1, 1] = nan, -inf, -0.0
p1 = (rng.standard_normal(7) * 3).astype(np.float32)
for torch_dtype, code in dtypes:
    for name, x, w in [
        ("channels", p3, np.array([0.25, -0.5, 3.0], dtype=np.float32)),
        ("one", p3, np.array([0.1], dtype=np.float32)),
        ("vector", p1, np.array([-2.0], dtype=np.float32)),
    ]:
        t = torch.from_numpy(x).to(torch_dtype)
        y = F.prelu(t, torch.from_numpy(w).to(torch_dtype))
        add(f"prelu_{name}_{code}", x, [code, 0, len(w)], y, w)

np.savez("torch_axis_activation_cases.npz", **cases)
