"""NumPy's answers for the GPU's one-sided Jacobi in tests/linalg.rs
(`pip install numpy`):

    python3 tests/data/make_jacobi_cases.py

f32 inputs, answers computed in f64 from exactly those values: a
129 x 129 general matrix (singular values) and a 129 x 129 symmetric one
(eigenvalues), where rotations' drift from unit columns shows.
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

np.savez(HERE / "jacobi_cases.npz", **cases)
