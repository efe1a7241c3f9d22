"""Fits the f32 polynomials of `lgamma_f32`, `digamma_f32` and `erfinv_f32`
(shaders/kernel/special.wgsl) and prints the f64 series of the CPU's
digamma about its positive zero (src/backend/cpu/special.rs), measuring
each f32 form, evaluated with every step rounded to f32 and correctly
rounded log, against SciPy over its whole range (`pip install numpy
scipy`; NumPy 2.4, SciPy 1.17):

- lgamma(x) = (x - 1)(x - 2) p(x - 2) on [0.5, 3] (degree 16), exact zero
  factors; below, lgamma(x + 1) - ln x; to 8, the product recurrence; past
  it, Stirling's series: within 3.1 ulp for x > 0.
- digamma(x) = (x - x0) r(x - 1.5) on [1, 2], x0 its zero in two parts
  (degree 9); below, digamma(x + 1) - 1/x; to 10, the recurrence; past it,
  the asymptotic series: within 3.4 ulp for x > 0.
- erfinv(y) = y p(w - 2.5), w = -ln(1 - y^2) below 5, else y q(sqrt(w) - 3)
  (Giles' form, degrees 10 and 10): within 2.5 ulp.
- erfc(x): a polynomial on [0, 1/2] (degree 9); e^(-x^2) times erfcx as a
  polynomial in x - 1.5 on [1/2, 2.5] (degree 14), as x erfcx a polynomial
  in 1/x^2 - 0.08 past it (degree 9): within 3.9 ulp with a correctly
  rounded exp (special.wgsl takes e^(-x^2) in two parts with its own);
  denser sampling finds 4.1.
- i0(x): its Taylor series to 4 (14 terms, the first printed), past it
  e^x / sqrt(x) times a polynomial in 1/x - 1/8 (degree 8): within 4.7 ulp.

Each fit is least squares reweighted towards the minimax polynomial
(relative error). Run with `python3 fit_special_functions.py`.
"""
import os
import sys

import numpy as np
import scipy.special as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fitting import f, horner, lawson, ulps  # noqa: E402


def log32(v):
    return f(np.log(np.float64(v)))


def show(name, c):
    print(name, ", ".join(np.format_float_positional(v, unique=True) for v in c))


# lgamma
a = np.linspace(0.5, 3, 30001)
a = a[(np.abs(a - 1) > 1e-6) & (np.abs(a - 2) > 1e-6)]
LG = lawson(a - 2, sp.gammaln(a) / ((a - 1) * (a - 2)), 16)


def lg_core(v):
    return f(f(f(v - f(1)) * f(v - f(2))) * horner(LG, f(v - f(2))))


def lgamma32(v):
    v = f(v)
    if v < 0.5:
        return f(lg_core(f(v + f(1))) - log32(v))
    if v <= 3:
        return lg_core(v)
    if v < 8:
        prod, t = f(1), v
        while t > 3:
            t = f(t - f(1))
            prod = f(prod * t)
        return f(lg_core(t) + log32(prod))
    iv = f(f(1) / v)
    iv2 = f(iv * iv)
    s = f(iv * f(f(1 / 12) + f(iv2 * f(f(-1 / 360) + f(iv2 * f(1 / 1260))))))
    return f(f(f(f(v - f(0.5)) * log32(v)) - v) + f(f(0.9189385332046727) + s))


# digamma
X0 = 1.4616321449683622
X0H = f(X0)
X0L = f(X0 - np.float64(X0H))
d = np.linspace(1, 2, 20001)
d = d[np.abs(d - X0) > 1e-7]
DG = lawson(d - 1.5, sp.digamma(d) / (d - X0), 9)


def dg_core(v):
    return f(f(f(v - X0H) - X0L) * horner(DG, f(v - f(1.5))))


def digamma32(v):
    v = f(v)
    if v < 1:
        return f(dg_core(f(v + f(1))) - f(f(1) / v))
    if v <= 2:
        return dg_core(v)
    if v < 10:
        acc, t = f(0), v
        while t > 2:
            t = f(t - f(1))
            acc = f(acc + f(f(1) / t))
        return f(dg_core(t) + acc)
    iv = f(f(1) / v)
    iv2 = f(iv * iv)
    s = f(iv2 * f(f(-1 / 12) + f(iv2 * f(f(1 / 120) + f(iv2 * f(-1 / 252))))))
    return f(f(log32(v) - f(f(0.5) * iv)) + s)


# erfinv
y1 = np.linspace(1e-8, 0.99662, 30001)
EP = lawson(-np.log((1 - y1) * (1 + y1)) - 2.5, sp.erfinv(y1) / y1, 10)
y2 = 1 - np.logspace(np.log10(1 - 0.99662), -7.3, 30001)
EQ = lawson(np.sqrt(-np.log((1 - y2) * (1 + y2))) - 3, sp.erfinv(y2) / y2, 10)


def erfinv32(y):
    y = f(y)
    a = abs(y)
    w = f(-log32(f(f(f(1) - a) * f(f(1) + a))))
    if w < 5:
        return f(horner(EP, f(w - f(2.5))) * y)
    return f(horner(EQ, f(f(np.sqrt(np.float64(w))) - f(3))) * y)


x = np.concatenate([np.linspace(1e-3, 30, 30001), np.logspace(-30, 30, 3000)]).astype(f)
print(f"lgamma: {ulps([lgamma32(v) for v in x], sp.gammaln(x.astype(np.float64))).max():.2f} ulp")
print(f"digamma: {ulps([digamma32(v) for v in x], sp.digamma(x.astype(np.float64))).max():.2f} ulp")
y = np.concatenate([np.linspace(-1 + 2**-24, 1 - 2**-24, 100001), 1 - np.logspace(-7.2, -0.3, 10000)]).astype(f)
y = y[np.abs(y) < 1]
print(f"erfinv: {ulps([erfinv32(v) for v in y], sp.erfinv(y.astype(np.float64))).max():.2f} ulp")
show("LGAMMA_P", LG)
show("DIGAMMA_R", DG)
show("DIGAMMA_X0", [X0H, X0L])
show("ERFINV_P", EP)
show("ERFINV_Q", EQ)
# erfc
a = np.linspace(0, 0.5, 20001)
show("ERFC_SMALL", lawson(a, sp.erfc(a), 9))
b = np.linspace(0.5, 2.5, 20001)
show("ERFCX_MIDDLE", lawson(b - 1.5, sp.erfcx(b), 14))
c = np.linspace(2.5, 10.1, 20001)
show("ERFCX_TAIL", lawson(1 / c**2 - 0.08, sp.erfcx(c) * c, 9))
# i0
show("I0_TAYLOR", [1 / (4**k * float(sp.factorial(k)) ** 2) for k in range(14)])
c = np.linspace(4, 92, 40001)
show("I0_LARGE", lawson(1 / c - 0.125, sp.i0e(c) * np.sqrt(c), 8))
# The CPU's f64 digamma about its zero: c_k = (-1)^(k+1) zeta(k + 1, x0).
print("DIGAMMA_ROOT_SERIES", ", ".join(repr(float((-1) ** (k + 1) * sp.zeta(k + 1, X0))) for k in range(1, 31)))
