"""Writes torch_dtypes.safetensors and torch_i64_big.safetensors for tests/io.rs: tensors PyTorch holds
in bf16 and int64, and what PyTorch computes from them. Run from tests/data
with `python3 make_torch_files.py` (PyTorch 1.13 from Debian 12's
python3-torch and safetensors 0.8 wrote the committed file).

- w, v: bf16 weights (normal samples, and specials: 0, -0, inf, -inf,
  NaN, the largest bf16 and the smallest normal);
- w_f32: w widened to f32 (exact);
- w_times_v, w_plus_v: PyTorch's bf16 products and sums (f32, rounded once
  to bf16);
- x_f32, x_to_bf16: f32 samples and PyTorch's casts of them to bf16;
- ids: int64 token ids that fit in i32;
- big (its own file): int64 values past i32."""
import torch
from safetensors.torch import save_file

g = torch.Generator().manual_seed(11)
specials = torch.tensor(
    [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 3.3895313892515355e38, 1.1754943508222875e-38]
)
w = torch.cat([torch.randn(57, generator=g) * 3, specials]).reshape(8, 8).to(torch.bfloat16)
v = (torch.randn(64, generator=g) * 2).reshape(8, 8).to(torch.bfloat16)
x = torch.randn(300, generator=g) * 100
tensors = {
    "w": w,
    "v": v,
    "w_f32": w.float(),
    "w_times_v": w * v,
    "w_plus_v": w + v,
    "x_f32": x,
    "x_to_bf16": x.to(torch.bfloat16),
    "ids": torch.tensor([[0, 17, 50256, 2**31 - 1], [-(2**31), 3, 9, 1]], dtype=torch.int64),
}
save_file(tensors, "torch_dtypes.safetensors")
save_file({"big": torch.tensor([2**40, -(2**33) - 5, 7], dtype=torch.int64)}, "torch_i64_big.safetensors")
