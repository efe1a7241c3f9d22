"""Writes torch_activation_cases.npz for tests/nn.rs: PyTorch's (CPU)
`relu6`, `hardsigmoid` and `hardswish`, and the smooth ones (`gelu` exact
and `tanh`, `silu`, `erf`, `mish`, `softplus`, `elu`, `leaky_relu`, the
last three at their defaults and another parameter), and `selu`, `celu`,
`softsign`, `logsigmoid`, `tanhshrink`, `hardtanh`, `softshrink`,
`hardshrink` and `threshold` (those with parameters at their defaults
and others; the shrinks' 0.3, which PyTorch rounds to f16 and bf16 first),
of one set of inputs (a sweep of
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
# The smooth ones' ranges: erf's branch at 0.875 and its end at 4, softplus's
# thresholds, exp's overflow past 88.7, and small magnitudes.
smooth = np.concatenate([np.linspace(-30.0, 30.0, 1201), [0.875, -0.875, 0.87499994, 3.99, 4.0,
                         2.5, 2.5000002, 20.0, 20.000002, 88.0, 89.0, -89.0, -104.0, 1e-3, -1e-3,
                         1e-20, -1e-20]])
special = [0.0, -0.0, np.inf, -np.inf, np.nan, -3.0, 3.0, 6.0, -2.9999998, 2.9999998,
           3e38, -3e38, 1e-40, -1e-40, 5e37, 1.0 / 3.0, -1.0 / 3.0]
x = np.concatenate([sweep, special, smooth]).astype(np.float32)
cases = {"x": x}
for dtype, name in [(torch.float32, "f32"), (torch.float16, "f16"), (torch.bfloat16, "bf16")]:
    t = torch.from_numpy(x).to(dtype)
    for op, f in [
        ("relu6", F.relu6),
        ("hardsigmoid", F.hardsigmoid),
        ("hardswish", F.hardswish),
        ("gelu", F.gelu),
        ("gelu_tanh", lambda t: F.gelu(t, approximate="tanh")),
        ("silu", F.silu),
        ("erf", torch.erf),
        ("mish", F.mish),
        ("softplus", F.softplus),
        ("softplus_b2_t5", lambda t: F.softplus(t, beta=2.0, threshold=5.0)),
        ("elu", F.elu),
        ("elu_a05", lambda t: F.elu(t, alpha=0.5)),
        ("leaky_relu", F.leaky_relu),
        ("leaky_relu_02", lambda t: F.leaky_relu(t, negative_slope=0.2)),
        ("selu", F.selu),
        ("celu", F.celu),
        ("celu_a03", lambda t: F.celu(t, alpha=0.3)),
        ("softsign", F.softsign),
        ("logsigmoid", F.logsigmoid),
        ("tanhshrink", F.tanhshrink),
        ("hardtanh", F.hardtanh),
        ("hardtanh_m2_5", lambda t: F.hardtanh(t, -2.0, 5.0)),
        ("softshrink", F.softshrink),
        ("softshrink_3", lambda t: F.softshrink(t, 3.0)),
        ("hardshrink", F.hardshrink),
        ("hardshrink_3", lambda t: F.hardshrink(t, 3.0)),
        ("softshrink_03", lambda t: F.softshrink(t, 0.3)),
        ("hardshrink_03", lambda t: F.hardshrink(t, 0.3)),
        ("threshold", lambda t: F.threshold(t, 0.1, 20.0)),
        ("threshold_m3_nan", lambda t: F.threshold(t, -3.0, float("nan"))),
    ]:
        cases[f"{op}_{name}"] = f(t).to(torch.float32).numpy()
np.savez("torch_activation_cases.npz", **cases)
