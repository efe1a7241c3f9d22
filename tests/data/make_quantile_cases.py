"""Writes quantile_cases.npz for tests/quantile.rs: PyTorch 2.15's
torch.quantile and torch.nanquantile over f32 and f64 lines with and
without NaN, every interpolation, one or several probabilities, one axis,
every axis, and (through the permuted and flattened lines those take,
which is webtensor's definition) several axes; keepdim both ways. Case
k is `case{k}_x` (the input), `case{k}_q` (0-d for one probability),
`case{k}_axes` (empty: every axis), `case{k}_meta` = [interpolation
index (linear, lower, higher, nearest, midpoint), keepdim, nan] and
`case{k}_want`. Inputs of f16 and int32 are PyTorch's on their f32
values (it takes no other dtypes), rounded to f16 for f16. Run from
tests/data with `python3 make_quantile_cases.py` (PyTorch 2.15 wrote the
committed file)."""
import numpy as np
import torch

modes = ["linear", "lower", "higher", "nearest", "midpoint"]
rng = np.random.default_rng(5)
cases = {}
k = 0


def add(x, q, axes, mode, keepdim=False, nan=False):
    global k
    t = torch.from_numpy(x)
    compute = t if t.dtype in (torch.float32, torch.float64) else t.float()
    qt = torch.tensor(q, dtype=compute.dtype)
    f = torch.nanquantile if nan else torch.quantile
    if axes is None:
        want = f(compute, qt, dim=None, keepdim=keepdim, interpolation=mode)
    elif len(axes) == 1:
        want = f(compute, qt, dim=axes[0], keepdim=keepdim, interpolation=mode)
    else:
        rank = compute.dim()
        red = [a % rank for a in axes]
        kept = [a for a in range(rank) if a not in red]
        lines = compute.permute(kept + red).reshape([compute.shape[a] for a in kept] + [-1])
        want = f(lines, qt, dim=-1, keepdim=False, interpolation=mode)
        if keepdim:
            shape = list(want.shape[:1]) if qt.dim() == 1 else []
            shape += [1 if a in red else compute.shape[a] for a in range(rank)]
            want = want.reshape(shape)
    if x.dtype == np.float16:
        want = want.half()
    cases[f"case{k}_x"] = x
    cases[f"case{k}_q"] = np.array(q, dtype=np.float64)
    cases[f"case{k}_axes"] = np.array([] if axes is None else axes, dtype=np.int64)
    cases[f"case{k}_meta"] = np.array([modes.index(mode), int(keepdim), int(nan)], dtype=np.int64)
    cases[f"case{k}_want"] = want.numpy()
    k += 1


x = rng.standard_normal((7, 10)).astype(np.float32)
with_nan = x.copy()
with_nan[2, 3] = np.nan
with_nan[5, :] = np.nan
with_nan[6, ::3] = np.nan
ties = rng.integers(0, 4, (6, 9)).astype(np.float32)
qs = [0.0, 0.1, 0.25, 1 / 3, 0.5, 0.75, 0.9, 0.999, 1.0]
for mode in modes:
    add(x, qs, [1], mode)
    add(x, 0.3, [0], mode, keepdim=True)
    add(with_nan, qs, [-1], mode)
    add(with_nan, qs, [1], mode, nan=True)
    add(with_nan, [0.2, 0.5], [0], mode, nan=True, keepdim=True)
    add(ties, [0.125, 0.375, 0.5, 0.625, 0.875], [1], mode)
add(x, [0.5], None, "linear")
add(x, 0.5, None, "linear", keepdim=True)
add(with_nan, 0.4, None, "linear", nan=True)
y = rng.standard_normal((3, 4, 5)).astype(np.float32)
add(y, [0.2, 0.6], [0, 2], "linear")
add(y, 0.7, [2, 0], "nearest", keepdim=True)
add(y.astype(np.float64), [0.15, 0.5, 0.85], [1], "linear")
add(y.astype(np.float64) * 1e6, 0.37, [-1], "midpoint", keepdim=True)
add(y.astype(np.float16), [0.25, 0.5], [1], "linear")
add((y * 100).astype(np.int32), [0.3, 0.5], [2], "linear")
long = rng.standard_normal(3001).astype(np.float32)
add(long, [0.001, 0.333, 0.5, 0.999], [0], "linear")
add(np.array(2.5, dtype=np.float32), 0.5, None, "linear")
np.savez_compressed("quantile_cases.npz", **cases)
print(k, "cases")
