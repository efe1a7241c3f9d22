"""Fits the polynomials of the generator's normals (LOG_P, SIN_S and COS_C
in src/backend/random.rs, which shaders/random/random.wgsl takes bit for
bit) and measures each step of Box-Muller over every input it can get, in
f32 arithmetic rounded at each step (no fused multiply-add), against
float64:

- `-2 ln u` for every u = (2k + 1) 2^-24, k < 2^23: ln(1 + f) = f + f^2 p(f)
  on [sqrt(1/2) - 1, sqrt(2) - 1], p of degree 8, plus e ln 2 in two parts;
  within 0.9 ulp.
- its square root by three Newton steps on the reciprocal square root from
  the bit-level first guess: within 3.1 ulp of float64's of the exact value.
- sin and cos of 2 pi x for every x = j 2^-24 in [0, 1/8] (the rest by
  quadrant and octant on the integer): sin(2 pi x) = x s(x^2), cos(2 pi x)
  = 1 + z c(z), each of degree 3; within 1.7 and 1.3 ulp.

Each fit is least squares with Lawson's reweighting towards the minimax
polynomial (relative error). Run with `python3 fit_random_functions.py`
(NumPy 2.4); it prints the coefficients and the errors.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fitting import f, horner, lawson, ulps  # noqa: E402

x = np.linspace(np.sqrt(0.5) - 1, np.sqrt(2) - 1, 40001)
x = x[np.abs(x) > 1e-9]
p = lawson(x, (np.log1p(x) - x) / x**2, 8, rounds=60)
LN2_HI, LN2_LO = f(0.693145751953125), f(1.42860676533018e-06)

k = np.arange(2**23, dtype=np.uint32)
u = ((2 * k + 1).astype(f) * f(2.0**-24)).astype(f)
b = u.view(np.uint32)
big = (b & 0x7FFFFF) | 0x3F800000 > 0x3FB504F3
e = ((b >> 23).astype(np.int64) - 127 + big).astype(f)
m = np.where(big, (b & 0x7FFFFF) | 0x3F000000, (b & 0x7FFFFF) | 0x3F800000).astype(np.uint32).view(f)
fm = f(m - f(1))
s = f(fm + f(f(fm * fm) * horner(p, fm)))
r2 = f(f(f(s + f(e * LN2_LO)) + f(e * LN2_HI)) * f(-2))
want = -2 * np.log(u.astype(np.float64))
print(f"-2 ln u: {ulps(r2, want).max():.2f} ulp")

y = (np.uint32(0x5F3759DF) - (r2.view(np.uint32) >> 1)).astype(np.uint32).view(f)
h = f(r2 * f(0.5))
for _ in range(3):
    y = f(y * f(f(1.5) - f(h * f(y * y))))
r = f(r2 * y)
print(f"sqrt: {ulps(r, np.sqrt(r2.astype(np.float64))).max():.2f} ulp")

xs = np.linspace(1e-7, 0.125, 40001)
S = lawson(xs**2, np.sin(2 * np.pi * xs) / xs, 3, rounds=60)
# cos - 1 as -2 sin^2(pi x): no cancellation near 0.
C = lawson(xs**2, -2 * np.sin(np.pi * xs) ** 2 / xs**2, 3, rounds=60)
j = np.arange(1, 2**21 + 1, dtype=np.uint32)
xv = (j.astype(f) * f(2.0**-24)).astype(f)
z = f(xv * xv)
sv = f(xv * horner(S, z))
cv = f(f(1) + f(z * horner(C, z)))
t = 2 * np.pi * xv.astype(np.float64)
print(f"sin: {ulps(sv, np.sin(t)).max():.2f} ulp, cos: {ulps(cv, np.cos(t)).max():.2f} ulp")
for name, c in [("LOG_P", p), ("SIN_S", S), ("COS_C", C)]:
    print(name, ", ".join(np.format_float_positional(v, unique=True) for v in c))
