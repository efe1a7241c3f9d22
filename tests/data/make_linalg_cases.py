"""NumPy's and SciPy's answers for tests/linalg.rs (`pip install numpy scipy`):

    python3 tests/data/make_linalg_cases.py

Inputs are f32 (or c64) matrices; answers are computed in f64 (complex128)
from exactly those values, so that a test measures its own f32 error
against the true answer, scaled by each matrix's condition number (also
stored). Sizes cross the library's block of 64 columns (64, 65, 130)
and cover 1x1, batches and a wide and a tall LU.
"""

import pathlib

import numpy as np
import scipy.linalg as sl

HERE = pathlib.Path(__file__).parent
rng = np.random.default_rng(50)
cases = {}


def put(name, x):
    x = np.asarray(x)
    if np.iscomplexobj(x):
        cases[name + "_re"] = x.real.astype(np.float64)
        cases[name + "_im"] = x.imag.astype(np.float64)
    else:
        cases[name] = x.astype(np.float64) if x.dtype.kind == "f" else x


def general(shape, complex_=False):
    a = rng.standard_normal(shape)
    if complex_:
        a = a + 1j * rng.standard_normal(shape)
        return a.astype(np.complex64)
    return a.astype(np.float32)


def spd(batch, n, complex_=False):
    g = general(batch + (n, 2 * n), complex_).astype(np.complex128 if complex_ else np.float64)
    a = g @ np.swapaxes(g.conj(), -1, -2) / (2 * n) + 0.5 * np.eye(n)
    return a.astype(np.complex64 if complex_ else np.float32)


SIZES = {
    "f": [(1, ()), (3, (2, 3)), (8, (4,)), (64, ()), (65, ()), (130, ())],
    "c": [(1, ()), (3, (2, 3)), (8, (4,)), (65, ())],
}
for kind, cplx in [("f", False), ("c", True)]:
    for n, batch in SIZES[kind]:
        name = f"{kind}{n}"
        a = general(batch + (n, n), cplx)
        b = general(batch + (n, 3), cplx)
        wide = a.astype(np.complex128 if cplx else np.float64)
        cases[name + "_a"] = a
        cases[name + "_b"] = b
        put(name + "_solve", np.linalg.solve(wide, b.astype(wide.dtype)))
        if n <= 8:
            put(name + "_inv", np.linalg.inv(wide))
        put(name + "_det", np.linalg.det(wide))
        sign, logabs = np.linalg.slogdet(wide)
        put(name + "_sign", sign)
        put(name + "_logabs", logabs)
        put(name + "_cond", np.linalg.cond(wide))
        s = spd(batch, n, cplx)
        cases[name + "_spd"] = s
        put(name + "_chol", np.linalg.cholesky(s.astype(wide.dtype)))
        put(name + "_chol_cond", np.linalg.cond(s.astype(wide.dtype)))
        # A triangular system: the SPD factor rounded to f32 (the test
        # rounds the stored factor the same way), whose condition is modest.
        low = np.linalg.cholesky(s.astype(wide.dtype)).astype(a.dtype).astype(wide.dtype)
        put(name + "_low_solve", np.linalg.solve(low, b.astype(wide.dtype)))

# QR against NumPy (modes "complete" and "reduced"), square, tall and wide,
# crossing the block; R's diagonal signs are LAPACK's, as ours.
QR_SHAPES = {
    "f": [(3, 3), (2, 5, 4), (65, 65), (90, 30), (30, 90)],
    "c": [(3, 3), (2, 5, 4), (70, 20), (20, 70)],
}
for kind, cplx in [("f", False), ("c", True)]:
    for shape in QR_SHAPES[kind]:
        name = f"qr_{kind}{'x'.join(map(str, shape))}"
        a = general(shape, cplx)
        wide = a.astype(np.complex128 if cplx else np.float64)
        cases[name + "_a"] = a
        # "reduced" is the first min(n, m) columns of Q and rows of R.
        q, r = np.linalg.qr(wide, mode="complete")
        k = min(shape[-2:])
        qr_, rr = np.linalg.qr(wide, mode="reduced")
        assert np.allclose(qr_, q[..., :k], rtol=0, atol=1e-12) and np.allclose(rr, r[..., :k, :], rtol=0, atol=1e-12)
        put(f"{name}_q", q)
        put(f"{name}_r", r)
        put(name + "_cond", np.linalg.cond(wide))
        put(name + "_s", np.linalg.svd(wide, compute_uv=False))

# Norms, condition numbers, ranks, pseudo-inverses and least squares of
# the QR inputs (and the rank-2 one, below).
ORDS = {"fro": "fro", "nuc": "nuc", "two": 2, "negtwo": -2, "one": 1, "negone": -1, "inf": np.inf, "neginf": -np.inf}


