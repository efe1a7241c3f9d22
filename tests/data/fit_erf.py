"""Fits the coefficients of `erf_f32` in shaders/kernel/math.wgsl and
measures the result in f32 against SciPy's erf. Below |x| = 0.875,
erf(x) = x + x q(x^2), q of degree 6; from 0.875 to 4, erf(x) =
1 - exp(r(x)), r of degree 9 fitted to ln(erfc(x)); from 4 on, erf is 1
in f32. Each fit is least squares with Lawson's reweighting towards the
minimax polynomial (relative error for q, absolute for r). Evaluated by
Horner's rule rounding each step to f32 (no fused multiply-add) with an
exact exp, the result was within 0.95 ulp below 0.875 and 1.73 ulp above.
Run with `python3 fit_erf.py` (NumPy 2.4, SciPy 1.17)."""
import numpy as np
from scipy.special import erf, erfc

f = np.float32
T = 0.875


def lawson(xs, ys, deg, relative, rounds=60):
    """Coefficients, lowest first, of a degree-`deg` fit of ys over xs."""
    scale = 1 / np.abs(ys) if relative else np.ones_like(ys)
    w = scale.copy()
    powers = np.vstack([xs**k for k in range(deg + 1)]).T
    for _ in range(rounds):
        c, *_ = np.linalg.lstsq(powers * w[:, None], ys * w, rcond=None)
        e = np.abs(powers @ c - ys) * scale
        w = np.maximum(w * np.sqrt(e / e.max() + 1e-12), 1e-6)
        w /= w.max()
    return c


x = np.linspace(1e-6, T, 20000)
q = lawson(x * x, erf(x) / x, 6, relative=True)
q[0] -= 1.0  # erf(x) = x + x q(x^2): the leading term exactly x
t = np.linspace(T, 4.0, 40000)
r = lawson(t, np.log(erfc(t)), 9, relative=False)
q, r = q.astype(f), r.astype(f)


def horner(c, v):
    acc = c[-1]
    for k in c[-2::-1]:
        acc = f(f(acc * v) + k)
    return acc


def erf32(x):
    a = np.abs(x)
    small = f(x + f(x * horner(q, f(x * x))))
    large = np.where(a >= 4, f(1), f(1) - np.exp(horner(r, a)).astype(f))
    return np.where(a < T, small, np.copysign(large, x)).astype(f)


with np.errstate(all="ignore"):
    xs = np.concatenate([np.linspace(-6, 6, 2000001), np.logspace(-38, 0, 20000)]).astype(f)
    want = erf(xs.astype(np.float64))
    ulps = np.abs(erf32(xs) - want) / np.spacing(np.abs(want).astype(f)).astype(np.float64)
below = np.abs(xs) < T
print(f"max error: {ulps[below].max():.2f} ulp below {T}, {ulps[~below].max():.2f} above")
print("q:", ", ".join(repr(float(v)) for v in q))
print("r:", ", ".join(repr(float(v)) for v in r))
