"""Special functions' exact values (float64 and mpmath-free closed forms)
at f32 inputs, for tests/special.rs (`pip install numpy scipy`):

    python3 tests/data/make_special_cases.py

Inputs are f32 (random over many magnitudes, and the special values 0, -0,
+-inf, NaN, tiny and huge ones); the reference is NumPy's and SciPy's
float64 function of the same f32 inputs, the value an f32 result is
compared with in ulps.
"""

import pathlib

import numpy as np
import scipy.special as sp

HERE = pathlib.Path(__file__).parent
rng = np.random.default_rng(5)
f32 = np.float32


def spread(n):
    """f32 values of every sign and magnitude from 1e-30 to 1e30."""
    mags = 10.0 ** rng.uniform(-30, 30, n)
    return (mags * rng.choice([-1.0, 1.0], n)).astype(f32)


specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-38, -1e-38, 3e38, -3e38, 1.0, -1.0], dtype=f32)
x = np.concatenate([spread(400), rng.uniform(-20, 20, 400).astype(f32), np.repeat(specials, len(specials))])
y = np.concatenate([spread(400), rng.uniform(-20, 20, 400).astype(f32), np.tile(specials, len(specials))])
p = np.concatenate([rng.uniform(0, 1, 400).astype(f32), np.array([0.0, 1.0, 1e-30, 0.5, 1 - 2**-24, np.nan], dtype=f32)])
s = np.concatenate([rng.uniform(-50, 50, 400).astype(f32), np.array([0.0, -0.0, 1.0, -2.0, 0.5, 1e-8, np.inf, np.nan], dtype=f32)])
xd, yd, pd, sd = (a.astype(np.float64) for a in (x, y, p, s))
# Gamma's kin: positive values of every magnitude and densely up to 30,
# negative non-integers, and near the zeros of lgamma (1, 2) and digamma.
g_pos = np.concatenate([10.0 ** rng.uniform(-30, 38.5, 700), rng.uniform(0, 30, 3000), rng.uniform(0.9, 2.1, 1000),
                        rng.uniform(1.40, 1.52, 500)]).astype(f32)
g_neg = -np.concatenate([rng.uniform(0, 30, 2000), 10.0 ** rng.uniform(-30, 6, 300),
                         np.arange(1, 40) - 0.5, np.arange(1, 40) - 0.5 + 1e-3]).astype(f32)
g_neg = g_neg[g_neg != np.round(g_neg)]
# The inverse error function: all of (-1, 1), densely near the ends.
e_in = np.concatenate([rng.uniform(-1, 1, 4000), 1 - 10.0 ** rng.uniform(-7.3, -0.5, 2000),
                       -(1 - 10.0 ** rng.uniform(-7.3, -0.5, 500)), 10.0 ** rng.uniform(-38, -1, 500)]).astype(f32)
e_in = e_in[np.abs(e_in) < 1]
# erfc down to where f32 underflows, and i0 to where it overflows.
c_in = np.concatenate([rng.uniform(-5, 10.5, 5000), 10.0 ** rng.uniform(-30, 1.1, 500)]).astype(f32)
i_in = np.concatenate([rng.uniform(-92.5, 92.5, 5000), 10.0 ** rng.uniform(-30, 1.97, 500)]).astype(f32)
# Gamma's kin where sin(pi x) is tiny: negative subnormals, tiny negative
# normals, and f32 neighbours of the negative integers (a generator of
# its own, so the arrays above keep their draws).
tiny_rng = np.random.default_rng(6)
g_tiny = -np.concatenate([
    np.array([1e-45, 3e-45, 4e-45, 2.73e-43, 2.941983e-39, 1.1754942e-38], dtype=f32),
    (10.0 ** tiny_rng.uniform(-44.8, -38, 300)).astype(f32),
    (10.0 ** tiny_rng.uniform(-38, -6.1, 300)).astype(f32),
]).astype(f32)
near = np.arange(1, 25, dtype=f32)
g_tiny = np.concatenate([g_tiny, -np.nextafter(near, f32(0)), -np.nextafter(near, f32(np.inf)),
                         -np.nextafter(np.nextafter(near, f32(0)), f32(0))]).astype(f32)
with np.errstate(all="ignore"):
    np.savez(
        HERE / "special_cases.npz",
        x=x,
        y=y,
        p=p,
        s=s,
        logaddexp=np.logaddexp(xd, yd),
        logaddexp2=np.logaddexp2(xd, yd),
        xlogy=sp.xlogy(xd, np.abs(yd)),
        sinc=np.sinc(sd),
        logit=sp.logit(pd),
        g_pos=g_pos,
        g_neg=g_neg,
        e_in=e_in,
        lgamma_pos=sp.gammaln(g_pos.astype(np.float64)),
        lgamma_neg=sp.gammaln(g_neg.astype(np.float64)),
        digamma_pos=sp.digamma(g_pos.astype(np.float64)),
        digamma_neg=sp.digamma(g_neg.astype(np.float64)),
        erfinv=sp.erfinv(e_in.astype(np.float64)),
        c_in=c_in,
        i_in=i_in,
        erfc=sp.erfc(c_in.astype(np.float64)),
        i0=sp.i0(i_in.astype(np.float64)),
        g_tiny=g_tiny,
        lgamma_tiny=sp.gammaln(g_tiny.astype(np.float64)),
        digamma_tiny=sp.digamma(g_tiny.astype(np.float64)),
    )
