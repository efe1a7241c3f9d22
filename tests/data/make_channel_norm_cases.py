"""Writes torch_channel_norm_cases.npz for tests/nn.rs: PyTorch's (CPU)
`group_norm` and `batch_norm` (inference: running statistics, training
False) of random tensors of shape (N, C, *), with and without weight and
bias, with no trailing axes and several, groups of one channel and of all
of them, (sample, group) lines shorter and longer than a GPU workgroup,
values far from 0, and f16 and bf16 inputs. Each case NAME has `NAME_x`,
`NAME_w` and `NAME_b` where given, `NAME_mean` and `NAME_var` (batch
norm), `NAME_y` (PyTorch's result; bf16 values stored as f32, which holds
them exactly) and `NAME_spec` = [groups (0 for batch norm), eps, dtype (0
f32, 1 f16, 2 bf16)]. Run from tests/data with `python3
make_channel_norm_cases.py` (PyTorch 2.15 wrote the committed file)."""
import numpy as np
import torch
import torch.nn.functional as F

rng = np.random.default_rng(11)
cases = {}
DTYPES = {0: torch.float32, 1: torch.float16, 2: torch.bfloat16}


def tensor(shape, dtype, offset=0.0, scale=1.0):
    x = (rng.standard_normal(shape) * scale + offset).astype(np.float32)
    return torch.from_numpy(x).to(DTYPES[dtype])


def store(name, tensors, y, spec):
    f = lambda t: t.to(torch.float32).numpy()
    for k, t in tensors.items():
        if t is not None:
            cases[f"{name}_{k}"] = f(t)
    cases[name + "_y"] = f(y)
    cases[name + "_spec"] = np.array(spec, np.float64)


def group(name, shape, groups, eps, weight, bias, dtype=0, offset=0.0, scale=1.0):
    x = tensor(shape, dtype, offset, scale)
    c = shape[1]
    w = tensor((c,), dtype) if weight else None
    b = tensor((c,), dtype) if bias else None
    y = F.group_norm(x, groups, w, b, eps)
    store(name, {"x": x, "w": w, "b": b}, y, [groups, eps, dtype])


def batch(name, shape, eps, weight, bias, dtype=0, offset=0.0):
    x = tensor(shape, dtype, offset)
    c = shape[1]
    mean = tensor((c,), dtype, offset)
    var = torch.from_numpy(rng.uniform(0.05, 4.0, c).astype(np.float32)).to(DTYPES[dtype])
    w = tensor((c,), dtype) if weight else None
    b = tensor((c,), dtype) if bias else None
    y = F.batch_norm(x, mean, var, w, b, training=False, eps=eps)
    store(name, {"x": x, "w": w, "b": b, "mean": mean, "var": var}, y, [0, eps, dtype])


group("gn_basic", (2, 6, 5), 3, 1e-5, True, True)
group("gn_4d", (2, 8, 7, 9), 4, 1e-5, True, True, offset=100.0, scale=2.0)
group("gn_one_group", (3, 4, 5), 1, 1e-5, False, False)
group("gn_per_channel", (2, 6, 4, 4), 6, 1e-3, False, True)
group("gn_no_trailing", (4, 6), 2, 1e-5, True, False)
group("gn_long", (1, 4, 64, 80), 2, 1e-5, True, True)
group("gn_f16", (2, 8, 5, 5), 4, 1e-5, True, True, dtype=1)
group("gn_bf16", (2, 4, 3, 11), 2, 1e-5, True, True, dtype=2)
batch("bn_4d", (3, 5, 6, 7), 1e-5, True, True, offset=3.0)
batch("bn_2d", (8, 10), 1e-5, False, False)
batch("bn_3d", (2, 4, 9), 1e-3, True, False)
batch("bn_bias_only", (2, 3, 4, 2, 3), 1e-5, False, True)
batch("bn_f16", (2, 8, 4, 4), 1e-5, True, True, dtype=1)
batch("bn_bf16", (2, 3, 5, 5), 1e-5, True, True, dtype=2)
np.savez("torch_channel_norm_cases.npz", **cases)
