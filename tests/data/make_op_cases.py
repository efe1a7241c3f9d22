"""Writes numpy_op_cases.txt: NumPy's own answers for the cases where
webtensor once differed from it silently (issue 26), read by
tests/numpy_fidelity.rs. Run from tests/data with `python3 make_op_cases.py`
(NumPy 2.4 wrote the committed file).

One case a line, space-separated, the first word naming the kind:
- `rollaxis SHAPE AXIS START RESULT`: shapes comma-separated, `error` when
  NumPy refuses;
- `remainder DTYPE A B R`: the bits of a, b and NumPy's `a % b` in hex;
- `f16 X H`: the f64 bits of x and of NumPy's `np.float16(x)`;
- `scalar OP DTYPE A S R`: the bits of a tensor element, the f64 bits of a
  Python float s, and of NumPy's `op(array, s)` (the scalar converted to
  the array's dtype first, as NEP 50 says)."""
import numpy as np

rng = np.random.default_rng(2026)
lines = []

full = (2, 3, 4, 5)
for rank in range(1, 5):
    a = np.zeros(full[:rank])
    for axis in range(-rank, rank):
        for start in range(-rank - 2, rank + 3):
            try:
                r = ",".join(map(str, np.rollaxis(a, axis, start).shape))
            except np.exceptions.AxisError:
                r = "error"
            lines.append(f"rollaxis {','.join(map(str, a.shape))} {axis} {start} {r}")

BITS = {"f32": (np.float32, np.uint32, 8), "f16": (np.float16, np.uint16, 4)}
edge = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 4.0, -4.0, 0.5, 7.25, -7.25,
        1e-3, 6.0, -6.0, np.inf, -np.inf, np.nan, 1e30, -1e30,
        # Subnormal divisors and remainders (f32's, then f16's).
        1e-40, -3e-39, 1e-45, 6e-8, -3e-6]
for name, (dt, ut, w) in BITS.items():
    with np.errstate(over="ignore"):
        vals = np.array(edge + list(rng.integers(-20, 20, 30) * 0.5), dtype=dt)
    a, b = np.meshgrid(vals, vals[::3])
    with np.errstate(all="ignore"):
        r = np.remainder(a, b)
    for x, y, z in zip(a.ravel(), b.ravel(), r.ravel()):
        h = lambda v: f"{int(np.array(v, dtype=dt).view(ut)):0{w}x}"
        lines.append(f"remainder {name} {h(x)} {h(y)} {h(z)}")


def f64_bits(v):
    return f"{int(np.float64(v).view(np.uint64)):016x}"


# Every f16 midpoint region, a hair either side, and random doubles.
mids = []
for bits in range(0, 0x7bff, 37):
    lo = float(np.uint16(bits).view(np.float16))
    hi = float(np.uint16(bits + 1).view(np.float16))
    m = (lo + hi) / 2
    mids += [m, np.nextafter(m, 0), np.nextafter(m, np.inf), -m]
extra = [2049.0001, -498.1250059734055, 65519.99, 65520.0, 65519.0, 1e-8, 2.0**-25,
         3.0000000000000004e-08, 1e300, -1e300]
for v in mids + extra + list(rng.normal(0, 100, 200)) + list(10.0 ** rng.uniform(-9, 5, 200)):
    with np.errstate(over="ignore"):
        h = np.float16(np.float64(v))
    lines.append(f"f16 {f64_bits(v)} {f64_bits(float(h))}")

ops = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
       "maximum": np.maximum, "minimum": np.minimum}
xs = [-1.0, 0.5, -0.897, 3.0, 1000.0, 65504.0, -0.0, 1e-3]
ss = [1.0001, 65519.99, 2049.0001, 0.1, -498.1250059734055, 1e-8, 3.0000001]
for name, (dt, ut, w) in BITS.items():
    for op, f in ops.items():
        for x in xs:
            for s in ss:
                with np.errstate(all="ignore"):
                    r = f(np.array([x], dtype=dt), s)[0]
                xa = np.array(x, dtype=dt).view(ut)
                ra = np.array(r, dtype=dt).view(ut)
                lines.append(f"scalar {op} {name} {int(xa):0{w}x} {f64_bits(s)} {int(ra):0{w}x}")

with open("numpy_op_cases.txt", "w") as f:
    f.write("\n".join(lines) + "\n")
