"""NumPy's answers for the GPU's one-sided Jacobi in tests/linalg.rs
(`pip install numpy`):

    python3 tests/data/make_jacobi_cases.py

f32 inputs, answers computed in f64 from exactly those values: a
129 x 129 general matrix (singular values) and a 129 x 129 symmetric one
(eigenvalues), where rotations' drift from unit columns shows; and two
90 x 90 matrices whose rows are scaled by powers of ten up to 1e10 and
1e6 apart, whose smallest singular values lie below f32's precision (a
GPU's sweeps never ended rotating their columns of rounding noise).
"""

import pathlib

import numpy as np

HERE = pathlib.Path(__file__).parent
rng = np.random.default_rng(51)
cases = {}

general = rng.standard_normal((129, 129)).astype(np.float32)
cases["general_a"] = general
cases["general_s"] = np.linalg.svd(general.astype(np.float64), compute_uv=False)

m = rng.standard_normal((129, 129))
symmetric = ((m + m.T) / 2).astype(np.float32)
cases["symmetric_a"] = symmetric
cases["symmetric_w"] = np.linalg.eigvalsh(symmetric.astype(np.float64))

rows = np.stack([10.0 ** rng.uniform(-10, 10, 90), 10.0 ** rng.uniform(-6, 6, 90)])
graded = (rng.standard_normal((2, 90, 90)) * rows[:, :, None]).astype(np.float32)
cases["graded_a"] = graded
cases["graded_s"] = np.linalg.svd(graded.astype(np.float64), compute_uv=False)

np.savez(HERE / "jacobi_cases.npz", **cases)
