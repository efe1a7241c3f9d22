"""Writes torch_activation_cases.npz for tests/nn.rs: PyTorch's (CPU)
`relu6`, `hardsigmoid` and `hardswish` of one set of inputs (a sweep of
-8 to 8 through the kinks at -3, 0, 3 and 6, signed zeros, infinities,
NaN, values near the f32 limit where x * 6 overflows, and subnormals), in
f32, f16 and bf16. `x` holds the f32 inputs; `{op}_{dtype}` the results
of the inputs cast to dtype, as f32 (which holds f16 and bf16 values
exactly). Run from tests/data with `python3 make_activation_cases.py`
(PyTorch 2.15 wrote the committed file)."""
import numpy as np
import torch
import torch.nn.functional as F

sweep = np.arange(-8.0, 8.0, 0.0625)
special = [0.0, -0.0, np.inf, -np.inf, np.nan, -3.0, 3.0, 6.0, -2.9999998, 2.9999998,
           3e38, -3e38, 1e-40, -1e-40, 5e37, 1.0 / 3.0, -1.0 / 3.0]
x = np.concatenate([sweep, special]).astype(np.float32)
cases = {"x": x}
for dtype, name in [(torch.float32, "f32"), (torch.float16, "f16"), (torch.bfloat16, "bf16")]:
    t = torch.from_numpy(x).to(dtype)
    for op, f in [("relu6", F.relu6), ("hardsigmoid", F.hardsigmoid), ("hardswish", F.hardswish)]:
        cases[f"{op}_{name}"] = f(t).to(torch.float32).numpy()
np.savez("torch_activation_cases.npz", **cases)
