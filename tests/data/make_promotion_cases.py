"""Writes torch_promotion_cases.txt for tests/promotion.rs: what PyTorch's
`torch.result_type` gives for a dimensioned tensor beside a 0-d one (both
orders), for two 0-d tensors, and for a tensor beside a Python bool, int,
float and complex, over webtensor's dtypes (u32 left out: PyTorch does not
promote it). Each line: `kind a b result`, `none` where PyTorch has no
common dtype or webtensor none (complex128). Run from tests/data with
`python3 make_promotion_cases.py` (PyTorch 2.15 wrote the committed
file)."""
import torch

DTYPES = {
    "bool": torch.bool, "u8": torch.uint8, "i32": torch.int32, "i64": torch.int64,
    "f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32,
    "f64": torch.float64, "c64": torch.complex64,
}
NAMES = {v: k for k, v in DTYPES.items()}


def name(t):
    # complex32 and bcomplex32 (half complex) have no webtensor dtype: `c32`,
    # where webtensor computes in c64; complex128 neither: `none`.
    if t in (torch.complex32, getattr(torch, "bcomplex32", None)):
        return "c32"
    return NAMES.get(t, "none")


def result(x, y):
    try:
        return name(torch.result_type(x, y))
    except RuntimeError:
        return "none"


lines = []
for a, da in DTYPES.items():
    dim = torch.zeros(3, dtype=da)
    for b, db in DTYPES.items():
        zero = torch.zeros((), dtype=db)
        lines.append(f"dim_0d {a} {b} {result(dim, zero)}")
        lines.append(f"0d_dim {b} {a} {result(zero, dim)}")
        lines.append(f"0d_0d {a} {b} {result(torch.zeros((), dtype=da), zero)}")
    for kind, value in (("bool", True), ("int", 2), ("float", 0.5), ("complex", 1j)):
        lines.append(f"scalar {a} {kind} {result(dim, value)}")
open("torch_promotion_cases.txt", "w").write("\n".join(lines) + "\n")
