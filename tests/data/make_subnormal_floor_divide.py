"""NumPy's float32 floor_divide and remainder by subnormal divisors, for
tests/numpy_ops.rs (`floor_divide_by_subnormals_follows_numpy`): prints the
pairs and NumPy's results as f32 bit patterns, to paste into the test.
"""
import numpy as np

rng = np.random.default_rng(7)
pairs = [
    (0x0849B20D, 0x800639EF),  # quotient -1061490.0035: floor -1061491
    (0x7F800000, 0x00000001),  # inf // subnormal: NaN (fmod(inf, b) is NaN)
    (0xFF800000, 0x8000A000),
    (0x7FC00000, 0x00000003),  # NaN
    (0x00000000, 0x80000005),  # 0 // -b: -0
    (0x80000000, 0x00000005),
    (0x00000007, 0x00000002),  # both subnormal: 3, remainder 1 unit
    (0x80000007, 0x00000002),  # -7 units // 2 units: -4
    (0x00000001, 0x807FFFFF),  # the least subnormal // the largest negative one
    (0x3F800000, 0x00000001),  # 1 // 2^-149: 2^149 is past f32: inf
    (0x7149F2CA, 0x00400000),  # 1e30 // 2^-127: inf
    (0x0C000000, 0x00000003),
]
for _ in range(20):
    a = int(rng.integers(0x00000001, 0x10000000))  # 1e-45 to about 2.5e-29
    b = int(rng.integers(0x00000001, 0x00800000))
    sa, sb = rng.integers(0, 2, 2)
    pairs.append((a | (int(sa) << 31), b | (int(sb) << 31)))

def f32(bits):
    return np.array([bits], dtype=np.uint32).view(np.float32)

def bits(x):
    return int(np.asarray(x, dtype=np.float32).reshape(1).view(np.uint32)[0])

with np.errstate(all="ignore"):
    for a, b in pairs:
        q = np.floor_divide(f32(a), f32(b))
        r = np.remainder(f32(a), f32(b))
        print(f"(0x{a:08x}, 0x{b:08x}, 0x{bits(q):08x}, 0x{bits(r):08x}),")