def derived(name, a):
    wide = a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)
    for key, ord_ in ORDS.items():
        put(f"{name}_norm_{key}", np.linalg.norm(wide, ord_, axis=(-2, -1)))
    put(name + "_cond2", np.linalg.cond(wide))
    if wide.shape[-1] == wide.shape[-2]:
        put(name + "_cond1", np.linalg.cond(wide, 1))
    # Ranks and cutoffs at the f32 input's resolution (computed in f64,
    # where its rounding would count as rank).
    rtol = max(wide.shape[-2:]) * np.finfo(np.float32).eps
    cases[name + "_rank"] = np.asarray(np.linalg.matrix_rank(wide, rtol=rtol)).astype(np.int64)
    put(name + "_pinv", np.linalg.pinv(wide, rtol=rtol))


for kind, cplx in [("f", False), ("c", True)]:
    for shape in QR_SHAPES[kind]:
        name = f"qr_{kind}{'x'.join(map(str, shape))}"
        derived(name, cases[name + "_a"])

# Least squares: overdetermined (residuals) and underdetermined (least norm).
for name in ["qr_f90x30", "qr_f30x90"]:
    a = cases[name + "_a"].astype(np.float64)
    b = general((a.shape[0], 2))
    cases[name + "_lstsq_b"] = b
    x, res, rank, sv = np.linalg.lstsq(a, b.astype(np.float64), rcond=None)
    put(name + "_lstsq_x", x)
    put(name + "_lstsq_res", res)

# Hermitian (indefinite) matrices for eigh: eigenvalues, rising.
for kind, cplx, shapes in [("f", False, [(3, 3), (2, 3, 8, 8), (65, 65)]), ("c", True, [(3, 3), (2, 20, 20)])]:
    for shape in shapes:
        name = f"eigh_{kind}{'x'.join(map(str, shape))}"
        g = general(shape, cplx).astype(np.complex128 if cplx else np.float64)
        h = ((g + np.swapaxes(g.conj(), -1, -2)) / 2).astype(np.complex64 if cplx else np.float32)
        cases[name + "_a"] = h
        put(name + "_w", np.linalg.eigvalsh(h.astype(g.dtype)))

# Rank-deficient: rank 2 of 6x4 (singular values 0 past the second).
low_rank = (rng.standard_normal((6, 2)) @ rng.standard_normal((2, 4))).astype(np.float32)
cases["svd_rank2_a"] = low_rank
put("svd_rank2_s", np.linalg.svd(low_rank.astype(np.float64), compute_uv=False))
derived("svd_rank2", low_rank)
# Least squares of the rank-2 matrix, complex too (cutoff at f32's ε).
for kind, a in [("f", low_rank), ("c", (low_rank + 1j * np.roll(low_rank, 1, axis=0)).astype(np.complex64))]:
    b = general((6, 2), kind == "c")
    wide = a.astype(np.complex128 if kind == "c" else np.float64)
    cases[f"lstsq_{kind}_rank_a"] = a
    cases[f"lstsq_{kind}_rank_b"] = b
    x, _, rank, _ = np.linalg.lstsq(wide, b.astype(wide.dtype), rcond=6 * np.finfo(np.float32).eps)
    put(f"lstsq_{kind}_rank_x", x)
    cases[f"lstsq_{kind}_rank_rank"] = np.asarray(rank, dtype=np.int64)

# LU against SciPy on small matrices whose pivots are clear, wide and tall.
for name, shape in [("lu_square", (5, 5)), ("lu_wide", (4, 7)), ("lu_tall", (7, 4))]:
    a = general(shape)
    cases[name + "_a"] = a
    p, l, u = sl.lu(a.astype(np.float64))
    put(name + "_p", p)
    put(name + "_l", l)
    put(name + "_u", u)
    lu, piv = sl.lu_factor(a.astype(np.float64)) if shape[0] == shape[1] else (None, None)
    if piv is not None:
        cases[name + "_piv"] = piv.astype(np.int32)

# The CPU's dense path (8 rows and columns or more): singular values of
# tall, wide and batched matrices, real and complex, and Hermitian ones'
# eigenvalues.
for kind, cplx, shape in [("f", False, (100, 40)), ("c", True, (40, 70)), ("c", True, (2, 36, 33))]:
    name = f"svd_{kind}{'x'.join(map(str, shape))}"
    a = general(shape, cplx)
    cases[name + "_a"] = a
    put(name + "_s", np.linalg.svd(a.astype(np.complex128 if cplx else np.float64), compute_uv=False))
for kind, cplx, shape in [("c", True, (40, 40)), ("f", False, (2, 33, 33))]:
    name = f"eigh_{kind}{'x'.join(map(str, shape))}"
    g = general(shape, cplx).astype(np.complex128 if cplx else np.float64)
    h = ((g + np.swapaxes(g.conj(), -1, -2)) / 2).astype(np.complex64 if cplx else np.float32)
    cases[name + "_a"] = h
    put(name + "_w", np.linalg.eigvalsh(h.astype(g.dtype)))

np.savez(HERE / "linalg_cases.npz", **cases)
print(f"wrote {len(cases)} arrays to linalg_cases.npz")
