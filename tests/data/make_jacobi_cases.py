"""NumPy's answers for the GPU's one-sided Jacobi in tests/linalg.rs
(`pip install numpy`):

    python3 tests/data/make_jacobi_cases.py

f32 inputs, answers computed in f64 from exactly those values: a
129 x 129 general matrix (singular values) and a 129 x 129 symmetric one
(eigenvalues), where rotations' drift from unit columns shows; and two
90 x 90 matrices whose rows are scaled by powers of ten up to 1e10 and
1e6 apart, whose smallest singular values lie below f32's precision (a
GPU's sweeps never ended rotating their columns of rounding noise); and
an ill-conditioned complex 90 x 30 matrix (singular values 1 to 1e-6)
with its pseudo-inverse cut at 6.7e-3 (the CPU's complex f32 reductions
left both wrong in most digits).
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

def haar(n):
    z = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    q, r = np.linalg.qr(z)
    return q * (np.diagonal(r) / np.abs(np.diagonal(r)))


ill = (haar(90)[:, :30] * np.logspace(0, -6, 30)) @ haar(30)
ill = ill.astype(np.complex64)
cases["ill_c_a"] = ill
# The cut between the 11th and 12th singular values (8.5e-3, 5.3e-3).
pinv = np.linalg.pinv(ill.astype(np.complex128), rcond=6.7e-3)
cases["ill_c_pinv_re"], cases["ill_c_pinv_im"] = pinv.real, pinv.imag

np.savez(HERE / "jacobi_cases.npz", **cases)
