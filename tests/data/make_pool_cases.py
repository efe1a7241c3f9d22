"""Writes torch_pool_cases.npz for tests/conv.rs: PyTorch's
`adaptive_avg_pool2d` (CPU) of whole numbers (so every bin's sum is exact
in any order, and only the division tells orders apart: PyTorch divides
a bin's sum by its height, then by its width) in f32, f16 and bf16 (the
half results widened to f32), at bins of one and of two lengths, and of
values whose sums overflow f32; and `avg_pool2d` and `max_pool2d` of the
same whole numbers (PyTorch divides a window's sum once). Keys: `ints`
and `large` (inputs), `ints_OHxOW_DTYPE` and `large_OHxOW_f32` (adaptive
outputs), `pool_...` (below). Run from tests/data
with `python3 make_pool_cases.py` (PyTorch 2.15 wrote the committed
file)."""
import numpy as np
import torch
import torch.nn.functional as F

rng = np.random.default_rng(5)
cases = {}
ints = rng.integers(-60, 60, (2, 3, 7, 11)).astype(np.float32)
cases["ints"] = ints
for oh, ow in [(3, 4), (2, 5), (7, 3), (1, 1), (5, 11), (4, 8)]:
    for name, dtype in [("f32", torch.float32), ("f16", torch.float16), ("bf16", torch.bfloat16)]:
        y = F.adaptive_avg_pool2d(torch.from_numpy(ints).to(dtype), (oh, ow))
        cases[f"ints_{oh}x{ow}_{name}"] = y.float().numpy()
# Sums past f32's range: PyTorch's bin of four 1e38 is inf, not 1e38
# (a channel of one sign each, so no order of summing meets inf - inf).
large = np.full((1, 2, 4, 6), 1e38, np.float32)
large[0, 1] = -3e38
cases["large"] = large
for oh, ow in [(1, 1), (2, 3), (3, 4), (4, 3)]:
    cases[f"large_{oh}x{ow}_f32"] = F.adaptive_avg_pool2d(torch.from_numpy(large), (oh, ow)).numpy()
# avg_pool2d and max_pool2d of the same whole numbers: kernel, stride,
# padding, dilation (max only), ceil mode, padding counted or not; keys
# `pool_KIND_KHxKW_SHxSW_PHxPW_DHxDW_CEIL_COUNT_DTYPE`.
POOLS = [((2, 2), (2, 2), (0, 0), (1, 1), 0), ((3, 3), (2, 2), (1, 1), (1, 1), 0),
         ((3, 2), (2, 3), (1, 0), (1, 1), 1), ((3, 3), (3, 3), (0, 1), (1, 1), 1),
         ((5, 4), (1, 2), (2, 2), (1, 1), 1), ((2, 3), (3, 1), (1, 1), (2, 3), 1),
         ((7, 11), (7, 11), (0, 0), (1, 1), 0), ((4, 4), (3, 5), (2, 1), (1, 1), 1)]
for k, st, pad, dil, ceil in POOLS:
    for name, dtype in [("f32", torch.float32), ("f16", torch.float16), ("bf16", torch.bfloat16)]:
        x = torch.from_numpy(ints).to(dtype)
        tag = "_".join(f"{a}x{b}" for a, b in (k, st, pad, dil))
        y = F.max_pool2d(x, k, st, pad, dil, ceil_mode=bool(ceil))
        cases[f"pool_max_{tag}_{ceil}_1_{name}"] = y.float().numpy()
        if dil != (1, 1):
            continue
        for count in (0, 1):
            y = F.avg_pool2d(x, k, st, pad, ceil_mode=bool(ceil), count_include_pad=bool(count))
            cases[f"pool_avg_{tag}_{ceil}_{count}_{name}"] = y.float().numpy()
np.savez_compressed("torch_pool_cases.npz", **cases)
