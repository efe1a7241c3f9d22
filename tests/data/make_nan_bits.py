"""Prints the f16 bits NumPy gives for the f32 NaNs and infinities of
tests/special_values.rs' `sixteen_bit_stores_keep_a_nans_sign_and_payload`
(run from tests/data with `python3 make_nan_bits.py`; NumPy 2.4 gave the
committed table). Quiet NaNs only: NumPy keeps a signalling NaN signalling,
where F16C and the `half` crate quiet it."""
import numpy as np

BITS = [0x7FC00000, 0xFFC00000, 0x7FD02000, 0xFFFFF000, 0x7FC01FFF, 0x7F800000, 0xFF800000]
f16 = np.array(BITS, dtype=np.uint32).view(np.float32).astype(np.float16).view(np.uint16)
print(", ".join(f"(0x{b:08x}, 0x{h:04x})" for b, h in zip(BITS, f16)))
