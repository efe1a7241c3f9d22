"""Tokens drawn from logits as Hugging Face's `generate` draws them
(temperature, then top-k keeping ties with the k-th largest, then top-p,
renormalised, then the first token
whose cumulative probability passes a uniform number), in NumPy float64,
for tests/sampling.rs (`pip install numpy`):

    python3 tests/data/make_sampling_cases.py

Uniform numbers and cuts are drawn again until every decision is more than
1e-4 from its boundary, so that f32 rounding cannot flip one.
"""

import pathlib

import numpy as np

HERE = pathlib.Path(__file__).parent
rng = np.random.default_rng(11)
ROWS, VOCAB = 6, 40
logits = (rng.standard_normal((ROWS, VOCAB)) * 3).astype(np.float32)
# Logits with ties at the k-th largest (Hugging Face's top-k keeps every
# logit equal to it): the logits halved and rounded.
TIES = np.round(logits / 2).astype(np.float32)
CASES = [(1.0, 0, 0.0), (0.7, 5, 0.0), (1.3, 0, 0.9), (0.5, 10, 0.8), (2.0, 1, 0.0), (1.0, 0, 1.0),
         (1.0, 3, 0.0, "ties"), (0.8, 6, 0.9, "ties")]


def draw(row, u, t, k, p):
    z = row.astype(np.float64) / t
    order = np.argsort(-z, kind="stable")
    zs = z[order]
    if k:
        # Hugging Face's TopKLogitsWarper: scores below the k-th largest
        # are -inf; ties with it are kept.
        zs = np.where(zs >= zs[min(k, VOCAB) - 1], zs, -np.inf)
    probs = np.exp(zs - zs.max())
    probs /= probs.sum()
    cut_margin = 1.0
    if p:
        before = np.cumsum(probs) - probs
        if p < 1.0:  # with p = 1 only tokens of no mass could go
            cut_margin = np.abs(before - p).min()
        probs = np.where(before >= p, 0.0, probs)
    c = np.cumsum(probs)
    margin = np.abs(c - u * c[-1]).min()
    index = min(int((c <= u * c[-1]).sum()), len(order) - 1)
    return order[index], margin, cut_margin


out = {"logits": logits, "ties": TIES}
for n, (t, k, p, *which) in enumerate(CASES):
    rows = TIES if which else logits
    u = np.empty(ROWS, dtype=np.float32)
    tokens = np.empty(ROWS, dtype=np.int32)
    for r in range(ROWS):
        for _ in range(1000):
            u[r] = rng.random(dtype=np.float32)
            tokens[r], margin, cut_margin = draw(rows[r], float(u[r]), t, k, p)
            assert cut_margin > 1e-4, (n, r, cut_margin)
            if margin > 1e-4:
                break
        else:
            raise RuntimeError(f"case {n}, row {r}: no uniform number away from a boundary")
    out[f"case{n}_args"] = np.array([t, k, p, float(bool(which))])
    out[f"case{n}_uniform"] = u
    out[f"case{n}_tokens"] = tokens
np.savez(HERE / "sampling_cases.npz", **out)
