"""Writes numpy_trig_cases.npz for tests/elementwise.rs: NumPy's (f64)
arcsin, arccos, arctan, sinh, cosh, arcsinh, arccosh, arctanh and log10
of f32 inputs across each function's domain and past it (the ends of the
domains, where identities lose digits; overflow; subnormals; zeros of
both signs; infinities; NaN). `x` holds the f32 inputs, `{op}` the f64
results of those inputs; `x_f16`/`x_bf16` the inputs rounded to f16 and
bf16 (as f32) and `{op}_f16`/`{op}_bf16` NumPy's f64 results of those.
Run from tests/data with `python3 make_trig_cases.py` (NumPy 2.4 wrote
the committed file)."""
import numpy as np
import ml_dtypes

rng = np.random.default_rng(3)
unit = np.concatenate([np.linspace(-1, 1, 1001), 1 - np.logspace(-8, -1, 150), -1 + np.logspace(-8, -1, 150),
                       rng.uniform(-1, 1, 500)])
wide = np.concatenate([np.linspace(-100, 100, 1001), np.logspace(-30, 38, 250), -np.logspace(-30, 38, 250),
                       rng.standard_normal(500) * 20, [88.0, 88.7, 89.0, 89.4, 89.5, 90.0, -89.4, -90.0]])
above_one = np.concatenate([1 + np.logspace(-7, 0, 150), np.logspace(0, 38, 250), [1.0, 2.0, 2.0000002, 1.9999999]])
special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 1.0, -1.0, 1.0000001, -1.0000001, 0.5, -0.5,
           0.49999997, 268435456.0, 268435470.0, 1e30, -1e30]
x = np.concatenate([unit, wide, above_one, special]).astype(np.float32)
ops = {"asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
       "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "log10": np.log10}
cases = {"x": x}
with np.errstate(all="ignore"):
    for name, f in ops.items():
        cases[name] = f(x.astype(np.float64))
    for suffix, dtype in [("f16", np.float16), ("bf16", ml_dtypes.bfloat16)]:
        xh = x.astype(dtype).astype(np.float32)
        cases[f"x_{suffix}"] = xh
        for name, f in ops.items():
            cases[f"{name}_{suffix}"] = f(xh.astype(np.float64))
np.savez_compressed("numpy_trig_cases.npz", **cases)
