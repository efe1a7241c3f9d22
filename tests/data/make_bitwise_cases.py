"""Writes bitwise_cases.npz for tests/bitwise.rs: NumPy's bitwise_and,
bitwise_or, bitwise_xor, invert, left_shift and right_shift of int32,
int64, uint32 and uint8 operands (each dtype's extremes, -1, 0, 1 and
random values; shift amounts from -70 to 70 for the signed types, 0 to
70 for the unsigned, crossing every width), and of bool for the first
four. `{dtype}_a`, `{dtype}_b` are the operands (b the shift amount),
`{dtype}_{op}` the results; `{dtype}_chain` is `((a << 3) ^ ~b) >> 2 &
0x5A` with a the values and b the amounts taken in 0..8, a fused chain's
test (u8's bits past 8 cut between ops). PyTorch's bitwise ops and
shifts agree with NumPy's on every case (checked with torch 2.15 where
it is installed: run with TORCH=1; it shifts and inverts no uint32). Run from tests/data with `python3
make_bitwise_cases.py` (NumPy 2.4 wrote the committed file)."""
import os
import numpy as np

rng = np.random.default_rng(11)
n = 600
cases = {}
for name, dtype in [("i32", np.int32), ("i64", np.int64), ("u32", np.uint32), ("u8", np.uint8)]:
    info = np.iinfo(dtype)
    edges = np.array(sorted({info.min, info.max, 0, 1, 2, info.max // 2, info.max // 2 + 1}
                            | ({-1, -2, info.min + 1} if info.min < 0 else set())), dtype=dtype)
    lo = max(info.min, -(2**62)) if info.min < 0 else 0
    hi = min(info.max, 2**62)
    a = np.concatenate([edges, rng.integers(lo, hi, n - len(edges), dtype=np.int64, endpoint=True).astype(dtype)])
    bits = np.iinfo(dtype).bits
    amounts = np.arange(-70, 71) if info.min < 0 else np.arange(0, 71)
    b = np.concatenate([amounts, [bits - 1, bits, bits + 1], rng.integers(0, bits, n)])[:n].astype(dtype)
    a = np.resize(a, n)
    # every amount meets several values: shuffle a against b
    rng.shuffle(a)
    cases[f"{name}_a"], cases[f"{name}_b"] = a, b
    cases[f"{name}_and"] = np.bitwise_and(a, b)
    cases[f"{name}_or"] = np.bitwise_or(a, b)
    cases[f"{name}_xor"] = np.bitwise_xor(a, b)
    cases[f"{name}_not"] = np.invert(a)
    cases[f"{name}_shl"] = np.left_shift(a, b)
    cases[f"{name}_shr"] = np.right_shift(a, b)
    small = (b.astype(np.int64) % 8).astype(dtype)
    cases[f"{name}_small"] = small
    chain = np.right_shift(np.bitwise_xor(np.left_shift(a, dtype(3)), np.invert(small)), dtype(2))
    cases[f"{name}_chain"] = np.bitwise_and(chain, dtype(0x5A))
a = rng.integers(0, 2, n).astype(bool)
b = rng.integers(0, 2, n).astype(bool)
cases["bool_a"], cases["bool_b"] = a, b
cases["bool_and"], cases["bool_or"] = a & b, a | b
cases["bool_xor"], cases["bool_not"] = a ^ b, ~a

if os.environ.get("TORCH"):
    import torch
    for name in ["i32", "i64", "u32", "u8", "bool"]:
        a, b = torch.from_numpy(cases[f"{name}_a"]), torch.from_numpy(cases[f"{name}_b"])
        ops = {"and": torch.bitwise_and, "or": torch.bitwise_or, "xor": torch.bitwise_xor}
        if name not in ("bool", "u32"):  # torch 2.15 shifts no uint32
            ops |= {"shl": torch.bitwise_left_shift, "shr": torch.bitwise_right_shift}
        for op, f in ops.items():
            assert np.array_equal(f(a, b).numpy(), cases[f"{name}_{op}"]), (name, op)
        if name != "u32":
            assert np.array_equal(torch.bitwise_not(a).numpy(), cases[f"{name}_not"]), name
    print("torch", torch.__version__, "agrees")
np.savez_compressed("bitwise_cases.npz", **cases)
