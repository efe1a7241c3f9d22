"""Writes torch_norm_cases.npz for tests/nn.rs: PyTorch's (CPU)
`layer_norm` and `rms_norm` of random tensors, with and without weight and
bias, over one and two trailing axes, lines shorter and longer than a GPU
workgroup, rows far from 0 (a one-pass variance would lose them), a
constant row (variance 0), and f16 and bf16 inputs (rms_norm's default eps
on rows of small values). Each case NAME has
`NAME_x` (input), `NAME_w` and `NAME_b` where given, `NAME_y` (PyTorch's
result; bf16 values stored as f32, which holds them exactly) and
`NAME_spec` = [trailing axes normalised, eps (NaN: rms_norm's default),
rms (1) or layer (0), dtype (0 f32, 1 f16, 2 bf16)]. Run from tests/data
with `python3 make_norm_cases.py` (PyTorch 2.15 wrote the committed
file)."""
import numpy as np
import torch
import torch.nn.functional as F

# rms_norm's default eps for f16 and bf16 is f32's machine epsilon from
# PyTorch 2.7 on (pytorch#142848); older versions use the half type's own,
# which changes the `rms_*_small` cases by far.
assert tuple(int(v) for v in torch.__version__.split(".")[:2]) >= (2, 7), torch.__version__

rng = np.random.default_rng(5)
cases = {}
DTYPES = {0: torch.float32, 1: torch.float16, 2: torch.bfloat16}


def add(name, shape, k, eps, rms, weight, bias=False, dtype=0, offset=0.0, scale=1.0):
    x = (rng.standard_normal(shape) * scale + offset).astype(np.float32)
    if name == "ln_constant":
        x[1, :] = 7.25
    tx = torch.from_numpy(x).to(DTYPES[dtype])
    norm_shape = list(shape[-k:])
    w = torch.from_numpy(rng.standard_normal(norm_shape).astype(np.float32)).to(DTYPES[dtype]) if weight else None
    b = torch.from_numpy(rng.standard_normal(norm_shape).astype(np.float32)).to(DTYPES[dtype]) if bias else None
    if rms:
        y = F.rms_norm(tx, norm_shape, w, eps)
    else:
        y = F.layer_norm(tx, norm_shape, w, b, eps)
    f = lambda t: t.to(torch.float32).numpy()
    cases[name + "_x"] = f(tx)
    if w is not None:
        cases[name + "_w"] = f(w)
    if b is not None:
        cases[name + "_b"] = f(b)
    cases[name + "_y"] = f(y)
    cases[name + "_spec"] = np.array([k, np.nan if eps is None else eps, rms, dtype], np.float64)


add("ln_affine", (2, 3, 5), 1, 1e-5, 0, True, True, offset=1000.0, scale=3.0)
add("ln_two_axes", (4, 6, 7), 2, 1e-5, 0, True)
add("ln_constant", (3, 8), 1, 1e-3, 0, False)
add("ln_wide", (2, 300), 1, 1e-5, 0, True, True)
add("ln_long", (1, 5000), 1, 1e-5, 0, False, True, offset=-50.0)
add("ln_f16", (4, 16), 1, 1e-5, 0, True, True, dtype=1)
add("ln_bf16", (3, 40), 1, 1e-5, 0, True, True, dtype=2)
add("rms_default", (3, 8), 1, None, 1, True)
add("rms_two_axes", (2, 4, 3), 2, 1e-3, 1, False)
add("rms_wide", (2, 1000), 1, 1e-6, 1, True, scale=10.0)
add("rms_f16", (3, 32), 1, None, 1, True, dtype=1)
add("rms_bf16", (2, 50), 1, None, 1, True, dtype=2)
# Rows whose mean square is near the default eps of the halves' own
# machine epsilon: PyTorch's default is f32's for f16 and bf16 too.
add("rms_f16_small", (3, 32), 1, None, 1, False, dtype=1, scale=1e-3)
add("rms_bf16_small", (2, 24), 1, None, 1, True, dtype=2, scale=3e-3)
np.savez("torch_norm_cases.npz", **cases)
