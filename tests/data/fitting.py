"""What the fit_*.py scripts share: a least-squares fit reweighted towards
the minimax polynomial (Lawson's algorithm, relative error), Horner's rule
with each step rounded to f32 (no fused multiply-add), and errors in f32
ulps."""
import numpy as np

f = np.float32


def lawson(xs, ys, deg, rounds=80):
    """Coefficients (f32), lowest first, of a degree-`deg` fit of ys over xs."""
    scale = 1 / np.abs(ys)
    w = scale.copy()
    powers = np.vstack([xs**k for k in range(deg + 1)]).T
    for _ in range(rounds):
        c, *_ = np.linalg.lstsq(powers * w[:, None], ys * w, rcond=None)
        e = np.abs(powers @ c - ys) * scale
        w = np.maximum(w * np.sqrt(e / e.max() + 1e-12), 1e-6)
        w /= w.max()
    return c.astype(f)


def horner(c, v):
    """c (lowest first) at v, each step rounded to f32 (v: scalar or array)."""
    acc = np.full_like(np.asarray(v, dtype=f), c[-1])
    for k in c[-2::-1]:
        acc = f(f(acc * v) + k)
    return acc


def ulps(got, want):
    """|got - want| in ulps of want rounded to f32."""
    want = np.asarray(want, dtype=np.float64)
    spacing = np.spacing(np.abs(want).astype(f)).astype(np.float64)
    return np.abs(np.asarray(got, dtype=np.float64) - want) / spacing
